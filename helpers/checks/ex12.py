"""Checks for notebook 12 (custom code that survives a reload).

Each check builds its own models and files in a fresh temporary folder, calls
the learner's code, and says what is wrong when the answer is not right.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Callable

import keras
import numpy as np

from helpers.checks import Hint, exercise_check, quote, require
from helpers.checks.toolkit import call_answer

__all__ = ["check_best_checkpoint", "check_peak_hooks", "check_load_with_optimizer"]

# Keras's message when a layer's base load_own_variables gets keys it does not own.
_WHOLE_STORE = re.compile(r"expected \d+ variables, but received")
_X = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(8, 4)


# --------------------------------------------------------------------------- 12.1

# Two runs of logged values: the first starts at the lowest AUC there is (0.0), so that no starting
# threshold is satisfied by luck, and repeats a value (a tie is not an improvement).
_AUC_RUNS = ([0.0, 0.5, 0.5, 0.2, 0.7, 0.69], [0.61, 0.83, 0.72, 0.91, 0.90])


def _best_so_far(values: list[float]) -> list[int]:
    """The epoch (from 1) holding the highest value so far, after each epoch; ties keep the older."""
    kept, best = [], None
    for epoch, value in enumerate(values, start=1):
        if best is None or value > values[best - 1]:
            best = epoch
        kept.append(best)
    return kept


def _auc_model(compiled_auc: bool) -> keras.Model:
    """A model compiled with an AUC metric named "auc" (its metrics built), or without metrics: the prompt's
    callback watches models whose metrics it does not know."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid", name="probe_10")])
    model.compile("sgd", "binary_crossentropy", metrics=[keras.metrics.AUC(name="auc")] if compiled_auc else None)
    model.evaluate(_X, (_X[:, :1] > 0).astype("float32"), verbose=0)  # builds the compiled metrics
    return model


@exercise_check("12.1")
def check_best_checkpoint(make_best_checkpoint: Callable[[str], keras.callbacks.Callback]) -> str:
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "run [2]")
        os.makedirs(folder)
        callback = make_best_checkpoint(folder)
        require(isinstance(callback, keras.callbacks.ModelCheckpoint), Hint(
            f"you returned a {type(callback).__name__}: the callback that writes a file during fit is shown in "
            "section 8.1, 'ModelCheckpoint'",
            f"return a keras.callbacks.ModelCheckpoint, not a {type(callback).__name__}", kind="class"))
        expected = os.path.join(folder, "best.weights.h5")
        require(os.path.normpath(str(callback.filepath)) == os.path.normpath(expected), Hint(
            "the file is not best.weights.h5 inside the folder you were given: one fixed name, no epoch in it "
            "(section 8.1, 'ModelCheckpoint')",
            "pass os.path.join(folder, 'best.weights.h5') as the filepath"))
        require(callback.save_weights_only, Hint(
            "the file holds the whole model: the exercise asks for the weights only (section 8.1, "
            "'ModelCheckpoint', lists the setting)", "pass save_weights_only=True"))
        require(callback.save_best_only, Hint(
            "the file is rewritten after every epoch: keep it only when the watched quantity improves "
            "(section 8.1, 'ModelCheckpoint')", "pass save_best_only=True"))
        require(callback.monitor == "val_auc", Hint(
            f"the callback watches {callback.monitor!r}, not the validation AUC logged as 'val_auc' "
            "(section 8.1, 'ModelCheckpoint': monitor)", "pass monitor='val_auc'", kind="monitor"))
        require(callback.mode == "max", Hint(
            f"in mode {callback.mode!r} the callback does not keep the highest AUC: 'auto' reads the direction "
            "from a compiled metric named 'auc', which a model may not have, and 'min' keeps the lowest "
            "(section 8.1, 'ModelCheckpoint')", "say the direction yourself: pass mode='max'", kind="mode"))
        require(callback.best is None or callback.best == -np.inf, Hint(
            f"the callback starts from {callback.best!r}, so an epoch below it is never kept; the first epoch "
            "is the best so far (section 8.1, 'ModelCheckpoint')", "leave initial_value_threshold out",
            kind="threshold"))
        require(callback.save_freq == "epoch", Hint(
            f"save_freq is {callback.save_freq!r}: it counts batches, and the exercise compares at the end of "
            "every epoch (section 8.1, 'ModelCheckpoint')", "leave save_freq='epoch' (the default)",
            kind="save_freq"))
        for run, aucs in enumerate(_AUC_RUNS):
            _check_run(make_best_checkpoint if run else (lambda _: callback), folder, aucs, compiled_auc=bool(run))
    return "weights only, best.weights.h5 in the folder, rewritten only when val_auc rises (mode='max', every epoch)"


def _check_run(make_best_checkpoint: Callable[[str], keras.callbacks.Callback], folder: str,
               aucs: list[float], compiled_auc: bool) -> None:
    """Feed one run of logged values to a fresh callback; the file must follow the best epoch so far."""
    expected = os.path.join(folder, "best.weights.h5")
    if os.path.exists(expected):
        os.remove(expected)
    callback = make_best_checkpoint(folder)
    model = _auc_model(compiled_auc)
    callback.set_model(model)
    kept = []
    for epoch, auc in enumerate(aucs):
        model.layers[0].kernel.assign(np.full((4, 1), epoch + 1.0, dtype="float32"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            callback.on_epoch_begin(epoch)
            # the training AUC falls while the validation AUC rises, and the loss says nothing
            callback.on_epoch_end(epoch, {"val_auc": auc, "auc": 1.0 - auc, "val_loss": 0.5, "loss": 0.5})
        require(os.path.exists(expected),
                f"after epoch {epoch + 1} (val_auc {auc}) no file was written: the first epoch is the best so "
                "far, and every later one that beats it must be kept")
        copy = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="probe_10")])
        copy.load_weights(expected)
        kept.append(int(copy.layers[0].kernel.numpy()[0, 0]))
    want = _best_so_far(aucs)
    require(kept == want, f"for val_auc {aucs} the file held epochs {kept} after each epoch; the highest "
                          f"val_auc so far is in epochs {want}")


# --------------------------------------------------------------------------- 12.2


# Keras runs load_own_variables inside its own loop and re-raises what it raised as a new ValueError,
# without the learner's line: the first error's text is in the message.
_NOT_LOADED = re.compile(r"could not be loaded\. Example error message for object <[^>]*>:\s*(.*?)\s*"
                         r"(List of objects that could not be loaded|$)", re.S)


def _load(load: Callable[[], object], label: str) -> object:
    """Run ``load``; a refusal by the layer's own load_own_variables becomes a hint about that method."""
    try:
        return load()
    except ValueError as error:
        require(not _WHOLE_STORE.search(str(error)),
                "the base load_own_variables got the whole store, 'peak' included, and refuses keys it "
                "does not expect: hand it only its own, e.g. super().load_own_variables({'0': store['0']})")
        found = _NOT_LOADED.search(str(error))
        if not found:
            raise
        reason = quote(found.group(1), 70)
        require(False, f"{label} stopped in your load_own_variables (Keras hides the line): {reason}. Fix that "
                       "method: it reads back what save_own_variables wrote, e.g. store['peak']")


@exercise_check("12.2")
def check_peak_hooks(peak_class: type) -> str:
    rng = np.random.default_rng(12)
    layer = peak_class(name="peak_probe_7")
    model = keras.Sequential([layer])  # built lazily, on the first call
    model(_X)
    layer.gain.assign(rng.uniform(0.5, 2.0, 4).astype("float32"))
    for _ in range(3):
        layer.observe(rng.normal(size=(5, 4)).astype("float32") + 1.0)
    peak = np.array(layer.peak, copy=True)
    gain = layer.gain.numpy().copy()
    if not peak.any():  # the class's own observe() always raises peak here
        raise RuntimeError("the check's fixture did not raise peak: RunningPeak.observe() was changed")
    with tempfile.TemporaryDirectory() as folder:
        weights = os.path.join(folder, "peak [w].weights.h5")
        whole = os.path.join(folder, "peak [m].keras")
        call_answer(lambda: model.save_weights(weights), lambda error: (
            "save_own_variables wrote a key the base method already wrote (it stores gain under "
            "'0'): store peak under a key of its own, e.g. store['peak']"
            if "name already exists" in str(error) else None), OSError)
        model.save(whole)
        fresh = keras.Sequential([peak_class(name="peak_probe_7")])
        fresh(_X)
        fresh.layers[0].observe(np.full((2, 4), 100.0, dtype="float32"))  # larger than the saved peak
        _load(lambda: fresh.load_weights(weights), "load_weights")
        reloaded = _load(lambda: keras.models.load_model(whole, custom_objects={peak_class.__name__: peak_class}),
                         "load_model")
    for label, got in (("load_weights", fresh.layers[0]), ("load_model", reloaded.layers[0])):
        require(isinstance(got.gain, keras.Variable),
                f"after {label}, gain is a {type(got.gain).__name__}, not a Keras variable: leave gain a weight "
                "and let super().load_own_variables(store) (or gain.assign) fill it")
        require(np.allclose(got.gain.numpy(), gain),
                f"after {label}, gain is not the saved one: call super().save_own_variables(store) and "
                "super().load_own_variables(store), which handle the layer's weights")
        value = got.peak
        require(isinstance(value, np.ndarray),
                f"after {label}, peak is a {type(value).__name__}, not a NumPy array: read it back with "
                "np.array(store['peak'])")
        require(value.shape == peak.shape,
                f"after {label}, peak has shape {value.shape}, not {peak.shape}: read the stored array whole "
                "(np.array(store['peak'])); its size is the layer's number of features")
        require(np.allclose(value, peak),
                f"after {label}, peak is {np.round(value, 3)} instead of {np.round(peak, 3)}: write it in "
                "save_own_variables (store['peak'] = self.peak) and read it back in load_own_variables, "
                "replacing the peak the layer had")
    return ("gain and peak come back from .weights.h5 and .keras (a lazily built layer, a name of its own, "
            "a layer that had seen larger values)")


# --------------------------------------------------------------------------- 12.3


def _twin(seed: int, optimizer: Callable[[], keras.optimizers.Optimizer]) -> keras.Sequential:
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, name="trunk_1"),
                              keras.layers.BatchNormalization(name="trunk_1_bn"),
                              keras.layers.Dense(5, name="trunk_10", trainable=False),
                              keras.layers.Dense(2, name="head_x")], name="probe_net")
    model.compile(optimizer(), "mse")
    return model


# Two optimizers, so that an answer hard-coding one class is seen.
_OPTIMIZERS: tuple[Callable[[], keras.optimizers.Optimizer], ...] = (
    lambda: keras.optimizers.Adam(0.02), lambda: keras.optimizers.RMSprop(0.01, momentum=0.9))


def _require_same_optimizer(model: keras.Model, kind: str) -> None:
    require(type(model.optimizer).__name__ == kind,
            f"the model was compiled with {kind}, and your function made its optimizer "
            f"{type(model.optimizer).__name__}: keep model.optimizer, build it, then load_weights")


@exercise_check("12.3")
def check_load_with_optimizer(load_with_optimizer: Callable[[keras.Model, str], object]) -> str:
    for optimizer in _OPTIMIZERS:
        _check_one_optimizer(load_with_optimizer, optimizer)
    return ("weights (frozen and non-trainable included) and the optimizer's step count and slots (Adam, "
            "RMSprop with momentum) all came back, no warning")


def _check_one_optimizer(load_with_optimizer: Callable[[keras.Model, str], object],
                         optimizer: Callable[[], keras.optimizers.Optimizer]) -> None:
    source = _twin(4, optimizer)
    target_y = np.stack([_X.sum(axis=1), _X[:, 0] - _X[:, 3]], axis=1)
    source.fit(_X, target_y, epochs=3, batch_size=4, verbose=0)
    kind = type(source.optimizer).__name__
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "trained [3].weights.h5")
        source.save_weights(path)
        data = open(path, "rb").read()
        target = _twin(9, optimizer)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                load_with_optimizer(target, path)
            except ValueError:  # a replaced optimizer cannot take the file's values: say that, not the shapes
                _require_same_optimizer(target, kind)
                raise
        require(open(path, "rb").read() == data, "the file changed: only read it")
    _require_same_optimizer(target, kind)
    skipped = [str(w.message) for w in caught if "Skipping variable loading for optimizer" in str(w.message)]
    require(not skipped, "Keras skipped the optimizer's values ('Skipping variable loading for optimizer'): "
                         "build the optimizer on model.trainable_variables before load_weights")
    for mine, theirs in zip(target.weights, source.weights):
        require(np.allclose(mine.numpy(), theirs.numpy()),
                f"{mine.path} does not hold the saved value: load every weight with model.load_weights(path)")
    steps = int(target.optimizer.iterations.numpy())
    require(steps == int(source.optimizer.iterations.numpy()),
            f"the optimizer's step count is {steps}, not the saved {int(source.optimizer.iterations.numpy())}: "
            "build it first (model.optimizer.build(model.trainable_variables)), then load_weights")
    require(len(target.optimizer.variables) == len(source.optimizer.variables) and all(
        np.allclose(a.numpy(), b.numpy()) for a, b in zip(target.optimizer.variables, source.optimizer.variables)),
        f"{kind}'s slots differ from the saved ones: build it on model.trainable_variables, then load")
