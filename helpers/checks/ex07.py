"""Checks for notebook 07 (migrating checkpoints between TF1 and TF2).

The checks use the notebook's two versions of one small network: the TF1
graph code (``build_tf1_mlp``: scopes ``layer1`` and ``layer2``, variables
``weights`` and ``biases``) and its Keras 3 rewrite (``make_keras_mlp``).
Their fixtures give every variable distinct non-zero values (biases too),
hold an optimizer's state beside the weights, use a model name other than
the notebook's, and verify that the files and models they hand in are left
as they were.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, quote, require
from helpers.checks.toolkit import call_answer, files_unchanged, must_raise
from helpers.migration import checkpoint_format, restore_name_based

__all__ = [
    "TF1_NAMES",
    "build_tf1_mlp",
    "check_export_for_tf1",
    "check_load_any",
    "check_tf1_name_map",
    "make_keras_mlp",
]

V1 = tf.compat.v1
TF1_NAMES = ["layer1/biases", "layer1/weights", "layer2/biases", "layer2/weights"]
X = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 1.0]], dtype=np.float32)


def build_tf1_mlp(x: tf.Tensor) -> tf.Tensor:
    """The TF1 network: 2 inputs, 8 ReLU units, 1 output (call inside a tf.Graph)."""
    with V1.variable_scope("layer1"):
        w1 = V1.get_variable("weights", [2, 8])
        b1 = V1.get_variable("biases", [8], initializer=V1.zeros_initializer())
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    with V1.variable_scope("layer2"):
        w2 = V1.get_variable("weights", [8, 1])
        b2 = V1.get_variable("biases", [1], initializer=V1.zeros_initializer())
    return tf.matmul(hidden, w2) + b2


def make_keras_mlp(name: str | None = None) -> keras.Sequential:
    """The same network in Keras 3, built."""
    return keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(8, activation="relu", name="layer1"), keras.layers.Dense(1, name="layer2")],
        name=name,
    )


def _tf1_checkpoint(folder: str, seed: int = 3, prefix: str = "tf1/model",
                    meta: bool = True) -> tuple[str, np.ndarray]:
    """A TF1 training checkpoint (Adam slots, a global step, distinct non-zero biases) and its answers on X."""
    with tf.Graph().as_default():
        V1.set_random_seed(seed)
        x = tf.constant(X)
        y = build_tf1_mlp(x)
        step = V1.train.get_or_create_global_step()
        train = V1.train.AdamOptimizer(0.01).minimize(tf.reduce_mean(y ** 2), global_step=step)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for scope in ("layer1", "layer2"):
                bias = V1.global_variables(f"{scope}/biases")[0]
                sess.run(bias.assign(np.linspace(0.2, 0.9, bias.shape[0]).astype(np.float32)))
            sess.run(train)
            answers = sess.run(y)
            path = saver.save(sess, os.path.join(folder, prefix), global_step=step, write_meta_graph=meta)
    return path, answers


def _tf1_answers(ckpt_path: str) -> np.ndarray:
    """Restore ``ckpt_path`` into the TF1 graph code with a plain Saver, and run it on X."""
    with tf.Graph().as_default():
        V1.set_random_seed(0)  # the initializers are random ops, even if restore replaces them
        y = build_tf1_mlp(tf.constant(X))
        with V1.Session() as sess:
            V1.train.Saver().restore(sess, ckpt_path)
            return sess.run(y)


def _trained_keras(seed: int, name: str | None = None) -> keras.Sequential:
    keras.utils.set_random_seed(seed)
    model = make_keras_mlp(name)
    for layer in model.layers:
        layer.bias.assign(np.linspace(0.3, 0.8, layer.bias.shape[0]).astype(np.float32) * (seed % 5 + 1))
    return model


def _reference_map(model: keras.Sequential) -> dict:
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel, "layer2/biases": l2.bias}


def _same_weights(model: keras.Model, values: list[np.ndarray]) -> bool:
    return all(np.array_equal(v.numpy(), w) for v, w in zip(model.weights, values))


@exercise_check("07.1")
def check_tf1_name_map(tf1_name_map: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, answers = _tf1_checkpoint(folder)
        model = make_keras_mlp(name="another_mlp")
        name_map = tf1_name_map(model)
        require(isinstance(name_map, dict), f"tf1_name_map should return a dict, got {type(name_map).__name__}")
        keys = sorted(map(str, name_map))
        extra, missing = sorted(set(keys) - set(TF1_NAMES)), sorted(set(TF1_NAMES) - set(keys))
        require(
            keys == TF1_NAMES,
            f"the keys should be exactly the TF1 names {TF1_NAMES}; "
            + (f"{extra[:1]} is not one" if extra else f"{missing} missing")
            + ". A Keras path is not what the TF1 Saver wrote: list the file with tf.train.list_variables",
        )
        require(
            all(any(value is v for v in model.weights) for value in name_map.values()),
            "every value must be a variable of the model passed in (e.g. model.get_layer('layer1').kernel), "
            "not a new variable or a tensor",
        )
        report = restore_name_based(path, name_map, strict=False)
        require(
            not report.shape_mismatches,
            "some names point at a variable of the wrong shape: "
            + "".join(f"{k} is {a} in the file, {b} in the model" for k, a, b in report.shape_mismatches[:1])
            + ". In TF1, 'weights' is the kernel and 'biases' the bias.",
        )
        require(
            np.allclose(model(X).numpy(), answers, atol=1e-5),
            "the restored Keras model does not answer like the TF1 network: check which layer each name points to",
        )
    return "the four TF1 names map onto the model's variables, and restored through them it answers like TF1"


@exercise_check("07.3")
def check_load_any(load_any: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        tf1_path, answers = _tf1_checkpoint(folder)
        trained = _trained_keras(seed=5, name="trained_mlp")
        optimizer = keras.optimizers.Adam(0.01)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(trained(X) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, trained.trainable_variables), trained.trainable_variables))
        tf2_path = tf.train.Checkpoint(model=trained, optimizer=optimizer).save(os.path.join(folder, "tf2", "ckpt"))
        # The files beside a checkpoint and its name do not tell its format: a TF1 file saved without a
        # .meta at a 'ckpt-N' name, and a TF2 file with a .meta beside it.
        bare_tf1_path, bare_answers = _tf1_checkpoint(folder, seed=4, prefix="tf1_bare/ckpt", meta=False)
        other_trained = _trained_keras(seed=6, name="other_mlp")
        meta_tf2_path = tf.train.Checkpoint(model=other_trained).save(os.path.join(folder, "tf2_meta", "model"))
        shutil.copy(tf1_path + ".meta", meta_tf2_path + ".meta")
        with files_unchanged(folder, "load_any changed the checkpoint files it read: only read them"):
            model = make_keras_mlp(name="mlp_a")
            kind = call_answer(lambda: load_any(tf1_path, model, _reference_map(model)), lambda error: (
                f"your function failed an assertion on a good TF1 checkpoint ({quote(error, 60)}): "
                "a restore status's assertions are for TF2 files; tell the format with "
                "checkpoint_format(ckpt_path) first."), AssertionError)
            require(
                np.allclose(model(X).numpy(), answers, atol=1e-5),
                "after loading the TF1 checkpoint the model does not answer like the TF1 network: "
                "tf.train.Checkpoint(...).restore() on a name-based file restores nothing into Keras 3 layers. "
                "Check checkpoint_format(ckpt_path) and use restore_name_based with the name map.",
            )
            require(kind == "name-based", f"for the TF1 checkpoint load_any should return 'name-based', got {kind!r}")

            for path, expected, label in ((bare_tf1_path, bare_answers, "a TF1 checkpoint saved without a .meta"),
                                          (meta_tf2_path, other_trained(X).numpy(), "a TF2 checkpoint with a .meta")):
                model = make_keras_mlp(name="mlp_d")
                hint = ("tell the format with checkpoint_format(ckpt_path), not by the files beside the checkpoint "
                        "or by its name.")
                # raising is part of the task (on an incomplete file), so a raise here gets the hint
                kind = call_answer(lambda: load_any(path, model, _reference_map(model)), lambda error: (
                    f"your function raised {type(error).__name__} on {label} beside it: {hint}"))
                require(np.allclose(model(X).numpy(), expected, atol=1e-5) and kind == checkpoint_format(path),
                        f"{label} beside it was not loaded (or its format not returned): {hint}")

            model = make_keras_mlp(name="mlp_b")
            kind = call_answer(
                lambda: load_any(tf2_path, model, _reference_map(model)),
                "your function raised on a good TF2 training checkpoint: it also holds the optimizer's values, "
                "which loading a model does not use, so assert_consumed() fails. Use "
                "assert_existing_objects_matched().", AssertionError)
            require(
                np.allclose(model(X).numpy(), trained(X).numpy(), atol=1e-6),
                "after loading the TF2 training checkpoint the model does not answer like the saved one: "
                "restore it with tf.train.Checkpoint(model=model).restore(ckpt_path)",
            )
            require(kind == "object-based",
                    f"for the TF2 checkpoint load_any should return 'object-based', got {kind!r}")

        other = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, name="layer1")])
        other_path = tf.train.Checkpoint(model=other).save(os.path.join(folder, "other", "ckpt"))
        model = make_keras_mlp(name="mlp_c")
        must_raise(  # the prompt asks for an error, of any type
            lambda: load_any(other_path, model, _reference_map(model)),
            "a TF2 checkpoint without layer2 was accepted silently: call "
            "assert_existing_objects_matched() on the status that restore() returns")
    return ("TF1 checkpoints (with Adam's extra names; with and without a .meta) and TF2 checkpoints (a "
            "training one; one with a .meta beside it) all load, the right format is returned, and a TF2 "
            "checkpoint missing a layer raises")


@exercise_check("07.2")
def check_export_for_tf1(export_for_tf1: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        model = _trained_keras(seed=11, name="served_mlp")
        weights = [w.numpy().copy() for w in model.weights]
        prefix = os.path.join(folder, "export 1", "model")
        path = export_for_tf1(model, prefix)
        require(isinstance(path, (str, os.PathLike)),
                f"export_for_tf1 should return the checkpoint's path, got {path!r}")
        path = os.fspath(path)
        require(os.path.exists(path + ".index"),
                f"there is no checkpoint at the path returned ({os.path.basename(path)!r}): return the prefix "
                "you wrote (what save() or write_name_based() returns), without '.index'")
        require(os.path.normpath(path) == os.path.normpath(prefix),
                f"the checkpoint was written at {os.path.basename(path)!r}, not at out_prefix "
                f"({os.path.basename(prefix)!r}): write exactly there (no global_step suffix)")
        names = sorted(name for name, _ in tf.train.list_variables(path))
        odd = [name for name in names if name not in TF1_NAMES and name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
        if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
            cause = "tf.train.Checkpoint writes object paths"
        elif any(name.endswith("VARIABLE_VALUE") for name in names):
            cause = "a Saver in eager mode handed Keras variables adds 'VARIABLE_VALUE' to each name"
        elif any(":" in name for name in names):
            cause = "':0' ends a tensor's name, not a checkpoint key"
        else:
            cause = "these are not the TF1 graph's names"
        require(
            names == TF1_NAMES,
            f"the TF1 graph looks for names like 'layer1/weights', but the file holds "
            f"{odd[:1] if odd else 'only ' + str(names)}: {cause}. Write the values under their TF1 names "
            "(helpers.migration.write_name_based).",
        )
        answers = call_answer(lambda: _tf1_answers(path), lambda error: (
            f"a TF1 Saver cannot restore the file: {error.message.splitlines()[0]}"), tf.errors.OpError)
        require(
            np.allclose(answers, model(X).numpy(), atol=1e-5),
            "the TF1 network does not answer like the Keras model: check which variable each name holds "
            "('weights' is the kernel, 'biases' the bias) and that you export this model's values",
        )
        require(_same_weights(model, weights), "export_for_tf1 changed the model's weights: only read them")
    return "a plain TF1 Saver restores the export, the TF1 graph answers like the Keras model, which is unchanged"
