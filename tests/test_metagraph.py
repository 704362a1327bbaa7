"""Unit tests of helpers.metagraph (importing saved graphs, and frozen bases)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import NotACheckpointError, StructureMismatchError
from helpers.metagraph import (
    ScopeError,
    checked_scope,
    frozen_base,
    import_scoped,
    read_meta_graph,
    scope_shared_names,
    variable_shared_names,
)

tf1 = tf.compat.v1


def save_adder(prefix: str, w_value: float) -> str:
    """Save a tiny model y = x + w, with w = w_value, under no scope."""
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


@pytest.mark.parametrize("scope, message", [("", "non-empty"), ("/", "non-empty"), (None, "must be a str"),
                                            ("a b", "not a valid scope"), ("a//b", "not a valid scope")])
def test_scope_shared_names_refuses_a_bad_scope(scope, message):
    with pytest.raises(ScopeError, match=message):
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


@pytest.mark.parametrize(
    "first, second, lands",
    [("net", "net", "net_1"), ("model_1", "Model_1", "Model_1_1"), ("Model_1", "model_1", "model_1_1")],
)
def test_import_scoped_refuses_a_scope_in_use(adders, first, second, lands):
    with tf.Graph().as_default() as graph:
        import_scoped(adders[0] + ".meta", first)
        before = len(graph.get_operations())
        with pytest.raises(ScopeError, match=f"would land in '{lands}'"):
            import_scoped(adders[0] + ".meta", second)
        assert len(graph.get_operations()) == before


def test_import_scoped_refuses_an_open_name_scope(adders):
    with tf.Graph().as_default(), tf.name_scope("outer"):
        with pytest.raises(ScopeError, match="would land in 'outer/net'"):
            import_scoped(adders[0] + ".meta", "net")


@pytest.mark.parametrize("order", [("model_1", "model_10"), ("model_10", "model_1")])
def test_import_scoped_prefix_scopes_give_two_independent_copies(adders, order):
    with tf.Graph().as_default() as graph:
        savers = {scope: import_scoped(adders[0] + ".meta", scope) for scope in order}
        assert sorted(variable_shared_names(graph)) == sorted(f"{scope}/w" for scope in order)
        with tf1.Session() as sess:
            savers["model_1"].restore(sess, adders[0])
            savers["model_10"].restore(sess, adders[2])
            one, ten = sess.run(["model_1/y:0", "model_10/y:0"], {"model_1/x:0": [10.0], "model_10/x:0": [10.0]})
    assert (float(one[0]), float(ten[0])) == (11.0, 13.0)


def test_import_scoped_refuses_a_storage_name_in_use(adders):
    """A plain import under 'other' keeps shared_name 'w'; a variable stored as 'net/w' would clash."""
    with tf.Graph().as_default():
        tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name="net/w", name="elsewhere")
        with pytest.raises(ScopeError, match=r"already has variables stored as \['net/w'\]"):
            import_scoped(adders[0] + ".meta", "net")


def test_import_scoped_refuses_unknown_input_map_keys(adders):
    with tf.Graph().as_default():
        with pytest.raises(StructureMismatchError, match=r"'nope:0' names no tensor.*\['x:0'\]"):
            import_scoped(adders[0] + ".meta", "net", input_map={"nope:0": tf.constant([1.0])})


def test_import_scoped_refuses_a_float64_array_and_names_the_dtype(adders):
    with tf.Graph().as_default():
        with pytest.raises(StructureMismatchError, match="dtype float64.*takes float32"):
            import_scoped(adders[0] + ".meta", "net", input_map={"x:0": np.array([1.0, 2.0])})


def test_import_scoped_takes_a_bare_op_name_and_a_float32_array(adders):
    with tf.Graph().as_default():
        saver = import_scoped(adders[1] + ".meta", "net", input_map={"x": np.array([1.0, 2.0], np.float32)})
        with tf1.Session() as sess:
            saver.restore(sess, adders[1])
            np.testing.assert_allclose(sess.run("net/y:0"), [3.0, 4.0])


def test_import_scoped_refuses_a_wrong_shape(adders):
    with tf.Graph().as_default():
        with pytest.raises(StructureMismatchError, match="shape"):
            import_scoped(adders[0] + ".meta", "net", input_map={"x:0": tf.zeros([2, 2])})


def test_import_scoped_refuses_a_missing_file(tmp_path):
    with tf.Graph().as_default(), pytest.raises(NotACheckpointError, match="no such file"):
        import_scoped(tmp_path / "missing.meta", "net")


def test_import_scoped_refuses_a_graph_without_variables(tmp_path):
    path = str(tmp_path / "plain.meta")
    with tf.Graph().as_default():
        tf.identity(tf1.placeholder(tf.float32, name="x"), name="y")
        tf1.train.export_meta_graph(filename=path)
    with tf.Graph().as_default(), pytest.raises(StructureMismatchError, match="without variables"):
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
    with pytest.raises(StructureMismatchError, match=r"no layer 'hiden'.*\['hidden', 'out'\]"):
        frozen_base(make_net(), "hiden")


def test_frozen_base_works_on_a_branching_model():
    inputs = keras.Input((4,))
    left = keras.layers.Dense(3, name="left")(inputs)
    right = keras.layers.Dense(3, name="right")(inputs)
    joined = keras.layers.Concatenate(name="joined")([left, right])
    net = keras.Model(inputs, keras.layers.Dense(2, name="out")(joined))
    base = frozen_base(net, "joined")
    assert base.output_shape == (None, 6) and len(base.non_trainable_weights) == 4


def test_frozen_base_refuses_a_subclassed_model():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(3, name="hidden")

        def call(self, x):
            return self.hidden(x)

    net = Net()
    net(np.ones((1, 4), np.float32))
    with pytest.raises(StructureMismatchError, match="no graph of layers to cut"):
        frozen_base(net, "hidden")


def test_frozen_base_refuses_a_shared_layer():
    shared = keras.layers.Dense(2, name="shared")
    a, b = keras.Input((3,)), keras.Input((3,))
    net = keras.Model([a, b], [shared(a), shared(b)])
    with pytest.raises(StructureMismatchError, match="called 2 times"):
        frozen_base(net, "shared")


# ---------------------------------------------------------------- real-world .meta files


def save_reference_adder(prefix: str, w_value: float) -> str:
    """y = x + w as TF 1.x wrote it: a reference variable (VariableV2)."""
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, shape=[None], name="x")
        w = tf1.get_variable("w", initializer=w_value, use_resource=False)
        tf.add(x, w, name="y")
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            return saver.save(sess, prefix)


def test_reference_variable_graphs_import_as_independent_copies(tmp_path):
    prefixes = [save_reference_adder(str(tmp_path / f"old_{i}"), float(i)) for i in (1, 2)]
    meta = read_meta_graph(prefixes[0] + ".meta")
    assert {n.op for n in meta.graph_def.node if n.name == "w"} == {"VariableV2"}
    with tf.Graph().as_default() as graph:
        plain = tf1.train.import_meta_graph(prefixes[0] + ".meta", import_scope="plain")
        scoped = import_scoped(prefixes[0] + ".meta", "scoped")
        assert variable_shared_names(graph) == {"plain/w": "plain/w", "scoped/w": "scoped/w"}
        with tf1.Session() as sess:
            plain.restore(sess, prefixes[0])
            scoped.restore(sess, prefixes[1])
            answers = sess.run(["plain/y:0", "scoped/y:0"], {"plain/x:0": [10.0], "scoped/x:0": [10.0]})
    assert [float(a[0]) for a in answers] == [11.0, 12.0]


def export_gpu_pinned(path) -> None:
    """A .meta as a GPU machine writes it: every op of the model pinned to /device:GPU:0."""
    with tf.Graph().as_default():
        with tf.device("/device:GPU:0"):
            x = tf1.placeholder(tf.float32, shape=[None], name="x")
            w = tf1.get_variable("w", initializer=2.0)
            tf.add(x, w, name="y")
        saver = tf1.train.Saver()
        tf1.train.export_meta_graph(str(path), clear_devices=False, saver_def=saver.as_saver_def())


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="this machine has a GPU")
def test_a_gpu_pinned_meta_fails_plain_and_runs_with_import_scoped(tmp_path):
    path = tmp_path / "gpu.meta"
    export_gpu_pinned(path)
    assert "/device:GPU:0" in {n.device for n in read_meta_graph(path).graph_def.node}
    with tf.Graph().as_default():
        tf1.train.import_meta_graph(str(path))
        with tf1.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(tf1.global_variables_initializer())
    with tf.Graph().as_default() as graph:
        import_scoped(path, "net")
        assert {op.device for op in graph.get_operations()} == {""}
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            np.testing.assert_allclose(sess.run("net/y:0", {"net/x:0": [1.0]}), [3.0])


def test_import_scoped_keeps_the_pins_when_asked(tmp_path):
    path = tmp_path / "gpu.meta"
    export_gpu_pinned(path)
    with tf.Graph().as_default() as graph:
        import_scoped(path, "net", clear_devices=False)
        assert "/device:GPU:0" in {op.device for op in graph.get_operations()}


@pytest.mark.parametrize(
    "content", [b"not a graph at all\n", b"\x00\x01\x02garbage", b"\n\x03abc"], ids=["text", "bytes", "proto-ish"]
)
def test_files_that_are_not_meta_graphs_are_refused(tmp_path, content):
    path = tmp_path / "model.meta"
    path.write_bytes(content)
    with tf.Graph().as_default() as graph:
        with pytest.raises(NotACheckpointError, match="model.meta"):
            import_scoped(path, "net")
        assert graph.get_operations() == []
    assert path.read_bytes() == content


def test_a_checkpoint_index_is_not_a_meta_graph(adders):
    with pytest.raises(NotACheckpointError, match="not a meta graph"):
        import_scoped(adders[0] + ".index", "net")


# ---------------------------------------------------------------- properties

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_SCOPE_TEXT = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="aZ0._-/ [*?]éм", max_size=10),
    st.sampled_from(["model_1", "model_10", "Model_1", "net/", "/net", "a/b", "a//b", ".x", "-x", "_x", " "]),
)
_VALID_PART = r"[A-Za-z0-9.][A-Za-z0-9_.\-]*"


@pytest.fixture(scope="module")
def saved_adder(tmp_path_factory) -> str:
    return save_adder(str(tmp_path_factory.mktemp("adder") / "model"), 4.0)


@_SETTINGS
@given(scope=_SCOPE_TEXT)
def test_property_checked_scope_is_a_clean_name_or_a_scope_error(scope):
    import re

    try:
        name = checked_scope(scope)
    except ScopeError as error:
        assert repr(scope) in str(error) or "non-empty" in str(error)
        return
    assert name == scope.strip("/")
    assert all(re.fullmatch(_VALID_PART, part) for part in name.split("/"))


@_SETTINGS
@given(scope=_SCOPE_TEXT)
def test_property_import_scoped_works_under_the_scope_or_says_why(saved_adder, scope):
    with tf.Graph().as_default() as graph:
        try:
            saver = import_scoped(saved_adder + ".meta", scope)
        except ScopeError:
            assert graph.get_operations() == []
            return
        name = scope.strip("/")
        assert variable_shared_names(graph) == {f"{name}/w": f"{name}/w"}
        with tf1.Session() as sess:
            saver.restore(sess, saved_adder)
            assert float(sess.run(f"{name}/y:0", {f"{name}/x:0": [1.0]})[0]) == 5.0


_PATH_PART = st.text(alphabet="ab [*?]é-_.", min_size=1, max_size=8).filter(lambda p: p not in (".", ".."))


@_SETTINGS
@given(name=_PATH_PART, as_path=st.booleans(), suffix=st.sampled_from(["", ".meta", "/", ".index"]))
def test_property_paths_read_the_right_file_or_say_why(tmp_path_factory, saved_adder, name, as_path, suffix):
    import pathlib
    import shutil

    folder = tmp_path_factory.mktemp("paths")
    real = folder / (name + ".meta")
    shutil.copyfile(saved_adder + ".meta", real)
    decoy = folder / (name + "x.meta")  # a glob would match this too
    decoy.write_bytes(b"decoy")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    text = str(folder / name) + suffix
    path = pathlib.Path(text) if as_path else text
    try:
        meta = read_meta_graph(path)
    except NotACheckpointError as error:
        assert suffix != ".meta"
        assert str(pathlib.Path(text)) in str(error) or text in str(error)
    else:
        assert suffix == ".meta" and {n.name for n in meta.graph_def.node} >= {"x", "w", "y"}
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_plain_import_meta_graph_under_model_1_after_model_10_returns_a_broken_saver(adders):
    """The TensorFlow behaviour import_scoped works around: its scope filter is a regex prefix."""
    with tf.Graph().as_default():
        tf1.train.import_meta_graph(adders[0] + ".meta", import_scope="model_10")
        saver = tf1.train.import_meta_graph(adders[0] + ".meta", import_scope="model_1")
        assert not saver.saver_def.restore_op_name.startswith("model_1/")


def test_import_scoped_without_a_saver_def_restores_only_its_own_variables(adders, tmp_path):
    path = str(tmp_path / "no_saver.meta")
    with tf.Graph().as_default():
        x = tf1.placeholder(tf.float32, shape=[None], name="x")
        tf.add(x, tf1.get_variable("w", initializer=0.0), name="y")
        tf1.train.export_meta_graph(filename=path)
    with tf.Graph().as_default():
        import_scoped(adders[0] + ".meta", "first")
        saver = import_scoped(path, "second")
        with tf1.Session() as sess:
            saver.restore(sess, adders[2])
            assert float(sess.run("second/y:0", {"second/x:0": [1.0]})[0]) == 4.0
            with pytest.raises(tf.errors.FailedPreconditionError):
                sess.run("first/y:0", {"first/x:0": [1.0]})  # untouched by second's restore
