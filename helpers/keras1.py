"""Keras 1 ``.h5`` files in Keras 3: rebuild the model in code, then read the weights by layer name.

Keras 1 (April 2016 to March 2017) wrote the same HDF5 layout as Keras 2 (``model_config``,
``model_weights`` with ``layer_names`` and per-layer ``weight_names``) but with
its own vocabulary: ``Convolution2D(nb_filter, nb_row, nb_col, dim_ordering=...)``,
``Dense(output_dim, init=...)``, weights named ``dense_1_W``/``dense_1_b``, and an
LSTM stored as twelve arrays (``lstm_1_W_i``, ``lstm_1_U_i``, ``lstm_1_b_i``, ...
one triple per gate, in the order i, c, f, o; ``consume_less='cpu'``/``'mem'``, the default)
or three (``'gpu'``). Keras 3 cannot rebuild such a
configuration, and its ``load_weights`` pairs arrays by position; so the route is
a Keras 3 model written in code and ``load_keras1_weights``::

    twin = keras.Sequential([keras.Input((1, 1)),
                             keras.layers.LSTM(50, recurrent_activation=keras1_hard_sigmoid,
                                               name="lstm_1"),
                             keras.layers.Dense(1, name="dense_1")])
    load_keras1_weights("old/model.h5", twin)

Keras 1's ``hard_sigmoid`` is ``clip(0.2 x + 0.5, 0, 1)`` (the default
``inner_activation`` of its LSTM and GRU); Keras 3's ``hard_sigmoid`` is
``clip(x / 6 + 0.5, 0, 1)``: ``keras1_hard_sigmoid`` is the old one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np

from helpers.errors import Keras2MismatchError, LegacyModelError, ModelNotBuiltError, NotACheckpointError
from helpers.files import path_text


@keras.saving.register_keras_serializable(package="helpers.keras1")
def keras1_hard_sigmoid(x: Any) -> Any:
    """Keras 1's (and Keras 2's) ``hard_sigmoid``: ``clip(0.2 x + 0.5, 0, 1)``.

    Example:
        >>> [float(v) for v in keras1_hard_sigmoid(np.array([-3.0, 0.0, 1.0, 3.0]))]
        [0.0, 0.5, 0.7, 1.0]
    """
    return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)



def layer_configs(config: Any):
    """Every ``{"class_name", "config"}`` dict inside a Keras 1/2/3 configuration (nested models, wrappers).

    Example:
        >>> inner = {"class_name": "GRU", "config": {"units": 4}}
        >>> wrapper = {"class_name": "Bidirectional", "config": {"layer": inner}}
        >>> [layer["class_name"] for layer in layer_configs({"layers": [wrapper]})]
        ['Bidirectional', 'GRU']
    """
    if isinstance(config, dict):
        if "class_name" in config and isinstance(config.get("config"), dict):
            yield config
        for value in config.values():
            yield from layer_configs(value)
    elif isinstance(config, list):
        for value in config:
            yield from layer_configs(value)


def keras3_hard_sigmoid_problems(config: Any, model: Any) -> list[str]:
    """Layers of ``model`` computing Keras 3's ``hard_sigmoid`` where a Keras 1/2 configuration says ``hard_sigmoid``.

    Keras 1 and Keras 2 read the name as ``clip(0.2 x + 0.5, 0, 1)``, Keras 3
    as ``clip(x / 6 + 0.5, 0, 1)``: a twin built with the name answers
    differently. Layers are matched by name (a wrapped layer also as
    ``forward_<name>``/``backward_<name>``). One line per layer and argument.

    Example:
        >>> twin = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="hard_sigmoid", name="d")])
        >>> keras3_hard_sigmoid_problems({"class_name": "Dense", "config": {"name": "d", "activation": "hard_sigmoid"}},
        ...                              twin)[0][:60]
        "layer 'd': the file's activation is Keras 1/2's hard_sigmoid"
    """
    wanted: dict[str, set[str]] = {}
    for layer in layer_configs(config):
        settings = layer["config"]
        for argument in ("activation", "recurrent_activation", "inner_activation"):
            if settings.get(argument) == "hard_sigmoid" and settings.get("name"):
                own = "recurrent_activation" if argument == "inner_activation" else argument
                wanted.setdefault(settings["name"], set()).add(own)
    problems = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        name = layer.name
        for prefix in ("forward_", "backward_"):
            if name not in wanted and name.startswith(prefix):
                name = name[len(prefix):]
        for argument in sorted(wanted.get(name, ())):
            if getattr(layer, argument, None) is keras.activations.hard_sigmoid:
                problems.append(f"layer {layer.name!r}: the file's {argument} is Keras 1/2's hard_sigmoid "
                                f"(0.2x + 0.5), the model's is Keras 3's (x/6 + 0.5); pass "
                                f"{argument}=helpers.keras1.keras1_hard_sigmoid")
    return problems


@dataclass
class Keras1File:
    """What a Keras 1 ``.h5`` holds: its version, its layers' classes and weights, its configuration."""

    path: str
    keras_version: str
    backend: str | None  # Keras 1 does not record it: None
    layers: dict[str, list[tuple[str, tuple[int, ...]]]] = field(default_factory=dict)  # name -> weights
    classes: dict[str, str] = field(default_factory=dict)  # layer name -> Keras 1 class, where configured
    configs: dict[str, dict] = field(default_factory=dict)  # layer name -> Keras 1 layer config


class Keras1LayoutError(LegacyModelError):
    """A Keras 1 file's weights cannot go into the model as it is built; says which layer and what works.

    Example:
        >>> raise Keras1LayoutError("old/m.h5", ["layer 'lstm_1': ..."], route="pass ...")
        Traceback (most recent call last):
        ...
        helpers.keras1.Keras1LayoutError: the Keras 1 weights in 'old/m.h5' do not fit the model as built:
          layer 'lstm_1': ...
          route: pass ...
    """

    def __init__(self, path: str | os.PathLike, problems: list[str], route: str) -> None:
        super().__init__(path, problems, route)
        lines = [f"the Keras 1 weights in {self.path!r} do not fit the model as built:"]
        self.args = ("\n".join(lines + [f"  {p}" for p in self.problems] + [f"  route: {route}"]),)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _config_layers(config: Any) -> list[dict]:
    """The layer configurations of a Keras 1 ``model_config`` (Sequential lists them directly)."""
    if isinstance(config, dict):
        inner = config.get("config")
        if isinstance(inner, list):  # Keras 1 Sequential: {"class_name": "Sequential", "config": [layers]}
            return [layer for item in inner for layer in _config_layers(item)] or inner
        if isinstance(inner, dict) and isinstance(inner.get("layers"), list):
            return [layer for item in inner["layers"] for layer in _config_layers(item)]
        if "class_name" in config:
            return [config]
    return []


def describe_keras1_h5(path: str | os.PathLike) -> Keras1File:
    """Read a Keras 1 ``.h5`` (full model or weights only) without Keras: version, layers, weights.

    Raises ``NotACheckpointError`` for a missing or non-HDF5 file, or an ``.h5``
    that Keras 1 did not write (another ``keras_version``: Keras 2 and 3 files
    have their own routes, ``convert_legacy_h5`` and ``load_model``).

    Example:
        >>> info = describe_keras1_h5("tests/data/keras1-dl4j/simple_lstm_th_keras_1_model.h5")
        >>> info.keras_version, info.classes["lstm_1"], [name for name, _ in info.layers["dense_1"]]
        ('1.2.2', 'LSTM', ['dense_1_W', 'dense_1_b'])
    """
    import h5py

    text = path_text(path, "Keras 1 file")
    if not os.path.isfile(text):
        raise NotACheckpointError(text, "no such file" if not os.path.exists(text) else "not a file")
    try:
        file = h5py.File(text, "r")
    except OSError:
        raise NotACheckpointError(text, "not an HDF5 file (a Keras 1 model or weights file is HDF5)") from None
    with file:
        version = _text(file.attrs.get("keras_version", ""))
        if not version.startswith("1."):
            written = f"keras_version {version!r}" if version else "no keras_version attribute"
            raise NotACheckpointError(text, f"not a Keras 1 file ({written}): a Keras 2 .h5 goes through "
                                      "helpers.keras2.convert_legacy_h5, a Keras 3 file through load_model")
        group = file["model_weights"] if "model_weights" in file else file
        info = Keras1File(text, version, _text(file.attrs["backend"]) if "backend" in file.attrs else None)
        for name in (_text(n) for n in group.attrs.get("layer_names", [])):
            if name not in group:
                raise NotACheckpointError(text, f"damaged: layer {name!r} is listed but has no group")
            names = [_text(w) for w in group[name].attrs.get("weight_names", [])]
            absent = [w for w in names if w not in group[name]]
            if absent:
                raise NotACheckpointError(text, f"damaged: layer {name!r} lists weight {absent[0]!r}, which the "
                                          "file does not hold")
            info.layers[name] = [(w, tuple(group[name][w].shape)) for w in names]
        if "model_config" in file.attrs:
            for layer in _config_layers(json.loads(_text(file.attrs["model_config"]))):
                name = layer.get("config", {}).get("name")
                if name:
                    info.classes[name], info.configs[name] = layer["class_name"], layer["config"]
    return info


def _short(weight: str, layer: str) -> str:
    """``dense_1_W`` or ``convolution2d_1_W:0`` in layer ``dense_1`` -> ``W``."""
    weight = weight.split(":")[0]
    return weight[len(layer) + 1:] if weight.startswith(layer + "_") else weight


_GATES = {"LSTM": "ifco", "GRU": "zrh"}  # Keras 3's order of the gates in kernel, recurrent_kernel, bias


def _convert(kind: str, arrays: dict[str, np.ndarray], config: dict, kernels_from: str | None,
             where: str) -> dict[str, np.ndarray]:
    """Keras 1 arrays of one layer (by short name) -> ``{Keras 3 weight name: array}``."""
    if kind in _GATES and set(arrays) == {"W", "U", "b"}:  # consume_less='gpu': already Keras 3's order
        return {"kernel": arrays["W"], "recurrent_kernel": arrays["U"], "bias": arrays["b"]}
    if kind in _GATES:
        gates = _GATES[kind]
        return {"kernel": np.hstack([arrays[f"W_{g}"] for g in gates]),
                "recurrent_kernel": np.hstack([arrays[f"U_{g}"] for g in gates]),
                "bias": np.concatenate([arrays[f"b_{g}"] for g in gates])}
    renamed = {"W": "kernel", "U": "recurrent_kernel", "b": "bias", "running_std": "moving_variance",
               "running_mean": "moving_mean"}
    if kind == "Embedding":
        renamed["W"] = "embeddings"
    out = {renamed.get(short, short): value for short, value in arrays.items()}
    if kind.startswith("Conv") and "kernel" in out:
        kernel = out["kernel"]
        ordering = config.get("dim_ordering")
        if ordering not in ("th", "tf"):
            raise Keras1LayoutError(where, [f"layer {config.get('name', '?')!r}: a convolution kernel, and the "
                                           "file has no configuration saying its dim_ordering ('th': "
                                           "(out, in, rows, cols), 'tf': (rows, cols, in, out))"],
                                    route="pass dim_ordering='th' or 'tf' (the one the model was built with)")
        if ordering == "th":  # (out, in, rows, cols) -> (rows, cols, in, out)
            kernel = np.transpose(kernel, tuple(range(2, kernel.ndim)) + (1, 0))
        if kind == "Conv1D" and kernel.ndim == 4:  # Keras 1 kept 1D kernels as (length, 1, in, out)
            kernel = kernel[:, 0]
        if kernels_from == "theano":  # Theano convolved (flipped kernels); TensorFlow correlates
            kernel = kernel[tuple([slice(None, None, -1)] * (kernel.ndim - 2) + [slice(None)] * 2)]
        elif kernels_from != "tensorflow":
            raise Keras1LayoutError(where, [f"layer {config.get('name', '?')!r}: a convolution kernel, and "
                                           "Keras 1 files do not record which backend wrote them (Theano "
                                           "flipped kernels, TensorFlow did not)"],
                                   route="pass kernels_from='tensorflow' or 'theano' (whichever trained the "
                                         "model), then compare outputs with the ones its authors published")
        out["kernel"] = np.ascontiguousarray(kernel)
    return out


def _activation_problem(layer: Any, config: dict) -> str:
    """A recurrent layer whose gate activation is not the file's (Keras 3 changed ``hard_sigmoid``)."""
    wanted = config.get("inner_activation")
    if wanted is None or not hasattr(layer, "recurrent_activation"):
        return ""
    have = layer.recurrent_activation
    right = keras1_hard_sigmoid if wanted == "hard_sigmoid" else keras.activations.get(wanted)
    if have is right or getattr(have, "__name__", "") == getattr(right, "__name__", None):
        return ""
    have_name = getattr(have, "__name__", str(have))
    if wanted == "hard_sigmoid":
        keras3 = " (Keras 3's: x/6 + 0.5)" if have is keras.activations.hard_sigmoid else ""
        return (f"layer {layer.name!r}: the file's gates use Keras 1's hard_sigmoid (0.2x + 0.5), the model's "
                f"recurrent_activation is {have_name!r}{keras3}; pass "
                "recurrent_activation=helpers.keras1.keras1_hard_sigmoid")
    return (f"layer {layer.name!r}: the file's inner_activation is {wanted!r}, the model's recurrent_activation "
            f"is {have_name!r}; pass recurrent_activation={wanted!r}")


def _relative_path(variable_path: str, layer_path: str) -> str:
    """``seq/lstm_1/lstm_cell/kernel`` in layer ``seq/lstm_1`` -> ``kernel`` (the last part, when unique)."""
    relative = variable_path[len(layer_path) + 1:] if variable_path.startswith(layer_path + "/") else variable_path
    return relative.rsplit("/", 1)[-1] if relative.count("/") <= 1 else relative


def _weighted_layers(model: Any) -> list[Any]:
    """The layers that own weights, inside nested models too (not the cells inside a recurrent layer)."""
    found = []
    for layer in getattr(model, "layers", [model]):
        if isinstance(layer, keras.Model):
            found += _weighted_layers(layer)
        elif layer.weights:
            found.append(layer)
    return found


_RECURRENT = ("LSTM", "GRU", "SimpleRNN")
_DATA_FORMAT = {"th": "channels_first", "tf": "channels_last"}
_BIDIRECTIONAL_ROUTE = ("Keras 1 Bidirectional files are not handled here: load them with tf-keras "
                        "(load_weights into a tf-keras twin), then re-save for Keras 3")


def _layout_problems(layer: Any, file_class: str | None, config: dict) -> list[str]:
    """What makes ``layer`` compute otherwise than the Keras 1 layer ``config`` describes (class, data_format)."""
    kind, problems = type(layer).__name__, []
    if "Bidirectional" in (kind, file_class):
        problems.append(f"layer {layer.name!r}: Bidirectional ({_BIDIRECTIONAL_ROUTE})")
    elif file_class in _RECURRENT and kind != file_class:
        problems.append(f"layer {layer.name!r}: file {file_class}, model {kind}")
    return problems


def _data_format_problems(model: Any, configs: dict[str, dict], ordering: str | None) -> list[str]:
    """Layers of ``model`` whose ``data_format`` is not the file's ``dim_ordering`` (Flatten -> Dense rows)."""
    problems = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        said = configs.get(layer.name, {}).get("dim_ordering")
        if not said and ordering and layer.weights:  # the caller's ordering: for the layers with weights
            said = ordering
        wanted = _DATA_FORMAT.get(said or "")
        have = getattr(layer, "data_format", None)
        if wanted and have and have != wanted:
            problems.append(f"layer {layer.name!r}: the file's dim_ordering is "
                            f"{'th' if wanted == 'channels_first' else 'tf'}, the model's data_format is "
                            f"{have!r}; build it with data_format={wanted!r}")
    return problems


def load_keras1_weights(path: str | os.PathLike, model: Any, *, kernels_from: str | None = None,
                        dim_ordering: str | None = None) -> list[str]:
    """Read a Keras 1 ``.h5``'s weights into a built Keras 3 model, by layer name; all or nothing.

    Every layer with weights in the file must be a layer of ``model`` with the
    same name, and the other way round. Keras 1's layout is converted: ``W``,
    ``U``, ``b`` become ``kernel``, ``recurrent_kernel``, ``bias`` (``embeddings``
    for ``Embedding``, ``moving_mean``/``moving_variance`` for ``running_mean``/
    ``running_std``); an LSTM's twelve arrays (``consume_less='cpu'``/``'mem'``,
    the default: ``W_i``, ``U_i``, ``b_i``, ... in the order i, c, f, o) or three
    (``'gpu'``: ``W``, ``U``, ``b``, already i, f, c, o) become Keras 3's three, a
    GRU's nine (z, r, h) or three the three of ``GRU(reset_after=False)``; a
    ``th`` (``dim_ordering='th'``) convolution kernel is transposed to Keras 3's
    layout, and the model must then be built ``data_format='channels_first'``
    (``'tf'``: ``'channels_last'``; otherwise a Flatten -> Dense after it would
    answer wrong). A weights-only file (no configuration) with a convolution
    needs ``dim_ordering='th'`` or ``'tf'``. Keras 1 files do not say which
    backend wrote them, and Theano flipped convolution kernels: a file with a
    convolution needs ``kernels_from='tensorflow'`` or ``'theano'``. A recurrent
    layer whose gate activation is not the file's ``inner_activation`` is
    refused (Keras 3's ``hard_sigmoid`` is not Keras 1's: use
    ``keras1_hard_sigmoid``), and so is a recurrent layer of another class.
    Keras 1 ``Bidirectional`` is not handled (route: tf-keras, ``load_weights``
    into a tf-keras twin).

    Anything missing, extra or of another shape raises ``Keras2MismatchError``
    (a ``CheckpointMismatchError``) naming every such weight; a layout problem
    (activation, class, ordering, data_format, a convolution of unknown origin)
    raises ``Keras1LayoutError`` naming every problem at once; nothing is
    assigned unless everything fits, and the file is only read. Returns the
    names of the layers loaded. Prove it by outputs against the ones the
    model's authors recorded.

    Example:
        >>> import keras
        >>> twin = keras.Sequential([keras.Input((1, 1)),
        ...     keras.layers.LSTM(50, recurrent_activation=keras1_hard_sigmoid, name="lstm_1"),
        ...     keras.layers.Dense(1, name="dense_1")])
        >>> load_keras1_weights("tests/data/keras1-dl4j/simple_lstm_th_keras_1_model.h5", twin)
        ['lstm_1', 'dense_1']
        >>> y = twin(np.array([[[-4.3334365]]], np.float32))    # the first input Keras 1.2.2 was given
        >>> round(float(y[0, 0]), 4)    # Keras 1.2.2 answered -3.9793692
        -3.9794
    """
    import h5py

    info = describe_keras1_h5(path)
    if kernels_from not in (None, "tensorflow", "theano"):
        raise ValueError(f"kernels_from must be 'tensorflow' or 'theano', not {kernels_from!r}")
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(f"model must be a Keras 3 model or layer, not {type(model).__name__}")
    if not model.weights:
        raise ModelNotBuiltError(f"{type(model).__name__} {model.name!r} has no variables yet: build it first "
                                 "(give Sequential a keras.Input, or call it once)")
    layers = {layer.name: layer for layer in _weighted_layers(model)}
    target = f"{type(model).__name__} {model.name!r}"
    missing = [v.path for name, layer in layers.items() if name not in info.layers for v in layer.weights]
    unexpected = [f"{name}/{w}" for name, weights in info.layers.items() if weights and name not in layers
                  for w, _ in weights]
    if dim_ordering not in (None, "th", "tf"):
        raise ValueError(f"dim_ordering must be 'th' or 'tf', not {dim_ordering!r}")
    pairs, shapes, problems, routes = [], [], [], []
    problems += _data_format_problems(model, info.configs, dim_ordering)
    with h5py.File(info.path, "r") as file:
        group = file["model_weights"] if "model_weights" in file else file
        for name, weights in info.layers.items():
            if not weights or name not in layers:
                continue
            layer, config = layers[name], info.configs.get(name, {})
            problem = _activation_problem(layer, config)
            if problem:
                problems.append(problem)
            layout = _layout_problems(layer, info.classes.get(name), config)
            if layout:
                problems += layout
                continue
            arrays = {_short(w, name): np.asarray(group[name][w]) for w, _ in weights}
            kind = type(layer).__name__
            settings = {"name": name, **config}
            if dim_ordering and not settings.get("dim_ordering"):
                settings["dim_ordering"] = dim_ordering
            try:
                converted = _convert(kind, arrays, settings, kernels_from, info.path)
            except KeyError as gate:  # a recurrent layer without one of its per-gate arrays
                missing.append(f"{name}/{name}_{gate.args[0]}")
                continue
            except Keras1LayoutError as error:  # a convolution of unknown backend or ordering: said with the rest
                problems += error.problems
                routes.append(error.route)
                continue
            variables = {_relative_path(v.path, layer.path): v for v in layer.weights}
            for short, value in converted.items():
                variable = variables.pop(short, None)
                if variable is None:
                    unexpected.append(f"{name}/{name}_{short}")
                elif tuple(value.shape) != tuple(variable.shape):
                    shapes.append((f"{name}/{short}", tuple(value.shape), tuple(variable.shape)))
                else:
                    pairs.append((variable, value))
            missing += [v.path for v in variables.values()]
    hints = []
    if any(s[0].endswith("/bias") and len(s[2]) == 2 for s in shapes):
        hints.append("Keras 1's GRU is Keras 3's GRU(reset_after=False)")
    if missing and unexpected:
        hints.append("layers are paired by name: give the model's layers the file's names "
                     f"({', '.join(repr(n) for n, w in info.layers.items() if w)})")
    if problems:  # every problem at once: the layout ones, then the unpaired weights and shapes
        problems += ([f"missing from the file: {', '.join(missing)}"] if missing else []) + (
            [f"in the file, not in the model: {', '.join(unexpected)}"] if unexpected else []) + [
            f"shape of {key}: file {a}, model {b}" for key, a, b in shapes] + hints
        route = "; ".join(dict.fromkeys(routes + ["rebuild those layers as the file describes, then call "
                                                   "load_keras1_weights again"]))
        raise Keras1LayoutError(info.path, problems, route=route)
    if missing or unexpected or shapes:
        raise Keras2MismatchError(info.path, target, hint="; ".join(hints), missing=missing,
                                  unexpected=unexpected, shape_mismatches=shapes)
    snapshot = [(variable, variable.numpy()) for variable, _ in pairs]
    try:
        for variable, value in pairs:
            variable.assign(value)
    except BaseException:  # all or nothing: put back what was there
        for variable, old in snapshot:
            variable.assign(old)
        raise
    return [name for name, weights in info.layers.items() if weights]
