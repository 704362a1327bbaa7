"""Models as they ship today: quantized, mixed precision, averaged (EMA) weights, KerasHub presets.

Recipes for chapter 17:

* ``dtype_policies(path)``: the dtype policy of every layer a ``.keras`` file
  names (``int8_from_float32``, ``mixed_float16``, ...);
* ``quantized_weights(path)`` and ``quantization_modes(path)``: the kernels a
  ``.keras`` or ``.weights.h5`` file stores as int8, and each quantized layer's
  mode (int8, int4, float8), read from the variables it stores;
* ``load_weights_into_twin(model, path)``: ``model.load_weights(path)``, but a
  file whose layers are quantized otherwise than the twin's (int8 into a float
  twin, float into int8, int8 into int4, ...) is refused before anything is
  loaded, with the route (``QuantizedTwinError``);
* ``saved_optimizer_variables(path)`` and ``load_keeping_optimizer(path)``:
  ``load_model`` under the policy the file was saved with, so a mixed-precision
  model keeps its ``LossScaleOptimizer`` state; a reload that keeps fewer
  optimizer variables than the file holds raises ``OptimizerStateDroppedError``
  (Keras only warns);
* ``ema_pairs(model)``: each trained variable with its moving average, paired
  by position as Keras pairs them;
* ``describe_preset(folder)``: what a KerasHub preset folder holds, which
  Keras and KerasHub wrote it, and how to load it (``NotAPresetError`` for a
  folder that is not one); ``load_preset(folder)`` loads it as the class it
  names.

Example:
    >>> import os, tempfile, keras
    >>> folder = tempfile.mkdtemp()
    >>> inputs = keras.Input((4,))
    >>> model = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
    >>> model.quantize("int8")
    >>> model.save(os.path.join(folder, "q.keras"))
    >>> dtype_policies(os.path.join(folder, "q.keras"))
    {'out': 'int8_from_float32'}
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import h5py
import keras
import numpy as np

from helpers.errors import (
    NotAKerasFileError,
    NotAPresetError,
    OptimizerStateDroppedError,
    QuantizedTwinError,
    StructureMismatchError,
    first_line,
)
from helpers.files import path_text
from helpers.identify.keras_hub_presets import JSON_LIMIT, allocated_bytes, too_large

__all__ = [
    "NotAKerasFileError",
    "NotAPresetError",
    "OptimizerStateDroppedError",
    "PresetDescription",
    "QuantizedTwinError",
    "describe_preset",
    "dtype_policies",
    "ema_pairs",
    "load_keeping_optimizer",
    "load_preset",
    "load_weights_into_twin",
    "quantization_modes",
    "quantized_weights",
    "saved_optimizer_variables",
]

QUANTIZE_ROUTE = ("quantize the twin first: build it unquantized, model.quantize({mode!r}) (the mode the file was "
                  "saved with), then load")
FLOAT_ROUTE = ("load float weights before quantizing: build an unquantized twin, load_weights, "
               "then model.quantize(mode)")


# --------------------------------------------------------------------------- reading the files


@contextlib.contextmanager
def _weights_file(path: str | os.PathLike) -> Iterator[h5py.File]:
    """The HDF5 weights of a ``.keras`` archive or a ``.weights.h5`` file, opened read-only."""
    text = path_text(path, "Keras file path")
    if not os.path.isfile(text):
        raise NotAKerasFileError(text, "no such file")
    if zipfile.is_zipfile(text):
        with zipfile.ZipFile(text) as archive:
            if "model.weights.h5" not in archive.namelist():
                raise NotAKerasFileError(text, "the archive holds no model.weights.h5")
            try:
                member = archive.open("model.weights.h5")
                file = h5py.File(member, "r")
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise NotAKerasFileError(text, f"its model.weights.h5 is damaged ({first_line(error)}): "
                                               "copy or save the file again") from None
            with member, file:
                try:
                    yield file
                except (zipfile.BadZipFile, EOFError) as error:  # a damaged member shows while it is read
                    raise NotAKerasFileError(text, f"its model.weights.h5 is damaged ({first_line(error)}): "
                                                   "copy or save the file again") from None
        return
    try:
        file = h5py.File(text, "r")
    except OSError:
        raise NotAKerasFileError(text, "neither a .keras archive nor an HDF5 .weights.h5 file") from None
    with file:
        yield file


def _datasets(file: h5py.File) -> dict[str, h5py.Dataset]:
    found: dict[str, h5py.Dataset] = {}

    def keep(name: str, item: object) -> None:  # visititems stops at the first callback that returns a value
        if isinstance(item, h5py.Dataset):
            found[name] = item

    file.visititems(keep)
    return found


def _config(path: str | os.PathLike) -> dict[str, Any]:
    text = path_text(path, "Keras file path")
    if not os.path.isfile(text):
        raise NotAKerasFileError(text, "no such file")
    if not zipfile.is_zipfile(text):
        raise NotAKerasFileError(text, "only a .keras archive holds a configuration (a .weights.h5 has none)")
    try:
        with zipfile.ZipFile(text) as archive:
            config = json.loads(archive.read("config.json"))
    except KeyError:
        raise NotAKerasFileError(text, "the archive holds no config.json") from None
    except (zipfile.BadZipFile, ValueError, EOFError) as error:
        raise NotAKerasFileError(text, f"its config.json is damaged ({first_line(error)})") from None
    if not isinstance(config, dict):
        raise NotAKerasFileError(text, "its config.json is not a JSON object (a Keras model's configuration)")
    return config


def _walk_layers(config: Any) -> Iterator[dict[str, Any]]:
    inner = config.get("config") if isinstance(config, dict) else None
    for layer in (inner.get("layers") if isinstance(inner, dict) else None) or []:
        if isinstance(layer, dict):
            yield layer
            yield from _walk_layers(layer)


def _policy_name(dtype: Any) -> str | None:
    if isinstance(dtype, str):
        return dtype
    if not isinstance(dtype, dict):
        return None
    inner = dtype.get("config", {})
    if "mode" in inner:  # a quantized policy: int8_from_float32, int4_from_mixed_bfloat16, ...
        return f"{inner['mode']}_from_{inner.get('source_name', 'float32')}"
    return inner.get("name")


def dtype_policies(path: str | os.PathLike) -> dict[str, str]:
    """The dtype policy each layer of a ``.keras`` file was saved with, by layer name.

    A quantized layer reads ``int8_from_float32`` (mode and source policy), a
    mixed-precision one ``mixed_float16``; layers without a policy of their
    own are left out. A ``.weights.h5`` holds no configuration: it raises
    ``NotAKerasFileError`` (read it with ``quantized_weights``).

    Example:
        >>> import os, tempfile, keras
        >>> keras.mixed_precision.set_dtype_policy("mixed_float16")
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")])
        >>> keras.mixed_precision.set_dtype_policy("float32")
        >>> path = os.path.join(tempfile.mkdtemp(), "mp.keras")
        >>> model.save(path)
        >>> dtype_policies(path)
        {'d': 'mixed_float16'}
    """
    policies = {}
    for layer in _walk_layers(_config(path)):
        name = _policy_name((layer.get("config") or {}).get("dtype"))
        if name is not None and layer.get("class_name") != "InputLayer":
            policies[layer["config"].get("name", "?")] = name
    return policies


def quantized_weights(path: str | os.PathLike) -> dict[str, tuple[int, ...]]:
    """The quantized kernels a ``.keras`` or ``.weights.h5`` file stores as int8 (each layer's variable 0), with shapes.

    int8 and int4 modes both store a layer's kernel as int8, its variable 0
    (int4 packs two values in a byte: half the rows), with float scales
    beside it; int4 also stores an int8 zero point, not counted here. A float8
    model stores no int8 weight (``quantization_modes`` names it). An
    unquantized file gives ``{}``.

    Example:
        >>> import os, tempfile, keras
        >>> inputs = keras.Input((4,))
        >>> model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
        >>> model.quantize("int8")
        >>> path = os.path.join(tempfile.mkdtemp(), "q.weights.h5")
        >>> model.save_weights(path)
        >>> quantized_weights(path)
        {'layers/dense/vars/0': (4, 3)}
    """
    with _weights_file(path) as file:
        return {name: tuple(item.shape) for name, item in sorted(_datasets(file).items())
                if item.dtype == np.int8 and name.endswith("/vars/0") and not name.startswith("optimizer/")}


def _layout(file: h5py.File) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """Each layer's variables in a weights file (dtype and shape, in order); the optimizer left out."""
    groups: dict[str, list[tuple[int, str, tuple[int, ...]]]] = {}
    for name, item in _datasets(file).items():
        if name.startswith("optimizer/") or "/vars/" not in name:
            continue
        group, index = name.rsplit("/vars/", 1)
        groups.setdefault(group, []).append((int(index) if index.isdigit() else -1, str(item.dtype),
                                             tuple(item.shape)))
    return {group: [(dtype, shape) for _, dtype, shape in sorted(items)] for group, items in groups.items()}


def _mode(variables: list[tuple[str, tuple[int, ...]]]) -> str:
    """The quantization mode a layer's saved variables show: int4 (two int8 arrays), int8, float8, or float."""
    int8 = sum(dtype == "int8" for dtype, _ in variables)
    if int8 >= 2:  # the packed kernel and its zero point
        return "int4"
    if int8 == 1:
        return "int8"
    if sum(shape == () for _, shape in variables) >= 3:  # float8's scales beside their amax histories
        return "float8"
    return "float"


def quantization_modes(path: str | os.PathLike) -> dict[str, str]:
    """The quantization mode of each quantized layer in a ``.keras`` or ``.weights.h5`` file, by its path there.

    Read from the variables each layer stores (no configuration needed): ``int8``
    (an int8 kernel and its scale), ``int4`` (a packed kernel, scale, zero point and
    index), ``float8`` (the float kernel with scales and amax histories). Float layers
    are left out.

    Example:
        >>> import os, tempfile, keras
        >>> inputs = keras.Input((4,))
        >>> model = keras.Model(inputs, keras.layers.Dense(3)(inputs))
        >>> model.quantize("int4")
        >>> path = os.path.join(tempfile.mkdtemp(), "q4.weights.h5")
        >>> model.save_weights(path)
        >>> quantization_modes(path)
        {'layers/dense': 'int4'}
    """
    with _weights_file(path) as file:
        return {group: mode for group, variables in sorted(_layout(file).items())
                if (mode := _mode(variables)) != "float"}


def load_weights_into_twin(model: keras.Model, path: str | os.PathLike) -> keras.Model:
    """``model.load_weights(path)``, refusing a file whose layers are quantized otherwise than the model's.

    Keras refuses a quantized file for an unquantized twin (and the reverse, and
    int8 for int4, ...) too, but only after it has loaded what it could ("expected
    2 variables, but received 3"), leaving the twin half-loaded. This compares
    each layer's variables in the file (count, dtypes, shapes) with what the
    model would save, before anything is loaded: a different quantization mode
    raises ``QuantizedTwinError`` naming the route, any other difference
    ``StructureMismatchError``. Returns ``model``.

    Example:
        >>> import os, tempfile, keras
        >>> def build():
        ...     inputs = keras.Input((4,))
        ...     return keras.Model(inputs, keras.layers.Dense(3)(inputs))
        >>> quantized = build()
        >>> quantized.quantize("int8")
        >>> path = os.path.join(tempfile.mkdtemp(), "q.weights.h5")
        >>> quantized.save_weights(path)
        >>> load_weights_into_twin(build(), path)
        Traceback (most recent call last):
        ...
        helpers.errors.QuantizedTwinError: '...q.weights.h5' does not fit this model: its layer 'layers/dense' holds int8 weights (3 variables), the model's float (2); quantize the twin first: build it unquantized, model.quantize('int8') (the mode the file was saved with), then load
        >>> twin = build()
        >>> twin.quantize("int8")
        >>> load_weights_into_twin(twin, path) is twin
        True
    """
    text = path_text(path, "weights file path")
    if not isinstance(model, keras.Model):
        raise StructureMismatchError(f"load_weights_into_twin needs a Keras model to load {text!r} into, "
                                     f"not {type(model).__name__}: build the twin first")
    with _weights_file(text) as file:
        stored = _layout(file)
    with tempfile.TemporaryDirectory() as folder:  # what the twin itself would write, read the same way
        own_path = os.path.join(folder, "twin.weights.h5")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save_weights(own_path)
        with h5py.File(own_path, "r") as file:
            own = _layout(file)
    differ = [group for group in sorted(set(stored) | set(own)) if stored.get(group) != own.get(group)]
    modes = [(group, _mode(stored.get(group, [])), _mode(own.get(group, []))) for group in differ]
    other = [(group, theirs, ours) for group, theirs, ours in modes if theirs != ours]
    if other:
        group, theirs, ours = other[0]
        more = f" (and {len(other) - 1} more layer(s))" if len(other) > 1 else ""
        problem = (f"its layer {group!r} holds {theirs} weights ({len(stored.get(group, []))} variables), "
                   f"the model's {ours} ({len(own.get(group, []))}){more}")
        raise QuantizedTwinError(text, problem, FLOAT_ROUTE if theirs == "float" else
                                 QUANTIZE_ROUTE.format(mode=theirs))
    if differ:
        group = differ[0]
        raise StructureMismatchError(
            f"{text!r} does not fit this model: {len(differ)} layer(s) differ, first {group!r}: the file holds "
            f"{stored.get(group, 'nothing')}, the model {own.get(group, 'nothing')}; build the twin with the "
            "layers of the model that saved the file")
    model.load_weights(text)
    return model


# --------------------------------------------------------------------------- mixed precision and optimizers


def saved_optimizer_variables(path: str | os.PathLike) -> int:
    """How many optimizer variables a ``.keras`` or ``.weights.h5`` file holds (inner optimizers too).

    Counted as Keras counts them when it loads: a ``LossScaleOptimizer``
    around Adam holds 14 for a two-layer model (its own iteration, learning
    rate, step counter and loss scale, and the inner Adam's 10); the file also
    stores the inner Adam's 10 once more under ``optimizer/inner_optimizer``,
    not counted here.

    Example:
        >>> import os, tempfile, keras
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        >>> model.compile(keras.optimizers.Adam(), "mse")
        >>> model.optimizer.build(model.trainable_variables)
        >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
        >>> model.save(path)
        >>> saved_optimizer_variables(path)   # iteration, learning rate, 2 slots x 2 variables
        6
    """
    with _weights_file(path) as file:
        return sum(1 for name in _datasets(file) if name.startswith("optimizer/vars/"))


def _has_loss_scale_state(path: str) -> bool:
    """Whether the file's optimizer state is a ``LossScaleOptimizer``'s (it holds an inner optimizer)."""
    with _weights_file(path) as file:
        return "optimizer" in file and "inner_optimizer" in file["optimizer"]


def _mixed_policy(path: str) -> str | None:
    if not _has_loss_scale_state(path):  # compiled with auto_scale_loss=False, or not under a mixed policy
        return None
    names = set(dtype_policies(path).values())
    for name in ("mixed_float16", "mixed_bfloat16"):
        if name in names or any(policy.endswith("_from_" + name) for policy in names):
            return name
    return None


def load_keeping_optimizer(path: str | os.PathLike, **load_kwargs: Any) -> keras.Model:
    """``keras.saving.load_model(path)`` that keeps the optimizer state, or raises naming why not.

    ``compile()`` wraps the optimizer in a ``LossScaleOptimizer`` only while the
    *global* policy is ``mixed_float16``; a fresh process has ``float32``, so a
    mixed-precision model reloads with a bare optimizer and its saved state is
    skipped with a warning. When the file holds a ``LossScaleOptimizer``'s state,
    this loads under the file's own mixed policy (put back afterwards); a model
    compiled with ``auto_scale_loss=False`` loads under the policy you have. Then it compares the optimizer's variables with the file's:
    fewer raises ``OptimizerStateDroppedError`` instead of a warning.

    Example:
        >>> import os, tempfile, keras, numpy as np
        >>> keras.mixed_precision.set_dtype_policy("mixed_float16")
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4),
        ...                           keras.layers.Dense(1, dtype="float32")])
        >>> model.compile(keras.optimizers.Adam(), "mse")
        >>> keras.mixed_precision.set_dtype_policy("float32")
        >>> _ = model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "mp.keras")
        >>> model.save(path)
        >>> back = load_keeping_optimizer(path)
        >>> type(back.optimizer).__name__, len(back.optimizer.variables), saved_optimizer_variables(path)
        ('LossScaleOptimizer', 14, 14)
        >>> keras.mixed_precision.global_policy().name     # put back as it was
        'float32'
    """
    text = path_text(path, "Keras file path")
    saved = saved_optimizer_variables(text)
    mixed = _mixed_policy(text)
    before = keras.mixed_precision.global_policy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if mixed:
                keras.mixed_precision.set_dtype_policy(mixed)
            model = keras.saving.load_model(text, **load_kwargs)
        finally:
            keras.mixed_precision.set_dtype_policy(before)
    optimizer = getattr(model, "optimizer", None)
    loaded = len(optimizer.variables) if optimizer is not None and optimizer.built else 0
    skipped = [str(w.message) for w in caught if "Skipping variable loading for optimizer" in str(w.message)]
    if saved and (loaded < saved or skipped):
        route = ("load it with compile=True under the policy it was trained with "
                 f"(keras.mixed_precision.set_dtype_policy({mixed!r}) before load_model)" if mixed else
                 "compile the model with the optimizer it was trained with (same class, same options) "
                 "and load the file again")
        raise OptimizerStateDroppedError(text, saved, loaded, route)
    for line in caught:  # the warnings this recipe did not turn into an error go on as they came
        if "Skipping variable loading for optimizer" not in str(line.message):
            warnings.warn_explicit(line.message, line.category, line.filename, line.lineno)
    return model


# --------------------------------------------------------------------------- averaged (EMA) weights


def ema_pairs(model: keras.Model) -> list[tuple[Any, Any]]:
    """Each trainable variable of ``model`` with the moving average its optimizer keeps (``use_ema=True``).

    Keras pairs them by position (the n-th average belongs to the n-th
    variable the optimizer was built with), not by name: this pairs them the
    same way and checks the shapes, raising ``StructureMismatchError`` when the
    optimizer keeps no averages or they do not line up.

    Example:
        >>> import keras, numpy as np
        >>> inputs = keras.Input((3,))
        >>> model = keras.Model(inputs, keras.layers.Dense(2, name="head")(inputs))
        >>> model.compile(keras.optimizers.SGD(0.1, use_ema=True), "mse")
        >>> model.optimizer.build(model.trainable_variables)
        >>> [(v.path, a.path.split("/")[-1]) for v, a in ema_pairs(model)]
        [('head/kernel', 'head_kernel_average'), ('head/bias', 'head_bias_average')]
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not getattr(optimizer, "use_ema", False):
        raise StructureMismatchError("the model's optimizer keeps no moving averages: compile it with "
                                     "an optimizer made with use_ema=True")
    if not optimizer.built:
        raise StructureMismatchError("the optimizer is not built yet: call optimizer.build("
                                     "model.trainable_variables) or train one step first")
    averages = [v for v in optimizer.variables if v.path.endswith("_average")]
    trained = list(model.trainable_variables)
    if len(averages) != len(trained) or any(
            tuple(a.shape) != tuple(v.shape) for v, a in zip(trained, averages)):
        raise StructureMismatchError(f"{len(trained)} trainable variables and {len(averages)} averages "
                                     "do not line up by position: build the optimizer with "
                                     "model.trainable_variables, in their order")
    return list(zip(trained, averages))


# --------------------------------------------------------------------------- KerasHub presets


@dataclass
class PresetDescription:
    """What a KerasHub preset folder holds (``describe_preset``)."""

    path: str
    backbone_class: str
    task_class: str | None
    keras_version: str | None
    keras_hub_version: str | None
    parameter_count: int | None
    files: list[str] = field(default_factory=list)
    assets: list[str] = field(default_factory=list)
    traps: list[str] = field(default_factory=list)

    @property
    def how_to_load(self) -> str:
        """The line that loads the folder as the class it names (task if it has one)."""
        name = self.task_class or self.backbone_class
        return f"keras_hub.models.{name}.from_preset(path)"

    def __str__(self) -> str:
        lines = [f"KerasHub preset: {self.task_class or 'backbone only'} on {self.backbone_class}",
                 f"written by Keras {self.keras_version}, KerasHub {self.keras_hub_version}",
                 f"files: {', '.join(self.files)}",
                 f"assets: {', '.join(self.assets) or 'none'}",
                 f"load: {self.how_to_load}"]
        return "\n".join(lines + [f"trap: {trap}" for trap in self.traps])


def _read_json(folder: str, name: str) -> dict[str, Any]:
    path = os.path.join(folder, name)
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if size > JSON_LIMIT:
        raise NotAPresetError(folder, f"its {name} is {size} bytes, more than any preset's configuration "
                                      f"(limit {JSON_LIMIT}): damaged or replaced")
    try:
        with open(path, encoding="utf-8") as file:
            content = json.load(file)
    except json.JSONDecodeError as error:
        raise NotAPresetError(folder, f"its {name} is not valid JSON ({error.msg})") from None
    except RecursionError:
        raise NotAPresetError(folder, f"its {name} is nested too deeply to be a preset's configuration") from None
    except ValueError as error:  # an integer of more than 4300 digits
        raise NotAPresetError(folder, f"its {name} is not valid JSON ({first_line(error)[:80]})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise NotAPresetError(folder, f"its {name} cannot be read ({first_line(error)})") from None
    if not isinstance(content, dict):
        raise NotAPresetError(folder, f"its {name} is not a JSON object")
    return content


def _transformers_note(folder: str) -> str | None:
    """Why a folder with a Hugging Face Transformers or timm ``config.json`` is not a KerasHub preset."""
    try:
        if os.path.getsize(os.path.join(folder, "config.json")) > JSON_LIMIT:
            return None  # refused by _read_json, unread
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, ValueError, RecursionError):
        return None
    if isinstance(config, dict) and "registered_name" not in config:
        for key, library in (("model_type", "Hugging Face Transformers"), ("architecture", "timm")):
            if key in config:
                return (f"a {library} folder (config.json names {key} {str(config[key])!r}), not a KerasHub "
                        "preset: KerasHub converts some of these on load; try the task class of that "
                        "architecture's from_preset(path) and compare outputs with the original library")
    return None


def _version_tuple(text: str | None) -> tuple[int, ...]:
    parts = []
    for part in (text or "0").split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def describe_preset(folder: str | os.PathLike) -> PresetDescription:
    """Read a KerasHub preset folder: classes, writer versions, files, assets, traps, how to load.

    Nothing is imported or run: only the JSON files are read. A folder without
    ``config.json`` and ``metadata.json`` raises ``NotAPresetError``.

    Example:
        >>> import json, os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> for name, content in {"config.json": {"class_name": "BertBackbone"},
        ...                       "metadata.json": {"keras_version": "3.15.1", "keras_hub_version": "0.32.0"},
        ...                       "model.weights.h5": {}}.items():
        ...     with open(os.path.join(folder, name), "w") as file:
        ...         json.dump(content, file)
        >>> description = describe_preset(folder)
        >>> description.backbone_class, description.how_to_load
        ('BertBackbone', 'keras_hub.models.BertBackbone.from_preset(path)')
    """
    text = path_text(folder, "preset folder")
    if not os.path.isdir(text):
        raise NotAPresetError(text, "no such folder" if not os.path.exists(text) else
                              "a file, not a folder (a preset is a folder with config.json and metadata.json)")
    files = sorted(os.listdir(text))
    note = _transformers_note(text)
    if note:
        raise NotAPresetError(text, note)
    for needed in ("config.json", "metadata.json"):
        if needed not in files:
            raise NotAPresetError(text, f"it has no {needed}")
    config = _read_json(text, "config.json")
    metadata = _read_json(text, "metadata.json")
    task = _read_json(text, "task.json") if "task.json" in files else None
    assets = sorted(os.path.relpath(os.path.join(root, name), text).replace(os.sep, "/")  # assets/...
                    for root, _, names in os.walk(os.path.join(text, "assets")) for name in names)
    traps = []
    if "model.weights.h5" not in files and not any(name.startswith("model_") for name in files):
        traps.append("no model.weights.h5: from_preset(load_weights=False) gives random weights")
    if task is not None and "task.weights.h5" not in files:
        traps.append("task.json without task.weights.h5: the task's head loads with fresh random weights")
    backbone = (task.get("config") or {}).get("backbone") if task is not None else None
    if isinstance(backbone, dict) and backbone.get("config") != config.get("config"):
        traps.append("task.json carries its own backbone configuration, which differs from config.json's: "
                     "a task load builds the backbone from task.json")
    large = too_large(text, config, task)
    if large:
        traps.append(f"{large}: building it may exhaust memory; load_preset refuses it")
    installed = {"keras_version": keras.__version__}
    with contextlib.suppress(Exception):
        from importlib.metadata import version
        installed["keras_hub_version"] = version("keras-hub")
    for key, label in (("keras_version", "Keras"), ("keras_hub_version", "KerasHub")):
        written = metadata.get(key)
        if key in installed and _version_tuple(str(written)) > _version_tuple(installed[key]):
            traps.append(f"written by {label} {written}, newer than the installed "
                         f"{installed[key]}: upgrade, or compare outputs after loading")
    return PresetDescription(
        path=text, backbone_class=str(config.get("class_name", "?")),
        task_class=None if task is None else str(task.get("class_name", "?")),
        keras_version=None if metadata.get("keras_version") is None else str(metadata["keras_version"]),
        keras_hub_version=None if metadata.get("keras_hub_version") is None else str(metadata["keras_hub_version"]),
        parameter_count=metadata.get("parameter_count"), files=files, assets=assets, traps=traps)


def _keras_hub_class(name: str, registered: str | None) -> Any:
    import keras_hub

    if registered is not None and not registered.startswith("keras_hub>"):
        raise NotAPresetError("", f"it names the class {registered!r}, which KerasHub does not define: "
                                  "load it with the library that registered it")
    found = getattr(keras_hub.models, name, None)
    if found is None:
        raise NotAPresetError("", f"KerasHub {keras_hub.__version__} has no class {name!r}: "
                                  "a newer KerasHub wrote it? pip install -U keras-hub")
    return found


def load_preset(folder: str | os.PathLike, **kwargs: Any) -> keras.Model:
    """Load a local KerasHub preset folder as the task (or backbone) class it names.

    Only classes KerasHub itself defines are loaded (``registered_name``
    ``keras_hub>...``): a folder naming any other class raises
    ``NotAPresetError``, and so does, before anything is built: a weights file that is not readable
    HDF5 (truncated, damaged); a missing ``model.weights.h5``, or ``task.json`` without
    ``task.weights.h5`` (either would give fresh random weights); sizes in the configuration far
    beyond what the weight files hold (any integer of it may size an allocation, and counts of layers
    or blocks are bounded too: ``helpers.identify.keras_hub_presets.too_large``; building it could
    exhaust memory); a weights file whose arrays declare far more bytes than it holds. ``kwargs`` go to
    ``from_preset``.

    Example:
        >>> model = load_preset("my_preset")            # doctest: +SKIP
    """
    description = describe_preset(folder)
    wants_weights = kwargs.get("load_weights", True)
    if wants_weights and "model.weights.h5" not in description.files and "model.weights.json" not in description.files:
        raise NotAPresetError(description.path, "it has no model.weights.h5: the backbone would get fresh random "
                                                "weights; copy the whole preset (or pass load_weights=False "
                                                "for an untrained model on purpose)")
    if wants_weights and description.task_class and "task.weights.h5" not in description.files:
        raise NotAPresetError(description.path, "task.json without task.weights.h5: the task's head would get "
                                                "fresh random weights; copy the whole preset, or load the "
                                                f"backbone alone: keras_hub.models.{description.backbone_class}"
                                                ".from_preset(path)")
    for weights in (f for f in description.files if f.endswith(".weights.h5")):
        path = os.path.join(description.path, weights)
        try:
            with h5py.File(path, "r") as file:
                declared = sum(int(np.prod(item.shape, dtype=object)) * item.dtype.itemsize
                               for item in _datasets(file).values())
        except OSError as error:
            raise NotAPresetError(description.path, f"its {weights} is not a readable HDF5 file "
                                                    f"({str(error).split('(')[-1].rstrip(')')}): "
                                                    "truncated or damaged; copy the preset again") from None
        held = allocated_bytes(path)  # a sparse file holds only what it allocates
        if declared > 2 * held + (1 << 20):  # Keras stores arrays whole, uncompressed
            raise NotAPresetError(description.path, f"its {weights} declares arrays of {declared} bytes in "
                                                    f"{held} bytes of file: reading them could "
                                                    "exhaust memory; copy the preset again")
    source = _read_json(description.path, "task.json" if description.task_class else "config.json")
    large = too_large(description.path, _read_json(description.path, "config.json"), source)
    if large:
        raise NotAPresetError(description.path, f"{large}: building it could exhaust memory; use the preset its "
                                                "publisher wrote")
    name = description.task_class or description.backbone_class
    try:
        cls = _keras_hub_class(name, source.get("registered_name"))
    except NotAPresetError as error:
        raise NotAPresetError(description.path, error.reason) from None
    return cls.from_preset(description.path, **kwargs)
