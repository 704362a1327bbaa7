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

    from helpers.errors import NotASavedModelError
    from helpers.identify import identify
    from helpers.identify.savedmodel_folders import _facts_with_tensorflow
    from helpers.identify.savedmodel_proto import read_savedmodel_facts

    folder = tmp_path / "sm"
    shutil.copytree(ROOT / "tests/data/tf215/tf_module", folder)
    data = (folder / "saved_model.pb").read_bytes()
    (folder / "saved_model.pb").write_bytes(data[: len(data) // 2])
    with pytest.raises(NotASavedModelError) as light:  # the whole file is parsed: a truncated one raises
        read_savedmodel_facts(str(folder))
    with pytest.raises(NotASavedModelError) as heavy:
        _facts_with_tensorflow(str(folder))
    assert light.value.reason == heavy.value.reason and "damaged or truncated" in light.value.reason
    assert identify(folder).kind == "not-a-model" and identify(folder).reason.endswith(heavy.value.reason)
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
    graph_def.node.add(name="tok", op="ExampleLibraryOp", input=["x"])
    (tmp_path / "library.pb").write_bytes(graph_def.SerializeToString())
    assert _light_nodes(str(tmp_path / "library.pb")) is None
    info = identify(tmp_path / "library.pb")
    assert info.kind == "frozen-graph" and any("ExampleLibraryOp" in trap for trap in info.traps)


# Damaged files (after the review of the identify package): bits flipped in a stored file, at
# places drawn from a fixed seed. The light readers parse the whole file (helpers.identify.tf_protos),
# so each is named exactly as TensorFlow's reading names it: the same kind, reason, holds and traps.
FLIPPED = {
    "savedmodel": ["tests/data/tf215/tf_module", "tests/data/tf215/savedmodel_keras2",
                   "tests/data/tf215/tf1_builder"],
    "meta": ["tests/data/tf215-graph/graph/model.meta"],
    "graph": ["tests/data/tf215/frozen_graph.pb"],
}


def _flip_bits(path: Path, seed: int) -> None:
    import random

    data = bytearray(path.read_bytes())
    draw = random.Random(seed)
    for _ in range(1 + seed % 3):
        data[draw.randrange(len(data))] ^= 1 << draw.randrange(8)
    path.write_bytes(bytes(data))


def _damaged_copy(source: str, seed: int, tmp_path: Path) -> Path:
    import shutil

    origin = ROOT / source
    if origin.is_dir():
        target = tmp_path / origin.name
        shutil.copytree(origin, target)
        _flip_bits(target / "saved_model.pb", seed)
        return target
    folder = tmp_path / "copy"
    shutil.copytree(origin.parent, folder)  # a .meta's checkpoint beside it comes along
    _flip_bits(folder / origin.name, seed)
    return folder / origin.name


def _as_tensorflow_reads_it(monkeypatch) -> None:
    """Make the readers take TensorFlow's route (the answer before the light readers)."""
    from tensorflow.core.framework import graph_pb2
    from tensorflow.core.protobuf import meta_graph_pb2

    from helpers.identify import graph_defs, meta_graphs, savedmodel_folders

    monkeypatch.setattr(savedmodel_folders, "read_savedmodel_facts", lambda folder: None)
    monkeypatch.setattr(graph_defs, "_light_nodes", lambda path: None)
    monkeypatch.setattr(meta_graphs, "parse", lambda data, name: meta_graph_pb2.MetaGraphDef.FromString(data))
    assert graph_pb2.GraphDef  # the route's own classes


@pytest.mark.parametrize("source,seed", [(source, seed) for sources in FLIPPED.values() for source in sources
                                         for seed in range(8)],
                         ids=lambda value: str(value).split("/")[-1])
def test_a_damaged_file_is_named_as_tensorflow_names_it(source, seed, tmp_path, monkeypatch):
    from helpers.identify import identify

    path = _damaged_copy(source, seed, tmp_path)
    light = identify(path).as_dict()
    with monkeypatch.context() as patch:
        _as_tensorflow_reads_it(patch)
        heavy = identify(path).as_dict()
    for key in ("kind", "reason", "holds", "traps", "written_by"):
        assert light.get(key) == heavy.get(key), key


def test_the_flipped_bits_damage_most_files_so_the_comparison_means_something(tmp_path):
    from helpers.identify import identify

    damaged = 0
    for number, (source, seed) in enumerate((s, seed) for sources in FLIPPED.values() for s in sources
                                            for seed in range(8)):
        info = identify(_damaged_copy(source, seed, tmp_path / str(number)))
        damaged += info.kind == "not-a-model"
    assert damaged >= 10


def test_a_damaged_savedmodel_meta_graph_or_frozen_graph_is_refused_without_tensorflow(tmp_path):
    import shutil

    shutil.copytree(ROOT / "tests/data/tf215/tf_module", tmp_path / "sm")
    shutil.copy(ROOT / "tests/data/tf215-graph/graph/model.meta", tmp_path / "model.meta")
    shutil.copy(ROOT / "tests/data/tf215/frozen_graph.pb", tmp_path / "frozen.pb")
    for name in ("sm/saved_model.pb", "model.meta", "frozen.pb"):
        data = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(data[: len(data) // 3])
    paths = [str(tmp_path / name) for name in ("sm", "model.meta", "frozen.pb")]
    *kinds, modules = _named_in_fresh_python(paths)
    assert kinds == [{"kind": "not-a-model"}] * 3 and modules["tensorflow"] is False


def test_the_message_types_come_from_tensorflows_files_without_importing_them():
    code = ("import sys, time\nstart = time.perf_counter()\nfrom helpers.identify.tf_protos import message_class\n"
            "names = ['tensorflow.SavedModel', 'tensorflow.MetaGraphDef', 'tensorflow.GraphDef']\n"
            "classes = [message_class(n) for n in names]\n"
            "print(time.perf_counter() - start, 'tensorflow' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    seconds, imported = done.stdout.split()
    assert imported == "False" and float(seconds) < 5  # about 0.05 s; generous for a busy machine


def test_without_tensorflow_installed_a_savedmodel_meta_graph_or_frozen_graph_is_answered_not_raised():
    # sys.modules["tensorflow"] = None: importlib finds no TensorFlow and importing it fails,
    # as where it is not installed.
    paths = ["tests/data/tf215/tf_module", "tests/data/tf215-graph/graph/model.meta", "tests/data/tf215/frozen_graph.pb"]
    code = ("import json, sys\nsys.modules['tensorflow'] = None\nfrom helpers.identify import identify\n"
            f"for p in {paths!r}:\n    info = identify(p)\n    print(json.dumps([info.kind, info.reason]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    from helpers.identify.tf_protos import NO_TENSORFLOW

    assert [json.loads(line) for line in done.stdout.splitlines()] == [["not-a-model", NO_TENSORFLOW]] * 3
