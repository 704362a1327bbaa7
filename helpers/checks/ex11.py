"""Checks for notebook 11 (resuming exactly, crashes, checkpoints at scale).

Each check builds its own models, data and folders in a fresh temporary
folder, calls the learner's function, and says what is wrong when the answer
is not right. The models differ from the notebook's (other sizes, a
``BatchNormalization`` layer with non-trainable statistics, two ``Dropout``
layers), so an answer that hard-codes the notebook's objects fails.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require
from helpers.resume import _walk, state_table

__all__ = [
    "check_ema_predictions",
    "check_make_policy",
    "check_save_sharded",
    "check_train_to",
    "check_training_checkpoint",
]


# --------------------------------------------------------------------------- 11.1


class _State:
    """A training run unlike the notebook's: 5 inputs, BatchNorm, two Dropouts, RMSprop with momentum."""

    def __init__(self) -> None:
        keras.utils.set_random_seed(11)
        self.model = keras.Sequential([
            keras.Input((5,)),
            keras.layers.Dense(6, activation="tanh"),
            keras.layers.Dropout(0.3),
            keras.layers.BatchNormalization(),
            keras.layers.Dense(4, activation="relu"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(2),
        ])
        self.optimizer = keras.optimizers.RMSprop(
            keras.optimizers.schedules.PolynomialDecay(0.02, decay_steps=20, end_learning_rate=0.001), momentum=0.5
        )
        self.optimizer.build(self.model.trainable_variables)
        self.step = tf.Variable(0, dtype=tf.int32)
        self.generator = tf.random.Generator.from_seed(23)
        features = np.random.default_rng(5).normal(size=(40, 5)).astype("float32")
        targets = np.stack([features[:, 0] - features[:, 3], features[:, 1] * 0.5], axis=1).astype("float32")
        self.iterator = iter(tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(40, seed=2).batch(8).repeat())

        @tf.function
        def train_step():
            x, y = next(self.iterator)
            x = x + self.generator.uniform(tf.shape(x), -0.1, 0.1)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((self.model(x, training=True) - y) ** 2)
            grads = tape.gradient(loss, self.model.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))

        self._train_step = train_step

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self._train_step()
            self.step.assign_add(1)

    def pieces(self) -> dict:
        return {"model": self.model, "optimizer": self.optimizer, "step": self.step,
                "generator": self.generator, "iterator": self.iterator}


def _missing_piece_hint(checkpoint: tf.train.Checkpoint, state: _State) -> str | None:
    """A hint for the first piece of ``state`` the checkpoint does not reach, or None."""
    # _walk also adds Keras's untracked variables, which a checkpoint would NOT save: use its children only
    reached = {id(obj) for path, obj in _walk(checkpoint) if "<variables>" not in path}
    model_vars = state.model.variables
    seeds = [v for v in model_vars if "seed_generator" in v.path]
    stats = [v for v in state.model.non_trainable_variables if "moving" in v.path]
    trainable = state.model.trainable_variables
    if not any(id(v) in reached for v in trainable):
        return "the checkpoint does not save the model: add model=model"
    if not all(id(v) in reached for v in trainable + stats):
        return ("the checkpoint saves the model's trainable weights but not its BatchNormalization statistics "
                "(non-trainable variables): save the model itself, model=model, not model.trainable_variables")
    if not all(id(v) in reached for v in seeds):
        return ("the model's Dropout seed states are not saved: tf.train.Checkpoint(model=model) does not reach "
                "them (section 3). Add them, e.g. seeds=untracked_variables(model)")
    if not all(id(v) in reached for v in state.optimizer.variables):
        return ("the optimizer is not (fully) saved: add optimizer=optimizer, which holds its slots, its "
                "iterations and so the learning-rate schedule's position")
    if id(state.step) not in reached:
        return "the step counter is not saved: add step=step"
    if id(state.generator.state) not in reached and id(state.generator) not in reached:
        return "the tf.random.Generator is not saved: add generator=generator"
    if id(state.iterator) not in reached:
        return "the tf.data iterator is not saved: add iterator=iterator (its position and shuffle buffer)"
    return None


@exercise_check("11.1")
def check_training_checkpoint(training_checkpoint: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        first = _State()
        first.advance(3)
        checkpoint = training_checkpoint(first.model, first.optimizer, first.step, first.generator, first.iterator)
        require(isinstance(checkpoint, tf.train.Checkpoint),
                f"training_checkpoint should return a tf.train.Checkpoint, got {type(checkpoint).__name__}")
        hint = _missing_piece_hint(checkpoint, first)
        require(hint is None, hint or "")
        path = checkpoint.write(os.path.join(folder, "mid", "ckpt"))
        first.advance(4)
        second = _State()
        again = training_checkpoint(second.model, second.optimizer, second.step, second.generator, second.iterator)
        require(isinstance(again, tf.train.Checkpoint),
                f"training_checkpoint should return a tf.train.Checkpoint, got {type(again).__name__}")
        again.read(path).assert_existing_objects_matched()
        second.advance(4)
        expected, got = state_table(**first.pieces()), state_table(**second.pieces())
        differ = [name for name in expected if expected[name] != got[name]]
        require(not differ,
                f"after restoring your checkpoint and training on, these pieces differ from the run that never "
                f"stopped: {', '.join(differ)}. Save every piece, and the Dropout seed states.")
    return "every piece is saved (BatchNorm statistics, Dropout seeds too); resuming equals never stopping"


# --------------------------------------------------------------------------- 11.2


@exercise_check("11.2")
def check_make_policy(make_policy: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        global_step = tf.Variable(0, dtype=tf.int64)
        weights = tf.Variable([1.5, -2.0])
        checkpoint = tf.train.Checkpoint(global_step=global_step, weights=weights)
        directory = os.path.join(folder, "policy_runs")
        manager = make_policy(checkpoint, directory, global_step)
        require(isinstance(manager, tf.train.CheckpointManager),
                f"make_policy should return a tf.train.CheckpointManager, got {type(manager).__name__}")
        saved_at = []
        for _ in range(35):
            global_step.assign_add(1)
            weights.assign_add([0.5, 0.25])
            if manager.save() is not None:
                saved_at.append(int(global_step))
        require(os.path.isdir(directory) and os.path.exists(os.path.join(directory, "checkpoint")),
                "nothing was saved into the directory you were given: pass `directory` to the manager")
        require(len(saved_at) < 35,
                f"save() wrote a checkpoint at every one of the 35 steps; it should write one per 10 steps: "
                "pass step_counter=step and checkpoint_interval=10")
        require(saved_at == [1, 11, 21, 31],
                f"save() wrote checkpoints at steps {saved_at}; with one per 10 steps counted by `step` they "
                "come at steps 1, 11, 21, 31: checkpoint_interval=10 and step_counter=step")
        kept = sorted(name for name in os.listdir(directory) if name.endswith(".index"))
        require(len(kept) == 3,
                f"{len(kept)} checkpoint(s) are on disk ({', '.join(kept)}); keep only the newest 3: max_to_keep=3")
        steps_kept = sorted(int(tf.train.load_checkpoint(os.path.join(directory, name[:-6]))
                                .get_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE")) for name in kept)
        require(steps_kept == [11, 21, 31], f"the checkpoints kept hold steps {steps_kept}, expected the newest: 11, 21, 31")
    return "one save per 10 steps counted by `step` (steps 1, 11, 21, 31), the newest 3 kept"


# --------------------------------------------------------------------------- 11.3


def _shard_fixture() -> tuple[tf.train.Checkpoint, dict[str, tf.Variable]]:
    variables = {
        f"layer_{i}": tf.Variable(np.full((256, 256), i + 0.5, dtype=np.float32) + np.arange(256, dtype=np.float32))
        for i in range(6)  # 6 x 256 KiB
    }
    variables["bias"] = tf.Variable(np.arange(7, dtype=np.float32) - 3.0)
    return tf.train.Checkpoint(**variables), variables


@exercise_check("11.3")
def check_save_sharded(save_sharded: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        checkpoint, variables = _shard_fixture()
        before = {name: v.numpy().copy() for name, v in variables.items()}
        for limit in (0.5, 0.75):
            directory = os.path.join(folder, f"limit_{limit}")
            path = save_sharded(checkpoint, os.path.join(directory, "big"), limit)
            require(isinstance(path, (str, os.PathLike)),
                    f"save_sharded should return the checkpoint's path, got {type(path).__name__}: return what "
                    "checkpoint.write (or save) returns")
            data_files = sorted(n for n in os.listdir(directory) if ".data-" in n) if os.path.isdir(directory) else []
            require(data_files, f"no data files were written under {directory!r}: write at the prefix you were given")
            require(len(data_files) > 1,
                    f"with max_shard_mib={limit} the 1.5 MiB checkpoint was written in {len(data_files)} data file: "
                    "pass CheckpointOptions(experimental_sharding_callback=tf.train.experimental."
                    "MaxShardSizePolicy(max_shard_size=...)) to write/save")
            largest = max(os.path.getsize(os.path.join(directory, n)) for n in data_files)
            require(largest <= limit * 2**20,
                    f"with max_shard_mib={limit} a data file holds {largest} bytes, more than {limit} MiB = "
                    f"{int(limit * 2**20)} bytes: max_shard_size is in bytes, so multiply by 2**20")
            fresh = {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()}
            try:
                tf.train.Checkpoint(**fresh).read(os.fspath(path)).assert_existing_objects_matched()
            except (tf.errors.OpError, ValueError, AssertionError) as error:
                require(False, f"the path you returned, {os.fspath(path)!r}, does not restore: "
                               f"{str(error).splitlines()[0][:150]}. Return what write/save returns.")
            for name, value in before.items():
                require(np.array_equal(fresh[name].numpy(), value),
                        f"the restored {name!r} differs from the saved values: save `checkpoint` itself")
        for name, value in before.items():
            require(np.array_equal(variables[name].numpy(), value), f"save_sharded changed the variable {name!r}")
    return "shards of at most 0.5 and 0.75 MiB, and the returned path restores every value"


# --------------------------------------------------------------------------- 11.4


class _Calls:
    def __init__(self, limit: int) -> None:
        self.count, self.limit = 0, limit


def _make_state_factory(calls: _Calls) -> Callable:
    def make_state():
        step = tf.Variable(0, dtype=tf.int64)
        position = tf.Variable([0.25, -1.0, 2.0])
        velocity = tf.Variable([0.0, 0.5, -0.5])
        generator = tf.random.Generator.from_seed(31)

        def train_step():
            calls.count += 1
            require(calls.count <= calls.limit,
                    f"train_step ran {calls.count} times in one call, more than the steps asked for: does your "
                    "loop add 1 to `step` and stop when it equals total_steps?")
            velocity.assign(0.8 * velocity + generator.normal([3]))
            position.assign_add(0.1 * velocity)

        checkpoint = tf.train.Checkpoint(step=step, position=position, velocity=velocity, generator=generator)
        return checkpoint, step, train_step

    return make_state


def _state_of(checkpoint: tf.train.Checkpoint) -> dict[str, np.ndarray]:
    return {name: np.asarray(getattr(checkpoint, name).numpy() if name != "generator" else checkpoint.generator.state.numpy())
            for name in ("step", "position", "velocity", "generator")}


@exercise_check("11.4")
def check_train_to(train_to: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        calls = _Calls(limit=12)
        reference = train_to(_make_state_factory(calls), os.path.join(folder, "straight"), 9)
        require(isinstance(reference, tf.train.Checkpoint),
                f"train_to should return the checkpoint object, got {type(reference).__name__}")
        require(int(reference.step) == 9, f"after train_to(..., 9) the step is {int(reference.step)}, expected 9")
        require(calls.count == 9, f"train_step ran {calls.count} times for 9 steps from scratch")
        expected = _state_of(reference)

        run_dir = os.path.join(folder, "interrupted")
        calls.count = 0
        first = train_to(_make_state_factory(calls), run_dir, 4)
        require(first is not None and int(first.step) == 4, "train_to(..., 4) should end at step 4")
        latest = tf.train.latest_checkpoint(run_dir)
        require(latest is not None, "no checkpoint was saved in the directory you were given")
        saved_step = int(tf.train.load_checkpoint(latest).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
        require(saved_step == 4,
                f"after training to step 4 the newest checkpoint holds step {saved_step}: save after each step, "
                "once the step and its assign_add are done")
        on_disk = sorted(int(tf.train.load_checkpoint(os.path.join(run_dir, name[:-6]))
                             .get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
                         for name in os.listdir(run_dir) if name.endswith(".index"))
        require(len(on_disk) <= 2,
                f"{len(on_disk)} checkpoints are left in the directory after 4 steps; keep the newest 2 (max_to_keep=2)")
        require(on_disk == [3, 4],
                f"after training to step 4 the checkpoints on disk hold steps {on_disk}; with a save after every "
                "step and the newest 2 kept, they hold steps 3 and 4")
        calls.count = 0
        second = train_to(_make_state_factory(calls), run_dir, 9)
        require(not (calls.count == 9 and int(second.step) == 9),
                "the second call (on fresh objects) ran all 9 steps again: restore the newest checkpoint in "
                "`directory` before training, e.g. checkpoint.restore(manager.latest_checkpoint)")
        require(calls.count == 5,
                f"resuming from step 4 to 9 should run 5 steps, it ran {calls.count} (the step is now "
                f"{int(second.step)}): loop while step < total_steps, not for range(total_steps)")
        got = _state_of(second)
        differ = [name for name in expected if not np.array_equal(expected[name], got[name])]
        require(not differ, f"stopped at 4 and resumed to 9, these differ from one run to 9: {', '.join(differ)}")
        kept = [name for name in os.listdir(run_dir) if name.endswith(".index")]
        require(len(kept) == 2, f"{len(kept)} checkpoints are left in the directory; keep the newest 2 (max_to_keep=2)")
        calls.count = 0
        third = train_to(_make_state_factory(calls), run_dir, 9)
        require(calls.count == 0 and int(third.step) == 9,
                f"called again with total_steps=9 after reaching it, the loop ran {calls.count} step(s): it should run none")
    return "4 steps, then fresh objects resumed to 9, equal one run to 9; a save per step, 2 kept"


# --------------------------------------------------------------------------- 11.5


def _ema_fixture() -> tuple[keras.Model, keras.optimizers.Optimizer, np.ndarray]:
    keras.utils.set_random_seed(17)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(2)])
    optimizer = keras.optimizers.SGD(0.2, use_ema=True, ema_momentum=0.7)
    optimizer.build(model.trainable_variables)
    x = np.random.default_rng(3).normal(size=(24, 3)).astype("float32")
    y = np.stack([x[:, 0] * 2.0, x[:, 1] - x[:, 2]], axis=1)
    for start in range(0, 24, 6):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x[start:start + 6]) - y[start:start + 6]) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return model, optimizer, x


@exercise_check("11.5")
def check_ema_predictions(ema_predictions: Callable) -> str:
    model, optimizer, x = _ema_fixture()
    trained = [v.numpy().copy() for v in model.trainable_variables]
    averages = [v.numpy().copy() for v in optimizer.variables if v.path.endswith("_average")]
    probe = keras.models.clone_model(model)
    for variable, value in zip(probe.trainable_variables, trained):
        variable.assign(value)
    trained_out = probe(x).numpy()
    for variable, value in zip(probe.trainable_variables, averages):
        variable.assign(value)
    expected = probe(x).numpy()
    got = ema_predictions(model, optimizer, x)
    require(isinstance(got, np.ndarray), f"ema_predictions should return a NumPy array, got {type(got).__name__}")
    require(got.shape == expected.shape, f"the predictions have shape {got.shape}, expected {expected.shape}")
    require(not np.allclose(got, trained_out, atol=1e-6) or np.allclose(expected, trained_out, atol=1e-6),
            "these are the predictions of the trained weights, not of the averages: "
            "optimizer.finalize_variable_values(model.trainable_variables) swaps the averages in")
    require(np.allclose(got, expected, atol=1e-5), "the predictions match neither the EMA weights nor the trained ones")
    after = [v.numpy() for v in model.trainable_variables]
    require(all(np.array_equal(a, b) for a, b in zip(after, trained)),
            "the model no longer holds its trained weights: keep a copy before finalize_variable_values and "
            "assign it back after predicting")
    after_averages = [v.numpy() for v in optimizer.variables if v.path.endswith("_average")]
    require(all(np.array_equal(a, b) for a, b in zip(after_averages, averages)), "the optimizer's averages were changed")
    return "predictions with the EMA weights; model weights and averages unchanged afterwards"
