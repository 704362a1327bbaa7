"""Write instructors/chapters.md from the chapters themselves: ``python tools/make_kit.py``.

For each chapter: its title and learning objectives (from the solution notebook), its
exercises, the mistakes learners make (the hints of its checks, from helpers/checks/exNN.py),
the measured time to run it (instructors/run_times.json, written by
``python tools/time_chapters.py --json``), and the time to teach it and questions for
discussion (below, written by hand). A test fails when chapters.md is out of date.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "instructors"
SLIDES = "build/site/slides"  # where `make site` writes each chapter's slides (tools/make_slides.py)
MAX_MISTAKES = 12  # per chapter: three for each of four exercises

# Minutes to teach a chapter (walk-through plus exercises in pairs), and questions for discussion.
TEACHING = {
    "00": (25, ["Why does TensorFlow 2.21 still run `tf.compat.v1` graph code, and when would you still write it?",
                "A popular answer from 2017 uses `tf.contrib`: how do you decide what in it still holds?"]),
    "01": (50, ["Which files would you copy to another machine to restore only the weights? To rebuild the graph?",
                "When is restoring a subset under other names safer than restoring everything?"]),
    "02": (50, ["What can go wrong when you train on top of a graph you did not write, and how would you notice?",
                "`stop_gradient` or `var_list`: which one survives a colleague adding a layer?"]),
    "03": (60, ["Why were the popular TF1 answers about importing a `.meta` several times right on TF1?",
                "Averaging probabilities or voting: which would you ship, and why?"]),
    "04": (45, ["When is a frozen-constant copy enough, and when does a copy need variables of its own?",
                "How would you test that a clone is really independent?"]),
    "05": (55, ["What does a copy cost when nothing writes to the source afterwards? And during training?",
                "A hard sync every N steps or a soft update every step: what does each trade?"]),
    "06": (55, ["A teammate renames a layer attribute. Which checkpoints still load, and what tells you?",
                "Which assertion would you put in your training script, and why that one?"]),
    "07": (50, ["How would you migrate a year of TF1 checkpoints without stopping training?",
                "What would a silent partial restore cost your team, and how do you make it impossible?"]),
    "08": (55, ["Which file would you keep to resume training, to share a model, to deploy it?",
                "How would you prove that every variable of a custom layer made it into the file?"]),
    "09": (55, ["What do you lose when you load a SavedModel without its Python code?",
                "Two loaded copies of one SavedModel: do they share weights? How would you check?"]),
    "10": (50, ["Pin TensorFlow 2.15 or migrate: what does each cost in a year?",
                "What evidence would convince you that a migrated model is the same model?"]),
    "11": (60, ["Which pieces of state does 'resume' need in your own training loop?",
                "What happens to your checkpoints if the machine dies during a save?"]),
    "12": (55, ["Your model file loads without an error: what would convince you it is the model you saved?",
                "Where should your custom classes live so that a server, a colleague and a fresh process find them?"]),
    "13": (50, ["A colleague on TensorFlow 2.15 asks for your model: which files do you send, and what do you write in the message?",
                "A file loads with no error in another version: what would convince you it is the same model?"]),
    "14": (50, ["A converter finished without an error: what would convince you the file is the same model?",
                "float16, dynamic range or float32: how would you decide for your own model?"]),
    "15": (45, ["Which file in your own projects would you not know how to load today?",
                "What would you check before trusting a model file someone sends you?"]),
    "16": (45, ["Your team trains under JAX and serves with TensorFlow: which file crosses, and what proves it?",
                "Which of your own layers would fail under another backend, and how would you find out?"]),
    "17": (45, ["Which state beside the weights do the models you use carry (scales, loss scale, averages, "
                "adapters), and which of your saves keeps it?",
                "When is a quantized .keras the right file to ship, and when a .tflite?"]),
}


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


def bullets_after(text: str, label: str) -> list[str]:
    """The items of the first bullet list after ``label`` in ``text`` (continuation lines joined).

    Example:
        >>> bullets_after("**Key points**\\n\\n- one\\n  two;\\n- three\\n\\nNext", "Key points")
        ['one two;', 'three']
    """
    if label not in text:
        return []
    items: list[str] = []
    current = None
    for line in text.split(label, 1)[1].splitlines():
        if line.startswith(("- ", "* ")):
            current = line[2:].strip()
            items.append(current)
        elif current is not None and line.startswith("  ") and line.strip():
            items[-1] += " " + line.strip()
        elif items and not line.strip():
            break
    return items


def objectives(notebook: nbformat.NotebookNode) -> list[str]:
    """The bullet list that follows "Learning objectives" in the notebook's opening cells."""
    for cell in notebook.cells[:4]:
        if cell.cell_type == "markdown" and "Learning objectives" in cell.source:
            return bullets_after(cell.source, "Learning objectives")
    return []


def exercises(notebook: nbformat.NotebookNode) -> list[str]:
    """The exercises' headings, ``Exercise NN.k: title``."""
    found = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            found += re.findall(r"^\*\*(Exercise \d\d\.\d[^*]*?)\.?\*\*", cell.source, re.MULTILINE)
    return found


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # "text " + computed text
        left, right = _text(node.left), _text(node.right)
        if left is not None or right is not None:
            return (left if left is not None else "…") + (right if right is not None else "…")
    return None


def _argument(call: ast.Call, position: int, name: str) -> ast.AST | None:
    if len(call.args) > position:
        return call.args[position]
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _stands_alone(fix: str) -> bool:
    """A fix that also says what went wrong ("..., not ...") reads alone; an instruction alone does not."""
    return bool(re.search(r"\bnot\b|n't\b|\binstead\b", fix))


# The calls that carry a hint, and where: (position, keyword) of each hint argument. ``require`` is the
# framework's; the others are helpers.checks.toolkit's (a table row, a must-raise, an array compared
# rung by rung...). A ``Hint(...)`` is read wherever it stands.
HINT_ARGUMENTS: dict[str, tuple[tuple[int | None, str], ...]] = {
    "require": ((1, "hint"),),
    "call_answer": ((1, "hint"),),
    "must_raise": ((1, "hint"),),
    "files_unchanged": ((1, "hint"),),
    "Mistake": ((1, "hint"),),
    "Case": ((2, "hint"),),
    "require_array": ((None, "type_hint"), (None, "shape_hint"), (None, "dtype_hint"), (None, "values_hint")),
}


def hint_arguments(node: ast.Call) -> list[ast.AST]:
    """The expressions a call gives as hints: ``require``'s and the toolkit calls' (``HINT_ARGUMENTS``).

    A hint made from the error (``lambda error: f"..."``) is its body, a conditional one
    (``f"..." if known else None``) both its branches, and ``require_array``'s ``mistakes`` rows
    ``(wrong, "hint")`` give their hints too.

    Example:
        >>> call = ast.parse('call_answer(lambda: f(), lambda e: "refused" if e else None)').body[0].value
        >>> [ast.literal_eval(node) for node in hint_arguments(call)]
        ['refused', None]
    """
    name = getattr(node.func, "id", None)
    arguments = [_argument(node, position, keyword) if position is not None else
                 next((item.value for item in node.keywords if item.arg == keyword), None)
                 for position, keyword in HINT_ARGUMENTS.get(name, ())]
    if name == "require_array":
        rows = next((item.value for item in node.keywords if item.arg == "mistakes"), None)
        if isinstance(rows, (ast.List, ast.Tuple)):
            arguments += [row.elts[1] for row in rows.elts if isinstance(row, ast.Tuple) and len(row.elts) > 1]
    found = []
    for argument in arguments:
        if isinstance(argument, ast.Lambda):
            argument = argument.body
        found += [argument.body, argument.orelse] if isinstance(argument, ast.IfExp) else [argument]
    return [argument for argument in found if argument is not None]


def _hint_entries(node: ast.AST) -> list[tuple[ast.AST, str, str]]:
    """(where, kind, text) of each mistake a call states: a hint argument (``require(condition, "hint")``,
    a toolkit call's: ``hint_arguments``), or a ``Hint(idea, fix)``.

    A hint in steps is listed by its precise fix when that says what was wrong, else as "idea — fix";
    its kind (``kind=``, or the fix) merges the hints that name one mistake.
    """
    if not isinstance(node, ast.Call):
        return []
    if getattr(node.func, "id", None) == "Hint":
        idea, fix = _text(_argument(node, 0, "idea") or ast.Constant(None)), _text(
            _argument(node, 1, "fix") or ast.Constant(None))
        if fix is None:
            return []
        kind_node = _argument(node, 2, "kind")
        kind = _text(kind_node) if kind_node is not None else None
        text = fix if _stands_alone(fix) or not idea else f"{idea.rstrip()} — {fix}"
        return [(node, kind or fix, text)]
    found = []
    for argument in hint_arguments(node):
        text = _text(argument)
        if text is not None:
            found.append((argument, text, text))
    return found


def _exercise_id(function: ast.FunctionDef) -> str | None:
    for decorator in function.decorator_list:
        if (isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "exercise_check"
                and decorator.args and isinstance(decorator.args[0], ast.Constant)):
            return str(decorator.args[0].value)
    return None


def _reachable(function: ast.FunctionDef, definitions: dict[str, ast.AST]) -> list[ast.AST]:
    """``function`` and the module's functions and constants it uses, directly or through them."""
    found, todo, seen = [], [function], {function.name}
    while todo:
        node = todo.pop()
        found.append(node)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Name) and inner.id in definitions and inner.id not in seen:
                seen.add(inner.id)
                todo.append(definitions[inner.id])
    return found


def mistakes_by_exercise(check_module: Path) -> dict[str, list[str]]:
    """The hints each exercise's check can give, in source order, at most ``MAX_MISTAKES`` for the chapter.

    A check's hints include those of the module's helpers and Hint constants it uses. Hints of one
    kind are merged. Every exercise keeps at least one; the rest are taken in turns, one per
    exercise at a time, so that no exercise's hints push out another's. Parts computed when the
    check runs (an f-string's fields) are shown as "…"; a hint that is nothing but such parts is
    left out.
    """
    tree = ast.parse(check_module.read_text())
    definitions: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            definitions[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    definitions[target.id] = node
    checks = sorted(((_exercise_id(node), node) for node in tree.body if isinstance(node, ast.FunctionDef)
                     and _exercise_id(node)), key=lambda pair: pair[0])
    # A `with files_unchanged(folder, "hint"):` compares the files when its block ends: its hint is listed there.
    block_ends = {id(item.context_expr): (node.end_lineno, node.end_col_offset) for node in ast.walk(tree)
                  if isinstance(node, ast.With) for item in node.items}
    kinds_seen: set[str] = set()
    steps: set[str] = set()
    found: dict[str, list[tuple[int, int, str]]] = {}
    for exercise, function in checks:
        calls = sorted((inner for node in _reachable(function, definitions) for inner in ast.walk(node)
                        if isinstance(inner, ast.Call)), key=lambda call: (call.lineno, call.col_offset))
        entries = found.setdefault(exercise, [])
        for call in calls:
            for where, kind, text in _hint_entries(call):
                hint = re.sub(r"\s+", " ", text).strip()
                if getattr(call.func, "id", None) == "Hint":
                    steps.add(hint)
                if len(hint.replace("…", "").strip()) > 15 and kind not in kinds_seen:
                    kinds_seen.add(kind)
                    entries.append((*block_ends.get(id(call), (where.lineno, where.col_offset)), hint))
    # Taken in turns; within an exercise the hints in steps (the mistakes its author singled out) first.
    ranked = {exercise: sorted(sorted(entries), key=lambda entry: not _is_stepped(entry[2], steps))
              for exercise, entries in found.items()}
    chosen: dict[str, list[tuple[int, int, str]]] = {exercise: [] for exercise in found}
    budget, turn = max(MAX_MISTAKES, len(found)), 0
    while budget and any(turn < len(entries) for entries in ranked.values()):
        for exercise, entries in ranked.items():
            if budget and turn < len(entries):
                chosen[exercise].append(entries[turn])
                budget -= 1
        turn += 1
    return {exercise: [hint for *_, hint in sorted(entries)] for exercise, entries in chosen.items() if entries}


def _is_stepped(hint: str, steps: set[str]) -> bool:
    return hint in steps


def mistakes(check_module: Path) -> list[str]:
    """Each hint listed for the chapter's checks, whole: ``mistakes_by_exercise``'s, exercise by exercise."""
    return [hint for hints in mistakes_by_exercise(check_module).values() for hint in hints]


def chapter_notes(run_times: dict[str, float]) -> str:
    lines = [
        "# Chapter notes for instructors",
        "",
        "Generated by `python tools/make_kit.py` from the chapters, their checks and measured run times;",
        "do not edit by hand. *Run time* is what a learner waits for \"Restart and run all\" on a 2-core",
        "laptop-class CPU, kernel start and TensorFlow's import included (measured by",
        "`python tools/time_chapters.py --json`). *Teach* is a realistic time for the walk-through plus",
        "the exercises in pairs. *Mistakes learners make* are the hints the chapter's checks give.",
        "Each chapter's slides (objectives, key code, exercises, key points; one HTML file that works",
        "offline) are made from its notebook by `make site` (`python tools/make_slides.py FOLDER` alone).",
        "",
        "| chapter | run time | teach |",
        "|---|---|---|",
    ]
    notebooks = sorted((ROOT / "solutions").glob("*.ipynb"))
    for path in notebooks:
        number = path.stem[:2]
        seconds = run_times.get(path.stem)
        shown = f"{seconds:.0f} s" if seconds is not None else "not measured"
        lines.append(f"| [{path.stem}](../notebooks/{path.name}) | {shown} | {TEACHING[number][0]} min |")
    for path in notebooks:
        number = path.stem[:2]
        notebook = nbformat.read(path, as_version=4)
        title = chapter_title(notebook, path.stem)
        lines += ["", f"## {title}", "", f"[Exercise notebook](../notebooks/{path.name}) · "
                  f"[solution](../solutions/{path.name}) · [slides](../{SLIDES}/{path.stem}.html) "
                  "(made by `make site`)", ""]
        if objectives(notebook):
            lines += ["**Objectives**", ""] + [f"- {item}" for item in objectives(notebook)] + [""]
        if exercises(notebook):
            lines += ["**Exercises**", ""] + [f"- {item}" for item in exercises(notebook)] + [""]
        checks = ROOT / "helpers" / "checks" / f"ex{number}.py"
        if checks.exists() and mistakes(checks):
            lines += ["**Mistakes learners make** (the checks' hints)", ""]
            lines += [f"- {exercise}: {hint}" for exercise, hints in mistakes_by_exercise(checks).items()
                      for hint in hints] + [""]
        lines += ["**For discussion**", ""] + [f"- {question}" for question in TEACHING[number][1]]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    times_file = KIT / "run_times.json"
    run_times = json.loads(times_file.read_text()) if times_file.exists() else {}
    text = chapter_notes(run_times)
    target = KIT / "chapters.md"
    if "--check" in argv:
        if not target.exists() or target.read_text() != text:
            print("instructors/chapters.md is out of date: run `python tools/make_kit.py`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
