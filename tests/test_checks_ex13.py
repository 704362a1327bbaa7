"""The checks of notebook 13: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import json

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex13, forget_hints
from helpers.keras2 import convert_legacy_h5, legacy_custom_objects


@pytest.fixture(autouse=True)
def _first_steps():
    """Every test starts from the first step of each stepped hint."""
    forget_hints()
    yield
    forget_hints()


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
    for answer, pattern in [(positional, "by keyword"), (by_output_name, "KeyError|output_0"),
                            (through_tfsmlayer, "by keyword")]:
        with pytest.raises(LearnerCodeError, match=pattern):
            ex13.check_call_by_keyword(answer)
    # a dtype clash gets the check's own hint: the direction comes from the spec (float64 specs too)
    for answer in (without_cast, all_float32):
        with pytest.raises(CheckFailed, match=r"for an input it takes as (int32|int64|float64).*its own TensorSpec"):
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

    class Depthwise(keras.layers.DepthwiseConv2D):  # Keras 2 ignored groups here: any value
        @classmethod
        def from_config(cls, config):
            return keras.layers.DepthwiseConv2D.from_config({k: v for k, v in config.items() if k != "groups"})

    objects = {"LSTM": patched(keras.layers.LSTM, "time_major", False),
               "GRU": patched(keras.layers.GRU, "time_major", False), "DepthwiseConv2D": Depthwise}
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def refuses_groups_two(path):
    objects = dict(legacy_custom_objects())
    base = objects["DepthwiseConv2D"]

    class Depthwise(base):
        @classmethod
        def from_config(cls, config):
            if config.get("groups", 1) != 1:
                raise ValueError(f"groups={config['groups']} changes the computation")
            return base.from_config(config)

    objects["DepthwiseConv2D"] = Depthwise
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


def rewrite_a_copy(path):
    import os
    import shutil
    import tempfile

    copy = os.path.join(tempfile.mkdtemp(), "copy.h5")
    shutil.copyfile(path, copy)
    with h5py.File(copy, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "DepthwiseConv2D":
                layer["config"].pop("groups", None)
            if layer["config"].pop("time_major", False):
                raise ValueError("time_major=True changes the computation")
        file.attrs["model_config"] = json.dumps(config)
    return keras.models.load_model(copy, compile=False)


def groups_dropped_everywhere(path):  # Conv2D's groups=2 really groups
    objects = dict(legacy_custom_objects())
    for name in ("Conv1D", "Conv2D", "Conv3D"):
        base = getattr(keras.layers, name)
        objects[name] = type(name, (base,), {"from_config": classmethod(
            lambda cls, config, base=base: base.from_config({k: v for k, v in config.items() if k != "groups"}))})
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def keras2_fallback(path):
    try:
        return keras.models.load_model(path, compile=False, custom_objects=legacy_custom_objects())
    except Exception:
        return tf_keras.models.load_model(path, compile=False)


def swallow_errors(path):
    try:
        return keras.models.load_model(path, compile=False, custom_objects=legacy_custom_objects())
    except Exception:
        return None


def groups_as_depth_multiplier(path):
    objects = dict(legacy_custom_objects())

    class Depthwise(keras.layers.DepthwiseConv2D):
        @classmethod
        def from_config(cls, config):
            config = dict(config)
            config["depth_multiplier"] = config.get("depth_multiplier", 1) * config.pop("groups", 1)
            return keras.layers.DepthwiseConv2D.from_config(config)

    objects["DepthwiseConv2D"] = Depthwise
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def rewrite_a_copy_dropping_all(path):
    import os
    import shutil
    import tempfile

    copy = os.path.join(tempfile.mkdtemp(), "copy.h5")
    shutil.copyfile(path, copy)
    with h5py.File(copy, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        for layer in config["config"]["layers"]:
            layer["config"].pop("time_major", None)
            if layer["class_name"] == "DepthwiseConv2D":
                layer["config"].pop("groups", None)
        file.attrs["model_config"] = json.dumps(config)
    return keras.models.load_model(copy, compile=False)


def fresh_clone(path):
    return keras.models.clone_model(load_old_h5(path))


def compiled_after_loading(path):
    model = load_old_h5(path)
    model.compile(optimizer="adam", loss="mse")
    return model


def plain_load_uncompiled(path):
    return keras.models.load_model(path, compile=False)


def test_load_old_h5(capsys):
    ex13.check_load_old_h5(load_old_h5)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [load_old_h5_through_conversion, load_old_h5_own_classes, rewrite_a_copy])
def test_load_old_h5_alternatives(answer, capsys):
    ex13.check_load_old_h5(answer)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer, pattern", [
    (drop_always, "must raise"),
    (refuses_groups_two, "groups=2 was refused: Keras 2 accepted groups"),
    (edit_the_file, "file was changed"),
    (architecture_only, "weights too"),
    (plain_load, "rejects Keras 2.s time_major and groups.*section 4"),
    (plain_load_uncompiled, "rejects Keras 2.s time_major and groups.*section 4"),
    (groups_dropped_everywhere, "Conv2D really groups"),
    (keras2_load, "return a Keras 3 model"),
    (keras2_fallback, "return a Keras 3 model.*must raise"),
    (swallow_errors, "must raise"),
    (groups_as_depth_multiplier, "other weight shapes.*not depth_multiplier"),
    (rewrite_a_copy_dropping_all, "must raise"),
    (fresh_clone, "weights too"),
    (compiled_after_loading, "compile=False"),
])
def test_load_old_h5_mistakes(answer, pattern):
    with pytest.raises(CheckFailed, match=pattern) as error:
        ex13.check_load_old_h5(answer)
    assert len(hint_of(error)) <= 300


def test_load_old_h5_mistakes_that_raise():
    with pytest.raises(LearnerCodeError, match="compile=False"):  # the file's loss read as a metric
        ex13.check_load_old_h5(compiled_load)


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
    (keras2_layer, "a Keras 2 .tf_keras. layer"),
    (copied_variables, "gradient"),
])
def test_hub_layer_mistakes(answer, pattern):
    with pytest.raises(CheckFailed, match=pattern) as error:
        ex13.check_hub_layer(answer)
    assert len(hint_of(error)) <= 300


def test_hub_layer_signature_mistake():
    # a layer that calls a signature fails when the check calls it: the hint names the route, no raw error
    with pytest.raises(CheckFailed, match="through its __call__, not through a signature") as error:
        ex13.check_hub_layer(through_signature)
    assert len(str(error.value)) <= 300


def test_hub_layer_stub():
    with pytest.raises(ExerciseNotDone):
        ex13.check_hub_layer(not_done)


# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the check was
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from tests.attack_harness import hint_problems  # noqa: E402
from tests.attack_support import cases, passes  # noqa: E402
from tests.attack_support import rejects as _rejects  # noqa: E402


def rejects(check, answer, *, may_raise: bool = False) -> str:
    """``attack_support.rejects``, with the hint held to the course's rules: at most 300 characters with
    its "Exercise NN.N: " prefix, no colour codes or temporary paths."""
    message = _rejects(check, answer, may_raise=may_raise)
    assert len(message) <= 300, f"{len(message)} characters with the prefix: {message}"
    assert not hint_problems(message), hint_problems(message)
    return message


# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {}


@pytest.fixture
def in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _signature(path):
    return tf.saved_model.load(path).signatures["serving_default"]


# ----- 13.1 wrong


def kw_no_cast(path, inputs):
    sig = _signature(path)
    out = sig(**{name: tf.constant(value) for name, value in inputs.items()})
    return next(iter(out.values())).numpy()


def kw_all_float32(path, inputs):
    sig = _signature(path)
    out = sig(**{name: tf.constant(value, tf.float32) for name, value in inputs.items()})
    return next(iter(out.values())).numpy()


def kw_by_order_not_name(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    names = sorted(specs)
    out = sig(**{n: tf.cast(v, specs[n].dtype) for n, v in zip(names, inputs.values())})
    return next(iter(out.values())).numpy()


def kw_output_named_out(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    return sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()})["out"].numpy()


def kw_returns_tensor(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    return next(iter(sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()}).values()))


def kw_returns_dict(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    out = sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()})
    return {k: v.numpy() for k, v in out.items()}


def kw_squeezed(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    out = sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()})
    return np.squeeze(next(iter(out.values())).numpy())


def kw_first_row(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    out = sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()})
    return next(iter(out.values())).numpy()[0]


def kw_first_dtype_for_all(path, inputs):
    sig = _signature(path)
    specs = list(sig.structured_input_signature[1].values())
    out = sig(**{n: tf.cast(v, specs[0].dtype) for n, v in inputs.items()})
    return next(iter(out.values())).numpy()


def kw_positional_list(path, inputs):
    loaded = tf.saved_model.load(path)
    return np.asarray(loaded([tf.constant(v) for v in inputs.values()]))


def kw_float64_result(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    out = sig(**{n: tf.cast(v, specs[n].dtype) for n, v in inputs.items()})
    return next(iter(out.values())).numpy().astype(np.float64) + 0.0


def kw_cast_to_int_where_float(path, inputs):
    sig = _signature(path)
    specs = sig.structured_input_signature[1]
    out = sig(**{n: tf.cast(tf.cast(v, tf.int32), specs[n].dtype) for n, v in inputs.items()})
    return next(iter(out.values())).numpy()


# ----- 13.1 right


def kw_right_numpy_astype(path, inputs):
    sig = tf.saved_model.load(os.fspath(path)).signatures["serving_default"]
    _, specs = sig.structured_input_signature
    feeds = {n: np.asarray(inputs[n]).astype(specs[n].dtype.as_numpy_dtype) for n in specs}
    (result,) = sig(**feeds).values()
    return np.asarray(result)


def kw_right_convert_nest(path, inputs):
    loaded = tf.saved_model.load(path)
    sig = loaded.signatures["serving_default"]
    specs = sig.structured_input_signature[1]
    feeds = {}
    for name in inputs:
        feeds[name] = tf.convert_to_tensor(np.asarray(inputs[name], specs[name].dtype.as_numpy_dtype))
    return tf.nest.flatten(sig(**feeds))[0].numpy()


def kw_right_sorted_outputs(path, inputs):
    sig = _signature(path)
    args, kwargs = sig.structured_input_signature
    out = sig(**{k: tf.cast(tf.constant(inputs[k]), spec.dtype) for k, spec in kwargs.items()})
    return out[sorted(out)[0]].numpy()


@pytest.mark.parametrize("answer", cases([
    kw_no_cast, kw_all_float32, kw_by_order_not_name, kw_output_named_out, kw_returns_tensor,
    kw_returns_dict, kw_squeezed, kw_first_row, kw_first_dtype_for_all, kw_positional_list,
    kw_cast_to_int_where_float,
], HOLES))
def test_13_1_prompt_only_wrong_answers_fail(answer, in_tmp_dir):
    rejects(ex13.check_call_by_keyword, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([
    kw_right_numpy_astype, kw_right_convert_nest, kw_right_sorted_outputs], HOLES))
def test_13_1_prompt_only_right_answers_pass(answer, in_tmp_dir):
    passes(ex13.check_call_by_keyword, answer)


# ----- 13.2 wrong


class _LSTMDropsAll(keras.layers.LSTM):
    def __init__(self, *args, time_major=None, **kwargs):
        super().__init__(*args, **kwargs)


class _GRUDropsAll(keras.layers.GRU):
    def __init__(self, *args, time_major=None, **kwargs):
        super().__init__(*args, **kwargs)


class _DepthwiseDropsAll(keras.layers.DepthwiseConv2D):
    def __init__(self, *args, groups=None, **kwargs):
        super().__init__(*args, **kwargs)


class _LSTMChecked(keras.layers.LSTM):
    def __init__(self, *args, time_major=False, **kwargs):
        if time_major:
            raise ValueError(f"time_major=True in {kwargs.get('name')}: not supported")
        super().__init__(*args, **kwargs)


class _GRUChecked(keras.layers.GRU):
    def __init__(self, *args, time_major=False, **kwargs):
        if time_major:
            raise ValueError(f"time_major=True in {kwargs.get('name')}: not supported")
        super().__init__(*args, **kwargs)


class _DepthwiseChecked(keras.layers.DepthwiseConv2D):
    def __init__(self, *args, groups=1, **kwargs):
        if groups != 1:
            raise ValueError(f"groups={groups} in {kwargs.get('name')}: not supported")
        super().__init__(*args, **kwargs)


class _LSTMRefusesKey(keras.layers.LSTM):
    def __init__(self, *args, **kwargs):
        if "time_major" in kwargs:
            raise ValueError("time_major is not supported")
        super().__init__(*args, **kwargs)


DROPS_ALL = {"LSTM": _LSTMDropsAll, "GRU": _GRUDropsAll, "DepthwiseConv2D": _DepthwiseDropsAll}
# Right: Keras 2 ignored groups in DepthwiseConv2D, so any value is dropped.
CHECKED = {"LSTM": _LSTMChecked, "GRU": _GRUChecked, "DepthwiseConv2D": _DepthwiseDropsAll}


def old_plain_load(path):
    return keras.models.load_model(path, compile=False)


def old_compiled(path):
    return keras.models.load_model(path, custom_objects=CHECKED)


def old_drops_everything(path):
    return keras.models.load_model(path, compile=False, custom_objects=DROPS_ALL)


def old_only_lstm(path):
    return keras.models.load_model(path, compile=False, custom_objects={"LSTM": _LSTMChecked})


def old_no_gru(path):
    objects = {"LSTM": _LSTMChecked, "DepthwiseConv2D": _DepthwiseChecked}
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def old_refuses_the_key(path):
    objects = dict(CHECKED, LSTM=_LSTMRefusesKey)
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def old_edits_in_place(path):
    with h5py.File(path, "r+") as file:
        config = file.attrs["model_config"]
        if isinstance(config, bytes):
            config = config.decode()
        config = re.sub(r',\s*"time_major": (false|true)', "", config)
        config = re.sub(r',\s*"groups": \d+', "", config)
        file.attrs["model_config"] = config
    return keras.models.load_model(path, compile=False)


def old_config_only(path):
    with h5py.File(path, "r") as file:
        config = file.attrs["model_config"]
    config = config.decode() if isinstance(config, bytes) else config
    return keras.models.model_from_json(config, custom_objects=CHECKED)


def old_returns_none_on_refusal(path):
    try:
        return keras.models.load_model(path, compile=False, custom_objects=CHECKED)
    except ValueError:
        return None


def old_tf_keras(path):
    return tf_keras.models.load_model(path, compile=False)


def old_refuses_groups_two(path):  # the old prompt's reading: groups=2 is not what Keras 2 computed
    objects = dict(CHECKED, DepthwiseConv2D=_DepthwiseChecked)
    return keras.models.load_model(path, compile=False, custom_objects=objects)


def old_keeps_groups_for_depthwise(path):  # hands groups to a Keras 3 class that rejects it
    objects = dict(CHECKED, DepthwiseConv2D=keras.layers.DepthwiseConv2D)
    return keras.models.load_model(path, compile=False, custom_objects=objects)


# ----- 13.2 right


def old_right_helpers(path):
    return keras.models.load_model(path, compile=False, custom_objects=legacy_custom_objects())


def old_right_own_classes(path):
    return keras.models.load_model(os.fspath(path), compile=False, custom_objects=CHECKED)


def _edit_a_copy(path, groups_of):
    folder = tempfile.mkdtemp()
    try:
        copy = os.path.join(folder, "copy.h5")
        shutil.copyfile(path, copy)
        with h5py.File(copy, "r+") as file:
            config = json.loads(file.attrs["model_config"])
            for layer in config["config"]["layers"]:
                if layer["config"].get("time_major") is False:
                    del layer["config"]["time_major"]
                if layer["class_name"] in groups_of:
                    layer["config"].pop("groups", None)
            file.attrs["model_config"] = json.dumps(config)
        return keras.models.load_model(copy, compile=False)  # leftover values: Keras 3 refuses
    finally:
        shutil.rmtree(folder)


def old_right_edit_a_copy(path):
    return _edit_a_copy(path, ("DepthwiseConv2D",))


def old_edit_a_copy_all_groups(path):  # Conv2D's groups=2 groups: dropping it changes the weights' shapes
    return _edit_a_copy(path, ("Conv2D", "DepthwiseConv2D"))


@pytest.mark.parametrize("answer", cases([
    old_plain_load, old_compiled, old_drops_everything, old_only_lstm, old_no_gru,
    old_refuses_the_key, old_edits_in_place, old_config_only, old_returns_none_on_refusal,
    old_tf_keras, old_refuses_groups_two, old_keeps_groups_for_depthwise, old_edit_a_copy_all_groups,
], HOLES))
def test_13_2_prompt_only_wrong_answers_fail(answer, in_tmp_dir):
    rejects(ex13.check_load_old_h5, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([
    old_right_helpers, old_right_own_classes, old_right_edit_a_copy], HOLES))
def test_13_2_prompt_only_right_answers_pass(answer, in_tmp_dir):
    passes(ex13.check_load_old_h5, answer)


# ----- 13.3 wrong


class _HoldsModule(keras.layers.Layer):
    def __init__(self, path, training=False, **kwargs):
        super().__init__(**kwargs)
        self.module = tf.saved_model.load(path)
        self.module_variables = list(self.module.trainable_variables)
        self.training_flag = training

    def call(self, x):
        return self.module(x, self.training_flag)


class _CopiesWeights(keras.layers.Layer):
    def __init__(self, path, **kwargs):
        super().__init__(**kwargs)
        self.module = tf.saved_model.load(path)
        self.copies = [self.add_weight(shape=v.shape, initializer=keras.initializers.Constant(v.numpy()),
                                       name=f"w{i}") for i, v in enumerate(self.module.trainable_variables)]

    def call(self, x):
        return self.module(x, False)


class _AllVariablesTrainable(keras.layers.Layer):
    def __init__(self, path, first_only=False, **kwargs):
        super().__init__(**kwargs)
        self.module = tf.saved_model.load(path)
        chosen = list(self.module.variables)
        if first_only:
            chosen = list(self.module.trainable_variables)[:1]
        self.wrapped = [keras.Variable(initializer=v, trainable=True, name=f"v{i}")
                        for i, v in enumerate(chosen)]

    def call(self, x):
        return self.module(x, False)


def hub_holds_module(path):
    return _HoldsModule(path)


def hub_training_true(path):
    layer = _WrapsTrainable(path)
    layer.training_flag = True
    return layer


def hub_copies_weights(path):
    return _CopiesWeights(path)


def hub_all_variables(path):
    return _AllVariablesTrainable(path)


def hub_first_variable_only(path):
    return _AllVariablesTrainable(path, first_only=True)


def hub_serving_default(path):
    return keras.layers.TFSMLayer(path, call_endpoint="serving_default")


def hub_lambda(path):
    module = tf.saved_model.load(path)
    return keras.layers.Lambda(lambda x: module(x, False))


def hub_tf_keras_layer(path):
    module = tf.saved_model.load(path)

    class Hub(tf_keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.module = module

        def call(self, x):
            return self.module(x, False)
    return Hub()


def hub_tfsm_default_endpoint(path):
    return keras.layers.TFSMLayer(path)


# ----- 13.3 right


class _WrapsTrainable(keras.layers.Layer):
    def __init__(self, path, **kwargs):
        super().__init__(**kwargs)
        self.module = tf.saved_model.load(os.fspath(path))
        self.training_flag = False
        self.hub_weights = [keras.Variable(initializer=v, trainable=True, name=f"hub_{i}")
                            for i, v in enumerate(self.module.trainable_variables)]

    def call(self, x):
        return self.module(x, self.training_flag)


def hub_right_tfsm_call(path):
    return keras.layers.TFSMLayer(path, call_endpoint="__call__")


def hub_right_wrapped_variables(path):
    return _WrapsTrainable(path)


class _TFSMSubclass(keras.layers.TFSMLayer):
    def __init__(self, path, **kwargs):
        super().__init__(os.fspath(path), call_endpoint="__call__", **kwargs)


def hub_right_tfsm_subclass(path):
    return _TFSMSubclass(path, name="hub")


@pytest.mark.parametrize("answer", cases([
    hub_holds_module, hub_training_true, hub_copies_weights, hub_all_variables,
    hub_first_variable_only, hub_serving_default, hub_lambda, hub_tf_keras_layer,
    hub_tfsm_default_endpoint,
], HOLES))
def test_13_3_prompt_only_wrong_answers_fail(answer, in_tmp_dir):
    rejects(ex13.check_hub_layer, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([
    hub_right_tfsm_call, hub_right_wrapped_variables, hub_right_tfsm_subclass], HOLES))
def test_13_3_prompt_only_right_answers_pass(answer, in_tmp_dir):
    passes(ex13.check_hub_layer, answer)


# =========================================================================== round three (issue 33, 34)
# Written from the prompts alone. 13.1: float64 input and a float64/int64 spec (a fixed float32/int32
# cast), the caller's dict changed in dtype only, an input left out; 13.2: time_major=True refused by
# one recurrent class only; 13.3: the loaded module itself returned.


def _specs(path):
    sig = _signature(path)
    return sig, sig.structured_input_signature[1]


def kw3_tf_constant_no_dtype(path, inputs):
    """tf.constant keeps NumPy's dtype: float64 arrays meet a float32 spec."""
    sig, _ = _specs(path)
    (out,) = sig(**{k: tf.constant(v) for k, v in inputs.items()}).values()
    return out.numpy()


def kw3_fixed_float32_int32(path, inputs):
    sig, _ = _specs(path)
    cast = {k: tf.constant(v, tf.int32 if np.issubdtype(v.dtype, np.integer) else tf.float32)
            for k, v in inputs.items()}
    (out,) = sig(**cast).values()
    return out.numpy()


def kw3_cast_in_place(path, inputs):
    """Casts into the caller's dict: the values stay equal, their dtypes change."""
    sig, specs = _specs(path)
    for k in inputs:
        inputs[k] = inputs[k].astype(specs[k].dtype.as_numpy_dtype)
    (out,) = sig(**inputs).values()
    return out.numpy()


def kw3_pops_the_dict(path, inputs):
    sig, specs = _specs(path)
    feeds = {}
    for k in list(inputs):
        feeds[k] = tf.constant(inputs.pop(k), specs[k].dtype)
    (out,) = sig(**feeds).values()
    return out.numpy()


def kw3_skips_integer_inputs(path, inputs):
    """Passes only the float inputs, as if counts were optional."""
    sig, specs = _specs(path)
    (out,) = sig(**{k: tf.constant(v, specs[k].dtype) for k, v in inputs.items()
                    if specs[k].dtype.is_floating}).values()
    return out.numpy()


def kw3_floats_to_float32_ints_to_spec(path, inputs):
    sig, specs = _specs(path)
    cast = {k: tf.constant(v, tf.float32 if np.issubdtype(v.dtype, np.floating) else specs[k].dtype)
            for k, v in inputs.items()}
    (out,) = sig(**cast).values()
    return out.numpy()


def kw3_ints_to_int32_floats_to_spec(path, inputs):
    sig, specs = _specs(path)
    cast = {k: tf.constant(v, tf.int32 if np.issubdtype(v.dtype, np.integer) else specs[k].dtype)
            for k, v in inputs.items()}
    (out,) = sig(**cast).values()
    return out.numpy()


def kw3_keras_floatx(path, inputs):
    """keras.backend.floatx() for every float, the spec only for integers."""
    sig, specs = _specs(path)
    cast = {k: tf.constant(v, keras.backend.floatx() if specs[k].dtype.is_floating else specs[k].dtype)
            for k, v in inputs.items()}
    (out,) = sig(**cast).values()
    return out.numpy()


def kw3_cast_in_place_astype_copy_false(path, inputs):
    """astype(copy=False) where the dtype already fits, and writes the rest back into the dict."""
    sig, specs = _specs(path)
    inputs.update({k: v.astype(specs[k].dtype.as_numpy_dtype, copy=False) for k, v in inputs.items()})
    (out,) = sig(**{k: tf.constant(v) for k, v in inputs.items()}).values()
    return out.numpy()


KW3_WRONG = [kw3_tf_constant_no_dtype, kw3_fixed_float32_int32, kw3_cast_in_place, kw3_pops_the_dict,
             kw3_skips_integer_inputs, kw3_floats_to_float32_ints_to_spec, kw3_ints_to_int32_floats_to_spec,
             kw3_keras_floatx, kw3_cast_in_place_astype_copy_false]


@pytest.mark.parametrize("answer", KW3_WRONG, ids=lambda f: f.__name__)
def test_13_1_round3_wrong_answers_fail(answer, in_tmp_dir):
    hint = rejects(ex13.check_call_by_keyword, answer, may_raise=True)
    assert "integer value met a float" not in hint, hint  # a missing input is not a dtype clash


def kw3_right_tf_cast(path, inputs):
    sig, specs = _specs(path)
    (out,) = sig(**{k: tf.cast(tf.constant(v), specs[k].dtype) for k, v in inputs.items()}).values()
    return out.numpy()


def kw3_right_as_numpy_dtype(path, inputs):
    sig, specs = _specs(path)
    result = sig(**{k: np.asarray(v, dtype=specs[k].dtype.as_numpy_dtype) for k, v in inputs.items()})
    return np.asarray(list(result.values())[0])


def kw3_right_convert_to_tensor(path, inputs):
    loaded = tf.saved_model.load(path)
    sig = loaded.signatures["serving_default"]
    specs = sig.structured_input_signature[1]
    feeds = {spec.name if spec.name in inputs else k: tf.convert_to_tensor(inputs[k].astype(spec.dtype.name))
             for k, spec in sorted(specs.items())}
    outputs = sig(**feeds)
    assert len(outputs) == 1
    return outputs[next(iter(outputs))].numpy()


@pytest.mark.parametrize("answer", [kw3_right_tf_cast, kw3_right_as_numpy_dtype, kw3_right_convert_to_tensor],
                         ids=lambda f: f.__name__)
def test_13_1_round3_right_answers_pass(answer, in_tmp_dir):
    passes(ex13.check_call_by_keyword, answer)


def _refusing(base, refuse):
    """A class of ``base`` that drops Keras 2's time_major and raises where ``refuse(config)`` says."""

    class Refusing(base):
        @classmethod
        def from_config(cls, config):
            config = dict(config)
            if refuse(config):
                raise ValueError("time_major=True changes the computation")
            config.pop("time_major", None)
            return base.from_config(config)

    Refusing.__name__ = base.__name__
    return Refusing


def _dropping_depthwise():
    class Depthwise(keras.layers.DepthwiseConv2D):
        @classmethod
        def from_config(cls, config):
            return keras.layers.DepthwiseConv2D.from_config({k: v for k, v in config.items() if k != "groups"})
    return Depthwise


def _load_with(lstm_refuses, gru_refuses):
    def answer(path):
        objects = {"LSTM": _refusing(keras.layers.LSTM, lstm_refuses),
                   "GRU": _refusing(keras.layers.GRU, gru_refuses), "DepthwiseConv2D": _dropping_depthwise()}
        return keras.models.load_model(path, compile=False, custom_objects=objects)
    return answer


def _true(config):
    return bool(config.get("time_major", False))


def _never(config):
    return False


def _named(name, answer):
    answer.__name__ = name
    return answer


OLD3_WRONG = [
    _named("old3_refuses_in_lstm_only", _load_with(_true, _never)),
    _named("old3_refuses_in_gru_only", _load_with(_never, _true)),
    _named("old3_refuses_only_named_encoder", _load_with(lambda c: _true(c) and c.get("name") == "encoder",
                                                         lambda c: _true(c) and c.get("name") == "encoder")),
    _named("old3_refuses_return_sequences_only", _load_with(lambda c: _true(c) and c.get("return_sequences"),
                                                            lambda c: _true(c) and c.get("return_sequences"))),
    _named("old3_refuses_first_layer_only", lambda path: _first_layer_only(path)),
    _named("old3_refuses_when_lstm_and_gru", lambda path: _all_layers_only(path)),
    _named("old3_lstm_class_only_in_custom_objects",
           lambda path: keras.models.load_model(path, compile=False, custom_objects={
               "LSTM": _refusing(keras.layers.LSTM, _true), "GRU": _refusing(keras.layers.GRU, _never),
               "DepthwiseConv2D": _dropping_depthwise()})),
    _named("old3_refuses_nothing", _load_with(_never, _never)),
]


def _recurrent_configs(path):
    import h5py
    import json

    with h5py.File(path, "r") as file:
        layers = json.loads(file.attrs["model_config"])["config"]["layers"]
    return [layer["config"] for layer in layers if layer["class_name"] in ("LSTM", "GRU")]


def _first_layer_only(path):
    """Reads the file's configuration and refuses when the first recurrent layer says time_major=True."""
    configs = _recurrent_configs(path)
    if configs and configs[0].get("time_major"):
        raise ValueError("time_major=True")
    return _load_with(_never, _never)(path)


def _all_layers_only(path):
    """Refuses when every recurrent layer says time_major=True."""
    configs = _recurrent_configs(path)
    if configs and all(c.get("time_major") for c in configs):
        raise ValueError("time_major=True")
    return _load_with(_never, _never)(path)


@pytest.mark.parametrize("answer", OLD3_WRONG, ids=lambda f: f.__name__)
def test_13_2_round3_wrong_answers_fail(answer, in_tmp_dir):
    rejects(ex13.check_load_old_h5, answer, may_raise=True)


def _any_layer(path):
    """Refuses when any recurrent layer of the file says time_major=True, then loads with the course's patch."""
    if any(c.get("time_major") for c in _recurrent_configs(path)):
        raise ValueError("time_major=True changes the computation")
    return keras.models.load_model(path, compile=False, custom_objects=legacy_custom_objects())


OLD3_RIGHT = [
    _named("old3_right_both_classes", _load_with(_true, _true)),
    _named("old3_right_reads_the_config_first", _any_layer),
    _named("old3_right_not_implemented", _load_with(lambda c: c.get("time_major") is True,
                                                    lambda c: c.get("time_major") is True)),
]


@pytest.mark.parametrize("answer", OLD3_RIGHT, ids=lambda f: f.__name__)
def test_13_2_round3_right_answers_pass(answer, in_tmp_dir):
    passes(ex13.check_load_old_h5, answer)


def test_13_3_a_plain_loaded_module_is_not_called_a_tf_keras_layer(in_tmp_dir):
    hint = rejects(ex13.check_hub_layer, tf.saved_model.load)
    assert "tf_keras" not in hint and "Keras 2" not in hint and "loaded module itself" in hint, hint


def test_every_written_hint_fits_300_characters_with_its_prefix():
    """Each hint text written in helpers/checks/ex13.py (a require's, each step of a Hint), with its
    "Exercise NN.N: " prefix, an f-string's fields counted as one character; the answers above measure
    the texts as shown."""
    from tests.test_checks_framework import CHECKS, hint_texts

    texts = hint_texts(CHECKS / "ex13.py")
    assert texts
    long = [(line, text) for line, number, text in texts if len(f"Exercise {number}: {text}") > 300]
    assert not long, long


# --------------------------------------------------------------------------- review of checks-b (13.1, 13.2)

from tests.attack_harness import accepted as _accepted  # noqa: E402
from tests.attack_harness import rejected as _strict_rejected  # noqa: E402
from tests.attack_harness import stepped  # noqa: E402


def _rv_signature(path):
    return tf.saved_model.load(path).signatures["serving_default"]


def _rv_right(path, inputs):
    signature = _rv_signature(path)
    specs = signature.structured_input_signature[1]
    out = signature(**{k: tf.convert_to_tensor(np.asarray(v).astype(specs[k].dtype.as_numpy_dtype))
                       for k, v in inputs.items()})
    return next(iter(out.values())).numpy()


def kwrv_output_cast_to_float32(path, inputs):
    """Right, then the output cast to float32: a float64 signature's result loses its dtype and digits."""
    return _rv_right(path, inputs).astype(np.float32)


def kwrv_floats_through_float32(path, inputs):
    """Every float input sent through float32 first, then cast to its spec's dtype."""
    signature = _rv_signature(path)
    specs = signature.structured_input_signature[1]
    fed = {k: tf.cast(np.asarray(v, np.float32) if np.asarray(v).dtype.kind == "f" else v, specs[k].dtype)
           for k, v in inputs.items()}
    return next(iter(signature(**fed).values())).numpy()


_RV_FIRST: dict = {}


def kwrv_first_signature_kept(path, inputs):
    """The first call's signature kept at module level and used for every later path."""
    if "signature" not in _RV_FIRST:
        _RV_FIRST["signature"] = _rv_signature(path)
    signature = _RV_FIRST["signature"]
    specs = signature.structured_input_signature[1]
    out = signature(**{k: tf.constant(v, dtype=specs[k].dtype) for k, v in inputs.items()})
    return next(iter(out.values())).numpy()


def test_review_call_by_keyword_output_cast_to_float32_is_rejected(in_tmp_dir):
    hint = _strict_rejected(ex13.check_call_by_keyword, kwrv_output_cast_to_float32)
    assert "returns float64" in hint and "float32" in hint


def test_review_call_by_keyword_inputs_through_float32_are_rejected(in_tmp_dir):
    hint = _strict_rejected(ex13.check_call_by_keyword, kwrv_floats_through_float32)
    assert "returns float64" in hint and "last digits off" in hint


def test_review_call_by_keyword_kept_signature_is_not_told_to_squeeze(in_tmp_dir):
    _RV_FIRST.clear()
    hint = _strict_rejected(ex13.check_call_by_keyword, kwrv_first_signature_kept)
    _RV_FIRST.clear()
    assert "squeeze" not in hint and "on every call" in hint


def kwrv_right_cast_in_a_loop(path, inputs):
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures["serving_default"]
    fed = {name: tf.constant(np.asarray(inputs[name], dtype=spec.dtype.as_numpy_dtype))
           for name, spec in signature.structured_input_signature[1].items()}
    (out,) = signature(**fed).values()
    return out.numpy()


@pytest.mark.parametrize("answer", [_rv_right, kwrv_right_cast_in_a_loop, call_by_keyword],
                         ids=lambda f: f.__name__)
def test_review_call_by_keyword_right_answers_accepted(answer, in_tmp_dir):
    _accepted(ex13.check_call_by_keyword, answer)


def h5rv_plain_load(path):
    return keras.models.load_model(path, compile=False)


def test_review_load_old_h5_plain_load_is_stepped(in_tmp_dir):
    first, second = stepped(ex13.check_load_old_h5, h5rv_plain_load)
    assert "section 4" in first and "legacy_custom_objects" not in first
    assert "helpers.keras2.legacy_custom_objects()" in second


def test_review_load_old_h5_right_answer_accepted(in_tmp_dir):
    _accepted(ex13.check_load_old_h5, load_old_h5)
