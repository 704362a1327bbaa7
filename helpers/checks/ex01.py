"""Checks for notebook 01 (saving and restoring)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

v1 = tf.compat.v1


def _saved_keys(path: str) -> set[str]:
    return {name for name, _ in tf.train.list_variables(path)}


def _require_a_checkpoint(path: object, function: str) -> str:
    require(path is not None, f"{function} returned None: return the path that `saver.save(...)` gives back.")
    require(isinstance(path, (str, os.PathLike)), f"{function} should return a path, got {type(path).__name__}.")
    path = os.fspath(path)
    require(os.path.exists(path + ".index"), f"no checkpoint at {os.path.basename(path)!r}: return the path `saver.save` returned.")
    return path


@exercise_check("01.1")
def check_save_trainable_only(save_trainable_only: Callable[[v1.Session, str], str]) -> str:
    """``save_trainable_only(sess, prefix)`` saves the trainable variables and nothing else."""
    with tf.Graph().as_default(), tempfile.TemporaryDirectory() as folder:
        kernel = v1.get_variable("layer/kernel", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        bias = v1.get_variable("layer/bias", initializer=np.array([0.5, -0.5], np.float32))
        v1.train.get_or_create_global_step()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            path = _require_a_checkpoint(save_trainable_only(sess, os.path.join(folder, "model")), "save_trainable_only")
        keys = _saved_keys(path)
        require("global_step" not in keys,
                "the checkpoint also holds 'global_step', which is not trainable: give the Saver "
                "`var_list=tf.compat.v1.trainable_variables()`.")
        require(keys == {"layer/kernel", "layer/bias"},
                f"expected the keys ['layer/bias', 'layer/kernel'], found {sorted(keys)}.")
        reader = tf.train.load_checkpoint(path)
        require(np.array_equal(reader.get_tensor("layer/kernel"), np.arange(6).reshape(3, 2)),
                "the saved kernel does not hold the session's value: save from the session you are given.")
    return "only layer/kernel and layer/bias were saved"


@exercise_check("01.2")
def check_save_without_scope(save_without_scope: Callable[[v1.Session, str, str], str]) -> str:
    """``save_without_scope(sess, scope, prefix)`` saves scope/'s variables under names without the scope."""
    with tf.Graph().as_default(), tempfile.TemporaryDirectory() as folder:
        v1.get_variable("student/dense/kernel", initializer=np.full((2, 2), 1.0, np.float32))
        v1.get_variable("student/dense/bias", initializer=np.array([2.0, 3.0], np.float32))
        v1.get_variable("teacher/dense/kernel", initializer=np.full((2, 2), 9.0, np.float32))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            path = _require_a_checkpoint(save_without_scope(sess, "student", os.path.join(folder, "model")), "save_without_scope")
        keys = _saved_keys(path)
        require(not any(key.startswith("teacher/") for key in keys),
                "the checkpoint holds the teacher's variables too: save only the variables under the "
                "scope (`tf.compat.v1.global_variables(scope + '/')`).")
        require(not any(key.startswith("student/") for key in keys),
                f"the keys still start with the scope: {sorted(keys)}. Map each name without its scope "
                "to its variable: a dict `{name_without_scope: variable}` as the Saver's var_list.")
        require(not any(key.endswith(":0") for key in keys),
                f"the keys end in ':0' ({sorted(keys)}): use `variable.op.name`, not `variable.name`.")
        require(keys == {"dense/kernel", "dense/bias"},
                f"expected the keys ['dense/bias', 'dense/kernel'], found {sorted(keys)}.")
        bias = tf.train.load_checkpoint(path).get_tensor("dense/bias")
        require(np.array_equal(bias, [2.0, 3.0]), "'dense/bias' does not hold the student's bias.")
    return "the student's variables were saved as dense/kernel and dense/bias"


@exercise_check("01.3")
def check_restore_latest(restore_latest: Callable[[v1.Session, str], int]) -> str:
    """``restore_latest(sess, folder)`` restores the newest checkpoint in a folder and returns its step."""
    with tempfile.TemporaryDirectory() as folder:
        with tf.Graph().as_default():
            w = v1.get_variable("w", initializer=0.0)
            step = v1.train.get_or_create_global_step()
            saver = v1.train.Saver(max_to_keep=5)
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                for value in (10, 20, 30):
                    sess.run([w.assign(float(value)), step.assign(value)])
                    saver.save(sess, os.path.join(folder, "model"), global_step=step)
        with tf.Graph().as_default():
            w = v1.get_variable("w", initializer=-1.0)
            v1.train.get_or_create_global_step()
            with v1.Session() as sess:
                returned = restore_latest(sess, folder)
                try:
                    restored = sess.run(w)
                except tf.errors.FailedPreconditionError:
                    require(False, "the variables were not restored: call `saver.restore(sess, path)` "
                                   "with the path `tf.train.latest_checkpoint(folder)` gives.")
    require(restored != 10.0, "you restored the oldest checkpoint: `tf.train.latest_checkpoint(folder)` finds the newest.")
    require(restored == 30.0, f"w should be 30.0 after restoring the newest checkpoint, got {restored}.")
    require(returned is not None, "restore_latest returned None: return the global step's restored value.")
    require(int(returned) == 30, f"the newest checkpoint's global step is 30, you returned {returned}.")
    return "the newest of three checkpoints (step 30) was restored"


@exercise_check("01.4")
def check_count_parameters(count_parameters: Callable[[str], int]) -> str:
    """``count_parameters(prefix)`` counts the numbers stored in a checkpoint, without a graph."""
    with tempfile.TemporaryDirectory() as folder:
        with tf.Graph().as_default():
            v1.get_variable("hidden/kernel", shape=[3, 4], initializer=v1.zeros_initializer())
            v1.get_variable("hidden/bias", shape=[4], initializer=v1.zeros_initializer())
            v1.get_variable("out/kernel", shape=[4, 2], initializer=v1.zeros_initializer())
            v1.get_variable("out/bias", shape=[2], initializer=v1.zeros_initializer())
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                path = v1.train.Saver().save(sess, os.path.join(folder, "model"))
        graph_before = len(v1.get_default_graph().get_operations())
        count = count_parameters(path)
        graph_after = len(v1.get_default_graph().get_operations())
    require(count is not None, "count_parameters returned None: return the total as an int.")
    require(count != 4, "4 is the number of variables: count the numbers inside each one (the product of its shape).")
    require(count == 3 * 4 + 4 + 4 * 2 + 2, f"the checkpoint stores 26 numbers (3x4 + 4 + 4x2 + 2), you counted {count}.")
    require(graph_after == graph_before, "count_parameters added ops to a graph: read the checkpoint with "
                                         "`tf.train.list_variables`, no graph needed.")
    return "26 numbers counted from the checkpoint's index alone"
