"""Unit tests of helpers.saved_models: describing SavedModels from their files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import keras
import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.core.protobuf import saved_model_pb2

from helpers.errors import NotACheckpointError
from helpers.saved_models import (
    NotASavedModelError,
    SignatureNotFoundError,
    describe_saved_model,
    saved_model_cli_show,
    unregistered_ops,
)

V1 = tf.compat.v1


class Lookup(tf.Module):
    """Two signatures, a non-trainable counter and a vocabulary asset."""

    def __init__(self, vocabulary: str) -> None:
        super().__init__()
        self.kernel = tf.Variable([[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]], name="kernel")
        self.bias = tf.Variable([0.25, -0.75], name="bias")
        self.step = tf.Variable(4, dtype=tf.int64, trainable=False, name="step")
        init = tf.lookup.TextFileInitializer(
            vocabulary, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER
        )
        self.table = tf.lookup.StaticHashTable(init, -1)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="inputs_a")])
    def project(self, inputs_a):
        return {"projected": inputs_a @ self.kernel + self.bias, "norm": tf.norm(inputs_a, axis=1)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="tokens")])
    def ids(self, tokens):
        return {"token_ids": self.table.lookup(tokens)}


def _write_module(folder: Path) -> Path:
    vocabulary = folder.parent / f"{folder.name}-vocab.txt"
    vocabulary.write_text("alpha\nbeta\n")
    module = Lookup(str(vocabulary))
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.project, "ids": module.ids})
    return folder


@pytest.fixture(scope="module")
def module_model(tmp_path_factory) -> Path:
    return _write_module(tmp_path_factory.mktemp("tf2") / "lookup")


@pytest.fixture(scope="module")
def tf1_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tf1") / "graph_model"
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [None, 2], name="x")
        w = V1.get_variable("layer/w", initializer=[[1.0], [2.0]])
        b = V1.get_variable("layer/b", initializer=[0.5])
        y = tf.add(tf.matmul(x, w), b, name="y")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            builder = V1.saved_model.Builder(str(folder))
            signature = V1.saved_model.predict_signature_def(inputs={"x": x}, outputs={"y": y})
            builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": signature})
            builder.add_meta_graph(["train", "gpu"], signature_def_map={"train_sig": signature})
            builder.save()
    return folder


@pytest.fixture(scope="module")
def keras_export(tmp_path_factory) -> Path:
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,), name="pixels")
    model = keras.Model(inputs, keras.layers.Dense(2, name="logits")(inputs))
    folder = tmp_path_factory.mktemp("keras") / "exported"
    model.export(str(folder), verbose=False)
    return folder


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


# --------------------------------------------------------------------------- describing


def test_describes_a_tf2_module(module_model):
    description = describe_saved_model(module_model)
    assert description.tag_sets == (("serve",),)
    assert not description.tf1_meta_graph
    assert description.signature_names == ["ids", "serving_default"]  # __saved_model_init_op left out
    serving = description.signature("serving_default")
    assert serving.input_keys == ["inputs_a"]
    assert serving.output_keys == ["norm", "projected"]
    assert serving.inputs[0].dtype == "float32" and serving.inputs[0].shape == (None, 3)
    assert description.signature("ids").outputs[0].dtype == "int64"
    assert description.variable_count == 3  # kernel, bias, step; the object graph is not counted
    assert description.variable_bytes == 6 * 4 + 2 * 4 + 8
    assert [(a.filename, a.present) for a in description.assets] == [("lookup-vocab.txt", True)]
    assert description.unknown_ops == ()
    assert description.tensorflow_version == tf.__version__


def test_str_and_pathlike_give_the_same_answer(module_model):
    assert describe_saved_model(str(module_model)) == describe_saved_model(Path(module_model))


def test_table_fits_and_names_everything(module_model, monkeypatch):
    monkeypatch.chdir(module_model.parent)
    text = repr(describe_saved_model("lookup"))
    assert "TF2 (object graph)" in text and "inputs_a" in text and "(None, 3)" in text
    assert "variables: 3 values, 40 B" in text and "assets: lookup-vocab.txt" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_describes_a_tf1_builder_model_with_two_tag_sets(tf1_model):
    description = describe_saved_model(tf1_model)
    assert description.tf1_meta_graph
    assert description.tag_sets == (("serve",), ("train", "gpu"))
    assert [(s.name, s.tags) for s in description.signatures] == [
        ("serving_default", ("serve",)),
        ("train_sig", ("train", "gpu")),
    ]
    assert description.signature("serving_default").inputs[0].shape == (None, 2)
    assert description.variable_count == 2 and description.variable_bytes == 12
    assert "TF1 MetaGraphDef" in repr(description)


def test_keras_export_names_its_output_output_0(keras_export):
    description = describe_saved_model(keras_export)
    assert description.signature_names == ["serve", "serving_default"]
    assert description.signature().input_keys == ["pixels"]
    assert description.signature().output_keys == ["output_0"]
    assert description.variable_count == 4  # kernel and bias, each stored twice by Keras


def test_unknown_signature_lists_those_there_are(module_model):
    with pytest.raises(SignatureNotFoundError, match=r"no signature 'predict'; its signatures: 'ids', 'serving_default'"):
        describe_saved_model(module_model).signature("predict")


def test_missing_asset_is_marked(module_model, tmp_path):
    copy = _copy(module_model, tmp_path / "no_assets")
    (copy / "assets" / "lookup-vocab.txt").unlink()
    description = describe_saved_model(copy)
    assert description.missing_assets == ["lookup-vocab.txt"]
    assert "lookup-vocab.txt (MISSING)" in repr(description)


def _rename_op(folder: Path, old: str, new: str) -> None:
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    for function in proto.meta_graphs[0].graph_def.library.function:
        for node in function.node_def:
            if node.op == old:
                node.op = new
    (folder / "saved_model.pb").write_bytes(proto.SerializeToString())


def test_unregistered_ops_are_found_before_loading(module_model, tmp_path):
    assert unregistered_ops(module_model) == []
    copy = _copy(module_model, tmp_path / "custom_op")
    _rename_op(copy, "MatMul", "MyFastMatMul")
    assert unregistered_ops(str(copy)) == ["MyFastMatMul"]
    assert describe_saved_model(copy).unknown_ops == ("MyFastMatMul",)
    with pytest.raises(RuntimeError, match="Op type not registered 'MyFastMatMul'"):
        tf.saved_model.load(str(copy))


def test_text_format_saved_model_is_read(tf1_model, tmp_path):
    copy = _copy(tf1_model, tmp_path / "as_text")
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((copy / "saved_model.pb").read_bytes())
    (copy / "saved_model.pbtxt").write_text(text_format.MessageToString(proto))
    (copy / "saved_model.pb").unlink()
    assert describe_saved_model(copy).signature_names == ["serving_default", "train_sig"]


def test_without_a_variables_folder_there_are_no_values(tmp_path):
    class NoState(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def double(self, x):
            return 2.0 * x

    folder = tmp_path / "stateless"
    tf.saved_model.save(NoState(), str(folder), signatures=NoState().double)
    assert describe_saved_model(folder).variable_count == 0
    shutil.rmtree(folder / "variables")
    description = describe_saved_model(folder)
    assert (description.variable_count, description.variable_bytes) == (0, 0)
    assert not description.variables_missing  # nothing to miss: the graph has no variables
    assert description.signature().outputs[0].key == "output_0"


def test_a_missing_variables_folder_is_said_not_reported_as_no_values(tmp_path):
    class Scaled(tf.Module):
        def __init__(self):
            self.scale = tf.Variable(3.0)

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def __call__(self, x):
            return self.scale * x

    module = Scaled()
    folder = tmp_path / "scaled"
    tf.saved_model.save(module, str(folder), signatures=module.__call__)
    assert not describe_saved_model(folder).variables_missing
    shutil.rmtree(folder / "variables")
    description = describe_saved_model(folder)
    assert description.variables_missing and "variables: MISSING" in repr(description)
    assert "0 values" not in repr(description)


@pytest.mark.parametrize("name", ["model[1]", "run*?", "with space", "données ✓", "v1.0 (final)"])
def test_odd_characters_in_the_path(module_model, tmp_path, name):
    copy = _copy(module_model, tmp_path / name)
    description = describe_saved_model(copy)
    assert description.variable_count == 3 and description.path == str(copy)
    assert not description.missing_assets
    assert os.path.isdir(copy)  # nothing moved or deleted


# --------------------------------------------------------------------------- bad input


def test_missing_path(tmp_path):
    with pytest.raises(NotASavedModelError, match="no such file or folder"):
        describe_saved_model(tmp_path / "nothing")


def test_a_plain_file(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(NotASavedModelError, match="a file, not a SavedModel folder"):
        describe_saved_model(tmp_path / "notes.txt")


def test_a_keras_file_gets_a_hint(tmp_path):
    (tmp_path / "model.keras").write_bytes(b"PK")
    with pytest.raises(NotASavedModelError, match="keras.models.load_model"):
        describe_saved_model(str(tmp_path / "model.keras"))


def test_the_pb_file_itself_names_its_folder(module_model):
    with pytest.raises(NotASavedModelError, match=r"pass '.*lookup'"):
        describe_saved_model(module_model / "saved_model.pb")


def test_a_folder_without_saved_model_pb(tmp_path):
    with pytest.raises(NotASavedModelError, match=r"no saved_model.pb in this folder"):
        describe_saved_model(tmp_path)


def test_the_variables_folder_gets_a_hint(module_model):
    with pytest.raises(NotASavedModelError, match="variables/ folder: pass the folder above it"):
        describe_saved_model(module_model / "variables")


def test_a_checkpoint_folder_gets_a_hint(tmp_path):
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ckpt"))
    with pytest.raises(NotASavedModelError, match="holds a checkpoint"):
        describe_saved_model(tmp_path)


def test_a_versioned_serving_folder_names_its_versions(module_model, tmp_path):
    _copy(module_model, tmp_path / "serving" / "1")
    _copy(module_model, tmp_path / "serving" / "2")
    with pytest.raises(NotASavedModelError, match=r"subfolder\(s\) '1', '2'"):
        describe_saved_model(tmp_path / "serving")


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"\xff\xfe garbage that is not a protobuf" * 3,
        lambda data: data[: len(data) // 2],
    ],
    ids=["garbage", "truncated"],
)
def test_a_damaged_saved_model_pb(module_model, tmp_path, damage):
    copy = _copy(module_model, tmp_path / "damaged")
    pb = copy / "saved_model.pb"
    pb.write_bytes(damage(pb.read_bytes()))
    with pytest.raises(NotASavedModelError, match="saved_model.pb is damaged or truncated"):
        describe_saved_model(copy)


def test_an_empty_saved_model_pb(module_model, tmp_path):
    copy = _copy(module_model, tmp_path / "empty")
    (copy / "saved_model.pb").write_bytes(b"")
    with pytest.raises(NotASavedModelError, match="holds no MetaGraphDef"):
        describe_saved_model(copy)


def test_a_damaged_pbtxt(tmp_path):
    folder = tmp_path / "text"
    folder.mkdir()
    (folder / "saved_model.pbtxt").write_text("meta_graphs { this is not text format")
    with pytest.raises(NotASavedModelError, match="saved_model.pbtxt is damaged"):
        describe_saved_model(folder)


def test_a_damaged_variables_index(module_model, tmp_path):
    copy = _copy(module_model, tmp_path / "bad_variables")
    (copy / "variables" / "variables.index").write_bytes(b"not an sstable")
    with pytest.raises(NotASavedModelError, match="variables/ checkpoint is damaged") as caught:
        describe_saved_model(copy)
    assert isinstance(caught.value, NotACheckpointError) and isinstance(caught.value, ValueError)


def test_unregistered_ops_refuses_bad_input(tmp_path):
    with pytest.raises(NotASavedModelError, match="no such file or folder"):
        unregistered_ops(tmp_path / "missing")


# --------------------------------------------------------------------------- saved_model_cli


def test_cli_show_all_is_deterministic(module_model):
    text = saved_model_cli_show(module_model, "--all")
    assert "signature_def['serving_default']" in text and "inputs['inputs_a']" in text
    ops_line = next(line for line in text.splitlines() if "contains the following ops" in line)
    ops = ops_line.split("{", 1)[1].rstrip("}").split(", ")
    assert ops == sorted(ops) and "'MatMul'" in ops


def test_cli_refuses_a_folder_that_is_not_a_saved_model(tmp_path):
    with pytest.raises(NotASavedModelError):
        saved_model_cli_show(tmp_path)


def test_cli_failure_is_reported(tf1_model):
    with pytest.raises(ValueError, match="saved_model_cli show --tag_set nosuch failed"):
        saved_model_cli_show(tf1_model, "--tag_set", "nosuch")


@pytest.mark.parametrize("bad", [3, None, ""])
def test_a_path_that_is_not_a_path(bad):
    with pytest.raises((TypeError, ValueError), match="SavedModel folder"):
        describe_saved_model(bad)


# --------------------------------------------------------------------------- real files (TF 2.15, issue 22 item 7)

from tests.realfiles import copy_real, truncated  # noqa: E402


def test_real_tf1_builder_assets_are_listed(tmp_path):
    folder = copy_real("tf215", "tf1_builder", tmp_path)  # assets only in collection_def['saved_model_assets']
    description = describe_saved_model(folder)
    assert [asset.filename for asset in description.assets] == ["vocab.txt"]
    assert description.missing_assets == []
    assert "assets: vocab.txt" in repr(description)


def test_real_tf1_builder_deleted_asset_is_reported(tmp_path):
    folder = copy_real("tf215", "tf1_builder", tmp_path)
    (folder / "assets" / "vocab.txt").unlink()
    description = describe_saved_model(folder)
    assert description.missing_assets == ["vocab.txt"]
    assert "vocab.txt (MISSING)" in repr(description)


@pytest.mark.parametrize("name", ["savedmodel_keras2", "savedmodel_tf", "tf_module"])
def test_real_truncated_variables_data_is_reported(tmp_path, name):
    folder = copy_real("tf215", name, tmp_path)
    data = folder / "variables" / "variables.data-00000-of-00001"
    full = data.stat().st_size
    truncated(data, tmp_path / "third", 1 / 3).replace(data)
    with pytest.raises(NotASavedModelError, match=f"truncated .*index places values up to {full} B"):
        describe_saved_model(folder)


def test_real_complete_saved_models_still_describe(tmp_path):
    for name in ("savedmodel_keras2", "savedmodel_tf", "tf_module", "tf1_builder", "hub_module"):
        assert describe_saved_model(copy_real("tf215", name, tmp_path / name)).variable_count > 0
