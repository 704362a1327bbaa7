"""helpers.identify names Orbax checkpoint folders that Keras 3.15's OrbaxCheckpoint wrote (chapter 16)."""

from __future__ import annotations

import json
import os

import keras
import numpy as np
import pytest

from helpers.identify import identify
from helpers.identify.orbax_folders import looks_like_orbax, orbax_steps


def _train(folder: str, epochs: int = 2, weights_only: bool = False) -> keras.Model:
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="hidden"),
                              keras.layers.BatchNormalization(name="norm"), keras.layers.Dense(1, name="out")],
                             name="orbax_net")
    model.compile(keras.optimizers.Adam(0.01), "mse")
    data = np.random.default_rng(3).normal(size=(16, 3)).astype("float32")
    callback = keras.callbacks.OrbaxCheckpoint(folder, max_to_keep=2, save_weights_only=weights_only)
    model.fit(data, data[:, :1], epochs=epochs, batch_size=8, verbose=0, callbacks=[callback])
    return model


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("orbax")
    full, weights = str(root / "full"), str(root / "weights")
    model = _train(full, epochs=3)
    _train(weights, epochs=1, weights_only=True)
    return {"full": full, "weights": weights, "model": model}


def test_a_keras_orbax_folder(written):
    info = identify(written["full"])
    assert info.kind == "orbax-checkpoint"
    assert info.written_by["writer"] == "Keras OrbaxCheckpoint (model and values)"
    assert info.written_by["backend"].startswith("not JAX")  # written from TensorFlow here
    assert info.holds["steps"] == [1, 2] and info.holds["latest"] == "2"
    assert info.holds["values"]["trainable_variables"] == 6
    assert info.holds["values"]["non_trainable_variables"] == 2
    assert info.holds["values"]["optimizer_variables"] == 14
    assert info.holds["model configuration"] is True
    assert any("second run numbers from 0 again" in trap for trap in info.traps)
    assert "keras.saving.load_model(path)" in info.how_to_load
    assert "Orbax checkpoint folder" in str(info)


def test_the_advice_loads_the_folder(written):
    verification = identify(written["full"]).verify()
    assert verification.ok, verification
    assert "weights" in verification.report


def test_a_step_folder_is_named_for_its_folder(written):
    info = identify(os.path.join(written["full"], "2"))
    assert info.kind == "orbax-checkpoint"
    assert any("one step of an Orbax folder" in trap for trap in info.traps)
    assert info.how_to_load.startswith(f"path = {written['full']!r}")


def test_values_only(written):
    info = identify(written["weights"])
    assert info.kind == "orbax-checkpoint"
    assert info.holds["model configuration"] is False
    assert "values only" in info.written_by["writer"]
    assert "optimizer_variables" not in info.holds["values"]
    assert info.blocked and "load_weights(path)" in info.how_to_load


def test_unfinished_saves_only(tmp_path):
    (tmp_path / "0.orbax-checkpoint-tmp").mkdir()
    assert looks_like_orbax(str(tmp_path))
    info = identify(str(tmp_path))
    assert not info.is_model
    assert "no complete step" in info.reason and "relative path" in info.reason


def test_steps_are_numbers_and_complete_only(tmp_path):
    for name, complete in [("9", True), ("10", True), ("11", False), ("12.orbax-checkpoint-tmp-3", False)]:
        (tmp_path / name / "pytree").mkdir(parents=True)
        (tmp_path / name / "pytree" / "manifest.ocdbt").write_bytes(b"x" * 64)
        if complete:
            (tmp_path / name / "_CHECKPOINT_METADATA").write_text(json.dumps({"item_handlers": {}}))
    assert orbax_steps(str(tmp_path)) == ([9, 10], ["12.orbax-checkpoint-tmp-3"])
    info = identify(str(tmp_path))
    assert info.holds["latest"] == "10" and info.written_by["backend"] == "unknown"
    assert any("unfinished saves" in trap for trap in info.traps)


def test_other_folders_are_not_taken(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "3").mkdir()  # a number, but no _CHECKPOINT_METADATA
    assert not looks_like_orbax(str(tmp_path))
    assert identify(str(tmp_path)).kind != "orbax-checkpoint"


def _copy(written, tmp_path, name):
    import shutil

    target = tmp_path / name
    shutil.copytree(written["full"], target)
    return target


def test_a_missing_model_config_is_not_believed(written, tmp_path):
    """Review F7: the metadata's item_handlers name model_config; the folder no longer holds it."""
    import shutil

    folder = _copy(written, tmp_path, "nomodelcfg")
    shutil.rmtree(folder / "2" / "model_config")
    info = identify(str(folder))
    assert info.holds["model configuration"] is False and "load_weights(path)" in info.how_to_load


@pytest.mark.parametrize("damage, reason", [("pytree", "no pytree/ folder"), ("metadata", "not valid JSON")])
def test_a_damaged_step_is_not_a_model(written, tmp_path, damage, reason):
    import shutil

    folder = _copy(written, tmp_path, damage)
    if damage == "pytree":
        shutil.rmtree(folder / "2" / "pytree")
    else:
        (folder / "2" / "_CHECKPOINT_METADATA").write_text("{not json")
    info = identify(str(folder))
    assert not info.is_model and reason in info.reason and "damaged" in info.reason


def test_a_relative_step_folder_keeps_the_path_as_given(written, tmp_path, monkeypatch):
    folder = _copy(written, tmp_path, "relative")
    monkeypatch.chdir(tmp_path)
    info = identify(os.path.join("relative", "2"))
    assert info.how_to_load.startswith("path = 'relative'")
    assert str(tmp_path) not in info.how_to_load
    assert any("not the values themselves" in trap for trap in info.traps)
