"""Write MANIFEST.json for the Keras 1.2.2 files copied from deeplearning4j's test resources.

Run with any Python that has h5py and NumPy (no Keras needed):

    python tests/data/keras1-dl4j/make_manifest.py PATH/simple_lstm_th_keras_1_inputs_and_outputs.h5

``simple_lstm_th_keras_1``: input and output are the ones Keras 1.2.2 itself recorded (the
``inputs/lstm_input_1`` and ``predictions/dense_1`` datasets of the file named above, which
dl4j-test-resources ships beside the model; ``outputs/dense_1`` there holds the training
targets, not the model's answers).

``conv2d_tensorflow_1``: dl4j ships no recorded output for it. Its weights are
``np.arange`` values set by dl4j's script ``weights/scripts/conv2d.py``; the output here is
computed by NumPy alone (a "valid" cross-correlation, TensorFlow's convolution, plus the
bias) from the weights in the file: an independent reference, not Keras 1's own answer.
"""

import json
import sys
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
WRITTEN_BY = "keras 1.2.2 (dl4j-test-resources, 2017)"


def tolist(array) -> list:
    return np.asarray(array, np.float32).astype(np.float64).tolist()


def conv2d_reference(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """'valid' cross-correlation, channels last: x (batch, rows, cols, in), kernel (kr, kc, in, out)."""
    kr, kc = kernel.shape[:2]
    rows, cols = x.shape[1] - kr + 1, x.shape[2] - kc + 1
    out = np.zeros((x.shape[0], rows, cols, kernel.shape[3]), np.float64)
    for i in range(rows):
        for j in range(cols):
            out[:, i, j, :] = np.einsum("bhwc,hwco->bo", x[:, i:i + kr, j:j + kc, :], kernel)
    return (out + bias).astype(np.float32)


def main(recorded: str) -> int:
    with h5py.File(recorded, "r") as file:
        x = file["inputs/lstm_input_1"][()]
        y = file["predictions/dense_1"][()]
    manifest = {"simple_lstm_th_keras_1": {
        "path": "simple_lstm_th_keras_1_model.h5", "kind": "keras1-h5-full/recurrent",
        "written_by": WRITTEN_BY + ", Theano backend",
        "description": "Sequential: LSTM(output_dim=50, inner_activation='hard_sigmoid') on (1 step, 1 "
                       "feature) -> Dense(1), trained (RMSprop, mse); full model: model_config, "
                       "training_config, model_weights (per-gate lstm_1_W_i/U_i/b_i ...), optimizer_weights",
        "input": tolist(x), "output": tolist(y),
        "notes": "Input and output recorded by Keras 1.2.2 itself (predictions/dense_1 of dl4j's "
                 "simple_lstm_th_keras_1_inputs_and_outputs.h5). Keras 1's hard_sigmoid is "
                 "clip(0.2x + 0.5, 0, 1); Keras 3's is clip(x/6 + 0.5, 0, 1)."}}
    with h5py.File(HERE / "conv2d_tensorflow_1.h5", "r") as file:
        group = file["model_weights/convolution2d_1"]
        kernel, bias = group["convolution2d_1_W:0"][()], group["convolution2d_1_b:0"][()]
    xc = (np.sin(0.37 * np.arange(2 * 5 * 5 * 5) + 0.5)).astype(np.float32).reshape(2, 5, 5, 5)
    manifest["conv2d_tensorflow_1"] = {
        "path": "conv2d_tensorflow_1.h5", "kind": "keras1-h5-full/conv",
        "written_by": WRITTEN_BY + ", TensorFlow backend (dl4j's file name; the file does not record it)",
        "description": "Sequential: Convolution2D(nb_filter=6, 3x3, dim_ordering='tf') on 5x5x5, weights "
                       "np.arange (never trained); full model, weights named convolution2d_1_W:0, _b:0",
        "input": tolist(xc), "output": tolist(conv2d_reference(xc, kernel, bias)),
        "notes": "Output computed by NumPy from the file's weights (cross-correlation + bias), not by "
                 "Keras 1: dl4j ships no recorded output for this file."}
    (HERE / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{len(manifest)} artifacts")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
