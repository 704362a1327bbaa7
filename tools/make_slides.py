"""Slides for every chapter, made from its solution notebook: ``python tools/make_slides.py FOLDER``.

``make site`` writes them into ``build/site/slides/`` (tools/build_site.py calls ``write_decks``),
each chapter page and the kit's chapter notes link to them. One HTML file per chapter, with its
style and a few lines of plain JavaScript inside: nothing is loaded from anywhere, so a deck works
opened from a USB stick (``file://``) on a projector with no network.

A deck holds, in this order:

* the chapter's title and the questions it answers (the notebook's "Questions this notebook answers");
* its learning objectives ("After this chapter you will");
* one slide of key code per section, in order (``key_code``): the code cell its author tagged
  ``slide`` (cell metadata ``tags``; several tagged cells, several slides), else one chosen by a
  fixed rule: the cell that calls one of
  the course's recipes (a name imported from ``helpers``) outside ``expect_error``, else the one
  that shows a pitfall failing (``expect_error``, a recipe refusing bad input included), else one
  with an ``assert``, else the section's first code cell (among equals, one of three lines or more
  before a shorter one); plots, timings, imports, the course's stored files and the chapter's setup
  are passed over. Each shows its section's heading, the cell's code as it is (at most 25
  lines, as every course cell), the output the notebook stores for it (``output_text``: its
  printed text, result or error, at most 14 lines; code and output together at most 30), and a
  line naming what the code uses that no earlier slide of the deck defines, or that a cell not
  on a slide defines again after it (``CodeSlide.earlier``: the chapter's data, modules it wrote,
  the recipes it imported, with the section of the last cell that binds each);
* each exercise's prompt with the code learners start from: the exercise notebook's stub, made by
  tools/make_exercises.py, so no solution is on a slide (the prompt too loses any marked solution,
  and "the table above" becomes "the chapter's table": the slide has none above);
* the key points.

Keys: → / space / Page Down next, ← / Page Up back, Home / End; a click or tap on the right two
thirds of a slide goes on, on the left third back. The slide's number is in the address (``#5``),
so a reload stays put. A few lines of script size each slide's type to fill the screen without
scrolling (never below a readable size: past it, a slide scrolls and wide code scrolls sideways).
Printed (or saved as PDF), each slide is a page, in the light colours whatever the system's
setting. Dark mode follows the system's setting on screen.

Prose is rendered by the site's renderer (nbconvert's ``markdown2html_mistune``, as
tools/build_site.py), with raw HTML escaped; ``$...$`` and ``2**20`` show as code, as there is
no math renderer offline.
"""

from __future__ import annotations

import ast
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert.filters.markdown_mistune import markdown2html_mistune
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_exercises  # noqa: E402  (tools/ is not a package)
import make_kit  # noqa: E402

SOLUTIONS = ROOT / "solutions"
SLIDE_TAG = make_exercises.SLIDE_TAG  # on the code cell an author picks for a section's slide
MAX_CODE_LINES = 25
# Lists are cut into slides of at most this many items and characters, so that type stays large.
ITEMS_PER_SLIDE, CHARACTERS_PER_SLIDE = 4, 780
# Cells that teach little on a slide: the setup, checks, plots, timings and the course's stored files.
_PASSED_OVER = ("start_notebook(", "plt.", "first_and_later_seconds(", "compare_seconds(", "stored_real_file(")
_EXERCISE = re.compile(r"^\*\*Exercise (?P<number>\d\d\.\d)\b", re.MULTILINE)


@dataclass(frozen=True)
class CodeSlide:
    """One slide of key code: its section's heading, the cell's source and its stored output, and
    the names it uses that an earlier slide does not define (with where the chapter defines them)."""

    heading: str
    source: str
    output: str = ""
    earlier: tuple[str, ...] = ()


MAX_OUTPUT_LINES = 14
MAX_SLIDE_LINES = 30  # code and output together, so that the type stays readable on a projector
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Names imported from these top-level packages need no note (the chapter's setup, libraries).
_SETUP_MODULES = {"helpers.notebook", "helpers.checks", "helpers.errors"}


def output_text(cell: nbformat.NotebookNode, max_lines: int = MAX_OUTPUT_LINES) -> str:
    """What the notebook stores as the cell's output, as plain text (a plot as ``[plot]``), cut to
    ``max_lines`` lines (the last one then ``…``).

    Example:
        >>> cell = nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\\n")])
        >>> output_text(cell)
        '1'
    """
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(output.get("text", ""))
        elif kind == "error":
            parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
        elif kind in ("execute_result", "display_data"):
            data = output.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                parts.append("[plot]")
            elif "text/plain" in data:
                parts.append(data["text/plain"])
    lines = _ANSI.sub("", "\n".join(part.rstrip("\n") for part in parts)).strip("\n").splitlines()
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], "…"]
    return "\n".join(lines)


def _parsed(source: str) -> ast.AST | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def bound_names(source: str) -> set[str]:
    """The names a cell defines: assigned, imported, ``def``/``class``, loop and ``with`` targets, arguments.

    Example:
        >>> sorted(bound_names("import numpy as np\\nfrom a import b\\nx, y = 1, 2\\ndef f(z): return z"))
        ['b', 'f', 'np', 'x', 'y', 'z']
    """
    tree = _parsed(source)
    if tree is None:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def free_names(source: str) -> set[str]:
    """The names a cell uses but does not define (builtins left out).

    Example:
        >>> sorted(free_names("model = late.LateModel()\\nprint(round_trip(model, x))"))
        ['late', 'round_trip', 'x']
    """
    import builtins

    tree = _parsed(source)
    if tree is None:
        return set()
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return used - bound_names(source) - set(dir(builtins))


def _imports(source: str) -> dict[str, str]:
    """Name -> the module it is imported from, for every import of a cell."""
    tree = _parsed(source)
    found = {}
    for node in ast.walk(tree) if tree is not None else []:
        if isinstance(node, ast.ImportFrom):
            found |= {alias.asname or alias.name: node.module or "" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {(alias.asname or alias.name).split(".")[0]: alias.name for alias in node.names}
    return found


def _defined_earlier(notebook: nbformat.NotebookNode, index: int, names: set[str],
                     places: dict[int, str]) -> tuple[str, ...]:
    """For each of ``names``, where the chapter defines it before cell ``index``: a recipe's module,
    or the section (``places``: cell index -> its section's number, "setup" before the first)."""
    notes = {}
    for position in range(index):
        cell = notebook.cells[position]
        if cell.cell_type != "code":
            continue
        imported = _imports(cell.source)
        for name in names & bound_names(cell.source):
            module = imported.get(name)
            if module is not None and not module.startswith("helpers"):
                notes[name] = None  # a library's name (tf, keras, np, os...): no note
            elif module is not None and module in _SETUP_MODULES:
                notes[name] = None  # the chapter's setup (expect_error...)
            elif module is not None:
                notes[name] = f"`{name}` (recipe, `{module}`)"
            else:  # the last cell that binds it before this one: a name rebound later is that one
                notes[name] = f"`{name}` ({places.get(position, 'setup')})"
        # A name defined by code the chapter holds in a string and runs (chapter 13's reader).
        for name in names - set(notes):
            if re.search(rf"^\s*(?:def|class) {name}\b|^\s*{name} = ", cell.source, re.M):
                notes[name] = f"`{name}` ({places.get(position, 'setup')})"
    for name in names - set(notes):
        notes[name] = f"`{name}` (earlier in the chapter)"
    return tuple(note for name, note in sorted(notes.items()) if note)


@dataclass(frozen=True)
class Exercise:
    """An exercise's prompt (markdown) and the code a learner starts from (no solution)."""

    number: str
    prompt: str
    stub: str


def _recipe_names(notebook: nbformat.NotebookNode) -> set[str]:
    """The names the notebook imports from the course's recipes (``helpers.*``, not its notebook tools)."""
    names: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers.")
                    and node.module not in {"helpers.notebook", "helpers.checks", "helpers.errors"}):
                names |= {alias.asname or alias.name for alias in node.names}
    return names


def _used_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return ({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
            | {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)})


def _outside_expect_error(source: str) -> set[str]:
    """The names ``source`` uses outside its ``with expect_error(...):`` blocks (a recipe called in one
    is shown failing: a pitfall, not the recipe at work)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()

    class Pitfalls(ast.NodeTransformer):
        def visit_With(self, node: ast.With) -> ast.AST:
            if any("expect_error" in _used_names(ast.unparse(item)) for item in node.items):
                return ast.Pass()
            return self.generic_visit(node)

    return _used_names(ast.unparse(Pitfalls().visit(tree)))


def _only_imports(source: str) -> bool:
    try:
        return all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in ast.parse(source).body)
    except SyntaxError:
        return False


def _is_candidate(cell: nbformat.NotebookNode) -> bool:
    tags = cell.metadata.get("tags", [])
    return (cell.cell_type == "code" and cell.source.strip() != ""
            and make_exercises.BEGIN not in cell.source and make_exercises.CHECK_TAG not in tags
            and make_exercises.COLAB_TAG not in tags and "nbval-ignore-output" not in tags
            and not any(word in cell.source for word in _PASSED_OVER) and not _only_imports(cell.source)
            and len(cell.source.splitlines()) <= MAX_CODE_LINES)


def _score(source: str, index: int, recipes: set[str]) -> tuple[int, ...]:
    names = _used_names(source)
    asserts = re.search(r"^\s*assert (?!not\b)", source, re.M) is not None
    return (int(bool(_outside_expect_error(source) & recipes)), int("expect_error" in names), int(asserts),
            int(len(source.splitlines()) >= 3), -index)


def sections(notebook: nbformat.NotebookNode) -> list[tuple[str, list[int]]]:
    """Each ``##`` section before the exercises: its heading and the indices of its cells."""
    found: list[tuple[str, list[int]]] = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            headings = [line[3:].strip() for line in cell.source.splitlines() if line.startswith("## ")]
            if headings:
                found.append((headings[-1], []))
                continue
        if found:
            found[-1][1].append(index)
    return [(heading, cells) for heading, cells in found if not heading.startswith(("Exercises", "Key points"))]


def key_code(notebook: nbformat.NotebookNode) -> list[CodeSlide]:
    """One slide of key code per section, in notebook order (see the module's docstring for the rule).

    Example:
        >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 1. One"),
        ...     nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("with expect_error(E):\\n    f()"),
        ...     nbformat.v4.new_markdown_cell("## 2. Two"), nbformat.v4.new_code_cell("y = 2"),
        ...     nbformat.v4.new_code_cell("z = 3", metadata={"tags": ["slide"]})])
        >>> [(slide.heading, slide.source) for slide in key_code(nb)]  # the pitfall; the tagged cell
        [('1. One', 'with expect_error(E):\\n    f()'), ('2. Two', 'z = 3')]
    """
    recipes = _recipe_names(notebook)
    parts = sections(notebook)
    places = {index: ("section " + (re.match(r"\d+", heading) or [heading])[0]) for heading, indices in parts
              for index in indices}
    picked = []
    for heading, indices in parts:
        cells = [(index, notebook.cells[index]) for index in indices if notebook.cells[index].cell_type == "code"]
        tagged = [(index, cell) for index, cell in cells if SLIDE_TAG in cell.metadata.get("tags", [])]
        scored = [(_score(cell.source, index, recipes), index) for index, cell in cells if _is_candidate(cell)]
        if tagged:  # every cell the author tagged, each on a slide (a pitfall and its fix, say)
            picked += [(heading, index) for index, _ in tagged]
        elif scored:
            picked.append((heading, max(scored)[1]))
    chosen, shown = [], {}  # shown: name -> the slide's cell that binds it
    for heading, index in picked:
        cell = notebook.cells[index]
        # A name an earlier slide binds needs no note, unless a cell not on a slide binds it again
        # in between (chapter 12's `model`): then the note says where.
        names = {name for name in free_names(cell.source)
                 if name not in shown or shown[name] != _last_bound(notebook, name, index)}
        earlier = _defined_earlier(notebook, index, names, places)
        room = max(6, min(MAX_OUTPUT_LINES, MAX_SLIDE_LINES - len(cell.source.splitlines())))
        chosen.append(CodeSlide(heading, cell.source, output_text(cell, room), earlier))
        shown |= dict.fromkeys(bound_names(cell.source), index)
    return chosen


def _last_bound(notebook: nbformat.NotebookNode, name: str, index: int) -> int | None:
    """The last code cell before ``index`` that binds ``name``, or None."""
    return next((position for position in range(index - 1, -1, -1) if notebook.cells[position].cell_type == "code"
                 and name in bound_names(notebook.cells[position].source)), None)


def questions(notebook: nbformat.NotebookNode) -> list[str]:
    """The questions the chapter answers (the list under "Questions this ... answers")."""
    for cell in notebook.cells[:4]:
        if cell.cell_type == "markdown" and (match := re.search(r"Questions this[^\n]*answers", cell.source)):
            return make_kit.bullets_after(cell.source, match[0])
    return []


def key_points(notebook: nbformat.NotebookNode) -> list[str]:
    """The items of the chapter's "## Key points" list."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and "## Key points" in cell.source:
            return make_kit.bullets_after(cell.source, "## Key points")
    return []


def exercises(notebook: nbformat.NotebookNode) -> list[Exercise]:
    """Each exercise's prompt and its answer cell as the exercise notebook has it (solution stubbed)."""
    found: list[Exercise] = []
    cells = notebook.cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        matches = list(_EXERCISE.finditer(cell.source))
        for match, following in zip(matches, matches[1:] + [None]):
            prompt = cell.source[match.start(): following.start() if following else None].strip()
            prompt, _ = make_exercises.strip_solutions(prompt, make_exercises.MARKDOWN_STUB)
            answer = next((later for later in cells[index + 1:] if later.cell_type == "code"), None)
            stub = ""
            if following is None and answer is not None and make_exercises.BEGIN in answer.source:
                stub, _ = make_exercises.strip_solutions(answer.source, make_exercises.CODE_STUB)
            found.append(Exercise(match["number"], prompt, stub))
    return found


# --------------------------------------------------------------------------- HTML


_CODE_SPAN = re.compile(r"(``.+?``|`[^`]*`)", re.S)
_MATH = re.compile(r"(?<![\\$\w])\$([^$\n]+?)\$(?![\w$])")
_POWER = re.compile(r"\b(\d+)\\?\*\\?\*(\d+)\b")  # 2**20, or 2\*\*20 escaped
# References to what a slide does not show: "the table above" -> "the chapter's table".
_ABOVE = [(re.compile(r"\blike the one above\b"), "like the chapter's"),
          (re.compile(r"\bthe (\w+) above\b"), r"the chapter's \1")]


def _prose(text: str) -> str:
    """Markdown ready for rendering on a slide: raw HTML escaped, math and powers as code spans.

    Example:
        >>> _prose("returns <Tensor> in $[0, 1]$, 2**20 bytes, `a<b`")
        'returns &lt;Tensor> in `[0, 1]`, `2**20` bytes, `a<b`'
    """
    parts = []
    for index, part in enumerate(_CODE_SPAN.split(text)):
        if index % 2:  # a code span: as it is
            parts.append(part)
            continue
        part = part.replace("<", "&lt;")
        part = _MATH.sub(lambda match: f"`{match[1].strip()}`", part)
        part = _POWER.sub(r"`\1**\2`", part)
        for pattern, replacement in _ABOVE:
            part = pattern.sub(replacement, part)
        parts.append(part)
    return "".join(parts)


def _markdown(text: str) -> str:
    """Markdown as HTML with the site's renderer, links kept as their text (a deck stands alone)."""
    rendered = markdown2html_mistune(_prose(text)).strip()
    return re.sub(r"<a\b[^>]*>(.*?)</a>", r"\1", rendered, flags=re.S)


def _inline(text: str) -> str:
    """One line of markdown (a heading, a list item) as inline HTML; "3. Title" stays a heading."""
    if numbered := re.fullmatch(r"(\d+\.) (.*)", text, re.S):
        return numbered[1] + " " + _inline(numbered[2])
    rendered = _markdown(text)
    match = re.fullmatch(r"<p>(.*)</p>", rendered, re.S)
    return match[1] if match else rendered


def _packed(items: list[str], characters: int) -> list[list[str]]:
    """Items in order, a slide filled until the next would pass the item or character limit."""
    chunks: list[list[str]] = [[]]
    for item in items:
        if chunks[-1] and (len(chunks[-1]) >= ITEMS_PER_SLIDE or sum(map(len, chunks[-1])) + len(item) > characters):
            chunks.append([])
        chunks[-1].append(item)
    return [chunk for chunk in chunks if chunk]


def _chunks(items: list[str]) -> list[list[str]]:
    """``items`` on as few slides as the limits allow, balanced: 5 short items make 3 and 2, not 4 and 1.

    Example:
        >>> [len(chunk) for chunk in _chunks(["a question?"] * 5)]
        [3, 2]
    """
    if not items:
        return []
    count = len(_packed(items, CHARACTERS_PER_SLIDE))
    for items_per_slide in range(-(-len(items) // count), ITEMS_PER_SLIDE + 1):
        for characters in range(sum(map(len, items)) // count, CHARACTERS_PER_SLIDE + 1, 10):
            chunks = _packed(items, characters)
            if len(chunks) == count and max(map(len, chunks)) <= items_per_slide:
                return chunks
    return _packed(items, CHARACTERS_PER_SLIDE)


def _list_slides(kind: str, title: str, items: list[str], lead: str = "") -> list[str]:
    chunks = _chunks(items)
    slides = []
    for number, chunk in enumerate(chunks, start=1):
        part = f" <small>({number}/{len(chunks)})</small>" if len(chunks) > 1 else ""
        body = "".join(f"<li>{_inline(item)}</li>" for item in chunk)
        slides.append(f'<section class="slide {kind}"><h2>{html.escape(title)}{part}</h2>{lead if number == 1 else ""}'
                      f"<ul>{body}</ul></section>")
    return slides


def _code(source: str) -> str:
    """The code, highlighted and escaped (its type is sized on screen by the deck's script)."""
    code = highlight(source, PythonLexer(), HtmlFormatter(nowrap=True)).rstrip("\n")
    return f'<pre class="code"><code>{code}</code></pre>'


def slides(notebook: nbformat.NotebookNode, stem: str) -> list[str]:
    """The deck's slides as HTML ``<section>`` elements."""
    title = make_kit.chapter_title(notebook, stem)
    number, _, name = title.partition(" · ")
    asked = questions(notebook)
    opening = (f'<section class="slide title"><p class="chapter">Chapter {html.escape(number)}</p>'
               f"<h1>{_inline(name or title)}</h1>")
    first, *more = _chunks(asked) or [[]]
    if first:
        opening += ("<h2>Questions this chapter answers</h2><ul>"
                    + "".join(f"<li>{_inline(item)}</li>" for item in first) + "</ul>")
    opening += ('<p class="keys">→ or space: next · ←: back · Home / End · '
                "tap the right or left side</p></section>")
    deck = [opening]
    for chunk in more:
        deck += _list_slides("questions", "Questions this chapter answers (continued)", chunk)
    deck += _list_slides("objectives", "Objectives", make_kit.objectives(notebook),
                         lead='<p class="lead">After this chapter you will be able to:</p>')
    for slide in key_code(notebook):
        earlier = (f'<p class="earlier">Defined earlier in the chapter: {_inline(", ".join(slide.earlier))}</p>'
                   if slide.earlier else "")
        output = f'<pre class="output"><samp>{html.escape(slide.output)}</samp></pre>' if slide.output else ""
        deck.append(f'<section class="slide code-slide"><p class="kind">Key code</p>'
                    f"<h2>{_inline(slide.heading)}</h2>{earlier}{_code(slide.source)}{output}"
                    "</section>")
    for exercise in exercises(notebook):
        stub = _code(exercise.stub) if exercise.stub else ""
        heading = re.match(r"\*\*(Exercise [^*]*?)\.?\*\*\s*", exercise.prompt)
        title, prompt = (heading[1], exercise.prompt[heading.end():]) if heading else ("", exercise.prompt)
        deck.append(f'<section class="slide exercise"><p class="kind">Your turn</p><h2>{_inline(title)}</h2>'
                    f'<div class="prompt">{_markdown(prompt)}</div>{stub}'
                    "</section>")
    deck += _list_slides("key-points", "Key points", key_points(notebook))
    return deck


_STYLE = """
:root { --bg: #ffffff; --fg: #1b1f23; --muted: #546e7a; --accent: #0d47a1; --code-bg: #f3f5f7;
  --rule: #cfd8dc; color-scheme: light dark; }
@media screen and (prefers-color-scheme: dark) {
  :root { --bg: #121212; --fg: #eceff1; --muted: #b0bec5; --accent: #90caf9; --code-bg: #1e262b;
    --rule: #37474f; }
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--fg); }
body { font: clamp(16px, min(2.25vw, 3.6vh), 44px)/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.slide { min-height: 100vh; min-height: 100dvh; padding: 4vh 5vw 7vh; border-bottom: 1px solid var(--rule); }
.js .slide { display: none; border: 0; height: 100vh; height: 100dvh; overflow-y: auto; font-size: var(--fit, 1em); }
.js .slide.current { display: block; }
h1 { font-size: 2em; line-height: 1.15; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.35em; line-height: 1.2; margin: 0 0 0.6em; color: var(--accent); }
h2 small { font-size: 0.6em; color: var(--muted); font-weight: normal; }
.title h2 { font-size: 1em; color: var(--muted); margin-top: 1em; }
.chapter, .kind { color: var(--muted); margin: 0; font-size: 0.8em; text-transform: uppercase;
  letter-spacing: 0.08em; }
.keys { color: var(--muted); font-size: 0.65em; margin-top: 2em; }
ul { padding-left: 1.2em; margin: 0; }
li { margin: 0 0 0.55em; }
li::marker { color: var(--accent); }
code { font-family: ui-monospace, "Cascadia Mono", "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.9em; background: var(--code-bg); padding: 0 0.15em; border-radius: 3px;
  overflow-wrap: anywhere; }
pre.code { font-size: 0.8em; line-height: 1.3; background: var(--code-bg); margin: 0;
  padding: 0.6em 1em; border-radius: 6px; border-left: 4px solid var(--accent); overflow-x: auto;
  white-space: pre; }
pre.code code { background: none; padding: 0; font-size: 1em; }
pre.output { font-family: ui-monospace, "Cascadia Mono", "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 0.7em; line-height: 1.25; margin: 0.4em 0 0; padding: 0.3em 0.6em; overflow-x: auto;
  white-space: pre; border-left: 4px solid var(--accent); color: var(--fg); }
.earlier { font-size: 0.7em; color: var(--muted); margin: 0 0 0.4em; }
.code-slide h2 { font-size: 1.15em; }
.exercise .prompt { font-size: 0.85em; margin-bottom: 0.8em; }
.exercise .prompt p { margin: 0.4em 0; }
#controls { position: fixed; right: 1.2vw; bottom: 1.2vh; display: flex; align-items: center; gap: 0.4em;
  font-size: 0.6em; color: var(--muted); background: var(--bg); border-radius: 6px; padding: 0.1em 0.3em; }
#controls button { font: inherit; font-size: 1.2em; color: var(--fg); background: var(--code-bg);
  border: 1px solid var(--rule); border-radius: 4px; min-width: 2.2em; min-height: 1.9em; cursor: pointer; }
#controls a { color: var(--muted); }
#controls:not(.on) { display: none; }
/* Pygments' classes: light, and dark on a dark screen only (never on paper). */
.k, .kn, .kc, .kd, .ow { color: #8e24aa; font-weight: 600; } .s, .s1, .s2, .sa, .sd, .si, .se { color: #2e7d32; }
.c, .c1, .cm { color: #6a737d; font-style: italic; } .mi, .mf, .m { color: #c62828; }
.nf, .nc { color: #1565c0; font-weight: 600; } .nb, .bp { color: #00838f; } .nd { color: #ad1457; }
@media screen and (prefers-color-scheme: dark) {
  .k, .kn, .kc, .kd, .ow { color: #ce93d8; } .s, .s1, .s2, .sa, .sd, .si, .se { color: #a5d6a7; }
  .c, .c1, .cm { color: #9aa5ad; } .mi, .mf, .m { color: #ef9a9a; } .nf, .nc { color: #90caf9; }
  .nb, .bp { color: #80deea; } .nd { color: #f48fb1; }
}
/* Phones, upright or on their side. */
@media (max-width: 600px), (max-height: 500px) {
  body { font-size: 17px; }
  .slide { padding: 0.8rem 1rem 3rem; }
  h1 { font-size: 1.6em; }
  pre.code { padding: 0.5em 0.6em; }
  #controls { font-size: 15px; }
}
@media print {
  @page { size: landscape; margin: 1.2cm; }
  :root { --bg: #ffffff; --fg: #000000; --muted: #546e7a; --accent: #0d47a1; --code-bg: #f3f5f7;
    --rule: #cfd8dc; color-scheme: light; }
  body { font-size: 16pt; background: #fff; color: #000; }
  .js .slide, .slide { display: block; height: auto; min-height: 0; overflow: visible; padding: 0;
    border: 0; break-after: page; page-break-after: always; font-size: 1em; }
  .slide:last-of-type { break-after: auto; page-break-after: auto; }
  pre.code { font-size: 10.5pt; white-space: pre-wrap; }
  pre.output { font-size: 9.5pt; white-space: pre-wrap; }
  #controls, .keys { display: none; }
}
"""

_SCRIPT = r"""(function () {
  var root = document.documentElement, slides = document.querySelectorAll(".slide");
  var controls = document.getElementById("controls"), counter = document.getElementById("counter");
  var current = 0;
  root.className += " js";
  controls.className = "on";
  function fits(slide, px, height_only) {
    slide.style.setProperty("--fit", px + "px");
    if (slide.scrollHeight > slide.clientHeight) return false;
    var code = height_only ? [] : slide.querySelectorAll("pre");
    for (var i = 0; i < code.length; i++) if (code[i].scrollWidth > code[i].clientWidth) return false;
    return true;
  }
  // The largest type that fits the slide; never below a readable size (code at 14 px, 11 px on a
  // phone), where the slide scrolls instead and wide code scrolls sideways.
  function fit(slide) {
    var small = Math.min(innerWidth, innerHeight) < 500;
    var low = small ? 14 : 17.5, high = Math.max(low, Math.min(innerHeight / 20, innerWidth / 18, 56));
    slide.style.overflowY = "hidden";  // measured without a scroll bar, which would narrow the text
    var wide = !fits(slide, low);  // code too wide even at the smallest type: it scrolls sideways, fit the height
    if (wide) high = Math.min(high, low * 1.15);  // ...with little more type, so that little scrolls
    if (fits(slide, high, wide)) low = high;
    for (var step = 0; step < 12 && high - low > 0.25; step++) {
      var middle = (low + high) / 2;
      if (fits(slide, middle, wide)) low = middle; else high = middle;
    }
    slide.style.setProperty("--fit", Math.floor(low * 4) / 4 + "px");
    slide.style.overflowY = "";
  }
  function show(n) {
    current = Math.max(0, Math.min(slides.length - 1, n));
    for (var i = 0; i < slides.length; i++) slides[i].className = slides[i].className.replace(/ current\b/g, "");
    slides[current].className += " current";
    fit(slides[current]);
    slides[current].scrollTop = 0;
    counter.textContent = (current + 1) + " / " + slides.length;
    try { history.replaceState(null, "", "#" + (current + 1)); } catch (e) { /* some file:// pages */ }
  }
  function refit() { fit(slides[current]); }
  window.addEventListener("resize", refit);
  window.addEventListener("load", refit);
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(refit);  // type loads late
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.altKey || event.metaKey) return;
    var key = event.key, step = {ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1}[key];
    if (key === " ") step = event.shiftKey ? -1 : 1;
    if (key === "Home") { show(0); event.preventDefault(); }
    else if (key === "End") { show(slides.length - 1); event.preventDefault(); }
    else if (step) { show(current + step); event.preventDefault(); }
  });
  document.getElementById("deck").addEventListener("click", function (event) {
    if (event.target.closest("a, button") || String(window.getSelection())) return;
    show(current + (event.clientX < window.innerWidth / 3 ? -1 : 1));
  });
  document.getElementById("previous").onclick = function () { show(current - 1); };
  document.getElementById("next").onclick = function () { show(current + 1); };
  function fromAddress() { show((parseInt(location.hash.slice(1), 10) || 1) - 1); }
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
})();
"""


def deck(notebook: nbformat.NotebookNode, stem: str, chapter_page: str | None = None) -> str:
    """The whole deck: one HTML file with its style and script inside.

    ``chapter_page``: a relative link to the chapter's page, shown beside the counter.
    """
    title = make_kit.chapter_title(notebook, stem)
    back = f'<a href="{html.escape(chapter_page)}">chapter</a>' if chapter_page else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>Slides · {html.escape(title)}</title><link rel="icon" href="data:,">'
        f"<style>{_STYLE}</style></head>\n<body>\n<main id=\"deck\">\n"
        + "\n".join(slides(notebook, stem))
        + f'\n</main>\n<nav id="controls" aria-label="Slides">{back}'
        '<button id="previous" type="button" aria-label="Previous slide">←</button>'
        '<span id="counter" aria-live="polite"></span>'
        '<button id="next" type="button" aria-label="Next slide">→</button></nav>\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def write_decks(out: Path, notebooks: dict[str, nbformat.NotebookNode] | None = None,
                chapter_pages: bool = False) -> list[Path]:
    """Write one deck per chapter into ``out`` and return their paths.

    ``chapter_pages``: the decks sit in the site's ``slides/`` folder and link to ``../NN_name.html``.

    Example:
        >>> write_decks(Path("build/slides"))   # doctest: +SKIP
        [PosixPath('build/slides/00_start_here.html'), ...]
    """
    if notebooks is None:
        notebooks = {path.stem: nbformat.read(path, as_version=4) for path in sorted(SOLUTIONS.glob("*.ipynb"))}
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, notebook in notebooks.items():
        path = out / f"{stem}.html"
        path.write_text(deck(notebook, stem, f"../{stem}.html" if chapter_pages else None), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/make_slides.py OUTPUT_FOLDER", file=sys.stderr)
        return 2
    written = write_decks(Path(argv[1]))
    print(f"{len(written)} decks in {argv[1]}/ (open one in a browser; → for the next slide)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
