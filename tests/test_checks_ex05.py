"""The checks of notebook 05: right answers pass, typical wrong answers get their hints."""

from __future__ import annotations

import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex05

V1 = tf.compat.v1


def test_take_snapshot_right(capsys):
    ex05.check_take_snapshot(lambda model: model.get_weights())
    assert "Exercise 05.1 passed" in capsys.readouterr().out


def test_take_snapshot_keeps_live_variables():
    with pytest.raises(CheckFailed, match="references to the live variables"):
        ex05.check_take_snapshot(lambda model: model.weights)
    with pytest.raises(CheckFailed, match="returned None"):
        ex05.check_take_snapshot(lambda model: None)
    with pytest.raises(CheckFailed, match="the model has 4 weights, the snapshot 2"):
        ex05.check_take_snapshot(lambda model: model.get_weights()[:2])


def test_take_snapshot_not_done():
    def stub(model):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        ex05.check_take_snapshot(stub)


def make_hard_sync(src_scope, dst_scope):
    src = {v.op.name[len(src_scope) + 1:]: v for v in V1.trainable_variables(src_scope + "/")}
    dst = {v.op.name[len(dst_scope) + 1:]: v for v in V1.trainable_variables(dst_scope + "/")}
    assert src.keys() == dst.keys()
    return tf.group(*[dst[name].assign(src[name]) for name in src])


def test_make_hard_sync_right(capsys):
    ex05.check_make_hard_sync(make_hard_sync)
    assert "Exercise 05.2 passed" in capsys.readouterr().out


def test_make_hard_sync_by_position():
    def by_position(src_scope, dst_scope):
        pairs = zip(V1.trainable_variables(src_scope + "/"), V1.trainable_variables(dst_scope + "/"))
        return tf.group(*[d.assign(s) for s, d in pairs if d.shape == s.shape])

    with pytest.raises(CheckFailed, match="by their name relative to the scope, not by position"):
        ex05.check_make_hard_sync(by_position)


def test_make_hard_sync_with_the_prefix_trap():
    def prefix_trap(src_scope, dst_scope):
        src = {v.op.name.split("/", 1)[1]: v for v in V1.trainable_variables(src_scope)}
        dst = {v.op.name.split("/", 1)[1]: v for v in V1.trainable_variables(dst_scope)}
        assert len(src) == len(V1.trainable_variables(src_scope)), "duplicate relative names"
        return tf.group(*[dst[name].assign(src[name]) for name in src])

    with pytest.raises(CheckFailed, match="Filter with the scope followed by '/'"):
        ex05.check_make_hard_sync(prefix_trap)


def test_make_hard_sync_writing_the_decoy():
    def writes_decoy(src_scope, dst_scope):
        decoy = V1.trainable_variables("online_old/")
        return tf.group(make_hard_sync(src_scope, dst_scope), *[v.assign(tf.zeros_like(v)) for v in decoy])

    with pytest.raises(CheckFailed, match="never write outside the destination scope"):
        ex05.check_make_hard_sync(writes_decoy)


def soft_update(online, target, tau):
    for o, t in zip(online.weights, target.weights):
        t.assign((1 - tau) * t + tau * o)


def test_soft_update_right(capsys):
    ex05.check_soft_update(soft_update)
    assert "Exercise 05.3 passed" in capsys.readouterr().out


def test_soft_update_wrong_answers():
    with pytest.raises(CheckFailed, match="hard copy"):
        ex05.check_soft_update(lambda online, target, tau: target.set_weights(online.get_weights()))
    with pytest.raises(CheckFailed, match="tau weighs the wrong side"):
        ex05.check_soft_update(lambda online, target, tau: soft_update(online, target, 1 - tau))
    with pytest.raises(CheckFailed, match="the online model must not change"):
        ex05.check_soft_update(lambda online, target, tau: soft_update(target, online, tau))
    with pytest.raises(CheckFailed, match=r"expected target = \(1 - tau\)"):
        ex05.check_soft_update(lambda online, target, tau: soft_update(online, target, tau / 2))


def consistency_loss(online, target, x):
    return tf.reduce_mean(tf.square(online(x) - tf.stop_gradient(target(x))))


def test_consistency_loss_right(capsys):
    ex05.check_consistency_loss(consistency_loss)
    assert "Exercise 05.4 passed" in capsys.readouterr().out


def test_consistency_loss_wrong_answers():
    with pytest.raises(CheckFailed, match="wrap the target's output in tf.stop_gradient"):
        ex05.check_consistency_loss(lambda online, target, x: tf.reduce_mean(tf.square(online(x) - target(x))))
    with pytest.raises(CheckFailed, match="stop only the target"):
        ex05.check_consistency_loss(
            lambda online, target, x: tf.stop_gradient(tf.reduce_mean(tf.square(online(x) - target(x)))))
    with pytest.raises(CheckFailed, match="expected the mean squared difference"):
        ex05.check_consistency_loss(
            lambda online, target, x: tf.reduce_sum(tf.square(online(x) - tf.stop_gradient(target(x)))))
    with pytest.raises(CheckFailed, match="returned None"):
        ex05.check_consistency_loss(lambda online, target, x: None)
