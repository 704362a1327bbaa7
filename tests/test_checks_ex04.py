"""The checks of notebook 04: right answers pass, typical wrong answers get their hints."""

from __future__ import annotations

import keras
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex04
from helpers.cloning import clone_subgraph

V1 = tf.compat.v1


def variables_feeding(output):
    graph_def = output.graph.as_graph_def()
    needed = V1.graph_util.extract_sub_graph(graph_def, [output.op.name])
    return [node.name for node in needed.node if node.op == "VarHandleOp"]


def test_variables_feeding_right(capsys):
    ex04.check_variables_feeding(variables_feeding)
    assert "Exercise 04.1 passed" in capsys.readouterr().out


def test_variables_feeding_lists_everything():
    with pytest.raises(CheckFailed, match="which that output does not read"):
        ex04.check_variables_feeding(lambda output: [v.op.name for v in V1.global_variables()])


def test_variables_feeding_misses_the_trunk():
    with pytest.raises(CheckFailed, match=r"you missed \['trunk/w'\]"):
        ex04.check_variables_feeding(lambda output: [n for n in variables_feeding(output) if "trunk" not in n])


def test_variables_feeding_not_done():
    def stub(output):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone, match="04.1 is not done"):
        ex04.check_variables_feeding(stub)


def clone_trained(sess, output, inputs, scope):
    copy = clone_subgraph(output, inputs, None, scope)
    sess.run(copy.initializer)
    sess.run([new.assign(old) for new, old in zip(copy.variables, copy.source_variables)])
    return copy.inputs[0], copy.outputs[0]


def test_clone_trained_right(capsys):
    ex04.check_clone_trained(clone_trained)
    assert "Exercise 04.2 passed" in capsys.readouterr().out


def test_clone_trained_without_copying_the_values():
    def fresh(sess, output, inputs, scope):
        copy = clone_subgraph(output, inputs, None, scope)
        sess.run(copy.initializer)
        return copy.inputs[0], copy.outputs[0]

    with pytest.raises(CheckFailed, match="assign each original variable's current value"):
        ex04.check_clone_trained(fresh)


def test_clone_trained_sharing_the_weights():
    def shared(sess, output, inputs, scope):
        needed = V1.graph_util.extract_sub_graph(output.graph.as_graph_def(), [output.op.name])
        new_x = V1.placeholder(inputs.dtype, inputs.shape)
        [new_y] = V1.import_graph_def(needed, input_map={inputs.name: new_x},
                                      return_elements=[output.name], name=scope)
        return new_x, new_y

    with pytest.raises(CheckFailed, match="still shares them"):
        ex04.check_clone_trained(shared)


def test_clone_trained_returning_the_original():
    with pytest.raises(CheckFailed, match="the original's, not a copy"):
        ex04.check_clone_trained(lambda sess, output, inputs, scope: (inputs, output))
    with pytest.raises(CheckFailed, match="return a pair"):
        ex04.check_clone_trained(lambda sess, output, inputs, scope: output)


def test_clone_trained_unregistered_variables():
    def unregistered(sess, output, inputs, scope):
        new_x, new_y = clone_trained(sess, output, inputs, scope)
        output.graph.clear_collection(V1.GraphKeys.GLOBAL_VARIABLES)
        return new_x, new_y

    with pytest.raises(CheckFailed, match="not in the GLOBAL_VARIABLES collection"):
        ex04.check_clone_trained(unregistered)


def clone_keras_model(model):
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    return clone


def test_clone_keras_model_right(capsys):
    ex04.check_clone_keras_model(clone_keras_model)
    assert "Exercise 04.3 passed" in capsys.readouterr().out


def test_clone_keras_model_wrong_answers():
    with pytest.raises(CheckFailed, match="the model itself"):
        ex04.check_clone_keras_model(lambda model: model)
    with pytest.raises(CheckFailed, match="fresh initial values"):
        ex04.check_clone_keras_model(keras.models.clone_model)
    with pytest.raises(CheckFailed, match="return a keras.Model"):
        ex04.check_clone_keras_model(lambda model: model.get_weights())

    def same_layers(model):
        return keras.Sequential([keras.Input((3,))] + model.layers)

    with pytest.raises(CheckFailed, match="shares variable objects"):
        ex04.check_clone_keras_model(same_layers)
