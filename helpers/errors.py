"""Exceptions raised by the course's recipes, all defined here.

Every error names what is wrong, so that a learner never gets a silent wrong
answer. Each one about bad input is a ``ValueError`` subclass, so ``except
ValueError`` catches them; the two exceptions are ``RuntimeError`` subclasses:
``Keras2RunError`` (Keras 2 code failed in its own process) and ``FreshProcessError``
(a function run in a fresh process failed, or the process died). Each topic module
re-exports the errors it raises (``from helpers.keras_files import
NotAKerasFileError`` works as well).

* ``NotACheckpointError``: a path that is not a readable checkpoint, and its
  subclasses ``NameBasedCheckpointError``, ``NotAKerasFileError``,
  ``NotASavedModelError``, ``NotAKeras2CheckpointError``, and ``GlobPathError``
  (a path TensorFlow could write a checkpoint to but not restore from);
* ``CheckpointMismatchError`` (and ``Keras2MismatchError``, ``PartialModelError``):
  variables that do not match the ones they should fill;
* ``StructureMismatchError`` (and ``ScopeError``, ``InvalidLabelsError``,
  ``UnwritableValueError``, ``TrainingStateError``): arguments that do not
  line up with what a recipe needs;
* ``WouldOverwriteError``, ``NotWritableError``, ``SignatureNotFoundError``, ``ModelNotBuiltError``,
  ``LegacyModelError`` (a Keras 2 configuration Keras 3 cannot rebuild),
  ``NotAModelFileError`` (a subclass of ``NotACheckpointError``), ``TensorNotFoundError``
  and ``FreezeError`` (a model to run without TensorFlow, chapter 14),
  ``Keras2ExportError`` (a Keras 3 model that cannot be written for Keras 2 as asked);
* ``VerificationError`` (advice of ``helpers.identify`` that did not load the file);
* ``BackendMismatchError`` (a ``.keras`` that does not load, compute or keep its values in
  another Keras backend, chapter 16).
* ``QuantizedTwinError`` (a ``StructureMismatchError``: quantized weights and an unquantized twin, or
  the reverse), ``OptimizerStateDroppedError`` (a reload that kept fewer optimizer variables than the
  file holds) and ``NotAPresetError`` (a ``NotACheckpointError``: a folder that is not a KerasHub
  preset), chapter 17.
* ``DamagedH5Error`` (a ``NotACheckpointError``: an HDF5 ``.h5`` whose contents or model
  configuration do not read: copy it again).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

Shape = Sequence[int | None]
VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"  # what an object-based checkpoint adds to a variable's key


def _quote(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in sorted(names))


def first_line(error: BaseException) -> str:
    """The first line of an error's message (TensorFlow's run on for pages), or its type's name.

    Example:
        >>> first_line(ValueError("not an sstable\\nmore detail"))
        'not an sstable'
    """
    text = (getattr(error, "message", None) or str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _shape(shape: Shape) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ("," if len(shape) == 1 else "") + ")"


class NotACheckpointError(ValueError):
    """The path given is not a checkpoint TensorFlow can read.

    Example:
        >>> raise NotACheckpointError("ckpt/model", "no such file or folder")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'ckpt/model' is not a readable checkpoint: no such file or folder
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path!r} is not a readable checkpoint: {reason}")


class GlobPathError(NotACheckpointError):
    """A checkpoint path holding ``[``, ``]``, ``*`` or ``?``: TensorFlow would write there, then not restore.

    Raised before anything is written. A ``NotACheckpointError``, so code that
    catches that one catches this one too.

    Example:
        >>> raise GlobPathError("run[1]/ckpt", "its folder name holds '['")
        Traceback (most recent call last):
        ...
        helpers.errors.GlobPathError: 'run[1]/ckpt' cannot hold a checkpoint: its folder name holds '['
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(str(path), reason)
        self.args = (f"{self.path!r} cannot hold a checkpoint: {reason}",)


class CheckpointMismatchError(ValueError):
    """A checkpoint's variables do not match the variables they should fill.

    Every problem is listed at once: keys the target needs but the checkpoint
    lacks (``missing``), keys the checkpoint has but the target does not use
    (``unexpected``), and keys present in both with a different shape or dtype.

    Example:
        >>> raise CheckpointMismatchError("ckpt/m", "scope 'net/'", missing=["b"],
        ...                               shape_mismatches=[("w", (3, 2), (2, 2))])
        Traceback (most recent call last):
        ...
        helpers.errors.CheckpointMismatchError: checkpoint 'ckpt/m' does not match scope 'net/':
          missing from the checkpoint: 'b'
          wrong shape: 'w' is (3, 2) in the checkpoint, (2, 2) in the target
    """

    def __init__(
        self,
        ckpt_path: str,
        target: str,
        *,
        missing: Iterable[str] = (),
        unexpected: Iterable[str] = (),
        shape_mismatches: Iterable[tuple[str, Shape, Shape]] = (),
        dtype_mismatches: Iterable[tuple[str, str, str]] = (),
    ) -> None:
        self.ckpt_path = str(ckpt_path)
        self.target = target
        self.missing = sorted(missing)
        self.unexpected = sorted(unexpected)
        self.shape_mismatches = sorted(shape_mismatches)
        self.dtype_mismatches = sorted(dtype_mismatches)
        lines = [f"checkpoint {self.ckpt_path!r} does not match {target}:"]
        if self.missing:
            lines.append(f"  missing from the checkpoint: {_quote(self.missing)}")
        if self.unexpected:
            lines.append(f"  in the checkpoint but not in the target: {_quote(self.unexpected)}")
        for name, in_ckpt, in_target in self.shape_mismatches:
            lines.append(
                f"  wrong shape: {name!r} is {_shape(in_ckpt)} in the checkpoint, "
                f"{_shape(in_target)} in the target"
            )
        for name, in_ckpt, in_target in self.dtype_mismatches:
            lines.append(
                f"  wrong dtype: {name!r} is {in_ckpt} in the checkpoint, {in_target} in the target"
            )
        super().__init__("\n".join(lines))

    @property
    def problems(self) -> int:
        """How many variables are wrong, counted over every kind of problem."""
        return (
            len(self.missing)
            + len(self.unexpected)
            + len(self.shape_mismatches)
            + len(self.dtype_mismatches)
        )


class StructureMismatchError(ValueError):
    """Two sets of variables that should line up one to one do not.

    Raised, for example, when copying the weights of one network into another
    whose variables have other names, shapes or dtypes.

    Example:
        >>> raise StructureMismatchError("cannot copy 'online/' into 'target/': 'w' has shape (2,) vs (3,)")
        Traceback (most recent call last):
        ...
        helpers.errors.StructureMismatchError: cannot copy 'online/' into 'target/': 'w' has shape (2,) vs (3,)
    """


class WouldOverwriteError(FileExistsError, ValueError):
    """A recipe was asked to write where a file (a checkpoint, a model) already exists.

    No recipe of the course overwrites or deletes a user's file: choose another
    path, or remove the old one yourself. It is both a ``FileExistsError`` and
    a ``ValueError``.

    Example:
        >>> raise WouldOverwriteError("runs/model", "a checkpoint")
        Traceback (most recent call last):
        ...
        helpers.errors.WouldOverwriteError: a checkpoint already exists at 'runs/model': refusing to overwrite it; choose another path
    """

    def __init__(self, path: str, what: str = "a file") -> None:
        self.path = str(path)
        super().__init__(f"{what} already exists at {self.path!r}: refusing to overwrite it; choose another path")


class NotWritableError(PermissionError, ValueError):
    """A recipe was asked to write into a folder it cannot write into; found before any work is done.

    It is both a ``PermissionError`` and a ``ValueError``.

    Example:
        >>> raise NotWritableError("/read-only/m.keras", "/read-only")
        Traceback (most recent call last):
        ...
        helpers.errors.NotWritableError: cannot write '/read-only/m.keras': no permission to write into the folder '/read-only' (read-only?); choose another folder
    """

    def __init__(self, path: str, folder: str) -> None:
        self.path, self.folder = str(path), str(folder)
        super().__init__(f"cannot write {self.path!r}: no permission to write into the folder {self.folder!r} "
                         "(read-only?); choose another folder")


# --------------------------------------------------------------------------- errors of one topic each


class ScopeError(StructureMismatchError):
    """A scope argument is empty, not a valid TensorFlow name, or already taken in the graph.

    Example:
        >>> raise ScopeError("'my model' is not a valid scope: use letters, digits, '_', '-', '.'")
        Traceback (most recent call last):
        ...
        helpers.errors.ScopeError: 'my model' is not a valid scope: use letters, digits, '_', '-', '.'
    """


class InvalidLabelsError(StructureMismatchError):
    """``majority_vote`` got labels it cannot count: not integers ``[members, batch]``, or out of range.

    Example:
        >>> raise InvalidLabelsError("labels must lie in [0, 3); found [5]")
        Traceback (most recent call last):
        ...
        helpers.errors.InvalidLabelsError: labels must lie in [0, 3); found [5]
    """


class UnwritableValueError(StructureMismatchError):
    """A value given to ``write_name_based`` cannot be stored in a checkpoint (not numeric, ragged...).

    Example:
        >>> raise UnwritableValueError("cannot write 'w': ragged list")
        Traceback (most recent call last):
        ...
        helpers.errors.UnwritableValueError: cannot write 'w': ragged list
    """


class NameBasedCheckpointError(NotACheckpointError):
    """The checkpoint is name-based (``tf.compat.v1.train.Saver``): it has no object graph.

    Example:
        >>> raise NameBasedCheckpointError("tf1/model")
        Traceback (most recent call last):
        ...
        helpers.errors.NameBasedCheckpointError: 'tf1/model' is a name-based checkpoint ...
    """

    def __init__(self, path: str) -> None:
        super().__init__(path, "it has no object graph")
        self.args = (
            f"{self.path!r} is a name-based checkpoint (written by tf.compat.v1.train.Saver): "
            "it stores variables under global names and has no object graph; "
            "list its names with tf.train.list_variables",
        )


class NotAKerasFileError(NotACheckpointError):
    """The path is not a Keras 3 ``.keras``, ``.weights.h5`` or ``.weights.json`` file that can be read.

    Example:
        >>> raise NotAKerasFileError("model.ckpt", "no such file")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAKerasFileError: 'model.ckpt' is not a readable Keras file: no such file
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(str(path), reason)
        self.args = (f"{self.path!r} is not a readable Keras file: {reason}",)

    def __str__(self) -> str:
        return self.args[0]


class ArchiveTooLargeError(NotAKerasFileError):
    """A zip archive (a ``.keras`` file) declares members too large to read safely: a zip bomb,
    or a member that is no part of a model file. Raised before anything is decompressed.

    Example:
        >>> raise ArchiveTooLargeError("m.keras", "config.json inflates 1000 times (to 800.0 MiB)")
        Traceback (most recent call last):
        ...
        helpers.errors.ArchiveTooLargeError: 'm.keras' is not a readable Keras file: config.json inflates 1000 times (to 800.0 MiB)
    """


class NotASavedModelError(NotACheckpointError):
    """The path given is not a SavedModel folder TensorFlow can read.

    Example:
        >>> raise NotASavedModelError("model.keras", "a file, not a SavedModel folder")
        Traceback (most recent call last):
        ...
        helpers.errors.NotASavedModelError: 'model.keras' is not a readable SavedModel: a file, not a SavedModel folder
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(os.fsdecode(path), reason)
        self.args = (f"{self.path!r} is not a readable SavedModel: {reason}",)


class SignatureNotFoundError(ValueError):
    """A signature key the SavedModel does not have; the message lists the ones it has.

    Example:
        >>> raise SignatureNotFoundError("sm", "predict", ["serving_default"])
        Traceback (most recent call last):
        ...
        helpers.errors.SignatureNotFoundError: SavedModel 'sm' has no signature 'predict'; its signatures: 'serving_default'
    """

    def __init__(self, path: str, name: str, available: list[str]) -> None:
        self.path, self.name, self.available = path, name, sorted(available)
        have = ", ".join(repr(key) for key in self.available) or "none"
        super().__init__(f"SavedModel {path!r} has no signature {name!r}; its signatures: {have}")


class NotAKeras2CheckpointError(NotACheckpointError):
    """The checkpoint is readable, but Keras 2 did not write it.

    Example:
        >>> raise NotAKeras2CheckpointError("tf1/model", "it is name-based")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAKeras2CheckpointError: 'tf1/model' is not a Keras 2 checkpoint: it is name-based
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        ValueError.__init__(self, f"{self.path!r} is not a Keras 2 checkpoint: {reason}")


class ModelNotBuiltError(ValueError):
    """The Keras 3 model has no variables yet, so there is nothing to restore into.

    Example:
        >>> raise ModelNotBuiltError("Sequential 'net' has no variables yet")
        Traceback (most recent call last):
        ...
        helpers.errors.ModelNotBuiltError: Sequential 'net' has no variables yet
    """


class Keras2MismatchError(CheckpointMismatchError):
    """``CheckpointMismatchError`` with one more line: what to do about it.

    Its message shows checkpoint keys without their ``/.ATTRIBUTES/VARIABLE_VALUE``
    ending; ``missing``, ``unexpected`` and the mismatch lists keep the full keys.

    Example:
        >>> raise Keras2MismatchError("k2/w", "Functional 'm'", hint="drop it",
        ...                           unexpected=["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"])
        Traceback (most recent call last):
        ...
        helpers.errors.Keras2MismatchError: checkpoint 'k2/w' does not match Functional 'm':
          in the checkpoint but not in the target: 'optimizer/_iterations'
          hint: drop it
    """

    def __init__(self, ckpt_path: str, target: str, *, hint: str = "", **problems: Any) -> None:
        # The message shows keys without their common "/.ATTRIBUTES/VARIABLE_VALUE" ending;
        # the attributes (missing, unexpected, ...) keep the full keys.
        shown = {kind: [_short_problem(item) for item in items] for kind, items in problems.items()}
        super().__init__(ckpt_path, target, **shown)
        message = self.args[0]
        super().__init__(ckpt_path, target, **problems)
        self.hint = hint
        self.args = (message + (f"\n  hint: {hint}" if hint else ""),)


class PartialModelError(CheckpointMismatchError):
    """A conversion would write a model some of whose variables the checkpoint does not fill.

    Written anyway, those variables would hold their current (initial)
    values in a file that loads like a complete conversion. The message lists
    them and ends with what to do about it.

    Example:
        >>> raise PartialModelError("tf1/m", "Dense 'dense'", missing=["dense/bias"],
        ...                         hint="fix the name map")
        Traceback (most recent call last):
        ...
        helpers.errors.PartialModelError: checkpoint 'tf1/m' does not fill every variable of Dense 'dense':
          missing from the checkpoint: 'dense/bias'
          hint: fix the name map
    """

    def __init__(self, ckpt_path: str, target: str, *, hint: str = "", **problems: Any) -> None:
        super().__init__(ckpt_path, target, **problems)
        self.hint = hint
        first, *rest = self.args[0].split("\n")
        first = f"checkpoint {self.ckpt_path!r} does not fill every variable of {target}:"
        self.args = ("\n".join([first, *rest] + ([f"  hint: {hint}"] if hint else [])),)


def _short_problem(item: Any) -> Any:
    if isinstance(item, str):
        return item.removesuffix(VALUE_SUFFIX)
    return (item[0].removesuffix(VALUE_SUFFIX), *item[1:])


class TrainingStateError(StructureMismatchError):
    """The objects given do not hold the training state a recipe needs.

    Example:
        >>> raise TrainingStateError("the optimizer has no variables yet: run one training step first")
        Traceback (most recent call last):
        ...
        helpers.errors.TrainingStateError: the optimizer has no variables yet: run one training step first
    """


class Keras2RunError(RuntimeError):
    """Keras 2 code run by ``run_keras2`` failed; the message ends with the subprocess's error.

    The one error here that is not about bad input, so it is a ``RuntimeError``,
    not a ``ValueError``.

    Example:
        >>> raise Keras2RunError("the Keras 2 code failed: ZeroDivisionError: division by zero")
        Traceback (most recent call last):
        ...
        helpers.errors.Keras2RunError: the Keras 2 code failed: ZeroDivisionError: division by zero
    """


class FreshProcessError(RuntimeError):
    """A function run by ``helpers.fresh_process.call_in_fresh_process`` failed; says how.

    ``how`` is ``"exception"`` (the child raised: ``error_type`` and the message are its
    exception's, ``details`` the last lines of its traceback), ``"exit"`` (it called
    ``sys.exit`` with code ``code``), ``"signal"`` (it was killed by signal ``code``, SIGKILL
    often meaning the system ran out of memory), ``"timeout"`` (it ran past ``timeout=`` and
    was killed) or ``"result"`` (its result could not be sent back). Like ``Keras2RunError``
    it is about a run, not bad input, so it is a ``RuntimeError``.

    Example:
        >>> raise FreshProcessError("demo:f", "exception", "ZeroDivisionError: division by zero",
        ...                         error_type="ZeroDivisionError")
        Traceback (most recent call last):
        ...
        helpers.errors.FreshProcessError: 'demo:f' in a fresh process: ZeroDivisionError: division by zero
    """

    def __init__(self, function: str, how: str, message: str, *, error_type: str = "",
                 details: str = "", code: int | None = None) -> None:
        self.function = function
        self.how = how
        self.error_type = error_type
        self.message = message
        self.details = details
        self.code = code
        super().__init__(f"{function!r} in a fresh process: {message}")


LEGACY_ROUTE = (
    "build the model in Keras 3 code and pass it: convert_legacy_h5(path, out, model=twin) reads only "
    "the weights; without a twin, export it once with Keras 2 and serve it as one layer: "
    "run_keras2(\"keras.models.load_model('m.h5', compile=False).export('m_export')\"), then "
    "keras.layers.TFSMLayer('m_export', call_endpoint='serve')"
)


class LegacyModelError(ValueError):
    """Keras 3 cannot rebuild a Keras 2 model configuration; says which layer, why, and what works.

    ``problems`` holds one line per layer; ``route`` is what to do instead.

    Example:
        >>> raise LegacyModelError("k2/rnn.h5", ["layer 'lstm' (LSTM): time_major=True has no Keras 3 "
        ...                        "equivalent"], route="pass model=twin")
        Traceback (most recent call last):
        ...
        helpers.errors.LegacyModelError: Keras 3 cannot rebuild the Keras 2 model in 'k2/rnn.h5':
          layer 'lstm' (LSTM): time_major=True has no Keras 3 equivalent
          route: pass model=twin
    """

    def __init__(self, path: str | os.PathLike, problems: Iterable[str], route: str = LEGACY_ROUTE) -> None:
        self.path = os.fspath(path)
        self.problems = list(problems)
        self.route = route
        where = f" in {self.path!r}" if self.path else ""
        lines = [f"Keras 3 cannot rebuild the Keras 2 model{where}:"]
        lines += [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines + [f"  route: {route}"]))


class NotAModelFileError(NotACheckpointError):
    """A file that should hold a model to run without Keras (a frozen GraphDef ``.pb``, a LiteRT
    ``.tflite``, an ``.onnx`` file, a SavedModel folder) is missing, damaged or of another kind.

    Example:
        >>> raise NotAModelFileError("model.bin", "not a kind the recipe knows")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAModelFileError: 'model.bin' is not a readable model file: not a kind the recipe knows
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(os.fsdecode(path), reason)
        self.args = (f"{self.path!r} is not a readable model file: {reason}",)


class TensorNotFoundError(ValueError):
    """Tensor names a frozen graph does not have; the message lists names it does have.

    Example:
        >>> raise TensorNotFoundError("frozen.pb", ["input:0"], ["features:0"])
        Traceback (most recent call last):
        ...
        helpers.errors.TensorNotFoundError: 'frozen.pb' has no tensor 'input:0'; candidates: 'features:0'
    """

    def __init__(self, path: str, missing: Iterable[str], candidates: Iterable[str]) -> None:
        self.path, self.missing, self.candidates = path, list(missing), list(candidates)
        have = ", ".join(repr(name) for name in self.candidates) or "none"
        word = "tensor" if len(self.missing) == 1 else "tensors"
        super().__init__(f"{path!r} has no {word} {_quote(self.missing)}; candidates: {have}")


class FreezeError(ValueError):
    """A model or function that cannot be frozen into constants, with the reason and what works.

    Example:
        >>> raise FreezeError("the function updates a variable (AssignAddVariableOp)", "freeze inference only")
        Traceback (most recent call last):
        ...
        helpers.errors.FreezeError: cannot freeze: the function updates a variable (AssignAddVariableOp); freeze inference only
    """

    def __init__(self, reason: str, route: str) -> None:
        self.reason, self.route = reason, route
        super().__init__(f"cannot freeze: {reason}; {route}")


# --------------------------------------------------------------------------- reloading in a fresh process (notebook 12)


class ReloadMismatchError(ValueError):
    """A model reloaded in a fresh process is not the model that was saved (``keras_files.round_trip``).

    Each problem is one line: outputs that differ, variables that differ, are
    missing from the reloaded model or appear only there, and layers left
    unbuilt. ``report`` holds the whole comparison (a ``RoundTripReport``).

    Example:
        >>> raise ReloadMismatchError("m.keras", ["variable 'net/d/kernel': differs",
        ...                                       "layer 'net/d': left unbuilt"])
        Traceback (most recent call last):
        ...
        helpers.errors.ReloadMismatchError: 'm.keras' reloaded in a fresh process is not the saved model:
          variable 'net/d/kernel': differs
          layer 'net/d': left unbuilt
    """

    def __init__(self, path: str | os.PathLike, problems: Iterable[str], report: Any = None) -> None:
        self.path = os.fspath(path)
        self.problems = list(problems)
        self.report = report
        lines = [f"{self.path!r} reloaded in a fresh process is not the saved model:"]
        super().__init__("\n".join(lines + [f"  {problem}" for problem in self.problems]))


class ReloadFailedError(ValueError):
    """A fresh process could not reload a model file (a class it cannot import, an error, a time-out).

    The message says why and what makes it work (for a custom class: put it
    in a module and name that module, or register it in an importable one).

    Example:
        >>> raise ReloadFailedError("m.keras", "it cannot find the class 'Scale'")
        Traceback (most recent call last):
        ...
        helpers.errors.ReloadFailedError: a fresh process could not reload 'm.keras': it cannot find the class 'Scale'
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"a fresh process could not reload {self.path!r}: {reason}")


class VerificationError(ValueError):
    """The code ``helpers.identify`` advises did not load the file in a fresh process; says why.

    Example:
        >>> raise VerificationError("m.onnx", "No module named 'onnxruntime': pip install onnxruntime")
        Traceback (most recent call last):
        ...
        helpers.errors.VerificationError: could not load 'm.onnx' with the advised code: No module named 'onnxruntime': pip install onnxruntime
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path, self.reason = os.fsdecode(path), reason
        super().__init__(f"could not load {self.path!r} with the advised code: {reason}")


class Keras2ExportError(ValueError):
    """A Keras 3 model cannot be written for Keras 2 as asked; says which layer and argument, and what works.

    ``problems`` holds one line per layer; ``route`` is what to do instead.

    Example:
        >>> raise Keras2ExportError(["layer 'dense' (Dense): lora_rank=4 has no Keras 2 equivalent"],
        ...                         route="pass architecture=False")
        Traceback (most recent call last):
        ...
        helpers.errors.Keras2ExportError: Keras 2 cannot rebuild this Keras 3 model:
          layer 'dense' (Dense): lora_rank=4 has no Keras 2 equivalent
          route: pass architecture=False
    """

    def __init__(self, problems: Iterable[str], route: str) -> None:
        self.problems = list(problems)
        self.route = route
        lines = ["Keras 2 cannot rebuild this Keras 3 model:"] + [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines + [f"  route: {route}"]))


# --------------------------------------------------------------------------- across backends (notebook 16)


class BackendMismatchError(ValueError):
    """A ``.keras`` does not cross Keras backends (``backends.check_across_backends``).

    One line per problem: the first layer that fails to load or compute in a backend, with the
    reason and the fix; a value that differs from the file's; outputs that differ between
    backends. The header says "does not load in any backend" when every backend failed.
    ``report`` holds the backends that did load (a ``BackendReport``).

    Example:
        >>> raise BackendMismatchError("m.keras", ["jax: layer 'scale' (TfScale) fails while loading: "
        ...                                        "calls TensorFlow functions directly: use keras.ops"])
        Traceback (most recent call last):
        ...
        helpers.errors.BackendMismatchError: 'm.keras' does not cross backends:
          jax: layer 'scale' (TfScale) fails while loading: calls TensorFlow functions directly: use keras.ops
    """

    def __init__(self, path: str | os.PathLike, problems: Iterable[str], report: Any = None,
                 header: str = "does not cross backends") -> None:
        self.path = os.fspath(path)
        self.problems = list(problems)
        self.report = report
        lines = [f"{self.path!r} {header}:"] + [f"  {problem}" for problem in self.problems]
        super().__init__("\n".join(lines))
class QuantizedTwinError(StructureMismatchError):
    """Weights of a quantized model and a twin that is not quantized (or the reverse); names the route.

    Example:
        >>> raise QuantizedTwinError("q.weights.h5", "it holds int8 kernels and the model has none",
        ...                          "quantize the twin first: model.quantize('int8')")
        Traceback (most recent call last):
        ...
        helpers.errors.QuantizedTwinError: 'q.weights.h5' does not fit this model: it holds int8 kernels and the model has none; quantize the twin first: model.quantize('int8')
    """

    def __init__(self, path: str | os.PathLike, problem: str, route: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        self.route = route
        super().__init__(f"{self.path!r} does not fit this model: {problem}; {route}")


class OptimizerStateDroppedError(ValueError):
    """A reload kept fewer optimizer variables than the file holds (Keras only warns); names the route.

    Example:
        >>> raise OptimizerStateDroppedError("mp.keras", 14, 10, "load it under the file's policy")
        Traceback (most recent call last):
        ...
        helpers.errors.OptimizerStateDroppedError: 'mp.keras' holds 14 optimizer variables, the reloaded optimizer has 10: its state was dropped; load it under the file's policy
    """

    def __init__(self, path: str | os.PathLike, saved: int, loaded: int, route: str) -> None:
        self.path = os.fspath(path)
        self.saved = saved
        self.loaded = loaded
        self.route = route
        super().__init__(f"{self.path!r} holds {saved} optimizer variables, the reloaded optimizer has "
                         f"{loaded}: its state was dropped; {route}")


class NotAPresetError(NotACheckpointError):
    """The path is not a KerasHub preset folder (``config.json`` and ``metadata.json`` beside weights).

    Example:
        >>> raise NotAPresetError("my_model", "it has no config.json")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAPresetError: 'my_model' is not a KerasHub preset folder: it has no config.json
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(os.fspath(path), reason)
        self.args = (f"{self.path!r} is not a KerasHub preset folder: {reason}",)

    def __str__(self) -> str:
        return self.args[0]


class DamagedH5Error(NotACheckpointError):
    """A legacy Keras ``.h5`` that is an HDF5 file but damaged: its groups, datasets or model
    configuration (the ``model_config`` JSON) do not read. Copy the file again.

    Example:
        >>> raise DamagedH5Error("model.h5", "its model_config is not JSON (Expecting value: line 1 column 2)")
        Traceback (most recent call last):
        ...
        helpers.errors.DamagedH5Error: 'model.h5' is a damaged .h5 file: its model_config is not JSON (Expecting value: line 1 column 2)
    """

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(os.fspath(path), reason)
        self.args = (f"{self.path!r} is a damaged .h5 file: {reason}",)

    def __str__(self) -> str:
        return self.args[0]
