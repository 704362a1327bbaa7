"""Each chapter's slides (tools/make_slides.py): what they hold, that they stand alone, and in a browser.

The browser tests open the decks from file://, as an instructor would from a USB stick, in the
distribution's Chromium (the fixtures of tests/test_site.py). COURSE_SCREENSHOTS=folder keeps
screenshots of a deck at 1280 and 390 px, in light and dark mode.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_exercises  # noqa: E402
import make_slides  # noqa: E402
from test_site import DESKTOP, PHONE, _background_lightness, _screenshot, _viewport, browser, needs_browser  # noqa: E402,F401

CHAPTERS = sorted((ROOT / "solutions").glob("*.ipynb"))
DECK = CHAPTERS[3].stem  # a chapter with recipes, pitfalls and four exercises


@pytest.fixture(scope="module")
def decks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("slides")
    make_slides.write_decks(out)
    return out


def _slides(deck_html: str) -> list[tuple[str, str]]:
    """(class, inner HTML) of each slide."""
    return re.findall(r'<section class="slide ([^"]+)">(.*?)</section>', deck_html, re.S)


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_every_chapter_has_a_deck_with_its_questions_objectives_code_exercises_and_key_points(decks):
    assert sorted(path.name for path in decks.glob("*.html")) == [path.stem + ".html" for path in CHAPTERS]
    assert len(CHAPTERS) >= 16  # a new chapter adds a deck; no count to go stale
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        slides = _slides((decks / f"{path.stem}.html").read_text(encoding="utf-8"))
        kinds = [kind for kind, _ in slides]
        assert kinds[0] == "title" and "Questions this chapter answers" in slides[0][1], path.stem
        assert "objectives" in kinds and "key-points" in kinds, path.stem
        assert kinds[-1] == "key-points", f"{path.stem}: the deck should end on its key points"
        title = make_slides.make_kit.chapter_title(notebook, path.stem)
        h1 = re.search(r"<h1>(.*?)</h1>", slides[0][1], re.S)[1]
        assert _text(h1) == re.sub(r"[`*]", "", title.partition(" · ")[2] or title), f"{path.stem}: {h1!r}"
        code = [body for kind, body in slides if kind == "code-slide"]
        assert [_text(re.search(r"<h2>(.*?)</h2>", body, re.S)[1]) for body in code] == [
            re.sub(r"`", "", slide.heading) for slide in make_slides.key_code(notebook)], path.stem
        sources = {cell.source for cell in notebook.cells if cell.cell_type == "code"}
        for body in code:  # each code slide is one whole cell of the notebook, character for character
            block = re.search(r'<pre class="code"[^>]*><code>(.*?)</code></pre>', body, re.S)[1]
            assert _text(block) in sources, f"{path.stem}: not a cell of the notebook: {_text(block)[:80]!r}"
        exercises = [body for kind, body in slides if kind == "exercise"]
        assert len(exercises) == len(re.findall(r"^\*\*Exercise \d\d\.\d", "\n".join(
            cell.source for cell in notebook.cells if cell.cell_type == "markdown"), re.M)) >= 3, path.stem
        every = "\n".join(_text(body) for _, body in slides)
        asked = make_slides.questions(notebook)
        assert asked or path.stem.startswith("00"), f"{path.stem}: no questions found"
        for item in asked + make_slides.make_kit.objectives(notebook) + make_slides.key_points(notebook):
            words = re.sub(r"[`*]", "", item).split()[:4]  # the item's opening words, markup aside
            assert " ".join(words) in re.sub(r"\s+", " ", every), f"{path.stem}: missing {item!r}"


def test_every_section_has_one_code_slide_in_order_and_tagged_cells_win():
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        sections = make_slides.sections(notebook)
        with_code = [heading for heading, cells in sections
                     if any(make_slides._is_candidate(notebook.cells[i])
                            or make_slides.SLIDE_TAG in notebook.cells[i].metadata.get("tags", []) for i in cells)]
        chosen = make_slides.key_code(notebook)
        assert list(dict.fromkeys(slide.heading for slide in chosen)) == with_code, path.stem
        numbered = [heading for heading, _ in sections if re.match(r"\d+\. ", heading)]
        # Sections whose code is all setup, timings or versions (passed over), or that report what was
        # measured on another machine (chapter 16's PyTorch and GPUs): no slide, on purpose.
        assert set(numbered) - set(with_code) <= {"1. How the course works", "2. The setup cell",
                                                   "3. Your environment", "8. What running N models costs",
                                                   "9. Why pinning TensorFlow 2.15 is not a plan",
                                                   "8. PyTorch, other devices and other precisions"}, path.stem
        for heading, cells in sections:
            tagged = [notebook.cells[i] for i in cells if make_slides.SLIDE_TAG in notebook.cells[i].metadata.get("tags", [])]
            for cell in tagged:
                assert cell.cell_type == "code" and make_exercises.BEGIN not in cell.source
                assert len(cell.source.splitlines()) <= make_slides.MAX_CODE_LINES
            if tagged:
                assert [s.source for s in chosen if s.heading == heading] == [cell.source for cell in tagged]
            else:
                assert len([s for s in chosen if s.heading == heading]) <= 1, f"{path.stem} {heading}"


def test_two_tagged_cells_of_a_section_make_two_slides_and_a_rebound_name_is_noted():
    """Chapter 12's pitfall (sublayers made in build()) and the recipe that catches it can both be
    slides; a name an earlier slide binds, then a cell not on a slide binds again, gets its note."""
    code, tagged = nbformat.v4.new_code_cell, {"tags": ["slide"]}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## 1. One"), code("model = 1\nassert model", metadata=tagged),
        nbformat.v4.new_markdown_cell("## 2. Two"), code("model = 2"),
        code("late = model + 1\nassert late", metadata=tagged), code("print(late, model)", metadata=tagged)])
    chosen = make_slides.key_code(nb)
    assert [(s.heading, s.source.splitlines()[0]) for s in chosen] == [
        ("1. One", "model = 1"), ("2. Two", "late = model + 1"), ("2. Two", "print(late, model)")]
    assert chosen[1].earlier == ("`model` (section 2)",), "rebound by a cell not on a slide"
    assert chosen[2].earlier == ("`model` (section 2)",), "late is on the slide before, model is not"
    twelve = make_slides.key_code(nbformat.read(ROOT / "solutions" / "12_custom_code_on_reload.ipynb", as_version=4))
    hdf5 = next(s for s in twelve if s.heading.startswith("9. "))
    assert "model" in make_slides.free_names(hdf5.source) and "`model` (section 9)" in hdf5.earlier


# What the review of the slides found missing: the code that carries each of these sections' point.
_POINTS = {
    "11_resuming_exactly": {"4.": "BackupAndRestore(", "6.": "CheckpointManager(", "10.": "run_two_workers",
                            "11.": "use_ema=True"},
    "08_keras_files": {"3.": 'save_weights("easy_checkpoint")', "4.": "skip_mismatch=True", "5.": "load_weights"},
    "03_many_models": {"3.": "V1.train.Saver(name_map(", "7.": "VectorizedEnsemble("},
    "00_start_here": {"4.": "V1.placeholder"},
    "12_custom_code_on_reload": {"3.": "custom_objects=", "7.": "load_weights"},
    "01_saving_and_restoring": {"7.": "build_scaled_model", "9.": "restart("},
}


def test_key_code_carries_each_sections_point():
    for stem, points in _POINTS.items():
        chosen = make_slides.key_code(nbformat.read(ROOT / "solutions" / f"{stem}.ipynb", as_version=4))
        for number, code in points.items():
            slide = next(slide for slide in chosen if slide.heading.startswith(number + " "))
            assert code in slide.source, f"{stem} {slide.heading}: {code!r} not on its slide"
    nb = nbformat.v4.new_notebook(cells=[  # the rule: a recipe refusing input is a pitfall, not the recipe at work
        nbformat.v4.new_code_cell("from helpers.recipes import load"), nbformat.v4.new_markdown_cell("## 1. A"),
        nbformat.v4.new_code_cell("with expect_error(E):\n    load('bad')"),
        nbformat.v4.new_code_cell("model = load('good')\nassert model")])
    assert [slide.source for slide in make_slides.key_code(nb)] == ["model = load('good')\nassert model"]
    for cell in ("from helpers.identify import stored_real_file", "path, _ = stored_real_file('a', 'b')"):
        assert not make_slides._is_candidate(nbformat.v4.new_code_cell(cell)), cell


def test_the_slide_tag_stays_out_of_the_exercise_notebooks():
    solution = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["slide"]}),
        nbformat.v4.new_code_cell("y = 2", metadata={"tags": ["slide", "nbval-ignore-output"]})])
    exercise = make_exercises.make_exercise_notebook(solution)
    assert "tags" not in exercise.cells[0].metadata
    assert exercise.cells[1].metadata["tags"] == ["nbval-ignore-output"]
    for path in CHAPTERS:
        text = (ROOT / "notebooks" / path.name).read_text(encoding="utf-8")
        assert '"slide"' not in text, path.name


def test_prose_on_slides_is_rendered_like_the_site_and_escaped():
    assert make_slides._markdown("returns <Tensor> objects") == "<p>returns &lt;Tensor&gt; objects</p>"
    assert "<script>" not in make_slides._markdown("a <script>alert(1)</script> b")
    assert make_slides._inline("scaled to $[0, 1]$, 2**20 bytes, `a<b`") == (
        "scaled to <code>[0, 1]</code>, <code>2**20</code> bytes, <code>a&lt;b</code>")
    assert make_slides._inline("not in the table above") == "not in the chapter's table"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "**Exercise 99.1: x.** Say why.\n### BEGIN SOLUTION\nBecause it is secret.\n### END SOLUTION"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 1\n### END SOLUTION")])
    (exercise,) = make_slides.exercises(notebook)
    assert "secret" not in exercise.prompt and "YOUR ANSWER HERE" in exercise.prompt


def test_exercise_slides_show_their_prompt_without_raw_markup_or_references_above(decks):
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        deck_html = (decks / f"{path.stem}.html").read_text(encoding="utf-8")
        bodies = [body for kind, body in _slides(deck_html) if kind == "exercise"]
        for exercise, body in zip(make_slides.exercises(notebook), bodies, strict=True):
            prompt = re.sub(r"^\*\*Exercise [^*]*\*\*\s*", "", exercise.prompt)
            words = " ".join(re.sub(r"[`*$\\]", "", prompt).split()[:5])
            assert words in re.sub(r"\s+", " ", _text(body)), f"{path.stem} {exercise.number}: {words!r}"
        for kind, body in _slides(deck_html):
            prose = _text(re.sub(r"<(pre|code)\b.*?</\1>", "", body, flags=re.S))
            assert not re.search(r"\$\S[^$]*\$|\*\*|\\\*", prose), f"{path.stem} {kind}: raw markup in {prose[:200]!r}"
            if kind == "exercise":
                assert not re.search(r"\babove\b", prose), f"{path.stem}: a prompt points above: {prose[:200]!r}"


def _solution_lines(notebook: nbformat.NotebookNode) -> list[str]:
    """The lines only a solution has: between the solution markers, and nowhere else in the notebook."""
    inside_lines, outside_lines = [], set()
    for cell in notebook.cells:
        inside = False
        for line in cell.source.splitlines():
            marker = make_exercises._MARKER.match(line)
            if marker:
                inside = marker["marker"] == make_exercises.BEGIN
            elif inside:
                inside_lines.append(line.strip())
            else:
                outside_lines.add(line.strip())
    return [line for line in inside_lines
            if len(line) >= 12 and not line.startswith("#") and line not in outside_lines]


def test_exercises_show_their_prompt_and_stub_but_no_solution(decks):
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        text = _text((decks / f"{path.stem}.html").read_text(encoding="utf-8"))
        solution = _solution_lines(notebook)
        assert solution, f"{path.stem}: no solution lines found: the test would prove nothing"
        lines = {line.strip() for line in text.splitlines()}
        shown = [line for line in solution if line in lines]
        assert not shown, f"{path.stem}: solution code on a slide: {shown[:3]}"
        assert make_exercises.BEGIN not in text
        exercises = [body for kind, body in _slides((decks / f"{path.stem}.html").read_text()) if kind == "exercise"]
        assert all("# YOUR CODE HERE" in _text(body) for body in exercises), f"{path.stem}: an exercise lacks its stub"


def test_decks_load_nothing_from_anywhere(decks):
    for deck in decks.glob("*.html"):
        text = deck.read_text(encoding="utf-8")
        assert not re.search(r"<script[^>]*\bsrc=", text), f"{deck.name} loads a script"
        assert not re.search(r"<link[^>]*\bhref=\"(?!data:)", text), f"{deck.name} loads a file"
        assert not re.search(r"<(img|iframe|video|audio|source)\b", text), f"{deck.name} embeds a file"
        assert not re.search(r"@import|url\(", text), f"{deck.name}'s style loads a file"
        assert not re.search(r"(src|href)=\"https?://", text), f"{deck.name} points at the network"


def test_code_slides_are_at_most_25_lines_and_escaped(decks):
    for deck in decks.glob("*.html"):
        for block in re.findall(r'<pre class="code"[^>]*><code>(.*?)</code></pre>', deck.read_text(), re.S):
            assert len(_text(block).splitlines()) <= 25, deck.name
    source = 'if a < b and "<b>x</b>" != c:  # <script>alert(1)</script>\n    print(a >> 2 & 1)'
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · A test\n\n**Learning objectives**\n\n- compare `a<b`\n"),
        nbformat.v4.new_markdown_cell("## 1. Less than"), nbformat.v4.new_code_cell(source),
        nbformat.v4.new_markdown_cell("## Key points\n\n- `<` is escaped")])
    deck_html = make_slides.deck(notebook, "99_test")
    code = re.search(r'<pre class="code"[^>]*><code>(.*?)</code></pre>', deck_html, re.S)[1]
    assert _text(code) == source, "the code on a slide is not the cell's code, character for character"
    assert "<script>alert" not in deck_html and "<b>x" not in deck_html
    assert "<li><code>&lt;</code> is escaped</li>" in deck_html


def test_a_longer_cell_never_becomes_a_slide():
    long_cell = "\n".join(f"x{i} = helper({i})" for i in range(26))
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("from helpers.recipes import helper"),
        nbformat.v4.new_markdown_cell("## 1. Long"), nbformat.v4.new_code_cell(long_cell),
        nbformat.v4.new_code_cell("y = helper(1)\nz = y + 1\nprint(z)")])
    assert [slide.source for slide in make_slides.key_code(notebook)] == ["y = helper(1)\nz = y + 1\nprint(z)"]


def test_decks_are_the_same_when_built_twice(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    make_slides.write_decks(first)
    make_slides.write_decks(second)
    for deck in sorted(first.glob("*.html")):
        assert deck.read_bytes() == (second / deck.name).read_bytes(), deck.name


# --------------------------------------------------------------------------- in a browser


@pytest.fixture
def deck_browser(browser):
    yield browser
    _viewport(browser, DESKTOP)
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "", "features": []})


def _counter(browser) -> str:
    return browser.find_element("id", "counter").text


def _press(browser, key) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).send_keys(key).perform()


@needs_browser
def test_a_deck_opened_from_a_file_moves_with_keys_and_clicks(decks, deck_browser):
    from selenium.webdriver.common.keys import Keys

    _viewport(deck_browser, (1280, 720))
    deck_browser.get((decks / f"{DECK}.html").as_uri())
    total = len(_slides((decks / f"{DECK}.html").read_text()))
    assert _counter(deck_browser) == f"1 / {total}"
    _screenshot(deck_browser, f"slides-desktop-{DECK}-1-title")
    _press(deck_browser, Keys.ARROW_RIGHT)
    assert _counter(deck_browser) == f"2 / {total}"
    _press(deck_browser, Keys.SPACE)
    assert _counter(deck_browser) == f"3 / {total}"
    _press(deck_browser, Keys.ARROW_LEFT)
    assert _counter(deck_browser) == f"2 / {total}"
    _press(deck_browser, Keys.END)
    assert _counter(deck_browser) == f"{total} / {total}"
    _press(deck_browser, Keys.ARROW_RIGHT)
    assert _counter(deck_browser) == f"{total} / {total}", "past the last slide"
    _press(deck_browser, Keys.HOME)
    assert _counter(deck_browser) == f"1 / {total}"
    visible = deck_browser.execute_script(
        "return Array.from(document.querySelectorAll('.slide')).filter(s => s.offsetParent !== null).length;")
    assert visible == 1, "one slide at a time"
    body = deck_browser.find_element("id", "deck")
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(deck_browser).move_to_element_with_offset(body, 400, 0).click().perform()  # right side
    assert _counter(deck_browser) == f"2 / {total}"
    ActionChains(deck_browser).move_to_element_with_offset(body, -500, 0).click().perform()  # left third
    assert _counter(deck_browser) == f"1 / {total}"
    deck_browser.find_element("id", "next").click()
    assert _counter(deck_browser) == f"2 / {total}" and deck_browser.current_url.endswith("#2")
    deck_browser.refresh()
    assert _counter(deck_browser) == f"2 / {total}", "a reload keeps the slide"
    errors = [entry["message"] for entry in deck_browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert not errors, errors


def _every_slide(browser, check) -> None:
    """Call ``check(slide_number)`` on every slide of the open deck, moving with →."""
    from selenium.webdriver.common.keys import Keys

    total = int(_counter(browser).split(" / ")[1])
    _press(browser, Keys.HOME)
    for number in range(1, total + 1):
        assert _counter(browser) == f"{number} / {total}"
        check(number)
        _press(browser, Keys.ARROW_RIGHT)


@needs_browser
def test_every_slide_fits_a_projector_without_scrolling(decks, deck_browser):
    _viewport(deck_browser, (1280, 720))
    for path in CHAPTERS:
        deck_browser.get((decks / f"{path.stem}.html").as_uri())
        kinds = [kind for kind, _ in _slides((decks / f"{path.stem}.html").read_text())]

        def fits(number: int) -> None:
            height, room = deck_browser.execute_script(
                "const s = document.querySelector('.slide.current'); return [s.scrollHeight, s.clientHeight];")
            assert height <= room, f"{path.stem} slide {number} ({kinds[number - 1]}) needs scrolling"
            if kinds[number - 1] != "code-slide":
                return
            sizes = deck_browser.execute_script(
                "const pre = document.querySelector('.slide.current pre');"
                "return [pre.scrollWidth, pre.clientWidth, parseFloat(getComputedStyle(pre).fontSize)];")
            assert sizes[0] <= sizes[1], f"{path.stem} slide {number}: code wider than the slide: {sizes}"
            assert sizes[2] >= 14, f"{path.stem} slide {number}: code in {sizes[2]} px type"

        _every_slide(deck_browser, fits)
        if path.stem == DECK:
            deck_browser.get((decks / f"{path.stem}.html").as_uri() + f"#{kinds.index('code-slide') + 1}")
            _screenshot(deck_browser, f"slides-desktop-{DECK}-code")


@needs_browser
def test_a_deck_fits_a_phone_and_follows_dark_mode(decks, deck_browser):
    from selenium.webdriver.common.keys import Keys

    _viewport(deck_browser, PHONE, dark=True)
    deck_browser.get((decks / f"{DECK}.html").as_uri())
    assert _background_lightness(deck_browser) < 0.2, "the deck is not dark in dark mode"
    kinds = [kind for kind, _ in _slides((decks / f"{DECK}.html").read_text())]

    def fits(number: int) -> None:
        width, inner = deck_browser.execute_script("return [document.documentElement.scrollWidth, innerWidth];")
        assert width <= inner, f"slide {number} is {width} px wide on a {inner} px phone"
        if kinds[number - 1] in {"code-slide", "exercise"} and f"phone-{kinds[number - 1]}" not in shot:
            shot.add(f"phone-{kinds[number - 1]}")
            _screenshot(deck_browser, f"slides-phone-dark-{DECK}-{number}")

    shot: set[str] = set()
    _every_slide(deck_browser, fits)
    _viewport(deck_browser, PHONE, dark=False)
    deck_browser.get((decks / f"{DECK}.html").as_uri())
    assert _background_lightness(deck_browser) > 0.8, "the deck is not light in light mode"
    _press(deck_browser, Keys.ARROW_RIGHT)
    assert _counter(deck_browser).startswith("2 / ")
    _screenshot(deck_browser, f"slides-phone-light-{DECK}-2")
    _viewport(deck_browser, (1280, 720), dark=True)
    deck_browser.get((decks / f"{DECK}.html").as_uri() + f"#{kinds.index('code-slide') + 1}")
    _screenshot(deck_browser, f"slides-desktop-dark-{DECK}-code")


@needs_browser
def test_inline_code_wraps_on_a_phone(decks, deck_browser):
    """A long `tf.train.Checkpoint(iterator=...)` in a key point breaks inside the screen, not past it."""
    _viewport(deck_browser, PHONE, dark=False)
    too_far = []
    for chapter in (CHAPTERS[3], CHAPTERS[11]):
        deck_browser.get((decks / f"{chapter.stem}.html").as_uri())

        def inside(number: int) -> None:
            right = deck_browser.execute_script(
                "return Math.max(0, ...Array.from(document.querySelectorAll(':not(pre) > code'))"
                ".filter(c => c.offsetParent !== null).map(c => c.getBoundingClientRect().right));")
            if right > PHONE[0]:
                too_far.append(f"{chapter.stem} slide {number}: inline code to {right:.0f} px")

        _every_slide(deck_browser, inside)
    assert not too_far, "\n".join(too_far)


@needs_browser
def test_printed_each_slide_is_a_page_in_light_colours_even_from_a_dark_system(decks, deck_browser):
    import base64

    _viewport(deck_browser, (1280, 720), dark=True)
    deck_browser.get((decks / f"{DECK}.html").as_uri())
    total = len(_slides((decks / f"{DECK}.html").read_text()))
    assert _background_lightness(deck_browser) < 0.2, "the screen is dark"
    deck_browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "media": "print", "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    colours = deck_browser.execute_script(
        "const get = (selector, property) => getComputedStyle(document.querySelector(selector))[property];"
        "return [get('.objectives h2', 'color'), get('pre.code', 'backgroundColor'), get('body', 'backgroundColor'),"
        " get('pre.code .k, pre.code .kn', 'color'), get('body', 'color'), get('pre.code', 'color')];")
    assert colours == ["rgb(13, 71, 161)", "rgb(243, 245, 247)", "rgb(255, 255, 255)", "rgb(142, 36, 170)",
                       "rgb(0, 0, 0)", "rgb(0, 0, 0)"], colours
    shown = deck_browser.execute_script(
        "return Array.from(document.querySelectorAll('.slide')).map(s => [getComputedStyle(s).display,"
        " getComputedStyle(s).breakAfter]);")
    assert all(display == "block" for display, _ in shown), "printed, every slide shows"
    assert all(after == "page" for _, after in shown[:-1])
    assert deck_browser.execute_script("return getComputedStyle(document.getElementById('controls')).display;") \
        == "none"
    assert deck_browser.execute_script("return getComputedStyle(document.querySelector('.keys')).display;") \
        == "none", "the keyboard hint is for the screen, not for paper"
    pdf = base64.b64decode(deck_browser.execute_cdp_cmd("Page.printToPDF", {"landscape": True})["data"])
    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) == total, "one printed page per slide"


# --------------------------------------------------------------------------- output and names


def _chosen_cells(notebook) -> list:
    """The notebook's cells that became key-code slides, in order."""
    sources = [slide.source for slide in make_slides.key_code(notebook)]
    cells = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source in sources]
    return [next(cell for cell in cells if cell.source == source) for source in sources]


def test_every_key_code_slide_shows_the_output_its_cell_stores(decks):
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        slides = [body for kind, body in _slides((decks / f"{path.stem}.html").read_text()) if kind == "code-slide"]
        cells = _chosen_cells(notebook)
        assert len(slides) == len(cells), path.stem
        for body, cell in zip(slides, cells):
            shown = re.search(r'<pre class="output"><samp>(.*?)</samp></pre>', body, re.S)
            printed = [o for o in cell.outputs if o.output_type in ("stream", "error", "execute_result", "display_data")]
            assert bool(shown) == bool(printed), f"{path.stem}: {cell.source.splitlines()[0]!r}: output shown {bool(shown)}"
            if shown:
                first = make_slides.output_text(cell).splitlines()[0]
                assert html.unescape(shown[1]).splitlines()[0] == first
                lines = len(cell.source.splitlines()) + len(html.unescape(shown[1]).splitlines())
                assert lines <= max(make_slides.MAX_SLIDE_LINES, len(cell.source.splitlines()) + 6)


def test_every_name_a_code_slide_uses_is_defined_on_the_deck_or_named_in_its_note(decks):
    """Chapter 12's slide on build(): `late.LateModel` and `round_trip` come from earlier sections."""
    for path in CHAPTERS:
        notebook = nbformat.read(path, as_version=4)
        imported = set()  # what the chapter imports from libraries and its setup: known to the room
        for cell in notebook.cells:
            if cell.cell_type == "code":
                imported |= {name for name, module in make_slides._imports(cell.source).items()
                             if not module.startswith("helpers") or module in make_slides._SETUP_MODULES}
        slides = [body for kind, body in _slides((decks / f"{path.stem}.html").read_text()) if kind == "code-slide"]
        defined: dict[str, int] = {}  # name -> the slide's cell that binds it
        for body, cell in zip(slides, _chosen_cells(notebook)):
            index = next(i for i, c in enumerate(notebook.cells) if c is cell)
            note = re.search(r'<p class="earlier">(.*?)</p>', body, re.S)
            noted = set(re.findall(r"<code>(\w+)</code> \(", note[1])) if note else set()
            still = {name for name, at in defined.items() if make_slides._last_bound(notebook, name, index) == at}
            missing = make_slides.free_names(cell.source) - still - noted - imported
            assert not missing, f"{path.stem}: {sorted(missing)} used on a slide that does not say where they come from"
            defined |= dict.fromkeys(make_slides.bound_names(cell.source), index)
    twelve = (decks / "12_custom_code_on_reload.html").read_text()
    build = next(body for kind, body in _slides(twelve) if kind == "code-slide" and "late.LateModel" in _text(body))
    assert "<code>late</code> (section 4)" in build or "<code>late</code> (section" in build
    assert "<code>round_trip</code> (recipe, <code>helpers.keras_files</code>)" in build
    assert "layer     hidden         built   unbuilt" in html.unescape(build), "the pitfall's line is on the slide"
