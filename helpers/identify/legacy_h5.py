"""Reader: a legacy Keras HDF5 file (``model.save("x.h5")``, ``save_weights("x.h5")``) of Keras 1, 2 or 3.

Called by ``helpers.identify.hdf5`` with the open file. Names the writer, the custom classes,
the traps (Keras 1 weights, CuDNN layers, time-major recurrent layers, a Lambda's bytecode, a
training config) and the route into Keras 3 (``helpers.keras2.convert_legacy_h5``).

Example:
    >>> import h5py
    >>> with h5py.File("tests/data/tf215/sequential.h5", "r") as file:
    ...     info = read_legacy_h5("tests/data/tf215/sequential.h5", file, whole=True)
    >>> info.kind, info.written_by
    ('legacy-h5-model', {'Keras': '2.15.0 (tensorflow)'})
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from helpers.errors import first_line
from helpers.identify.answer import Identification, loading_code, not_model
from helpers.identify.keras_config import (KERAS_CLASS_NAMES, LAMBDA_NOTE, MODEL_REPORT, TFSM_NOTE, class_configs,
                                           custom_classes, has_lambda_code, has_tfsm_layer)
from helpers.trust import LAMBDA, TFSM

__all__ = ["read_legacy_h5"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_legacy_h5(path: str, file: Any, whole: bool) -> Identification:
    group = file["model_weights"] if "model_weights" in file else file
    version = _text(group.attrs.get("keras_version", file.attrs.get("keras_version", "?")))
    backend = _text(group.attrs.get("backend", file.attrs.get("backend", "?")))
    layers = [_text(n) for n in group.attrs["layer_names"]]
    count = sum(len(group[name].attrs.get("weight_names", [])) for name in layers)
    named_keras = path.endswith(".keras") and not version.startswith("3")  # Keras 3's: _keras3_h5
    kind = "keras2-hdf5-named-keras" if named_keras else ("legacy-h5-model" if whole else "legacy-h5-weights")
    if version.startswith("1.") and backend == "?":
        backend = "backend not recorded"
    info = Identification(path, kind, written_by={"Keras": f"{version} ({backend})"})
    info.holds = {"layers": len(layers), "weights": count, "optimizer state": "optimizer_weights" in file}
    if version.startswith("1."):  # Keras 1: neither Keras 3 nor tf-keras rebuilds its configuration
        info.traps.append("written by Keras 1: its configuration (Convolution2D(nb_filter, ...), "
                          "output_dim, init) is rebuilt by neither Keras 3 nor tf-keras, and its weights "
                          "(dense_1_W, an LSTM's per-gate W_i/U_i/b_i) do not pair by position: rebuild the "
                          "model in Keras 3 code with the file's layer names, then "
                          "helpers.keras1.load_keras1_weights(path, model)")
        if any(len(group[name][weight].shape) >= 3 for name in layers
               for weight in (_text(w) for w in group[name].attrs.get("weight_names", []))
               if weight in group[name]):
            info.traps.append("a convolution: Keras 1 files do not record the backend, and Theano flipped "
                              "kernels: pass kernels_from='tensorflow' or 'theano' to load_keras1_weights, "
                              "and build a th file's twin with data_format='channels_first'")
        info.how_to_load = loading_code(path, """
            from helpers.keras1 import describe_keras1_h5
            # Keras 1: build the same architecture in Keras 3 code (the file's layer names; Keras 1's
            # hard_sigmoid is helpers.keras1.keras1_hard_sigmoid), then load_keras1_weights(path, model).
            loaded = describe_keras1_h5(path)
            report = (f"{sum(map(len, loaded.layers.values()))} weights in "
                      f"{len(loaded.layers)} layers, written by Keras {loaded.keras_version}")
            """)
        info.partial = "build the twin yourself, then helpers.keras1.load_keras1_weights(path, twin)"
        return info
    if named_keras:
        info.traps.append("HDF5 under a .keras name (Keras 2.12's model.save('x.keras') wrote this): "
                          "keras.models.load_model says 'File not found' although the file is there")
    if not whole:
        info.traps.append("weights only: the architecture is not in the file")
        info.how_to_load = loading_code(path, """
            from helpers.keras2 import describe_legacy_h5
            # Weights only: build the same architecture in Keras 3, then
            # model.load_weights(path), or convert_legacy_h5(path, "m.weights.h5", model=model).
            loaded = describe_legacy_h5(path)
            report = (f"{sum(map(len, loaded.layers.values()))} weights in "
                      f"{len(loaded.layers)} layers, written by Keras {loaded.keras_version}")
            """)
        return info
    try:
        config = json.loads(_text(file.attrs["model_config"]))
    except (ValueError, UnicodeDecodeError) as error:  # helpers.keras2.h5_model_config's words
        return not_model(path, f"a legacy .h5 whose model_config is damaged (not JSON: {first_line(error)})")
    if not isinstance(config, dict):
        return not_model(path, "a legacy .h5 whose model_config is damaged (not a model configuration)")
    info.holds["model"] = f"{config.get('class_name', '?')} {config.get('config', {}).get('name', '')!r}"
    if version.startswith("3"):
        return _keras3_h5(info, config)
    custom = [c["class_name"] for c in class_configs(config) if c["class_name"] in _unknown(config)]
    info.holds["custom objects"] = sorted(set(custom))
    cudnn = sorted({c["class_name"] for c in class_configs(config) if c["class_name"].startswith("CuDNN")})
    lam = has_lambda_code(config)
    if lam:
        info.runs_code.append(LAMBDA)
        info.traps.append("a Lambda holds marshalled Python bytecode: it loads only on the Python "
                          "version that wrote it")
    if "training_config" in file.attrs:
        info.traps.append("its training config (loss, metrics) is Keras 2's: load with compile=False "
                          "and compile again (a string loss like 'mse' fails in Keras 3)")
    time_major = _time_major_layers(config)
    if time_major:
        plain = time_major[0].split("(")[-1].rstrip(")")
        info.traps.append(
            f"a time-major recurrent layer, {', '.join(time_major)}, built with time_major=True (inputs "
            "shaped (time, batch, features)): Keras 3 has no time_major, and convert_legacy_h5 refuses "
            f"the file; a Keras 3 twin with a plain {plain} loads these weights and answers wrong, "
            "without an error (it reads the time and batch axes the other way round)")
    nested = sorted({inner.get("config", {}).get("name", "?") for c in class_configs(config)
                     if c["class_name"] == "Sequential" and isinstance(c.get("config"), dict)
                     for inner in c["config"].get("layers", []) if inner.get("class_name") in ("Functional", "Model")})
    if custom or cudnn or nested:
        blocker = (f"needs its custom classes {sorted(set(custom))}" if custom else
                   f"{', '.join(cudnn)}: Keras 3 has no CuDNN layers (weights in the CuDNN layout)" if cudnn else
                   f"a functional model ({', '.join(nested)}) nested in a Sequential; build it in Keras 3 code "
                   "with the file's names and pass it: convert_legacy_h5(path, 'm.weights.h5', model=twin)")
        info.traps.append(f"Keras 3 cannot rebuild it: {blocker}")
        info.how_to_load = loading_code(path, f"""
            from helpers.keras2 import describe_legacy_h5
            # The architecture cannot be rebuilt here ({'custom classes' if custom else 'CuDNN layers' if cudnn else 'a functional model in a Sequential'}):
            # convert_legacy_h5(path, "m.keras", custom_objects={{...}}) with the classes, or
            # build a twin and pass model=twin. Without them, this lists the weights:
            loaded = describe_legacy_h5(path)
            report = (f"{{sum(map(len, loaded.layers.values()))}} weights in "
                      f"{{len(loaded.layers)}} layers, written by Keras {{loaded.keras_version}}")
            """)
        info.partial = "only the weights were read: Keras 3 cannot rebuild the model here"
        info.runs_code = []  # the weights are read; no Lambda is deserialized
        return info
    if time_major:
        info.how_to_load = _time_major_code(path, config)
        return info
    info.how_to_load = loading_code(path, LAMBDA_NOTE * lam + textwrap.dedent("""
        import os, tempfile, keras
        from helpers.keras2 import convert_legacy_h5
        # Keras 3 rebuilds the Keras 2 model (arguments patched, nested models renumbered) and
        # pairs every weight by name; the copy goes to a temporary folder, never beside the file.
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "model.keras")
            convert_legacy_h5(path, out)
            loaded = keras.models.load_model(out)
        """)) + MODEL_REPORT
    if lam:
        info.trusted_code = info.how_to_load.replace("(path, out)", "(path, out, safe_mode=False)").replace(
            "load_model(out)", "load_model(out, safe_mode=False)")
    return info


def _keras3_h5(info: Identification, config: dict) -> Identification:
    """A legacy ``.h5`` that Keras 3 wrote (``model.save("x.h5")``): Keras 3 reads it back itself."""
    info.written_by = {"Keras": info.written_by["Keras"].split(" (")[0]}
    info.holds["custom objects"] = custom_classes(config)
    renamed = info.path.endswith(".keras")
    if renamed:  # a Keras 3 model.save("x.h5"), renamed
        info.traps.append("a legacy HDF5 model (Keras 3's model.save('x.h5')) under a .keras name: "
                          "keras.models.load_model(path) says 'File not found' although the file is "
                          "there; load a copy named .h5")
    else:
        info.traps.append("Keras 3 wrote this legacy .h5 (model.save('x.h5') logs that it is legacy): "
                          "keras.models.load_model(path, compile=False) rebuilds the model"
                          + ("; the file's optimizer state is not restored (a .keras file keeps it)"
                             if info.holds["optimizer state"] else ""))
    lam, tfsm = has_lambda_code(config), has_tfsm_layer(config)
    info.runs_code += [LAMBDA] * lam + [TFSM] * tfsm
    if info.holds["custom objects"]:
        info.traps.append("needs its custom classes: import or register them before loading "
                          "(custom_objects=)")
    info.how_to_load = loading_code(info.path, LAMBDA_NOTE * lam + TFSM_NOTE * tfsm + textwrap.dedent("""
        import keras
        loaded = keras.models.load_model(path, compile=False)  # compile=False: no loss is rebuilt
        """)) + MODEL_REPORT
    if renamed:  # Keras reads HDF5 only under an .h5 name: a copy in a temporary folder
        info.how_to_load = info.how_to_load.replace(
            "import keras\n", "import os, shutil, tempfile, keras\n", 1).replace(
            "loaded = keras.models.load_model(path, compile=False)  # compile=False: no loss is rebuilt\n",
            "with tempfile.TemporaryDirectory() as folder:  # HDF5 loads only under an .h5 name\n"
            "    copy = shutil.copyfile(path, os.path.join(folder, \"model.h5\"))\n"
            "    loaded = keras.models.load_model(copy, compile=False)  # compile=False: no loss is rebuilt\n", 1)
    if lam or tfsm:
        info.trusted_code = info.how_to_load.replace("compile=False)", "compile=False, safe_mode=False)", 1)
    return info


def _time_major_layers(config: dict) -> list[str]:
    """``'name' (Class)`` of every layer a Keras 2 configuration builds with ``time_major=True``."""
    return [f"{c['config'].get('name', '?')!r} ({c['class_name']})" for c in class_configs(config)
            if isinstance(c.get("config"), dict) and c["config"].get("time_major") is True]


def _input_shape(config: dict) -> tuple | None:
    """The one input shape (batch axis left out) a Keras 2 model configuration records, else None."""
    settings = config.get("config", {})
    layers = settings.get("layers") or []
    shapes = [layer["config"].get("batch_input_shape") for layer in layers
              if isinstance(layer, dict) and layer.get("class_name") == "InputLayer"]
    if not shapes and layers:  # a Sequential without an InputLayer: its first layer, or its build shape
        shapes = [layers[0].get("config", {}).get("batch_input_shape") or settings.get("build_input_shape")]
    if len(shapes) != 1 or not isinstance(shapes[0], list) or len(shapes[0]) < 2:
        return None
    return tuple(shapes[0][1:])


def _time_major_code(path: str, config: dict) -> str:
    """Loading code for a Keras 2 model with ``time_major=True``: tf-keras exports it, Keras 3 serves it."""
    shape, name = _input_shape(config), config.get("config", {}).get("name", "model")
    served = 'keras.layers.TFSMLayer(os.path.join(folder, "export"), call_endpoint="serve")'
    if shape:
        load = (f"    served = {served}\n    inputs = keras.Input({shape!r})\n"
                f"    loaded = keras.Model(inputs, served(inputs), name={name!r})\n")
        report = MODEL_REPORT
    else:  # several inputs: the layer itself, called on the inputs as the export's signature takes them
        load = f"    loaded = {served}\n"
        report = 'report = f"TFSMLayer {loaded.name!r}: {len(loaded.weights)} weights"\n'
    return loading_code(path, """
        import os, tempfile, keras
        from helpers.keras2 import run_keras2
        # Keras 3 has no time_major: Keras 2 (tf-keras) exports the model once as a SavedModel,
        # which Keras 3 serves as one layer computing what Keras 2 did (the export is removed after).
        # To train it in Keras 3 instead: a twin that swaps axes 0 and 1 before the recurrent layer
        # (and after it, if it returns sequences), then convert_legacy_h5(path, "m.weights.h5", model=twin).
        with tempfile.TemporaryDirectory() as folder:
            source = os.path.abspath(path)  # the Keras 2 process runs in `folder`
            run_keras2(f"keras.models.load_model({source!r}, compile=False).export('export')",
                       cwd=folder)
        """) + load + report


def _unknown(config: dict) -> set[str]:
    """Class names of a Keras 2 configuration that Keras 3 does not provide (its custom classes).

    Names Keras provides are known from ``KERAS_CLASS_NAMES`` without importing Keras; only
    another name makes this ask Keras itself (its registered objects, its layers).
    """
    names = {c["class_name"] for c in class_configs(config)}
    candidates = {name for name in names if name not in KERAS_CLASS_NAMES and not name.startswith("CuDNN")
                  and (name[:1].isupper() or ">" in name)}
    if not candidates:
        return set()
    import keras
    from helpers.keras2 import legacy_custom_objects

    known = set(legacy_custom_objects()) | {"Functional", "Model", "Sequential", "InputLayer"}
    return {name for name in candidates if name not in known and not hasattr(keras.layers, name)
            and keras.saving.get_registered_object(name) is None
            and not hasattr(keras.initializers, name)
            and not hasattr(keras.regularizers, name) and not hasattr(keras.constraints, name)
            and not hasattr(keras.optimizers, name) and name not in ("Lambda", "TFOpLambda")}
