"""Checks for notebook 13 (files across versions).

Each check builds its own inputs in a temporary folder, with names, shapes and
values other than the notebook's: SavedModels written by ``tf.saved_model.save``
(several inputs of one shape and of several dtypes; a Hub-format module with a
trainable and a non-trainable variable and a ``training`` argument that changes
the answer), and legacy ``.h5`` files written by Keras 3 whose configuration is
rewritten as Keras 2 writes it (``keras2_model_config``: tf_keras loads them too),
with Keras 2's ``time_major`` and ``groups``, so no old TensorFlow is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import CheckFailed, Hint, exercise_check, require
from helpers.checks.toolkit import call_answer

__all__ = [
    "check_call_by_keyword",
    "check_hub_layer",
    "check_load_old_h5",
    "make_hub_module",
    "make_keyword_model",
    "write_keras2_style_h5",
]


# --------------------------------------------------------------------------- 13.1


def make_keyword_model(folder: str, name: str = "keyword_model", rows: int = 4, units: int = 3,
                       float_spec: tf.DType = tf.float32, int_spec: tf.DType = tf.int32,
                       float_given: str = "float32", int_given: str = "int64",
                       compute: str = "float32") -> dict[str, Any]:
    """A SavedModel whose serving_default takes ``left``, ``right`` (``float_spec``, one shape) and ``count``
    (``int_spec``).

    ``units=1`` gives a one-column output (a ``Dense(1)`` head's shape). Returns the path, the inputs
    (``left`` and ``right`` as ``float_given``, ``count`` as ``int_given``: by default int64, the wrong
    dtype) in an order other than the signature's, and the expected output (float32; with
    ``compute="float64"`` the signature computes in float64, adds 1e-9 * right and returns float64).
    """
    module = tf.Module()
    scale = np.array([1.5, -0.5, 2.0][:units], dtype=np.float32)
    module.scale = tf.Variable(scale, name="scale")

    @tf.function(input_signature=[tf.TensorSpec((None, units), float_spec, name="left"),
                                  tf.TensorSpec((None, units), float_spec, name="right"),
                                  tf.TensorSpec((None, 1), int_spec, name="count")])
    def serve(left, right, count):
        if compute == "float64":  # below float32's step: a float32 detour shows
            left, right = tf.cast(left, tf.float64), tf.cast(right, tf.float64)
            mixed = tf.cast(module.scale, tf.float64) * left - 2.0 * right + 1e-9 * right
            return {"mixed_result": mixed + tf.cast(count, tf.float64)}
        left, right = tf.cast(left, tf.float32), tf.cast(right, tf.float32)
        return {"mixed_result": module.scale * left - 2.0 * right + tf.cast(count, tf.float32)}

    module.serve = serve
    path = os.path.join(folder, name)
    tf.saved_model.save(module, path, signatures={"serving_default": serve})
    rng = np.random.default_rng(1313 + units)
    left, right = rng.normal(size=(rows, units)), rng.normal(size=(rows, units))
    count = rng.integers(1, 5, size=(rows, 1))
    as_spec = np.dtype(float_spec.as_numpy_dtype)  # the values the signature computes with
    if compute == "float64":
        left64, right64 = left.astype(as_spec).astype(np.float64), right.astype(as_spec).astype(np.float64)
        expected = scale.astype(np.float64) * left64 - 2.0 * right64 + 1e-9 * right64 + count
        inputs = {"right": right.astype(float_given), "count": count.astype(int_given),
                  "left": left.astype(float_given)}
        return {"path": path, "inputs": inputs, "expected": expected, "scale": scale}
    expected = (scale * left.astype(as_spec).astype(np.float32) - 2.0 * right.astype(as_spec).astype(np.float32)
                + count).astype(np.float32)
    inputs = {"right": right.astype(float_given), "count": count.astype(int_given), "left": left.astype(float_given)}
    return {"path": path, "inputs": inputs, "expected": expected, "scale": scale}


# The cases: the signature's dtypes and the dtypes the caller gives (NumPy's float64 default among them).
_KEYWORD_CASES = (
    dict(),
    dict(name="one_column_model", units=1, float_given="float64"),  # a Dense(1)-like head: (4, 1) stays
    dict(name="wide_dtype_model", float_spec=tf.float64, int_spec=tf.int64, int_given="int32"),
    # computes and returns float64: a result cast to float32, or inputs sent through float32, shows
    dict(name="double_model", float_spec=tf.float64, int_spec=tf.int64, int_given="int32", float_given="float64",
         compute="float64"),
)


def _same_array(given: Any, original: np.ndarray) -> bool:
    """``given`` is still ``original``: same type, dtype, shape and values (``array_equal`` ignores dtype)."""
    return (isinstance(given, np.ndarray) and given.dtype == original.dtype and given.shape == original.shape
            and np.array_equal(given, original))


_DTYPE_CLASH = re.compile(r"expected to be a (\w+) tensor but is a (\w+) tensor"
                          r"|Can not cast TensorSpec\(.*?dtype=tf\.(\w+).*? to TensorSpec\(.*?dtype=tf\.(\w+)")


def _call(call_by_keyword: Callable[[str, dict], np.ndarray], path: str, given: dict) -> Any:
    try:
        return call_by_keyword(path, given)
    except (TypeError, tf.errors.InvalidArgumentError) as error:
        clash = _DTYPE_CLASH.search(str(error))
        if clash:  # the cast's direction comes from the spec, whichever way it goes
            wanted, got = (clash.group(1), clash.group(2)) if clash.group(1) else (clash.group(4), clash.group(3))
            wanted, got = tf.as_dtype(wanted).name, tf.as_dtype(got).name  # "double" is float64
            require(False, f"the signature got a tensor of dtype {got} for an input it takes as {wanted}: cast each array "
                           "to the dtype of its own TensorSpec (signature.structured_input_signature[1][name]"
                           ".dtype), not a dtype of your choosing")
        missing = re.search(r"missing a required argument: '(\w+)'", str(error))
        require(not missing, f"the signature got no value for its input {missing.group(1) if missing else ''!r}: "
                "pass every array of the dict, each under its own name, signature(**{name: tensor})")
        unexpected = re.search(r"unexpected keyword argument '(\w+)'", str(error))
        require(not unexpected, f"the signature has no input {unexpected.group(1) if unexpected else ''!r}: "
                "use the dict's keys, which are the signature's input names, as they are")
        raise


def _check_keyword_case(call_by_keyword: Callable[[str, dict], np.ndarray], case: dict[str, Any]) -> None:
    given = {name: value.copy() for name, value in case["inputs"].items()}
    result = _call(call_by_keyword, case["path"], given)
    require(isinstance(result, np.ndarray),
            f"call_by_keyword returned a {type(result).__name__}: return a NumPy array "
            "(.numpy() of the signature's single output)")
    require(result.shape == case["expected"].shape or result.size != case["expected"].size,
            f"the result has shape {result.shape}, the output {case['expected'].shape}: return the "
            "signature's one output as it is (no squeeze, not the dict or a part of it)")
    require(result.shape == case["expected"].shape,
            f"the result has shape {result.shape}, this SavedModel's output {case['expected'].shape}: this is "
            "not this SavedModel's output. Load `path` on every call (nothing kept between calls)")
    floats = {name: np.asarray(value, np.float32) for name, value in case["inputs"].items()}
    swapped = np.allclose(result, case["scale"] * floats["right"] - 2.0 * floats["left"] + floats["count"],
                          atol=1e-4)
    require(not swapped, "left and right were swapped: pass each array by its input name "
            "(signature(**{name: tensor})), not in the dict's order")
    require(np.allclose(result, case["expected"], atol=1e-5),
            "the output differs from the model's: pass every input by its name, cast to the dtype "
            "of its TensorSpec in signature.structured_input_signature[1]")
    if case["expected"].dtype == np.float64:
        require(result.dtype == np.float64 and np.allclose(result, case["expected"], rtol=0.0, atol=1e-12),
                f"this signature computes and returns float64; your result is {result.dtype}"
                f"{'' if result.dtype == np.float32 else ', its last digits off'}: feed float64 inputs as "
                "float64 (their spec's dtype) and return the output as it comes, not cast to float32")
    require(set(given) == set(case["inputs"]) and all(_same_array(given[k], v) for k, v in case["inputs"].items()),
            "the inputs dict was changed (a value, a dtype or a key): cast copies, and leave the caller's "
            "dict and arrays as they are")


@exercise_check("13.1")
def check_call_by_keyword(call_by_keyword: Callable[[str, dict], np.ndarray]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        for settings in _KEYWORD_CASES:
            _check_keyword_case(call_by_keyword, make_keyword_model(folder, **settings))
    return ("three inputs passed by name, int64 cast to int32, the single output returned as NumPy "
            "in its own shape")


# --------------------------------------------------------------------------- 13.2


def _patched_config(config: dict, argument: str, value: Any, classes: tuple[str, ...]) -> dict:
    for layer in config["config"]["layers"]:
        if layer["class_name"] in classes:
            layer["config"][argument] = value
    return config


def write_keras2_style_h5(path: str, kind: str, value: Any) -> tuple[keras.Model, np.ndarray]:
    """A compiled Keras 3 model saved as legacy .h5, its configuration rewritten as Keras 2 writes it and
    given Keras 2's ``time_major`` (``kind="recurrent"``) or the ``groups`` of its DepthwiseConv2D
    (``kind="depthwise"``; its Conv2D has ``groups=2``, which groups) set to ``value``. Returns (model, input)."""
    rng = np.random.default_rng(len(path) + (7 if kind == "recurrent" else 11))
    if kind == "recurrent":
        inputs = keras.Input((5, 3), name="sequence")
        h = keras.layers.LSTM(4, return_sequences=True, name="encoder")(inputs)
        outputs = keras.layers.GRU(2, name="decoder")(h)
        x = rng.normal(size=(3, 5, 3)).astype(np.float32)
        argument, classes = "time_major", ("LSTM", "GRU")
    else:
        inputs = keras.Input((6, 6, 2), name="image")
        h = keras.layers.Conv2D(4, 1, groups=2, name="expand")(inputs)  # groups in both versions
        h = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise_1")(h)
        h = keras.layers.BatchNormalization(name="norm")(h)
        h = keras.layers.GlobalAveragePooling2D(name="pool")(h)
        outputs = keras.layers.Dense(3, name="classes")(h)
        x = rng.normal(size=(2, 6, 6, 2)).astype(np.float32)
        argument, classes = "groups", ("DepthwiseConv2D",)
    model = keras.Model(inputs, outputs, name=f"old_{kind}")
    model.set_weights([rng.uniform(0.2, 1.2, w.shape).astype(np.float32) * rng.choice([-1, 1], w.shape)
                       if "variance" not in w.path else rng.uniform(0.5, 1.5, w.shape).astype(np.float32)
                       for w in model.weights])
    model.compile(optimizer="adam", loss="mse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save(path)
    import h5py

    from helpers.keras2 import keras2_model_config

    with h5py.File(path, "r+") as file:  # the configuration as Keras 2 writes it (tf_keras loads it too)
        config = keras2_model_config(model)
        file.attrs["model_config"] = json.dumps(_patched_config(config, argument, value, classes))
        file.attrs["keras_version"] = file["model_weights"].attrs["keras_version"] = "2.15.0"
    return model, x


def _digest(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def _not_keras3(loaded: Any) -> str:
    return (f"load_old_h5 returned a {type(loaded).__module__.split('.')[0]}.{type(loaded).__name__}: return a "
            "Keras 3 model (keras.Model), loaded by keras.models.load_model; tf_keras (Keras 2) models do not "
            "mix with Keras 3 code")


def _loads_like(load_old_h5: Callable[[str], Any], path: str, kind: str, argument: str, value: Any,
                original: keras.Model, x: np.ndarray) -> None:
    """The file loads uncompiled, unchanged, as a Keras 3 model answering like ``original``."""
    before = _digest(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = load_old_h5(path)
    except Exception as error:
        if "Unrecognized keyword" in str(error) or "unexpected keyword" in str(error):
            raise CheckFailed(Hint(
                "Keras 3 rejects Keras 2's time_major and groups arguments: load with layer classes that drop "
                "them (section 4, 'Layer arguments one version writes and another rejects')",
                "pass custom_objects whose classes drop them (helpers.keras2.legacy_custom_objects())")) from error
        if kind == "depthwise" and "expand" in str(error) and "shape" in str(error).lower():
            raise CheckFailed("the Conv2D (groups=2) got other weight shapes: Conv2D really groups, in both "
                              "versions: keep its groups; drop groups only where Keras 2 ignored it "
                              "(depthwise, separable, transposed convolutions)") from error
        if "shape mismatch" in str(error).lower():
            raise CheckFailed(f"a layer of the {kind} file got other weight shapes than the file's: drop the "
                              "Keras 2 argument and change no other (groups is not depth_multiplier)") from error
        if argument in str(error):
            why = ("Keras 2 accepted groups in DepthwiseConv2D and ignored it, so any value computes "
                   "like groups=1: drop it" if argument == "groups" else
                   "time_major=False is what Keras 3 does: drop it and load")
            raise CheckFailed(f"a file with {argument}={value} was refused: {why}; refuse only "
                              "time_major=True") from error
        raise
    require(_digest(path) == before, f"the {kind} file was changed: load it as it is, and patch "
            "the arguments while loading (custom_objects), not in the file")
    require(isinstance(loaded, keras.Model), _not_keras3(loaded))
    require(not getattr(loaded, "compiled", False) and getattr(loaded, "optimizer", None) is None,
            "the model came back compiled: load it without its training configuration "
            "(compile=False)")
    with warnings.catch_warnings():  # a Keras 2 configuration lists its one input: Keras 3 warns on a tensor
        warnings.simplefilter("ignore")
        got = np.asarray(loaded(x, training=False))
    require(np.allclose(got, np.asarray(original(x, training=False)), atol=1e-5),
            f"the {kind} model answers differently from the file's: load the weights too "
            "(keras.models.load_model), not only the architecture")


def _refuses(load_old_h5: Callable[[str], Any], bad: str, only: tuple[str, ...]) -> None:
    """A file whose ``only`` layers (the others carry time_major=False) have time_major=True must raise."""
    write_keras2_style_h5(bad, "recurrent", False)
    import h5py

    with h5py.File(bad, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        file.attrs["model_config"] = json.dumps(_patched_config(config, "time_major", True, only))
    before = _digest(bad)
    refused, loaded = False, None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loaded = load_old_h5(bad)
    except Exception:  # the prompt allows any exception
        refused = True
    require(refused or loaded is None or isinstance(loaded, keras.Model),
            _not_keras3(loaded) + "; a time_major=True file must raise")
    require(refused, f"a file whose {only[0]} layer has time_major=True loaded: that value changes the computation "
            "and must raise, in every recurrent layer; drop only time_major=False (legacy_custom_objects())")
    require(_digest(bad) == before, "the refused file was changed: leave the file as it is")


@exercise_check("13.2")
def check_load_old_h5(load_old_h5: Callable[[str], Any]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "recurrent_model.h5")
        original, x = write_keras2_style_h5(path, "recurrent", False)
        _loads_like(load_old_h5, path, "recurrent", "time_major", False, original, x)
        for value in (1, 2):  # Keras 2 ignored groups in DepthwiseConv2D: both load
            path = os.path.join(folder, f"depthwise_groups_{value}.h5")
            original, x = write_keras2_style_h5(path, "depthwise", value)
            _loads_like(load_old_h5, path, "depthwise", "groups", value, original, x)
        # time_major=True in one layer only, each kind in turn: a refusal by one class must not pass for all
        for only in (("LSTM",), ("GRU",)):
            _refuses(load_old_h5, os.path.join(folder, f"recurrent_changing_{only[0].lower()}.h5"), only)
    return ("time_major=False and groups=1 or 2 files load uncompiled with equal outputs; "
            "time_major=True raises; the files are unchanged")


# --------------------------------------------------------------------------- 13.3


def make_hub_module(path: str) -> dict[str, Any]:
    """A Hub-format SavedModel: ``module(x, training)``; a trainable ``weights_w``, ``offset_b`` and a
    non-trainable ``running_scale``; training=True adds 1. Returns the input and the expected output."""
    module = tf.train.Checkpoint()
    rng = np.random.default_rng(1331)
    module.weights_w = tf.Variable(rng.uniform(0.2, 1.0, (2, 3)).astype(np.float32), name="weights_w")
    module.offset_b = tf.Variable([0.3, -0.4, 0.5], name="offset_b")
    module.running_scale = tf.Variable([1.5, 0.5, 2.5], trainable=False, name="running_scale")
    module.variables = [module.weights_w, module.offset_b, module.running_scale]
    module.trainable_variables = [module.weights_w, module.offset_b]
    module.regularization_losses = []

    @tf.function(input_signature=[tf.TensorSpec((None, 2), tf.float32), tf.TensorSpec((), tf.bool)])
    def call(x, training=False):  # Hub modules default to inference
        out = (tf.matmul(x, module.weights_w) + module.offset_b) * module.running_scale
        return tf.cond(training, lambda: out + 1.0, lambda: out)

    module.__call__ = call
    tf.saved_model.save(module, path)
    x = rng.normal(size=(4, 2)).astype(np.float32)
    return {"x": x, "expected": call(x, False).numpy(),
            "trainable": [v.numpy() for v in module.trainable_variables],
            "frozen": module.running_scale.numpy()}


def _same_values(found: list, wanted: list) -> bool:
    remaining = [np.asarray(w) for w in wanted]
    for value in found:
        value = np.asarray(value)
        for i, w in enumerate(remaining):
            if w.shape == value.shape and np.allclose(w, value):
                del remaining[i]
                break
        else:
            return False
    return not remaining


def _not_a_keras3_layer(found: Any) -> str:
    """Why ``found`` is not the layer asked for, by what it is: a tf_keras layer, the loaded module, other."""
    kind = f"{type(found).__module__.split('.')[0]}.{type(found).__name__}"
    legacy = ("tf_keras", "tensorflow_hub", "tensorflow.python.keras")
    if any(cls.__module__.startswith(legacy) for cls in type(found).__mro__):
        return (f"hub_layer returned a {kind}, a Keras 2 (tf_keras) layer, like hub.KerasLayer: it cannot go into "
                "a Keras 3 model. Return a Keras 3 layer (keras.layers.Layer), section 5, 'TF Hub models in Keras 3'")
    if isinstance(found, tf.Module) or hasattr(found, "signatures"):
        return (f"hub_layer returned the loaded module itself ({kind}), which is not a Keras layer: wrap it in a "
                "Keras 3 layer that calls it and tracks its variables (section 5, 'TF Hub models in Keras 3')")
    return (f"hub_layer returned a {kind}, not a Keras 3 layer (keras.layers.Layer): see section 5, "
            "'TF Hub models in Keras 3'")


@exercise_check("13.3")
def check_hub_layer(hub_layer: Callable[[str], Any]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        case = make_hub_module(os.path.join(folder, "text_hub_module"))
        layer = hub_layer(os.path.join(folder, "text_hub_module"))
        require(isinstance(layer, keras.layers.Layer), _not_a_keras3_layer(layer))
        out = call_answer(lambda: layer(case["x"]), lambda error: (
            f"calling your layer on a batch of shape {case['x'].shape} raised {type(error).__name__}. "
            "A Hub module is called as module(x, training), through its __call__, not through a signature "
            "(section 5, 'TF Hub models in Keras 3')"), (TypeError, ValueError))
        if isinstance(out, dict) and len(out) == 1:
            (out,) = out.values()
        out = np.asarray(out)
        require(out.shape == case["expected"].shape and not np.allclose(out, case["expected"] + 1.0),
                "the layer answers like module(x, True): call the module with training=False")
        require(np.allclose(out, case["expected"], atol=1e-5), "the layer answers differently from "
                "module(x, False): call the loaded module itself (its __call__), with the input unchanged")
        trainable = [w.numpy() if hasattr(w, "numpy") else np.asarray(w) for w in layer.trainable_weights]
        require(trainable, "the layer has no trainable weights: Keras does not look inside the loaded "
                "object; track module.trainable_variables (TFSMLayer does), or keep a list of "
                "keras.Variable(initializer=v), one per variable")
        require(not any(np.allclose(case["frozen"], w) for w in trainable if w.shape == case["frozen"].shape),
                "the module's non-trainable variable is among the trainable weights: track only "
                "module.trainable_variables")
        require(_same_values(trainable, case["trainable"]), "the trainable weights are not the module's "
                f"{len(case['trainable'])} trainable variables (each once)")
        with tf.GradientTape() as tape:
            result = layer(tf.constant(case["x"]))
            result = result if not isinstance(result, dict) else list(result.values())[0]
            loss = tf.reduce_sum(result)
        gradients = tape.gradient(loss, layer.trainable_weights)
        require(all(g is not None for g in gradients), "a trainable weight gets no gradient through the layer: "
                "the layer must compute with the module's own variables, not copies")
    return "a Keras 3 layer answering like module(x, False), its trainable weights the module's, with gradients"
