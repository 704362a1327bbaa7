"""helpers.identify names Orbax checkpoint folders that Keras 3.15's OrbaxCheckpoint wrote (chapter 16)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from helpers.identify import identify
from helpers.identify.orbax_folders import crc32c, looks_like_orbax, orbax_steps, step_damage


def _train(folder: str, epochs: int = 2, weights_only: bool = False, sequential: bool = False) -> keras.Model:
    keras.utils.set_random_seed(3)
    layers = [keras.layers.Dense(4, name="hidden"), keras.layers.BatchNormalization(name="norm"),
              keras.layers.Dense(1, name="out")]
    if sequential:  # load_model misses a Sequential model's weights in a new process (see the test below)
        model = keras.Sequential([keras.Input((3,)), *layers], name="orbax_net")
    else:
        inputs = outputs = keras.Input((3,))
        for layer in layers:
            outputs = layer(outputs)
        model = keras.Model(inputs, outputs, name="orbax_net")
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


def _ocdbt(magic: bytes, size: int) -> bytes:
    """A file shaped as an OCDBT file: magic, its length (little-endian), bytes, CRC-32C (little-endian)."""
    body = magic + size.to_bytes(8, "little") + b"\x00\x01" + bytes(size - 18)
    return body + crc32c(body).to_bytes(4, "little")


def test_steps_are_numbers_and_complete_only(tmp_path):
    for name, complete in [("9", True), ("10", True), ("11", False), ("12.orbax-checkpoint-tmp-3", False)]:
        (tmp_path / name / "pytree").mkdir(parents=True)
        (tmp_path / name / "pytree" / "manifest.ocdbt").write_bytes(_ocdbt(b"\x0c\xdb\x3a\x2a", 64))
        (tmp_path / name / "pytree" / "d").mkdir()
        (tmp_path / name / "pytree" / "d" / "0a").write_bytes(_ocdbt(b"\x0c\xdb\x20\xde", 80))
        (tmp_path / name / "pytree" / "_METADATA").write_text(json.dumps({"tree_metadata": {"('a',)": {}}}))
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
    assert any("zstd frames, not decoded" in trap for trap in info.traps)


def _data_files(step):
    return sorted(path for path in step.rglob("*") if path.is_file() and path.parent.name == "d")


def _cut(path, keep):
    path.write_bytes(path.read_bytes()[:keep])


def _flip(path, offset):
    data = path.read_bytes()
    path.write_bytes(data[:offset] + bytes([data[offset] ^ 1]) + data[offset + 1:])


DAMAGE = {  # what is done to the latest step (2) of a copy, and the words the reason must hold
    "cut data file": (lambda step: _cut(_data_files(step)[0], 600), "is cut: its header declares"),
    "emptied data files": (lambda step: [_cut(path, 0) for path in _data_files(step)], "is empty (0 bytes)"),
    "cut manifest": (lambda step: _cut(step / "pytree" / "manifest.ocdbt", 50), "pytree/manifest.ocdbt is cut"),
    "changed manifest byte": (lambda step: _flip(step / "pytree" / "manifest.ocdbt", 40),
                              "pytree/manifest.ocdbt fails its CRC-32C"),
    "cut pytree metadata": (lambda step: _cut(step / "pytree" / "_METADATA", 3000),
                            "pytree/_METADATA is not valid JSON"),
    "empty pytree metadata": (lambda step: _cut(step / "pytree" / "_METADATA", 0), "pytree/_METADATA is empty"),
    "cut model configuration": (lambda step: _cut(step / "model_config" / "_strings.json", 2000),
                                "model_config/_strings.json is not valid JSON"),
    "data files gone": (lambda step: [path.unlink() for path in _data_files(step)], "has no data files beside it"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_cut_or_emptied_file_names_the_step_damaged(written, tmp_path, damage):
    """Was: every one of these was named a healthy Orbax folder (Keras then failed with NoEntryError
    'Failed to load checkpointable: pytree due to incompatible handler', naming no file)."""
    folder = _copy(written, tmp_path, "damaged")
    assert step_damage(str(folder / "2")) is None and identify(str(folder)).is_model
    change, words = DAMAGE[damage]
    change(folder / "2")
    info = identify(str(folder))
    assert not info.is_model and info.kind == "not-a-model"
    assert "step 2 is damaged" in info.reason and words in info.reason, info.reason
    assert str(tmp_path) not in info.reason and "load an earlier step or save again" in info.reason
    assert identify(str(folder / "1")).is_model  # the step before is whole


def test_damage_is_found_without_tensorflow_and_without_reading_the_values(written, tmp_path):
    import subprocess
    import sys

    folder = _copy(written, tmp_path, "quiet")
    _cut(_data_files(folder / "2")[0], 0)
    big = folder / "2" / "pytree" / "d" / "00big"  # checked first: before the emptied one
    with open(big, "wb") as file:  # a large data file (sparse: 3 GB, nothing written) is read by its header
        file.write(b"\x0c\xdb\x20\xde" + (3 << 30).to_bytes(8, "little"))
        file.truncate(3 << 30)
    code = ("import sys, time; from helpers.identify import identify; start = time.perf_counter(); "
            f"info = identify({str(folder)!r}); print(info.reason); print(time.perf_counter() - start < 5); "
            "print(sorted(m for m in ('tensorflow', 'jax', 'orbax', 'tensorstore') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}).stdout.splitlines()
    assert "is empty (0 bytes)" in out[0] and out[1:] == ["True", "[]"], out


def test_check_across_backends_names_an_orbax_folder_and_its_damage(written, tmp_path):
    """Was: 'a folder, not a .keras file' for any folder, a damaged Orbax folder included."""
    from helpers.backends import check_across_backends
    from helpers.errors import NotAKerasFileError

    batch = np.zeros((2, 3), "float32")
    with pytest.raises(NotAKerasFileError, match=r"an Orbax checkpoint folder.*load_model\(folder\), save it as"):
        check_across_backends(written["full"], batch)
    folder = _copy(written, tmp_path, "damaged")
    _cut(_data_files(folder / "2")[0], 0)
    with pytest.raises(NotAKerasFileError, match=r"step 2 is damaged: pytree/d/\w+ is empty.*earlier step"):
        check_across_backends(folder, batch)


def test_a_folder_jax_wrote_is_whole_until_a_file_is_cut(tmp_path):
    """Under JAX, Orbax 0.12.8 also writes pytree/_sharding and pytree/array_metadatas/process_0 (JSON)."""
    import subprocess
    import sys
    import textwrap

    folder = tmp_path / "jax"
    code = textwrap.dedent(f"""
        import keras, numpy as np
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        model.compile("adam", "mse")
        callback = keras.callbacks.OrbaxCheckpoint({str(folder)!r})
        model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0, callbacks=[callback])
        """)
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": os.getcwd()})
    info = identify(str(folder))
    assert info.is_model and info.written_by["backend"].startswith("JAX"), info
    assert (folder / "0" / "pytree" / "_sharding").is_file()
    _cut(folder / "0" / "pytree" / "array_metadatas" / "process_0", 10)
    assert "pytree/array_metadatas/process_0 is not valid JSON" in identify(str(folder)).reason


BIG_MODEL = """
import keras, numpy as np
keras.utils.set_random_seed(3)
inputs = keras.Input((128,))
model = keras.Model(inputs, keras.layers.Dense(1)(keras.layers.Dense(128, name="big")(inputs)))
model.compile(keras.optimizers.Adam(0.01), "mse")
data = np.random.default_rng(3).normal(size=(16, 128)).astype("float32")
model.fit(data, data[:, :1], epochs=2, batch_size=8, verbose=0,
          callbacks=[keras.callbacks.OrbaxCheckpoint(FOLDER, max_to_keep=2)])
"""


def _zstd_value_files(folder):
    return [path for path in folder.rglob("*") if path.is_file() and path.parent.name == "d"
            and path.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"]


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_healthy_folder_with_a_64_kb_array_is_whole_and_loads(tmp_path, backend):
    """Review F1: a kernel of 128 x 128 float32 (64 KB) is written as a zstd frame (28 b5 2f fd) in d/,
    not an OCDBT file; it was named 'damaged or replaced'. Written in a fresh process under each backend."""
    import subprocess
    import sys

    folder = tmp_path / backend
    subprocess.run([sys.executable, "-c", f"FOLDER = {str(folder)!r}\n" + BIG_MODEL], check=True,
                   capture_output=True, timeout=300,
                   env={**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": os.getcwd()})
    assert _zstd_value_files(folder / "1"), "no zstd value file: the test no longer covers the case"
    assert step_damage(str(folder / "1")) is None
    info = identify(str(folder))
    assert info.is_model and info.kind == "orbax-checkpoint", info.reason
    verification = info.verify()
    assert verification.ok, verification
    _cut(_zstd_value_files(folder / "1")[0], 0)  # an emptied value file is still named
    assert "is empty (0 bytes)" in identify(str(folder)).reason


def _sparse(path, size, head):
    with open(path, "wb") as file:
        file.write(head)
        file.truncate(size)


F3_DAMAGE = {  # Review F3: each raised a raw error (MemoryError, RecursionError, OSError naming a path)
    "huge step metadata": (lambda step: _sparse(step / "_CHECKPOINT_METADATA", 20 << 30, b"{"),
                           "_CHECKPOINT_METADATA is 21474836480 bytes"),
    "huge pytree metadata": (lambda step: _sparse(step / "pytree" / "_METADATA", 20 << 30, b'{"tree_metadata": {'),
                             "pytree/_METADATA is 21474836480 bytes"),
    "deep pytree metadata": (lambda step: (step / "pytree" / "_METADATA").write_text("[" * 200000 + "]" * 200000),
                             "pytree/_METADATA is nested too deeply"),
    "deep step metadata": (lambda step: (step / "_CHECKPOINT_METADATA").write_text("[" * 200000 + "]" * 200000),
                           "_CHECKPOINT_METADATA is nested too deeply"),
    "dangling data file": (lambda step: _dangle(_data_files(step)[0]), "cannot be read (No such file or directory)"),
    "looping metadata": (lambda step: _loop(step / "pytree" / "_METADATA"),
                         "pytree/_METADATA cannot be read (Too many levels of symbolic links)"),
}


def _dangle(path):
    path.unlink()
    path.symlink_to(path.parent / "gone")


def _loop(path):
    path.unlink()
    path.symlink_to(path)


@pytest.mark.parametrize("damage", sorted(F3_DAMAGE))
def test_huge_deep_or_unreadable_files_are_named_without_a_raw_error(written, tmp_path, damage):
    """Run under a 2 GB address-space limit: nothing is read whole before its size is known."""
    import subprocess
    import sys

    folder = _copy(written, tmp_path, "f3")
    change, words = F3_DAMAGE[damage]
    change(folder / "2")
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from helpers.identify import identify; "
            f"info = identify({str(folder)!r}); print(info.is_model); print(info.reason)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    out = run.stdout.splitlines()
    assert out[:1] == ["False"], (run.stdout, run.stderr[-800:])
    assert "step 2 is damaged" in out[1] and words in out[1], out[1]
    assert str(tmp_path) not in out[1]


@pytest.mark.parametrize("tree", ['[]', '{"tree_metadata": [1]}', '{"tree_metadata": {"(\'a\',)": [1]}}'])
def test_metadata_of_the_wrong_shape_raises_nothing_raw(written, tmp_path, tree):
    """Was: AttributeError ('list' object has no attribute 'get') from a _METADATA of the wrong shape."""
    folder = _copy(written, tmp_path, "shape")
    (folder / "2" / "pytree" / "_METADATA").write_text(tree)
    info = identify(str(folder))
    assert info.kind in ("orbax-checkpoint", "not-a-model")


def _replace_with_folder(path):
    path.unlink()
    path.mkdir()


F2_DAMAGE = {  # Review F2: each of these was named a healthy Orbax folder
    "pytree metadata gone": (lambda step: (step / "pytree" / "_METADATA").unlink(), "pytree/_METADATA is missing"),
    "no values listed": (lambda step: (step / "pytree" / "_METADATA").write_text('{"tree_metadata": {}}'),
                         "pytree/_METADATA lists no values"),
    "manifest gone": (lambda step: (step / "pytree" / "manifest.ocdbt").unlink(),
                      "pytree/d/ has no manifest.ocdbt beside it"),
    "model strings gone": (lambda step: (step / "model_config" / "_strings.json").unlink(),
                           "model_config/_strings.json is missing"),
    "model strings a list": (lambda step: (step / "model_config" / "_strings.json").write_text("[1]"),
                             "model_config/_strings.json is not a JSON object"),
    "model metadata gone": (lambda step: (step / "model_config" / "_METADATA").unlink(),
                            "model_config/_METADATA is missing"),
    "metadata a folder": (lambda step: _replace_with_folder(step / "pytree" / "_METADATA"),
                          "pytree/_METADATA is a folder, not a file"),
    "manifest a folder": (lambda step: _replace_with_folder(step / "pytree" / "manifest.ocdbt"),
                          "pytree/manifest.ocdbt is a folder, not a file"),
    "data file a folder": (lambda step: _replace_with_folder(_data_files(step)[0]), "is a folder, not a file"),
    "inner manifest gone": (lambda step: (step / "pytree" / "ocdbt.process_0" / "manifest.ocdbt").unlink(),
                            "pytree/ocdbt.process_0/d/ has no manifest.ocdbt beside it"),
}


@pytest.mark.parametrize("damage", sorted(F2_DAMAGE))
def test_a_missing_or_hollow_metadata_file_names_the_step_damaged(written, tmp_path, damage):
    folder = _copy(written, tmp_path, "f2")
    change, words = F2_DAMAGE[damage]
    change(folder / "2")
    info = identify(str(folder))
    assert not info.is_model and "step 2 is damaged" in info.reason and words in info.reason, info.reason
    assert identify(str(folder / "1")).is_model


_LOAD_IN_A_NEW_PROCESS = """
import sys, numpy as np, keras
loaded = keras.saving.load_model(sys.argv[1])
trained = np.load(sys.argv[2])
print(all(np.allclose(w, trained[f"arr_{i}"]) for i, w in enumerate(loaded.weights)))
"""


@pytest.mark.parametrize("sequential", [True, False], ids=["sequential", "functional"])
def test_a_sequential_model_is_loaded_by_building_it(tmp_path, sequential):
    """Keras 3.15.1: load_model(orbax folder) in a new process restores a functional model's weights,
    and none of a Sequential model's, without an error; identify says so and advises load_weights."""
    folder = str(tmp_path / "run")
    model = _train(folder, epochs=1, sequential=sequential)
    np.savez(tmp_path / "trained.npz", *[np.asarray(w) for w in model.weights])
    result = subprocess.run([sys.executable, "-c", _LOAD_IN_A_NEW_PROCESS, folder, str(tmp_path / "trained.npz")],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == str(not sequential)  # the fact the trap states
    info = identify(folder)
    assert any("Sequential" in trap for trap in info.traps) == sequential
    assert ("model.load_weights(path)" in info.how_to_load) == sequential
    assert ("name='orbax_net'" in info.how_to_load) == sequential  # another name silently loads nothing
    assert ("keras.saving.load_model(path)" in info.how_to_load) == (not sequential)
