"""The checks of notebook 05: right answers written several ways pass, plausible wrong ones get their hints."""

from __future__ import annotations

import copy

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex05

V1 = tf.compat.v1


def _stub(*args):
    raise NotImplementedError()


def _passes(check, answer, capsys, exercise):
    check(answer)
    assert f"Exercise {exercise} passed" in capsys.readouterr().out


# ---------------------------------------------------------------- 05.1 snapshot


def snapshot_get_weights(model):
    return model.get_weights()


def snapshot_by_path(model):
    return {v.path: v.numpy() for v in model.weights}


def snapshot_identity_tensors(model):
    return [tf.identity(v) for v in model.weights]


@pytest.mark.parametrize("answer", [snapshot_get_weights, snapshot_by_path, snapshot_identity_tensors])
def test_take_snapshot_accepts(answer, capsys):
    _passes(ex05.check_take_snapshot, answer, capsys, "05.1")


def snapshot_live(model):
    return model.weights


def snapshot_shallow_copy(model):
    return copy.copy(model.weights)


def snapshot_trainable_only(model):
    return [v.numpy() for v in model.trainable_weights]


def snapshot_by_name(model):
    return {v.name: v.numpy() for v in model.weights}


def snapshot_first_layer(model):
    return model.get_weights()[:2]


def snapshot_forgot_return(model):
    model.get_weights()


def snapshot_resets(model):
    values = model.get_weights()
    for v in model.weights:
        v.assign(tf.zeros_like(v))
    return values


@pytest.mark.parametrize("answer, hint", [
    (snapshot_live, "holds the model's variables themselves"),
    (snapshot_shallow_copy, "holds the model's variables themselves"),
    (snapshot_trainable_only, "model.trainable_weights leaves out the non-trainable"),
    (snapshot_by_name, "keys made of v.name collide"),
    (snapshot_first_layer, "the model has 8 variables"),
    (snapshot_forgot_return, "returned None"),
    (snapshot_resets, "changed the model's weights"),
])
def test_take_snapshot_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex05.check_take_snapshot(answer)


def test_take_snapshot_not_done():
    with pytest.raises(ExerciseNotDone):
        ex05.check_take_snapshot(_stub)


# ---------------------------------------------------------------- 05.2 soft update


def soft_reference(online, target, tau):
    for src, dst in zip(online.weights, target.weights):
        dst.assign((1.0 - tau) * dst + tau * src)


def soft_numpy(online, target, tau):
    target.set_weights([(1 - tau) * t + tau * o for o, t in zip(online.get_weights(), target.get_weights())])


def soft_assign_add(online, target, tau):
    for src, dst in zip(online.weights, target.weights):
        dst.assign_add(tau * (src - dst))


@pytest.mark.parametrize("answer", [soft_reference, soft_numpy, soft_assign_add])
def test_soft_update_accepts(answer, capsys):
    _passes(ex05.check_soft_update, answer, capsys, "05.2")


def soft_hard_copy(online, target, tau):
    target.set_weights(online.get_weights())


def soft_swapped(online, target, tau):
    for src, dst in zip(online.weights, target.weights):
        dst.assign(tau * dst + (1 - tau) * src)


def soft_trainable_only(online, target, tau):
    for src, dst in zip(online.trainable_weights, target.trainable_weights):
        dst.assign((1 - tau) * dst + tau * src)


def soft_fixed_tau(online, target, tau):
    for src, dst in zip(online.weights, target.weights):
        dst.assign(0.9 * dst + 0.1 * src)


def soft_wrong_direction(online, target, tau):
    for src, dst in zip(online.weights, target.weights):
        src.assign((1 - tau) * src + tau * dst)


def soft_returns_values(online, target, tau):
    return [(1 - tau) * t + tau * o for o, t in zip(online.get_weights(), target.get_weights())]


@pytest.mark.parametrize("answer, hint", [
    (soft_hard_copy, "that is a hard copy"),
    (soft_swapped, "tau weighs the wrong side"),
    (soft_trainable_only, "moving statistics are weights too"),
    (soft_fixed_tau, r"expected target = \(1 - tau\)"),
    (soft_wrong_direction, "the online model changed"),
    (soft_returns_values, "the target did not change"),
])
def test_soft_update_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex05.check_soft_update(answer)


def test_soft_update_not_done():
    with pytest.raises(ExerciseNotDone):
        ex05.check_soft_update(_stub)


# ---------------------------------------------------------------- 05.3 consistency loss


def loss_reference(online, target, x):
    return tf.reduce_mean(tf.square(online(x) - tf.stop_gradient(target(x))))


def loss_keras_ops(online, target, x):
    return keras.ops.mean((online(x) - keras.ops.stop_gradient(target(x))) ** 2)


def loss_keras_mse(online, target, x):
    return keras.losses.MeanSquaredError()(tf.stop_gradient(target(x)), online(x))


@pytest.mark.parametrize("answer", [loss_reference, loss_keras_ops, loss_keras_mse])
def test_consistency_loss_accepts(answer, capsys):
    _passes(ex05.check_consistency_loss, answer, capsys, "05.3")


def loss_no_stop(online, target, x):
    return tf.reduce_mean(tf.square(online(x) - target(x)))


def loss_frozen_flag(online, target, x):
    target.trainable = False
    return tf.reduce_mean(tf.square(online(x) - target(x)))


def loss_stops_input(online, target, x):
    return tf.reduce_mean(tf.square(online(x) - target(tf.stop_gradient(x))))


def loss_stops_online(online, target, x):
    return tf.reduce_mean(tf.square(tf.stop_gradient(online(x)) - target(x)))


def loss_stops_everything(online, target, x):
    return tf.stop_gradient(tf.reduce_mean(tf.square(online(x) - target(x))))


def loss_sum(online, target, x):
    return tf.reduce_sum(tf.square(online(x) - tf.stop_gradient(target(x))))


def loss_per_example(online, target, x):
    return tf.reduce_mean(tf.square(online(x) - tf.stop_gradient(target(x))), axis=-1)


@pytest.mark.parametrize("answer, hint", [
    (loss_no_stop, "gradients reach the target network"),
    (loss_frozen_flag, "setting trainable = False does not stop them"),
    (loss_stops_input, "gradients reach the target network"),
    (loss_stops_online, "gradients reach the target network"),
    (loss_stops_everything, "no gradient reaches the online network"),
    (loss_sum, "expected the mean squared difference"),
    (loss_per_example, "should be one number"),
])
def test_consistency_loss_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex05.check_consistency_loss(answer)


def test_consistency_loss_not_done():
    with pytest.raises(ExerciseNotDone):
        ex05.check_consistency_loss(_stub)


# ---------------------------------------------------------------- 05.4 hard sync (graph mode)


def sync_reference(src_scope, dst_scope):
    src = {v.op.name[len(src_scope) + 1:]: v for v in V1.global_variables(src_scope + "/")}
    dst = {v.op.name[len(dst_scope) + 1:]: v for v in V1.global_variables(dst_scope + "/")}
    return tf.group(*[dst[name].assign(src[name]) for name in src])


def sync_sorted_pairs(src_scope, dst_scope):
    def by_name(scope):
        return sorted((v for v in V1.global_variables() if v.op.name.startswith(scope + "/")),
                      key=lambda v: v.op.name)
    return tf.group(*[d.assign(s) for s, d in zip(by_name(src_scope), by_name(dst_scope))])


def sync_get_collection(src_scope, dst_scope):
    everything = V1.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)
    ops = []
    for s in everything:
        if s.op.name.startswith(src_scope + "/"):
            name = dst_scope + s.op.name[len(src_scope):]
            [d] = [v for v in everything if v.op.name == name]
            ops.append(V1.assign(d, s))
    return tf.group(ops)


@pytest.mark.parametrize("answer", [sync_reference, sync_sorted_pairs, sync_get_collection])
def test_make_hard_sync_accepts(answer, capsys):
    _passes(ex05.check_make_hard_sync, answer, capsys, "05.4")


def sync_trainable_only(src_scope, dst_scope):
    src = {v.op.name[len(src_scope) + 1:]: v for v in V1.trainable_variables(src_scope + "/")}
    dst = {v.op.name[len(dst_scope) + 1:]: v for v in V1.trainable_variables(dst_scope + "/")}
    return tf.group(*[dst[name].assign(src[name]) for name in src])


def sync_by_position(src_scope, dst_scope):
    pairs = zip(V1.global_variables(src_scope + "/"), V1.global_variables(dst_scope + "/"))
    return tf.group(*[d.assign(s) for s, d in pairs])


def sync_no_slash(src_scope, dst_scope):
    src = V1.global_variables(src_scope)
    dst = V1.global_variables(dst_scope)
    return tf.group(*[d.assign(s) for s, d in zip(src, dst)])


def sync_backwards(src_scope, dst_scope):
    return sync_reference(dst_scope, src_scope)


def sync_list_of_ops(src_scope, dst_scope):
    src = {v.op.name[len(src_scope) + 1:]: v for v in V1.global_variables(src_scope + "/")}
    dst = {v.op.name[len(dst_scope) + 1:]: v for v in V1.global_variables(dst_scope + "/")}
    return [dst[name].assign(src[name]) for name in src]


def sync_notebook_names(src_scope, dst_scope):
    return sync_reference("online", "online_past")


@pytest.mark.parametrize("answer, hint", [
    (sync_trainable_only, "stats/moving_mean was not copied"),
    (sync_by_position, "pair the variables by their name relative to the scope"),
    (sync_no_slash, "pair the variables by their name relative to the scope"),
    (sync_backwards, "the source actor/ changed"),
    (sync_list_of_ops, "return ONE op"),
    (sync_notebook_names, "nothing under actor_target/ changed"),
])
def test_make_hard_sync_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex05.check_make_hard_sync(answer)


def test_make_hard_sync_not_done():
    with pytest.raises(ExerciseNotDone):
        ex05.check_make_hard_sync(_stub)
