"""A KerasHub preset and a LoRA adapter written by keras-hub 0.21.1 / Keras 3.10.0 (tests/data/kerashub021)."""

from __future__ import annotations

import json
import shutil

import keras
import numpy as np
import pytest

from helpers.identify import identify
from helpers.errors import NotAPresetError
from helpers.shipped_models import describe_preset, load_preset
from tests.realfiles import DATA

SOURCE = DATA / "kerashub021"


@pytest.fixture()
def preset(tmp_path):
    shutil.copytree(SOURCE / "bert_tiny", tmp_path / "bert_tiny")
    shutil.copy(SOURCE / "adapter.lora.h5", tmp_path / "adapter.lora.h5")
    return tmp_path


def manifest(name):
    entry = json.loads((SOURCE / "MANIFEST.json").read_text())[name]
    return {key: np.asarray(value) for key, value in entry["input"].items()}, np.asarray(entry["output"], "float32")


def answers(task, features):
    return keras.ops.convert_to_numpy(task(features))


def test_older_preset_described_and_named(preset):
    description = describe_preset(preset / "bert_tiny")
    assert (description.keras_version, description.keras_hub_version) == ("3.10.0", "0.21.1")
    assert description.task_class == "BertTextClassifier" and description.traps == []
    info = identify(preset / "bert_tiny")
    assert info.kind == "keras-hub-preset" and info.written_by == {"Keras": "3.10.0", "KerasHub": "0.21.1"}


def test_older_preset_loads_with_the_writers_outputs(preset):
    features, want = manifest("bert_tiny")
    task = load_preset(preset / "bert_tiny")
    assert np.allclose(answers(task, features), want, rtol=0, atol=1e-6)


def test_older_adapter_loads_onto_the_older_base(preset):
    features, want = manifest("adapter")
    task = load_preset(preset / "bert_tiny")
    task.backbone.load_lora_weights(str(preset / "adapter.lora.h5"))
    assert np.allclose(answers(task, features), want, rtol=0, atol=1e-6)
    assert not np.allclose(want, manifest("bert_tiny")[1], atol=1e-6)  # the adapter matters


def test_damaged_older_preset(preset):
    (preset / "bert_tiny" / "model.weights.h5").write_bytes(b"")
    with pytest.raises(NotAPresetError, match="model.weights.h5 is not a readable HDF5 file"):
        load_preset(preset / "bert_tiny")
    assert not (SOURCE / "bert_tiny" / "model.weights.h5").stat().st_size == 0
