"""Every page that lists or orders the chapters agrees with the chapters as they are.

The list of chapters is derived from ``solutions/NN_*.ipynb``, so a new chapter
makes these tests fail until each page lists it: no page may hard-code a count.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(path.name[:2] for path in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
NUMBER_WORDS = ("ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen "
                "nineteen twenty").split()


def _markdown(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


def _table_numbers(text: str) -> list[str]:
    """The chapter numbers of a table's rows that start `| NN |`."""
    return re.findall(r"^\|\s*(\d\d)\s*\|", text, flags=re.MULTILINE)


def test_the_chapters_are_numbered_from_00_without_gaps():
    assert CHAPTERS == [f"{n:02d}" for n in range(len(CHAPTERS))]
    assert (ROOT / "notebooks").is_dir()
    assert sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) == sorted(
        p.name for p in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_chapter_00_maps_every_chapter_and_names_no_count(folder):
    start = "\n".join(_markdown(next((ROOT / folder).glob("00_*.ipynb"))))
    assert _table_numbers(start) == CHAPTERS
    counted = re.search(rf"\b({'|'.join(NUMBER_WORDS)}|\d+) chapters\b", start, flags=re.IGNORECASE)
    assert counted is None, f"chapter 00 names a count that goes stale: {counted[0]!r}"


def test_the_readme_lists_every_chapter_in_order():
    readme = (ROOT / "README.md").read_text()
    assert _table_numbers(readme) == CHAPTERS
    for number in CHAPTERS:
        name = next((ROOT / "notebooks").glob(f"{number}_*.ipynb")).name
        assert f"(notebooks/{name})" in readme


def test_the_instructor_notes_list_every_chapter_in_order():
    notes = (ROOT / "instructors" / "chapters.md").read_text()
    assert re.findall(r"^## (\d\d) · ", notes, flags=re.MULTILINE) == CHAPTERS
    assert re.findall(r"^\| \[(\d\d)_", notes, flags=re.MULTILINE) == CHAPTERS


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_no_chapter_names_a_count_of_chapters(folder):
    for notebook in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
        text = "\n".join(_markdown(notebook))
        counted = re.search(rf"\b({'|'.join(NUMBER_WORDS)}|\d+) chapters\b", text, flags=re.IGNORECASE)
        assert counted is None, f"{folder}/{notebook.name} names a count that goes stale: {counted[0]!r}"


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_only_the_last_chapter_calls_itself_the_last(folder):
    for notebook in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
        text = "\n".join(_markdown(notebook))
        says_last = re.search(r"\b(last|final) chapter\b", text, flags=re.IGNORECASE) is not None
        assert says_last == (notebook.name[:2] == CHAPTERS[-1]), f"{folder}/{notebook.name}"


def _named_as_next(notebook: Path) -> set[str]:
    """The chapter numbers on the lines starting "Next" at the end of a chapter."""
    lines = "\n".join(_markdown(notebook)[-2:]).splitlines()
    text = "\n".join(line for line in lines if re.match(r"\W*Next\b", line))
    return set(re.findall(r"(?:chapter|notebook|\*\*|\[)\s*(\d\d)\b", text))


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_each_chapter_points_to_the_next_one_not_further(folder):
    for number, following in zip(CHAPTERS, [*CHAPTERS[1:], None]):
        notebook = next((ROOT / folder).glob(f"{number}_*.ipynb"))
        named = _named_as_next(notebook)
        if following is None:  # the last chapter names no chapter after itself
            assert all(n <= number for n in named), f"{folder}/{notebook.name}: {sorted(named)}"
        else:
            assert following in named, f"{folder}/{notebook.name} does not name {following} as next"
            assert all(n <= following for n in named), f"{folder}/{notebook.name}: {sorted(named)}"


def test_the_whole_course_schedule_has_every_chapter_once_in_order():
    schedule = (ROOT / "instructors" / "schedule.md").read_text()
    whole = schedule.split("the whole course", 1)[1].split("\n\n", 2)[1]  # the table after the heading
    assert re.findall(r"(?:^|· |\| )(\d\d) [A-Z]", whole, flags=re.MULTILINE) == CHAPTERS
