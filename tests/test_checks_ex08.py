"""The checks of notebook 08: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex08
from helpers.keras_files import describe_keras_file, missing_from_file


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
         r"your code raised ValueError(.|\n)*must end in `\.weights\.h5`"),
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
    missing = set(missing_from_file(model, weights_path))
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
    for answer in (load_body_reference, load_body_compare_values, load_body_as_set):
        ex08.check_load_body(answer)
        assert "✔ Exercise 08.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (load_body_plain, "your function raised.*skip_mismatch=True"),
        (load_body_report_nothing, r"for a new head, you reported \[\], but the weights not loaded are"),
        (load_body_layer_names, r"return the variables' paths \(variable.path"),
        (load_body_everything, "for a new head, you reported"),
        (load_body_forgets_to_load, "weights that fit were not loaded from the file"),
        (load_body_by_shape, "for a wider middle layer, you reported"),
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
