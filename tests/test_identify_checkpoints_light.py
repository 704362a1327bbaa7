"""TensorFlow checkpoints are named without TensorFlow, with the answers TensorFlow's reader gives.

``read_prefix(p)`` and ``read_checkpoint_folder(f)`` read the ``.index`` table, the object graph
from the data file and the ``checkpoint`` state file themselves; ``light=False`` reads them with
TensorFlow (``helpers.inspection``, ``helpers.object_graph``). Every stored checkpoint, and every
damaged copy below, gets the same answer both ways (kind, written_by, holds, traps, how_to_load,
reason), or the same error.
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import pytest

from helpers.identify import checkpoints
from helpers.identify.checkpoints import light_latest, read_checkpoint_folder, read_prefix

ROOT = Path(__file__).resolve().parent.parent
PREFIXES = sorted(p[: -len(".index")] for p in glob.glob(str(ROOT / "tests/data/**/*.index"), recursive=True))
FOLDERS = sorted(os.path.dirname(p) for p in glob.glob(str(ROOT / "tests/data/**/checkpoint"), recursive=True))


def _answer(read, path: str, **light) -> dict | tuple:
    try:
        info = read(path, **light)
    except Exception as error:  # the TensorFlow path lets some errors through: the light one must too
        return ("raised", type(error).__name__, str(error))
    return {"kind": info.kind, "reason": info.reason, "written_by": info.written_by, "holds": info.holds,
            "traps": info.traps, "how_to_load": info.how_to_load, "runs_code": info.runs_code}


def _same_both_ways(read, path: str) -> dict | tuple:
    light, heavy = _answer(read, path), _answer(read, path, light=False)
    assert light == heavy, path
    return light


@pytest.fixture
def no_tensorflow_reading(monkeypatch):
    """Fail if the reader falls back to TensorFlow: the stored checkpoints read plainly."""
    def refuse(*args, **kwargs):
        raise AssertionError("read with TensorFlow")

    monkeypatch.setattr(checkpoints, "_tensorflow_reading", refuse)


def test_there_are_stored_checkpoints_of_every_flavour():
    kinds = {read_prefix(prefix).kind for prefix in PREFIXES}
    assert {"tf1-checkpoint", "checkpoint-keras2", "checkpoint-module"} <= kinds and len(PREFIXES) >= 10
    assert len(FOLDERS) >= 3


@pytest.mark.parametrize("prefix", PREFIXES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_stored_prefix_is_named_as_tensorflow_reads_it(prefix):
    assert _same_both_ways(read_prefix, prefix)["kind"] != "not-a-model"


@pytest.mark.parametrize("prefix", PREFIXES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_stored_prefix_is_read_without_tensorflow(prefix, no_tensorflow_reading):
    assert read_prefix(prefix).kind != "not-a-model"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: os.path.relpath(f, ROOT))
def test_every_stored_checkpoint_folder_is_read_without_tensorflow(folder, no_tensorflow_reading):
    assert light_latest(folder) is not None  # else TensorFlow resolves it, and reads it with light=False
    assert read_checkpoint_folder(folder).kind == "checkpoint-folder"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: os.path.relpath(f, ROOT))
def test_every_stored_checkpoint_folder_gets_tensorflows_answer(folder):
    from helpers.inspection import resolve_checkpoint

    assert light_latest(folder) == resolve_checkpoint(folder)
    _same_both_ways(read_checkpoint_folder, folder)


def _copy(tmp_path: Path, name: str = "tfckpt_opt") -> Path:
    return Path(shutil.copytree(ROOT / "tests/data/tf215" / name, tmp_path / name))


def _damage(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))


DAMAGES = {
    "truncated data file": lambda f: os.truncate(f / "ckpt.data-00000-of-00001", 100),
    "data file missing": lambda f: os.remove(f / "ckpt.data-00000-of-00001"),
    "a stray shard beside it": lambda f: shutil.copy(f / "ckpt.data-00000-of-00001", f / "ckpt.data-00001-of-00002"),
    "a flipped byte in the object graph": lambda f: _damage(f / "ckpt.data-00000-of-00001", 900),
    "a flipped byte in a value": lambda f: _damage(f / "ckpt.data-00000-of-00001", 10),
    "a flipped byte in the index": lambda f: _damage(f / "ckpt.index", 40),
    "a truncated index": lambda f: os.truncate(f / "ckpt.index", 700),
    "an index of zeros": lambda f: (f / "ckpt.index").write_bytes(bytes(1400)),
    "an empty index": lambda f: (f / "ckpt.index").write_bytes(b""),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_checkpoint_gets_tensorflows_answer_and_reason(tmp_path, damage):
    folder = _copy(tmp_path)
    DAMAGES[damage](folder)
    answer = _same_both_ways(read_prefix, str(folder / "ckpt"))
    if damage != "a flipped byte in a value":  # the values are not read to name a checkpoint
        assert answer[0] == "raised" if isinstance(answer, tuple) else answer["kind"] == "not-a-model"


STATE_FILES = {
    "windows path": 'model_checkpoint_path: "C:\\\\Users\\\\me\\\\ckpt-3"\n',
    "another machine's posix path": 'model_checkpoint_path: "/home/me/run/ckpt-3"\n',
    "names a checkpoint that is gone": 'model_checkpoint_path: "ckpt-9"\n',
    "empty": "",
    "not a state file": "hello world\n",
    "single quotes": "model_checkpoint_path: 'ckpt-2'\n",
    "named twice": 'model_checkpoint_path: "ckpt-1"\nmodel_checkpoint_path: "ckpt-2"\n',
    "relative, with paths and times": 'model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-1"\n'
                                      'all_model_checkpoint_paths: "ckpt-2"\nlast_preserved_timestamp: 17.5\n',
    "a comment": '# written by hand\nmodel_checkpoint_path: "ckpt-2"\n',
    "bytes that are not text": b"\xff\xfe\x00\x01",
}


@pytest.mark.parametrize("state", STATE_FILES)
def test_a_state_file_of_any_form_gets_tensorflows_answer(tmp_path, state):
    folder = _copy(tmp_path, "manager")
    text = STATE_FILES[state]
    (folder / "checkpoint").write_bytes(text if isinstance(text, bytes) else text.encode())
    answer = _same_both_ways(read_checkpoint_folder, str(folder))
    if state == "relative, with paths and times":
        assert light_latest(str(folder)) == str(folder / "ckpt-2") and answer["holds"]["latest"] == "ckpt-2"


def test_a_state_file_naming_a_damaged_checkpoint_gets_tensorflows_answer(tmp_path):
    folder = _copy(tmp_path, "manager")
    os.truncate(folder / "ckpt-3.data-00000-of-00001", 10)
    assert _same_both_ways(read_checkpoint_folder, str(folder))["kind"] == "not-a-model"


def test_a_prefix_with_glob_characters_is_read_plainly(tmp_path, no_tensorflow_reading):
    folder = Path(shutil.copytree(ROOT / "tests/data/tf215/tfckpt_opt", tmp_path / "run [1]*"))
    assert read_prefix(str(folder / "ckpt")).kind == "checkpoint-keras2"


def _written_now(folder: Path) -> dict[str, str]:
    """Checkpoints this TensorFlow and Keras 3 write: a trained model with its optimizer, a module, TF1's Saver."""
    import keras
    import numpy as np
    import tensorflow as tf

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 1)), epochs=1, verbose=0)
    bare = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])  # not compiled: no optimizer
    module = tf.Module()
    module.layers = [tf.Variable([1.0]), {"w": tf.Variable(2.0)}]
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        w = tf.compat.v1.get_variable("w", initializer=tf.ones([2]))
        train = tf.compat.v1.train.AdamOptimizer().minimize(tf.reduce_sum(w * w))
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(train)
        saver = tf.compat.v1.train.Saver()
        name_based = saver.save(session, str(folder / "tf1" / "model"), write_meta_graph=False)
    return {
        "checkpoint-keras3": tf.train.Checkpoint(model=model, optimizer=model.optimizer).write(str(folder / "k3" / "ckpt")),
        "checkpoint-keras3 (no optimizer)": tf.train.Checkpoint(model=bare).write(str(folder / "k3m" / "ckpt")),
        "checkpoint-module": tf.train.Checkpoint(root=module).write(str(folder / "module" / "ckpt")),
        "tf1-checkpoint": name_based,
    }


def test_checkpoints_written_now_are_named_as_tensorflow_reads_them(tmp_path, monkeypatch):
    written = _written_now(tmp_path)
    answers = {flavour: _same_both_ways(read_prefix, prefix) for flavour, prefix in written.items()}
    assert {flavour: answer["kind"] for flavour, answer in answers.items()} == {
        flavour: flavour.split(" ")[0] for flavour in written}
    assert answers["checkpoint-keras3"]["holds"]["optimizer state"] is True
    assert answers["checkpoint-keras3 (no optimizer)"]["holds"]["optimizer state"] is False
    assert answers["tf1-checkpoint"]["holds"]["optimizer state"] is True
    monkeypatch.setattr(checkpoints, "_tensorflow_reading", lambda *args: pytest.fail("read with TensorFlow"))
    assert {flavour: read_prefix(prefix).kind for flavour, prefix in written.items()} == {
        flavour: answer["kind"] for flavour, answer in answers.items()}


@pytest.mark.parametrize("target, step", [("ckpt.index", 17), ("ckpt.data-00000-of-00001", 41)])
def test_a_flipped_bit_anywhere_gets_tensorflows_answer(tmp_path, target, step):
    """The table blocks' and the object graph's checksums send a damaged file to TensorFlow."""
    source = ROOT / "tests/data/tf215/tfckpt_opt"
    data = (source / target).read_bytes()
    for offset in range(0, len(data), step):
        folder = Path(shutil.copytree(source, tmp_path / str(offset)))
        flipped = bytearray(data)
        flipped[offset] ^= 0x10
        (folder / target).write_bytes(bytes(flipped))
        _same_both_ways(read_prefix, str(folder / "ckpt"))
