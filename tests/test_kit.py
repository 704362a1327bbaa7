"""The instructors' kit stays true to the chapters."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

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


def test_hint_lists_are_whole_not_cut_at_the_first_full_stop():
    notes = (ROOT / "instructors" / "chapters.md").read_text()
    hints = [line[2:] for line in notes.splitlines() if line.startswith("- ")]
    assert not [hint for hint in hints if hint.endswith(("(e.g", "e.g", "(i.e"))], "a hint is cut short"
    for hint in hints:
        assert hint.count("(") == hint.count(")") or "…" in hint, f"a hint is cut inside parentheses: {hint}"
    whole = [hint for checks in sorted((ROOT / "helpers" / "checks").glob("ex*.py"))
             for hint in make_kit.mistakes(checks) if ". " in hint.rstrip(".")]
    assert whole, "no hint of more than one sentence: the test no longer shows hints are whole"
    assert all(hint in notes for hint in whole)


# --------------------------------------------------------------------------- collecting results

import collect_results  # noqa: E402


def _execute(notebook, folder: Path):
    from nbclient import NotebookClient

    NotebookClient(notebook, timeout=600, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return notebook


def test_collect_results_reads_executed_notebooks_with_right_wrong_and_missing_answers(tmp_path, capsys):
    import nbformat

    stem = "00_start_here"
    exercise = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
    solution = nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
    answers = {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in solution.cells
               if cell.metadata.get("nbgrader", {}).get("solution")}
    # bob: 00.1 wrong (returns the old name unchanged), 00.2 left as the stub, 00.3 right.
    bob = nbformat.from_dict(exercise)
    for cell in bob.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id == f"{stem}-answer-1":
            cell.source = cell.source.replace("raise NotImplementedError()", "return old")
        elif grade_id == f"{stem}-answer-3":
            cell.source = answers[grade_id]
    submissions = tmp_path / "submissions"
    (submissions / "ada").mkdir(parents=True)
    (submissions / "cy").mkdir()
    nbformat.write(_execute(nbformat.from_dict(solution), tmp_path), submissions / "ada" / f"{stem}.ipynb")
    nbformat.write(_execute(bob, tmp_path), submissions / f"bob__{stem}.ipynb")
    nbformat.write(exercise, submissions / "cy" / f"{stem}.ipynb")  # saved without running it

    results = collect_results.collect(submissions)
    assert results == {
        "ada": {"00.1": "passed", "00.2": "passed", "00.3": "passed"},
        "bob": {"00.1": "not right", "00.2": "not done", "00.3": "passed"},
        "cy": {"00.1": "not run", "00.2": "not run", "00.3": "not run"},
    }
    csv_file = tmp_path / "results.csv"
    assert collect_results.main([str(submissions), "--csv", str(csv_file)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split(" | ") == ["learner", "00.1", "00.2", "00.3", "passed", "handed in"]
    assert [row.split(" | ")[0].strip() for row in table[2:5]] == ["ada", "bob", "cy"]
    assert table[3].split(" | ")[1:] == ["✘   ", "–   ", "✔   ", "1/3   ", "3/3"]
    lines = csv_file.read_text().splitlines()
    assert lines[0] == "learner,exercise,verdict" and "bob,00.1,not right" in lines and len(lines) == 10
    assert collect_results.main([str(submissions), "--csv", str(csv_file)]) == 0, "a second run works"
    assert (tmp_path / "results-2.csv").read_text().splitlines() == lines, "beside the first, not over it"
    assert csv_file.read_text().splitlines() == lines


def test_every_learner_is_counted_out_of_the_same_exercises_and_handed_in_is_shown_apart():
    course = {"03": ["03.1", "03.2", "03.3"], "06": ["06.1", "06.2", "06.3"]}
    # ada handed in both chapters and passed 2 of 6; bo only chapter 03 and passed none of it.
    results = {"ada": {"03.1": "passed", "03.2": "not right", "03.3": "not done",
                       "06.1": "passed", "06.2": "not right", "06.3": "not run"},
               "bo": {"03.1": "not right", "03.2": "not done", "03.3": "not right"}}
    table = collect_results.format_results(results, course).splitlines()
    assert table[0].split(" | ")[-2:] == ["passed", "handed in"]
    assert [row.split(" | ")[-2:] for row in table[2:4]] == [["2/6   ", "6/6"], ["0/6   ", "3/6"]]
    assert "(blank) not handed in" in table[-1]


def test_a_second_run_never_overwrites_a_file_and_force_replaces_only_its_own_csv(tmp_path):
    course = {"00": ["00.1"]}
    first = {"ada": {"00.1": "not right"}}
    target = tmp_path / "results.csv"
    assert collect_results.write_csv(first, target, course=course) == target
    assert collect_results.write_csv({"ada": {"00.1": "passed"}}, target, course=course) == tmp_path / "results-2.csv"
    assert "not right" in target.read_text(), "the first file is kept"
    assert collect_results.write_csv({"ada": {"00.1": "passed"}}, target, force=True, course=course) == target
    assert "ada,00.1,passed" in target.read_text(), "--force replaces the tool's own CSV"
    notes = tmp_path / "notes.csv"
    notes.write_text("my own grades\n")
    with pytest.raises(FileExistsError, match="not a CSV collect_results wrote"):
        collect_results.write_csv(first, notes, force=True, course=course)
    assert notes.read_text() == "my own grades\n"
    assert collect_results.write_csv(first, notes, course=course).name == "notes-2.csv"
    assert notes.read_text() == "my own grades\n"


def test_the_course_exercises_are_one_per_check_cell_of_each_solution():
    course = collect_results.course_exercises()
    assert sorted(course) == [path.stem[:2] for path in CHAPTERS]
    assert course["00"] == ["00.1", "00.2", "00.3"] and all(course.values())


def test_collect_results_refuses_a_notebook_it_cannot_attribute(tmp_path):
    (tmp_path / "00_start_here.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="<learner>__<chapter>.ipynb"):
        collect_results.collect(tmp_path)


def test_the_setup_page_says_what_to_install_on_a_wsl_ubuntu_whose_python_is_too_old():
    setup = (ROOT / "instructors" / "setup.md").read_text(encoding="utf-8")
    assert "Ubuntu 22.04" in setup and "3.10" in setup, "Ubuntu 22.04's python3 (3.10) is not supported: say so"
    assert "sudo apt update && sudo apt install python3.11 python3.11-venv" in setup


def test_the_one_day_schedule_adds_up_and_has_room_for_installs_introductions_breaks_and_feedback():
    import re

    text = (ROOT / "instructors" / "schedule.md").read_text(encoding="utf-8")
    day = text.split("## One day", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d\d):(\d\d) \| ([^|]+) \|", day, re.M)
    minutes = [(int(h) * 60 + int(m), what.strip()) for h, m, what in rows]
    assert minutes[-1][1] == "end", "the day has an end time"
    for (start, what), (following, _) in zip(minutes, minutes[1:]):
        chapter = re.match(r"\[(\d\d) ·", what)
        length = make_kit.TEACHING[chapter[1]][0] if chapter else int(re.search(r"\((\d+) min\)", what + " (30 min)")[1])
        assert start + length == following, f"{what}: {length} min from {start // 60}:{start % 60:02} does not reach the next row"
    kinds = " ".join(what for _, what in minutes)
    for needed in ("install", "introductions", "break", "lunch", "buffer", "feedback", "wrap-up"):
        assert needed in kinds, needed


def test_every_glossary_entry_points_to_a_chapter_that_mentions_it():
    import re

    glossary = (ROOT / "instructors" / "glossary.md").read_text(encoding="utf-8")
    rows = re.findall(r"^- \*\*(.+?)\*\*(?: \([^)]*\))? \(chapter \[(\d\d)\]\(\.\./notebooks/(\d\d_\w+)\.ipynb\)\): (.+)$",
                      glossary, re.M)
    rows = [(term, meaning, number, stem) for term, number, stem, meaning in rows]
    assert len(rows) == glossary.count("\n- **") and len(rows) >= 20
    names = [path.stem for path in CHAPTERS]
    for term, meaning, number, stem in rows:
        assert stem in names and stem.startswith(number), f"{term}: no chapter {stem}"
        notebook = make_kit.nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4)
        text = " ".join(cell.source for cell in notebook.cells).replace("`", "").lower()
        assert term.replace("`", "").lower() in text, f"{term}: chapter {number} does not mention it"
        assert meaning.count(". ") == 0 and meaning.endswith("."), f"{term}: one sentence"
    terms = [term.replace("`", "").lstrip(".").lower() for term, *_ in rows]
    assert terms == sorted(terms), "the glossary is in alphabetical order"
    for needed in ("twin", "slot", "shard", "object graph", "restore-on-create", "name-based checkpoint",
                   "signature", "endpoint", "legacy .h5", "keras", "tf-keras", "tfsmlayer",
                   "frozen graph", "litert"):
        assert needed in terms, needed


def test_every_exercise_of_a_chapter_has_a_mistake_listed():
    notes = (ROOT / "instructors" / "chapters.md").read_text()
    for path in CHAPTERS:
        notebook = make_kit.nbformat.read(path, as_version=4)
        numbers = [heading.split()[1].rstrip(":") for heading in make_kit.exercises(notebook)]
        listed = make_kit.mistakes_by_exercise(ROOT / "helpers" / "checks" / f"ex{path.stem[:2]}.py")
        for number in numbers:
            assert listed.get(number), f"{path.stem}: exercise {number} has no mistake listed"
            assert f"- {number}: {listed[number][0]}" in notes, f"{number}: run `python tools/make_kit.py`"


def test_mistakes_are_collected_in_source_order_and_merged_by_kind(tmp_path):
    module = tmp_path / "ex99.py"
    module.write_text('''
_SHARED = Hint("the idea of a shared mistake (section 1)", "the fix, not the other way", kind="shared")


@exercise_check("99.1")
def check_one(answer):
    require(answer != 1, "the first mistake of 99.1, said in full")
    require(answer != 2, _SHARED)
    require(answer != 3, Hint("another idea, same kind (section 2)", "another fix of that kind", kind="shared"))
    require(answer != 4, Hint("a step whose fix needs its idea (section 3)", "call f()"))


@exercise_check("99.2")
def check_two(answer):
    require(answer != 5, "the only mistake of 99.2, said in full")
''')
    listed = make_kit.mistakes_by_exercise(module)
    assert list(listed) == ["99.1", "99.2"]
    # In source order: the module's constant (line 2) before the check's own hints; one per kind.
    assert listed["99.1"] == ["the fix, not the other way", "the first mistake of 99.1, said in full",
                              "a step whose fix needs its idea (section 3) — call f()"]
    assert listed["99.2"] == ["the only mistake of 99.2, said in full"]


def _saved_notebook(path: Path, verdict_line: str) -> None:
    """A learner's saved exercise notebook whose one check cell printed ``verdict_line``."""
    import nbformat

    cell = nbformat.v4.new_code_cell("check()", metadata={"tags": [collect_results.CHECK_TAG]},
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text=verdict_line)])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)


def test_a_damaged_or_misnamed_file_is_skipped_listed_under_the_table_and_the_run_exits_1(tmp_path, capsys):
    _saved_notebook(tmp_path / "ada" / "00_start_here.ipynb", "✔ Exercise 00.1 passed\n")
    _saved_notebook(tmp_path / "bo__00_start_here.ipynb", "✔ Exercise 00.1 passed\n")
    (tmp_path / "cy").mkdir()
    (tmp_path / "cy" / "00_start_here.ipynb").write_text('{"cells": [')  # cut off while copying
    (tmp_path / "00_start_here.ipynb").write_text("{}")  # no learner in its name
    assert collect_results.main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    table, _, skipped = out.partition("Skipped, not in the table")
    assert [row.split(" | ")[0].strip() for row in table.splitlines()[2:4]] == ["ada", "bo"]
    assert "cy/00_start_here.ipynb: not a notebook that can be read" in skipped
    assert "00_start_here.ipynb: name it <learner>__<chapter>.ipynb" in skipped
    assert err.count("warning: skipped") == 2 and "cy/00_start_here.ipynb" in err


def test_two_notebooks_of_one_chapter_the_last_saved_is_used_and_named(tmp_path, capsys):
    import os

    old, new = tmp_path / "dee" / "00_start_here.ipynb", tmp_path / "dee" / "00_start_here (1).ipynb"
    _saved_notebook(old, "✔ Exercise 00.1 passed\n")
    _saved_notebook(new, "Exercise 00.1: not right yet\n")
    os.utime(old, (1_000_000_000, 1_000_000_000))
    os.utime(new, (1_000_000_100, 1_000_000_100))
    assert collect_results.main([str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[2].split(" | ")[:2] == ["dee    ", "✘   "], "the last saved one"
    assert "used 00_start_here (1).ipynb, the last saved" in err and "used 00_start_here (1).ipynb" in out
    os.utime(old, (1_000_000_200, 1_000_000_200))
    assert collect_results.gather(tmp_path)[0] == {"dee": {"00.1": "passed"}}


def test_the_guide_sends_learners_the_setup_page_only_with_no_clone_line_of_its_own():
    guide = (ROOT / "instructors" / "README.md").read_text(encoding="utf-8")
    before = guide.split("## Before the day", 1)[1].split("\n### ", 1)[0]
    assert "[the setup page](setup.md)" in before
    assert "git clone <" not in guide and "these two steps" not in guide


def test_the_three_day_plan_states_each_half_days_chapter_minutes_and_they_fit():
    import re

    text = (ROOT / "instructors" / "schedule.md").read_text(encoding="utf-8")
    plan = text.split("## Three days", 1)[1]
    halves = re.findall(r"^\| \d \| (.+?) \| (.+?) \|$", plan, re.M)
    assert len(halves) == 3
    seen = []
    for half in (part for row in halves for part in row):
        numbers = re.findall(r"\b(\d\d) [A-Z]", half)
        stated = int(re.search(r"\((\d+) min\)$", half)[1])
        assert stated == sum(make_kit.TEACHING[n][0] for n in numbers), f"{half}: the minutes do not add up"
        assert stated + 15 <= 210, f"{half}: more than a half-day of 3½ hours with a break"
        prose = " ".join(plan.split("\n\n", 2)[2].split())
        assert stated >= 150 or re.search(rf"\b{stated}\b", prose), f"{half}: a shorter half-day is explained"
        seen += numbers
    assert seen == [path.stem[:2] for path in CHAPTERS], "every chapter once, in order"
    assert "about three hours" not in plan, "say the minutes the table gives"
