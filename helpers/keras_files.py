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
hold, tracked by Keras or not. (The warnings Keras raises or logs are shown
with ``helpers.notebook.captured_warnings``.)

Example:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")])  # doctest: +SKIP
    >>> model.save_weights("demo.weights.h5")                                             # doctest: +SKIP
    >>> describe_keras_file("demo.weights.h5")                                            # doctest: +SKIP
    weight               layer  shape   dtype    size
    -------------------  -----  ------  -------  ----
    layers/dense/vars/0  out    (3, 2)  float32  24 B
    layers/dense/vars/1  out    (2,)    float32  8 B
    2 weights, 32 B
    >>> missing_from_file(model, "demo.weights.h5")                                       # doctest: +SKIP
    []
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

__all__ = [
    "KerasFileDescription",
    "ModelNotBuiltError",
    "NotAKerasFileError",
    "SavedWeight",
    "describe_keras_file",
    "latest_keras_file",
    "missing_from_file",
    "owned_variables",
]

WEIGHTS_IN_ARCHIVE = "model.weights.h5"
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
    from helpers.keras2 import _model_from_h5

    failed = "keras.models.load_model cannot rebuild it"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _model_from_h5(text, safe_mode=True)
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


# --------------------------------------------------------------------------- owned variables

_Variable = (tf.Variable, keras.Variable)


def owned_variables(model: keras.layers.Layer, include_optimizer: bool = True) -> dict[str, tf.Variable | keras.Variable]:
    """Every variable a model's layers (and optimizer) hold, tracked by Keras or not, by a readable name.

    Keras saves the variables it *tracks* (those in ``model.weights`` and the
    optimizer's). A plain ``tf.Variable`` stored on a layer, or a list of
    them, is not tracked; it is still found here, by walking the attributes
    of every layer. A Keras variable is named by its ``path``
    (``dense/kernel``); an untracked one by its layer's name and the
    attribute that holds it (``scaler/offset``, ``scaler/history[0]``).
    Metric accumulators and random-seed states are left out: Keras never
    saves them (metrics restart every epoch, seeds are not weights).

    Example:
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")], name="net")
        >>> list(owned_variables(model))
        ['net/out/kernel', 'net/out/bias']
    """
    found: dict[int, tuple[str, object]] = {}
    visited: set[int] = set()

    def visit(obj: object, owner: str, trail: str) -> None:
        if isinstance(obj, _Variable):
            if id(obj) not in found:
                name = obj.path if isinstance(obj, keras.Variable) else f"{owner}/{trail}"
                found[id(obj)] = (name, obj)
            return
        if id(obj) in visited:
            return
        if isinstance(obj, (keras.metrics.Metric, keras.random.SeedGenerator)):
            return
        if isinstance(obj, keras.optimizers.Optimizer) and not include_optimizer:
            return
        if isinstance(obj, (keras.layers.Layer, keras.optimizers.Optimizer)):
            visited.add(id(obj))
            # Plain attributes first, so that a variable is named by `offset`, not by Keras's bookkeeping.
            attributes = sorted(vars(obj).items(), key=lambda item: (item[0].startswith("_self_"), item[0].startswith("_")))
            for attribute, value in attributes:
                visit(value, obj.name, attribute)
        elif isinstance(obj, (list, tuple)):
            visited.add(id(obj))
            for i, item in enumerate(obj):
                visit(item, owner, f"{trail}[{i}]")
        elif isinstance(obj, dict):
            visited.add(id(obj))
            for key, item in list(obj.items()):
                visit(item, owner, f"{trail}[{key!r}]")

    # Tracked variables first, in Keras's own order; the walk then adds the untracked ones.
    tracked = list(model.weights)
    optimizer = getattr(model, "optimizer", None)
    if include_optimizer and isinstance(optimizer, keras.optimizers.Optimizer):
        tracked += list(optimizer.variables)
    for variable in tracked:
        visit(variable, "", "")
    visit(model, getattr(model, "name", "model"), "")
    names: dict[str, tf.Variable | keras.Variable] = {}
    for name, variable in found.values():
        unique, n = name, 1
        while unique in names:  # two variables may share a path; keep both
            n += 1
            unique = f"{name} ({n})"
        names[unique] = variable  # type: ignore[assignment]
    return names


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
        >>> model.save_weights("model.weights.h5")            # doctest: +SKIP
        >>> missing_from_file(model, "model.weights.h5")      # doctest: +SKIP
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


# --------------------------------------------------------------------------- round trip in a fresh process (notebook 12)

import atexit  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from helpers.errors import ReloadFailedError, ReloadMismatchError  # noqa: E402
from helpers.workers import fork_workers  # noqa: E402

__all__ += ["ReloadFailedError", "ReloadMismatchError", "RoundTripReport", "RoundTripRow", "round_trip",
            "run_in_fresh_process"]

_LIBRARY_MODULES = ("keras", "tf_keras", "tensorflow", "builtins", "numpy")
_NAME_WIDTH = 44


# A fresh process costs seconds (TensorFlow's import). On Linux one server process pays that once and
# forks a child per job; the child has imported Keras and nothing of this process's own code.


def _worker_env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder that holds `helpers`
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH", "")] if p])
    return env


class _Server:
    """The one ``helpers.round_trip_worker serve`` process of this process, and its unread replies."""

    process: subprocess.Popen | None = None
    pending = b""

    @classmethod
    def stop(cls) -> None:
        """End it (its end of stdin), and with it a child still running: at exit or when it misbehaves."""
        process, cls.process, cls.pending = cls.process, None, b""
        if process is None:
            return
        try:
            process.stdin.close()
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
        process.stdout.close()

    @classmethod
    def reply(cls, word: str, timeout: float) -> int | None:
        """The number after ``word`` in its next reply line; None if none came within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while b"\n" not in cls.pending:
            left = deadline - time.monotonic()
            fd = cls.process.stdout.fileno()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise OSError("the fresh-process server ended")
            cls.pending += chunk
        line, cls.pending = cls.pending.split(b"\n", 1)
        head, _, number = line.decode().partition(" ")
        if head != word:
            raise OSError(f"the fresh-process server said {line!r}")
        return int(number or 0)

    @classmethod
    def start(cls) -> bool:
        """Start it unless it runs (seconds: it imports TensorFlow); False if it cannot start."""
        if cls.process is not None and cls.process.poll() is None:
            return True
        cls.stop()
        cls.process = subprocess.Popen([sys.executable, "-m", "helpers.round_trip_worker", "serve"],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, env=_worker_env())
        try:
            if cls.reply("ready", 300) is not None:
                return True
        except OSError:
            pass
        cls.stop()
        return False


atexit.register(_Server.stop)


def _run_worker(args: list[str], folder: str, timeout: float) -> subprocess.CompletedProcess:
    """``python -m helpers.round_trip_worker ARGS`` in a fresh process, its output files in ``folder``.

    Forked from the server where it can run, a new interpreter otherwise. Raises
    ``subprocess.TimeoutExpired`` after ``timeout`` seconds (the process is killed first).
    """
    command = [sys.executable, "-m", "helpers.round_trip_worker", *args]
    if not (fork_workers() and _Server.start()):
        return subprocess.run(command, env=_worker_env(), capture_output=True, text=True, timeout=timeout)
    paths = {name: os.path.join(folder, f"std{name}.txt") for name in ("out", "err")}
    job = {"args": args, "cwd": os.getcwd(), "env": _worker_env(), **paths}
    try:
        _Server.process.stdin.write(json.dumps(job).encode() + b"\n")
        _Server.process.stdin.flush()
        pid = _Server.reply("pid", 60)
        if pid is None:
            raise OSError("the fresh-process server started no process")
        code = _Server.reply("exit", timeout)
        if code is None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it ended just now
            if _Server.reply("exit", 60) is None:
                _Server.stop()
            raise subprocess.TimeoutExpired(command, timeout)
    except OSError:  # the server died or misbehaved: the next call starts a new one
        _Server.stop()
        code = None
    if code is None:
        return subprocess.CompletedProcess(command, -1, "", "the fresh-process server stopped")
    out, err = (_text(paths[name]) for name in ("out", "err"))
    return subprocess.CompletedProcess(command, code, out, err)


def _text(path: str) -> str:
    """The text of ``path``, or "" if there is no such file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""


def run_in_fresh_process(source: str, *, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Run the Python code ``source`` in a fresh process in this folder, like ``subprocess.run``.

    The process has none of this one's classes, registrations or settings: on Linux it is
    forked from a server that has imported TensorFlow and Keras and nothing else (so it starts
    in milliseconds, with this process's environment variables, except those TensorFlow read
    at its import); elsewhere, or with ``COURSE_WORKERS=spawn``, it is a new interpreter.
    Returns a ``subprocess.CompletedProcess`` with ``returncode``, ``stdout`` and ``stderr``
    (text); raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds, the process killed.

    Example:
        >>> run_in_fresh_process("print(6 * 7)").stdout   # doctest: +SKIP
        '42\\n'
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fresh_process_") as folder:
        script = os.path.join(folder, "script.py")
        with open(script, "w", encoding="utf-8") as file:
            file.write(source)
        return _run_worker(["script", script], folder, timeout)


@dataclass(frozen=True)
class RoundTripRow:
    """One line of a round trip: an output, a variable or a layer, as it is here and after the reload."""

    what: str  # "output", "variable" or "layer"
    name: str
    here: str
    reloaded: str
    verdict: str  # "equal", "differs", "missing", "unexpected", "unbuilt", "class differs"

    @property
    def ok(self) -> bool:
        return self.verdict == "equal"

    def problem(self) -> str:
        where = {"missing": "missing from the reloaded model", "unexpected": "only in the reloaded model",
                 "unbuilt": "left unbuilt by the reload", "differs": "differs after the reload",
                 "class differs": f"is a {self.here} here, a {self.reloaded} in the fresh process"}[self.verdict]
        if self.verdict == "differs" and self.here != self.reloaded:
            where = f"is {self.here} here, {self.reloaded} after the reload"
        return f"{self.what} {self.name!r} {where}"


@dataclass(frozen=True)
class RoundTripReport:
    """What ``round_trip`` compared, row by row; shows itself as a table. ``ok`` when every row is equal."""

    path: str
    rows: tuple[RoundTripRow, ...]
    max_output_difference: float

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    @property
    def problems(self) -> list[str]:
        return [row.problem() for row in self.rows if not row.ok]

    def __repr__(self) -> str:
        rows = [[row.what, _shorten(row.name), row.here, row.reloaded, row.verdict] for row in self.rows]
        counts = {what: sum(row.what == what for row in self.rows) for what in ("output", "variable", "layer")}
        summary = ", ".join(f"{n} {what}{'s' * (n != 1)}" for what, n in counts.items())
        verdict = "all equal" if self.ok else f"{len(self.problems)} problem{'s' * (len(self.problems) != 1)}"
        return format_table(["what", "name", "here", "reloaded", "verdict"], rows) + f"\n{summary}: {verdict}"


def _shorten(name: str) -> str:
    return name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH // 2 - 1] + "…" + name[-(_NAME_WIDTH // 2):]


def round_trip(
    model: keras.Model,
    path: str | os.PathLike,
    inputs: object,
    *,
    modules: list[str | os.PathLike] | tuple[str | os.PathLike, ...] | None = None,
    compile: bool = True,  # noqa: A002 - load_model's own argument name
    safe_mode: bool = True,
    atol: float = 1e-6,
    timeout: float = 300.0,
    strict: bool = True,
) -> RoundTripReport:
    """Reload the ``.keras`` file ``path`` in a fresh Python process and compare it with ``model``.

    A fresh process has none of the classes this one defined, so a class
    that only a notebook cell defines cannot be silently reused. The
    reloaded model is compared with ``model``: its outputs on ``inputs`` (an
    array, a list or a dict of arrays; ``training=False``), every variable by
    path (non-trainable state, untracked ``tf.Variable`` attributes and the
    optimizer's variables included), and every layer's class and built state
    (read before the reloaded model is called, since a call would build a
    layer the reload left unbuilt). With ``strict`` (the default) any
    difference raises ``ReloadMismatchError`` naming each one; otherwise the
    report says so (``report.ok``, ``report.problems``).

    The fresh process imports ``modules`` first (module names, or paths of
    ``.py`` files): the modules that define or register the custom classes,
    losses and metrics. When ``modules`` is ``None``, it imports the modules
    of the model's own layer classes. Nothing is written next to ``path``: the
    inputs and results go through a temporary folder. A file that is not a
    ``.keras`` archive raises ``NotAKerasFileError``; a ``.keras`` file Keras 2
    wrote (2.13-2.15) raises ``ReloadFailedError`` naming the route for its
    version before any process starts; a class the fresh
    process cannot find, an error while loading, or a run longer than
    ``timeout`` seconds raises ``ReloadFailedError`` saying what to do.

    Example:
        >>> model.save("model.keras")                        # doctest: +SKIP
        >>> round_trip(model, "model.keras", x)              # doctest: +SKIP
        what      name              here     reloaded  verdict
        --------  ----------------  -------  --------  -------
        output    0                 (4, 1)   (4, 1)    equal
        variable  net/dense/kernel  (3, 1)   (3, 1)    equal
        ...
    """
    import tempfile

    from helpers import round_trip_worker as worker

    text = path_text(path, "Keras file path")
    _check_keras_archive(text)
    if not model.built:
        raise ValueError("the model is not built yet: call it once on data before comparing it with a file")
    entries = _modules_to_import(model) if modules is None else [path_text(m, "module") for m in modules]
    entries = [os.path.abspath(m) if m.endswith(".py") else m for m in entries]
    here, here_arrays = worker.snapshot(model, inputs)
    layout, input_arrays = worker.pack_inputs(inputs)
    with tempfile.TemporaryDirectory(prefix="round_trip_") as folder:
        np.savez(os.path.join(folder, "inputs.npz"), **input_arrays)
        request = {"path": os.path.abspath(text), "modules": entries, "compile": compile,
                   "safe_mode": safe_mode, "inputs": layout}
        with open(os.path.join(folder, "request.json"), "w", encoding="utf-8") as file:
            json.dump(request, file)
        try:
            finished = _run_worker(["reload", folder], folder, timeout)
        except subprocess.TimeoutExpired:
            raise ReloadFailedError(text, f"it did not finish within {timeout:g} s and was stopped; "
                                          "pass a larger timeout= for a big model") from None
        result_file = os.path.join(folder, "result.json")
        if not os.path.isfile(result_file):
            last = (finished.stderr.strip().splitlines() or ["no message"])[-1]
            raise ReloadFailedError(text, f"the process ended with code {finished.returncode}: {last}")
        with open(result_file, encoding="utf-8") as file:
            there = json.load(file)
        if "error" in there:
            raise ReloadFailedError(text, _failure_reason(there, model, entries))
        with np.load(os.path.join(folder, "arrays.npz")) as data:
            there_arrays = {key: data[key] for key in data.files}
    report = _compare(text, here, here_arrays, there, there_arrays, atol)
    if strict and not report.ok:
        raise ReloadMismatchError(text, report.problems, report)
    return report


def _check_keras_archive(text: str) -> None:
    """``NotAKerasFileError`` unless ``text`` is a ``.keras`` zip archive with a model configuration."""
    if not os.path.exists(text):
        raise NotAKerasFileError(text, "no such file or folder")
    if text.endswith((".weights.h5", ".weights.json")):
        raise NotAKerasFileError(text, "a weights-only file: round_trip reloads a whole model; save it with "
                                       "model.save('name.keras'), or check a weights file with missing_from_file")
    if os.path.isdir(text) or not text.endswith(".keras"):
        raise NotAKerasFileError(text, "round_trip reloads a .keras archive (model.save('name.keras'))")
    try:
        with zipfile.ZipFile(text) as archive:
            check_archive_sizes(archive, text)
            names = archive.namelist()
            version, module = _keras2_archive(archive) if "config.json" in names else ("", "")
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise NotAKerasFileError(text, f"not a zip archive, or a truncated one ({first_line(error)})") from None
    if "config.json" not in names:
        raise NotAKerasFileError(text, "the archive has no 'config.json': not a Keras 3 model file")
    if version:
        raise ReloadFailedError(text, _keras2_route(version, module))


def _keras2_archive(archive: zipfile.ZipFile) -> tuple[str, str]:
    """The Keras 2 version that wrote a ``.keras`` archive and its model's module; ``("", "")`` for Keras 3."""
    try:
        version = str(json.loads(archive.read("metadata.json")).get("keras_version", ""))
        module = str(json.loads(archive.read("config.json")).get("module", ""))
    except (KeyError, ValueError, AttributeError):
        return "", ""  # no or odd metadata: let Keras 3 itself try
    return (version, module) if version.startswith("2.") else ("", "")


def _keras2_route(version: str, module: str) -> str:
    """Why Keras 3 cannot reload a Keras 2 ``.keras`` archive, and the route that works for its version."""
    where = f" (its model class is in {module!r})" if module else ""
    head = f"a .keras file written by Keras {version}{where}: Keras 3 cannot rebuild Keras 2 classes. "
    minor = version.split(".")[1] if version.count(".") else ""
    if minor.isdigit() and int(minor) >= 14:
        return head + ("Build the model in Keras 3 code (same layer names) and call model.load_weights(path): "
                       "Keras 3 reads the weights of a Keras 2.14/2.15 .keras file")
    return head + ("Keras 2.12/2.13 numbered its layers otherwise: "
                   "helpers.keras2.renumber_keras2_zip_weights(path, 'm.weights.h5') writes its weights as Keras 3 "
                   "counts, then model.load_weights('m.weights.h5') into the model built in Keras 3 code (chapter 13)")


def _modules_to_import(model: keras.Model) -> list[str]:
    found: list[str] = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        module = type(layer).__module__
        if module.split(".")[0] in _LIBRARY_MODULES or module in ("__main__", "__mp_main__"):
            continue
        # A top-level module loaded from a file (a notebook's work folder) goes by its path, so that the fresh
        # process finds it wherever it runs; a module in a package goes by its name.
        file = getattr(sys.modules.get(module), "__file__", None) or ""
        entry = file if "." not in module and file.endswith(".py") else module
        if entry not in found:
            found.append(entry)
    return found


def _failure_reason(there: dict, model: keras.Model, entries: list[str]) -> str:
    if there["error"] == "import":
        return f"importing {there['module']!r} failed ({there['message']}); pass modules= that import cleanly"
    if there["error"] == "not_found":
        name = there["name"].split(">")[-1]
        defined = [type(layer) for layer in model._flatten_layers(include_self=True, recursive=True)
                   if type(layer).__name__ == name]
        where = ""
        if defined and defined[0].__module__ in ("__main__", "__mp_main__"):
            where = " It is defined in this notebook or script (__main__), which a fresh process cannot import."
        tried = f" (imported: {', '.join(entries)})" if entries else " (no module was imported)"
        return (f"it cannot find the {there['kind']} {there['name']!r}{tried}.{where} Put the {there['kind']} "
                "in a .py module, register it there with @keras.saving.register_keras_serializable(), and pass "
                "modules=['that_module'] or the file's path")
    return there["message"]


def _compare(text: str, here: dict, here_arrays: dict, there: dict, there_arrays: dict, atol: float) -> RoundTripReport:
    rows: list[RoundTripRow] = []
    worst = 0.0
    for i in range(max(here["outputs"], there["outputs"])):
        a, b = here_arrays.get(f"o{i}"), there_arrays.get(f"o{i}")
        if a is None or b is None:
            rows.append(RoundTripRow("output", str(i), _describe(a), _describe(b), "missing" if b is None else "unexpected"))
            continue
        same, difference = _within(a, b, atol)
        worst = max(worst, difference)
        rows.append(RoundTripRow("output", str(i), _format_shape(a.shape), _format_shape(b.shape),
                                 "equal" if same else "differs"))
    theirs = {v["name"]: v for v in there["variables"]}
    mine = {v["name"]: v for v in here["variables"]}
    for name, variable in mine.items():
        a = here_arrays[variable["key"]]
        if name not in theirs:
            rows.append(RoundTripRow("variable", name, _describe(a), "-", "missing"))
            continue
        b = there_arrays[theirs[name]["key"]]
        same, _ = _within(a, b, atol)
        rows.append(RoundTripRow("variable", name, _describe(a), _describe(b), "equal" if same else "differs"))
    for name in theirs.keys() - mine.keys():
        rows.append(RoundTripRow("variable", name, "-", _describe(there_arrays[theirs[name]["key"]]), "unexpected"))
    reloaded_layers = {layer["path"]: layer for layer in there["layers"]}
    for layer in here["layers"]:
        other = reloaded_layers.get(layer["path"])
        short = layer["class"].rsplit(".", 1)[-1]
        if other is None:
            rows.append(RoundTripRow("layer", layer["path"], short, "-", "missing"))
        elif other["class"] != layer["class"]:
            rows.append(RoundTripRow("layer", layer["path"], layer["class"], other["class"], "class differs"))
        elif layer["built"] and not other["built"]:
            rows.append(RoundTripRow("layer", layer["path"], "built", "unbuilt", "unbuilt"))
        else:
            rows.append(RoundTripRow("layer", layer["path"], "built" if layer["built"] else "unbuilt",
                                     "built" if other["built"] else "unbuilt", "equal"))
    return RoundTripReport(text, tuple(rows), worst)


def _describe(value: np.ndarray | None) -> str:
    return "-" if value is None else _format_shape(value.shape)


def _within(a: np.ndarray, b: np.ndarray, atol: float) -> tuple[bool, float]:
    """Whether ``a`` and ``b`` agree within ``atol`` (exactly for non-floats), and by how much they differ."""
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False, math.inf
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b)), 0.0 if np.array_equal(a, b) else math.inf
    difference = float(np.max(np.abs(a - b))) if a.size else 0.0
    return bool(np.allclose(a, b, rtol=0.0, atol=atol, equal_nan=True)), difference
