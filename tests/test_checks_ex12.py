"""The checks of notebook 12: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os
import pathlib

import keras
import numpy as np
import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, ex12, forget_hints


@pytest.fixture(autouse=True)
def _fresh_hints():
    """Each test starts from the first step of every stepped hint."""
    forget_hints()
    yield
    forget_hints()


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
    # the prompt: the callback watches models whose metrics it does not know, so say the direction
    (_mc(mode="auto"), "mode='max'"),
    (_mc(mode="min"), "mode='max'"),
    (_mc(monitor="val_loss", mode="min"), "monitor='val_auc'"),
    (_mc(save_best_only=False), "save_best_only=True"),
    (_mc(name="best.keras", save_weights_only=False), "os.path.join.folder, 'best.weights.h5'"),
    (_mc(save_weights_only=False), "save_weights_only=True"),
    (_mc(name="best-{epoch}.weights.h5"), "os.path.join.folder, 'best.weights.h5'"),
    (_mc(save_freq=1), "save_freq='epoch'"),
    (lambda folder: keras.callbacks.EarlyStopping(monitor="val_auc", mode="max", restore_best_weights=True),
     "return a keras.callbacks.ModelCheckpoint"),
])
def test_best_checkpoint_rejects(answer, hint):
    # the first failure names the idea and its section, without the code; the same failure again, the fix
    with pytest.raises(CheckFailed, match="section 8.1") as first:
        ex12.check_best_checkpoint(answer)
    with pytest.raises(CheckFailed, match=hint) as again:
        ex12.check_best_checkpoint(answer)
    assert len(str(first.value)) <= 300 and len(str(again.value)) <= 300
    assert "=" not in str(first.value).replace("!=", "")  # no setting handed over on the first failure


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
    (save_reference, load_whole_store, "got the whole store"),
    (save_collide, load_collide, "a key the base method already wrote"),
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


# =========================================================================== Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and right ones written differently from the reference,
# from the exercise prompts alone, before reading helpers/checks/ex12.py. Every run is bounded by
# a watchdog; a failure of today's check is a strict xfail in HOLES (remove an entry when fixed).

import shutil  # noqa: E402
import time  # noqa: E402

from tests.attack_harness import hint_problems  # noqa: E402
from tests.attack_support import cases, passes, rejects  # noqa: E402

FALSE_PASS = "check accepts this wrong answer: "
RAW = "rejected, but as a raw error with the generic 'read the message, fix that line' hint: "
HOLES: dict[str, str] = {}

MC = keras.callbacks.ModelCheckpoint


def _hint_ok(hint: str) -> None:
    assert not hint_problems(hint), hint_problems(hint)
    assert len(hint) <= 300, f"{len(hint)} characters with the prefix: {hint}"


# --------------------------------------------------------------------------- 12.1 attack


def mc_default_monitor(folder):
    return MC(os.path.join(folder, "best.weights.h5"), save_best_only=True, save_weights_only=True)


def mc_mode_min(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="min",
              save_best_only=True, save_weights_only=True)


def mc_mode_omitted(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc",
              save_best_only=True, save_weights_only=True)


def mc_training_auc(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="auc", mode="max",
              save_best_only=True, save_weights_only=True)


def mc_every_epoch(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_weights_only=True)


def mc_whole_model(folder):
    return MC(os.path.join(folder, "best.keras"), monitor="val_auc", mode="max", save_best_only=True)


def mc_batches(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True, save_freq=1)


def mc_per_epoch_files(folder):
    return MC(os.path.join(folder, "best_{epoch:02d}.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True)


def mc_no_folder(folder):
    return MC("best.weights.h5", monitor="val_auc", mode="max", save_best_only=True, save_weights_only=True)


def mc_capital_auc(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_AUC", mode="max",
              save_best_only=True, save_weights_only=True)


def mc_threshold_from_notebook(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True, initial_value_threshold=0.9)


def mc_val_loss_max(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_loss", mode="max",
              save_best_only=True, save_weights_only=True)


def mc_h5_name(folder):
    return MC(os.path.join(folder, "best.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True)


def mc_right_positional(folder):
    return MC(os.path.join(folder, "best.weights.h5"), "val_auc", 0, True, True, "max", "epoch")


def mc_right_pathlike(folder):
    return MC(filepath=pathlib.Path(folder) / "best.weights.h5", save_weights_only=True, mode="max",
              monitor="val_auc", save_best_only=True, verbose=0, initial_value_threshold=float("-inf"))


def mc_right_slash(folder):
    return keras.callbacks.ModelCheckpoint(f"{folder}/best.weights.h5", monitor="val_auc", mode="max",
                                           save_best_only=True, save_weights_only=True, save_freq="epoch")


def mc_threshold_below_first(folder):
    """A starting threshold a first epoch of 0.61 happens to beat; an AUC of 0.0 does not."""
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True, initial_value_threshold=0.5)


def mc_threshold_zero(folder):
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True, initial_value_threshold=0.0)


def mc_threshold_chance(folder):
    """'Better than chance': AUC 0.5 as the bar."""
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="max",
              save_best_only=True, save_weights_only=True, initial_value_threshold=0.5)


def mc_mode_auto(folder):
    """mode="auto" asks a compiled metric named "auc"; the prompt's models may have none."""
    return MC(os.path.join(folder, "best.weights.h5"), monitor="val_auc", mode="auto",
              save_best_only=True, save_weights_only=True)


MC_WRONG = [mc_default_monitor, mc_mode_min, mc_mode_omitted, mc_mode_auto, mc_threshold_below_first,
            mc_threshold_zero, mc_threshold_chance,
            mc_training_auc, mc_every_epoch, mc_whole_model,
            mc_batches, mc_per_epoch_files, mc_no_folder, mc_capital_auc, mc_threshold_from_notebook,
            mc_val_loss_max, mc_h5_name]


@pytest.mark.parametrize("answer", cases(MC_WRONG, HOLES))
def test_prompt_best_checkpoint_rejects(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    _hint_ok(rejects(ex12.check_best_checkpoint, answer, may_raise=True))
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("answer", cases([mc_right_positional, mc_right_pathlike, mc_right_slash], HOLES))
def test_prompt_best_checkpoint_accepts(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    passes(ex12.check_best_checkpoint, answer)


# --------------------------------------------------------------------------- 12.2 attack


def _peak(save, load):
    """A RunningPeak as the notebook defines it, with the learner's two hooks."""

    class RunningPeak(keras.layers.Layer):
        def build(self, input_shape):
            self.gain = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gain")
            self.peak = np.zeros(input_shape[-1], dtype="float32")

        def observe(self, batch):
            self.peak = np.maximum(self.peak, np.max(batch, axis=0))

        def call(self, inputs):
            return inputs * self.gain

        save_own_variables = save
        load_own_variables = load

    return RunningPeak


def _save_super_peak(self, store):
    super(type(self), self).save_own_variables(store)
    store["peak"] = self.peak


def pk_no_super_on_save():
    def save(self, store):
        store["peak"] = self.peak

    def load(self, store):
        self.peak = np.array(store["peak"])

    return _peak(save, load)


def pk_whole_store_to_super():
    def load(self, store):
        super(type(self), self).load_own_variables(store)
        self.peak = np.array(store["peak"])

    return _peak(_save_super_peak, load)


def pk_load_forgets_gain():
    def load(self, store):
        self.peak = np.array(store["peak"])

    return _peak(_save_super_peak, load)


def pk_peak_over_gain_key():
    def save(self, store):
        super(type(self), self).save_own_variables(store)
        store["0"] = self.peak

    def load(self, store):
        super(type(self), self).load_own_variables(store)
        self.peak = np.array(store["0"])

    return _peak(save, load)


def pk_scalar_peak():
    def save(self, store):
        super(type(self), self).save_own_variables(store)
        store["peak"] = np.array(np.max(self.peak))

    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = np.full(self.gain.shape, float(np.array(store["peak"])), dtype="float32")

    return _peak(save, load)


def pk_merge_on_load():
    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = np.maximum(self.peak, np.array(store["peak"]))

    return _peak(_save_super_peak, load)


def pk_hard_coded_width():
    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = np.zeros(3, dtype="float32")
        self.peak[:] = np.array(store["peak"])[:3]

    return _peak(_save_super_peak, load)


def pk_gain_replaced_by_array():
    def save(self, store):
        store["gain"] = self.gain.numpy()
        store["peak"] = self.peak

    def load(self, store):
        self.gain = np.array(store["gain"])
        self.peak = np.array(store["peak"])

    return _peak(save, load)


def pk_load_resets_peak():
    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = np.zeros_like(np.array(store["peak"]))

    return _peak(_save_super_peak, load)


def pk_right_own_keys():
    def save(self, store):
        store["gain"] = keras.ops.convert_to_numpy(self.gain)
        store["peak"] = np.copy(self.peak)

    def load(self, store):
        self.gain.assign(np.array(store["gain"]))
        self.peak = np.array(store["peak"], dtype="float32")

    return _peak(save, load)


def pk_right_in_place():
    def save(self, store):
        store["peak"] = self.peak
        super(type(self), self).save_own_variables(store)

    def load(self, store):
        super(type(self), self).load_own_variables({key: store[key] for key in ("0",)})
        self.peak[...] = store["peak"]

    return _peak(save, load)


def pk_right_empty_tuple_index():
    def load(self, store):
        self.gain.assign(store["0"])
        self.peak = store["peak"][()].astype("float32")

    return _peak(_save_super_peak, load)


def pk_right_store_value():
    """Not a live reference: an H5 store hands out a fresh ndarray on every read (Keras 3.15)."""

    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = store["peak"]

    return _peak(_save_super_peak, load)


def pk_right_asarray():
    def load(self, store):
        super(type(self), self).load_own_variables({"0": store["0"]})
        self.peak = np.asarray(store["peak"])

    return _peak(_save_super_peak, load)


PK_WRONG = [pk_no_super_on_save, pk_whole_store_to_super, pk_load_forgets_gain,
            pk_peak_over_gain_key, pk_scalar_peak, pk_merge_on_load, pk_hard_coded_width,
            pk_gain_replaced_by_array, pk_load_resets_peak]
PK_RIGHT = [pk_right_own_keys, pk_right_in_place, pk_right_empty_tuple_index, pk_right_asarray, pk_right_store_value]


@pytest.mark.parametrize("answer", cases(PK_WRONG, HOLES))
def test_prompt_peak_hooks_rejects(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    _hint_ok(rejects(ex12.check_peak_hooks, answer(), may_raise=True))
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("answer", cases(PK_RIGHT, HOLES))
def test_prompt_peak_hooks_accepts(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    passes(ex12.check_peak_hooks, answer())


# --------------------------------------------------------------------------- 12.3 attack


def lo_plain_load(model, path):
    model.load_weights(path)


def lo_build_after_load(model, path):
    model.load_weights(path)
    model.optimizer.build(model.trainable_variables)


def lo_build_all_variables(model, path):
    model.optimizer.build(model.variables)
    model.load_weights(path)


def lo_all_variables_skip_mismatch(model, path):
    model.optimizer.build(model.variables)
    model.load_weights(path, skip_mismatch=True)


def lo_fresh_optimizer(model, path):
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    model.load_weights(path)


def lo_replace_optimizer_adam(model, path):
    model.optimizer = keras.optimizers.Adam()
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)


def lo_compile_after_load(model, path):
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)
    model.compile(optimizer=type(model.optimizer)(), loss=model.loss)


def lo_writes_back(model, path):
    model.optimizer.build(model.trainable_variables)
    model.load_weights(path)
    model.save_weights(path)


def lo_fit_zero_epochs(model, path):
    model.fit(np.zeros((1,) + tuple(model.inputs[0].shape[1:]), "float32"),
              np.zeros((1,) + tuple(model.outputs[0].shape[1:]), "float32"), epochs=0, verbose=0)
    model.load_weights(path)


def lo_skip_mismatch_only(model, path):
    model.load_weights(path, skip_mismatch=True)


def lo_only_trainable_built_from_weights_list(model, path):
    model.optimizer.build(model.weights)
    model.load_weights(path)


def lo_right_trainable_weights(model, path):
    model.optimizer.build(model.trainable_weights)
    model.load_weights(os.fspath(path))


def lo_right_zero_step(model, path):
    grads = [keras.ops.zeros_like(v) for v in model.trainable_variables]
    model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
    model.load_weights(path)


def lo_twice(model, path):
    """Right in the end, but the first load skips the optimizer: the prompt says 'with no value skipped'."""
    model.load_weights(pathlib.Path(path))
    model.optimizer.build(model.trainable_variables)
    model.load_weights(pathlib.Path(path))


def lo_right_filtered(model, path):
    model.optimizer.build([weight for weight in model.weights if weight.trainable])
    model.load_weights(pathlib.Path(path))


LO_WRONG = [lo_plain_load, lo_build_after_load, lo_build_all_variables, lo_all_variables_skip_mismatch,
            lo_fresh_optimizer, lo_replace_optimizer_adam, lo_compile_after_load, lo_writes_back,
            lo_fit_zero_epochs, lo_skip_mismatch_only, lo_only_trainable_built_from_weights_list, lo_twice]


@pytest.mark.parametrize("answer", cases(LO_WRONG, HOLES))
def test_prompt_load_with_optimizer_rejects(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    _hint_ok(rejects(ex12.check_load_with_optimizer, answer, may_raise=True))
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("answer", cases([lo_right_trainable_weights, lo_right_zero_step, lo_right_filtered],
                                         HOLES))
def test_prompt_load_with_optimizer_accepts(answer, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    passes(ex12.check_load_with_optimizer, answer)


def test_every_written_hint_fits_300_characters_with_its_prefix():
    """Each hint text written in helpers/checks/ex12.py (a require's, each step of a Hint), with its
    "Exercise NN.N: " prefix, an f-string's fields counted as one character; the answers above measure
    the texts as shown."""
    from tests.test_checks_framework import CHECKS, hint_texts

    texts = hint_texts(CHECKS / "ex12.py")
    assert texts
    long = [(line, text) for line, number, text in texts if len(f"Exercise {number}: {text}") > 300]
    assert not long, long


# --------------------------------------------------------------------------- 12.2 round three (issue 33)
# Written from the prompt alone: mistakes inside load_own_variables, which Keras re-raises as its own
# ValueError without the learner's line; the hint must name that method, not "return what the exercise asks".


def _load_super_then(read):
    def load(self, store):
        super(type(self), self).load_own_variables({key: store[key] for key in store.keys() if key != "peak"})
        read(self, store)
    return load


def _named_peak(name, save, load):
    def answer():
        return _peak(save, load)
    answer.__name__ = name
    return answer


def _save_peak_as(key):
    def save(self, store):
        super(type(self), self).save_own_variables(store)
        store[key] = self.peak
    return save


PK3_WRONG = [
    _named_peak("pk3_reads_another_key", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", np.array(store["peak_values"])))),
    _named_peak("pk3_saves_under_a_number", _save_peak_as("1"),
                _load_super_then(lambda self, store: setattr(self, "peak", np.array(store["peak"])))),
    _named_peak("pk3_gain_by_name", _save_super_peak,
                lambda self, store: (self.gain.assign(store["gain"]),
                                     setattr(self, "peak", np.array(store["peak"])))),
    _named_peak("pk3_no_super_on_save_key_0_on_load", lambda self, store: store.__setitem__("peak", self.peak),
                lambda self, store: (super(type(self), self).load_own_variables({"0": store["0"]}),
                                     setattr(self, "peak", np.array(store["peak"])))),
    _named_peak("pk3_peak_as_attribute_of_store", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", np.array(store.peak)))),
    _named_peak("pk3_float_of_array", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", float(np.array(store["peak"]))))),
    _named_peak("pk3_assign_into_gain", _save_super_peak,
                _load_super_then(lambda self, store: self.gain.assign(np.array(store["peak"])))),
    _named_peak("pk3_peak_one_short", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", np.array(store["peak"])[:-1]))),
]


@pytest.mark.parametrize("make", PK3_WRONG, ids=lambda f: f.__name__)
def test_prompt_peak_hooks_round3_rejects(make, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hint = rejects(ex12.check_peak_hooks, make(), may_raise=True)
    _hint_ok(hint)
    assert "return what the exercise asks" not in hint, hint


PK3_RIGHT = [
    _named_peak("pk3_right_copy", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", np.asarray(store["peak"]).copy()))),
    _named_peak("pk3_right_ellipsis", _save_super_peak,
                _load_super_then(lambda self, store: setattr(self, "peak", store["peak"][...]))),
    _named_peak("pk3_right_float32_copy", _save_peak_as("peak"),
                _load_super_then(lambda self, store: setattr(self, "peak",
                                                             np.array(store["peak"], dtype="float32")))),
]


@pytest.mark.parametrize("make", PK3_RIGHT, ids=lambda f: f.__name__)
def test_prompt_peak_hooks_round3_accepts(make, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    passes(ex12.check_peak_hooks, make())
