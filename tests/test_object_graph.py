"""Unit tests of helpers.object_graph: reading and drawing a checkpoint's object graph."""

from __future__ import annotations

import shutil
from pathlib import Path

import keras
import matplotlib
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.figure import Figure

from helpers.errors import NotACheckpointError
from helpers.object_graph import (
    KIND_COLOURS,
    NameBasedCheckpointError,
    checkpoint_paths,
    plot_object_graph,
    read_object_graph,
)

matplotlib.use("Agg")


class Net(keras.Model):
    def __init__(self) -> None:
        super().__init__()
        self.hidden = keras.layers.Dense(4, activation="relu")
        self.out = keras.layers.Dense(1)

    def call(self, x):
        return self.out(self.hidden(x))


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> str:
    """A checkpoint of a two-layer model and its Adam optimizer after one step."""
    keras.utils.set_random_seed(0)
    net, optimizer = Net(), keras.optimizers.Adam(0.01)
    x, y = tf.ones((4, 3)), tf.ones((4, 1))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((net(x) - y) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    folder = tmp_path_factory.mktemp("trained")
    return tf.train.Checkpoint(model=net, optimizer=optimizer).save(str(folder / "ckpt"))


@pytest.fixture()
def name_based(tmp_path: Path) -> str:
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("dense/kernel", [3, 2], initializer=tf.compat.v1.zeros_initializer())
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "tf1" / "model"), write_meta_graph=False)


def _damaged_copy(ckpt: str, tmp_path: Path, suffix: str, damage) -> str:
    source = Path(ckpt)
    copy = tmp_path / "damaged"
    copy.mkdir()
    for file in source.parent.glob(source.name + ".*"):
        shutil.copy(file, copy / file.name)
    target = next(copy.glob(source.name + suffix))
    target.write_bytes(damage(target.read_bytes()))
    return str(copy / source.name)


def test_nodes_have_kinds_and_paths(trained):
    graph = read_object_graph(trained)
    kernel = graph.node("model/hidden/_kernel")
    assert kernel.kind == "variable"
    assert kernel.shape == (3, 4) and kernel.dtype == "float32"
    assert kernel.checkpoint_key == "model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"
    assert graph.node("").kind == "root"
    assert graph.node("model").kind == "object"
    assert graph.node("model/hidden").kind == "object"
    assert graph.node("optimizer").kind == "optimizer"
    assert graph.node("optimizer/_momentums").kind == "list"
    assert graph.node("optimizer/_iterations").kind == "variable"
    # Adam keeps a momentum and a velocity per trainable variable (2 layers x 2).
    assert len(graph.of_kind("slot variable")) == 8
    assert {n.shape for n in graph.of_kind("slot variable")} == {(3, 4), (4,), (4, 1), (1,)}


def test_paths_match_checkpoint_keys(trained):
    graph = read_object_graph(trained)
    keys = {k for k, _ in tf.train.list_variables(trained)} - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    variables = [n for n in graph.nodes if n.checkpoint_key]
    assert {n.checkpoint_key for n in variables} == keys
    for node in variables:
        assert node.checkpoint_key == node.path + "/.ATTRIBUTES/VARIABLE_VALUE"


def test_edges_are_named(trained):
    graph = read_object_graph(trained)
    root_edges = {e.name: graph.by_id(e.child).path for e in graph.children(0)}
    assert root_edges == {"model": "model", "optimizer": "optimizer", "save_counter": "save_counter"}
    model = graph.node("model")
    assert [e.name for e in graph.children(model.id)] == ["hidden", "out"]
    # The optimizer also reaches the model's kernel: one object, two paths.
    kernel = graph.node("model/hidden/_kernel")
    assert len([e for e in graph.edges if e.child == kernel.id]) == 2


def test_empty_trackers_are_dropped_unless_asked(trained):
    kept = read_object_graph(trained)
    everything = read_object_graph(trained, include_empty=True)
    assert len(everything.nodes) > len(kept.nodes)
    assert "optimizer/_trainable_variables_indices" in {n.path for n in everything.nodes}
    assert "optimizer/_trainable_variables_indices" not in {n.path for n in kept.nodes}


def test_unknown_lookups_raise(trained):
    graph = read_object_graph(trained)
    with pytest.raises(KeyError, match="no object at path"):
        graph.node("model/nothing")
    with pytest.raises(KeyError, match="no node with id"):
        graph.by_id(10_000)
    with pytest.raises(ValueError, match="unknown node kind"):
        graph.of_kind("layer")


def test_old_style_optimizer_slots(tmp_path):
    class Linear(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.ones([2, 1]), name="w")

    with tf.Graph().as_default():
        model, optimizer = Linear(), tf.compat.v1.train.AdamOptimizer(0.1)
        step = optimizer.minimize(tf.reduce_sum(tf.ones([1, 2]) @ model.w), var_list=[model.w])
        checkpoint = tf.compat.v1.train.Checkpoint(model=model, optimizer=optimizer)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(step)
            path = checkpoint.save(str(tmp_path / "legacy"), session=sess)
    graph = read_object_graph(path)
    slots = graph.of_kind("slot variable")
    assert sorted(n.path for n in slots) == [
        "model/w/.OPTIMIZER_SLOT/optimizer/m",
        "model/w/.OPTIMIZER_SLOT/optimizer/v",
    ]
    assert graph.node("optimizer").kind == "optimizer"
    w = graph.node("model/w")
    assert sorted(e.name for e in graph.children(w.id)) == ["m", "v"]


def test_plot_returns_a_labelled_figure(trained):
    fig = plot_object_graph(trained)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert "checkpoint" in texts
    assert "_kernel (3, 4)" in texts and "hidden" in texts and "optimizer" in texts
    assert any(t.startswith("0: ") and "momentum" in t for t in texts)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "optimizer slot variable" in legend and "variable" in legend
    colours = {t.get_text(): t.get_bbox_patch().get_facecolor() for t in ax.texts}
    assert np.allclose(colours["optimizer"], matplotlib.colors.to_rgba(KIND_COLOURS["optimizer"]))
    assert "ckpt-1" in ax.get_title()
    matplotlib.pyplot.close(fig)


def test_plot_custom_title(trained):
    fig = plot_object_graph(trained, title="mine")
    assert fig.axes[0].get_title() == "mine"
    matplotlib.pyplot.close(fig)


def test_name_based_checkpoint_has_no_graph(name_based):
    with pytest.raises(NameBasedCheckpointError, match="name-based checkpoint") as caught:
        read_object_graph(name_based)
    assert isinstance(caught.value, NotACheckpointError) and isinstance(caught.value, ValueError)
    with pytest.raises(NameBasedCheckpointError):
        plot_object_graph(name_based)


@pytest.mark.parametrize(
    "make_path, message",
    [
        (lambda d: str(d / "missing" / "ckpt"), "no checkpoint files with this prefix"),
        (lambda d: str(d), "no 'checkpoint' state file"),  # an empty folder
        (lambda d: str(d / "ckpt-1.index"), "pass its prefix '.*ckpt-1'"),
        (lambda d: str(d / "ckpt-1.data-00000-of-00001"), "pass its prefix '.*ckpt-1'"),
    ],
)
def test_wrong_paths(tmp_path, make_path, message):
    with pytest.raises(NotACheckpointError, match=message):
        read_object_graph(make_path(tmp_path))


def test_a_text_file_is_not_a_checkpoint(tmp_path):
    (tmp_path / "notes.index").write_text("hello")
    with pytest.raises(NotACheckpointError, match="sstable"):
        read_object_graph(str(tmp_path / "notes"))


@pytest.mark.parametrize(
    "suffix, damage, message",
    [
        (".index", lambda b: b[:40], "too short"),
        (".index", lambda b: b[:0], "too short"),
        (".index", lambda b: b[: len(b) // 3] + bytes(x ^ 0xFF for x in b[len(b) // 3: len(b) // 3 + 20]) + b[len(b) // 3 + 20:], "corrupt"),
        (".data-*", lambda b: b[: len(b) // 2], "truncated"),
        (".data-*", lambda b: b[:-10] + bytes(x ^ 0xFF for x in b[-10:]), "Checksum"),
    ],
    ids=["index-truncated", "index-empty", "index-corrupted", "data-truncated", "graph-bytes-corrupted"],
)
def test_damaged_checkpoints(trained, tmp_path, suffix, damage, message):
    damaged = _damaged_copy(trained, tmp_path, suffix, damage)
    with pytest.raises(NotACheckpointError, match=message):
        read_object_graph(damaged)


def test_missing_data_file(trained, tmp_path):
    damaged = _damaged_copy(trained, tmp_path, ".index", lambda b: b)
    next(Path(damaged).parent.glob("*.data-*")).unlink()
    with pytest.raises(NotACheckpointError, match="No such file"):
        read_object_graph(damaged)


# --------------------------------------------------------------------------- paths, ownership, warnings

import string  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from helpers.files import glob_safe_prefix  # noqa: E402
from helpers.object_graph import reading  # noqa: E402


def test_paths_may_be_pathlike(trained):
    graph = read_object_graph(Path(trained))
    assert graph.node("model/hidden/_kernel").shape == (3, 4)
    fig = plot_object_graph(Path(trained))
    assert "ckpt-1" in fig.axes[0].get_title()
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("folder", ["run[1]", "best [old] ü", "a*b?", "sp ace"])
def test_checkpoints_under_glob_like_names_are_read_as_written(trained, tmp_path, folder):
    """TensorFlow's own reader takes '[1]' for a glob pattern and finds nothing; these do not."""
    copy = tmp_path / folder
    copy.mkdir()
    for file in Path(trained).parent.glob(Path(trained).name + ".*"):
        shutil.copy(file, copy / file.name)
    prefix = copy / Path(trained).name
    assert read_object_graph(prefix).node("model/out/_kernel").shape == (4, 1)
    assert read_object_graph(str(prefix)).node("model/out/_kernel").shape == (4, 1)
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    assert tf.train.load_checkpoint(glob_safe_prefix(prefix)).has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    with reading(prefix) as (shown, reader):
        assert shown == str(prefix) and reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before


def test_errors_name_the_path_the_user_gave(tmp_path):
    prefix = tmp_path / "run[1]" / "ckpt"
    prefix.parent.mkdir()
    (tmp_path / "run[1]" / "ckpt.index").write_bytes(b"not an index")
    with pytest.raises(NotACheckpointError) as caught:
        read_object_graph(prefix)
    assert str(prefix) in str(caught.value) and "glob-safe" not in str(caught.value)
    with pytest.raises(NotACheckpointError, match="NUL"):
        read_object_graph("bad\x00name")
    with pytest.raises(TypeError, match="str or os.PathLike"):
        read_object_graph(3)


def test_reading_hands_back_the_users_path(trained):
    with reading(Path(trained)) as (path, reader):
        assert path == trained and reader.has_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")


def test_an_optimizer_whose_edge_sorts_first_owns_the_models_keys(tmp_path):
    """A key is the shortest path; ties go to the first edge, and a tf.train.Checkpoint sorts its
    arguments. Saved as 'aopt', the optimizer's list of variables is as short as model/hidden."""
    keras.utils.set_random_seed(1)
    net, optimizer = Net(), keras.optimizers.Adam(0.01)
    net(tf.ones((1, 3)))
    optimizer.build(net.trainable_variables)
    path = tf.train.Checkpoint(model=net, aopt=optimizer).write(str(tmp_path / "ck"))
    keys = {key for key, _ in tf.train.list_variables(path)}
    assert "aopt/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert not any(key.startswith("model/hidden/_kernel") for key in keys)
    graph = read_object_graph(path)
    kernel = graph.node("aopt/_trainable_variables/0")
    assert kernel.kind == "variable" and kernel.shape == (3, 4)
    assert kernel.checkpoint_key == "aopt/_trainable_variables/0/.ATTRIBUTES/VARIABLE_VALUE"
    # restoring walks the graph, so the model still finds its kernel
    copy = Net()
    copy(tf.ones((1, 3)))
    tf.train.Checkpoint(model=copy).read(path).assert_existing_objects_matched().expect_partial()
    np.testing.assert_array_equal(copy.hidden.kernel.numpy(), net.hidden.kernel.numpy())


NAME = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + " -_[]*?éü中"),
    min_size=1,
    max_size=10,
).filter(lambda name: not name.startswith("."))


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(folder=NAME, stem=NAME, as_path=st.booleans())
def test_property_any_name_reads_or_is_named(trained, tmp_path, folder, stem, as_path):
    root = tmp_path / "prop"
    if root.exists():
        shutil.rmtree(root)
    (root / folder).mkdir(parents=True)
    prefix = root / folder / stem
    given_path = prefix if as_path else str(prefix)
    with pytest.raises(NotACheckpointError) as caught:
        read_object_graph(given_path)
    assert str(prefix) in str(caught.value)
    for file in Path(trained).parent.glob(Path(trained).name + ".*"):
        shutil.copy(file, root / folder / (stem + file.name[len(Path(trained).name):]))
    before = {p.name: p.read_bytes() for p in (root / folder).iterdir()}
    graph = read_object_graph(given_path)
    assert len(graph.of_kind("slot variable")) == 8
    fig = plot_object_graph(given_path)
    matplotlib.pyplot.close(fig)
    assert {p.name: p.read_bytes() for p in (root / folder).iterdir()} == before


def test_a_v1_format_checkpoint_is_named_as_name_based(tmp_path):
    (tmp_path / "v1").mkdir()  # a V1-format Saver does not make its folder
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("dense/kernel", [3, 2], initializer=tf.compat.v1.zeros_initializer())
        saver = tf.compat.v1.train.Saver(write_version=tf.compat.v1.train.SaverDef.V1)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "v1" / "model"), write_meta_graph=False)
    with pytest.raises(NameBasedCheckpointError):
        read_object_graph(path)


# --------------------------------------------------------------------------- checkpoint_paths


def test_checkpoint_paths_are_the_keys_a_checkpoint_writes(tmp_path):
    class TwoNames(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = keras.layers.Dense(3, name="hidden")
            self.also_hidden = self.hidden  # one layer reachable along two paths
            self.out = keras.layers.Dense(1, name="out")

        def call(self, x):
            return self.out(self.also_hidden(x))

    model = TwoNames()
    model(np.zeros((1, 2), np.float32))
    paths = dict(checkpoint_paths(model, "model"))
    written = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    keys = {key.removesuffix("/.ATTRIBUTES/VARIABLE_VALUE") for key, _ in tf.train.list_variables(written)
            if key.startswith("model/")}
    assert set(paths) == keys and len(paths) == len(model.weights) == 4
    assert {id(v) for v in paths.values()} == {id(v) for v in model.weights}  # each variable once
