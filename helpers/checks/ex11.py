"""Checks for notebook 11 (resuming exactly, crashes, checkpoints at scale).

Each check builds its own models, data and folders in a fresh temporary
folder, calls the learner's function, and says what is wrong when the answer
is not right. The models differ from the notebook's (other sizes, a
``BatchNormalization`` layer with non-trainable statistics, two ``Dropout``
layers), so an answer that hard-codes the notebook's objects fails.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import tempfile
from collections.abc import Iterator
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.checks.toolkit import call_answer
from helpers.checks import Hint, exercise_check, require
from helpers.resume import state_table, walk_objects

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

    def __init__(self, build_optimizer: bool = True) -> None:
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
        if build_optimizer:  # a resumed run restores into a fresh optimizer, not built yet
            self.optimizer.build(self.model.trainable_variables)
        self.step = tf.Variable(0, dtype=tf.int32)
        self.generator = tf.random.Generator.from_seed(23)
        features = np.random.default_rng(5).normal(size=(40, 5)).astype("float32")
        targets = np.stack([features[:, 0] - features[:, 3], features[:, 1] * 0.5], axis=1).astype("float32")
        self.iterator = iter(tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(40, seed=2).batch(8).repeat())

        def train_step():  # eager: tracing would take longer than the few steps a check runs
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


_SECTION_3 = "section 3, 'Each piece, left out'"


def _missing_piece_hint(checkpoint: tf.train.Checkpoint, state: _State) -> Hint | None:
    """A hint in two steps for the first piece of ``state`` the checkpoint does not reach, or None."""
    # walk_objects also adds Keras's untracked variables, which a checkpoint would NOT save: use its children only
    reached = {id(obj) for path, obj in walk_objects(checkpoint) if "<variables>" not in path}
    model_vars = state.model.variables
    seeds = [v for v in model_vars if "seed_generator" in v.path]
    stats = [v for v in state.model.non_trainable_variables if "moving" in v.path]
    trainable = state.model.trainable_variables
    if not any(id(v) in reached for v in trainable):
        return Hint(f"the checkpoint does not save the model's weights: what a resumed run loses without them is "
                    f"in {_SECTION_3}", "add the model to the checkpoint: model=model")
    if not all(id(v) in reached for v in trainable + stats):
        return Hint("the checkpoint saves the trainable weights but not the BatchNormalization statistics "
                    f"(non-trainable variables): save the object that holds both ({_SECTION_3})",
                    "save the model itself, model=model, not model.trainable_variables")
    if not all(id(v) in reached for v in seeds):
        return Hint("the model's Dropout seed states are not saved: a checkpoint of the model does not reach "
                    f"them ({_SECTION_3})",
                    "add them to the checkpoint, e.g. seeds=untracked_variables(model)")
    if not all(id(v) in reached for v in state.optimizer.variables):
        return Hint("the optimizer is not (fully) saved: its slots, its step count and so the learning-rate "
                    f"schedule's position are part of the state ({_SECTION_3})",
                    "add optimizer=optimizer (the object, which holds its slots and iterations)")
    if id(state.step) not in reached:
        return Hint(f"the step counter you were given is not saved (a new tf.Variable is another object): a "
                    f"resumed loop would not know where it was ({_SECTION_3})",
                    "add step=step, the variable passed in, not a copy")
    if id(state.generator.state) not in reached and id(state.generator) not in reached:
        return Hint(f"the tf.random.Generator you were given is not saved (a new or the global generator is "
                    f"another object): its state decides the next random numbers ({_SECTION_3})",
                    "add generator=generator, the object passed in, not a new one")
    if id(state.iterator) not in reached:
        return Hint(f"the tf.data iterator is not saved: its position and shuffle buffer decide the next batch "
                    f"({_SECTION_3})", "add iterator=iterator")
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
        require(hint is None, hint or "")  # type: ignore[arg-type]
        path = checkpoint.write(os.path.join(folder, "mid", "ckpt"))
        first.advance(4)
        second = _State(build_optimizer=False)
        again = training_checkpoint(second.model, second.optimizer, second.step, second.generator, second.iterator)
        require(isinstance(again, tf.train.Checkpoint),
                f"training_checkpoint should return a tf.train.Checkpoint, got {type(again).__name__}")
        again.read(path).assert_existing_objects_matched()
        second.advance(4)
        expected, got = state_table(**first.pieces()), state_table(**second.pieces())
        differ = [name for name in expected if expected[name] != got[name]]
        require(not differ, Hint(
            f"after restoring your checkpoint and training on, these pieces differ from the run that never "
            f"stopped: {', '.join(differ)}. A fresh object restores only what was saved as the object itself "
            f"({_SECTION_3})",
            f"pieces differ: {', '.join(differ)}. Save each as the object itself (optimizer=optimizer, not a "
            "list of its variables, which a fresh optimizer does not have yet), and the Dropout seed states",
            kind="differ"))
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
        readers = [tf.train.load_checkpoint(os.path.join(directory, name[:-6])) for name in kept]
        key = "global_step/.ATTRIBUTES/VARIABLE_VALUE"
        require(all(reader.has_tensor(key) and reader.has_tensor("weights/.ATTRIBUTES/VARIABLE_VALUE")
                    for reader in readers),
                "the checkpoints saved do not hold the `checkpoint` you were given: make the manager for "
                "that checkpoint itself, not a new one")
        steps_kept = sorted(int(reader.get_tensor(key)) for reader in readers)
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


@contextlib.contextmanager
def _shard_size_guard(limit: float) -> Iterator[None]:
    """Refuse a MaxShardSizePolicy far below ``limit`` MiB before TensorFlow uses it.

    A limit in KiB or bytes cuts each 256 KiB variable into thousands of slices, and the write then
    runs for minutes: the check stops it at the policy's construction, with the hint.
    """
    policy = tf.train.experimental.MaxShardSizePolicy
    original = policy.__init__

    def guarded(self, max_shard_size, *args, **kwargs):
        size = max_shard_size
        ok = isinstance(size, numbers.Real) and not isinstance(size, bool) and size >= limit * 2**20 / 4
        require(ok, f"with max_shard_mib={limit} your policy gets max_shard_size={size!r} bytes, far below "
                    f"{limit} MiB = {int(limit * 2**20)} bytes: max_shard_size counts bytes, so multiply "
                    "max_shard_mib by 2**20, and do not round it down to whole MiB first")
        original(self, max_shard_size, *args, **kwargs)

    policy.__init__ = guarded
    try:
        yield
    finally:
        policy.__init__ = original


@exercise_check("11.3")
def check_save_sharded(save_sharded: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        checkpoint, variables = _shard_fixture()
        before = {name: v.numpy().copy() for name, v in variables.items()}
        for limit in (0.5, 0.75):
            directory = os.path.join(folder, f"limit_{limit}")
            with _shard_size_guard(limit):
                path = save_sharded(checkpoint, os.path.join(directory, "big"), limit)
            require(isinstance(path, (str, os.PathLike)),
                    f"save_sharded should return the checkpoint's path, got {type(path).__name__}: return what "
                    "checkpoint.write (or save) returns")
            data_files = sorted(n for n in os.listdir(directory) if ".data-" in n) if os.path.isdir(directory) else []
            require(data_files, f"no data files were written under {os.path.basename(directory)!r}: write at the "
                                "prefix you were given")
            require(len(data_files) > 1,
                    f"with max_shard_mib={limit} the 1.5 MiB checkpoint was written in {len(data_files)} data file: "
                    "pass CheckpointOptions(experimental_sharding_callback=tf.train.experimental."
                    "MaxShardSizePolicy(max_shard_size=...)) to write/save")
            largest = max(os.path.getsize(os.path.join(directory, n)) for n in data_files)
            require(largest <= limit * 2**20,
                    f"with max_shard_mib={limit} a data file holds {largest} bytes, more than {limit} MiB = "
                    f"{int(limit * 2**20)} bytes: max_shard_size is in bytes, so multiply by 2**20")
            fresh = {name: tf.Variable(tf.zeros_like(v)) for name, v in variables.items()}
            shown = os.path.relpath(os.fspath(path), folder) if os.path.isabs(os.fspath(path)) else path
            call_answer(lambda: tf.train.Checkpoint(**fresh).read(os.fspath(path)).assert_existing_objects_matched(),
                        lambda error: (f"the path you returned, {shown!r}, does not restore: "
                                       f"{str(error).splitlines()[0][:80]}. Return what write/save returns (save "
                                       "adds a number to the prefix)."),
                        (tf.errors.OpError, ValueError, AssertionError))
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
    # Stopping at 10 leaves ckpt-9 and ckpt-10 on disk: "ckpt-9" sorts after "ckpt-10" as text.
    stop, total = 10, 12
    with tempfile.TemporaryDirectory() as folder:
        calls = _Calls(limit=total + 3)
        reference = train_to(_make_state_factory(calls), os.path.join(folder, "straight"), total)
        require(isinstance(reference, tf.train.Checkpoint),
                f"train_to should return the checkpoint object, got {type(reference).__name__}")
        require(int(reference.step) == total,
                f"after train_to(..., {total}) the step is {int(reference.step)}, expected {total}")
        require(calls.count == total, f"train_step ran {calls.count} times for {total} steps from scratch")
        expected = _state_of(reference)

        run_dir = os.path.join(folder, "interrupted")
        calls.count = 0
        first = train_to(_make_state_factory(calls), run_dir, stop)
        require(first is not None and int(first.step) == stop, f"train_to(..., {stop}) should end at step {stop}")
        latest = tf.train.latest_checkpoint(run_dir)
        require(latest is not None, "no checkpoint was saved in the directory you were given")
        saved_step = int(tf.train.load_checkpoint(latest).get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
        require(saved_step == stop,
                f"after training to step {stop} the newest checkpoint holds step {saved_step}: save after each "
                "step, once the step and its assign_add are done")
        on_disk = sorted(int(tf.train.load_checkpoint(os.path.join(run_dir, name[:-6]))
                             .get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))
                         for name in os.listdir(run_dir) if name.endswith(".index"))
        require(len(on_disk) <= 2,
                f"{len(on_disk)} checkpoints are left in the directory after {stop} steps; keep the newest 2 "
                "(max_to_keep=2)")
        require(on_disk == [stop - 1, stop],
                f"after training to step {stop} the checkpoints on disk hold steps {on_disk}; with a save after "
                f"every step and the newest 2 kept, they hold steps {stop - 1} and {stop}")
        calls.count = 0
        second = train_to(_make_state_factory(calls), run_dir, total)
        require(not (calls.count == total and int(second.step) == total),
                f"the second call (on fresh objects) ran all {total} steps again: restore the newest checkpoint "
                "in `directory` before training, e.g. checkpoint.restore(manager.latest_checkpoint)")
        require(calls.count == total - stop,
                f"resuming from step {stop} to {total} should run {total - stop} steps, it ran {calls.count} "
                f"(the step is now {int(second.step)}): restore the newest checkpoint (manager.latest_checkpoint, "
                "not the last file name in sorted order), and loop while step < total_steps")
        got = _state_of(second)
        differ = [name for name in expected if not np.array_equal(expected[name], got[name])]
        require(not differ,
                f"stopped at {stop} and resumed to {total}, these differ from one run to {total}: {', '.join(differ)}")
        kept = [name for name in os.listdir(run_dir) if name.endswith(".index")]
        require(len(kept) == 2, f"{len(kept)} checkpoints are left in the directory; keep the newest 2 (max_to_keep=2)")
        calls.count = 0
        third = train_to(_make_state_factory(calls), run_dir, total)
        require(calls.count == 0 and int(third.step) == total,
                f"called again with total_steps={total} after reaching it, the loop ran {calls.count} step(s): "
                "it should run none")
    return f"{stop} steps, then fresh objects resumed to {total}, equal one run to {total}; a save per step, 2 kept"


# --------------------------------------------------------------------------- 11.5


def _ema_fixture(seed: int = 17) -> tuple[keras.Model, keras.optimizers.Optimizer, np.ndarray]:
    """A model whose answer differs in training mode (BatchNorm, Dropout), with non-trainable statistics
    before its last trainable layer and one output (a size-1 axis)."""
    keras.utils.set_random_seed(seed)
    # Two layers of one shape whose names sort one way as variable paths ("mix_1/..." before "mix_10/...")
    # and the other way as the averages' names ("mix_10_..." before "mix_1_..."): pairing by sorted
    # names swaps their averages without an error.
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, activation="tanh", name="mix_1"),
                              keras.layers.BatchNormalization(name="norm"),
                              keras.layers.Dense(4, activation="tanh", name="mix_10"), keras.layers.Dropout(0.3),
                              keras.layers.Dense(1, name="out")], name="ema_net")
    optimizer = keras.optimizers.SGD(0.2, use_ema=True, ema_momentum=0.7)
    x = np.random.default_rng(3).normal(size=(24, 4)).astype("float32")
    _train_ema(model, optimizer, model.trainable_variables, x)
    return model, optimizer, x


def _train_ema(model: keras.Model, optimizer: keras.optimizers.Optimizer, order: list, x: np.ndarray) -> None:
    """Four steps of a custom loop, the optimizer built with the variables in ``order``."""
    optimizer.build(order)
    y = (x[:, :1] * 2.0 + x[:, 1:2] - x[:, 2:3] + 0.5 * x[:, 3:]).astype("float32")
    for start in range(0, 24, 6):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x[start:start + 6], training=True) - y[start:start + 6]) ** 2)
        optimizer.apply_gradients(zip(tape.gradient(loss, order), order))


def _finalize_error(error: BaseException) -> bool:
    """Whether ``error`` is finalize_variable_values refusing a non-trainable variable (no average)."""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return "finalize_variable_values" in frames and (
        "Cannot assign value to variable" in str(error) or "The length of model variables" in str(error))


@exercise_check("11.5")
def check_ema_predictions(ema_predictions: Callable) -> str:
    # two models of one architecture: a snapshot kept between calls gives the second the first's weights.
    # (No fixture with the optimizer built in another order: finalize_variable_values pairs the averages
    # with the list it is given by position, so there the chapter's own route would be wrong too.)
    for model, optimizer, x in (_ema_fixture(17), _ema_fixture(29)):
        _check_ema_model(ema_predictions, model, optimizer, x)
    return "predictions with the EMA weights; model weights and averages unchanged afterwards"


def _check_ema_model(ema_predictions: Callable, model: keras.Model, optimizer: keras.optimizers.Optimizer,
                     x: np.ndarray) -> None:
    trained = [v.numpy().copy() for v in model.trainable_variables]
    state = [v.numpy().copy() for v in model.weights]
    averages = [v.numpy().copy() for v in optimizer.variables if v.path.endswith("_average")]
    trained_out = model(x).numpy()
    optimizer.finalize_variable_values(model.trainable_variables)  # each variable gets its own average
    expected = model(x).numpy()
    for variable, value in zip(model.trainable_variables, trained):
        variable.assign(value)
    got = call_answer(lambda: ema_predictions(model, optimizer, x), lambda error: (
        "finalize_variable_values refused a variable it has no average for: pass "
        "model.trainable_variables, the averages exist only for trained variables"
        if _finalize_error(error) else None), ValueError)
    require(isinstance(got, np.ndarray), f"ema_predictions should return a NumPy array, got {type(got).__name__}")
    require(got.shape == expected.shape, f"the predictions have shape {got.shape}, expected {expected.shape}: "
                                         "return what the model answers, without squeezing or reshaping it")
    require(not np.allclose(got, trained_out, atol=1e-6) or np.allclose(expected, trained_out, atol=1e-6), Hint(
        "these are the predictions of the trained weights, not of the averages: the optimizer keeps the "
        "averages apart until asked to swap them in (section 11, 'EMA weights')",
        "optimizer.finalize_variable_values(model.trainable_variables) swaps the averages in"))
    require(np.allclose(got, expected, atol=1e-5),
            "the predictions match neither the EMA weights nor the trained ones: give each trainable variable "
            "its own average (not paired by sorted names), keep the BatchNorm statistics (a clone "
            "starts without them), predict with model(x), not training=True")
    after = [v.numpy() for v in model.trainable_variables]
    require(all(np.array_equal(a, b) for a, b in zip(after, trained)),
            "the model no longer holds its trained weights: keep a copy of this model's weights before "
            "finalize_variable_values and assign it back after predicting (nothing kept between calls)")
    after_averages = [v.numpy() for v in optimizer.variables if v.path.endswith("_average")]
    require(all(np.array_equal(a, b) for a, b in zip(after_averages, averages)), "the optimizer's averages were changed")
    require(all(np.array_equal(v.numpy(), value) for v, value in zip(model.weights, state)),
            "the model's non-trainable state (BatchNorm statistics) changed: the averages are for the trainable "
            "variables only, and predicting must not train")
