"""The checks of notebook 15: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import glob
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex15


def not_done(*args):
    raise NotImplementedError()


def passes(check, answer, capsys) -> str:
    check(answer)
    out = capsys.readouterr().out
    assert "passed" in out
    return out


def fails(check, answer, *hint_words: str) -> str:
    with pytest.raises(CheckFailed) as caught:
        check(answer)
    assert not isinstance(caught.value, ExerciseNotDone)
    message = str(caught.value)
    for word in hint_words:
        assert word in message, message
    if not isinstance(caught.value, LearnerCodeError):  # a check's own hint: short, no paths
        assert len(message) <= 320 and "/tmp" not in message, message
    return message


# --------------------------------------------------------------------------- 15.1

KERAS3 = {"_functional", "_operations", "_kernel", "_trainable_variables"}


def keys(prefix):
    return [key for key, _ in tf.train.list_variables(prefix)]


def flavour_reference(prefix):
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    parts = {part for key in found for part in key.split("/")}
    if parts & KERAS3:
        return "keras3"
    if any(p.startswith(("layer_with_weights-", "layer-")) for p in parts):
        return "keras2"
    return "module"


def flavour_by_object_graph(prefix):  # reads the object graph's edges
    from helpers.object_graph import read_object_graph
    from helpers.errors import NameBasedCheckpointError
    try:
        edges = {edge.name for edge in read_object_graph(prefix, include_empty=True).edges}
    except NameBasedCheckpointError:
        return "tf1"
    if edges & KERAS3:
        return "keras3"
    return "keras2" if any(e.startswith("layer") for e in edges) else "module"


def flavour_by_regex(prefix):
    text = "\n".join(keys(prefix))
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in text:
        return "tf1"
    if re.search(r"(^|/)(_functional|_operations|_kernel|_trainable_variables)/", text, re.M):
        return "keras3"
    return "keras2" if re.search(r"(^|/)layer(_with_weights)?-\d+/", text, re.M) else "module"


def flavour_by_meta(prefix):
    if os.path.exists(prefix + ".meta"):
        return "tf1"
    return flavour_reference(prefix)


def flavour_graph_key_only(prefix):
    return "tf1" if "_CHECKPOINTABLE_OBJECT_GRAPH" not in keys(prefix) else "keras3"


def flavour_kernel_only(prefix):
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    if any("_kernel" in key for key in found):
        return "keras3"
    return "keras2" if any("layer_with_weights" in key for key in found) else "module"


def flavour_any_keras_word(prefix):
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    if any("layer" in key or "optimizer" in key for key in found):
        return "keras2"
    return flavour_reference(prefix)


def flavour_by_identify(prefix):
    from helpers import identify
    return identify.identify(prefix).kind


def flavour_tf1_is_meta_or_nothing(prefix):
    found = keys(prefix)
    if os.path.exists(prefix + ".meta") or "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    return flavour_reference(prefix)


def test_15_1_accepts_right_answers(capsys):
    for answer in (flavour_reference, flavour_by_object_graph, flavour_by_regex):
        passes(ex15.check_checkpoint_flavour, answer, capsys)


@pytest.mark.parametrize(("answer", "words"), [
    (flavour_by_meta, ["TF2 tf.Module", "does not make it TF1"]),
    (flavour_graph_key_only, ["returned 'keras3'", "no Keras edges"]),
    (flavour_kernel_only, ["Keras 3 model with its optimizer", "_trainable_variables"]),
    (flavour_any_keras_word, ["Keras 3 model with its optimizer"]),
    (flavour_tf1_is_meta_or_nothing, ["does not make it TF1"]),
    (flavour_by_identify, ["do not call helpers.identify"]),
])
def test_15_1_rejects_wrong_answers(answer, words):
    fails(ex15.check_checkpoint_flavour, answer, *words)


def test_15_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex15.check_checkpoint_flavour(not_done)


# --------------------------------------------------------------------------- 15.2


def latest_reference(folder):
    from helpers.inspection import resolve_checkpoint
    return resolve_checkpoint(folder)


def latest_by_state_name(folder):
    state = tf.train.get_checkpoint_state(folder)
    name = re.split(r"[/\\]", state.model_checkpoint_path)[-1]
    return os.path.join(folder, name)


def latest_by_pathlib(folder):
    from pathlib import Path
    text = (Path(folder) / "checkpoint").read_text()
    name = re.search(r'^model_checkpoint_path: "(.*)"$', text, re.M)[1].replace("\\\\", "/")
    return Path(folder) / name.rsplit("/", 1)[-1]


def latest_tf(folder):
    return tf.train.latest_checkpoint(folder)


def latest_by_time(folder):
    newest = max(glob.glob(os.path.join(folder, "*.index")), key=os.path.getmtime)
    return newest[: -len(".index")]


def latest_by_sorted_name(folder):
    return sorted(glob.glob(os.path.join(folder, "*.index")))[-1][: -len(".index")]


def latest_index_file(folder):
    return latest_reference(folder) + ".index"


def latest_basename(folder):
    return os.path.basename(latest_reference(folder))


def latest_first_listed(folder):
    state = tf.train.get_checkpoint_state(folder)
    name = re.split(r"[/\\]", state.all_model_checkpoint_paths[0])[-1]
    return os.path.join(folder, name)


def test_15_2_accepts_right_answers(capsys):
    for answer in (latest_reference, latest_by_state_name, latest_by_pathlib):
        passes(ex15.check_latest_prefix, answer, capsys)


@pytest.mark.parametrize(("answer", "words"), [
    (latest_tf, ["NoneType", "not on this machine"]),
    (latest_by_time, ["'ckpt-9'", "not file times"]),
    (latest_by_sorted_name, ["'ckpt-9'", "sorted names"]),
    (latest_index_file, ["without .index"]),
    (latest_basename, ["not a prefix in this folder"]),
    (latest_first_listed, ["'ckpt-8'", "The state file says which is latest"]),
])
def test_15_2_rejects_wrong_answers(answer, words):
    fails(ex15.check_latest_prefix, answer, *words)


def test_15_2_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex15.check_latest_prefix(not_done)


# --------------------------------------------------------------------------- 15.3


def predict_reference(path, x):
    from helpers.identify import identify
    loaded = identify(path).load()
    if isinstance(loaded, keras.layers.Layer):
        return np.asarray(loaded(x.astype("float32"), training=False))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    return next(iter(signature(**{name: tf.constant(x, tf.float32)}).values())).numpy()


def predict_by_hand(path, x):
    x = x.astype(np.float32)
    if os.path.isfile(path):
        return keras.models.load_model(path).predict(x, verbose=0)
    loaded = tf.saved_model.load(path)
    if "serve" in loaded.signatures:
        return next(iter(loaded.signatures["serve"](tf.constant(x)).values())).numpy()
    signature = loaded.signatures["serving_default"]
    return list(signature(**{list(signature.structured_input_signature[1])[0]: tf.constant(x)}).values())[0].numpy()


def predict_tfsm(path, x):
    x = x.astype(np.float32)
    if os.path.isfile(path):
        return keras.models.load_model(path).predict(x, verbose=0)
    return np.asarray(keras.layers.TFSMLayer(path)(x))


def predict_training(path, x):
    x = x.astype(np.float32)
    if os.path.isfile(path):
        return np.asarray(keras.models.load_model(path)(x, training=True))
    return predict_reference(path, x)


def predict_dict(path, x):
    if os.path.isfile(path):
        return predict_reference(path, x)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    return signature(**{list(signature.structured_input_signature[1])[0]: tf.constant(x, tf.float32)})


def predict_float64(path, x):
    if os.path.isfile(path):
        return predict_reference(path, x)
    signature = tf.saved_model.load(path).signatures["serving_default"]
    name = list(signature.structured_input_signature[1])[0]
    return next(iter(signature(**{name: tf.constant(x)}).values())).numpy()


def predict_first_row(path, x):
    return predict_reference(path, x)[:1]


def predict_load_model_everywhere(path, x):
    return keras.models.load_model(path).predict(x.astype(np.float32), verbose=0)


def test_15_3_accepts_right_answers(capsys):
    for answer in (predict_reference, predict_by_hand):
        passes(ex15.check_predict_any, answer, capsys)


@pytest.mark.parametrize(("answer", "words"), [
    (predict_tfsm, ["15.3"]),
    (predict_training, ["Dropout", "training=False"]),
    (predict_dict, ["returned a dict", "one NumPy array"]),
    (predict_float64, ["15.3"]),
    (predict_first_row, ["the shape is (1, 2)"]),
    (predict_load_model_everywhere, ["15.3"]),
])
def test_15_3_rejects_wrong_answers(answer, words):
    fails(ex15.check_predict_any, answer, *words)


def test_15_3_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex15.check_predict_any(not_done)
