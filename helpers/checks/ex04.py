"""Checks for notebook 04 (cloning a network)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

V1 = tf.compat.v1


def _two_headed_graph():
    """A trunk with two heads; returns the graph, its input and the two outputs."""
    graph = tf.Graph()
    with graph.as_default():
        V1.set_random_seed(0)
        x = V1.placeholder(tf.float32, [None, 3], name="x")
        with V1.variable_scope("trunk"):
            trunk = tf.nn.relu(tf.matmul(x, V1.get_variable("w", [3, 4])))
        with V1.variable_scope("head_a"):
            a = tf.add(tf.matmul(trunk, V1.get_variable("w", [4, 1])), V1.get_variable("b", [1]), name="out")
        with V1.variable_scope("head_b"):
            b = tf.matmul(trunk, V1.get_variable("w", [4, 2]), name="out")
    return graph, x, a, b


@exercise_check("04.1")
def check_variables_feeding(variables_feeding) -> str:
    graph, _, head_a, head_b = _two_headed_graph()
    for output, expected in ((head_a, {"trunk/w", "head_a/w", "head_a/b"}), (head_b, {"trunk/w", "head_b/w"})):
        with graph.as_default():
            answer = variables_feeding(output)
        require(answer is not None, "variables_feeding returned None: return the names it found")
        names = {str(name).split(":")[0] for name in answer}
        extra, missing = sorted(names - expected), sorted(expected - names)
        require(not extra, f"for {output.name!r} you listed {extra}, which that output does not read: "
                           "keep only the variable ops in extract_sub_graph(graph_def, [output.op.name])")
        require(not missing, f"for {output.name!r} you missed {missing}: the sub-graph must reach back "
                             "through every op the output depends on, the trunk included")
    return "each head reads the trunk's variable and its own, and nothing else"


def _trained_network():
    graph = tf.Graph()
    with graph.as_default():
        V1.set_random_seed(0)
        x = V1.placeholder(tf.float32, [None, 3], name="x")
        with V1.variable_scope("net"):
            w = V1.get_variable("w", [3, 2])
            b = V1.get_variable("b", [2], initializer=tf.zeros_initializer())
            y = tf.nn.tanh(tf.matmul(x, w) + b, name="y")
        sess = V1.Session(graph=graph)
        sess.run(V1.global_variables_initializer())
        # "training": values the initializer would never produce
        sess.run([w.assign(np.arange(6, dtype=np.float32).reshape(3, 2) / 10), b.assign([0.5, -0.5])])
    return graph, sess, x, y, w


@exercise_check("04.2")
def check_clone_trained(clone_trained) -> str:
    graph, sess, x, y, w = _trained_network()
    batch = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]], np.float32)
    with sess, graph.as_default():
        answer = clone_trained(sess, y, x, "copy")
        require(isinstance(answer, tuple) and len(answer) == 2,
                "return a pair (copy's input tensor, copy's output tensor)")
        new_x, new_y = answer
        require(new_y is not y and new_y.name != y.name, "the output you returned is the original's, not a copy")
        original, copied = sess.run([y, new_y], {x: batch, new_x: batch})
        require(np.allclose(original, copied, atol=1e-6),
                "the copy does not compute what the trained original computes: after running the copy's "
                "initializer, assign each original variable's current value to its copy")
        sess.run(w.assign(tf.zeros([3, 2])))
        later = sess.run(new_y, {new_x: batch})
        require(np.allclose(later, copied, atol=1e-6),
                "the copy changed when the original's weights changed: it still shares them (shared_name); "
                "use helpers.cloning.clone_subgraph, or rewrite shared_name before import_graph_def")
        copies = [v.name for v in V1.global_variables() if not v.name.startswith("net/")]
        require(len(copies) >= 2, "the copy's variables are not in the GLOBAL_VARIABLES collection")
    return "the copy holds the trained values, and it keeps them when the original changes"


@exercise_check("04.3")
def check_clone_keras_model(clone_keras_model) -> str:
    import keras

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(2)])
    model.layers[0].bias.assign(np.linspace(-1, 1, 5).astype(np.float32))  # not the initializer's zeros
    batch = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]], np.float32)
    expected = model(batch).numpy()
    clone = clone_keras_model(model)
    require(isinstance(clone, keras.Model), f"return a keras.Model, got {type(clone).__name__}")
    require(clone is not model, "you returned the model itself: that is a second name, not a copy")
    shared = {id(v) for v in clone.weights} & {id(v) for v in model.weights}
    require(not shared, "the clone shares variable objects with the original: build new layers (clone_model)")
    require(np.allclose(clone(batch).numpy(), expected, atol=1e-6),
            "the clone computes something else: keras.models.clone_model makes NEW weights with fresh "
            "initial values; copy the original's with set_weights(get_weights())")
    model.layers[1].kernel.assign(np.zeros((5, 2), np.float32))
    require(np.allclose(clone(batch).numpy(), expected, atol=1e-6), "the clone changed with the original")
    return "same architecture, same values, variables of its own"
