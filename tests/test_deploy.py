"""helpers.deploy: freezing, loading frozen graphs, comparing runtimes; every error path."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import deploy
from helpers.errors import (
    FreezeError,
    NotAModelFileError,
    StructureMismatchError,
    TensorNotFoundError,
    WouldOverwriteError,
)
from tests.realfiles import copy_real, expected_output, model_input, truncated

ODD_NAMES = ["plain.pb", "with space.pb", "run[1].pb", "ünïcode 模型.pb"]


@pytest.fixture(scope="module")
def model() -> keras.Model:
    keras.utils.set_random_seed(3)
    inputs = keras.Input((4,), name="features")
    x = keras.layers.Dense(6, activation="relu", bias_initializer="ones")(inputs)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dropout(0.5)(x)
    model = keras.Model(inputs, keras.layers.Dense(2, bias_initializer="ones")(x))
    model.layers[2].moving_mean.assign(np.full(6, 0.3, "float32"))  # statistics that matter
    return model


@pytest.fixture(scope="module")
def batch() -> np.ndarray:
    return np.random.default_rng(0).normal(size=(5, 4)).astype("float32")


@pytest.mark.parametrize("name", ODD_NAMES)
def test_freeze_and_load_round_trip_any_path(model, batch, tmp_path, name):
    frozen = deploy.freeze_graph(model, tmp_path / name)
    assert frozen.inputs == ["features:0"] and len(frozen.outputs) == 1
    run = deploy.load_frozen_graph(Path(frozen.path), frozen.inputs, frozen.outputs)
    np.testing.assert_allclose(run(batch), model(batch, training=False), atol=1e-6)
    run_by_op_name = deploy.load_frozen_graph(frozen.path, "features", frozen.outputs[0].split(":")[0])
    np.testing.assert_allclose(run_by_op_name(batch[:1]), model(batch[:1], training=False), atol=1e-6)


def test_freeze_from_a_tf_function_and_a_concrete_function(model, batch, tmp_path):
    spec = tf.TensorSpec([None, 4], tf.float32, name="x")
    function = tf.function(lambda x: {"score": model(x, training=False)}, input_signature=[spec])
    for name, source in [("f.pb", function), ("c.pb", function.get_concrete_function())]:
        frozen = deploy.freeze_graph(source, tmp_path / name)
        run = deploy.load_frozen_graph(frozen.path, frozen.inputs, frozen.outputs)
        np.testing.assert_allclose(run(batch), model(batch, training=False), atol=1e-6)
    plain = tf.function(lambda x: model(x, training=False))
    with pytest.raises(FreezeError, match="without input_signature"):
        deploy.freeze_graph(plain, tmp_path / "p.pb")
    frozen = deploy.freeze_graph(plain, tmp_path / "p.pb", input_signature=[spec])
    assert frozen.inputs == ["x:0"]


def test_freeze_refuses_to_overwrite_and_leaves_the_file(model, tmp_path):
    target = tmp_path / "[kept] model.pb"
    target.write_bytes(b"mine")
    with pytest.raises(WouldOverwriteError, match="refusing to overwrite"):
        deploy.freeze_graph(model, target)
    assert target.read_bytes() == b"mine"


def test_freeze_refuses_training_mode_state_updates_and_unbuilt_models(model, tmp_path):
    spec = tf.TensorSpec([None, 4], tf.float32)
    training = tf.function(lambda x: model(x, training=True), input_signature=[spec])
    with pytest.raises(FreezeError, match="writes to variables.*training=False"):
        deploy.freeze_graph(training, tmp_path / "t.pb")
    counter = tf.Variable(0)

    @tf.function(input_signature=[spec])
    def counting(x):
        counter.assign_add(1)
        return x

    with pytest.raises(FreezeError, match="AssignAddVariableOp"):
        deploy.freeze_graph(counting, tmp_path / "c.pb")
    unbuilt = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(FreezeError, match="not built"):
        deploy.freeze_graph(unbuilt, tmp_path / "u.pb")
    with pytest.raises(TypeError, match="keras.Model, a tf.function"):
        deploy.freeze_graph("model.keras", tmp_path / "s.pb")
    assert not any(tmp_path.iterdir())


def test_a_frozen_graph_keeps_its_traced_shapes_and_dtypes(model, batch, tmp_path):
    fixed = tf.function(lambda x: model(x, training=False), input_signature=[tf.TensorSpec([2, 4])])
    frozen = deploy.freeze_graph(fixed, tmp_path / "fixed.pb")
    run = deploy.load_frozen_graph(frozen.path, frozen.inputs, frozen.outputs)
    assert run(batch[:2]).shape == (2, 2)
    with pytest.raises(StructureMismatchError, match="shape"):
        run(batch)
    with pytest.raises(StructureMismatchError, match="takes float32, got float64"):
        run(batch[:2].astype("float64"))
    with pytest.raises(StructureMismatchError, match="1 input"):
        run(batch[:2], batch[:2])


def test_load_names_the_tensors_that_do_not_exist(model, tmp_path):
    frozen = deploy.freeze_graph(model, tmp_path / "m.pb")
    with pytest.raises(TensorNotFoundError, match=r"no tensor 'input:0'; candidates: 'features:0'"):
        deploy.load_frozen_graph(frozen.path, "input:0", frozen.outputs)
    with pytest.raises(TensorNotFoundError, match=r"'output:0'.*candidates: 'Identity:0'"):
        deploy.load_frozen_graph(frozen.path, frozen.inputs, "output:0")
    with pytest.raises(TensorNotFoundError, match=r"'Identity:3'"):
        deploy.load_frozen_graph(frozen.path, frozen.inputs, "Identity:3")
    with pytest.raises(StructureMismatchError, match="at least one"):
        deploy.load_frozen_graph(frozen.path, [], frozen.outputs)


def test_load_refuses_missing_truncated_and_other_kinds_of_files(model, tmp_path):
    frozen = deploy.freeze_graph(model, tmp_path / "m.pb")
    with pytest.raises(NotAModelFileError, match="no such file"):
        deploy.load_frozen_graph(tmp_path / "missing.pb", "a", "b")
    for fraction in (0.1, 0.5, 0.97):
        damaged = truncated(Path(frozen.path), tmp_path / f"cut{fraction}", fraction)
        with pytest.raises(NotAModelFileError, match="not a binary GraphDef"):
            deploy.load_frozen_graph(damaged, frozen.inputs, frozen.outputs)
    (tmp_path / "empty.pb").write_bytes(b"")
    with pytest.raises(NotAModelFileError, match="empty file"):
        deploy.load_frozen_graph(tmp_path / "empty.pb", "a", "b")
    (tmp_path / "text.pbtxt").write_text('node { name: "x" op: "Placeholder" }')
    with pytest.raises(NotAModelFileError, match="text .pbtxt"):
        deploy.load_frozen_graph(tmp_path / "text.pbtxt", "x", "x")
    model.export(str(tmp_path / "sm"), verbose=False)
    with pytest.raises(NotAModelFileError, match="a folder.*tf.saved_model.load"):
        deploy.load_frozen_graph(tmp_path / "sm", "a", "b")
    with pytest.raises(NotAModelFileError, match="SavedModel's saved_model.pb"):
        deploy.load_frozen_graph(tmp_path / "sm" / "saved_model.pb", "a", "b")
    keras_file = tmp_path / "m.keras"
    model.save(keras_file)
    with pytest.raises(NotAModelFileError, match="zip file"):
        deploy.load_frozen_graph(keras_file, "a", "b")


def test_a_graph_with_variables_is_not_a_frozen_one(tmp_path):
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
        w = tf.compat.v1.get_variable("w", [2, 1])
        tf.matmul(x, w, name="y")
    path = tmp_path / "unfrozen.pb"
    path.write_bytes(graph.as_graph_def().SerializeToString())
    with pytest.raises(NotAModelFileError, match="still holds variables.*VarHandleOp"):
        deploy.load_frozen_graph(path, "x", "y")


def test_a_node_dropped_from_the_graph_is_named(model, tmp_path):
    frozen = deploy.freeze_graph(model, tmp_path / "m.pb")
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(Path(frozen.path).read_bytes())
    del graph_def.node[-1]  # a cut exactly at a node boundary parses: the output is gone
    cut = tmp_path / "cut.pb"
    cut.write_bytes(graph_def.SerializeToString())
    with pytest.raises(TensorNotFoundError, match="Identity:0"):
        deploy.load_frozen_graph(cut, frozen.inputs, frozen.outputs)


def test_the_tf215_frozen_graph_answers_like_tf215(tmp_path):
    path = copy_real("tf215", "frozen_graph", tmp_path)
    run = deploy.load_frozen_graph(path, "features:0", "Identity:0")
    np.testing.assert_allclose(run(model_input("tf215", "frozen_graph").astype("float32")),
                               expected_output("tf215", "frozen_graph"), atol=1e-5)
    with pytest.raises(TensorNotFoundError, match="candidates: 'features:0'"):
        deploy.load_frozen_graph(path, "input_1:0", "Identity:0")
    damaged = truncated(path, tmp_path / "cut", 0.6)
    with pytest.raises(NotAModelFileError):
        deploy.load_frozen_graph(damaged, "features:0", "Identity:0")


def test_the_tf215_tflite_runs_in_litert_like_tf215(tmp_path):
    from ai_edge_litert.interpreter import Interpreter

    path = copy_real("tf215", "functional_bn_tflite", tmp_path)
    assert deploy.model_file_kind(path) == "LiteRT (.tflite)"
    batch = model_input("tf215", "functional_bn_tflite").astype("float32")
    with deploy.quietly():
        interpreter = Interpreter(model_path=str(path))
        detail = interpreter.get_input_details()[0]
        interpreter.resize_tensor_input(detail["index"], batch.shape)
        interpreter.allocate_tensors()
    interpreter.set_tensor(detail["index"], batch)
    interpreter.invoke()
    got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    np.testing.assert_allclose(got, expected_output("tf215", "functional_bn_tflite"), atol=1e-5)
    with pytest.raises(NotAModelFileError, match="LiteRT"):
        deploy.load_frozen_graph(path, "a", "b")


@pytest.fixture(scope="module")
def converted(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("converted [ü]")
    files = {"SavedModel": folder / "saved model", "frozen": folder / "frozen.pb",
             "LiteRT": folder / "model.tflite", "ONNX": folder / "model.onnx"}
    with deploy.quietly():
        model.export(str(files["SavedModel"]), verbose=False)
        files["LiteRT"].write_bytes(tf.lite.TFLiteConverter.from_keras_model(model).convert())
        model.export(str(files["ONNX"]), format="onnx", verbose=False)
    deploy.freeze_graph(model, files["frozen"])
    return files


def test_compare_runtimes_tabulates_every_kind(model, batch, converted):
    table = deploy.compare_runtimes(model, batch, converted, repeat=2)
    assert [row.label for row in table.rows] == ["Keras model", "SavedModel", "frozen", "LiteRT", "ONNX"]
    assert [deploy.model_file_kind(path) for path in converted.values()] == list(deploy.KINDS)
    for row in table.rows[1:]:
        assert row.max_difference < 1e-5 and row.size_bytes > 0 and row.latency_ratio > 0
    text = str(table)
    assert "latency ratio" in text and "frozen GraphDef (.pb)" in text
    assert table.row("ONNX").kind == "ONNX (.onnx)"
    with pytest.raises(KeyError, match="rows"):
        table.row("TensorRT")
    figure = table.plot()
    assert len(figure.axes) == 3
    listed = deploy.compare_runtimes(model, batch.astype("float64"), [converted["LiteRT"]], repeat=1)
    assert listed.rows[1].label == "model.tflite"


def test_compare_runtimes_refuses_files_of_unknown_kinds_before_timing(model, batch, converted, tmp_path):
    (tmp_path / "weights.bin").write_bytes(os.urandom(64))
    for bad, match in [(tmp_path / "weights.bin", "known kinds"), (tmp_path / "gone.onnx", "no such file"),
                       (tmp_path, "a folder without saved_model.pb")]:
        with pytest.raises(NotAModelFileError, match=match):
            deploy.compare_runtimes(model, batch, [converted["LiteRT"], bad])
    cut = truncated(Path(converted["ONNX"]), tmp_path / "cut", 0.5)
    with pytest.raises(NotAModelFileError, match="truncated or damaged"):
        deploy.compare_runtimes(model, batch, [cut])


def test_compare_runtimes_refuses_a_file_of_another_model(model, batch, tmp_path):
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    path = tmp_path / "other.tflite"
    with deploy.quietly():
        path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(other).convert())
    with pytest.raises(StructureMismatchError, match=r"shape \(5, 3\).*\(5, 2\)"):
        deploy.compare_runtimes(model, batch, [path])


def test_quietly_keeps_converter_log_lines_and_restores_loggers(capfd):
    logger = logging.getLogger("tf2onnx")
    level, handlers = logger.level, list(logger.handlers)
    with deploy.quietly() as lines:
        print("Saved artifact at '/tmp/somewhere'")
        os.write(1, b"native banner\n")
        logging.getLogger("tf2onnx.tfonnx").error("Unsupported ops: Svd")
    assert lines == ["ERROR: Unsupported ops: Svd"]
    assert capfd.readouterr().out == ""
    assert logger.level == level and logger.handlers == handlers
