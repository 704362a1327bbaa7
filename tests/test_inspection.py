"""Unit tests of helpers.inspection: describing checkpoints and their files."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import NotACheckpointError
from helpers.inspection import (
    OBJECT_GRAPH_KEY,
    checkpoint_files,
    describe_checkpoint,
    format_bytes,
    format_table,
    open_checkpoint,
    read_checkpoint,
    read_tensor,
    resolve_checkpoint,
)


def _save_name_based(prefix: Path, step: int = 3) -> str:
    with tf.Graph().as_default():
        tf.compat.v1.get_variable("model/w", initializer=np.arange(6, dtype=np.float32).reshape(3, 2))
        tf.compat.v1.get_variable("step", initializer=np.int64(5), trainable=False)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, str(prefix), global_step=step)


@pytest.fixture(scope="module")
def name_based(tmp_path_factory) -> str:
    return _save_name_based(tmp_path_factory.mktemp("v1") / "model")


@pytest.fixture(scope="module")
def object_based(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("v2")
    return tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).save(str(folder / "ckpt"))


# --------------------------------------------------------------------------- resolve


def test_resolve_accepts_a_prefix_and_a_folder(name_based):
    assert resolve_checkpoint(name_based) == name_based
    assert resolve_checkpoint(Path(name_based)) == name_based
    assert resolve_checkpoint(Path(name_based).parent) == name_based


@pytest.mark.parametrize("suffix", [".index", ".meta", ".data-00000-of-00001"])
def test_one_of_the_checkpoint_files_is_refused_with_its_prefix(name_based, suffix):
    with pytest.raises(NotACheckpointError, match=f"pass its prefix '{name_based}'"):
        resolve_checkpoint(name_based + suffix)


def test_resolve_folder_picks_newest(tmp_path):
    _save_name_based(tmp_path / "model", step=1)
    newest = _save_name_based(tmp_path / "model", step=2)
    assert resolve_checkpoint(tmp_path) == newest


def test_missing_path_is_named(tmp_path):
    with pytest.raises(NotACheckpointError, match="no checkpoint files with this prefix") as caught:
        resolve_checkpoint(tmp_path / "nothing" / "here")
    assert caught.value.path.endswith("here")


def test_folder_without_state_file(tmp_path):
    with pytest.raises(NotACheckpointError, match="no 'checkpoint' state file"):
        resolve_checkpoint(tmp_path)


def test_state_file_pointing_at_deleted_checkpoint(tmp_path):
    prefix = _save_name_based(tmp_path / "model")
    for file in tmp_path.glob(Path(prefix).name + ".*"):
        file.unlink()
    with pytest.raises(NotACheckpointError, match="files are gone"):
        resolve_checkpoint(tmp_path)


def test_file_that_is_not_a_checkpoint(tmp_path):
    text_file = tmp_path / "notes.txt"
    text_file.write_text("not a checkpoint")
    with pytest.raises(NotACheckpointError, match="a file, not a checkpoint prefix"):
        describe_checkpoint(text_file)


def test_meta_without_index_says_what_is_missing(tmp_path, name_based):
    shutil.copy(name_based + ".meta", tmp_path / "lonely.meta")
    with pytest.raises(NotACheckpointError, match="only the graph"):
        describe_checkpoint(tmp_path / "lonely")


def test_damaged_index(tmp_path):
    (tmp_path / "broken.index").write_bytes(b"definitely not an sstable" * 8)
    with pytest.raises(NotACheckpointError, match="damaged or of another format \\(.*sstable"):
        describe_checkpoint(tmp_path / "broken")


def test_not_a_checkpoint_error_is_a_value_error(tmp_path):
    with pytest.raises(ValueError):
        describe_checkpoint(tmp_path / "absent")


# --------------------------------------------------------------------------- describe


def test_describe_name_based(name_based):
    description = describe_checkpoint(name_based)
    assert description.keys == ["model/w", "step"]
    w, step = description.variables
    assert (w.shape, w.dtype, w.nbytes) == ((3, 2), "float32", 24)
    assert (step.shape, step.dtype, step.nbytes) == ((), "int64", 8)
    assert description.total_bytes == 32
    assert not description.has_object_graph


def test_describe_renders_a_table(name_based):
    text = repr(describe_checkpoint(name_based))
    lines = text.splitlines()
    assert lines[0].split() == ["key", "shape", "dtype", "size"]
    assert lines[2].split() == ["model/w", "(3,", "2)", "float32", "24", "B"]
    assert lines[-1] == "2 variables, 32 B"


def test_describe_object_based(object_based):
    description = describe_checkpoint(object_based)
    assert description.has_object_graph
    assert OBJECT_GRAPH_KEY in description.keys
    assert "v/.ATTRIBUTES/VARIABLE_VALUE" in description.keys
    assert description.total_bytes == 8 + 8  # v (2 x float32) and save_counter (int64)
    assert repr(description).endswith("2 variables, 16 B (+ the object graph)")


# --------------------------------------------------------------------------- read


def test_read_values(name_based):
    values = read_checkpoint(name_based)
    np.testing.assert_array_equal(values["model/w"], np.arange(6).reshape(3, 2))
    assert values["step"] == 5


def test_read_truncated_data_file(tmp_path, name_based):
    stem = tmp_path / "truncated"
    shutil.copy(name_based + ".index", str(stem) + ".index")
    data = Path(name_based + ".data-00000-of-00001").read_bytes()
    Path(str(stem) + ".data-00000-of-00001").write_bytes(data[:10])
    describe_checkpoint(stem)  # the index alone is intact
    with pytest.raises(NotACheckpointError, match="cannot read 'model/w': its data file is truncated or damaged"):
        read_checkpoint(stem)


def test_read_missing_data_file(tmp_path, name_based):
    stem = tmp_path / "no_data"
    shutil.copy(name_based + ".index", str(stem) + ".index")
    with pytest.raises(NotACheckpointError, match="cannot read"):
        read_checkpoint(stem)


def test_open_checkpoint_gives_a_reader(name_based):
    reader = open_checkpoint(name_based)
    assert read_tensor(reader, name_based, "step") == 5


def test_read_tensor_of_a_missing_key(name_based):
    with pytest.raises(NotACheckpointError, match="cannot read 'nope'"):
        read_tensor(open_checkpoint(name_based), name_based, "nope")


# --------------------------------------------------------------------------- files


def test_files_of_a_saver_checkpoint(name_based):
    files = checkpoint_files(name_based)
    assert files.names == [
        "checkpoint",
        "model-3.data-00000-of-00001",
        "model-3.index",
        "model-3.meta",
    ]
    holds = {f.name: f.holds for f in files.files}
    assert "newest checkpoint" in holds["checkpoint"]
    assert "shard 1 of 1" in holds["model-3.data-00000-of-00001"]
    assert "MetaGraphDef" in holds["model-3.meta"]
    assert all(f.nbytes > 0 for f in files.files)


def test_files_ignore_other_checkpoints_in_the_folder(tmp_path):
    _save_name_based(tmp_path / "model", step=1)
    _save_name_based(tmp_path / "model", step=12)
    names = checkpoint_files(tmp_path / "model-1").names
    assert names == ["checkpoint", "model-1.data-00000-of-00001", "model-1.index", "model-1.meta"]


def test_files_of_an_object_based_checkpoint_have_no_meta(object_based):
    names = checkpoint_files(object_based).names
    assert not any(name.endswith(".meta") for name in names)
    assert any(name.endswith(".index") for name in names)


def test_files_table_has_no_absolute_paths(name_based):
    text = repr(checkpoint_files(name_based))
    assert str(Path(name_based).parent) not in text
    assert text.splitlines()[0].split()[:2] == ["file", "size"]


# --------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    "size, shown",
    [(None, "-"), (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (3 * 1024**2, "3.0 MiB"), (5 * 1024**3, "5.0 GiB")],
)
def test_format_bytes(size, shown):
    assert format_bytes(size) == shown


def test_format_table_aligns_columns():
    table = format_table(["a", "bb"], [["long value", 1], ["x", 22]])
    assert table.splitlines() == ["a           bb", "----------  --", "long value  1", "x           22"]
