"""helpers.files: paths of every kind in, and nothing that exists is ever overwritten."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.errors import WouldOverwriteError
from helpers.files import checkpoint_files_at, path_text, refuse_existing, refuse_existing_checkpoint

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
