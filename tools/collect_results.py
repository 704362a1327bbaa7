"""Which exercises each learner passed, from their executed notebooks: no nbgrader needed.

    python tools/collect_results.py FOLDER [--csv results.csv]

FOLDER holds the learners' exercise notebooks, run and saved ("Restart and run all", then save):
either one folder per learner (``FOLDER/ada/03_many_models.ipynb``) or flat files named
``<learner>__<chapter>.ipynb`` (``FOLDER/ada__03_many_models.ipynb``). The verdict of each
exercise is read from the stored output of its check cell (the cells nbgrader would grade):

* ``✔`` passed (the check printed "Exercise NN.k passed");
* ``✘`` not right yet (the check raised: a wrong answer, or the learner's code failed);
* ``–`` not done (the stub still raises ``NotImplementedError``);
* ``·`` not run (the check cell has no output: the notebook was saved without running it).

It prints one row per learner, one column per exercise and the number passed, and with
``--csv`` writes one line per learner and exercise. It never changes the notebooks.

Example:
    >>> print(format_results({"ada": {"00.1": "passed", "00.2": "not right"}}))  # doctest: +NORMALIZE_WHITESPACE
    learner | 00.1 | 00.2 | passed
    --------+------+------+-------
    ada     | ✔    | ✘    | 1/2
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

import nbformat

CHECK_TAG = "exercise-check"
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


def collect(folder: Path) -> dict[str, dict[str, str]]:
    """Learner -> exercise id -> verdict, for every notebook under ``folder``."""
    results: dict[str, dict[str, str]] = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        relative = path.relative_to(folder)
        if len(relative.parts) > 1:
            learner, chapter = relative.parts[0], path.stem
        elif "__" in path.stem:
            learner, chapter = path.stem.split("__", 1)
        else:
            raise ValueError(f"{relative}: name it <learner>__<chapter>.ipynb or put it in a folder per learner")
        if not re.match(r"^\d\d_", chapter):
            raise ValueError(f"{relative}: {chapter!r} is not a chapter's notebook (NN_topic.ipynb)")
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception as error:  # noqa: BLE001 - one unreadable file must not hide the others
            raise ValueError(f"{relative}: not a notebook that can be read ({error})") from None
        results.setdefault(learner, {}).update(check_verdicts(notebook, chapter))
    return results


def format_results(results: dict[str, dict[str, str]]) -> str:
    """A plain-text table: one row per learner, one column per exercise, and the count passed."""
    exercises = sorted({exercise for verdicts in results.values() for exercise in verdicts})
    headers = ["learner", *exercises, "passed"]
    rows = []
    for learner, verdicts in sorted(results.items()):
        passed = sum(verdict == "passed" for verdict in verdicts.values())
        rows.append([learner, *(SYMBOLS[verdicts[e]] if e in verdicts else " " for e in exercises),
                     f"{passed}/{len(verdicts)}"])
    widths = [max(len(str(row[i])) for row in [headers, *rows]) for i in range(len(headers))]
    line = lambda cells: " | ".join(str(cell).ljust(width) for cell, width in zip(cells, widths)).rstrip()
    legend = "  ".join(f"{symbol} {name}" for name, symbol in SYMBOLS.items())
    return "\n".join([line(headers), "-+-".join("-" * width for width in widths), *map(line, rows)]) + (
        f"\n\n{legend}" if len(rows) > 1 else "")


def write_csv(results: dict[str, dict[str, str]], target: Path) -> None:
    if target.exists():
        raise FileExistsError(f"{target} exists: name a new file for the CSV")
    with open(target, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", "exercise", "verdict"])
        for learner, verdicts in sorted(results.items()):
            for exercise, verdict in sorted(verdicts.items()):
                writer.writerow([learner, exercise, verdict])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the learners' executed notebooks")
    parser.add_argument("--csv", type=Path, help="also write learner,exercise,verdict lines here (a new file)")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder} is not a folder", file=sys.stderr)
        return 2
    try:
        results = collect(args.folder)
        if args.csv:
            write_csv(results, args.csv)
    except (ValueError, FileExistsError) as error:
        print(error, file=sys.stderr)
        return 1
    if not results:
        print(f"no notebooks in {args.folder}", file=sys.stderr)
        return 1
    print(format_results(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
