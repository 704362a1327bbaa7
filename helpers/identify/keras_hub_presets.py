"""Reader: a KerasHub preset folder (``save_to_preset``: ``config.json``, ``metadata.json``, weights).

Reads the folder's JSON files only (no Keras, no KerasHub, no TensorFlow): the backbone and task
classes, the Keras and KerasHub versions that wrote it, the weight files and tokenizer assets.
The loading code calls ``from_preset`` on the class the folder names.

Example:
    >>> import json, os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> files = {"config.json": {"class_name": "BertBackbone", "registered_name": "keras_hub>BertBackbone"},
    ...          "metadata.json": {"keras_version": "3.15.1", "keras_hub_version": "0.32.0"}}
    >>> for name, content in files.items():
    ...     with open(os.path.join(folder, name), "w") as file:
    ...         json.dump(content, file)
    >>> looks_like_preset(folder)
    True
    >>> info = read_preset_folder(folder)
    >>> info.kind, info.written_by["KerasHub"], info.holds["backbone"]
    ('keras-hub-preset', '0.32.0', 'BertBackbone')
    >>> info.traps[0]
    'no model.weights.h5: from_preset gives a model with fresh random weights (or fails)'
"""

from __future__ import annotations

import json
import os
from typing import Any

from helpers.identify.answer import Identification, loading_code, not_model
from helpers.trust import MODULES

__all__ = ["declared_integers", "declared_scale", "looks_like_preset", "read_preset_folder", "too_large",
           "weight_bytes"]


def _other_format(folder: str) -> str | None:
    """The library whose folder format a ``config.json`` without ``metadata.json`` names (Transformers, timm)."""
    if os.path.isfile(os.path.join(folder, "metadata.json")):
        return None
    try:
        config = _json(folder, "config.json")
    except (OSError, ValueError):
        return None
    if isinstance(config, dict) and "registered_name" not in config:
        for key, library in (("model_type", "Hugging Face Transformers"), ("architecture", "timm")):
            if key in config:
                return f"{library} (config.json names {key} {str(config[key])!r})"
    return None


def looks_like_preset(folder: str) -> bool:
    """A folder holding ``config.json`` and a ``metadata.json`` that names a KerasHub or Keras version (or a
    Transformers or timm folder, which ``read_preset_folder`` names as not a KerasHub preset)."""
    if not os.path.isfile(os.path.join(folder, "config.json")):
        return False
    if _other_format(folder):
        return True
    if not os.path.isfile(os.path.join(folder, "metadata.json")):
        return False
    try:
        with open(os.path.join(folder, "metadata.json"), encoding="utf-8") as file:
            metadata = json.load(file)
    except (OSError, ValueError):
        return False
    return isinstance(metadata, dict) and ("keras_hub_version" in metadata or "keras_nlp_version" in metadata)


def _installed(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int("".join(ch for ch in part if ch.isdigit()) or 0) for part in text.split(".")[:3])


def _json(folder: str, name: str) -> Any:
    with open(os.path.join(folder, name), encoding="utf-8") as file:
        return json.load(file)


def _readable_hdf5(path: str) -> bool:
    import h5py

    try:
        h5py.File(path, "r").close()
    except OSError:
        return False
    return True


# What a configuration may declare, against what its weight files hold (bytes on disk: every stored value
# takes at least a byte, and no header can make a file larger than it is). Measured on KerasHub 0.32's
# BertBackbone: each block (layer) built costs about 1 MB and 44 ms of Python objects, however small its
# arrays, so counts of repeated parts get their own bound.
ELEMENTS_FLOOR = 1 << 25  # declared elements any preset may build (about 128 MB of float32)
ELEMENTS_PER_BYTE = 64  # beyond the floor: declared elements per byte of weight files
COUNTS_FLOOR = 64  # repeated parts (layers, blocks, experts...) any preset may build
BYTES_PER_COUNT = 1 << 18  # beyond the floor: one repeated part per 256 KiB of weight files
NOT_SIZES = ("wavelength", "theta", "freq", "seed")  # integers that size nothing (RoPE constants, seeds)
COUNT_WORDS = ("layer", "block", "depth", "repeat", "stage", "expert")
HEAD_WORDS = ("head", "key_dim", "value_dim")  # attention kernels: heads x head size x hidden, three sizes in one


def declared_integers(config: Any, where: str = "") -> list[tuple[str, int]]:
    """Every integer a configuration declares (bools aside), with its place (``config.hidden_dim``).

    Whole floats count (``4096.0``); other floats do not.

    Example:
        >>> declared_integers({"config": {"vocab": 9, "dims": [4, 2.0], "bias": True, "dropout": 0.1}})
        [('config.vocab', 9), ('config.dims[0]', 4), ('config.dims[1]', 2)]
    """
    found: list[tuple[str, int]] = []
    if isinstance(config, dict):
        for key, value in config.items():
            found += declared_integers(value, f"{where}.{key}" if where else str(key))
    elif isinstance(config, list):
        for index, value in enumerate(config):
            found += declared_integers(value, f"{where}[{index}]")
    elif isinstance(config, int) and not isinstance(config, bool):
        found.append((where, abs(config)))
    elif isinstance(config, float) and config.is_integer():  # 4096.0 sizes a layer as 4096 does
        found.append((where, int(abs(config))))
    return found


def _last_key(place: str) -> str:
    return place.split("[")[0].rsplit(".", 1)[-1].lower()


def _is_size(place: str) -> bool:
    key = _last_key(place)
    return not key.endswith("_id") and not any(word in key for word in NOT_SIZES)


def declared_scale(config: Any) -> tuple[int, int, str]:
    """What building ``config`` may allocate: (elements, repeated parts, the integers that say so).

    Every integer is a size unless its name says it is a RoPE constant, a seed (``NOT_SIZES``) or
    an identifier (``..._id``: a token id, Keras's ``shared_object_id``), whatever it is called
    (``vocab``, ``vocabulary_size``, ``d_model``...); one whose name counts
    repeated parts (``COUNT_WORDS``: ``num_layers``, ``n_layer``, ``stackwise_num_blocks``...) is a
    count too. Elements: the two largest sizes multiplied (an embedding table is vocabulary x
    hidden), times one plus all counts (each part holds such arrays); or, when larger, the sizes
    that shape attention heads (``HEAD_WORDS``: ``num_heads``, ``head_dim``...) multiplied with the
    largest other size (a query kernel is heads x head size x hidden, three sizes in one array).

    Example:
        >>> declared_scale({"vocab": 50_000, "d_model": 512, "n_layer": 4, "rope_max_wavelength": 10_000})
        (128000000, 4, 'vocab 50000 x d_model 512 x (1 + 4 repeated parts)')
        >>> declared_scale({"hidden_dim": 4096, "num_query_heads": 4096, "head_dim": 4096})
        (68719476736, 0, 'num_query_heads 4096 x head_dim 4096 x hidden_dim 4096')
    """
    integers = [(place, value) for place, value in declared_integers(config) if _is_size(place)]
    counts = sum(value for place, value in integers if any(word in _last_key(place) for word in COUNT_WORDS))
    largest = sorted(integers, key=lambda item: item[1])[-2:]
    elements = 1
    for _, value in largest:
        elements *= value
    elements = elements * (1 + counts) if largest else 0
    shown = " x ".join(f"{_last_key(place)} {value}" for place, value in reversed(largest))
    shown = f"{shown or 'nothing'} x (1 + {counts} repeated parts)"
    heads = [(place, value) for place, value in integers if any(word in _last_key(place) for word in HEAD_WORDS)]
    others = [(place, value) for place, value in integers if (place, value) not in heads]
    if heads and others:
        attention = max(others, key=lambda item: item[1])[1]
        for _, value in heads:
            attention *= value
        if attention > elements:
            parts = heads + [max(others, key=lambda item: item[1])]
            shown = " x ".join(f"{_last_key(place)} {value}" for place, value in parts)
            elements = attention
    return elements, counts, shown


def weight_bytes(folder: str) -> int:
    """The bytes a preset's weight files (``*.weights.h5``, shards included) hold on disk."""
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)
               if name.endswith(".weights.h5") and os.path.isfile(os.path.join(folder, name)))


def too_large(folder: str, *configs: Any) -> str | None:
    """Why building a preset's configurations could exhaust memory, against its weight files; None if it cannot.

    A configuration may declare at most ``ELEMENTS_FLOOR`` elements, or ``ELEMENTS_PER_BYTE`` per
    byte of weight files, and at most ``COUNTS_FLOOR`` repeated parts, or one per
    ``BYTES_PER_COUNT`` bytes (see ``declared_scale``). Reads file sizes only.

    Example:
        >>> import tempfile
        >>> too_large(tempfile.mkdtemp(), {"config": {"vocab": 9, "hidden": 4, "num_layers": 1}}) is None
        True
        >>> why = too_large(tempfile.mkdtemp(), {"config": {"vocab": 2_000_000_000, "hidden": 4}})
        >>> why.split(": ")
        ['its configuration declares vocab 2000000000 x hidden 4 x (1 + 0 repeated parts)',
         '8.0e+09 elements from 0 bytes of weight files (at most 3.4e+07)']
    """
    stored = weight_bytes(folder)
    element_limit = max(ELEMENTS_FLOOR, ELEMENTS_PER_BYTE * stored)
    count_limit = max(COUNTS_FLOOR, stored // BYTES_PER_COUNT)
    for config in configs:
        elements, counts, shown = declared_scale(config)
        if counts > count_limit:
            return (f"its configuration declares {counts} repeated parts (layers, blocks...) from {stored} bytes "
                    f"of weight files (at most {count_limit})")
        if elements > element_limit:
            return (f"its configuration declares {shown}: {elements:.1e} elements from {stored} bytes of weight "
                    f"files (at most {element_limit:.1e})")
    return None


def read_preset_folder(folder: str) -> Identification:
    other = _other_format(folder)
    if other:
        return not_model(folder, f"a {other} folder, not a KerasHub preset: KerasHub converts some of these "
                                 "while loading (the task class of that architecture's from_preset(path)); "
                                 "compare its outputs with the original library's")
    try:
        config, metadata = _json(folder, "config.json"), _json(folder, "metadata.json")
        task = _json(folder, "task.json") if os.path.isfile(os.path.join(folder, "task.json")) else None
    except (OSError, ValueError) as error:
        return not_model(folder, f"a preset folder whose JSON is damaged ({type(error).__name__})")
    if not isinstance(config, dict) or not isinstance(metadata, dict):
        return not_model(folder, "a preset folder whose config.json or metadata.json is not a JSON object")
    names = sorted(os.listdir(folder))
    assets = sorted(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
                    for root, _, files in os.walk(os.path.join(folder, "assets")) for name in files)
    written = {"Keras": str(metadata.get("keras_version", "?"))}  # str(): a hand-edited file may hold a number
    written["KerasHub"] = str(metadata.get("keras_hub_version", metadata.get("keras_nlp_version", "?")))
    info = Identification(folder, "keras-hub-preset", written_by=written)
    main = task if isinstance(task, dict) else config
    info.holds = {"backbone": str(config.get("class_name", "?")),
                  "task": None if task is None else str(task.get("class_name", "?")),
                  "files": [name for name in names if name != "assets"], "assets": assets,
                  "parameters": metadata.get("parameter_count")}
    if "model.weights.h5" not in names and not any(name.startswith("model_") for name in names):
        info.traps.append("no model.weights.h5: from_preset gives a model with fresh random weights (or fails)")
    if task is not None and "task.weights.h5" not in names:
        info.traps.append("task.json without task.weights.h5: the task's head loads with fresh random weights")
    for weights in (name for name in names if name.endswith(".weights.h5")):
        if not _readable_hdf5(os.path.join(folder, weights)):
            info.traps.append(f"{weights} is not a readable HDF5 file: truncated or damaged; copy the preset again")
    backbone = (task.get("config") or {}).get("backbone") if isinstance(task, dict) else None
    if isinstance(backbone, dict) and backbone.get("config") != config.get("config"):
        info.traps.append("task.json carries its own backbone configuration, which differs from config.json's: "
                          "a task load builds the backbone from task.json")
    large = too_large(folder, config, task)
    if large:
        info.blocked = f"{large}: building it may exhaust memory"
        info.traps.append(info.blocked)
    registered = [str(item.get("registered_name") or "") for item in (config, main)]
    foreign = sorted({name for name in registered if name and not name.startswith("keras_hub>")})
    if foreign:
        info.runs_code.append(MODULES)
        info.traps.append(f"names classes KerasHub does not define ({', '.join(foreign)}): "
                          "import the package that registers them, if you trust it")
    for label, package in (("Keras", "keras"), ("KerasHub", "keras-hub")):
        installed = _installed(package)
        if installed and _version(written[label]) > _version(installed):
            info.traps.append(f"written by {label} {written[label]}, newer than the installed {installed}: "
                              "upgrade it, or compare outputs after loading")
    info.traps.append("an adapter (save_lora_weights) goes onto the base preset it was trained on: a preset "
                      "saved with LoRA enabled holds merged kernels, and loading the adapter on top applies "
                      "it twice, without an error")
    name = str(main.get("class_name", "?"))
    info.how_to_load = loading_code(folder, f"""
        import keras_hub
        # the class the folder names; a base class (keras_hub.models.Task / Backbone) works too
        loaded = keras_hub.models.{name}.from_preset(path)
        report = f"{{type(loaded).__name__}} with {{loaded.count_params()}} parameters"
        """)
    return info
