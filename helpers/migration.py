"""Move checkpoints between TF1 (name-based) and TF2 (object-based) code.

A TF1 ``tf.compat.v1.train.Saver`` stores each variable under its global name
(``dense/kernel``). TF2's ``tf.train.Checkpoint`` stores values under paths of
the object graph (``model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE``) and,
given a name-based file, falls back to matching global names: on Keras 3
layers that restores nothing and raises nothing. The recipes here restore by
an explicit ``{checkpoint_key: variable}`` map and say what did not match::

    restore_name_based("tf1/model", {"dense/kernel": layer.kernel, "dense/bias": layer.bias})
    name_based_to_object_based("tf1/model", "tf2/model", model, name_map)   # convert once
    object_based_to_name_based("tf2/model-1", "tf1/export", model, name_map)  # for a TF1 pipeline

Paths are ``str`` or ``os.PathLike``. None of the recipes overwrites an
existing checkpoint (checked name by name, so ``[``, ``*`` and ``?`` in a path
are plain characters). Checkpoints at paths holding ``[``, ``]``, ``*`` or
``?`` are read as they are, but none is written there: TensorFlow takes them
for glob patterns, and a TF1 ``Saver``, ``tf.train.load_checkpoint`` and
``tf.train.list_variables`` cannot read ``run[1]/model`` by its name
(``GlobPathError``, raised before anything is written). A partial restore
(``strict=False``) always hands back a report that lists what was skipped. A
conversion never writes a model the checkpoint did not fill entirely unless
asked to (``allow_unfilled=True``), and then its result says PARTIAL MODEL and
lists the variables.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from helpers.errors import (
    CheckpointMismatchError,
    NotACheckpointError,
    PartialModelError,
    StructureMismatchError,
    UnwritableValueError,
    WouldOverwriteError,
    first_line,
)
from helpers.files import (
    checkpoint_path_text,
    glob_safe_prefix,
    path_text,
    refuse_existing_checkpoint,
    refuse_glob_characters,
)
from helpers.inspection import OBJECT_GRAPH_KEY, read_tensor, resolve_checkpoint
from helpers.object_graph import reading

__all__ = [
    "ConvertedCheckpoint",
    "PartialModelError",
    "RestoreReport",
    "UnwritableValueError",
    "checkpoint_format",
    "name_based_to_object_based",
    "object_based_to_name_based",
    "restore_name_based",
    "variables_by_key",
    "write_name_based",
]

_WIDTH = 100


def _wrapped(label: str, names: list[str]) -> list[str]:
    return textwrap.wrap(
        f"{label} ({len(names)}): {', '.join(names)}", _WIDTH, initial_indent="  ",
        subsequent_indent="    ", break_long_words=False, break_on_hyphens=False,
    )


@dataclass(repr=False)
class RestoreReport:
    """What ``restore_name_based`` restored, and what it left alone.

    Printing it (or its repr, which Jupyter shows) lists everything skipped,
    so a partial restore never reads like a complete one.

    Example:
        >>> print(RestoreReport(restored=["w"], unexpected=["step"]))
        restored 1 variable(s); PARTIAL, 1 item(s) skipped:
          in the checkpoint but unused (1): step
    """

    restored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    shape_mismatches: list[tuple[str, tuple, tuple]] = field(default_factory=list)
    dtype_mismatches: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every key matched a variable, both ways, with the right shape and dtype."""
        return not self.skipped

    @property
    def unfilled(self) -> list[str]:
        """The target's variables that got no value: missing from the checkpoint, or wrong shape or dtype."""
        keys = set(self.missing)
        keys |= {key for key, *_ in self.shape_mismatches} | {key for key, *_ in self.dtype_mismatches}
        return sorted(keys)

    @property
    def skipped(self) -> list[str]:
        """Every key that was not restored, whatever the reason (sorted, each once)."""
        keys = set(self.missing) | set(self.unexpected)
        keys |= {key for key, *_ in self.shape_mismatches} | {key for key, *_ in self.dtype_mismatches}
        return sorted(keys)

    def __str__(self) -> str:
        if self.complete:
            return f"restored {len(self.restored)} variable(s); nothing skipped"
        lines = [f"restored {len(self.restored)} variable(s); PARTIAL, {len(self.skipped)} item(s) skipped:"]
        if self.missing:
            lines += _wrapped("not in the checkpoint, left as they were", self.missing)
        if self.unexpected:
            lines += _wrapped("in the checkpoint but unused", self.unexpected)
        for key, in_ckpt, in_target in self.shape_mismatches:
            lines.append(f"  wrong shape, skipped: {key} is {in_ckpt} in the checkpoint, {in_target} in the target")
        for key, in_ckpt, in_target in self.dtype_mismatches:
            lines.append(f"  wrong dtype, skipped: {key} is {in_ckpt} in the checkpoint, {in_target} in the target")
        return "\n".join(lines)

    __repr__ = __str__


class ConvertedCheckpoint(str):
    """The prefix a conversion wrote (a ``str``), with the ``report`` of the restore behind it.

    Its repr lists what was skipped: checkpoint keys the model does not use
    (``strict=False``), and, first and loudly, the model's variables written
    with their current values because the checkpoint did not fill them
    (``allow_unfilled=True``; also in ``.report.unfilled``).

    Example:
        >>> ConvertedCheckpoint("tf2/model", RestoreReport(restored=["w"], unexpected=["step"]))
        'tf2/model', converted with restored 1 variable(s); PARTIAL, 1 item(s) skipped:
          in the checkpoint but unused (1): step
        >>> ConvertedCheckpoint("tf2/model", RestoreReport(restored=["w"], missing=["b"]))
        'tf2/model' holds a PARTIAL MODEL: 1 variable(s) written with their current values, not from
        the checkpoint: b; converted with restored 1 variable(s); PARTIAL, 1 item(s) skipped:
          not in the checkpoint, left as they were (1): b
    """

    report: RestoreReport

    def __new__(cls, path: str, report: RestoreReport) -> ConvertedCheckpoint:
        converted = super().__new__(cls, path)
        converted.report = report
        return converted

    def __repr__(self) -> str:
        unfilled = self.report.unfilled
        if not unfilled:
            text = f"{str(self)!r}, converted with {self.report}"
        else:
            warning = textwrap.fill(
                f"{str(self)!r} holds a PARTIAL MODEL: {len(unfilled)} variable(s) written with their "
                f"current values, not from the checkpoint: {', '.join(unfilled)}; converted with",
                _WIDTH, break_long_words=False, break_on_hyphens=False,
            )
            text = f"{warning} {self.report}"
        return text


# --------------------------------------------------------------------------- paths


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _refuse_to_write(out_prefix: str | os.PathLike, ckpt_path: str | os.PathLike | None = None) -> str:
    """``out_prefix`` as text, unless a checkpoint is there or it is the input checkpoint itself."""
    out = checkpoint_path_text(out_prefix, "output prefix")
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        raise NotACheckpointError(out, "this names a folder; a checkpoint prefix ends with a file name, e.g. 'ckpt'")
    if ckpt_path is not None and _same_file(out, path_text(ckpt_path, "checkpoint path")):
        raise WouldOverwriteError(out, "the input checkpoint")
    return refuse_existing_checkpoint(out)


# --------------------------------------------------------------------------- formats and names


def checkpoint_format(ckpt_path: str | os.PathLike) -> str:
    """``"object-based"`` (``tf.train.Checkpoint``) or ``"name-based"`` (TF1 ``Saver``).

    Raises ``NotACheckpointError`` when the path is not a readable checkpoint.

    Example (checkpoints TensorFlow 2.15 wrote: a TF1 ``Saver``'s, a ``tf.train.Checkpoint``'s):
        >>> checkpoint_format("tests/data/tf215-graph/graph/model")
        'name-based'
        >>> checkpoint_format("tests/data/tf215/tfckpt_opt/ckpt")
        'object-based'
    """
    with reading(ckpt_path) as (_, reader):
        return "object-based" if reader.has_tensor(OBJECT_GRAPH_KEY) else "name-based"


def _is_variable(value: Any) -> bool:
    return all(hasattr(value, attr) for attr in ("assign", "shape", "dtype", "numpy"))


def _key_of(variable: Any) -> str:
    # Keras 3 variables know their path ("dense/kernel"); tf.Variables their name ("dense/kernel:0").
    path = getattr(variable, "path", None)
    return path if isinstance(path, str) and path else variable.name.split(":")[0]


def variables_by_key(target: Any) -> dict[str, Any]:
    """The ``{global name: variable}`` map a TF1 ``Saver`` would use for ``target``.

    Keras 3 variables are keyed by their ``path`` (``sequential/dense/kernel``),
    other ``tf.Variable`` s by their name without ``:0``. Start from this map
    and rewrite its keys to the names a TF1 checkpoint uses. An unbuilt model,
    or two variables with one name, raise ``StructureMismatchError``.

    Example:
        >>> layer = tf.keras.layers.Dense(2, name="dense")
        >>> layer.build((None, 3))
        >>> sorted(variables_by_key(layer))
        ['dense/bias', 'dense/kernel']
    """
    if isinstance(target, Mapping):
        bad = [key for key, value in target.items() if not _is_variable(value)]
        if bad:
            raise TypeError(f"the name map's values must be variables; not for keys {sorted(map(str, bad))}")
        not_text = [key for key in target if not isinstance(key, str) or not key]
        if not_text:
            raise StructureMismatchError(f"the name map's keys must be non-empty strings, got {not_text!r}")
        return dict(target)
    if hasattr(target, "weights"):
        variables = list(target.weights)  # a Keras layer or model
    elif isinstance(target, tf.Module):
        variables = list(target.variables)
    else:
        raise TypeError(
            f"target must be a tf.Module, a Keras layer or model, or a {{checkpoint_key: variable}} "
            f"dict, not {type(target).__name__}"
        )
    if not variables:
        raise StructureMismatchError(
            f"{_describe(target)} has no variables yet: build it (call it once) before restoring"
        )
    keyed: dict[str, Any] = {}
    for variable in variables:
        key = _key_of(variable)
        if key in keyed and keyed[key] is not variable:
            raise StructureMismatchError(
                f"two variables of {_describe(target)} share the name {key!r}: "
                "pass an explicit {checkpoint_key: variable} dict instead"
            )
        keyed[key] = variable
    return keyed


def _describe(target: Any) -> str:
    if isinstance(target, Mapping):
        return f"the name map of {len(target)} variable(s)"
    name = getattr(target, "name", None)
    return f"{type(target).__name__} {name!r}" if name else type(target).__name__


def _dtype_name(dtype: Any) -> str:
    return tf.as_dtype(dtype).name


# --------------------------------------------------------------------------- restoring


def restore_name_based(ckpt_path: str | os.PathLike, target: Any, strict: bool = True) -> RestoreReport:
    """Restore a name-based (TF1 ``Saver``) checkpoint into TF2 variables, loudly.

    ``target`` is a Keras layer or model, a ``tf.Module`` (variables keyed as
    in ``variables_by_key``), or an explicit ``{checkpoint_key: variable}``
    dict. Everything is checked, and every value read, before anything is
    assigned. With ``strict=True`` any key the target needs but the
    checkpoint lacks, any key of the checkpoint left unused, and any wrong
    shape or dtype raises ``CheckpointMismatchError`` listing them all, and
    nothing is restored. With ``strict=False`` the matching variables are
    restored and the returned report lists the rest (print it: it says
    PARTIAL). A variable saved in slices (a TF1 partitioned variable) is read
    whole. Eager mode only: in a graph, use
    ``tf.compat.v1.train.Saver(var_list=name_map)``.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> values = {"dense/kernel": np.ones((3, 2), "float32"), "dense/bias": np.zeros(2, "float32"), "step": 7}
        >>> saved = write_name_based(values, os.path.join(tempfile.mkdtemp(), "tf1", "model"))
        >>> layer = tf.keras.layers.Dense(2, name="dense")
        >>> layer.build((None, 3))
        >>> restore_name_based(saved, {"dense/kernel": layer.kernel, "dense/bias": layer.bias})
        Traceback (most recent call last):
        ...
        helpers.errors.CheckpointMismatchError: checkpoint '...' does not match the name map of 2 variable(s):
          in the checkpoint but not in the target: 'step'
        >>> print(restore_name_based(saved, variables_by_key(layer), strict=False))
        restored 2 variable(s); PARTIAL, 1 item(s) skipped:
          in the checkpoint but unused (1): step
        >>> layer.kernel.numpy().tolist()
        [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
    """
    if not tf.executing_eagerly():
        raise RuntimeError(
            "restore_name_based runs eagerly; inside a tf.Graph use "
            "tf.compat.v1.train.Saver(var_list={checkpoint_key: variable}).restore(sess, path)"
        )
    name_map = variables_by_key(target)
    with reading(ckpt_path) as (shown, reader):
        report, matching = _compare(reader, name_map)
        if strict and not report.complete:
            raise CheckpointMismatchError(
                shown,
                _describe(target),
                missing=report.missing,
                unexpected=report.unexpected,
                shape_mismatches=report.shape_mismatches,
                dtype_mismatches=report.dtype_mismatches,
            )
        values = {key: read_tensor(reader, shown, key) for key in matching}  # read all, then assign
    for key in matching:
        name_map[key].assign(values[key])
        report.restored.append(key)
    return report


def _compare(reader, name_map: Mapping[str, Any]) -> tuple[RestoreReport, list[str]]:
    """The report of restoring ``name_map`` from ``reader`` (nothing restored yet), and the keys that match."""
    shapes = {k: tuple(v) for k, v in reader.get_variable_to_shape_map().items() if k != OBJECT_GRAPH_KEY}
    dtypes = {k: v.name for k, v in reader.get_variable_to_dtype_map().items()}
    report = RestoreReport(
        missing=sorted(set(name_map) - set(shapes)),
        unexpected=sorted(set(shapes) - set(name_map)),
    )
    matching = []
    for key in sorted(set(name_map) & set(shapes)):
        variable = name_map[key]
        if shapes[key] != tuple(variable.shape):
            report.shape_mismatches.append((key, shapes[key], tuple(variable.shape)))
        elif dtypes[key] != _dtype_name(variable.dtype):
            report.dtype_mismatches.append((key, dtypes[key], _dtype_name(variable.dtype)))
        else:
            matching.append(key)
    return report, matching


# --------------------------------------------------------------------------- writing


def _as_tensor(key: str, value: Any) -> tf.Tensor:
    if hasattr(value, "read_value") and hasattr(value, "assign"):
        # Read the value: a Keras 3 variable handed to SaveV2 as it is would be
        # saved under a key with "VARIABLE_VALUE" glued to it (see notebook 07).
        value = value.numpy()
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as error:
        raise UnwritableValueError(f"cannot write {key!r}: {first_line(error)}") from None
    if tensor.dtype in (tf.variant, tf.resource):
        raise UnwritableValueError(f"cannot write {key!r}: a {tensor.dtype.name} tensor has no value to save")
    return tensor


def write_name_based(values: Mapping[str, Any], out_prefix: str | os.PathLike) -> str:
    """Write ``{global name: value}`` as a name-based checkpoint a TF1 ``Saver`` can restore.

    Values may be variables (their current value is written), tensors or
    NumPy arrays. Only ``<out_prefix>.index`` and ``.data-00000-of-00001``
    are written (no ``checkpoint`` state file, no ``.meta``); an existing
    checkpoint at ``out_prefix`` is never overwritten (``WouldOverwriteError``).
    An ``out_prefix`` with ``[``, ``]``, ``*`` or ``?`` is refused
    (``GlobPathError``, a ``NotACheckpointError``): TensorFlow takes them for
    glob patterns, so a TF1 ``Saver``, ``tf.train.load_checkpoint`` and
    ``tf.train.list_variables`` could not read ``run[1]/export`` by its name.
    A value that is not numeric or not rectangular raises ``UnwritableValueError``.
    Every refusal comes before anything is written.

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> folder = tempfile.mkdtemp()
        >>> prefix = write_name_based({"dense/kernel": np.ones((3, 2))}, os.path.join(folder, "tf1", "export"))
        >>> sorted(os.listdir(os.path.dirname(prefix)))
        ['export.data-00000-of-00001', 'export.index']
        >>> tf.compat.v1.train.list_variables(prefix)
        [('dense/kernel', [3, 2])]
        >>> write_name_based({"dense/kernel": np.ones((3, 2))}, os.path.join(folder, "run[1]", "export"))
        Traceback (most recent call last):
        ...
        helpers.errors.GlobPathError: '...run[1]/export' cannot hold a checkpoint: its folder name holds '[', ...
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"values must be a {{name: value}} dict, not {type(values).__name__}")
    if not values:
        raise UnwritableValueError("nothing to write: the name map is empty")
    out = refuse_glob_characters(_refuse_to_write(out_prefix))
    bad_keys = [key for key in values if not isinstance(key, str) or not key or key == OBJECT_GRAPH_KEY]
    if bad_keys:
        raise UnwritableValueError(f"every name must be a non-empty string other than {OBJECT_GRAPH_KEY!r}, "
                                   f"got {bad_keys!r}")
    keys = sorted(values)
    tensors = [_as_tensor(key, values[key]) for key in keys]
    folder = os.path.dirname(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tf.raw_ops.SaveV2(prefix=out, tensor_names=keys, shape_and_slices=[""] * len(keys), tensors=tensors)
    return out


def name_based_to_object_based(
    ckpt_path: str | os.PathLike,
    out_prefix: str | os.PathLike,
    root: Any,
    name_map: Mapping[str, Any] | None = None,
    *,
    edge: str = "model",
    strict: bool = True,
    allow_unfilled: bool = False,
) -> ConvertedCheckpoint:
    """Convert a TF1 name-based checkpoint into an object-based one, once.

    The values are restored into ``root`` (a built Keras model or layer, or a
    ``tf.Module``) with ``restore_name_based`` (through ``name_map`` when the
    names differ), then written as ``tf.train.Checkpoint(**{edge: root})``, so
    TF2 code loads them with ``tf.train.Checkpoint(model=...).restore(path)``
    (``assert_consumed()`` passes on a fresh object of the same structure).
    Returns the prefix written, a ``str`` whose ``.report`` is the restore's
    report; its repr lists what was skipped. Refuses to overwrite an existing
    checkpoint at ``out_prefix`` (``WouldOverwriteError``), and refuses an
    ``out_prefix`` with ``[``, ``]``, ``*`` or ``?`` before anything is restored
    or written (``GlobPathError``, a ``NotACheckpointError``): TensorFlow takes
    them for glob patterns and could not restore the new file from ``run[1]/``. An
    input checkpoint at such a path is read as it is.

    Two kinds of mismatch, two switches; each check runs before anything is
    restored or written:

    * ``strict``: checkpoint keys the model does not use (an optimizer's
      slots, ``global_step``). ``True`` refuses them
      (``CheckpointMismatchError``, whose hint names ``strict=False``);
      ``False`` leaves them out of the new file and lists them in the report.
    * ``allow_unfilled``: variables of the model the checkpoint does not fill
      (missing from it, of another shape or dtype, or left out of
      ``name_map``: every variable of ``root`` counts). Written anyway, they
      would hold their current (initial) values in a file that loads like a
      complete conversion, so by default they are refused
      (``PartialModelError``, whatever ``strict`` says). ``True`` writes them
      as they are; the result then says PARTIAL MODEL and lists them
      (``result.report.unfilled``).

    Example:
        >>> import os, tempfile
        >>> import numpy as np
        >>> folder = tempfile.mkdtemp()
        >>> values = {"layer1/weights": np.ones((3, 2), "float32"), "layer1/biases": np.zeros(2, "float32"),
        ...           "global_step": 7}
        >>> saved = write_name_based(values, os.path.join(folder, "tf1", "model"))    # as a TF1 Saver writes
        >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="dense")], name="m")
        >>> dense = model.layers[0]
        >>> name_map = {"layer1/weights": dense.kernel, "layer1/biases": dense.bias}
        >>> converted = name_based_to_object_based(saved, os.path.join(folder, "tf2", "model"), model, name_map,
        ...                                        strict=False)
        >>> print(converted.report)
        restored 2 variable(s); PARTIAL, 1 item(s) skipped:
          in the checkpoint but unused (1): global_step
        >>> fresh = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
        >>> _ = tf.train.Checkpoint(model=fresh).restore(converted).assert_consumed()
        >>> fresh.layers[0].kernel.numpy().tolist()
        [[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]
        >>> name_based_to_object_based(saved, os.path.join(folder, "tf2", "m"), model,
        ...                            {"layer1/weights": dense.kernel}, strict=False)
        Traceback (most recent call last):
        ...
        helpers.errors.PartialModelError: checkpoint '...' does not fill every variable of the name map of 1 ...
          missing from the checkpoint: 'm/dense/bias'
          hint: the name map leaves out m/dense/bias; ...
    """
    out = refuse_glob_characters(_refuse_to_write(out_prefix, ckpt_path))
    if not isinstance(edge, str) or not edge:
        raise StructureMismatchError(f"edge must be a non-empty attribute name, got {edge!r}")
    if checkpoint_format(ckpt_path) != "name-based":
        raise NotACheckpointError(
            path_text(ckpt_path), "it is already object-based (written by tf.train.Checkpoint): nothing to convert"
        )
    if name_map is not None:
        _refuse_foreign(variables_by_key(name_map), root)
    target = name_map if name_map is not None else root
    # The model's variables a name map leaves out get no value either: unfilled, like missing keys.
    left_out = _left_out(name_map, root) if name_map is not None else []
    with reading(ckpt_path) as (shown, reader):
        planned, _ = _compare(reader, variables_by_key(target))
    planned.missing = sorted(set(planned.missing) | set(left_out))
    refused = {} if allow_unfilled else {
        "missing": planned.missing,
        "shape_mismatches": planned.shape_mismatches,
        "dtype_mismatches": planned.dtype_mismatches,
    }
    if strict:
        refused["unexpected"] = planned.unexpected
    if any(refused.values()):
        if allow_unfilled or not planned.unfilled:
            error = CheckpointMismatchError(shown, _describe(target), **refused)
            error.args = (error.args[0] + f"\n  hint: {_UNUSED_HINT}",)  # only unused keys are refused here
            raise error
        hint = (f"the name map leaves out {', '.join(left_out)}; " if left_out else "") + _UNFILLED_HINT
        raise PartialModelError(shown, _describe(target), hint=hint, **refused)
    report = restore_name_based(ckpt_path, target, strict=False)
    report.missing = sorted(set(report.missing) | set(left_out))
    checkpoint = tf.train.Checkpoint(**{edge: root})
    checkpoint.save_counter  # created now, so that restore(...).assert_consumed() finds it
    return ConvertedCheckpoint(checkpoint.write(out), report)


_UNUSED_HINT = (
    "strict=False converts anyway, leaving the unused keys (an optimizer's slots, global_step, other "
    "scopes) out of the new file and listing them in the result"
)


_UNFILLED_HINT = (
    "written, they would keep their current values in a file that loads like a complete model; "
    "fix the name map (tf.train.list_variables lists the checkpoint's keys), or pass "
    "allow_unfilled=True to write them as they are (the result lists them)"
)


def _left_out(name_map: Mapping[str, Any], root: Any) -> list[str]:
    """The keys (``variables_by_key(root)``) of ``root``'s variables that no entry of ``name_map`` names."""
    mapped = {id(variable) for variable in name_map.values()}
    return sorted(key for key, variable in variables_by_key(root).items() if id(variable) not in mapped)


def _refuse_foreign(name_map: Mapping[str, Any], root: Any) -> None:
    """Every variable of ``name_map`` must be one of ``root``'s: the values go through ``root``."""
    owned = list(root.weights) if hasattr(root, "weights") else list(getattr(root, "variables", ()))
    foreign = sorted(key for key, var in name_map.items() if not any(var is own for own in owned))
    if foreign:
        raise StructureMismatchError(
            f"the name map's entries {foreign} are not variables of the {_describe(root)} passed as root: "
            "build the map from the same object, e.g. {'dense/kernel': root.kernel}"
        )


def _unmatched(name_map: Mapping[str, Any], message: str) -> list[str]:
    """The keys of ``name_map`` whose variables got no value from the checkpoint."""
    return [key for key, var in name_map.items() if f"path={_key_of(var)}," in message
            or f"'{var.name}'" in message or f"name {var.name}" in message]


def object_based_to_name_based(
    ckpt_path: str | os.PathLike,
    out_prefix: str | os.PathLike,
    root: Any,
    name_map: Mapping[str, Any] | None = None,
    *,
    edge: str = "model",
) -> str:
    """Export an object-based checkpoint under TF1 global names, for a TF1 pipeline.

    ``root`` must be built and shaped like the object saved under ``edge``;
    every one of its variables must be found in the checkpoint (extra values,
    such as an optimizer's, are ignored: a training checkpoint
    ``tf.train.Checkpoint(model=..., optimizer=...)`` works, even when its
    keys sit under the optimizer's path). The values are then written under
    the keys of ``name_map`` (``{tf1_name: variable of root}``; by default
    ``variables_by_key(root)``). Refuses to overwrite an existing checkpoint
    (``WouldOverwriteError``), and refuses an ``out_prefix`` with ``[``, ``]``,
    ``*`` or ``?`` (``GlobPathError``, a ``NotACheckpointError``: the TF1
    ``Saver`` that the export is for could not restore ``run[1]/export`` by its
    name), both before ``root`` or any file is touched. An input checkpoint at
    such a path is read as it is.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="dense")])
        >>> saved = tf.train.Checkpoint(model=model).write(os.path.join(folder, "tf2", "model"))
        >>> dense = model.layers[0]
        >>> name_map = {"layer1/weights": dense.kernel, "layer1/biases": dense.bias}
        >>> exported = object_based_to_name_based(saved, os.path.join(folder, "tf1", "export"), model, name_map)
        >>> [name for name, _ in tf.compat.v1.train.list_variables(exported)]
        ['layer1/biases', 'layer1/weights']
        >>> checkpoint_format(exported)
        'name-based'
    """
    out = refuse_glob_characters(_refuse_to_write(out_prefix, ckpt_path))
    if not isinstance(edge, str) or not edge:
        raise StructureMismatchError(f"edge must be a non-empty attribute name, got {edge!r}")
    name_map = variables_by_key(name_map if name_map is not None else root)
    _refuse_foreign(name_map, root)
    if checkpoint_format(ckpt_path) != "object-based":
        raise NotACheckpointError(
            path_text(ckpt_path),
            "it is name-based; expected an object-based checkpoint written by tf.train.Checkpoint",
        )
    before = {key: variable.numpy() for key, variable in name_map.items()}
    prefix = resolve_checkpoint(ckpt_path)  # a folder stands for its newest checkpoint
    readable = glob_safe_prefix(prefix)  # TensorFlow takes [, *, ? in a path as a pattern
    try:
        # read() is restore() without the save counter, so that the check below
        # is about root's variables only.
        status = tf.train.Checkpoint(**{edge: root}).read(readable)
        status.assert_existing_objects_matched()
    except (AssertionError, ValueError) as error:
        unmatched = _unmatched(name_map, str(error))
        target = f"{_describe(root)} saved under the edge {edge!r}"
        if not unmatched:
            target += f" ({first_line(error)[:160]})"
        for key, variable in name_map.items():  # leave root as it was
            variable.assign(before[key])
        raise CheckpointMismatchError(path_text(ckpt_path), target, missing=unmatched) from None
    except (tf.errors.OpError, IndexError) as error:
        raise NotACheckpointError(
            path_text(ckpt_path),
            f"its data file is truncated or damaged ({first_line(error).replace(readable, prefix)})",
        ) from None
    status.expect_partial()  # e.g. optimizer values, which a TF1 inference graph does not need
    return write_name_based({key: variable.numpy() for key, variable in name_map.items()}, out)
