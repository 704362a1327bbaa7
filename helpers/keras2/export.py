"""Keras 3 to Keras 2 (chapter 13): files a Keras 2 process (TF 2.15, tf-keras) loads with equal outputs.

``export_for_keras2`` writes a legacy ``model.h5`` whose configuration is rewritten
for Keras 2 (``keras2_model_config``), the weights and a SavedModel, and proves each
in Keras 2 before the folder appears::

    report = export_for_keras2(model, "for_keras2")
    print(report.how_to_load())

``tf215_reads`` gives what TensorFlow 2.15.1 read of the files newer Keras versions write.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import Keras2ExportError, ModelNotBuiltError, first_line
from helpers.files import refuse_existing, refuse_unwritable
from helpers.keras1 import layer_configs
from helpers.keras2.common import model_label, model_layers
from helpers.notebook import wrap_output

__all__ = ["Keras2Export", "export_for_keras2", "keras2_model_config", "tf215_reads"]


# Arguments Keras 3 writes that Keras 2 does not know, with the value that means "as Keras 2 does":
# dropped where they hold it. Any other value is refused by Keras 2, and the check names it.
_KERAS3_ONLY: dict[str, Any] = {
    "quantization_config": None, "lora_rank": None, "lora_alpha": None,  # Dense, EinsumDense, Embedding
    "optional": False,                                                  # InputLayer
    "input_axes": None, "output_axes": None,                            # variance-scaling initializers
    "rms_scaling": False,                                               # LayerNormalization
}
_KERAS3_ONLY_IN = {"MultiHeadAttention": {"use_gate": False, "sliding_window": None, "seed": None,
                                          "flash_attention": None}}
_NESTED_MODELS = ("Functional", "Sequential", "Model")
_ARCHITECTURE_ROUTE = ("pass architecture=False: the weights file (into a Keras 2 twin written in code, "
                       "with the same layer names) and the SavedModel for inference are still written")
# Measured: Keras 2 (TF 2.15, tf-keras) load_weights of a subclassed Keras 3 model's .weights.h5 into the
# same class written in Keras 2 fails ("expected 2 variables, but received 0"); set_weights works.
_SUBCLASSED_ROUTE = ("for inference, model.export(folder) (any TF 2: tf.saved_model.load, serving_default by "
                     "keyword); for the weights, np.savez(file, *model.get_weights()) and set_weights in the "
                     "same class written in Keras 2 code (its .weights.h5 does not load there); or rebuild the "
                     "model as a Functional one")


@dataclass
class Keras2Export:
    """What ``export_for_keras2`` wrote for Keras 2, what it could not carry, and how it was checked."""

    folder: str
    files: dict[str, str]
    not_carried: list[str]
    checked: list[str]
    max_error: float

    def how_to_load(self) -> str:
        """The Keras 2 code (TF 2.15, or tf-keras) that loads these files, relative to ``folder``'s parent."""
        name = os.path.basename(os.path.normpath(self.folder))
        lines = ["import tensorflow as tf  # TF <= 2.15, or TF_USE_LEGACY_KERAS=1 with tf-keras"]
        if "model.h5" in self.files:
            lines.append(f'model = tf.keras.models.load_model("{name}/model.h5", compile=False)')
        else:
            lines.append("model = build_model()  # the same architecture and layer names, in Keras 2 code")
        if "model.weights.h5" in self.files:
            lines.append(f'model.load_weights("{name}/model.weights.h5")  # the same weights again')
        lines.append(f'served = tf.saved_model.load("{name}/saved_model").signatures["serving_default"]')
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [f"written for Keras 2 in {self.folder!r}:"]
        lines += [f"  {name}: {what}" for name, what in self.files.items()]
        lines += ["not carried:"] + [f"  {item}" for item in self.not_carried]
        lines += [f"checked: {', '.join(self.checked)}; largest difference {self.max_error:.1e}"]
        return "\n".join(wrap_output(line) for line in lines)


def _keras2_object(value: Any) -> Any:
    """A Keras 3 serialized value in Keras 2's form: ``{"class_name", "config"}``, dtype policies as names."""
    if isinstance(value, list):
        return [_keras2_object(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "class_name" in value and "config" in value and ("module" in value or "registered_name" in value):
        if value["class_name"] in ("DTypePolicy", "FloatDTypePolicy"):
            return value["config"]["name"]
        if value["class_name"] == "__tuple__":
            return _keras2_object(value["config"]["value"])
        return {"class_name": value["class_name"], "config": _keras2_object(value["config"])}
    return {key: _keras2_object(item) for key, item in value.items()
            if not (key in _KERAS3_ONLY and item == _KERAS3_ONLY[key])}


def _is_keras_tensor(value: Any) -> bool:
    return isinstance(value, dict) and value.get("class_name") == "__keras_tensor__"


def _keras2_reference(tensor: dict, nested: set[str]) -> list:
    layer, index, position = tensor["config"]["keras_history"]
    return [layer, index + (layer in nested), position]  # Keras 2: a nested model's own graph is its node 0


def _keras2_nodes(name: str, nodes: list, nested: set[str], call_names: list[str], problems: list[str]) -> list:
    """Keras 3 call records (``{"args", "kwargs"}``) as Keras 2's ``[[layer, node, tensor, kwargs], ...]``.

    A second positional tensor (``mha(query, value)``) becomes a keyword by
    the name of the call's parameter (``value=``), as Keras 2 records it.
    """
    converted = []
    for node in nodes:
        args, kwargs = list(node.get("args", [])), dict(node.get("kwargs", {}))
        if len(args) > 1 and all(_is_keras_tensor(t) for t in args) and len(call_names) >= len(args):
            kwargs.update(zip(call_names[1:], args[1:]))
            args = args[:1]
        if len(args) == 1 and _is_keras_tensor(args[0]):
            tensors = args[0:1]
        elif len(args) == 1 and isinstance(args[0], list) and all(_is_keras_tensor(t) for t in args[0]):
            tensors = args[0]
        else:
            problems.append(f"layer {name!r}: called with {len(args)} positional inputs that Keras 2's "
                            "configuration cannot record")
            continue
        keywords = {key: _keras2_reference(value, nested) if _is_keras_tensor(value) else _keras2_object(value)
                    for key, value in kwargs.items()}
        converted.append([_keras2_reference(t, nested) + [keywords] for t in tensors])
    return converted


def _keras2_layer(entry: dict, nested: set[str], problems: list[str], in_functional: bool,
                  calls: dict[str, list[str]]) -> dict:
    name = entry.get("name") or entry["config"].get("name", "?")
    class_name, module = entry["class_name"], entry.get("module") or ""
    registered = entry.get("registered_name")
    if not module.startswith("keras") or registered not in (None, class_name):
        problems.append(f"layer {name!r} ({registered or class_name}): a custom class; Keras 2 needs "
                        "it written in Keras 2 code")
        return {}
    config = _keras2_object(entry["config"])
    if class_name == "InputLayer" and "batch_shape" in config:
        config["batch_input_shape"] = config.pop("batch_shape")  # Keras 2 rejects batch_shape
    for argument, neutral in _KERAS3_ONLY_IN.get(class_name, {}).items():
        if argument in config and config[argument] == neutral:
            del config[argument]
    if class_name == "MultiHeadAttention":  # Keras 2 rebuilds it from the shapes it was built for
        shapes = (entry.get("build_config") or {}).get("shapes_dict", {})
        config.update({key: shapes.get(key) for key in ("query_shape", "value_shape", "key_shape")})
        config["key_shape"] = config["key_shape"] or config["value_shape"]  # key defaults to value
    if class_name in _NESTED_MODELS:
        config = _keras2_model_config(entry, problems, calls)["config"]
    layer = {"class_name": class_name, "config": config}
    if in_functional:
        layer["name"] = name
        layer["inbound_nodes"] = _keras2_nodes(name, entry.get("inbound_nodes", []), nested,
                                               calls.get(name, []), problems)
    return layer


def _references(value: Any) -> list:
    """``input_layers`` / ``output_layers`` as a list of ``[layer, node, tensor]`` (Keras 3 may write one bare)."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        return [list(value)]
    return [list(item) for item in value]


def _keras2_model_config(serialized: dict, problems: list[str], calls: dict[str, list[str]]) -> dict:
    """The ``{"class_name", "config"}`` Keras 2 rebuilds a Functional or Sequential model from."""
    config = serialized["config"]
    if serialized["class_name"] == "Sequential":
        layers = [_keras2_layer(entry, set(), problems, False, calls) for entry in config["layers"]]
        return {"class_name": "Sequential", "config": {"name": config["name"], "layers": layers}}
    nested = {entry["name"] for entry in config["layers"] if entry["class_name"] in _NESTED_MODELS}
    layers = [_keras2_layer(entry, nested, problems, True, calls) for entry in config["layers"]]
    outputs = [[name, index + (name in nested), position]
               for name, index, position in _references(config["output_layers"])]
    return {"class_name": "Functional", "config": {
        "name": config["name"], "layers": layers,
        "input_layers": _references(config["input_layers"]), "output_layers": outputs}}


def keras2_model_config(model: Any) -> dict:
    """The configuration Keras 2 (TF 2.15, tf-keras) rebuilds a Keras 3 Functional or Sequential model from.

    Keras 3 writes arguments Keras 2 rejects (``batch_shape``, ``optional``,
    ``quantization_config``, an initializer's ``input_axes``), dtype policies
    as objects, and calls in another form (tensors passed by keyword, such as
    ``mha(q, value=v)``, are carried); this rewrites them. Raises
    ``Keras2ExportError`` naming each layer it cannot carry (custom classes,
    calls whose positional inputs Keras 2's configuration cannot record) or a subclassed
    model.

    Example:
        >>> inputs = keras.Input((3,), name="x")
        >>> model = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
        >>> keras2_model_config(model)["config"]["layers"][0]["config"]["batch_input_shape"]
        [None, 3]
    """
    if not isinstance(model, keras.Model) or type(model).__name__ not in ("Functional", "Sequential"):
        raise Keras2ExportError([f"the model is a {type(model).__name__}: only Functional and Sequential "
                                 "models have a configuration Keras 2 can rebuild"],
                                _SUBCLASSED_ROUTE if isinstance(model, keras.Model) else _ARCHITECTURE_ROUTE)
    problems: list[str] = []
    calls = {layer.name: [p for p in inspect.signature(layer.call).parameters if p not in ("args", "kwargs")]
             for layer in model._flatten_layers(include_self=False, recursive=True)}
    config = _keras2_model_config(keras.saving.serialize_keras_object(model), problems, calls)
    if problems:
        raise Keras2ExportError(problems, _ARCHITECTURE_ROUTE)
    return json.loads(json.dumps(config))  # as Keras 2 reads it from a file: lists, not tuples


def _keras2_rejects(config: dict) -> list[str]:
    """Each layer that Keras 2 (tf-keras, in this process) refuses to build, with Keras 2's own reason."""
    import tf_keras  # Keras 2, importable beside Keras 3

    problems = []
    listed = {id(layer) for layer in model_layers(config)}  # layers, not their initializers
    for layer in layer_configs(config["config"].get("layers", [])):
        if layer["class_name"] in _NESTED_MODELS:
            continue
        name = layer["config"].get("name", "?")
        try:
            built = tf_keras.layers.deserialize({"class_name": layer["class_name"],
                                                 "config": copy.deepcopy(layer["config"])})
        except Exception as error:  # Keras 2's message names the argument
            cause = re.findall(r"Exception encountered: (.*)", str(error))
            reason = cause[-1] if cause else first_line(error)
            if reason.startswith("("):  # ('Keyword argument not understood:', 'lora_rank')
                with contextlib.suppress(ValueError, SyntaxError):
                    reason = " ".join(str(part) for part in ast.literal_eval(reason))
            problems.append(f"layer {name!r} ({layer['class_name']}): Keras 2 says: {reason[:200]}")
        else:
            if isinstance(built, str) and id(layer) in listed:  # tf_keras returns the name of a class it lacks
                problems.append(f"layer {name!r} ({layer['class_name']}): Keras 2 has no such layer class")
    return problems


def _sample_inputs(model: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    samples = []
    for tensor in model.inputs:
        shape = [2 if dim is None else dim for dim in tensor.shape]
        if "int" in str(tensor.dtype):
            samples.append(rng.integers(0, 2, size=shape).astype(str(tensor.dtype)))
        else:
            samples.append(rng.normal(size=shape).astype(str(tensor.dtype)))
    return samples


def _write_legacy_h5(model: Any, config: dict, path: str, scratch: str) -> None:
    """A legacy full-model ``.h5`` in the layout both Keras versions read, with a Keras 2 configuration."""
    import h5py

    keras3_h5 = os.path.join(scratch, "keras3.h5")
    absl = logging.getLogger("absl")
    level, absl.level = absl.level, logging.ERROR  # "HDF5 is legacy": here it is the point
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save(keras3_h5)
    finally:
        absl.setLevel(level)
    with h5py.File(keras3_h5, "r") as source, h5py.File(path, "w") as target:
        target.attrs["model_config"] = json.dumps(config)
        target.attrs["keras_version"] = source.attrs["keras_version"]
        target.attrs["backend"] = "tensorflow"
        source.copy("model_weights", target)  # training_config and optimizer_weights stay behind
    os.remove(keras3_h5)


def _check_in_keras2(model: Any, folder: str, inputs: list[np.ndarray], has_h5: bool,
                     notes: list[str]) -> tuple[list[str], float]:
    """Load what was written (tf-keras in this process, TF for the SavedModel) and compare outputs."""
    import tf_keras

    try:
        template = model.input  # a list of one for a Functional model rebuilt from a legacy .h5
    except (AttributeError, ValueError):
        template = model.inputs if len(model.inputs) > 1 else model.inputs[0]
    structured = tf.nest.pack_sequence_as(template, [tf.constant(x) for x in inputs])
    expected = np.asarray(model(structured, training=False))
    answers = {}
    served = tf.saved_model.load(os.path.join(folder, "saved_model"))
    answers["SavedModel"] = served.serve(structured)
    if has_h5:
        try:
            rebuilt = tf_keras.models.load_model(os.path.join(folder, "model.h5"), compile=False)
        except Exception as error:
            raise Keras2ExportError([f"model.h5: Keras 2 cannot load it: {first_line(error)[:300]}"
                                     + _layers_named_in(error, model)], _ARCHITECTURE_ROUTE) from error
        answers["model.h5 in Keras 2"] = rebuilt(inputs if len(inputs) > 1 else inputs[0], training=False)
        twin = tf_keras.models.model_from_json(rebuilt.to_json())
        weights = os.path.join(folder, "model.weights.h5")
        try:
            twin.load_weights(weights)
        except ValueError as error:  # a layer whose variables Keras 2 stores under other paths (MHA)
            os.remove(weights)
            notes.append(f"model.weights.h5 (not written: Keras 2 says {first_line(error)[:160]}); "
                         "model.h5 carries the weights")
        else:
            answers["model.weights.h5 in Keras 2"] = twin(inputs if len(inputs) > 1 else inputs[0],
                                                          training=False)
    errors = {name: float(np.abs(np.asarray(value) - expected).max()) for name, value in answers.items()}
    bad = [f"{name}: outputs differ by {error:.2e}" for name, error in errors.items()
           if not error <= 1e-5 * (1 + float(np.abs(expected).max()))]
    if bad:
        raise Keras2ExportError(bad, "report this model: its layers are written but answer differently")
    return list(errors), max(errors.values())


def _layers_named_in(error: Exception, model: Any) -> str:
    """`` (layer 'rms')`` for the layers whose class Keras 2's message names (it names classes only)."""
    text = str(error)
    names = [layer.name for layer in model._flatten_layers(include_self=False, recursive=True)
             if re.search(rf"\b{re.escape(type(layer).__name__)}\b", text)]
    return f" (layer {', '.join(map(repr, names))})" if names else ""


def _not_carried(model: Any) -> list[str]:
    items = []
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and optimizer.variables:
        items.append(f"the optimizer's state ({type(optimizer).__name__}, {len(optimizer.variables)} "
                     "variables): Keras 2's optimizers are other classes; compile and train anew")
    if getattr(model, "compiled", False):
        items.append("loss, metrics and compile() arguments: call compile() again in Keras 2")
    items.append("training behaviour in the SavedModel: its signatures run inference only (training=False)")
    return items


def export_for_keras2(model: Any, folder: str | os.PathLike, inputs: Any = None, *,
                      architecture: bool = True) -> Keras2Export:
    """Write a Keras 3 model as files a Keras 2 process (TF 2.15, tf-keras) loads with equal outputs.

    Writes a new folder (never an existing one), all or nothing:

    - ``model.h5``: the whole model as a legacy HDF5 with a configuration
      rewritten for Keras 2 (``batch_input_shape``, no Keras 3 only
      arguments): ``tf.keras.models.load_model("model.h5", compile=False)``;
    - ``model.weights.h5``: the weights, which Keras 2 loads with
      ``load_weights`` into a model of the same architecture and layer names
      (left out, with the reason in ``not_carried``, where Keras 2 cannot load
      it: ``MultiHeadAttention`` keeps its weights under other paths there;
      ``model.h5`` still carries them);
    - ``saved_model/``: ``model.export``, for inference through
      ``tf.saved_model.load`` in any TF 2: call ``serving_default`` by
      keyword; ``serve`` takes the model's input structure (a list for a
      model rebuilt from a legacy .h5).

    Before moving the folder into place it loads the files with Keras 2
    (``tf_keras`` in this process) and TensorFlow, and compares their outputs
    with the model's on ``inputs`` (an array, or a list for several inputs;
    made up when not given): the SavedModel, ``model.h5``, and
    ``model.weights.h5`` loaded into the model Keras 2 rebuilt from
    ``model.h5`` (``report.checked`` lists them). A layer Keras 2 cannot
    rebuild raises ``Keras2ExportError`` naming the layer (and the argument
    where Keras 2 names one). With ``architecture=False`` only the weights
    and the SavedModel are written, and only the SavedModel is checked:
    nothing in this process can build the Keras 2 twin the weights are for.
    A subclassed model raises ``Keras2ExportError`` whatever
    ``architecture`` is (its weights file does not load into the same class
    in Keras 2); the error gives the route that works.
    The report lists what is not carried (the optimizer's state, compile
    arguments) and ``how_to_load()`` gives the Keras 2 code.

    Example:
        >>> import os, tempfile
        >>> inputs = keras.Input((3,), name="x")
        >>> model = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
        >>> report = export_for_keras2(model, os.path.join(tempfile.mkdtemp(), "for_keras2"))
        >>> report.checked
        ['SavedModel', 'model.h5 in Keras 2', 'model.weights.h5 in Keras 2']
        >>> print(report.how_to_load())
        import tensorflow as tf  # TF <= 2.15, or TF_USE_LEGACY_KERAS=1 with tf-keras
        model = tf.keras.models.load_model("for_keras2/model.h5", compile=False)
        model.load_weights("for_keras2/model.weights.h5")  # the same weights again
        served = tf.saved_model.load("for_keras2/saved_model").signatures["serving_default"]
    """
    target = refuse_unwritable(refuse_existing(folder, "a folder"))
    if isinstance(model, keras.Model) and type(model).__name__ not in ("Functional", "Sequential"):
        raise Keras2ExportError([f"the model is a subclassed model ({type(model).__name__}): it has no "
                                 "configuration Keras 2 can rebuild, and its .weights.h5 does not load into "
                                 "the same class in Keras 2"], _SUBCLASSED_ROUTE)
    if not isinstance(model, keras.Model) or not model.built or not model.inputs:
        raise ModelNotBuiltError(f"export_for_keras2 needs a built Keras 3 model with inputs, got "
                                 f"{model_label(model)}: call it once, or build it from keras.Input")
    config = keras2_model_config(model) if architecture else None
    if config is not None:
        rejected = _keras2_rejects(config)
        if rejected:
            raise Keras2ExportError(rejected, _ARCHITECTURE_ROUTE)
    samples = ([np.asarray(x) for x in inputs] if isinstance(inputs, (list, tuple))
               else [np.asarray(inputs)] if inputs is not None else _sample_inputs(model))
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".keras2-export-", dir=parent)
    try:
        files = {}
        model.save_weights(os.path.join(scratch, "model.weights.h5"))
        files["model.weights.h5"] = "the weights; Keras 2: load_weights into the same architecture"
        if config is not None:
            _write_legacy_h5(model, config, os.path.join(scratch, "model.h5"), scratch)
            files["model.h5"] = "the whole model, legacy HDF5; Keras 2: load_model(compile=False)"
        with contextlib.redirect_stdout(None):
            model.export(os.path.join(scratch, "saved_model"), verbose=False)
        files["saved_model"] = "for inference; any TF 2: tf.saved_model.load, signature serving_default"
        notes: list[str] = []
        checked, max_error = _check_in_keras2(model, scratch, samples, config is not None, notes)
        if notes:
            del files["model.weights.h5"]
        refuse_existing(target, "a folder")
        os.rename(scratch, target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if config is None:
        notes.append("the architecture (architecture=False): write the model in Keras 2 code, "
                     "with the same layer names, and load model.weights.h5 into it")
    return Keras2Export(target, files, notes + _not_carried(model), checked, max_error)


def tf215_reads() -> dict[str, Any]:
    """What TensorFlow 2.15.1 (Keras 2.15) read of the files newer Keras versions write, as measured.

    The course stores it in ``tests/data/tf215-reads/RESULTS.json``, measured by
    ``make_results.py`` beside it (TF 2.15.1 does not install beside TF 2.21):
    ``{"tensorflow": "2.15.1", "results": {writer: {format: verdict}}}``, where a
    verdict is ``"max error ..."`` against the model's stored output, or the error.
    Needs a checkout of the course.

    Example:
        >>> tf215_reads()["results"]["keras 3.15"]["SavedModel"]
        'max error 0.0e+00'
    """
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # helpers/keras2/..
    path = os.path.join(checkout, "tests", "data", "tf215-reads", "RESULTS.json")
    if not os.path.isfile(path):
        raise FileNotFoundError("tests/data/tf215-reads/RESULTS.json is missing: this needs a checkout of the course")
    with open(path, encoding="utf-8") as file:
        return json.load(file)
