"""The checks of notebook 11: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex11
from helpers.resume import train_resumably, untracked_variables


def not_done(*args):
    raise NotImplementedError()


def passes(check, answer, capsys) -> str:
    check(answer)
    out = capsys.readouterr().out
    assert "passed" in out
    return out


def fails(check, answer, *hint_words: str) -> str:
    with pytest.raises(CheckFailed) as caught:
        check(answer)
    assert not isinstance(caught.value, ExerciseNotDone)
    message = str(caught.value)
    for word in hint_words:
        assert word in message, message
    return message


# --------------------------------------------------------------------------- 11.1


def checkpoint_reference(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, generator=generator,
                               iterator=iterator, seeds=untracked_variables(model))


def checkpoint_seed_paths(model, optimizer, step, generator, iterator):
    seeds = [v for v in model.non_trainable_variables if "seed_generator" in v.path]
    return tf.train.Checkpoint(net=model, opt=optimizer, global_step=step, rng=generator, data=iterator, dropout_seeds=seeds)


def checkpoint_all_variables_nested(model, optimizer, step, generator, iterator):
    loop = tf.train.Checkpoint(step=step, generator=generator, iterator=iterator)
    return tf.train.Checkpoint(weights=model.variables, optimizer=optimizer, loop=loop)


def checkpoint_no_seeds(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, generator=generator, iterator=iterator)


def checkpoint_no_iterator(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, generator=generator,
                               seeds=untracked_variables(model))


def checkpoint_no_generator(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, iterator=iterator,
                               seeds=untracked_variables(model))


def checkpoint_no_optimizer(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, step=step, generator=generator, iterator=iterator,
                               seeds=untracked_variables(model))


def checkpoint_trainable_only(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(weights=model.trainable_variables, optimizer=optimizer, step=step,
                               generator=generator, iterator=iterator, seeds=untracked_variables(model))


def checkpoint_no_step(model, optimizer, step, generator, iterator):
    return tf.train.Checkpoint(model=model, optimizer=optimizer, generator=generator, iterator=iterator,
                               seeds=untracked_variables(model))


@pytest.mark.parametrize("answer", [checkpoint_reference, checkpoint_seed_paths, checkpoint_all_variables_nested])
def test_training_checkpoint_accepts(answer, capsys):
    out = passes(ex11.check_training_checkpoint, answer, capsys)
    assert "Exercise 11.1 passed" in out


@pytest.mark.parametrize("answer, words", [
    (checkpoint_no_seeds, ["11.1", "Dropout seed states"]),
    (checkpoint_no_iterator, ["tf.data iterator"]),
    (checkpoint_no_generator, ["tf.random.Generator"]),
    (checkpoint_no_optimizer, ["optimizer", "slots"]),
    (checkpoint_trainable_only, ["BatchNormalization"]),
    (checkpoint_no_step, ["step counter"]),
])
def test_training_checkpoint_rejects(answer, words):
    fails(ex11.check_training_checkpoint, answer, *words)


def test_training_checkpoint_not_done():
    with pytest.raises(ExerciseNotDone):
        ex11.check_training_checkpoint(not_done)


# --------------------------------------------------------------------------- 11.2


def policy_reference(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3, step_counter=step, checkpoint_interval=10)


def policy_positional_named(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, os.fspath(directory), 3, checkpoint_name="model",
                                      checkpoint_interval=10, step_counter=step)


def policy_every_call(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3)


def policy_keep_five(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=5, step_counter=step, checkpoint_interval=10)


def policy_interval_five(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3, step_counter=step, checkpoint_interval=5)


def policy_keep_all(checkpoint, directory, step):
    return tf.train.CheckpointManager(checkpoint, directory, max_to_keep=None, step_counter=step, checkpoint_interval=10)


def policy_own_folder(checkpoint, directory, step):
    folder = os.path.join(os.path.dirname(directory), "ckpts")
    return tf.train.CheckpointManager(checkpoint, folder, max_to_keep=3, step_counter=step, checkpoint_interval=10)


def policy_returns_nothing(checkpoint, directory, step):
    tf.train.CheckpointManager(checkpoint, directory, max_to_keep=3, step_counter=step, checkpoint_interval=10)


@pytest.mark.parametrize("answer", [policy_reference, policy_positional_named])
def test_make_policy_accepts(answer, capsys):
    assert "Exercise 11.2 passed" in passes(ex11.check_make_policy, answer, capsys)


@pytest.mark.parametrize("answer, words", [
    (policy_every_call, ["every one of the 35 steps", "checkpoint_interval=10"]),
    (policy_keep_five, ["4 checkpoint(s)", "max_to_keep=3"]),
    (policy_interval_five, ["steps [1, 6, 11"]),
    (policy_keep_all, ["4 checkpoint(s)"]),
    (policy_own_folder, ["directory you were given"]),
    (policy_returns_nothing, ["CheckpointManager, got NoneType"]),
])
def test_make_policy_rejects(answer, words):
    fails(ex11.check_make_policy, answer, *words)


def test_make_policy_not_done():
    with pytest.raises(ExerciseNotDone):
        ex11.check_make_policy(not_done)


# --------------------------------------------------------------------------- 11.3


def _policy(size):
    return tf.train.CheckpointOptions(
        experimental_sharding_callback=tf.train.experimental.MaxShardSizePolicy(max_shard_size=size))


def sharded_reference(checkpoint, prefix, max_shard_mib):
    return checkpoint.write(prefix, options=_policy(int(max_shard_mib * 2**20)))


def sharded_with_save(checkpoint, prefix, max_shard_mib):
    return checkpoint.save(prefix, options=_policy(int(max_shard_mib * 1024 * 1024)))


def sharded_no_options(checkpoint, prefix, max_shard_mib):
    return checkpoint.write(prefix)


def sharded_hard_coded_mib(checkpoint, prefix, max_shard_mib):
    return checkpoint.write(prefix, options=_policy(2**20))


def sharded_by_task(checkpoint, prefix, max_shard_mib):
    options = tf.train.CheckpointOptions(experimental_sharding_callback=tf.train.experimental.ShardByTaskPolicy())
    return checkpoint.write(prefix, options=options)


def sharded_no_return(checkpoint, prefix, max_shard_mib):
    checkpoint.write(prefix, options=_policy(int(max_shard_mib * 2**20)))


def sharded_index_file(checkpoint, prefix, max_shard_mib):
    return checkpoint.write(prefix, options=_policy(int(max_shard_mib * 2**20))) + ".index"


def sharded_elsewhere(checkpoint, prefix, max_shard_mib):
    return checkpoint.write(os.path.join(os.path.dirname(prefix) + "_mine", "big"),
                            options=_policy(int(max_shard_mib * 2**20)))


@pytest.mark.parametrize("answer", [sharded_reference, sharded_with_save])
def test_save_sharded_accepts(answer, capsys):
    assert "Exercise 11.3 passed" in passes(ex11.check_save_sharded, answer, capsys)


@pytest.mark.parametrize("answer, words", [
    (sharded_no_options, ["1 data file", "MaxShardSizePolicy"]),
    (sharded_hard_coded_mib, ["more than 0.5 MiB"]),
    (sharded_by_task, ["1 data file"]),
    (sharded_no_return, ["got NoneType"]),
    (sharded_index_file, ["does not restore"]),
    (sharded_elsewhere, ["no data files were written"]),
])
def test_save_sharded_rejects(answer, words):
    fails(ex11.check_save_sharded, answer, *words)


def test_save_sharded_not_done():
    with pytest.raises(ExerciseNotDone):
        ex11.check_save_sharded(not_done)


# --------------------------------------------------------------------------- 11.4


def train_to_reference(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        train_step()
        step.assign_add(1)
        manager.save()
    return checkpoint


def train_to_with_recipe(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    train_resumably(checkpoint, step, train_step, directory, total_steps, max_to_keep=2)
    return checkpoint


def train_to_restore_or_initialize(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, os.fspath(directory), 2, step_counter=step)
    manager.restore_or_initialize()
    for _ in range(int(step), total_steps):
        train_step()
        step.assign_add(1)
        manager.save(checkpoint_number=step)
    return checkpoint


def train_to_no_restore(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    while int(step) < total_steps:
        train_step()
        step.assign_add(1)
        manager.save()
    return checkpoint


def train_to_range(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    for _ in range(total_steps):
        train_step()
        step.assign_add(1)
        manager.save()
    return checkpoint


def train_to_save_first(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        manager.save()
        train_step()
        step.assign_add(1)
    return checkpoint


def train_to_keep_five(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=5)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        train_step()
        step.assign_add(1)
        manager.save()
    return checkpoint


def train_to_no_increment(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        train_step()
        manager.save()
    return checkpoint


def train_to_returns_manager(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        train_step()
        step.assign_add(1)
        manager.save()
    return manager


def train_to_save_at_end(make_state, directory, total_steps):
    checkpoint, step, train_step = make_state()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    while int(step) < total_steps:
        train_step()
        step.assign_add(1)
    manager.save()
    return checkpoint


@pytest.mark.parametrize("answer", [train_to_reference, train_to_with_recipe, train_to_restore_or_initialize])
def test_train_to_accepts(answer, capsys):
    assert "Exercise 11.4 passed" in passes(ex11.check_train_to, answer, capsys)


@pytest.mark.parametrize("answer, words", [
    (train_to_no_restore, ["ran all 9 steps again", "restore"]),
    (train_to_range, ["should run 5 steps, it ran 9"]),
    (train_to_save_first, ["holds step 3"]),
    (train_to_keep_five, ["4 checkpoints", "max_to_keep=2"]),
    (train_to_no_increment, ["add 1 to `step`"]),
    (train_to_returns_manager, ["got CheckpointManager"]),
    (train_to_save_at_end, ["save after every step"]),
])
def test_train_to_rejects(answer, words):
    fails(ex11.check_train_to, answer, *words)


def test_train_to_not_done():
    with pytest.raises(ExerciseNotDone):
        ex11.check_train_to(not_done)


# --------------------------------------------------------------------------- 11.5


def ema_reference(model, optimizer, x):
    trained = [v.numpy() for v in model.trainable_variables]
    optimizer.finalize_variable_values(model.trainable_variables)
    predictions = model(x).numpy()
    for variable, value in zip(model.trainable_variables, trained):
        variable.assign(value)
    return predictions


def ema_with_clone(model, optimizer, x):
    averages = {v.path: v for v in optimizer.variables if v.path.endswith("_average")}
    copy = keras.models.clone_model(model)
    for variable, source in zip(copy.trainable_variables, model.trainable_variables):
        name = source.path.replace("/", "_") + "_average"
        variable.assign(next(a for path, a in averages.items() if path.endswith(name)))
    return copy.predict(x, verbose=0)


def ema_get_set_weights(model, optimizer, x):
    saved = model.get_weights()
    optimizer.finalize_variable_values(model.trainable_variables)
    out = np.asarray(model.predict(x, verbose=0))
    model.set_weights(saved)
    return out


def ema_trained_weights(model, optimizer, x):
    return model(x).numpy()


def ema_no_swap_back(model, optimizer, x):
    optimizer.finalize_variable_values(model.trainable_variables)
    return model(x).numpy()


def ema_tensor(model, optimizer, x):
    trained = [v.numpy() for v in model.trainable_variables]
    optimizer.finalize_variable_values(model.trainable_variables)
    predictions = model(x)
    for variable, value in zip(model.trainable_variables, trained):
        variable.assign(value)
    return predictions


def ema_wrong_pairing(model, optimizer, x):
    copy = keras.models.clone_model(model)
    for variable, value in zip(copy.trainable_variables, optimizer.variables[1:]):
        if tuple(variable.shape) == tuple(value.shape):
            variable.assign(value)
    return copy(x).numpy()


def ema_set_weights_only(model, optimizer, x):
    averages = [v.numpy() for v in optimizer.variables if v.path.endswith("_average")]
    model.set_weights(averages)
    return model(x).numpy()


@pytest.mark.parametrize("answer", [ema_reference, ema_with_clone, ema_get_set_weights])
def test_ema_predictions_accepts(answer, capsys):
    assert "Exercise 11.5 passed" in passes(ex11.check_ema_predictions, answer, capsys)


@pytest.mark.parametrize("answer, words", [
    (ema_trained_weights, ["trained weights, not of the averages"]),
    (ema_no_swap_back, ["no longer holds its trained weights"]),
    (ema_tensor, ["NumPy array"]),
    (ema_wrong_pairing, ["match neither"]),
    (ema_set_weights_only, ["no longer holds its trained weights"]),
])
def test_ema_predictions_rejects(answer, words):
    fails(ex11.check_ema_predictions, answer, *words)


def test_ema_predictions_not_done():
    with pytest.raises(ExerciseNotDone):
        ex11.check_ema_predictions(not_done)
