"""Checks for notebook 06 (object-based checkpoints).

Each check builds its own model and checkpoints in a fresh temporary folder,
calls the learner's function, and says what is wrong when the answer is not
right. The fixtures have distinct non-zero values in every variable (biases
and the optimizer's slots too), variable names other than the notebook's,
and the checks verify that the source checkpoint is left as it was.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, quote, require
from helpers.checks.toolkit import call_answer, folder_files, must_raise, working_folder

__all__ = ["Net", "check_restore_for_inference", "check_restore_hidden_layer", "check_train_and_keep"]

X = np.array([[0.5, -1.0, 2.0], [-1.5, 0.25, -0.5], [1.0, 1.0, -2.0]], dtype=np.float32)


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
    for i, variable in enumerate(net.weights):  # distinct, non-zero biases too
        variable.assign(variable + np.float32(0.1 * (i + 1)))
    return net


def _train_checkpoint(folder: str, seed: int = 1) -> tuple[str, Net]:
    """A checkpoint of a trained Net with its Adam optimizer (slots non-zero), as training writes it."""
    keras.layers.Dense(1, name="an_unrelated_layer")  # so the variable names differ from the notebook's
    net, optimizer = _built_net(seed), keras.optimizers.Adam(0.05)
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((net(X) - 1.0) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    path = tf.train.Checkpoint(model=net, optimizer=optimizer).save(os.path.join(folder, "train", "ckpt"))
    return path, net


@exercise_check("06.3")
def check_restore_hidden_layer(restore_hidden_layer: Callable[[str], keras.layers.Dense]) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, net = _train_checkpoint(folder)
        before = folder_files(folder)
        layer = call_answer(lambda: restore_hidden_layer(path), lambda error: (
            "your function raised on a good checkpoint: it also holds the out layer and the optimizer, "
            "which one layer does not use, so assert_consumed() fails. Use expect_partial() (after "
            f"assert_existing_objects_matched(), once built). TensorFlow: {quote(error, 56)}"), AssertionError)
        require(
            isinstance(layer, keras.layers.Dense),
            f"restore_hidden_layer should return a keras.layers.Dense, got {type(layer).__name__}",
        )
        if not layer.built:
            call_answer(lambda: layer(tf.ones((1, 3))), lambda error: (
                "the returned layer cannot take the saved hidden layer's values when built for "
                f"3 inputs ({quote(error, 100)}): make Dense(4)"), ValueError)
        require(
            tuple(layer.kernel.shape) == (3, 4),
            f"the layer's kernel has shape {tuple(layer.kernel.shape)}; the saved 'hidden' layer has (3, 4): "
            "make Dense(4) and build it for 3 inputs",
        )
        require(
            np.allclose(layer.kernel.numpy(), net.hidden.kernel.numpy())
            and np.allclose(layer.bias.numpy(), net.hidden.bias.numpy()),
            "the layer does not hold the saved values of model.hidden (kernel and bias). The checkpoint's "
            "root has an edge 'model', and the model an edge 'hidden': mirror both, e.g. "
            "tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).",
        )
        require(
            np.allclose(layer(X).numpy(), net.hidden(X).numpy(), atol=1e-6),
            "the layer holds the right values but answers differently from the saved hidden layer: "
            "the exercise asks for Dense(4, activation=\"relu\")",
        )
        require(folder_files(folder) == before, "your function changed the checkpoint's files: only read them")
    return "the returned Dense(4, relu) holds model.hidden's saved kernel and bias; the file is unchanged"


_NOT_RESTORED = Hint(
    "your model does not hold the saved values (every kernel and bias): the file's root "
    "has an edge 'model' (section 4, \"Restoring into a second model\").",
    "restore the checkpoint into it with tf.train.Checkpoint(model=model).restore(ckpt_path)",
    kind="not restored")


@exercise_check("06.2")
def check_restore_for_inference(restore_for_inference: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path, net = _train_checkpoint(folder)
        before = folder_files(folder)
        made = []

        def make_model() -> Net:
            made.append(_built_net(seed=7))
            return made[-1]

        model = call_answer(lambda: restore_for_inference(path, make_model), lambda error: (
            _NOT_RESTORED if "not bound to checkpointed values" in str(error) else Hint(
                "your function raised on a good training checkpoint: it also holds the optimizer's values, "
                "which inference does not need. Which assertion allows those? (section 5, \"What each "
                f"assertion catches\"). TensorFlow said: {quote(error, 70)}",
                "use status.assert_existing_objects_matched() (every variable of the model got a value), "
                "not assert_consumed() (every value of the file was used).",
                kind="raised on a good checkpoint")), AssertionError)
        require(len(made) == 1 and model is made[0],
                "restore_for_inference should call make_model() once and return that model, restored")
        require(
            all(np.allclose(a.numpy(), b.numpy()) for a, b in zip(model.weights, net.weights))
            and np.allclose(model(X).numpy(), net(X).numpy()), _NOT_RESTORED)
        require(folder_files(folder) == before, "your function changed the checkpoint's files: only read them")

        no_out = tf.train.Checkpoint(model=_built_net(seed=3, with_out=False)).save(os.path.join(folder, "a", "ckpt"))
        other_edge = tf.train.Checkpoint(net=_built_net(seed=4)).save(os.path.join(folder, "b", "ckpt"))
        for bad, what in ((no_out, "without the 'out' layer"), (other_edge, "saved under the edge 'net'")):
            must_raise(lambda: restore_for_inference(bad, make_model), Hint(  # an error of any type
                f"a checkpoint {what} was accepted silently, leaving some of the model's variables with "
                "their random values: which assertion raises then? (section 5, \"What each assertion "
                "catches\")",
                "call status.assert_existing_objects_matched() so that it raises (assert_nontrivial_match() "
                "is satisfied by the save counter alone).",
                kind="silent partial restore"))
    return ("a training checkpoint restores every variable (optimizer values ignored); two checkpoints "
            "that leave variables unset raise")


def _saved_step(directory: str) -> int | None:
    """The counter held by the latest checkpoint in ``directory``, or None when there is none."""
    latest = tf.train.latest_checkpoint(directory) if os.path.isdir(directory) else None
    if latest is None:
        return None
    return int(tf.train.load_checkpoint(latest).get_tensor("counter/.ATTRIBUTES/VARIABLE_VALUE"))


def _latest_deleted(directory: str) -> bool:
    """The state file names a newest checkpoint whose files are gone."""
    state = tf.train.get_checkpoint_state(directory) if os.path.isdir(directory) else None
    if state is None or not state.model_checkpoint_path:
        return False
    path = state.model_checkpoint_path
    path = path if os.path.isabs(path) else os.path.join(directory, path)
    return not os.path.exists(path + ".index")


# What follows a checkpoint's prefix in the names of its files.
_CHECKPOINT_FILE = re.compile(r"\.(index|data-\d+-of-\d+)$")


@exercise_check("06.1")
def check_train_and_keep(train_and_keep: Callable) -> str:
    for steps, keep in ((6, 2), (4, 3), (12, 3)):  # 12 steps: ckpt-10 sorts before ckpt-9 by name
        with tempfile.TemporaryDirectory() as folder:
            counter = tf.Variable(0, dtype=tf.int64)
            weights = tf.Variable([0.5, -1.5, 2.5])
            checkpoint = tf.train.Checkpoint(counter=counter, weights=weights)

            directory = os.path.join(folder, "run 1")
            unsaved: list[int] = []
            deleted: list[int] = []

            def step_fn() -> None:
                done = int(counter.numpy())
                if done and _saved_step(directory) != done:  # was the previous step saved?
                    unsaved.append(done)
                    if _latest_deleted(directory):
                        deleted.append(done)
                counter.assign_add(1)
                weights.assign(weights * 2.0)

            with working_folder(os.path.join(folder, "cwd")):  # a relative path lands here
                latest = train_and_keep(step_fn, checkpoint, directory, steps, keep)
            require(not os.listdir(os.path.join(folder, "cwd")),
                    "your function wrote into the current folder: write only under the `directory` it is given")
            require(os.path.isdir(directory), "nothing was written in the directory passed as `directory`")
            require(int(counter.numpy()) == steps,
                    f"step_fn should run {steps} times (steps={steps}); it ran {int(counter.numpy())} times")
            require(not deleted, Hint(
                f"the checkpoint saved after step {deleted[0] if deleted else 0} was gone by the next step: "
                "'ckpt-10' sorts before 'ckpt-9' by name. Section 6 (\"CheckpointManager\") shows what keeps "
                "the newest for you.",
                "delete the oldest checkpoints by step number, not by file name, or let "
                "tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep) do it.",
                kind="deleted by name"))
            require(not unsaved, f"no checkpoint was saved after step(s) {unsaved} (when step_fn was called "
                    "again, the latest checkpoint held an older step): save after every call of step_fn()")
            kept = sorted(name[: -len(".index")] for name in os.listdir(directory) if name.endswith(".index"))
            require(len(kept) == keep, Hint(
                f"with steps={steps} and keep={keep}, the directory holds {len(kept)} checkpoint(s) "
                f"({', '.join(kept)}); it should hold exactly {keep}. Section 6 (\"CheckpointManager\") shows "
                "what deletes the older ones.",
                "save through tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep): "
                "manager.save() after each step_fn().",
                kind="kept count"))
            leftovers = sorted(name for name in os.listdir(directory)
                               if os.path.isfile(os.path.join(directory, name)) and name != "checkpoint"
                               and _CHECKPOINT_FILE.sub("", name) not in kept)
            require(not leftovers,
                    f"files of deleted checkpoints remain ({quote(', '.join(leftovers), 60)}): delete every file "
                    "of an old checkpoint (.index and .data-*), or let CheckpointManager do it")
            require(latest is not None and isinstance(latest, (str, os.PathLike)),
                    f"train_and_keep should return the latest checkpoint's path, got {latest!r}")
            newest = tf.train.latest_checkpoint(directory)
            require(os.path.normpath(os.fspath(latest)) == os.path.normpath(newest or ""), Hint(
                f"train_and_keep returned {os.path.basename(os.fspath(latest))!r}, but the latest checkpoint "
                f"is {os.path.basename(newest or '')!r}: section 6 (\"CheckpointManager\") shows which "
                "attribute names it.",
                "return manager.latest_checkpoint (or what the last manager.save() returned).",
                kind="latest returned"))
            for name in kept:
                reader = tf.train.load_checkpoint(os.path.join(directory, name))
                held = int(reader.get_tensor("counter/.ATTRIBUTES/VARIABLE_VALUE"))
                values = reader.get_tensor("weights/.ATTRIBUTES/VARIABLE_VALUE")
                require(
                    np.allclose(values, np.array([0.5, -1.5, 2.5]) * 2.0**held),
                    f"checkpoint {name} holds weights that do not belong to its step: save the whole checkpoint",
                )
            steps_held = sorted(int(tf.train.load_checkpoint(os.path.join(directory, name))
                                    .get_tensor("counter/.ATTRIBUTES/VARIABLE_VALUE")) for name in kept)
            require(
                steps_held == list(range(steps - keep + 1, steps + 1)),
                f"the kept checkpoints hold steps {steps_held}; after each of {steps} steps a save should "
                f"leave steps {list(range(steps - keep + 1, steps + 1))}: save after calling step_fn()",
            )
    return ("with (steps, keep) = (6, 2), (4, 3) and (12, 3): a checkpoint after every step, the newest "
            "`keep` kept, and the latest one returned")
