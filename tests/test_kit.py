"""The instructors' kit stays true to the chapters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_kit  # noqa: E402

CHAPTERS = sorted((ROOT / "solutions").glob("*.ipynb"))


def test_chapter_notes_are_up_to_date():
    assert make_kit.main(["make_kit.py", "--check"]) == 0, "run `python tools/make_kit.py`"


def test_every_chapter_has_objectives_exercises_mistakes_a_teaching_time_and_a_run_time():
    run_times = json.loads((ROOT / "instructors" / "run_times.json").read_text())
    for path in CHAPTERS:
        notebook = make_kit.nbformat.read(path, as_version=4)
        assert path.stem[:2] in make_kit.TEACHING, f"{path.stem}: no teaching time in tools/make_kit.py"
        assert make_kit.objectives(notebook), f"{path.stem}: no learning objectives found"
        assert make_kit.exercises(notebook), f"{path.stem}: no exercise headings found"
        assert make_kit.mistakes(ROOT / "helpers" / "checks" / f"ex{path.stem[:2]}.py"), path.stem
        assert path.stem in run_times, f"{path.stem} has no measured run time: python tools/time_chapters.py --json"
