"""A pytest plugin that tests each exercise notebook in notebooks/ for what differs from its solution.

`make test` runs every solution notebook strictly (nbval compares the stored outputs), and
tests/test_exercise_notebooks.py proves that each exercise notebook is generated from its
solution: every cell is the solution's cell, except the answer cells, whose solution regions
became the ``raise NotImplementedError()`` stub. Running a whole exercise notebook again would
repeat every demonstration the strict run already made. So this plugin collects each
``notebooks/*.ipynb`` as one test that runs, in one fresh kernel, only what a learner needs
to reach each exercise, and checks what is new there:

* the setup cell, the cells before the first section, and the cells that only import, run
  without an error;
* each answer cell runs without an error: its stub raises ``NotImplementedError`` only when
  the function is called, never at the top level (also checked on the source: every stub line
  is inside a ``def``);
* each check cell then says "not done" (``ExerciseNotDone``) for the untouched stub;
* every other cell from the first exercise to the end runs without an error.

Every code cell it does not run is asserted identical to the solution's cell, which the strict
run has run. Exercises are independent of the chapter's demonstrations (CONTRIBUTING.md);
a chapter whose exercises need more of it lists the sections they need in ``EXTRA_SECTIONS``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"

STUB_LINE = "raise NotImplementedError()"
CHECK_TAG = "exercise-check"
NOT_DONE = "ExerciseNotDone"

# Chapters whose exercises need more than the cells chosen by `cells_to_run`: the sections
# (``## `` headings, by their start) whose code cells run too. Checked for every chapter: the
# others' exercises run after their setup and import cells alone. Chapter 00 imports NumPy in
# its environment section and the checks module in the section that shows the checks.
EXTRA_SECTIONS: dict[str, tuple[str, ...]] = {
    "00_start_here": ("## 3. Your environment", "## 9. How errors and checks are shown"),
}

# Answer cells known to raise at the top level, by chapter and the first line of the cell: the
# stub there is a statement, not a function body (a learner's "Run all" stops at that cell).
# Each is a defect to fix in its chapter; the check cell after it must still say "not done".
TOP_LEVEL_STUBS: dict[str, tuple[str, ...]] = {
    "08_keras_files": ("class Clip(keras.layers.Layer):",),  # registering the class
}

CELL_TIMEOUT_S = 600


def _is_stub_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and STUB_LINE in cell.source


def _is_check_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and CHECK_TAG in cell.metadata.get("tags", [])


def _only_imports(source: str) -> bool:
    """A cell whose statements all import (``import x``, ``from x import y``, ``V1 = tf.compat.v1``).

    Example:
        >>> _only_imports("import numpy as np\\nV1 = tf.compat.v1"), _only_imports("x = f()")
        (True, False)
    """
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False

    def dotted(node: ast.expr) -> bool:
        return isinstance(node, ast.Name) or (isinstance(node, ast.Attribute) and dotted(node.value))

    def is_import(node: ast.stmt) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        return (isinstance(node, ast.Assign) and len(node.targets) == 1  # an alias: V1 = tf.compat.v1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Attribute)
                and dotted(node.value))

    return bool(body) and all(is_import(node) for node in body)


def stubs_outside_functions(source: str) -> list[int]:
    """Line numbers of ``raise NotImplementedError()`` stubs not inside a function body.

    Example:
        >>> stubs_outside_functions("def f():\\n    raise NotImplementedError()")
        []
        >>> stubs_outside_functions("x = 1\\nraise NotImplementedError()")
        [2]
    """
    tree = ast.parse(source)
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return [number for number, line in enumerate(source.splitlines(), start=1)
            if line.strip() == STUB_LINE and number not in inside]


def cells_to_run(exercise: nbformat.NotebookNode, solution: nbformat.NotebookNode,
                 name: str) -> list[int]:
    """Indices of the exercise notebook's code cells a learner needs to reach every exercise.

    The setup cell and the code cells before the first ``## `` section, every cell that only
    imports, every cell from the first answer or check cell to the end, and every cell that
    differs from the solution's, and the cells of the sections ``EXTRA_SECTIONS`` names.
    """
    code = [i for i, cell in enumerate(exercise.cells) if cell.cell_type == "code"]
    chosen: set[int] = set()
    setup = code[0]
    sections = [i for i, cell in enumerate(exercise.cells)
                if i > setup and cell.cell_type == "markdown" and cell.source.startswith("## ")]
    prelude_end = sections[0] if sections else len(exercise.cells)
    chosen.update(i for i in code if i < prelude_end)
    chosen.update(i for i in code if _only_imports(exercise.cells[i].source))
    exercises = [i for i in code if _is_stub_cell(exercise.cells[i]) or _is_check_cell(exercise.cells[i])]
    if exercises:
        chosen.update(i for i in code if i >= exercises[0])
    chosen.update(i for i in code if exercise.cells[i].source != solution.cells[i].source)
    for title in EXTRA_SECTIONS.get(name, ()):
        starts = [i for i in sections if exercise.cells[i].source.startswith(title)]
        if len(starts) != 1:
            raise ValueError(f"{name}: no single section {title!r} (EXTRA_SECTIONS)")
        end = min([i for i in sections if i > starts[0]], default=len(exercise.cells))
        chosen.update(i for i in code if starts[0] < i < end)
    return sorted(chosen)


def _kernel_cpu_seconds(kernel_manager) -> float | None:
    """CPU seconds the kernel process and its waited-for children used (Linux), else None."""
    try:
        pid = kernel_manager.provisioner.process.pid
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        return ticks / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError, IndexError):
        return None


class ExerciseNotebookError(AssertionError):
    """An exercise notebook does not behave as a learner's untouched copy should."""


class ExerciseNotebookItem(pytest.Item):
    """One exercise notebook, run as described in the module docstring."""

    def runtest(self) -> None:
        from jupyter_client.manager import KernelManager
        from nbclient import NotebookClient
        from nbval.kernel import CURRENT_ENV_KERNEL_NAME, NbvalKernelspecManager

        name = self.path.stem
        exercise = nbformat.read(self.path, as_version=4)
        solution_path = SOLUTIONS / self.path.name
        if not solution_path.exists():
            raise ExerciseNotebookError(f"no solution notebook for {self.path.name}")
        solution = nbformat.read(solution_path, as_version=4)
        if len(exercise.cells) != len(solution.cells):
            raise ExerciseNotebookError(f"{self.path.name} has other cells than its solution: "
                                        "run `make exercises`")
        chosen = cells_to_run(exercise, solution, name)
        problems: list[str] = []
        for i, cell in enumerate(exercise.cells):
            if cell.cell_type != "code":
                continue
            if i not in chosen and cell.source != solution.cells[i].source:
                problems.append(f"cell {i} differs from the solution's and is not run")
            known = cell.source.splitlines()[0] in TOP_LEVEL_STUBS.get(name, ())
            if _is_stub_cell(cell) and not known:
                for line in stubs_outside_functions(cell.source):
                    problems.append(f"cell {i}: the stub on line {line} is outside a function, "
                                    "so it raises as soon as the cell runs")
        if problems:
            raise ExerciseNotebookError("\n".join(problems))

        kernel_manager = KernelManager(kernel_name=CURRENT_ENV_KERNEL_NAME,
                                       kernel_spec_manager=NbvalKernelspecManager())
        client = NotebookClient(exercise, km=kernel_manager, timeout=CELL_TIMEOUT_S,
                                allow_errors=True,
                                resources={"metadata": {"path": str(self.path.parent)}})
        with client.setup_kernel():
            for i in chosen:
                client.execute_cell(exercise.cells[i], i)
            cpu = _kernel_cpu_seconds(kernel_manager)
        if cpu is not None:
            self.user_properties.append(("kernel_cpu_s", round(cpu, 2)))
        self.user_properties.append(("cells_run", f"{len(chosen)} of "
                                     f"{sum(c.cell_type == 'code' for c in exercise.cells)}"))

        for i in chosen:
            cell = exercise.cells[i]
            errors = [out for out in cell.outputs if out.output_type == "error"]
            if _is_check_cell(cell):
                if [out.ename for out in errors] != [NOT_DONE]:
                    got = ", ".join(f"{out.ename}: {out.evalue}" for out in errors) or "no error"
                    problems.append(f"check cell {i} should report the untouched stub as not done "
                                    f"({NOT_DONE}); it gave {got}")
            elif (errors and [out.ename for out in errors] == ["NotImplementedError"]
                  and cell.source.splitlines()[0] in TOP_LEVEL_STUBS.get(name, ())):
                continue
            elif errors:
                what = "answer cell" if _is_stub_cell(cell) else "cell"
                problems.append(f"{what} {i} raised {errors[0].ename}: {errors[0].evalue}\n"
                                f"    {cell.source.splitlines()[0]}")
        if problems:
            raise ExerciseNotebookError(f"{self.path.name}:\n" + "\n".join(problems))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ExerciseNotebookError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"exercise notebook {self.path.name}"


class ExerciseNotebookFile(pytest.File):
    def collect(self) -> Iterator[ExerciseNotebookItem]:
        yield ExerciseNotebookItem.from_parent(self, name="exercises")


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix == ".ipynb" and file_path.parent == EXERCISES:
        return ExerciseNotebookFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop nbval's cell-by-cell items for notebooks/: ExerciseNotebookItem tests those."""
    dropped = [item for item in items if Path(item.path).parent == EXERCISES
               and not isinstance(item, ExerciseNotebookItem)]
    if dropped:
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]
        config.hook.pytest_deselected(items=dropped)
