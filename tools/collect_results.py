"""Which exercises each learner passed, from their executed notebooks: no nbgrader needed.

    make results FOLDER=submissions [CSV=results.csv] [FORCE=1]
    .venv/bin/python tools/collect_results.py FOLDER [--csv results.csv] [--force]

(It needs the course's environment, for nbformat: ``make results`` runs it with .venv's Python.)

FOLDER holds the learners' exercise notebooks, run and saved ("Restart and run all", then save):
either one folder per learner (``FOLDER/ada/03_many_models.ipynb``) or flat files named
``<learner>__<chapter>.ipynb`` (``FOLDER/ada__03_many_models.ipynb``). The verdict of each
exercise is read from the stored output of its check cell (the cells nbgrader would grade):

* ``✔`` passed (the check printed "Exercise NN.k passed");
* ``✘`` not right yet (the check raised: a wrong answer, or the learner's code failed);
* ``–`` not done (the stub still raises ``NotImplementedError``);
* ``·`` not run (the check cell has no output: the notebook was saved without running it).

It prints one row per learner and one column per exercise of every chapter anyone handed in
(all of that chapter's exercises, from solutions/), so that every row is counted out of the same
number: "passed" is out of all those exercises, "handed in" says how many of them the learner's
notebooks held (a blank cell: not handed in). With ``--csv`` it also writes one line per learner
and exercise. It never changes the notebooks, and never overwrites a file: when the CSV named
exists, it writes the next free name beside it (``results-2.csv``) and says so; ``--force``
replaces the named file only when that file is a CSV this tool wrote (its header line).

A file it cannot read or attribute to a learner and chapter is skipped with a warning, listed
under the table, and the run exits 1 after printing the table of the others. Two notebooks of one
chapter from one learner (``00_start_here (1).ipynb`` beside ``00_start_here.ipynb``): the last
saved one is used, and a warning names it.

Example:
    >>> print(format_results({"ada": {"00.1": "passed", "00.2": "not right"}, "bo": {"00.1": "passed"}},
    ...                      {"00": ["00.1", "00.2", "00.3"]}))  # doctest: +NORMALIZE_WHITESPACE
    learner | 00.1 | 00.2 | 00.3 | passed | handed in
    --------+------+------+------+--------+----------
    ada     | ✔    | ✘    |      | 1/3    | 2/3
    bo      | ✔    |      |      | 1/3    | 1/3
    <BLANKLINE>
    ✔ passed  ✘ not right  – not done  · not run  (blank) not handed in
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHECK_TAG = "exercise-check"
CSV_HEADER = ["learner", "exercise", "verdict"]
SYMBOLS = {"passed": "✔", "not right": "✘", "not done": "–", "not run": "·"}
_EXERCISE = re.compile(r"Exercise (\d\d\.\d+)")


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join([output.get("ename", ""), output.get("evalue", ""), *output.get("traceback", [])])
    return str(output.get("data", {}).get("text/plain", ""))


def check_verdicts(notebook: nbformat.NotebookNode, chapter: str) -> dict[str, str]:
    """Exercise id (``"03.2"``) -> verdict, for every check cell of an executed notebook."""
    verdicts = {}
    number = chapter[:2]
    checks = [cell for cell in notebook.cells
              if cell.cell_type == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", [])]
    for position, cell in enumerate(checks, start=1):
        outputs = cell.get("outputs", [])
        text = "\n".join(_output_text(output) for output in outputs)
        found = _EXERCISE.search(text)
        exercise = found[1] if found else f"{number}.{position}"
        errors = [output for output in outputs if output.get("output_type") == "error"]
        if not outputs:
            verdicts[exercise] = "not run"
        elif errors:
            names = {output.get("ename") for output in errors}
            verdicts[exercise] = "not done" if names & {"ExerciseNotDone", "NotImplementedError"} else "not right"
        elif re.search(r"✔ Exercise \d\d\.\d+ passed", text):
            verdicts[exercise] = "passed"
        else:
            verdicts[exercise] = "not right"
    return verdicts


def _attribute(path: Path, folder: Path) -> tuple[str, str]:
    """(learner, chapter) of a notebook under ``folder``, or ValueError saying how to name it."""
    relative = path.relative_to(folder)
    if len(relative.parts) > 1:
        learner, chapter = relative.parts[0], path.stem
    elif "__" in path.stem:
        learner, chapter = path.stem.split("__", 1)
    else:
        raise ValueError(f"{relative}: name it <learner>__<chapter>.ipynb or put it in a folder per learner")
    if not re.match(r"^\d\d_", chapter):
        raise ValueError(f"{relative}: {chapter!r} is not a chapter's notebook (NN_topic.ipynb)")
    return learner, chapter


def gather(folder: Path) -> tuple[dict[str, dict[str, str]], list[str], list[str]]:
    """Learner -> exercise id -> verdict, with the files skipped and the notes on doubles.

    A file that cannot be attributed or read is skipped (one line each in the second list), so
    that it never hides the others. When a learner handed in two notebooks of one chapter
    (``00_start_here.ipynb`` and ``00_start_here (1).ipynb``), the last saved one is used and the
    third list says which.
    """
    chosen: dict[tuple[str, str], list[Path]] = {}
    skipped: list[str] = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        try:
            learner, chapter = _attribute(path, folder)
        except ValueError as error:
            skipped.append(str(error))
            continue
        chosen.setdefault((learner, chapter[:2]), []).append(path)
    results: dict[str, dict[str, str]] = {}
    doubles: list[str] = []
    for (learner, number), paths in sorted(chosen.items()):
        readable = []
        for path in paths:
            try:
                readable.append((path, nbformat.read(path, as_version=4)))
            except Exception as error:  # noqa: BLE001 - one unreadable file must not hide the others
                reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:80]
                skipped.append(f"{path.relative_to(folder)}: not a notebook that can be read ({reason})")
        if not readable:
            continue
        path, notebook = max(readable, key=lambda pair: pair[0].stat().st_mtime)
        if len(paths) > 1:
            doubles.append(f"{learner}: {len(paths)} notebooks of chapter {number} "
                           f"({', '.join(p.name for p in paths)}); used {path.name}, the last saved")
        results.setdefault(learner, {}).update(check_verdicts(notebook, number))
    return results, skipped, doubles


def collect(folder: Path) -> dict[str, dict[str, str]]:
    """Learner -> exercise id -> verdict, for every notebook under ``folder``; ValueError naming
    the first file that cannot be attributed or read (``gather`` skips such files instead)."""
    results, skipped, _ = gather(folder)
    if skipped:
        raise ValueError(skipped[0])
    return results


def course_exercises(solutions: Path = ROOT / "solutions") -> dict[str, list[str]]:
    """Chapter number (``"03"``) -> its exercise ids, in order: one per check cell of its solution."""
    exercises: dict[str, list[str]] = {}
    for path in sorted(solutions.glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        count = sum(cell.cell_type == "code" and CHECK_TAG in cell.get("metadata", {}).get("tags", [])
                    for cell in notebook.cells)
        exercises[path.stem[:2]] = [f"{path.stem[:2]}.{k}" for k in range(1, count + 1)]
    return exercises


def _columns(results: dict[str, dict[str, str]], course: dict[str, list[str]]) -> list[str]:
    """Every exercise of every chapter someone handed in (the course's list; else those seen)."""
    seen = {exercise for verdicts in results.values() for exercise in verdicts}
    columns = set(seen)
    for chapter in {exercise.split(".")[0] for exercise in seen}:
        columns.update(course.get(chapter, []))
    return sorted(columns, key=lambda e: tuple(int(part) for part in e.split(".")))


def format_results(results: dict[str, dict[str, str]], course: dict[str, list[str]] | None = None) -> str:
    """A plain-text table: one row per learner, one column per exercise, passed and handed in.

    Both counts are out of the same number for every learner: all the exercises of the chapters
    in the table (``course``: chapter -> exercise ids, by default read from solutions/).
    """
    course = course_exercises() if course is None else course
    exercises = _columns(results, course)
    headers = ["learner", *exercises, "passed", "handed in"]
    rows = []
    for learner, verdicts in sorted(results.items()):
        passed = sum(verdicts.get(e) == "passed" for e in exercises)
        handed = sum(e in verdicts for e in exercises)
        rows.append([learner, *(SYMBOLS[verdicts[e]] if e in verdicts else "" for e in exercises),
                     f"{passed}/{len(exercises)}", f"{handed}/{len(exercises)}"])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: " | ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()
    legend = "  ".join(f"{symbol} {name}" for name, symbol in SYMBOLS.items()) + "  (blank) not handed in"
    return "\n".join([line(headers), "-+-".join("-" * width for width in widths), *map(line, rows)]) + (
        f"\n\n{legend}")


def _written_by_us(path: Path) -> bool:
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return next(csv.reader(handle), None) == CSV_HEADER
    except (OSError, UnicodeDecodeError):
        return False


def free_name(target: Path) -> Path:
    """``target`` if it does not exist, else the first free ``stem-2.csv``, ``stem-3.csv``, ...

    Example:
        >>> free_name(Path("no-such-folder/results.csv")).name
        'results.csv'
    """
    candidate, number = target, 1
    while candidate.exists():
        number += 1
        candidate = target.with_name(f"{target.stem}-{number}{target.suffix}")
    return candidate


def write_csv(results: dict[str, dict[str, str]], target: Path, *, force: bool = False,
              course: dict[str, list[str]] | None = None) -> Path:
    """Write learner,exercise,verdict lines; returns the file written (never another's file).

    An existing ``target`` is kept: the lines go to the next free name beside it, unless
    ``force`` and ``target`` is a CSV this tool wrote (then it is replaced).
    """
    if target.exists() and not (force and target.is_file() and _written_by_us(target)):
        if force:
            raise FileExistsError(f"{target} exists and is not a CSV collect_results wrote: "
                                  "name another file for --csv")
        target = free_name(target)
    course = course_exercises() if course is None else course
    exercises = _columns(results, course)
    with open(target, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_HEADER)
        for learner, verdicts in sorted(results.items()):
            for exercise in exercises:
                writer.writerow([learner, exercise, verdicts.get(exercise, "not handed in")])
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the learners' executed notebooks")
    parser.add_argument("--csv", type=Path, help="also write learner,exercise,verdict lines here "
                        "(if it exists: the next free name beside it, results-2.csv)")
    parser.add_argument("--force", action="store_true",
                        help="replace the --csv file if it is one this tool wrote earlier")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder} is not a folder", file=sys.stderr)
        return 2
    results, skipped, doubles = gather(args.folder)
    for line in skipped:
        print(f"warning: skipped {line}", file=sys.stderr)
    for line in doubles:
        print(f"warning: {line}", file=sys.stderr)
    if not results:
        print(f"no notebooks in {args.folder} that could be read", file=sys.stderr)
        return 1
    try:
        written = write_csv(results, args.csv, force=args.force) if args.csv else None
    except FileExistsError as error:
        print(error, file=sys.stderr)
        return 1
    print(format_results(results))
    if written is not None:
        kept = f" ({args.csv} exists and was kept)" if written != args.csv else ""
        print(f"\nwrote {written}{kept}")
    if doubles:
        print("\nTwo notebooks of one chapter (the last saved one is in the table):")
        print("\n".join(f"  {line}" for line in doubles))
    if skipped:
        print("\nSkipped, not in the table (fix or rename them, then run again):")
        print("\n".join(f"  {line}" for line in skipped))
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
