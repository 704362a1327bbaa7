"""The exercise notebooks are generated from the solutions, and stay that way."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import make_exercises  # noqa: E402
from make_exercises import (  # noqa: E402
    CODE_STUB,
    MARKDOWN_STUB,
    MarkerError,
    make_exercise_notebook,
    stamp_nbgrader,
    strip_solutions,
)

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


# --------------------------------------------------------------------------- the stubbing rules


def test_region_becomes_an_indented_stub():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n\nprint('after')"
    stubbed, replaced = strip_solutions(source, CODE_STUB)
    assert replaced
    assert stubbed == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nprint('after')"


def test_several_regions_in_one_cell():
    source = "### BEGIN SOLUTION\na = 1\n### END SOLUTION\nkeep = True\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION"
    stubbed, _ = strip_solutions(source, CODE_STUB)
    assert stubbed.count("# YOUR CODE HERE") == 2
    assert "keep = True" in stubbed and "a = 1" not in stubbed and "b = 2" not in stubbed


def test_a_top_level_region_does_not_raise():
    """'Run all' must not stop at an answer cell: only a function's stub raises, when it is called."""
    source = ("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n\n"
              "### BEGIN SOLUTION\nf = g(f)\n### END SOLUTION")
    stubbed, _ = strip_solutions(source, CODE_STUB)
    assert stubbed == "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\n# YOUR CODE HERE"


def _top_level_raises(source: str) -> list[int]:
    """Line numbers of `raise` statements that run when the cell runs (not inside a def or class)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: not an answer cell
        return []
    found, todo = [], list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Raise):
            found.append(node.lineno)
        todo.extend(ast.iter_child_nodes(node))
    return found


def test_the_top_level_raise_finder():
    assert _top_level_raises("x = 1\nraise NotImplementedError()") == [2]
    assert _top_level_raises("def f():\n    raise NotImplementedError()") == []
    assert _top_level_raises("class C:\n    def g(self):\n        raise ValueError()") == []


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_exercise_cell_raises_at_the_top_level(path):
    """An answer cell of notebooks/ runs cleanly on "Run all"; its check then says "not done yet"."""
    nb = nbformat.read(path, as_version=4)
    answers = [cell for cell in nb.cells if cell.cell_type == "code"
               and cell.metadata.get("nbgrader", {}).get("solution")]
    assert answers, f"{path.name} has no answer cell"
    raising = {index: _top_level_raises(cell.source) for index, cell in enumerate(answers)}
    raising = {i: lines for i, lines in raising.items() if lines}
    assert not raising, f"answer cells that raise at the top level (cell: lines): {raising}"


def test_cell_without_markers_is_unchanged():
    assert strip_solutions("x = 1", CODE_STUB) == ("x = 1", False)


@pytest.mark.parametrize(
    "source, problem",
    [
        ("### BEGIN SOLUTION\nx = 1", "without a matching"),
        ("x = 1\n### END SOLUTION", "without a ### BEGIN SOLUTION"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "inside another"),
    ],
)
def test_unbalanced_markers_are_refused(source, problem):
    with pytest.raises(MarkerError, match=problem):
        strip_solutions(source, CODE_STUB)


def _solution_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", execution_count=3)
    answer.outputs = [nbformat.v4.new_output("stream", text="hi\n")]
    check = nbformat.v4.new_code_cell("check(f)", execution_count=4, metadata={"tags": ["exercise-check"]})
    prose = nbformat.v4.new_markdown_cell("Why?\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION")
    plain = nbformat.v4.new_code_cell("x = 1", execution_count=5)
    nb.cells = [answer, check, prose, plain]
    return nb


def test_exercise_notebook_is_stubbed_cleared_and_tagged():
    solution = _solution_notebook()
    exercise = make_exercise_notebook(solution)
    answer, check, prose, plain = exercise.cells
    assert answer.source.endswith("\n".join("    " + line for line in CODE_STUB))
    assert answer.outputs == [] and answer.execution_count is None
    assert answer.metadata["tags"] == ["raises-exception"]
    assert check.metadata["tags"] == ["exercise-check", "raises-exception"]
    assert prose.source == "Why?\n\n" + MARKDOWN_STUB[0]
    assert plain.execution_count is None and "tags" not in plain.metadata
    assert solution.cells[0].outputs, "the solution itself is not modified"


def test_nbgrader_metadata_marks_answers_and_checks():
    stamped = stamp_nbgrader(_solution_notebook(), "99_demo")
    answer, check, prose, plain = (cell.metadata.get("nbgrader") for cell in stamped.cells)
    assert answer == {"grade": False, "grade_id": "99_demo-answer-1", "locked": False,
                      "schema_version": 3, "solution": True, "task": False}
    assert check == {"grade": True, "grade_id": "99_demo-check-1", "locked": True, "points": 1,
                     "schema_version": 3, "solution": False, "task": False}
    assert prose["grade_id"] == "99_demo-answer-2", "a written answer is a solution cell too"
    assert plain is None


def test_nbgrader_stamping_is_idempotent_and_drops_stale_metadata():
    solution = _solution_notebook()
    solution.cells[3].metadata["nbgrader"] = {"grade_id": "stale"}
    once = stamp_nbgrader(solution, "99_demo")
    assert "nbgrader" not in once.cells[3].metadata
    assert stamp_nbgrader(once, "99_demo") == once


# --------------------------------------------------------------------------- the real notebooks


def test_there_are_solution_notebooks():
    assert SOLUTIONS, "solutions/ holds no notebook"


def test_exercise_notebooks_match_the_solutions():
    stale = make_exercises.out_of_date()
    assert stale == [], f"notebooks/ is out of date ({', '.join(stale)}): run `make exercises`"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_notebook_shape(path):
    """Setup cell first, every code cell run, and exercises with checks."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code[0].source.startswith("from helpers.notebook import start_notebook"), "the setup cell comes first"
    assert re.search(r"^start_notebook\((fresh_processes=True)?\)", code[0].source, re.M)
    unrun = [i for i, cell in enumerate(code) if cell.execution_count is None]
    assert not unrun, f"code cells not run: {unrun} (run `make solutions`)"
    checks = [c for c in code if "exercise-check" in c.metadata.get("tags", [])]
    solutions = [c for c in code if "### BEGIN SOLUTION" in c.source]
    needed = 1 if path.stem.startswith("00") else 3
    assert len(checks) >= needed, f"{path.name} has {len(checks)} exercise checks, needs {needed}"
    assert len(solutions) >= len(checks), "every check has an exercise cell before it"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), "a title comes first"


# --------------------------------------------------------------------------- what notebooks/ runs

from exercise_run import (  # noqa: E402  (tests/exercise_run.py, the plugin that runs notebooks/)
    EXTRA_SECTIONS,
    cells_to_run,
)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.stem)
def test_exercise_run_covers_every_exercise_and_skips_only_identical_cells(path):
    """The cells the exercise test leaves out are the solution's own, run by the strict run."""
    solution = nbformat.read(path, as_version=4)
    exercise = make_exercise_notebook(stamp_nbgrader(solution, path.stem))
    chosen = cells_to_run(exercise, solution, path.stem)
    code = [i for i, cell in enumerate(exercise.cells) if cell.cell_type == "code"]
    assert chosen[0] == code[0], "the setup cell runs"
    for i in code:
        cell = exercise.cells[i]
        if "raise NotImplementedError()" in cell.source or "exercise-check" in cell.metadata.get("tags", []):
            assert i in chosen, f"answer or check cell {i} is not run"
        elif i not in chosen:
            assert cell.source == solution.cells[i].source, f"cell {i} differs and is not run"


def test_exercise_run_exceptions_name_real_chapters():
    stems = {path.stem for path in SOLUTIONS}
    assert set(EXTRA_SECTIONS) <= stems
