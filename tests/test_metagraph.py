"""Unit tests of helpers.metagraph (importing saved graphs, and frozen bases)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import NotACheckpointError
from helpers.metagraph import (
    frozen_base,
    import_scoped,
    read_meta_graph,
    scope_shared_names,
    variable_shared_names,
)

tf1 = tf.compat.v1


def save_adder(prefix: str, w_value: float) -> str:
    """Save the seed's tiny model y = x + w, with w = w_value, under no scope."""
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, shape=[None], name="x")
        w = tf1.get_variable("w", initializer=w_value)
        tf.add(x, w, name="y")
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            return saver.save(sess, prefix)


@pytest.fixture
def adders(tmp_path) -> list[str]:
    return [save_adder(str(tmp_path / f"model_{i}"), float(i)) for i in (1, 2, 3)]


def test_read_meta_graph_returns_the_saved_graph(adders):
    meta = read_meta_graph(adders[0] + ".meta")
    names = {node.name for node in meta.graph_def.node}
    assert {"x", "w", "y"} <= names
    assert "variables" in meta.collection_def


@pytest.mark.parametrize(
    "make_path, reason",
    [
        (lambda prefix: prefix + "_missing.meta", "no such file"),
        (lambda prefix: prefix, "did you mean"),
        (lambda prefix: prefix + ".index", "not a meta graph"),
    ],
)
def test_read_meta_graph_refuses_bad_paths(adders, make_path, reason):
    with pytest.raises(NotACheckpointError, match=reason):
        read_meta_graph(make_path(adders[0]))


def test_read_meta_graph_refuses_a_folder(tmp_path):
    with pytest.raises(NotACheckpointError, match="folder"):
        read_meta_graph(tmp_path)


def test_read_meta_graph_refuses_an_empty_file(tmp_path):
    empty = tmp_path / "empty.meta"
    empty.write_bytes(b"")
    with pytest.raises(NotACheckpointError, match="not a meta graph"):
        read_meta_graph(empty)


def test_scope_shared_names_prefixes_every_variable_and_keeps_the_input(adders):
    meta = read_meta_graph(adders[0] + ".meta")
    scoped = scope_shared_names(meta, "copy_1/")
    handles = [node for node in scoped.graph_def.node if node.op == "VarHandleOp"]
    assert [node.attr["shared_name"].s for node in handles] == [b"copy_1/w"]
    original = [node for node in meta.graph_def.node if node.op == "VarHandleOp"]
    assert [node.attr["shared_name"].s for node in original] == [b"w"]


def test_scope_shared_names_fills_an_empty_shared_name():
    meta = tf1.MetaGraphDef()
    node = meta.graph_def.node.add(name="layer/w", op="VarHandleOp")
    node.attr["shared_name"].s = b""
    scoped = scope_shared_names(meta, "m")
    assert scoped.graph_def.node[0].attr["shared_name"].s == b"m/layer/w"


@pytest.mark.parametrize("scope", ["", "/", None])
def test_scope_shared_names_refuses_an_empty_scope(scope):
    with pytest.raises(ValueError, match="non-empty"):
        scope_shared_names(tf1.MetaGraphDef(), scope)


def test_plain_import_meta_graph_shares_one_variable(adders):
    """The trap import_scoped fixes: three copies answer like the last restore."""
    with tf.Graph().as_default() as graph:
        savers = [tf1.train.import_meta_graph(adders[0] + ".meta", import_scope=f"c{i}") for i in (1, 2, 3)]
        assert set(variable_shared_names(graph).values()) == {"w"}
        with tf1.Session() as sess:
            for saver, prefix in zip(savers, adders):
                saver.restore(sess, prefix)
            answers = sess.run([f"c{i}/y:0" for i in (1, 2, 3)], {f"c{i}/x:0": [10.0] for i in (1, 2, 3)})
    assert [float(a[0]) for a in answers] == [13.0, 13.0, 13.0]


def test_import_scoped_gives_each_copy_its_own_variables(adders):
    with tf.Graph().as_default() as graph:
        savers = [import_scoped(adders[0] + ".meta", f"c{i}") for i in (1, 2, 3)]
        assert all(isinstance(saver, tf1.train.Saver) for saver in savers)
        assert variable_shared_names(graph) == {"c1/w": "c1/w", "c2/w": "c2/w", "c3/w": "c3/w"}
        with tf1.Session() as sess:
            for saver, prefix in zip(savers, adders):
                saver.restore(sess, prefix)
            answers = sess.run([f"c{i}/y:0" for i in (1, 2, 3)], {f"c{i}/x:0": [10.0] for i in (1, 2, 3)})
    assert [float(a[0]) for a in answers] == [11.0, 12.0, 13.0]


def test_import_scoped_plugs_in_a_new_input(adders):
    with tf.Graph().as_default() as graph:
        raw = tf1.placeholder(tf.float32, shape=[None], name="raw")
        saver = import_scoped(adders[1] + ".meta", "net", input_map={"x:0": raw * 2.0})
        y = graph.get_tensor_by_name("net/y:0")
        with tf1.Session() as sess:
            saver.restore(sess, adders[1])
            np.testing.assert_allclose(sess.run(y, {raw: [1.0, 5.0]}), [4.0, 12.0])


def test_import_scoped_refuses_a_scope_in_use(adders):
    with tf.Graph().as_default():
        import_scoped(adders[0] + ".meta", "net")
        with pytest.raises(ValueError, match="already holds ops"):
            import_scoped(adders[0] + ".meta", "net")


def test_import_scoped_refuses_unknown_input_map_keys(adders):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="nope"):
            import_scoped(adders[0] + ".meta", "net", input_map={"nope:0": tf.constant([1.0])})


def test_import_scoped_refuses_a_missing_file(tmp_path):
    with tf.Graph().as_default(), pytest.raises(NotACheckpointError, match="no such file"):
        import_scoped(tmp_path / "missing.meta", "net")


def test_import_scoped_refuses_a_graph_without_variables(tmp_path):
    path = str(tmp_path / "plain.meta")
    with tf.Graph().as_default():
        tf.identity(tf1.placeholder(tf.float32, name="x"), name="y")
        tf1.train.export_meta_graph(filename=path)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="without variables"):
        import_scoped(path, "net")


def test_variable_shared_names_lists_only_variables():
    with tf.Graph().as_default() as graph:
        with tf1.variable_scope("a"):
            tf1.get_variable("w", shape=[1])
        tf.constant(1.0, name="c")
    assert variable_shared_names(graph) == {"a/w": "a/w"}


def make_net() -> keras.Model:
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, activation="relu", name="hidden"), keras.layers.Dense(2, name="out")]
    )


def test_frozen_base_outputs_the_inner_layer_and_trains_nothing():
    net = make_net()
    base = frozen_base(net, "hidden")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    expected = np.maximum(x @ net.get_layer("hidden").kernel.numpy() + net.get_layer("hidden").bias.numpy(), 0)
    np.testing.assert_allclose(base(x).numpy(), expected, rtol=1e-5, atol=1e-5)
    assert base.trainable_weights == []
    assert len(base.non_trainable_weights) == 2
    # the layers are shared, so the original network's hidden layer is frozen as well
    assert net.get_layer("hidden").trainable is False


def test_frozen_base_names_the_layers_on_a_typo():
    with pytest.raises(ValueError, match=r"no layer 'hiden'.*\['hidden', 'out'\]"):
        frozen_base(make_net(), "hiden")
