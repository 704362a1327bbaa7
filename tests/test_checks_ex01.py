"""The checks of notebook 01 pass right answers and explain typical wrong ones."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex01

v1 = tf.compat.v1


def _stub(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 01.1


def save_trainable_only(sess, prefix):
    return v1.train.Saver(var_list=v1.trainable_variables()).save(sess, prefix)


def test_01_1_right_answer(capsys):
    ex01.check_save_trainable_only(save_trainable_only)
    assert "✔ Exercise 01.1 passed" in capsys.readouterr().out


def test_01_1_saving_everything_names_global_step():
    with pytest.raises(CheckFailed, match="also holds 'global_step'"):
        ex01.check_save_trainable_only(lambda sess, prefix: v1.train.Saver().save(sess, prefix))


def test_01_1_forgetting_to_return_the_path():
    with pytest.raises(CheckFailed, match="returned None"):
        ex01.check_save_trainable_only(lambda sess, prefix: save_trainable_only(sess, prefix) and None)


def test_01_1_stub():
    with pytest.raises(ExerciseNotDone):
        ex01.check_save_trainable_only(_stub)


# --------------------------------------------------------------------------- 01.2


def save_without_scope(sess, scope, prefix):
    mapping = {v.op.name.removeprefix(scope + "/"): v for v in v1.global_variables(scope + "/")}
    return v1.train.Saver(mapping).save(sess, prefix)


def test_01_2_right_answer(capsys):
    ex01.check_save_without_scope(save_without_scope)
    assert "✔ Exercise 01.2 passed" in capsys.readouterr().out


def test_01_2_saving_both_models():
    with pytest.raises(CheckFailed, match="teacher's variables too"):
        ex01.check_save_without_scope(lambda sess, scope, prefix: v1.train.Saver().save(sess, prefix))


def test_01_2_keeping_the_scope():
    def keeps_scope(sess, scope, prefix):
        return v1.train.Saver(v1.global_variables(scope + "/")).save(sess, prefix)

    with pytest.raises(CheckFailed, match="still start with the scope"):
        ex01.check_save_without_scope(keeps_scope)


def test_01_2_using_variable_name_with_output_suffix():
    def uses_name(sess, scope, prefix):
        mapping = {v.name.removeprefix(scope + "/"): v for v in v1.global_variables(scope + "/")}
        return v1.train.Saver(mapping).save(sess, prefix)

    with pytest.raises(CheckFailed, match="end in ':0'"):
        ex01.check_save_without_scope(uses_name)


# --------------------------------------------------------------------------- 01.3


def restore_latest(sess, folder):
    v1.train.Saver().restore(sess, tf.train.latest_checkpoint(folder))
    return int(sess.run(v1.train.get_global_step()))


def test_01_3_right_answer(capsys):
    ex01.check_restore_latest(restore_latest)
    assert "✔ Exercise 01.3 passed" in capsys.readouterr().out


def test_01_3_restoring_the_oldest():
    def oldest(sess, folder):
        paths = v1.train.get_checkpoint_state(folder).all_model_checkpoint_paths
        v1.train.Saver().restore(sess, paths[0])
        return int(sess.run(v1.train.get_global_step()))

    with pytest.raises(CheckFailed, match="restored the oldest"):
        ex01.check_restore_latest(oldest)


def test_01_3_not_restoring_at_all():
    with pytest.raises(CheckFailed, match="were not restored"):
        ex01.check_restore_latest(lambda sess, folder: 30)


def test_01_3_returning_nothing():
    with pytest.raises(CheckFailed, match="returned None"):
        ex01.check_restore_latest(lambda sess, folder: restore_latest(sess, folder) and None)


# --------------------------------------------------------------------------- 01.4


def count_parameters(prefix):
    return sum(int(np.prod(shape)) for _, shape in tf.train.list_variables(prefix))


def test_01_4_right_answer(capsys):
    ex01.check_count_parameters(count_parameters)
    assert "26 numbers" in capsys.readouterr().out


def test_01_4_counting_variables_instead_of_numbers():
    with pytest.raises(CheckFailed, match="number of variables"):
        ex01.check_count_parameters(lambda prefix: len(tf.train.list_variables(prefix)))


def test_01_4_building_a_graph():
    def via_graph(prefix):
        v1.train.import_meta_graph(prefix + ".meta")
        return count_parameters(prefix)

    with tf.Graph().as_default():
        with pytest.raises(CheckFailed, match="added ops to a graph"):
            ex01.check_count_parameters(via_graph)
