"""The checks of notebook 05: right answers written several ways pass, plausible wrong ones get their hints."""

from __future__ import annotations

import copy
import re

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


def sync_by_position_same_shape(src_scope, dst_scope):
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
    (sync_by_position_same_shape, "pair the variables by their name relative to the scope"),
    (sync_no_slash, "pair the variables by their name relative to the scope"),
    (sync_backwards, "the source actor_target/ changed"),
    (sync_list_of_ops, "return ONE op"),
    (sync_notebook_names, "nothing under actor/ changed"),
])
def test_make_hard_sync_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex05.check_make_hard_sync(answer)


def test_make_hard_sync_not_done():
    with pytest.raises(ExerciseNotDone):
        ex05.check_make_hard_sync(_stub)


# ===========================================================================
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {
}


# ----- 05.1 wrong


def snap_live_variables(model):
    return list(model.weights)


def snap_backend_values(model):
    return [v.value for v in model.weights]


def snap_trainable_only(model):
    return [v.numpy() for v in model.trainable_weights]


def snap_keyed_by_name(model):
    return {v.name: v.numpy() for v in model.weights}


def snap_trainable_then_non_trainable(model):
    return [v.numpy() for v in model.trainable_weights + model.non_trainable_weights]


def snap_dict_of_variables(model):
    return {v.path: v for v in model.weights}


def snap_after_a_training_call(model):
    inputs = np.ones((2,) + tuple(model.inputs[0].shape[1:]), "float32")
    model(inputs, training=True)
    return [v.numpy() for v in model.weights]


def snap_shallow_list_copy(model):
    return copy.copy(model.weights)


def snap_numpy_views(model):
    return [np.asarray(v.value) for v in model.weights][:0] + [v for v in model.weights]


def snap_layer_weights_of_trainable_layers(model):
    return [w.numpy() for layer in model.layers if layer.trainable for w in layer.trainable_weights]


# ----- 05.1 right


def snap_np_array(model):
    return [np.array(v) for v in model.weights]


def snap_dict_by_path_convert(model):
    return {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}


def snap_deepcopy_of_get_weights(model):
    return copy.deepcopy(model.get_weights())


@pytest.mark.parametrize("answer", cases([
    snap_live_variables, snap_backend_values, snap_trainable_only, snap_keyed_by_name,
    snap_trainable_then_non_trainable, snap_dict_of_variables, snap_after_a_training_call,
    snap_shallow_list_copy, snap_numpy_views, snap_layer_weights_of_trainable_layers,
], HOLES))
def test_05_1_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex05.check_take_snapshot, answer)


@pytest.mark.parametrize("answer", cases([snap_np_array, snap_dict_by_path_convert, snap_deepcopy_of_get_weights],
                                         HOLES))
def test_05_1_prompt_only_right_answers_pass(answer):
    passes(ex05.check_take_snapshot, answer)


# ----- 05.2 wrong


def soft_trainable_only(online, target, tau):
    for t, o in zip(target.trainable_weights, online.trainable_weights):
        t.assign((1 - tau) * t + tau * o)


def soft_wrong_direction(online, target, tau):
    for t, o in zip(target.weights, online.weights):
        o.assign((1 - tau) * o + tau * t)


def soft_tau_swapped(online, target, tau):
    for t, o in zip(target.weights, online.weights):
        t.assign(tau * t + (1 - tau) * o)


def soft_hard_copy(online, target, tau):
    target.set_weights(online.get_weights())


def soft_returns_new_weights(online, target, tau):
    return [(1 - tau) * t + tau * o for t, o in zip(target.get_weights(), online.get_weights())]


def soft_rebinds_names(online, target, tau):
    weights = target.get_weights()
    for i, (t, o) in enumerate(zip(weights, online.get_weights())):
        weights[i] = (1 - tau) * t + tau * o
    target = keras.models.clone_model(target)
    target.set_weights(weights)


def soft_order_mismatch(online, target, tau):
    for t, o in zip(target.trainable_weights + target.non_trainable_weights, online.weights):
        t.assign((1 - tau) * t + tau * o)


def soft_sequential_overwrite(online, target, tau):
    for t, o in zip(target.weights, online.weights):
        t.assign(t + tau * o)


def soft_layers_with_weights_only_trainable_layers(online, target, tau):
    for lt, lo in zip(target.layers, online.layers):
        if lt.trainable_weights:
            lt.set_weights([(1 - tau) * a + tau * b for a, b in
                            zip([w.numpy() for w in lt.trainable_weights], [w.numpy() for w in lo.trainable_weights])]
                           + [w.numpy() for w in lt.non_trainable_weights])


# ----- 05.2 right


def soft_set_weights(online, target, tau):
    target.set_weights([(1.0 - tau) * t + tau * o for t, o in zip(target.get_weights(), online.get_weights())])


def soft_assign_by_path(online, target, tau):
    for target_layer, online_layer in zip(target.layers, online.layers):
        for t, o in zip(target_layer.weights, online_layer.weights):
            t.assign(keras.ops.add(keras.ops.multiply(1 - tau, t), keras.ops.multiply(tau, o)))


def soft_assign_add(online, target, tau):
    for t, o in zip(target.weights, online.weights):
        t.assign_add(tau * (o - t))


@pytest.mark.parametrize("answer", cases([
    soft_trainable_only, soft_wrong_direction, soft_tau_swapped, soft_hard_copy, soft_returns_new_weights,
    soft_rebinds_names, soft_order_mismatch, soft_sequential_overwrite,
    soft_layers_with_weights_only_trainable_layers,
], HOLES))
def test_05_2_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex05.check_soft_update, answer, may_raise=answer in (soft_order_mismatch,))


@pytest.mark.parametrize("answer", cases([soft_set_weights, soft_assign_by_path, soft_assign_add], HOLES))
def test_05_2_prompt_only_right_answers_pass(answer):
    passes(ex05.check_soft_update, answer)


# ----- 05.3 wrong


def loss_no_stop_gradient(online, target, x):
    return tf.reduce_mean((online(x) - target(x)) ** 2)


def loss_stops_online(online, target, x):
    return tf.reduce_mean((tf.stop_gradient(online(x)) - target(x)) ** 2)


def loss_freezes_target(online, target, x):
    target.trainable = False
    return tf.reduce_mean((online(x) - target(x)) ** 2)


def loss_sum(online, target, x):
    return tf.reduce_sum((online(x) - tf.stop_gradient(target(x))) ** 2)


def loss_absolute(online, target, x):
    return tf.reduce_mean(tf.abs(online(x) - tf.stop_gradient(target(x))))


def loss_training_mode(online, target, x):
    return tf.reduce_mean((online(x, training=True) - tf.stop_gradient(target(x, training=True))) ** 2)


def loss_numpy(online, target, x):
    return float(np.mean((online(x).numpy() - target(x).numpy()) ** 2))


def loss_per_example(online, target, x):
    return tf.reduce_mean((online(x) - tf.stop_gradient(target(x))) ** 2, axis=-1)


def loss_swapped_roles(online, target, x):
    return tf.reduce_mean((tf.stop_gradient(online(x)) - target(x)) ** 2)


def loss_rmse(online, target, x):
    return tf.sqrt(tf.reduce_mean((online(x) - tf.stop_gradient(target(x))) ** 2))


# ----- 05.3 right


def loss_keras_ops(online, target, x):
    return keras.ops.mean(keras.ops.square(online(x) - keras.ops.stop_gradient(target(x))))


def loss_squared_difference(online, target, x):
    return tf.reduce_mean(tf.math.squared_difference(online(x), tf.stop_gradient(target(x))))


def loss_target_constant(online, target, x):
    frozen = tf.constant(target(x).numpy())
    return keras.losses.MeanSquaredError()(frozen, online(x))


@pytest.mark.parametrize("answer", cases([
    loss_no_stop_gradient, loss_stops_online, loss_freezes_target, loss_sum, loss_absolute, loss_training_mode,
    loss_numpy, loss_per_example, loss_swapped_roles, loss_rmse,
], HOLES))
def test_05_3_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex05.check_consistency_loss, answer)


@pytest.mark.parametrize("answer", cases([loss_keras_ops, loss_squared_difference, loss_target_constant], HOLES))
def test_05_3_prompt_only_right_answers_pass(answer):
    passes(ex05.check_consistency_loss, answer)


# ----- 05.4 wrong


def _pairs_by_relative_name(src_vars, dst_vars, src_scope, dst_scope):
    dst = {v.op.name[len(dst_scope) + 1:]: v for v in dst_vars}
    return [(dst[v.op.name[len(src_scope) + 1:]], v) for v in src_vars]


def sync_regex_scope(src_scope, dst_scope):
    src = V1.global_variables(src_scope)
    dst = {v.op.name.replace(dst_scope, "", 1): v for v in V1.global_variables(dst_scope)}
    return tf.group(*[dst[v.op.name.replace(src_scope, "", 1)].assign(v) for v in src
                      if v.op.name.replace(src_scope, "", 1) in dst])


def sync_by_order(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = V1.global_variables(dst_scope + "/")
    return tf.group(*[d.assign(s) for s, d in zip(src, dst)])


def sync_trainable_only(src_scope, dst_scope):
    src = V1.trainable_variables(src_scope + "/")
    dst = V1.trainable_variables(dst_scope + "/")
    return tf.group(*[d.assign(s) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)])


def sync_returns_list(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = V1.global_variables(dst_scope + "/")
    return [d.assign(s) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)]


def sync_wrong_direction(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = V1.global_variables(dst_scope + "/")
    return tf.group(*[s.assign(d) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)])


def sync_startswith_no_slash(src_scope, dst_scope):
    src = [v for v in V1.global_variables() if v.op.name.startswith(src_scope)]
    dst = {v.op.name.split("/", 1)[1]: v for v in V1.global_variables() if v.op.name.startswith(dst_scope + "/")}
    return tf.group(*[dst[v.op.name.split("/", 1)[1]].assign(v) for v in src if v.op.name.split("/", 1)[1] in dst])


def sync_leaf_name(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = {v.op.name.split("/")[-1]: v for v in V1.global_variables(dst_scope + "/")}
    return tf.group(*[dst[v.op.name.split("/")[-1]].assign(v) for v in src])


def sync_returns_tensor(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = V1.global_variables(dst_scope + "/")
    ops = [d.assign(s) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)]
    with tf.control_dependencies(ops):
        return tf.constant(0)


def sync_also_global_step(src_scope, dst_scope):
    src = V1.global_variables(src_scope + "/")
    dst = V1.global_variables(dst_scope + "/")
    ops = [d.assign(s) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)]
    step = V1.train.get_or_create_global_step()
    return tf.group(*ops, step.assign_add(1))


# ----- 05.4 right


def sync_dict_and_group(src_scope, dst_scope):
    graph = V1.get_default_graph()
    src = {v.op.name.removeprefix(src_scope + "/"): v for v in graph.get_collection("variables")
           if v.op.name.startswith(src_scope + "/")}
    dst = {v.op.name.removeprefix(dst_scope + "/"): v for v in graph.get_collection("variables")
           if v.op.name.startswith(dst_scope + "/")}
    return tf.group(*[V1.assign(dst[name], src[name]) for name in sorted(src)], name="hard_sync")


def sync_control_dependencies(src_scope, dst_scope):
    src = V1.global_variables(re.escape(src_scope) + "/")
    dst = V1.global_variables(re.escape(dst_scope) + "/")
    ops = [d.assign(s.read_value()) for d, s in _pairs_by_relative_name(src, dst, src_scope, dst_scope)]
    with tf.control_dependencies(ops):
        return tf.no_op()


def sync_sorted_pairs(src_scope, dst_scope):
    src = sorted(V1.global_variables(src_scope + "/"), key=lambda v: v.op.name)
    dst = sorted(V1.global_variables(dst_scope + "/"), key=lambda v: v.op.name)
    return tf.group(*(d.assign(s) for s, d in zip(src, dst))).op if hasattr(tf.group(), "op") else \
        tf.group(*(d.assign(s) for s, d in zip(src, dst)))


@pytest.mark.parametrize("answer", cases([
    sync_by_order, sync_trainable_only, sync_returns_list, sync_wrong_direction,
    sync_startswith_no_slash, sync_leaf_name, sync_returns_tensor, sync_also_global_step,
], HOLES))
def test_05_4_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex05.check_make_hard_sync, answer, may_raise=answer in (sync_leaf_name, sync_startswith_no_slash))


@pytest.mark.parametrize("answer", cases([sync_dict_and_group, sync_control_dependencies, sync_sorted_pairs],
                                         HOLES))
def test_05_4_prompt_only_right_answers_pass(answer):
    passes(ex05.check_make_hard_sync, answer)


# ===========================================================================
# Hints in steps: each test starts from the first step (helpers.checks.Hint)

from helpers.checks import forget_hints  # noqa: E402


@pytest.fixture(autouse=True)
def _first_hints():
    forget_hints()
from tests.attack_harness import accepted, rejected, stepped  # noqa: E402


# ----- 05.4 the current value, not the initial one (issue 33), answers written from the prompt alone


def _relative(scope):
    prefix = scope + "/"
    return {v.op.name[len(prefix):]: v for v in V1.global_variables(prefix)}


def sync_initial_value(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return tf.group(*[dst[name].assign(src[name].initial_value) for name in src])


def sync_initial_value_of_trainables(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return tf.group(*[dst[name].assign(src[name].initial_value if src[name].trainable else src[name])
                      for name in src])


def sync_initializer_inputs(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return tf.group(*[dst[name].assign(src[name].initializer.inputs[1]) for name in src])


def sync_by_position_same_shape(src_scope, dst_scope):
    pairs = zip(V1.global_variables(src_scope + "/"), V1.global_variables(dst_scope + "/"))
    return tf.group(*[d.assign(s) for s, d in pairs if d.shape == s.shape])


def sync_by_last_name(src_scope, dst_scope):
    dst = {v.op.name.split("/")[-1]: v for v in V1.global_variables(dst_scope + "/")}
    return tf.group(*[dst[v.op.name.split("/")[-1]].assign(v) for v in V1.global_variables(src_scope + "/")])


def sync_trainable_only_into_all(src_scope, dst_scope):
    src = {v.op.name[len(src_scope) + 1:]: v for v in V1.trainable_variables(src_scope + "/")}
    dst = _relative(dst_scope)
    return tf.group(*[dst[name].assign(value) for name, value in src.items()])


def sync_wrong_way(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return tf.group(*[src[name].assign(dst[name]) for name in src])


def sync_returns_assign_list(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return [dst[name].assign(src[name]) for name in src]


@pytest.mark.parametrize("answer", [sync_initial_value, sync_initial_value_of_trainables, sync_initializer_inputs,
                                    sync_by_position_same_shape, sync_by_last_name, sync_trainable_only_into_all,
                                    sync_wrong_way, sync_returns_assign_list], ids=lambda f: f.__name__)
def test_05_4_wrong_answers_get_a_hint(answer):
    rejected(ex05.check_make_hard_sync, answer)


def test_05_4_an_initial_value_gets_the_idea_first_then_the_fix():
    first, second = stepped(ex05.check_make_hard_sync, sync_initial_value)
    assert "initial value" in first and "section 5" in first and "dst.assign(src)" not in first
    assert "dst.assign(src)" in second


def sync_read_value(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    return tf.group(*[dst[name].assign(src[name].read_value()) for name in sorted(src)], name="hard_sync")


def sync_compat_assign(src_scope, dst_scope):
    graph = V1.get_default_graph()
    variables = graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)
    src = {v.op.name.removeprefix(src_scope + "/"): v for v in variables if v.op.name.startswith(src_scope + "/")}
    dst = {v.op.name.removeprefix(dst_scope + "/"): v for v in variables if v.op.name.startswith(dst_scope + "/")}
    return tf.group(*[V1.assign(dst[name], tf.identity(src[name])) for name in src])


def sync_reads_all_first(src_scope, dst_scope):
    src, dst = _relative(src_scope), _relative(dst_scope)
    values = {name: variable.value() for name, variable in src.items()}
    with tf.control_dependencies(list(values.values())):
        return tf.group(*[dst[name].assign(value) for name, value in values.items()])


@pytest.mark.parametrize("answer", [sync_read_value, sync_compat_assign, sync_reads_all_first],
                         ids=lambda f: f.__name__)
def test_05_4_right_answers_written_otherwise_pass(answer):
    accepted(ex05.check_make_hard_sync, answer)


# ----- review of the checks (finding 2): names mapped with str.replace(src_scope, dst_scope)


def sync_replace_scope(src_scope, dst_scope):
    dst = {v.op.name: v for v in V1.global_variables(dst_scope + "/")}
    return tf.group(*[dst[v.op.name.replace(src_scope, dst_scope)].assign(v)
                      for v in V1.global_variables(src_scope + "/")])


def sync_replace_scope_filtered(src_scope, dst_scope):
    dst = {v.op.name: v for v in V1.global_variables(dst_scope + "/")}
    pairs = [(v.op.name.replace(src_scope, dst_scope), v) for v in V1.global_variables(src_scope + "/")]
    return tf.group(*[dst[name].assign(v) for name, v in pairs if name in dst])


def sync_replace_leading_scope_once(src_scope, dst_scope):
    dst = {v.op.name: v for v in V1.global_variables(dst_scope + "/")}
    return tf.group(*[dst[v.op.name.replace(src_scope + "/", dst_scope + "/", 1)].assign(v)
                      for v in V1.global_variables(src_scope + "/")])


def test_05_4_str_replace_of_the_scope_is_rejected():
    hint = rejects(ex05.check_make_hard_sync, sync_replace_scope, may_raise=True)
    assert len(hint) <= 300, hint


def test_05_4_str_replace_of_the_scope_with_a_filter_is_rejected_with_the_leading_scope_hint():
    hint = rejects(ex05.check_make_hard_sync, sync_replace_scope_filtered)
    assert "q_target/head/q_proj does not hold q/head/q_proj" in hint and "leading 'q/'" in hint, hint
    assert len(hint) <= 300, hint


def test_05_4_replacing_only_the_leading_scope_passes():
    passes(ex05.check_make_hard_sync, sync_replace_leading_scope_once)
