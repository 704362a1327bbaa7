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

__all__ = ["looks_like_preset", "read_preset_folder"]


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


def _declared(config: Any) -> int:
    """The product of the two largest sizes (``*_size``, ``*_dim``, ``*_length``) a configuration declares."""
    sizes: list[int] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, int) and not isinstance(value, bool) and str(key).endswith(
                        ("_size", "_dim", "_length")):
                    sizes.append(abs(value))
                else:
                    walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(config)
    product = 1
    for size in sorted(sizes)[-2:]:
        product *= size
    return product if sizes else 0


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
    declared = max(_declared(config), _declared(task))
    count = metadata.get("parameter_count")
    if declared > max(10**8, 16 * (count if isinstance(count, int) and count > 0 else 0)):
        info.blocked = (f"its configuration declares sizes whose product is {declared:.1e} elements, far beyond "
                        f"its parameter_count ({count}): building it may exhaust memory")
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
