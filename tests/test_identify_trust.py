"""identify never runs code a file carries without --trust; zip bombs; Keras 3 .h5; honest verification.

Every route by which loading a model file runs code it carries (chapter 15 lists them) is
tried with a file that writes a marker file when its code runs: without trust the marker
never appears, and the command says it did not verify (exit code 3).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.__main__ import NOT_TRUSTED, NOT_VERIFIED, main
from helpers.errors import ArchiveTooLargeError, NotAKerasFileError, VerificationError
from helpers.identify import identify
from helpers.identify.answer import last_error
from helpers.keras_files import describe_keras_file
from helpers.saved_models import describe_saved_model
from tests.realfiles import copy_real, expected_output, model_input, real_file

ROOT = Path(__file__).resolve().parent.parent


def lambda_model(marker: Path) -> keras.Model:
    """A model whose Lambda's bytecode writes ``marker`` when it runs."""
    code = eval(f"lambda x: (__import__('builtins').open({str(marker)!r}, 'w').write('ran'), x)[1]")
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Lambda(code, output_shape=(3,))(inputs))


class _WritesOnInit(tf.saved_model.experimental.TrackableResource):
    def __init__(self, marker: str) -> None:
        self._marker = marker
        super().__init__()

    def _create_resource(self):
        return tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name="")

    def _initialize(self):
        tf.io.write_file(self._marker, "ran")  # stored in the SavedModel as a graph function


def marker_saved_model(folder: Path, marker: Path, export_like: bool = False) -> None:
    module = tf.Module()
    module.resource = _WritesOnInit(str(marker))
    module.v = tf.Variable(2.0)
    function = tf.function(lambda x: x * module.v, input_signature=[tf.TensorSpec([None], tf.float32)])
    if export_like:  # the layout identify names a model.export folder (TFSMLayer's route)
        module._misc_assets = []
    tf.saved_model.save(module, str(folder), signatures={"serve" if export_like else "serving_default":
                                                          function})
    marker.unlink(missing_ok=True)  # saving may have run the initializer


def test_a_keras_lambda_is_not_run_without_trust_and_runs_with_it(tmp_path, capsys):
    marker = tmp_path / "ran.txt"
    lambda_model(marker).save(tmp_path / "lam.keras")
    marker.unlink(missing_ok=True)
    info = identify(tmp_path / "lam.keras")
    assert info.runs_code and "safe_mode=False)" not in info.how_to_load
    assert "load_model(path)" in info.how_to_load and "only for a file you trust" in info.how_to_load
    verification = info.verify()
    assert not verification.ok and verification.untrusted and str(verification).startswith("not verified")
    assert main([str(tmp_path / "lam.keras"), "--verify"]) == NOT_TRUSTED
    assert "nothing was run" in capsys.readouterr().out
    assert not marker.exists()
    with pytest.raises(ValueError, match="safe_mode"):  # the printed code is safe by default
        info.load()
    assert not marker.exists()
    assert info.verify(trust=True).ok
    info.load(trust=True)(np.ones((1, 3), np.float32))  # trusted: the file's bytecode is live
    assert marker.exists()


def test_a_keras3_h5_lambda_is_not_run_without_trust(tmp_path):
    marker = tmp_path / "ran.txt"
    lambda_model(marker).save(tmp_path / "lam.h5")
    marker.unlink(missing_ok=True)
    info = identify(tmp_path / "lam.h5")
    assert info.runs_code and info.verify().untrusted
    with pytest.raises(ValueError, match="safe_mode"):
        info.load()
    assert not marker.exists()
    assert info.verify(trust=True).ok
    info.load(trust=True)(np.ones((1, 3), np.float32))
    assert marker.exists()


def hostile_keras2_h5(tmp_path: Path, marker: Path) -> Path:
    """TF 2.15's real lambda.h5 with its Lambda's bytecode swapped for code that writes ``marker``.

    Keras 2 stores a lambda as base64 of its marshalled code object: the edit is what a stranger's
    file can carry. The test calls the swapped function itself to prove the file is live.
    """
    import base64
    import h5py
    import marshal
    import types

    code = compile(f"lambda t: (open({str(marker)!r}, 'w').close(), t)[1]", "<file>", "eval").co_consts[0]
    path = copy_real("tf215", "lambda", tmp_path)
    with h5py.File(path, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        (layer,) = [layer for layer in config["config"]["layers"] if layer["class_name"] == "Lambda"]
        layer["config"]["function"][0] = base64.encodebytes(marshal.dumps(code)).decode("ascii")
        file.attrs["model_config"] = json.dumps(config)
    stored = marshal.loads(base64.decodebytes(layer["config"]["function"][0].encode("ascii")))
    function = types.FunctionType(stored, {"__builtins__": __builtins__})
    assert function(1) == 1 and marker.exists(), "the swapped bytecode writes the marker when run"
    marker.unlink()
    return Path(path)


def test_a_keras2_h5_lambda_is_not_run_without_trust(tmp_path, capsys):
    marker = tmp_path / "ran.txt"
    path = hostile_keras2_h5(tmp_path, marker)
    info = identify(path)
    assert info.runs_code and "safe_mode=False)" not in info.how_to_load
    assert info.verify().untrusted
    assert main([str(path), "--verify"]) == NOT_TRUSTED
    assert "nothing was run" in capsys.readouterr().out
    with pytest.raises(Exception):  # the printed, safe code refuses the bytecode
        info.load()
    assert not marker.exists()


def test_a_keras2_h5_lambda_is_flagged_and_its_printed_code_is_safe():
    info = identify(real_file("tf215", "lambda"))
    assert info.runs_code and "safe_mode=False)" not in info.how_to_load
    assert "safe_mode=False" in info.trusted_code and info.verify().untrusted


@pytest.mark.parametrize("export_like", [False, True], ids=["tf.saved_model.load", "TFSMLayer"])
def test_a_savedmodels_stored_functions_are_not_run_without_trust(tmp_path, export_like):
    marker = tmp_path / "ran.txt"
    marker_saved_model(tmp_path / "sm", marker, export_like)
    info = identify(tmp_path / "sm")
    assert info.kind == ("savedmodel-export" if export_like else "savedmodel-tf2")
    assert ("TFSMLayer" in info.how_to_load) == export_like
    verification = info.verify()
    assert verification.untrusted and "SavedModel" in verification.report
    assert main([str(tmp_path / "sm"), "--verify", "--json"]) == NOT_TRUSTED
    assert not marker.exists()
    assert info.verify(trust=True).ok and marker.exists()  # loading did run the folder's function


@pytest.mark.parametrize("export_like", [False, True], ids=["tf.saved_model.load", "TFSMLayer"])
def test_load_refuses_a_savedmodel_without_trust(tmp_path, export_like):
    marker = tmp_path / "ran.txt"
    marker_saved_model(tmp_path / "sm", marker, export_like)
    info = identify(tmp_path / "sm")
    with pytest.raises(VerificationError, match="nothing was run.*SavedModel"):
        info.load()
    assert not marker.exists()
    info.load(trust=True)
    assert marker.exists()


def marker_meta_graphs(folder: Path, marker: Path) -> tuple[Path, Path]:
    """Two ``.meta`` graphs whose ops write ``marker``: in a variable's initializer (no checkpoint
    beside it), and in the group a Saver's ``restore_op_name`` names (a checkpoint beside it)."""
    v1 = tf.compat.v1
    (folder / "noval").mkdir(parents=True)
    (folder / "val").mkdir()
    with tf.Graph().as_default() as graph:
        with tf.control_dependencies([tf.io.write_file(str(marker), "ran")]):
            v1.Variable(tf.constant(1.0), name="v")
        v1.train.export_meta_graph(str(folder / "noval" / "model.meta"), graph=graph)
    with tf.Graph().as_default() as graph:
        variable = v1.Variable(1.0, name="v")
        saver = v1.train.Saver()
        with v1.Session() as session:
            session.run(variable.initializer)
            saver.save(session, str(folder / "val" / "model"), write_meta_graph=False)
        restore = graph.get_operation_by_name(saver.saver_def.restore_op_name)
        hijacked = tf.group(restore, tf.io.write_file(str(marker), "ran"), name="hijacked_restore")
        meta = v1.train.export_meta_graph(graph=graph, saver_def=saver.saver_def)
        meta.saver_def.restore_op_name = hijacked.name
        (folder / "val" / "model.meta").write_bytes(meta.SerializeToString())
    assert not marker.exists()
    return folder / "noval" / "model.meta", folder / "val" / "model.meta"


def test_a_meta_graphs_ops_are_not_run_without_trust(tmp_path, capsys):
    marker = tmp_path / "ran.txt"
    for meta in marker_meta_graphs(tmp_path, marker):
        info = identify(meta)
        assert info.kind == "meta-graph" and info.runs_code, info
        verification = info.verify()
        assert verification.untrusted and not verification.ok and "graph's ops" in verification.report
        assert main([str(meta), "--verify"]) == NOT_TRUSTED
        assert "nothing was run" in capsys.readouterr().out
        with pytest.raises(VerificationError, match="nothing was run"):
            info.load()
        assert not marker.exists()
        info.load(trust=True)  # trusted: initializing or restoring runs the graph's ops
        assert marker.exists()
        marker.unlink()


def test_load_refuses_modules_a_keras2_archive_names_without_trust(tmp_path, monkeypatch):
    marker = tmp_path / "ran.txt"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    bad = keras2_archive_naming(tmp_path, marker)
    with pytest.raises(VerificationError, match="imports the modules"):
        identify(bad).load()
    assert not marker.exists()


def keras2_archive_naming(tmp_path: Path, marker: Path, module: str = "markermod", class_name: str = "") -> Path:
    """A Keras 2.15 ``.keras`` whose config names ``module``, a module that writes ``marker``."""
    (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nclass Dense: pass\n"
                                           "Mark = 'not a class'\n")
    source = copy_real("tf215", "functional_bn_keras", tmp_path / "in")
    bad = tmp_path / "custom.keras"
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(bad, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                config["config"]["layers"][1]["module"] = module  # tf-keras imports it by name
                if class_name:
                    config["config"]["layers"][1]["class_name"] = class_name
                data = json.dumps(config).encode()
            new.writestr(item, data)
    return bad


def test_modules_named_by_a_keras2_archive_are_not_imported_without_trust(tmp_path, monkeypatch):
    marker = tmp_path / "ran.txt"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    bad = keras2_archive_naming(tmp_path, marker)
    info = identify(bad)
    assert info.kind == "keras2-archive" and info.runs_code, info
    assert info.verify().untrusted and not marker.exists()


def test_a_zip_bomb_is_refused_before_anything_is_inflated(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        archive.writestr("config.json", '{"class_name": "Functional"' + " " * (6 << 20) + "}")
        archive.writestr("model.weights.h5", b"\0" * 64)
    assert bomb.stat().st_size < 100_000  # 6 MiB declared (under the 8 MiB cap), a few KiB on disk

    def no_reading(*args, **kwargs):
        raise AssertionError("a member was read")

    monkeypatch.setattr(zipfile.ZipFile, "open", no_reading)
    info = identify(bomb)
    assert info.kind == "not-a-model" and "zip bomb" in info.reason and "config.json" in info.reason
    with pytest.raises(ArchiveTooLargeError, match="config.json inflates .* zip bomb"):
        describe_keras_file(bomb)


def test_a_keras3_h5_is_loaded_by_keras3_and_proved(tmp_path):
    info = identify(real_file("keras315", "functional_bn_h5"))
    assert info.kind == "legacy-h5-model" and info.written_by == {"Keras": "3.15.1"}
    assert info.holds["custom objects"] == [] and "keras.models.load_model(path, compile=False)" in \
        info.how_to_load
    assert not any("Keras 2" in trap or "cannot rebuild" in trap for trap in info.traps), info.traps
    model = info.load()
    np.testing.assert_allclose(model(model_input("keras315", "functional_bn_h5"), training=False),
                               expected_output("keras315", "functional_bn_h5"), atol=1e-6)
    verification = info.verify()
    assert verification.ok and "Functional 'functional_bn_k3': 8 weights" in verification.report


def test_reading_the_weights_of_a_whole_model_is_not_called_verified():
    info = identify(real_file("tf215", "custom_layer"))
    assert info.partial
    verification = info.verify()
    assert not verification.ok and verification.partial
    assert str(verification).startswith("not verified: ") and "only the weights" in str(verification)
    assert main([str(real_file("tf215", "custom_layer")), "--verify"]) == NOT_VERIFIED


def test_a_tf1_savedmodel_with_two_metagraphs_loads_with_its_tags():
    info = identify(real_file("tf215-more", "tf1_two_metagraphs"))
    assert info.kind == "savedmodel-tf1" and "tags=['serve']" in info.how_to_load
    assert info.holds["tag-sets"] == ["serve", "train"]
    x = tf.constant(np.asarray(model_input("tf215-more", "tf1_two_metagraphs")["x"], np.float32))
    out = info.load(trust=True).signatures["serving_default"](x=x)["y"]
    np.testing.assert_allclose(out, expected_output("tf215-more", "tf1_two_metagraphs"), atol=1e-6)
    assert info.verify(trust=True).ok


def test_a_savedmodel_without_variables_says_so(tmp_path):
    folder = copy_real("tf215", "savedmodel_tf", tmp_path / "in")
    shutil.rmtree(Path(folder) / "variables")
    description = describe_saved_model(folder)
    assert description.variables_missing and "MISSING" in repr(description)
    info = identify(folder)
    verification = info.verify(trust=True)
    assert not verification.ok and "variables/variables.index is missing" in verification.report
    assert "Failed to find any matching files" not in str(verification)


def test_a_protobuf_that_is_not_a_graphdef_is_not_a_frozen_graph(tmp_path):
    from tensorflow.core.framework import graph_pb2

    config = graph_pb2.GraphDef()  # how a MediaPipe graph config reads as a GraphDef
    for name, calculator in (("in", "FlowLimiterCalculator"), ("run", "TfLiteInferenceCalculator")):
        config.node.add(name=name, op=calculator, input=["input_video"])
    (tmp_path / "graph.pb").write_bytes(config.SerializeToString())
    info = identify(tmp_path / "graph.pb")
    assert info.kind == "not-a-model" and "not a TensorFlow GraphDef" in info.reason
    assert "TfLiteInferenceCalculator" in info.reason


def test_counts_say_which_values_are_model_and_which_optimizer_state():
    info = identify(real_file("tf215", "savedmodel_keras2"))
    assert info.holds["saved values"] == "24 (8 model, 14 optimizer state, 2 metrics)"
    weights = identify(real_file("tf215", "functional_bn_weights_new"))
    assert weights.holds["weights"] == len([w for w in describe_keras_file(
        real_file("tf215", "functional_bn_weights_new")).weights if not w.path.startswith("optimizer/")])


def test_a_keras3_refusal_keeps_its_reasons_and_route():
    stderr = ("Traceback (most recent call last):\n  File \"x\", line 1\n"
              "helpers.errors.LegacyModelError: Keras 3 cannot rebuild the Keras 2 model:\n"
              "  layer 'gru': time_major is not a Keras 3 argument\n"
              "  route: keras2.export_for_keras2 ...\n")
    text = last_error(stderr)
    assert "time_major" in text and "route:" in text


@pytest.mark.parametrize(("source", "name"), [("tf215", "sequential"), ("tf215", "savedmodel_keras2"),
                                              ("keras315", "functional_bn_h5")])
def test_the_command_prints_no_tensorflow_log_lines(source, name):
    done = subprocess.run([sys.executable, "-m", "helpers", str(real_file(source, name)), "--verify"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={k: v for k, v in os.environ.items() if not k.startswith("TF_")})
    assert done.returncode in (0, NOT_TRUSTED), done.stderr
    assert done.stderr == ""
    for marker in ("I0000", "W0000", "E0000", "WARNING:", "oneDNN", "cuda"):
        assert marker not in done.stdout, done.stdout


def test_verify_caps_the_memory_a_tiny_file_can_declare(tmp_path):
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(tmp_path / "plain.keras")
    huge = tmp_path / "huge.keras"  # ~1.5 KB declaring a 3 x 1e9 kernel (12 GB): Keras builds it first
    with zipfile.ZipFile(tmp_path / "plain.keras") as old, zipfile.ZipFile(huge, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                for layer in config["config"]["layers"]:
                    if layer["class_name"] == "Dense":
                        layer["config"]["units"] = 1_000_000_000
                data = json.dumps(config).encode()
            new.writestr(item, data)
    verification = identify(huge).verify()
    assert not verification.ok and not verification.untrusted
    assert verification.report.startswith("the model this file declares needs more than 2.0 GiB"), \
        verification.report
    assert main([str(huge), "--verify"]) == NOT_VERIFIED
    assert identify(tmp_path / "plain.keras").verify().ok  # a real file loads under the cap


def test_weights_declared_but_not_stored_are_not_verified(tmp_path):
    import h5py

    path = tmp_path / "giant.weights.h5"
    with h5py.File(path, "w") as h5:  # 80 GB declared, a few KB on disk: nothing written
        h5.create_group("vars")
        kernel = h5.create_group("layers/dense/vars")
        kernel.create_dataset("0", shape=(200_000, 100_000), dtype="f4", chunks=(1000, 1000))
        kernel.create_dataset("1", data=np.zeros(2, np.float32))
    info = identify(path)
    assert info.kind == "weights-h5" and "values not stored" in info.blocked, info
    verification = info.verify()
    assert not verification.ok and "layers/dense/vars/0 (200000, 100000)" in verification.report
    assert main([str(path), "--verify"]) == NOT_VERIFIED
    with pytest.raises(NotAKerasFileError, match="stores no values"):
        describe_keras_file(path)


def test_a_tfsmlayer_inside_a_keras_file_is_not_run_without_trust(tmp_path):
    marker = tmp_path / "ran.txt"
    marker_saved_model(tmp_path / "sm", marker)
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(tmp_path / "plain.keras")
    config = {"module": "keras", "class_name": "Sequential", "registered_name": None, "config": {
        "name": "s", "layers": [
            {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
             "config": {"batch_shape": [None], "dtype": "float32", "name": "in"}},
            {"module": "keras.layers", "class_name": "TFSMLayer", "registered_name": None,
             "config": {"name": "t", "filepath": str(tmp_path / "sm"), "call_endpoint": "serving_default",
                        "trainable": False, "dtype": "float32"}}]}}
    path = tmp_path / "tfsm.keras"
    with zipfile.ZipFile(tmp_path / "plain.keras") as old, zipfile.ZipFile(path, "w") as new:
        for item in old.infolist():
            new.writestr(item, json.dumps(config) if item.filename == "config.json" else old.read(item))
    info = identify(path)
    assert info.runs_code and "TFSMLayer" in info.runs_code[0] and "SavedModel" in info.runs_code[0]
    assert "safe_mode=False)" not in info.how_to_load and "safe_mode=False)" in info.trusted_code
    assert info.verify().untrusted and main([str(path), "--verify"]) == NOT_TRUSTED
    with pytest.raises(ValueError, match="safe_mode"):  # the printed code is safe by default
        info.load()
    assert not marker.exists()
    with contextlib.suppress(ValueError):  # the layer's SavedModel holds other weights than the file
        info.load(trust=True)
    assert marker.exists()  # trusted: the SavedModel's initializer ran


def test_a_renamed_keras3_h5_has_one_trap_and_loads(tmp_path):
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2)(inputs))
    model.save(tmp_path / "plain.h5")  # not compiled: no optimizer state
    plain = identify(tmp_path / "plain.h5")
    assert plain.holds["optimizer state"] is False
    assert not any("optimizer state is not restored" in trap for trap in plain.traps), plain.traps
    shutil.copyfile(tmp_path / "plain.h5", tmp_path / "renamed.keras")
    info = identify(tmp_path / "renamed.keras")
    assert info.kind == "legacy-h5-model" and info.written_by == {"Keras": keras.__version__}
    assert len(info.traps) == 1 and "under a .keras name" in info.traps[0], info.traps
    assert "Keras 2" not in str(info)
    assert info.verify().ok
    np.testing.assert_allclose(info.load()(np.ones((1, 3), np.float32)), model(np.ones((1, 3))), atol=1e-6)


def test_a_module_named_like_keras_is_not_keras(tmp_path, monkeypatch):
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(tmp_path / "plain.keras")
    path = tmp_path / "kerasmark.keras"
    with zipfile.ZipFile(tmp_path / "plain.keras") as old, zipfile.ZipFile(path, "w") as new:
        for item in old.infolist():
            data = old.read(item)
            if item.filename == "config.json":
                config = json.loads(data)
                for layer in config["config"]["layers"]:
                    if layer["class_name"] == "Dense":
                        layer["module"] = "keras_mark"  # not Keras' own package
                data = json.dumps(config).encode()
            new.writestr(item, data)
    info = identify(path)
    assert info.holds["custom objects"] == ["Dense"] and info.partial, info
    assert info.verify().partial  # the weights, with the reason: not Keras' raw deserialization error
    marker = tmp_path / "ran.txt"
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    old_archive = identify(keras2_archive_naming(tmp_path, marker, "keras_mark", "Mark"))
    assert old_archive.runs_code and old_archive.verify().untrusted and not marker.exists()
    trusted = old_archive.verify(trust=True)  # tf-keras imports keras_mark: its code runs
    assert not trusted.ok and "needs its custom classes Mark" in trusted.report
