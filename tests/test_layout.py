"""The recipes' layout: imports run one way, down; no module outgrows 1,000 lines; examples run.

The numbers come from ``tools/layout_report.py`` (``python tools/layout_report.py`` prints them).
Imports inside functions count: a circle hidden in a function still ties two modules together.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import layout_report  # noqa: E402  (tools/ is not a package)

HELPERS = ROOT / "helpers"


def test_no_import_circle_in_helpers():
    groups = layout_report.circles(layout_report.import_graph(HELPERS))
    assert not groups, "modules that import each other (imports inside functions count): " + "; ".join(
        " <-> ".join(group) for group in groups)


def test_the_circle_finder_sees_an_import_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def late():\n    from pkg.a import thing\n")
    (package / "c.py").write_text("from . import a\n")
    assert layout_report.circles(layout_report.import_graph(package)) == [["pkg.a", "pkg.b"]]


def test_no_module_over_1000_lines():
    assert layout_report.long_modules(HELPERS) == []


def test_no_private_name_is_imported_from_another_module():
    taken = layout_report.private_imports(HELPERS)
    assert not taken, "make these public, or keep them in their module: " + ", ".join(
        f"{importer} takes {module}.{name}" for importer, module, name in taken)


def test_at_most_a_tenth_of_the_docstring_examples_are_skipped():
    examples, skipped = layout_report.doctest_examples(HELPERS)
    assert skipped <= layout_report.MAX_SKIPPED_SHARE * examples, f"{skipped} of {examples} skipped"
