"""Orbax checkpoint folders (chapter 16): Keras 3.15's ``OrbaxCheckpoint`` or a plain Orbax program.

An Orbax checkpoint folder holds one folder per save, named by its step number (``0/``,
``1/``...). A complete step holds ``_CHECKPOINT_METADATA`` (JSON: which handler wrote each item,
timestamps) and one folder per item: Keras writes ``pytree`` (every value: trainable,
non-trainable, optimizer and metrics variables, in TensorStore's OCDBT format, described by
``pytree/_METADATA``) and, unless ``save_weights_only``, ``model_config`` (the model's
configuration as a string). An unfinished save is a folder named ``N.orbax-checkpoint-tmp...``.
Everything here is read from the JSON files and the headers of the OCDBT files; nothing imports
TensorFlow, JAX or Orbax, and nothing the folder carries runs.

The files under a ``d/`` folder are of two kinds (measured on orbax-checkpoint 0.12.8's files, written
under TensorFlow and under JAX). An OCDBT file (each ``manifest.ocdbt``, and each data file holding
small values) begins with a 4-byte magic number (``0c db 3a 2a`` for a manifest, ``0c db 20 de`` for a
data file) and its own length in bytes (8 bytes, little-endian), and ends with a CRC-32C of the bytes
before it (4 bytes, little-endian). A value of about 4 KB or more (a 32 x 32 float32 kernel) is
written on its own as a zstd frame: it begins with zstd's magic number ``28 b5 2f fd`` and carries no
length or checksum readable without decoding it. ``step_damage`` checks each OCDBT file's header
against its size (12 bytes read, however large the file) and the checksum of the small ones, that
each zstd value file is more than its magic number (it is not decoded), and that every JSON
metadata file parses: a truncated, emptied or cut OCDBT or metadata file, or an emptied value file,
names the step damaged. A changed or cut byte inside a zstd value file shows only when loading.

Example:
    >>> import json, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(folder, "3", "pytree", "d"))
    >>> def ocdbt(magic):  # an empty OCDBT file: magic, its length, the CRC-32C of the bytes before it
    ...     body = bytes.fromhex(magic) + (16).to_bytes(8, "little")
    ...     return body + crc32c(body).to_bytes(4, "little")
    >>> for name, magic in (("manifest.ocdbt", "0cdb3a2a"), ("d/0a", "0cdb20de")):
    ...     with open(os.path.join(folder, "3", "pytree", name), "wb") as file:
    ...         _ = file.write(ocdbt(magic))
    >>> with open(os.path.join(folder, "3", "_CHECKPOINT_METADATA"), "w") as file:
    ...     json.dump({"item_handlers": {"pytree": "PyTreeHandler"}}, file)
    >>> with open(os.path.join(folder, "3", "pytree", "_METADATA"), "w") as file:
    ...     json.dump({"tree_metadata": {"('trainable_variables', 'd', 'kernel')":
    ...                {"value_metadata": {"value_type": "jax.Array"}}}}, file)
    >>> looks_like_orbax(folder)
    True
    >>> info = read_orbax_folder(folder)
    >>> info.kind, info.holds["steps"], info.written_by["backend"]
    ('orbax-checkpoint', [3], 'JAX (values saved as jax.Array)')
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from typing import Any

from helpers.identify.answer import Identification, loading_code, not_model

__all__ = ["looks_like_orbax", "orbax_steps", "read_json", "read_orbax_folder", "step_damage"]

STEP_METADATA = "_CHECKPOINT_METADATA"
TMP = ".orbax-checkpoint-tmp"
OCDBT_MAGIC = {b"\x0c\xdb\x3a\x2a": "manifest", b"\x0c\xdb\x20\xde": "data file"}
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # a value of about 4 KB or more, written on its own as a zstd frame
ZSTD_SMALLEST = 9  # magic (4), frame header (at least 2), one block header (3)
JSON_NAMES = ("_METADATA", "_CHECKPOINT_METADATA", "_sharding", ".zarray", "zarr.json")
CHECKSUM_LIMIT = 1 << 16  # files up to this many bytes have their CRC-32C checked (cheap); larger: header only
JSON_LIMIT = 1 << 26  # metadata files are parsed up to this size; a larger one is not Orbax's metadata


def orbax_steps(folder: str) -> tuple[list[int], list[str]]:
    """The complete steps of an Orbax folder (sorted numbers) and its unfinished saves (names)."""
    complete, unfinished = [], []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if TMP in name:
            unfinished.append(name)
        elif name.isdigit() and os.path.isfile(os.path.join(path, STEP_METADATA)):
            complete.append(int(name))
    return sorted(complete), sorted(unfinished)


def looks_like_orbax(folder: str) -> bool:
    """Whether ``folder`` is an Orbax checkpoint folder (a step folder, or one whose steps it holds)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    if STEP_METADATA in names:
        return True
    return any(TMP in name or (name.isdigit() and os.path.isfile(os.path.join(folder, name, STEP_METADATA)))
               for name in names)


# Measured with Keras 3.15.1 (TensorFlow and JAX backends): a model that is not functional
# (Sequential, subclassed) saved by OrbaxCheckpoint and loaded with load_model in a new process
# gets none of its trained values, and no error (they are stored under the saved model's
# variable paths, which the rebuilt model's variables do not have); a functional model loads.
# Built in code and given the weights with load_weights, it loads, if it has the saved name
# (a second model built in one process is named sequential_1, and silently gets nothing).
NOT_FUNCTIONAL_TRAP = ("a {kind} model: keras.saving.load_model(folder) in a new process restores none of its "
                       "trained weights, without an error (Keras 3.15.1); build and compile the model in code "
                       "with the name it was saved under ({name!r}), call model.load_weights(folder), then "
                       "compare outputs")


def saved_model_class(step: str) -> tuple[str | None, str | None]:
    """The class name and the name of the model a Keras-written step's ``model_config`` holds.

    (None, None) where the configuration cannot be read.

    Example:
        >>> import tempfile
        >>> step = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(step, "model_config"))
        >>> with open(os.path.join(step, "model_config", "_strings.json"), "w") as file:
        ...     json.dump({"config": json.dumps({"class_name": "Sequential", "config": {"name": "net"}})}, file)
        >>> saved_model_class(step)
        ('Sequential', 'net')
    """
    strings, problem = read_json(os.path.join(step, "model_config", "_strings.json"))
    if problem or not isinstance(strings, dict) or not isinstance(strings.get("config"), str):
        return None, None
    try:
        config = json.loads(strings["config"])
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(config, dict):
        return None, None
    inner = config.get("config")
    name = inner.get("name") if isinstance(inner, dict) else None
    class_name = config.get("class_name")
    return (class_name if isinstance(class_name, str) else None), (name if isinstance(name, str) else None)


def read_json(path: str) -> tuple[Any, str | None]:
    """A metadata file's JSON value and None, or None and what is wrong with it (no machine path).

    The size is checked before anything is read: a file over ``JSON_LIMIT`` bytes is refused unread.

    Example:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "_METADATA")
        >>> with open(path, "w") as file:
        ...     _ = file.write("[" * 100000 + "]" * 100000)
        >>> read_json(path)
        (None, 'is nested too deeply to be Orbax metadata (200000 bytes): damaged or replaced')
    """
    try:
        size = os.stat(path).st_size
        if size == 0:
            return None, "is empty (0 bytes)"
        if size > JSON_LIMIT:
            return None, f"is {size} bytes, more than any Orbax metadata file (limit {JSON_LIMIT}): damaged or replaced"
        with open(path, "rb") as file:
            text = file.read(JSON_LIMIT + 1)
    except OSError as error:
        return None, f"cannot be read ({error.strerror or type(error).__name__})"
    try:
        return json.loads(text.decode("utf-8")), None
    except RecursionError:
        return None, f"is nested too deeply to be Orbax metadata ({size} bytes): damaged or replaced"
    except ValueError:  # UnicodeDecodeError and JSONDecodeError included
        return None, f"is not valid JSON ({size} bytes): cut or damaged"


def _json(path: str) -> Any:
    return read_json(path)[0]


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum that ends every OCDBT file.

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _ocdbt_damage(path: str) -> str | None:
    """What is wrong with one OCDBT file or zstd value file, from its header and size; None if nothing."""
    try:
        size = os.stat(path).st_size
        if size == 0:
            return "is empty (0 bytes)"
        with open(path, "rb") as file:
            head = file.read(12)
            rest = file.read(CHECKSUM_LIMIT) if size <= CHECKSUM_LIMIT else b""
    except OSError as error:
        return f"cannot be read ({error.strerror or type(error).__name__})"
    if head[:4] == ZSTD_MAGIC and os.path.basename(os.path.dirname(path)) == "d":
        return None if size >= ZSTD_SMALLEST else f"is cut: a zstd value file of {size} bytes"
    if len(head) < 12 or head[:4] not in OCDBT_MAGIC:
        return f"is not an OCDBT or zstd file ({size} bytes, no OCDBT or zstd header): damaged or replaced"
    declared = struct.unpack("<Q", head[4:])[0]
    if declared != size:
        return (f"is cut: its header declares {declared} bytes, the file holds {size}"
                if declared > size else f"holds {size} bytes, its header declares {declared}")
    if size <= CHECKSUM_LIMIT:
        data = head + rest
        if len(data) < 16 or crc32c(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
            return "fails its CRC-32C checksum (a changed byte)"
    return None


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _is_json(relative: str) -> bool:
    name = os.path.basename(relative)
    return name in JSON_NAMES or name.endswith(".json") or "array_metadatas" in relative.split("/")


def step_damage(step: str) -> str | None:
    """The first damaged file of one Orbax step folder, as ``'pytree/d/... is empty (0 bytes)'``; None if none.

    Checks, without reading the values: each JSON metadata file parses (an empty or cut one does
    not); each OCDBT file's header matches its size and, for small files, its checksum; each zstd
    value file is more than its magic number; a folder holding a ``manifest.ocdbt`` holds data
    files too, and a ``d/`` folder has a ``manifest.ocdbt`` beside it; no metadata name, manifest or
    data file is a folder; the files every step holds are there (``pytree/_METADATA`` listing the
    values, ``pytree/manifest.ocdbt``, and beside ``model_config/`` its ``_METADATA`` and
    ``_strings.json``). Names are relative to the step folder.

    Example:
        >>> import tempfile
        >>> step = tempfile.mkdtemp()
        >>> os.makedirs(os.path.join(step, "pytree", "d"))
        >>> with open(os.path.join(step, "pytree", "d", "0a1b"), "wb") as file:
        ...     _ = file.write(b"")
        >>> with open(os.path.join(step, "pytree", "_METADATA"), "w") as file:
        ...     _ = file.write('{"tree_metadata": {}}')
        >>> step_damage(step)
        'pytree/d/ has no manifest.ocdbt beside it (the index of its data files)'
        >>> with open(os.path.join(step, "pytree", "manifest.ocdbt"), "wb") as file:
        ...     _ = file.write(bytes.fromhex("0cdb3a2a") + (16).to_bytes(8, "little"))  # 4 bytes short
        >>> step_damage(step)
        'pytree/manifest.ocdbt is cut: its header declares 16 bytes, the file holds 12'
    """
    for root, folders, files in os.walk(step):
        folders.sort()
        relative_root = os.path.relpath(root, step).replace(os.sep, "/")
        prefix = "" if relative_root == "." else relative_root + "/"
        if "manifest.ocdbt" in files and not any(
                _listdir(os.path.join(root, name)) for name in folders if name == "d"):
            return f"{prefix}manifest.ocdbt has no data files beside it ({prefix}d/ is missing or empty)"
        for name in sorted(folders):
            if name in JSON_NAMES or name.endswith(".json") or name == "manifest.ocdbt" or \
                    os.path.basename(root) == "d":
                return f"{prefix}{name} is a folder, not a file"
        if "d" in folders and "manifest.ocdbt" not in files:
            return f"{prefix}d/ has no manifest.ocdbt beside it (the index of its data files)"
        for name in sorted(files):
            path, relative = os.path.join(root, name), prefix + name
            if name == "manifest.ocdbt" or os.path.basename(root) == "d":
                problem = _ocdbt_damage(path)
            elif _is_json(relative):
                problem = read_json(path)[1]
            else:
                continue
            if problem:
                return f"{relative} {problem}"
    return _missing(step)


def _missing(step: str) -> str | None:
    """A file every step Keras or Orbax writes holds, missing or hollow: pytree/_METADATA listing the values,
    pytree/manifest.ocdbt and, beside a model_config/ folder, its _METADATA and _strings.json (JSON objects)."""
    needed = ["pytree/_METADATA", "pytree/manifest.ocdbt"]
    if os.path.isdir(os.path.join(step, "model_config")):
        needed += ["model_config/_METADATA", "model_config/_strings.json"]
    for relative in needed:
        if not os.path.isfile(os.path.join(step, *relative.split("/"))):
            return f"{relative} is missing"
        if relative.endswith("manifest.ocdbt"):
            continue
        value, problem = read_json(os.path.join(step, *relative.split("/")))
        if problem or not isinstance(value, dict):
            return f"{relative} {problem or 'is not a JSON object'}"
        tree = value.get("tree_metadata")
        if relative == "pytree/_METADATA" and not (isinstance(tree, dict) and tree):
            return f"{relative} lists no values (no tree_metadata)"
    return None


def _groups(step: str) -> tuple[Counter, Counter]:
    """How many values each group holds (trainable_variables...), and their value types."""
    metadata = _json(os.path.join(step, "pytree", "_METADATA"))
    tree = metadata.get("tree_metadata") if isinstance(metadata, dict) else None
    groups: Counter = Counter()
    types: Counter = Counter()
    for key, entry in (tree.items() if isinstance(tree, dict) else ()):
        first = key.strip("()").split(",")[0].strip().strip("'\"")
        groups[first] += 1
        value = entry.get("value_metadata") if isinstance(entry, dict) else None
        if isinstance(value, dict) and "value_type" in value:  # what wrote the values: unknown without it
            types[str(value["value_type"])] += 1
    return groups, types


def read_orbax_folder(folder: str) -> Identification:
    """Name an Orbax checkpoint folder: its steps, what wrote them, what they hold, how to load it."""
    folder = folder.rstrip("/") or folder
    root, step_name = folder, None
    if os.path.isfile(os.path.join(folder, STEP_METADATA)):  # a step folder itself
        root = os.path.dirname(folder) or os.curdir  # the folder above, written as the user wrote the path
        step_name = os.path.basename(folder)
        if step_name in ("", os.curdir, os.pardir):
            root, step_name = os.path.dirname(os.path.abspath(folder)), os.path.basename(os.path.abspath(folder))
    steps, unfinished = orbax_steps(root)
    if step_name is None and not steps:
        reason = "an Orbax folder with no complete step"
        if unfinished:
            reason += (f" (unfinished: {', '.join(unfinished[:3])}): the save failed or was cut off; a "
                       "relative path given to OrbaxCheckpoint ends this way")
        return not_model(folder, reason)
    latest = os.path.join(root, step_name if step_name is not None else str(steps[-1]))
    metadata, problem = read_json(os.path.join(latest, STEP_METADATA))
    if problem or not isinstance(metadata, dict):
        return not_model(folder, f"an Orbax folder whose step {os.path.basename(latest)} is damaged: its "
                                 f"{STEP_METADATA} {problem or 'is not a JSON object'}; "
                                 "load an earlier step or save again")
    if not os.path.isdir(os.path.join(latest, "pytree")) or not os.listdir(os.path.join(latest, "pytree")):
        return not_model(folder, f"an Orbax folder whose step {os.path.basename(latest)} is damaged: it has "
                                 "no pytree/ folder (the values); load an earlier step or save again")
    damage = step_damage(latest)
    if damage:
        return not_model(folder, f"an Orbax folder whose step {os.path.basename(latest)} is damaged: {damage}; "
                                 "load an earlier step or save again")
    groups, types = _groups(latest)
    # what is on disk, not what the metadata's item_handlers promise
    keras_written = os.path.exists(os.path.join(latest, "model_config"))
    backend = ("JAX (values saved as jax.Array)" if types.get("jax.Array") else
               "not JAX (values saved as NumPy arrays: TensorFlow or PyTorch)" if types else "unknown")
    info = Identification(folder, "orbax-checkpoint",
                          written_by={"writer": "Keras OrbaxCheckpoint (model and values)" if keras_written
                                      else "Orbax (values only: Keras save_weights_only, or a JAX program)",
                                      "backend": backend})
    info.holds = {"steps": steps, "latest": os.path.basename(latest),
                  "values": dict(groups), "model configuration": keras_written}
    if unfinished:
        info.traps.append(f"unfinished saves: {', '.join(unfinished[:3])} (not loadable; ignored by Keras)")
    if len(steps) > 1:
        info.traps.append("Keras loads the highest step number, which is the latest save only if every run "
                          "wrote to its own folder (a second run numbers from 0 again)")
    if step_name is not None:
        info.traps.append("this is one step of an Orbax folder: Keras loads the folder above it")
    info.traps.append("Orbax needs absolute paths when writing: prove a restore by outputs")
    info.traps.append("identify checks each OCDBT file's length, small files' checksums and the metadata, "
                      "not the values of 4 KB or more (zstd frames, not decoded): a changed or cut byte "
                      "there shows only when loading")
    target = root
    class_name, model_name = saved_model_class(latest) if keras_written else (None, None)
    if keras_written and class_name != "Functional":
        kind = class_name or "non-functional"
        info.traps.append(NOT_FUNCTIONAL_TRAP.format(kind=kind, name=model_name))
        info.partial = f"a {kind} model: build it in code, then load_weights (load_model misses its weights)"
        info.blocked = f"a {kind} model: build it in code first (see the trap)"
        info.how_to_load = loading_code(target, f"""
            import keras
            model = ...  # build and compile the same model in code, with name={model_name!r}
            model.load_weights(path)  # the highest complete step
            loaded, report = model, "weights loaded into the model you built"
            """)
    elif keras_written:
        info.how_to_load = loading_code(target, """
            import keras
            loaded = keras.saving.load_model(path)  # the highest complete step
            report = f"{type(loaded).__name__} with {len(loaded.weights)} weights"
            """)
    else:
        info.partial = "the folder holds values without the model: build the same model, then load_weights"
        info.blocked = "no model configuration in the folder: build the same model first"
        info.how_to_load = loading_code(target, """
            import keras
            model = ...  # build and compile the model that wrote these values
            model.load_weights(path)
            loaded, report = model, "weights loaded into the model you built"
            """)
    return info
