"""Naming a file is light: identify reads a .h5, a SavedModel, a .tflite and a checkpoint without importing TensorFlow.

Each check runs ``identify`` in a fresh Python and asks whether ``tensorflow`` was imported: no
wall-clock numbers (``benchmarks/identify_speed.py`` times every kind side by side). The light
readers give the same answers as the TensorFlow-based readings they replace, compared here on
every stored SavedModel and checkpoint index.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LIGHT = {
    "tests/data/tf215/sequential.h5": "legacy-h5-model",
    "tests/data/tf215/sequential_weights.h5": "legacy-h5-weights",
    "tests/data/tf215/functional_bn.weights.h5": "weights-h5",
    "tests/data/tf215/functional_bn.keras": "keras2-archive",
    "tests/data/tf215/tf_module": "savedmodel-tf2",
    "tests/data/tf215/savedmodel_keras2": "savedmodel-keras2",
    "tests/data/tf215/tf1_builder": "savedmodel-tf1",
    "tests/data/litert/builtin.tflite": "tflite",
    "tests/data/litert/select_tf_ops.tflite": "tflite",
    "tests/data/onnx/relu_opset5.onnx": "onnx",
    "tests/data/tf215-graph/graph/model.meta": "meta-graph",
    "tests/data/tf215/frozen_graph.pb": "frozen-graph",
    "tests/data/tf215_v1freeze/v1_ref.pb": "frozen-graph",
    "tests/data/README.md": "not-a-model",  # no table at its end: no V1 checkpoint, TensorFlow would say so too
}


def _named_in_fresh_python(paths: list[str], *, main: bool = False) -> list[dict]:
    """``{"kind": ...}`` for each path, named in a fresh Python, then which heavy modules it imported."""
    call = ("import contextlib, io\nfrom helpers.__main__ import main\nfor p in paths:\n"
            "    out = io.StringIO()\n    with contextlib.redirect_stdout(out):\n        main([p, '--json'])\n"
            "    print(json.dumps({'kind': json.loads(out.getvalue())['kind']}))\n" if main else
            "from helpers.identify import identify\n"
            "for p in paths:\n    print(json.dumps({'kind': identify(p).kind}))\n")
    code = (f"import json, sys\npaths = {paths!r}\n" + call +
            "print(json.dumps({'tensorflow': 'tensorflow' in sys.modules, 'keras': 'keras' in sys.modules}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def test_naming_an_h5_a_savedmodel_a_tflite_a_meta_graph_and_a_frozen_graph_imports_no_tensorflow():
    paths = list(LIGHT)
    *kinds, modules = _named_in_fresh_python(paths)
    assert [k["kind"] for k in kinds] == list(LIGHT.values())
    assert modules == {"tensorflow": False, "keras": False}


CHECKPOINTS = {
    "tests/data/tf215/tfckpt_noopt/ckpt": "checkpoint-keras2",  # a TF2 prefix, a Keras 2 model's
    "tests/data/tf215/tfckpt_opt/ckpt.index": "checkpoint-keras2",  # one of its files, optimizer state too
    "tests/data/tf215/tf_module/variables/variables": "checkpoint-module",  # a tf.Module's
    "tests/data/tf215-graph/graph/model": "tf1-checkpoint",  # name-based (tf.compat.v1.train.Saver)
    "tests/data/tf215/manager": "checkpoint-folder",  # a CheckpointManager folder (a state file)
    "tests/data/tf215/ckpt_keras2_opt": "checkpoint-folder",
}


def test_naming_a_checkpoint_a_manager_folder_and_a_name_based_one_imports_no_tensorflow():
    *kinds, modules = _named_in_fresh_python(list(CHECKPOINTS))
    assert [k["kind"] for k in kinds] == list(CHECKPOINTS.values())
    assert modules == {"tensorflow": False, "keras": False}


def test_the_command_names_them_without_tensorflow_too():
    paths = ["tests/data/tf215/sequential.h5", "tests/data/tf215/tf_module", "tests/data/litert/builtin.tflite",
             "tests/data/tf215/manager"]
    *kinds, modules = _named_in_fresh_python(paths, main=True)
    assert [k["kind"] for k in kinds] == [{**LIGHT, **CHECKPOINTS}[p] for p in paths]
    assert modules["tensorflow"] is False


def test_a_file_with_a_custom_class_still_asks_keras_and_gets_the_same_answer():
    *kinds, modules = _named_in_fresh_python(["tests/data/tf215/custom_layer.h5"])
    assert kinds == [{"kind": "legacy-h5-model"}] and modules["keras"] is True


def test_keras_class_names_are_exactly_those_keras_provides():
    import keras

    from helpers.identify.keras_config import KERAS_CLASS_NAMES
    from helpers.keras2 import legacy_custom_objects

    names = set(legacy_custom_objects()) | {"Functional", "Model", "Sequential", "InputLayer", "Lambda", "TFOpLambda"}
    for space in (keras.layers, keras.initializers, keras.regularizers, keras.constraints, keras.optimizers):
        names |= {name for name in dir(space) if name[:1].isupper()}
    assert KERAS_CLASS_NAMES == {name for name in names if not name.startswith("CuDNN")}


def test_every_known_op_is_registered_by_this_tensorflow():
    from tensorflow.python.framework import op_def_registry

    from helpers.identify.known_ops import KNOWN_OPS

    assert [op for op in sorted(KNOWN_OPS) if op_def_registry.get(op) is None] == []


@pytest.mark.parametrize("folder", sorted({os.path.dirname(p) for p in glob.glob(
    str(ROOT / "tests/data/**/saved_model.pb"), recursive=True)}), ids=lambda f: os.path.relpath(f, ROOT))
def test_the_light_savedmodel_reading_equals_tensorflows(folder):
    from helpers.identify.savedmodel_folders import _facts_with_tensorflow
    from helpers.identify.savedmodel_proto import read_savedmodel_facts

    light = read_savedmodel_facts(folder)
    assert light is not None and light == _facts_with_tensorflow(folder)


def test_the_light_reading_leaves_a_damaged_or_unusual_folder_to_tensorflow(tmp_path):
    import shutil

    from helpers.identify import identify
    from helpers.identify.savedmodel_proto import read_savedmodel_facts

    folder = tmp_path / "sm"
    shutil.copytree(ROOT / "tests/data/tf215/tf_module", folder)
    data = (folder / "saved_model.pb").read_bytes()
    (folder / "saved_model.pb").write_bytes(data[: len(data) // 2])
    assert read_savedmodel_facts(str(folder)) is None
    assert identify(folder).kind == "not-a-model" and "damaged or truncated" in identify(folder).reason
    (folder / "saved_model.pb").write_bytes(data)
    shard = next((folder / "variables").glob("variables.data-*"))
    shard.write_bytes(shard.read_bytes()[:1])
    assert read_savedmodel_facts(str(folder)) is None
    assert "truncated" in identify(folder).reason


def test_the_light_index_reader_equals_tensorflows_on_every_stored_checkpoint():
    from helpers.identify.bundle_index import read_bundle_index
    from helpers.inspection import describe_checkpoint

    indexes = glob.glob(str(ROOT / "tests/data/**/*.index"), recursive=True)
    assert len(indexes) >= 10
    for index in indexes:
        light, heavy = read_bundle_index(index), describe_checkpoint(index[: -len(".index")])
        assert sorted(light.entries) == heavy.keys and light.value_bytes() == heavy.total_bytes, index
        assert all(light.entries[v.key].shape == v.shape for v in heavy.variables), index


def test_the_light_meta_graph_summary_equals_tensorflows(tmp_path):
    import tensorflow as tf
    from tensorflow.core.protobuf import meta_graph_pb2

    from helpers.identify.meta_graphs import _foreign_device, meta_summary

    with tf.Graph().as_default() as graph:
        with tf.device("/job:worker/task:1/device:GPU:0"):
            tf.compat.v1.get_variable("w", initializer=tf.ones([2]))
        tf.compat.v1.train.export_meta_graph(str(tmp_path / "pinned.meta"), graph=graph)
    paths = glob.glob(str(ROOT / "tests/data/**/*.meta"), recursive=True) + [str(tmp_path / "pinned.meta")]
    for path in paths:
        meta = meta_graph_pb2.MetaGraphDef.FromString(Path(path).read_bytes())
        nodes = meta.graph_def.node
        expected = (meta.meta_info_def.tensorflow_version,
                    sum(node.op in ("VarHandleOp", "VariableV2", "Variable") for node in nodes),
                    {node.device for node in nodes if _foreign_device(node.device)})
        assert meta_summary(path) == expected, path
    assert meta_summary(paths[-1])[2] == {"/job:worker/task:1/device:GPU:0"}


def test_the_light_graph_def_reading_equals_tensorflows():
    from helpers.identify.graph_defs import _light_nodes, _read_with_tensorflow

    paths = [p for p in glob.glob(str(ROOT / "tests/data/**/*.pb"), recursive=True)
             if os.path.basename(p) not in ("saved_model.pb", "keras_metadata.pb", "fingerprint.pb", "tfhub_module.pb")]
    assert len(paths) >= 4
    for path in paths:
        nodes, traps = _read_with_tensorflow(path, text=False)
        assert _light_nodes(path) == nodes and traps == [], path


def test_a_graph_with_an_op_outside_the_known_ones_is_read_with_tensorflow(tmp_path):
    import tensorflow as tf

    from helpers.identify import identify
    from helpers.identify.graph_defs import _light_nodes

    graph_def = tf.compat.v1.GraphDef()
    graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
    graph_def.node.add(name="tok", op="SentencepieceOp", input=["x"])
    (tmp_path / "library.pb").write_bytes(graph_def.SerializeToString())
    assert _light_nodes(str(tmp_path / "library.pb")) is None
    info = identify(tmp_path / "library.pb")
    assert info.kind == "frozen-graph" and any("SentencepieceOp" in trap for trap in info.traps)
