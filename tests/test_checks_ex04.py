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
            found.add(op.name)
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
    return {op.name for op in output.graph.get_operations()
            if op.name in kept and op.type in ("VarHandleOp", "VariableV2")}


def tensor_names_with_colon(output):
    # The prompt asks for op names: ':0' names a tensor (these were accepted before the check was fixed).
    return {name + ":0" for name in variables_feeding(output)}


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
        (tensor_names_with_colon, "is a tensor's name"),
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


# ===========================================================================
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import os  # noqa: E402
import tempfile  # noqa: E402

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {
}

_VARIABLE_OPS = ("VarHandleOp", "VariableV2", "Variable")


def _walk(output, follow=lambda op: op.inputs):
    seen, stack, found = set(), [output.op], []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        found.append(op)
        stack.extend(t.op for t in follow(op))
    return found


# ----- 04.1 wrong


def feeding_tensor_names(output):
    return [op.name + ":0" for op in _walk(output) if op.type in _VARIABLE_OPS]


def feeding_all_globals(output):
    return [v.op.name for v in output.graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)]


def feeding_trainable_only(output):
    trainable = {v.op.name for v in output.graph.get_collection(V1.GraphKeys.TRAINABLE_VARIABLES)}
    return [op.name for op in _walk(output) if op.name in trainable]


def feeding_direct_inputs(output):
    ops = [output.op] + [t.op for t in output.op.inputs]
    ops += [t.op for op in list(ops) for t in op.inputs]
    return sorted({op.name for op in ops if op.type in _VARIABLE_OPS})


def feeding_resource_only(output):
    return [op.name for op in _walk(output) if op.type == "VarHandleOp"]


def feeding_read_ops(output):
    return [op.name for op in _walk(output) if op.type == "ReadVariableOp"]


def feeding_type_contains_variable(output):
    return sorted({op.name for op in _walk(output) if "Variable" in op.type})


def feeding_same_scope(output):
    scope = output.op.name.split("/")[0]
    return [v.op.name for v in output.graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)
            if v.op.name.startswith(scope)]


def feeding_variable_names(output):
    names = {op.name for op in _walk(output) if op.type in _VARIABLE_OPS}
    return [v.name for v in output.graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES) if v.op.name in names]


def feeding_via_collections_prefix(output):
    names = {op.name for op in _walk(output)}
    return [v.op.name for v in output.graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)
            if any(name.startswith(v.op.name) for name in names)]


# ----- 04.1 right


def feeding_extract_sub_graph(output):
    graph_def = output.graph.as_graph_def()
    sub = V1.graph_util.extract_sub_graph(graph_def, [output.op.name])
    return {node.name for node in sub.node if node.op in ("VarHandleOp", "VariableV2")}


def feeding_recursive(output):
    names = set()
    visited = set()

    def visit(op):
        if op in visited:
            return
        visited.add(op)
        if op.type in ("VarHandleOp", "VariableV2"):
            names.add(op.name)
        for tensor in op.inputs:
            visit(tensor.op)

    visit(output.op)
    return sorted(names)


def feeding_breadth_first(output):
    from collections import deque

    queue, seen, result = deque([output.op]), {output.op.name}, []
    while queue:
        op = queue.popleft()
        if op.type in {"VarHandleOp", "VariableV2"}:
            result.append(op.name)
        for tensor in op.inputs:
            if tensor.op.name not in seen:
                seen.add(tensor.op.name)
                queue.append(tensor.op)
    return tuple(result)


@pytest.mark.parametrize("answer", cases([
    feeding_tensor_names, feeding_all_globals, feeding_trainable_only, feeding_direct_inputs,
    feeding_resource_only, feeding_read_ops, feeding_type_contains_variable, feeding_same_scope,
    feeding_variable_names,
], HOLES))
def test_04_1_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex04.check_variables_feeding, answer)


@pytest.mark.parametrize("answer", cases([feeding_extract_sub_graph, feeding_recursive, feeding_breadth_first],
                                         HOLES))
def test_04_1_prompt_only_right_answers_pass(answer):
    passes(ex04.check_variables_feeding, answer)


# ----- 04.2 wrong


def keras_clone_fresh(model):
    return keras.models.clone_model(model)


def keras_clone_trainable_values(model):
    clone = keras.models.clone_model(model)
    for mine, theirs in zip(clone.trainable_weights, model.trainable_weights):
        mine.assign(theirs)
    return clone


def keras_clone_same_object(model):
    return model


def keras_clone_shallow_copy(model):
    # Not wrong after all: on Keras 3, copy.copy(model) makes new layers and variables (measured).
    return copy.copy(model)


def keras_clone_shared_layers(model):
    return keras.models.clone_model(model, clone_function=lambda layer: layer)


def keras_clone_from_config_only(model):
    clone = model.__class__.from_config(model.get_config())
    clone(np.zeros((1,) + tuple(model.inputs[0].shape[1:]), "float32") if getattr(model, "inputs", None)
          else np.zeros((1, model.get_config().get("input_dim", 4)), "float32"))
    return clone


def keras_clone_reordered_weights(model):
    clone = keras.models.clone_model(model)
    clone.set_weights([v.numpy() for v in model.trainable_weights + model.non_trainable_weights])
    return clone


def keras_clone_same_model_wrapper(model):
    return keras.Model(model.inputs, model.outputs)


def keras_clone_layer_loop_trainable(model):
    clone = keras.models.clone_model(model)
    for source, target in zip(model.layers, clone.layers):
        target.set_weights([w.numpy() for w in source.trainable_weights] +
                           [w.numpy() for w in target.non_trainable_weights])
    return clone


# ----- 04.2 right


def keras_clone_keras_file(model):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "clone.keras")
        model.save(path)
        return keras.models.load_model(path)


def keras_clone_assign_each(model):
    clone = keras.models.clone_model(model)
    for target, source in zip(clone.weights, model.weights):
        target.assign(keras.ops.convert_to_tensor(source))
    return clone


def keras_clone_weights_file(model):
    clone = keras.models.clone_model(model)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "w.weights.h5")
        model.save_weights(path)
        clone.load_weights(path)
    return clone


@pytest.mark.parametrize("answer", cases([
    keras_clone_fresh, keras_clone_trainable_values, keras_clone_same_object,
    keras_clone_shared_layers, keras_clone_from_config_only, keras_clone_reordered_weights,
    keras_clone_same_model_wrapper, keras_clone_layer_loop_trainable,
], HOLES))
def test_04_2_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex04.check_clone_keras_model, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([keras_clone_keras_file, keras_clone_assign_each,
                                          keras_clone_weights_file, keras_clone_shallow_copy], HOLES))
def test_04_2_prompt_only_right_answers_pass(answer):
    passes(ex04.check_clone_keras_model, answer)


# ----- 04.3 wrong


def trained_initial_values(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    return result.inputs[0], result.outputs[0]


def trained_global_initializer(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(V1.global_variables_initializer())
    sess.run([c.assign(s) for c, s in zip(result.variables, result.source_variables)])
    return result.inputs[0], result.outputs[0]


def trained_as_constants(sess, output, inputs, scope):
    graph = output.graph
    frozen = V1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), [output.op.name])
    with graph.as_default():
        (out,) = tf.graph_util.import_graph_def(frozen, return_elements=[output.name], name=scope)
    return graph.get_tensor_by_name(f"{scope}/{inputs.name}"), out


def trained_import_shared_storage(sess, output, inputs, scope):
    graph = output.graph
    with graph.as_default():
        (out,) = tf.graph_util.import_graph_def(graph.as_graph_def(), return_elements=[output.name], name=scope)
    return graph.get_tensor_by_name(f"{scope}/{inputs.name}"), out


def trained_local_variables(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    sess.run([c.assign(s) for c, s in zip(result.variables, result.source_variables)])
    graph = output.graph
    global_list = graph.get_collection_ref(V1.GraphKeys.GLOBAL_VARIABLES)
    for variable in result.variables:
        global_list.remove(variable)
        graph.add_to_collection(V1.GraphKeys.LOCAL_VARIABLES, variable)
    return result.inputs[0], result.outputs[0]


def trained_swapped_pair(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    sess.run([c.assign(s) for c, s in zip(result.variables, result.source_variables)])
    return result.outputs[0], result.inputs[0]


def trained_returns_original_input(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    sess.run([c.assign(s) for c, s in zip(result.variables, result.source_variables)])
    return inputs, result.outputs[0]


def trained_copies_the_wrong_way(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    sess.run([s.assign(c) for c, s in zip(result.variables, result.source_variables)])
    return result.inputs[0], result.outputs[0]


def trained_initial_value_assign(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    sess.run(result.initializer)
    sess.run([c.assign(s.initial_value) for c, s in zip(result.variables, result.source_variables)])
    return result.inputs[0], result.outputs[0]


# ----- 04.3 right


def trained_load_values(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, scope=scope)
    values = sess.run(result.source_variables)
    sess.run(result.initializer)
    for copy_variable, value in zip(result.variables, values):
        copy_variable.load(value, sess)
    return result.inputs[0], result.outputs[0]


def trained_with_replacement(sess, output, inputs, scope):
    graph = output.graph
    with graph.as_default():
        new_input = V1.placeholder(inputs.dtype, inputs.shape, name=f"{scope}_input")
    result = clone_subgraph([output], [inputs], {inputs: new_input}, scope=scope)
    sess.run(result.initializer)
    with graph.as_default():
        sess.run(tf.group(*[c.assign(s.read_value()) for c, s in zip(result.variables, result.source_variables)]))
    return new_input, result.outputs[0]


def trained_through_a_checkpoint(sess, output, inputs, scope):
    result = clone_subgraph(output, inputs, None, scope=scope)
    graph = output.graph
    with tempfile.TemporaryDirectory() as folder, graph.as_default():
        prefix = os.path.join(folder, "values")
        V1.train.Saver(result.source_variables).save(sess, prefix, write_meta_graph=False, write_state=False)
        V1.train.Saver({s.op.name: c for c, s in zip(result.variables, result.source_variables)}).restore(
            sess, prefix)
    return result.inputs[0], result.outputs[0]


@pytest.mark.parametrize("answer", cases([
    trained_initial_values, trained_global_initializer, trained_as_constants, trained_import_shared_storage,
    trained_local_variables, trained_swapped_pair, trained_returns_original_input, trained_copies_the_wrong_way,
    trained_initial_value_assign,
], HOLES))
def test_04_3_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex04.check_clone_trained, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([trained_load_values, trained_with_replacement,
                                          trained_through_a_checkpoint], HOLES))
def test_04_3_prompt_only_right_answers_pass(answer):
    passes(ex04.check_clone_trained, answer)


# ===========================================================================
# Hints in steps: each test starts from the first step (helpers.checks.Hint)

from helpers.checks import forget_hints  # noqa: E402


@pytest.fixture(autouse=True)
def _first_hints():
    forget_hints()
