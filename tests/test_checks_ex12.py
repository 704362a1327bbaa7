"""The checks of notebook 12: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os
import pathlib

import keras
import numpy as np
import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, ex12


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 12.1


def best_reference(folder):
    return keras.callbacks.ModelCheckpoint(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
                                           save_best_only=True, save_weights_only=True)


def best_pathlib(folder):
    return keras.callbacks.ModelCheckpoint(str(pathlib.Path(folder) / "best.weights.h5"), "val_auc", verbose=0,
                                           save_best_only=True, save_weights_only=True, mode="max", save_freq="epoch")


def best_fstring(folder):
    callback = keras.callbacks.ModelCheckpoint(filepath=f"{folder}/best.weights.h5", save_weights_only=True,
                                               monitor="val_auc", save_best_only=True, mode="max")
    return callback


def test_best_checkpoint_accepts(capsys):
    for answer in (best_reference, best_pathlib, best_fstring):
        ex12.check_best_checkpoint(answer)
        assert "✔ Exercise 12.1 passed" in capsys.readouterr().out


def _mc(name="best.weights.h5", **overrides):
    settings = dict(monitor="val_auc", mode="max", save_best_only=True, save_weights_only=True)
    settings.update(overrides)
    return lambda folder: keras.callbacks.ModelCheckpoint(os.path.join(folder, name), **settings)


@pytest.mark.parametrize("answer, hint", [
    (_mc(mode="auto"), "mode='max'"),
    (_mc(mode="min"), "mode='max'"),
    (_mc(monitor="val_loss", mode="min"), "monitor='val_auc'"),
    (_mc(save_best_only=False), "save_best_only=True"),
    (_mc(name="best.keras", save_weights_only=False), "best.weights.h5 inside"),
    (_mc(save_weights_only=False), "save_weights_only=True"),
    (_mc(name="best-{epoch}.weights.h5"), "best.weights.h5 inside"),
    (_mc(save_freq=1), "save_freq='epoch'"),
    (lambda folder: keras.callbacks.EarlyStopping(monitor="val_auc", mode="max", restore_best_weights=True),
     "return a keras.callbacks.ModelCheckpoint"),
])
def test_best_checkpoint_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint) as caught:
        ex12.check_best_checkpoint(answer)
    assert len(str(caught.value)) <= 320


def test_best_checkpoint_not_done():
    with pytest.raises(ExerciseNotDone):
        ex12.check_best_checkpoint(not_done)


# --------------------------------------------------------------------------- 12.2


class PeakBase(keras.layers.Layer):
    def build(self, input_shape):
        self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gain")
        self.peak = np.zeros(input_shape[-1], dtype="float32")

    def observe(self, batch):
        self.peak = np.maximum(self.peak, np.max(batch, axis=0))

    def call(self, inputs):
        return inputs * self.gain


def peak_class(save, load):
    return type("RunningPeak", (PeakBase,), {"save_own_variables": save, "load_own_variables": load})


def save_reference(self, store):
    super(type(self), self).save_own_variables(store)
    store["peak"] = self.peak


def load_reference(self, store):
    super(type(self), self).load_own_variables({k: store[k] for k in store.keys() if k != "peak"})
    self.peak = np.array(store["peak"])


def save_by_hand(self, store):
    store["0"] = self.gain.numpy()
    store["peak_values"] = np.asarray(self.peak)


def load_by_hand(self, store):
    self.gain.assign(store["0"][()])
    self.peak = store["peak_values"][()].astype("float32")


def save_list(self, store):
    store["0"] = self.gain
    store["max"] = list(map(float, self.peak))


def load_list(self, store):
    self.gain.assign(np.asarray(store["0"]))
    self.peak = np.asarray(store["max"], dtype="float32")


def test_peak_hooks_accept(capsys):
    for save, load in ((save_reference, load_reference), (save_by_hand, load_by_hand), (save_list, load_list)):
        ex12.check_peak_hooks(peak_class(save, load))
        assert "✔ Exercise 12.2 passed" in capsys.readouterr().out


def load_whole_store(self, store):
    super(type(self), self).load_own_variables(store)
    self.peak = np.array(store["peak"])


def save_collide(self, store):
    super(type(self), self).save_own_variables(store)
    store["0"] = self.peak  # the key of the layer's first weight


def load_collide(self, store):
    super(type(self), self).load_own_variables(store)
    self.peak = np.array(store["0"])


def save_only_peak(self, store):
    store["peak"] = self.peak


def load_only_peak(self, store):
    self.peak = np.array(store["peak"])


def load_forgets_peak(self, store):
    super(type(self), self).load_own_variables({k: store[k] for k in store.keys() if k != "peak"})


def save_zeros(self, store):
    super(type(self), self).save_own_variables(store)
    store["peak"] = np.zeros_like(self.peak)


def save_nothing_extra(self, store):
    super(type(self), self).save_own_variables(store)


def load_nothing_extra(self, store):
    super(type(self), self).load_own_variables(store)


@pytest.mark.parametrize("save, load, hint", [
    (save_reference, load_whole_store, "expected 1 variables"),
    (save_collide, load_collide, "name already exists"),
    (save_only_peak, load_only_peak, "gain is not the saved one"),
    (save_reference, load_forgets_peak, "peak is"),
    (save_zeros, load_reference, "peak is"),
    (save_nothing_extra, load_nothing_extra, "peak is"),
])
def test_peak_hooks_reject(save, load, hint):
    with pytest.raises(CheckFailed, match=hint) as caught:
        ex12.check_peak_hooks(peak_class(save, load))
    assert len(str(caught.value)) <= 600


def test_peak_hooks_not_done():
    with pytest.raises(ExerciseNotDone):
        ex12.check_peak_hooks(peak_class(not_done, not_done))


# --------------------------------------------------------------------------- 12.3


def optimizer_reference(model, path):
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)


def optimizer_trainable_weights(model, path):
    model.optimizer.build(model.trainable_weights)
    model.load_weights(str(path))


def optimizer_by_list(model, path):
    variables = [v for layer in model.layers for v in layer.trainable_variables]
    model.optimizer.build(variables)
    model.load_weights(pathlib.Path(path))


def test_load_with_optimizer_accepts(capsys):
    for answer in (optimizer_reference, optimizer_trainable_weights, optimizer_by_list):
        ex12.check_load_with_optimizer(answer)
        assert "✔ Exercise 12.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer, hint", [
    (lambda model, path: model.load_weights(path), "Skipping variable loading for optimizer"),
    (lambda model, path: (model.optimizer.build(model.weights), model.load_weights(path)), "Skipping"),
    (lambda model, path: (model.optimizer.build(model.layers[0].trainable_variables), model.load_weights(path)),
     "Skipping"),
    (lambda model, path: (model.load_weights(path), model.optimizer.build(model.trainable_variables)),
     "Skipping"),
    (lambda model, path: model.optimizer.build(model.trainable_variables), "does not hold the saved value"),
    (lambda model, path: model.set_weights(keras.models.clone_model(model).get_weights()),
     "does not hold the saved value"),
])
def test_load_with_optimizer_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex12.check_load_with_optimizer(answer)


def test_load_with_optimizer_not_done():
    with pytest.raises(ExerciseNotDone):
        ex12.check_load_with_optimizer(not_done)
