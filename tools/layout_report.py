"""How the recipes' code is laid out: import circles, long modules, private names, skipped examples.

``python tools/layout_report.py`` prints one table; ``tests/test_layout.py`` asserts on the same
numbers, so a circle, a module over 1,000 lines or a private name imported from another module
fails the tests. Every import counts, those inside functions too: a circle hidden in a function
still ties the two modules together.

    >>> from pathlib import Path
    >>> graph = import_graph(Path("helpers"))
    >>> "helpers.errors" in graph
    True
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 1000
MAX_SKIPPED_SHARE = 0.10


def module_name(path: Path, root: Path) -> str:
    """The dotted name of a file under ``root``'s parent: ``helpers/checks/ex01.py`` -> ``helpers.checks.ex01``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package: Path) -> dict[str, Path]:
    """Every module of ``package`` (a folder), by dotted name."""
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def _absolute(name: str | None, level: int, importer: str, is_package: bool) -> str:
    if level == 0:
        return name or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imported_names(path: Path, importer: str, known: set[str]) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for every import in ``path``, those inside functions too.

    ``name`` is the name taken from the module (``from m import name``), or ``None``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node.module, node.level, importer, is_package)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                if submodule in known:
                    yield submodule, None
                else:
                    yield source, alias.name


def import_graph(package: Path) -> dict[str, set[str]]:
    """Which of ``package``'s modules each of its modules imports (a package's ``__init__`` aside)."""
    found = modules(package)
    known = set(found)
    graph: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        for target, _ in imported_names(path, name, known):
            if target in known and target != name:
                graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a loop (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def long_modules(package: Path, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """Modules over ``limit`` lines, longest first."""
    counts = [(name, len(path.read_text(encoding="utf-8").splitlines()))
              for name, path in modules(package).items()]
    return sorted([item for item in counts if item[1] > limit], key=lambda item: -item[1])


def private_imports(package: Path) -> list[tuple[str, str, str]]:
    """``(importer, module, name)`` for each private name taken from another module of ``package``."""
    found = modules(package)
    known = set(found)
    result = []
    for name, path in found.items():
        for target, taken in imported_names(path, name, known):
            if target in known and target != name and taken and taken.startswith("_") \
                    and not taken.startswith("__"):
                result.append((name, target, taken))
    return sorted(set(result))


def doctest_examples(package: Path) -> tuple[int, int]:
    """``(examples, skipped)``: docstring examples (``>>>`` lines) and those marked ``+SKIP``."""
    examples = skipped = 0
    for path in modules(package).values():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(">>> "):
                examples += 1
                skipped += "doctest: +SKIP" in line
    return examples, skipped


def lines_of(folder: Path) -> int:
    """Lines of Python in ``folder``."""
    return sum(len(path.read_text(encoding="utf-8").splitlines()) for path in folder.rglob("*.py"))


def report(package: Path) -> str:
    """The whole report, as text."""
    graph = import_graph(package)
    examples, skipped = doctest_examples(package)
    lines = [f"import circles: {len(circles(graph))}"]
    lines += [f"  {' <-> '.join(group)}" for group in circles(graph)]
    lines.append(f"modules over {MAX_LINES} lines: {len(long_modules(package))}")
    lines += [f"  {name}: {count}" for name, count in long_modules(package)]
    counts = sorted(((len(path.read_text(encoding='utf-8').splitlines()), name)
                     for name, path in modules(package).items()), reverse=True)[:5]
    lines.append("longest modules: " + ", ".join(f"{name} {count}" for count, name in counts))
    privates = private_imports(package)
    lines.append(f"private names imported across modules: {len(privates)}")
    lines += [f"  {importer} takes {target}.{taken}" for importer, target, taken in privates]
    share = skipped / examples if examples else 0.0
    lines.append(f"docstring examples: {examples}, skipped: {skipped} ({share:.0%})")
    checks = package / "checks"
    if checks.is_dir():
        lines.append(f"lines of exercise checks: {lines_of(checks)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default=str(ROOT / "helpers"))
    args = parser.parse_args(argv)
    print(report(Path(args.package)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
