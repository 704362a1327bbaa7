"""The child side of ``helpers.backends.check_across_backends``: one ``.keras`` in one backend.

``reload_in_backend`` runs in a fresh interpreter whose ``KERAS_BACKEND`` was set before
``keras`` was first imported (the backend is fixed at that import, so a forked server cannot
switch it). It imports the caller's modules, loads the file, compares every variable Keras
restored (the optimizer's too) with the values stored in the file's own ``model.weights.h5``,
runs the model on the inputs, and returns a plain dict that pickles: never a Keras object.

When loading or calling fails, it names the layer whose code failed (from the traceback: the
innermost ``call`` of a layer that is not Keras's own) and why: a class that is not defined
in this process, or a ``call`` that runs TensorFlow or JAX functions directly, which only one
backend can run. This module imports nothing of ``helpers`` at import time, so that importing
it does not choose a backend.
"""

from __future__ import annotations

import importlib
import io
import json
import linecache
import os
import re
import sys
import zipfile
from typing import Any

# Packages whose functions, called from a layer's `call`, tie the layer to one backend.
BACKEND_PACKAGES = {"tensorflow": "TensorFlow", "jax": "JAX", "jaxlib": "JAX", "torch": "PyTorch"}


def _package_of(filename: str) -> str | None:
    parts = filename.replace("\\", "/").split("/")
    for package in BACKEND_PACKAGES:
        if "site-packages" in parts and package in parts[parts.index("site-packages") + 1:][:1]:
            return package
    return None


def _module_named(frame: Any, line: str) -> str | None:
    """The backend package of a module the failing line names (``tf`` in ``tf.math.tanh(x)``)."""
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in scope.items():
            root = getattr(value, "__name__", "").split(".")[0] if isinstance(value, type(sys)) else ""
            if root in BACKEND_PACKAGES and re.search(rf"\b{re.escape(name)}\.", line):
                return root
    return None


def _package_after(error: BaseException, frame: Any) -> str | None:
    """The first backend package whose code ran below ``frame`` in any traceback of the chain."""
    for exc in _chain(error):
        tb, below = exc.__traceback__, False
        while tb is not None:
            if below:
                package = _package_of(tb.tb_frame.f_code.co_filename)
                if package:
                    return package
            below = below or tb.tb_frame is frame
            tb = tb.tb_next
    return None


def _chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    while error is not None and error not in found:
        found.append(error)
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return found


def _culprit(error: BaseException) -> dict[str, str] | None:
    """The innermost non-Keras layer's ``call`` in the traceback, and what it called into."""
    import keras

    for exc in _chain(error):
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb)
            tb = tb.tb_next
        for i in range(len(frames) - 1, -1, -1):
            frame = frames[i].tb_frame
            owner = frame.f_locals.get("self")
            if frame.f_code.co_name != "call" or not isinstance(owner, keras.layers.Layer):
                continue
            if type(owner).__module__.startswith("keras."):
                continue
            line = linecache.getline(frame.f_code.co_filename, frames[i].tb_lineno).strip()
            package = _module_named(frame, line) or _package_after(error, frame)
            return {"layer": owner.name, "class": type(owner).__name__, "package": package or "",
                    "line": line, "message": f"{type(exc).__name__}: {_first(exc)}"}
    return None


def _first(error: BaseException) -> str:
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return (text or type(error).__name__)[:300]


def _custom_classes(config: Any) -> list[tuple[str, str]]:
    """(layer name, registered name) of every object in a configuration that is not Keras's own."""
    found: list[tuple[str, str]] = []
    if isinstance(config, dict):
        module = str(config.get("module") or "")
        registered = config.get("registered_name")
        if registered and not module.startswith("keras") and not str(config.get("class_name", "")).startswith("__"):
            inner = config.get("config")
            name = inner.get("name", "") if isinstance(inner, dict) else ""
            found.append((str(name), str(registered)))
        for value in config.values():
            found += _custom_classes(value)
    elif isinstance(config, list):
        for value in config:
            found += _custom_classes(value)
    return found


def _failure(stage: str, error: BaseException, archive: zipfile.ZipFile) -> dict[str, Any]:
    import keras

    if stage == "load":
        config = json.loads(archive.read("config.json"))
        missing = [(name, registered) for name, registered in _custom_classes(config)
                   if keras.saving.get_registered_object(registered) is None]
        if missing:
            return {"stage": stage, "kind": "missing_class", "layers": missing,
                    "message": f"{type(error).__name__}: {_first(error)}"}
    culprit = _culprit(error)
    if culprit:
        return {"stage": stage, "kind": "layer_code", **culprit}
    return {"stage": stage, "kind": "other", "message": f"{type(error).__name__}: {_first(error)}"}


def _file_groups(archive: zipfile.ZipFile) -> dict[str, list[dict[str, Any]]]:
    """The file's own stored values: for each saved object's name, its ``vars`` groups' arrays."""
    import h5py
    import numpy as np

    groups: dict[str, list[dict[str, Any]]] = {}
    with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as file:
        def visit(name: str, item: Any) -> None:
            if isinstance(item, h5py.Group) and name.split("/")[-1] == "vars" and len(item):
                owner = str(item.attrs.get("name", name))
                groups.setdefault(owner, []).append({key: np.asarray(item[key]) for key in item})
        file.visititems(visit)
    return groups


def _loaded_groups(model: Any) -> list[tuple[str, dict[str, Any], bool]]:
    """What each object of the loaded model would save, by the object's name (``save_own_variables``)."""
    import keras

    objects: list[Any] = list(model._flatten_layers(include_self=True, recursive=True))
    if getattr(model, "optimizer", None) is not None and model.optimizer.built:
        objects.append(model.optimizer)
    found = []
    for obj in objects:
        store: dict[str, Any] = {}
        obj.save_own_variables(store)
        held = list(obj.variables) if obj is getattr(model, "optimizer", None) else []
        if store:
            named = {}
            for key, value in store.items():
                if key.isdigit() and int(key) < len(held):
                    value = held[int(key)] if getattr(value, "shape", None) == tuple(held[int(key)].shape) else value
                label = getattr(value, "path", None) or f"{obj.name}/{key}"
                named[key] = (label, keras.ops.convert_to_numpy(value))
            found.append((obj.name, named, bool(held)))
    return found


def compare_with_file(model: Any, archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    """Every stored value of the loaded ``model`` against the file's: path, key, shapes, difference.

    An optimizer the file saved before its first step holds only its iteration and learning
    rate; the zero slots Keras builds on loading are not compared (nothing of the file is lost).
    """
    import numpy as np

    stored = _file_groups(archive)
    rows = []
    for owner, named, optimizer in _loaded_groups(model):
        candidates = stored.get(owner) or []
        group = candidates.pop(0) if candidates else {}
        for key, (label, value) in named.items():
            want = group.get(key)
            if want is None and optimizer and len(group) < len(named) and not np.any(value):
                continue  # an optimizer saved before any step (iteration, learning rate): fresh zero slots
            row = {"path": label, "key": f"{owner}/vars/{key}", "shape": list(np.shape(value)), "optimizer": optimizer}
            if want is None or np.shape(want) != np.shape(value):
                row["difference"] = None
            else:
                a, b = np.asarray(value), np.asarray(want)
                row["difference"] = 0.0 if a.size == 0 else float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            rows.append(row)
    for owner, left in stored.items():
        for group in left:
            for key in group:
                rows.append({"path": f"{owner}/{key} (in the file only)", "key": f"{owner}/vars/{key}",
                             "shape": list(np.shape(group[key])), "difference": None, "optimizer": False})
    return rows


def reload_in_backend(path: str, inputs_file: str, layout: dict[str, Any], modules: list[str],
                      trust: bool = False) -> dict[str, Any]:
    """Load ``path`` in this process's backend; compare its variables with the file and run it.

    ``trust=True`` loads with ``safe_mode=False`` (the caller trusts the file: a ``Lambda``'s
    Python code is run); otherwise Keras's safe mode refuses such a file.

    Returns ``{"backend", "keras", "variables": [...], "outputs": [arrays]}`` or, when loading or
    calling fails, ``{"backend", "keras", "failure": {...}}`` naming the layer and the cause.
    """
    sys.path.insert(0, os.getcwd())
    result: dict[str, Any] = {"backend": os.environ.get("KERAS_BACKEND", "")}
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001: the caller's module; reported, not raised
            result["failure"] = {"stage": "import", "kind": "import", "module": name,
                                 "message": f"{type(error).__name__}: {_first(error)}"}
            return result
    import keras
    import numpy as np

    from helpers.packed_inputs import unpack_inputs

    keras.config.disable_traceback_filtering()
    result.update(backend=keras.backend.backend(), keras=keras.__version__)
    with zipfile.ZipFile(path) as archive:
        try:
            model = keras.saving.load_model(path, safe_mode=not trust)
        except Exception as error:  # noqa: BLE001: every failure is described for the caller
            result["failure"] = _failure("load", error, archive)
            return result
        result["variables"] = compare_with_file(model, archive)
    with np.load(inputs_file) as data:
        inputs = unpack_inputs(layout, data)
    try:
        outputs = keras.tree.flatten(model(inputs, training=False))
    except Exception as error:  # noqa: BLE001
        with zipfile.ZipFile(path) as archive:
            result["failure"] = _failure("call", error, archive)
        return result
    result["outputs"] = [np.asarray(keras.ops.convert_to_numpy(output)) for output in outputs]
    return result
