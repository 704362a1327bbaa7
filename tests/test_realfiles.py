"""The store of real files under tests/data: complete, referenced, small, and its helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests import realfiles
from tests.realfiles import DATA

LIMIT_BYTES = 12 * 1024 * 1024  # the whole store stays small (5 MiB until the 30 PyPI files of issue 33:
# about 8 MiB more, the smallest real files found of each kind; see tests/data/README.md)
NOT_ARTIFACTS = {"README.md", "MANIFEST.json", "LICENSE", "RESULTS.json"}  # RESULTS: measured, not a file to read
REQUIRED = {"path", "kind", "written_by", "description", "input", "output", "notes"}


def stored_files() -> list[Path]:
    return [p for p in DATA.rglob("*") if p.is_file() and "__pycache__" not in p.parts]


def artifact_files() -> set[Path]:
    """Every stored file that is not a script, a README, a licence or a manifest."""
    return {p for p in stored_files() if p.suffix != ".py" and p.name not in NOT_ARTIFACTS}


def test_sources_exist() -> None:
    assert "tf215" in realfiles.sources()


@pytest.mark.parametrize("source", realfiles.sources())
def test_every_manifest_entry_exists_and_is_complete(source: str) -> None:
    entries = realfiles.manifest(source)
    assert entries, source
    for name, entry in entries.items():
        assert REQUIRED <= set(entry), (name, REQUIRED - set(entry))
        assert realfiles.real_file(source, name).is_relative_to(DATA / source)
        if entry["output"] is not None:
            output = realfiles.expected_output(source, name)
            values = list(output.values()) if isinstance(output, dict) else [output]
            assert all(np.all(np.isfinite(v)) for v in values), name
            # A tiny KerasHub classifier with an untrained head answers logits of about 5e-4 (kerashub021):
            # its users compare outputs relative to their size, and its token ids besides.
            floor = 1e-4 if source == "kerashub021" else 1e-3
            assert any(np.abs(v).max() > floor for v in values), f"{name}: output near zero"
        assert (DATA / source / "README.md").is_file()


def test_every_stored_file_is_referenced_by_a_manifest() -> None:
    covered: set[Path] = set()
    for source in realfiles.sources():
        for name, entry in realfiles.manifest(source).items():
            path = DATA / source / entry["path"]
            if path.is_dir():
                covered |= {p for p in path.rglob("*") if p.is_file()}
            elif path.is_file():
                covered.add(path)
            else:  # a checkpoint prefix: its folder holds the index, data and state files
                covered |= {p for p in path.parent.iterdir() if p.is_file()}
    orphans = sorted(str(p.relative_to(DATA)) for p in artifact_files() - covered)
    assert not orphans, f"stored files no manifest names: {orphans}"


def test_store_stays_small() -> None:
    total = sum(p.stat().st_size for p in stored_files())
    assert total < LIMIT_BYTES, f"tests/data holds {total} bytes, limit {LIMIT_BYTES}"


def test_no_machine_paths_in_stored_files() -> None:
    for path in artifact_files():
        data = path.read_bytes()
        for marker in (b"/tmp/", b"/work/", b"/home/", b"/root/"):
            assert marker not in data, (path, marker)


def test_unknown_names_give_clear_errors() -> None:
    with pytest.raises(realfiles.MissingRealFile, match="no real-file source 'nope'"):
        realfiles.manifest("nope")
    with pytest.raises(realfiles.MissingRealFile, match="no artifact 'nope'.*known"):
        realfiles.real_file("tf215", "nope")


def test_copy_real_copies_files_folders_and_prefixes(tmp_path: Path) -> None:
    h5 = realfiles.copy_real("tf215", "sequential", tmp_path)
    assert h5 == tmp_path / "sequential.h5" and h5.read_bytes() == \
        realfiles.real_file("tf215", "sequential").read_bytes()
    folder = realfiles.copy_real("tf215", "savedmodel_keras2", tmp_path)
    assert (folder / "saved_model.pb").is_file()
    prefix = realfiles.copy_real("tf215", "ckpt_keras2_opt", tmp_path)
    assert Path(f"{prefix}.index").is_file() and (prefix.parent / "checkpoint").is_file()
    with pytest.raises(FileExistsError):
        realfiles.copy_real("tf215", "sequential", tmp_path)


def test_damaged_copies(tmp_path: Path) -> None:
    source = realfiles.real_file("tf215", "sequential")
    before = source.read_bytes()
    cut = realfiles.truncated(source, tmp_path / "cut.h5", 1 / 3)
    assert cut.read_bytes() == before[:len(before) // 3]
    flipped = realfiles.bit_flipped(source, tmp_path / "flip.h5", 100, bit=3)
    changed = [i for i, (a, b) in enumerate(zip(before, flipped.read_bytes())) if a != b]
    assert changed == [100] and len(flipped.read_bytes()) == len(before)
    assert source.read_bytes() == before
    with pytest.raises(ValueError, match="takes a file"):
        realfiles.truncated(source.parent, tmp_path / "x", 0.5)
