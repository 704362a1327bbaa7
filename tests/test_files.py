"""helpers.files: paths of every kind in, and nothing that exists is ever overwritten."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.errors import NotWritableError, WouldOverwriteError
from helpers.files import (
    checkpoint_files_at,
    path_text,
    refuse_existing,
    refuse_existing_checkpoint,
    refuse_unwritable,
)

# File names people really use: spaces, non-ASCII, and the glob characters [ ] * ?
NAME = st.text(
    alphabet=st.sampled_from(string.ascii_letters + string.digits + " -_.[]*?éü中"),
    min_size=1,
    max_size=12,
).filter(lambda name: name not in {".", ".."} and not name.startswith("."))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(stem=NAME, as_path=st.booleans())
def test_an_existing_checkpoint_is_refused_whatever_its_name(tmp_path, stem, as_path):
    folder = tmp_path / "runs"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / f"{stem}.index").write_bytes(b"index")
    (folder / f"{stem}.data-00000-of-00001").write_bytes(b"data")
    prefix = folder / stem if as_path else str(folder / stem)
    with pytest.raises(WouldOverwriteError, match="refusing to overwrite"):
        refuse_existing_checkpoint(prefix)
    assert (folder / f"{stem}.index").read_bytes() == b"index"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(stem=NAME)
def test_a_glob_lookalike_is_not_mistaken_for_an_existing_checkpoint(tmp_path, stem):
    folder = tmp_path / "lookalike"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    (folder / "model.index").write_bytes(b"index")
    if stem != "model":
        assert refuse_existing_checkpoint(folder / stem) == str(folder / stem)


def test_glob_characters_are_literal(tmp_path):
    (tmp_path / "m[1].index").write_bytes(b"")
    with pytest.raises(WouldOverwriteError):
        refuse_existing_checkpoint(tmp_path / "m[1]")
    # 'm?' as a glob would match 'm1'; literally it names nothing
    (tmp_path / "m1.index").write_bytes(b"")
    assert refuse_existing_checkpoint(tmp_path / "m?") == str(tmp_path / "m?")
    assert checkpoint_files_at(tmp_path / "m*") == []


def test_a_meta_file_alone_counts_as_a_checkpoint(tmp_path):
    (tmp_path / "model.meta").write_bytes(b"")
    with pytest.raises(WouldOverwriteError):
        refuse_existing_checkpoint(tmp_path / "model")


def test_a_prefix_in_a_missing_folder_is_free(tmp_path):
    assert checkpoint_files_at(tmp_path / "nowhere" / "model") == []


def test_refuse_existing_file_and_folder(tmp_path):
    (tmp_path / "m.keras").write_bytes(b"zip")
    with pytest.raises(WouldOverwriteError, match="a model already exists"):
        refuse_existing(tmp_path / "m.keras", "a model")
    with pytest.raises(WouldOverwriteError):
        refuse_existing(tmp_path)
    assert refuse_existing(Path(tmp_path) / "new.keras") == str(tmp_path / "new.keras")


def test_would_overwrite_is_a_value_error_and_a_file_exists_error():
    assert issubclass(WouldOverwriteError, ValueError)
    assert issubclass(WouldOverwriteError, FileExistsError)


@pytest.mark.parametrize("bad", [3, None, ["ckpt"]])
def test_path_text_refuses_what_is_not_a_path(bad):
    with pytest.raises(TypeError, match="must be a str or os.PathLike"):
        path_text(bad)


def test_path_text_refuses_an_empty_path():
    with pytest.raises(ValueError, match="empty"):
        path_text("")


def test_path_text_accepts_bytes_and_paths():
    assert path_text(b"runs/m") == "runs/m"
    assert path_text(Path("runs") / "m") == "runs/m"


# --------------------------------------------------------------------------- glob_safe_prefix

import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers.ensembles import load_keras_ensemble, restore_into_scope  # noqa: E402
from helpers.errors import GlobPathError, NotACheckpointError  # noqa: E402
from helpers.files import GLOB_CHARACTERS, glob_safe_prefix  # noqa: E402
from helpers.inspection import describe_checkpoint, open_checkpoint, read_checkpoint  # noqa: E402
from helpers.migration import object_based_to_name_based  # noqa: E402
from helpers.object_graph import reading  # noqa: E402
from tests import realworld  # noqa: E402
from tests.realworld import VALUES  # noqa: E402

V1 = tf.compat.v1
# Folder names people really use: globs TensorFlow would expand, spaces, non-ASCII.
ODD_FOLDERS = ["run[1]", "a*b", "who?", "best [old] ü", "sp ace", "中文"]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def test_a_plain_prefix_is_returned_as_it_is(tmp_path):
    prefix = realworld.object_based(tmp_path / "plain" / "ckpt")
    assert glob_safe_prefix(prefix) == prefix
    assert glob_safe_prefix(Path(prefix)) == prefix


def test_tensorflow_alone_cannot_read_a_name_with_brackets(tmp_path):
    """The pitfall the function exists for: TensorFlow takes '[1]' for a pattern that matches '1'."""
    prefix = realworld.object_based(tmp_path / "run[1]" / "ckpt", {"only": np.float32(1.0)})
    with pytest.raises(tf.errors.NotFoundError, match="matching files"):
        tf.train.load_checkpoint(prefix)
    reader = tf.train.load_checkpoint(glob_safe_prefix(prefix))
    assert reader.get_tensor("only/.ATTRIBUTES/VARIABLE_VALUE") == 1.0


@pytest.mark.parametrize("folder", ODD_FOLDERS)
def test_readers_see_the_checkpoint_as_written_and_leave_the_folder_alone(tmp_path, folder):
    prefix = realworld.name_based(tmp_path / folder / "model-3")
    before = _snapshot(tmp_path / folder)
    readable = glob_safe_prefix(prefix)
    # links live outside the user's folders; a name TensorFlow reads as it is needs none
    if folder in {"sp ace", "中文"}:
        assert readable == prefix
    else:
        assert not readable.startswith(str(tmp_path))
    np.testing.assert_array_equal(tf.train.load_checkpoint(readable).get_tensor("dense/kernel"),
                                  VALUES["dense/kernel"])
    # inspection
    assert "dense/kernel" in str(describe_checkpoint(prefix))
    np.testing.assert_array_equal(read_checkpoint(Path(prefix))["out/bias"], VALUES["out/bias"])
    np.testing.assert_array_equal(open_checkpoint(tmp_path / folder).get_tensor("global_step"), 42)
    # object_graph.reading
    with reading(Path(prefix)) as (shown, reader):
        assert shown == prefix and reader.get_tensor("global_step") == 42
    assert _snapshot(tmp_path / folder) == before


@pytest.mark.parametrize("folder", ["run[1]", "a*b", "who?", "best [old] ü"])
def test_old_v1_checkpoints_in_odd_folders(tmp_path, folder):
    single = realworld.v1_format(tmp_path / folder / "model.ckpt")
    sharded = realworld.v1_sharded(tmp_path / folder / "sharded")
    assert sharded.endswith("-?????-of-00002")
    for path in (single, sharded):
        readable = glob_safe_prefix(path)
        assert readable.endswith("-?????-of-00002") == (path == sharded)
        np.testing.assert_array_equal(tf.train.load_checkpoint(readable).get_tensor("out/kernel"),
                                      VALUES["out/kernel"])
        np.testing.assert_array_equal(read_checkpoint(path)["dense/bias"], VALUES["dense/bias"])


@pytest.mark.parametrize("folder", ["run[1]", "a*b", "who?", "sp ace ü"])
def test_restore_into_scope_restores_from_odd_folders(tmp_path, folder):
    prefix = realworld.name_based(tmp_path / folder / "member", {"w": np.arange(3, dtype=np.float32) + 1})
    with tf.Graph().as_default():
        with V1.variable_scope("m_1"):
            w = V1.get_variable("w", shape=[3])
        with V1.Session() as sess:
            restore_into_scope(sess, prefix, "m_1")
            np.testing.assert_array_equal(sess.run(w), [1.0, 2.0, 3.0])


def _mlp() -> keras.Model:
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(3, name="hidden"), keras.layers.Dense(1)])


@pytest.mark.parametrize("folder", ["run[1]", "a*b", "who?", "sp ace ü"])
def test_load_keras_ensemble_reads_odd_folders(tmp_path, folder):
    saved = _mlp()
    for variable in saved.weights:
        variable.assign(tf.fill(variable.shape, 0.5) + tf.cast(tf.size(variable), tf.float32))
    prefix = tf.train.Checkpoint(model=saved).write(str(tmp_path / folder / "member"))
    (member,) = load_keras_ensemble(_mlp, [Path(prefix)])
    for got, want in zip(member.weights, saved.weights):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("folder", ["run[1]", "a*b", "who?", "sp ace ü"])
def test_object_based_to_name_based_reads_odd_folders_and_writes_only_plain_ones(tmp_path, folder):
    saved = _mlp()
    saved.get_layer("hidden").bias.assign([1.0, 2.0, 3.0])
    prefix = tf.train.Checkpoint(model=saved).write(str(tmp_path / folder / "tf2"))
    target = _mlp()
    name_map = {"hidden/bias": target.get_layer("hidden").bias, "hidden/kernel": target.get_layer("hidden").kernel}
    if GLOB_CHARACTERS.search(folder):  # a TF1 Saver could not read run[1]/tf1 by its name: refused
        with pytest.raises(GlobPathError, match="use a folder name without them"):
            object_based_to_name_based(prefix, tmp_path / folder / "tf1", target, name_map)
        assert not list((tmp_path / folder).glob("tf1*"))
        out = object_based_to_name_based(prefix, tmp_path / "plain" / "tf1", target, name_map)
    else:
        out = object_based_to_name_based(prefix, tmp_path / folder / "tf1", target, name_map)
    np.testing.assert_array_equal(open_checkpoint(out).get_tensor("hidden/bias"), [1.0, 2.0, 3.0])


def test_a_restore_that_reads_later_still_finds_the_files(tmp_path):
    """Checkpoint.read fills variables created after it returns: the links must outlive the call."""
    saved = _mlp()
    saved.get_layer("hidden").bias.assign([4.0, 5.0, 6.0])
    prefix = tf.train.Checkpoint(model=saved).write(str(tmp_path / "run[2]" / "ckpt"))
    unbuilt = keras.Sequential([keras.layers.Dense(3, name="hidden"), keras.layers.Dense(1)])
    status = tf.train.Checkpoint(model=unbuilt).read(glob_safe_prefix(prefix))
    unbuilt(tf.ones((1, 2)))  # variables made now are restored now, from the files
    np.testing.assert_array_equal(unbuilt.get_layer("hidden").bias.numpy(), [4.0, 5.0, 6.0])
    status.assert_existing_objects_matched()


def test_links_are_reused_and_copies_made_where_links_cannot_be(tmp_path, monkeypatch):
    prefix = realworld.object_based(tmp_path / "m[1]" / "ckpt")
    assert glob_safe_prefix(prefix) == glob_safe_prefix(prefix)

    def no_links(*args, **kwargs):
        raise OSError("symbolic links are not allowed here")

    monkeypatch.setattr(os, "symlink", no_links)
    other = realworld.object_based(tmp_path / "m[2]" / "ckpt")
    copied = glob_safe_prefix(other)
    assert not os.path.islink(copied + ".index") and os.path.isfile(copied + ".index")
    assert tf.train.load_checkpoint(copied).has_tensor("global_step/.ATTRIBUTES/VARIABLE_VALUE")


def test_links_are_removed_when_python_exits(tmp_path):
    prefix = realworld.object_based(tmp_path / "m[1]" / "ckpt")
    code = "import sys; from helpers.files import glob_safe_prefix; print(glob_safe_prefix(sys.argv[1]))"
    result = subprocess.run([sys.executable, "-c", code, prefix], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    readable = result.stdout.strip()
    assert readable.endswith("ckpt") and not os.path.lexists(os.path.dirname(readable))


def test_glob_safe_prefix_errors(tmp_path):
    (tmp_path / "m[1]").mkdir()
    with pytest.raises(NotACheckpointError, match="no checkpoint files with this prefix"):
        glob_safe_prefix(tmp_path / "m[1]" / "missing")
    with pytest.raises(NotACheckpointError, match="no shard files"):
        glob_safe_prefix(tmp_path / "m[1]" / "old-?????-of-00002")
    with pytest.raises(NotACheckpointError, match="NUL character"):
        glob_safe_prefix(str(tmp_path / "m[1]" / "bad\x00name"))
    with pytest.raises(TypeError, match="str or os.PathLike"):
        glob_safe_prefix(3)
    with pytest.raises(ValueError, match="empty"):
        glob_safe_prefix("")


def test_refuse_unwritable_checks_the_nearest_existing_folder(tmp_path):
    assert refuse_unwritable(tmp_path / "a" / "b" / "m.keras") == str(tmp_path / "a" / "b" / "m.keras")
    assert not (tmp_path / "a").exists()  # only checked, nothing made
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    immutable = False
    try:
        if os.access(locked, os.W_OK):  # root ignores modes: make it immutable where that works
            immutable = subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode == 0
            if not immutable:
                pytest.skip("running as root without chattr: a read-only folder is writable")
        for target in (locked / "m.keras", locked / "sub" / "m.weights.h5"):
            with pytest.raises(NotWritableError, match="no permission to write into the folder") as caught:
                refuse_unwritable(target)
            assert isinstance(caught.value, PermissionError) and isinstance(caught.value, ValueError)
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(locked)], check=True)
        locked.chmod(0o755)



def test_archive_sizes_are_checked_before_reading(tmp_path):
    import json
    import zipfile

    from helpers.errors import ArchiveTooLargeError, NotAKerasFileError
    from helpers.files import MAX_SMALL_MEMBER, check_archive_sizes

    fine = tmp_path / "fine.keras"
    with zipfile.ZipFile(fine, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", json.dumps({"layers": [{"name": f"dense_{i}"} for i in range(2000)]}))
        archive.writestr("model.weights.h5", bytes(range(256)) * 8192, zipfile.ZIP_STORED)  # 2 MiB
    with zipfile.ZipFile(fine) as archive:
        check_archive_sizes(archive, fine)  # a real model's ratios pass
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model.weights.h5", b"\0" * (8 << 20))
    with zipfile.ZipFile(bomb) as archive, pytest.raises(ArchiveTooLargeError, match="model.weights.h5 inflates"):
        check_archive_sizes(archive, bomb)
    assert issubclass(ArchiveTooLargeError, NotAKerasFileError)
    big = tmp_path / "big.keras"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as archive:
        info = zipfile.ZipInfo("config.json")
        archive.writestr(info, b"")
    with zipfile.ZipFile(big) as archive:
        archive.infolist()[0].file_size = MAX_SMALL_MEMBER + 1  # as a forged central directory declares
        with pytest.raises(ArchiveTooLargeError, match="config.json declares"):
            check_archive_sizes(archive, big)
    assert MAX_SMALL_MEMBER <= 8 << 20  # parsed JSON costs ~20x its text: 64 MiB of config cost 1.3 GB
    padded = tmp_path / "padded.keras"  # low ratio (random spaces), ~10 MiB of JSON: refused unread
    import random
    spaces = random.Random(0)
    with zipfile.ZipFile(padded, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", "[" + ",".join("{}" + " " * spaces.randint(0, 3)
                                                       for _ in range(9 << 18)) + "]")
    with zipfile.ZipFile(padded) as archive, pytest.raises(ArchiveTooLargeError,
                                                           match="config.json declares"):
        check_archive_sizes(archive, padded)
