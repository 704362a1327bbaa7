"""Checks for the exercises of notebook 02 (meta-graph import)."""

from __future__ import annotations

import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

tf1 = tf.compat.v1

_W = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.25]], np.float32)
_B = np.array([0.5, -0.5], np.float32)
_X = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]], np.float32)


def _save_author_model(folder: str) -> str:
    """A model whose tensors are only findable through its collections.

    Its real input is 'pixels' and its real output 'scores/out'; a decoy
    'x' and 'logits' are there for code that hard-codes the notebook's names.
    """
    with tf.Graph().as_default():
        pixels = tf1.placeholder(tf.float32, [None, 3], name="pixels")
        decoy_x = tf1.placeholder_with_default(tf.zeros([1, 3]), [None, 3], name="x")
        w = tf1.get_variable("dense/kernel", shape=[3, 2], initializer=tf1.zeros_initializer())
        b = tf1.get_variable("dense/bias", shape=[2], initializer=tf1.zeros_initializer())
        out = tf.identity(tf.matmul(pixels, w) + b, name="scores/out")
        tf.identity(decoy_x[:, :2] * 0.0 - 1.0, name="logits")
        tf1.add_to_collection("inputs", pixels)
        tf1.add_to_collection("outputs", out)
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run([w.assign(_W), b.assign(_B)])
            return saver.save(sess, os.path.join(folder, "author"))


@exercise_check("02.1")
def check_run_from_collections(run_from_collections) -> str:
    with tempfile.TemporaryDirectory() as folder:
        prefix = _save_author_model(folder)
        result = run_from_collections(prefix, _X)
    require(result is not None, "run_from_collections returned None: return what sess.run gives you")
    result = np.asarray(result)
    expected = _X @ _W + _B
    require(
        result.shape == expected.shape,
        f"expected an array of shape {expected.shape}, got {result.shape}: "
        "run the tensor from the 'outputs' collection, fed through the one in 'inputs'",
    )
    require(
        not np.allclose(result, -1.0),
        "you ran a tensor called 'logits', which this model uses as a decoy: "
        "find the output with tf.compat.v1.get_collection('outputs')[0]",
    )
    require(
        not np.allclose(result, 0.0),
        "the weights look freshly initialized (all zeros): restore them with the Saver "
        "that import_meta_graph returns, saver.restore(sess, prefix)",
    )
    require(np.allclose(result, expected, atol=1e-5), f"expected {np.round(expected, 3)}, got {np.round(result, 3)}")
    return "found the input and output through their collections, and ran the restored model"


def _save_unit_model(folder: str) -> str:
    """y = x @ W + b, trained on inputs in [0, 1]; the placeholder is 'x', the output 'y'."""
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, [None, 3], name="x")
        w = tf1.get_variable("w", initializer=_W)
        b = tf1.get_variable("b", initializer=_B)
        tf.add(tf.matmul(x, w), b, name="y")
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, os.path.join(folder, "unit"))
    return os.path.join(folder, "unit.meta")


@exercise_check("02.2")
def check_import_with_new_input(import_with_new_input) -> str:
    raw_values = np.array([[255.0, 0.0, 51.0], [102.0, 204.0, 255.0]], np.float32)
    with tempfile.TemporaryDirectory() as folder:
        meta_path = _save_unit_model(folder)
        with tf.Graph().as_default() as graph:
            raw = tf1.placeholder(tf.float32, [None, 3], name="raw")
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
                y.name.startswith("net/"),
                f"import under the scope 'net' (import_scope='net'); your output is named {y.name!r}",
            )
            require(isinstance(saver, tf1.train.Saver), "the second item should be the Saver import_meta_graph returned")
            with tf1.Session() as sess:
                saver.restore(sess, meta_path[: -len(".meta")])
                try:
                    result = sess.run(y, {raw: raw_values})
                except tf.errors.InvalidArgumentError:
                    require(
                        False,
                        "running the output needs a value for the old placeholder 'net/x': plug your "
                        "tensor in its place with input_map={'x:0': raw / 255.0}",
                    )
    expected = raw_values / 255.0 @ _W + _B
    require(
        not np.allclose(result, raw_values @ _W + _B, atol=1e-4),
        "the model got the raw values: divide them by 255 before plugging them in",
    )
    require(np.allclose(result, expected, atol=1e-5), f"expected {np.round(expected, 3)}, got {np.round(result, 3)}")
    return "the saved model now reads raw / 255 through input_map, no placeholder to feed"


@exercise_check("02.3")
def check_add_frozen_head(add_frozen_head) -> str:
    n_features, n_classes = 4, 3
    with tf.Graph().as_default():
        tf1.set_random_seed(0)
        x = tf1.placeholder(tf.float32, [None, 2], name="x")
        base_w = tf1.get_variable("base/kernel", shape=[2, n_features])
        features = tf.nn.relu(tf.matmul(x, base_w), name="base/features")
        base_vars = set(tf1.trainable_variables())
        logits = add_frozen_head(features, n_classes)
        require(isinstance(logits, tf.Tensor), "add_frozen_head should return the logits tensor")
        require(
            logits.shape.as_list() == [None, n_classes],
            f"logits should have shape [None, {n_classes}], got {logits.shape.as_list()}",
        )
        head_vars = [v for v in tf1.trainable_variables() if v not in base_vars]
        require(
            sorted(v.shape.as_list() for v in head_vars) == [[n_classes], [n_features, n_classes]],
            "create exactly two new trainable variables, a kernel of shape "
            f"[{n_features}, {n_classes}] and a bias of shape [{n_classes}]; found "
            f"{[v.shape.as_list() for v in head_vars]}",
        )
        loss = tf.reduce_sum(logits)
        require(
            tf.gradients(loss, [base_w])[0] is None,
            "the restored part still gets a gradient: build the head on tf.stop_gradient(features)",
        )
        require(
            all(g is not None for g in tf.gradients(loss, head_vars)),
            "the head's variables get no gradient: the logits must be computed from them",
        )
        kernel, bias = sorted(head_vars, key=lambda v: len(v.shape))[::-1]
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            points = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
            got, feats, k, b = sess.run([logits, features, kernel, bias], {x: points})
    require(np.allclose(got, feats @ k + b, atol=1e-5), "logits should be features @ kernel + bias")
    return "the head trains, and no gradient reaches the restored features"


def _pretrained_keras_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((2,)),
            keras.layers.Dense(6, activation="relu", name="features"),
            keras.layers.Dense(5, name="old_head"),
        ]
    )


@exercise_check("02.4")
def check_head_on_frozen_base(head_on_frozen_base) -> str:
    model = _pretrained_keras_model()
    features = model.get_layer("features")
    before = [w.numpy().copy() for w in features.weights]
    new = head_on_frozen_base(model, "features", 3)
    require(isinstance(new, keras.Model), "head_on_frozen_base should return a keras.Model")
    require(
        tuple(new.output_shape) == (None, 3),
        f"the new model's output should have shape (None, 3), got {new.output_shape}",
    )
    trainable_shapes = sorted(tuple(w.shape) for w in new.trainable_weights)
    require(
        trainable_shapes != [(3,), (5, 3)],
        "the head sits on the old model's output: build it on model.get_layer('features').output",
    )
    require(
        trainable_shapes == [(3,), (6, 3)],
        "only the new head should be trainable (a (6, 3) kernel and a (3,) bias); the trainable "
        f"weights are {trainable_shapes}. Freeze the base with base.trainable = False",
    )
    x = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    y = np.arange(8) % 3
    new.compile(optimizer=keras.optimizers.SGD(0.1), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    head_before = [w.numpy().copy() for w in new.trainable_weights]
    for _ in range(3):
        new.train_on_batch(x, y)
    after = [w.numpy() for w in features.weights]
    require(all(np.array_equal(a, b) for a, b in zip(before, after)), "training the new model moved the base's weights")
    require(
        any(not np.array_equal(a, w.numpy()) for a, w in zip(head_before, new.trainable_weights)),
        "training did not change the head: is it trainable?",
    )
    return "only the new head trains; the base's weights did not move"
