"""The fresh process behind ``helpers.keras_files.round_trip``: ``python -m helpers.round_trip_worker FOLDER``.

``FOLDER`` holds ``request.json`` (the model file, the modules to import
first, ``compile`` and ``safe_mode``) and ``inputs.npz``. The worker imports
the modules, loads the model with ``keras.saving.load_model``, and writes
``result.json`` (its layers, variables and outputs described) and
``arrays.npz`` (the values), or ``result.json`` with an ``error`` entry
saying what went wrong. ``snapshot`` is shared with the parent process, so
both sides describe a model the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
from typing import Any

NOT_FOUND = re.compile(r"Could not locate (class|function) '([^']+)'")


def pack_inputs(inputs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``inputs`` (an array, a list or tuple of arrays, or a dict of them) as npz arrays and a layout."""
    import numpy as np

    if isinstance(inputs, dict):
        keys = [str(key) for key in inputs]
        return {"kind": "dict", "keys": keys}, {f"x{i}": np.asarray(inputs[k]) for i, k in enumerate(inputs)}
    if isinstance(inputs, (list, tuple)):
        return {"kind": "list", "count": len(inputs)}, {f"x{i}": np.asarray(v) for i, v in enumerate(inputs)}
    return {"kind": "array"}, {"x0": np.asarray(inputs)}


def unpack_inputs(layout: dict[str, Any], arrays: Any) -> Any:
    """The inverse of ``pack_inputs``."""
    if layout["kind"] == "dict":
        return {key: arrays[f"x{i}"] for i, key in enumerate(layout["keys"])}
    if layout["kind"] == "list":
        return [arrays[f"x{i}"] for i in range(layout["count"])]
    return arrays["x0"]


def class_name(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def snapshot(model: Any, inputs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Describe ``model``: its layers (path, class, built), its variables and its outputs on ``inputs``.

    Layers and variables are read before the model is called, because a call
    builds (with fresh values) whatever was left unbuilt.
    """
    import keras
    import numpy as np

    from helpers.keras_files import owned_variables

    layers = [
        {"path": _relative(layer.path or layer.name, model.name) if layer is not model else model.name,
         "class": class_name(layer), "built": bool(layer.built)}
        for layer in model._flatten_layers(include_self=True, recursive=True)
    ]
    arrays: dict[str, Any] = {}
    variables = []
    for i, (name, variable) in enumerate(owned_variables(model).items()):
        value = np.asarray(variable.numpy())
        arrays[f"v{i}"] = value
        variables.append({"name": _relative(name, model.name), "shape": list(value.shape), "dtype": str(value.dtype), "key": f"v{i}"})
    outputs = keras.tree.flatten(model(inputs, training=False))
    for i, output in enumerate(outputs):
        arrays[f"o{i}"] = np.asarray(keras.ops.convert_to_numpy(output))
    return {"layers": layers, "variables": variables, "outputs": len(outputs)}, arrays


def _relative(path: str, model_name: str) -> str:
    """A variable's or layer's path without the model's name, which a reloaded model's paths lack.

    ``net/dense/kernel`` becomes ``dense/kernel``; an optimizer's slot
    ``adam/net_dense_kernel_momentum`` becomes ``adam/dense_kernel_momentum``.
    """
    path = path.removeprefix(model_name + "/")
    head, slash, tail = path.partition("/")
    if slash and tail.startswith(model_name + "_"):
        path = f"{head}/{tail.removeprefix(model_name + '_')}"
    return path


def _import(entry: str) -> None:
    if entry.endswith(".py") or os.sep in entry:
        name = os.path.splitext(os.path.basename(entry))[0]
        if name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(name, entry)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the file {entry!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(entry)


def _first_lines(error: BaseException, count: int = 2) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.splitlines()[:count])[:400]


def main(folder: str) -> int:
    with open(os.path.join(folder, "request.json"), encoding="utf-8") as file:
        request = json.load(file)

    def answer(result: dict[str, Any]) -> int:
        with open(os.path.join(folder, "result.json"), "w", encoding="utf-8") as file:
            json.dump(result, file)
        return 0

    sys.path.insert(0, os.getcwd())
    for entry in request["modules"]:
        try:
            _import(entry)
        except Exception as error:  # the learner's module: any error is reported, not raised
            return answer({"error": "import", "module": entry, "message": f"{type(error).__name__}: {_first_lines(error)}"})
    import keras
    import numpy as np

    try:
        model = keras.saving.load_model(request["path"], compile=request["compile"], safe_mode=request["safe_mode"])
    except Exception as error:
        found = NOT_FOUND.search(str(error))
        if found:
            return answer({"error": "not_found", "kind": found[1], "name": found[2]})
        return answer({"error": "load", "message": f"{type(error).__name__}: {_first_lines(error)}"})
    with np.load(os.path.join(folder, "inputs.npz")) as data:
        inputs = unpack_inputs(request["inputs"], data)
    try:
        description, arrays = snapshot(model, inputs)
    except Exception as error:
        return answer({"error": "call", "message": f"{type(error).__name__}: {_first_lines(error)}"})
    np.savez(os.path.join(folder, "arrays.npz"), **arrays)
    return answer(description)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main(sys.argv[1]))
