"""The checks of notebook 13: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import json

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex13
from helpers.keras2 import convert_legacy_h5, legacy_custom_objects


def not_done(*args):
    raise NotImplementedError()


def hint_of(error: pytest.ExceptionInfo) -> str:
    return str(error.value).partition(": ")[2]


# --------------------------------------------------------------------------- 13.1


def call_by_keyword(path, inputs):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    outputs = signature(**{name: tf.constant(value, dtype=specs[name].dtype) for name, value in inputs.items()})
    (output,) = outputs.values()
    return output.numpy()


def keyword_with_cast(path, inputs):
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    kwargs = {}
    for name, spec in serve.structured_input_signature[1].items():
        kwargs[name] = tf.cast(inputs[name], spec.dtype)
    return next(iter(serve(**kwargs).values())).numpy()


def keyword_with_numpy_astype(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    result = serve(**{k: v.astype(specs[k].dtype.as_numpy_dtype) for k, v in inputs.items()})
    return np.asarray(list(result.values())[0])


def positional(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return next(iter(serve(*[tf.constant(v) for v in inputs.values()]).values())).numpy()


def without_cast(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return next(iter(serve(**{k: tf.constant(v) for k, v in inputs.items()}).values())).numpy()


def all_float32(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    return next(iter(serve(**{k: tf.constant(v, tf.float32) for k, v in inputs.items()}).values())).numpy()


def by_output_name(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    return serve(**{k: tf.cast(v, specs[k].dtype) for k, v in inputs.items()})["output_0"].numpy()


def in_dict_order(path, inputs):  # names from the signature, values in the caller's order
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    kwargs = {name: tf.cast(value, specs[name].dtype) for name, value in zip(sorted(specs), inputs.values())}
    return next(iter(serve(**kwargs).values())).numpy()


def returns_tensor(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    return next(iter(serve(**{k: tf.cast(v, specs[k].dtype) for k, v in inputs.items()}).values()))


def returns_dict(path, inputs):
    serve = tf.saved_model.load(path).signatures["serving_default"]
    specs = serve.structured_input_signature[1]
    return {k: v.numpy() for k, v in serve(**{k: tf.cast(v, specs[k].dtype) for k, v in inputs.items()}).items()}


def through_tfsmlayer(path, inputs):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    return np.asarray(next(iter(layer(inputs).values())))


def test_call_by_keyword(capsys):
    ex13.check_call_by_keyword(call_by_keyword)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [keyword_with_cast, keyword_with_numpy_astype])
def test_call_by_keyword_alternatives(answer, capsys):
    ex13.check_call_by_keyword(answer)
    assert "passed" in capsys.readouterr().out


def test_call_by_keyword_mistakes():
    for answer, pattern in [(positional, "by keyword"), (without_cast, "int64|int32"),
                            (all_float32, "int32|float"), (by_output_name, "KeyError|output_0"),
                            (through_tfsmlayer, "by keyword")]:
        with pytest.raises(LearnerCodeError, match=pattern):
            ex13.check_call_by_keyword(answer)
    with pytest.raises(CheckFailed, match="swapped|by its name") as error:
        ex13.check_call_by_keyword(in_dict_order)
    assert len(hint_of(error)) <= 300
    with pytest.raises(CheckFailed, match="NumPy array") as error:
        ex13.check_call_by_keyword(returns_tensor)
    assert len(hint_of(error)) <= 300
    with pytest.raises(CheckFailed, match="NumPy array"):
        ex13.check_call_by_keyword(returns_dict)


def test_call_by_keyword_stub():
    with pytest.raises(ExerciseNotDone):
        ex13.check_call_by_keyword(not_done)


# --------------------------------------------------------------------------- 13.2


def load_old_h5(path):
    return keras.models.load_model(path, compile=False, custom_objects=legacy_custom_objects())


def load_old_h5_through_conversion(path):
    import os
    import tempfile

    out = os.path.join(tempfile.mkdtemp(), "converted.keras")
    convert_legacy_h5(path, out)
    return keras.models.load_model(out, compile=False)


def load_old_h5_own_classes(path):
    def patched(base, argument, neutral):
        class Patched(base):
            @classmethod
            def from_config(cls, config):
                config = dict(config)
                if config.pop(argument, neutral) != neutral:
                    raise ValueError(f"{argument} changes the computation")
                return base.from_config(config)
        return Patched

    objects = {"LSTM": patched(keras.layers.LSTM, "time_major", False),
               "GRU": patched(keras.layers.GRU, "time_major", False),
               "DepthwiseConv2D": patched(keras.layers.DepthwiseConv2D, "groups", 1)}
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def plain_load(path):
    return keras.models.load_model(path, compile=False)


def compiled_load(path):
    return keras.models.load_model(path, custom_objects=legacy_custom_objects())


def drop_always(path):
    def dropping(base, argument):
        class Dropping(base):
            @classmethod
            def from_config(cls, config):
                config = dict(config)
                config.pop(argument, None)
                return base.from_config(config)
        return Dropping

    objects = {"LSTM": dropping(keras.layers.LSTM, "time_major"), "GRU": dropping(keras.layers.GRU, "time_major"),
               "DepthwiseConv2D": dropping(keras.layers.DepthwiseConv2D, "groups")}
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def edit_the_file(path):
    with h5py.File(path, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        for layer in config["config"]["layers"]:
            if layer["config"].get("time_major") is True or layer["config"].get("groups", 1) != 1:
                raise ValueError("this value changes the computation")
            layer["config"].pop("time_major", None)
            layer["config"].pop("groups", None)
        file.attrs["model_config"] = json.dumps(config)
    return keras.models.load_model(path, compile=False)


def architecture_only(path):
    with h5py.File(path, "r") as file:
        config = json.loads(file.attrs["model_config"])
    return keras.Model.from_config(config["config"], custom_objects=legacy_custom_objects())


def keras2_load(path):
    return tf_keras.models.load_model(path, compile=False)


def test_load_old_h5(capsys):
    ex13.check_load_old_h5(load_old_h5)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [load_old_h5_through_conversion, load_old_h5_own_classes])
def test_load_old_h5_alternatives(answer, capsys):
    ex13.check_load_old_h5(answer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer, pattern", [
    (drop_always, "must raise"),
    (edit_the_file, "file was changed"),
    (architecture_only, "weights too"),
])
def test_load_old_h5_mistakes(answer, pattern):
    with pytest.raises(CheckFailed, match=pattern) as error:
        ex13.check_load_old_h5(answer)
    assert len(hint_of(error)) <= 300


def test_load_old_h5_mistakes_that_raise():
    with pytest.raises(LearnerCodeError, match="time_major|Unrecognized"):
        ex13.check_load_old_h5(plain_load)
    with pytest.raises(LearnerCodeError, match="mse"):  # the training configuration (chapter 10)
        ex13.check_load_old_h5(compiled_load)
    with pytest.raises(LearnerCodeError, match="batch_shape|Unrecognized"):
        ex13.check_load_old_h5(keras2_load)


def test_load_old_h5_stub():
    with pytest.raises(ExerciseNotDone):
        ex13.check_load_old_h5(not_done)


# --------------------------------------------------------------------------- 13.3


def hub_layer(path):
    return keras.layers.TFSMLayer(path, call_endpoint="__call__")


class HubTFSM(keras.layers.TFSMLayer):
    def __init__(self, path, **kwargs):
        super().__init__(path, call_endpoint="__call__", **kwargs)

    def call(self, inputs):
        return super().call(inputs, training=False)


def hub_layer_subclass(path):
    return HubTFSM(path, name="hub_features")


def hub_layer_in_a_model(path):
    return keras.layers.TFSMLayer(path, call_endpoint="__call__", trainable=True, name="encoder")


class Untracked(keras.layers.Layer):
    def __init__(self, path):
        super().__init__()
        self.module = tf.saved_model.load(path)
        self.kept = list(self.module.trainable_variables)

    def call(self, x):
        return self.module(x, False)


class TrainingMode(keras.layers.TFSMLayer):
    def call(self, inputs):
        return self.call_endpoint_fn(inputs, True)


def untracked(path):
    return Untracked(path)


def in_training_mode(path):
    return TrainingMode(path, call_endpoint="__call__")


def through_signature(path):
    return keras.layers.TFSMLayer(path, call_endpoint="serving_default")


def lambda_layer(path):
    module = tf.saved_model.load(path)
    return keras.layers.Lambda(lambda x: module(x, False))


class Keras2Layer(tf_keras.layers.Layer):
    def __init__(self, path):
        super().__init__()
        self.module = tf.saved_model.load(path)

    def call(self, x):
        return self.module(x, False)


def keras2_layer(path):
    return Keras2Layer(path)


class CopiedVariables(keras.layers.Layer):
    def __init__(self, path):
        super().__init__()
        self.module = tf.saved_model.load(path)
        self.copies = [self.add_weight(shape=v.shape, initializer=keras.initializers.Constant(v.numpy()))
                       for v in self.module.trainable_variables]

    def call(self, x):
        return self.module(x, False)


def copied_variables(path):
    return CopiedVariables(path)


def test_hub_layer(capsys):
    ex13.check_hub_layer(hub_layer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [hub_layer_subclass, hub_layer_in_a_model])
def test_hub_layer_alternatives(answer, capsys):
    ex13.check_hub_layer(answer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer, pattern", [
    (untracked, "no trainable weights"),
    (in_training_mode, "training=False"),
    (lambda_layer, "no trainable weights"),
    (keras2_layer, "not a Keras 3 layer"),
    (copied_variables, "gradient"),
])
def test_hub_layer_mistakes(answer, pattern):
    with pytest.raises(CheckFailed, match=pattern) as error:
        ex13.check_hub_layer(answer)
    assert len(hint_of(error)) <= 300


def test_hub_layer_signature_mistake():
    with pytest.raises(LearnerCodeError, match="by keyword"):
        ex13.check_hub_layer(through_signature)


def test_hub_layer_stub():
    with pytest.raises(ExerciseNotDone):
        ex13.check_hub_layer(not_done)
