"""identify on models as they ship (chapter 17): quantized and mixed-precision Keras files, KerasHub presets."""

from __future__ import annotations

import json
import shutil
import warnings

import keras
import numpy as np
import pytest

from helpers.identify import identify

X = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")


def build() -> keras.Model:
    keras.utils.set_random_seed(1)
    inputs = keras.Input((5,))
    hidden = keras.layers.Dense(6, activation="relu", name="hidden")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, dtype="float32", name="head")(hidden))


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_dtype_policy("float32")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shipped")
    quantized = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantized.quantize("int8")
    quantized.save(folder / "q.keras")
    quantized.save_weights(folder / "q.weights.h5")
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    mixed = build()
    mixed.compile(keras.optimizers.Adam(1e-2), "mse")
    keras.mixed_precision.set_dtype_policy("float32")
    mixed.fit(X, np.ones((4, 2), "float32"), verbose=0)
    mixed.save(folder / "mp.keras")
    mixed.save_weights(folder / "mp.weights.h5")
    import keras_hub

    tokenizer = keras_hub.models.BertTokenizer(vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=4)
    backbone = keras_hub.models.BertBackbone(vocabulary_size=6, num_layers=1, num_heads=1, hidden_dim=4,
                                             intermediate_dim=4, max_sequence_length=4)
    keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor).save_to_preset(
        str(folder / "preset"))
    return folder


def test_quantized_keras(files):
    info = identify(files / "q.keras")
    assert info.kind == "keras3-archive" and info.holds["quantized"] == "int8_from_float32"
    assert any("twin.quantize('int8')" in trap for trap in info.traps)
    assert info.verify().ok


def test_quantized_weights_h5_names_the_twin_trap(files):
    info = identify(files / "q.weights.h5")
    assert info.kind == "weights-h5" and info.holds["quantized layers"] == "2 (int8)"
    assert any("quantize it first: model.quantize('int8')" in trap for trap in info.traps)


def test_mixed_precision_keras_loads_with_its_optimizer_state(files):
    info = identify(files / "mp.keras")
    assert info.holds["dtype policy"] == "mixed_float16"
    assert any("drops the LossScaleOptimizer state" in trap for trap in info.traps)
    assert "set_dtype_policy('mixed_float16')" in info.how_to_load
    verification = info.verify()
    assert verification.ok and "LossScaleOptimizer with 14 variables kept" in verification.report


def test_mixed_precision_weights_h5(files):
    info = identify(files / "mp.weights.h5")
    assert info.holds["loss scale optimizer"] is True and info.holds["optimizer values"] == 24
    assert any("LossScaleOptimizer" in trap for trap in info.traps)


def test_preset_folder(files):
    info = identify(files / "preset")
    assert info.kind == "keras-hub-preset"
    assert info.written_by == {"Keras": keras.__version__, "KerasHub": "0.32.0"}
    assert (info.holds["backbone"], info.holds["task"]) == ("BertBackbone", "BertTextClassifier")
    assert info.holds["assets"] == ["assets/tokenizer/vocabulary.txt"]
    assert "BertTextClassifier.from_preset(path)" in info.how_to_load
    verification = info.verify()
    assert verification.ok and "BertTextClassifier with" in verification.report


def test_damaged_and_foreign_presets(files, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(files / "preset", copy)
    (copy / "task.weights.h5").unlink()
    metadata = json.loads((copy / "metadata.json").read_text())
    metadata["keras_hub_version"] = "9.1.0"
    (copy / "metadata.json").write_text(json.dumps(metadata))
    task = json.loads((copy / "task.json").read_text())
    task["registered_name"] = "evil>Model"
    (copy / "task.json").write_text(json.dumps(task))
    info = identify(copy)
    traps = " ".join(info.traps)
    assert "task.weights.h5" in traps and "KerasHub 9.1.0, newer" in traps and "evil>Model" in traps
    assert info.runs_code
    (copy / "config.json").write_text("{not json")
    assert identify(copy).kind == "not-a-model"


# --------------------------------------------------------------------------- review of chapter 17


def test_int4_and_float8_weights_name_their_mode(tmp_path):
    """Was: int4 got the int8 route and 'expected 2 variables, but received 3'; float8 got no trap at all."""
    for mode in ("int4", "float8"):
        model = build()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.quantize(mode)
        model.save_weights(tmp_path / f"{mode}.weights.h5")
        info = identify(tmp_path / f"{mode}.weights.h5")
        trap = next(trap for trap in info.traps if trap.startswith("quantized"))
        assert f"model.quantize('{mode}')" in trap and "received 3" not in trap, trap


def test_mixed_precision_without_loss_scaling_claims_no_loss_scale_state(tmp_path):
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    model = build()
    model.compile(keras.optimizers.Adam(1e-2), "mse", auto_scale_loss=False)
    keras.mixed_precision.set_dtype_policy("float32")
    model.fit(X, np.ones((4, 2), "float32"), verbose=0)
    model.save(tmp_path / "noscale.keras")
    info = identify(tmp_path / "noscale.keras")
    assert info.holds["dtype policy"] == "mixed_float16"
    assert not any("LossScaleOptimizer" in trap for trap in info.traps)


def test_preset_damaged_weights_and_huge_sizes(files, tmp_path):
    shutil.copytree(files / "preset", tmp_path / "cut")
    data = (tmp_path / "cut" / "model.weights.h5").read_bytes()
    (tmp_path / "cut" / "model.weights.h5").write_bytes(data[: len(data) // 2])
    assert any("model.weights.h5 is not a readable HDF5 file" in trap for trap in identify(tmp_path / "cut").traps)
    shutil.copytree(files / "preset", tmp_path / "huge")
    config = json.loads((tmp_path / "huge" / "config.json").read_text())
    config["config"].update(vocabulary_size=2_000_000_000, hidden_dim=4096)
    (tmp_path / "huge" / "config.json").write_text(json.dumps(config))
    info = identify(tmp_path / "huge")
    assert "exhaust memory" in info.blocked
    assert any("differs from config.json" in trap for trap in info.traps)


def test_transformers_folder_and_lora_adapter_are_named(tmp_path):
    """Was: both 'not-a-model' with no word of what they are."""
    from tests.realfiles import DATA

    (tmp_path / "hf_bert").mkdir()
    (tmp_path / "hf_bert" / "config.json").write_text(json.dumps({"model_type": "bert", "vocab_size": 30}))
    info = identify(tmp_path / "hf_bert")
    assert info.kind == "not-a-model" and "Hugging Face Transformers" in info.reason
    shutil.copy(DATA / "kerashub021" / "adapter.lora.h5", tmp_path / "adapter.lora.h5")
    info = identify(tmp_path / "adapter.lora.h5")
    assert info.kind == "not-a-model" and "LoRA adapter" in info.reason and "load_lora_weights" in info.reason
