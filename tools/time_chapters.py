"""Measure how long each solution notebook takes to run, for the instructors' kit.

    python tools/time_chapters.py            # every chapter, a markdown table on stdout

Each notebook runs in a fresh kernel, as a learner's "Restart and run all" would, in a
temporary copy (the checkout is not touched). The time includes the kernel's start and
TensorFlow's import (about 5 s on a 2-core machine): it is what a learner waits.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def run_time(notebook: Path) -> float:
    """Seconds to run ``notebook`` top to bottom in a new kernel."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / notebook.name
        shutil.copyfile(notebook, copy)
        node = nbformat.read(copy, as_version=4)
        started = time.perf_counter()
        NotebookClient(node, timeout=1200, resources={"metadata": {"path": folder}}).execute()
        return time.perf_counter() - started


def main() -> int:
    print("| chapter | run time (s) |")
    print("|---|---|")
    for notebook in sorted((ROOT / "solutions").glob("*.ipynb")):
        print(f"| {notebook.stem} | {run_time(notebook):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
