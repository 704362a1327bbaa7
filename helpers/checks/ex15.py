"""Checks for notebook 15 (what is this file, and how do I load it today?).

Each check writes its own files in a fresh temporary folder, with names and
models other than the notebook's, calls the learner's function, and says what
is wrong when the answer is not right.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from unittest import mock

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

__all__ = ["check_checkpoint_flavour", "check_latest_prefix", "check_predict_any"]

V1 = tf.compat.v1


# --------------------------------------------------------------------------- 15.1


def _saver_checkpoint(prefix: str, meta: bool) -> str:
    with tf.Graph().as_default():
        V1.get_variable("encoder/w", initializer=np.full((2, 3), 0.5, np.float32))
        V1.get_variable("encoder/b", initializer=np.array([1.0, -2.0, 3.0], np.float32))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver().save(sess, prefix, write_meta_graph=meta)


def _keras2_layout(prefix: str, optimizer: bool) -> str:
    """A checkpoint with Keras 2's object paths (``layer_with_weights-0``, ``keras_api``...)."""
    layer = tf.Module()
    layer.kernel = tf.Variable(np.full((3, 2), 0.25, np.float32))
    layer.bias = tf.Variable([0.5, -0.5])
    edges = {"layer_with_weights-0": layer, "layer-0": tf.Module(), "keras_api": tf.Module()}
    if not optimizer:  # save_weights: the model is the root
        return tf.train.Checkpoint(**edges).write(prefix)
    net = tf.Module()
    for name, child in edges.items():
        setattr(net, name, child)
    opt = tf.Module()
    opt._iterations = tf.Variable(7, dtype=tf.int64)  # as Keras 2.15 writes them
    opt._learning_rate = tf.Variable(0.01)
    opt._variables = [tf.Variable(7), tf.Variable(np.ones((3, 2), np.float32))]
    return tf.train.Checkpoint(model=net, optimizer=opt).write(prefix)


def _flavour_fixtures(folder: str) -> dict[str, tuple[str, str]]:
    """{label: (prefix, expected flavour)}."""
    path = lambda *parts: os.path.join(folder, *parts)  # noqa: E731
    fixtures = {
        "a TF1 Saver checkpoint with its .meta": (_saver_checkpoint(path("a", "net"), True), "tf1"),
        "a TF1 Saver checkpoint without a .meta": (_saver_checkpoint(path("b", "net"), False), "tf1"),
    }
    module = tf.Module()
    module.scale = tf.Variable([2.0, 3.0])
    module.shift = tf.Variable(-1.0)
    plain = tf.train.Checkpoint(net=module).write(path("c", "net"))
    with open(fixtures["a TF1 Saver checkpoint with its .meta"][0] + ".meta", "rb") as source, \
            open(plain + ".meta", "wb") as copy:
        copy.write(source.read())  # a .meta someone copied beside a TF2 checkpoint
    fixtures["a TF2 tf.Module checkpoint with a .meta beside it"] = (plain, "module")
    keras.utils.set_random_seed(15)
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(3)(inputs)))
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    fixtures["a Keras 3 model with its optimizer"] = (
        tf.train.Checkpoint(model=model, optimizer=optimizer).write(path("d", "net")), "keras3")
    sequential = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2), keras.layers.BatchNormalization()])
    fixtures["a Keras 3 Sequential without an optimizer"] = (
        tf.train.Checkpoint(network=sequential).write(path("e", "net")), "keras3")
    fixtures["Keras 2 keys, weights only"] = (_keras2_layout(path("f", "net"), False), "keras2")
    fixtures["Keras 2 keys with an optimizer"] = (_keras2_layout(path("g", "net"), True), "keras2")
    return fixtures


def _no_identify(*args, **kwargs):
    raise AssertionError("this exercise asks you to read the keys yourself: do not call helpers.identify")


@exercise_check("15.1")
def check_checkpoint_flavour(checkpoint_flavour: Callable[[str], str]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        fixtures = _flavour_fixtures(folder)
        with mock.patch("helpers.identify.identify", _no_identify):
            for label, (prefix, expected) in fixtures.items():
                got = checkpoint_flavour(prefix)
                require(got == expected, f"for {label} you returned {got!r}, expected {expected!r}. "
                        + _FLAVOUR_HINTS[expected])
    return (f"{len(fixtures)} checkpoints named right: TF1 with and without .meta, a TF2 module with a "
            ".meta beside it, Keras 3 and Keras 2 keys")


_FLAVOUR_HINTS = {
    "tf1": "A name-based checkpoint has no '_CHECKPOINTABLE_OBJECT_GRAPH' key; a .meta file proves nothing.",
    "module": ("A tf.Module's keys hold its attribute names, no Keras edges; and a .meta beside a "
               "checkpoint does not make it TF1: look for the object graph key."),
    "keras3": ("Keras 3 paths hold edges such as '_functional', '_operations' or '_kernel'; with an "
               "optimizer its variables may be keyed under 'optimizer/_trainable_variables/N'."),
    "keras2": "Keras 2 paths hold 'layer_with_weights-N' or 'layer-N' edges; Keras 3 ones do not.",
}


# --------------------------------------------------------------------------- 15.2


def _manager_folder(folder: str, other_machine: str) -> str:
    """ckpt-1 .. ckpt-10 (latest ckpt-10), ckpt-9 touched last, the state file naming other paths."""
    step = tf.Variable(0)
    checkpoint = tf.train.Checkpoint(step=step, weights=tf.Variable([1.0, 2.0]))
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3)
    for value in range(1, 11):
        step.assign(value)
        manager.save(checkpoint_number=value)
    later = time.time() + 5
    os.utime(os.path.join(folder, "ckpt-9.index"), (later, later))
    for name in os.listdir(folder):
        if name.startswith("ckpt-9."):
            os.utime(os.path.join(folder, name), (later, later))
    separator = "\\" if other_machine[1:2] == ":" else "/"
    names = [f"{other_machine}{separator}ckpt-{n}" for n in (8, 9, 10)]
    quoted = lambda text: '"' + text.replace("\\", "\\\\") + '"'  # noqa: E731
    lines = [f"model_checkpoint_path: {quoted(names[-1])}"]
    lines += [f"all_model_checkpoint_paths: {quoted(n)}" for n in names]
    with open(os.path.join(folder, "checkpoint"), "w") as state:
        state.write("\n".join(lines) + "\n")
    return folder


def _rolled_back(folder: str, listed: tuple[int, ...]) -> str:
    """ckpt-8 .. ckpt-10 on disk; the state file rolled back to name ckpt-8, listing them in ``listed`` order."""
    step = tf.Variable(0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), folder, max_to_keep=3)
    for value in range(1, 11):
        step.assign(value)
        manager.save(checkpoint_number=value)
    quoted = lambda number: '"' + os.path.join(os.path.abspath(folder), f"ckpt-{number}") + '"'  # noqa: E731
    lines = [f"model_checkpoint_path: {quoted(8)}"] + [f"all_model_checkpoint_paths: {quoted(n)}" for n in listed]
    with open(os.path.join(folder, "checkpoint"), "w") as state:
        state.write("\n".join(lines) + "\n")
    return folder


@exercise_check("15.2")
def check_latest_prefix(latest_prefix: Callable[[str], str]) -> str:
    with tempfile.TemporaryDirectory() as root:
        cases = [(os.path.join(root, "here"), None, "ckpt-10"),
                 (os.path.join(root, "linux run"), "/home/kim/runs/exp 3", "ckpt-10"),
                 (os.path.join(root, "windows"), "D:\\runs\\exp4", "ckpt-10"),
                 (os.path.join(root, "rolled back"), (8, 9, 10), "ckpt-8"),
                 (os.path.join(root, "rolled back, listed newest first"), (10, 9, 8), "ckpt-8")]
        for folder, other, latest in cases:
            os.makedirs(folder)
            if other is None:
                step = tf.Variable(0)
                manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), folder, max_to_keep=3)
                for value in range(1, 11):
                    step.assign(value)
                    manager.save(checkpoint_number=value)
                later = time.time() + 5
                os.utime(os.path.join(folder, "ckpt-9.index"), (later, later))
            elif isinstance(other, tuple):
                _rolled_back(folder, other)
            else:
                _manager_folder(folder, other)
            before = {n: os.path.getmtime(os.path.join(folder, n)) for n in os.listdir(folder)}
            got = latest_prefix(folder)
            require(isinstance(got, (str, os.PathLike)), f"return the prefix as a str, not {type(got).__name__}"
                    + (" (tf.train.latest_checkpoint returns None when the path the state file names is "
                       "not on this machine)" if got is None else ""))
            got = os.fspath(got)
            require(not got.endswith((".index", ".data-00000-of-00001")),
                    f"you returned a file ({os.path.basename(got)!r}): return the prefix, without .index")
            where = ("the state file names another machine's paths" if isinstance(other, str) else
                     "the state file was rolled back to name ckpt-8" if other else "a folder of ten saves")
            name = os.path.basename(got)
            require("\\" not in name, f"{where}: you returned {name!r}. The state file names a Windows path: "
                    "split it at '\\' as well as '/' (ntpath.basename) to get the checkpoint's name.")
            if isinstance(other, tuple):
                require(name == latest, f"{where} although ckpt-10 exists: you returned {name!r}. Its "
                        "model_checkpoint_path decides, not the highest number nor the order of the list.")
            require(name == latest,
                    f"{where}: you returned {name!r}, the latest is {latest!r}. The state "
                    "file says which is latest: not file times, not sorted names ('ckpt-9' > 'ckpt-10').")
            require(os.path.dirname(got) != "",
                    f"{where}: you returned the bare name {got!r}, not a prefix in this folder: return a "
                    "path inside the folder (os.path.join(folder, name)).")
            require(os.path.isfile(got + ".index"),
                    f"{where}: {got!r} is not a prefix in this folder. The state file records the path "
                    "where it was written (CheckpointManager.latest_checkpoint returns it as is): find "
                    "that checkpoint's name in the folder itself.")
            after = {n: os.path.getmtime(os.path.join(folder, n)) for n in os.listdir(folder)}
            require(before == after, "the folder changed: finding the latest checkpoint must not write")
    return ("the checkpoint the state file names found in the folder: ten saves here, another machine's "
            "paths (Linux, Windows), a state file rolled back to an earlier save")


# --------------------------------------------------------------------------- 15.3


def _predict_fixtures(folder: str) -> tuple[np.ndarray, dict[str, tuple[str, np.ndarray]]]:
    keras.utils.set_random_seed(151)
    inputs = keras.Input((4,), name="readings")
    hidden = keras.layers.Dropout(0.5)(keras.layers.Dense(5, activation="relu")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2)(hidden), name="sensor")
    x = np.linspace(-1, 1, 12).reshape(3, 4)  # float64 on purpose
    expected = model(x.astype(np.float32), training=False).numpy()
    rounded = x.astype(np.float16).astype(np.float32)  # what an answer that feeds float16 computes
    expected16 = model(rounded, training=False).numpy()
    fixtures = {}
    model.save(os.path.join(folder, "sensor.keras"))
    fixtures["a Keras 3 .keras file"] = (os.path.join(folder, "sensor.keras"), expected, expected16)
    model.export(os.path.join(folder, "sensor_export"), verbose=False)
    fixtures["a model.export folder"] = (os.path.join(folder, "sensor_export"), expected, expected16)

    class Scaled(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(4, dtype=np.float32).reshape(4, 1) / 10)  # one output unit

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="signal")])
        def __call__(self, signal):
            return {"scores": tf.matmul(signal, self.w) + 1.0}

    module = Scaled()
    tf.saved_model.save(module, os.path.join(folder, "scaled_module"),
                        signatures=module.__call__.get_concrete_function())
    fixtures["a tf.saved_model.save folder (signature input 'signal')"] = (
        os.path.join(folder, "scaled_module"), module(tf.constant(x, tf.float32))["scores"].numpy(),
        module(tf.constant(rounded))["scores"].numpy())
    return x, fixtures


@exercise_check("15.3")
def check_predict_any(predict_any: Callable[[str, np.ndarray], np.ndarray]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        x, fixtures = _predict_fixtures(folder)
        for label, (path, expected, expected16) in fixtures.items():
            got = predict_any(path, x.copy())
            require(isinstance(got, np.ndarray), f"for {label} you returned a {type(got).__name__}: return "
                    "the outputs as one NumPy array (a signature returns a dict: take its one value)")
            require(got.shape == expected.shape, f"for {label} the shape is {got.shape}, expected "
                    f"{expected.shape}" + (": return the outputs as the model gives them (no squeeze or "
                                           "reshape)" if got.size == expected.size else ""))
            require(not (np.allclose(got, expected16, atol=1e-5) and not np.allclose(got, expected, atol=1e-5)),
                    f"for {label} the outputs are those of x rounded to float16: feed x as float32 (the "
                    "model's dtype), never a lower precision")
            require(np.allclose(got, expected, atol=1e-5), f"for {label} the outputs differ from the model's"
                    + (" (inference mode: Dropout must be off, so training=False)" if "Keras" in label
                       or "export" in label else ""))
    return ("a .keras file, a model.export folder and a TF2 SavedModel (one output unit) each predicted "
            "equal to their model")
