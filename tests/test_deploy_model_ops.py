"""Intact model files whose ops a runtime lacks: named as such, never called damaged (issues 33 and 38).

Files: tests/data/litert (a Select-TF-ops and a custom-op .tflite, made by TF 2.21's converter),
tests/data/onnx (a Relu at opset 5 that onnxruntime has no kernel for), and a protobuf that is
not a GraphDef (a MediaPipe-like graph config, encoded below).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import keras
import numpy as np
import onnx
import onnxruntime
import pytest

from helpers import deploy
from helpers.errors import NotAModelFileError
from helpers.identify import identify
from helpers.model_ops import (
    UnsupportedOpsError, converter_ops_missing, litert_ops_text, onnx_not_implemented, tflite_ops_needed)
from tests.realfiles import manifest, real_file, truncated

DATA = Path(__file__).parent / "data"
LITERT = manifest("litert")
ONNX = manifest("onnx")["relu_opset5"]
MATRIX = np.array(LITERT["builtin"]["input"], "float32")


@pytest.mark.parametrize("name", sorted(LITERT))
def test_the_ops_a_tflite_needs_are_read_from_its_operator_codes(name):
    assert tflite_ops_needed(real_file("litert", name)) == LITERT[name]["custom_ops"]


def test_bytes_that_are_not_a_tflite_are_refused():
    with pytest.raises(ValueError, match="TFL3"):
        tflite_ops_needed(b"not a flatbuffer at all")
    data = (DATA / "litert" / "select_tf_ops.tflite").read_bytes()
    with pytest.raises(ValueError, match="outside the file"):
        tflite_ops_needed(data[:40])


def test_a_select_tf_ops_tflite_is_named_with_its_ops_not_called_damaged():
    with pytest.raises(UnsupportedOpsError) as caught:
        deploy.model_file_kind(DATA / "litert" / "select_tf_ops.tflite")
    message = str(caught.value)
    assert "needs the Flex delegate (Select TF ops): FlexMatrixInverse" in message
    assert "damaged" not in message and "builtin ops" in message and "ONNX" in message


def test_a_custom_op_tflite_is_named_with_its_op():
    with pytest.raises(UnsupportedOpsError, match="custom op 'Svd': needs a runtime with a kernel for it registered"):
        deploy.model_file_kind(DATA / "litert" / "custom_op.tflite")


def test_a_truncated_select_tf_ops_tflite_is_still_called_damaged(tmp_path):
    cut = truncated(DATA / "litert" / "select_tf_ops.tflite", tmp_path / "cut.tflite", 0.5)
    with pytest.raises(NotAModelFileError, match="truncated or damaged"):
        deploy.model_file_kind(cut)


def test_a_builtin_tflite_still_runs_with_its_stored_output():
    assert deploy.model_file_kind(DATA / "litert" / "builtin.tflite") == deploy.KINDS[2]
    square = keras.Sequential([keras.Input((2,)), keras.layers.Lambda(lambda x: keras.ops.matmul(x, x))])
    table = deploy.compare_runtimes(square, MATRIX,
                                    [DATA / "litert" / "builtin.tflite"], repeat=1)
    assert table.row("builtin.tflite").max_difference == 0.0


def test_compare_runtimes_names_the_flex_op_before_timing_anything():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Identity()])
    with pytest.raises(UnsupportedOpsError, match="FlexMatrixInverse"):
        deploy.compare_runtimes(model, MATRIX,
                                [DATA / "litert" / "select_tf_ops.tflite"])


def test_identify_names_the_ops_and_the_runtime_they_need():
    for name, words in (("select_tf_ops", "Flex delegate (Select TF ops): FlexMatrixInverse"),
                        ("custom_op", "custom op 'Svd'")):
        info = identify(real_file("litert", name))
        assert info.kind == "tflite", info
        assert info.holds["ops beyond LiteRT's builtins"] == ", ".join(LITERT[name]["custom_ops"])
        assert any(words in trap and "rewrite the model with builtin ops" in trap for trap in info.traps)
    assert "ops beyond LiteRT's builtins" not in identify(DATA / "litert" / "builtin.tflite").holds


def test_litert_ops_text_names_flex_and_custom_ops_apart():
    assert litert_ops_text([]) == ""
    assert litert_ops_text(["FlexCumprod", "Svd", "FlexMatrixInverse"]) == (
        "needs the Flex delegate (Select TF ops): FlexCumprod, FlexMatrixInverse; "
        "custom op 'Svd': needs a runtime with a kernel for it registered")


# --------------------------------------------------------------------------- ONNX at an old opset


def _relu_model() -> keras.Model:
    return keras.Sequential([keras.Input((3,)), keras.layers.ReLU()])


def test_onnxruntime_has_no_kernel_for_the_old_opset():
    """The fixture still shows the library's behaviour: if this fails, onnxruntime changed."""
    with pytest.raises(Exception, match="NOT_IMPLEMENTED.*Relu\\(1\\)"):
        onnxruntime.InferenceSession(str(DATA / "onnx" / "relu_opset5.onnx"), providers=["CPUExecutionProvider"])


def test_compare_runtimes_names_the_onnx_op_opset_and_route(tmp_path):
    path = shutil.copy(DATA / "onnx" / "relu_opset5.onnx", tmp_path / "old.onnx")
    entry = ONNX
    with pytest.raises(UnsupportedOpsError) as caught:
        deploy.compare_runtimes(_relu_model(), np.array(entry["input"], "float32"), [path])
    message = str(caught.value)
    assert "op Relu at opset 5" in message and "onnx.version_converter.convert_version" in message
    assert "ONNXRuntimeError" not in message and len(message.split("' is ", 1)[1]) < 400


def test_the_onnx_route_converts_then_runs_with_equal_outputs(tmp_path):
    """The route the message names, run: convert_version to 13, then the same comparison passes."""
    entry = ONNX
    upgraded = onnx.version_converter.convert_version(onnx.load(DATA / "onnx" / "relu_opset5.onnx"), 13)
    onnx.save(upgraded, tmp_path / "new.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "new.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": np.array(entry["input"], "float32")})[0]
    assert np.array_equal(got, np.array(entry["output"], "float32"))
    table = deploy.compare_runtimes(_relu_model(), np.array(entry["input"], "float32"), [tmp_path / "new.onnx"],
                                    repeat=1)
    assert table.row("new.onnx").max_difference == 0.0


def test_onnx_not_implemented_reads_only_that_error():
    assert onnx_not_implemented("[ONNXRuntimeError] : 1 : FAIL : Load model failed") is None
    assert "Relu" in onnx_not_implemented("NOT_IMPLEMENTED : Could not find an implementation for Relu(1) node")


def test_identify_warns_of_an_opset_below_7():
    info = identify(DATA / "onnx" / "relu_opset5.onnx")
    assert info.kind == "onnx" and any("convert_version" in trap for trap in info.traps)


# --------------------------------------------------------------------------- a protobuf that is not a GraphDef


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def _mediapipe_like_config(path: Path) -> Path:
    """A CalculatorGraphConfig's wire bytes: node=1 {name=1, calculator=2, input_stream=3, output_stream=4},
    input_stream=10, output_stream=15. GraphDef parses it: node 1 is its node field, calculator its op."""
    node = _field(1, b"pass") + _field(2, b"PassThroughCalculator") + _field(3, b"in") + _field(4, b"out")
    path.write_bytes(_field(1, node) + _field(10, b"in") + _field(15, b"out"))
    return path


def test_a_protobuf_that_is_not_a_graph_def_says_so(tmp_path):
    path = _mediapipe_like_config(tmp_path / "hand_landmark.pb")
    with pytest.raises(NotAModelFileError) as caught:
        deploy.load_frozen_graph(path, "x:0", "y:0")
    message = str(caught.value)
    assert "not a TensorFlow GraphDef" in message and "PassThroughCalculator" in message
    assert "candidates" not in message
    with pytest.raises(NotAModelFileError, match="not a TensorFlow GraphDef.*PassThroughCalculator"):
        deploy.model_file_kind(path)


def test_a_real_frozen_graph_is_still_a_graph_def(tmp_path):
    model = keras.Sequential([keras.Input((3,), name="x"), keras.layers.Dense(2)])
    frozen = deploy.freeze_graph(model, tmp_path / "m.pb")
    assert deploy.model_file_kind(frozen.path) == deploy.KINDS[1]
    run = deploy.load_frozen_graph(frozen.path, frozen.inputs, frozen.outputs)
    batch = np.ones((2, 3), "float32")
    assert np.allclose(run(batch), model(batch), atol=1e-6)


def test_converter_ops_missing_reads_a_real_converter_error():
    import tensorflow as tf

    spec = [tf.TensorSpec([None, 3, 3], tf.float32)]
    for body, expected in ((tf.linalg.inv, {"MatrixInverse": "flex"}), (tf.math.erfinv, {"Erfinv": "custom"})):
        function = tf.function(body, input_signature=spec)
        converter = tf.lite.TFLiteConverter.from_concrete_functions([function.get_concrete_function()], function)
        with pytest.raises(Exception) as caught, deploy.quietly():
            converter.convert()
        assert converter_ops_missing(caught.value) == expected
