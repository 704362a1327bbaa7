"""Checks for notebook 06 (object-based checkpoints).

Each check builds its own model and checkpoints in a fresh temporary folder,
calls the learner's function, and says what is wrong when the answer is not
right.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

__all__ = ["Net", "check_restore_hidden_layer", "check_restore_for_inference", "check_train_and_keep"]


class Net(keras.Model):
    """The notebook's model: ``hidden`` (4 units, ReLU) then ``out`` (1 unit), for 3 inputs."""

    def __init__(self, with_out: bool = True) -> None:
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation="relu")
        if with_out:
            self.out = keras.layers.Dense(1)

    def call(self, x):
        h = self.hidden(x)
        return self.out(h) if hasattr(self, "out") else h


def _built_net(seed: int, with_out: bool = True) -> Net:
    keras.utils.set_random_seed(seed)
    net = Net(with_out=with_out)
    net(tf.ones((1, 3)))
    return net


def _train_checkpoint(folder: str, seed: int = 1) -> tuple[str, Net]:
    """A checkpoint of a trained Net with its Adam optimizer, as the notebook writes it."""
    net, optimizer = _built_net(seed), keras.optimizers.Adam(0.05)
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((net(x) - 1.0) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    path = tf.train.Checkpoint(model=net, optimizer=optimizer).save(os.path.join(folder, "train", "ckpt"))
    return path, net


@exercise_check("06.1")
def check_restore_hidden_layer(restore_hidden_layer: Callable[[str], keras.layers.Dense]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, net = _train_checkpoint(folder)
        layer = restore_hidden_layer(path)
        require(
            isinstance(layer, keras.layers.Dense),
            f"restore_hidden_layer should return a keras.layers.Dense, got {type(layer).__name__}",
        )
        if not layer.built:
            layer(tf.ones((1, 3)))
        require(
            tuple(layer.kernel.shape) == (3, 4),
            f"the layer's kernel has shape {tuple(layer.kernel.shape)}; the saved 'hidden' layer has (3, 4): "
            "make Dense(4) and build it for 3 inputs",
        )
        require(
            np.allclose(layer.kernel.numpy(), net.hidden.kernel.numpy())
            and np.allclose(layer.bias.numpy(), net.hidden.bias.numpy()),
            "the layer does not hold the saved values of model.hidden. The checkpoint's root has an edge "
            "'model', and the model an edge 'hidden': mirror both, e.g. "
            "tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).",
        )
    return "the standalone layer holds model.hidden's kernel and bias"


@exercise_check("06.2")
def check_restore_for_inference(restore_for_inference: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, net = _train_checkpoint(folder)
        x = tf.constant([[0.5, -1.0, 2.0]])
        try:
            model = restore_for_inference(path, lambda: _built_net(seed=7))
        except AssertionError as error:
            require(
                False,
                "your function raised on a good checkpoint (it also holds the optimizer's values, which "
                "inference does not need): use assert_existing_objects_matched(), not assert_consumed(). "
                f"TensorFlow said: {str(error).splitlines()[0][:120]}",
            )
        require(model is not None, "restore_for_inference should return the restored model")
        require(
            np.allclose(model(x).numpy(), net(x).numpy()),
            "the returned model does not answer like the saved one: restore the checkpoint into it "
            "with tf.train.Checkpoint(model=model).restore(ckpt_path)",
        )
        bad = tf.train.Checkpoint(model=_built_net(seed=3, with_out=False)).save(os.path.join(folder, "bad", "ckpt"))
        try:
            restore_for_inference(bad, lambda: _built_net(seed=7))
        except AssertionError:
            pass
        else:
            require(
                False,
                "a checkpoint without the 'out' layer was accepted silently: the model's out layer kept its "
                "random values. Call status.assert_existing_objects_matched() so that a mismatch raises.",
            )
    return "a good checkpoint restores (optimizer values ignored), a mismatched one raises"


@exercise_check("06.3")
def check_train_and_keep(train_and_keep: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        counter = tf.Variable(0)
        checkpoint = tf.train.Checkpoint(counter=counter)
        directory = os.path.join(folder, "managed")
        latest = train_and_keep(lambda: counter.assign_add(1), checkpoint, directory, 5, 2)
        require(os.path.isdir(directory), f"nothing was written in the directory {directory!r}")
        kept = sorted(name for name in os.listdir(directory) if name.endswith(".index"))
        require(
            len(kept) == 2,
            f"the directory holds {len(kept)} checkpoint(s) ({', '.join(kept)}); keep={2} should leave "
            "exactly 2: use tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)",
        )
        require(
            latest == tf.train.latest_checkpoint(directory),
            f"train_and_keep returned {latest!r}, but the latest checkpoint is "
            f"{tf.train.latest_checkpoint(directory)!r}: return manager.latest_checkpoint (or the last save)",
        )
        require(counter.numpy() == 5, f"step_fn should run 5 times; the counter is at {counter.numpy()}")
        check = tf.Variable(0)
        tf.train.Checkpoint(counter=check).restore(latest).assert_consumed()
        require(check.numpy() == 5, f"the latest checkpoint holds counter={check.numpy()}, expected 5: save after each step")
    return "5 steps, a checkpoint after each, the newest 2 kept, latest returned"
