"""Generate the exercise notebooks in notebooks/ from the solutions in solutions/.

    python tools/make_exercises.py                  # write every notebook in notebooks/
    python tools/make_exercises.py 03_many_models   # write only the ones named
    python tools/make_exercises.py --check          # exit 1 if notebooks/ is out of date

What changes between a solution and its exercise notebook:

* code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (the markers
  included) becomes ``# YOUR CODE HERE`` / ``raise NotImplementedError()`` at
  the markers' indentation; in markdown cells the text becomes
  ``YOUR ANSWER HERE``. These are nbgrader's markers and stubs, so an
  instructor can also run nbgrader on the same files;
* cells that will raise in the exercise version (a stubbed cell, or a cell
  tagged ``exercise-check`` in the solution) get nbval's ``raises-exception``
  tag, so ``pytest --nbval-lax notebooks/`` accepts the error (``make test`` checks these
  cells more closely: tests/exercise_run.py);
* every output and execution count is cleared;
* when the course's address is a GitHub one (``[project.urls] Repository`` in pyproject.toml,
  see tools/course_address.py), two cells tagged ``colab`` go before the setup cell: an
  "Open in Colab" link and the install cell, which in Colab only, when ``helpers`` is missing,
  clones the course at this release and installs that copy (editable, with the ``keras2``
  extra: chapters 13 and 15 read the files it stores), and does nothing anywhere else. Only the exercise notebooks get them (Colab links open those), so the
  solutions stay nbgrader's source as they are.

It also stamps nbgrader's cell metadata into the solutions themselves, derived
from the same markers: a cell with a solution region becomes an nbgrader
solution cell, a cell tagged ``exercise-check`` an autograder test worth one
point, each with a stable ``grade_id``. So ``nbgrader generate_assignment``
and ``nbgrader autograde`` accept the solution notebooks as they are.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "notebooks"

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
CODE_STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]
# A region at the top level of a cell gets no `raise`: "Run all" would show a red traceback before the
# check could say "not done yet". The stub raises only inside a function, when the function is called.
TOP_LEVEL_CODE_STUB = ["# YOUR CODE HERE"]
MARKDOWN_STUB = ["YOUR ANSWER HERE"]
CHECK_TAG = "exercise-check"
RAISES_TAG = "raises-exception"
_MARKER = re.compile(r"^(?P<indent>\s*)(?P<marker>### (BEGIN|END) SOLUTION)\s*$")


NBGRADER_SCHEMA = 3
COLAB_TAG = "colab"
# The code cell tools/make_slides.py shows for its section: kept in solutions/, dropped from notebooks/.
SLIDE_TAG = "slide"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_address  # noqa: E402  (tools/ is not a package)


def colab_install_source(url: str, ref: str) -> str:
    """The install cell: in Colab, and only when ``helpers`` is missing, copy the course and install it.

    It clones release ``ref`` of ``url`` (``--depth 1``) into the runtime's working folder and
    pip-installs that copy, editable, with the ``keras2``, ``jax`` and ``hub`` extras: ``helpers`` then finds the files
    the course stores (``tests/data``, read by chapters 13 and 15) beside itself, as in a checkout,
    also after a restart. A failed step prints one plain line instead of a traceback.

    Example:
        >>> print(colab_install_source("https://example.org/c", "v1").splitlines()[0])
        # In Colab, copy the course (this release) and install it with its extras; elsewhere: nothing.
    """
    folder = url.rstrip("/").rsplit("/", 1)[1].removesuffix(".git")
    return "\n".join([
        "# In Colab, copy the course (this release) and install it with its extras; elsewhere: nothing.",
        "import importlib, importlib.util, os, subprocess, sys",
        'if "google.colab" in sys.modules and importlib.util.find_spec("helpers") is None:',
        f'    URL, REF = "{url}", "{ref}"',
        f'    FOLDER = os.path.abspath("{folder}")  # chapters 13 and 15 read files it stores',
        '    print("Installing the course (a few minutes the first time)...")',
        "    steps = [] if os.path.isdir(FOLDER) else [",
        '        ["git", "clone", "--quiet", "--depth", "1", "--branch", REF, URL, FOLDER]]',
        '    steps.append([sys.executable, "-m", "pip", "install", "--quiet", "--editable",',
        '                  FOLDER + "[keras2,jax,hub]"])',
        "    for step in steps:",
        "        done = subprocess.run(step, capture_output=True, text=True)",
        "        if done.returncode != 0:",
        '            print(done.stdout[-1000:] + done.stderr[-2000:])',
        '            print("The install failed (the lines above say why): Runtime > Restart session, then "',
        '                  "run this cell again; if it fails again, send this output to your instructor.")',
        "            break",
        "    else:",
        "        sys.path.append(FOLDER)  # for this session; the install serves after a restart",
        "        importlib.invalidate_caches()",
        "        from helpers.notebook import restart_needed",
        '        print(restart_needed() or "The course is installed: run the next cell.")',
    ])


def colab_cells(stem: str, url: str | None, ref: str) -> list[nbformat.NotebookNode]:
    """The two cells that open an exercise notebook in Colab, or none without a GitHub address."""
    link = course_address.colab_url(url, ref, f"notebooks/{stem}.ipynb")
    if link is None:
        return []
    link_cell = nbformat.v4.new_markdown_cell(
        f"[Open in Colab]({link}) · in Colab, the next cell copies the course and installs its package "
        "first (a few minutes); anywhere else it does nothing.", metadata={"tags": [COLAB_TAG]})
    install_cell = nbformat.v4.new_code_cell(colab_install_source(url, ref), metadata={"tags": [COLAB_TAG]})
    link_cell.id, install_cell.id = "colab-link", "colab-install"  # stable: the notebooks are compared
    return [link_cell, install_cell]


class MarkerError(ValueError):
    """A solution cell has unbalanced or nested solution markers."""


def strip_solutions(source: str, stub: list[str]) -> tuple[str, bool]:
    """Replace each marked solution region of ``source`` by ``stub``.

    Returns the new source and whether any region was replaced.

    Example:
        >>> strip_solutions("def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION", CODE_STUB)
        ('def f():\\n    # YOUR CODE HERE\\n    raise NotImplementedError()', True)
        >>> strip_solutions("### BEGIN SOLUTION\\nf = register(f)\\n### END SOLUTION", CODE_STUB)
        ('# YOUR CODE HERE', True)
    """
    kept: list[str] = []
    inside = False
    replaced = False
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARKER.match(line)
        if match and match["marker"] == BEGIN:
            if inside:
                raise MarkerError(f"line {number}: {BEGIN} inside another solution region")
            inside = True
            replaced = True
            top_level = stub == CODE_STUB and not match["indent"]
            lines = TOP_LEVEL_CODE_STUB if top_level else stub
            kept.extend(match["indent"] + stub_line for stub_line in lines)
        elif match and match["marker"] == END:
            if not inside:
                raise MarkerError(f"line {number}: {END} without a {BEGIN} before it")
            inside = False
        elif not inside:
            kept.append(line)
    if inside:
        raise MarkerError(f"{BEGIN} without a matching {END}")
    return "\n".join(kept), replaced


def _exercise_cell(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cell = copy.deepcopy(cell)
    tags = [tag for tag in cell.get("metadata", {}).get("tags", []) if tag != SLIDE_TAG]
    if cell.cell_type == "code":
        cell.source, stubbed = strip_solutions(cell.source, CODE_STUB)
        cell.outputs = []
        cell.execution_count = None
        if (stubbed or CHECK_TAG in tags) and RAISES_TAG not in tags:
            tags.append(RAISES_TAG)
        cell.metadata.pop("execution", None)
    elif cell.cell_type == "markdown":
        cell.source, _ = strip_solutions(cell.source, MARKDOWN_STUB)
    if tags:
        cell.metadata["tags"] = tags
    elif SLIDE_TAG in cell.get("metadata", {}).get("tags", []):
        del cell.metadata["tags"]
    return cell


def _nbgrader_metadata(kind: str, grade_id: str) -> dict:
    answer = kind == "answer"
    metadata = {
        "grade": not answer,
        "grade_id": grade_id,
        "locked": not answer,
        "schema_version": NBGRADER_SCHEMA,
        "solution": answer,
        "task": False,
    }
    if not answer:
        metadata["points"] = 1
    return metadata


def stamp_nbgrader(solution: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """A copy of ``solution`` whose answer and check cells carry nbgrader metadata.

    Answer cells (with a solution region) and check cells (tagged
    ``exercise-check``) are numbered in order: ``<name>-answer-1``,
    ``<name>-check-1``, ... Other cells lose any nbgrader metadata.

    Example:
        >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("### BEGIN SOLUTION\\nx = 1\\n### END SOLUTION")])
        >>> stamp_nbgrader(nb, "01_demo").cells[0].metadata["nbgrader"]["grade_id"]
        '01_demo-answer-1'
    """
    stamped = copy.deepcopy(solution)
    counts = {"answer": 0, "check": 0}
    for cell in stamped.cells:
        cell.metadata.pop("nbgrader", None)
        if BEGIN in cell.source:
            kind = "answer"
        elif CHECK_TAG in cell.get("metadata", {}).get("tags", []):
            kind = "check"
        else:
            continue
        counts[kind] += 1
        cell.metadata["nbgrader"] = _nbgrader_metadata(kind, f"{name}-{kind}-{counts[kind]}")
    return stamped


def render_solution(solution_path: Path) -> str:
    """The exact text the solution notebook should have once stamped for nbgrader."""
    solution = nbformat.read(solution_path, as_version=4)
    return nbformat.writes(stamp_nbgrader(solution, solution_path.stem)) + "\n"


def make_exercise_notebook(solution: nbformat.NotebookNode,
                           colab: list[nbformat.NotebookNode] | None = None) -> nbformat.NotebookNode:
    """Return the exercise version of a solution notebook (the input is not changed).

    ``colab`` cells (see ``colab_cells``) go right before the first code cell, the setup cell.
    """
    exercise = copy.deepcopy(solution)
    cells = [_exercise_cell(cell) for cell in solution.cells
             if COLAB_TAG not in cell.get("metadata", {}).get("tags", [])]
    first_code = next((i for i, cell in enumerate(cells) if cell.cell_type == "code"), len(cells))
    exercise.cells = cells[:first_code] + list(colab or []) + cells[first_code:]
    return exercise


def render_exercise(solution_path: Path) -> str:
    """The exact text the exercise notebook for ``solution_path`` should have."""
    solution = stamp_nbgrader(nbformat.read(solution_path, as_version=4), solution_path.stem)
    try:
        colab = colab_cells(solution_path.stem, course_address.repository(), course_address.release_ref())
        exercise = make_exercise_notebook(solution, colab)
    except MarkerError as error:
        raise MarkerError(f"{solution_path.name}: {error}") from None
    return nbformat.writes(exercise) + "\n"


def exercise_path_for(solution_path: Path) -> Path:
    return EXERCISES / solution_path.name


def out_of_date() -> list[str]:
    """Notebooks to regenerate: unstamped solutions, and exercise notebooks missing, stale, or without a solution."""
    problems = []
    solutions = sorted(SOLUTIONS.glob("*.ipynb"))
    for solution_path in solutions:
        if solution_path.read_text() != render_solution(solution_path):
            problems.append(f"solutions/{solution_path.name} (nbgrader metadata)")
        target = exercise_path_for(solution_path)
        if not target.exists() or target.read_text() != render_exercise(solution_path):
            problems.append(f"notebooks/{target.name}")
    known = {path.name for path in solutions}
    problems += [f"notebooks/{p.name}" for p in sorted(EXERCISES.glob("*.ipynb")) if p.name not in known]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: all), e.g. 01_saving_and_restoring")
    parser.add_argument("--check", action="store_true", help="only report drift")
    args = parser.parse_args(argv)
    if args.check:
        stale = out_of_date()
        for name in stale:
            print(f"{name} is out of date: run `make exercises`")
        return 1 if stale else 0
    EXERCISES.mkdir(exist_ok=True)
    solutions = [SOLUTIONS / f"{Path(name).stem}.ipynb" for name in args.names] or sorted(
        SOLUTIONS.glob("*.ipynb")
    )
    for solution_path in solutions:
        if not solution_path.exists():
            print(f"no solution notebook {solution_path.relative_to(ROOT)}", file=sys.stderr)
            return 2
    for solution_path in solutions:
        stamped = render_solution(solution_path)
        if solution_path.read_text() != stamped:
            solution_path.write_text(stamped)
            print(f"stamped solutions/{solution_path.name} for nbgrader")
        exercise_path_for(solution_path).write_text(render_exercise(solution_path))
        print(f"wrote notebooks/{solution_path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
