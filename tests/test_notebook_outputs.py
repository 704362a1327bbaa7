"""What a learner sees in the stored outputs is clean."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "notebooks").glob("*.ipynb"))

LEAKS = re.compile(
    r"(/tmp/|/root/|/home/|/work/|/private/var/|/Users/"  # paths of a machine
    r"|^[IWEF]\d{4} |absl::InitializeLog|oneDNN custom operations|This TensorFlow binary is optimized"  # C++ logs
    r"|Instructions for updating|Warning:|WARNING:|DeprecationWarning|UserWarning)",  # Python warnings and logs
    re.MULTILINE,
)


def _texts(cell):
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            yield output.name, output.text
        elif output.output_type == "error":
            yield "error", f"{output.ename}: {output.evalue}"
        else:
            yield output.output_type, output.get("data", {}).get("text/plain", "")


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_outputs_hold_no_paths_logs_or_warnings(path):
    problems = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for kind, text in _texts(cell):
            if kind == "stderr":
                problems.append(f"cell {index}: writes to stderr: {text[:120]!r}")
            elif kind == "error":
                problems.append(f"cell {index}: stored error {text[:120]!r} (use expect_error)")
            elif match := LEAKS.search(text):
                problems.append(f"cell {index}: shows {match[0]!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: p.stem)
def test_exercise_notebooks_have_no_outputs(path):
    cells = nbformat.read(path, as_version=4).cells
    assert not any(cell.get("outputs") for cell in cells)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_code_fits_in_100_columns(path):
    """Code cells (and the exercise stubs made from them) do not scroll sideways in JupyterLab."""
    too_wide = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "code":
            too_wide += [f"cell {index}: {len(line)} columns: {line[:60]!r}..."
                         for line in cell.source.splitlines() if len(line) > 100]
    assert not too_wide, "\n".join(too_wide)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_outputs_fit_in_100_columns(path):
    """Nothing a learner reads wraps in JupyterLab at 1280 px or on the website."""
    too_wide = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for _, text in _texts(cell):
            too_wide += [f"cell {index}: {len(line)} columns: {line[:60]!r}..."
                         for line in text.splitlines() if len(line) > 100]
    assert not too_wide, "\n".join(too_wide)
