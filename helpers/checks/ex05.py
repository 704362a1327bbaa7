"""Checks for notebook 05 (weights in memory: snapshots and target networks)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

V1 = tf.compat.v1


def _small_model(seed: int):
    import keras

    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])


@exercise_check("05.1")
def check_take_snapshot(take_snapshot) -> str:
    model = _small_model(0)
    before = [np.array(w) for w in model.get_weights()]
    snapshot = take_snapshot(model)
    require(snapshot is not None, "take_snapshot returned None: return the copied values")
    require(len(snapshot) == len(before), f"the model has {len(before)} weights, the snapshot {len(snapshot)}")
    for variable in model.weights:
        variable.assign(variable + 1.0)  # a "training step"
    values = [s.numpy() if hasattr(s, "numpy") else np.asarray(s) for s in snapshot]
    require(all(np.allclose(v, b) for v, b in zip(values, before)),
            "your snapshot changed when the model was updated: it holds references to the live "
            "variables, not copies of their values (get_weights() returns NumPy copies)")
    return "the snapshot keeps the values of the moment it was taken"


def _scopes_graph():
    """online/ and target/ (created in another order) plus a decoy online_old/."""
    graph = tf.Graph()
    with graph.as_default():
        def layer(scope, names, value):
            with V1.variable_scope(scope):
                for name in names:
                    shape = {"w": [3, 3], "u": [3, 3], "b": [3]}[name]
                    init = tf.constant_initializer(value + {"w": 0.0, "u": 10.0, "b": 20.0}[name])
                    V1.get_variable(name, shape, initializer=init)
        layer("online", ["w", "u", "b"], 1.0)
        layer("online_old", ["w", "u", "b"], 5.0)
        layer("target", ["u", "b", "w"], 0.0)
    return graph


def _by_name(sess, scope):
    return {v.op.name.split("/", 1)[1]: sess.run(v) for v in V1.global_variables() if v.op.name.startswith(scope + "/")}


@exercise_check("05.2")
def check_make_hard_sync(make_hard_sync) -> str:
    graph = _scopes_graph()
    with graph.as_default():
        try:
            op = make_hard_sync("online", "target")
        except (ValueError, AssertionError) as error:
            require(False, f"make_hard_sync('online', 'target') raised {type(error).__name__}: {error}. "
                           "Is 'online_old/' picked up too? Filter with the scope followed by '/'")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(op)
            online, target, decoy = _by_name(sess, "online"), _by_name(sess, "target"), _by_name(sess, "online_old")
    require(all(np.allclose(decoy[k], 5.0 + {"w": 0, "u": 10, "b": 20}[k]) for k in decoy),
            "the variables of 'online_old/' changed: never write outside the destination scope")
    wrong = sorted(k for k in online if not np.allclose(target[k], online[k]))
    first = wrong[0] if wrong else ""
    require(not wrong, f"after the sync, target/{first} does not hold online/{first}: pair the variables "
                       "by their name relative to the scope, not by position (target was built in another order)")
    return "every target variable holds its online namesake; other scopes untouched"


@exercise_check("05.3")
def check_soft_update(soft_update) -> str:
    online, target = _small_model(0), _small_model(1)
    src, dst = online.get_weights(), target.get_weights()
    soft_update(online, target, 0.1)
    got = target.get_weights()
    require(all(np.allclose(s, o) for s, o in zip(online.get_weights(), src)), "the online model must not change")
    if all(np.allclose(g, s) for g, s in zip(got, src)):
        require(False, "that is a hard copy: with tau=0.1 the target moves only 10% of the way")
    if all(np.allclose(g, 0.1 * d + 0.9 * s, atol=1e-6) for g, s, d in zip(got, src, dst)):
        require(False, "tau weighs the wrong side: the target keeps (1 - tau) of ITS OWN values "
                       "and takes tau of the online values")
    require(all(np.allclose(g, 0.9 * d + 0.1 * s, atol=1e-6) for g, s, d in zip(got, src, dst)),
            "expected target = (1 - tau) * target + tau * online for every weight")
    return "target <- 0.9 * target + 0.1 * online, for every weight"


@exercise_check("05.4")
def check_consistency_loss(consistency_loss) -> str:
    online, target = _small_model(0), _small_model(1)
    x = tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    expected = float(np.mean((online(x).numpy() - target(x).numpy()) ** 2))
    with tf.GradientTape(persistent=True) as tape:
        loss = consistency_loss(online, target, x)
    require(loss is not None, "consistency_loss returned None")
    require(np.isclose(float(loss), expected, rtol=1e-5),
            f"the loss is {float(loss):.4f}, expected the mean squared difference {expected:.4f}")
    to_target = tape.gradient(loss, target.trainable_variables)
    to_online = tape.gradient(loss, online.trainable_variables)
    require(all(g is None for g in to_target),
            "gradients reach the target network's weights, so an optimizer would train it: "
            "wrap the target's output in tf.stop_gradient")
    require(all(g is not None for g in to_online), "no gradient reaches the online network: stop only the target")
    return "the loss trains the online network and leaves the target alone"
