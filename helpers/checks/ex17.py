"""Checks for notebook 17 (models as they ship today: quantized, mixed precision, averaged weights).

Each check builds its own models and files in a fresh temporary folder, with
architectures and names other than the notebook's, calls the learner's
function, and says what is wrong when the answer is not right.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, quote, require
from helpers.checks.toolkit import call_answer, files_unchanged, no_warning_lines

__all__ = ["check_load_adapted_preset", "check_load_quantized_weights", "check_reload_for_training",
           "check_trained_and_averaged"]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """``no_warning_lines``, and a faster ``gc.collect()`` while the check runs.

    Keras's quantize() runs gc.collect() once per layer: frozen objects are not scanned. Where
    start_notebook froze its imports already, that is enough, and unfreezing would undo it.
    """
    freeze_here = gc.get_freeze_count() == 0
    if freeze_here:
        gc.freeze()
    try:
        with no_warning_lines():
            yield
    finally:
        if freeze_here:
            gc.unfreeze()


def _digest(path: str) -> str:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def _has_int8(model: keras.Model) -> bool:
    return any(str(variable.dtype) == "int8" for variable in model.weights)


# --------------------------------------------------------------------------- 17.1


def _quantizable(seed: int) -> keras.Model:
    """Two Dense layers around a BatchNormalization (Keras's quantize() runs gc.collect() once per layer)."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6,), name="reading")
    hidden = keras.layers.Dense(12, activation="tanh", name="encoder")(inputs)
    hidden = keras.layers.BatchNormalization(name="norm")(hidden)
    return keras.Model(inputs, keras.layers.Dense(4, name="score")(hidden), name="sensor_net")


def _quantized_load_hint(error: Exception) -> str | Hint | None:
    text = str(error)
    if "variables, but received" in text:
        return Hint(idea="Keras refused the file: the twin from build() is a float model and the file holds "
                         "quantized layers, one more variable each (section 3, 'Weights into a twin')",
                    fix="call twin.quantize('int8') on the model from build() before twin.load_weights(path)")
    if "No model config found" in text or "File format not supported" in text:
        return ("load_model reads a whole .keras file; a .weights.h5 holds weights only: make the twin with "
                "build(), quantize it with 'int8', then twin.load_weights(path)")
    return None


def _quantized_call(load_quantized_weights: Callable[..., keras.Model], path: str, batch: np.ndarray,
                    want: np.ndarray, first_seed: int) -> None:
    """One call of the learner's function, with a build() of its own (a cached answer fails the second call)."""
    made: list[keras.Model] = []
    seeds = iter(range(first_seed, first_seed + 1_000))

    def build() -> keras.Model:  # each call: new random weights, so an unloaded model shows
        model = _quantizable(next(seeds))
        made.append(model)
        return model

    result = call_answer(lambda: load_quantized_weights(build, path), _quantized_load_hint, ValueError)
    require(isinstance(result, keras.Model),
            f"load_quantized_weights returned {type(result).__name__}; return the model that holds "
            "the weights")
    require(any(result is model for model in made),
            "the model returned was not made by build() in this call: call build() and return that model")
    require(_has_int8(result), Hint(
        idea="the model returned holds no int8 kernel: the file's weights are quantized "
             "(section 3, 'Weights into a twin')",
        fix="call twin.quantize('int8') on the model from build() before twin.load_weights(path)"))
    got = np.asarray(result(batch, training=False))
    require(got.shape == want.shape and np.array_equal(got, want),
            "the model does not answer like the saved one: load the file's weights into the "
            "quantized twin (load_weights), skipping nothing")


@exercise_check("17.1")
def check_load_quantized_weights(load_quantized_weights: Callable[..., keras.Model]) -> str:
    batch = np.random.default_rng(17).normal(size=(9, 6)).astype("float32")
    with tempfile.TemporaryDirectory() as folder, _quiet():
        source = _quantizable(1)
        norm = source.get_layer("norm")  # non-trivial statistics: a twin must load them too
        norm.moving_mean.assign(np.linspace(-0.5, 0.5, 12).astype("float32"))
        norm.moving_variance.assign(np.linspace(0.5, 2.0, 12).astype("float32"))
        source.quantize("int8")
        path = os.path.join(folder, "sensor run.weights.h5")
        source.save_weights(path)
        want = np.asarray(source(batch, training=False))
        before = _digest(path)
        for first_seed in (100, 200):  # called twice, each time with a build() of its own
            _quantized_call(load_quantized_weights, path, batch, want, first_seed)
        require(_digest(path) == before, "the weights file changed: load it, never save over it")
    return "a quantized twin from build() holds the file's int8 weights and answers exactly like the saved model"


# --------------------------------------------------------------------------- 17.2


def _mixed_run(seed: int) -> keras.Model:
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(seed)
        inputs = keras.Input((5,), name="features")
        hidden = keras.layers.Dense(7, activation="relu", name="enc")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(2, dtype="float32", name="logit")(hidden),
                            name="mp_run")
        model.compile(keras.optimizers.Adam(3e-3), "mse")
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    return model


def _values(optimizer) -> list[np.ndarray]:
    return [np.asarray(v.numpy()) for v in optimizer.variables]


@exercise_check("17.2")
def check_reload_for_training(reload_for_training: Callable[[str], keras.Model]) -> str:
    x = np.random.default_rng(5).normal(size=(12, 5)).astype("float32")
    y = np.random.default_rng(6).normal(size=(12, 2)).astype("float32")
    start_policy = "float64"  # not the default: "as you found it" is this one
    with tempfile.TemporaryDirectory() as folder, _quiet():
        original = _mixed_run(2)
        original.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
        original.optimizer.dynamic_scale.assign(512.0)  # values a fresh optimizer does not have
        original.optimizer.step_counter.assign(3)
        path = os.path.join(folder, "run 1.keras")
        original.save(path)
        before = _digest(path)
        saved = _values(original.optimizer)
        keras.mixed_precision.set_dtype_policy(start_policy)
        try:
            result = reload_for_training(path)
            policy = keras.mixed_precision.global_policy().name
        finally:
            keras.mixed_precision.set_dtype_policy("float32")
        require(policy == start_policy,
                f"the global dtype policy is {policy!r} after your function, it was {start_policy!r}: "
                "keep the policy you found (global_policy()) and set it back, also on errors")
        require(isinstance(result, keras.Model),
                f"reload_for_training returned {type(result).__name__}; return the loaded model")
        optimizer = getattr(result, "optimizer", None)
        require(optimizer is not None, "the model has no optimizer: load it compiled (compile=True)")
        require(type(optimizer).__name__ == "LossScaleOptimizer", Hint(
            idea=f"the optimizer is a bare {type(optimizer).__name__}: the loss scale and the saved state "
                 "were dropped (section 6, 'The optimizer state dropped on reload')",
            fix="set keras.mixed_precision.set_dtype_policy('mixed_float16') before load_model, "
                "then set the policy back"))
        got = _values(optimizer)
        require(len(got) == len(saved) and all(a.shape == b.shape and np.array_equal(a, b)
                                               for a, b in zip(got, saved)),
                "the optimizer does not hold the saved values (loss scale, step counter, moments): "
                "load the file itself, do not compile a new optimizer afterwards")
        require(_digest(path) == before, "the file changed: load it, never save over it")
        original.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
        result.fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False)
        require(all(np.array_equal(a, b) for a, b in zip(original.get_weights(), result.get_weights())),
                "one more epoch gives other weights than the uninterrupted run: resume from the file's "
                "weights and optimizer state, unchanged")
    return "the reloaded model keeps its LossScaleOptimizer state, resumes exactly, and the policy is as found"


# --------------------------------------------------------------------------- 17.3


def _ema_model(seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((4,), name="pixels")
    hidden = keras.layers.Dense(6, activation="relu", name="zeta")(inputs)
    hidden = keras.layers.BatchNormalization(name="norm")(hidden)
    model = keras.Model(inputs, keras.layers.Dense(3, name="alpha")(hidden), name="ema_run")
    model.compile(keras.optimizers.SGD(0.1, momentum=0.5, use_ema=True, ema_momentum=0.8), "mse")
    return model


def _train(model: keras.Model, x: np.ndarray, y: np.ndarray, steps: int) -> None:
    for step in range(steps):
        xb, yb = x[step * 4:step * 4 + 4], y[step * 4:step * 4 + 4]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb, training=True) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply_gradients(zip(grads, model.trainable_variables))


@exercise_check("17.3")
def check_trained_and_averaged(trained_and_averaged: Callable[[keras.Model], tuple]) -> str:
    x = np.random.default_rng(8).normal(size=(24, 4)).astype("float32")
    y = np.random.default_rng(9).normal(size=(24, 3)).astype("float32")
    with _quiet():
        model = _ema_model(4)
        _train(model, x, y, 4)
        trained = [np.array(v.numpy()) for v in model.trainable_variables]
        averages = [np.array(a.numpy()) for a in model.optimizer._model_variables_moving_average]
        weights = [np.array(w.numpy()) for w in model.weights]
        slots = [np.array(v.numpy()) for v in model.optimizer.variables]
        result = trained_and_averaged(model)
        require(isinstance(result, (tuple, list)) and len(result) == 2,
                "return a tuple of two lists: (trained weights, their averages)")
        first, second = (list(part) if isinstance(part, (list, tuple)) else part for part in result)
        require(isinstance(first, list) and isinstance(second, list),
                "each part of the answer must be a list (or tuple) of NumPy arrays")
        require(all(isinstance(a, np.ndarray) for a in first + second),
                "return NumPy arrays (variable.numpy()), not variables or tensors")
        require(all(np.array_equal(w.numpy(), a) for w, a in zip(model.weights, weights)),
                "the model's weights changed: read the averages from the optimizer; do not write them "
                "into the model (finalize_variable_values) or put back what you changed")
        require(all(np.array_equal(v.numpy(), a) for v, a in zip(model.optimizer.variables, slots)),
                "the optimizer's variables changed: read them, do not change them")
        n = len(trained)
        require(len(first) == n and len(second) == n,
                f"the model has {n} trainable variables and the lists hold {len(first)} and {len(second)}: "
                "one array per trainable variable (not model.weights, not every optimizer variable)")
        same = lambda got, want: all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(got, want))
        require(not (same(first, averages) and same(second, trained)),
                "the two lists are swapped: the trained weights first, then the averages")
        require(same(first, trained), "the first list is not the trained weights in the order of "
                                      "model.trainable_variables")
        require(same(second, averages), Hint(
            idea="the second list is not the averages in the order of model.trainable_variables: Keras "
                 "pairs them by position (section 8, 'Averaged weights')",
            fix="keep the optimizer variables whose path ends with '_average', in the optimizer's order"))
        _train(model, x[16:], y[16:], 1)  # the answer is a snapshot: later steps must not change it
        require(same(first, trained) and same(second, averages),
                "the arrays changed when training went on: return copies (np.array(v.numpy()))")
    return "the trained weights and their averages, in the order of model.trainable_variables; model unchanged"


# --------------------------------------------------------------------------- 17.4

_WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "red", "green", "blue", "light", "dark", "sky"]
_TEXTS = ["dark sky", "light green blue", "red"]


def _tuned_preset(folder: str) -> tuple[str, str, np.ndarray, np.ndarray]:
    """A DistilBERT text classifier saved as a preset before LoRA, and its adapter; outputs of both."""
    import keras_hub

    keras.utils.set_random_seed(11)
    tokenizer = keras_hub.models.DistilBertTokenizer(vocabulary=_WORDS)
    preprocessor = keras_hub.models.DistilBertTextClassifierPreprocessor(tokenizer, sequence_length=7)
    backbone = keras_hub.models.DistilBertBackbone(
        vocabulary_size=len(_WORDS), num_layers=1, num_heads=2, hidden_dim=6, intermediate_dim=12,
        max_sequence_length=7, dropout=0.0)
    task = keras_hub.models.DistilBertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor,
                                                     hidden_dim=6, dropout=0.0)
    rng = np.random.default_rng(11)  # outputs of size 1, so that the adapter's change shows
    for weight in task.weights:
        weight.assign(rng.normal(scale=0.5, size=weight.shape).astype(weight.dtype))
    preset = os.path.join(folder, "colour model")
    task.save_to_preset(preset)
    features = preprocessor(np.array(_TEXTS))
    base = keras.ops.convert_to_numpy(task(features))
    backbone.enable_lora(3)
    for weight in backbone.trainable_weights:
        if weight.path.endswith("lora_kernel_b"):
            weight.assign(rng.normal(scale=0.5, size=weight.shape).astype(weight.dtype))
    adapter = os.path.join(folder, "tuned colours.lora.h5")
    backbone.save_lora_weights(adapter)
    return preset, adapter, base, keras.ops.convert_to_numpy(task(features))


def _class_hint(error: Exception) -> str | Hint | None:
    if "subclass" not in str(error) and "compatible" not in str(error):
        return None
    return Hint(idea=f"from_preset refused the class you called it on ({quote(error, 90)}): the folder names "
                     "its own class in task.json (section 9, 'KerasHub presets, offline')",
                fix="call from_preset on a base class, keras_hub.models.TextClassifier.from_preset(preset), "
                    "or on the class task.json names")


@exercise_check("17.4")
def check_load_adapted_preset(load_adapted: Callable[[str, str], keras.Model]) -> str:
    with tempfile.TemporaryDirectory() as folder, _quiet():
        preset, adapter, base, tuned = _tuned_preset(folder)
        with files_unchanged(folder, "the preset folder or the adapter changed: only read them (no "
                                     "save_to_preset or save_lora_weights over them)"):
            result = call_answer(lambda: load_adapted(preset, adapter), _class_hint, ValueError)
        require(isinstance(result, keras.Model),
                f"load_adapted returned {type(result).__name__}; return the task model you loaded")
        named = "DistilBertTextClassifier"
        require(type(result).__name__ == named,
                f"the model returned is a {type(result).__name__}, the folder holds a {named} (task.json): "
                "load the task, not only its backbone (TextClassifier.from_preset)")
        require(getattr(result, "preprocessor", None) is not None,
                "the task has no preprocessor: load it with the one the folder holds (no preprocessor=None)")
        got = keras.ops.convert_to_numpy(result(result.preprocessor(np.array(_TEXTS))))
        require(got.shape == tuned.shape, f"the task answers with shape {got.shape}, the saved one with "
                                          f"{tuned.shape}: load the folder's task as it was saved")
        require(not np.array_equal(got, base), Hint(
            idea="the task answers like the base preset: the adapter is not loaded (section 10, 'LoRA: an "
                 "adapter beside the preset')",
            fix="load the adapter onto the task's backbone: task.backbone.load_lora_weights(adapter)"))
        require(np.allclose(got, tuned, rtol=0, atol=1e-5),
                "the task does not answer like the fine-tuned model: load the folder's weights "
                "(load_weights=True, the default), then the adapter onto its backbone, once")
    return "the preset's task, with its preprocessor and the adapter loaded, answers like the fine-tuned model"
