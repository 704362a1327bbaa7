"""helpers.identify and ``python -m helpers``: every kind of file, on real files, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.__main__ import main
from helpers.errors import NotAModelFileError, VerificationError
from helpers.identify import KINDS, Identification, identify
from tests import realworld
from tests.realfiles import (copy_real, expected_output, folder_snapshot, manifest, model_input, real_file,
                             sources, truncated)

# The kind identify must name for each stored artifact, from the manifest's own kind.
STORED_KIND = {
    "legacy-h5-full": "legacy-h5-model",
    "legacy-h5-weights": "legacy-h5-weights",
    "keras1-h5-full": "legacy-h5-model",  # Keras 1.2.2 (tests/data/keras1-dl4j): the route is helpers.keras1
    "tf-checkpoint/keras2-save-weights": "checkpoint-keras2",
    "tf-checkpoint/keras2-object": "checkpoint-keras2",
    "tf-checkpoint/tf1-saver": "tf1-checkpoint",
    "tf-checkpoint-manager/keras2-object": "checkpoint-folder",
    "frozen-graphdef": "frozen-graph",
    "keras-zip/keras2": "keras2-archive",
    "keras-zip/keras2.13": "keras2-archive",
    "keras-zip/keras2.14": "keras2-archive",
    "tflite": "tflite",
    "onnx": "onnx",
    "weights-h5/keras2": "weights-h5",
    "savedmodel/hub-reusable": "savedmodel-hub",
    "savedmodel/keras2": "savedmodel-keras2",
    "savedmodel/tf2-of-keras2": "savedmodel-tf2",
    "savedmodel/tf2-module": "savedmodel-tf2",
    "savedmodel/tf1-builder": "savedmodel-tf1",
    "tf-checkpoint/savedmodel-variables": "checkpoint-keras2",
    "keras-hub-preset": "keras-hub-preset",
}
STORED = [(source, name) for source in sources() for name in manifest(source)
          if not manifest(source)[name]["kind"].startswith("not-a-model")]  # tests/test_pypi_files.py has those


def expected_kind(source: str, name: str) -> str:
    kind = manifest(source)[name]["kind"]
    if (source, name) == ("tf212", "functional_bn_keras"):
        return "keras2-hdf5-named-keras"  # Keras 2.12 wrote HDF5 under the .keras name
    if (source, name) == ("tf212", "functional_bn_v3_keras"):
        return "keras2-archive"
    return STORED_KIND.get(kind) or STORED_KIND[kind.split("/")[0]]


@pytest.mark.parametrize(("source", "name"), STORED, ids=[f"{s}-{n}" for s, n in STORED])
def test_every_stored_real_file_is_named_with_its_writer_and_a_loading_route(source, name):
    info = identify(real_file(source, name))
    assert info.kind == expected_kind(source, name), str(info)
    assert info.is_model and info.how_to_load.startswith(("path = ", "from helpers.inspection"))
    text = str(info)
    assert all(len(line) <= 100 for line in text.splitlines() if not line.startswith("    ")), text
    if info.kind.startswith(("legacy-h5", "keras2")):
        assert info.written_by["Keras"].startswith(manifest(source)[name]["written_by"].split("keras ")[1][:3])


LOADABLE = [(s, n) for s, n in STORED
            if manifest(s)[n]["kind"].startswith("legacy-h5-full") and manifest(s)[n]["output"] is not None
            and n not in ("custom_layer", "functional_in_sequential")] + [("tf212", "functional_bn_keras")]


@pytest.mark.parametrize(("source", "name"), LOADABLE, ids=[f"{s}-{n}" for s, n in LOADABLE])
def test_the_advised_code_loads_each_stored_model_with_the_old_softwares_outputs(source, name):
    model = identify(real_file(source, name)).load(trust=True)  # the course's own files: trusted
    got = model.predict(model_input(source, name), verbose=0)
    np.testing.assert_allclose(got, expected_output(source, name), atol=1e-5)


def test_the_advised_code_reads_the_savedmodels_tflite_and_frozen_graph_with_the_same_outputs():
    x = model_input("tf215", "savedmodel_tf")
    signatures = identify(real_file("tf215", "savedmodel_tf")).load(trust=True).signatures
    out = signatures["serving_default"](features=tf.constant(x))
    np.testing.assert_allclose(list(out.values())[0], expected_output("tf215", "savedmodel_tf"), atol=1e-5)
    frozen = identify(real_file("tf215", "frozen_graph")).load()
    np.testing.assert_allclose(frozen(tf.constant(model_input("tf215", "frozen_graph")))[0],
                               expected_output("tf215", "frozen_graph"), atol=1e-5)
    interpreter = identify(real_file("tf215", "functional_bn_tflite")).load()
    assert interpreter.get_input_details()[0]["shape"].tolist() == [1, 5]


def test_weights_only_files_point_at_a_twin_and_their_values_are_read():
    info = identify(real_file("tf215", "sequential_weights"))
    assert "architecture is not in the file" in " ".join(info.traps)
    assert sum(map(len, info.load().layers.values())) == info.holds["weights"] == 4


def test_a_functional_model_in_a_sequential_says_why_and_is_not_called_verified():
    info = identify(real_file("tf215", "functional_in_sequential"))
    assert any("nested in a Sequential" in trap and "model=twin" in trap for trap in info.traps), info.traps
    verification = info.verify()
    assert not verification.ok and verification.partial


def test_custom_and_cudnn_models_say_why_keras3_cannot_rebuild_them():
    custom = identify(real_file("tf215", "custom_layer"))
    assert custom.holds["custom objects"] == ["course_fixtures>ScaledDense"] and "custom classes" in custom.traps[-1]
    cudnn = identify(real_file("tf215", "cudnn_lstm"))
    assert "CuDNN" in cudnn.traps[-1] and cudnn.load().layers


def test_a_time_major_lstm_is_named_as_a_silent_trap_and_loaded_through_keras2(monkeypatch):
    info = identify(real_file("tf215", "time_major"))
    assert info.kind == "legacy-h5-model" and info.written_by == {"Keras": "2.15.0 (tensorflow)"}
    trap = " ".join(info.traps)
    assert "'tm_lstm' (LSTM)" in trap and "no time_major" in trap and "plain LSTM" in trap
    assert "answers wrong, without an error" in trap
    assert "TFSMLayer" in info.how_to_load and "call_endpoint=\"serve\"" in info.how_to_load
    x, expected = model_input("tf215", "time_major"), expected_output("tf215", "time_major")
    import helpers.identify.legacy_h5 as module  # several inputs (no one input shape): the served layer itself
    monkeypatch.setattr(module, "_input_shape", lambda config: None)
    layer = identify(real_file("tf215", "time_major")).load()
    assert isinstance(layer, keras.layers.TFSMLayer)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, atol=1e-5)


def test_lambda_and_training_config_traps():
    traps = " ".join(identify(real_file("tf215", "lambda")).traps)
    assert "bytecode" in traps and "safe_mode=False" in identify(real_file("tf215", "lambda")).how_to_load
    assert "compile=False" in " ".join(identify(real_file("tf215", "trained_mse")).traps)


def test_keras2_checkpoints_warn_of_silent_restores_and_optimizer_indexes():
    with_optimizer = identify(real_file("tf215", "ckpt_keras2_opt"))
    assert with_optimizer.holds["optimizer state"] is True
    assert any("one apart" in t for t in with_optimizer.traps)
    without = identify(real_file("tf215", "ckpt_keras2_noopt"))
    assert without.holds["optimizer state"] is False and not any("one apart" in t for t in without.traps)
    assert len(with_optimizer.load()) == with_optimizer.holds["variables"] + 1  # + the object graph


def test_the_manager_folder_names_its_latest_checkpoint(tmp_path):
    info = identify(real_file("tf215", "manager"))
    assert info.holds["latest"] == "ckpt-3" and info.holds["checkpoints"] == ["ckpt-1", "ckpt-2", "ckpt-3"]
    folder = copy_real("tf215", "manager", tmp_path)
    os.utime(folder / "ckpt-1.index")  # an older checkpoint touched last
    touched = identify(folder)
    assert touched.holds["latest"] == "ckpt-3" and any("not the newest file" in t for t in touched.traps)


def test_keras2_archives_and_hdf5_under_a_keras_name(tmp_path):
    named = identify(real_file("tf212", "functional_bn_keras"))
    assert named.written_by == {"Keras": "2.12.0 (tensorflow)"} and "File not found" in named.traps[0]
    old = identify(real_file("tf214", "functional_bn_keras"))
    assert old.kind == "keras2-archive" and old.holds["optimizer state"] is True
    assert len(old.load()) == 23  # 8 layer weights, 2 metric and 13 optimizer values


# --------------------------------------------------------------------------- files made here


def keras3_model() -> keras.Model:
    inputs = keras.Input((3,), name="features")
    outputs = keras.layers.Dense(2, name="out")(keras.layers.Dense(4, name="hidden")(inputs))
    return keras.Model(inputs, outputs, name="made_here")


def test_keras3_files_checkpoints_and_folders_made_today(tmp_path):
    model = keras3_model()
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    model.save(tmp_path / "m.keras")
    model.save_weights(tmp_path / "m.weights.h5")
    model.save_weights(tmp_path / "s.weights.json", max_shard_size=5e-8)
    prefix = tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(str(tmp_path / "k3" / "ckpt"))
    model.export(tmp_path / "exported", verbose=False)
    assert identify(tmp_path / "m.keras").kind == "keras3-archive"
    assert identify(tmp_path / "m.keras").written_by["Keras"] == keras.__version__
    assert identify(tmp_path / "m.keras").holds["optimizer state"] is True
    np.testing.assert_allclose(identify(tmp_path / "m.keras").load()(np.ones((1, 3))), model(np.ones((1, 3))))
    assert identify(tmp_path / "m.weights.h5").kind == "weights-h5"
    sharded = identify(tmp_path / "s.weights.json")
    assert sharded.kind == "sharded-weights" and len(sharded.holds["shards"]) > 1
    os.remove(tmp_path / sharded.holds["shards"][-1])
    assert "missing" in identify(tmp_path / "s.weights.json").traps[0]
    k3 = identify(prefix)
    assert k3.kind == "checkpoint-keras3" and k3.holds["optimizer state"] is True
    exported = identify(tmp_path / "exported")
    assert exported.kind == "savedmodel-export" and "serve" in exported.holds["signatures"]
    assert not any("TFSMLayer" in t for t in exported.traps)
    np.testing.assert_allclose(exported.load(trust=True)(np.ones((1, 3), np.float32)), model(np.ones((1, 3))), atol=1e-6)


def test_the_serve_trap_is_only_where_serve_is_missing(tmp_path):
    module = tf.Module()
    module.v = tf.Variable(2.0)
    module.f = tf.function(lambda x: x * module.v, input_signature=[tf.TensorSpec([None, 3])])
    tf.saved_model.save(module, str(tmp_path / "plain"), signatures=module.f)
    tf.saved_model.save(module, str(tmp_path / "named"), signatures={"serve": module.f})
    assert any("'serve' is not in this folder" in t for t in identify(tmp_path / "plain").traps)
    assert not any("'serve'" in t for t in identify(tmp_path / "named").traps)
    keras.layers.TFSMLayer(str(tmp_path / "named"))  # the default endpoint is there


def test_tf1_files_made_today(tmp_path):
    prefix = realworld.name_based(tmp_path / "tf1" / "model")
    info = identify(prefix)
    assert info.kind == "tf1-checkpoint" and info.holds["graph (.meta) beside it"] is True
    assert "restores NOTHING" in info.traps[0] and info.written_by["TensorFlow"] == tf.__version__
    assert identify(prefix + ".index").kind == "tf1-checkpoint"  # one of its files: the prefix is named
    meta = identify(prefix + ".meta")
    assert meta.kind == "meta-graph" and meta.holds["checkpoint beside it"] is True
    session = meta.load(trust=True)  # made here: runs the graph's restore op
    assert sorted(v.name for v in session.graph.get_collection("variables"))[0] == "dense/bias:0"
    v1 = realworld.v1_format(tmp_path / "v1" / "model.ckpt")
    assert identify(v1).kind == "tf1-checkpoint-v1"
    np.testing.assert_array_equal(identify(v1).load()["dense/kernel"], realworld.VALUES["dense/kernel"])
    module = identify(realworld.object_based(tmp_path / "tf2" / "ckpt"))
    assert module.kind == "checkpoint-module" and module.holds["optimizer state"] is False
    builder = identify(realworld.tf1_saved_model(tmp_path / "sm1"))
    assert builder.kind == "savedmodel-tf1"


def test_a_state_file_naming_another_machines_path(tmp_path):
    folder = realworld.moved_from_another_machine(tmp_path / "moved")
    info = identify(folder)
    assert info.kind == "checkpoint-folder" and info.holds["latest"] == "model-2"
    assert any("another machine's path" in t for t in info.traps)
    assert int(info.load()["global_step"]) == 2


def test_a_tf2_checkpoint_with_a_meta_beside_it_is_still_object_based(tmp_path):
    prefix = realworld.object_based(tmp_path / "ckpt")
    meta = Path(realworld.name_based(tmp_path / "tf1" / "model") + ".meta").read_bytes()
    Path(prefix + ".meta").write_bytes(meta)  # someone copied a TF1 graph beside it
    info = identify(prefix)
    assert info.kind == "checkpoint-module" and any("does not make it a TF1" in t for t in info.traps)


def test_onnx_is_read_without_onnx(tmp_path):
    info = identify(realworld.onnx_identity(tmp_path / "m.onnx"))
    assert info.kind == "onnx" and info.holds["inputs"] == ["x"] and info.written_by["ONNX IR"] == "8"
    renamed = tmp_path / "model.bin"
    renamed.write_bytes((tmp_path / "m.onnx").read_bytes())
    assert identify(renamed).kind == "onnx"


# --------------------------------------------------------------------------- not model files


def not_model_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "empty": tmp_path / "empty.h5",
        "garbage": tmp_path / "garbage.bin",
        "zip": tmp_path / "notes.keras",
        "plain hdf5": tmp_path / "data.h5",
        "missing": tmp_path / "nothing here",
    }
    files["empty"].write_bytes(b"")
    files["garbage"].write_bytes(bytes(range(256)) * 4)
    with zipfile.ZipFile(files["zip"], "w") as archive:
        archive.writestr("readme.txt", "hello")
    with h5py.File(files["plain hdf5"], "w") as h5:
        h5["x"] = np.arange(3)
    files["truncated h5"] = truncated(real_file("tf215", "sequential"), tmp_path / "cut.h5")
    files["truncated keras"] = truncated(real_file("tf215", "functional_bn_keras"), tmp_path / "cut.keras")
    files["truncated onnx"] = truncated(Path(realworld.onnx_identity(tmp_path / "o.onnx")), tmp_path / "c.onnx")
    files["truncated pb"] = truncated(real_file("tf215", "frozen_graph"), tmp_path / "cut.pb", 0.3)
    return files


REASONS = {"empty": "empty", "garbage": "not a format", "zip": "zip of something else",
           "plain hdf5": "plain HDF5", "missing": "no such file", "truncated h5": "truncated",
           "truncated keras": "truncated", "truncated onnx": "truncated", "truncated pb": "truncated"}


@pytest.mark.parametrize("case", sorted(REASONS))
def test_not_a_model_file_says_why(tmp_path, case):
    info = identify(not_model_files(tmp_path)[case])
    assert info.kind == "not-a-model" and REASONS[case] in info.reason, info.reason
    assert "why:" in str(info) and not info.how_to_load
    assert not info.verify().ok
    with pytest.raises(NotAModelFileError, match="is not a readable model file"):
        info.load()


def _flip_bits(source: Path, target: Path, count: int, seed: int) -> Path:
    """A copy of ``source`` with ``count`` bits flipped at places drawn from ``seed`` (reproducible)."""
    import random

    data = bytearray(source.read_bytes())
    draw = random.Random(seed)
    for _ in range(count):
        data[draw.randrange(len(data))] ^= 1 << draw.randrange(8)
    target.write_bytes(bytes(data))
    return target


def test_a_legacy_h5_whose_model_config_is_damaged_is_not_a_model_and_no_error(tmp_path):
    path = copy_real("tf215", "sequential", tmp_path)
    with h5py.File(path, "r+") as h5:
        h5.attrs["model_config"] = "{not json"
    info = identify(path)
    assert info.kind == "not-a-model" and info.reason.startswith("a legacy .h5 whose model_config is damaged (not JSON")
    with h5py.File(path, "r+") as h5:
        h5.attrs["model_config"] = "[1, 2]"
    assert "model_config is damaged" in identify(path).reason


def test_bit_flipped_hdf5_files_never_raise(tmp_path):
    # The reviewer's hostile files: 20 bits flipped in functional_bn.weights.h5 (seed 1: h5py's
    # "B-tree iteration failed"), and in sequential.h5 (seed 1: its model_config's JSON breaks).
    stored = Path(__file__).parent / "data" / "tf215" / "functional_bn.weights.h5"
    weights = _flip_bits(stored, tmp_path / "flip.weights.h5", 20, 1)
    info = identify(weights)
    assert info.kind == "not-a-model" and info.reason.startswith("a truncated or damaged HDF5 file (B-tree")
    model = _flip_bits(real_file("tf215", "sequential"), tmp_path / "flip.h5", 20, 1)
    assert "model_config is damaged" in identify(model).reason
    for seed in range(12):  # and more: whatever breaks, an answer comes back
        for source, suffix in ((real_file("tf215", "sequential"), ".h5"), (stored, ".weights.h5")):
            flipped = _flip_bits(source, tmp_path / f"f{seed}{suffix}", 1 + seed, seed + 100)
            assert isinstance(identify(flipped), Identification)


def test_a_damaged_meta_beside_a_checkpoint_is_a_trap_not_an_error(tmp_path):
    import shutil

    folder = shutil.copytree(Path(__file__).parent / "data" / "tf215-graph" / "graph", tmp_path / "graph")
    meta = folder / "model.meta"
    meta.write_bytes(meta.read_bytes()[: meta.stat().st_size // 2])  # was a raw DecodeError
    info = identify(folder / "model")
    assert info.kind == "tf1-checkpoint" and info.holds["variables"] == 23
    assert info.traps[0].startswith("the .meta beside it is damaged (Error parsing message")
    assert identify(meta).kind == "not-a-model"


def test_an_empty_path_is_not_a_model_and_a_wrong_type_raises():
    info = identify("")
    assert info.kind == "not-a-model" and info.reason == "the path is empty (no file or folder named)"
    with pytest.raises(TypeError, match="must be a str or os.PathLike"):
        identify(3)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder(tmp_path):
    folder = copy_real("tf215", "savedmodel_tf", tmp_path)
    os.chmod(folder, 0)
    try:
        assert "permission denied" in identify(folder).reason
    finally:
        os.chmod(folder, 0o755)


@pytest.mark.parametrize("folder", ["run[1]", "with space", "ünïcödé 模型"])
def test_odd_characters_in_paths(tmp_path, folder):
    target = tmp_path / folder
    h5 = copy_real("tf215", "sequential", target)
    ckpt = copy_real("tf215", "ckpt_keras2_opt", target)
    sm = copy_real("tf215", "savedmodel_tf", target)
    assert identify(h5).kind == "legacy-h5-model" and identify(str(h5).encode()).kind == "legacy-h5-model"
    assert identify(ckpt).kind == "checkpoint-keras2" and len(identify(ckpt).load()) == 23
    assert identify(sm).kind == "savedmodel-tf2"
    np.testing.assert_allclose(identify(h5).load().predict(model_input("tf215", "sequential"), verbose=0),
                               expected_output("tf215", "sequential"), atol=1e-5)


def test_identify_never_writes_near_the_file(tmp_path):
    for source, name in [("tf215", "manager"), ("tf215", "lambda"), ("tf215", "savedmodel_keras2"),
                         ("tf215", "functional_bn_keras"), ("tf212", "functional_bn_keras")]:
        copy_real(source, name, tmp_path / source)
    before = folder_snapshot(tmp_path)
    for path in sorted(tmp_path.rglob("*")):
        str(identify(path))
    identify(tmp_path / "tf215" / "lambda.h5").load(trust=True)  # the course's own file: trusted
    assert folder_snapshot(tmp_path) == before


def test_a_path_of_the_wrong_type_is_a_type_error():
    with pytest.raises(TypeError):
        identify(3)


def test_every_kind_has_a_title_and_the_json_keys_are_stable():
    info = identify(real_file("tf215", "tf_module"))
    assert set(info.as_dict()) == {"path", "kind", "title", "is_model", "reason", "written_by", "holds",
                                   "traps", "how_to_load", "runs_code", "partial"}
    assert isinstance(info, Identification) and info.title == KINDS["savedmodel-tf2"]
    json.dumps(info.as_dict())


# --------------------------------------------------------------------------- verify and the command

VERIFIED = [("tf215", "sequential"), ("tf215", "manager"), ("tf215", "savedmodel_keras2"),
            ("tf215", "functional_bn_keras"), ("tf215", "frozen_graph"), ("tf215", "functional_bn_tflite"),
            ("tf215", "tf1_builder"), ("pypi-chars2vec", "eng_50_weights"), ("tf215", "time_major")]


@pytest.mark.parametrize(("source", "name"), VERIFIED, ids=[f"{s}-{n}" for s, n in VERIFIED])
def test_verify_runs_the_advice_in_a_fresh_python(source, name):
    info = identify(real_file(source, name))
    verification = info.verify(trust=bool(info.runs_code))  # the course's own files: trusted
    assert verification.ok, verification.report
    assert str(verification).startswith("verified: ") and verification.require() is verification


def test_verify_of_made_files_and_a_missing_runtime(tmp_path, monkeypatch):
    model = keras3_model()
    model.export(tmp_path / "exported", verbose=False)
    assert identify(tmp_path / "exported").verify().untrusted  # a SavedModel's functions would run
    assert identify(tmp_path / "exported").verify(trust=True).ok
    onnx = identify(realworld.onnx_identity(tmp_path / "m.onnx"))
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "onnxruntime.py").write_text("raise ModuleNotFoundError(\"No module named 'onnxruntime'\")\n")
    monkeypatch.setenv("PYTHONPATH", str(blocker))
    verification = onnx.verify()
    assert not verification.ok and verification.missing == "onnxruntime"
    assert "pip install onnxruntime" in verification.report
    with pytest.raises(VerificationError, match="pip install onnxruntime"):
        verification.require(onnx.path)


def test_the_command_exit_codes_and_json(tmp_path, capsys):
    assert main([str(real_file("tf215", "sequential"))]) == 0
    assert "legacy Keras HDF5 whole model" in capsys.readouterr().out
    assert main([str(tmp_path / "missing"), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "not-a-model" and data["reason"] == "no such file or folder"
    onnx = realworld.onnx_identity(tmp_path / "m.onnx")
    code = main([onnx, "--verify", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == (0 if data["verified"] else 2) and "verify_report" in data


def test_python_dash_m_helpers_runs_as_a_command(tmp_path):
    empty = tmp_path / "empty.keras"
    empty.write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "helpers", str(empty)], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent, timeout=120)
    assert done.returncode == 1 and "the file is empty" in done.stdout


def _proto_field(number: int, value) -> bytes:
    def varint(n: int) -> bytes:
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def test_onnx_header_skips_the_weights(tmp_path):
    """An ONNX file with a 64 MiB initializer: identify reads its header, not the weights."""
    f = _proto_field
    tensor_type = f(1, f(1, 1) + f(2, f(1, f(1, 3))))
    value = lambda name: f(1, name.encode()) + f(2, tensor_type)  # noqa: E731
    weights = f(1, 3) + f(2, 1) + f(8, b"w") + f(9, bytes(64 * 2**20))  # dims, FLOAT, name, raw_data
    graph = (f(1, f(1, b"x") + f(1, b"w") + f(2, b"y") + f(4, b"Add")) + f(5, weights)
             + f(11, value("x")) + f(11, value("w")) + f(12, value("y")))
    path = tmp_path / "big.onnx"
    path.write_bytes(f(1, 8) + f(2, b"t") + f(7, graph) + f(8, f(1, b"") + f(2, 13)))
    with open("/proc/self/io") as io:
        start = int(next(line for line in io if line.startswith("rchar")).split()[1])
    info = identify(path)
    with open("/proc/self/io") as io:
        read = int(next(line for line in io if line.startswith("rchar")).split()[1]) - start
    assert info.kind == "onnx" and info.holds["inputs"] == ["x"] and info.holds["nodes"] == 1
    assert read < 2**20, read
    renamed = tmp_path / "big.bin"
    path.rename(renamed)
    assert identify(renamed).kind == "onnx"


def test_meta_device_trap_only_for_devices_this_machine_may_lack(tmp_path):
    def meta(name: str, device: str) -> str:
        with tf.Graph().as_default(), tf.device(device):
            tf.compat.v1.get_variable("v", initializer=1.0)
            tf.compat.v1.train.export_meta_graph(str(tmp_path / name))
        return str(tmp_path / name)

    plain = identify(meta("cpu.meta", "/device:CPU:0"))
    local = identify(meta("local.meta", "/job:localhost/replica:0/task:0/device:CPU:0"))
    assert not any("pins ops" in trap for trap in plain.traps + local.traps), plain.traps + local.traps
    for name, device in (("gpu.meta", "/device:GPU:0"), ("worker.meta", "/job:worker/task:1/device:CPU:0")):
        assert any("pins ops" in trap and device in trap for trap in identify(meta(name, device)).traps)
