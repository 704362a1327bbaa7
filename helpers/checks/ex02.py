"""Checks for the exercises of notebook 02 (meta-graph import).

The fixtures use names other than the chapter's (so an answer that hard-codes
``x:0`` or ``features/Relu:0`` fails), several variables with distinct
non-zero values (biases too), and decoys that look like the chapter's names.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require
from helpers.checks.toolkit import call_answer, calls_recorded, folder_files, require_array

V1 = tf.compat.v1

_W1 = np.array([[1.0, -2.0, 0.5], [0.5, 3.0, -1.0], [-1.0, 0.25, 2.0]], np.float32)
_B1 = np.array([0.5, -0.25, 1.5], np.float32)
_W2 = np.array([[2.0, -1.0], [-0.5, 1.5], [1.0, 0.75]], np.float32)
_B2 = np.array([0.25, -0.75], np.float32)
_X = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0], [2.0, 0.5, -1.0]], np.float32)


def _save_author_model(folder: str) -> str:
    """A two-layer model whose tensors are only findable through its collections.

    Its real input is 'pixels' and its real output 'scores/out'; a decoy
    placeholder 'x' and a decoy output 'logits' carry the chapter's names.
    """
    with tf.Graph().as_default():
        pixels = V1.placeholder(tf.float32, [None, 3], name="pixels")
        decoy_x = V1.placeholder_with_default(tf.zeros([1, 3]), [None, 3], name="x")
        zeros = V1.zeros_initializer()
        w1 = V1.get_variable("encoder/kernel", shape=[3, 3], initializer=zeros)
        b1 = V1.get_variable("encoder/bias", shape=[3], initializer=zeros)
        w2 = V1.get_variable("scores/kernel", shape=[3, 2], initializer=zeros)
        b2 = V1.get_variable("scores/bias", shape=[2], initializer=zeros)
        hidden = tf.nn.relu(tf.matmul(pixels, w1) + b1)
        out = tf.identity(tf.matmul(hidden, w2) + b2, name="scores/out")
        tf.identity(decoy_x[:, :2] * 0.0 - 1.0, name="logits")
        V1.add_to_collection("inputs", pixels)
        V1.add_to_collection("outputs", out)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run([w1.assign(_W1), b1.assign(_B1), w2.assign(_W2), b2.assign(_B2)])
            prefix = saver.save(sess, os.path.join(folder, "author"))
            # A newer checkpoint in the same folder, which the state file names: not the one given.
            sess.run([w1.assign(-_W1), b1.assign(-_B1), w2.assign(_W2 * 2), b2.assign(_B2 * 2)])
            saver.save(sess, os.path.join(folder, "author_retrained"), write_meta_graph=False)
            return prefix


def _expected(x: np.ndarray, sign: float = 1.0, scale: float = 1.0) -> np.ndarray:
    return np.maximum(x @ (sign * _W1) + sign * _B1, 0) @ (scale * _W2) + scale * _B2


def _session_graphs() -> contextlib.AbstractContextManager[list]:
    """Record the graph of every session run while the learner's function runs."""
    base_session = next(cls for cls in V1.Session.__mro__ if cls.__name__ == "BaseSession")
    return calls_recorded(base_session, "run", lambda session, *args, **kwargs: session.graph)


@exercise_check("02.1")
def check_run_from_collections(run_from_collections) -> str:
    earlier_graphs: list = []
    with tempfile.TemporaryDirectory() as folder:
        prefix = _save_author_model(folder)
        for x in (_X.copy(), _X[1:2].copy()):  # the second input is one row: np.squeeze would show
            before = folder_files(folder)
            with _session_graphs() as graphs:
                result = run_from_collections(prefix, x)
            after = folder_files(folder)
            _check_output(result, x, after == before)
            require(not any(graph is earlier for graph in graphs for earlier in earlier_graphs),
                    "a second call ran in the graph of the first: import the .meta into a new graph on "
                    "every call (`with tf.Graph().as_default():` inside the function).")
            earlier_graphs.extend(graphs)
    return ("found the input and output through their collections and ran the model restored from the "
            "prefix given, in a new graph on each of two calls")


def _check_output(result, x: np.ndarray, files_unchanged: bool) -> None:
    require(result is not None, "run_from_collections returned None: return what sess.run gives you")
    require(
        not isinstance(result, (tf.Tensor, tf.Operation)),
        "you returned a graph tensor, not its value: return sess.run(output_tensor, {input_tensor: x})",
    )
    require(files_unchanged, "your function changed the checkpoint's files: it should only read them")
    require(isinstance(result, np.ndarray),
            f"you returned a {type(result).__name__}: return the NumPy array that `sess.run(output, ...)` "
            "gives, as it is.")
    expected = _expected(x)  # float32, as the model computes
    require_array(
        result, expected,
        shape_hint=f"for x of shape {x.shape}, expected an array of shape {expected.shape}, got {result.shape}: "
                   "run the tensor from the 'outputs' collection, fed through the one in 'inputs', and return "
                   "it unreshaped",
        dtype_hint=f"the result is {result.dtype}; the model computes float32: return what `sess.run` gives, "
                   "unconverted.",
        mistakes=[
            (-1.0, "you ran a tensor called 'logits', which this model uses as a decoy: "
                   "find the output with V1.get_collection('outputs')[0]"),
            (0.0, "the weights look freshly initialized (all zeros): restore them with the Saver "
                  "that import_meta_graph returns, saver.restore(sess, prefix)"),
            (_expected(x, -1.0, 2.0), "you restored another checkpoint of the folder, the newest its state file "
                                      "names: restore `prefix` itself, the checkpoint you are given.", 1e-5),
        ],
        values_hint=f"expected {np.round(expected, 3).tolist()}, got {np.round(result, 3).tolist()}: feed x to "
                    "the placeholder from the 'inputs' collection and restore every variable",
    )


def _save_unit_model(folder: str) -> str:
    """y = x @ W + b, trained on inputs in [0, 1]; the placeholder is 'x', the output 'y'."""
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [None, 3], name="x")
        w = V1.get_variable("w", initializer=_W2)
        b = V1.get_variable("b", initializer=_B2)
        tf.add(tf.matmul(x, w), b, name="y")
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            saver.save(sess, os.path.join(folder, "unit"))
    return os.path.join(folder, "unit.meta")


def _decoy_model() -> None:
    """Another model already in the graph, under the look-alike scope 'net_old'.

    Its weights are constants: with variables under 'net_old', import_meta_graph's own
    Saver for an import under 'net' would be built for the wrong scope (a TensorFlow
    behaviour helpers.metagraph.import_scoped works around, beyond this exercise).
    """
    with tf.name_scope("net_old"):
        old_x = V1.placeholder(tf.float32, [None, 3], name="x")
        tf.add(tf.matmul(old_x, tf.constant(np.full((3, 2), 9.0, np.float32))), 0.0, name="y")


@exercise_check("02.2")
def check_import_with_new_input(import_with_new_input) -> str:
    raw_values = np.array([[255.0, 0.0, 51.0], [102.0, 204.0, 255.0]], np.float32)
    with tempfile.TemporaryDirectory() as folder:
        meta_path = _save_unit_model(folder)
        before = folder_files(folder)
        with tf.Graph().as_default() as graph:
            _decoy_model()
            raw = V1.placeholder(tf.float32, [None, 3], name="raw")
            earlier = {op.name for op in graph.get_operations()}
            answer = import_with_new_input(meta_path, raw)
            require(
                isinstance(answer, tuple) and len(answer) == 2,
                "return a pair: (the imported output tensor, the Saver import_meta_graph returned)",
            )
            y, saver = answer
            require(
                isinstance(y, tf.Tensor) and y.graph is graph,
                "the first item should be the output tensor of the graph you imported into "
                "(import into the default graph, then graph.get_tensor_by_name('net/y:0'))",
            )
            require(
                y.op.name not in earlier,
                f"your output {y.name!r} existed before your import, so it is not the imported "
                "model's: take that one by its full name, graph.get_tensor_by_name('net/y:0'), not by "
                "a suffix",
            )
            require(
                y.name.startswith("net/"),
                f"import under the scope 'net' (import_scope='net'); your output is named {y.name!r}",
            )
            require(isinstance(saver, V1.train.Saver), "the second item should be the Saver import_meta_graph returned")
            with V1.Session() as sess:
                call_answer(lambda: saver.restore(sess, meta_path[: -len(".meta")]),
                            "your Saver cannot restore the model's checkpoint (saved without a scope) into "
                            "net/: return the Saver that import_meta_graph returned, not a new one",
                            (tf.errors.NotFoundError, tf.errors.InvalidArgumentError, ValueError))
                result = call_answer(lambda: sess.run(y, {raw: raw_values}),
                                     "running the output needs a value for the old placeholder 'net/x': plug "
                                     "your tensor in its place with input_map={'x:0': raw / 255.0}",
                                     tf.errors.InvalidArgumentError)
        after = folder_files(folder)
    require(after == before, "your function changed the saved files: it should only read them")
    expected = raw_values / 255.0 @ _W2 + _B2
    require(
        not np.allclose(result, raw_values @ _W2 + _B2, atol=1e-4),
        "the model got the raw values: divide them by 255 before plugging them in",
    )
    require(
        np.allclose(result, expected, atol=1e-5),
        f"expected {np.round(expected, 3).tolist()}, got {np.round(result, 3).tolist()}: "
        "the model should read raw / 255.0 (a float division)",
    )
    return "the saved model reads raw / 255 through input_map under 'net', and its Saver restores it"


def _restored_part():
    """A restored part with two layers, a non-trainable scale, and distinct non-zero values."""
    inputs = V1.placeholder(tf.float32, [None, 3], name="pixels")
    with V1.variable_scope("encoder"):
        w1 = V1.get_variable("kernel", initializer=_W1)
        b1 = V1.get_variable("bias", initializer=_B1)
        scale = V1.get_variable("scale", initializer=np.float32(1.5), trainable=False)
        w2 = V1.get_variable("proj", initializer=np.concatenate([_W1, _W2], axis=1))
        b2 = V1.get_variable("proj_bias", initializer=np.linspace(-1.0, 1.0, 5).astype(np.float32))
        hidden = tf.nn.relu(tf.matmul(inputs, w1) + b1) * scale
        features = tf.nn.relu(tf.matmul(hidden, w2) + b2, name="codes")
    return inputs, features, [w1, b1, scale, w2, b2]


@exercise_check("02.3")
def check_add_frozen_head(add_frozen_head) -> str:
    n_features, n_classes = 5, 3
    with tf.Graph().as_default() as graph:
        V1.set_random_seed(0)
        inputs, features, restored = _restored_part()
        known = set(V1.global_variables())
        logits = add_frozen_head(features, n_classes)
        require(isinstance(logits, tf.Tensor) and logits.graph is graph, "add_frozen_head should return the logits tensor")
        require(
            logits.shape.as_list() == [None, n_classes],
            f"logits should have shape [None, {n_classes}], got {logits.shape.as_list()}",
        )
        head_vars = [v for v in V1.global_variables() if v not in known]
        shapes = sorted(v.shape.as_list() for v in head_vars)
        require(
            len(head_vars) == 2 and [n_classes] in shapes
            and ([n_features, n_classes] in shapes or [n_classes, n_features] in shapes),
            f"create exactly two new variables, a kernel [{n_features}, {n_classes}] (or "
            f"[{n_classes}, {n_features}] with transpose_b=True) and a bias [{n_classes}]; found {shapes}",
        )
        kernel, bias = sorted(head_vars, key=lambda v: -len(v.shape))
        require(
            all(v in V1.trainable_variables() for v in head_vars),
            "the head's variables should be trainable (leave trainable=True)",
        )
        loss = tf.reduce_sum(tf.square(logits))
        reached = [v.op.name for v, g in zip(restored, tf.gradients(loss, restored)) if g is not None]
        require(
            not reached,
            f"a gradient of the logits still reaches the restored variables {reached}: taking them out "
            "of trainable_variables or var_list does not stop it; build the head on tf.stop_gradient(features)",
        )
        require(
            all(g is not None for g in tf.gradients(loss, head_vars)),
            "the head's kernel or bias gets no gradient: apply tf.stop_gradient to the features only, "
            "and compute the logits from both head variables",
        )
        train = V1.train.GradientDescentOptimizer(0.01).minimize(loss)
        points = np.array([[1.0, 2.0, 0.5], [-1.0, 0.5, 2.0]], np.float32)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(bias.assign(np.array([0.5, -1.0, 2.0], np.float32)))  # a bias that shows
            got, feats, k, b = sess.run([logits, features, kernel, bias], {inputs: points})
            restored_before = sess.run(restored)
            head_before = sess.run(head_vars)
            for _ in range(3):
                sess.run(train, {inputs: points})
            restored_after = sess.run(restored)
            head_after = sess.run(head_vars)
    k = k if list(k.shape) == [n_features, n_classes] else k.T
    require(
        np.allclose(got, feats @ k + b, atol=1e-4),
        "the logits should be features @ kernel + bias, with no activation after them",
    )
    require(
        all(np.array_equal(a, b) for a, b in zip(restored_before, restored_after)),
        "training with minimize(loss) moved a restored variable",
    )
    require(
        any(not np.array_equal(a, b) for a, b in zip(head_before, head_after)),
        "training with minimize(loss) did not change the head",
    )
    return ("the logits are a dense layer on the features; no gradient reaches any of the five restored "
            "variables, and minimize(loss) trains only the head")


def _pretrained_keras_model() -> keras.Model:
    """A functional model with names other than the chapter's and non-zero biases."""
    keras.utils.set_random_seed(0)
    inputs = keras.Input((2,), name="signal")
    hidden = keras.layers.Dense(6, activation="tanh", name="encoder")(inputs)
    codes = keras.layers.Dense(4, activation="relu", name="mixer")(hidden)
    outputs = keras.layers.Dense(5, name="readout")(codes)
    model = keras.Model(inputs, outputs)
    for layer in model.layers[1:]:
        layer.bias.assign(np.linspace(0.1, 0.9, layer.bias.shape[0]).astype(np.float32))
    return model


@contextlib.contextmanager
def _input_structure_warning_ignored():
    """Silence Keras' warning for a model made with ``inputs=[tensor]`` (a list, as ``model.inputs``
    is) and called with one tensor: it is harmless, and not what the exercise is about."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The structure of `inputs` doesn't match", category=UserWarning)
        yield


@exercise_check("02.4")
def check_head_on_frozen_copy(head_on_frozen_copy) -> str:
    model = _pretrained_keras_model()
    cut, n_classes = "mixer", 3
    original_values = [w.numpy().copy() for w in model.weights]
    reference = keras.Model(model.inputs[0], model.get_layer(cut).output)
    x = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    expected_codes = reference(x).numpy()
    new = head_on_frozen_copy(model, cut, n_classes)
    require(isinstance(new, keras.Model), f"head_on_frozen_copy should return a keras.Model, got {type(new).__name__}")
    require(new is not model, "you returned the pretrained model itself: build a new one")
    require(
        all(layer.trainable for layer in model.layers),
        "the pretrained model's layers are frozen now: your frozen part shares them. Freeze a copy "
        "(keras.models.clone_model, then set_weights) and leave the original alone",
    )
    require(
        tuple(new.output_shape) == (None, n_classes),
        f"the new model's output should have shape (None, {n_classes}), got {new.output_shape}",
    )
    shared = {id(v) for v in new.weights} & {id(v) for v in model.weights}
    require(not shared, "the new model shares variables with the pretrained one: copy the layers, do not reuse them")
    trainable_shapes = sorted(tuple(w.shape) for w in new.trainable_weights)
    require(
        trainable_shapes != [(n_classes,), (5, n_classes)],
        f"the head sits on the old model's output: build it on the output of {cut!r}",
    )
    by_rank = sorted(trainable_shapes, key=len)  # the bias (n_classes,), then the kernel
    head_like = len(by_rank) == 2 and by_rank[0] == (n_classes,) and (
        len(by_rank[1]) == 2 and by_rank[1][1] == n_classes)
    require(
        not head_like or by_rank[1][0] == 4,
        f"your head reads {by_rank[1][0] if head_like else '?'} features, but {cut!r} outputs 4: "
        "cut at model.get_layer(layer_name), not at a fixed position",
    )
    require(
        trainable_shapes == [(n_classes,), (4, n_classes)],
        f"only the new head should be trainable (a (4, {n_classes}) kernel and a ({n_classes},) bias); "
        f"the trainable weights are {trainable_shapes}. Freeze the copied base with trainable = False",
    )
    kernel, bias = sorted(new.trainable_weights, key=lambda w: -len(w.shape))
    with _input_structure_warning_ignored():
        got = new(x).numpy()
    require(
        np.allclose(got, expected_codes @ kernel.numpy() + bias.numpy(), atol=1e-4),
        f"the frozen part does not compute what the pretrained model computes up to {cut!r}: copy the "
        "pretrained weights into it (set_weights(model.get_weights())), and cut at that layer",
    )
    new.compile(optimizer=keras.optimizers.SGD(0.1),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    frozen_before = [w.numpy().copy() for w in new.non_trainable_weights]
    head_before = [w.numpy().copy() for w in new.trainable_weights]
    with _input_structure_warning_ignored():
        for _ in range(3):
            new.train_on_batch(x, np.arange(8) % n_classes)
    require(
        all(np.array_equal(a, w.numpy()) for a, w in zip(original_values, model.weights)),
        "training the new model changed the pretrained model's weights",
    )
    require(
        all(np.array_equal(a, w.numpy()) for a, w in zip(frozen_before, new.non_trainable_weights)),
        "training moved the frozen part",
    )
    require(
        any(not np.array_equal(a, w.numpy()) for a, w in zip(head_before, new.trainable_weights)),
        "training did not change the head: is it trainable?",
    )
    return ("the frozen copy computes the pretrained layers' outputs, only the head trains, and the "
            "pretrained model is unchanged and still trainable")
