"""Checks for notebook 09 (SavedModel and export).

Each check writes its own SavedModels and models in a fresh temporary folder,
with names other than the notebook's, calls the learner's function, and says
what is wrong when the answer is not right.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, quote, require
from helpers.checks.toolkit import call_answer, files_unchanged, folder_files, require_array

V1 = tf.compat.v1

__all__ = [
    "check_call_serving_default",
    "check_run_tf1_signature",
    "check_export_for_serving",
    "check_frozen_base_with_head",
    "check_shares_variables",
]


# --------------------------------------------------------------------------- 09.1


class _Affine(tf.Module):
    """y = x @ w + b, with a non-trainable offset; its signature's keys are chosen by the check."""

    def __init__(self, n_in: int, n_out: int, seed: int) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = tf.Variable(rng.normal(size=(n_in, n_out)).astype("float32"), name="w")
        self.b = tf.Variable(rng.uniform(0.5, 1.5, size=(n_out,)).astype("float32"), name="b")
        self.offset = tf.Variable(0.25, trainable=False, name="offset")

    def answer(self, x):
        return tf.matmul(x, self.w) + self.b + self.offset


def _affine_saved_model(
    folder: str, seed: int, input_key: str, output_key: str, n_in: int = 3, n_out: int = 2
) -> _Affine:
    """serving_default answers; signatures whose names sort before and after it answer something else."""
    module = _Affine(n_in, n_out, seed)
    serve = tf.function(lambda x: {output_key: module.answer(x)}).get_concrete_function(
        tf.TensorSpec([None, n_in], tf.float32, name=input_key)
    )
    other = tf.function(lambda x: {output_key: 2.0 * module.answer(x) - 1.0}).get_concrete_function(
        tf.TensorSpec([None, n_in], tf.float32, name=input_key)
    )
    zeros = tf.function(lambda x: {"other": 0.0 * module.answer(x)}).get_concrete_function(
        tf.TensorSpec([None, n_in], tf.float32, name="x")
    )
    tf.saved_model.save(module, folder, signatures={"serving_default": serve, "embed": other, "zeros": zeros})
    return module


@exercise_check("09.1")
def check_call_serving_default(call_serving_default: Callable[[str, np.ndarray], np.ndarray]) -> str:
    cases = [("measurements", "probability", 3, 2), ("x_in", "output_0", 4, 1)]  # one output column
    with tempfile.TemporaryDirectory() as scratch:
        for seed, (input_key, output_key, n_in, n_out) in enumerate(cases, start=1):
            folder = os.path.join(scratch, f"exported_{seed}")
            module = _affine_saved_model(folder, seed, input_key, output_key, n_in, n_out)
            batch = np.linspace(-1.0, 1.0, 2 * n_in).reshape(2, n_in)  # float64, as NumPy makes it
            expected = module.answer(tf.constant(batch, tf.float32)).numpy()
            with files_unchanged(folder, "the SavedModel folder changed: your function should only load it and "
                                         "call it"):
                result = call_serving_default(folder, batch)
                if isinstance(result, dict):
                    require(
                        False,
                        f"call_serving_default returned a dict ({sorted(result)}); return the one output's value, "
                        f"result[{output_key!r}], as a NumPy array",
                    )
                require(
                    isinstance(result, np.ndarray),
                    f"call_serving_default returned a {type(result).__name__}; return a NumPy array "
                    "(a tensor's .numpy())",
                )
                require_array(
                    result, expected,
                    shape_hint=f"for the SavedModel with input {input_key!r} and output {output_key!r}, you "
                               f"returned shape {result.shape}, the signature answers {expected.shape}: return the "
                               "output as it is (no squeeze)",
                    values_hint=f"for the SavedModel with input {input_key!r} and output {output_key!r}, your "
                                "values are not the serving_default signature's answer: call "
                                "loaded.signatures['serving_default'] by that name, not another signature")
    return "serving_default of two SavedModels with other keys; folders unchanged"


# --------------------------------------------------------------------------- 09.2


def _tf1_saved_model(folder: str, factor: float = 1.0, shift: float = 0.0, sign: float = 1.0) -> dict:
    """A TF1 SavedModel with two meta graphs whose serving_default signatures name their outputs differently.

    ``factor`` and ``shift`` change the variables' values, ``sign`` the ops (``sign * b``): a second model
    with the same names. Returns the expected outputs per tag-set for the feeds the check uses.
    """
    kernel = factor * np.arange(1, 7, dtype="float32").reshape(3, 2) / 4.0
    bias = np.array([0.5, -1.5], dtype="float32") + np.float32(shift)
    with tf.Graph().as_default():
        with V1.variable_scope("net"):
            x = V1.placeholder(tf.float32, [None, 3], name="x")
            scale = V1.placeholder(tf.float32, [], name="scale")
            w = V1.get_variable("w", initializer=kernel)
            b = V1.get_variable("b", initializer=bias)
            logits = tf.identity(scale * tf.matmul(x, w) + (b if sign > 0 else -b), name="logits")
            probs = tf.nn.softmax(logits, name="probs")
            # a signature that is not float32: an int64 id beyond float32's integers, a float64 below its step
            ids = V1.placeholder(tf.int64, [None], name="item_id")
            amount = V1.placeholder(tf.float64, [None], name="amount")
            next_id = tf.identity(ids + 1, name="next_id")
            excess = tf.identity(amount - 1.0, name="excess")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            builder = V1.saved_model.Builder(folder)
            serve = V1.saved_model.predict_signature_def(
                {"pixels": x, "scale": scale}, {"scores": logits, "probabilities": probs})
            edge = V1.saved_model.predict_signature_def(
                {"pixels": x, "scale": scale}, {"score_1": logits, "score_10": probs})
            # a signature whose name sorts before serving_default, with the same keys and other values
            crossed = V1.saved_model.predict_signature_def(
                {"pixels": x, "scale": scale}, {"scores": probs, "probabilities": logits})
            crossed_edge = V1.saved_model.predict_signature_def(
                {"pixels": x, "scale": scale}, {"score_1": probs, "score_10": logits})
            builder.add_meta_graph_and_variables(
                sess, ["serve"], signature_def_map={"serving_default": serve, "classify": crossed})
            builder.add_meta_graph(
                ["serve", "edge"], signature_def_map={"serving_default": edge, "classify": crossed_edge})
            lookup = V1.saved_model.predict_signature_def(
                {"item_id": ids, "amount": amount}, {"next_id": next_id, "excess": excess})
            builder.add_meta_graph(["serve", "lookup"], signature_def_map={"serving_default": lookup})
            builder.save()
    batch = np.array([[1.0, -2.0, 0.5], [0.0, 1.5, 2.0]], dtype="float32")
    answer = 2.0 * batch @ kernel + sign * bias
    soft = np.exp(answer - answer.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    return {
        ("serve",): ({"pixels": batch, "scale": np.float32(2.0)}, {"scores": answer, "probabilities": soft}),
        ("serve", "edge"): ({"pixels": batch[:1], "scale": np.float32(2.0)},  # one example: a size-1 axis
                            {"score_1": answer[:1], "score_10": soft[:1]}),
        ("serve", "lookup"): ({"item_id": np.array([2**25 + 1, 7], np.int64),
                               "amount": np.array([1.0 + 1e-9, 2.5])},
                              {"next_id": np.array([2**25 + 2, 8], np.int64),
                               "excess": np.array([1.0 + 1e-9, 2.5]) - 1.0}),
    }


@exercise_check("09.2")
def check_run_tf1_signature(run_tf1_signature: Callable[[str, list, dict], dict]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        # two SavedModels with the same names and other values, one after the other: a graph or session
        # kept between calls answers the second with the first one's variables
        first = _tf1_saved_model(os.path.join(scratch, "tf1_net"))
        _check_tf1_model(run_tf1_signature, os.path.join(scratch, "tf1_net"), first, None)
        second = _tf1_saved_model(os.path.join(scratch, "tf1_net_v2"), factor=-0.5, shift=1.0, sign=-1.0)
        _check_tf1_model(run_tf1_signature, os.path.join(scratch, "tf1_net_v2"), second, first)
    return "both tag-sets ('serve'; 'serve', 'edge') ran, every output key returned"


def _check_tf1_model(run_tf1_signature: Callable[[str, list, dict], dict], folder: str, cases: dict,
                     earlier: dict | None) -> None:
    """Run every tag-set of one SavedModel through the answer; ``earlier``: the model the answer ran before."""
    before = folder_files(folder)
    global_graph = V1.get_default_graph()  # the process-wide graph, outside any `with graph.as_default()`
    ops_before = len(global_graph.get_operations())
    for tags, (feeds, expected) in cases.items():
        result = run_tf1_signature(folder, list(tags), dict(feeds))
        require(
            len(global_graph.get_operations()) == ops_before,
            "your function loaded the meta graph into the process-wide default graph (a V1.Session() "
            "with no graph of its own): use `with tf.Graph().as_default(), V1.Session() as sess:`",
        )
        require(
            isinstance(result, dict),
            f"run_tf1_signature returned a {type(result).__name__}; return a dict from each output key "
            f"of the signature to its value (for tags {list(tags)}: {sorted(expected)})",
        )
        require(
            sorted(result) == sorted(expected),
            f"for the tag-set {list(tags)} you returned the keys {sorted(result)}; the serving_default "
            f"signature of that meta graph has the output keys {sorted(expected)}. Load the meta graph "
            "with the tags you were given, and key the result by signature.outputs' keys",
        )
        for key, value in expected.items():
            require(
                isinstance(result[key], np.ndarray),
                f"the value of {key!r} is a {type(result[key]).__name__}, not a NumPy array: convert "
                "each tensor with .numpy() (sess.run returns arrays already)",
            )
            got = result[key]
            require(
                got.shape == value.shape,
                f"for the tag-set {list(tags)}, the output {key!r} has shape {got.shape}, the signature "
                f"gives {value.shape}: return the values as they come (no squeeze)",
            )
            if value.dtype != np.float32:  # the int64 and float64 signature: exact values, the signature's dtype
                require(got.dtype == value.dtype and np.array_equal(got, value),
                        f"for the tag-set {list(tags)}, the output {key!r} "
                        + (f"is {got.dtype}, the signature gives {value.dtype}" if got.dtype != value.dtype
                           else f"differs in its last digits (the signature's {value.dtype} is exact)")
                        + ": feed each input in its signature's dtype (inputs[key].dtype), not cast to float32")
                continue
            require(earlier is None or np.allclose(got, value, atol=1e-5), Hint(
                f"a second SavedModel (the same names, other values and ops) gave a wrong {key!r}, the first a "
                "right one: what your function keeps between calls still holds the first model (section 4, "
                "'The TF1 way')",
                "make a new tf.Graph() and Session inside the function, on every call", kind="kept graph"))
            require(
                np.allclose(got, value, atol=1e-5),
                f"for the tag-set {list(tags)}, the output {key!r} does not hold the signature's value: "
                "run signature_def['serving_default'] by name (not another signature), fetching "
                "signature.outputs[key].name with every input of signature.inputs fed",
            )
    require(folder_files(folder) == before, "the SavedModel folder changed: only load it and run it")


# --------------------------------------------------------------------------- 09.3


def _keras_model(n_features: int, seed: int) -> keras.Model:
    """BatchNormalization with its own statistics and Dropout: training=True answers differently."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((n_features,), name="raw")
    hidden = keras.layers.Dense(4, activation="tanh", bias_initializer="ones", name="body")(inputs)
    norm = keras.layers.BatchNormalization(name="body_bn")
    hidden = keras.layers.Dropout(0.4, name="body_drop")(norm(hidden))
    outputs = keras.layers.Dense(3, bias_initializer=keras.initializers.Constant(0.5), name="probs")(hidden)
    model = keras.Model(inputs, outputs)
    norm.moving_mean.assign(np.linspace(0.2, 0.8, 4).astype("float32"))
    norm.moving_variance.assign(np.linspace(1.5, 3.0, 4).astype("float32"))
    return model


@exercise_check("09.3")
def check_export_for_serving(export_for_serving: Callable[[keras.Model, str, int], Any]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        for n_features, seed in ((5, 11), (2, 12)):
            model = _keras_model(n_features, seed)
            weights = [w.numpy().copy() for w in model.weights]
            folder = os.path.join(scratch, f"serving_{n_features}")
            export_for_serving(model, folder, n_features)
            require(
                os.path.isfile(os.path.join(folder, "saved_model.pb")),
                f"no saved_model.pb in the folder you were given: write the SavedModel into path itself "
                f"(for the model with {n_features} inputs)",
            )
            loaded = tf.saved_model.load(folder)
            require(
                "serving_default" in loaded.signatures,
                f"the SavedModel has the signatures {sorted(loaded.signatures)} but no 'serving_default': "
                "name the endpoint (or the signature) serving_default",
            )
            signature = loaded.signatures["serving_default"]
            inputs = signature.structured_input_signature[1]
            require(
                sorted(inputs) == ["features"],
                f"serving_default takes the input key(s) {sorted(inputs)}; it must take exactly one, 'features'. "
                "model.export and tf.saved_model.save choose the names themselves: give the TensorSpec "
                "name='features' (or the function's argument that name)",
            )
            spec = inputs["features"]
            require(
                spec.dtype == tf.float32,
                f"the input 'features' is {spec.dtype.name}; it must be float32",
            )
            require(
                tuple(spec.shape.as_list()) == (None, n_features),
                f"the input 'features' has shape {tuple(spec.shape.as_list())}; for a model with {n_features} "
                f"inputs it must be (None, {n_features}): a batch of any size, and use n_features",
            )
            outputs = signature.structured_outputs
            require(
                isinstance(outputs, dict) and sorted(outputs) == ["scores"],
                f"serving_default returns the output key(s) {sorted(outputs) if isinstance(outputs, dict) else outputs}; "
                "it must return exactly one, 'scores': return the dict {'scores': model(features)}",
            )
            batch = np.linspace(-2.0, 2.0, 3 * n_features, dtype="float32").reshape(3, n_features)
            answer = signature(features=tf.constant(batch))["scores"].numpy()
            require(
                np.allclose(answer, model(batch).numpy(), atol=1e-5),
                "the 'scores' output does not match the model's answer on the same batch: serve model(features) "
                "in inference mode (not training=True, which uses batch statistics and Dropout)",
            )
            require(
                all(np.array_equal(old, w.numpy()) for old, w in zip(weights, model.weights)),
                "the model's weights changed while exporting: export it as it is, without training or resetting it",
            )
    return "in 'features' (float32, (None, n)), out 'scores' = model(x); n = 5 and 2"


# --------------------------------------------------------------------------- 09.4


def _base_saved_model(folder: str, n_inputs: int, endpoint: str) -> keras.Model:
    keras.utils.set_random_seed(21)
    inputs = keras.Input((n_inputs,), name="signal")
    first = keras.layers.Dense(5, activation="relu", bias_initializer=keras.initializers.Constant(0.3), name="enc_1")
    second = keras.layers.Dense(3, bias_initializer=keras.initializers.Constant(-0.2), name="enc_10")
    base = keras.Model(inputs, second(first(inputs)))
    archive = keras.export.ExportArchive()
    archive.track(base)
    archive.add_endpoint(endpoint, base, input_signature=[tf.TensorSpec([None, n_inputs], tf.float32, name="signal")])
    archive.add_endpoint("serve", lambda signal: 0.0 * base(signal),
                         input_signature=[tf.TensorSpec([None, n_inputs], tf.float32, name="signal")])
    archive.write_out(folder, verbose=False)
    return base


def _require_float32_input(model: keras.Model, n_inputs: int) -> None:
    """The model's declared input (if any) is float32 of shape (None, n_inputs); float64 data (NumPy's default)
    gets the answer the same data gets in float32."""
    try:
        inputs = list(model.inputs)
    except (AttributeError, ValueError):  # a model built on its first call declares none
        inputs = []
    found = [(str(i.dtype), tuple(i.shape)) for i in inputs]
    require(not found or found == [("float32", (None, n_inputs))],  # a subclassed model declares none
            f"the model's inputs are {found}: it should take one float32 input of shape (None, {n_inputs}), "
            f"e.g. keras.Input(({n_inputs},)), whatever dtype the data comes in")
    data = np.random.default_rng(4).normal(size=(3, n_inputs))  # float64
    got = call_answer(lambda: np.asarray(model(data)), lambda error: (
        f"the model fails on float64 data (NumPy's default): {quote(error, 80)}. Its "
        "keras.Input should be float32, so that Keras casts what comes in"), (TypeError, ValueError))
    require(np.allclose(got, np.asarray(model(data.astype("float32"))), atol=1e-5),
            "the model answers float64 data differently from the same data in float32: cast inputs to float32")


def _build_head_model(frozen_base_with_head: Callable, folder: str, endpoint: str, n_inputs: int,
                      units: int) -> Any:
    """The learner's model; a TFSMLayer refusing the model's input (another width) gets the input's hint."""
    def refused_input(error: Exception) -> str | None:
        if "Can not cast TensorSpec" not in str(error):
            return None
        found = re.search(r"Can not cast TensorSpec\(shape=(\([^)]*\))", str(error))
        return (f"the TFSMLayer refused your model's input of shape {found.group(1) if found else '?'}: "
                f"it should be one float32 input of shape (None, {n_inputs}), keras.Input((n_inputs,)) "
                "with the n_inputs you were given")

    return call_answer(lambda: frozen_base_with_head(folder, endpoint, n_inputs, units), refused_input,
                       (TypeError, ValueError))


@exercise_check("09.4")
def check_frozen_base_with_head(frozen_base_with_head: Callable[[str, str, int, int], keras.Model]) -> str:
    n_inputs, units, endpoint = 6, 2, "encode"
    with tempfile.TemporaryDirectory() as scratch:
        folder = os.path.join(scratch, "encoder")
        original = _base_saved_model(folder, n_inputs, endpoint)
        model = _build_head_model(frozen_base_with_head, folder, endpoint, n_inputs, units)
        require(isinstance(model, keras.Model), f"frozen_base_with_head should return a keras.Model, got {type(model).__name__}")
        bases = [layer for layer in model.layers if isinstance(layer, keras.layers.TFSMLayer)]
        require(len(bases) == 1, f"the model should hold one keras.layers.TFSMLayer for the SavedModel; it holds {len(bases)}")
        base = bases[0]
        require(
            not getattr(model, "compiled", False) and getattr(model, "optimizer", None) is None,
            "the model is compiled: the exercise says not to compile it (whoever trains it chooses the "
            "optimizer and loss)",
        )
        require(
            base.call_endpoint == endpoint,
            f"the TFSMLayer calls the endpoint {base.call_endpoint!r}; use the endpoint you were given ({endpoint!r})",
        )
        _require_float32_input(model, n_inputs)
        x = np.random.default_rng(3).normal(size=(64, n_inputs)).astype("float32")
        out = model(x[:2])
        require(
            tuple(out.shape) == (2, units),
            f"the model answers with shape {tuple(out.shape)} for 2 examples; with a Dense({units}) head it should be (2, {units})",
        )
        heads = [layer for layer in model.layers if layer.weights and layer is not base]
        require(
            len(heads) == 1 and type(heads[0]) is keras.layers.Dense and heads[0].units == units,
            f"after the TFSMLayer the model should hold one new Dense({units}) layer and nothing else with "
            f"weights; it holds {[type(layer).__name__ for layer in heads]}",
        )
        head = heads[0]
        features = base(x[:8])
        features = next(iter(features.values())) if isinstance(features, dict) else features
        linear = np.asarray(features) @ head.kernel.numpy() + head.bias.numpy()
        require(
            np.allclose(np.asarray(model(x[:8])), linear, atol=1e-5),
            f"the model's answer is not Dense({units}) of the base's output: the head has no activation "
            "(the default, linear), and nothing comes between the TFSMLayer and it",
        )
        require(not any(w is v for w in model.trainable_weights for v in base.weights), Hint(
            "the SavedModel's weights are in model.trainable_weights: an optimizer or a regularizer still "
            "reaches them. Freeze the layer itself (section 6, 'Keras 3: TFSMLayer instead of load_model')",
            "TFSMLayer is trainable by default: pass trainable=False", kind="base trainable"))
        base_before = [w.numpy().copy() for w in base.weights]
        head_weights = [w for w in model.trainable_weights if not any(w is v for v in base.weights)]
        require(
            len(head_weights) >= 2,
            "the model has no trainable head: add a new keras.layers.Dense(units) after the TFSMLayer, trainable",
        )
        head_before = [w.numpy().copy() for w in head_weights]
        model.compile(keras.optimizers.SGD(0.05), "mse")
        model.fit(x, x[:, :units] * 2.0 + 1.0, epochs=2, batch_size=16, verbose=0)
        require(all(np.array_equal(old, w.numpy()) for old, w in zip(base_before, base.weights)), Hint(
            "training changed the SavedModel's weights: the base must be frozen (section 6, 'Keras 3: "
            "TFSMLayer instead of load_model')",
            "TFSMLayer is trainable by default: pass trainable=False", kind="base trainable"))
        require(
            any(not np.array_equal(old, w.numpy()) for old, w in zip(head_before, head_weights)),
            "training did not change the head: the new Dense layer must stay trainable",
        )
        require(
            np.allclose(base(x[:3]).numpy(), original(x[:3]).numpy(), atol=1e-5),
            "the base does not answer like the SavedModel's endpoint",
        )
        # the same path again, another endpoint: a layer kept between calls answers the old endpoint
        again = _build_head_model(frozen_base_with_head, folder, "serve", n_inputs, units)
        layers = [layer for layer in getattr(again, "layers", []) if isinstance(layer, keras.layers.TFSMLayer)]
        require(
            len(layers) == 1 and layers[0] is not base and layers[0].call_endpoint == "serve",
            "a second call with the same path and the endpoint 'serve' did not get a new TFSMLayer at 'serve': "
            "build the layer on every call (nothing kept between calls, no cache by path)",
        )
    return f"TFSMLayer at {endpoint!r} under a Dense({units}) head; training changed only the head"


# --------------------------------------------------------------------------- 09.5


class _Held:
    """An object with a given ``.variables`` list."""

    def __init__(self, variables: list) -> None:
        self.variables = list(variables)


def _twin(variable: tf.Variable) -> tf.Variable:
    """A second Python variable object over the same resource as ``variable`` (as two graphs' ops with
    one shared_name are, in chapters 03 and 04): ``twin is variable`` is False, yet they share state."""
    from tensorflow.python.ops import resource_variable_ops

    return resource_variable_ops.BaseResourceVariable(
        handle=variable.handle, shape=variable.shape, dtype=variable.dtype, trainable=variable.trainable,
        handle_name=variable.name.split(":")[0], unique_id=f"{variable._unique_id}_twin", in_graph_mode=False)


class _Net(tf.__internal__.tracking.AutoTrackable):
    """Three variables in ``.variables``: a kernel, a bias and a non-trainable int64 counter, all non-zero.

    ``.variables`` is a saved attribute, so the objects ``tf.saved_model.load`` returns have it too.
    """

    def __init__(self, seed: int, kernel=None, bias=None, step=None) -> None:
        rng = np.random.default_rng(seed)
        if kernel is None:
            kernel = tf.Variable(rng.normal(size=(2, 3)).astype("float32") + 1.0, name="kernel")
        if bias is None:
            bias = tf.Variable(rng.uniform(0.5, 1.5, size=(3,)).astype("float32"), name="bias")
        if step is None:
            step = tf.Variable(7 + seed, dtype=tf.int64, trainable=False, name="step")
        self.variables = [kernel, bias, step]


def _snapshot(*objects) -> list[list[np.ndarray]]:
    return [[v.numpy().copy() for v in obj.variables] for obj in objects]


@exercise_check("09.5")
def check_shares_variables(shares_variables: Callable[[Any, Any], bool]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        folder = os.path.join(scratch, "net_1")
        saved = _Net(1)
        tf.saved_model.save(saved, folder)
        copy_a, copy_b = tf.saved_model.load(folder), tf.saved_model.load(folder)
        owner = _Net(2)
        twins = _Net(8)
        zero_bias = tf.Variable(np.zeros(3, "float32"), name="bias")
        cases = [
            ("two loads of one SavedModel (equal values, separate variables)", copy_a, copy_b, False),
            ("one loaded object passed twice", copy_a, copy_a, True),
            ("two objects that share only their bias", owner, _Net(3, bias=owner.variables[1]), True),
            ("two objects that share only their int64 step counter (not trainable)", owner, _Net(4, step=owner.variables[2]), True),
            ("two unrelated objects", _Net(5), _Net(6), False),
            ("two objects whose variables are distinct Python objects over the same resources", twins,
             _Held([_twin(v) for v in twins.variables]), True),
            ("two objects that share only a bias holding zeros", _Net(9, bias=zero_bias),
             _Net(10, bias=zero_bias), True),
        ]
        for what, first, second, expected in cases:
            before = _snapshot(first, second)
            answer = shares_variables(first, second)
            require(
                isinstance(answer, (bool, np.bool_)),
                f"shares_variables should return True or False, got {answer!r} for {what}",
            )
            if expected:
                require(
                    bool(answer),
                    f"for {what} you returned False, but writing into first changes second. Check every "
                    "variable in .variables (the non-trainable ones too): assign a value unlike the old one, "
                    "and read back",
                )
            else:
                require(
                    not bool(answer),
                    f"for {what} you returned True, but they share nothing. Equal values are not shared "
                    "variables: assign a new value to first's variable and see whether second's changes",
                )
            after = _snapshot(first, second)
            differences = [
                float(np.max(np.abs(old.astype("float64") - new.astype("float64")), initial=0.0))
                for old_list, new_list in zip(before, after)
                for old, new in zip(old_list, new_list)
            ]
            require(
                max(differences) == 0.0 or max(differences) > 1e-3,
                f"after your function ran on {what}, a value is off by {max(differences):.1e}: adding then "
                "subtracting does not give back the same float. Keep a copy of each old value and assign it back",
            )
            require(
                max(differences) == 0.0,
                f"after your function ran on {what}, some variable kept the value you wrote: put every old value back",
            )
    return "7 pairs measured, shared bias and int64 counter included; values restored"
