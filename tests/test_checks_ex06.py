"""The checks of notebook 06: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os

import keras
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex06


def restore_hidden_layer(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_flat(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(hidden=layer).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_for_inference(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.assert_existing_objects_matched().expect_partial()
    return model


def restore_for_inference_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return model


def restore_for_inference_unchecked(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


def train_and_keep(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


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


def not_done(*args):
    raise NotImplementedError()


def test_restore_hidden_layer(capsys):
    ex06.check_restore_hidden_layer(restore_hidden_layer)
    assert "✔ Exercise 06.1 passed" in capsys.readouterr().out


def test_restore_hidden_layer_mistakes():
    with pytest.raises(CheckFailed, match="mirror both"):
        ex06.check_restore_hidden_layer(restore_hidden_layer_flat)
    with pytest.raises(CheckFailed, match="should return a keras.layers.Dense"):
        ex06.check_restore_hidden_layer(lambda path: None)
    with pytest.raises(CheckFailed, match=r"has shape \(3, 2\)"):
        ex06.check_restore_hidden_layer(lambda path: keras.layers.Dense(2))
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_hidden_layer(not_done)


def test_restore_for_inference(capsys):
    ex06.check_restore_for_inference(restore_for_inference)
    assert "✔ Exercise 06.2 passed" in capsys.readouterr().out


def test_restore_for_inference_mistakes():
    with pytest.raises(CheckFailed, match="not assert_consumed"):
        ex06.check_restore_for_inference(restore_for_inference_consumed)
    with pytest.raises(CheckFailed, match="accepted silently"):
        ex06.check_restore_for_inference(restore_for_inference_unchecked)
    with pytest.raises(CheckFailed, match="does not answer like the saved one"):
        ex06.check_restore_for_inference(lambda path, make: make())
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_for_inference(not_done)


def test_train_and_keep(capsys):
    ex06.check_train_and_keep(train_and_keep)
    assert "✔ Exercise 06.3 passed" in capsys.readouterr().out


def test_train_and_keep_mistakes():
    with pytest.raises(CheckFailed, match="holds 5 checkpoint"):
        ex06.check_train_and_keep(train_and_keep_everything)
    with pytest.raises(CheckFailed, match="the latest checkpoint is"):
        ex06.check_train_and_keep(train_and_keep_first)
    with pytest.raises(CheckFailed, match="nothing was written"):
        ex06.check_train_and_keep(lambda *args: None)
    with pytest.raises(ExerciseNotDone):
        ex06.check_train_and_keep(not_done)
