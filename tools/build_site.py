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
"""

from __future__ import annotations

import html
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
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "notebooks"
# Markdown pages published beside the chapters (repository path -> page title).
PAGES = {
    "README.md": "Course map",
    "instructors/README.md": "Instructors' guide",
    "instructors/schedule.md": "Workshop schedules",
    "instructors/chapters.md": "Chapter notes for instructors",
    "instructors/cheatsheet.md": "Cheat sheet: symptom, cause, fix",
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


def chapter_title(notebook: nbformat.NotebookNode, stem: str) -> str:
    """The chapter's title: the first ``# `` heading of its first markdown cell.

    Example:
        >>> chapter_title(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 03 · Many models")]), "x")
        '03 · Many models'
    """
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return stem


def site_path(repo_path: str, chapters: dict[str, Chapter]) -> str | None:
    """Where a repository file appears on the site, or None when the site does not publish it.

    Example:
        >>> site_path("notebooks/03_many_models.ipynb", {"03_many_models": Chapter("03_many_models", "03")})
        '03_many_models.html'
        >>> site_path("README.md", {})
        'index.html'
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
_STYLE = """
body.course-page { margin: 0; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
.course-nav { position: sticky; top: 0; z-index: 10; background: #263238; color: #eceff1;
  padding: 0.5rem 1.5rem; font-size: 0.95rem; display: flex; flex-wrap: wrap; gap: 0.4rem 1.2rem; }
.course-nav a { color: #ffffff; text-decoration: none; }
.course-nav a:hover { text-decoration: underline; }
.course-nav .spacer { flex: 1; }
.course-text { max-width: 60rem; margin: 1.5rem auto; padding: 0 1.5rem; line-height: 1.55; }
.course-text table { border-collapse: collapse; margin: 1rem 0; }
.course-text th, .course-text td { border: 1px solid #cfd8dc; padding: 0.3rem 0.6rem; vertical-align: top; }
.course-text code { background: #eceff1; padding: 0 0.2rem; border-radius: 3px; }
.course-text pre { background: #eceff1; padding: 0.8rem; overflow-x: auto; }
.course-text pre code { background: none; padding: 0; }
"""


def navigation(page: str, chapters: list[Chapter], chapter: Chapter | None) -> str:
    """The bar at the top of every page: course map, previous and next chapter, kit, downloads."""

    def link(target: str, text: str, extra: str = "") -> str:
        href = posixpath.relpath(target, posixpath.dirname(page) or ".")
        return f'<a href="{html.escape(href)}"{extra}>{html.escape(text)}</a>'

    items = [link("index.html", "Course map")]
    if chapter is not None:
        index = chapters.index(chapter)
        if index > 0:
            items.append(link(chapters[index - 1].page, "← " + chapters[index - 1].title))
        if index + 1 < len(chapters):
            items.append(link(chapters[index + 1].page, chapters[index + 1].title + " →"))
    items.append('<span class="spacer"></span>')
    if chapter is not None:
        items.append(link(f"exercises/{chapter.stem}.ipynb", "Exercise notebook", " download"))
        items.append(link(f"solutions/{chapter.stem}.ipynb", "Solution notebook", " download"))
    items.append(link("instructors/cheatsheet.html", "Cheat sheet"))
    items.append(link("instructors/README.html", "Instructors"))
    return '<nav class="course-nav">' + "\n".join(items) + "</nav>"


def text_page(title: str, body: str, nav: str) -> str:
    """A markdown page of the site, in the same frame as the chapters."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · TensorFlow model state</title>{_NO_ICON}<style>{_STYLE}</style></head>"
        f'<body class="course-page">{nav}<main class="course-text">{body}</main></body></html>\n'
    )


def chapter_page(notebook: nbformat.NotebookNode, title: str, nav: str, fix_links) -> str:
    """A chapter's notebook as a self-contained page: outputs and plots inline, no remote scripts."""
    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"name": title}})
    body = fix_links(_EXTERNAL_SCRIPT.sub("", body))
    body = _REMOTE_MODULE.sub("", body)
    body = body.replace("</head>", f'{_NO_ICON}<style>{_STYLE}</style></head>', 1)
    return re.sub(r"<body([^>]*)>", lambda m: f"<body{m[1]}>\n{nav}", body, count=1)


def build(out: Path) -> list[str]:
    """Write the site into ``out`` (emptied first) and return the pages written.

    Example:
        >>> build(Path("build/site"))   # doctest: +SKIP
        ['index.html', '00_start_here.html', ...]
    """
    notebooks = {path.stem: nbformat.read(path, as_version=4) for path in sorted(SOLUTIONS.glob("*.ipynb"))}
    chapters = {stem: Chapter(stem, chapter_title(notebook, stem)) for stem, notebook in notebooks.items()}
    ordered = list(chapters.values())
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written = []
    for source, title in PAGES.items():
        if not (ROOT / source).exists():
            continue
        page = site_path(source, chapters)
        body = markdown2html_mistune((ROOT / source).read_text(encoding="utf-8"))
        body = rewrite_links(body, source, page, chapters)
        _write(out / page, text_page(title, body, navigation(page, ordered, None)))
        written.append(page)
    for stem, notebook in notebooks.items():
        chapter = chapters[stem]
        nav = navigation(chapter.page, ordered, chapter)
        source = f"solutions/{stem}.ipynb"
        page_html = chapter_page(notebook, chapter.title, nav,
                                 lambda text: rewrite_links(text, source, chapter.page, chapters))
        _write(out / chapter.page, page_html)
        written.append(chapter.page)
        for folder, name in ((EXERCISES, "exercises"), (SOLUTIONS, "solutions")):
            (out / name).mkdir(exist_ok=True)
            shutil.copyfile(folder / f"{stem}.ipynb", out / name / f"{stem}.ipynb")
    for name in COPIED_FILES:
        shutil.copyfile(ROOT / name, out / f"{name}.txt")
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
