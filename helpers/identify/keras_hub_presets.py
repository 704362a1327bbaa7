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

import contextlib
import json
import math
import os
from typing import Any

from helpers.identify.answer import Identification, loading_code, not_model
from helpers.trust import MODULES

__all__ = ["allocated_bytes", "declared_integers", "declared_scale", "is_count", "looks_like_preset", "malformed_size",
           "read_preset_folder", "too_large", "too_many_values", "weight_bytes"]


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
        metadata = _json(folder, "metadata.json")
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
    """A JSON file of the folder; ValueError for one over ``JSON_LIMIT`` bytes, too deep, or not JSON."""
    path = os.path.join(folder, name)
    if os.path.getsize(path) > JSON_LIMIT:
        raise ValueError(f"{name} is more than {JSON_LIMIT} bytes")
    with open(path, encoding="utf-8") as file:
        try:
            return json.load(file)
        except RecursionError:
            raise ValueError(f"{name} is nested too deeply") from None


def _readable_hdf5(path: str) -> bool:
    import h5py

    try:
        h5py.File(path, "r").close()
    except OSError:
        return False
    return True


# What a configuration may declare, against what its weight files hold (bytes allocated on disk: every
# stored value takes at least half a byte, int4 included, and a sparse file holds no more than it
# allocates). Measured on KerasHub 0.32's BertBackbone: each block (layer) built costs about 1 MB and
# 44 ms of Python objects, however small its arrays, so counts of repeated parts get their own bound.
ELEMENTS_FLOOR = 1 << 25  # estimated elements any preset may build (about 128 MB of float32)
ELEMENTS_PER_BYTE = 16  # beyond the floor: estimated elements per byte (real presets: 0.25 f32 to 2 int4)
COUNTS_FLOOR = 64  # repeated parts (layers, blocks, experts) any preset may build
BYTES_PER_COUNT = 1 << 18  # beyond the floor: one repeated part per 256 KiB of weight files
LARGEST_SIZE = 1 << 40  # no single size is larger: a larger number is refused before any arithmetic
JSON_LIMIT = 16 << 20  # a config.json or task.json larger than this is refused unread
VALUES_LIMIT = 100_000  # values (numbers, strings, lists, objects) a configuration may hold: real ones, thousands
NOT_SIZES = ("wavelength", "theta", "freq", "seed")  # integers that size nothing (RoPE constants, seeds)
COUNT_WORDS = ("layer", "block", "depth", "repeat", "stage", "expert")
ROLES = {  # the sizes whose place in the model's arrays is known, by key
    "vocab": lambda key: "vocab" in key,
    "hidden": lambda key: key in ("hidden_dim", "hidden_size", "d_model", "embed_dim", "embedding_dim", "n_embd",
                                  "model_dim", "width", "dim"),
    "moe": lambda key: "intermediate" in key and ("moe" in key or "expert" in key),
    "intermediate": lambda key: "intermediate" in key or key in ("ffn_dim", "mlp_dim", "d_ff", "n_inner",
                                                                  "filter_size", "feedforward_dim"),
    "kv_heads": lambda key: "key_value_heads" in key or key in ("num_kv_heads", "n_kv_heads"),
    "heads": lambda key: key in ("num_heads", "num_query_heads", "num_attention_heads", "n_head", "n_heads"),
    "head_dim": lambda key: key in ("head_dim", "key_dim", "value_dim", "head_size", "attention_head_dim"),
}


def declared_integers(config: Any, where: str = "") -> list[tuple[str, int]]:
    """Every integer a configuration declares (bools aside), with its place (``config.hidden_dim``).

    Whole floats count (``4096.0``); other floats do not. Walked without recursion (a deeply
    nested file raises nothing).

    Example:
        >>> declared_integers({"config": {"vocab": 9, "dims": [4, 2.0], "bias": True, "dropout": 0.1}})
        [('config.vocab', 9), ('config.dims[0]', 4), ('config.dims[1]', 2)]
    """
    found: list[tuple[str, int]] = []
    stack: list[tuple[str, Any]] = [(where, config)]
    while stack:
        place, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(reversed([(f"{place}.{key}" if place else str(key), item) for key, item in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{place}[{index}]", item) for index, item in enumerate(value)]))
        elif isinstance(value, int) and not isinstance(value, bool):
            found.append((place, abs(value)))
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer():  # 4096.0 sizes as 4096
            found.append((place, int(abs(value))))
    return found


def _last_key(place: str) -> str:
    return place.split("[")[0].rsplit(".", 1)[-1].lower()


def _is_size(place: str) -> bool:
    key = _last_key(place)
    return not key.endswith("_id") and not any(word in key for word in NOT_SIZES)


def is_count(key: str) -> bool:
    """Whether a key counts repeated parts: ``num_``/``n_`` first or ``_layers``/``_blocks``/``_experts``/
    ``depth`` last, naming layers, blocks, experts... (``COUNT_WORDS``); never a ``..._dim`` or ``..._size``.

    Example:
        >>> [is_count(key) for key in ("num_layers", "stackwise_num_blocks", "num_experts", "depth",
        ...                            "shared_expert_intermediate_dim", "num_classes", "mlp_only_layers")]
        [True, True, True, True, False, False, True]
    """
    key = key.lower()
    if key.endswith(("_dim", "_size")):
        return False
    shaped = key.startswith(("num_", "n_")) or key.endswith(("_layers", "_blocks", "_experts", "depth"))
    return shaped and any(word in key for word in COUNT_WORDS)


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, int) else str(value) if value < 10 ** 30 else \
        f"a {len(str(value)) if value < 10 ** 4000 else 'huge'}-digit number"
    return text if len(text) <= 40 else text[:37] + "..."


def too_many_values(config: Any, limit: int = VALUES_LIMIT) -> bool:
    """Whether ``config`` holds more than ``limit`` values (stops counting there: cheap on any file).

    Example:
        >>> too_many_values({"x": [7] * 10}, limit=10), too_many_values({"x": [7] * 8}, limit=10)
        (True, False)
    """
    seen, stack = 0, [config]
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def malformed_size(config: Any) -> str | None:
    """Why a size in ``config`` is not a size (a string, a fraction, infinity, NaN, beyond ``LARGEST_SIZE``).

    Example:
        >>> malformed_size({"config": {"vocabulary_size": float("inf"), "dropout": 0.1}})
        'its configuration declares vocabulary_size inf, not a whole number below 1e+12'
        >>> malformed_size({"config": {"vocabulary_size": 9, "hidden_dim": "4"}})
        "its configuration declares hidden_dim '4', not a whole number below 1e+12"
    """
    stack: list[tuple[str, Any]] = [("", config)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((str(name).lower(), item) for name, item in value.items())
            continue
        if isinstance(value, list):
            stack.extend((key, item) for item in value)
            continue
        size_like = (key.endswith(("_dim", "_size", "_length")) or is_count(key)
                     or any(role(key) for role in ROLES.values()))
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        whole = number and (not isinstance(value, float) or (math.isfinite(value) and value.is_integer()))
        if (number and whole and abs(value) > LARGEST_SIZE and _is_size(key)) or (
                size_like and not whole and (number or isinstance(value, str))):
            return (f"its configuration declares {key} {_shown(value)}, "
                    f"not a whole number below {float(LARGEST_SIZE):.0e}")
    return None


def declared_scale(config: Any) -> tuple[int, int, str]:
    """An estimate of what building ``config`` allocates: (elements, repeated parts, the sizes that say so).

    Every integer is a size unless its name says it is a RoPE constant, a seed (``NOT_SIZES``) or
    an identifier (``..._id``: a token id, Keras's ``shared_object_id``). Sizes whose role is known
    by name (``ROLES``: vocabulary V, hidden H, intermediate I, heads, head size D, experts'
    intermediate) give the shapes of a transformer: V x H for the embedding and, per layer, 3 x H x I
    for the feed-forward kernels, 2 x (query + key/value widths) x H for attention, experts x
    3 x H x I for a mixture of experts; a missing H is the largest other size, a missing I is 4 x H,
    missing heads make attention H wide. Every other size (``max_sequence_length``, ``num_classes``,
    an unknown key) may shape an array with any other: the two largest multiply, one with the larger
    of the other and V, H, I. Counts (``is_count``) are summed; those of layers or blocks repeat the
    per-layer arrays.

    Example:
        >>> declared_scale({"vocab": 50_000, "d_model": 512, "n_layer": 4, "rope_max_wavelength": 10_000})
        (42377216, 4, 'vocab 50000 x d_model 512 (embedding)')
        >>> declared_scale({"hidden_dim": 4096, "num_query_heads": 4096, "head_dim": 4096})[0] > 1e11
        True
    """
    integers = [(place, value) for place, value in declared_integers(config) if _is_size(place)]
    role_of: dict[str, str] = {}
    for place, _ in integers:
        key = _last_key(place)
        role_of[place] = ("count" if is_count(key) else
                          next((role for role, test in ROLES.items() if test(key)), "other"))
    best: dict[str, tuple[str, int]] = {}
    for place, value in integers:
        role = role_of[place]
        if role != "count" and value >= best.get(role, ("", -1))[1]:
            best[role] = (_last_key(place), value)
    counted = [(place, value) for place, value in integers if role_of[place] == "count"]
    counts = sum(value for _, value in counted)
    layers = sum(value for place, value in counted if "expert" not in _last_key(place)) or 1
    experts = max((value for place, value in counted if "expert" in _last_key(place)), default=0)
    others = sorted(((_last_key(place), value) for place, value in integers if role_of[place] == "other"),
                    key=lambda item: item[1])
    hidden = best.get("hidden") or (others[-1] if others else ("hidden", 1))
    intermediate = best.get("intermediate") or ("intermediate", 4 * hidden[1])
    heads, head_dim = best.get("heads"), best.get("head_dim")
    query = heads[1] * head_dim[1] if heads and head_dim else head_dim[1] if head_dim else hidden[1]
    key_value = best["kv_heads"][1] * head_dim[1] if "kv_heads" in best and head_dim else query
    moe = best.get("moe") or intermediate
    layers_shown = ("layers", layers) if layers == 1 else \
        max(((_last_key(place), value) for place, value in counted if "expert" not in _last_key(place)),
            key=lambda item: item[1])
    terms = [
        ([best.get("vocab", ("vocab", 0)), hidden], "embedding"),
        ([layers_shown, hidden, intermediate, ("", 3)], "feed-forward"),
        ([layers_shown, ("query and key/value width", 2 * (query + key_value)), hidden], "attention"),
        ([layers_shown, ("experts", experts), hidden, moe, ("", 3)], "experts"),
    ]
    if heads and head_dim:
        terms[2] = ([layers_shown, heads, head_dim, hidden, ("", 4)], "attention")
        terms.append(([layers_shown, best["kv_heads"], head_dim, hidden], "attention")
                     if "kv_heads" in best else ([("", 0)], ""))
    if others:
        partner = max(others[-2:-1] + [best.get("vocab", ("", 1)), hidden, intermediate], key=lambda item: item[1])
        terms.append(([others[-1], partner], "any two sizes"))
    elements, largest, shown = 0, -1, "nothing"
    for factors, label in terms:
        product = 1
        for _, value in factors:
            product *= value
        elements += product
        if product > largest:
            largest = product
            shown = " x ".join(f"{name} {value}" if name else str(value) for name, value in factors)
            shown += f" ({label})" if label else ""
    return elements, counts, shown


def allocated_bytes(path: str) -> int:
    """The bytes a file occupies on disk (a sparse file: only what it allocates), at most its length."""
    info = os.stat(path)
    blocks = getattr(info, "st_blocks", None)
    return min(info.st_size, blocks * 512) if blocks is not None else info.st_size


def weight_bytes(folder: str) -> int:
    """The bytes a preset's weight files (``*.weights.h5``, shards included) occupy on disk.

    Allocated bytes, not lengths: a sparse file of 100 GB that stores nothing counts as nothing.

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with open(os.path.join(folder, "model.weights.h5"), "wb") as file:
        ...     _ = file.truncate(100 << 30)
        >>> weight_bytes(folder) < 1 << 20
        True
    """
    total = 0
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.endswith(".weights.h5"):
            with contextlib.suppress(OSError):
                if os.path.isfile(path):
                    total += allocated_bytes(path)
    return total


def too_large(folder: str, *configs: Any, stored: int | None = None) -> str | None:
    """Why building a preset's configurations could exhaust memory, against its weight files; None if it cannot.

    A configuration may declare at most ``ELEMENTS_FLOOR`` elements, or ``ELEMENTS_PER_BYTE`` per
    byte of weight files (``stored``, or ``weight_bytes(folder)``), and at most ``COUNTS_FLOOR``
    repeated parts, or one per ``BYTES_PER_COUNT`` bytes (see ``declared_scale``); a size that is
    not a whole number below ``LARGEST_SIZE`` is refused first (``malformed_size``), and so is a
    configuration of more than ``VALUES_LIMIT`` values. Reads file sizes only.

    Example:
        >>> import tempfile
        >>> too_large(tempfile.mkdtemp(), {"config": {"vocab": 9, "hidden": 4, "num_layers": 1}}) is None
        True
        >>> why = too_large(tempfile.mkdtemp(), {"config": {"vocab": 2_000_000_000, "hidden_dim": 4}})
        >>> why.split(": ")
        ['its configuration declares vocab 2000000000 x hidden_dim 4 (embedding)',
         '8.0e+09 elements from 0 bytes of weight files (at most 3.4e+07)']
    """
    stored = weight_bytes(folder) if stored is None else stored
    element_limit = max(ELEMENTS_FLOOR, ELEMENTS_PER_BYTE * stored)
    count_limit = max(COUNTS_FLOOR, stored // BYTES_PER_COUNT)
    for config in configs:
        if too_many_values(config):
            return f"its configuration holds more than {VALUES_LIMIT} values: not a model's configuration"
        malformed = malformed_size(config)
        if malformed:
            return malformed
        elements, counts, shown = declared_scale(config)
        if elements > element_limit:
            return (f"its configuration declares {shown}: {float(elements):.1e} elements from {stored} bytes "
                    f"of weight files (at most {float(element_limit):.1e})")
        if counts > count_limit:
            return (f"its configuration declares {counts} repeated parts (layers, blocks...) from {stored} bytes "
                    f"of weight files (at most {count_limit})")
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
