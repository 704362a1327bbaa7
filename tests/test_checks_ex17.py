"""The checks of notebook 17: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import time
import warnings

import keras
import numpy as np
import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex17


@pytest.fixture(autouse=True)
def _first_hints():
    """Each test starts from the first step of every stepped hint, and the float32 policy."""
    from helpers.checks import forget_hints

    forget_hints()
    yield
    forget_hints()
    keras.mixed_precision.set_dtype_policy("float32")


def not_done(*args):
    raise NotImplementedError()


def passes(check, answer, capsys) -> str:
    check(answer)
    out = capsys.readouterr().out
    assert "passed" in out
    return out


def fails(check, answer, *hint_words: str) -> str:
    start = time.perf_counter()
    with pytest.raises(CheckFailed) as caught:
        check(answer)
    assert time.perf_counter() - start < 20
    assert not isinstance(caught.value, ExerciseNotDone)
    message = str(caught.value)
    for word in hint_words:
        assert word in message, message
    assert len(message) <= 300 and "/tmp" not in message and "\x1b" not in message, message
    return message


def quantize(model, mode="int8"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.quantize(mode)


# --------------------------------------------------------------------------- 17.1


def right_quantized(build, path):
    twin = build()
    quantize(twin)
    twin.load_weights(path)
    return twin


def alt_quantized_pathlib(build, path):  # a different but correct way: the recipe, a Path
    import pathlib

    from helpers.shipped_models import load_weights_into_twin

    twin = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.quantize(mode="int8")
    return load_weights_into_twin(twin, pathlib.Path(path))


def alt_quantized_config(build, path):  # the int8 mode through its configuration object
    twin = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.quantize(config=keras.quantizers.Int8QuantizationConfig())
    twin.load_weights(path)
    return twin


# The reviewer's answers (tests of chapter 17's review): wrong ones a learner would write, right ones.


def review_swallow(build, path):
    twin = build()
    try:
        twin.load_weights(path)
    except Exception:
        pass
    return twin


def review_skip_then_quantize(build, path):
    twin = build()
    twin.load_weights(path, skip_mismatch=True)
    quantize(twin)
    return twin


def review_dequantized_float(build, path):  # the int8 values divided by their scales, into a float twin
    twin, quantized = build(), build()
    quantize(quantized)
    quantized.load_weights(path)
    for plain, layer in zip(twin.layers, quantized.layers):
        if layer.weights and hasattr(layer, "kernel_scale"):
            plain.kernel.assign(np.asarray(layer._kernel).astype("float32") / np.asarray(layer.kernel_scale))
            plain.bias.assign(np.asarray(layer.bias))
    return twin


_CACHE = {}


def review_cached(build, path):  # the first call's model, whatever the second call hands in
    if "model" not in _CACHE:
        twin = build()
        quantize(twin)
        twin.load_weights(path)
        _CACHE["model"] = twin
    return _CACHE["model"]


def review_quantize_twice(build, path):  # right: the second quantize raises before it changes anything
    twin = build()
    quantize(twin)
    twin.load_weights(path)
    try:
        quantize(twin)
    except Exception:
        pass
    return twin


def review_detect_int8(build, path):  # right: quantize only when the file holds int8 datasets
    import h5py

    found = []
    with h5py.File(path) as file:
        file.visititems(lambda name, item: found.append(name)
                        if isinstance(item, h5py.Dataset) and item.dtype == np.int8 else None)
    twin = build()
    if found:
        quantize(twin)
    twin.load_weights(str(path), skip_mismatch=False)
    return twin


@pytest.mark.parametrize("answer", [right_quantized, alt_quantized_pathlib, alt_quantized_config,
                                    review_quantize_twice, review_detect_int8])
def test_17_1_right_answers(answer, capsys):
    passes(ex17.check_load_quantized_weights, answer, capsys)


def wrong_no_quantize(build, path):
    twin = build()
    twin.load_weights(path)
    return twin


def wrong_quantize_after(build, path):
    twin = build()
    twin.load_weights(path)
    quantize(twin)
    return twin


def wrong_skip_mismatch(build, path):
    twin = build()
    twin.load_weights(path, skip_mismatch=True)
    return twin


def wrong_not_loaded(build, path):
    twin = build()
    quantize(twin)
    return twin


def wrong_int4(build, path):
    twin = build()
    quantize(twin, "int4")
    twin.load_weights(path)
    return twin


def wrong_float8(build, path):
    twin = build()
    quantize(twin, "float8")
    twin.load_weights(path)
    return twin


def wrong_returns_other(build, path):
    twin = build()
    quantize(twin)
    twin.load_weights(path)
    return build()


def wrong_clone(build, path):
    twin = build()
    quantize(twin)
    twin.load_weights(path)
    return keras.models.clone_model(twin)


def wrong_load_model(build, path):
    return keras.saving.load_model(path)


def wrong_filters(build, path):
    twin = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        twin.quantize("int8", filters="encoder")
    twin.load_weights(path, skip_mismatch=True)
    return twin


def wrong_returns_none(build, path):
    twin = build()
    quantize(twin)
    twin.load_weights(path)


@pytest.mark.parametrize("answer, words", [
    (wrong_no_quantize, ["section 3"]),
    (wrong_quantize_after, []),
    (wrong_skip_mismatch, ["int8"]),
    (wrong_not_loaded, ["does not answer"]),
    (wrong_int4, []),
    (wrong_float8, []),
    (wrong_returns_other, ["int8"]),
    (wrong_clone, ["not made by build()"]),
    (review_swallow, ["int8"]),
    (review_skip_then_quantize, []),
    (review_dequantized_float, ["int8"]),
    (review_cached, ["not made by build() in this call"]),
    (wrong_load_model, ["weights only"]),
    (wrong_filters, []),
    (wrong_returns_none, ["NoneType"]),
])
def test_17_1_wrong_answers(answer, words):
    fails(ex17.check_load_quantized_weights, answer, *words)


def test_17_1_stepped_hint():
    first = fails(ex17.check_load_quantized_weights, wrong_skip_mismatch, "section 3")
    second = fails(ex17.check_load_quantized_weights, wrong_skip_mismatch, "quantize('int8')")
    assert first != second


def test_17_1_not_done():
    with pytest.raises(ExerciseNotDone):
        ex17.check_load_quantized_weights(not_done)


# --------------------------------------------------------------------------- 17.2


def right_reload(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        return keras.saving.load_model(path)
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def alt_reload_recipe(path):
    from helpers.shipped_models import load_keeping_optimizer

    return load_keeping_optimizer(path)


def alt_reload_config_api(path):
    old = keras.config.dtype_policy()
    keras.config.set_dtype_policy(keras.DTypePolicy("mixed_float16"))
    model = keras.models.load_model(path, compile=True)
    keras.config.set_dtype_policy(old)
    return model


def review_name_policy(path):
    name = keras.config.dtype_policy().name
    keras.config.set_dtype_policy("mixed_float16")
    model = keras.models.load_model(path)
    keras.config.set_dtype_policy(name)
    return model


@pytest.mark.parametrize("answer", [right_reload, alt_reload_recipe, alt_reload_config_api, review_name_policy])
def test_17_2_right_answers(answer, capsys):
    passes(ex17.check_reload_for_training, answer, capsys)


def wrong_plain(path):
    return keras.saving.load_model(path)


def wrong_no_compile(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model = keras.saving.load_model(path, compile=False)
    keras.mixed_precision.set_dtype_policy(before)
    return model


def wrong_not_restored(path):
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    return keras.saving.load_model(path)


def wrong_back_to_float32(path):
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model = keras.saving.load_model(path)
    keras.mixed_precision.set_dtype_policy("float32")
    return model


def wrong_bfloat16(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    model = keras.saving.load_model(path)
    keras.mixed_precision.set_dtype_policy(before)
    return model


def wrong_recompile(path):
    model = keras.saving.load_model(path)
    model.compile(keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(3e-3)), "mse")
    return model


def wrong_recompile_mixed(path):
    model = right_reload(path)
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model.compile(keras.optimizers.Adam(3e-3), "mse")
    keras.mixed_precision.set_dtype_policy(before)
    return model


def wrong_wrap_after(path):
    model = keras.saving.load_model(path)
    model.optimizer = keras.optimizers.LossScaleOptimizer(model.optimizer)
    return model


def wrong_load_weights_again(path):
    model = keras.saving.load_model(path)
    model.load_weights(path)
    return model


def review_mixed_no_compile_recompile(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        model = keras.saving.load_model(path, compile=False)
        model.compile(keras.optimizers.Adam(1e-2), "mse")
        return model
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def review_recompile_inner(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        model = keras.saving.load_model(path)
        model.compile(model.optimizer.inner_optimizer.__class__(1e-2), "mse")
        return model
    finally:
        keras.mixed_precision.set_dtype_policy(before)


def review_build_only(path):
    model = keras.saving.load_model(path)
    model.optimizer.build(model.trainable_variables)
    return model


def review_config_float32(path):
    keras.config.set_dtype_policy("mixed_float16")
    try:
        return keras.saving.load_model(path)
    finally:
        keras.config.set_dtype_policy("float32")


def review_lso_after_compile_false(path):
    before = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        model = keras.saving.load_model(path, compile=False)
    finally:
        keras.mixed_precision.set_dtype_policy(before)
    model.compile(keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(1e-2)), "mse")
    return model


@pytest.mark.parametrize("answer, words", [
    (wrong_plain, ["bare Adam"]),
    (wrong_no_compile, ["no optimizer"]),
    (wrong_not_restored, ["global dtype policy"]),
    (wrong_back_to_float32, ["global dtype policy"]),
    (wrong_bfloat16, ["bare Adam"]),
    (wrong_recompile, []),
    (wrong_recompile_mixed, []),
    (wrong_wrap_after, []),
    (wrong_load_weights_again, []),
    (review_mixed_no_compile_recompile, []),
    (review_recompile_inner, []),
    (review_build_only, ["bare Adam"]),
    (review_config_float32, ["global dtype policy"]),
    (review_lso_after_compile_false, []),
])
def test_17_2_wrong_answers(answer, words):
    fails(ex17.check_reload_for_training, answer, *words)


def test_17_2_not_done():
    with pytest.raises(ExerciseNotDone):
        ex17.check_reload_for_training(not_done)


# --------------------------------------------------------------------------- 17.3


def right_pairs(model):
    averages = [v for v in model.optimizer.variables if v.path.endswith("_average")]
    return ([np.array(v.numpy()) for v in model.trainable_variables],
            [np.array(a.numpy()) for a in averages])


def alt_pairs_by_name(model):  # by name: 'zeta/kernel' -> '..._zeta_kernel_average'
    by_name = {v.path.split("/")[-1]: v for v in model.optimizer.variables}
    trained = [v.numpy().copy() for v in model.trainable_variables]
    averages = [by_name[v.path.replace("/", "_") + "_average"].numpy().copy()
                for v in model.trainable_variables]
    return trained, averages


def alt_pairs_finalize_and_restore(model):
    trained = [v.numpy().copy() for v in model.trainable_variables]
    model.optimizer.finalize_variable_values(model.trainable_variables)
    averages = [v.numpy().copy() for v in model.trainable_variables]
    for variable, value in zip(model.trainable_variables, trained):
        variable.assign(value)
    return [trained, averages]


def alt_pairs_recipe(model):
    from helpers.shipped_models import ema_pairs

    pairs = ema_pairs(model)
    return tuple([np.array(v) for v in values] for values in zip(*[(v.numpy(), a.numpy()) for v, a in pairs]))


def review_private_list(model):
    return ([np.array(v) for v in model.trainable_variables],
            [np.array(a) for a in model.optimizer._model_variables_moving_average])


def review_ops_numpy(model):
    averages = [v for v in model.optimizer.variables if "average" in v.path]
    return ([keras.ops.convert_to_numpy(v) for v in model.trainable_variables],
            [keras.ops.convert_to_numpy(a) for a in averages])


def review_tuples(model):
    averages = [v for v in model.optimizer.variables if "average" in v.path]
    return tuple(v.numpy() for v in model.trainable_variables), tuple(a.numpy() for a in averages)


def review_by_name_with_fallback(model):  # right: every path matches, the fallback is never used
    by_name = {a.path.split("/")[-1].replace("_average", ""): a
               for a in model.optimizer.variables if "average" in a.path}
    first = list(by_name.values())[0]
    return ([v.numpy() for v in model.trainable_variables],
            [by_name.get(v.name, by_name.get(v.path.replace("/", "_"), first)).numpy()
             for v in model.trainable_variables])


@pytest.mark.parametrize("answer", [right_pairs, alt_pairs_by_name, alt_pairs_finalize_and_restore,
                                    alt_pairs_recipe, review_private_list, review_ops_numpy, review_tuples,
                                    review_by_name_with_fallback])
def test_17_3_right_answers(answer, capsys):
    passes(ex17.check_trained_and_averaged, answer, capsys)


def wrong_swapped(model):
    trained, averages = right_pairs(model)
    return averages, trained


def wrong_sorted_by_path(model):
    averages = sorted((v for v in model.optimizer.variables if v.path.endswith("_average")),
                      key=lambda v: v.path)
    return ([v.numpy().copy() for v in model.trainable_variables], [a.numpy().copy() for a in averages])


def wrong_all_weights(model):
    averages = [v for v in model.optimizer.variables if v.path.endswith("_average")]
    return [v.numpy().copy() for v in model.weights], [a.numpy().copy() for a in averages]


def wrong_finalize(model):
    trained = [v.numpy().copy() for v in model.trainable_variables]
    model.optimizer.finalize_variable_values(model.trainable_variables)
    return trained, [v.numpy().copy() for v in model.trainable_variables]


def wrong_variables(model):
    averages = [v for v in model.optimizer.variables if v.path.endswith("_average")]
    return list(model.trainable_variables), averages


def wrong_slice(model):  # the first two optimizer variables are the counter and the learning rate
    return ([v.numpy().copy() for v in model.trainable_variables],
            [v.numpy().copy() for v in model.optimizer.variables[2:]])


def wrong_reversed(model):
    trained, averages = right_pairs(model)
    return trained, averages[::-1]


def wrong_trained_twice(model):
    trained, _ = right_pairs(model)
    return trained, [t.copy() for t in trained]


def wrong_one_list(model):
    trained, averages = right_pairs(model)
    return trained + averages


def wrong_momentums(model):
    slots = [v for v in model.optimizer.variables if "momentum" in v.path]
    return [v.numpy().copy() for v in model.trainable_variables], [s.numpy().copy() for s in slots]


def review_same_twice(model):
    weights = [v.numpy() for v in model.trainable_variables]
    return weights, weights


def review_get_weights(model):
    return model.get_weights(), [a.numpy() for a in model.optimizer.variables if "average" in a.path]


def review_swap_callback(model):  # SwapEMAWeights swaps by addition: the weights come back only to rounding
    callback = keras.callbacks.SwapEMAWeights()
    callback.set_model(model)
    callback._swap_variables()
    averaged = [v.numpy().copy() for v in model.trainable_variables]
    callback._swap_variables()
    return [v.numpy() for v in model.trainable_variables], averaged


def review_by_shape(model):  # the first average of the same shape: the wrong one for look-alike layers
    averages = [v for v in model.optimizer.variables if "average" in v.path]
    return ([v.numpy() for v in model.trainable_variables],
            [next(a for a in averages if a.shape == v.shape).numpy() for v in model.trainable_variables])


@pytest.mark.parametrize("answer, words", [
    (wrong_swapped, ["swapped"]),
    (wrong_sorted_by_path, ["order"]),
    (wrong_all_weights, ["trainable"]),
    (wrong_finalize, ["weights changed"]),
    (wrong_variables, ["NumPy arrays"]),
    (wrong_slice, []),
    (wrong_reversed, ["order"]),
    (wrong_trained_twice, ["averages"]),
    (wrong_one_list, ["two lists"]),
    (wrong_momentums, []),
    (review_same_twice, []),
    (review_get_weights, ["trainable"]),
    (review_swap_callback, []),
    (review_by_shape, []),
])
def test_17_3_wrong_answers(answer, words):
    fails(ex17.check_trained_and_averaged, answer, *words)


def test_17_3_not_done():
    with pytest.raises(ExerciseNotDone):
        ex17.check_trained_and_averaged(not_done)


# --------------------------------------------------------------------------- 17.4


def right_adapted(preset, adapter):
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset)
    task.backbone.load_lora_weights(adapter)
    return task


def alt_adapted_recipe(preset, adapter):  # the chapter's recipe, Path objects, rank enabled first
    import pathlib

    from helpers.shipped_models import load_preset

    task = load_preset(pathlib.Path(preset))
    task.backbone.enable_lora(3)
    task.backbone.load_lora_weights(str(pathlib.Path(adapter)))
    return task


def alt_adapted_by_task_json(preset, adapter):  # the class task.json names
    import json
    import os

    import keras_hub

    with open(os.path.join(preset, "task.json")) as file:
        name = json.load(file)["class_name"]
    task = getattr(keras_hub.models, name).from_preset(preset)
    task.backbone.load_lora_weights(adapter)
    return task


@pytest.mark.parametrize("answer", [right_adapted, alt_adapted_recipe, alt_adapted_by_task_json])
def test_17_4_right_answers(answer, capsys):
    passes(ex17.check_load_adapted_preset, answer, capsys)


def wrong_no_adapter(preset, adapter):
    import keras_hub

    return keras_hub.models.TextClassifier.from_preset(preset)


def wrong_bert_class(preset, adapter):  # the chapter's class, hard-coded
    import keras_hub

    task = keras_hub.models.BertTextClassifier.from_preset(preset)
    task.backbone.load_lora_weights(adapter)
    return task


def wrong_backbone_only(preset, adapter):
    import keras_hub

    backbone = keras_hub.models.Backbone.from_preset(preset)
    backbone.load_lora_weights(adapter)
    return backbone


def wrong_no_weights(preset, adapter):
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset, load_weights=False)
    task.backbone.load_lora_weights(adapter)
    return task


def wrong_no_preprocessor(preset, adapter):
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset, preprocessor=None)
    task.backbone.load_lora_weights(adapter)
    return task


def wrong_saves_merged(preset, adapter):  # "saves the result": the folder now holds merged kernels
    task = right_adapted(preset, adapter)
    task.save_to_preset(preset)
    return task


def wrong_adapter_on_task(preset, adapter):
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset)
    task.load_weights(adapter)
    return task


def wrong_enable_rank_2(preset, adapter):  # the chapter's rank, hard-coded
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset)
    task.backbone.enable_lora(2)
    task.backbone.load_lora_weights(adapter)
    return task


def wrong_enable_no_load(preset, adapter):
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset)
    task.backbone.enable_lora(3)
    return task


def wrong_reload_returns_first(preset, adapter):  # the adapter goes onto a second copy
    import keras_hub

    task = keras_hub.models.TextClassifier.from_preset(preset)
    keras_hub.models.TextClassifier.from_preset(preset).backbone.load_lora_weights(adapter)
    return task


@pytest.mark.parametrize("answer, words", [
    (wrong_no_adapter, ["adapter is not loaded"]),
    (wrong_bert_class, ["task.json"]),
    (wrong_backbone_only, ["DistilBertBackbone"]),
    (wrong_no_weights, ["load_weights=True"]),
    (wrong_no_preprocessor, ["preprocessor"]),
    (wrong_saves_merged, ["changed"]),
    (wrong_adapter_on_task, []),
    (wrong_enable_rank_2, ["rank"]),
    (wrong_enable_no_load, ["adapter is not loaded"]),
    (wrong_reload_returns_first, ["adapter is not loaded"]),
])
def test_17_4_wrong_answers(answer, words):
    fails(ex17.check_load_adapted_preset, answer, *words)


def test_17_4_stepped_hint():
    first = fails(ex17.check_load_adapted_preset, wrong_no_adapter, "section 10")
    second = fails(ex17.check_load_adapted_preset, wrong_no_adapter, "load_lora_weights")
    assert first != second


def test_17_4_not_done():
    with pytest.raises(ExerciseNotDone):
        ex17.check_load_adapted_preset(not_done)


def test_a_check_leaves_what_start_notebook_froze_frozen():
    """start_notebook freezes its imports for the cycle collector; a check must not unfreeze them."""
    import gc

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with ex17._quiet():
            pass
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
