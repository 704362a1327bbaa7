"""Orbax checkpoint folders (chapter 16): Keras 3.15's ``OrbaxCheckpoint`` or a plain Orbax program.

An Orbax checkpoint folder holds one folder per save, named by its step number (``0/``,
``1/``...). A complete step holds ``_CHECKPOINT_METADATA`` (JSON: which handler wrote each item,
timestamps) and one folder per item: Keras writes ``pytree`` (every value: trainable,
non-trainable, optimizer and metrics variables, in TensorStore's OCDBT format, described by
``pytree/_METADATA``) and, unless ``save_weights_only``, ``model_config`` (the model's
configuration as a string). An unfinished save is a folder named ``N.orbax-checkpoint-tmp...``.
Everything here is read from the JSON files; nothing imports TensorFlow, JAX or Orbax.

Example:
    >>> import json, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(folder, "3", "pytree"))
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
from collections import Counter
from typing import Any

from helpers.identify.answer import Identification, loading_code, not_model

__all__ = ["looks_like_orbax", "orbax_steps", "read_orbax_folder"]

STEP_METADATA = "_CHECKPOINT_METADATA"
TMP = ".orbax-checkpoint-tmp"


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


def _json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


def _groups(step: str) -> tuple[Counter, Counter]:
    """How many values each group holds (trainable_variables...), and their value types."""
    metadata = _json(os.path.join(step, "pytree", "_METADATA")) or {}
    groups: Counter = Counter()
    types: Counter = Counter()
    for key, entry in (metadata.get("tree_metadata") or {}).items():
        first = key.strip("()").split(",")[0].strip().strip("'\"")
        groups[first] += 1
        types[((entry or {}).get("value_metadata") or {}).get("value_type", "?")] += 1
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
    metadata = _json(os.path.join(latest, STEP_METADATA))
    if not isinstance(metadata, dict):
        return not_model(folder, f"an Orbax folder whose step {os.path.basename(latest)} is damaged: its "
                                 f"{STEP_METADATA} is not valid JSON; load an earlier step or save again")
    if not os.path.isdir(os.path.join(latest, "pytree")) or not os.listdir(os.path.join(latest, "pytree")):
        return not_model(folder, f"an Orbax folder whose step {os.path.basename(latest)} is damaged: it has "
                                 "no pytree/ folder (the values); load an earlier step or save again")
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
    info.traps.append("identify reads the folder's layout and metadata, not the values themselves: "
                      "damaged data files show only when loading")
    target = root
    if keras_written:
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
