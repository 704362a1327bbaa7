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
        (training_mode, r"(?s)raised ValueError in training_mode.*Dropout writes its random-state variable"),
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
        (hard_coded_output, r"it is not the tensor 'Identity(_\d)?:0'; fetch the output_name"),
        (returns_a_tensor, r"raised TypeError: does it return what the exercise asks"),
        (default_import_prefix, r"(?s)raised KeyError in default_import_prefix.*no op or tensor of that name"),
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


def float16_training_mode(model):
    converter = tf.lite.TFLiteConverter.from_concrete_functions([_inference(model, training=True)])
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def float16_inputs_and_outputs(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    converter.inference_input_type = converter.inference_output_type = tf.float16
    return converter.convert()


def frozen_callable_in_a_session(path, input_name, output_name):
    graph = tf.Graph()
    with graph.as_default():
        V1.import_graph_def(_graph_def(path), name="")
    session = V1.Session(graph=graph)
    return lambda batch: session.run(output_name, {input_name: batch})


def frozen_callable_first_input(path, input_name, output_name):
    first = next(node.name for node in _graph_def(path).node if node.op == "Placeholder")
    return frozen_callable(path, first + ":0", output_name)


def frozen_callable_remembers(path, input_name, output_name):
    run, answers = frozen_callable(path, input_name, output_name), []
    return lambda batch: answers[0] if answers else answers.append(run(batch)) or answers[0]


def frozen_callable_float64(path, input_name, output_name):
    run = frozen_callable(path, input_name, output_name)
    return lambda batch: run(batch).astype("float64")


@pytest.mark.parametrize(
    "check, answer, hint",
    [
        (ex14.check_freeze_for_serving, training_mode,
         r"(?s)Likely cause: .*Dropout writes its random-state variable.*training=False"),
        (ex14.check_float16_litert, float16_training_mode,
         r"(?s)Likely cause: .*Dropout writes its random-state variable.*training=False"),
        (ex14.check_float16_litert, float16_inputs_and_outputs,
         r"(?s)Likely cause: float16 quantization keeps the input and output float32"),
        (ex14.check_frozen_callable, frozen_callable_in_a_session, r"makes a tf\.compat\.v1\.Session"),
        (ex14.check_frozen_callable, frozen_callable_first_input,
         r"(?s)Likely cause: the output reads a placeholder you do not feed"),
        (ex14.check_frozen_callable, frozen_callable_remembers,
         r"shape \(5, 2\), expected \(1, 2\): .*nothing kept from a call before"),
        (ex14.check_frozen_callable, frozen_callable_float64, r"the answer is float64.*float32"),
        (ex14.check_float16_litert, lambda model: setattr(model, "trainable", False) or float16_litert(model),
         r"trainable flags changed"),
    ],
    ids=["training-14.1", "training-14.3", "float16-io", "session", "first-input", "remembers",
         "float64", "untrainable"],
)
def test_chapter_specific_hints(check, answer, hint):
    with pytest.raises(CheckFailed, match=hint) as caught:
        check(answer)
    assert "read the message, fix that line" not in str(caught.value)
    assert len(str(caught.value)) <= 600


def test_learner_errors_are_reported_as_learner_code_errors():
    with pytest.raises(LearnerCodeError):
        ex14.check_freeze_for_serving(training_mode)


# --------------------------------------------------------------------------- 
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import pathlib  # noqa: E402

from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2_as_graph,
)

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {}


def _spec_for(model, batch=None, dtype=tf.float32):
    return tf.TensorSpec([batch, model.inputs[0].shape[-1]], dtype)


def _write_frozen(function, path, as_text=False):
    frozen = convert_variables_to_constants_v2(function)
    graph_def = frozen.graph.as_graph_def()
    if as_text:
        pathlib.Path(path).write_text(str(graph_def))
    else:
        pathlib.Path(path).write_bytes(graph_def.SerializeToString())
    return frozen


# ----- 14.1 wrong


def p_freeze_training_true(model, path):
    # BatchNorm in training mode reads batch statistics; Dropout may refuse to freeze
    function = tf.function(lambda x: model(x, training=True)).get_concrete_function(_spec_for(model))
    return _write_frozen(function, path).outputs[0].name


def p_freeze_batch_of_eight(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        _spec_for(model, batch=8))
    return _write_frozen(function, path).outputs[0].name


def p_freeze_float64(model, path):
    function = tf.function(lambda x: model(tf.cast(x, tf.float32), training=False))
    concrete = function.get_concrete_function(_spec_for(model, dtype=tf.float64))
    return _write_frozen(concrete, path).outputs[0].name


def p_freeze_import_prefix(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return "import/" + _write_frozen(function, path).outputs[0].name


def p_freeze_returns_tensor(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return _write_frozen(function, path).outputs[0]


def p_freeze_returns_list(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return [t.name for t in _write_frozen(function, path).outputs]


def p_freeze_clone_fresh_weights(model, path):
    # "a copy to be safe": clone_model builds new, randomly initialised variables
    copy = keras.models.clone_model(model)
    function = tf.function(lambda x: copy(x, training=False)).get_concrete_function(_spec_for(copy))
    return _write_frozen(function, path).outputs[0].name


def p_freeze_float16_rounded(model, path):
    # quantizing when not asked: weights rounded to float16 in a copy
    copy = keras.models.clone_model(model)
    copy.set_weights([w.astype(np.float16).astype(w.dtype) for w in model.get_weights()])
    function = tf.function(lambda x: copy(x, training=False)).get_concrete_function(_spec_for(copy))
    return _write_frozen(function, path).outputs[0].name


def p_freeze_text_format(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return _write_frozen(function, path, as_text=True).outputs[0].name


def p_freeze_ignores_path(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    frozen = _write_frozen(function, path + ".pb")
    return frozen.outputs[0].name


def p_freeze_hard_coded_width(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([None, 16], tf.float32))
    return _write_frozen(function, path).outputs[0].name


def p_freeze_saved_model_folder(model, path):
    model.export(path, verbose=False)
    return "Identity:0"


def p_freeze_variables_kept(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    pathlib.Path(path).write_bytes(function.graph.as_graph_def().SerializeToString())
    return function.outputs[0].name


def p_freeze_returns_input_name(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return _write_frozen(function, path).inputs[0].name


def p_freeze_op_name(model, path):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(_spec_for(model))
    return _write_frozen(function, path).outputs[0].op.name


# ----- 14.1 right


def p_freeze_decorated_as_graph(model, path):
    @tf.function(input_signature=[tf.TensorSpec([None, model.inputs[0].shape[1]], tf.float32)])
    def serve(batch):
        return model(batch, training=False)

    frozen, graph_def = convert_variables_to_constants_v2_as_graph(serve.get_concrete_function())
    with tf.io.gfile.GFile(path, "wb") as out:
        out.write(graph_def.SerializeToString())
    return frozen.outputs[0].name


def p_freeze_default_call(model, path):
    # model(x) without training= is inference in Keras; name taken from the graph_def's last node
    spec = tf.TensorSpec(model.inputs[0].shape, tf.float32)
    concrete = tf.function(model).get_concrete_function(spec)
    frozen = convert_variables_to_constants_v2(concrete)
    pathlib.Path(path).write_bytes(frozen.graph.as_graph_def().SerializeToString())
    output_op = frozen.graph.outputs[0].op.name
    return output_op + ":0"


def p_freeze_via_tf_saved_model(model, path):
    holder = tf.Module()
    holder.model = model
    holder.serve = tf.function(lambda x: model(x, training=False),
                               input_signature=[_spec_for(model)])
    folder = pathlib.Path(str(path) + "_sm")
    tf.saved_model.save(holder, str(folder), signatures=holder.serve)
    loaded = tf.saved_model.load(str(folder))
    frozen = convert_variables_to_constants_v2(loaded.signatures["serving_default"])
    pathlib.Path(path).write_bytes(frozen.graph.as_graph_def().SerializeToString())
    return frozen.outputs[0].name


FREEZE_WRONG = [
    p_freeze_training_true, p_freeze_batch_of_eight, p_freeze_float64, p_freeze_import_prefix,
    p_freeze_returns_tensor, p_freeze_returns_list, p_freeze_clone_fresh_weights,
    p_freeze_float16_rounded, p_freeze_text_format, p_freeze_ignores_path,
    p_freeze_hard_coded_width, p_freeze_saved_model_folder, p_freeze_variables_kept,
    p_freeze_returns_input_name, p_freeze_op_name,
]
FREEZE_RIGHT = [p_freeze_decorated_as_graph, p_freeze_default_call, p_freeze_via_tf_saved_model]


@pytest.mark.parametrize("answer", cases(FREEZE_WRONG, HOLES))
def test_prompt_freeze_for_serving_wrong(answer):
    hint = rejects(ex14.check_freeze_for_serving, answer, may_raise=True)
    assert len(hint) <= 600 and "/tmp" not in hint and "\x1b" not in hint


@pytest.mark.parametrize("answer", cases(FREEZE_RIGHT, HOLES))
def test_prompt_freeze_for_serving_right(answer):
    passes(ex14.check_freeze_for_serving, answer)


# ----- 14.2 wrong


def _read_graph_def(path):
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(pathlib.Path(path).read_bytes())
    return graph_def


def _pruned(path, input_name, output_name, prefix=""):
    graph_def = _read_graph_def(path)
    name = prefix.rstrip("/") if prefix else ""
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.compat.v1.import_graph_def(graph_def, name=name), [])
    return wrapped.prune(prefix + input_name, prefix + output_name)


def p_call_returns_tensor(path, input_name, output_name):
    run = _pruned(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch))


def p_call_returns_list(path, input_name, output_name):
    run = _pruned(path, input_name, output_name)
    return lambda batch: [run(tf.constant(batch)).numpy()]


def p_call_squeezed(path, input_name, output_name):
    run = _pruned(path, input_name, output_name)
    return lambda batch: np.squeeze(run(tf.constant(batch)).numpy())


def p_call_float64_result(path, input_name, output_name):
    run = _pruned(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy().astype(np.float64)


def p_call_first_placeholder(path, input_name, output_name):
    # ignores input_name: feeds the first placeholder of the file
    graph_def = _read_graph_def(path)
    first = next(node.name for node in graph_def.node if node.op == "Placeholder")
    run = _pruned(path, first + ":0", output_name)
    return lambda batch: run(tf.constant(batch)).numpy()


def p_call_last_node(path, input_name, output_name):
    # ignores output_name: fetches the last node of the file
    graph_def = _read_graph_def(path)
    run = _pruned(path, input_name, graph_def.node[-1].name + ":0")
    return lambda batch: run(tf.constant(batch)).numpy()


def p_call_hard_coded_names(path, input_name, output_name):
    run = _pruned(path, "features:0", "Identity:0")
    return lambda batch: run(tf.constant(batch)).numpy()


def p_call_with_session(path, input_name, output_name):
    graph_def = _read_graph_def(path)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    session = tf.compat.v1.Session(graph=graph)
    return lambda batch: session.run(output_name, {input_name: batch})


def p_call_rewrites_file(path, input_name, output_name):
    # "normalises" the file after loading: rewrites it as text
    graph_def = _read_graph_def(path)
    tf.io.write_graph(graph_def, os.path.dirname(path), os.path.basename(path), as_text=True)
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    run = wrapped.prune(input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy()


def p_call_first_batch_cached(path, input_name, output_name):
    run = _pruned(path, input_name, output_name)
    cache = {}

    def call(batch):
        if "answer" not in cache:
            cache["answer"] = run(tf.constant(batch)).numpy()
        return cache["answer"]
    return call


def p_call_single_rows(path, input_name, output_name):
    # one row at a time, stacked without the batch axis for a batch of one
    run = _pruned(path, input_name, output_name)
    return lambda batch: np.concatenate([run(tf.constant(row[None])).numpy() for row in batch])[0] \
        if len(batch) == 1 else np.concatenate([run(tf.constant(row[None])).numpy() for row in batch])


# ----- 14.2 right


def p_call_import_prefix(path, input_name, output_name):
    run = _pruned(path, input_name, output_name, prefix="import/")
    return lambda batch: run(tf.constant(batch, tf.float32)).numpy()


def p_call_input_map(path, input_name, output_name):
    graph_def = _read_graph_def(path)
    placeholder = next(n for n in graph_def.node if n.name == input_name.split(":")[0])
    shape = tf.TensorShape(placeholder.attr["shape"].shape)

    def body(x):
        (out,) = tf.compat.v1.import_graph_def(graph_def, input_map={input_name: x},
                                               return_elements=[output_name], name="frozen")
        return out
    wrapped = tf.compat.v1.wrap_function(body, [tf.TensorSpec(shape, tf.float32)])
    return lambda batch: np.asarray(wrapped(tf.convert_to_tensor(batch)))


def p_call_pathlib_and_gfile(path, input_name, output_name):
    graph_def = tf.compat.v1.GraphDef.FromString(tf.io.gfile.GFile(str(path), "rb").read())

    def imports():
        tf.graph_util.import_graph_def(graph_def, name="")
    function = tf.compat.v1.wrap_function(imports, signature=[])
    pruned = function.prune(feeds=[input_name], fetches=[output_name])
    return lambda batch: pruned(tf.constant(batch))[0].numpy()


CALL_WRONG = [
    p_call_returns_tensor, p_call_returns_list, p_call_squeezed, p_call_float64_result,
    p_call_first_placeholder, p_call_last_node, p_call_hard_coded_names, p_call_with_session,
    p_call_rewrites_file, p_call_first_batch_cached, p_call_single_rows,
]
CALL_RIGHT = [p_call_import_prefix, p_call_input_map, p_call_pathlib_and_gfile]


@pytest.mark.parametrize("answer", cases(CALL_WRONG, HOLES))
def test_prompt_frozen_callable_wrong(answer):
    hint = rejects(ex14.check_frozen_callable, answer, may_raise=True)
    assert len(hint) <= 600 and "/tmp" not in hint and "\x1b" not in hint


@pytest.mark.parametrize("answer", cases(CALL_RIGHT, HOLES))
def test_prompt_frozen_callable_right(answer):
    passes(ex14.check_frozen_callable, answer)


# ----- 14.3 wrong


def _float16(converter):
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    with deploy.quietly():
        return converter.convert()


def _serving(model, training=False, batch=None, dtype=tf.float32):
    return tf.function(lambda x: model(tf.cast(x, tf.float32), training=training)
                       ).get_concrete_function(_spec_for(model, batch=batch, dtype=dtype))


def p_lite_plain(model):
    with deploy.quietly():
        return tf.lite.TFLiteConverter.from_keras_model(model).convert()


def p_lite_dynamic_range(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    with deploy.quietly():
        return converter.convert()


def p_lite_types_only(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.target_spec.supported_types = [tf.float16]
    with deploy.quietly():
        return converter.convert()


def p_lite_trackable_model(model):
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions([_serving(model)], model))


def p_lite_training_true(model):
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions([_serving(model, True)]))


def p_lite_float64_input(model):
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions(
        [_serving(model, dtype=tf.float64)]))


def p_lite_float16_io(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    converter.inference_input_type = tf.float16
    converter.inference_output_type = tf.float16
    with deploy.quietly():
        return converter.convert()


def p_lite_returns_path(model):
    content = _float16(tf.lite.TFLiteConverter.from_keras_model(model))
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"attack_{os.getpid()}.tflite")
    pathlib.Path(path).write_bytes(content)
    return path


def p_lite_returns_bytearray_list(model):
    return list(_float16(tf.lite.TFLiteConverter.from_keras_model(model)))


def p_lite_model_cast_in_place(model):
    # rounds the model's own weights to float16 first: the model is changed
    model.set_weights([w.astype(np.float16).astype(w.dtype) for w in model.get_weights()])
    return _float16(tf.lite.TFLiteConverter.from_keras_model(model))


def p_lite_model_made_untrainable(model):
    model.trainable = False
    return _float16(tf.lite.TFLiteConverter.from_keras_model(model))


def p_lite_fresh_clone(model):
    copy = keras.models.clone_model(model)
    return _float16(tf.lite.TFLiteConverter.from_keras_model(copy))


def p_lite_hard_coded_width(model):
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([None, 16], tf.float32))
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions([function]))


# ----- 14.3 right


def p_lite_from_export(model):
    folder = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"attack_export_{os.getpid()}")
    import shutil
    shutil.rmtree(folder, ignore_errors=True)
    model.export(folder, verbose=False)
    try:
        return _float16(tf.lite.TFLiteConverter.from_saved_model(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def p_lite_concrete_without_owner(model):
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions([_serving(model)]))


def p_lite_optimize_for_size(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = {tf.lite.Optimize.OPTIMIZE_FOR_SIZE}
    converter.target_spec.supported_types = {tf.float16}
    with deploy.quietly():
        return bytes(converter.convert())


def p_lite_frozen_first(model):
    frozen = convert_variables_to_constants_v2(_serving(model))
    return _float16(tf.lite.TFLiteConverter.from_concrete_functions([frozen]))


LITE_WRONG = [
    p_lite_plain, p_lite_dynamic_range, p_lite_types_only, p_lite_trackable_model,
    p_lite_training_true, p_lite_float64_input, p_lite_float16_io, p_lite_returns_path,
    p_lite_returns_bytearray_list, p_lite_model_cast_in_place, p_lite_model_made_untrainable,
    p_lite_fresh_clone, p_lite_hard_coded_width,
]
LITE_RIGHT = [p_lite_from_export, p_lite_concrete_without_owner, p_lite_optimize_for_size,
              p_lite_frozen_first]


@pytest.mark.parametrize("answer", cases(LITE_WRONG, HOLES))
def test_prompt_float16_litert_wrong(answer):
    hint = rejects(ex14.check_float16_litert, answer, may_raise=True)
    assert len(hint) <= 600 and "/tmp" not in hint and "\x1b" not in hint


@pytest.mark.parametrize("answer", cases(LITE_RIGHT, HOLES))
def test_prompt_float16_litert_right(answer):
    passes(ex14.check_float16_litert, answer)


# --------------------------------------------------------------------------- issue 33: the classes of holes
# Written from the prompts: 14.1's hint for a returned path; 14.2 "of the tensor's dtype" with int64 and
# float64 outputs; 14.3 "left as it was" on compile state, layer settings and the global dtype policy.
# Every hint, its "Exercise 14.N: " prefix included, is at most 300 characters.

from tests.attack_harness import accepted as _accepted  # noqa: E402
from tests.attack_harness import rejected as _rejected  # noqa: E402


def _short(hint: str) -> str:
    assert hint.startswith("Exercise 14.") and len(hint) <= 300, (len(hint), hint)
    return hint


def q_freeze_returns_path(model, path):
    freeze_for_serving(model, path)
    return path


def q_freeze_returns_file_name(model, path):
    freeze_for_serving(model, path)
    return os.path.basename(path)


def q_freeze_returns_keras_output_name(model, path):
    freeze_for_serving(model, path)
    return model.layers[-1].name


def q_freeze_returns_keras_output_name_with_index(model, path):
    freeze_for_serving(model, path)
    return model.layers[-1].name + ":0"


def q_freeze_returns_model_name(model, path):
    freeze_for_serving(model, path)
    return model.name


def q_freeze_returns_pathlib(model, path):
    import pathlib
    freeze_for_serving(model, path)
    return pathlib.Path(path)


def q_freeze_returns_none(model, path):
    freeze_for_serving(model, path)


def q_freeze_returns_last_node(model, path):
    freeze_for_serving(model, path)
    graph_def = V1.GraphDef()
    graph_def.ParseFromString(open(path, "rb").read())
    return graph_def.node[-1].name


@pytest.mark.parametrize("answer", [q_freeze_returns_path, q_freeze_returns_file_name,
                                    q_freeze_returns_keras_output_name,
                                    q_freeze_returns_keras_output_name_with_index, q_freeze_returns_model_name,
                                    q_freeze_returns_pathlib, q_freeze_returns_none, q_freeze_returns_last_node],
                         ids=lambda answer: answer.__name__)
def test_freeze_for_serving_rejects_with_a_short_hint(answer):
    hint = _short(_rejected(ex14.check_freeze_for_serving, answer))
    if answer in (q_freeze_returns_path, q_freeze_returns_file_name):
        assert "you returned the file's path" in hint and "op name" not in hint


def q_freeze_concrete_before_freezing(model, path):
    concrete = _inference(model)
    frozen = convert_variables_to_constants_v2(concrete)
    with open(path, "wb") as file:
        file.write(frozen.graph.as_graph_def().SerializeToString())
    return concrete.outputs[0].name  # the same name survives freezing


@pytest.mark.parametrize("answer", [freeze_for_serving, q_freeze_concrete_before_freezing],
                         ids=lambda answer: answer.__name__)
def test_freeze_for_serving_accepts_these_too(answer):
    _accepted(ex14.check_freeze_for_serving, answer)


def _pruned_output(path, input_name, output_name):
    graph_def = V1.GraphDef()
    graph_def.ParseFromString(open(path, "rb").read())
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(graph_def, name=""), [])
    return wrapped.prune(input_name, output_name)


def q_call_astype_float32(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy().astype("float32")


def q_call_tf_cast_float32(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: tf.cast(run(tf.constant(batch)), tf.float32).numpy()


def q_call_batch_dtype(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: np.asarray(run(tf.constant(batch)), dtype=batch.dtype)


def q_call_python_float(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: np.array(run(tf.constant(batch)), dtype=float)


def q_call_tolist(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy().tolist()


def q_call_keras_cast(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: keras.ops.convert_to_numpy(keras.ops.cast(run(tf.constant(batch)), "float32"))


def q_call_cast_in_the_graph(path, input_name, output_name):
    graph_def = V1.GraphDef()
    graph_def.ParseFromString(open(path, "rb").read())

    def body():
        V1.import_graph_def(graph_def, name="")
        return tf.cast(V1.get_default_graph().get_tensor_by_name(output_name), tf.float32)

    wrapped = V1.wrap_function(body, [])
    run = wrapped.prune(input_name, wrapped.outputs[0])
    return lambda batch: run(tf.constant(batch)).numpy()


def q_call_float16(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy().astype(np.float16)


def q_call_int32(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: run(tf.constant(batch)).numpy().astype(np.int32)


@pytest.mark.parametrize("answer", [q_call_astype_float32, q_call_tf_cast_float32, q_call_batch_dtype,
                                    q_call_python_float, q_call_tolist, q_call_keras_cast,
                                    q_call_cast_in_the_graph, q_call_float16, q_call_int32],
                         ids=lambda answer: answer.__name__)
def test_frozen_callable_rejects_a_cast_with_a_short_hint(answer):
    _short(_rejected(ex14.check_frozen_callable, answer))


def q_call_as_is(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: np.asarray(run(tf.convert_to_tensor(batch)))


def q_call_keras_numpy(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)
    return lambda batch: keras.ops.convert_to_numpy(run(tf.constant(batch, tf.float32)))


def q_call_numpy_dtype_of_the_tensor(path, input_name, output_name):
    run = _pruned_output(path, input_name, output_name)

    def call(batch):
        tensor = run(tf.constant(batch))
        return np.array(tensor, dtype=tensor.dtype.as_numpy_dtype)

    return call


@pytest.mark.parametrize("answer", [q_call_as_is, q_call_keras_numpy, q_call_numpy_dtype_of_the_tensor],
                         ids=lambda answer: answer.__name__)
def test_frozen_callable_accepts_every_dtype_keeping_answer(answer):
    _accepted(ex14.check_frozen_callable, answer)


def _converted(model):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    with deploy.quietly():
        return converter.convert()


def q_lite_recompiles(model):
    model.compile(optimizer="adam", loss="mse")
    return _converted(model)


def q_lite_compiles_with_sgd(model):
    model.compile(optimizer="sgd", loss="mae")
    return _converted(model)


def q_lite_drops_the_optimizer(model):
    model.optimizer = None
    return _converted(model)


def q_lite_resets_the_optimizer(model):
    if model.optimizer is not None and model.optimizer.built:
        model.optimizer.iterations.assign(0)
    elif model.optimizer is not None:
        model.optimizer.build(model.trainable_variables)
    return _converted(model)


def q_lite_dropout_off(model):
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dropout):
            layer.rate = 0.0
    return _converted(model)


def q_lite_batchnorm_epsilon(model):
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            layer.momentum = 0.0
    return _converted(model)


def q_lite_linear_activation(model):
    for layer in model.layers:
        if isinstance(layer, keras.layers.Dense):
            layer.activation = keras.activations.linear
    return _converted(model)


def q_lite_global_float16_policy(model):
    keras.config.set_dtype_policy("mixed_float16")
    return _converted(model)


def q_lite_cast_and_back(model):
    for variable in model.weights:
        variable.assign(variable.numpy().astype(np.float16).astype(np.float32))
    return _converted(model)


@pytest.mark.parametrize("answer", [q_lite_recompiles, q_lite_compiles_with_sgd, q_lite_drops_the_optimizer,
                                    q_lite_resets_the_optimizer, q_lite_dropout_off, q_lite_batchnorm_epsilon,
                                    q_lite_linear_activation, q_lite_global_float16_policy,
                                    q_lite_cast_and_back],
                         ids=lambda answer: answer.__name__)
def test_float16_litert_rejects_a_changed_model_with_a_short_hint(answer):
    policy = keras.config.dtype_policy().name
    try:
        _short(_rejected(ex14.check_float16_litert, answer))
    finally:
        keras.config.set_dtype_policy(policy)


def q_lite_dropout_off_and_restored(model):
    rates = {layer.name: layer.rate for layer in model.layers if isinstance(layer, keras.layers.Dropout)}
    for layer in model.layers:
        if layer.name in rates:
            layer.rate = 0.0
    try:
        return _converted(model)
    finally:
        for layer in model.layers:
            if layer.name in rates:
                layer.rate = rates[layer.name]


def q_lite_untrainable_and_restored(model):
    model.trainable = False
    try:
        return _converted(model)
    finally:
        model.trainable = True


def q_lite_from_a_clone_with_the_weights(model):
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    return _converted(clone)


@pytest.mark.parametrize("answer", [q_lite_dropout_off_and_restored, q_lite_untrainable_and_restored,
                                    q_lite_from_a_clone_with_the_weights],
                         ids=lambda answer: answer.__name__)
def test_float16_litert_accepts_a_model_left_as_it_was(answer):
    _accepted(ex14.check_float16_litert, answer)


# --------------------------------------------------------------------------- an independent review's answers
# Wrong answers an independent reviewer wrote for 14.1-14.3: each is rejected with a hint of at most
# 300 characters (prefix included). Its hard-coded "Identity:0" for 14.1 is right for these models: left out.


def _r_freeze(model, path, spec=None, training=False, text=False, ret="out", freeze=True):
    spec = spec or tf.TensorSpec([None, model.inputs[0].shape[-1]], tf.float32)
    function = tf.function(lambda x: model(x, training=training)).get_concrete_function(spec)
    constant = convert_variables_to_constants_v2(function) if freeze else function
    graph_def = constant.graph.as_graph_def()
    if text:
        with open(path, "w") as file:
            file.write(str(graph_def))
    else:
        with open(path, "wb") as file:
            file.write(graph_def.SerializeToString())
    return {"out": constant.outputs[0].name, "op": constant.outputs[0].name.split(":")[0],
            "in": constant.inputs[0].name, "path": path}[ret]


def _r_spec(model, batch, dtype=tf.float32):
    return tf.TensorSpec([batch, model.inputs[0].shape[-1]], dtype)


REVIEW_141 = {
    "training_true": lambda m, p: _r_freeze(m, p, training=True),
    "batch1_spec": lambda m, p: _r_freeze(m, p, spec=_r_spec(m, 1)),
    "op_name_not_tensor": lambda m, p: _r_freeze(m, p, ret="op"),
    "text_format": lambda m, p: _r_freeze(m, p, text=True),
    "not_frozen": lambda m, p: _r_freeze(m, p, freeze=False),
    "float64_input": lambda m, p: _r_freeze(m, p, spec=_r_spec(m, None, tf.float64)),
    "returns_input_name": lambda m, p: _r_freeze(m, p, ret="in"),
    "returns_path": lambda m, p: _r_freeze(m, p, ret="path"),
    "savedmodel_folder": lambda m, p: (tf.saved_model.save(m, p), "Identity:0")[1],
    "fixed_batch8": lambda m, p: _r_freeze(m, p, spec=_r_spec(m, 8)),
}


@pytest.mark.parametrize("name", list(REVIEW_141))
def test_freeze_for_serving_rejects_the_reviewers_wrong_answers(name):
    _short(_rejected(ex14.check_freeze_for_serving, REVIEW_141[name]))


def _r_read(path):
    graph_def = V1.GraphDef()
    with open(path, "rb") as file:
        graph_def.ParseFromString(file.read())
    return graph_def


def _r_callable(path, input_name, output_name, post=lambda a: a, prefix="", feed_dtype=tf.float32):
    graph_def = _r_read(path)
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(graph_def, name=prefix.rstrip("/")), [])
    pruned = wrapped.prune(prefix + input_name, prefix + output_name)
    return lambda batch: post(pruned(tf.constant(batch, feed_dtype)).numpy())


def _r_first_placeholder(path, input_name, output_name):
    first = [node.name for node in _r_read(path).node if node.op == "Placeholder"][0]
    return _r_callable(path, first + ":0", output_name)


def _r_last_node(path, input_name, output_name):
    return _r_callable(path, input_name, _r_read(path).node[-1].name + ":0")


def _r_session(path, input_name, output_name):
    graph = tf.Graph()
    with graph.as_default():
        V1.import_graph_def(_r_read(path), name="")
    session = V1.Session(graph=graph)
    return lambda batch: session.run(output_name, {input_name: batch})


def _r_rewrites_file(path, input_name, output_name):
    graph_def = V1.graph_util.extract_sub_graph(_r_read(path), [output_name.split(":")[0]])
    with open(path, "wb") as file:
        file.write(graph_def.SerializeToString())
    return _r_callable(path, input_name, output_name)


def _r_tf_tensor(path, input_name, output_name):
    graph_def = _r_read(path)
    pruned = V1.wrap_function(lambda: V1.import_graph_def(graph_def, name=""), []).prune(input_name, output_name)
    return lambda batch: pruned(tf.constant(batch, tf.float32))


def _r_first_row(path, input_name, output_name):
    run = _r_callable(path, input_name, output_name)
    return lambda batch: run(batch[:1])


def _r_rows_loop(path, input_name, output_name):
    run = _r_callable(path, input_name, output_name)
    return lambda batch: np.stack([run(row[None])[0] for row in batch]).astype(np.float32)


def _r_cache():
    kept = {}

    def frozen_callable_once(path, input_name, output_name):
        if "run" not in kept:
            kept["run"] = _r_callable(path, input_name, output_name)
        return kept["run"]

    return frozen_callable_once


def _r_op_names(path, input_name, output_name):
    graph_def = _r_read(path)
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(graph_def, name=""), [])
    pruned = wrapped.prune(input_name, output_name.split(":")[0])
    return lambda batch: np.asarray(pruned(tf.constant(batch, tf.float32)))


def _r_listed_fetch(path, input_name, output_name):
    graph_def = _r_read(path)
    wrapped = V1.wrap_function(lambda: V1.import_graph_def(graph_def, name=""), [])
    pruned = wrapped.prune(input_name, [output_name])
    return lambda batch: np.asarray(pruned(tf.constant(batch, tf.float32)))


REVIEW_142 = {
    "cast_float32": lambda p, i, o: _r_callable(p, i, o, post=lambda a: a.astype(np.float32)),
    "squeeze": lambda p, i, o: _r_callable(p, i, o, post=np.squeeze),
    "list_wrapped": lambda p, i, o: _r_callable(p, i, o, post=lambda a: [a]),
    "first_placeholder": _r_first_placeholder,
    "last_node_output": _r_last_node,
    "session": _r_session,
    "rewrites_file": _r_rewrites_file,
    "returns_tf_tensor": _r_tf_tensor,
    "first_row_only": _r_first_row,
    "float64_feed": lambda p, i, o: _r_callable(p, i, o, feed_dtype=tf.float64),
    "rows_loop_cast32": _r_rows_loop,
    "tolist": lambda p, i, o: _r_callable(p, i, o, post=lambda a: a.tolist()),
    "module_cache": "cache",
    "fetch_op_name": _r_op_names,
    "fetch_a_list": _r_listed_fetch,
    "hardcoded_x0": lambda p, i, o: _r_callable(p, "x:0", o),
    "hardcoded_Identity": lambda p, i, o: _r_callable(p, i, "Identity:0"),
}


@pytest.mark.parametrize("name", list(REVIEW_142))
def test_frozen_callable_rejects_the_reviewers_wrong_answers(name):
    answer = _r_cache() if REVIEW_142[name] == "cache" else REVIEW_142[name]
    hint = _short(_rejected(ex14.check_frozen_callable, answer))
    if name == "fetch_op_name":
        assert "no tensor value came back: fetch a tensor name ('op:0'), not an op name" in hint
    if name == "fetch_a_list":
        assert "an extra leading axis: prune(..., [name]) returns a list" in hint


def _r_convert(model, optimize=True, float16=True, extra=None):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if optimize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if float16:
        converter.target_spec.supported_types = [tf.float16]
    if extra:
        extra(converter)
    return converter.convert()


def _r_concrete(model, owner=True, training=False):
    spec = tf.TensorSpec([None, model.inputs[0].shape[-1]], tf.float32)
    function = tf.function(lambda x: model(x, training=training)).get_concrete_function(spec)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([function], *([model] if owner else []))
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def _r_layers(model, kind, **settings):
    for layer in model.layers:
        if isinstance(layer, kind):
            for key, value in settings.items():
                setattr(layer, key, value)


def _r_round_weights(model):
    for variable in model.weights:
        variable.assign(tf.cast(tf.cast(variable, tf.float16), variable.dtype))


def _r_int8(model):
    size = model.inputs[0].shape[-1]

    def representative():
        for _ in range(10):
            yield [np.random.rand(1, size).astype(np.float32)]

    def settings(converter):
        converter.representative_dataset = representative
        converter.target_spec.supported_types = []

    return _r_convert(model, extra=settings)


def _r_float16_model(model):
    config = model.get_config()
    for layer in config["layers"]:
        layer["config"]["dtype"] = "float16"
    clone = model.__class__.from_config(config)
    clone.set_weights([w.astype(np.float16) for w in model.get_weights()])
    return _r_convert(clone, optimize=False, float16=False)


def _r_writes_file(model):
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "m.tflite")
    with open(path, "wb") as file:
        file.write(_r_convert(model))
    return path


def _r_activation_after(model):
    content = _r_convert(model)
    _r_layers(model, keras.layers.Dense, activation=keras.activations.get("linear"))
    return content


REVIEW_143 = {
    "dynamic_range_only": lambda m: _r_convert(m, float16=False),
    "no_optimization": lambda m: _r_convert(m, optimize=False, float16=False),
    "f16_without_optimize": lambda m: _r_convert(m, optimize=False),
    "global_policy_mixed_float16": lambda m: (keras.mixed_precision.set_global_policy("mixed_float16"),
                                              _r_convert(m))[1],
    "compiles_model": lambda m: (m.compile(optimizer="adam", loss="mse"), _r_convert(m))[1],
    "freezes_layers": lambda m: (_r_layers(m, keras.layers.Layer, trainable=False), _r_convert(m))[1],
    "rounds_weights_in_place": lambda m: (_r_round_weights(m), _r_convert(m, optimize=False, float16=False))[1],
    "dropout_rate_0": lambda m: (_r_layers(m, keras.layers.Dropout, rate=0.0), _r_convert(m))[1],
    "training_true_concrete": lambda m: _r_concrete(m, training=True),
    "full_int8": _r_int8,
    "float16_io_model": _r_float16_model,
    "returns_path": _r_writes_file,
    "bn_momentum_0": lambda m: (_r_layers(m, keras.layers.BatchNormalization, momentum=0.0), _r_convert(m))[1],
    "f16_inference_io": lambda m: _r_convert(m, extra=lambda c: setattr(c, "inference_input_type", tf.float16)),
    "returns_bytearray_list": lambda m: list(_r_convert(m)),
    "rounds_weights_then_f16": lambda m: (_r_round_weights(m), _r_convert(m))[1],
    "concrete_with_owner_trap": _r_concrete,
    "activation_changed_after": _r_activation_after,
}


@pytest.mark.parametrize("name", list(REVIEW_143))
def test_float16_litert_rejects_the_reviewers_wrong_answers(name):
    policy = keras.config.dtype_policy().name
    try:
        hint = _short(_rejected(ex14.check_float16_litert, REVIEW_143[name]))
    finally:
        keras.config.set_dtype_policy(policy)
    if name == "bn_momentum_0":
        assert "layer 'norm': momentum changed" in hint
    if name == "float16_io_model":
        assert "keep the Keras model float32 and let the converter store float16 weights" in hint
