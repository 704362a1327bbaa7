"""The checks of notebook 10: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex10
from helpers.keras2 import keras2_key_map, restore_keras2_checkpoint
from helpers.migration import restore_name_based


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 10.1


def saved_model_predictor(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    signature = tf.saved_model.load(path).signatures["serving_default"]
    spec = next(iter(signature.structured_input_signature[1].values()))

    def predict(tokens):
        outputs = layer(tf.cast(tokens, spec.dtype))
        return np.asarray(next(iter(outputs.values())))

    return predict


def predictor_with_the_signature_itself(path):
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    (name, spec), = serve.structured_input_signature[1].items()

    def predict(tokens):
        result = serve(**{name: tf.constant(tokens, dtype=spec.dtype)})
        return list(result.values())[0].numpy()

    predict.loaded = loaded  # keep the SavedModel alive as long as the function
    return predict


def predictor_with_flattened_specs(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    dtype = tf.nest.flatten(tf.saved_model.load(path).signatures["serving_default"].structured_input_signature)[0].dtype
    return lambda tokens: keras.ops.convert_to_numpy(tf.nest.flatten(layer(tokens.astype(dtype.as_numpy_dtype)))[0])


def predictor_load_model(path):
    model = keras.models.load_model(path)
    return lambda tokens: model.predict(tokens)


def predictor_without_cast(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    return lambda tokens: np.asarray(next(iter(layer(tokens).values())))


def predictor_int32(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    return lambda tokens: np.asarray(next(iter(layer(tokens.astype(np.int32)).values())))


def predictor_returning_the_dict(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    signature = tf.saved_model.load(path).signatures["serving_default"]
    dtype = next(iter(signature.structured_input_signature[1].values())).dtype
    return lambda tokens: layer(tf.cast(tokens, dtype))


def predictor_notebook_output_name(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    signature = tf.saved_model.load(path).signatures["serving_default"]
    dtype = next(iter(signature.structured_input_signature[1].values())).dtype
    return lambda tokens: np.asarray(layer(tf.cast(tokens, dtype))["dense"])


def predictor_returning_a_tensor(path):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    signature = tf.saved_model.load(path).signatures["serving_default"]
    dtype = next(iter(signature.structured_input_signature[1].values())).dtype
    return lambda tokens: next(iter(layer(tf.cast(tokens, dtype)).values()))


def test_saved_model_predictor(capsys):
    ex10.check_saved_model_predictor(saved_model_predictor)
    assert "✔ Exercise 10.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [predictor_with_the_signature_itself, predictor_with_flattened_specs])
def test_saved_model_predictor_alternatives(answer, capsys):
    ex10.check_saved_model_predictor(answer)
    assert "✔ Exercise 10.1 passed" in capsys.readouterr().out


def test_saved_model_predictor_mistakes():
    with pytest.raises(LearnerCodeError, match="load_model|SavedModel|File format not supported"):
        ex10.check_saved_model_predictor(predictor_load_model)
    with pytest.raises(LearnerCodeError, match="int32|int64"):
        ex10.check_saved_model_predictor(predictor_without_cast)
    with pytest.raises(LearnerCodeError, match="int64"):
        ex10.check_saved_model_predictor(predictor_int32)
    with pytest.raises(CheckFailed, match="returns the dict"):
        ex10.check_saved_model_predictor(predictor_returning_the_dict)
    with pytest.raises(LearnerCodeError, match="KeyError"):
        ex10.check_saved_model_predictor(predictor_notebook_output_name)
    with pytest.raises(CheckFailed, match="should be a NumPy array"):
        ex10.check_saved_model_predictor(predictor_returning_a_tensor)
    with pytest.raises(ExerciseNotDone):
        ex10.check_saved_model_predictor(not_done)


# --------------------------------------------------------------------------- 10.2


def load_keras2_weights(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model, drop_optimizer=True)


def load_then_check_the_report(ckpt_path, model):
    report = restore_keras2_checkpoint(ckpt_path, model, strict=False, drop_optimizer=True)
    if not report.complete:
        raise ValueError(f"incomplete restore:\n{report}")


def load_through_the_key_map(ckpt_path, model):
    key_map = keras2_key_map(ckpt_path, model)
    saved = {name for name, _ in tf.train.list_variables(ckpt_path)}
    weights = {name for name in saved if name.startswith("layer")}
    if weights != set(key_map) or len(key_map) != len(model.weights):
        raise ValueError("the checkpoint and the model do not match")
    report = restore_name_based(ckpt_path, key_map, strict=False)
    if report.shape_mismatches or report.dtype_mismatches:
        raise ValueError(str(report))


def load_with_checkpoint(ckpt_path, model):
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()


def load_with_load_weights(ckpt_path, model):
    model.load_weights(ckpt_path)


def load_strict_with_the_optimizer(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model)


def load_lax(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model, strict=False, drop_optimizer=True)


def load_trainable_only(ckpt_path, model):
    key_map = {key: v for key, v in keras2_key_map(ckpt_path, model).items() if v.trainable}
    report = restore_name_based(ckpt_path, key_map, strict=False)
    if report.shape_mismatches or len(key_map) != len(model.trainable_weights):
        raise ValueError(str(report))


def load_and_convert_in_place(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model, drop_optimizer=True)
    tf.train.Checkpoint(model=model).write(ckpt_path)  # "convert once", over the old file


def test_load_keras2_weights(capsys):
    ex10.check_load_keras2_weights(load_keras2_weights)
    assert "✔ Exercise 10.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [load_then_check_the_report, load_through_the_key_map])
def test_load_keras2_weights_alternatives(answer, capsys):
    ex10.check_load_keras2_weights(answer)
    assert "✔ Exercise 10.2 passed" in capsys.readouterr().out


def test_load_keras2_weights_mistakes():
    with pytest.raises(CheckFailed, match="kept all of its own values"):
        ex10.check_load_keras2_weights(load_with_checkpoint)
    with pytest.raises(LearnerCodeError, match="File format not supported"):
        ex10.check_load_keras2_weights(load_with_load_weights)
    with pytest.raises(LearnerCodeError, match="optimizer/"):
        ex10.check_load_keras2_weights(load_strict_with_the_optimizer)
    with pytest.raises(CheckFailed, match="accepted without an error"):
        ex10.check_load_keras2_weights(load_lax)
    with pytest.raises(CheckFailed, match="moving statistics were not restored"):
        ex10.check_load_keras2_weights(load_trainable_only)
    with pytest.raises(CheckFailed, match="the checkpoint file was changed"):
        ex10.check_load_keras2_weights(load_and_convert_in_place)
    with pytest.raises(ExerciseNotDone):
        ex10.check_load_keras2_weights(not_done)


# --------------------------------------------------------------------------- 10.3


def keras2_keys(model):
    weighted = [layer for layer in model.layers if layer.weights]
    return {
        f"layer_with_weights-{i}/{variable.name}/.ATTRIBUTES/VARIABLE_VALUE": variable
        for i, layer in enumerate(weighted)
        for variable in layer.weights
    }


def keras2_keys_with_a_counter(model):
    keys, number = {}, 0
    for layer in model.layers:
        if not layer.weights:
            continue
        for variable in layer.trainable_weights + layer.non_trainable_weights:
            keys["layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE" % (number, variable.name)] = variable
        number += 1
    return keys


def keras2_keys_from_paths(model):
    weighted = [layer for layer in model.layers if len(layer.weights) > 0]
    keys = {}
    for i, layer in enumerate(weighted):
        for variable in layer.weights:
            short = variable.path.rsplit("/", 1)[-1]
            keys[f"layer_with_weights-{i}/{short}/.ATTRIBUTES/VARIABLE_VALUE"] = variable
    return keys


def keys_counting_every_layer(model):
    return {f"layer_with_weights-{i}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE": v
            for i, layer in enumerate(model.layers) for v in layer.weights}


def keys_layer_numbers(model):
    weighted = [layer for layer in model.layers if layer.weights]
    return {f"layer-{i}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE": v for i, layer in enumerate(weighted) for v in layer.weights}


def keys_keras3_paths(model):
    return {v.path: v for v in model.weights}


def keys_trainable_only(model):
    weighted = [layer for layer in model.layers if layer.weights]
    return {f"layer_with_weights-{i}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE": v
            for i, layer in enumerate(weighted) for v in layer.trainable_weights}


def keys_keras3_attribute_names(model):
    weighted = [layer for layer in model.layers if layer.weights]
    keys = {}
    for i, layer in enumerate(weighted):
        for v in layer.weights:
            name = "_" + v.name if v.name in ("kernel", "embeddings") else v.name
            keys[f"layer_with_weights-{i}/{name}/.ATTRIBUTES/VARIABLE_VALUE"] = v
    return keys


def keys_from_one(model):
    weighted = [layer for layer in model.layers if layer.weights]
    return {f"layer_with_weights-{i}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE": v
            for i, layer in enumerate(weighted, start=1) for v in layer.weights}


def keys_swapped(model):
    keys = keras2_keys(model)
    names = sorted(keys)
    keys[names[0]], keys[names[1]] = keys[names[1]], keys[names[0]]
    return keys


def test_keras2_keys(capsys):
    ex10.check_keras2_keys(keras2_keys)
    assert "✔ Exercise 10.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [keras2_keys_with_a_counter, keras2_keys_from_paths])
def test_keras2_keys_alternatives(answer, capsys):
    ex10.check_keras2_keys(answer)
    assert "✔ Exercise 10.3 passed" in capsys.readouterr().out


def test_keras2_keys_mistakes():
    with pytest.raises(CheckFailed, match="number only the layers that have weights"):
        ex10.check_keras2_keys(keys_counting_every_layer)
    with pytest.raises(CheckFailed, match="layer_with_weights-N"):
        ex10.check_keras2_keys(keys_layer_numbers)
    with pytest.raises(CheckFailed, match="keys end with"):
        ex10.check_keras2_keys(keys_keras3_paths)
    with pytest.raises(CheckFailed, match="moving statistics are missing"):
        ex10.check_keras2_keys(keys_trainable_only)
    with pytest.raises(CheckFailed, match="variable's own name"):
        ex10.check_keras2_keys(keys_keras3_attribute_names)
    with pytest.raises(CheckFailed, match="from 0"):
        ex10.check_keras2_keys(keys_from_one)
    with pytest.raises(CheckFailed, match="point at the wrong variable"):
        ex10.check_keras2_keys(keys_swapped)
    with pytest.raises(CheckFailed, match="should return a dict"):
        ex10.check_keras2_keys(lambda model: list(keras2_keys(model).items()))
    with pytest.raises(ExerciseNotDone):
        ex10.check_keras2_keys(not_done)
