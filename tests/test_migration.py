"""Unit tests of helpers.migration: TF1 name-based checkpoints in TF2, and back."""

from __future__ import annotations

import shutil
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import CheckpointMismatchError, NotACheckpointError
from helpers.migration import (
    RestoreReport,
    checkpoint_format,
    name_based_to_object_based,
    object_based_to_name_based,
    restore_name_based,
    variables_by_key,
    write_name_based,
)

KERNEL = np.arange(6, dtype=np.float32).reshape(3, 2)
BIAS = np.array([0.5, -0.5], dtype=np.float32)


@pytest.fixture()
def tf1_ckpt(tmp_path: Path) -> str:
    """A TF1 Saver checkpoint with 'dense/kernel' (3, 2), 'dense/bias' (2,) and a step counter."""
    with tf.Graph().as_default():
        with tf.compat.v1.variable_scope("dense"):
            tf.compat.v1.get_variable("kernel", initializer=KERNEL)
            tf.compat.v1.get_variable("bias", initializer=BIAS)
        tf.compat.v1.train.create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, str(tmp_path / "tf1" / "model"))


def dense(units: int = 2, name: str = "dense", dtype: str = "float32") -> keras.layers.Dense:
    layer = keras.layers.Dense(units, name=name, dtype=dtype)
    layer.build((None, 3))
    return layer


def name_map(layer) -> dict:
    return {"dense/kernel": layer.kernel, "dense/bias": layer.bias}


def test_checkpoint_format(tf1_ckpt, tmp_path):
    assert checkpoint_format(tf1_ckpt) == "name-based"
    path = tf.train.Checkpoint(layer=dense()).write(str(tmp_path / "tf2"))
    assert checkpoint_format(path) == "object-based"
    with pytest.raises(NotACheckpointError, match="no checkpoint files with this prefix"):
        checkpoint_format(str(tmp_path / "nothing"))


def test_variables_by_key_for_layers_modules_and_dicts():
    layer = dense(name="first")
    assert set(variables_by_key(layer)) == {"first/kernel", "first/bias"}
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="d")], name="seq")
    assert set(variables_by_key(model)) == {"seq/d/kernel", "seq/d/bias"}

    class Module(tf.Module):
        def __init__(self):
            super().__init__(name="m")
            with self.name_scope:
                self.w = tf.Variable(tf.zeros([2]), name="w")

    assert set(variables_by_key(Module())) == {"m/w"}
    explicit = {"a": layer.kernel}
    assert variables_by_key(explicit) == explicit


def test_variables_by_key_errors():
    with pytest.raises(TypeError, match="must be a tf.Module"):
        variables_by_key(42)
    with pytest.raises(TypeError, match="must be variables"):
        variables_by_key({"a": np.zeros(2)})
    with pytest.raises(ValueError, match="no variables yet"):
        variables_by_key(keras.layers.Dense(2))

    class Clash(tf.Module):
        def __init__(self):
            super().__init__()
            self.a = tf.Variable(1.0, name="w")
            self.b = tf.Variable(2.0, name="w")

    with pytest.raises(ValueError, match="share the name 'w'"):
        variables_by_key(Clash())


def test_the_silent_trap_that_restore_name_based_replaces(tf1_ckpt):
    """tf.train.Checkpoint restores nothing from a name-based file into a Keras 3 layer."""
    layer = dense()
    before = layer.kernel.numpy().copy()
    status = tf.train.Checkpoint(layer=layer).restore(tf1_ckpt)
    status.expect_partial()
    assert type(status).__name__ == "NameBasedSaverStatus"
    np.testing.assert_array_equal(layer.kernel.numpy(), before)


def test_restore_with_matching_names(tf1_ckpt):
    layer = dense()
    report = restore_name_based(tf1_ckpt, name_map(layer) | {"global_step": tf.Variable(0, dtype=tf.int64)})
    assert isinstance(report, RestoreReport) and report.complete
    assert report.restored == ["dense/bias", "dense/kernel", "global_step"]
    np.testing.assert_array_equal(layer.kernel.numpy(), KERNEL)
    np.testing.assert_array_equal(layer.bias.numpy(), BIAS)


def test_strict_names_every_unmatched_key_and_restores_nothing(tf1_ckpt):
    layer = dense(name="other")
    before = layer.kernel.numpy().copy()
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_name_based(tf1_ckpt, layer)
    error = caught.value
    assert error.missing == ["other/bias", "other/kernel"]
    assert error.unexpected == ["dense/bias", "dense/kernel", "global_step"]
    assert "Dense 'other'" in str(error)
    np.testing.assert_array_equal(layer.kernel.numpy(), before)


def test_strict_rejects_unused_checkpoint_values(tf1_ckpt):
    layer = dense()
    with pytest.raises(CheckpointMismatchError, match="not in the target: 'global_step'"):
        restore_name_based(tf1_ckpt, layer)


def test_shape_mismatch(tf1_ckpt):
    layer = dense(units=3)
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_name_based(tf1_ckpt, name_map(layer), strict=True)
    assert caught.value.shape_mismatches == [("dense/bias", (2,), (3,)), ("dense/kernel", (3, 2), (3, 3))]
    report = restore_name_based(tf1_ckpt, name_map(layer), strict=False)
    assert report.restored == [] and len(report.shape_mismatches) == 2
    assert "skipped dense/kernel: shape (3, 2) in the checkpoint, (3, 3) in the target" in str(report)


def test_dtype_mismatch(tf1_ckpt):
    layer = dense(dtype="float64")
    with pytest.raises(CheckpointMismatchError, match="wrong dtype: 'dense/bias' is float32") as caught:
        restore_name_based(tf1_ckpt, name_map(layer))
    assert caught.value.dtype_mismatches == [
        ("dense/bias", "float32", "float64"),
        ("dense/kernel", "float32", "float64"),
    ]


def test_lenient_restores_what_matches_and_reports_the_rest(tf1_ckpt):
    layer = dense()
    extra = tf.Variable(7.0)
    report = restore_name_based(tf1_ckpt, {"dense/kernel": layer.kernel, "not/there": extra}, strict=False)
    assert report.restored == ["dense/kernel"]
    assert report.missing == ["not/there"]
    assert report.unexpected == ["dense/bias", "global_step"]
    assert not report.complete
    np.testing.assert_array_equal(layer.kernel.numpy(), KERNEL)
    assert extra.numpy() == 7.0
    assert str(report).splitlines()[0] == "restored 1 variable(s)"


def test_restore_wrong_paths_and_damaged_files(tf1_ckpt, tmp_path):
    layer = dense()
    with pytest.raises(NotACheckpointError, match="no checkpoint files with this prefix"):
        restore_name_based(str(tmp_path / "missing"), layer)
    with pytest.raises(NotACheckpointError, match="pass its prefix"):
        restore_name_based(tf1_ckpt + ".index", layer)
    folder = tmp_path / "damaged"
    folder.mkdir()
    for file in Path(tf1_ckpt).parent.glob("model.*"):
        shutil.copy(file, folder / file.name)
    data = next(folder.glob("model.data-*"))
    data.write_bytes(data.read_bytes()[:10])
    before = layer.kernel.numpy().copy()
    with pytest.raises(NotACheckpointError, match="truncated or damaged"):
        restore_name_based(str(folder / "model"), name_map(layer) | {"global_step": tf.Variable(0, dtype=tf.int64)})
    np.testing.assert_array_equal(layer.kernel.numpy(), before)  # nothing half-restored
    (folder / "model.index").write_bytes(b"garbage")
    with pytest.raises(NotACheckpointError, match="too short"):
        restore_name_based(str(folder / "model"), layer)


def test_restore_refuses_graph_mode(tf1_ckpt):
    with tf.Graph().as_default():
        variable = tf.compat.v1.get_variable("dense/kernel", [3, 2])
        with pytest.raises(RuntimeError, match="Saver"):
            restore_name_based(tf1_ckpt, {"dense/kernel": variable})


def test_name_based_to_object_based_round_trip(tf1_ckpt, tmp_path):
    layer = dense(name="renamed")
    out = name_based_to_object_based(tf1_ckpt, str(tmp_path / "tf2" / "model"), layer,
                                     name_map(layer), strict=False)
    assert checkpoint_format(out) == "object-based"
    fresh = dense(name="fresh")
    tf.train.Checkpoint(model=fresh).restore(out).assert_consumed()
    np.testing.assert_array_equal(fresh.kernel.numpy(), KERNEL)


def test_name_based_to_object_based_strict_mismatch(tf1_ckpt, tmp_path):
    layer = dense(name="renamed")
    with pytest.raises(CheckpointMismatchError, match="missing from the checkpoint: 'renamed/bias'"):
        name_based_to_object_based(tf1_ckpt, str(tmp_path / "out"), layer)
    assert not list(tmp_path.glob("out*"))  # nothing written


def test_conversions_never_overwrite(tf1_ckpt, tmp_path):
    layer = dense()
    out = str(tmp_path / "tf2")
    name_based_to_object_based(tf1_ckpt, out, layer, name_map(layer), strict=False)
    stamp = Path(out + ".index").read_bytes()
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        name_based_to_object_based(tf1_ckpt, out, layer, name_map(layer), strict=False)
    with pytest.raises(FileExistsError, match="is the input checkpoint"):
        name_based_to_object_based(tf1_ckpt, tf1_ckpt, layer, name_map(layer), strict=False)
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        object_based_to_name_based(out, tf1_ckpt, layer, name_map(layer))
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        write_name_based({"a": np.zeros(1)}, out)
    assert Path(out + ".index").read_bytes() == stamp


def test_object_based_to_name_based_feeds_a_tf1_graph(tmp_path):
    trained = dense(name="trained")
    trained.kernel.assign(KERNEL)
    trained.bias.assign(BIAS)
    tf2_path = tf.train.Checkpoint(model=trained).save(str(tmp_path / "tf2" / "ckpt"))
    layer = dense(name="any")
    out = object_based_to_name_based(tf2_path, str(tmp_path / "tf1" / "export"), layer, name_map(layer))
    assert checkpoint_format(out) == "name-based"
    assert sorted(k for k, _ in tf.train.list_variables(out)) == ["dense/bias", "dense/kernel"]
    assert not (tmp_path / "tf1" / "checkpoint").exists()  # no state file written
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 1.0, 1.0]])
        with tf.compat.v1.variable_scope("dense"):
            kernel = tf.compat.v1.get_variable("kernel", [3, 2])
            bias = tf.compat.v1.get_variable("bias", [2])
        y = tf.matmul(x, kernel) + bias
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, out)
            np.testing.assert_allclose(sess.run(y), KERNEL.sum(axis=0, keepdims=True) + BIAS)


def test_object_based_to_name_based_errors(tf1_ckpt, tmp_path):
    layer = dense()
    with pytest.raises(NotACheckpointError, match="it is name-based"):
        object_based_to_name_based(tf1_ckpt, str(tmp_path / "a"), layer)
    small = tf.train.Checkpoint(model=dense(units=2)).write(str(tmp_path / "small"))
    with pytest.raises(CheckpointMismatchError, match="Dense 'wide'"):
        object_based_to_name_based(small, str(tmp_path / "b"), dense(units=3, name="wide"))
    other = tf.train.Checkpoint(something_else=dense()).write(str(tmp_path / "other"))
    with pytest.raises(CheckpointMismatchError) as caught:
        object_based_to_name_based(other, str(tmp_path / "c"), layer)
    assert caught.value.missing == ["dense/bias", "dense/kernel"]
    with pytest.raises(NotACheckpointError, match="no checkpoint files with this prefix"):
        object_based_to_name_based(str(tmp_path / "nothing"), str(tmp_path / "d"), layer)
    assert not list(tmp_path.glob("[abcd].*"))


def test_write_name_based_errors(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        write_name_based({}, str(tmp_path / "x"))
    path = write_name_based({"w": np.ones((2, 2), np.float32), "step": np.int64(3)}, str(tmp_path / "new" / "x"))
    reader = tf.train.load_checkpoint(path)
    assert reader.get_tensor("step") == 3
    np.testing.assert_array_equal(reader.get_tensor("w"), np.ones((2, 2)))
