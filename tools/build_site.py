"""Build the course as a static website: ``python tools/build_site.py build/site`` (``make site``).

One page per chapter, made from ``solutions/`` with every output and plot, the course map
(the README) as the home page, the instructors' kit and cheat sheet, and the exercise and
solution notebooks to download. The pages need no server and no network: open
``build/site/index.html`` in a browser, or publish the folder as it is.

Why nbconvert: it is already one of the course's pinned packages and renders exactly what
JupyterLab shows (stored outputs, retina plots, error blocks); Jupyter Book and MyST would add
a Node.js toolchain to every machine that builds the site, for features this course does not
use (cross-references, citations, math).

A link to a file that does not exist, or that the site does not publish, stops the build
with an error naming the page and the link: the site never ships a broken link.

Every page has the same navigation bar (pinned on wide screens, scrolling away on a phone, where
its links are one row that scrolls sideways and fades at its right edge), an
offline search box (``search-index.js``, built here, and ``search.js``: plain JavaScript, loaded
from the site's own folder on the first keystroke), and follows the system's dark mode. A chapter
page starts with its contents list and folds each exercise's solution (open on click), and links
to the chapter's slides (``slides/``, written by tools/make_slides.py). When the
course's address is set (tools/course_address.py), chapter pages link to the exercise notebook in
Colab and to the release in Binder, and every page to the repository.
"""

from __future__ import annotations

import copy
import html
import json
import posixpath
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import course_address  # noqa: E402  (tools/ is not a package)
import make_slides  # noqa: E402
from make_kit import SLIDES, chapter_title  # noqa: E402,F401  (one reader of a chapter's title)

SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "notebooks"
# Markdown pages published beside the chapters (repository path -> page title).
PAGES = {
    "README.md": "Course map",
    "instructors/setup.md": "Setting up your machine",
    "instructors/README.md": "Instructors' guide",
    "instructors/schedule.md": "Workshop schedules",
    "instructors/chapters.md": "Chapter notes for instructors",
    "instructors/cheatsheet.md": "Cheat sheet: symptom, cause, fix",
    "instructors/glossary.md": "Glossary",
    "CONTRIBUTING.md": "Writing for the course",
    "LICENSE-TEXT.md": "Licence of the text",
}
COPIED_FILES = ["LICENSE", "CITATION.cff"]
_EXTERNAL_SCRIPT = re.compile(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>\s*')
_REMOTE_MODULE = re.compile(r'<script type="module">(?:(?!</script>).)*?https?://(?:(?!</script>).)*</script>\s*', re.S)
_HREF = re.compile(r'(?P<attr>\b(?:href|src))="(?P<url>[^"#]*)(?P<anchor>#[^"]*)?"')


class SiteError(ValueError):
    """A page links to something the site cannot publish."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook's stem, title and page."""

    stem: str
    title: str

    @property
    def page(self) -> str:
        return f"{self.stem}.html"


def site_path(repo_path: str, chapters: dict[str, Chapter]) -> str | None:
    """Where a repository file appears on the site, or None when the site does not publish it.

    Example:
        >>> site_path("notebooks/03_many_models.ipynb", {"03_many_models": Chapter("03_many_models", "03")})
        '03_many_models.html'
        >>> site_path("README.md", {})
        'index.html'
        >>> site_path("build/site/slides/03_x.html", {"03_x": Chapter("03_x", "03")})
        'slides/03_x.html'
    """
    stem = posixpath.splitext(posixpath.basename(repo_path))[0]
    if repo_path.endswith(".ipynb") and posixpath.dirname(repo_path) in {"notebooks", "solutions"}:
        return chapters[stem].page if stem in chapters else None
    if repo_path == "README.md":
        return "index.html"
    if repo_path in PAGES:
        return repo_path[: -len(".md")] + ".html"
    if repo_path in COPIED_FILES:
        return repo_path + ".txt"
    if repo_path.startswith(SLIDES + "/") and posixpath.splitext(posixpath.basename(repo_path))[0] in chapters:
        return repo_path[len(SLIDES) - len("slides"):]  # a deck that `make site` writes
    return None


def rewrite_links(page_html: str, source: str, page: str, chapters: dict[str, Chapter]) -> str:
    """Point the relative links of ``source`` (a repository path) at the site's pages, from ``page``."""

    def rewrite(match: re.Match[str]) -> str:
        url, anchor = match["url"], match["anchor"] or ""
        if not url or re.match(r"^[a-z][a-z0-9+.-]*:", url) or url.startswith("data:"):
            return match[0]  # an anchor on this page, an external link, or an embedded image
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), html.unescape(url)))
        published = site_path(target, chapters)
        if published is None:
            if (ROOT / target).exists():
                raise SiteError(f"{source}: the link {url!r} points at {target!r}, which the site does not publish")
            raise SiteError(f"{source}: the link {url!r} points at {target!r}, which does not exist")
        relative = posixpath.relpath(published, posixpath.dirname(page) or ".")
        return f'{match["attr"]}="{html.escape(relative)}{anchor}"'

    return _HREF.sub(rewrite, page_html)


# No favicon: an empty one keeps browsers from asking the server for /favicon.ico.
_NO_ICON = '<link rel="icon" href="data:,">'
SOLUTION_TAG = "course-solution"
_MARKER_LINE = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")  # nbgrader's markers: not shown on the site
_STYLE = """
html, body { margin: 0; }
body { background: #ffffff; color: #212121; }
body.jp-Notebook { padding: 0 !important; }
.course-chapter { padding: 10px; }
.course-nav { position: sticky; top: 0; z-index: 10; background: #263238; color: #eceff1;
  padding: 0.5rem 1.5rem; font: 0.95rem/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  display: flex; flex-wrap: nowrap; align-items: center; gap: 0.4rem 1.2rem; margin: 0; }
.course-links { display: flex; flex: 1; min-width: 0; align-items: center; gap: 0.4rem 1.1rem;
  flex-wrap: wrap; }
.course-links a { white-space: nowrap; }
.course-nav a { color: #ffffff; text-decoration: none; }
.course-nav a:hover { text-decoration: underline; }
.course-nav .spacer { flex: 1; }
.course-search { position: relative; }
.course-search input { font: inherit; width: 12rem; max-width: 100%; padding: 0.15rem 0.4rem;
  border-radius: 4px; border: 1px solid #90a4ae; background: #37474f; color: #fff; }
.course-results { position: absolute; right: 0; top: 2rem; width: min(34rem, 92vw); max-height: 70vh;
  overflow-y: auto; background: #fff; color: #212121; border: 1px solid #90a4ae; border-radius: 4px;
  box-shadow: 0 4px 16px rgba(0,0,0,.3); z-index: 20; }
.course-results[hidden] { display: none; }
.course-results a { display: block; padding: 0.4rem 0.7rem; color: #0d47a1; border-bottom: 1px solid #eceff1; }
.course-results small { display: block; color: #546e7a; }
.course-results p { margin: 0.5rem 0.7rem; }
body.course-page, .course-text { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.course-text { max-width: 60rem; margin: 1.5rem auto; padding: 0 1.5rem; line-height: 1.55; }
.course-text table { border-collapse: collapse; margin: 1rem 0; }
.course-text th, .course-text td { border: 1px solid #cfd8dc; padding: 0.3rem 0.6rem; vertical-align: top; }
.course-text code { background: #eceff1; padding: 0 0.2rem; border-radius: 3px; }
.course-text pre { background: #eceff1; padding: 0.8rem; overflow-x: auto; }
.course-text pre code { background: none; padding: 0; }
/* Tables and code scroll sideways instead of wrapping or widening the page. */
table { display: block; overflow-x: auto; max-width: 100%; }
pre { white-space: pre !important; word-break: normal !important; overflow-wrap: normal !important;
  overflow-x: auto; max-width: 100%; }
img { max-width: 100%; height: auto; }
.jp-Cell, .jp-OutputArea-output, .jp-RenderedText, .jp-RenderedHTMLCommon { min-width: 0; max-width: 100%; }
.course-toc { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.course-toc details { border: 1px solid #cfd8dc; border-radius: 6px; padding: 0.5rem 1rem; }
.course-toc ul { list-style: none; padding-left: 0.5rem; margin: 0.4rem 0; }
.course-toc { margin: 0.5rem 0 1rem calc(var(--jp-cell-prompt-width, 64px) + 17px); }
.course-text .anchor-link { visibility: hidden; text-decoration: none; }
.course-text :hover > .anchor-link { visibility: visible; }
.course-toc summary, .course-solution > summary { cursor: pointer; font-weight: 600; }
.course-solution { margin: 0.5rem 0 0.5rem var(--jp-cell-prompt-width, 0); border: 1px dashed #90a4ae;
  border-radius: 6px; padding: 0.4rem 0.8rem; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.course-solution > .jp-Cell { margin-left: calc(-1 * var(--jp-cell-prompt-width, 0)); }
@media (max-width: 700px) {
  .course-nav { position: relative; padding: 0.35rem 0.8rem 0.5rem; flex-direction: column; align-items: stretch;
    gap: 0.3rem; }
  .course-links { flex-wrap: nowrap; overflow-x: auto; gap: 1rem; padding-bottom: 0.15rem; scrollbar-width: thin;
    -webkit-mask-image: linear-gradient(to right, #000 calc(100% - 2.5rem), transparent);
    mask-image: linear-gradient(to right, #000 calc(100% - 2.5rem), transparent); }
  /* The row scrolls sideways: its right edge fades to say so, and room after the last link lets
     that link scroll clear of the fade (a flex container's end padding does not scroll). */
  .course-links::after { content: ""; flex: 0 0 1.5rem; }
  .course-links .spacer { display: none; }
  .course-search { position: static; }
  .course-search input { width: 100%; box-sizing: border-box; }
  .course-chapter h1, .course-text h1 { font-size: 1.5rem; line-height: 1.25; margin: 0.6rem 0; }
  .course-results { top: 100%; left: 0.5rem; right: 0.5rem; width: auto; }
  .course-text { padding: 0 0.8rem; }
  .course-toc { margin-left: 0; }
  .jp-InputPrompt, .jp-OutputPrompt { display: none !important; }
  .course-chapter { padding: 0.3rem; }
  .jp-Cell { padding: 0.2rem 0 !important; }
  .course-solution { margin-left: 0; }
  .course-solution > .jp-Cell { margin-left: 0; }
}
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; }
  body, body.jp-Notebook, .course-page { background: #121212 !important; color: #e0e0e0; }
  .jp-Notebook, .jp-Cell, .jp-RenderedHTMLCommon, .jp-RenderedText, .jp-OutputArea-output {
    --jp-layout-color0: #121212; --jp-layout-color1: #1e1e1e; --jp-layout-color2: #263238;
    --jp-layout-color3: #37474f; --jp-inverse-layout-color0: #eceff1; --jp-cell-editor-background: #1e1e1e;
    --jp-cell-editor-border-color: #37474f; --jp-content-font-color0: #f5f5f5;
    --jp-content-font-color1: #e0e0e0; --jp-content-font-color2: #bdbdbd; --jp-ui-font-color1: #e0e0e0;
    --jp-content-link-color: #90caf9; --jp-rendermime-error-background: #3e2723;
    --jp-mirror-editor-keyword-color: #80cbc4; --jp-mirror-editor-string-color: #ef9a9a;
    --jp-mirror-editor-comment-color: #a5d6a7; --jp-mirror-editor-number-color: #a5d6a7;
    --jp-mirror-editor-def-color: #90caf9; --jp-mirror-editor-variable-color: #e0e0e0;
    --jp-mirror-editor-builtin-color: #80cbc4; --jp-mirror-editor-operator-color: #ce93d8;
    --jp-mirror-editor-variable-2-color: #90caf9; --jp-mirror-editor-property-color: #90caf9;
    --jp-mirror-editor-meta-color: #ce93d8; --jp-mirror-editor-attribute-color: #90caf9;
    --jp-mirror-editor-qualifier-color: #90caf9; --jp-mirror-editor-bracket-color: #bdbdbd;
    --jp-mirror-editor-tag-color: #80cbc4; --jp-mirror-editor-header-color: #90caf9;
    color: #e0e0e0; }
  .jp-RenderedHTMLCommon :not(pre) > code { background: #263238 !important; color: #eceff1 !important; }
  .highlight, .highlight pre { background: #1e1e1e !important; color: #e0e0e0; }
  a { color: #90caf9; }
  .course-text code, .course-text pre { background: #263238; color: #eceff1; }
  .course-text th, .course-text td, .course-toc details { border-color: #455a64; }
  .course-results { background: #1e1e1e; color: #e0e0e0; }
  .course-results a { color: #90caf9; border-bottom-color: #37474f; }
  .course-results small { color: #b0bec5; }
  img { background: #fff; }
}
"""

# Reading comfort (review of issue 28): long inline code wraps instead of widening a phone's page or a
# table; a heading reached by a link lands below the pinned bar; on a phone, an output's sideways
# scrollbar sits under its last line; dark mode keeps table stripes dark and code punctuation legible.
_STYLE += """
:not(pre) > code { overflow-wrap: anywhere; }
.course-text, .jp-RenderedMarkdown { overflow-wrap: break-word; }
.jp-Notebook { --jp-mirror-editor-comment-color: #3a7474; --jp-mirror-editor-number-color: #007a00;
  --jp-mirror-editor-operator-color: #9a1ff0; --jp-cell-prompt-not-active-opacity: 1; }
@media (min-width: 701px) { html { scroll-padding-top: 7.5rem; } }
@media (max-width: 700px) { pre { padding-bottom: 0.75rem !important; } }
@media (prefers-color-scheme: dark) {
  .jp-Notebook, .jp-Cell, .jp-RenderedHTMLCommon, .jp-RenderedText, .jp-OutputArea-output {
    --jp-rendermime-table-row-background: #1e1e1e; --jp-rendermime-table-row-hover-background: #263238;
    --jp-mirror-editor-punctuation-color: #bdbdbd; --jp-cell-prompt-not-active-font-color: #9e9e9e; }
  .course-text tbody tr:nth-child(even) { background: #1e1e1e; }
}
"""


def navigation(page: str, chapters: list[Chapter], chapter: Chapter | None, url: str | None) -> str:
    """The bar at the top of every page: course map, previous and next chapter, kit, search.

    ``url`` is the course's address (``course_address.repository()``): with it, chapter pages
    link to the exercise notebook in Colab and to the release in Binder, every page to the source.
    """

    def link(target: str, text: str, extra: str = "") -> str:
        href = posixpath.relpath(target, posixpath.dirname(page) or ".")
        return f'<a href="{html.escape(href)}"{extra}>{html.escape(text)}</a>'

    root = posixpath.relpath(".", posixpath.dirname(page) or ".")
    root = "" if root == "." else root + "/"
    ref = course_address.release_ref()
    items = [link("index.html", "Course map")]
    if chapter is not None:
        index = chapters.index(chapter)
        # The number only (the title in a tooltip and for screen readers): two whole titles wrapped
        # a 1280 px bar to two rows.
        if index > 0:
            before = chapters[index - 1]
            items.append(link(before.page, "← " + before.stem[:2],
                              f' title="{html.escape(before.title)}" aria-label="previous: {html.escape(before.title)}"'))
        if index + 1 < len(chapters):
            after = chapters[index + 1]
            items.append(link(after.page, after.stem[:2] + " →",
                              f' title="{html.escape(after.title)}" aria-label="next: {html.escape(after.title)}"'))
    items.append('<span class="spacer"></span>')
    if chapter is not None:
        items.append(link(f"exercises/{chapter.stem}.ipynb", "Exercises ⤓",
                          ' download title="the exercise notebook (.ipynb), to download"'))
        items.append(link(f"solutions/{chapter.stem}.ipynb", "Solutions ⤓",
                          ' download title="the solution notebook (.ipynb), to download"'))
        items.append(link(f"slides/{chapter.stem}.html", "Slides", ' class="course-slides"'))
        colab = course_address.colab_url(url, ref, f"notebooks/{chapter.stem}.ipynb")
        if colab:
            items.append(f'<a class="course-colab" href="{html.escape(colab)}">Open in Colab</a>')
        binder = course_address.binder_url(url, ref, f"notebooks/{chapter.stem}.ipynb")
        if binder:
            items.append(f'<a class="course-binder" href="{html.escape(binder)}">Binder</a>')
    items.append(link("instructors/setup.html", "Setup"))
    items.append(link("instructors/cheatsheet.html", "Cheat sheet"))
    items.append(link("instructors/glossary.html", "Glossary"))
    items.append(link("instructors/README.html", "Instructors"))
    if url:
        items.append(f'<a class="course-source" href="{html.escape(url)}">Source</a>')
    search = (f'<span class="course-search" data-root="{html.escape(root)}"><input type="search" '
              'id="course-search" placeholder="Search the course" aria-label="Search the course" autocomplete="off">'
              '<div class="course-results" id="course-results" hidden></div></span>')
    # The links in a row of their own (on a phone: one line that scrolls sideways), the search beside
    # them (on a phone: below, the whole width, so that its placeholder shows whole).
    return ('<nav class="course-nav"><div class="course-links">' + "\n".join(items) + "</div>" + search + "</nav>"
            f'<script src="{html.escape(root)}search.js" defer></script>')


def text_page(title: str, body: str, nav: str) -> str:
    """A markdown page of the site, in the same frame as the chapters."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · TensorFlow model state</title>{_NO_ICON}<style>{_STYLE}</style></head>"
        f'<body class="course-page">{nav}<main class="course-text">{body}</main></body></html>\n'
    )


_H2 = re.compile(r'<h2 id="(?P<id>[^"]+)">(?P<text>.*?)</h2>', re.S)


def _plain(fragment: str) -> str:
    """Text of an HTML fragment: no tags, no styles or scripts, whitespace collapsed."""
    fragment = re.sub(r"<(style|script|svg)\b.*?</\1>", " ", fragment, flags=re.S)
    fragment = re.sub(r'<a class="anchor-link".*?</a>', "", fragment, flags=re.S)
    fragment = re.sub(r"</?(?:span|a|code|em|strong|b|i)\b[^>]*>", "", fragment)  # inline: no gap (code tokens)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", fragment))).strip()


def contents(page_html: str) -> str:
    """A chapter's contents list: a link to each of its ``##`` sections."""
    items = [f'<li><a href="#{match["id"]}">{html.escape(_plain(match["text"]))}</a></li>'
             for match in _H2.finditer(page_html)]
    return ('<nav class="course-toc" aria-label="Contents"><details open><summary>Contents</summary><ul>'
            + "".join(items) + "</ul></details></nav>")


def _element_end(text: str, start: int) -> int:
    """Where the ``<div>`` opened at ``start`` closes (just after its ``</div>``)."""
    depth = 0
    for match in re.compile(r"<div\b|</div>").finditer(text, start):
        depth += 1 if match[0] == "<div" else -1
        if depth == 0:
            return match.end()
    raise SiteError("unbalanced <div> in a chapter page")


def fold_solutions(page_html: str) -> str:
    """Wrap every cell tagged ``course-solution`` in a ``<details>`` that opens on click."""
    marker = f"celltag_{SOLUTION_TAG}"
    while (tag_at := page_html.find(marker)) >= 0:
        start = page_html.rfind('<div class="jp-Cell ', 0, tag_at)
        end = _element_end(page_html, start)
        cell = page_html[start:end].replace(marker, "course-solution-cell", 1)
        page_html = (page_html[:start] + '<details class="course-solution"><summary>Solution (click to open)'
                     "</summary>" + cell + "</details>" + page_html[end:])
    return page_html


def chapter_page(notebook: nbformat.NotebookNode, title: str, nav: str, fix_links) -> str:
    """A chapter's notebook as a self-contained page: outputs and plots inline, no remote scripts."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            cell.metadata.setdefault("tags", []).append(SOLUTION_TAG)
            cell.source = "\n".join(line for line in cell.source.splitlines() if not _MARKER_LINE.match(line))
    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": title}})
    body = fix_links(_EXTERNAL_SCRIPT.sub("", body))
    body = _REMOTE_MODULE.sub("", body)
    body = body.replace("</head>", f'{_NO_ICON}<style>{_STYLE}</style></head>', 1)
    body = fold_solutions(body)
    toc = contents(body)
    title_end = _element_end(body, body.index('<div class="jp-Cell '))  # the contents go under the title cell
    body = body[:title_end] + toc + body[title_end:]
    # nbconvert's page has its own <main>: one landmark per page, so the frame is a <div>.
    body = re.sub(r"<body([^>]*)>", lambda m: f'<body{m[1]}>\n{nav}\n<div class="course-chapter">', body,
                  count=1)
    return body.replace("</body>", "</div></body>", 1)


def search_sections(page: str, title: str, page_html: str) -> list[dict[str, str]]:
    """The search index's entries for one page: the page's opening, then one per ``##`` section."""
    body = page_html.split("</nav>", 1)[-1]
    body = re.sub(r'<nav class="course-toc".*?</nav>', " ", body, flags=re.S)
    matches = list(_H2.finditer(body))
    entries = [{"p": page, "t": title, "h": "", "x": _plain(body[: matches[0].start() if matches else None])}]
    for match, following in zip(matches, matches[1:] + [None]):
        text = body[match.end(): following.start() if following else None]
        entries.append({"p": f"{page}#{match['id']}", "t": title, "h": _plain(match["text"]), "x": _plain(text)})
    return [entry for entry in entries if entry["x"] or entry["h"]]


SEARCH_JS = r"""// Offline search over the course: the index (search-index.js) loads on the first keystroke.
(function () {
  var box = document.getElementById("course-search");
  var list = document.getElementById("course-results");
  if (!box || !list) return;
  var root = box.parentNode.getAttribute("data-root") || "";
  var loading = false;
  function load(then) {
    if (window.COURSE_INDEX) return then();
    if (loading) return;
    loading = true;
    var script = document.createElement("script");
    script.src = root + "search-index.js";
    script.onload = then;
    document.head.appendChild(script);
  }
  function escape(text) {
    return text.replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; });
  }
  function snippet(text, word) {
    var at = text.toLowerCase().indexOf(word);
    var start = Math.max(0, at - 60);
    return (start > 0 ? "…" : "") + text.substr(start, 160) + (text.length > start + 160 ? "…" : "");
  }
  function search() {
    var words = box.value.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1; });
    if (!words.length) { list.hidden = true; list.innerHTML = ""; return; }
    var found = [];
    window.COURSE_INDEX.forEach(function (entry) {
      var head = (entry.t + " " + entry.h).toLowerCase(), body = entry.x.toLowerCase();
      var score = 0;
      for (var i = 0; i < words.length; i++) {
        var inHead = head.indexOf(words[i]) >= 0, inBody = body.indexOf(words[i]) >= 0;
        if (!inHead && !inBody) return;
        score += (inHead ? 10 : 0) + (inBody ? 1 : 0);
      }
      found.push([score, entry]);
    });
    found.sort(function (a, b) { return b[0] - a[0]; });
    list.innerHTML = found.length ? found.slice(0, 25).map(function (pair) {
      var entry = pair[1];
      return '<a href="' + root + entry.p + '">' + escape(entry.t + (entry.h ? " · " + entry.h : "")) +
        "<small>" + escape(snippet(entry.x, words[0])) + "</small></a>";
    }).join("") : "<p>Nothing found.</p>";
    list.hidden = false;
  }
  box.addEventListener("input", function () { load(search); });
  box.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { list.hidden = true; box.blur(); }
  });
  document.addEventListener("click", function (event) {
    if (!box.parentNode.contains(event.target)) list.hidden = true;
  });
})();
"""


def build(out: Path) -> list[str]:
    """Write the site into ``out`` (emptied first) and return the pages written.

    Example:
        >>> build(Path("build/site"))   # doctest: +SKIP
        ['index.html', '00_start_here.html', ...]
    """
    notebooks = {path.stem: nbformat.read(path, as_version=4) for path in sorted(SOLUTIONS.glob("*.ipynb"))}
    chapters = {stem: Chapter(stem, chapter_title(notebook, stem)) for stem, notebook in notebooks.items()}
    ordered = list(chapters.values())
    address = course_address.repository()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written = []
    index: list[dict[str, str]] = []
    for source, title in PAGES.items():
        if not (ROOT / source).exists():
            continue
        page = site_path(source, chapters)
        body = markdown2html_mistune((ROOT / source).read_text(encoding="utf-8"))
        body = rewrite_links(body, source, page, chapters)
        page_html = text_page(title, body, navigation(page, ordered, None, address))
        _write(out / page, page_html)
        written.append(page)
        index += search_sections(page, title, page_html)
    for stem, notebook in notebooks.items():
        chapter = chapters[stem]
        nav = navigation(chapter.page, ordered, chapter, address)
        source = f"solutions/{stem}.ipynb"
        page_html = chapter_page(notebook, chapter.title, nav,
                                 lambda text: rewrite_links(text, source, chapter.page, chapters))
        _write(out / chapter.page, page_html)
        written.append(chapter.page)
        index += search_sections(chapter.page, chapter.title, page_html)
        for folder, name in ((EXERCISES, "exercises"), (SOLUTIONS, "solutions")):
            (out / name).mkdir(exist_ok=True)
            shutil.copyfile(folder / f"{stem}.ipynb", out / name / f"{stem}.ipynb")
    make_slides.write_decks(out / "slides", notebooks, chapter_pages=True)
    for name in COPIED_FILES:
        shutil.copyfile(ROOT / name, out / f"{name}.txt")
    # A script, not JSON: browsers refuse fetch() from file:// pages, but load scripts.
    _write(out / "search-index.js", "window.COURSE_INDEX = " + json.dumps(index, ensure_ascii=False) + ";\n")
    _write(out / "search.js", SEARCH_JS)
    return written


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/build_site.py OUTPUT_FOLDER", file=sys.stderr)
        return 2
    out = Path(argv[1])
    try:
        pages = build(out)
    except SiteError as error:
        print(f"the site was not built: {error}", file=sys.stderr)
        return 1
    print(f"{len(pages)} pages in {out}/ (open {out}/index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
