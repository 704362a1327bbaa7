"""``convert_legacy_h5``: a Keras 2 legacy ``.h5`` re-saved in a Keras 3 format, every weight paired by name.

Keras 3's ``load_weights`` pairs a legacy ``.h5``'s arrays by position; this
recipe pairs each one with the variable the file names (layers in order, weights
by name, CuDNN layouts converted), refuses what does not pair, and writes
all or nothing::

    convert_legacy_h5("k2/model.h5", "k3/model.keras")                   # a whole model
    convert_legacy_h5("k2/weights.h5", "k3/m.weights.h5", model=twin)    # weights into a twin
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any

import keras
import numpy as np

from helpers.errors import Keras2MismatchError, NotACheckpointError, NotWritableError
from helpers.files import path_text, refuse_existing, refuse_unwritable
from helpers.keras1 import keras3_hard_sigmoid_problems
from helpers.keras2.common import model_label, refresh_derived_state, require_built
from helpers.keras2.h5 import DAMAGED_H5, describe_legacy_h5, h5_model_config, h5_texts, model_from_h5, open_h5

__all__ = ["convert_legacy_h5"]


def convert_legacy_h5(
    h5_path: str | os.PathLike,
    out_path: str | os.PathLike,
    model: Any = None,
    *,
    safe_mode: bool = True,
    custom_objects: dict[str, Any] | None = None,
) -> str:
    """Re-save a Keras 2 legacy ``.h5`` in a Keras 3 format (``.keras`` or ``.weights.h5``), checked.

    Without ``model`` the ``.h5`` must hold a whole model: Keras 3 rebuilds it
    from the stored architecture, with the Keras 2 arguments it no longer
    takes patched (``legacy_custom_objects``) and nested models renumbered
    (``compile=False``: the Keras 2 loss, metrics and optimizer state are not
    carried over). A configuration Keras 3 cannot rebuild raises
    ``LegacyModelError`` naming the layer, the reason and the route that
    works. With ``model`` (a built Keras 3 twin) only the weights are read.

    Either way every value goes to the variable the ``.h5`` names: layers
    are paired in order and must carry the file's names (or names the file
    does not know, as a twin built elsewhere has), and inside a layer each
    weight is found by its name (``dense_5/kernel``), not by its position.
    Recurrent weights in the CuDNN layout (Keras 2 ``CuDNNLSTM``/``CuDNNGRU``)
    are converted for a twin's ``LSTM``/``GRU`` (``reset_after=True``).
    Anything unpaired, misordered or of another shape raises
    ``Keras2MismatchError``; a folder that cannot be written into raises
    ``NotWritableError`` before anything is read; any failure leaves
    ``model`` unchanged (all or nothing), and the file is written under a
    temporary name and renamed only when complete. The values themselves
    are trusted: legacy HDF5 keeps no checksum, so a flipped bit inside a
    weight goes unseen unless it makes the value absurd (not finite, or
    beyond ±1e30: refused as damaged). Prove a conversion by equal outputs
    on the same input, as the chapter does.
    Adapted layers (``Normalization``) recompute what they derive from the
    loaded values. A ``Lambda`` holding Python code loads only with
    ``safe_mode=False``: pass it for a file you trust. Custom layers come
    in through ``custom_objects`` (``{"package>Name": cls}``). Refuses to overwrite
    ``out_path`` (``WouldOverwriteError``). Returns ``out_path``.

    Example (a whole model, then weights only into a twin, both written by Keras 2.15):
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> out = convert_legacy_h5("tests/data/tf215/recurrent.h5", os.path.join(folder, "model.keras"))
        >>> model = keras.models.load_model(out)    # a plain Keras 3 file: no custom objects needed
        >>> [layer.name for layer in model.layers]
        ['sequence', 'lstm', 'gru', 'out']
        >>> twin = keras.models.clone_model(model)
        >>> weights = convert_legacy_h5("tests/data/tf215/recurrent_weights.h5",
        ...                             os.path.join(folder, "m.weights.h5"), model=twin)
        >>> x = [np.ones((1, 5, 3), "float32")]
        >>> bool(np.array_equal(twin(x), model(x)))
        True
        >>> convert_legacy_h5("tests/data/tf215/recurrent.h5", out)
        Traceback (most recent call last):
        ...
        helpers.errors.WouldOverwriteError: ...
    """
    out = path_text(out_path, "output path")
    if not (out.endswith(".keras") or out.endswith(".weights.h5")):
        raise ValueError(f"out_path must end in .keras or .weights.h5 (a Keras 3 format), got {out!r}")
    refuse_existing(out, "a model file")
    refuse_unwritable(out)
    source = os.fspath(h5_path)
    description = describe_legacy_h5(source)
    if model is None:
        if not description.has_model:
            raise ValueError(
                f"{source!r} holds weights only: pass a built Keras 3 model of the same architecture (model=)"
            )
        model = model_from_h5(source, safe_mode, custom_objects)
    else:
        require_built(model)
        _refuse_keras3_hard_sigmoid(source, model)
    pairs = _pair_h5(source, model)
    assigned = {id(variable) for _, variable, _ in pairs}
    snapshot = [(variable, variable.numpy()) for _, variable, _ in pairs]
    _assign_all(pairs)
    try:
        refresh_derived_state(model, assigned)
        _save_new(model, out)
    except BaseException:  # the twin goes back to what it was: all or nothing
        for variable, old in snapshot:
            variable.assign(old)
        refresh_derived_state(model, assigned)
        raise
    return out


def _refuse_keras3_hard_sigmoid(path: str, model: Any) -> None:
    """A twin whose ``hard_sigmoid`` is Keras 3's where the whole-model file's is Keras 2's: refused."""
    with open_h5(path) as file:
        if "model_config" not in file.attrs:
            return
        config = h5_model_config(file)
    problems = keras3_hard_sigmoid_problems(config, model)
    if problems:
        raise Keras2MismatchError(path, model_label(model), hint="Keras 2's hard_sigmoid is clip(0.2x + 0.5, 0, 1), "
                                  "Keras 3's clip(x/6 + 0.5, 0, 1): " + "; ".join(problems))


def _save_new(model: Any, out: str) -> None:
    """Save ``model`` to ``out`` (``.keras`` or ``.weights.h5``) through a temporary file in the same folder."""
    folder = os.path.dirname(out) or "."
    suffix = ".keras" if out.endswith(".keras") else ".weights.h5"
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".converting-", suffix=suffix)
    except PermissionError:
        raise NotWritableError(out, folder) from None
    os.close(handle)
    try:
        model.save(temporary) if suffix == ".keras" else model.save_weights(temporary)
        refuse_existing(out, "a model file")  # written meanwhile by someone else: leave it
        os.replace(temporary, out)
    except PermissionError:
        raise NotWritableError(out, folder) from None
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)

# --------------------------------------------------------------------------- legacy .h5 weights, by name


def _h5_names(group: Any, name: str) -> list[str]:
    """A list attribute of a legacy ``.h5`` group; large ones are split into ``name0``, ``name1``..."""
    if name in group.attrs:
        return h5_texts(group.attrs[name])
    names, chunk = [], 0
    while f"{name}{chunk}" in group.attrs:
        names += h5_texts(group.attrs[f"{name}{chunk}"])
        chunk += 1
    return names


def _relative(name: str, layer: str) -> str:
    """A weight's name inside its layer: ``dense_7/kernel:0`` in ``dense_7`` (Keras 2) and
    ``sequential/dense_7/kernel`` (Keras 3) -> ``kernel``; ``dense_5/kernel:0`` in ``base`` stays."""
    name = re.sub(r":\d+$", "", name)
    match = re.search(r"(^|/)" + re.escape(layer) + "/", name)
    return name[match.end():] if match else name


# Weights Keras 3 renamed, by layer class: {Keras 2 name: Keras 3 name}.
_RENAMED = {"DepthwiseConv1D": {"depthwise_kernel": "kernel"}, "DepthwiseConv2D": {"depthwise_kernel": "kernel"}}


def _bidirectional_name(layer: Any, relative: str) -> str:
    """Keras 2 names a ``Bidirectional``'s halves ``forward_<layer>`` and ``backward_<backward layer>``;
    Keras 3 names a given ``backward_layer`` by its own name: a weight's first part becomes the twin's."""
    if type(layer).__name__ != "Bidirectional" or "/" not in relative:
        return relative
    head, rest = relative.split("/", 1)
    for prefix, half in (("forward_", layer.forward_layer), ("backward_", layer.backward_layer)):
        if head.startswith(prefix) and head != half.name and head[len(prefix):] == half.name.removeprefix(prefix):
            return f"{half.name}/{rest}"
    return relative


def _cudnn_hint(value: np.ndarray, variable: Any) -> str:
    shape = tuple(variable.shape)
    if variable.path.endswith("/bias") and value.ndim == 1 and value.size in (2 * int(np.prod(shape)),) \
            or (len(shape) == 2 and shape[0] == 2 and value.ndim == 1 and value.size == int(np.prod(shape))
                and variable.path.endswith("gru_cell/bias")):
        return (f"{variable.path!r} gets a bias in the CuDNN layout (input and recurrent biases apart, "
                "written by Keras 2 CuDNNLSTM/CuDNNGRU): it converts into LSTM or GRU(reset_after=True), "
                "not into GRU(reset_after=False)")
    return ""


def _check_value(path: str, key: str, value: np.ndarray) -> np.ndarray:
    """Refuse a value no trained weight holds (not finite, or beyond ±1e30): a flipped exponent bit."""
    if value.dtype.kind == "f" and value.size and not (np.all(np.isfinite(value)) and np.abs(value).max() <= 1e30):
        raise NotACheckpointError(path, f"{DAMAGED_H5}: weight {key!r} holds values no model holds (not finite, "
                                  "or beyond ±1e30; a flipped exponent bit? legacy HDF5 keeps no checksum)")
    return value


def _from_cudnn(layer: Any, weights: list[tuple[str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
    """CuDNNLSTM/CuDNNGRU weights in the layout of Keras' LSTM/GRU(reset_after=True); others unchanged.

    The CuDNN layout keeps input and recurrent biases apart (8×units for
    LSTM, 6×units for GRU) and each gate's input kernel in Fortran order;
    Keras 2's ``_convert_rnn_weights`` (tf-keras, hdf5_format.py) converts
    the same way: input kernels per gate ``k.T.reshape(k.shape, order="F")``,
    recurrent kernels per gate transposed, LSTM biases summed, GRU biases
    reshaped to (2, 3×units).
    """
    kind = type(layer).__name__
    named = {weight.rsplit("/", 1)[-1].split(":")[0]: index for index, (weight, _) in enumerate(weights)}
    if kind not in ("LSTM", "GRU") or set(named) != {"kernel", "recurrent_kernel", "bias"}:
        return weights
    kernel, recurrent, bias = (weights[named[n]][1] for n in ("kernel", "recurrent_kernel", "bias"))
    gates = 4 if kind == "LSTM" else 3
    units = recurrent.shape[0]
    if bias.shape != (2 * gates * units,) or (kind == "GRU" and not getattr(layer, "reset_after", True)):
        return weights  # not the CuDNN layout (or GRU(reset_after=False): refused by the shape check)
    per_gate = lambda array, f: np.hstack([f(k) for k in np.hsplit(array, gates)])  # noqa: E731
    converted = {
        "kernel": per_gate(kernel, lambda k: k.T.reshape(k.shape, order="F")),
        "recurrent_kernel": per_gate(recurrent, lambda k: k.T),
        "bias": bias.reshape(2, -1).sum(axis=0) if kind == "LSTM" else bias.reshape(2, -1),
    }
    return [(weight, converted[weight.rsplit("/", 1)[-1].split(":")[0]]) for weight, _ in weights]


def _pair_h5(path: str, model: Any) -> list[tuple[str, Any, np.ndarray]]:
    """``(file key, variable, value)`` for every weight of a legacy ``.h5``, paired by name; or raise."""
    with open_h5(path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        saved = []
        for name in _h5_names(group, "layer_names"):
            weights = [(weight, _check_value(path, f"{name}/{weight}", np.asarray(group[name][weight])))
                       for weight in _h5_names(group[name], "weight_names")]
            if weights:
                saved.append((name, weights))
        if "top_level_model_weights" in group and _h5_names(group["top_level_model_weights"], "weight_names"):
            raise Keras2MismatchError(path, model_label(model), hint="the file holds weights of the model itself "
                                      "(a subclassed Keras 2 model): rebuild it and use run_keras2 to re-save "
                                      "them as .weights.h5", unexpected=["top_level_model_weights"])
    layers = [layer for layer in model.layers if layer.weights]
    file_names, model_names = {name for name, _ in saved}, {layer.name for layer in layers}
    pairs, missing, unexpected, shapes, hints, renamed_layers = [], [], [], [], [], []
    for index in range(max(len(saved), len(layers))):
        if index >= len(saved):
            missing += [v.path for v in layers[index].weights]
            continue
        name, weights = saved[index]
        if index >= len(layers):
            unexpected += [f"{name}/{weight}" for weight, _ in weights]
            continue
        layer = layers[index]
        if name != layer.name and (name in model_names or layer.name in file_names):
            if file_names == model_names:  # the same names, elsewhere: layers in another order
                hints.append(f"layer {index} with weights is {name!r} in the file but {layer.name!r} in the "
                             "model (layers in another order?)")
            else:  # other names, some shared: automatic names counted from another start
                renamed_layers.append(index)
            unexpected += [f"{name}/{weight}" for weight, _ in weights]
            missing += [v.path for v in layer.weights]
            continue
        variables = {}
        for variable in layer.weights:
            variables.setdefault(_relative(variable.path, layer.name), []).append(variable)
        renamed = _RENAMED.get(type(layer).__name__, {})
        used = set()
        for weight, value in _from_cudnn(layer, weights):
            key = f"{name}/{weight}"
            relative = _relative(weight, name)
            relative = renamed.get(relative, relative)
            relative = _bidirectional_name(layer, relative)
            found = [v for v in variables.get(relative, []) if id(v) not in used]
            if not found:  # a cell Keras 2 did not name (CuDNNLSTM's bias:0 is LSTM's lstm_cell/bias): a unique last name
                last = [v for key, group in variables.items() for v in group
                        if key.rsplit("/", 1)[-1] == relative.rsplit("/", 1)[-1]]
                found = last if len(last) == 1 and id(last[0]) not in used else []
            if not found:
                unexpected.append(key)
                continue
            variable = found[0]
            used.add(id(variable))
            if value.shape != tuple(variable.shape):
                shapes.append((key, value.shape, tuple(variable.shape)))
                hints.append(_cudnn_hint(value, variable))
            else:
                pairs.append((key, variable, value))
        missing += [v.path for v in layer.weights if id(v) not in used]
    if renamed_layers:
        hints.append("the model's layer names are not the file's names (automatic names are counted from "
                     "where the session's count stood: lstm in one session is lstm_1 in another): give the "
                     "layers with weights the file's names, in this order: "
                     + ", ".join(repr(name) for name, _ in saved))
    if missing or unexpected or shapes:
        if missing and unexpected and not any(hints):
            hints.append("weights are found by the names the .h5 stores: give the model's layers (and the "
                         "layers of nested models) the file's names (describe_legacy_h5 lists them)")
        if missing and unexpected and any(isinstance(layer, (keras.layers.Bidirectional, keras.layers.TimeDistributed))
                                          for layer in layers):
            hints.append("inside Bidirectional/TimeDistributed the wrapped layer's name counts too "
                         "(forward_<name>): name the inner layer as the file does")
        raise Keras2MismatchError(path, model_label(model), hint="; ".join(h for h in hints if h),
                                  missing=missing, unexpected=unexpected, shape_mismatches=shapes)
    return pairs


def _assign_all(pairs: list[tuple[str, Any, np.ndarray]]) -> None:
    """Assign every value, or none: a failure half way puts the old values back."""
    snapshot = [(variable, variable.numpy()) for _, variable, _ in pairs]
    try:
        for _, variable, value in pairs:
            variable.assign(value)
    except Exception:
        for variable, old in snapshot:
            variable.assign(old)
        raise
