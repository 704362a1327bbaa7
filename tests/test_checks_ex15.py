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
from helpers.identify import identify as _NOTEBOOK_IDENTIFY  # as the notebook imports it


@pytest.fixture(autouse=True)
def _first_hints():
    """Each test starts from the first step of every stepped hint."""
    from helpers.checks import forget_hints

    forget_hints()
    yield
    forget_hints()


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
    (flavour_by_meta, ["TF2 tf.Module", "whatever files lie beside", "section"]),
    (flavour_graph_key_only, ["returned 'keras3'", "none of Keras'", "section"]),
    (flavour_kernel_only, ["Keras 3 model with its optimizer", "Keras' names", "section"]),
    (flavour_any_keras_word, ["Keras 3 model with its optimizer"]),
    (flavour_tf1_is_meta_or_nothing, ["whatever files lie beside"]),
    (flavour_by_identify, ["helpers.identify"]),
])
def test_15_1_rejects_wrong_answers(answer, words):
    fails(ex15.check_checkpoint_flavour, answer, *words)


def test_15_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex15.check_checkpoint_flavour(not_done)


# --------------------------------------------------------------------------- 15.1: the forbidden helper, quiet


def flavour_by_bound_identify(prefix):  # the name the notebook imported, bound before the check ran
    kind = _NOTEBOOK_IDENTIFY(prefix).kind
    return {"tf1-checkpoint": "tf1"}.get(kind, kind.removeprefix("checkpoint-"))


def flavour_identify_then_fallback(prefix):  # swallows whatever identify raises
    try:
        return flavour_by_bound_identify(prefix)
    except Exception:  # noqa: BLE001
        return "module"


def test_15_1_catches_identify_under_the_name_the_notebook_imported():
    # Before: the check replaced the module's attribute only, and this answer passed.
    for answer in (flavour_by_bound_identify, flavour_identify_then_fallback):
        fails(ex15.check_checkpoint_flavour, answer, "helpers.identify")
    from helpers import identify as module
    assert module.identify is _NOTEBOOK_IDENTIFY and module.identify.__code__.co_name == "identify"
    assert _NOTEBOOK_IDENTIFY("no such file").kind  # put back as it was


def flavour_functional_only(prefix):  # Keras 3 = a Sequential or functional model
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    parts = {part for key in found for part in key.split("/")}
    if parts & {"_functional", "_operations", "_layers", "_trainable_variables"}:
        return "keras3"
    return "keras2" if any(p.startswith("layer") for p in parts) else "module"


# --------------------------------------------------------------------------- 15.1: a review's answers


def flavour_layer_word_first(prefix):  # any key with 'layer' in it read as Keras 2
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    if any("layer" in key for key in found):
        return "keras2"
    if any("/_" in key for key in found):
        return "keras3"
    return "module"


def flavour_underscore_after_keras2(prefix):  # any private name read as Keras 3
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    parts = {part for key in found for part in key.split("/")}
    if any(p.startswith(("layer_with_weights-", "layer-")) for p in parts):
        return "keras2"
    if any(p.startswith("_") and p != "_CHECKPOINTABLE_OBJECT_GRAPH" for p in parts):
        return "keras3"
    return "module"


def flavour_prose_words_only(prefix):  # only the Keras 3 words of a model saved alone
    found = keys(prefix)
    if "_CHECKPOINTABLE_OBJECT_GRAPH" not in found:
        return "tf1"
    if any(word in key for key in found for word in ("/_kernel/", "/_functional/", "/_operations/")):
        return "keras3"
    parts = {part for key in found for part in key.split("/")}
    return "keras2" if any(p.startswith(("layer_with_weights-", "layer-")) for p in parts) else "module"


@pytest.mark.parametrize(("answer", "words"), [
    (flavour_layer_word_first, ["a subclassed Keras 3 model", "returned 'keras2'", "section"]),
    (flavour_underscore_after_keras2, ["a tf.Module with a private attribute", "`_private` ones too"]),
    (flavour_prose_words_only, ["a Keras 3 model with its optimizer", "'_trainable_variables'", "section"]),
])
def test_15_1_rejects_the_reviews_wrong_answers(answer, words):
    message = fails(ex15.check_checkpoint_flavour, answer, *words)
    assert len(message) <= 300, (len(message), message)


def test_15_1_hints_fit_300_characters_for_every_label_and_rule(tmp_path):
    got = repr("x" * 30)[:12]  # the learner's value, as clipped
    for label, (_, expected) in ex15._flavour_fixtures(str(tmp_path)).items():
        for rule in ("not tf1", expected):
            for text in ex15._FLAVOUR_HINTS[rule]:
                seen = f"Exercise 15.1: for {label} you returned {got}, expected {expected!r}. "
                assert len(seen + text) <= 300, (label, text)


def test_15_1_has_a_subclassed_keras3_model():
    message = fails(ex15.check_checkpoint_flavour, flavour_functional_only, "a subclassed Keras 3 model")
    assert "section" in message


def test_15_1_hints_come_in_steps():
    from tests.attack_harness import stepped

    first, second = stepped(ex15.check_checkpoint_flavour, flavour_functional_only)
    assert "section" in first and first != second and "'_kernel'" in second


def flavour_restore_to_see(prefix):  # TensorFlow logs while this runs
    tf.get_logger().error("a library's error line")
    status = tf.train.Checkpoint().read(prefix)
    del status
    return flavour_reference(prefix)


def test_checks_print_no_tensorflow_log_lines(capfd):
    import logging

    before = logging.getLogger("tensorflow").level, logging.getLogger("absl").level
    passes(ex15.check_checkpoint_flavour, flavour_restore_to_see, capfd)
    fails(ex15.check_checkpoint_flavour, lambda prefix: (flavour_restore_to_see(prefix), "tf1")[1])
    passes(ex15.check_keras_file_facts, facts_reference, capfd)  # its fixtures save a legacy .h5
    out, err = capfd.readouterr()
    for text in (out, err):
        assert "ERROR:tensorflow" not in text and "WARNING:tensorflow" not in text, text
        assert "WARNING:absl" not in text, text
    assert (logging.getLogger("tensorflow").level, logging.getLogger("absl").level) == before


# --------------------------------------------------------------------------- 15.2


def _holds(file, name):
    import h5py

    found = []
    if name in file:
        file[name].visititems(lambda _, item: found.append(isinstance(item, h5py.Dataset)))
    return any(found)


def facts_reference(path):
    import io
    import json
    import zipfile

    import h5py

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            metadata = json.loads(archive.read("metadata.json"))
            with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as weights:
                return metadata.get("keras_version"), _holds(weights, "optimizer")
    with h5py.File(path, "r") as file:
        return file.attrs.get("keras_version"), _holds(file, "optimizer_weights") or _holds(file, "optimizer")


def facts_by_identify(path):
    info = _NOTEBOOK_IDENTIFY(path)
    return info.written_by.get("Keras"), bool(info.holds.get("optimizer state"))


def facts_by_suffix(path):
    import io
    import json
    import zipfile

    import h5py

    if path.endswith(".keras"):
        with zipfile.ZipFile(path) as archive:
            with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as weights:
                optimizer = _holds(weights, "optimizer")
            return json.loads(archive.read("metadata.json"))["keras_version"], optimizer
    return facts_reference(path)


def facts_this_keras(path):
    return keras.__version__, facts_reference(path)[1]


def facts_compiled_means_optimizer(path):  # "compiled" read as "holds optimizer values"
    import json
    import zipfile

    import h5py

    version = facts_reference(path)[0]
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return version, json.loads(archive.read("config.json")).get("compile_config") is not None
    with h5py.File(path, "r") as file:
        return version, "training_config" in file.attrs


def facts_count(path):
    version, optimizer = facts_reference(path)
    return version, 13 if optimizer else 0


def facts_bytes(path):
    version, optimizer = facts_reference(path)
    return (version.encode() if version else None), optimizer


def facts_dict(path):
    version, optimizer = facts_reference(path)
    return {"version": version, "optimizer": optimizer}


def facts_append_mode(path):
    import h5py

    if not __import__("zipfile").is_zipfile(path):
        with h5py.File(path, "a") as file:
            file.attrs["read_by"] = "me"
    return facts_reference(path)


def facts_list(path):  # the prompt asks for a pair: a tuple
    return list(facts_reference(path))


def facts_never_optimizer(path):
    return facts_reference(path)[0], False


def test_15_2_accepts_right_answers(capsys):
    passes(ex15.check_keras_file_facts, facts_reference, capsys)


@pytest.mark.parametrize(("answer", "words"), [
    (facts_by_identify, ["helpers.identify"]),
    (facts_by_suffix, ["name is not its format", "section"]),
    (facts_this_keras, ["the file records None", "section"]),
    (facts_compiled_means_optimizer, ["optimizer values"]),
    (facts_count, ["True or False", "not a count"]),
    (facts_bytes, ["bytes", ".decode()"]),
    (facts_dict, ["return a pair"]),
    (facts_list, ["returned list", "a tuple (version, optimizer)"]),
    (facts_never_optimizer, ["Keras 3 .keras of a trained model", "under the optimizer's group (not as settings"]),
    (facts_append_mode, ["the file changed", "'r'"]),
])
def test_15_2_rejects_wrong_answers(answer, words):
    fails(ex15.check_keras_file_facts, answer, *words)


def flavour_by_reader(prefix):  # a reader of the identify package, called directly
    from helpers.identify.checkpoints import read_prefix
    kind = read_prefix(str(prefix)).kind
    return {"tf1-checkpoint": "tf1"}.get(kind, kind.removeprefix("checkpoint-"))


def facts_by_reader(path):
    from helpers.identify.keras_zips import read_keras_zip
    return read_keras_zip(str(path)).holds


def test_a_reader_of_the_identify_package_called_directly_is_forbidden_too():
    # Before: only the functions of helpers/identify/__init__.py were blocked, and a reader passed.
    fails(ex15.check_checkpoint_flavour, flavour_by_reader, "helpers.identify")
    fails(ex15.check_keras_file_facts, facts_by_reader, "helpers.identify")
    from helpers.identify.checkpoints import read_prefix
    assert read_prefix.__code__.co_name == "read_prefix"  # put back as it was


def test_15_2_forbids_identify_and_puts_it_back():
    fails(ex15.check_keras_file_facts, facts_by_identify, "helpers.identify")
    assert _NOTEBOOK_IDENTIFY("tests/data/tf215/sequential.h5").kind == "legacy-h5-model"


def test_15_2_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex15.check_keras_file_facts(not_done)


# --------------------------------------------------------------------------- 15.3


def predict_reference(path, x):
    from helpers.identify import identify
    loaded = identify(path).load(trust=True)  # the check's files are the course's own
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
from tests.attack_harness import accepted as _strict_accepted  # noqa: E402
from tests.attack_harness import rejected as _strict_rejected  # noqa: E402

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


# ----- 15.1 wrong, written again from the prompt after the check changed (a subclassed model, the
# helper under the name the notebook imported)


def p_flav_notebook_identify(prefix):
    # the notebook imported identify at the top: "I only use it to check myself"
    kind = _NOTEBOOK_IDENTIFY(str(prefix)).kind
    return "tf1" if kind.startswith("tf1") else kind.split("-")[-1]


def p_flav_identify_fallback(prefix):
    try:
        return p_flav_notebook_identify(prefix)
    except Exception:  # noqa: BLE001 - "if identify fails, guess"
        return p_flav_right_regex(prefix)


def p_flav_module_attribute(prefix):
    import importlib

    kind = importlib.import_module("helpers.identify").identify(str(prefix)).kind
    return "tf1" if kind.startswith("tf1") else kind.split("-")[-1]


def p_flav_functional_words(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("_functional" in k or "_layers" in k for k in keys):
        return "keras3"
    return "keras2" if any("layer" in k for k in keys) else "module"


def p_flav_underscore_means_keras3(prefix):
    # "Keras 3 names start with '_'", checked before Keras 2
    keys = _p_object_keys(prefix)
    if _GRAPH_KEY not in _p_keys(prefix):
        return "tf1"
    if any(part.startswith("_") for k in keys for part in k.split("/")[:-2]):
        return "keras3"
    return "keras2" if any("layer_with_weights" in k for k in keys) else "module"


def p_flav_iterations_means_keras2(prefix):
    # "an optimizer with _iterations is a Keras 2 optimizer"
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("layer_with_weights" in k or "_iterations" in k for k in keys):
        return "keras2"
    if any(w in k for k in keys for w in _K3_WORDS):
        return "keras3"
    return "module"


def p_flav_operations_index(prefix):
    # Keras 3 = layers numbered under _operations
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any(re.search(r"_operations/\d+/", k) for k in keys):
        return "keras3"
    return "keras2" if any(re.search(r"layer(_with_weights)?-\d+", k) for k in keys) else "module"


def p_flav_kernel_suffix_only(prefix):
    # Keras 3's Dense names its kernel '_kernel': nothing else needed
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    if any("layer_with_weights" in k for k in keys):
        return "keras2"
    return "keras3" if any(k.split("/")[-3] == "_kernel" for k in keys if "/" in k) else "module"


# ----- 15.1 right, new


def p_flav_right_parts(prefix):
    keys = _p_keys(prefix)
    if _GRAPH_KEY not in keys:
        return "tf1"
    parts = {part for key in keys for part in key.split("/")}
    if any(re.fullmatch(r"layer(_with_weights)?-\d+", part) for part in parts):
        return "keras2"
    if parts & {"_functional", "_operations", "_layers", "_kernel", "_trainable_variables"}:
        return "keras3"
    return "module"


def p_flav_right_reader(prefix):
    names = tf.compat.v1.train.NewCheckpointReader(os.fspath(prefix)).get_variable_to_dtype_map()
    if _GRAPH_KEY not in names:
        return "tf1"
    text = " ".join(names)
    if re.search(r"(^|/| )layer(_with_weights)?-\d+/", text):
        return "keras2"
    return "keras3" if re.search(r"/(_functional|_operations|_layers|_kernel|_trainable_variables)/",
                                 text) else "module"


def p_flav_right_object_graph_helper(prefix):
    from helpers.errors import NameBasedCheckpointError
    from helpers.object_graph import read_object_graph

    try:
        edges = {edge.name for edge in read_object_graph(os.fspath(prefix), include_empty=True).edges}
    except NameBasedCheckpointError:
        return "tf1"
    if any(re.fullmatch(r"layer(_with_weights)?-\d+", edge) for edge in edges):
        return "keras2"
    return "keras3" if edges & {"_functional", "_operations", "_layers", "_kernel"} else "module"


FLAV_WRONG_AGAIN = [p_flav_notebook_identify, p_flav_identify_fallback, p_flav_module_attribute,
                    p_flav_functional_words, p_flav_underscore_means_keras3, p_flav_iterations_means_keras2,
                    p_flav_operations_index, p_flav_kernel_suffix_only]
FLAV_RIGHT_AGAIN = [p_flav_right_parts, p_flav_right_reader, p_flav_right_object_graph_helper]


@pytest.mark.parametrize("answer", _cases(FLAV_WRONG_AGAIN, HOLES))
def test_prompt_checkpoint_flavour_wrong_again(answer):
    _hint_fits(_strict_rejected(ex15.check_checkpoint_flavour, answer))


@pytest.mark.parametrize("answer", _cases(FLAV_RIGHT_AGAIN, HOLES))
def test_prompt_checkpoint_flavour_right_again(answer):
    _strict_accepted(ex15.check_checkpoint_flavour, answer)


def _hint_fits(hint):
    """One short block from the check itself: not a raw error, not the learner's traceback."""
    assert hint.startswith("Exercise 15.") and len(hint) <= 300, hint
    assert "Traceback" not in hint and "your code raised" not in hint, hint


# ----- 15.2 wrong (the prompt: the Keras version the file records or None, and whether it holds
# optimizer values; any Keras 2 or 3 model or weights file, under any name; zipfile, h5py, json)


def _p_zip_weights(path):
    import io
    import zipfile

    import h5py

    archive = zipfile.ZipFile(path)
    return archive, h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r")


def p_facts_suffix(path):
    import json
    import zipfile

    import h5py

    path = str(path)
    if path.endswith(".keras"):
        with zipfile.ZipFile(path) as archive:
            version = json.loads(archive.read("metadata.json"))["keras_version"]
        _, weights = _p_zip_weights(path)
        return version, "optimizer" in weights
    with h5py.File(path, "r") as file:
        return file.attrs.get("keras_version"), "optimizer_weights" in file or "optimizer" in file


def p_facts_running_keras(path):
    # "the version is the Keras I have"
    _, optimizer = p_facts_right_first_bytes(path)
    return keras.__version__, optimizer


def p_facts_major_only(path):
    version, optimizer = p_facts_right_first_bytes(path)
    return (version.split(".")[0] if version else None), optimizer


def p_facts_compile_config(path):
    import json
    import zipfile

    import h5py

    version, _ = p_facts_right_first_bytes(path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return version, bool(json.loads(archive.read("config.json")).get("compile_config"))
    with h5py.File(path, "r") as file:
        return version, "training_config" in file.attrs


def p_facts_optimizer_key_only(path):
    # the zip's group is 'optimizer': the same name everywhere?
    import zipfile

    import h5py

    version, _ = p_facts_right_first_bytes(path)
    if zipfile.is_zipfile(path):
        _, weights = _p_zip_weights(path)
        return version, "optimizer" in weights
    with h5py.File(path, "r") as file:
        return version, "optimizer" in file


def p_facts_weights_file_has_none(path):
    # "a weights file holds weights, not optimizer state"
    version, optimizer = p_facts_right_first_bytes(path)
    return version, False if str(path).endswith(".weights.h5") else optimizer


def p_facts_not_only_layers(path):
    # anything besides the model's own weights is optimizer state
    import zipfile

    import h5py

    version, _ = p_facts_right_first_bytes(path)
    if zipfile.is_zipfile(path):
        _, weights = _p_zip_weights(path)
        return version, any(group != "layers" for group in weights)
    with h5py.File(path, "r") as file:
        return version, any(group not in ("layers", "model_weights") for group in file)


def p_facts_model_config_version(path):
    # the version from the model's config (Keras 2 writes it there)
    import json
    import zipfile

    import h5py

    _, optimizer = p_facts_right_first_bytes(path)
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("config.json")).get("keras_version"), optimizer
    with h5py.File(path, "r") as file:
        config = file.attrs.get("model_config")
        return (json.loads(config).get("keras_version") if config else None), optimizer


def p_facts_count(path):
    import zipfile

    import h5py

    version, _ = p_facts_right_first_bytes(path)
    names = []
    if zipfile.is_zipfile(path):
        _, weights = _p_zip_weights(path)
        weights.visit(names.append)
    else:
        with h5py.File(path, "r") as file:
            file.visit(names.append)
    return version, sum(name.startswith("optimizer") for name in names)


def p_facts_guess_weights_version(path):
    # a .weights.h5 has the Keras 3 layout, so Keras 3 wrote it
    version, optimizer = p_facts_right_first_bytes(path)
    return (keras.__version__ if version is None else version), optimizer


def p_facts_identify(path):
    info = _NOTEBOOK_IDENTIFY(str(path))
    return info.written_by.get("Keras"), bool(info.holds.get("optimizer state"))


def p_facts_read_write_mode(path):
    # 'r+' "to be able to read attributes"
    import zipfile

    import h5py

    if zipfile.is_zipfile(path):
        return p_facts_right_first_bytes(path)
    with h5py.File(path, "r+") as file:
        file.attrs["checked"] = True
    return p_facts_right_first_bytes(path)


# ----- 15.2 right


def p_facts_right_first_bytes(path):
    import io
    import json
    import zipfile

    import h5py

    with open(path, "rb") as file:
        head = file.read(4)
    if head == b"PK\x03\x04":
        with zipfile.ZipFile(path) as archive:
            version = json.loads(archive.read("metadata.json")).get("keras_version")
            with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as weights:
                names = []
                weights.visititems(lambda name, item: names.append(name)
                                   if isinstance(item, h5py.Dataset) else None)
        return version, any(name.startswith("optimizer/") for name in names)
    with h5py.File(path, "r") as file:
        version = file.attrs.get("keras_version")
        names = []
        file.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
    if isinstance(version, bytes):
        version = version.decode("utf-8")
    return version, any(name.startswith(("optimizer/", "optimizer_weights/")) for name in names)


def p_facts_right_is_hdf5(path):
    import json
    import zipfile

    import h5py

    path = pathlib.Path(path)
    if h5py.is_hdf5(path):
        with h5py.File(path, "r") as file:
            version = file.attrs.get("keras_version", None)
            groups = [file[name] for name in ("optimizer", "optimizer_weights") if name in file]
            arrays = []
            for group in groups:
                group.visititems(lambda _, item: arrays.append(1) if isinstance(item, h5py.Dataset) else None)
            return (None if version is None else str(version)), len(arrays) > 0
    with zipfile.ZipFile(path) as archive:
        metadata = json.loads(archive.read("metadata.json"))
        _, weights = _p_zip_weights(path)
        with weights:
            count = []
            if "optimizer" in weights:
                weights["optimizer"].visititems(lambda _, item: count.append(isinstance(item, h5py.Dataset)))
            return metadata.get("keras_version"), any(count)


def p_facts_right_extract(path):
    import json
    import tempfile
    import zipfile

    import h5py

    def optimizer_arrays(file):
        found = []
        file.visititems(lambda name, item: found.append(name)
                        if isinstance(item, h5py.Dataset) and name.split("/")[0] in ("optimizer", "optimizer_weights")
                        else None)
        return bool(found)

    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive, tempfile.TemporaryDirectory() as scratch:
            archive.extract("model.weights.h5", scratch)
            with h5py.File(os.path.join(scratch, "model.weights.h5"), "r") as file:
                optimizer = optimizer_arrays(file)
            return json.loads(archive.read("metadata.json"))["keras_version"], optimizer
    with h5py.File(path, "r") as file:
        version = file.attrs["keras_version"] if "keras_version" in file.attrs else None
        return version, optimizer_arrays(file)


FACTS_WRONG = [p_facts_suffix, p_facts_running_keras, p_facts_major_only, p_facts_compile_config,
               p_facts_optimizer_key_only, p_facts_weights_file_has_none, p_facts_not_only_layers,
               p_facts_model_config_version, p_facts_count, p_facts_guess_weights_version,
               p_facts_identify, p_facts_read_write_mode]
FACTS_RIGHT = [p_facts_right_first_bytes, p_facts_right_is_hdf5, p_facts_right_extract]


@pytest.mark.parametrize("answer", _cases(FACTS_WRONG, HOLES))
def test_prompt_keras_file_facts_wrong(answer):
    _hint_fits(_strict_rejected(ex15.check_keras_file_facts, answer))


@pytest.mark.parametrize("answer", _cases(FACTS_RIGHT, HOLES))
def test_prompt_keras_file_facts_right(answer):
    _strict_accepted(ex15.check_keras_file_facts, answer)


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
