"""The checks of notebook 07: right answers pass, plausible mistakes get their hint."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex07
from helpers.migration import checkpoint_format, restore_name_based, variables_by_key, write_name_based

V1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 07.1


def tf1_name_map(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel, "layer2/biases": l2.bias}


def tf1_name_map_by_position(model):
    first, second = model.layers
    return dict(zip(["layer1/weights", "layer1/biases", "layer2/weights", "layer2/biases"],
                    [first.kernel, first.bias, second.kernel, second.bias]))


def tf1_name_map_rewritten(model):
    renamed = {}
    for key, variable in variables_by_key(model).items():
        layer, name = key.split("/")[-2:]
        renamed[f"{layer}/{ {'kernel': 'weights', 'bias': 'biases'}[name] }"] = variable
    return renamed


def tf1_name_map_keras_paths(model):
    return {v.path: v for v in model.weights}


def tf1_name_map_swapped(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.bias, "layer1/biases": l1.kernel, "layer2/weights": l2.kernel, "layer2/biases": l2.bias}


def tf1_name_map_new_variable(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel, "layer1/biases": l1.bias, "layer2/weights": l2.kernel,
            "layer2/biases": tf.Variable([0.0])}


def tf1_name_map_with_colon(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights:0": l1.kernel, "layer1/biases:0": l1.bias, "layer2/weights:0": l2.kernel,
            "layer2/biases:0": l2.bias}


def tf1_name_map_keras_names(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/kernel": l1.kernel, "layer1/bias": l1.bias, "layer2/kernel": l2.kernel, "layer2/bias": l2.bias}


def tf1_name_map_layers_crossed(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l2.kernel, "layer1/biases": l2.bias, "layer2/weights": l1.kernel, "layer2/biases": l1.bias}


def tf1_name_map_values(model):
    l1, l2 = model.get_layer("layer1"), model.get_layer("layer2")
    return {"layer1/weights": l1.kernel.numpy(), "layer1/biases": l1.bias.numpy(),
            "layer2/weights": l2.kernel.numpy(), "layer2/biases": l2.bias.numpy()}


def test_tf1_name_map_accepts_correct_answers(capsys):
    for answer in (tf1_name_map, tf1_name_map_by_position, tf1_name_map_rewritten):
        ex07.check_tf1_name_map(answer)
        assert "✔ Exercise 07.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (tf1_name_map_keras_paths, "is not what the TF1 Saver wrote"),
        (tf1_name_map_with_colon, "is not what the TF1 Saver wrote"),
        (tf1_name_map_keras_names, "is not what the TF1 Saver wrote"),
        (tf1_name_map_swapped, "wrong shape"),
        (tf1_name_map_layers_crossed, "wrong shape"),
        (tf1_name_map_new_variable, "must be a variable of the model"),
        (tf1_name_map_values, "must be a variable of the model"),
        (lambda model: list(model.weights), "should return a dict"),
    ],
)
def test_tf1_name_map_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex07.check_tf1_name_map(answer)


def test_tf1_name_map_stub():
    with pytest.raises(ExerciseNotDone):
        ex07.check_tf1_name_map(not_done)


# --------------------------------------------------------------------------- 07.2


def load_any(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched().expect_partial()
    return "object-based"


def load_any_by_keys(ckpt_path, model, name_map):
    keys = [name for name, _ in tf.train.list_variables(ckpt_path)]
    if "_CHECKPOINTABLE_OBJECT_GRAPH" in keys:
        status = tf.train.Checkpoint(model=model).read(ckpt_path)
        status.assert_existing_objects_matched()
        status.expect_partial()
        return "object-based"
    report = restore_name_based(ckpt_path, name_map, strict=False)
    assert not report.missing
    return "name-based"


def load_any_checked_first(ckpt_path, model, name_map):
    """The notebook's reference answer: the map is checked against the file before anything is
    restored, and the report is read (only the file's extra names may be skipped)."""
    kind = checkpoint_format(ckpt_path)
    if kind == "name-based":
        shapes = dict(tf.train.list_variables(ckpt_path))
        absent = [key for key, var in name_map.items() if shapes.get(key) != list(var.shape)]
        if absent:
            raise ValueError(f"{ckpt_path} has no value of the right shape for {absent}")
        report = restore_name_based(ckpt_path, name_map, strict=False)
        assert report.skipped == report.unexpected, report
    else:
        tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched().expect_partial()
    return kind


def load_any_always_checkpoint(ckpt_path, model, name_map):
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return checkpoint_format(ckpt_path)


def load_any_unchecked(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return "object-based"


def load_any_strict(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched()
    return "object-based"


def load_any_consumed(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return "object-based"


def load_any_wrong_labels(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        restore_name_based(ckpt_path, name_map, strict=False)
        return "tf1"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched()
    return "tf2"


def load_any_saver(ckpt_path, model, name_map):
    if checkpoint_format(ckpt_path) == "name-based":
        V1.train.Saver(var_list=name_map).restore(None, ckpt_path)
        return "name-based"
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched()
    return "object-based"


def test_load_any_accepts_correct_answers(capsys):
    for answer in (load_any, load_any_by_keys, load_any_checked_first):
        ex07.check_load_any(answer)
        assert "✔ Exercise 07.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, error, hint",
    [
        (load_any_always_checkpoint, CheckFailed, "restores nothing into Keras 3 layers"),
        (load_any_unchecked, CheckFailed, "accepted silently"),
        (load_any_strict, LearnerCodeError, "CheckpointMismatchError"),
        (load_any_consumed, CheckFailed, "so assert_consumed\\(\\) fails"),
        (load_any_wrong_labels, CheckFailed, "should return 'name-based'"),
        (load_any_saver, LearnerCodeError, "NotFoundError"),
    ],
)
def test_load_any_rejects_mistakes(answer, error, hint):
    with pytest.raises(error, match=hint):
        ex07.check_load_any(answer)


def test_load_any_stub():
    with pytest.raises(ExerciseNotDone):
        ex07.check_load_any(not_done)


# --------------------------------------------------------------------------- 07.3


def export_for_tf1(model, out_prefix):
    return write_name_based(tf1_name_map(model), out_prefix)


def export_for_tf1_saver_values(model, out_prefix):
    values = {name: variable.value for name, variable in tf1_name_map(model).items()}
    return V1.train.Saver(var_list=values).save(None, out_prefix, write_meta_graph=False)


def export_object_based(model, out_prefix):
    return tf.train.Checkpoint(model=model).write(out_prefix)


def export_saver_keras_variables(model, out_prefix):
    return V1.train.Saver(var_list=tf1_name_map(model)).save(None, out_prefix, write_meta_graph=False)


def export_keras_paths(model, out_prefix):
    return write_name_based(variables_by_key(model), out_prefix)


def export_untrained(model, out_prefix):
    return write_name_based(tf1_name_map(ex07.make_keras_mlp()), out_prefix)


def export_returning_index(model, out_prefix):
    return write_name_based(tf1_name_map(model), out_prefix) + ".index"


def export_zeroing_biases(model, out_prefix):
    for layer in model.layers:
        layer.bias.assign(np.zeros(layer.bias.shape, np.float32))
    return write_name_based(tf1_name_map(model), out_prefix)


def test_export_for_tf1_accepts_correct_answers(capsys):
    for answer in (export_for_tf1, export_for_tf1_saver_values):
        ex07.check_export_for_tf1(answer)
        assert "✔ Exercise 07.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (export_object_based, "tf.train.Checkpoint writes object paths"),
        (export_saver_keras_variables, "adds 'VARIABLE_VALUE'"),
        (export_keras_paths, "the TF1 graph looks for"),
        (export_untrained, "does not answer like the Keras model"),
        (export_returning_index, "no checkpoint at the path returned"),
        (export_zeroing_biases, "changed the model's weights"),
        (lambda model, prefix: None, "should return the checkpoint's path"),
    ],
)
def test_export_for_tf1_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex07.check_export_for_tf1(answer)


def test_export_for_tf1_stub():
    with pytest.raises(ExerciseNotDone):
        ex07.check_export_for_tf1(not_done)


def test_reference_answers_agree_with_the_tf1_graph(tmp_path):
    path, answers = ex07._tf1_checkpoint(str(tmp_path))
    assert checkpoint_format(path) == "name-based"
    assert os.path.basename(path) == "model-1"
    assert abs(ex07._tf1_answers(path) - answers).max() < 1e-6
    reader = tf.train.load_checkpoint(path)
    biases = reader.get_tensor("layer1/biases")
    assert np.all(biases != 0) and len(set(np.round(biases, 6))) == len(biases)


def export_with_a_step(model, out_prefix):
    values = {name: variable.value for name, variable in tf1_name_map(model).items()}
    return V1.train.Saver(var_list=values).save(None, out_prefix, global_step=1, write_meta_graph=False)


def test_export_for_tf1_rejects_another_prefix():
    with pytest.raises(CheckFailed, match="not at out_prefix"):
        ex07.check_export_for_tf1(export_with_a_step)
