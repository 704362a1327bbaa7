"""Unit tests of helpers.shipped_models on real files: quantized, mixed precision, EMA, KerasHub presets."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
import warnings

import keras
import numpy as np
import pytest

from helpers.identify import identify
from helpers.errors import (
    NotAKerasFileError,
    NotAPresetError,
    OptimizerStateDroppedError,
    QuantizedTwinError,
    StructureMismatchError,
)
from helpers.shipped_models import (
    describe_preset,
    dtype_policies,
    ema_pairs,
    load_keeping_optimizer,
    load_preset,
    load_weights_into_twin,
    quantization_modes,
    quantized_weights,
    saved_optimizer_variables,
)

X = np.random.default_rng(0).normal(size=(8, 5)).astype("float32")
Y = np.random.default_rng(1).normal(size=(8, 2)).astype("float32")


def build(seed: int = 1) -> keras.Model:
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((5,))
    hidden = keras.layers.Dense(6, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, dtype="float32", name="head")(hidden))


def quantize(model: keras.Model, mode: str = "int8") -> keras.Model:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Layer InputLayer does not have a `quantize` method"
        model.quantize(mode)
    return model


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_dtype_policy("float32")


# --------------------------------------------------------------------------- quantized


def test_quantized_keras_file_names_modes_and_int8_kernels(tmp_path):
    model = quantize(build())
    model.save(tmp_path / "q.keras")
    assert dtype_policies(tmp_path / "q.keras") == {"hidden": "int8_from_float32", "head": "int8_from_float32"}
    assert quantized_weights(tmp_path / "q.keras") == {"layers/dense/vars/0": (5, 6),
                                                       "layers/dense_1/vars/0": (6, 2)}


def test_int4_packs_two_values_a_byte(tmp_path):
    model = quantize(build(), "int4")
    model.save_weights(tmp_path / "q4.weights.h5")
    shapes = sorted(quantized_weights(tmp_path / "q4.weights.h5").values())
    assert (5, 3) in shapes and (6, 1) in shapes  # 6 and 2 output columns packed into 3 and 1


def test_float_file_has_no_int8_weights(tmp_path):
    build().save(tmp_path / "f.keras")
    assert quantized_weights(tmp_path / "f.keras") == {}
    assert dtype_policies(tmp_path / "f.keras") == {"hidden": "float32", "head": "float32"}


def test_quantized_weights_refused_by_unquantized_twin_before_loading(tmp_path):
    quantize(build()).save_weights(tmp_path / "q.weights.h5")
    twin = build(seed=7)
    before = [w.numpy().copy() for w in twin.weights]
    with pytest.raises(QuantizedTwinError, match=r"quantize the twin first: .*model.quantize\('int8'\)"):
        load_weights_into_twin(twin, tmp_path / "q.weights.h5")
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, twin.weights))


def test_keras_itself_fails_on_the_unquantized_twin(tmp_path):
    """The pitfall the recipe guards: Keras's own message."""
    quantize(build()).save_weights(tmp_path / "q.weights.h5")
    with pytest.raises(ValueError, match="expected 2 variables, but received 3"):
        build().load_weights(tmp_path / "q.weights.h5")


def test_quantized_twin_loads_with_equal_outputs(tmp_path):
    source = quantize(build())
    source.save_weights(tmp_path / "q.weights.h5")
    twin = quantize(build(seed=9))
    assert load_weights_into_twin(twin, tmp_path / "q.weights.h5") is twin
    assert np.array_equal(twin(X).numpy(), source(X).numpy())


def test_float_weights_refused_by_quantized_model(tmp_path):
    build().save_weights(tmp_path / "f.weights.h5")
    with pytest.raises(QuantizedTwinError, match="before quantizing"):
        load_weights_into_twin(quantize(build()), tmp_path / "f.weights.h5")


def test_not_a_keras_file(tmp_path):
    (tmp_path / "x.weights.h5").write_bytes(b"not hdf5")
    with pytest.raises(NotAKerasFileError):
        quantized_weights(tmp_path / "x.weights.h5")
    with pytest.raises(NotAKerasFileError, match="no such file"):
        quantized_weights(tmp_path / "missing.keras")
    build().save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(NotAKerasFileError, match="configuration"):
        dtype_policies(tmp_path / "w.weights.h5")


# --------------------------------------------------------------------------- mixed precision


def mixed_model() -> keras.Model:
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model = build()
    model.compile(keras.optimizers.Adam(1e-2), "mse")
    keras.mixed_precision.set_dtype_policy("float32")
    model.fit(X, Y, batch_size=4, epochs=1, verbose=0)
    return model


def test_mixed_precision_file_names_its_policy_and_14_optimizer_variables(tmp_path):
    model = mixed_model()
    model.save(tmp_path / "mp.keras")
    assert dtype_policies(tmp_path / "mp.keras") == {"hidden": "mixed_float16", "head": "float32"}
    assert saved_optimizer_variables(tmp_path / "mp.keras") == 14 == len(model.optimizer.variables)


def test_plain_load_drops_the_loss_scale_optimizer_state(tmp_path):
    mixed_model().save(tmp_path / "mp.keras")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = keras.saving.load_model(tmp_path / "mp.keras")
    assert any("Skipping variable loading for optimizer" in str(w.message) for w in caught)
    assert int(back.optimizer.iterations.numpy()) == 0


def test_load_keeping_optimizer_resumes_exactly(tmp_path):
    model = mixed_model()
    model.save(tmp_path / "mp.keras")
    back = load_keeping_optimizer(tmp_path / "mp.keras")
    assert type(back.optimizer).__name__ == "LossScaleOptimizer"
    assert keras.mixed_precision.global_policy().name == "float32"
    assert [v.numpy().tolist() for v in back.optimizer.variables] == [
        v.numpy().tolist() for v in model.optimizer.variables]
    model.fit(X, Y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    back.fit(X, Y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), back.get_weights()))


def test_load_keeping_optimizer_raises_when_state_cannot_be_kept(tmp_path):
    model = build()
    model.compile(keras.optimizers.Adam(), "mse")
    model.fit(X, Y, verbose=0)
    model.save(tmp_path / "m.keras")
    # a file whose optimizer the configuration cannot rebuild: drop the compile config
    import zipfile
    with zipfile.ZipFile(tmp_path / "m.keras") as source, zipfile.ZipFile(tmp_path / "n.keras", "w") as out:
        for item in source.namelist():
            data = source.read(item)
            if item == "config.json":
                config = json.loads(data)
                config["compile_config"]["optimizer"]["class_name"] = "SGD"
                config["compile_config"]["optimizer"]["config"] = {"name": "sgd", "learning_rate": 0.1}
                data = json.dumps(config).encode()
            out.writestr(item, data)
    with pytest.raises(OptimizerStateDroppedError, match="holds 10 optimizer variables, the reloaded optimizer has 2"):
        load_keeping_optimizer(tmp_path / "n.keras")


def test_weights_h5_under_mixed_precision_needs_a_built_optimizer(tmp_path):
    model = mixed_model()
    model.save_weights(tmp_path / "mp.weights.h5")
    assert saved_optimizer_variables(tmp_path / "mp.weights.h5") == 14
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    twin = build()
    twin.compile(keras.optimizers.Adam(1e-2), "mse")
    keras.mixed_precision.set_dtype_policy("float32")
    twin.optimizer.build(twin.trainable_variables)
    twin.load_weights(tmp_path / "mp.weights.h5")
    assert float(twin.optimizer.dynamic_scale.numpy()) == float(model.optimizer.dynamic_scale.numpy())
    assert int(twin.optimizer.iterations.numpy()) == 2


# --------------------------------------------------------------------------- EMA


def test_ema_pairs_by_position_and_fit_ends_on_the_averages():
    model = build()
    model.compile(keras.optimizers.SGD(0.05, use_ema=True, ema_momentum=0.9), "mse")
    model.fit(X, Y, batch_size=4, verbose=0)
    pairs = ema_pairs(model)
    assert [v.path for v, _ in pairs] == [v.path for v in model.trainable_variables]
    assert all(np.array_equal(v.numpy(), a.numpy()) for v, a in pairs)


def test_ema_pairs_refuses_a_plain_optimizer():
    model = build()
    model.compile(keras.optimizers.SGD(0.05), "mse")
    with pytest.raises(StructureMismatchError, match="use_ema=True"):
        ema_pairs(model)
    model = build()
    model.compile(keras.optimizers.SGD(0.05, use_ema=True), "mse")
    with pytest.raises(StructureMismatchError, match="not built"):
        ema_pairs(model)


# --------------------------------------------------------------------------- presets


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    import keras_hub

    folder = tmp_path_factory.mktemp("presets") / "tiny"
    keras.utils.set_random_seed(3)
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=6)
    backbone = keras_hub.models.BertBackbone(vocabulary_size=8, num_layers=1, num_heads=2, hidden_dim=4,
                                             intermediate_dim=8, max_sequence_length=6)
    task = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor)
    task.save_to_preset(str(folder))
    return folder, task


def test_describe_preset(preset):
    folder, _ = preset
    description = describe_preset(folder)
    assert (description.backbone_class, description.task_class) == ("BertBackbone", "BertTextClassifier")
    assert description.keras_version == keras.__version__ and description.keras_hub_version
    assert {"config.json", "metadata.json", "model.weights.h5", "task.json", "task.weights.h5",
            "tokenizer.json", "preprocessor.json"} <= set(description.files)
    assert description.assets == ["assets/tokenizer/vocabulary.txt"]
    assert description.traps == []
    assert "BertTextClassifier.from_preset" in str(description)


def test_load_preset_equal_outputs(preset):
    folder, task = preset
    features = task.preprocessor(np.array(["the cat sat"]))
    loaded = load_preset(folder)
    assert type(loaded).__name__ == "BertTextClassifier"
    assert np.array_equal(keras.ops.convert_to_numpy(loaded(features)),
                          keras.ops.convert_to_numpy(task(features)))


def test_preset_traps_and_refusals(preset, tmp_path):
    folder, _ = preset
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    os.remove(copy / "task.weights.h5")
    metadata = json.loads((copy / "metadata.json").read_text())
    metadata["keras_version"] = "9.0.0"
    (copy / "metadata.json").write_text(json.dumps(metadata))
    traps = " ".join(describe_preset(copy).traps)
    assert "task.weights.h5" in traps and "Keras 9.0.0, newer" in traps
    with pytest.raises(NotAPresetError, match="no such folder"):
        describe_preset(tmp_path / "missing")
    os.remove(copy / "metadata.json")
    with pytest.raises(NotAPresetError, match="no metadata.json"):
        describe_preset(copy)
    (tmp_path / "file.json").write_text("{}")
    with pytest.raises(NotAPresetError, match="not a folder"):
        describe_preset(tmp_path / "file.json")


def test_load_preset_refuses_a_class_keras_hub_does_not_define(preset, tmp_path):
    folder, _ = preset
    copy = tmp_path / "other"
    shutil.copytree(folder, copy)
    task = json.loads((copy / "task.json").read_text())
    task["registered_name"] = "mypackage>Evil"
    (copy / "task.json").write_text(json.dumps(task))
    with pytest.raises(NotAPresetError, match="KerasHub does not define"):
        load_preset(copy)


def test_round_trip_names_the_dropped_loss_scale_optimizer_state(tmp_path):
    """helpers.keras_files.round_trip reloads in a fresh process (policy float32) and must say what was lost."""
    from helpers.errors import ReloadMismatchError
    from helpers.keras_files import round_trip

    model = mixed_model()
    model.save(tmp_path / "mp.keras")
    with pytest.raises(ReloadMismatchError) as caught:
        round_trip(model, tmp_path / "mp.keras", X)
    problems = caught.value.problems
    assert "variable 'loss_scale_optimizer/dynamic_scale' missing from the reloaded model" in problems
    assert "variable 'loss_scale_optimizer/step_counter' missing from the reloaded model" in problems
    import re
    assert any(re.fullmatch(r"variable 'adam(_\d+)?/iteration' differs after the reload", p) for p in problems)


# --------------------------------------------------------------------------- review of chapter 17


def build_norm(seed: int = 1) -> keras.Model:
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((5,))
    hidden = keras.layers.Dense(6, name="enc")(inputs)
    hidden = keras.layers.BatchNormalization(name="norm")(hidden)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(hidden))


@pytest.mark.parametrize("saved, twin_mode", [("float8", None), ("int8", "int4"), ("int4", "int8")])
def test_other_modes_refused_before_anything_is_loaded(tmp_path, saved, twin_mode):
    """Was: only int8 against float was compared; these half-loaded the twin (its norm too) and raised raw."""
    source = build_norm()
    source.get_layer("norm").moving_mean.assign(np.full(6, 3.0, "float32"))
    quantize(source, saved).save_weights(tmp_path / "s.weights.h5")
    twin = build_norm(2)
    if twin_mode:
        quantize(twin, twin_mode)
    before = [w.numpy().copy() for w in twin.weights]
    with pytest.raises(QuantizedTwinError, match=rf"holds {saved} weights.*model.quantize\('{saved}'\)"):
        load_weights_into_twin(twin, tmp_path / "s.weights.h5")
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(before, twin.weights))


def test_int4_file_counts_kernels_once_and_names_its_mode(tmp_path):
    """Was: int4's int8 zero points counted as kernels, and the route said quantize('int8')."""
    quantize(build(), "int4").save_weights(tmp_path / "q4.weights.h5")
    assert sorted(quantized_weights(tmp_path / "q4.weights.h5")) == ["layers/dense/vars/0", "layers/dense_1/vars/0"]
    assert quantization_modes(tmp_path / "q4.weights.h5") == {"layers/dense": "int4", "layers/dense_1": "int4"}
    with pytest.raises(QuantizedTwinError, match=r"model.quantize\('int4'\)"):
        load_weights_into_twin(build(), tmp_path / "q4.weights.h5")
    quantize(build(), "float8").save_weights(tmp_path / "f8.weights.h5")
    assert set(quantization_modes(tmp_path / "f8.weights.h5").values()) == {"float8"}


def test_other_layouts_refused_with_a_named_error(tmp_path):
    build().save_weights(tmp_path / "f.weights.h5")
    with pytest.raises(StructureMismatchError, match="layer"):
        load_weights_into_twin(build_norm(), tmp_path / "f.weights.h5")
    with pytest.raises(StructureMismatchError, match="not NoneType"):
        load_weights_into_twin(None, tmp_path / "f.weights.h5")


def test_damaged_keras_files_get_named_errors(tmp_path):
    """Was: BadZipFile, KeyError, AttributeError, and 'only a .keras archive...' for a missing file."""
    import zipfile

    quantize(build()).save(tmp_path / "q.keras")
    data = bytearray((tmp_path / "q.keras").read_bytes())
    with zipfile.ZipFile(tmp_path / "q.keras") as archive:
        member = archive.getinfo("model.weights.h5")
    data[member.header_offset + 200] ^= 0xFF  # inside the stored weights
    (tmp_path / "flipped.keras").write_bytes(bytes(data))
    with pytest.raises(NotAKerasFileError):
        quantized_weights(tmp_path / "flipped.keras")
    with zipfile.ZipFile(tmp_path / "noconfig.keras", "w") as archive:
        archive.writestr("metadata.json", "{}")
    with pytest.raises(NotAKerasFileError, match="no config.json"):
        dtype_policies(tmp_path / "noconfig.keras")
    with zipfile.ZipFile(tmp_path / "list.keras", "w") as archive:
        archive.writestr("config.json", "[1, 2]")
    with pytest.raises(NotAKerasFileError, match="not a JSON object"):
        dtype_policies(tmp_path / "list.keras")
    with pytest.raises(NotAKerasFileError, match="no such file"):
        dtype_policies(tmp_path / "nope.keras")


def test_load_keeping_optimizer_without_loss_scaling(tmp_path):
    """Was: compile(auto_scale_loss=False) saved 10 variables, the recipe loaded 14 and raised a circular route."""
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model = build()
    model.compile(keras.optimizers.Adam(1e-2), "mse", auto_scale_loss=False)
    keras.mixed_precision.set_dtype_policy("float32")
    model.fit(X, Y, batch_size=4, epochs=1, verbose=0)
    model.save(tmp_path / "noscale.keras")
    back = load_keeping_optimizer(tmp_path / "noscale.keras")
    assert type(back.optimizer).__name__ == "Adam"
    assert len(back.optimizer.variables) == saved_optimizer_variables(tmp_path / "noscale.keras") == 10
    assert int(back.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy())


def test_load_preset_refuses_missing_weights(preset, tmp_path):
    """Was: no task.weights.h5 loaded a random head silently; no model.weights.h5 raised a raw FileNotFoundError."""
    folder, _ = preset
    shutil.copytree(folder, tmp_path / "no_task_weights")
    os.remove(tmp_path / "no_task_weights" / "task.weights.h5")
    with pytest.raises(NotAPresetError, match=r"task.weights.h5.*BertBackbone.from_preset"):
        load_preset(tmp_path / "no_task_weights")
    shutil.copytree(folder, tmp_path / "no_model_weights")
    os.remove(tmp_path / "no_model_weights" / "model.weights.h5")
    with pytest.raises(NotAPresetError, match="no model.weights.h5"):
        load_preset(tmp_path / "no_model_weights")


def test_preset_declaring_huge_sizes_is_refused_before_building(preset, tmp_path):
    """Was: vocabulary_size=2e9 in task.json's backbone went to from_preset (OOM), and no trap said so."""
    folder, _ = preset
    shutil.copytree(folder, tmp_path / "huge")
    task = json.loads((tmp_path / "huge" / "task.json").read_text())
    task["config"]["backbone"]["config"].update(vocabulary_size=2_000_000_000, hidden_dim=4096)
    (tmp_path / "huge" / "task.json").write_text(json.dumps(task))
    traps = describe_preset(tmp_path / "huge").traps
    assert any("exhaust memory" in trap for trap in traps)
    assert any("task.json carries its own backbone configuration" in trap for trap in traps)
    with pytest.raises(NotAPresetError, match="exhaust memory"):
        load_preset(tmp_path / "huge")
    assert describe_preset(folder).traps == []


# Hostile edits of a real preset's configurations: each is a real argument of the class it names, so
# from_preset would build it (before: num_layers, num_segments, num_classes were not counted as sizes).
HOSTILE = {
    "num_layers": ("backbone", {"num_layers": 3000}),  # about 1 MB of Python objects per layer
    "num_segments": ("backbone", {"num_segments": 2_000_000_000}),  # an embedding of 2e9 x 4
    "num_classes": ("task", {"num_classes": 2_000_000_000}),  # a Dense kernel of 4 x 2e9
}


def _hostile_copy(folder, target, where, change):
    shutil.copytree(folder, target)
    for name in ("config.json", "task.json"):
        content = json.loads((target / name).read_text())
        if where == "task" and name == "task.json":
            content["config"].update(change)
        elif where == "backbone":
            (content["config"]["backbone"]["config"] if name == "task.json" else content["config"]).update(change)
        (target / name).write_text(json.dumps(content))
    return target


def _lying_weights_copy(folder, target):
    """A weights file whose first array declares 2**31 float32 values (8 GB) and stores none."""
    import h5py

    shutil.copytree(folder, target)
    with h5py.File(target / "model.weights.h5", "r+") as file:
        names = []
        file.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        del file[names[0]]
        file.create_dataset(names[0], shape=(1 << 31,), dtype="float32")
    assert (target / "model.weights.h5").stat().st_size < 1 << 20
    return target


def _hostile_gemma(target):
    """A real Gemma backbone preset whose query kernel (heads x head size x hidden) is declared 4096 cubed:
    each pair of sizes multiplied stays small, the three together are 6.9e10 values."""
    import keras_hub

    keras.utils.set_random_seed(4)
    keras_hub.models.GemmaBackbone(vocabulary_size=10, num_layers=1, num_query_heads=2, num_key_value_heads=1,
                                   hidden_dim=8, intermediate_dim=16, head_dim=4).save_to_preset(str(target))
    config = json.loads((target / "config.json").read_text())
    config["config"].update(num_query_heads=4096, head_dim=4096, hidden_dim=4096)
    (target / "config.json").write_text(json.dumps(config))
    return target


def test_hostile_presets_are_refused_under_a_memory_limit(preset, tmp_path):
    """Was: these went to from_preset and built (or read) gigabytes. Run in a fresh process limited to
    4 GB of address space, so that a regression fails with MemoryError instead of exhausting the machine."""
    import subprocess
    import sys

    folder, _ = preset
    folders = [str(_hostile_copy(folder, tmp_path / name, *HOSTILE[name])) for name in sorted(HOSTILE)]
    folders.append(str(_lying_weights_copy(folder, tmp_path / "lying")))
    folders.append(str(_hostile_gemma(tmp_path / "gemma")))
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import json, os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        from helpers.shipped_models import NotAPresetError, load_preset
        for folder in {folders!r}:
            try:
                load_preset(folder)
                print(json.dumps("built"))
            except NotAPresetError as error:
                print(json.dumps("refused: " + error.reason))
            except BaseException as error:
                print(json.dumps(type(error).__name__))
        """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                         env={**os.environ, "PYTHONPATH": os.getcwd(), "KERAS_BACKEND": "tensorflow"})
    results = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('"')]
    assert len(results) == len(folders), run.stderr[-2000:]
    assert all(result.startswith("refused:") and "exhaust memory" in result for result in results), results
    assert "num_classes 2000000000" in results[0] and "3000 repeated parts" in results[1]
    assert "num_segments 2000000000" in results[2] and "model.weights.h5 declares arrays of 85899" in results[3]
    assert "num_query_heads 4096 x head_dim 4096 x hidden_dim 4096" in results[4]


@pytest.mark.parametrize("key", ["vocab", "vocabulary_size", "vocab_size", "d_model", "hidden_size", "width",
                                 "ffn_dim", "intermediate_size", "n_positions", "max_position_embeddings",
                                 "num_tokens", "image_size"])
def test_any_integer_a_configuration_declares_is_a_size(preset, tmp_path, key):
    """Was: only *_size, *_dim and *_length keys counted; `vocab`, `width`, `n_positions`... passed."""
    folder, _ = preset
    target = _hostile_copy(folder, tmp_path / key, "backbone", {key: 3_000_000_000})
    trap = [trap for trap in describe_preset(target).traps if "exhaust memory" in trap]
    assert trap and f"{key} 3000000000" in trap[0] and str(tmp_path) not in trap[0]
    assert "exhaust memory" in identify(target).blocked


@pytest.mark.parametrize("key", ["num_layers", "n_layer", "num_hidden_layers", "depth", "num_blocks",
                                 "stackwise_num_blocks", "num_experts"])
def test_counts_of_repeated_parts_are_bounded(preset, tmp_path, key):
    folder, _ = preset
    value = [500, 500] if key.startswith("stackwise") else 1000
    trap = describe_preset(_hostile_copy(folder, tmp_path / key, "backbone", {key: value})).traps
    assert any(("1000 repeated parts" in line or "1001 repeated parts" in line) and "(at most 64)" in line
               and "exhaust memory" in line for line in trap), trap  # 1001: with num_layers 1


def test_real_presets_and_constants_are_accepted(preset, tmp_path):
    folder, _ = preset
    assert describe_preset(folder).traps == [] and not identify(folder).blocked
    stored = os.path.join(os.path.dirname(__file__), "data", "kerashub021", "bert_tiny")
    assert not any("exhaust" in trap for trap in describe_preset(stored).traps) and not identify(stored).blocked
    # RoPE constants, seeds, ids and Keras's shared_object_id size nothing
    constants = {"rope_max_wavelength": 500_000, "rope_theta": 1_000_000, "seed": 2**31 - 1,
                 "shared_object_id": 140492288700624, "pad_token_id": 50_000}
    target = _hostile_copy(folder, tmp_path / "constants", "backbone", constants)
    assert not any("exhaust" in trap for trap in describe_preset(target).traps)


def test_describe_preset_odd_json_and_other_formats(preset, tmp_path):
    """Was: AttributeError for a list config.json or a numeric version; a Transformers folder got 'no metadata.json'."""
    folder, _ = preset
    shutil.copytree(folder, tmp_path / "listed")
    (tmp_path / "listed" / "config.json").write_text("[1, 2]")
    with pytest.raises(NotAPresetError, match="not a JSON object"):
        describe_preset(tmp_path / "listed")
    shutil.copytree(folder, tmp_path / "numbered")
    metadata = json.loads((tmp_path / "numbered" / "metadata.json").read_text())
    (tmp_path / "numbered" / "metadata.json").write_text(json.dumps({**metadata, "keras_version": 3}))
    assert describe_preset(tmp_path / "numbered").keras_version == "3"
    (tmp_path / "hf_bert").mkdir()
    (tmp_path / "hf_bert" / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 30}))
    with pytest.raises(NotAPresetError, match="Hugging Face Transformers folder"):
        describe_preset(tmp_path / "hf_bert")


# Review F5/F6: configurations of presets as published (KerasHub 0.32 argument names), with the bytes their
# weight files hold quantized to int4 (about half a byte a parameter) or in bfloat16.
REAL_CONFIGS = {
    "gemma_2b int4": (dict(vocabulary_size=256000, num_layers=18, num_query_heads=8, num_key_value_heads=1,
                           hidden_dim=2048, intermediate_dim=32768, head_dim=256), 1.38e9),
    "gemma_7b int4": (dict(vocabulary_size=256000, num_layers=28, num_query_heads=16, num_key_value_heads=16,
                           hidden_dim=3072, intermediate_dim=49152, head_dim=256), 4.7e9),
    "gemma3_4b int4": (dict(vocabulary_size=262144, image_size=896, num_layers=34, num_query_heads=8,
                            num_key_value_heads=4, hidden_dim=2560, intermediate_dim=10240, head_dim=256,
                            sliding_window_size=1024,
                            vision_encoder={"config": dict(image_size=896, patch_size=14, num_heads=16,
                                                           hidden_dim=1152, num_layers=27, intermediate_dim=4304,
                                                           output_dim=2560, pool_size=4)}), 2.58e9),
    "qwen1.5_moe_2.7b int4": (dict(vocabulary_size=151936, num_layers=24, num_query_heads=16, num_key_value_heads=16,
                                   hidden_dim=2048, intermediate_dim=5632, moe_intermediate_dim=1408,
                                   shared_expert_intermediate_dim=5632, num_experts=60, top_k=4,
                                   decoder_sparse_step=1, sliding_window_size=4096, mlp_only_layers=[]), 7.9e9),
    "qwen3_moe_30b_a3b int4": (dict(vocabulary_size=151936, num_layers=48, num_query_heads=32, num_key_value_heads=4,
                                    head_dim=128, hidden_dim=2048, intermediate_dim=6144, moe_intermediate_dim=768,
                                    num_experts=128, top_k=8, sliding_window_size=32768, mlp_only_layers=[]), 16.8e9),
    "llama3_8b bf16": (dict(vocabulary_size=128256, num_layers=32, num_query_heads=32, num_key_value_heads=8,
                            hidden_dim=4096, intermediate_dim=14336, rope_max_wavelength=500000), 16.06e9),
    "whisper_base f32": (dict(vocabulary_size=51865, num_layers=6, num_heads=8, hidden_dim=512, intermediate_dim=2048,
                              num_mels=80, max_encoder_sequence_length=3000, max_decoder_sequence_length=448), 2.9e8),
    "bert_base f32": (dict(vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072,
                           max_sequence_length=512, num_segments=2), 4.4e8),
}


@pytest.mark.parametrize("name", sorted(REAL_CONFIGS))
def test_published_presets_are_accepted_quantized_too(name):
    """Was: Gemma 2B/7B int4 refused ('vocabulary_size 256000 x intermediate_dim 32768 x (1 + 27 repeated
    parts)') and Qwen MoE refused ('shared_expert_intermediate_dim' counted 5632 repeated parts)."""
    from helpers.identify.keras_hub_presets import declared_scale, too_large

    config, stored = REAL_CONFIGS[name]
    full = {"class_name": "X", "config": {"name": "x", "dtype": {"module": "keras", "class_name": "DTypePolicy",
                                                                  "config": {"name": "bfloat16"}}, **config}}
    assert too_large("unused", full, stored=int(stored)) is None, declared_scale(full)
    assert declared_scale(full)[0] < 8 * stored  # the estimate stays within 8 elements a byte of the real file


def test_sizes_of_experts_are_not_counts():
    from helpers.identify.keras_hub_presets import is_count

    assert not is_count("shared_expert_intermediate_dim") and not is_count("moe_intermediate_size")
    assert is_count("num_experts") and is_count("num_layers") and is_count("stackwise_num_blocks")


def _raw_copy(folder, target, text):
    """A copy whose backbone vocabulary_size is the raw JSON text given (Infinity, a 400-digit number...)."""
    shutil.copytree(folder, target)
    for name in ("config.json", "task.json"):
        content = (target / name).read_text()
        key = '"vocabulary_size": '
        start = content.index(key) + len(key)
        end = start + len(content[start:].split(",")[0].split("}")[0])
        (target / name).write_text(content[:start] + text + content[end:])
    return target


RAW_HOSTILE = {  # Review F8/F9: raw OverflowError, or a raw Keras ValueError at build time, or 20 s walking
    "string": ('"3000000000"', "vocabulary_size '3000000000', not a whole number"),
    "fraction": ("3000000000.5", "vocabulary_size 3000000000.5, not a whole number"),
    "infinity": ("Infinity", "vocabulary_size inf, not a whole number"),
    "nan": ("NaN", "vocabulary_size nan, not a whole number"),
    "400 digits": ("1" + "0" * 400, "vocabulary_size a 401-digit number"),
    "1e300": ("1e300", "vocabulary_size 1e+300, not a whole number below"),
    "deep": ("[" * 5000 + "1" + "]" * 5000, "nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(RAW_HOSTILE))
def test_malformed_sizes_are_named_before_anything_is_built(preset, tmp_path, name):
    folder, _ = preset
    text, words = RAW_HOSTILE[name]
    target = _raw_copy(folder, tmp_path / "raw", text)
    with pytest.raises(NotAPresetError, match=re.escape(words)):
        load_preset(target)
    if name == "deep":
        with pytest.raises(NotAPresetError, match=re.escape(words)):
            describe_preset(target)
    else:
        assert words in " ".join(describe_preset(target).traps)
    info = identify(target)
    assert not info.is_model or words in info.blocked, (info.reason, info.blocked)


def test_a_huge_config_is_refused_unread(preset, tmp_path):
    folder, _ = preset
    shutil.copytree(folder, tmp_path / "big")
    with open(tmp_path / "big" / "config.json", "ab") as file:
        file.truncate(17 << 20)
    with pytest.raises(NotAPresetError, match="config.json is 17825792 bytes, more than any preset"):
        load_preset(tmp_path / "big")


def test_a_sparse_weights_file_holds_only_what_it_allocates(preset, tmp_path):
    """Review F7: 100 GB sparse weight files let vocabulary 1e6 x hidden 4e4 through (OOM in the builder)."""
    folder, _ = preset
    target = _hostile_copy(folder, tmp_path / "sparse", "backbone",
                           {"vocabulary_size": 1_000_000, "hidden_dim": 40_000, "num_heads": 1})
    for name in ("model.weights.h5", "task.weights.h5"):
        os.truncate(target / name, 100 << 30)
    assert any("exhaust memory" in trap for trap in describe_preset(target).traps)
    assert "exhaust memory" in identify(target).blocked


def test_a_configuration_of_millions_of_values_is_refused_quickly(preset, tmp_path):
    """Review F8: a 9 MB config.json holding a list of 3 million numbers took 20-56 s to describe."""
    import time

    folder, _ = preset
    target = _hostile_copy(folder, tmp_path / "list", "backbone", {"x_list": [7] * 3_000_000})
    start = time.perf_counter()
    traps = describe_preset(target).traps
    assert any("more than 100000 values" in trap for trap in traps), traps
    assert time.perf_counter() - start < 10
    with pytest.raises(NotAPresetError, match="more than 100000 values"):
        load_preset(target)
