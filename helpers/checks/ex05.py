"""Checks for notebook 05 (weights in memory: snapshots and target networks).

Every fixture has several variables with distinct non-zero values (biases
too), BatchNormalization's non-trainable moving statistics where the prompt
says "every weight", scope pairs that start alike (``actor``/``actor_target``,
``q_target``/``q``) and names other than the notebook's. Every copy is
checked for direction: the source unchanged, the destination changed.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, require
from helpers.checks.toolkit import same_arrays

V1 = tf.compat.v1


# ---------------------------------------------------------------- eager fixtures


def _model(offset: float, tag: str):
    """Dense(tanh) -> BatchNormalization -> Dense, every variable set to distinct non-zero values.

    Made without random initializers, so a check never draws from the
    learner's random generators and always sees the same numbers.
    """
    import keras

    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, activation="tanh", kernel_initializer="zeros", name=f"encoder_{tag}"),
            keras.layers.BatchNormalization(name=f"norm_{tag}"),
            keras.layers.Dense(2, kernel_initializer="zeros", name=f"head_{tag}"),
        ],
        name=f"net_{tag}",
    )
    for number, variable in enumerate(model.weights, start=1):
        size = int(np.prod(variable.shape))
        values = offset + 0.1 * number + 0.01 * np.arange(1, size + 1)
        variable.assign(values.reshape(variable.shape).astype(np.float32))
    return model


def _values(model) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in model.weights]


def _unchanged(model, before) -> bool:
    return all(np.array_equal(v, b) for v, b in zip(_values(model), before))


def _as_arrays(snapshot) -> list | None:
    try:
        return [np.array(value) for value in snapshot]
    except Exception:  # a value that is not array-like: the caller gives the hint
        return None


# ---------------------------------------------------------------- 05.1


@exercise_check("05.1")
def check_take_snapshot(take_snapshot) -> str:
    model = _model(1.0, "a")
    before = _values(model)
    snapshot = take_snapshot(model)
    require(snapshot is not None, "take_snapshot returned None: return the copied values")
    require(_unchanged(model, before), "taking the snapshot changed the model's weights: only read them")
    is_dict = isinstance(snapshot, dict)
    require(
        is_dict or isinstance(snapshot, (list, tuple)),
        f"take_snapshot returned a {type(snapshot).__name__}: return a list (in the order of "
        "model.weights) or a dict keyed by each variable's path",
    )
    require(
        not any(hasattr(value, "assign") for value in (snapshot.values() if is_dict else snapshot)),
        "the snapshot holds the model's variables themselves, which training will change: "
        "store their values (variable.numpy(), or model.get_weights())",
    )
    names = [v.name for v in model.weights]
    hint = ""
    if is_dict and len(snapshot) == len(set(names)) < len(names):
        hint = ": keys made of v.name collide (several layers have a 'kernel'); key by v.path"
    elif len(snapshot) == len(model.trainable_weights):
        hint = ": model.trainable_weights leaves out the non-trainable ones; use model.weights"
    require(
        len(snapshot) == len(before),
        f"the model has {len(before)} variables (BatchNormalization's moving_mean and moving_variance "
        f"included), the snapshot has {len(snapshot)}{hint}",
    )
    paths = [v.path for v in model.weights]
    if is_dict:
        require(
            sorted(map(str, snapshot)) == sorted(paths),
            f"the dict's keys should be the variables' paths ({paths[0]!r}, ...), got "
            f"{sorted(map(str, snapshot))[:2]}...",
        )

    def in_order():
        return _as_arrays([snapshot[path] for path in paths] if is_dict else snapshot)

    values = in_order()
    require(values is not None, "every item of the snapshot should be an array of values")
    require(
        all(v.shape == b.shape and np.array_equal(v, b) for v, b in zip(values, before)),
        "the snapshot's values differ from the model's (in the order of model.weights)",
    )
    for variable in model.weights:
        variable.assign(variable + 1.0)  # a "training step" that also moves the statistics
    require(
        all(np.array_equal(v, b) for v, b in zip(in_order(), before)),
        "your snapshot changed when the model was updated: it holds references to the live "
        "variables, not copies of their values",
    )
    return f"the snapshot holds all {len(before)} variables, trainable or not, and ignores later training"


# ---------------------------------------------------------------- 05.2


@exercise_check("05.2")
def check_soft_update(soft_update) -> str:
    for tau in (0.25, 0.5):
        online, target = _model(1.0, "online"), _model(-2.0, "target")
        src, dst = _values(online), _values(target)
        soft_update(online, target, tau)
        got = _values(target)
        require(_unchanged(online, src), "the online model changed: only the target should move")
        require(not _unchanged(target, dst), "the target did not change: assign the new values to its "
                "variables (variable.assign(...)) instead of only computing them")
        require(not all(np.allclose(g, s) for g, s in zip(got, src)),
                f"that is a hard copy: with tau={tau} the target moves only {tau:.0%} of the way")
        expected = [(1 - tau) * d + tau * s for s, d in zip(src, dst)]
        swapped = [tau * d + (1 - tau) * s for s, d in zip(src, dst)]
        if tau != 0.5:
            require(not all(np.allclose(g, w, atol=1e-6) for g, w in zip(got, swapped)),
                    "tau weighs the wrong side: the target keeps (1 - tau) of ITS OWN values "
                    "and takes tau of the online values")
        wrong = [v.path for v, g, e in zip(target.weights, got, expected) if not np.allclose(g, e, atol=1e-6)]
        moved_trainable = all(
            np.allclose(g, e, atol=1e-6) for v, g, e in zip(target.weights, got, expected) if v.trainable)
        require(not (wrong and moved_trainable),
                f"{', '.join(wrong)} did not move: BatchNormalization's moving statistics are weights too "
                "(model.weights, not model.trainable_weights)")
        require(not wrong, f"expected target = (1 - tau) * target + tau * online for every weight; "
                           f"{wrong[0] if wrong else ''} differs (tau = {tau})")
    return "target <- (1 - tau) * target + tau * online for every weight, statistics too (tau 0.25, 0.5)"


# ---------------------------------------------------------------- 05.3


@exercise_check("05.3")
def check_consistency_loss(consistency_loss) -> str:
    online, target = _model(0.5, "student"), _model(-0.3, "teacher")
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    expected = float(np.mean((online(x).numpy() - target(x).numpy()) ** 2))
    target_variables = [v.value for v in target.weights]  # the tf.Variables, whatever `trainable` says
    online_variables = [v.value for v in online.trainable_weights]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(target_variables)
        loss = consistency_loss(online, target, x)
    require(loss is not None, "consistency_loss returned None: return the loss")
    require(np.size(loss) == 1, f"the loss should be one number, got shape {np.shape(loss)}: take the mean")
    value = float(np.asarray(loss).reshape(()))
    require(np.isclose(value, expected, rtol=1e-5),
            f"the loss is {value:.4f}, expected the mean squared difference {expected:.4f}")
    require(isinstance(loss, (tf.Tensor, tf.Variable)),
            f"the value is right, but you returned a {type(loss).__name__}, which carries no gradient: "
            "compute the loss with TensorFlow ops on the models' outputs (tf.reduce_mean, tf.square), "
            "without .numpy() or float().")
    to_online = tape.gradient(loss, online_variables)
    to_target = tape.gradient(loss, target_variables)
    reached = [v.path for v, g in zip(target.weights, to_target) if g is not None and np.any(g.numpy() != 0)]
    require(not reached,
            f"gradients reach the target network ({reached[0] if reached else ''}...), so an optimizer "
            "given them would train it (setting trainable = False does not stop them): "
            "wrap the target's output in tf.stop_gradient")
    missing = [v.path for v, g in zip(online.trainable_weights, to_online) if g is None]
    require(not missing, f"no gradient reaches the online network ({', '.join(missing[:2])}...): "
                         "stop only the target's output")
    return "the loss is the mean squared difference; gradients reach every online weight and no target variable"


# ---------------------------------------------------------------- 05.4 (graph mode)

# 'head/u' and 'u' share a leaf name: pairing by the last part of the name shows.
# 'head/q_proj' holds the short source scope 'q' inside its name: str.replace(src, dst) on it shows.
_SHAPES = {"w": [3, 3], "u": [3, 3], "b": [3], "head/u": [3, 3], "head/q_proj": [3], "stats/moving_mean": [3]}


def _scopes_graph(pairs):
    """``pairs`` of (scope, offset, creation order); 'stats/moving_mean' is not trainable."""
    graph = tf.Graph()
    with graph.as_default():
        for scope, offset, order in pairs:
            with V1.variable_scope(scope):
                for index, name in enumerate(order):
                    shape = _SHAPES[name]
                    values = offset + sorted(_SHAPES).index(name) + 0.01 * np.arange(1, np.prod(shape) + 1)
                    V1.get_variable(name, initializer=values.reshape(shape).astype(np.float32),
                                    trainable=not name.startswith("stats/"))
    return graph


def _by_name(sess, scope):
    prefix = scope + "/"
    return {v.op.name[len(prefix):]: sess.run(v) for v in V1.global_variables() if v.op.name.startswith(prefix)}


def _run_sync(make_hard_sync, src, dst, scopes):
    graph = _scopes_graph(scopes)
    with graph.as_default():
        op = make_hard_sync(src, dst)
        require(
            isinstance(op, tf.Operation),
            f"make_hard_sync returned a {type(op).__name__}: return ONE op, e.g. tf.group(*assign_ops)",
        )
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            initial = {scope: _by_name(sess, scope) for scope, _, _ in scopes}
            # "Training" moves every variable away from its initial value: a copy of the initial value shows.
            sess.run([v.assign(v * -2.0 + 0.5) for v in V1.global_variables() if v.dtype.base_dtype.is_floating])
            before = {scope: _by_name(sess, scope) for scope, _, _ in scopes}
            outside = [(v, sess.run(v)) for v in V1.global_variables()
                       if not any(v.op.name.startswith(scope + "/") for scope, _, _ in scopes)]
            sess.run(op)
            after = {scope: _by_name(sess, scope) for scope, _, _ in scopes}
            changed = sorted(v.op.name for v, value in outside if not np.array_equal(sess.run(v), value))
    require(not changed, f"the op also changed {changed[:1]}, a variable outside both scopes: it must write "
                         "into dst_scope/ and nothing else.")
    require(not any(same_arrays({k: after[dst][k]}, {k: initial[src][k]}) for k in initial[src] if k in after[dst]),
            _INITIAL_VALUE)
    return before, after


_INITIAL_VALUE = Hint(
    "the destination got the source's initial value, not its current one: a sync copies what training "
    "made of the weights (section 5, \"Target networks: hard and soft updates\").",
    "assign the variable itself, read when the op runs: `dst.assign(src)` (or `src.read_value()`), not "
    "`src.initial_value`.",
    kind="initial value")


@exercise_check("05.4")
def check_make_hard_sync(make_hard_sync) -> str:
    # Both directions: a longer scope into a shorter one, and the short 'q' into 'q_target' (a scope
    # that holds the source's name, as does 'head/q_proj').
    # Each destination's order pairs every variable with another of the same shape by position.
    backward = [("actor", 1.0, ["w", "u", "b", "stats/moving_mean", "head/u", "head/q_proj"]),
                ("actor_target", 20.0, ["u", "head/u", "stats/moving_mean", "head/q_proj", "w", "b"]),
                ("actor_old", 40.0, ["w", "u", "b", "head/u", "head/q_proj", "stats/moving_mean"])]
    forward = [("q_target", 60.0, ["u", "w", "stats/moving_mean", "b", "head/u", "head/q_proj"]),
               ("q", 80.0, ["w", "head/u", "b", "head/q_proj", "u", "stats/moving_mean"]),
               ("q_old", 90.0, ["w", "u", "b", "head/u", "head/q_proj", "stats/moving_mean"])]
    for src, dst, scopes, other in (("actor_target", "actor", backward, "actor_old"),
                                     ("q", "q_target", forward, "q_old")):
        before, after = _run_sync(make_hard_sync, src, dst, scopes)
        require(same_arrays(after[src], before[src]),
                f"the source {src}/ changed: copy from src_scope into dst_scope, not the other way")
        require(same_arrays(after[other], before[other]),
                f"{other}/ changed: write only into the destination scope (filter with the scope "
                "followed by '/': 'actor' alone also matches 'actor_old/')")
        require(not same_arrays(after[dst], before[dst]), f"nothing under {dst}/ changed: run-time assigns are "
                "needed (variable.assign(...)), grouped into one op")
        wrong = sorted(k for k in after[src] if not np.array_equal(after[dst].get(k), after[src][k]))
        require(wrong != ["stats/moving_mean"],
                f"{dst}/stats/moving_mean was not copied: it is not trainable; copy every variable "
                "(tf.compat.v1.global_variables), not only the trainable ones")
        require(not wrong, f"after the sync, {dst}/{wrong[0] if wrong else ''} does not hold "
                           f"{src}/{wrong[0] if wrong else ''}: pair the variables by their name relative to "
                           "the scope (all of it, 'head/u' is not 'u'), not by position or last part; cut "
                           f"only the leading '{src}/' (str.replace changes it inside names too)")
    return "one op copies every variable by relative name, in the asked direction; other scopes untouched"
