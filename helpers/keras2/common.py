"""Small bits the Keras 2 recipes share: how a model is named in messages, the "built?" check,
layers that recompute what they derive from their variables, the layers a configuration lists.

The lowest module of ``helpers.keras2``: it imports no other module of the package.
"""

from __future__ import annotations

from typing import Any

import keras

from helpers.errors import ModelNotBuiltError
from helpers.keras1 import layer_configs

__all__ = ["model_label", "model_layers", "refresh_derived_state", "require_built"]


def model_label(model: Any) -> str:
    """How messages name a model or layer: its class and its name.

    Example:
        >>> model_label(keras.layers.Dense(2, name="out"))
        "Dense 'out'"
    """
    return f"{type(model).__name__} {model.name!r}"


def require_built(model: Any) -> None:
    """Refuse anything but a Keras 3 model or layer whose variables exist (``ModelNotBuiltError``).

    Example:
        >>> require_built(keras.layers.Dense(2, name="out"))
        Traceback (most recent call last):
        ...
        helpers.errors.ModelNotBuiltError: Dense 'out' has no variables yet: build it first (...
    """
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(f"model must be a Keras 3 model or layer, not {type(model).__name__}")
    if not model.weights:
        raise ModelNotBuiltError(
            f"{model_label(model)} has no variables yet: build it first (call it on a batch, or give "
            "Sequential a keras.Input) so that every variable exists before restoring"
        )


def refresh_derived_state(model: Any, assigned: set[int]) -> list[str]:
    """Let layers that cache values computed from their variables recompute them; returns their names.

    An adapted ``Normalization`` keeps the mean and variance it computes from
    its variables in plain tensors: assigning the variables alone leaves it
    answering with the old ones. ``finalize_state`` recomputes them.
    ``assigned`` holds the ``id`` of each variable that was given a value.

    Example:
        >>> import numpy as np
        >>> norm = keras.layers.Normalization(name="norm")
        >>> norm.adapt(np.array([[1.0], [3.0]]))          # mean 2
        >>> _ = norm.adapt_mean.assign([10.0])             # a restored mean: not used yet
        >>> float(norm(np.array([[10.0]]))[0, 0])
        8.0
        >>> refresh_derived_state(norm, {id(norm.adapt_mean)})
        ['norm']
        >>> float(norm(np.array([[10.0]]))[0, 0])
        0.0
    """
    refreshed = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if hasattr(layer, "finalize_state") and any(id(v) in assigned for v in layer.weights):
            layer.finalize_state()
            refreshed.append(layer.name)
    return refreshed


def model_layers(config: Any):
    """The layer configurations listed by every model inside a Keras configuration (nested ones too).

    Example:
        >>> inner = {"class_name": "Sequential", "config": {"layers": [{"class_name": "Dense", "config": {}}]}}
        >>> [layer["class_name"] for layer in model_layers(inner)]
        ['Dense']
    """
    for item in layer_configs(config):
        layers = item["config"].get("layers")
        if isinstance(layers, list):
            yield from (layer for layer in layers if isinstance(layer, dict) and "class_name" in layer)
