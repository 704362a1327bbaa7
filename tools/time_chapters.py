"""Measure how long each solution notebook takes to run, for the instructors' kit.

    python tools/time_chapters.py                      # every chapter, a markdown table on stdout
    python tools/time_chapters.py 11_resuming_exactly  # only the chapters named
    python tools/time_chapters.py --cells 11_resuming_exactly   # and each cell's seconds
    python tools/time_chapters.py --json               # and instructors/run_times.json (the
                                                       # chapters measured), for tools/make_kit.py

Each notebook runs in a fresh kernel, as a learner's "Restart and run all" would, in a
temporary copy (the checkout is not touched). The run time includes the kernel's start and
TensorFlow's import (about 5 s on a 2-core machine): it is what a learner waits. The table also
shows the seconds from the kernel being ready to the first output, and the CPU seconds of the
kernel and the processes it started and waited for (on Linux; a measure that the machine's other
load inflates less than the wall-clock time).

The first row is the floor: a notebook with only the setup cell and TensorFlow's import, run
the same way. The ratio column is each chapter's run time over the floor's, measured in the
same run, so that the machine's load of the moment divides out (the course's goal: every chapter
within 6x the floor).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Timing:
    """What one run of a notebook took."""

    seconds: float
    first_output: float | None
    cpu: float | None
    cells: list[tuple[int, float]] = field(default_factory=list)


def _process_cpu(pid: int) -> float:
    """CPU seconds of ``pid``, its waited-for children, and its live descendants (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    seconds = sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                seconds += _process_cpu(int(child))
            except OSError:
                pass  # it ended meanwhile
    return seconds


def _cpu_seconds(client: NotebookClient) -> float | None:
    """CPU seconds of the kernel and every process it started (Linux), else None."""
    try:
        return _process_cpu(client.km.provisioner.process.pid)
    except (AttributeError, OSError, ValueError, IndexError):
        return None


def run_time(notebook: Path) -> Timing:
    """Time to run ``notebook`` top to bottom in a new kernel."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / notebook.name
        shutil.copyfile(notebook, copy)
        node = nbformat.read(copy, as_version=4)
        client = NotebookClient(node, timeout=1200, resources={"metadata": {"path": folder}})
        started = time.perf_counter()
        first_output, cells = None, []
        with client.setup_kernel():
            ready = time.perf_counter()
            for index, cell in enumerate(node.cells):
                before = time.perf_counter()
                client.execute_cell(cell, index)
                if cell.cell_type == "code":
                    cells.append((index, time.perf_counter() - before))
                if first_output is None and cell.get("outputs"):
                    first_output = time.perf_counter() - ready
            cpu = _cpu_seconds(client)
            seconds = time.perf_counter() - started
        return Timing(seconds, first_output, cpu, cells)


FLOOR = "floor"


def floor_notebook() -> nbformat.NotebookNode:
    """The least a chapter can take: a new kernel, the setup cell, and TensorFlow's import.

    Example:
        >>> [cell.source for cell in floor_notebook().cells]
        ['from helpers.notebook import start_notebook\\nstart_notebook()', 'import tensorflow as tf']
    """
    cells = ["from helpers.notebook import start_notebook\nstart_notebook()", "import tensorflow as tf"]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])


def run_floor() -> Timing:
    """``run_time`` of ``floor_notebook()``."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{FLOOR}.ipynb"
        nbformat.write(floor_notebook(), path)
        return run_time(path)


def main(argv: list[str]) -> int:
    names = [arg for arg in argv[1:] if not arg.startswith("--")]
    notebooks = [ROOT / "solutions" / f"{Path(name).stem}.ipynb" for name in names] or sorted(
        (ROOT / "solutions").glob("*.ipynb"))
    print("| chapter | run time (s) | x floor | first output (s) | CPU (s) |")
    print("|---|---|---|---|---|")
    times = {}
    floor = run_floor()
    print(_row(FLOOR, floor, floor.seconds), flush=True)
    for notebook in notebooks:
        timing = run_time(notebook)
        times[notebook.stem] = round(timing.seconds, 1)
        print(_row(notebook.stem, timing, floor.seconds), flush=True)
        if "--cells" in argv:
            for index, seconds in sorted(timing.cells, key=lambda pair: -pair[1])[:12]:
                print(f"    cell {index}: {seconds:.1f} s", flush=True)
    if "--json" in argv:
        path = ROOT / "instructors" / "run_times.json"
        known = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**known, **times}, indent=2, sort_keys=True) + "\n")
    return 0


def _row(name: str, timing: Timing, floor: float) -> str:
    """One line of the table: seconds, ratio to the floor's seconds, first output, CPU."""
    first = "" if timing.first_output is None else f"{timing.first_output:.1f}"
    cpu = "" if timing.cpu is None else f"{timing.cpu:.0f}"
    return f"| {name} | {timing.seconds:.1f} | {timing.seconds / floor:.1f} | {first} | {cpu} |"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
