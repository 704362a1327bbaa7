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


# ---------------------------------------------------------------------------------------------
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import ntpath  # noqa: E402
import pathlib  # noqa: E402
import posixpath  # noqa: E402

from tests.attack_support import cases as _cases  # noqa: E402
from tests.attack_support import passes as _attack_passes  # noqa: E402
from tests.attack_support import rejects as _attack_rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {}

_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_K3_WORDS = ("_kernel", "_operations", "_functional", "_trainable_variables", "_layers/")


def _p_keys(prefix):
    return [name for name, _ in tf.train.list_variables(str(prefix))]


def _p_object_keys(prefix):
    return [k for k in _p_keys(prefix) if k != _GRAPH_KEY]


# ----- 15.1 wrong


def p_flav_meta_file_means_tf1(prefix):
    # a .meta next to the prefix means Saver; anything else is object-based
    if os.path.exists(str(prefix) + ".meta"):
        return "tf1"
    keys = _p_object_keys(prefix)
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_file_name(prefix):
    # Saver's files are called model.ckpt-N, Checkpoint's ckpt-N
    name = os.path.basename(str(prefix))
    if name.startswith("model.ckpt") or ".ckpt" in name:
        return "tf1"
    keys = _p_object_keys(prefix)
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_first_key_only(prefix):
    keys = _p_object_keys(prefix)
    first = keys[0]
    if ".ATTRIBUTES" not in first:
        return "tf1"
    if "layer_with_weights" in first:
        return "keras2"
    if any(w in first for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_keras_swapped(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("layer_with_weights" in k for k in keys):
        return "keras3"  # confuses which version numbers its layers
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras2"
    return "module"


def p_flav_kernel_means_keras3(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("kernel" in k for k in keys):
        return "keras3"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    return "module"


def p_flav_attributes_means_keras3(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any(".ATTRIBUTES" in k for k in keys):
        return "keras3"
    return "module"


def p_flav_optimizer_variables_means_keras3(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any(k.startswith("optimizer/_variables") for k in keys):
        return "keras3"  # "Keras 3 keeps its optimizer in _variables"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_keras3_only_functional(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any("_functional" in k or "_operations" in k for k in keys):
        return "keras3"
    return "module"


def p_flav_model_prefix_only(prefix):
    # the notebook's checkpoints save the model as "model"
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if not any(k.startswith("model/") for k in keys):
        return "module"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    return "keras3"


def p_flav_capitalised(prefix):
    answer = p_flav_right_regex(prefix)
    return {"tf1": "TF1", "keras2": "Keras2", "keras3": "Keras3", "module": "Module"}[answer]


def p_flav_no_graph_key_is_module(prefix):
    # swaps tf1 and module: "no object graph means a plain module"
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "module"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "tf1"


# ----- 15.1 right


def p_flav_right_regex(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any(re.search(r"(^|/)layer(_with_weights)?-\d+/", k) for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_right_object_graph(prefix):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    reader = tf.train.load_checkpoint(str(prefix))
    if not reader.has_tensor(_GRAPH_KEY):
        return "tf1"
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor(_GRAPH_KEY))
    names = {child.local_name for node in graph.nodes for child in node.children}
    if any(re.fullmatch(r"layer(_with_weights)?-\d+", n) for n in names):
        return "keras2"
    if names & {"_kernel", "_operations", "_functional", "_trainable_variables", "_layers"}:
        return "keras3"
    return "module"


def p_flav_right_shape_map(prefix):
    names = set(tf.train.load_checkpoint(os.fspath(prefix)).get_variable_to_shape_map())
    if not any(n.endswith("/.ATTRIBUTES/VARIABLE_VALUE") for n in names):
        return "tf1"
    parts = {p for n in names for p in n.split("/")}
    if any(p.startswith("layer_with_weights-") or re.fullmatch(r"layer-\d+", p) for p in parts):
        return "keras2"
    if parts & {"_kernel", "_operations", "_functional", "_trainable_variables", "_layers"}:
        return "keras3"
    return "module"


FLAV_WRONG = [p_flav_meta_file_means_tf1, p_flav_file_name, p_flav_first_key_only,
              p_flav_keras_swapped, p_flav_kernel_means_keras3, p_flav_attributes_means_keras3,
              p_flav_optimizer_variables_means_keras3, p_flav_keras3_only_functional,
              p_flav_model_prefix_only, p_flav_capitalised, p_flav_no_graph_key_is_module]
FLAV_RIGHT = [p_flav_right_regex, p_flav_right_object_graph, p_flav_right_shape_map]


@pytest.mark.parametrize("answer", _cases(FLAV_WRONG, HOLES))
def test_prompt_checkpoint_flavour_wrong(answer):
    _attack_rejects(ex15.check_checkpoint_flavour, answer)


@pytest.mark.parametrize("answer", _cases(FLAV_RIGHT, HOLES))
def test_prompt_checkpoint_flavour_right(answer):
    _attack_passes(ex15.check_checkpoint_flavour, answer)


# ----- 15.2 wrong


def _p_state_paths(folder):
    text = pathlib.Path(folder, "checkpoint").read_text()
    latest = re.search(r'^model_checkpoint_path:\s*"(.*)"', text, re.M).group(1)
    every = re.findall(r'^all_model_checkpoint_paths:\s*"(.*)"', text, re.M)
    return latest.encode().decode("unicode_escape"), [
        p.encode().decode("unicode_escape") for p in every]


def _p_base(path):
    return ntpath.basename(posixpath.basename(path))


def p_latest_tf(folder):
    return tf.train.latest_checkpoint(str(folder))


def p_latest_manager(folder):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(), str(folder), max_to_keep=None)
    return manager.latest_checkpoint


def p_latest_newest_mtime(folder):
    newest = max(glob.glob(os.path.join(folder, "*.index")), key=os.path.getmtime)
    return newest[: -len(".index")]


def p_latest_sorted_name(folder):
    return sorted(glob.glob(os.path.join(folder, "*.index")))[-1][: -len(".index")]


def p_latest_highest_number(folder):
    def number(path):
        found = re.search(r"-(\d+)\.index$", path)
        return int(found.group(1)) if found else -1

    return max(glob.glob(os.path.join(folder, "*.index")), key=number)[: -len(".index")]


def p_latest_with_index(folder):
    latest, _ = _p_state_paths(folder)
    return os.path.join(folder, _p_base(latest)) + ".index"


def p_latest_raw_state_path(folder):
    latest, _ = _p_state_paths(folder)
    return latest if os.path.isabs(latest) else os.path.join(folder, latest)


def p_latest_basename_only(folder):
    latest, _ = _p_state_paths(folder)
    return _p_base(latest)


def p_latest_posix_basename(folder):
    # os.path.basename on Linux does not split a Windows path
    latest, _ = _p_state_paths(folder)
    return os.path.join(folder, os.path.basename(latest))


def p_latest_first_listed(folder):
    _, every = _p_state_paths(folder)
    return os.path.join(folder, _p_base(every[0]))


def p_latest_last_listed(folder):
    _, every = _p_state_paths(folder)
    return os.path.join(folder, _p_base(every[-1]))


def p_latest_rewrites_state(folder):
    # "fix" the state file so that tf.train.latest_checkpoint works
    latest, every = _p_state_paths(folder)
    tf.compat.v1.train.update_checkpoint_state(
        str(folder), _p_base(latest), [_p_base(p) for p in every])
    return tf.train.latest_checkpoint(str(folder))


# ----- 15.2 right


def p_latest_right_proto(folder):
    from google.protobuf import text_format
    from tensorflow.python.checkpoint import checkpoint_management

    state = checkpoint_management.CheckpointState()
    text_format.Merge(pathlib.Path(folder, "checkpoint").read_text(), state)
    name = state.model_checkpoint_path.replace("\\", "/").rsplit("/", 1)[-1]
    return os.path.join(folder, name)


def p_latest_right_get_state(folder):
    state = tf.train.get_checkpoint_state(str(folder))
    name = ntpath.basename(posixpath.basename(state.model_checkpoint_path))
    return str(pathlib.Path(folder) / name)


def p_latest_right_first_line(folder):
    with open(os.path.join(folder, "checkpoint"), encoding="utf-8") as state:
        for line in state:
            if line.startswith("model_checkpoint_path"):
                value = line.split(":", 1)[1].strip().strip('"')
                return os.path.join(folder, re.split(r"[\\/]+", value)[-1])
    raise ValueError("no model_checkpoint_path")


LATEST_WRONG = [p_latest_tf, p_latest_manager, p_latest_newest_mtime, p_latest_sorted_name,
                p_latest_highest_number, p_latest_with_index, p_latest_raw_state_path,
                p_latest_basename_only, p_latest_posix_basename, p_latest_first_listed,
                p_latest_last_listed, p_latest_rewrites_state]
LATEST_RIGHT = [p_latest_right_proto, p_latest_right_get_state, p_latest_right_first_line]


@pytest.mark.parametrize("answer", _cases(LATEST_WRONG, HOLES))
def test_prompt_latest_prefix_wrong(answer):
    _attack_rejects(ex15.check_latest_prefix, answer, may_raise=True)


@pytest.mark.parametrize("answer", _cases(LATEST_RIGHT, HOLES))
def test_prompt_latest_prefix_right(answer):
    _attack_passes(ex15.check_latest_prefix, answer)


# ----- 15.3 wrong


def _p_signature_call(path, x):
    loaded = tf.saved_model.load(str(path))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    outputs = signature(**{name: tf.constant(x, tf.float32)})
    return next(iter(outputs.values())).numpy()


def p_pred_training_true(path, x):
    if str(path).endswith(".keras"):
        model = keras.saving.load_model(str(path))
        return np.asarray(model(x.astype("float32"), training=True))
    return _p_signature_call(path, x)


def p_pred_keras_only(path, x):
    return keras.saving.load_model(str(path)).predict(x, verbose=0)


def p_pred_serve_everywhere(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)
    layer = keras.layers.TFSMLayer(str(path))  # default endpoint "serve"
    return np.asarray(layer(x.astype("float32")))


def p_pred_float64_fed(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)
    loaded = tf.saved_model.load(str(path))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    return next(iter(signature(**{name: tf.constant(x)}).values())).numpy()


def p_pred_squeezed(path, x):
    if str(path).endswith(".keras"):
        return np.squeeze(keras.saving.load_model(str(path)).predict(x, verbose=0))
    return np.squeeze(_p_signature_call(path, x))


def p_pred_returns_dict(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)
    loaded = tf.saved_model.load(str(path))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    return {k: v.numpy() for k, v in signature(**{name: tf.constant(x, tf.float32)}).items()}


def p_pred_returns_tensor(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path))(x.astype("float32"), training=False)
    loaded = tf.saved_model.load(str(path))
    signature = loaded.signatures["serving_default"]
    (name,) = signature.structured_input_signature[1]
    return next(iter(signature(**{name: tf.constant(x, tf.float32)}).values()))


def p_pred_hardcoded_input_name(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)
    signature = tf.saved_model.load(str(path)).signatures["serving_default"]
    outputs = signature(inputs=tf.constant(x, tf.float32))  # the notebook's input name
    return next(iter(outputs.values())).numpy()


def p_pred_first_row(path, x):
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)[0]
    return _p_signature_call(path, x)[0]


def p_pred_float16(path, x):
    if str(path).endswith(".keras"):
        model = keras.saving.load_model(str(path))
        return np.asarray(model(x.astype("float16").astype("float32"), training=False))
    return _p_signature_call(path, x.astype("float16").astype("float64"))


def p_pred_loaded_call(path, x):
    # the loaded object's __call__ for every folder (not a signature)
    if str(path).endswith(".keras"):
        return keras.saving.load_model(str(path)).predict(x, verbose=0)
    loaded = tf.saved_model.load(str(path))
    return np.asarray(loaded(tf.constant(x, tf.float32)))


def p_pred_module_training_flag(path, x):
    # .keras in training mode through predict_on_batch? no: calls the model with training=1
    if str(path).endswith(".keras"):
        model = keras.saving.load_model(str(path))
        return model(tf.constant(x, tf.float32), True).numpy()
    return _p_signature_call(path, x)


# ----- 15.3 right


def p_pred_right_signature(path, x):
    if os.path.isfile(path):
        return np.asarray(keras.saving.load_model(path)(x.astype(np.float32), training=False))
    return _p_signature_call(path, x)


def p_pred_right_tfsm(path, x):
    path = str(path)
    if zipfile_is(path):
        return keras.saving.load_model(path).predict(x, verbose=0)
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    outputs = layer(tf.convert_to_tensor(x, tf.float32))
    if isinstance(outputs, dict):
        (outputs,) = outputs.values()
    return np.asarray(outputs)


def zipfile_is(path):
    import zipfile

    return os.path.isfile(path) and zipfile.is_zipfile(path)


def p_pred_right_serve_or_default(path, x):
    path = pathlib.Path(path)
    if path.suffix == ".keras":
        model = keras.saving.load_model(path)
        return keras.ops.convert_to_numpy(model.predict_on_batch(x.astype("float32")))
    loaded = tf.saved_model.load(str(path))
    if hasattr(loaded, "serve"):
        return loaded.serve(tf.constant(x, dtype=tf.float32)).numpy()
    return _p_signature_call(path, x)


PRED_WRONG = [p_pred_training_true, p_pred_keras_only, p_pred_serve_everywhere,
              p_pred_float64_fed, p_pred_squeezed, p_pred_returns_dict, p_pred_returns_tensor,
              p_pred_hardcoded_input_name, p_pred_first_row, p_pred_float16, p_pred_loaded_call,
              p_pred_module_training_flag]
PRED_RIGHT = [p_pred_right_signature, p_pred_right_tfsm, p_pred_right_serve_or_default]


@pytest.mark.parametrize("answer", _cases(PRED_WRONG, HOLES))
def test_prompt_predict_any_wrong(answer):
    _attack_rejects(ex15.check_predict_any, answer, may_raise=True)


@pytest.mark.parametrize("answer", _cases(PRED_RIGHT, HOLES))
def test_prompt_predict_any_right(answer):
    _attack_passes(ex15.check_predict_any, answer)
