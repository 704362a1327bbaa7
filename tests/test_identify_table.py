"""helpers.identify's one table of readers: every kind has a reader, and a new row is all a new kind needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import helpers.identify.table as table
from helpers.identify import KINDS, READERS, Identification, Reader, identify
from tools.layout_report import import_graph, modules

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "helpers" / "identify"


def test_every_kind_but_not_a_model_is_answered_by_a_reader_in_the_table():
    answered = {kind for reader in READERS for kind in reader.kinds}
    assert answered <= set(KINDS)  # and the file no row takes is a V1 checkpoint, or not a model
    assert set(KINDS) - {"not-a-model", "tf1-checkpoint-v1"} <= answered
    assert len({reader.name for reader in READERS}) == len(READERS)


def test_a_reader_must_answer_with_kinds_that_are_in_kinds():
    with pytest.raises(ValueError, match="not in KINDS"):
        Reader("orbax", lambda path: Identification(path, "orbax"), ("orbax-checkpoint",), folder_names=("_METADATA",))


def _mine(path: str) -> Identification:
    return Identification(path, "onnx", reason="read by the test's reader")


def test_a_row_added_to_the_table_takes_its_files_by_magic_bytes_suffix_and_folder(tmp_path, monkeypatch):
    rows = (Reader("magic", _mine, ("onnx",), magic=((0, b"MYFMT"),)),
            Reader("suffix", _mine, ("onnx",), suffixes=(".mine",)),
            Reader("folder", _mine, ("onnx",), folder_names=("_MINE",)),
            Reader("sniffed", _mine, ("onnx",), folder_sniff=lambda folder: os.path.isdir(os.path.join(folder, "7"))))
    monkeypatch.setattr(table, "READERS", rows + READERS)
    (tmp_path / "a.bin").write_bytes(b"MYFMT and more")
    (tmp_path / "b.mine").write_bytes(b"anything")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "_MINE").write_bytes(b"")
    (tmp_path / "d" / "7").mkdir(parents=True)
    for name in ("a.bin", "b.mine", "c", "d"):
        info = identify(tmp_path / name)
        assert (info.kind, info.reason) == ("onnx", "read by the test's reader"), name
    (tmp_path / "e.bin").write_bytes(b"PK\x03\x04 not mine")  # magic bytes decide before a name
    assert identify(tmp_path / "e.bin").kind == "not-a-model"


def test_the_package_has_no_circle_no_long_module_and_imports_no_private_name():
    graph = {name: targets for name, targets in import_graph(ROOT / "helpers").items()
             if name.startswith("helpers.identify")}
    assert "helpers.identify.table" in graph and "helpers.identify.answer" in graph

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(target == goal or (target not in seen and not seen.add(target) and reaches(target, goal, seen))
                   for target in graph.get(start, ()))

    assert not [name for name in graph if reaches(name, name, set())]
    assert not [target for target in graph["helpers.identify.answer"] if target.startswith("helpers.identify")]
    for name, path in modules(ROOT / "helpers").items():
        if name.startswith("helpers.identify"):
            lines = path.read_text(encoding="utf-8").count("\n")
            assert lines <= 1000, (name, lines)
            assert "import _" not in path.read_text(encoding="utf-8")


def test_the_names_tests_notebooks_and_tools_import_are_still_there():
    import helpers.identify as package

    for name in ("identify", "Identification", "Verification", "KINDS", "NotAModelFileError", "VerificationError",
                 "stored_real_file", "READERS", "Reader"):
        assert hasattr(package, name), name
    # ex15's check replaces the code of the functions the package itself defines: identify is one
    assert package.identify.__module__ == "helpers.identify"
    assert package.stored_real_file.__module__ == "helpers.identify"
