"""The checks of notebook 01: right answers written several ways pass, a learner's wrong ones get their hint."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex01
from helpers.inspection import resolve_checkpoint

V1 = tf.compat.v1


def _stub(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 01.1


def count_parameters(prefix):
    return sum(int(np.prod(shape)) for _, shape in tf.train.list_variables(prefix))


def count_with_a_reader(prefix):
    shapes = tf.train.load_checkpoint(os.fspath(prefix)).get_variable_to_shape_map().values()
    total = 0
    for shape in shapes:
        size = 1
        for dim in shape:
            size *= dim
        total += size
    return total


def count_with_the_course_helper(prefix):
    from helpers.inspection import describe_checkpoint

    return sum(int(np.prod(v.shape)) for v in describe_checkpoint(prefix).variables)


@pytest.mark.parametrize("answer", [count_parameters, count_with_a_reader, count_with_the_course_helper])
def test_01_1_right_answers(answer, capsys):
    ex01.check_count_parameters(answer)
    assert "✔ Exercise 01.1 passed" in capsys.readouterr().out


def test_01_1_stub():
    with pytest.raises(ExerciseNotDone):
        ex01.check_count_parameters(_stub)


def via_meta_graph(prefix):
    with tf.Graph().as_default():
        V1.train.import_meta_graph(os.fspath(prefix) + ".meta")
        return sum(int(np.prod(v.shape)) for v in V1.global_variables())


@pytest.mark.parametrize("wrong, hint", [
    (lambda prefix: len(tf.train.list_variables(prefix)), "number of variables"),
    (lambda prefix: sum(len(shape) for _, shape in tf.train.list_variables(prefix)), "stores 27 numbers"),
    (lambda prefix: sum(int(np.prod(shape)) for _, shape in tf.train.list_variables(prefix) if shape),
     "A scalar"),
    (lambda prefix: 26, "stores 27 numbers"),
    (lambda prefix: sum(shape[0] for _, shape in tf.train.list_variables(prefix) if shape), "you returned 13"),
    (via_meta_graph, "built a graph"),
    (lambda prefix: print(count_parameters(prefix)), "returned None"),
])
def test_01_1_wrong_answers(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex01.check_count_parameters(wrong)


def test_01_1_importing_into_the_callers_graph_is_building_one():
    def into_default_graph(prefix):
        V1.train.import_meta_graph(os.fspath(prefix) + ".meta")
        return count_parameters(prefix)

    with tf.Graph().as_default():
        with pytest.raises(CheckFailed, match="built a graph \\(ops added to the default graph\\)"):
            ex01.check_count_parameters(into_default_graph)


def test_01_1_string_only_code_fails_on_a_path():
    def string_only(prefix):
        return sum(int(np.prod(s)) for _, s in tf.train.list_variables(prefix + ""))

    with pytest.raises(LearnerCodeError, match="string_only"):
        ex01.check_count_parameters(string_only)


# --------------------------------------------------------------------------- 01.2


def save_trainable_only(sess, prefix):
    saver = V1.train.Saver(var_list=V1.trainable_variables())
    return saver.save(sess, prefix, write_meta_graph=False)


def save_trainable_by_collection(sess, prefix):
    variables = sess.graph.get_collection(V1.GraphKeys.TRAINABLE_VARIABLES)
    saver = V1.train.Saver({v.op.name: v for v in variables}, save_relative_paths=True)
    return Path(saver.save(sess, Path(prefix).as_posix(), write_meta_graph=False))


@pytest.mark.parametrize("answer", [save_trainable_only, save_trainable_by_collection])
def test_01_2_right_answers(answer, capsys):
    ex01.check_save_trainable_only(answer)
    assert "✔ Exercise 01.2 passed" in capsys.readouterr().out


def test_01_2_stub():
    with pytest.raises(ExerciseNotDone):
        ex01.check_save_trainable_only(_stub)


def _notebook_names(sess, prefix):
    return V1.train.Saver(V1.trainable_variables("linear")).save(sess, prefix, write_meta_graph=False)


def _removes_old_files(sess, prefix):
    folder = os.path.dirname(prefix)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    return save_trainable_only(sess, prefix)


@pytest.mark.parametrize("wrong, error, hint", [
    (lambda sess, prefix: V1.train.Saver().save(sess, prefix, write_meta_graph=False), CheckFailed,
     "non-trainable"),
    (lambda sess, prefix: V1.train.Saver(V1.trainable_variables()).save(sess, prefix), CheckFailed, "'.meta'"),
    (lambda sess, prefix: V1.train.Saver({v.name: v for v in V1.trainable_variables()}).save(
        sess, prefix, write_meta_graph=False), CheckFailed, "end in ':0'"),
    (lambda sess, prefix: V1.train.Saver([v for v in V1.trainable_variables() if "kernel" in v.name]).save(
        sess, prefix, write_meta_graph=False), CheckFailed, "every trainable variable"),
    (lambda sess, prefix: V1.train.Saver(V1.trainable_variables()[:2]).save(
        sess, prefix, write_meta_graph=False), CheckFailed, "every trainable variable"),
    (lambda sess, prefix: save_trainable_only(sess, prefix) and None, CheckFailed, "returned None"),
    (_notebook_names, LearnerCodeError, "No variables to save"),
    (_removes_old_files, CheckFailed, "was changed or deleted"),
])
def test_01_2_wrong_answers(wrong, error, hint):
    with pytest.raises(error, match=hint):
        ex01.check_save_trainable_only(wrong)


# --------------------------------------------------------------------------- 01.3


def save_without_scope(sess, scope, prefix):
    mapping = {v.op.name.removeprefix(scope + "/"): v for v in V1.global_variables(scope + "/")}
    return V1.train.Saver(mapping).save(sess, prefix)


def save_without_scope_by_slicing(sess, scope, prefix):
    start = scope + "/"
    mapping = {}
    for variable in V1.global_variables():
        if variable.op.name.startswith(start):
            mapping[variable.op.name[len(start):]] = variable
    return V1.train.Saver(var_list=mapping).save(sess, prefix, write_meta_graph=False)


@pytest.mark.parametrize("answer", [save_without_scope, save_without_scope_by_slicing])
def test_01_3_right_answers(answer, capsys):
    ex01.check_save_without_scope(answer)
    assert "✔ Exercise 01.3 passed" in capsys.readouterr().out


def test_01_3_stub():
    with pytest.raises(ExerciseNotDone):
        ex01.check_save_without_scope(_stub)


def _saver_of(mapping_of):
    return lambda sess, scope, prefix: V1.train.Saver(mapping_of(scope)).save(sess, prefix)


@pytest.mark.parametrize("wrong, error, hint", [
    (lambda sess, scope, prefix: V1.train.Saver().save(sess, prefix), CheckFailed, "still start with a scope"),
    (_saver_of(lambda scope: V1.global_variables(scope + "/")), CheckFailed, "still start with a scope"),
    (_saver_of(lambda scope: {v.op.name.removeprefix(scope + "/"): v for v in V1.global_variables(scope)}),
     CheckFailed, "mind the '/'"),
    (_saver_of(lambda scope: {v.name.removeprefix(scope + "/"): v for v in V1.global_variables(scope + "/")}),
     CheckFailed, "end in ':0'"),
    (_saver_of(lambda scope: {v.op.name.lstrip(scope + "/"): v for v in V1.global_variables(scope + "/")}),
     CheckFailed, "`lstrip` removes characters"),
    (_saver_of(lambda scope: {v.op.name.split("/", 1)[1]: v for v in V1.trainable_variables(scope + "/")}),
     CheckFailed, "keep every variable under the scope"),
    (_saver_of(lambda scope: {v.op.name.split("/")[-1]: v for v in V1.global_variables(scope + "/")}),
     CheckFailed, "expected the keys"),
    (_saver_of(lambda scope: {v.op.name.removeprefix("student/"): v for v in V1.global_variables("student/")}),
     LearnerCodeError, "No variables to save"),
])
def test_01_3_wrong_answers(wrong, error, hint):
    with pytest.raises(error, match=re.escape(hint) if "`" in hint or "'" in hint else hint):
        ex01.check_save_without_scope(wrong)


# --------------------------------------------------------------------------- 01.4


def restore_moved(sess, folder):
    named = tf.train.get_checkpoint_state(folder).model_checkpoint_path
    V1.train.Saver().restore(sess, os.path.join(folder, os.path.basename(named)))
    return int(sess.run(V1.train.get_global_step()))


def restore_moved_with_the_course_helper(sess, folder):
    V1.train.Saver().restore(sess, resolve_checkpoint(folder))
    return sess.run(V1.train.get_or_create_global_step()).item()


def restore_moved_by_reading_the_text(sess, folder):
    text = Path(folder, "checkpoint").read_text()
    newest = re.search(r'^model_checkpoint_path: "(.*)"', text, re.MULTILINE)[1]
    V1.train.Saver().restore(sess, str(Path(folder) / Path(newest).name))
    return int(V1.train.global_step(sess, V1.train.get_global_step()))


@pytest.mark.parametrize("answer", [restore_moved, restore_moved_with_the_course_helper,
                                    restore_moved_by_reading_the_text])
def test_01_4_right_answers(answer, capsys):
    ex01.check_restore_moved(answer)
    assert "✔ Exercise 01.4 passed" in capsys.readouterr().out


def test_01_4_stub():
    with pytest.raises(ExerciseNotDone):
        ex01.check_restore_moved(_stub)


def _latest(sess, folder):
    V1.train.Saver().restore(sess, tf.train.latest_checkpoint(folder))
    return int(sess.run(V1.train.get_global_step()))


def _rewrites_state(sess, folder):
    V1.train.update_checkpoint_state(folder, "run-200", ["run-100", "run-300", "run-200"])
    return _latest(sess, folder)


def _first_listed(sess, folder):
    first = tf.train.get_checkpoint_state(folder).all_model_checkpoint_paths[0]
    V1.train.Saver().restore(sess, os.path.join(folder, os.path.basename(first)))
    return int(sess.run(V1.train.get_global_step()))


def _largest_step(sess, folder):
    steps = [int(name[4:-6]) for name in os.listdir(folder) if name.endswith(".index")]
    V1.train.Saver().restore(sess, os.path.join(folder, f"run-{max(steps)}"))
    return max(steps)


def _weights_only(sess, folder):
    V1.train.Saver(V1.trainable_variables()).restore(sess, resolve_checkpoint(folder))
    sess.run(V1.train.get_global_step().initializer)
    return 200


def _the_named_path(sess, folder):
    V1.train.Saver().restore(sess, tf.train.get_checkpoint_state(folder).model_checkpoint_path)
    return int(sess.run(V1.train.get_global_step()))


def _copies_to_fix(sess, folder):
    shutil.copy(os.path.join(folder, "run-200.index"), os.path.join(folder, "copy.index"))
    return restore_moved(sess, folder)


@pytest.mark.parametrize("wrong, error, hint", [
    (_latest, LearnerCodeError, "None"),
    (_rewrites_state, CheckFailed, "was changed, added or deleted"),
    (_first_listed, CheckFailed, "the first one the state file lists"),
    (_largest_step, CheckFailed, "the largest step"),
    (_weights_only, CheckFailed, "every variable"),
    (_the_named_path, LearnerCodeError, "restore"),
    (_copies_to_fix, CheckFailed, "was changed, added or deleted"),
    (lambda sess, folder: restore_moved(sess, folder) and None, CheckFailed, "returned None"),
    (lambda sess, folder: 200, CheckFailed, "were not restored"),
])
def test_01_4_wrong_answers(wrong, error, hint):
    with pytest.raises(error, match=hint):
        ex01.check_restore_moved(wrong)
