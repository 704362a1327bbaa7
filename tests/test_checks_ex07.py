"""The checks of notebook 07: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os

import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex07
from helpers.migration import checkpoint_format, restore_name_based, write_name_based


def tf1_name_map(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel, "layer2/biases": l2.bias}


def tf1_name_map_keras_paths(model):
    return {v.path: v for v in model.weights}


def tf1_name_map_swapped(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.bias, "layer1/biases": l1.kernel, "layer2/weights": l2.kernel, "layer2/biases": l2.bias}


def tf1_name_map_other_layers(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel, "layer2/biases": l2.bias} | {
        "layer2/biases": tf.Variable([0.0])
    }


def load_any(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched()
    return "object-based"


def load_any_always_checkpoint(ckpt_path, model, name_map):
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return "object-based"


def load_any_unchecked(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return "object-based"


def export_for_tf1(model, out_prefix):
    return write_name_based(tf1_name_map(model), out_prefix)


def export_object_based(model, out_prefix):
    return tf.train.Checkpoint(model=model).write(out_prefix)


def export_swapped_layers(model, out_prefix):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    values = {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel,
              "layer2/biases": l2.bias + 1.0}
    return write_name_based(values, out_prefix)


def not_done(*args):
    raise NotImplementedError()


def test_tf1_name_map(capsys):
    ex07.check_tf1_name_map(tf1_name_map)
    assert "✔ Exercise 07.1 passed" in capsys.readouterr().out


def test_tf1_name_map_mistakes():
    with pytest.raises(CheckFailed, match="is not what the TF1 Saver wrote"):
        ex07.check_tf1_name_map(tf1_name_map_keras_paths)
    with pytest.raises(CheckFailed, match="wrong shape"):
        ex07.check_tf1_name_map(tf1_name_map_swapped)
    with pytest.raises(CheckFailed, match="must be a variable of the model"):
        ex07.check_tf1_name_map(tf1_name_map_other_layers)
    with pytest.raises(CheckFailed, match="should return a dict"):
        ex07.check_tf1_name_map(lambda model: list(model.weights))
    with pytest.raises(ExerciseNotDone):
        ex07.check_tf1_name_map(not_done)


def test_load_any(capsys):
    ex07.check_load_any(load_any)
    assert "✔ Exercise 07.2 passed" in capsys.readouterr().out


def test_load_any_mistakes():
    with pytest.raises(CheckFailed, match="restores nothing into Keras 3 layers"):
        ex07.check_load_any(load_any_always_checkpoint)
    with pytest.raises(CheckFailed, match="accepted silently"):
        ex07.check_load_any(load_any_unchecked)
    with pytest.raises(CheckFailed, match="should return 'name-based'"):
        ex07.check_load_any(lambda path, model, name_map: load_any(path, model, name_map).upper())
    with pytest.raises(ExerciseNotDone):
        ex07.check_load_any(not_done)


def test_export_for_tf1(capsys, tmp_path):
    ex07.check_export_for_tf1(export_for_tf1)
    assert "✔ Exercise 07.3 passed" in capsys.readouterr().out


def test_export_for_tf1_mistakes():
    with pytest.raises(CheckFailed, match="tf.train.Checkpoint writes object paths"):
        ex07.check_export_for_tf1(export_object_based)
    with pytest.raises(CheckFailed, match="does not answer like the Keras model"):
        ex07.check_export_for_tf1(export_swapped_layers)
    with pytest.raises(CheckFailed, match="should return the checkpoint path"):
        ex07.check_export_for_tf1(lambda model, prefix: None)
    with pytest.raises(ExerciseNotDone):
        ex07.check_export_for_tf1(not_done)


def test_reference_answers_agree_with_the_tf1_graph(tmp_path):
    path, answers = ex07._tf1_checkpoint(str(tmp_path))
    assert checkpoint_format(path) == "name-based"
    assert os.path.basename(path) == "model-1"
    assert abs(ex07._tf1_answers(path) - answers).max() < 1e-6
