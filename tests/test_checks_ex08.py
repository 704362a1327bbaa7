"""The checks of notebook 08: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os
import pathlib
import re
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex08, forget_hints
from helpers.keras_files import describe_keras_file, missing_from_file


@pytest.fixture(autouse=True)
def _first_steps():
    """Every test starts from the first step of each stepped hint."""
    forget_hints()
    yield
    forget_hints()


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 08.1


def callback_reference(folder):
    return keras.callbacks.ModelCheckpoint(os.path.join(folder, "epoch-{epoch:03d}.weights.h5"), save_weights_only=True)


def callback_with_loss_in_name(folder):
    return keras.callbacks.ModelCheckpoint(
        f"{folder}/ck-{{epoch:02d}}-{{loss:.3f}}.weights.h5", save_weights_only=True, save_freq="epoch"
    )


def callback_pathlib(folder):
    return keras.callbacks.ModelCheckpoint(str(pathlib.Path(folder) / "e{epoch}.weights.h5"), save_weights_only=True, verbose=0)


def test_checkpoint_callback_accepts(capsys):
    for answer in (callback_reference, callback_with_loss_in_name, callback_pathlib):
        ex08.check_make_checkpoint_callback(answer)
        assert "✔ Exercise 08.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (lambda f: keras.callbacks.ModelCheckpoint(os.path.join(f, "model.weights.h5"), save_weights_only=True),
         r"wrote 1 file\(s\).*put the epoch number in the name"),
        (lambda f: keras.callbacks.ModelCheckpoint(os.path.join(f, "model-{epoch}.keras")), "whole models, not weights"),
        (lambda f: keras.callbacks.ModelCheckpoint(os.path.join(f, "model-{epoch}.weights.h5")),
         "legacy whole-model HDF5.*save_weights_only=True"),
        (lambda f: keras.callbacks.ModelCheckpoint(os.path.join(f, "model-{epoch}"), save_weights_only=True),
         r"refused the file name: with save_weights_only=True it must end in \.weights\.h5"),
        (lambda f: keras.callbacks.ModelCheckpoint("model-{epoch}.weights.h5", save_weights_only=True),
         "nothing was written in the folder"),
        (lambda f: keras.callbacks.ModelCheckpoint(f + "-{epoch}.weights.h5", save_weights_only=True),
         "nothing was written in the folder"),
        (lambda f: keras.callbacks.BackupAndRestore(f), "should return a keras.callbacks.ModelCheckpoint"),
    ],
)
def test_checkpoint_callback_rejects(answer, hint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an answer that ignores the folder writes here
    with pytest.raises(CheckFailed, match=hint):
        ex08.check_make_checkpoint_callback(answer)


def test_checkpoint_callback_not_done():
    with pytest.raises(ExerciseNotDone):
        ex08.check_make_checkpoint_callback(not_done)


# --------------------------------------------------------------------------- 08.2


class NormalizerBase(keras.layers.Layer):
    def update(self, batch):
        n = tf.cast(self.count, tf.float32)
        self.mean.assign((self.mean * n + tf.reduce_mean(batch, axis=0)) / (n + 1.0))
        self.count.assign_add(1)

    def call(self, x):
        return (x - self.mean) * self.gain


def normalizer(build):
    return type("Normalizer", (NormalizerBase,), {"build": build})


def build_reference(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
    self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")


def build_keras_variables(self, input_shape):
    features = input_shape[-1]
    self.count = keras.Variable(0, dtype="int64", trainable=False, name="count")
    self.gain = keras.Variable(np.ones(features, dtype="float32"), name="gain")
    self.mean = keras.Variable(np.zeros(features, dtype="float32"), trainable=False, name="mean")


def build_initializer_objects(self, input_shape):
    self.count = self.add_weight(shape=[], dtype=tf.int64, initializer=keras.initializers.Zeros(), trainable=False)
    self.mean = self.add_weight(shape=[input_shape[-1]], initializer=keras.initializers.Zeros(), trainable=False)
    self.gain = self.add_weight(shape=[input_shape[-1]], initializer=keras.initializers.Ones())


def build_plain_tf_mean(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
    self.mean = tf.Variable(tf.zeros(features), trainable=False)
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")


def build_trainable_mean(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
    self.mean = self.add_weight(shape=(features,), initializer="zeros", name="mean")
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")


def build_float_count(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
    self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count")


def build_python_count(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
    self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
    self.count = 0


def build_zero_gain(self, input_shape):
    features = input_shape[-1]
    self.gain = self.add_weight(shape=(features,), initializer="zeros", name="gain")
    self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")


def build_scalar_gain(self, input_shape):
    self.gain = self.add_weight(shape=(), initializer="ones", name="gain")
    self.mean = self.add_weight(shape=(input_shape[-1],), initializer="zeros", trainable=False, name="mean")
    self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")


def test_normalizer_accepts(capsys):
    for build in (build_reference, build_keras_variables, build_initializer_objects):
        ex08.check_normalizer(normalizer(build))
        assert "✔ Exercise 08.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "build, hint",
    [
        (build_plain_tf_mean, "mean is not among the layer's weights"),
        (build_trainable_mean, "only gain should be trainable"),
        (build_float_count, "dtype int64"),
        (build_python_count, "count is not among the layer's weights"),
        (build_zero_gain, "gain should start at 1"),
        (build_scalar_gain, r"one value per feature"),
    ],
)
def test_normalizer_rejects(build, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex08.check_normalizer(normalizer(build))


def test_normalizer_not_done():
    with pytest.raises(ExerciseNotDone):
        ex08.check_normalizer(normalizer(not_done))


# --------------------------------------------------------------------------- 08.3


def load_body_reference(model, weights_path):
    skipped = missing_from_file(model, weights_path, include_optimizer=False)
    model.load_weights(weights_path, skip_mismatch=True)
    return skipped


def load_body_compare_values(model, weights_path):
    before = {v.path: v.numpy().copy() for v in model.weights}
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v in model.weights if np.array_equal(v.numpy(), before[v.path])]


def load_body_as_set(model, weights_path):
    missing = set(missing_from_file(model, weights_path, include_optimizer=False))
    model.load_weights(weights_path, skip_mismatch=True)
    return missing


def load_body_plain(model, weights_path):
    model.load_weights(weights_path)
    return []


def load_body_report_nothing(model, weights_path):
    model.load_weights(weights_path, skip_mismatch=True)
    return []


def load_body_layer_names(model, weights_path):
    skipped = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    return sorted({path.split("/")[-2] for path in skipped})


def load_body_everything(model, weights_path):
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v in model.weights]


def load_body_forgets_to_load(model, weights_path):
    return missing_from_file(model, weights_path)


def load_body_by_shape(model, weights_path):
    model.load_weights(weights_path, skip_mismatch=True)
    saved_shapes = {weight.shape for weight in describe_keras_file(weights_path).weights}
    # one variable at a time: misses a skipped layer whose bias kept its shape
    return [v.path for v in model.weights if tuple(v.shape) not in saved_shapes]


def test_load_body_accepts(capsys):
    for answer in (load_body_reference, load_body_as_set):  # optimizer slots are not the model's weights
        ex08.check_load_body(answer)
        assert "✔ Exercise 08.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (load_body_plain, "your function raised.*skip_mismatch=True"),
        # "unchanged means not loaded": wrong when the file holds a value the model has already (issue 23)
        (load_body_compare_values, "you reported weights that were loaded.*judge by the shapes"),
        (load_body_report_nothing, r"for a new head, your list misses weights that were not loaded"),
        (load_body_layer_names, r"return the variables' paths \(variable.path"),
        (load_body_everything, "for a new head, you reported weights that were loaded"),
        (load_body_forgets_to_load, "weights that fit were not loaded from the file"),
        (load_body_by_shape, "for a wider middle layer, your list misses weights that were not loaded"),
    ],
)
def test_load_body_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex08.check_load_body(answer)


def test_load_body_not_done():
    with pytest.raises(ExerciseNotDone):
        ex08.check_load_body(not_done)


# --------------------------------------------------------------------------- 08.4


def make_clip(get_config=None, package: str | None = "exercises", name: str | None = None):
    def __init__(self, bounds, **kwargs):
        keras.layers.Layer.__init__(self, **kwargs)
        self.bounds = np.asarray(bounds, dtype="float32")

    def call(self, x):
        return tf.clip_by_value(x, self.bounds[0], self.bounds[1])

    body = {"__init__": __init__, "call": call}
    if get_config is not None:
        body["get_config"] = get_config
    cls = type("Clip", (keras.layers.Layer,), body)
    if package is not None:
        cls = keras.saving.register_keras_serializable(package=package, name=name)(cls)
    return cls


def config_reference(self):
    return {**keras.layers.Layer.get_config(self), "bounds": self.bounds.tolist()}


def config_update(self):
    config = keras.layers.Layer.get_config(self)
    config.update(bounds=[float(b) for b in self.bounds])
    return config


def config_array(self):
    return {**keras.layers.Layer.get_config(self), "bounds": self.bounds}


def config_dict_call(self):
    return dict(keras.layers.Layer.get_config(self), bounds=list(map(float, self.bounds)))


def config_without_base(self):
    return {"bounds": self.bounds.tolist()}


def config_wrong_key(self):
    return {**keras.layers.Layer.get_config(self), "bound": self.bounds.tolist()}


def test_clip_accepts(capsys):
    for get_config, name in ((config_reference, None), (config_update, "Clip"), (config_dict_call, None)):
        ex08.check_clip(make_clip(get_config, name=name))  # registered just before its check, as in a notebook
        assert "✔ Exercise 08.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "cls, hint",
    [
        (lambda: make_clip(None), "Write get_config"),
        (lambda: make_clip(config_without_base), r"start get_config from super\(\)\.get_config\(\)"),
        (lambda: make_clip(config_reference, package=None), "registered as 'Clip'"),
        (lambda: make_clip(config_reference, package="course"), "registered as 'course>Clip'"),
        (lambda: make_clip(config_wrong_key), "load_model failed"),
        (lambda: make_clip(config_array), "load_model failed.*plain data"),
    ],
)
def test_clip_rejects(cls, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex08.check_clip(cls())


def test_clip_not_done():
    with pytest.raises(ExerciseNotDone):
        ex08.check_clip(make_clip(not_done))


# =========================================================================== Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and right ones written differently from the reference,
# from the exercise prompts alone, before reading helpers/checks/ex08.py. Every run is bounded
# by a watchdog and must take under 20 s; every hint must be short and free of temporary paths.

import tempfile  # noqa: E402

from tests.attack_harness import accepted, marked  # noqa: E402
from tests.attack_harness import rejected as _rejected  # noqa: E402


def rejected(check, answer) -> str:
    """``attack_harness.rejected``, and the hint at most 300 characters with its "Exercise NN.N: " prefix."""
    message = _rejected(check, answer)
    assert len(message) <= 300, f"{len(message)} characters with the prefix: {message}"
    return message


# What today's check gets wrong (strict xfails: remove an entry when its check is fixed).
KNOWN_08 = {}

CP = keras.callbacks.ModelCheckpoint


def known_false_pass(answer, reason):
    return pytest.param(answer, marks=pytest.mark.xfail(strict=True, reason=reason), id=answer.__name__)


@pytest.fixture(autouse=False)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- 08.1 attack


def cb_full_model(folder):
    return CP(os.path.join(folder, "epoch-{epoch}.keras"))


def cb_no_epoch_in_name(folder):
    return CP(os.path.join(folder, "weights.weights.h5"), save_weights_only=True)


def cb_save_best_only_default_monitor(folder):
    return CP(os.path.join(folder, "e{epoch}.weights.h5"), save_weights_only=True, save_best_only=True)


def cb_save_best_only_on_loss(folder):
    return CP(os.path.join(folder, "e{epoch}.weights.h5"), save_weights_only=True, save_best_only=True,
              monitor="loss")


def cb_save_freq_two_batches(folder):
    return CP(os.path.join(folder, "e{epoch}.weights.h5"), save_weights_only=True, save_freq=2)


def cb_save_freq_every_batch(folder):
    return CP(os.path.join(folder, "e{epoch}.weights.h5"), save_weights_only=True, save_freq=1)


def cb_hard_coded_folder(folder):
    return CP(os.path.join(tempfile.gettempdir(), "checkpoints", "model-{epoch:02d}.weights.h5"),
              save_weights_only=True)


def cb_missing_separator(folder):
    return CP(folder + "epoch{epoch}.weights.h5", save_weights_only=True)


def cb_epoch_in_subfolder(folder):
    return CP(os.path.join(folder, "epoch{epoch}", "model.weights.h5"), save_weights_only=True)


def cb_backup_and_restore(folder):
    return keras.callbacks.BackupAndRestore(folder)


def cb_weights_only_false_h5(folder):
    return CP(os.path.join(folder, "e{epoch}.weights.h5"), save_weights_only=False)


def cb_next_to_folder(folder):
    return CP(os.path.join(os.path.dirname(os.path.abspath(folder)), "e{epoch}.weights.h5"),
              save_weights_only=True)


def cb_right_pathlib(folder):
    return CP(pathlib.Path(folder) / "w_{epoch:04d}.weights.h5", save_weights_only=True)


def cb_right_makedirs_explicit_settings(folder):
    os.makedirs(folder, exist_ok=True)
    return CP(f"{folder}/model.{{epoch:02d}}.weights.h5", save_weights_only=True, save_best_only=False,
              save_freq="epoch", verbose=0)


def cb_right_loss_in_name(folder):
    return CP(os.path.join(folder, "ep{epoch}-loss{loss:.4f}.weights.h5"), monitor="loss",
              save_weights_only=True)


@pytest.mark.parametrize("answer", marked([
    cb_full_model,
    cb_no_epoch_in_name,
    cb_save_best_only_default_monitor,
    cb_save_best_only_on_loss,
    cb_save_freq_two_batches,
    cb_save_freq_every_batch,
    cb_hard_coded_folder,
    cb_missing_separator,
    cb_epoch_in_subfolder,
    cb_backup_and_restore,
    cb_weights_only_false_h5,
    cb_next_to_folder,
], KNOWN_08))
def test_attack_checkpoint_callback_rejects(answer, in_tmp):
    rejected(ex08.check_make_checkpoint_callback, answer)


@pytest.mark.parametrize("answer", [cb_right_pathlib, cb_right_makedirs_explicit_settings, cb_right_loss_in_name],
                         ids=lambda f: f.__name__)
def test_attack_checkpoint_callback_accepts(answer, in_tmp):
    accepted(ex08.check_make_checkpoint_callback, answer)


# --------------------------------------------------------------------------- 08.2 attack


class _NormalizerGiven(keras.layers.Layer):
    """The prompt's `update` and `call`; each answer below writes only `build`."""

    def update(self, batch):
        n = tf.cast(self.count, tf.float32)
        self.mean.assign((self.mean * n + tf.reduce_mean(batch, axis=0)) / (n + 1.0))
        self.count.assign_add(1)

    def call(self, x):
        return (x - self.mean) * self.gain


class NormCountPythonInt(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = tf.Variable(0, dtype=tf.int64, trainable=False)


class NormMeanTfVariable(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = tf.Variable(tf.zeros(features), trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormMeanTrainable(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormCountFloat(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count")


class NormCountInt32(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int32", trainable=False, name="count")


class NormCountTrainable(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", name="count")


class NormGainZeros(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="zeros", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormGainRandom(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), name="gain")  # default glorot_uniform
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormHardCodedFeatures(_NormalizerGiven):
    def build(self, input_shape):
        self.gain = self.add_weight(shape=(2,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(2,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormScalarGainAndMean(_NormalizerGiven):
    def build(self, input_shape):
        self.gain = self.add_weight(shape=(), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormCountShapeOne(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(1,), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormGainFrozen(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", trainable=False, name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int64", trainable=False, name="count")


class NormCountStartsAtOne(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer="ones", name="gain")
        self.mean = self.add_weight(shape=(features,), initializer="zeros", trainable=False, name="mean")
        self.count = self.add_weight(shape=(), initializer="ones", dtype="int64", trainable=False, name="count")


class NormRightNoNamesInitializerObjects(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = self.add_weight(shape=(features,), initializer=keras.initializers.Ones())
        self.mean = self.add_weight(shape=(features,), initializer=keras.initializers.Zeros(), trainable=False)
        self.count = self.add_weight(shape=(), initializer=keras.initializers.Zeros(), dtype=tf.int64,
                                     trainable=False)


class NormRightListShapesConstant(_NormalizerGiven):
    def build(self, input_shape):
        features = int(input_shape[-1])
        self.count = self.add_weight(name="count", shape=[], dtype="int64", initializer="zeros", trainable=False)
        self.mean = self.add_weight(name="mean", shape=[features], initializer=keras.initializers.Constant(0.0),
                                    trainable=False)
        self.gain = self.add_weight(name="gain", shape=[features], initializer=keras.initializers.Constant(1.0),
                                    trainable=True)


class NormRightKerasVariables(_NormalizerGiven):
    def build(self, input_shape):
        features = input_shape[-1]
        self.gain = keras.Variable(np.ones(features, "float32"), name="gain")
        self.mean = keras.Variable(np.zeros(features, "float32"), trainable=False, name="mean")
        self.count = keras.Variable(0, dtype="int64", trainable=False, name="count")


@pytest.mark.parametrize("build", marked([
    NormCountPythonInt, NormMeanTfVariable, NormMeanTrainable, NormCountFloat, NormCountInt32,
    NormCountTrainable, NormGainZeros, NormGainRandom, NormHardCodedFeatures, NormScalarGainAndMean,
    NormCountShapeOne, NormGainFrozen, NormCountStartsAtOne,
], KNOWN_08))
def test_attack_normalizer_rejects(build, in_tmp):
    rejected(ex08.check_normalizer, build)


@pytest.mark.parametrize("build", [NormRightNoNamesInitializerObjects, NormRightListShapesConstant,
                                   NormRightKerasVariables], ids=lambda c: c.__name__)
def test_attack_normalizer_accepts(build, in_tmp):
    accepted(ex08.check_normalizer, build)


# --------------------------------------------------------------------------- 08.3 attack


def body_empty_list_always(model, weights_path):
    model.load_weights(weights_path, skip_mismatch=True)
    return []


def body_unchanged_means_not_loaded(model, weights_path):
    before = [v.numpy().copy() for v in model.weights]
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v, old in zip(model.weights, before) if np.array_equal(v.numpy(), old)]


def body_no_skip_mismatch(model, weights_path):
    model.load_weights(weights_path)
    return []


def body_names_not_paths(model, weights_path):
    missing = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    by_path = {v.path: v for v in model.weights}
    return [by_path[path].name for path in missing]


def body_layer_names(model, weights_path):
    missing = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    return sorted({path.split("/")[0] for path in missing})


def body_trainable_only(model, weights_path):
    missing = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    trainable = {v.path for v in model.trainable_weights}
    return [path for path in missing if path in trainable]


def body_kernels_only(model, weights_path):
    missing = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    return [path for path in missing if path.endswith("kernel")]


def body_reports_but_never_loads(model, weights_path):
    return missing_from_file(model, weights_path)


def body_zeroes_the_rest(model, weights_path):
    missing = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    for v in model.weights:
        if v.path in missing:
            v.assign(np.zeros(v.shape, v.dtype))
    return missing


def body_loads_only_trainable_layers(model, weights_path):
    """Loads through a copy, then copies back only the trainable weights."""
    missing = missing_from_file(model, weights_path)
    values = {v.path: v.numpy() for v in model.weights}
    model.load_weights(weights_path, skip_mismatch=True)
    for v in model.non_trainable_weights:
        v.assign(values[v.path])
    return missing


def body_assumes_only_the_head(model, weights_path):
    """As in the notebook, only the head changed: report its weights."""
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v in model.layers[-1].weights]


def body_hard_coded_file(model, weights_path):
    model.load_weights("model.weights.h5", skip_mismatch=True)
    return missing_from_file(model, "model.weights.h5")


def body_right_marker(model, weights_path):
    """Mark every variable with NaN (or the dtype's max), load, and see which still hold the mark."""
    weights = model.weights
    old = [v.numpy().copy() for v in weights]
    marks = [np.full(v.shape, np.nan if np.issubdtype(o.dtype, np.floating) else np.iinfo(o.dtype).max, o.dtype)
             for v, o in zip(weights, old)]
    for v, mark in zip(weights, marks):
        v.assign(mark)
    model.load_weights(weights_path, skip_mismatch=True)
    missing = []
    for v, mark, value in zip(weights, marks, old):
        if np.array_equal(v.numpy(), mark, equal_nan=np.issubdtype(mark.dtype, np.floating)):
            missing.append(v.path)
            v.assign(value)
    return missing


def body_right_reversed_order(model, weights_path):
    missing = list(reversed(missing_from_file(model, pathlib.Path(weights_path), include_optimizer=False)))
    model.load_weights(pathlib.Path(weights_path), skip_mismatch=True)
    return missing


def body_right_two_markers(model, weights_path):
    """Load twice over two different markers: a value that came from the file is the same both times."""
    weights = model.weights
    old = [v.numpy().copy() for v in weights]
    after = []
    for marker in (1, 2):
        for v, o in zip(weights, old):
            v.assign(np.full(o.shape, 1000 + marker, o.dtype))
        model.load_weights(weights_path, skip_mismatch=True)
        after.append([v.numpy().copy() for v in weights])
    missing = []
    for v, o, a, b in zip(weights, old, *after):
        if not np.array_equal(a, b):
            missing.append(v.path)
            v.assign(o)
    return missing


@pytest.mark.parametrize("answer", marked([
    body_empty_list_always, body_unchanged_means_not_loaded, body_no_skip_mismatch, body_names_not_paths,
    body_layer_names, body_trainable_only, body_kernels_only, body_reports_but_never_loads,
    body_zeroes_the_rest, body_loads_only_trainable_layers, body_assumes_only_the_head, body_hard_coded_file,
], KNOWN_08))
def test_attack_load_body_rejects(answer, in_tmp):
    rejected(ex08.check_load_body, answer)


@pytest.mark.parametrize("answer", [body_right_marker, body_right_reversed_order, body_right_two_markers],
                         ids=lambda f: f.__name__)
def test_attack_load_body_accepts(answer, in_tmp):
    accepted(ex08.check_load_body, answer)


# --------------------------------------------------------------------------- 08.4 attack


@pytest.fixture
def clean_registry():
    """Each answer registers its own `Clip`; put Keras's registry back afterwards."""
    from keras.src.saving import object_registration as registration

    objects = dict(registration.GLOBAL_CUSTOM_OBJECTS)
    names = dict(registration.GLOBAL_CUSTOM_NAMES)
    yield
    registration.GLOBAL_CUSTOM_OBJECTS.clear()
    registration.GLOBAL_CUSTOM_OBJECTS.update(objects)
    registration.GLOBAL_CUSTOM_NAMES.clear()
    registration.GLOBAL_CUSTOM_NAMES.update(names)


def clip_class(get_config, package="exercises", register=True, **register_kwargs):
    class Clip(keras.layers.Layer):
        def __init__(self, bounds, **kwargs):
            super().__init__(**kwargs)
            self.bounds = np.asarray(bounds, dtype="float32")

        def call(self, x):
            return tf.clip_by_value(x, self.bounds[0], self.bounds[1])

    Clip.get_config = get_config
    if register:
        keras.saving.register_keras_serializable(package=package, **register_kwargs)(Clip)
    return Clip


def cfg_right_reference(self):
    return {**keras.layers.Layer.get_config(self), "bounds": self.bounds.tolist()}


def cfg_no_bounds(self):
    return keras.layers.Layer.get_config(self)


def cfg_hard_coded_bounds(self):
    return {**keras.layers.Layer.get_config(self), "bounds": [-1.0, 1.0]}


def cfg_reversed_bounds(self):
    return {**keras.layers.Layer.get_config(self), "bounds": self.bounds[::-1].tolist()}


def cfg_bounds_as_text(self):
    return {**keras.layers.Layer.get_config(self), "bounds": str(self.bounds)}


def cfg_low_only(self):
    return {**keras.layers.Layer.get_config(self), "bounds": [float(self.bounds[0])]}


def cfg_low_high_keys(self):
    return {**keras.layers.Layer.get_config(self), "low": float(self.bounds[0]), "high": float(self.bounds[1])}


def cfg_rounded_bounds(self):
    return {**keras.layers.Layer.get_config(self), "bounds": [round(float(b)) for b in self.bounds]}


def cfg_right_update(self):
    config = super(type(self), self).get_config()
    config.update({"bounds": [float(b) for b in self.bounds]})
    return config


def cfg_right_dict_call(self):
    return dict(keras.layers.Layer.get_config(self), bounds=list(map(float, self.bounds)))


def clip_not_registered():
    return clip_class(cfg_right_reference, register=False)


def clip_default_package():
    Clip = clip_class(cfg_right_reference, register=False)
    keras.saving.register_keras_serializable()(Clip)
    return Clip


def clip_package_typo():
    return clip_class(cfg_right_reference, package="exercise")


def clip_notebook_package():
    return clip_class(cfg_right_reference, package="course")


def clip_registers_another_class():
    """Registers a subclass (the learner decorated a copy), not the class handed to the check."""
    Clip = clip_class(cfg_right_reference, register=False)
    keras.saving.register_keras_serializable(package="exercises")(type("Clip", (Clip,), {}))
    return Clip


def make_wrong(get_config):
    def answer():
        return clip_class(get_config)

    answer.__name__ = f"clip_{get_config.__name__}"
    return answer


def clip_right_update():
    return clip_class(cfg_right_update)


def clip_right_dict_call():
    return clip_class(cfg_right_dict_call)


def clip_right_explicit_name():
    return clip_class(cfg_right_reference, name="Clip")


def clip_numpy_array_in_config():
    """The array itself in the config: Keras cannot rebuild it (verified: load_model raises)."""
    return clip_class(lambda self: {**keras.layers.Layer.get_config(self), "bounds": self.bounds})


@pytest.mark.parametrize("make", marked([
    make_wrong(cfg_no_bounds), make_wrong(cfg_hard_coded_bounds), make_wrong(cfg_reversed_bounds),
    make_wrong(cfg_bounds_as_text), make_wrong(cfg_low_only), make_wrong(cfg_low_high_keys),
    make_wrong(cfg_rounded_bounds), clip_not_registered, clip_default_package, clip_package_typo,
    clip_notebook_package, clip_registers_another_class, clip_numpy_array_in_config,
], KNOWN_08))
def test_attack_clip_rejects(make, clean_registry, in_tmp):
    rejected(ex08.check_clip, make())


@pytest.mark.parametrize("make", [clip_right_update, clip_right_dict_call, clip_right_explicit_name],
                         ids=lambda f: f.__name__)
def test_attack_clip_accepts(make, clean_registry, in_tmp):
    accepted(ex08.check_clip, make())


# =========================================================================== round three (issue 33, 34)
# Written from the prompts alone. 08.1: names ModelCheckpoint refuses (its message must not reach the
# hint cut mid-word); 08.3: optimizer slots counted as the model's weights, "zero, load, see what
# stays zero"; 08.4: a get_config that keeps too little.


def _cb(name, **settings):
    def answer(folder):
        return keras.callbacks.ModelCheckpoint(os.path.join(folder, name), **settings)

    answer.__name__ = "cb3_" + re.sub(r"\W+", "_", f"{name}_{'_'.join(settings)}").strip("_")
    return answer


CB3_WRONG = [
    _cb("epoch-{epoch}.h5", save_weights_only=True),
    _cb("epoch-{epoch}.keras", save_weights_only=True),
    _cb("epoch-{epoch}", save_weights_only=True),
    _cb("epoch-{epoch}.ckpt", save_weights_only=True),
    _cb("epoch-{epoch}"),
    _cb("epoch-{epoch}.weights.h5", save_weights_only=True, save_freq="epochs"),
    _cb("epoch-{epoch}.weights.h5", save_weights_only=True, save_freq=1),
    _cb("weights.h5", save_weights_only=False),
]


@pytest.mark.parametrize("answer", CB3_WRONG, ids=lambda f: f.__name__)
def test_round3_checkpoint_callback_rejects(answer, in_tmp):
    hint = rejected(ex08.check_make_checkpoint_callback, answer)
    assert "…" not in hint and "When using" not in hint, hint  # no raw message, nothing cut


@pytest.mark.parametrize("answer", [_cb("{epoch}.weights.h5", save_weights_only=True),
                                    _cb("w-{epoch:02d}-{loss:.3f}.weights.h5", save_weights_only=True,
                                        save_freq="epoch"),
                                    _cb("e{epoch}.weights.h5", save_weights_only=True, verbose=0)],
                         ids=lambda f: f.__name__)
def test_round3_checkpoint_callback_accepts(answer, in_tmp):
    accepted(ex08.check_make_checkpoint_callback, answer)


def body3_missing_with_slots(model, weights_path):
    """missing_from_file's default counts the optimizer's slots among what was not loaded."""
    skipped = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    return skipped


def body3_all_variables_by_shape(model, weights_path):
    """Every variable Keras tracks (optimizer's too), judged by a shape the file holds."""
    saved = {tuple(w.shape) for w in describe_keras_file(weights_path).weights}
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v in [*model.weights, *model.optimizer.variables] if tuple(v.shape) not in saved]


def body3_zero_then_load(model, weights_path):
    """Zero the model, load, report what is still zero (a zero the file holds is read as 'not loaded')."""
    before = [v.numpy().copy() for v in model.weights]
    for v in model.weights:
        v.assign(np.zeros(v.shape, v.dtype))
    model.load_weights(weights_path, skip_mismatch=True)
    missing = []
    for v, old in zip(model.weights, before):
        if not np.any(v.numpy()):
            missing.append(v.path)
            v.assign(old)
    return missing


def body3_ones_then_load(model, weights_path):
    """The same with ones as the mark: a moving variance or gamma of ones in the file is misread."""
    before = [v.numpy().copy() for v in model.weights]
    for v in model.weights:
        v.assign(np.ones(v.shape, v.dtype))
    model.load_weights(weights_path, skip_mismatch=True)
    missing = []
    for v, old in zip(model.weights, before):
        if np.all(v.numpy() == 1):
            missing.append(v.path)
            v.assign(old)
    return missing


def body3_zero_without_restoring(model, weights_path):
    for v in model.weights:
        v.assign(np.zeros(v.shape, v.dtype))
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v in model.weights if not np.any(v.numpy())]


def body3_zero_kernels_only(model, weights_path):
    """Marks only kernels; a skipped layer's bias and moving statistics go unreported."""
    kernels = [v for v in model.weights if v.path.endswith("kernel")]
    before = [v.numpy().copy() for v in kernels]
    for v in kernels:
        v.assign(np.zeros(v.shape, v.dtype))
    model.load_weights(weights_path, skip_mismatch=True)
    missing = []
    for v, old in zip(kernels, before):
        if not np.any(v.numpy()):
            missing.append(v.path)
            v.assign(old)
    return missing


def body3_slot_names(model, weights_path):
    """Reports the skipped layers' optimizer slots instead of their weights."""
    skipped = missing_from_file(model, weights_path)
    model.load_weights(weights_path, skip_mismatch=True)
    return [path for path in skipped if path.startswith(model.optimizer.name)] or skipped


def body3_model_variables_plus_optimizer(model, weights_path):
    """Compares values before and after over model.variables and the optimizer's."""
    variables = [*model.weights, *model.optimizer.variables]
    before = [v.numpy().copy() for v in variables]
    model.load_weights(weights_path, skip_mismatch=True)
    return [v.path for v, old in zip(variables, before) if np.array_equal(v.numpy(), old)]


BODY3_WRONG = [body3_missing_with_slots, body3_all_variables_by_shape, body3_zero_then_load, body3_ones_then_load,
               body3_zero_without_restoring, body3_zero_kernels_only, body3_slot_names,
               body3_model_variables_plus_optimizer]


@pytest.mark.parametrize("answer", BODY3_WRONG, ids=lambda f: f.__name__)
def test_round3_load_body_rejects(answer, in_tmp):
    rejected(ex08.check_load_body, answer)


def body3_right_layer_shapes(model, weights_path):
    """By layer: a layer whose weights all keep their shapes in the file is loaded, else all reported."""
    missing = missing_from_file(model, weights_path, include_optimizer=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.load_weights(weights_path, skip_mismatch=True)
    return sorted(missing)


def body3_right_nan_marks_weights_only(model, weights_path):
    """Marks with NaN, a value no file of trained weights holds, over model.weights only."""
    before = [v.numpy().copy() for v in model.weights]
    for v in model.weights:
        v.assign(np.full(v.shape, np.nan, v.dtype))
    model.load_weights(weights_path, skip_mismatch=True)
    missing = []
    for v, old in zip(model.weights, before):
        if np.isnan(v.numpy()).all():
            missing.append(v.path)
            v.assign(old)
    return missing


def body3_right_tuple(model, weights_path):
    skipped = tuple(missing_from_file(model, weights_path, include_optimizer=False))
    model.load_weights(weights_path, skip_mismatch=True)
    return skipped


@pytest.mark.parametrize("answer", [body3_right_layer_shapes, body3_right_nan_marks_weights_only, body3_right_tuple],
                         ids=lambda f: f.__name__)
def test_round3_load_body_accepts(answer, in_tmp):
    accepted(ex08.check_load_body, answer)


def _cfg(name, make):
    make.__name__ = name
    return make


CFG3_WRONG = [
    _cfg("cfg3_name_and_bounds", lambda self: {"name": self.name, "bounds": self.bounds.tolist()}),
    _cfg("cfg3_name_dtype_bounds", lambda self: {"name": self.name, "dtype": self.dtype_policy.name,
                                                 "bounds": self.bounds.tolist()}),
    _cfg("cfg3_name_trainable_bounds", lambda self: {"name": self.name, "trainable": self.trainable,
                                                     "bounds": self.bounds.tolist()}),
    _cfg("cfg3_bounds_only", lambda self: {"bounds": self.bounds.tolist()}),
    _cfg("cfg3_base_without_dtype", lambda self: {**{k: v for k, v in keras.layers.Layer.get_config(self).items()
                                                     if k != "dtype"}, "bounds": self.bounds.tolist()}),
    _cfg("cfg3_base_without_trainable", lambda self: {**{k: v for k, v in keras.layers.Layer.get_config(self).items()
                                                         if k != "trainable"}, "bounds": self.bounds.tolist()}),
    _cfg("cfg3_dtype_hard_coded", lambda self: {**keras.layers.Layer.get_config(self), "dtype": "float32",
                                                "bounds": self.bounds.tolist()}),
    _cfg("cfg3_trainable_hard_coded", lambda self: {**keras.layers.Layer.get_config(self), "trainable": True,
                                                    "bounds": self.bounds.tolist()}),
]


@pytest.mark.parametrize("get_config", CFG3_WRONG, ids=lambda f: f.__name__)
def test_round3_clip_rejects(get_config, clean_registry, in_tmp):
    rejected(ex08.check_clip, clip_class(get_config))


CFG3_RIGHT = [
    _cfg("cfg3_right_super_copy", lambda self: dict(keras.layers.Layer.get_config(self),
                                                    bounds=[float(b) for b in self.bounds])),
    _cfg("cfg3_right_update_low_high_list", lambda self: {**keras.layers.Layer.get_config(self),
                                                          "bounds": [float(self.bounds[0]), float(self.bounds[1])]}),
    _cfg("cfg3_right_every_setting_by_hand", lambda self: {
        "name": self.name, "trainable": self.trainable, "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
        "bounds": self.bounds.tolist()}),
]


@pytest.mark.parametrize("get_config", CFG3_RIGHT, ids=lambda f: f.__name__)
def test_round3_clip_accepts(get_config, clean_registry, in_tmp):
    accepted(ex08.check_clip, clip_class(get_config))


def test_every_written_hint_fits_300_characters_with_its_prefix():
    """Each hint text written in helpers/checks/ex08.py (a require's, each step of a Hint), with its
    "Exercise NN.N: " prefix, an f-string's fields counted as one character; the answers above measure
    the texts as shown."""
    from tests.test_checks_framework import CHECKS, hint_texts

    texts = hint_texts(CHECKS / "ex08.py")
    assert texts
    long = [(line, text) for line, number, text in texts if len(f"Exercise {number}: {text}") > 300]
    assert not long, long


# --------------------------------------------------------------------------- review of checks-b (08.3, 08.4)

from tests.attack_harness import stepped  # noqa: E402


def bodyrv_zero_load_restore_zeros(model, weights_path):
    """Zero everything, load, and put back (and report) what still holds zero: a loaded zero bias or
    moving mean is taken for a skipped weight."""
    before = [v.numpy() for v in model.weights]
    for variable in model.weights:
        variable.assign(np.zeros(variable.shape, np.dtype(variable.dtype)))
    model.load_weights(weights_path, skip_mismatch=True)
    out = []
    for variable, value in zip(model.weights, before):
        if not np.any(variable.numpy()):
            variable.assign(value)
            out.append(variable.path)
    return out


def bodyrv_reports_without_loading(model, weights_path):
    return missing_from_file(model, weights_path, include_optimizer=False)


def test_review_load_body_zero_restore_is_told_it_loaded(in_tmp):
    hint = rejected(ex08.check_load_body, bodyrv_zero_load_restore_zeros)
    assert "was loaded (the file holds zeros there), then reset" in hint and "by shapes" in hint
    assert "skip_mismatch=True" not in hint


def test_review_load_body_not_loading_is_stepped(in_tmp):
    first, second = stepped(ex08.check_load_body, bodyrv_reports_without_loading)
    assert "section 4.1" in first and "load_weights(" not in first
    assert "model.load_weights(weights_path, skip_mismatch=True)" in second


def bodyrv_right_probe_after_loading(model, weights_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.load_weights(weights_path, skip_mismatch=True)
    return missing_from_file(model, weights_path, include_optimizer=False)


@pytest.mark.parametrize("answer", [bodyrv_right_probe_after_loading, load_body_reference],
                         ids=lambda f: f.__name__)
def test_review_load_body_right_answers_accepted(answer, in_tmp):
    accepted(ex08.check_load_body, answer)


def cfg_update_without_return(self):
    keras.layers.Layer.get_config(self).update(bounds=self.bounds.tolist())


def test_review_clip_get_config_returning_none(in_tmp):
    hint = rejected(ex08.check_clip, clip_class(cfg_update_without_return))
    assert "get_config returned None: dict.update() returns None; return the dict itself" in hint


def test_review_clip_from_config_dropping_the_settings(in_tmp):
    cls = clip_class(cfg_right_reference)
    cls.from_config = classmethod(lambda klass, config: klass(bounds=config["bounds"], name=config.get("name")))
    hint = rejected(ex08.check_clip, cls)
    assert "from_config (or __init__) dropped them: pass **config on" in hint


def test_review_clip_get_config_without_super_keeps_its_hint(in_tmp):
    """A get_config that writes too little is still told so (the file lacks the settings)."""
    def partial_config(self):
        return {"name": self.name, "bounds": self.bounds.tolist()}

    hint = rejected(ex08.check_clip, clip_class(partial_config))
    assert "get_config keeps too little" in hint


@pytest.mark.parametrize("get_config", [cfg_right_reference, config_update], ids=lambda f: f.__name__)
def test_review_clip_right_answers_accepted(get_config, in_tmp):
    accepted(ex08.check_clip, clip_class(get_config))
