"""The checks of notebook 14: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import os

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from helpers import deploy
from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex14

V1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 14.1


def _inference(model, batch=None, dtype=tf.float32, training=False):
    spec = tf.TensorSpec([batch, model.inputs[0].shape[-1]], dtype)
    return tf.function(lambda x: model(x, training=training)).get_concrete_function(spec)


def freeze_for_serving(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model))
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


def freeze_with_the_recipe(model, path):
    return deploy.freeze_graph(model, path).outputs[0]


def freeze_with_write_graph(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model))
    tf.io.write_graph(frozen.graph, os.path.dirname(path), os.path.basename(path), as_text=False)
    return frozen.outputs[0].name


def freeze_from_an_export(model, path):
    folder = path + ".export"
    model.export(folder, verbose=False)
    loaded = tf.saved_model.load(folder)  # kept alive: the signature reads its variables
    frozen = convert_variables_to_constants_v2(loaded.signatures["serving_default"])
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


def not_frozen(model, path):
    function = _inference(model)
    with open(path, "wb") as file:
        file.write(function.graph.as_graph_def().SerializeToString())
    return function.outputs[0].name


def as_text(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model))
    tf.io.write_graph(frozen.graph, os.path.dirname(path), os.path.basename(path), as_text=True)
    return frozen.outputs[0].name


def fixed_batch(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model, batch=1))
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


def float64_input(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model, dtype=tf.float64))
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


def returns_the_input_name(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model))
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.inputs[0].name


def returns_the_op_name(model, path):
    return freeze_for_serving(model, path).split(":")[0]


def fresh_weights(model, path):
    return freeze_for_serving(keras.models.clone_model(model), path)


def training_mode(model, path):
    frozen = convert_variables_to_constants_v2(_inference(model, training=True))
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


def hard_coded_width(model, path):
    spec = tf.TensorSpec([None, 16], tf.float32)  # the notebook's model
    concrete = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


@pytest.mark.parametrize("answer", [freeze_for_serving, freeze_with_the_recipe, freeze_with_write_graph,
                                    freeze_from_an_export])
def test_freeze_for_serving_accepts(answer, capsys):
    ex14.check_freeze_for_serving(answer)
    assert "✔ Exercise 14.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (not_frozen, r"still reads variables \(ReadVariableOp\)"),
        (as_text, r"not a binary GraphDef: a text \.pbtxt"),
        (fixed_batch, r"shape is fixed at \[1, 5\].*batch size None"),
        (float64_input, r"the input is float64; the prompt says float32"),
        (returns_the_input_name, r"is the input; return the output's name"),
        (returns_the_op_name, r"is an op name; return a tensor name"),
        (fresh_weights, r"answers differ from model\(x, training=False\)"),
        (training_mode, r"(?s)raised ValueError in training_mode.*AssignVariableOp"),
        (hard_coded_width, r"(?s)raised ValueError in hard_coded_width"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_freeze_for_serving_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint) as caught:
        ex14.check_freeze_for_serving(answer)
    assert len(str(caught.value)) <= 600


def test_freeze_for_serving_not_done():
    with pytest.raises(ExerciseNotDone):
        ex14.check_freeze_for_serving(not_done)


# --------------------------------------------------------------------------- 14.2


def _graph_def(path):
    graph_def = V1.GraphDef()
    with open(path, "rb") as file:
        graph_def.ParseFromString(file.read())
    return graph_def


def frozen_callable(path, input_name, output_name):
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(_graph_def(path), name=""), [])
    pruned = wrapped.prune(input_name, output_name)
    return lambda batch: pruned(tf.constant(batch, tf.float32)).numpy()


def frozen_callable_with_the_recipe(path, input_name, output_name):
    return deploy.load_frozen_graph(path, input_name, output_name)


def frozen_callable_with_a_prefix(path, input_name, output_name):
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(_graph_def(path), name="m"), [])
    graph = wrapped.graph
    pruned = wrapped.prune(graph.get_tensor_by_name("m/" + input_name),
                           graph.get_tensor_by_name("m/" + output_name))
    return lambda batch: np.asarray(pruned(tf.convert_to_tensor(batch, tf.float32)))


def hard_coded_output(path, input_name, output_name):
    return frozen_callable(path, input_name, "Identity:0")


def returns_a_tensor(path, input_name, output_name):
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(_graph_def(path), name=""), [])
    return wrapped.prune(input_name, output_name)


def default_import_prefix(path, input_name, output_name):
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(_graph_def(path)), [])
    pruned = wrapped.prune(input_name, output_name)
    return lambda batch: pruned(batch).numpy()


def squeezed(path, input_name, output_name):
    run = frozen_callable(path, input_name, output_name)
    return lambda batch: np.squeeze(run(batch))


def first_row(path, input_name, output_name):
    run = frozen_callable(path, input_name, output_name)
    return lambda batch: run(batch[:1])


def returns_the_wrapped_function(path, input_name, output_name):
    return V1.wrap_function(lambda: V1.import_graph_def(_graph_def(path), name=""), [])


@pytest.mark.parametrize("answer", [frozen_callable, frozen_callable_with_the_recipe,
                                    frozen_callable_with_a_prefix])
def test_frozen_callable_accepts(answer, capsys):
    ex14.check_frozen_callable(answer)
    assert "✔ Exercise 14.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (hard_coded_output, r"it is not the tensor 'Identity(_1)?:0'; fetch the output_name"),
        (returns_a_tensor, r"raised TypeError: does it return what the exercise asks"),
        (default_import_prefix, r"(?s)raised KeyError in default_import_prefix.*does not exist"),
        (squeezed, r"keep the batch axis"),
        (first_row, r"shape \(1, \d\), expected \(5, \d\)"),
        (returns_the_wrapped_function, r"raised IndexError: does it return what the exercise asks"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_frozen_callable_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex14.check_frozen_callable(answer)


def test_frozen_callable_not_done():
    with pytest.raises(ExerciseNotDone):
        ex14.check_frozen_callable(not_done)


# --------------------------------------------------------------------------- 14.3


def float16_litert(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def float16_from_saved_model(model):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        model.export(os.path.join(folder, "export"), verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(os.path.join(folder, "export"))
        converter.optimizations = {tf.lite.Optimize.DEFAULT}
        converter.target_spec.supported_types = {tf.float16}
        return bytearray(converter.convert())


def float16_from_concrete_function(model):
    converter = tf.lite.TFLiteConverter.from_concrete_functions([_inference(model)])
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def no_quantization(model):
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def dynamic_range(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def types_without_optimizations(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def with_the_model_as_trackable(model):
    converter = tf.lite.TFLiteConverter.from_concrete_functions([_inference(model)], model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def a_fresh_model(model):
    return float16_litert(keras.models.clone_model(model))


def returns_the_converter(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter


@pytest.mark.parametrize("answer", [float16_litert, float16_from_saved_model, float16_from_concrete_function])
def test_float16_litert_accepts(answer, capsys):
    ex14.check_float16_litert(answer)
    assert "✔ Exercise 14.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (no_quantization, r"no float16 tensor in the file"),
        (dynamic_range, r"the weights are int8: that is dynamic-range"),
        (types_without_optimizations, r"no float16 tensor in the file"),
        (with_the_model_as_trackable, r"answers differ from model\(x, training=False\)"),
        (a_fresh_model, r"answers differ from model\(x, training=False\)"),
        (returns_the_converter, r"returned TFLiteKerasModelConverterV2; return the converted model's bytes"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_float16_litert_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint) as caught:
        ex14.check_float16_litert(answer)
    assert len(str(caught.value)) <= 600


def test_float16_litert_not_done():
    with pytest.raises(ExerciseNotDone):
        ex14.check_float16_litert(not_done)


def test_learner_errors_are_reported_as_learner_code_errors():
    with pytest.raises(LearnerCodeError):
        ex14.check_freeze_for_serving(training_mode)
