"""Keras 2 configurations rebuilt by Keras 3: ``legacy_custom_objects`` and the patched classes.

Keras 3 refuses arguments Keras 2 wrote (``time_major``, ``groups`` of depthwise
convolutions, ``MultiHeadAttention``'s build shapes...) and reads some Keras 2
call records otherwise (keyword tensors, calls of nested models). The classes here
drop what changes nothing and refuse, naming the layer and the route that works,
what would change the computation::

    model = keras.models.load_model("k2/rnn.h5", custom_objects=legacy_custom_objects(), compile=False)

The module works on configurations (dicts) only; ``helpers.keras2.h5`` reads them from files.
"""

from __future__ import annotations

import copy
from typing import Any

import keras

from helpers.errors import LEGACY_ROUTE, LegacyModelError, first_line
from helpers.keras1 import keras1_hard_sigmoid, layer_configs
from helpers.keras2.common import model_layers

__all__ = ["legacy_custom_objects", "model_from_keras2_config", "rebuild_problems"]

_ANY = object()  # an argument Keras 3 ignores whatever its value
_RNNS = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")
_GROUPED = ("DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
            "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
# Keras 2 arguments Keras 3 refuses, by class: {argument: the one value Keras 3 behaves like, or _ANY}.
_KERAS2_ONLY: dict[str, dict[str, Any]] = {
    **{name: {"time_major": False} for name in _RNNS + ("RNN",)},
    # Keras 2 accepted groups in these classes and ignored it: groups=2 computes like groups=1
    # (measured with TF 2.15.1). Conv1D/2D/3D do group in both versions: not here.
    **{name: {"groups": _ANY} for name in _GROUPED},
    # Keras 2's separable convolutions took kernel_* arguments and never used them.
    **{name: {"groups": _ANY, "kernel_initializer": _ANY, "kernel_regularizer": _ANY, "kernel_constraint": _ANY}
       for name in ("SeparableConv1D", "SeparableConv2D")},
    # Keras 2.13+ records the shapes it was built for; Keras 3 builds from the call.
    "MultiHeadAttention": {"query_shape": _ANY, "key_shape": _ANY, "value_shape": _ANY},
    # Keras 2 wrote Dropout's noise_shape and ignored it here (the shape comes from the input).
    **{name: {"trainable": _ANY, "noise_shape": _ANY}
       for name in ("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")},
}
_WHY = {
    "time_major": "time_major=True (inputs shaped (time, batch, features)) has no Keras 3 equivalent",
}
# A plain LSTM twin loads time_major=True weights and answers differently (measured: off by 0.4 on a
# real TF 2.15.1 file); both routes below give TF 2.15.1's outputs (tests/test_keras2.py).
_TIME_MAJOR_ROUTE = (
    "export it once with Keras 2 and serve it as one layer: run_keras2(\"keras.models.load_model('m.h5', "
    "compile=False).export('m_export')\"), then keras.layers.TFSMLayer('m_export', call_endpoint='serve'); "
    "or build a Keras 3 twin that swaps axes 0 and 1 before the layer, and after it only if it returns "
    "sequences (a plain LSTM twin loads but answers differently): "
    "swap = lambda: keras.layers.Lambda(lambda t: keras.ops.swapaxes(t, 0, 1)); "
    "h = swap()(keras.layers.LSTM(4, return_sequences=True, name='lstm')(swap()(x))), then "
    "convert_legacy_h5(path, 'm.weights.h5', model=twin), and compare outputs with Keras 2's"
)
_CUDNN = ("CuDNNLSTM", "CuDNNGRU")
_CUDNN_ROUTE = ("build the model in Keras 3 code with LSTM / GRU (reset_after=True, the default) where the file "
                "has CuDNNLSTM / CuDNNGRU, and pass it: convert_legacy_h5(path, out, model=twin) converts the "
                "CuDNN layout")


def _refusal(class_name: str, layer: str, argument: str, value: Any) -> str:
    reason = _WHY.get(argument, f"{argument}={value!r} has no Keras 3 equivalent").format(value=value)
    return f"layer {layer!r} ({class_name}): {reason}"


def _route_for(argument: str) -> str:
    return _TIME_MAJOR_ROUTE if argument == "time_major" else LEGACY_ROUTE


def _legacy_class(class_name: str, arguments: dict[str, Any]) -> type:
    base = getattr(keras.layers, class_name)

    def from_config(cls, config):
        config = dict(config)
        for argument, neutral in arguments.items():
            if argument in config:
                value = config.pop(argument)
                if neutral is not _ANY and value != neutral:
                    raise LegacyModelError("", [_refusal(class_name, config.get("name", "?"), argument, value)],
                                           route=_route_for(argument))
        return base.from_config(config)  # a plain Keras 3 layer: the converted file needs no custom objects

    return type(class_name, (base,), {
        "from_config": classmethod(from_config),
        "__module__": __name__,
        "__doc__": f"Builds a keras.layers.{class_name} from a Keras 2 configuration "
                   f"(drops {', '.join(sorted(arguments))} where Keras 3 behaves the same).",
    })


# Layers whose configuration holds other layers' configurations (Keras 3 rebuilds those itself, by
# class name, past custom_objects): their inner Keras 2 arguments are dropped before it does.
_WRAPPERS = ("Bidirectional", "TimeDistributed", "RNN")


def _drop_keras2_arguments(settings: dict) -> None:
    """Drop, in place, the Keras 2 arguments of every layer configuration among ``settings``' values."""
    for inner in layer_configs(list(settings.values())):
        class_name, config = inner["class_name"], inner["config"]
        for argument, neutral in _KERAS2_ONLY.get(class_name, {}).items():
            if argument in config:
                value = config.pop(argument)
                if neutral is not _ANY and value != neutral:
                    raise LegacyModelError("", [_refusal(class_name, config.get("name", "?"), argument, value)],
                                           route=_route_for(argument))


def _legacy_wrapper(class_name: str) -> type:
    """A wrapper (``Bidirectional``, ``TimeDistributed``, ``RNN``) whose inner layers lose Keras 2 arguments."""
    base = getattr(keras.layers, class_name)

    def from_config(cls, config, custom_objects=None):
        config = copy.deepcopy(config)
        _drop_keras2_arguments({"layer": {"class_name": class_name, "config": config}})  # its own and inner ones
        return base.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 layer

    return type(class_name, (base,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": f"Builds a keras.layers.{class_name} from a Keras 2 configuration (its inner layers' "
                   "Keras 2 arguments dropped where Keras 3 behaves the same).",
    })


def _legacy_functional() -> type:
    """``Functional``/``Model`` that first rewrites Keras 2 keyword-tensor calls (``mha(q, value=v)``)."""

    def from_config(cls, config, custom_objects=None):
        config = copy.deepcopy(config)
        _renumber_nested_nodes({"class_name": "Functional", "config": config})  # a no-op once renumbered
        _keyword_tensors_to_calls({"class_name": "Functional", "config": config})
        return keras.Model.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 model

    return type("Functional", (keras.Model,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": "Builds a Keras 3 functional model from a Keras 2 configuration (keyword tensors rewritten).",
    })


_NESTED_FUNCTIONAL_ROUTE = (
    "build the model in Keras 3 code, its layers and the nested model's layers named as the file names "
    "them (describe_legacy_h5 lists them), then convert_legacy_h5(path, 'm.weights.h5', model=twin)")


def _legacy_sequential() -> type:
    """``Sequential`` that names the route when Keras 3 cannot rebuild a functional model nested in it."""

    def from_config(cls, config, custom_objects=None):
        try:
            return keras.Sequential.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 model
        except ValueError as error:
            nested = [layer.get("config", {}).get("name", "?") for layer in
                      (config.get("layers", []) if isinstance(config, dict) else [])
                      if layer.get("class_name") in ("Functional", "Model")]
            if not nested or "to a shape" not in str(error):
                raise
            raise LegacyModelError("", [f"layer {name!r}: a functional model nested in a Sequential; Keras 3 "
                                        f"cannot rebuild it ({first_line(error)})" for name in nested],
                                   route=_NESTED_FUNCTIONAL_ROUTE) from None

    return type("Sequential", (keras.Sequential,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": "Builds a Keras 3 Sequential from a Keras 2 configuration (a nested functional model refused "
                   "with its route).",
    })


def legacy_custom_objects() -> dict[str, type]:
    """Classes that let Keras 3 rebuild Keras 2 configurations with arguments it no longer accepts.

    Each class builds the plain Keras 3 layer (the model, and the files it
    saves, need nothing of this module afterwards) after dropping the Keras 2
    arguments that change nothing: ``time_major=False`` of recurrent layers,
    ``groups`` of depthwise, separable and transposed convolutions (any value:
    Keras 2 accepted it there and ignored it; ``Conv1D``/``Conv2D``/``Conv3D``
    keep their ``groups`` in Keras 3), the unused ``kernel_*`` arguments of
    separable convolutions, the build shapes of ``MultiHeadAttention``,
    ``trainable`` and ``noise_shape`` of ``SpatialDropout1D``/``2D``/``3D``; and
    ``Functional``/``Model`` rewrite calls that pass a tensor by keyword
    (Keras 2's ``mha(query, value=v)``, which Keras 3 reads as a plain list)
    and renumber the calls of nested models (Keras 2 numbers them from 1);
    ``Sequential`` refuses a functional model nested in it, which Keras 3
    cannot rebuild, with ``LegacyModelError`` naming the twin route.
    ``Bidirectional``, ``TimeDistributed`` and ``RNN`` drop the same
    arguments from the layers they wrap (Keras 3 rebuilds those itself, past
    ``custom_objects``), and ``RNN`` its own ``time_major``. A value that would change the computation
    (``time_major=True``, wrapped or not) raises ``LegacyModelError`` naming
    the layer. ``batch_input_shape`` is translated by Keras 3 itself.
    ``"hard_sigmoid"`` maps to Keras 2's function (``clip(0.2 x + 0.5, 0, 1)``,
    ``helpers.keras1.keras1_hard_sigmoid``, registered: a model saved from it
    reloads where ``helpers.keras1`` is imported); Keras 3 reads the name as
    ``clip(x / 6 + 0.5, 0, 1)``. Meant for Keras 2 ``.h5`` files only.

    Example:
        >>> sorted(legacy_custom_objects())[:3]
        ['Bidirectional', 'Conv1DTranspose', 'Conv2DTranspose']
        >>> path = "tests/data/tf215/recurrent.h5"    # Keras 2.15 wrote time_major=False into its LSTM and GRU
        >>> keras.models.load_model(path, compile=False)
        Traceback (most recent call last):
        ...
        ValueError: Unrecognized keyword arguments passed to LSTM: {'time_major': False}...
        >>> model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
        >>> sorted({type(layer).__module__.split(".")[0] for layer in model.layers})    # plain Keras 3 layers
        ['keras']
    """
    functional = _legacy_functional()
    return {**{name: _legacy_class(name, arguments) for name, arguments in _KERAS2_ONLY.items()
               if hasattr(keras.layers, name)},
            **{name: _legacy_wrapper(name) for name in _WRAPPERS},
            "Functional": functional, "Model": functional, "Sequential": _legacy_sequential(),
            "hard_sigmoid": keras1_hard_sigmoid}


def rebuild_problems(config: dict) -> list[str]:
    """What in a Keras 2 configuration no patch can carry over, one line per layer.

    Example:
        >>> rebuild_problems({"class_name": "CuDNNGRU", "config": {"name": "rnn", "units": 3}})
        ["layer 'rnn' (CuDNNGRU): Keras 3 has no CuDNN layers, and their weights are in the CuDNN layout (a bias of 6×units)"]
    """
    problems = []
    for layer in layer_configs(config):
        name, settings = layer["class_name"], layer["config"]
        if name in _CUDNN:
            problems.append(
                f"layer {settings.get('name', '?')!r} ({name}): Keras 3 has no CuDNN layers, and their weights "
                f"are in the CuDNN layout (a bias of {8 if name == 'CuDNNLSTM' else 6}×units)"
            )
        for argument, neutral in _KERAS2_ONLY.get(name, {}).items():
            if argument in settings and neutral is not _ANY and settings[argument] != neutral:
                problems.append(_refusal(name, settings.get("name", "?"), argument, settings[argument]))
    return problems


def _unknown_classes(config: dict, custom_objects: dict) -> list[str]:
    known = set(legacy_custom_objects()) | set(custom_objects) | {"Functional", "Model", "Sequential", "InputLayer"}
    return [
        f"layer {layer.get('config', {}).get('name', '?')!r} ({layer['class_name']}): a class Keras 3 does not "
        "have (a custom layer, or a TensorFlow function called on a Keras tensor)"
        for layer in model_layers(config)
        if layer["class_name"] not in known and not hasattr(keras.layers, layer["class_name"])
        and keras.saving.get_registered_object(layer["class_name"]) is None
    ]


def _renumber_nested_nodes(config: Any) -> None:
    """Keras 2 numbers the calls of a nested model from 1 (its node 0 is its own graph); Keras 3 from 0.

    Keras 3 subtracts that 1 where a model's outputs name a nested
    functional model, but not where another layer's inputs name it, nor for
    a nested ``Sequential``; this fixes those references in place.
    """
    for item in list(layer_configs(config)):
        layers = item["config"].get("layers")
        if not isinstance(layers, list) or item["class_name"] == "Sequential":
            continue
        calls = {layer["name"]: len(layer.get("inbound_nodes", [])) for layer in layers
                 if isinstance(layer, dict) and isinstance(layer.get("config", {}).get("layers"), list)}
        if not calls:
            continue
        references = list(_tensor_references([layer.get("inbound_nodes", []) for layer in layers]))
        outputs = list(_tensor_references(item["config"].get("output_layers", [])))
        shifted = {name for name, count in calls.items()
                   if any(ref[0] == name and ref[1] >= count for ref in references + outputs)}
        for ref in references:
            if ref[0] in shifted:
                ref[1] -= 1
        sequential = {layer["name"] for layer in layers if isinstance(layer, dict)
                      and layer.get("class_name") == "Sequential"}
        for ref in outputs:
            if ref[0] in shifted & sequential:
                ref[1] -= 1


def _is_reference(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _keyword_tensors_to_calls(config: Any) -> None:
    """Keras 2 writes ``mha(query, value=v)`` as a legacy node whose keyword holds ``[layer, node, tensor]``.

    Keras 3 reads legacy nodes' positional inputs only (the keyword stays a
    plain list); the node is rewritten in Keras 3's own node format, where
    keyword tensors are references too.
    """
    def tensor(reference: list) -> dict:
        return {"class_name": "__keras_tensor__",
                "config": {"shape": [], "dtype": "float32", "keras_history": list(reference[:3])}}

    for item in list(layer_configs(config)):
        for layer in item["config"].get("layers", []) if isinstance(item["config"].get("layers"), list) else []:
            nodes = layer.get("inbound_nodes", []) if isinstance(layer, dict) else []
            for index, node in enumerate(nodes):
                if (isinstance(node, list) and len(node) == 1 and len(node[0]) == 4 and isinstance(node[0][3], dict)
                        and any(_is_reference(value) for value in node[0][3].values())):
                    keywords = {key: tensor(value) if _is_reference(value) else value
                                for key, value in node[0][3].items()}
                    nodes[index] = {"args": [tensor(node[0])], "kwargs": keywords}


def _tensor_references(value: Any):
    """Every ``[layer name, node index, tensor index, ...]`` list inside legacy inbound nodes."""
    if isinstance(value, list):
        if len(value) >= 3 and isinstance(value[0], str) and isinstance(value[1], int) and isinstance(value[2], int):
            yield value
            if len(value) > 3:
                yield from _tensor_references(value[3])
        else:
            for item in value:
                yield from _tensor_references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensor_references(item)


def model_from_keras2_config(config: dict, path: str, safe_mode: bool,
                             custom_objects: dict | None = None) -> Any:
    """Rebuild a Keras 2 model configuration in Keras 3, with Keras 2 arguments patched (no weights).

    ``config`` is what a legacy ``.h5`` stores in its ``model_config``
    attribute (``helpers.keras2.h5.model_from_h5`` reads it); ``path`` names
    the file in errors. Layers come from ``legacy_custom_objects()``, the
    registered classes and ``custom_objects``. What Keras 3 cannot rebuild
    raises ``LegacyModelError`` naming each layer and the route that works:
    a CuDNN layer, ``time_major=True``, a ``Lambda`` holding bytecode under
    ``safe_mode``, a class it does not know. ``config`` is left unchanged.

    Example:
        >>> dense = {"class_name": "Dense", "config": {"name": "out", "units": 2}}
        >>> config = {"class_name": "Sequential", "config": {"name": "m", "layers": [
        ...     {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 3], "name": "x"}}, dense]}}
        >>> model_from_keras2_config(config, "m.h5", safe_mode=True).output_shape
        (None, 2)
        >>> time_major = {"class_name": "LSTM", "config": {"name": "lstm", "units": 2, "time_major": True}}
        >>> config["config"]["layers"][1] = time_major
        >>> model_from_keras2_config(config, "m.h5", safe_mode=True)
        Traceback (most recent call last):
        ...
        helpers.errors.LegacyModelError: Keras 3 cannot rebuild the Keras 2 model in 'm.h5':
          layer 'lstm' (LSTM): time_major=True (inputs shaped (time, batch, features)) has no Keras 3 equivalent
          route: export it once with Keras 2 and serve it as one layer: ...
    """
    # Keras' own reader of legacy configurations; no public function takes a configuration.
    from keras.src.legacy.saving import saving_options, saving_utils
    from keras.src.saving import serialization_lib

    config = copy.deepcopy(config)  # rewritten below (nested nodes, keyword tensors): not the caller's
    problems = rebuild_problems(config)
    if problems:
        cudnn = any(f"({name})" in problem for problem in problems for name in _CUDNN)
        time_major = any("time_major=" in problem for problem in problems)
        route = _CUDNN_ROUTE if cudnn else _route_for("time_major" if time_major else "")
        raise LegacyModelError(path, problems, route)
    _renumber_nested_nodes(config)
    _keyword_tensors_to_calls(config)
    custom_objects = dict(custom_objects or {})
    objects = {**legacy_custom_objects(), **keras.saving.get_custom_objects(), **custom_objects}
    try:
        with saving_options.keras_option_scope(use_legacy_config=True), \
                serialization_lib.SafeModeScope(safe_mode), keras.saving.custom_object_scope(objects):
            return saving_utils.model_from_config(copy.deepcopy(config), custom_objects=objects)
    except LegacyModelError as error:
        raise LegacyModelError(path, error.problems, error.route) from None
    except Exception as error:  # Keras wraps what a layer raises: find the cause, or say what Keras said
        text = str(error)
        if "LegacyModelError" in text or isinstance(error.__cause__, LegacyModelError):
            cause = error.__cause__
            raise LegacyModelError(path, getattr(cause, "problems", [first_line(error)]),
                                   *([cause.route] if isinstance(cause, LegacyModelError) else [])) from None
        if "safe_mode" in text:
            raise LegacyModelError(path, [
                "a Lambda layer holds Python bytecode, which safe_mode refuses to run: if you trust the file, "
                "pass safe_mode=False"], route="convert_legacy_h5(path, out, safe_mode=False)") from None
        unknown = _unknown_classes(config, custom_objects)
        if unknown:
            raise LegacyModelError(path, unknown, route=(
                "pass the class: convert_legacy_h5(path, out, custom_objects={name: cls}) with the name "
                "shown, or register it with keras.saving.register_keras_serializable; or pass model=twin"
            )) from None
        raise LegacyModelError(path, [f"Keras 3 failed: {first_line(error)}"]) from None
