"""The checks of notebook 06: right answers pass, plausible mistakes get their hint."""

from __future__ import annotations

import os

import keras
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex06


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 06.1


def restore_hidden_layer(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_built_first(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    layer(tf.zeros((1, 3)))
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).read(ckpt_path)
    status.assert_existing_objects_matched()
    return layer


def restore_hidden_layer_by_keys(ckpt_path):
    reader = tf.train.load_checkpoint(ckpt_path)
    layer = keras.layers.Dense(4, activation="relu")
    layer.build((None, 3))
    layer.set_weights([reader.get_tensor("model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"),
                       reader.get_tensor("model/hidden/bias/.ATTRIBUTES/VARIABLE_VALUE")])
    return layer


def restore_hidden_layer_flat(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(hidden=layer).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_no_relu(ckpt_path):
    layer = keras.layers.Dense(4)
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_only_kernel(ckpt_path):
    reader = tf.train.load_checkpoint(ckpt_path)
    layer = keras.layers.Dense(4, activation="relu")
    layer.build((None, 3))
    layer.kernel.assign(reader.get_tensor("model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"))
    return layer


def restore_hidden_layer_asserting_everything(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path)
    layer.build((None, 3))
    status.assert_consumed()
    return layer


def restore_hidden_layer_wrong_units(ckpt_path):
    layer = keras.layers.Dense(2, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    return layer


def test_restore_hidden_layer_accepts_correct_answers(capsys):
    for answer in (restore_hidden_layer, restore_hidden_layer_built_first, restore_hidden_layer_by_keys):
        ex06.check_restore_hidden_layer(answer)
        assert "✔ Exercise 06.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, error, hint",
    [
        (restore_hidden_layer_flat, CheckFailed, "mirror both"),
        (restore_hidden_layer_no_relu, CheckFailed, "activation=\"relu\""),
        (restore_hidden_layer_only_kernel, CheckFailed, "kernel and bias"),
        (restore_hidden_layer_asserting_everything, CheckFailed, "Use expect_partial"),
        (restore_hidden_layer_wrong_units, CheckFailed, "make Dense\\(4\\)"),
        (lambda path: None, CheckFailed, "should return a keras.layers.Dense"),
    ],
)
def test_restore_hidden_layer_rejects_mistakes(answer, error, hint):
    with pytest.raises(error, match=hint):
        ex06.check_restore_hidden_layer(answer)


def test_restore_hidden_layer_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_hidden_layer(not_done)


# --------------------------------------------------------------------------- 06.2


def restore_for_inference(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.assert_existing_objects_matched().expect_partial()
    return model


def restore_for_inference_read(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).read(ckpt_path).assert_existing_objects_matched().expect_partial()
    return model


def restore_for_inference_own_check(ckpt_path, make_model):
    model = make_model()
    keys = {key for key, _ in tf.train.list_variables(ckpt_path)}
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    for needed in ("model/hidden/_kernel", "model/hidden/bias", "model/out/_kernel", "model/out/bias"):
        if needed + "/.ATTRIBUTES/VARIABLE_VALUE" not in keys:
            raise ValueError(f"the checkpoint has no {needed}")
    return model


def restore_for_inference_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return model


def restore_for_inference_unchecked(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


def restore_for_inference_nontrivial(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_nontrivial_match().expect_partial()
    return model


def restore_for_inference_wrong_edge(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(net=model).restore(ckpt_path).expect_partial()
    return model


def restore_for_inference_new_model(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched().expect_partial()
    return make_model()


def test_restore_for_inference_accepts_correct_answers(capsys):
    for answer in (restore_for_inference, restore_for_inference_read, restore_for_inference_own_check):
        ex06.check_restore_for_inference(answer)
        assert "✔ Exercise 06.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (restore_for_inference_consumed, "not assert_consumed"),
        (restore_for_inference_unchecked, "accepted silently"),
        (restore_for_inference_nontrivial, "save counter alone"),
        (restore_for_inference_wrong_edge, "does not hold the saved values"),
        (restore_for_inference_new_model, "call make_model\\(\\) once and return that model"),
        (lambda path, make: make(), "does not hold the saved values"),
    ],
)
def test_restore_for_inference_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex06.check_restore_for_inference(answer)


def test_restore_for_inference_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_for_inference(not_done)


# --------------------------------------------------------------------------- 06.3


def train_and_keep(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def train_and_keep_returning_saves(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory=directory, max_to_keep=keep)
    path = None
    for step in range(1, steps + 1):
        step_fn()
        path = manager.save(checkpoint_number=step)
    return path


def train_and_keep_everything(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.save(os.path.join(directory, "ckpt"))
    return path


def train_and_keep_first(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    first = None
    for _ in range(steps):
        step_fn()
        path = manager.save()
        first = first or path
    return first


def train_and_keep_save_before_step(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        manager.save()
        step_fn()
    return manager.latest_checkpoint


def train_and_keep_two(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def train_and_keep_save_at_end(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
    return manager.save()


def train_and_keep_five_steps(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(5):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def test_train_and_keep_accepts_correct_answers(capsys):
    for answer in (train_and_keep, train_and_keep_returning_saves):
        ex06.check_train_and_keep(answer)
        assert "✔ Exercise 06.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (train_and_keep_everything, "it should hold exactly 2"),
        (train_and_keep_first, "but the latest checkpoint is"),
        (train_and_keep_save_before_step, "save after calling step_fn"),
        (train_and_keep_two, "with steps=4 and keep=3"),
        (train_and_keep_save_at_end, "no checkpoint was saved after step"),
        (train_and_keep_five_steps, "should run 6 times"),
        (lambda *args: None, "nothing was written"),
    ],
)
def test_train_and_keep_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex06.check_train_and_keep(answer)


def test_train_and_keep_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_train_and_keep(not_done)


def train_and_keep_only_the_last(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for step in range(steps):
        step_fn()
        if step >= steps - keep:
            manager.save()
    return manager.latest_checkpoint


def test_train_and_keep_rejects_saving_only_the_last_steps():
    with pytest.raises(CheckFailed, match=r"no checkpoint was saved after step\(s\) \[1, 2, 3, 4\]"):
        ex06.check_train_and_keep(train_and_keep_only_the_last)
