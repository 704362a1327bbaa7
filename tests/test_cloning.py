"""Unit tests of helpers.cloning: copies are complete, independent, and bad input is refused."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.cloning import (
    ClonedSubgraph,
    clone_subgraph,
    give_own_shared_names,
    initializer_ops,
    rebuild_variables,
)
from helpers.errors import StructureMismatchError
from helpers.metagraph import ScopeError, variable_shared_names

V1 = tf.compat.v1
ONES = np.ones((2, 3), np.float32)


@pytest.fixture
def net():
    """x -> pre (a variable of its own) -> a -> net (two layers) -> y, in a fresh graph."""
    graph = tf.Graph()
    with graph.as_default():
        V1.set_random_seed(0)
        x = V1.placeholder(tf.float32, [None, 3], name="x")
        with V1.variable_scope("pre"):
            a = tf.nn.relu(tf.matmul(x, V1.get_variable("w", [3, 3])), name="a")
        with V1.variable_scope("net"):
            w1 = V1.get_variable("w1", [3, 4])
            b1 = V1.get_variable("b1", [4], initializer=tf.zeros_initializer())
            steps = V1.get_variable("steps", [], trainable=False, initializer=tf.zeros_initializer())
            h = tf.nn.relu(tf.matmul(a, w1) + b1, name="h")
            y = tf.identity(tf.matmul(h, V1.get_variable("w2", [4, 1])) + 0.0 * steps, name="y")
    return {"graph": graph, "x": x, "a": a, "h": h, "y": y, "w1": w1}


def _run(graph, fetches, feed):
    with graph.as_default(), V1.Session() as sess:
        sess.run(V1.global_variables_initializer())
        return sess.run(fetches, feed)


def test_clone_has_its_own_registered_variables(net):
    with net["graph"].as_default():
        copy = clone_subgraph(net["y"], net["a"], [net["a"]], "copy")
    assert isinstance(copy, ClonedSubgraph)
    assert copy.scope == "copy"
    names = [v.name for v in copy.variables]
    assert names == ["copy/net/w1:0", "copy/net/b1:0", "copy/net/steps:0", "copy/net/w2:0"]
    assert [v.name for v in copy.source_variables] == [n.replace("copy/", "") for n in names]
    assert all(isinstance(v, tf.Variable) for v in copy.variables)
    graph = net["graph"]
    assert set(names) <= {v.name for v in graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)}
    trainable = {v.name for v in graph.get_collection(V1.GraphKeys.TRAINABLE_VARIABLES)}
    assert {"copy/net/w1:0", "copy/net/b1:0", "copy/net/w2:0"} <= trainable
    assert "copy/net/steps:0" not in trainable
    assert not any(name.startswith("copy/pre/") for name in names)  # cut at the input


def test_clone_computes_the_same_and_is_independent(net):
    graph = net["graph"]
    with graph.as_default():
        copy = clone_subgraph([net["y"]], [net["a"]], [net["a"]], "copy")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            before = sess.run([net["y"], copy.outputs[0]], {net["x"]: ONES})
            sess.run(net["w1"].assign(tf.zeros([3, 4])))
            after = sess.run([net["y"], copy.outputs[0]], {net["x"]: ONES})
    np.testing.assert_allclose(before[0], before[1])  # same initial values (seeds copied)
    assert not np.allclose(after[0], after[1])
    np.testing.assert_allclose(after[1], before[1])  # the copy did not follow the original


def test_initializer_initializes_only_the_copy(net):
    graph = net["graph"]
    with graph.as_default():
        copy = clone_subgraph(net["y"], net["a"], None, "copy")
        with V1.Session() as sess:
            sess.run(copy.initializer)
            uninitialized = sess.run(V1.report_uninitialized_variables())
            value = sess.run(copy.outputs[0], {copy.inputs[0]: np.ones((2, 3))})
    assert sorted(uninitialized.astype(str)) == ["net/b1", "net/steps", "net/w1", "net/w2", "pre/w"]
    assert value.shape == (2, 1)


def test_without_replacements_the_copy_gets_placeholders(net):
    with net["graph"].as_default():
        copy = clone_subgraph(net["y"], net["x"], None, "copy")
    [own] = copy.inputs
    assert own.op.type == "Placeholder" and own.name.startswith("copy/")
    assert own.shape.as_list() == [None, 3]
    assert len(copy.variables) == 5  # pre/w is between x and y now
    value = _run(net["graph"], copy.outputs[0], {own: ONES})
    assert value.shape == (2, 1)


def test_replacements_as_a_mapping_and_a_new_tensor(net):
    graph = net["graph"]
    with graph.as_default():
        other = V1.placeholder(tf.float32, [None, 3], name="other")
        copy = clone_subgraph([net["y"]], [net["a"]], {net["a"]: other}, "copy")
    assert copy.inputs == [other]
    out, original = _run(graph, [copy.outputs[0], net["y"]], {other: ONES, net["x"]: ONES})
    assert out.shape == (2, 1) and original.shape == (2, 1)


def test_clone_of_a_clone_works(net):
    with net["graph"].as_default():
        first = clone_subgraph(net["y"], net["a"], None, "copy")
        second = clone_subgraph(first.outputs, first.inputs, None, "copy_of_copy")
    assert second.scope == "copy_of_copy"
    assert second.variables[0].name == "copy_of_copy/copy/net/w1:0"
    assert _run(net["graph"], second.outputs[0], {second.inputs[0]: ONES}).shape == (2, 1)


@pytest.mark.parametrize("taken, asked, lands", [("copy", "copy", "copy_1"), ("model_1", "Model_1", "Model_1_1")])
def test_a_taken_scope_is_refused_not_renamed(net, taken, asked, lands):
    with net["graph"].as_default():
        clone_subgraph(net["y"], net["a"], None, taken)
        before = len(net["graph"].get_operations())
        with pytest.raises(ScopeError, match=f"would land in '{lands}'"):
            clone_subgraph(net["y"], net["a"], None, asked)
    assert len(net["graph"].get_operations()) == before  # nothing half-imported


def test_an_open_name_scope_is_refused(net):
    with net["graph"].as_default(), tf.name_scope("outer"):
        with pytest.raises(ScopeError, match="would land in 'outer/copy'"):
            clone_subgraph(net["y"], net["a"], None, "copy")


@pytest.mark.parametrize("first, second", [("model_1", "model_10"), ("model_10", "model_1")])
def test_prefix_scopes_give_two_independent_copies(net, first, second):
    graph = net["graph"]
    with graph.as_default():
        a = clone_subgraph(net["y"], net["a"], None, first)
        b = clone_subgraph(net["y"], net["a"], None, second)
        assert a.scope == first and b.scope == second
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(a.variables[0].assign(tf.zeros_like(a.variables[0])))
            out_a, out_b = sess.run([a.outputs[0], b.outputs[0]], {a.inputs[0]: ONES, b.inputs[0]: ONES})
    assert np.allclose(out_a, 0.0) and not np.allclose(out_b, 0.0)


def test_an_output_that_is_an_input_maps_to_its_replacement(net):
    with net["graph"].as_default():
        copy = clone_subgraph([net["y"], net["h"]], [net["h"]], None, "copy")
    assert copy.outputs[1] is copy.inputs[0]
    assert [v.name for v in copy.variables] == ["copy/net/steps:0", "copy/net/w2:0"]


def test_the_copy_can_be_trained_and_saved(net, tmp_path):
    graph = net["graph"]
    with graph.as_default():
        copy = clone_subgraph(net["y"], net["a"], [net["a"]], "copy")
        loss = tf.reduce_mean(tf.square(copy.outputs[0] - 1.0))
        train = V1.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=copy.variables)
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            original_before = sess.run(net["y"], {net["x"]: ONES})
            losses = [sess.run([loss, train], {net["x"]: ONES})[0] for _ in range(3)]
            original_after = sess.run(net["y"], {net["x"]: ONES})
            path = saver.save(sess, str(tmp_path / "m"))
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(original_before, original_after)
    saved = {name for name, _ in tf.train.list_variables(path)}
    assert {"copy/net/w1", "copy/net/w2", "net/w1"} <= saved


def test_output_not_depending_on_inputs(net):
    with net["graph"].as_default(), pytest.raises(StructureMismatchError, match="'pre/a:0' does not depend on any"):
        clone_subgraph(net["a"], net["y"], None, "bad")


def test_unused_input(net):
    with net["graph"].as_default(), pytest.raises(StructureMismatchError, match=r"no output depends on the inputs \['pre/a:0'\]"):
        clone_subgraph(net["y"], [net["h"], net["a"]], None, "bad")


def test_placeholder_not_among_inputs(net):
    with net["graph"].as_default():
        scale = V1.placeholder(tf.float32, [], name="scale")
        with pytest.raises(StructureMismatchError, match=r"placeholders \['scale:0'\], which are not among the inputs"):
            clone_subgraph(net["y"] * scale, net["a"], None, "bad")
        shared = clone_subgraph(net["y"] * scale, [net["a"], scale], [net["a"], scale], "ok")
    assert shared.inputs[1] is scale


def test_replacement_with_wrong_dtype(net):
    with net["graph"].as_default():
        wrong = V1.placeholder(tf.int32, [None, 3], name="ints")
        with pytest.raises(StructureMismatchError, match="'ints:0' for input 'pre/a:0' has dtype int32, the input is float32"):
            clone_subgraph(net["y"], net["a"], [wrong], "bad")


def test_replacement_with_wrong_shape(net):
    with net["graph"].as_default():
        wrong = V1.placeholder(tf.float32, [None, 5], name="wide")
        with pytest.raises(StructureMismatchError, match=r"has shape \(None, 5\), which does not fit the input's \(None, 3\)"):
            clone_subgraph(net["y"], net["a"], [wrong], "bad")


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda n: clone_subgraph(n["y"], n["a"], [n["a"], n["a"]], "bad"), "2 replacements"),
        (lambda n: clone_subgraph(n["y"], n["a"], {n["x"]: n["a"]}, "bad"), "not inputs"),
        (lambda n: clone_subgraph(n["y"], n["a"], [np.ones((2, 3))], "bad"), "replacements must be tf.Tensor"),
        (lambda n: clone_subgraph(n["y"], n["a"], 3, "bad"), "replacements must be tensors"),
        (lambda n: clone_subgraph(["y:0"], n["a"], None, "bad"), "outputs must hold tf.Tensor"),
        (lambda n: clone_subgraph(7, n["a"], None, "bad"), "outputs must be a tf.Tensor"),
        (lambda n: clone_subgraph(n["y"], [], None, "bad"), "inputs is empty"),
        (lambda n: clone_subgraph(n["y"], n["a"], None, ""), "a scope must be a non-empty name"),
        (lambda n: clone_subgraph(n["y"], n["a"], None, None), "a scope must be a str"),
        (lambda n: clone_subgraph(n["y"], n["a"], None, "my copy"), "not a valid scope"),
        (lambda n: clone_subgraph(n["y"], n["a"], None, "a//b"), "not a valid scope"),
        (lambda n: clone_subgraph(n["y"], n["a"], None, "_copy"), "not a valid scope"),
    ],
)
def test_bad_arguments_get_a_helpers_error(net, call, message):
    with net["graph"].as_default():
        before = len(net["graph"].get_operations())
        with pytest.raises(StructureMismatchError, match=message):
            call(net)
        assert len(net["graph"].get_operations()) == before


def test_an_eager_tensor_is_refused(net):
    with pytest.raises(StructureMismatchError, match="eager tensor"):
        clone_subgraph(tf.constant(1.0), net["a"], None, "bad")


def test_a_replacement_from_another_graph(net):
    with tf.Graph().as_default():
        elsewhere = V1.placeholder(tf.float32, [None, 3])
    with pytest.raises(StructureMismatchError, match="another graph"):
        clone_subgraph(net["y"], net["a"], [elsewhere], "bad")


def test_variable_without_python_object():
    graph = tf.Graph()
    with graph.as_default():
        x = V1.placeholder(tf.float32, [2], name="x")
        v = V1.get_variable("v", [2], initializer=tf.zeros_initializer())
        y = x + v
        graph.clear_collection(V1.GraphKeys.GLOBAL_VARIABLES)
        with pytest.raises(StructureMismatchError, match=r"\['v'\] have no tf.Variable"):
            clone_subgraph(y, x, None, "bad")


def test_give_own_shared_names_leaves_the_input_alone():
    graph = tf.Graph()
    with graph.as_default():
        V1.get_variable("w", [2], initializer=tf.zeros_initializer())
        tf.raw_ops.MutableHashTable(key_dtype=tf.string, value_dtype=tf.int64, shared_name="table", name="t")
        tf.constant(1.0, name="c")
    original = graph.as_graph_def()
    fixed = give_own_shared_names(original, "copy/")
    shared = {n.name: n.attr["shared_name"].s for n in fixed.node if "shared_name" in n.attr}
    assert shared == {"w": b"copy/w", "t": b"copy/t"}
    assert {n.name: n.attr["shared_name"].s for n in original.node if "shared_name" in n.attr} == {
        "w": b"w", "t": b"table"}
    assert "shared_name" not in next(n for n in fixed.node if n.name == "c").attr


def test_rebuild_variables_needs_the_initializer():
    graph = tf.Graph()
    with graph.as_default():
        v = V1.get_variable("w", [2], initializer=tf.zeros_initializer())
        only_handle = tf.compat.v1.graph_util.extract_sub_graph(graph.as_graph_def(), ["w"])
        tf.compat.v1.import_graph_def(give_own_shared_names(only_handle, "copy"), name="copy")
        with pytest.raises(StructureMismatchError, match="cannot rebuild 'w:0' under 'copy'"):
            rebuild_variables([v], "copy")


def test_rebuild_variables_refuses_what_is_not_a_variable():
    with tf.Graph().as_default():
        with pytest.raises(StructureMismatchError, match=r"tf.Variable objects, got \['str'\]"):
            rebuild_variables(["w:0"], "copy")
        with pytest.raises(ScopeError, match="not a valid scope"):
            rebuild_variables([], "my copy")


def test_rebuild_variables_keeps_local_variables_local():
    graph = tf.Graph()
    with graph.as_default():
        count = V1.get_variable("count", [], initializer=tf.zeros_initializer(), trainable=False,
                                collections=[V1.GraphKeys.LOCAL_VARIABLES])
        keep = ["count/Assign", "count/Read/ReadVariableOp"]
        sub = tf.compat.v1.graph_util.extract_sub_graph(graph.as_graph_def(), keep)
        tf.compat.v1.import_graph_def(give_own_shared_names(sub, "copy"), name="copy")
        [copy] = rebuild_variables([count], "copy")
    assert copy.name == "copy/count:0"
    def names(key):
        return [v.name for v in graph.get_collection(key)]

    assert names(V1.GraphKeys.LOCAL_VARIABLES) == ["count:0", "copy/count:0"]
    assert names(V1.GraphKeys.GLOBAL_VARIABLES) == []
    assert names(V1.GraphKeys.TRAINABLE_VARIABLES) == []


# ---------------------------------------------------------------- real-world graphs


def reference_variable_net():
    """A TF 1.x style network: reference variables (VariableV2), as TF 1.x's get_variable made them."""
    graph = tf.Graph()
    with graph.as_default():
        x = V1.placeholder(tf.float32, [None, 2], name="x")
        with V1.variable_scope("net", use_resource=False):
            w = V1.get_variable("w", initializer=np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
            b = V1.get_variable("b", initializer=np.array([0.5, -0.5], np.float32))
        y = tf.nn.relu(tf.matmul(x, w) + b, name="y")
    return graph, x, y, w


def test_reference_variables_are_cloned_as_reference_variables():
    graph, x, y, w = reference_variable_net()
    assert {op.type for op in graph.get_operations() if op.name in ("net/w", "net/b")} == {"VariableV2"}
    with graph.as_default():
        copy = clone_subgraph(y, x, None, "copy")
        assert [type(v).__name__ for v in copy.variables] == ["RefVariable", "RefVariable"]
        assert variable_shared_names(graph) == {
            "net/w": "net/w", "net/b": "net/b", "copy/net/w": "copy/net/w", "copy/net/b": "copy/net/b"}
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(w.assign(tf.zeros([2, 2])))
            original, cloned = sess.run([y, copy.outputs[0]], {x: [[1.0, 1.0]], copy.inputs[0]: [[1.0, 1.0]]})
    np.testing.assert_allclose(original, [[0.5, 0.0]])
    np.testing.assert_allclose(cloned, [[4.5, 5.5]])


def test_plain_import_of_reference_variables_was_never_shared():
    """Why the popular TF 1.x answers worked: a VariableV2 is found by its op name."""
    graph, x, y, w = reference_variable_net()
    with graph.as_default():
        needed = V1.graph_util.extract_sub_graph(graph.as_graph_def(), ["y", "net/w/Assign", "net/b/Assign"])
        V1.import_graph_def(needed, name="copy")
        with V1.Session() as sess:
            sess.run([V1.global_variables_initializer(), "copy/net/w/Assign", "copy/net/b/Assign"])
            sess.run(w.assign(tf.zeros([2, 2])))
            assert np.allclose(sess.run("copy/y:0", {"copy/x:0": [[1.0, 1.0]]}), [[4.5, 5.5]])


def test_initializer_ops_finds_initializers_without_variable_objects():
    graph, x, y, w = reference_variable_net()
    with graph.as_default():
        V1.get_variable("r", initializer=3.0)
        w.assign(tf.zeros([2, 2]), name="training_step")  # another assign to w, made later
        graph.clear_collection(V1.GraphKeys.GLOBAL_VARIABLES)
        found = initializer_ops(graph)
        assert {name: op.name for name, op in found.items()} == {
            "net/w": "net/w/Assign", "net/b": "net/b/Assign", "r": "r/Assign"}
        with V1.Session() as sess:
            sess.run(list(found.values()))
            assert np.allclose(sess.run(y, {x: [[1.0, 1.0]]}), [[4.5, 5.5]])
        assert list(initializer_ops(graph, ["r:0"])) == ["r"]


def test_initializer_ops_refuses_unknown_and_uninitialized_variables():
    graph = tf.Graph()
    with graph.as_default():
        V1.get_variable("w", [2])
        tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[2], shared_name="bare", name="bare")
        with pytest.raises(StructureMismatchError, match=r"no variable ops named \['nope'\]"):
            initializer_ops(graph, ["nope"])
        with pytest.raises(StructureMismatchError, match=r"\['bare'\] have no initializer"):
            initializer_ops(graph)
    with pytest.raises(StructureMismatchError, match="expected a tf.Graph"):
        initializer_ops("graph")


# ---------------------------------------------------------------- properties

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SCOPES = st.one_of(
    st.text(max_size=10),
    st.text(alphabet="aZ09._-/ [*?]é", max_size=8),
    st.sampled_from(["model_1", "Model_1", "model_10", "net/", "a//b", "0copy", "copy", "pre"]),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scope=_SCOPES)
def test_property_clone_lands_under_the_scope_or_says_why(scope):
    graph, x, y, w = reference_variable_net()
    with graph.as_default():
        V1.get_variable("model_1", [1])  # a taken name, differing in case from Model_1
        before = len(graph.get_operations())
        try:
            copy = clone_subgraph(y, x, None, scope)
        except StructureMismatchError:  # ScopeError is one
            assert len(graph.get_operations()) == before
            return
        name = scope.strip("/")
        assert copy.scope == name
        assert [v.op.name for v in copy.variables] == [f"{name}/net/w", f"{name}/net/b"]
        with V1.Session() as sess:
            sess.run([V1.global_variables_initializer()])
            sess.run(w.assign(tf.zeros([2, 2])))
            np.testing.assert_allclose(sess.run(copy.outputs[0], {copy.inputs[0]: [[1.0, 1.0]]}), [[4.5, 5.5]])


@settings(max_examples=40, deadline=None)
@given(scope=_SCOPES)
def test_property_give_own_shared_names_prefixes_or_says_why(scope):
    graph = tf.Graph()
    with graph.as_default():
        V1.get_variable("w", [2])
    original = graph.as_graph_def()
    try:
        fixed = give_own_shared_names(original, scope)
    except StructureMismatchError:
        return
    [node] = [n for n in fixed.node if n.op == "VarHandleOp"]
    assert node.attr["shared_name"].s.decode() == f"{scope.strip('/')}/w"
    assert [n.attr["shared_name"].s for n in original.node if n.op == "VarHandleOp"] == [b"w"]


# ---------------------------------------------------------------- flags: placeholder_with_default


@pytest.fixture
def flagged():
    """A TF1-style network whose dropout-like and batch-norm-like branches an is_training flag switches."""
    graph = tf.Graph()
    with graph.as_default():
        x = V1.placeholder(tf.float32, [None, 2], name="x")
        is_training = V1.placeholder_with_default(False, [], name="is_training")
        w = V1.get_variable("w", initializer=[[1.0], [2.0]])
        moving_mean = V1.get_variable("moving_mean", initializer=[10.0], trainable=False)
        h = x @ w
        h = tf.where(is_training, h - tf.reduce_mean(h, 0), h - moving_mean)  # batch-norm-like
        y = V1.cond(is_training, lambda: 0.5 * h, lambda: h, name="dropout")  # dropout-like
    return {"graph": graph, "x": x, "is_training": is_training, "y": y}


BATCH = np.array([[1, 1], [3, 3]], np.float32)
INFERENCE, TRAINING = [[-7.0], [-1.0]], [[-1.5], [1.5]]  # y for BATCH with the flag off / on


def test_a_flag_not_among_the_inputs_is_shared_not_copied(flagged):
    graph, flag = flagged["graph"], flagged["is_training"]
    with graph.as_default():
        copy = clone_subgraph(flagged["y"], flagged["x"], None, "copy")
    feed = {flagged["x"]: BATCH, copy.inputs[0]: BATCH}
    fetches = [flagged["y"], copy.outputs[0]]
    assert [v.tolist() for v in _run(graph, fetches, feed)] == [INFERENCE, INFERENCE]
    feed[flag] = True  # feeding the one flag switches the original AND the copy
    assert [v.tolist() for v in _run(graph, fetches, feed)] == [TRAINING, TRAINING]
    assert not [op.name for op in graph.get_operations() if op.type == "PlaceholderWithDefault"
                and op.name.startswith("copy/")]
    assert copy.shared == [flag]


def test_a_flag_among_the_inputs_is_replaced(flagged):
    graph, flag = flagged["graph"], flagged["is_training"]
    with graph.as_default():
        always = clone_subgraph(flagged["y"], [flagged["x"], flag], [flagged["x"], tf.constant(True)], "always")
        mine = V1.placeholder_with_default(True, [], name="mine")
        by_map = clone_subgraph(flagged["y"], [flagged["x"], flag], {flag: mine}, "by_map")
    assert always.shared == [] and by_map.inputs[1] is mine
    fetches = [flagged["y"], always.outputs[0], by_map.outputs[0]]
    result = _run(graph, fetches, {flagged["x"]: BATCH, by_map.inputs[0]: BATCH})
    assert [v.tolist() for v in result] == [INFERENCE, TRAINING, TRAINING]
    result = _run(graph, fetches, {flagged["x"]: BATCH, by_map.inputs[0]: BATCH, mine: False})
    assert [v.tolist() for v in result] == [INFERENCE, TRAINING, INFERENCE]


def test_a_flag_among_the_inputs_without_replacement_gets_its_own_default(flagged):
    graph, flag = flagged["graph"], flagged["is_training"]
    with graph.as_default():
        copy = clone_subgraph(flagged["y"], [flagged["x"], flag], None, "copy")
    own_flag = copy.inputs[1]
    assert own_flag.op.type == "PlaceholderWithDefault" and own_flag is not flag and copy.shared == []
    fetches = [flagged["y"], copy.outputs[0]]
    feed = {flagged["x"]: BATCH, copy.inputs[0]: BATCH}
    assert [v.tolist() for v in _run(graph, fetches, feed)] == [INFERENCE, INFERENCE]  # same default
    assert [v.tolist() for v in _run(graph, fetches, {**feed, flag: True})] == [TRAINING, INFERENCE]
    assert [v.tolist() for v in _run(graph, fetches, {**feed, own_flag: True})] == [INFERENCE, TRAINING]


def test_a_replacement_for_a_flag_must_fit(flagged):
    graph, flag = flagged["graph"], flagged["is_training"]
    with graph.as_default():
        with pytest.raises(StructureMismatchError, match=r"dtype float32, the input is bool"):
            clone_subgraph(flagged["y"], [flagged["x"], flag], [flagged["x"], tf.constant(1.0)], "bad")
        with pytest.raises(StructureMismatchError, match="does not fit the input"):
            clone_subgraph(flagged["y"], [flagged["x"], flag], [flagged["x"], tf.constant([True])], "bad")
