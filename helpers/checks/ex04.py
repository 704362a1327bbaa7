"""Checks for notebook 04 (cloning a network).

Fixtures use names other than the chapter's, look-alike scopes (``head_a`` /
``head_a_old``, ``clone_1`` / ``clone_10``), biases and non-trainable state with
distinct non-zero values, and a reference variable (``VariableV2``) where the
prompt mentions them.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require
from helpers.checks.toolkit import call_answer

V1 = tf.compat.v1


def _const(shape, start):
    size = int(np.prod(shape))
    return (np.arange(size, dtype=np.float32).reshape(shape) + start) / 10.0


def _two_headed_graph():
    """A trunk with two heads, a look-alike 'head_a_old', and a TF 1.x reference variable."""
    graph = tf.Graph()
    with graph.as_default():
        x = V1.placeholder(tf.float32, [None, 3], name="pixels")
        with V1.variable_scope("trunk"):
            scale = V1.get_variable("scale", initializer=np.float32(2.0), trainable=False)
            trunk = tf.nn.relu(tf.matmul(x, V1.get_variable("w", initializer=_const([3, 4], 1))) * scale)
        with V1.variable_scope("head_a"):
            w, b = V1.get_variable("w", initializer=_const([4, 1], 2)), V1.get_variable("b", initializer=[0.5])
            a = tf.add(tf.matmul(trunk, w), b, name="out")
        with V1.variable_scope("head_a_old"):
            tf.matmul(trunk, V1.get_variable("w", initializer=_const([4, 1], 3)), name="out")
        with V1.variable_scope("head_b", use_resource=False):
            b_out = tf.matmul(trunk, V1.get_variable("w", initializer=_const([4, 2], 4)), name="out")
    expected = {a: {"trunk/w", "trunk/scale", "head_a/w", "head_a/b"}, b_out: {"trunk/w", "trunk/scale", "head_b/w"}}
    return graph, expected


_VARIABLE_OPS = ("VarHandleOp", "VariableV2")


@exercise_check("04.1")
def check_variables_feeding(variables_feeding) -> str:
    graph, cases = _two_headed_graph()
    for output, expected in cases.items():
        with graph.as_default():
            answer = variables_feeding(output)
        require(answer is not None, "variables_feeding returned None: return the names it found")
        require(
            not isinstance(answer, (str, bytes)),
            "return a list (or set) of names, not one string",
        )
        require(
            all(isinstance(name, str) for name in answer),
            "return the names as strings (node.name, or variable.op.name), not tensors or variables",
        )
        tensor_names = sorted(name for name in answer if ":" in name)
        require(not tensor_names,
                f"{tensor_names[:1]} is a tensor's name (':0' names an op's first output): return op names, "
                "`node.name` or `variable.op.name`, as the exercise asks.")
        names = set(answer)
        extra, missing = sorted(names - expected), sorted(expected - names)
        kinds = {name: graph.get_operation_by_name(name).type for name in extra
                 if name in {op.name for op in graph.get_operations()}}
        not_variables = [f"{name} ({kind})" for name, kind in kinds.items() if kind not in _VARIABLE_OPS]
        require(not not_variables,
                f"for {output.name!r} you listed {not_variables[:1]}, which is not a variable op: keep only "
                "the nodes whose op type is VarHandleOp or VariableV2.")
        require(not extra, f"for {output.name!r} you listed {extra[:2]}, which that output does not read: "
                           "keep only the variable ops in extract_sub_graph(graph_def, [output.op.name]) "
                           "(a scope filter without a trailing '/' also picks look-alikes such as head_a_old)")
        require(
            "head_b/w" not in missing,
            f"for {output.name!r} you missed 'head_b/w', a reference variable (op type VariableV2, as "
            "TF 1.x made them): count those nodes too",
        )
        require(not missing, f"for {output.name!r} you missed {missing}: the sub-graph must reach back "
                             "through every op the output depends on, the trunk and non-trainable variables included")
    return ("each head's variable ops, trunk and non-trainable included, and nothing from head_a_old; "
            "the reference variable too")


@keras.saving.register_keras_serializable(package="course_checks")
class _Gated(keras.Model):
    """A subclassed model with arguments in __init__, a get_config, and BatchNormalization."""

    def __init__(self, width, outputs, **kwargs):
        super().__init__(**kwargs)
        self.width, self.outputs_n = width, outputs
        self.dense = keras.layers.Dense(width, activation="tanh")
        self.norm = keras.layers.BatchNormalization()
        self.out = keras.layers.Dense(outputs)

    def call(self, inputs, training=False):
        return self.out(self.norm(self.dense(inputs), training=training))

    def get_config(self):
        return {**super().get_config(), "width": self.width, "outputs": self.outputs_n}


def _keras_models(batch):
    keras.utils.set_random_seed(3)
    inputs = keras.Input((3,), name="signal")
    left = keras.layers.Dense(5, activation="tanh", name="left")(inputs)
    right = keras.layers.Dense(5, name="right")(inputs)
    joined = keras.layers.BatchNormalization(name="norm")(keras.layers.Add(name="join")([left, right]))
    functional = keras.Model(inputs, keras.layers.Dense(2, name="readout")(joined))
    subclassed = _Gated(4, 2)
    subclassed(batch)
    for model in (functional, subclassed):
        for k, variable in enumerate(model.weights):  # distinct non-zero values, moving statistics included
            value = np.linspace(0.1, 0.9, int(np.prod(variable.shape))).reshape(variable.shape) + k / 10
            variable.assign(value.astype(np.float32))
    return [functional, subclassed]


@exercise_check("04.2")
def check_clone_keras_model(clone_keras_model) -> str:
    batch = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]], np.float32)
    for model in _keras_models(batch):
        kind = "functional" if not isinstance(model, _Gated) else "subclassed"
        before = [v.numpy().copy() for v in model.weights]
        expected = model(batch, training=False).numpy()
        clone = clone_keras_model(model)
        require(isinstance(clone, keras.Model), f"return a keras.Model, got {type(clone).__name__}")
        require(clone is not model, "you returned the model itself: that is a second name, not a copy")
        require(
            all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.weights)),
            f"your function changed the {kind} model's weights: copy from the model to the clone "
            "(clone.set_weights(model.get_weights())), not the other way",
        )
        shared = {id(v) for v in clone.weights} & {id(v) for v in model.weights}
        require(not shared, "the clone shares variable objects with the original: build new layers (clone_model)")
        require(
            len(clone.weights) == len(model.weights),
            f"the clone has {len(clone.weights)} variables, the {kind} model {len(model.weights)}: "
            "is it built with the same architecture?",
        )
        differ = [v.path for v, c in zip(model.weights, clone.weights) if not np.allclose(v.numpy(), c.numpy())]
        untrained = {v.path for v in model.non_trainable_weights}
        require(
            not differ or not set(differ) <= untrained,
            f"the non-trainable variables {differ} differ (BatchNormalization's moving statistics): copy "
            "every weight, get_weights() includes them, trainable_weights does not",
        )
        require(
            not differ,
            "the clone's weights differ from the original's: keras.models.clone_model makes NEW weights with "
            "fresh initial values; copy the original's with set_weights(get_weights())",
        )
        require(np.allclose(clone(batch, training=False).numpy(), expected, atol=1e-5),
                f"the clone of the {kind} model computes something else than the original")
        model.weights[0].assign(np.zeros(model.weights[0].shape, np.float32))
        require(np.allclose(clone(batch, training=False).numpy(), expected, atol=1e-5),
                "the clone changed with the original")
    return ("a functional and a subclassed model: same values in every variable (moving statistics "
            "included), own variables, the original untouched")


def _trained_network():
    """A trained network under 'encoder', next to another network under the look-alike 'clone_10'."""
    graph = tf.Graph()
    with graph.as_default():
        with V1.variable_scope("clone_10"):
            other_x = V1.placeholder(tf.float32, [None, 2], name="x")
            tf.matmul(other_x, V1.get_variable("w", initializer=_const([2, 2], 7)), name="y")
        x = V1.placeholder(tf.float32, [None, 3], name="signal")
        with V1.variable_scope("encoder"):
            w1 = V1.get_variable("w1", [3, 4], initializer=V1.glorot_uniform_initializer(seed=1))
            b1 = V1.get_variable("b1", [4], initializer=tf.zeros_initializer())
            w2 = V1.get_variable("w2", [4, 2], initializer=V1.glorot_uniform_initializer(seed=2))
            b2 = V1.get_variable("b2", [2], initializer=tf.zeros_initializer())
            y = tf.nn.tanh(tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2, name="code")
        sess = V1.Session(graph=graph)
        sess.run(V1.global_variables_initializer())
        # "training": values the initializers would never produce, biases included
        sess.run([w1.assign(_const([3, 4], -5)), b1.assign([0.5, -0.5, 0.25, 1.0]),
                  w2.assign(_const([4, 2], -3)), b2.assign([0.3, -0.2])])
    return graph, sess, x, y, [w1, b1, w2, b2]


@exercise_check("04.3")
def check_clone_trained(clone_trained) -> str:
    graph, sess, x, y, originals = _trained_network()
    batch = np.array([[1.0, -1.0, 0.5], [0.0, 2.0, 1.0]], np.float32)
    scope = "clone_1"
    with sess, graph.as_default():
        trained = sess.run(originals)
        known = set(V1.global_variables())
        answer = clone_trained(sess, y, x, scope)
        require(isinstance(answer, tuple) and len(answer) == 2,
                "return a pair (copy's input tensor, copy's output tensor)")
        new_x, new_y = answer
        require(isinstance(new_y, tf.Tensor) and isinstance(new_x, tf.Tensor),
                "return tensors: (copy's input tensor, copy's output tensor)")
        require(new_x.shape.as_list() == x.shape.as_list() and new_y.shape.as_list() == y.shape.as_list(),
                f"the pair's shapes are {new_x.shape} and {new_y.shape}; the input is {x.shape} and the output "
                f"{y.shape}: return (copy's input, copy's output), in that order.")
        require(new_y is not y and new_y.name != y.name, "the output you returned is the original's, not a copy")
        require(new_x is not x and new_x.name != x.name,
                "the input you returned is the original's: return the copy's own input tensor, the one the "
                "copy's output reads.")
        require(
            all(np.array_equal(a, b) for a, b in zip(trained, sess.run(originals))),
            "your function changed the original network's weights: copy from the original to the copy "
            "(new.assign(old)), not the other way",
        )
        original, copied = call_answer(lambda: sess.run([y, new_y], {x: batch, new_x: batch}),
                                       "the copy's variables have no value: run their initializer in sess, then "
                                       "assign the original's current values to them",
                                       tf.errors.FailedPreconditionError)
        require(np.allclose(original, copied, atol=1e-6),
                "the copy does not compute what the trained original computes: after running the copy's "
                "initializer, assign each original variable's current value to its copy (biases too)")
        sess.run([v.assign(tf.zeros_like(v)) for v in originals])
        later = sess.run(new_y, {new_x: batch})
        require(np.allclose(later, copied, atol=1e-6),
                "the copy changed when the original's weights changed: it still shares them (shared_name); "
                "use helpers.cloning.clone_subgraph, or rewrite shared_name before import_graph_def")
        copies = [v for v in V1.global_variables() if v not in known]
        require(copies, "the copy has no variables in the GLOBAL_VARIABLES collection: a copy made of "
                        "constants, or variables nobody registered, does not count")
        require(all(v.op.name.startswith(scope + "/") for v in copies) and len(copies) == len(originals),
                f"expected the copy's {len(originals)} variables under {scope!r}/, "
                f"got {[v.op.name for v in copies]}")
    return ("the copy's own registered variables hold the trained values (biases too), the original is "
            "unchanged, and the copy keeps its values when the original changes")
