"""Findings of an independent review of chapter 14's recipes, each shown on a small generated file.

Damaged Flex/custom-op ``.tflite`` files are damaged, not "needs ops" (the constructor verifies the
flatbuffer); a protobuf that is not a GraphDef is named so by ``identify`` and ``model_file_kind``
alike (``deploy.check_graph_def``), a graph that needs a library's ops says so, unknown fields alone
refuse nothing; ``compare_runtimes`` names ONNX ops no registered domain has and refuses a two-input
ONNX file; the route for an old opset says what to do when ``version_converter`` stops.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import keras
import numpy as np
import onnx
import pytest
import tensorflow as tf
from onnx import TensorProto, helper

from helpers import deploy
from helpers.errors import NotAModelFileError, StructureMismatchError
from helpers.identify import identify
from helpers.model_ops import ONNX_ROUTE, UnsupportedOpsError

DATA = Path(__file__).parent / "data"


# --------------------------------------------------------------------------- R1: damaged Flex/custom-op files


def _damaged(tmp_path: Path, name: str, how: str) -> Path:
    data = bytearray((DATA / "litert" / f"{name}.tflite").read_bytes())
    if how == "cut":
        data = data[:-4]
    else:  # byte 66, lowest bit: LiteRT's verifier refuses both files (measured, ai-edge-litert 2.x)
        data[66] ^= 1
    path = tmp_path / f"{name}_{how}.tflite"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("name", ["select_tf_ops", "custom_op"])
@pytest.mark.parametrize("how", ["cut", "flip"])
def test_a_damaged_tflite_with_flex_or_custom_ops_is_damaged(tmp_path, name, how):
    path = _damaged(tmp_path, name, how)
    with pytest.raises(NotAModelFileError, match="truncated or damaged") as caught:
        deploy.model_file_kind(path)
    assert not isinstance(caught.value, UnsupportedOpsError)
    info = identify(path)
    assert info.kind == "not-a-model" and "truncated or damaged" in info.reason


def test_a_tflite_that_verifies_still_names_its_ops():
    with pytest.raises(UnsupportedOpsError) as caught:
        deploy.model_file_kind(DATA / "litert" / "select_tf_ops.tflite")
    message = str(caught.value)
    assert "a LiteRT file that verifies" in message and "intact" not in message
    assert "has a kernel for FlexMatrixInverse" in message and "custom_op_registerers" in message


def test_compare_runtimes_blames_ops_only_when_litert_speaks_of_ops(tmp_path, monkeypatch):
    """A file that passed the checks but fails at invoke with another message is damaged, not short of ops."""
    path = shutil.copy(DATA / "litert" / "custom_op.tflite", tmp_path / "m.tflite")
    monkeypatch.setattr(deploy, "model_file_kind", lambda p: deploy.KINDS[2])

    def failing(*args):
        def run():
            raise RuntimeError("tensor index out of range")
        return run

    monkeypatch.setattr(deploy, "_runner", failing)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3)])
    with pytest.raises(NotAModelFileError, match="fails to run") as caught:
        deploy.compare_runtimes(model, np.ones((3, 3), "float32"), [path], repeat=1)
    assert not isinstance(caught.value, UnsupportedOpsError)


# --------------------------------------------------------------------------- R2, R3: GraphDef or not


def _graph_def(tmp_path: Path, name: str, nodes: list[tuple[str, str, list[str]]], tail: bytes = b"") -> Path:
    graph_def = tf.compat.v1.GraphDef()
    for node_name, op, inputs in nodes:
        node = graph_def.node.add(name=node_name, op=op, input=inputs)
        node.attr["dtype" if op == "Placeholder" else "T"].type = 1  # float32
    path = tmp_path / name
    path.write_bytes(graph_def.SerializeToString() + tail)
    return path


def test_a_calculator_config_is_not_a_graph_def_in_identify_and_model_file_kind(tmp_path):
    path = _graph_def(tmp_path, "graph.pb", [("ImageTransformationCalculator", "ImageTransformationCalculator",
                                              ["IMAGE:input_video"])])
    info = identify(path)
    assert info.kind == "not-a-model" and "not a TensorFlow GraphDef" in info.reason
    assert "ImageTransformationCalculator" in info.reason
    assert str(info).splitlines()[0].endswith("not a model") or "not a model" in str(info)
    with pytest.raises(NotAModelFileError, match="not a TensorFlow GraphDef.*ImageTransformationCalculator"):
        deploy.model_file_kind(path)


def test_a_graph_that_needs_a_librarys_ops_says_so(tmp_path):
    path = _graph_def(tmp_path, "text.pb", [("x", "Placeholder", []), ("tok", "ExampleLibraryOp", ["x"])])
    info = identify(path)
    assert info.kind == "frozen-graph"
    assert ("needs ops from a library not imported here (ExampleLibraryOp): import it (e.g. tensorflow_text) "
            "first") in info.traps
    with pytest.raises(UnsupportedOpsError, match=r"needs ops from a library not imported here \(ExampleLibrary"):
        deploy.model_file_kind(path)
    with pytest.raises(UnsupportedOpsError) as caught:
        deploy.load_frozen_graph(path, "x:0", "tok:0")
    assert str(caught.value).split(".pb' ", 1)[1].index("library not imported here") < 100  # leads


def test_a_graph_def_with_an_unknown_field_is_a_graph_with_a_note(tmp_path):
    nodes = [("x", "Placeholder", []), ("y", "Identity", ["x"])]
    path = _graph_def(tmp_path, "newer.pb", nodes, tail=bytes([0x98, 0x06, 0x01]))  # field 99, varint 1
    info = identify(path)
    assert info.kind == "frozen-graph"
    assert any("1 field(s) a GraphDef of this TensorFlow does not have" in trap for trap in info.traps)
    assert deploy.model_file_kind(path) == deploy.KINDS[1]
    run = deploy.load_frozen_graph(path, "x:0", "y:0")
    assert np.array_equal(run(np.ones((2, 2), "float32")), np.ones((2, 2), "float32"))


def test_check_graph_def_is_shared():
    graph_def = tf.compat.v1.GraphDef()
    graph_def.node.add(name="c", op="PassThroughCalculator")
    check = deploy.check_graph_def(graph_def)
    assert check.not_graph_def and "PassThroughCalculator" in check.not_graph_def and not check.library_ops


# --------------------------------------------------------------------------- R4, R5, R6: ONNX


def _onnx(tmp_path: Path, name: str, nodes, inputs, opsets, ir_version=None, initializer=()):
    value = lambda n, shape=(None, 4): helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape))  # noqa: E731
    graph = helper.make_graph(nodes, "g", [value(n) for n in inputs], [value("y")], initializer=list(initializer))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                              **({"ir_version": ir_version} if ir_version else {}))
    onnx.save(model, tmp_path / name)
    return tmp_path / name


def _double():
    return keras.Sequential([keras.Input((4,)), keras.layers.Rescaling(2.0)])


def test_compare_runtimes_refuses_a_two_input_onnx_file(tmp_path):
    path = _onnx(tmp_path, "two.onnx", [helper.make_node("Add", ["a", "b"], ["y"])], ["a", "b"], [("", 13)])
    with pytest.raises(StructureMismatchError, match="takes 2 inputs"):
        deploy.compare_runtimes(_double(), np.ones((3, 4), "float32"), [path], repeat=1)


@pytest.mark.parametrize("op, domain, opsets, words", [
    ("NoSuchOp", "", [("", 13)], "op 'NoSuchOp' of domain 'ai.onnx' (version 13)"),
    ("Frob", "com.example", [("", 13), ("com.example", 1)], "op 'Frob' of domain 'com.example'"),
])
def test_compare_runtimes_names_an_op_no_registered_domain_has(tmp_path, op, domain, opsets, words):
    path = _onnx(tmp_path, "odd.onnx", [helper.make_node(op, ["x"], ["y"], domain=domain)], ["x"], opsets)
    with pytest.raises(UnsupportedOpsError) as caught:
        deploy.compare_runtimes(_double(), np.ones((3, 4), "float32"), [path], repeat=1)
    message = str(caught.value)
    assert words in message and "re-export with ops ONNX has (a rewrite), or a runtime that registers" in message
    assert "version_converter" not in message and "ONNXRuntimeError" not in message


def test_version_converter_stops_on_a_symbolic_dimension_until_sizes_are_fixed():
    """The route ONNX_ROUTE names when version_converter raises 'Dimension is a param' (measured: onnx 1.x)."""
    assert "if it stops with 'Dimension is a param', give the inputs fixed sizes first" in ONNX_ROUTE
    value = lambda n, shape: helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)  # noqa: E731
    constant = helper.make_tensor("c", TensorProto.FLOAT, [4], [1, 2, 3, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"], broadcast=1)], "g",
                              [value("x", ["batch", 4]), value("c", [4])], [value("y", ["batch", 4])],
                              initializer=[constant])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 5)], ir_version=3)
    with pytest.raises(RuntimeError, match="Dimension is a param"):
        onnx.version_converter.convert_version(model, 13)
    for value_info in (model.graph.input[0], model.graph.output[0]):
        value_info.type.tensor_type.shape.dim[0].dim_value = 3
    upgraded = onnx.version_converter.convert_version(model, 13)
    assert upgraded.opset_import[0].version == 13


def test_identify_words_an_old_opset_as_a_risk_not_a_certainty(tmp_path):
    path = _onnx(tmp_path, "relu6.onnx", [helper.make_node("Relu", ["x"], ["y"])], ["x"], [("", 6)], ir_version=3)
    (trap,) = [trap for trap in identify(path).traps if "opset 6" in trap]
    assert trap.startswith("opset 6 is older than the 7 onnxruntime guarantees: some ops (Relu-1, Sigmoid-1, "
                           "Add-1 measured) have no kernel")
    assert "others run" in trap
