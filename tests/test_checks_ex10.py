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


# =========================================================================== Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and right ones written differently from the reference,
# from the exercise prompts alone, before reading helpers/checks/ex10.py. Every run is bounded
# by a watchdog and must take under 20 s; every hint must be short and free of temporary paths.

import os  # noqa: E402
import warnings  # noqa: E402

from tests.attack_harness import accepted, marked  # noqa: E402
from tests.attack_harness import rejected as _rejected  # noqa: E402


def rejected(check, answer) -> str:
    """``attack_harness.rejected``, and the hint at most 300 characters with its "Exercise NN.N: " prefix."""
    message = _rejected(check, answer)
    assert len(message) <= 300, f"{len(message)} characters with the prefix: {message}"
    return message


FALSE_PASS = "check accepts this wrong answer: "
GENERIC_HINT = "hint: over 300 characters, generic 'read the message, fix that line'"
# What today's check gets wrong (strict xfails: remove an entry when its check is fixed).
DTYPE_HINT = GENERIC_HINT + ", no int32/int64 cause"
KNOWN_10: dict[str, str] = {}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- 10.1 attack


def _smp_parts(path):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (name, spec), = signature.structured_input_signature[1].items()
    return signature, name, spec


def _smp_with(convert, pick=lambda out: next(iter(out.values())).numpy()):
    def make(path):
        signature, name, spec = _smp_parts(path)
        return lambda tokens: pick(signature(**{name: convert(tokens, spec)}))

    return make


def smp_int32_always(path):
    return _smp_with(lambda t, spec: tf.constant(t, dtype=tf.int32))(path)


def smp_int64_always(path):
    return _smp_with(lambda t, spec: tf.constant(t, dtype=tf.int64))(path)


def smp_tf_constant_as_is(path):
    return _smp_with(lambda t, spec: tf.constant(t))(path)


def smp_float_tokens(path):
    return _smp_with(lambda t, spec: tf.constant(t, dtype=tf.float32))(path)


def smp_output_0(path):
    return _smp_with(lambda t, spec: tf.cast(t, spec.dtype), pick=lambda out: out["output_0"].numpy())(path)


def smp_returns_tensor(path):
    return _smp_with(lambda t, spec: tf.cast(t, spec.dtype), pick=lambda out: next(iter(out.values())))(path)


def smp_returns_dict(path):
    return _smp_with(lambda t, spec: tf.cast(t, spec.dtype), pick=lambda out: {k: v.numpy() for k, v in out.items()})(path)


def smp_squeezed(path):
    return _smp_with(lambda t, spec: tf.cast(t, spec.dtype),
                     pick=lambda out: np.squeeze(next(iter(out.values())).numpy()))(path)


def smp_list(path):
    return _smp_with(lambda t, spec: tf.cast(t, spec.dtype),
                     pick=lambda out: next(iter(out.values())).numpy().tolist())(path)


_SMP_CACHE = {}


def smp_cached_first_model(path):
    """Loads the SavedModel once, on the first call, and reuses it whatever the path."""
    if "signature" not in _SMP_CACHE:
        _SMP_CACHE["signature"] = _smp_parts(path)
    signature, name, spec = _SMP_CACHE["signature"]
    return lambda tokens: next(iter(signature(**{name: tf.cast(tokens, spec.dtype)}).values())).numpy()


def smp_tfsmlayer_serve(path):
    layer = keras.layers.TFSMLayer(path)  # the default endpoint, "serve"
    _, _, spec = _smp_parts(path)

    def predict(tokens):
        out = layer(tf.cast(tokens, spec.dtype))
        return np.asarray(next(iter(out.values())) if isinstance(out, dict) else out)

    return predict


def smp_first_example_only(path):
    return _smp_with(lambda t, spec: tf.cast(t[:1], spec.dtype))(path)


def smp_right_numpy_astype(path):
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures["serving_default"]
    specs = signature.structured_input_signature[1]
    key = list(specs)[0]
    dtype = specs[key].dtype.as_numpy_dtype

    def predict(tokens):
        (output,) = signature(**{key: np.asarray(tokens).astype(dtype)}).values()
        return output.numpy()

    return predict


def smp_right_numpy_passed_as_is(path):
    signature = tf.saved_model.load(os.fspath(path)).signatures["serving_default"]
    key = next(iter(signature.structured_input_signature[1]))
    spec = signature.structured_input_signature[1][key]
    return lambda tokens: np.array(list(signature(**{key: tf.convert_to_tensor(tokens, spec.dtype)}).values())[0])


def smp_right_loads_every_call(path):
    def predict(tokens):
        signature = tf.saved_model.load(path).signatures["serving_default"]
        (name, spec), = signature.structured_input_signature[1].items()
        (value,) = signature(**{name: tf.cast(tf.convert_to_tensor(tokens), spec.dtype)}).values()
        return value.numpy()

    return predict


@pytest.mark.parametrize("answer", marked([
    smp_int32_always, smp_int64_always, smp_tf_constant_as_is, smp_float_tokens, smp_output_0, smp_returns_tensor,
    smp_returns_dict, smp_squeezed, smp_list, smp_cached_first_model, smp_tfsmlayer_serve, smp_first_example_only,
], KNOWN_10))
def test_attack_saved_model_predictor_rejects(answer, in_tmp):
    _SMP_CACHE.clear()
    rejected(ex10.check_saved_model_predictor, answer)


@pytest.mark.parametrize("answer", marked([
    smp_right_numpy_astype, smp_right_numpy_passed_as_is, smp_right_loads_every_call,
], KNOWN_10))
def test_attack_saved_model_predictor_accepts(answer, in_tmp):
    accepted(ex10.check_saved_model_predictor, answer)


# --------------------------------------------------------------------------- 10.2 attack

_SKIPPED = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter/")


def _weight_keys(reader):
    return {key for key in reader.get_variable_to_shape_map()
            if not key.startswith(("optimizer/",) + _SKIPPED) and "/.OPTIMIZER_SLOT/" not in key}


def k2w_checkpoint_restore(ckpt_path, model):
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()


def k2w_checkpoint_root_restore(ckpt_path, model):
    """Restores with the model as the checkpoint's root (Keras 2 saved the model as root)."""
    tf.train.Checkpoint(root=model).read(ckpt_path).expect_partial()


def k2w_trainable_only(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    for key, variable in keras2_key_map(ckpt_path, model).items():
        if variable.trainable:
            variable.assign(reader.get_tensor(key))


def k2w_lenient(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    for key, variable in keras2_key_map(ckpt_path, model).items():
        if reader.has_tensor(key) and tuple(reader.get_variable_to_shape_map()[key]) == tuple(variable.shape):
            variable.assign(reader.get_tensor(key))


def k2w_only_model_side_strict(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    key_map = keras2_key_map(ckpt_path, model)
    if len(key_map) != len(model.weights):
        raise ValueError("some of the model's variables are not in the file")
    for key, variable in key_map.items():
        variable.assign(reader.get_tensor(key))


def k2w_optimizer_counts_as_extra(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    key_map = keras2_key_map(ckpt_path, model)
    unused = {key for key in reader.get_variable_to_shape_map() if not key.startswith(_SKIPPED)} - set(key_map)
    if unused or len(key_map) != len(model.weights):
        raise ValueError(f"no partner for {sorted(unused)}")
    for key, variable in key_map.items():
        variable.assign(reader.get_tensor(key))


def k2w_pairs_by_shape(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    shapes = reader.get_variable_to_shape_map()
    free = sorted(_weight_keys(reader))
    for variable in model.weights:
        match = next((key for key in free if tuple(shapes[key]) == tuple(variable.shape)), None)
        if match is None:
            raise ValueError(f"no partner for {variable.path}")
        free.remove(match)
        variable.assign(reader.get_tensor(match))
    if free:
        raise ValueError(f"no partner for {free}")


def k2w_converts_in_place(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model, drop_optimizer=True)
    tf.train.Checkpoint(model=model).write(ckpt_path)  # "migrate the file once"


def k2w_warns_instead(ckpt_path, model):
    report = restore_keras2_checkpoint(ckpt_path, model, strict=False, drop_optimizer=True)
    if "PARTIAL" in str(report):
        warnings.warn(str(report))


def k2w_strict_false(ckpt_path, model):
    restore_keras2_checkpoint(ckpt_path, model, strict=False, drop_optimizer=True)


def _k2_keys_every_layer(model):
    return {f"layer_with_weights-{i}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE": v
            for i, layer in enumerate(model.layers) for v in layer.weights}


def k2w_hand_numbered_every_layer(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    for key, variable in _k2_keys_every_layer(model).items():
        if reader.has_tensor(key):
            variable.assign(reader.get_tensor(key))


def k2w_sorted_zip(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    keys = sorted(_weight_keys(reader))
    if len(keys) != len(model.weights):
        raise ValueError("the file and the model hold different numbers of weights")
    for key, variable in zip(keys, sorted(model.weights, key=lambda v: v.path)):
        if tuple(reader.get_variable_to_shape_map()[key]) == tuple(variable.shape):
            variable.assign(reader.get_tensor(key))


def k2w_load_weights(ckpt_path, model):
    model.load_weights(ckpt_path)


def k2w_right_report(ckpt_path, model):
    report = restore_keras2_checkpoint(os.fspath(ckpt_path), model, strict=True, drop_optimizer=True)
    return None if report is None else None


def k2w_right_by_hand(ckpt_path, model):
    reader = tf.train.load_checkpoint(ckpt_path)
    shapes = reader.get_variable_to_shape_map()
    key_map = keras2_key_map(ckpt_path, model)
    problems = [v.path for v in model.weights if not any(v is w for w in key_map.values())]
    problems += [key for key in _weight_keys(reader) if key not in key_map]
    problems += [key for key, v in key_map.items() if tuple(shapes.get(key, ())) != tuple(v.shape)]
    if problems:
        raise KeyError(f"no partner of the same shape: {problems}")
    values = {key: reader.get_tensor(key) for key in key_map}
    for key, variable in key_map.items():
        variable.assign(values[key])


def k2w_right_assign_then_raise(ckpt_path, model):
    """Literal reading of the prompt: restore what pairs up, then raise if anything did not."""
    reader = tf.train.load_checkpoint(ckpt_path)
    shapes = reader.get_variable_to_shape_map()
    key_map = keras2_key_map(ckpt_path, model)
    paired = set()
    for key, variable in key_map.items():
        if key in shapes and tuple(shapes[key]) == tuple(variable.shape):
            variable.assign(reader.get_tensor(key))
            paired.add(key)
    lonely = [v.path for v in model.weights if not any(v is key_map[k] for k in paired)]
    lonely += sorted(_weight_keys(reader) - paired)
    if lonely:
        raise RuntimeError(f"without a partner: {lonely}")


@pytest.mark.parametrize("answer", marked([
    k2w_checkpoint_restore, k2w_checkpoint_root_restore, k2w_trainable_only, k2w_lenient,
    k2w_only_model_side_strict, k2w_optimizer_counts_as_extra, k2w_pairs_by_shape, k2w_converts_in_place,
    k2w_warns_instead, k2w_strict_false, k2w_hand_numbered_every_layer, k2w_sorted_zip, k2w_load_weights,
], KNOWN_10))
def test_attack_load_keras2_weights_rejects(answer, in_tmp):
    rejected(ex10.check_load_keras2_weights, answer)


def k2w_right_by_hand_value_error(ckpt_path, model):
    try:
        k2w_right_by_hand(ckpt_path, model)
    except KeyError as error:
        raise ValueError(*error.args) from None


def k2w_right_assign_then_raise_value_error(ckpt_path, model):
    try:
        k2w_right_assign_then_raise(ckpt_path, model)
    except RuntimeError as error:
        raise ValueError(*error.args) from None


@pytest.mark.parametrize("answer", marked([
    k2w_right_report, k2w_right_by_hand, k2w_right_assign_then_raise, k2w_right_by_hand_value_error,
    k2w_right_assign_then_raise_value_error,
], KNOWN_10))
def test_attack_load_keras2_weights_accepts(answer, in_tmp):
    accepted(ex10.check_load_keras2_weights, answer)


# --------------------------------------------------------------------------- 10.3 attack

SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def _k2k_numbered(layers, variables=lambda layer: layer.weights, start=0, key=None):
    key = key or (lambda n, layer, v: f"layer_with_weights-{n}/{v.name}{SUFFIX}")
    result, n = {}, start
    for layer in layers:
        chosen = variables(layer)
        if not chosen:
            continue
        for v in chosen:
            result[key(n, layer, v)] = v
        n += 1
    return result


def k2k_every_layer(model):
    return _k2_keys_every_layer(model)


def k2k_trainable_layers_only(model):
    return _k2k_numbered(model.layers, variables=lambda layer: layer.weights if layer.trainable_weights else [])


def k2k_trainable_variables_only(model):
    return _k2k_numbered(model.layers, variables=lambda layer: layer.trainable_weights)


def k2k_paths(model):
    return _k2k_numbered(model.layers, key=lambda n, layer, v: f"layer_with_weights-{n}/{v.path}{SUFFIX}")


def k2k_no_suffix(model):
    return _k2k_numbered(model.layers, key=lambda n, layer, v: f"layer_with_weights-{n}/{v.name}")


def k2k_from_one(model):
    return _k2k_numbered(model.layers, start=1)


def k2k_values_not_variables(model):
    return {key: v.numpy() for key, v in _k2k_numbered(model.layers).items()}


def k2k_reversed(model):
    return {v.path: key for key, v in _k2k_numbered(model.layers).items()}


def k2k_layer_names(model):
    return _k2k_numbered(model.layers, key=lambda n, layer, v: f"{layer.name}/{v.name}{SUFFIX}")


def k2k_layer_prefix(model):
    return _k2k_numbered(model.layers, key=lambda n, layer, v: f"layer-{n}/{v.name}{SUFFIX}")


def k2k_numbered_per_variable(model):
    return {f"layer_with_weights-{i}/{v.name}{SUFFIX}": v for i, v in enumerate(model.weights)}


def k2k_skips_frozen_layers(model):
    return _k2k_numbered([layer for layer in model.layers if layer.trainable])


def k2k_layer_variables(model):
    """`layer.variables` also holds a Dropout's seed state, which Keras 2 never saved."""
    keys, index = {}, 0
    for layer in model.layers:
        if len(layer.variables) == 0:
            continue
        keys.update({"layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE" % (index, v.name): v
                     for v in layer.variables})
        index += 1
    return keys


def k2k_right_counter(model):
    keys, index = {}, 0
    for layer in model.layers:
        if len(layer.weights) == 0:
            continue
        keys.update({"layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE" % (index, v.name): v
                     for v in layer.weights})
        index += 1
    return keys


def k2k_right_enumerate_filtered(model):
    with_weights = [layer for layer in model.layers if layer.weights]
    return {"/".join([f"layer_with_weights-{n}", v.name, ".ATTRIBUTES", "VARIABLE_VALUE"]): v
            for n, layer in enumerate(with_weights) for v in layer.weights}


def k2k_right_itertools(model):
    import itertools

    counter = itertools.count()
    pairs = []
    for layer in model.layers:
        if layer.weights:
            n = next(counter)
            pairs += [(f"layer_with_weights-{n}/{v.name}/.ATTRIBUTES/VARIABLE_VALUE", v) for v in layer.weights]
    return dict(pairs)


@pytest.mark.parametrize("answer", marked([
    k2k_every_layer, k2k_trainable_layers_only, k2k_trainable_variables_only, k2k_paths, k2k_no_suffix, k2k_from_one,
    k2k_values_not_variables, k2k_reversed, k2k_layer_names, k2k_layer_prefix, k2k_numbered_per_variable,
    k2k_skips_frozen_layers, k2k_layer_variables,
], KNOWN_10))
def test_attack_keras2_keys_rejects(answer, in_tmp):
    rejected(ex10.check_keras2_keys, answer)


@pytest.mark.parametrize("answer", marked([
    k2k_right_counter, k2k_right_enumerate_filtered, k2k_right_itertools,
], KNOWN_10))
def test_attack_keras2_keys_accepts(answer, in_tmp):
    accepted(ex10.check_keras2_keys, answer)


def test_every_written_hint_fits_300_characters_with_its_prefix():
    """Each hint text written in helpers/checks/ex10.py (a require's, each step of a Hint), with its
    "Exercise NN.N: " prefix, an f-string's fields counted as one character; the answers above measure
    the texts as shown."""
    from tests.test_checks_framework import CHECKS, hint_texts

    texts = hint_texts(CHECKS / "ex10.py")
    assert texts
    long = [(line, text) for line, number, text in texts if len(f"Exercise {number}: {text}") > 300]
    assert not long, long
