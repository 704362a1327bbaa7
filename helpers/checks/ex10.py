"""Checks for notebook 10 (moving Keras 2 models and checkpoints to Keras 3).

The checks build their own inputs in a temporary folder, with names, shapes
and values other than the notebook's: small SavedModels made with
``tf.Module``, and checkpoints laid out exactly as Keras 2's ``save_weights``
lays them out (``layer_with_weights-N/<name>/.ATTRIBUTES/VARIABLE_VALUE``,
plus ``optimizer/...`` values). ``write_keras2_layout`` writes those in this
process, so a check takes no Keras 2 subprocess; the tests compare its keys
with a real Keras 2 ``save_weights`` file of the same architecture.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require
from helpers.checks.toolkit import must_raise, same_arrays

__all__ = [
    "check_keras2_keys",
    "check_load_keras2_weights",
    "check_saved_model_predictor",
    "make_dense_net",
    "make_token_net",
    "reference_keras2_keys",
    "write_keras2_layout",
]

SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


# --------------------------------------------------------------------------- fixtures


def make_dense_net() -> keras.Sequential:
    """4 inputs -> Dense(5, no bias) -> Dropout -> BatchNormalization -> Dense(3), built (Keras 3)."""
    return keras.Sequential([
        keras.Input((4,)),
        keras.layers.Dense(5, activation="tanh", use_bias=False),
        keras.layers.Dropout(0.2),
        keras.layers.BatchNormalization(),
        keras.layers.Dense(3),
    ])


def make_token_net() -> keras.Model:
    """Functional: 6 tokens -> Embedding(15, 3) -> Flatten -> Dense(4) -> LayerNormalization -> Dense(2)."""
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(15, 3)(tokens)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(4, activation="relu")(x)
    x = keras.layers.LayerNormalization()(x)
    return keras.Model(tokens, keras.layers.Dense(2)(x))


def reference_keras2_keys(model: keras.Model) -> dict[str, Any]:
    """The keys Keras 2's ``save_weights`` writes for ``model``'s architecture, to ``model``'s variables."""
    weighted = [layer for layer in model.layers if layer.weights]
    return {
        f"layer_with_weights-{i}/{variable.name}{SUFFIX}": variable
        for i, layer in enumerate(weighted)
        for variable in layer.weights
    }


def _distinct_values(model: keras.Model, seed: int) -> dict[str, np.ndarray]:
    """Distinct non-zero values for every variable (biases and moving statistics too), by Keras 2 key."""
    rng = np.random.default_rng(seed)
    values = {}
    for key, variable in reference_keras2_keys(model).items():
        value = rng.uniform(0.2, 1.0, size=tuple(variable.shape)) * rng.choice([-1, 1], size=tuple(variable.shape))
        if "moving_variance" in key:
            value = np.abs(value) + 0.5
        values[key] = value.astype(np.float32)
    return values


class _Node(tf.Module):
    pass


def write_keras2_layout(
    values: dict[str, np.ndarray], prefix: str, optimizer_slots: Sequence[np.ndarray] = (), step: int = 7
) -> str:
    """Write ``{Keras 2 key: value}`` as an object-based checkpoint with Keras 2's object paths.

    Keys have the form ``layer_with_weights-N/<name>`` + the value suffix.
    With ``optimizer_slots``, an ``optimizer`` object is written as Keras 2's
    Adam writes it (``_iterations``, ``_learning_rate``, ``_variables/1..N``).
    """
    root = tf.train.Checkpoint()
    layers: dict[str, _Node] = {}
    for key, value in values.items():
        layer, name = key.removesuffix(SUFFIX).split("/")
        node = layers.setdefault(layer, _Node())
        setattr(node, name, tf.Variable(value))
    for layer, node in layers.items():
        setattr(root, layer, node)
    if optimizer_slots:
        optimizer = _Node()
        optimizer._iterations = tf.Variable(np.int64(step))
        optimizer._learning_rate = tf.Variable(np.float32(0.001))
        optimizer._variables = [optimizer._iterations] + [tf.Variable(slot) for slot in optimizer_slots]
        root.optimizer = optimizer
    return root.write(prefix)


def _adam_slots(values: dict[str, np.ndarray]) -> list[np.ndarray]:
    slots = []
    for key, value in values.items():
        if "moving_" not in key:
            slots += [np.full_like(value, 0.01), np.full_like(value, 0.002)]
    return slots


def _checkpoint_values(prefix: str) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(prefix)
    return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()}


# --------------------------------------------------------------------------- 10.1


class _TokenScorer(tf.Module):
    """``serving_default`` scores tokens; a ``serve`` endpoint (TFSMLayer's default) answers something else."""

    def __init__(self, dtype: tf.DType, output_name: str, seed: int, width: int = 2) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.table = tf.Variable(rng.uniform(-1, 1, size=(12, 3)).astype(np.float32))
        self.kernel = tf.Variable(rng.uniform(-1, 1, size=(3, width)).astype(np.float32))
        self.bias = tf.Variable(np.linspace(0.3, -0.7, width).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 5], dtype, name="token_ids")])
        def score(token_ids):
            pooled = tf.reduce_mean(tf.gather(self.table, token_ids), axis=1)
            return {output_name: tf.matmul(pooled, self.kernel) + self.bias}

        @tf.function(input_signature=[tf.TensorSpec([None, 5], dtype, name="token_ids")])
        def serve(token_ids):  # another endpoint: the pooled embeddings' kernel part, without the bias
            pooled = tf.reduce_mean(tf.gather(self.table, token_ids), axis=1)
            return {output_name: tf.matmul(pooled, self.kernel)}

        self.score, self.serve = score, serve

    def expected(self, tokens: np.ndarray) -> np.ndarray:
        pooled = self.table.numpy()[tokens].mean(axis=1)
        return pooled @ self.kernel.numpy() + self.bias.numpy()


def _saved_scorer(folder: str, name: str, dtype: tf.DType, output_name: str, seed: int, width: int = 2):
    module = _TokenScorer(dtype, output_name, seed, width)
    path = os.path.join(folder, name)
    tf.saved_model.save(module, path, signatures={"serving_default": module.score})
    return path, module


@exercise_check("10.1")
def check_saved_model_predictor(saved_model_predictor: Callable) -> str:
    tokens = np.array([[1, 4, 4, 9, 11], [0, 2, 3, 5, 7], [10, 10, 1, 6, 8]])
    with tempfile.TemporaryDirectory() as folder:
        cases = [
            ("scorer_int32", tf.int32, "scores", tokens.astype(np.int64), 2),
            ("scorer_int64", tf.int64, "logits", tokens.astype(np.int32), 1),  # one output column
        ]
        for name, dtype, output_name, given, width in cases:
            path, module = _saved_scorer(folder, name, dtype, output_name, seed=len(name) + dtype.size, width=width)
            predict = saved_model_predictor(path)
            require(callable(predict), f"saved_model_predictor should return a function, got {type(predict).__name__}")
            result = predict(given)
            require(
                not isinstance(result, dict),
                "your function returns the dict of the signature's outputs: return the single output's "
                "values as a NumPy array (the dict's only value)",
            )
            require(
                isinstance(result, np.ndarray),
                f"the predictions should be a NumPy array, got {type(result).__name__}: "
                "convert with np.asarray(...) or .numpy()",
            )
            require(
                result.shape == (3, width),
                f"the predictions of the SavedModel whose input is {dtype.name} have shape {result.shape}, "
                f"expected {(3, width)}: return the output as the signature gives it (no squeeze or reshape)",
            )
            require(
                np.allclose(result, module.expected(tokens), atol=1e-5),
                f"the predictions of the SavedModel whose input is {dtype.name} are wrong: call its "
                "serving_default signature (TFSMLayer's default endpoint is 'serve', another one)",
            )
    return ("a SavedModel's serving_default signature answers through your function, "
            "for int32 and int64 signatures and either integer dtype of tokens")


# --------------------------------------------------------------------------- 10.2


@exercise_check("10.2")
def check_load_keras2_weights(load_keras2_weights: Callable) -> str:
    with tempfile.TemporaryDirectory() as folder:
        source = make_dense_net()
        values = _distinct_values(source, seed=21)
        prefix = write_keras2_layout(values, os.path.join(folder, "keras2", "weights"), _adam_slots(values))
        on_disk = _checkpoint_values(prefix)

        model = make_dense_net()
        load_keras2_weights(prefix, model)
        wrong = [key for key, variable in reference_keras2_keys(model).items()
                 if not np.allclose(variable.numpy(), values[key])]
        untouched = len(wrong) == len(values)
        require(
            not untouched,
            "the model kept all of its own values: Keras 3 stores variables under other paths than "
            "Keras 2, so a plain tf.train.Checkpoint(...).restore() finds nothing. Restore through a key map "
            "(restore_keras2_checkpoint)",
        )
        moving = [key for key in wrong if "moving_" in key]
        require(
            not moving,
            "BatchNormalization's moving statistics were not restored (they are non-trainable "
            "variables, but part of the model): " + ", ".join(k.removesuffix(SUFFIX) for k in moving),
        )
        require(not wrong, "these variables did not get the file's values: "
                + ", ".join(k.removesuffix(SUFFIX) for k in wrong))
        require(same_arrays(on_disk, _checkpoint_values(prefix)), "the checkpoint file was changed: only read it")

        short = dict(values)
        for key in [k for k in values if k.startswith("layer_with_weights-2/")]:
            del short[key]
        bad_files = {
            "lacks the last Dense layer": short,
            "has a weight the model does not have": {**values, f"layer_with_weights-3/kernel{SUFFIX}":
                                                     np.ones((3, 3), np.float32)},
            "has a BatchNormalization of another width": {
                **values, **{k: np.ones(6, np.float32) for k in values if k.startswith("layer_with_weights-1/")}
            },
        }
        for index, (problem, bad_values) in enumerate(bad_files.items()):
            bad_prefix = write_keras2_layout(bad_values, os.path.join(folder, f"bad{index}", "weights"))
            must_raise(lambda: load_keras2_weights(bad_prefix, make_dense_net()),  # "an exception", of any type
                       f"a checkpoint that {problem} was accepted without an error: the restore must be "
                       "strict (every variable and every weight matched), not strict=False")
    return ("every variable came in, BatchNormalization's moving statistics too, the file was only read, "
            "and three mismatched checkpoints raised")


# --------------------------------------------------------------------------- 10.3


def _key_hint(given: list[str], expected: list[str], frozen_left_out: bool = False) -> str:
    def names(keys: list[str]) -> list[str]:
        return sorted(key.removesuffix(SUFFIX).split("/", 1)[-1] for key in keys)

    if given and not any(key.endswith(SUFFIX) for key in given):
        return f"Keras 2's keys end with {SUFFIX!r}; yours look like {given[0]!r}"
    if any("/_kernel/" in key or "/_embeddings/" in key for key in given):
        return ("'_kernel' and '_embeddings' are where Keras 3 keeps those variables; Keras 2 used the "
                "variable's own name: variable.name")
    if any(key.startswith("layer-") for key in given):
        return "Keras 2's save_weights keys count only the layers that have weights: 'layer_with_weights-N'"
    if not any("moving_" in key for key in given) and any("moving_" in key for key in expected):
        return ("BatchNormalization's moving statistics are missing: they are non-trainable, "
                "but save_weights writes them (use layer.weights, not trainable_weights)")
    if frozen_left_out:
        return ("a frozen layer (trainable=False) keeps its weights, and Keras 2 numbered it: count every "
                "layer whose layer.weights is not empty")
    if names(given) == names(expected):
        return ("the variable names are right but the layer numbers are not: number only the layers "
                "that have weights (an InputLayer, Dropout or Flatten has none), from 0")
    missing, extra = sorted(set(expected) - set(given)), sorted(set(given) - set(expected))
    return (f"{len(missing)} key(s) missing, e.g. {_short_key(missing)}, and {len(extra)} unexpected, e.g. "
            f"{_short_key(extra)}: each key is 'layer_with_weights-N/' + the variable's name + the value suffix")


def _short_key(keys: list[str], most: int = 60) -> str:
    """The first key, quoted, its middle left out when long (a hint stays within 300 characters)."""
    if not keys:
        return "none"
    key = keys[0]
    return repr(key if len(key) <= most else key[: most // 2 - 1] + "…" + key[-(most // 2 - 1):])


@exercise_check("10.3")
def check_keras2_keys(keras2_keys: Callable) -> str:
    for make in (make_dense_net, make_token_net):
        model = make()
        first = next(layer for layer in model.layers if layer.weights)
        first.trainable = False  # a frozen layer with weights: Keras 2 numbers it all the same
        expected = reference_keras2_keys(model)
        frozen_ids = {id(v) for v in first.weights}
        given = keras2_keys(model)
        require(isinstance(given, dict), f"keras2_keys should return a dict, got {type(given).__name__}")
        require(sorted(given) == sorted(expected),
                f"for the {type(model).__name__} model: " + _key_hint(
                    sorted(given), sorted(expected), not any(id(v) in frozen_ids for v in given.values())))
        ids = {id(v) for v in model.weights}
        require(all(id(v) in ids for v in given.values()),
                "every value must be a variable of the model passed in (e.g. layer.kernel)")
        wrong = [key for key in expected if given[key] is not expected[key]]
        require(not wrong, "these keys point at the wrong variable: "
                + ", ".join(k.removesuffix(SUFFIX) for k in wrong))
    return "the keys Keras 2 writes, each to its variable, for a Sequential and a functional model"
