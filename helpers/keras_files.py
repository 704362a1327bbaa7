"""Look inside Keras 3's own files, and prove a model's state made it into one (notebook 08).

Three recipes:

* ``describe_keras_file(path)``: a table of every weight in a ``.keras``
  archive, a ``.weights.h5`` file or a sharded ``.weights.json`` index, with
  its path inside the file, the layer's name, shape, dtype and size;
* ``missing_from_file(model, path)``: the model's variables whose values the
  file does not hold (an empty list when the file is complete), including
  variables Keras does not track at all;
* ``latest_keras_file(folder)``: the newest of the numbered files a
  ``ModelCheckpoint`` wrote, which ``tf.train.latest_checkpoint`` cannot see;

plus ``owned_variables(model)``, every variable a model's layers and optimizer
hold, tracked by Keras or not, and notebook 12's ``round_trip`` and ``run_in_fresh_process``:
both live in ``helpers.round_trip`` (which imports nothing of this module) and are re-exported
here. (The warnings Keras raises or logs are shown
with ``helpers.notebook.captured_warnings``.)

Example:
    >>> import keras, tempfile
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")])
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = os.path.join(folder.name, "demo.weights.h5")
    >>> model.save_weights(path)
    >>> describe_keras_file(path)
    weight               layer  shape   dtype    size
    -------------------  -----  ------  -------  ----
    layers/dense/vars/0  out    (3, 2)  float32  24 B
    layers/dense/vars/1  out    (2,)    float32  8 B
    2 weights, 32 B
    >>> missing_from_file(model, path)
    []
    >>> folder.cleanup()
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, replace

import h5py
import keras
import numpy as np
import tensorflow as tf

from helpers.errors import ModelNotBuiltError, NotAKerasFileError, first_line
from helpers.files import check_archive_sizes, path_text
from helpers.inspection import format_bytes
from helpers.notebook import format_table
from helpers.round_trip import (
    ReloadFailedError,
    ReloadMismatchError,
    RoundTripReport,
    RoundTripRow,
    owned_variables,
    round_trip,
    run_in_fresh_process,
)

__all__ = [
    "KerasFileDescription",
    "ModelNotBuiltError",
    "NotAKerasFileError",
    "SavedWeight",
    "describe_keras_file",
    "latest_keras_file",
    "missing_from_file",
    "owned_variables",
    # notebook 12's, from helpers.round_trip (kept importable from here, where the course names them)
    "ReloadFailedError",
    "ReloadMismatchError",
    "RoundTripReport",
    "RoundTripRow",
    "round_trip",
    "run_in_fresh_process",
]

WEIGHTS_IN_ARCHIVE = "model.weights.h5"
_Variable = (tf.Variable, keras.Variable)
_SUFFIXES = (".keras", ".weights.h5", ".weights.json")


# --------------------------------------------------------------------------- describe


@dataclass(frozen=True)
class SavedWeight:
    """One weight in a Keras file: its HDF5 path, the layer's name, shape, dtype, size and shard."""

    path: str
    layer: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int | None
    shard: str = ""


@dataclass(frozen=True)
class KerasFileDescription:
    """Every weight of a Keras file; shows itself as a table."""

    path: str
    kind: str  # "keras archive", "weights" or "sharded weights"
    weights: tuple[SavedWeight, ...]

    @property
    def paths(self) -> list[str]:
        return [weight.path for weight in self.weights]

    @property
    def total_bytes(self) -> int:
        return sum(weight.nbytes or 0 for weight in self.weights)

    @property
    def shards(self) -> list[str]:
        return sorted({weight.shard for weight in self.weights if weight.shard})

    def __len__(self) -> int:
        return len(self.weights)

    def __repr__(self) -> str:
        sharded = self.kind == "sharded weights"
        headers = ["weight", "layer", "shape", "dtype", "size"] + ["shard"] * sharded
        rows = [
            [w.path, w.layer, _format_shape(w.shape), w.dtype, format_bytes(w.nbytes)] + [w.shard] * sharded
            for w in self.weights
        ]
        count = len(self.weights)
        summary = f"{count} weight{'s' * (count != 1)}, {format_bytes(self.total_bytes)}"
        if sharded:
            summary += f" in {len(self.shards)} shard{'s' * (len(self.shards) != 1)}"
        return format_table(headers, rows) + "\n" + summary


def describe_keras_file(path: str | os.PathLike) -> KerasFileDescription:
    """List every weight of a ``.keras``, ``.weights.h5`` or sharded ``.weights.json`` file.

    The kind of file is told by its name, as Keras itself does. Each weight is
    listed by its path inside the HDF5 file (``layers/dense/vars/0``), with
    the name of the layer that saved it, its shape, dtype and size; a sharded
    file also names the shard that holds it. Anything else (a missing file,
    a damaged zip, an HDF5 file that is not Keras weights, a missing shard)
    raises ``NotAKerasFileError`` saying what is wrong.

    Example:
        >>> describe_keras_file("model.ckpt")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAKerasFileError: 'model.ckpt' is not a readable Keras file: no such file or folder
    """
    text = path_text(path, "Keras file path")
    if not os.path.exists(text):
        raise NotAKerasFileError(text, _why_missing(text))
    if os.path.isdir(text):
        raise NotAKerasFileError(text, _why_folder(text))
    if text.endswith(".keras"):
        if _signature(text) == "hdf5":
            raise NotAKerasFileError(text, "an HDF5 file, not a zip archive (a .keras file is a zip): "
                                           + _why_hdf5(text, renamed=True))
        return KerasFileDescription(text, "keras archive", _describe_archive(text))
    if text.endswith(".weights.h5"):
        if _signature(text) == "zip":
            raise NotAKerasFileError(text, _ZIP_NAMED_H5)
        return KerasFileDescription(text, "weights", tuple(_describe_h5(text, text)))
    if text.endswith(".weights.json"):
        return KerasFileDescription(text, "sharded weights", _describe_sharded(text))
    raise NotAKerasFileError(text, _why_not_keras(text))


def _why_not_keras(text: str) -> str:
    if text.endswith((".h5", ".hdf5")):
        return _why_legacy_h5(text)
    if text.endswith((".index", ".meta")) or re.search(r"\.data-\d{5}-of-\d{5}$", text):
        return "one of a TensorFlow checkpoint's files (read it with helpers.inspection.describe_checkpoint)"
    return "its name does not end in .keras, .weights.h5 or .weights.json"


_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_ZIP_NAMED_H5 = ("a zip archive, not HDF5 (a .keras file renamed?): copy it under a name ending in .keras; "
                 "describe_keras_file and keras.models.load_model read it by that name")


def _signature(text: str) -> str:
    """What a file's first bytes say it is: ``"hdf5"``, ``"zip"`` or ``""``; the name may say otherwise."""
    with open(text, "rb") as file:
        head = file.read(8)
    return "hdf5" if head == _HDF5_SIGNATURE else "zip" if head.startswith(b"PK\x03\x04") else ""


def _why_legacy_h5(text: str) -> str:
    """What a ``.h5`` file that is not a Keras 3 weights file is, and what reads it."""
    if zipfile.is_zipfile(text):
        return "a zip archive (a .keras file renamed .h5?): give it its .keras name back"
    return _why_hdf5(text)


def _why_hdf5(text: str, renamed: bool = False) -> str:
    """What an HDF5 file holds, told by its layout (not its name), and the route that reads it.

    ``renamed``: the file has a name Keras reads as another format, so every
    route starts with a copy under the right name.
    """
    try:
        with h5py.File(text, "r") as h5:
            legacy = "layer_names" in h5.attrs or "model_weights" in h5
            whole_model = "model_config" in h5.attrs
            keras_212 = "_layer_checkpoint_dependencies" in h5  # Keras 2.12/2.13's .weights.h5 layout
            keras_3 = "vars" in h5 and "name" in h5["vars"].attrs  # Keras 3 names each object; Keras 2.14/2.15 not
            weights = "vars" in h5 or "layers" in h5
    except (OSError, RuntimeError, KeyError) as error:
        return f"a truncated or damaged HDF5 file ({first_line(error)}); copy or download it again"
    as_h5 = "copy it under a name ending in .h5 (Keras reads a legacy file by that name), then " if renamed else ""
    if legacy and whole_model:
        return f"a legacy (Keras 2) whole-model HDF5 file: {as_h5}{_whole_model_route(text)}"
    if legacy:
        return (f"a legacy (Keras 2) HDF5 weights file: {as_h5}model.load_weights(path) reads it into a model of "
                "the same architecture (helpers.keras2.describe_legacy_h5 lists it)")
    if keras_212:
        return ("a weights file in the .weights.h5 layout of Keras 2.12-2.14 (layers under "
                "'_layer_checkpoint_dependencies'): Keras 3's load_weights reads it under a name ending in "
                ".weights.h5 where its layers are numbered as Keras 3 counts; those of Keras 2.12/2.13 (dense, "
                "dense_2) need helpers.keras2.renumber_keras2_zip_weights(path, 'm.weights.h5') first")
    if weights:
        writer = "Keras 3" if keras_3 else "Keras 2.14/2.15 (tf.keras' new layout, which records no version)"
        return (f"a .weights.h5 file written by {writer} under another name: Keras reads this layout only by a "
                "name ending in .weights.h5 (load_weights takes a plain .h5 for the legacy layout and fails): "
                "copy it under such a name, then describe_keras_file and model.load_weights read the copy")
    return "an HDF5 file that is neither Keras 3 weights nor a legacy Keras file"


def _whole_model_route(text: str) -> str:
    """The route that rebuilds a legacy whole-model ``.h5`` in Keras 3, found by running it.

    Keras 3's own loader is tried first (what ``load_model`` runs for a
    ``.h5`` name, so the file's own name does not matter). Where it fails,
    helpers.keras2 rebuilds the architecture (without its weights) the way
    ``convert_legacy_h5`` would, and what that says is the route.
    """
    from keras.src.legacy.saving import legacy_h5_format

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            legacy_h5_format.load_model_from_hdf5(text, compile=False)
        return "keras.models.load_model(path, compile=False) reads it (helpers.keras2.describe_legacy_h5 lists it)"
    except Exception:  # noqa: BLE001 - any failure of Keras' loader sends the reader to the converter
        pass
    # Imported here: helpers.keras2 (the converter) is heavier than this module and need not load with it.
    from helpers.errors import LegacyModelError
    from helpers.keras2 import model_from_h5

    failed = "keras.models.load_model cannot rebuild it"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model_from_h5(text, safe_mode=True)
    except LegacyModelError as error:
        return f"{failed}: " + "; ".join(error.problems) + f"; route (helpers.keras2): {error.route}"
    return (f"{failed} (Keras 2-only arguments, nested models or keyword tensors); "
            "helpers.keras2.convert_legacy_h5(path, 'model.keras') converts it (arguments patched, "
            "nested models renumbered, every weight paired by name), and keras.models.load_model reads the copy")


def _why_missing(text: str) -> str:
    """A path that does not exist may still be a checkpoint prefix: say so, and what reads it."""
    if os.path.isfile(text + ".index"):
        return ("a TensorFlow checkpoint prefix (its .index file lies beside it), not a Keras file: "
                "helpers.inspection.describe_checkpoint(path) lists it; one that Keras 2's save_weights wrote "
                "loads into a Keras 3 model with helpers.keras2.restore_keras2_checkpoint(path, model)")
    return "no such file or folder"


def _why_folder(text: str) -> str:
    names = set(os.listdir(text))
    if "saved_model.pb" in names or "saved_model.pbtxt" in names:
        return ("a SavedModel folder, not a Keras file: helpers.saved_models.describe_saved_model(path) "
                "describes it, tf.saved_model.load(path) loads it")
    if "checkpoint" in names or any(name.endswith(".index") for name in names):
        return ("a folder of TensorFlow checkpoints, not a Keras file: "
                "helpers.inspection.describe_checkpoint(path) reads its newest checkpoint")
    if any(name.endswith(_SUFFIXES) for name in names):
        return "a folder of Keras files: helpers.keras_files.latest_keras_file(path) picks the newest one"
    return "a folder, not a Keras file"


def _describe_archive(text: str) -> tuple[SavedWeight, ...]:
    try:
        with zipfile.ZipFile(text) as archive:
            check_archive_sizes(archive, text)  # a zip bomb is refused before anything is inflated
            names = archive.namelist()
            if WEIGHTS_IN_ARCHIVE not in names:
                other = [name for name in names if name.startswith("model.weights")]
                why = f"its weights are in {other[0]!r}, not HDF5" if other else f"the archive has no {WEIGHTS_IN_ARCHIVE!r}"
                raise NotAKerasFileError(text, why)
            data = archive.read(WEIGHTS_IN_ARCHIVE)
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise NotAKerasFileError(text, f"not a zip archive, or a truncated one ({first_line(error)})") from None
    return tuple(_describe_h5(io.BytesIO(data), text))


def _open_h5(source: str | io.BytesIO, text: str) -> h5py.File:
    try:
        return h5py.File(source, "r")
    except OSError as error:
        raise NotAKerasFileError(text, f"not an HDF5 file, or a truncated one ({first_line(error)})") from None


def _describe_h5(source: str | io.BytesIO, text: str, shard: str = "", groups: set[str] | None = None) -> Iterator[SavedWeight]:
    """The weights of one Keras 3 HDF5 weights file (a whole one, or the ``groups`` of a shard)."""
    with _open_h5(source, text) as h5:
        if "layer_names" in h5.attrs or "model_weights" in h5:
            raise NotAKerasFileError(
                text, "a legacy HDF5 file in the Keras 2 layout ('model_weights', 'layer_names'), not Keras 3 weights"
            )
        datasets: list[tuple[str, h5py.Dataset]] = []
        h5.visititems(lambda name, item: datasets.append((name, item)) if isinstance(item, h5py.Dataset) else None)
        weights = []
        for name, item in datasets:
            group, _, key = name.rpartition("/")
            # Keras numbers its own values ('0', '1'); a layer's save_own_variables may add keys of its own.
            if not (group == "vars" or group.endswith("/vars")) or not key:
                raise NotAKerasFileError(
                    text, f"an HDF5 file that is not Keras weights (its dataset {name!r} is not in a 'vars' group)"
                )
            if groups is not None and "/" + group not in groups:
                continue  # a group listed under another shard
            if item.size and item.id.get_storage_size() == 0:  # declared, never written: no values
                raise NotAKerasFileError(
                    text, f"its dataset {name!r} declares shape {tuple(item.shape)} but stores no values "
                          "(nothing was written to it): not weights Keras saved"
                )
            dtype = str(item.attrs.get("dtype", item.dtype))
            size = None if item.dtype.kind in "OSU" else math.prod(item.shape) * item.dtype.itemsize
            layer = h5[group].attrs.get("name", "")
            weights.append(SavedWeight(name, str(layer), tuple(item.shape), dtype, size, shard))
        if not datasets and "vars" not in h5 and "layers" not in h5:
            raise NotAKerasFileError(text, "an HDF5 file with no Keras weights in it (no 'vars' or 'layers' group)")
    return iter(sorted(weights, key=lambda w: _natural_key(w.path)))


def _describe_sharded(text: str) -> tuple[SavedWeight, ...]:
    try:
        with open(text, encoding="utf-8") as file:
            index = json.load(file)
        weight_map = index["weight_map"]
        if not isinstance(weight_map, dict):
            raise TypeError("'weight_map' is not a mapping")
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as error:
        raise NotAKerasFileError(
            text, f"not a sharded-weights index (a JSON file with a 'weight_map'): {first_line(error)}"
        ) from None
    by_shard: dict[str, set[str]] = {}
    for group, shards in weight_map.items():
        for shard in [shards] if isinstance(shards, str) else shards:
            by_shard.setdefault(shard, set()).add(group)
    folder = os.path.dirname(text)
    absent = sorted(shard for shard in by_shard if not os.path.isfile(os.path.join(folder, shard)))
    if absent:
        raise NotAKerasFileError(text, f"shard file(s) missing beside the index: {', '.join(map(repr, absent))}")
    weights: list[SavedWeight] = []
    for shard in sorted(by_shard, key=_natural_key):
        weights.extend(_describe_h5(os.path.join(folder, shard), text, shard, by_shard[shard]))
    # A layer's name is stored once, in the shard where its group was opened; its weights may lie in the next one.
    layer_names = {w.path.rpartition("/")[0]: w.layer for w in weights if w.layer}
    def note_name(name: str, item: h5py.Group | h5py.Dataset) -> None:  # visititems stops at a non-None return
        if isinstance(item, h5py.Group) and "name" in item.attrs:
            layer_names.setdefault(name, str(item.attrs["name"]))

    for shard in by_shard:
        with _open_h5(os.path.join(folder, shard), text) as h5:
            h5.visititems(note_name)
    weights = [replace(w, layer=w.layer or layer_names.get(w.path.rpartition("/")[0], "")) for w in weights]
    return tuple(sorted(weights, key=lambda w: _natural_key(w.path)))


def _natural_key(text: str) -> list[object]:
    """Sort ``vars/2`` before ``vars/10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _format_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


# --------------------------------------------------------------------------- missing from a file


def missing_from_file(model: keras.Model, path: str | os.PathLike, include_optimizer: bool = True) -> list[str]:
    """The model's variables whose values ``path`` does not hold; an empty list when the file is complete.

    It asks Keras itself, without changing the model: Keras's own
    ``load_weights(path, skip_mismatch=True)`` walks the model and the file,
    but every variable's ``assign`` only records that a value of the right
    shape arrived, and writes nothing. A variable that receives no value
    (no such entry in the file, another shape, a layer with another number
    of weights, a variable Keras does not track) is missing. Nothing is
    written into the model: not its weights, not the optimizer (with
    ``include_optimizer=False`` neither), not what a layer derives from its
    weights (an adapted ``Normalization``'s mean and variance); every value
    is compared before and after to prove it. Use it after saving ("did
    everything get saved?") and before loading into a changed model (what
    ``skip_mismatch=True`` would silently skip).

    The model must be built, and so must every layer the file holds values
    for: a subclassed model reloaded from ``.keras`` whose layers are created
    in ``build()`` may have layers with no variables at all (they get fresh
    random weights on their first call), and ``ModelNotBuiltError`` names
    them. An optimizer that is not built yet (no slots) while the file
    holds optimizer state raises ``ModelNotBuiltError`` too: Keras would
    skip that state with only a warning; build it first
    (``model.optimizer.build(model.trainable_variables)``) or pass
    ``include_optimizer=False``. ``path`` is checked with
    ``describe_keras_file`` first, so a bad file raises ``NotAKerasFileError``.

    Example:
        >>> import tempfile
        >>> class Scaler(keras.layers.Layer):
        ...     def build(self, shape):
        ...         self.offset = tf.Variable(0.0, trainable=False)  # a plain variable: Keras does not save it
        >>> model = keras.Sequential([keras.Input((3,)), Scaler(name="scaler")])
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     model.save_weights(os.path.join(folder, "model.weights.h5"))
        ...     missing_from_file(model, os.path.join(folder, "model.weights.h5"))
        ['scaler/offset']
    """
    text = path_text(path, "Keras file path")
    description = describe_keras_file(text)
    if not model.built:
        raise ModelNotBuiltError(
            "the model is not built yet: call it once on data (or build it) before checking a file"
        )
    variables = owned_variables(model, include_optimizer=include_optimizer)
    saveables = _saveables(model)
    guarded = _all_variables(model, saveables)
    before = {key: np.array(variable.numpy(), copy=True) for key, variable in guarded.items()}
    received: set[int] = set()
    offered: dict[int, tuple[object, int, BaseException | None]] = {}
    try:
        with _dry_run(saveables, guarded, received, offered), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skip_mismatch warns about each skipped layer; we report them instead
            try:
                model.load_weights(text, skip_mismatch=True)
            except (OSError, KeyError, ValueError) as error:
                raise NotAKerasFileError(text, f"Keras cannot load it into this model ({first_line(error)})") from None
    finally:
        changed = [key for key, variable in guarded.items() if not _same(before[key], variable.numpy())]
        for key in changed:  # never expected: a layer wrote around `assign`; put the value back
            guarded[key].assign(before[key])
    if changed:
        raise RuntimeError(f"loading changed {len(changed)} variable(s) behind assign; their values were put back")
    _refuse_unbuilt(model, description, offered, include_optimizer)
    return [name for name, variable in variables.items() if id(variable) not in received]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _saveables(model: keras.Model) -> list[object]:
    """Every object Keras's saving walks from ``model`` (layers, optimizer, metrics...), each once."""
    found: list[object] = []
    seen: set[int] = set()

    def visit(obj: object, depth: int) -> None:
        if depth > 50 or id(obj) in seen:
            return
        if isinstance(obj, (list, tuple)):
            seen.add(id(obj))
            for item in obj:
                visit(item, depth + 1)
            return
        if isinstance(obj, dict):
            seen.add(id(obj))
            for item in list(obj.values()):
                visit(item, depth + 1)
            return
        if not callable(getattr(type(obj), "load_own_variables", None)) or isinstance(obj, type):
            return
        seen.add(id(obj))
        found.append(obj)
        for attribute in dir(obj):
            if attribute.startswith("__"):
                continue
            try:
                child = getattr(obj, attribute)
            except Exception:  # noqa: BLE001: properties may raise; Keras's own walk skips them too
                continue
            if isinstance(child, (list, tuple, dict)) or callable(getattr(type(child), "load_own_variables", None)):
                visit(child, depth + 1)

    visit(model, 0)
    return found


def _all_variables(model: keras.Model, saveables: list[object]) -> dict[int, tf.Variable | keras.Variable]:
    """Every variable Keras might assign while loading into ``model``, by ``id``."""
    found: dict[int, tf.Variable | keras.Variable] = {}
    for saveable in saveables:
        try:
            held = list(getattr(saveable, "variables", []) or [])
        except Exception:  # noqa: BLE001: an unbuilt object may refuse to list them
            held = []
        for variable in held:
            if isinstance(variable, _Variable):
                found.setdefault(id(variable), variable)
    for variable in owned_variables(model).values():
        found.setdefault(id(variable), variable)
    return found


class _dry_run:
    """Within it, ``assign`` on the guarded variables checks the shape and records, writing nothing;
    each saveable's ``load_own_variables`` notes how many values the file offered and what it raised."""

    def __init__(self, saveables, guarded, received: set[int], offered: dict) -> None:
        self.saveables, self.guarded, self.received, self.offered = saveables, guarded, received, offered

    def __enter__(self) -> "_dry_run":
        for variable in self.guarded.values():
            object.__setattr__(variable, "assign", self._recorder(variable))
        for saveable in self.saveables:
            object.__setattr__(saveable, "load_own_variables", self._loader(saveable))
        return self

    def __exit__(self, *exc) -> None:
        for variable in self.guarded.values():
            if "assign" in vars(variable):
                object.__delattr__(variable, "assign")
        for saveable in self.saveables:
            if "load_own_variables" in vars(saveable):
                object.__delattr__(saveable, "load_own_variables")

    def _recorder(self, variable):
        def assign(value, *args, **kwargs):
            shape = tuple(np.shape(value))
            if shape != tuple(variable.shape):
                raise ValueError(f"a value of shape {shape} for a variable of shape {tuple(variable.shape)}")
            self.received.add(id(variable))
            return variable
        return assign

    def _loader(self, saveable):
        original = type(saveable).load_own_variables

        def load_own_variables(store):
            count = len(store.keys()) if store is not None else 0
            # Keras may reach one object by two paths (``d`` and ``layers/dense``): keep the fullest offer.
            _, most, error = self.offered.get(id(saveable), (saveable, 0, None))
            self.offered[id(saveable)] = (saveable, max(most, count), error)
            try:
                original(saveable, store)
            except Exception as failure:
                self.offered[id(saveable)] = (saveable, max(most, count), error or failure)
                raise
        return load_own_variables


def _refuse_unbuilt(model, description: KerasFileDescription, offered: dict, include_optimizer: bool) -> None:
    """``ModelNotBuiltError`` for layers with no variables offered values, and for an unbuilt optimizer."""
    unbuilt = [
        obj.name for obj, count, error in offered.values()
        if count and isinstance(obj, keras.layers.Layer) and not obj.variables and not obj.built
    ]
    if unbuilt:
        listed = ", ".join(repr(name) for name in unbuilt)
        raise ModelNotBuiltError(
            f"layer(s) {listed} of the model have no variables (never built), although the file holds values "
            "for them: their weights would be fresh random values. Call the model once on data (a subclassed "
            "model that makes its layers in build() needs it after load_model too), then check again"
        )
    optimizer = getattr(model, "optimizer", None)
    if include_optimizer and isinstance(optimizer, keras.optimizers.Optimizer) and not optimizer.built:
        count = next((count for obj, count, _ in offered.values() if obj is optimizer), 0)
        if count or any(w.path.startswith("optimizer/") for w in description.weights):
            raise ModelNotBuiltError(
                f"the optimizer {optimizer.name!r} is not built (it has {len(optimizer.variables)} variables, "
                f"no slots yet), and the file holds {count} optimizer values: Keras would skip them with only "
                "a warning. Build it first with model.optimizer.build(model.trainable_variables), "
                "or pass include_optimizer=False"
            )


# --------------------------------------------------------------------------- newest file


def _is_shard(folder: str, name: str) -> bool:
    """``model_00001.weights.h5`` is a shard when ``model.weights.json`` lies beside it."""
    match = re.fullmatch(r"(.*)_\d{5}\.weights\.h5", name)
    return bool(match) and os.path.isfile(os.path.join(folder, match[1] + ".weights.json"))


def latest_keras_file(folder: str | os.PathLike, suffix: str = ".weights.h5") -> str | None:
    """The newest numbered file ending in ``suffix`` in ``folder``; ``None`` if there is no such file.

    ``ModelCheckpoint("ckpt/model-{epoch:02d}.weights.h5", ...)`` writes
    numbered files and no ``checkpoint`` state file, so
    ``tf.train.latest_checkpoint`` returns ``None``. The newest is the one
    whose numbers (read left to right, as numbers: ``model-10`` is newer
    than ``model-9``) are the largest; modification times are not used
    (they tie when saves are quick, and copies change them). A file with
    no number in its name (``best.weights.h5``, ``model.weights.h5``) is
    returned only when no numbered file is there. Ties are broken by the
    whole name in the same natural order: ``model-05`` and ``model-5``
    carry the same number and the later name wins, and between several
    unnumbered files the same rule picks one; if your folder can hold such
    ties, pass the file you mean instead.

    Example:
        >>> latest_keras_file("no/such/folder")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAKerasFileError: 'no/such/folder' is not a readable Keras file: no such folder
    """
    text = path_text(folder, "folder")
    if not os.path.isdir(text):
        raise NotAKerasFileError(text, "no such folder" if not os.path.exists(text) else "a file, not a folder")
    if suffix not in _SUFFIXES:
        raise ValueError(f"suffix must be one of {', '.join(_SUFFIXES)}; got {suffix!r}")
    names = [name for name in os.listdir(text) if name.endswith(suffix) and os.path.isfile(os.path.join(text, name))]
    if suffix == ".weights.h5":  # the shards of a sharded save are not whole weights files
        names = [name for name in names if not _is_shard(text, name)]
    if not names:
        return None
    return os.path.join(text, max(names, key=lambda name: _newest_key(name, suffix)))


def _newest_key(name: str, suffix: str) -> tuple[bool, list[int], list[object]]:
    """Numbered names first, then by their numbers, then by the whole name (``.h5``'s 5 is not a number)."""
    numbers = [int(number) for number in re.findall(r"\d+", name[: -len(suffix)])]
    return bool(numbers), numbers, _natural_key(name)
