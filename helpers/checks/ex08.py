"""Checks for notebook 08 (Keras 3's own files).

Each check builds its own models and files in a fresh temporary folder, calls
the learner's code, and says what is wrong when the answer is not right.
"""

from __future__ import annotations

import os
import re
import tempfile
import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, quote, require
from helpers.checks.toolkit import call_answer
from helpers.keras_files import NotAKerasFileError, describe_keras_file, missing_from_file

__all__ = ["check_clip", "check_load_body", "check_make_checkpoint_callback", "check_normalizer"]

_X = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3)
_Y = np.stack([_X.sum(axis=1), _X[:, 0] - _X[:, 2]], axis=1)


def _numbers(name: str) -> list[int]:
    return [int(part) for part in re.findall(r"\d+", name)]


# --------------------------------------------------------------------------- 08.1

# What ModelCheckpoint's constructor refuses, and the hint for each (no raw message, nothing cut).
_REFUSALS = (
    (r"save_weights_only=True.*must end in `\.weights\.h5`",
     "ModelCheckpoint refused the file name: with save_weights_only=True it must end in .weights.h5, "
     "e.g. os.path.join(folder, 'epoch-{epoch:03d}.weights.h5')"),
    (r"must end in `\.keras`",
     "ModelCheckpoint refused the file name: a whole model's file ends in .keras, and the exercise asks for "
     "weights only: pass save_weights_only=True with a name ending in .weights.h5"),
    (r"Unrecognized save_freq",
     "ModelCheckpoint refused save_freq: it takes 'epoch' (the default: save after every epoch) or a number "
     "of batches"),
)


@exercise_check("08.1")
def check_make_checkpoint_callback(make_checkpoint_callback: Callable[[str], keras.callbacks.Callback]) -> str:
    epochs = 4
    with tempfile.TemporaryDirectory() as root:
        folder = os.path.join(root, "run [1]", "weights")
        try:
            callback = make_checkpoint_callback(folder)
        except ValueError as error:  # ModelCheckpoint refuses some settings when it is made
            for pattern, hint in _REFUSALS:
                require(not re.search(pattern, str(error)), hint)
            raise
        require(
            isinstance(callback, keras.callbacks.ModelCheckpoint),
            f"make_checkpoint_callback should return a keras.callbacks.ModelCheckpoint, got {type(callback).__name__}",
        )
        require(not callback.save_best_only,
                "save_best_only=True keeps a file only when the monitored value improves; the exercise asks for "
                "one file after every epoch, whatever the loss: leave save_best_only=False")
        require(callback.save_freq == "epoch",
                f"save_freq={callback.save_freq!r} counts batches, not epochs: save after every epoch "
                "(save_freq='epoch', the default)")
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5, name="enc"),
                                  keras.layers.BatchNormalization(name="enc_bn"), keras.layers.Dense(2, name="dec")])
        model.compile(keras.optimizers.SGD(0.05), "mse")
        model.fit(_X, _Y, epochs=epochs, batch_size=8, verbose=0, callbacks=[callback])
        outside = sorted(set(os.listdir(root)) - {"run [1]"})
        require(not outside, f"files were written outside the folder: {outside}. Put the file name inside `folder` "
                             "with os.path.join(folder, ...).")
        require(os.path.isdir(folder) and os.listdir(folder),
                f"nothing was written in the folder {os.path.relpath(folder, root)!r}: the filepath must start with "
                "the folder you were given")
        names = sorted(os.listdir(folder))
        require(
            all(name.endswith(".weights.h5") for name in names),
            f"the folder holds {names}: these are whole models, not weights. Pass save_weights_only=True with a "
            "name ending in .weights.h5.",
        )
        for name in names:
            call_answer(lambda: describe_keras_file(os.path.join(folder, name)),
                        f"{name!r} is a legacy whole-model HDF5 file, not Keras weights: a .weights.h5 name "
                        "alone is not enough, also pass save_weights_only=True", NotAKerasFileError)
        require(
            len(names) == epochs,
            f"{epochs} epochs wrote {len(names)} file(s) ({', '.join(names)}): put the epoch number in the name, "
            "e.g. 'model-{epoch:02d}.weights.h5', and save every epoch (no save_best_only)",
        )
        for epoch in range(1, epochs + 1):
            require(any(epoch in _numbers(name) for name in names),
                    f"no file name carries the epoch number {epoch}: use '{{epoch}}' in the file name")
        last = next(name for name in names if epochs in _numbers(name))
        copy = keras.models.clone_model(model)
        copy.load_weights(os.path.join(folder, last))
        require(
            np.allclose(copy.predict(_X, verbose=0), model.predict(_X, verbose=0), atol=1e-6),
            f"{last!r} does not hold the weights after the last epoch: save after every epoch (save_freq='epoch')",
        )
    return f"{epochs} epochs wrote {epochs} weights-only files numbered by epoch; the last one holds the trained model"


# --------------------------------------------------------------------------- 08.2


@exercise_check("08.2")
def check_normalizer(normalizer_class: type) -> str:
    features = 5
    layer = normalizer_class(name="norm_10")
    layer.build((None, features))  # runs your build()
    model = keras.Sequential([keras.Input((features,)), layer])
    for attribute in ("gain", "mean", "count"):
        require(hasattr(layer, attribute), f"build() should create self.{attribute}")
    tracked = {id(v) for v in layer.weights}
    untracked = [a for a in ("gain", "mean", "count")
                 if not isinstance(getattr(layer, a), keras.Variable) or id(getattr(layer, a)) not in tracked]
    require(not untracked, f"{', '.join(untracked)} {'is' if len(untracked) == 1 else 'are'} not among the layer's "
                           "weights, so save_weights would drop it: make every variable with self.add_weight(...)")
    require([id(v) for v in layer.trainable_weights] == [id(layer.gain)],
            "only gain should be trainable: pass trainable=False to add_weight for mean and count")
    require(tuple(layer.gain.shape) == (features,) and tuple(layer.mean.shape) == (features,),
            f"gain and mean need one value per feature, shape (features,); got {tuple(layer.gain.shape)} and "
            f"{tuple(layer.mean.shape)}")
    require(tuple(layer.count.shape) == () and layer.count.dtype == "int64",
            f"count should be a scalar of dtype int64 (shape=(), dtype='int64'); got shape {tuple(layer.count.shape)}, "
            f"dtype {layer.count.dtype}")
    require(np.all(layer.gain.numpy() == 1) and np.all(layer.mean.numpy() == 0) and int(layer.count.numpy()) == 0,
            "gain should start at 1 (initializer='ones'), mean and count at 0 (initializer='zeros')")
    rng = np.random.default_rng(8)
    layer.gain.assign(rng.uniform(0.5, 2.0, features).astype("float32"))
    for _ in range(3):
        layer.update(tf.constant(rng.normal(size=(4, features)), tf.float32))
    x = tf.constant(rng.normal(size=(2, features)), tf.float32)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "norm state.weights.h5")
        model.save_weights(path)
        fresh = normalizer_class(name="norm_1")
        fresh.build((None, features))
        copy = keras.Sequential([keras.Input((features,)), fresh])
        copy.load_weights(path)
        missing = missing_from_file(model, path)
    got = copy.layers[0]
    for attribute in ("gain", "mean", "count"):
        require(np.array_equal(getattr(got, attribute).numpy(), getattr(layer, attribute).numpy()),
                f"{attribute} did not come back from save_weights/load_weights")
    require(not missing, f"the file misses {missing}: every piece of state must be a weight made with add_weight")
    require(np.allclose(copy(x).numpy(), model(x).numpy()), "the reloaded layer answers differently from the saved one")
    return "gain (trainable), mean and count (non-trainable, int64 count) are weights, and all three survive a file"


# --------------------------------------------------------------------------- 08.3


def _stack(widths: tuple[int, ...], names: tuple[str, ...]) -> keras.Sequential:
    layers = [keras.Input((6,))]
    for width, name in zip(widths, names):
        layers.append(keras.layers.Dense(width, name=name))
        if name.endswith(("_1", "_10")):  # non-trainable state, in a layer that changes shape too
            layers.append(keras.layers.BatchNormalization(name=name + "_bn"))
    return keras.Sequential(layers)


def _compiled_stack(widths: tuple[int, ...], names: tuple[str, ...], offset: float) -> keras.Sequential:
    """A compiled model whose optimizer has slots (saved with the weights, and not the model's weights)."""
    model = _stack(widths, names)
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.optimizer.build(model.trainable_variables)
    _distinct_values(model, offset)
    return model


def _fresh_values_in_some(model: keras.Model) -> None:
    """Zeros and ones a file really holds (a bias, moving statistics, as initialized): an answer that marks
    the model with zeros or ones, loads, and reports what still holds the mark misreads them."""
    for variable in model.weights:
        if variable.path.endswith(("head/bias", "_10_bn/moving_mean")):
            variable.assign(np.zeros(variable.shape, dtype="float32"))
        if variable.path.endswith(("_1_bn/moving_variance", "_1_bn/gamma")):
            variable.assign(np.ones(variable.shape, dtype="float32"))


def _short(paths: list[str], most: int = 3) -> str:
    """A few variable paths without the model's prefix (``trunk_10_bn/moving_mean``), and how many more."""
    names = ["/".join(path.split("/")[-2:]) for path in paths]
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def _distinct_values(model: keras.Model, offset: float) -> None:
    """Give every variable non-zero values no initializer would produce."""
    for i, variable in enumerate(model.weights):
        size = int(np.prod(variable.shape))
        values = offset + 0.1 * (i + 1) + 0.01 * np.arange(size, dtype="float32")
        variable.assign(values.reshape(variable.shape))


def _constant(model: keras.Model, path: str) -> str:
    """The one value every element of ``model``'s variable at ``path`` holds ("zeros", "0.5s"), or ""."""
    values = np.unique(next(v for v in model.weights if v.path.split("/", 1)[-1] == path.split("/", 1)[-1]).numpy())
    if values.size != 1:
        return ""
    return "zeros" if values[0] == 0 else f"{values[0]:g}s"


def _reset_after_loading(not_loaded: list[str], result: Any, target: keras.Model, saved: keras.Model,
                         before: list[np.ndarray]) -> list[str]:
    """Weights that fit, hold their old values again and are reported, where the file holds one constant:
    an answer that marked the model, loaded, and put back what still held the mark."""
    try:
        reported = {item for item in result if isinstance(item, str)}
    except TypeError:
        return []
    old = {v.path: b for v, b in zip(target.weights, before)}
    now = {v.path: v.numpy() for v in target.weights}
    return [path for path in not_loaded if path in reported and np.array_equal(now[path], old[path])
            and _constant(saved, path)]


@exercise_check("08.3")
def check_load_body(load_body: Callable[[keras.Model, str], list[str]]) -> str:
    names = ("trunk_1", "trunk_10", "head")
    cases = [
        ("a new head", (5, 4, 2), (5, 4, 3)),
        ("a wider middle layer", (5, 4, 2), (5, 7, 2)),
        ("an unchanged model", (5, 4, 2), (5, 4, 2)),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for label, saved_widths, new_widths in cases:
            saved = _compiled_stack(saved_widths, names, 1.0)
            _fresh_values_in_some(saved)
            path = os.path.join(folder, f"{label}.weights.h5")
            saved.save_weights(path)
            target = _compiled_stack(new_widths, names, -5.0)
            target.weights[0].assign(saved.weights[0])  # a value the file holds already: loading leaves it equal
            before = [v.numpy().copy() for v in target.weights]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # skip_mismatch warns, with every value; the check reports instead
                result = call_answer(lambda: load_body(target, path), lambda error: (
                    f"for {label}, your function raised: {quote(error, 100)}. Load with "
                    "load_weights(..., skip_mismatch=True) so that changed shapes are skipped."), ValueError)
            require(isinstance(result, (list, tuple, set)),
                    f"load_body should return a list of variable paths; got {type(result).__name__}")
            reported = sorted(result)
            saved_shapes = {v.path.split("/")[-2]: [] for v in target.weights}
            for v, s in zip(target.weights, saved.weights):
                saved_shapes[v.path.split("/")[-2]].append(tuple(v.shape) == tuple(s.shape))
            # Keras skips a whole layer when any of its weights changed shape
            expected = sorted(v.path for v in target.weights if not all(saved_shapes[v.path.split("/")[-2]]))
            not_loaded = sorted(v.path for v, s in zip(target.weights, saved.weights)
                                if v.path not in expected and not np.array_equal(v.numpy(), s.numpy()))
            reset = _reset_after_loading(not_loaded, result, target, saved, before)
            require(not reset, f"for {label}, {_short(reset, 1)} was loaded (the file holds "
                               f"{_constant(saved, reset[0]) if reset else ''} there), then reset: judge what was "
                               "skipped by shapes (missing_from_file, section 4.1), not by values")
            require(not not_loaded, Hint(
                f"for {label}, weights that fit were not loaded from the file: {_short(not_loaded)}. Keras can "
                "load what fits and skip the rest (section 4.1, 'skip_mismatch=True, and what it skips')",
                f"for {label}, weights that fit were not loaded: {_short(not_loaded)}. Load with "
                "model.load_weights(weights_path, skip_mismatch=True)", kind="not loaded"))
            changed = sorted(v.path for v, b in zip(target.weights, before)
                             if v.path in expected and not np.array_equal(v.numpy(), b))
            require(not changed, f"for {label}, weights that do not fit should keep their values: "
                                 f"{_short(changed)} changed")
            paths = sorted(v.path for v in target.weights)
            slots = {v.path for v in target.optimizer.variables}
            counted = sorted(slots & set(reported))
            require(not counted,
                    f"for {label}, you reported {len(counted)} optimizer variable(s), such as "
                    f"{counted[0].split('/')[-1] if counted else ''}: the file holds them too, but the exercise "
                    "asks only about the model's weights (model.weights)")
            require(
                all(isinstance(item, str) for item in reported) and set(reported) <= set(paths),
                f"for {label}, return the variables' paths (variable.path, e.g. {paths[0]!r}); got {reported[:3]}",
            )
            forgotten = [path for path in expected if path not in reported]
            extra = [path for path in reported if path not in expected]
            require(not forgotten,
                    f"for {label}, your list misses weights that were not loaded: {_short(forgotten)}. Report "
                    "every variable of a skipped layer, the non-trainable ones too, by what was loaded, "
                    "not by whether a value changed")
            require(not extra,
                    f"for {label}, you reported weights that were loaded: {_short(extra)}"
                    + (" (report nothing when everything fits)" if not expected else "")
                    + ". A loaded value can equal the old one: judge by the shapes, not by a change")
    return "for a new head, a wider middle layer and an unchanged model: what fits is loaded, the rest is reported"


# --------------------------------------------------------------------------- 08.4


@exercise_check("08.4")
def check_clip(clip_class: type) -> str:
    bounds = np.array([-0.5, 0.75], dtype="float32")
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, name="pre"),
                              # settings other than the default ones, which a get_config must keep too
                              clip_class(bounds, name="clip_7", trainable=False, dtype="float64"),
                              keras.layers.Dense(1, name="post")])
    x = np.linspace(-2.0, 2.0, 12, dtype=np.float32).reshape(3, 4)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "clipped model [v1].keras")
        try:
            model.save(path)
        except NotImplementedError as error:
            if "get_config" not in str(error):
                raise  # the untouched stub
            require(False, "saving failed: Keras cannot record a NumPy array by itself. Write get_config() "
                           "returning the base config plus 'bounds' (self.bounds.tolist()).")
        except (TypeError, ValueError) as error:
            require("It returned: None" not in str(error),
                    "get_config returned None: dict.update() returns None; return the dict itself")
            require(False, f"saving failed: {quote(error, 100)}. get_config must return a dict of plain "
                           "data: turn the array into a list with .tolist().")
        registered = keras.saving.get_registered_name(clip_class)
        require(
            registered.startswith("exercises>"),
            f"the class is registered as {registered!r}: register it with "
            "keras.saving.register_keras_serializable(package=\"exercises\")",
        )
        loaded = call_answer(lambda: keras.saving.load_model(path), lambda error: (
            f"load_model failed: {quote(error, 90)} get_config must return plain data "
            "(lists, numbers, strings) under the constructor's argument names: the base config "
            "plus 'bounds' as a list."), (TypeError, ValueError))
    layer = loaded.layers[1]
    require(type(layer) is clip_class, f"the loaded layer is a {type(layer).__name__}, not your class: "
                                       "run the cell that defines and registers it again")
    require(layer.name == "clip_7", f"the loaded layer is called {layer.name!r}, not 'clip_7': start get_config "
                                    "from super().get_config(), which holds the name")
    lost = [setting for setting, saved, got in (
        ("trainable=False", model.layers[1].trainable, layer.trainable),
        ("dtype='float64'", model.layers[1].dtype_policy.name, layer.dtype_policy.name)) if saved != got]
    written = model.layers[1].get_config()  # what the file holds: the settings your get_config wrote
    in_file = written.get("trainable") is False and "float64" in str(written.get("dtype"))
    require(not lost or not in_file, f"the file holds trainable=False and dtype='float64', the loaded layer lost "
                                     f"{' and '.join(lost)}: from_config (or __init__) dropped them: pass **config on")
    require(not lost, f"the loaded layer lost {' and '.join(lost)}: get_config keeps too little. Start from "
                      "super().get_config() (name, trainable, dtype) and add 'bounds'")
    require(np.array_equal(np.asarray(layer.bounds, dtype="float32"), bounds),
            f"the loaded layer's bounds are {np.asarray(layer.bounds)}, expected {bounds}")
    require(np.allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0)),
            "the loaded model answers differently from the saved one")
    return "registered in 'exercises'; saved to .keras and loaded without custom_objects, its name and bounds kept"
