"""The checks of notebook 04: right answers pass, plausible wrong answers get their hints."""

from __future__ import annotations

import copy

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex04
from helpers.cloning import clone_subgraph

V1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# ---------------------------------------------------------------- 04.1


def variables_feeding(output):
    graph_def = output.graph.as_graph_def()
    needed = V1.graph_util.extract_sub_graph(graph_def, [output.op.name])
    return [node.name for node in needed.node if node.op in ("VarHandleOp", "VariableV2")]


def variables_feeding_by_walking(output):
    """A breadth-first walk over op inputs, returning a set of names."""
    seen, todo, found = set(), [output.op], set()
    while todo:
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type in ("VarHandleOp", "VariableV2"):
            found.add(op.name + ":0")
        todo.extend(t.op for t in op.inputs)
        todo.extend(op.control_inputs)
    return found


def only_resource_variables(output):
    needed = V1.graph_util.extract_sub_graph(output.graph.as_graph_def(), [output.op.name])
    return [node.name for node in needed.node if node.op == "VarHandleOp"]


def every_variable(output):
    return [v.op.name for v in V1.global_variables()]


def by_scope_prefix(output):
    scope = output.op.name.split("/")[0]
    return [v.op.name for v in V1.global_variables("trunk/") + V1.global_variables(scope)]


def trainable_ones(output):
    return [n for n in variables_feeding(output) if n != "trunk/scale"]


def without_the_trunk(output):
    return [n for n in variables_feeding(output) if not n.startswith("trunk")]


def as_variables(output):
    names = set(variables_feeding(output))
    return [v for v in V1.global_variables() if v.op.name in names]


def variables_feeding_from_graph_ops(output):
    needed = V1.graph_util.extract_sub_graph(output.graph.as_graph_def(), [output.op.name])
    kept = {node.name for node in needed.node}
    return {op.name + ":0" for op in output.graph.get_operations()
            if op.name in kept and op.type in ("VarHandleOp", "VariableV2")}


@pytest.mark.parametrize("answer", [variables_feeding, variables_feeding_by_walking, variables_feeding_from_graph_ops])
def test_04_1_right_answers_pass(answer, capsys):
    ex04.check_variables_feeding(answer)
    assert "✔ Exercise 04.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (only_resource_variables, "VariableV2"),
        (every_variable, "which that output does not read"),
        (by_scope_prefix, "look-alikes such as head_a_old"),
        (trainable_ones, "non-trainable variables included"),
        (without_the_trunk, r"you missed \['trunk/scale', 'trunk/w'\]"),
        (as_variables, "not tensors or variables"),
        (lambda output: "trunk/w", "not one string"),
    ],
)
def test_04_1_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex04.check_variables_feeding(answer)


def test_04_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="04.1 is not done"):
        ex04.check_variables_feeding(not_done)


# ---------------------------------------------------------------- 04.2


def clone_keras_model(model):
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    return clone


def clone_by_assigning_each_variable(model):
    clone = keras.models.clone_model(model)
    for mine, theirs in zip(clone.weights, model.weights):
        mine.assign(theirs)
    return clone


def clone_from_config(model):
    clone = type(model).from_config(model.get_config())
    clone(np.zeros((1, 3), np.float32))
    clone.set_weights(model.get_weights())
    return clone


def clone_trainable_only(model):
    clone = keras.models.clone_model(model)
    for mine, theirs in zip(clone.trainable_weights, model.trainable_weights):
        mine.assign(theirs)
    return clone


def clone_the_wrong_way(model):
    clone = keras.models.clone_model(model)
    model.set_weights(clone.get_weights())
    return clone


def rewrap_the_layers(model):
    return keras.Model(model.inputs, model.outputs) if hasattr(model, "inputs") else model


def shallow_copy(model):
    return copy.copy(model)


@pytest.mark.parametrize("answer", [clone_keras_model, clone_by_assigning_each_variable, clone_from_config, shallow_copy])
def test_04_2_right_answers_pass(answer, capsys):
    ex04.check_clone_keras_model(answer)
    assert "✔ Exercise 04.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda model: model, "the model itself"),
        (keras.models.clone_model, "fresh initial values"),
        (clone_trainable_only, "moving statistics"),
        (clone_the_wrong_way, "not the other way"),
        (rewrap_the_layers, "shares variable objects"),
        (lambda model: model.get_weights(), "return a keras.Model"),
    ],
)
def test_04_2_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex04.check_clone_keras_model(answer)


def test_04_2_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="04.2 is not done"):
        ex04.check_clone_keras_model(not_done)


# ---------------------------------------------------------------- 04.3


def clone_trained(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    sess.run([new.assign(old) for new, old in zip(copy.variables, copy.source_variables)])
    return copy.inputs[0], copy.outputs[0]


def clone_trained_through_numpy(sess, output, inputs, scope):
    fresh_input = V1.placeholder(inputs.dtype, inputs.shape, name=f"{scope}_input")
    copy = clone_subgraph([output], [inputs], {inputs: fresh_input}, scope=scope)
    sess.run(V1.variables_initializer(copy.variables))
    for new, old in zip(copy.variables, copy.source_variables):
        new.load(sess.run(old), sess)
    return fresh_input, copy.outputs[0]


def clone_fresh(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    return copy.inputs[0], copy.outputs[0]


def clone_sharing(sess, output, inputs, scope):
    needed = V1.graph_util.extract_sub_graph(output.graph.as_graph_def(), [output.op.name])
    new_x = V1.placeholder(inputs.dtype, inputs.shape)
    [new_y] = V1.import_graph_def(needed, input_map={inputs.name: new_x}, return_elements=[output.name], name=scope)
    return new_x, new_y


def clone_backwards(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    sess.run([old.assign(new) for new, old in zip(copy.variables, copy.source_variables)])
    return copy.inputs[0], copy.outputs[0]


def clone_kernels_only(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    sess.run([new.assign(old) for new, old in zip(copy.variables, copy.source_variables) if len(old.shape) == 2])
    return copy.inputs[0], copy.outputs[0]


def clone_by_scope_filter(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    sources = [v for v in V1.global_variables(output.op.name.split("/")[0])]
    sess.run([new.assign(old) for new, old in zip(V1.global_variables(scope), sources)])
    return copy.inputs[0], copy.outputs[0]


def clone_as_constants(sess, output, inputs, scope):
    frozen = V1.graph_util.convert_variables_to_constants(sess, output.graph.as_graph_def(), [output.op.name])
    new_x = V1.placeholder(inputs.dtype, inputs.shape)
    [new_y] = V1.import_graph_def(frozen, input_map={inputs.name: new_x}, return_elements=[output.name], name=scope)
    return new_x, new_y


def clone_unregistered(sess, output, inputs, scope):
    new_x, new_y = clone_trained(sess, output, inputs, scope)
    output.graph.clear_collection(V1.GraphKeys.GLOBAL_VARIABLES)
    return new_x, new_y


def clone_by_hand(sess, output, inputs, scope):
    from helpers.cloning import give_own_shared_names, rebuild_variables

    prefix = output.op.name.split("/")[0] + "/"
    originals = [v for v in V1.global_variables() if v.op.name.startswith(prefix)]
    keep = [output.op.name] + [v.initializer.name for v in originals]
    keep += [v.to_proto().snapshot_name.split(":")[0] for v in originals]
    sub = V1.graph_util.extract_sub_graph(output.graph.as_graph_def(), keep)
    new_x = V1.placeholder(inputs.dtype, inputs.shape, name=scope + "_x")
    [new_y] = V1.import_graph_def(give_own_shared_names(sub, scope), input_map={inputs.name: new_x},
                                  return_elements=[output.name], name=scope)
    copies = rebuild_variables(originals, scope)
    sess.run([c.initializer for c in copies])
    sess.run([c.assign(o) for c, o in zip(copies, originals)])
    return new_x, new_y


@pytest.mark.parametrize("answer", [clone_trained, clone_trained_through_numpy, clone_by_hand])
def test_04_3_right_answers_pass(answer, capsys):
    ex04.check_clone_trained(answer)
    assert "✔ Exercise 04.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (clone_fresh, "assign each original variable's current value"),
        (clone_sharing, "still shares them"),
        (clone_backwards, "not the other way"),
        (clone_kernels_only, "biases too"),
        (clone_as_constants, "made of\\s+constants"),
        (clone_unregistered, "no variables in the GLOBAL_VARIABLES"),
        (lambda sess, output, inputs, scope: (inputs, output), "the original's, not a copy"),
        (lambda sess, output, inputs, scope: output, "return a pair"),
    ],
)
def test_04_3_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex04.check_clone_trained(answer)


def test_04_3_a_scope_filter_without_slash_is_caught_at_the_learners_line():
    """global_variables('clone_1') also picks 'clone_10/w': the shapes no longer line up."""
    with pytest.raises(LearnerCodeError, match="clone_by_scope_filter|assign"):
        ex04.check_clone_trained(clone_by_scope_filter)


def test_04_3_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="04.3 is not done"):
        ex04.check_clone_trained(not_done)
