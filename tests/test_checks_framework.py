"""Unit tests of helpers.checks: how a check reports success and failure."""

from __future__ import annotations

import re

import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, exercise_check, require


@exercise_check("99.1")
def check_double(double) -> str:
    require(double(2) == 4, f"double(2) should be 4, got {double(2)}")
    return "double(2) == 4"


def test_right_answer_prints_a_tick(capsys):
    check_double(lambda x: 2 * x)
    assert capsys.readouterr().out == "✔ Exercise 99.1 passed: double(2) == 4\n"


def test_wrong_answer_raises_the_hint_with_the_exercise_number():
    with pytest.raises(CheckFailed) as caught:
        check_double(lambda x: x + 1)
    assert str(caught.value) == "Exercise 99.1: double(2) should be 4, got 3"


def test_untouched_stub_says_the_exercise_is_not_done():
    def double(x):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone, match="Exercise 99.1 is not done yet"):
        check_double(double)


def test_other_errors_from_the_learner_code_become_hints():
    with pytest.raises(LearnerCodeError, match="ZeroDivisionError"):
        check_double(lambda x: x / 0)


def test_check_without_summary(capsys):
    @exercise_check("99.2")
    def check_nothing_to_say() -> None:
        return None

    check_nothing_to_say()
    assert capsys.readouterr().out == "✔ Exercise 99.2 passed\n"


def test_check_failures_are_assertion_errors():
    assert issubclass(CheckFailed, AssertionError)
    assert issubclass(ExerciseNotDone, CheckFailed)


# --------------------------------------------------------------------------- errors in the learner's code


def test_an_error_in_the_learner_code_names_the_line_and_a_likely_cause():
    def double(x):
        halved = x / 0
        return halved

    with pytest.raises(LearnerCodeError) as caught:
        check_double(double)
    message = str(caught.value)
    assert message.startswith("Exercise 99.1: your code raised ZeroDivisionError in double(), at this line:")
    assert "halved = x / 0" in message
    assert "division by zero" in message
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_a_not_implemented_error_from_a_library_is_not_the_stub():
    def double(x):
        raise NotImplementedError("Cannot convert a symbolic tf.Tensor to a numpy array")

    with pytest.raises(LearnerCodeError, match="sess.run"):
        check_double(double)


def test_a_stub_with_other_code_before_it_still_counts_as_not_done():
    def double(x):
        y = 2 * x
        # YOUR CODE HERE
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        check_double(double)


def test_a_library_frame_below_the_learner_code_is_not_blamed():
    import json

    def parse(text):
        return json.loads(text)

    @exercise_check("99.3")
    def check_parse(parse) -> str:
        require(parse("[1") == [1], "should parse")
        return "parsed"

    with pytest.raises(LearnerCodeError) as caught:
        check_parse(parse)
    assert "in parse(), at this line:\n    return json.loads(text)" in str(caught.value)
    assert "json" not in str(caught.value).split("\n")[0].replace("json.loads", "")


def test_an_error_in_the_check_on_a_wrong_return_value_asks_about_the_return_value():
    @exercise_check("99.4")
    def check_length(make_list) -> str:
        require(len(make_list()) == 3, "three items expected")
        return "three items"

    with pytest.raises(LearnerCodeError, match="does it return what the exercise asks"):
        check_length(lambda: None)


@pytest.mark.parametrize(
    "message, cause",
    [
        ("You must feed a value for placeholder tensor 'x'", "feed_dict"),
        ("Variable net/w already exists, disallowed.", "variable_scope"),
        ("Tensor Tensor(\"y:0\") is not an element of this graph.", "graph.as_default()"),
        ("Key net/b not found in checkpoint", "list_variables"),
        ("Attempting to use uninitialized value net/w", "initializer"),
    ],
)
def test_likely_causes_of_common_tensorflow_errors(message, cause):
    def answer(x):
        raise ValueError(message)

    with pytest.raises(LearnerCodeError) as caught:
        check_double(answer)
    assert cause in str(caught.value)


# --------------------------------------------------------------------------- what Jupyter shows


def test_a_failure_renders_as_one_short_block_without_the_check_source():
    with pytest.raises(CheckFailed) as caught:
        check_double(lambda x: x + 1)
    lines = caught.value._render_traceback_()
    assert "Exercise 99.1 is not right yet" in lines[0]
    assert lines[1:] == ["double(2) should be 4, got 3"]


def test_long_hints_wrap_between_words():
    failure = CheckFailed("Exercise 99.9: " + " ".join(["supercalifragilistic"] * 20))
    lines = failure._render_traceback_()[1:]
    assert len(lines) > 1
    assert all(line.split() and set(line.split()) == {"supercalifragilistic"} for line in lines)


def test_not_done_renders_its_own_headline():
    def double(x):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone) as caught:
        check_double(double)
    lines = caught.value._render_traceback_()
    assert "Exercise 99.1 is not done yet" in lines[0]
    assert "replace `raise NotImplementedError()`" in lines[1]


def test_a_failed_check_in_a_real_kernel_shows_a_short_block_and_no_path(tmp_path):
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(
            "from helpers.checks import exercise_check, require\n"
            "@exercise_check('99.5')\n"
            "def check(f):\n"
            "    require(f(2) == 4, 'f(2) should be 4: double the input')\n"
            "    return 'f(2) == 4'"
        ),
        nbformat.v4.new_code_cell("def f(x):\n    return x + 1"),
        nbformat.v4.new_code_cell("check(f)"),
        nbformat.v4.new_code_cell("def g(x):\n    return x / 0\ncheck(g)"),
    ])
    client = NotebookClient(notebook, timeout=120, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    except CellExecutionError:  # pragma: no cover - allow_errors keeps going
        pass
    for cell in notebook.cells[2:]:
        (error,) = [output for output in cell.outputs if output.output_type == "error"]
        shown = "\n".join(error.traceback)
        assert len(error.traceback) <= 8, shown
        assert "/" not in re.sub(r"\x1b\[[0-9;]*m", "", shown).replace("x / 0", ""), shown
        assert "require(" not in shown and "run_check" not in shown
    assert "Exercise 99.5 is not right yet" in "\n".join(notebook.cells[2].outputs[0].traceback)
    assert "return x / 0" in "\n".join(notebook.cells[3].outputs[0].traceback)


def test_a_checks_temporary_folder_is_not_shown(tmp_path):
    import tempfile

    folder = tempfile.mkdtemp()
    try:
        def load(path):
            raise ValueError(f"File not found: filepath={folder}/encoder. Please ensure the file is there.")

        with pytest.raises(LearnerCodeError) as caught:
            check_double(load)
        assert tempfile.gettempdir() not in str(caught.value)
        assert "filepath=encoder." in str(caught.value)
    finally:
        import os
        os.rmdir(folder)


# --------------------------------------------------------------------------- hints: short, plain, specific


@pytest.mark.parametrize(
    "error, cause",
    [
        (TypeError("cannot compute MatMul as input #1(zero-based) was expected to be a double tensor but is a "
                   "float tensor"), "float64 met float32"),
        (ValueError("Tensor conversion requested dtype float32 for Tensor with dtype float64"), "float64 met float32"),
        (TypeError("Input 'y' of 'AddV2' Op has type int32 that does not match type int64 of argument 'x'."),
         "int64 met int32"),
        (TypeError("Variable is unhashable. Instead, use variable.ref() as the key."), "variable.ref()"),
        (ValueError("Cannot convert a partially known TensorShape (None, 3) to a Tensor."), "tf.shape(x)[0]"),
        (FileNotFoundError("[Errno 2] No such file or directory: 'model.weights.h5'"), "the path your function"),
        (IndexError("list index out of range"), "an index past the end"),
        (AttributeError("'NoneType' object has no attribute 'variables'"), "a value is None"),
    ],
)
def test_likely_causes_of_common_library_errors(error, cause):
    def answer(x):
        raise error

    with pytest.raises(LearnerCodeError) as caught:
        check_double(answer)
    assert cause in str(caught.value)
    assert "read the message, fix that line" not in str(caught.value)


def test_a_learner_error_hint_is_short_plain_and_names_the_inner_keras_error():
    wrapped = ("Exception encountered when calling Clip.call().\n\n\x1b[1mCould not automatically infer the "
               "output shape / dtype of 'clip_7' (of type Clip). Either the `Clip.call()` method is incorrect, "
               "or you need to implement the `Clip.compute_output_spec() / compute_output_shape()` method. "
               "Error encountered:\n\nindex 1 is out of bounds for axis 0 with size 1\x1b[0m\n\n"
               "Arguments received by Clip.call():\n  • args=('<KerasTensor shape=(None, 4)>',)\n" + "x" * 900)

    def answer(x):
        raise IndexError(wrapped)

    with pytest.raises(LearnerCodeError) as caught:
        check_double(answer)
    hint = str(caught.value).split(": ", 1)[1]
    assert len(hint) <= 300, hint
    assert "\x1b[" not in hint
    assert "index 1 is out of bounds" in hint
    assert "an index past the end" in hint


def test_a_check_hint_loses_colour_codes_and_temporary_folders():
    import tempfile

    folder = tempfile.mkdtemp()

    @exercise_check("99.6")
    def check_path(f) -> str:
        require(False, f"\x1b[1m{folder}/model.keras\x1b[0m is not there")
        return "never"

    try:
        with pytest.raises(CheckFailed) as caught:
            check_path(None)
        assert str(caught.value) == "Exercise 99.6: model.keras is not there"
    finally:
        import os
        os.rmdir(folder)


def test_a_compiled_extension_frame_is_not_blamed_on_the_learner():
    """h5py's Cython modules name their files relatively ("h5py/h5f.pyx"): the learner's calling line is shown."""
    namespace: dict = {}
    code = compile("def open_file(name):\n    raise FileNotFoundError('Unable to synchronously open file')\n",
                   "h5py/h5f.pyx", "exec")
    exec(code, namespace)

    def load(x):
        return namespace["open_file"]("model.weights.h5")

    with pytest.raises(LearnerCodeError) as caught:
        check_double(load)
    assert "in load(), at this line:" in str(caught.value)
    assert "h5f" not in str(caught.value).split("\n")[0]


# --------------------------------------------------------------------------- hints in steps (issue 34)

from helpers.checks import Hint, forget_hints, quote  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_hints():
    forget_hints()
    yield
    forget_hints()


_SAVER_HINT = Hint("the Saver saves the variables of the graph it is built in (section 3, \"Graphs\")",
                   "build the Saver inside `with sess.graph.as_default():`")


@exercise_check("99.7")
def check_steps(answer) -> str:
    require(answer != "graph", _SAVER_HINT)
    require(answer != "other", Hint("another idea (section 4, \"Other\")", "the other fix"))
    require(answer != "plain", "a one-step hint")
    return "fine"


def _hint(check, answer) -> str:
    with pytest.raises(CheckFailed) as caught:
        check(answer)
    return str(caught.value)


def test_a_first_failure_names_the_idea_and_a_repeated_one_gives_the_fix():
    first = _hint(check_steps, "graph")
    assert first == "Exercise 99.7: the Saver saves the variables of the graph it is built in (section 3, \"Graphs\")"
    assert "with sess.graph.as_default()" not in first
    assert _hint(check_steps, "graph") == "Exercise 99.7: build the Saver inside `with sess.graph.as_default():`"
    assert _hint(check_steps, "graph") == "Exercise 99.7: build the Saver inside `with sess.graph.as_default():`"


def test_each_kind_of_failure_and_each_exercise_counts_on_its_own():
    assert "section 3" in _hint(check_steps, "graph")
    assert "section 4" in _hint(check_steps, "other")  # another kind: its own first step
    assert "the other fix" in _hint(check_steps, "other")

    @exercise_check("99.8")
    def check_same_hint(answer) -> str:
        require(False, _SAVER_HINT)
        return "never"

    assert "section 3" in _hint(check_same_hint, None)  # the same hint in another exercise starts over
    assert _hint(check_steps, "plain") == "Exercise 99.7: a one-step hint"
    assert _hint(check_steps, "plain") == "Exercise 99.7: a one-step hint"


def test_a_pass_in_between_does_not_hide_that_the_mistake_came_back():
    assert "section 3" in _hint(check_steps, "graph")
    check_steps("right")
    assert "sess.graph.as_default()" in _hint(check_steps, "graph")


def test_forget_hints_starts_over_and_kind_names_a_kind_across_texts():
    assert "section 3" in _hint(check_steps, "graph")
    forget_hints()
    assert "section 3" in _hint(check_steps, "graph")

    @exercise_check("99.9")
    def check_kinds(answer) -> str:
        require(False, Hint(f"idea for {answer} (section 1, \"A\")", f"fix for {answer}", kind="naming"))
        return "never"

    assert _hint(check_kinds, "a").endswith("idea for a (section 1, \"A\")")
    assert _hint(check_kinds, "b").endswith("fix for b")  # the same kind, whatever its values


def test_a_stepped_hint_raised_outside_a_check_reads_as_its_idea():
    with pytest.raises(CheckFailed) as caught:
        require(False, _SAVER_HINT)
    assert str(caught.value) == _SAVER_HINT.idea
    assert caught.value.hint is _SAVER_HINT


def test_quoted_errors_are_cut_at_a_word_boundary_with_an_ellipsis():
    error = ValueError("Received incompatible tensor with shape (3, 4) when attempting to restore variable\n"
                       "with shape (4, 4)")
    quoted = quote(error, 60)
    assert len(quoted) <= 60 and quoted.endswith("…")
    assert quoted == "Received incompatible tensor with shape (3, 4) when…"
    assert quote("short message", 60) == "short message"
    assert quote("  spaced\n\n   out  ", 60) == "spaced"
    for limit in range(10, 90):
        cut = quote(error, limit)
        assert len(cut) <= limit
        words = cut.rstrip("…").split()
        whole = {word.rstrip(",;:") for word in str(error).split()}
        assert all(word.rstrip(",;:") in whole for word in words), (limit, cut)


def test_a_learner_error_hint_quotes_the_library_cut_between_words():
    message = "Unable to synchronously open file (file signature not found) " + "lorem ipsum " * 40

    def answer(x):
        raise OSError(message)

    with pytest.raises(LearnerCodeError) as caught:
        check_double(answer)
    text = str(caught.value)
    assert len(text) <= 300, len(text)
    quoted = [line.strip() for line in text.splitlines() if line.startswith("  ") and "…" in line]
    assert quoted and all(line.rstrip("…").split()[-1] in message.split() for line in quoted), text


@pytest.mark.parametrize("number", ["99.1", "12.10"])
def test_learner_error_hints_fit_300_characters_with_the_exercise_prefix(number):
    @exercise_check(number)
    def check_call(f) -> str:
        f()
        return "never"

    def answer():
        raise ValueError("x" * 40 + " word" * 200)

    with pytest.raises(LearnerCodeError) as caught:
        check_call(answer)
    assert str(caught.value).startswith(f"Exercise {number}: ")
    assert len(str(caught.value)) <= 300


# --------------------------------------------------------------------------- "not done" looks different


def _not_done() -> ExerciseNotDone:
    def double(x):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone) as caught:
        check_double(double)
    return caught.value


def test_not_done_has_a_header_of_its_own_and_no_colour_codes_outside_jupyter():
    lines = _not_done()._render_traceback_()
    assert lines[0] == "○ Exercise 99.1 is not done yet"
    assert not any("\x1b[" in line for line in lines)
    with pytest.raises(CheckFailed) as caught:
        check_double(lambda x: x + 1)
    wrong = caught.value._render_traceback_()
    assert "\x1b[1;31m✘" in wrong[0] and "○" not in wrong[0]


def test_not_done_shows_a_neutral_box_in_a_jupyter_kernel(monkeypatch):
    import helpers.checks as checks

    shown = []

    class Shell:
        kernel = object()

    monkeypatch.setattr("IPython.get_ipython", lambda: Shell())
    monkeypatch.setattr("IPython.display.display", lambda bundle, raw: shown.append(bundle))
    lines = _not_done()._render_traceback_()
    (bundle,) = shown
    assert "exercise-not-done" in bundle["text/html"] and "Exercise 99.1 is not done yet" in bundle["text/html"]
    assert "#6b7f91" in bundle["text/html"] and "31m" not in bundle["text/html"]
    assert bundle["text/plain"].startswith("○ Exercise 99.1 is not done yet\nreplace `raise NotImplementedError()`")
    assert "\x1b[" not in bundle["text/plain"]
    assert lines == [checks._NOT_DONE_STOP] and "\x1b[" not in lines[0]


def test_not_done_in_a_real_kernel_is_a_neutral_box_above_one_plain_line(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(
            "from helpers.checks import exercise_check, require\n"
            "@exercise_check('99.5')\n"
            "def check(f):\n"
            "    require(f(2) == 4, 'f(2) should be 4')\n"
            "    return 'f(2) == 4'\n"
            "def f(x):\n"
            "    # YOUR CODE HERE\n"
            "    raise NotImplementedError()"
        ),
        nbformat.v4.new_code_cell("check(f)"),
    ])
    NotebookClient(notebook, timeout=120, allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = notebook.cells[1].outputs
    assert [output.output_type for output in outputs] == ["display_data", "error"], outputs
    box, error = outputs
    assert "Exercise 99.5 is not done yet" in box.data["text/html"]
    assert "\x1b[" not in box.data["text/plain"]
    assert error.ename == "ExerciseNotDone"  # "Run all" stops here, and tools/collect_results.py reads it
    assert error.traceback == ["(stopped here: the exercise above is not done yet)"]


# --------------------------------------------------------------------------- every hint of chapters 00-07

import ast  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

CHECKS = Path(__file__).resolve().parent.parent / "helpers" / "checks"
sys.path.insert(0, str(CHECKS.parent.parent / "tools"))

import make_kit  # noqa: E402  (where a check's hints stand: require's, the toolkit's, a Hint's)
STATIC_CHAPTERS = [f"ex{number:02d}" for number in range(8)]  # 08-15: tests/attack_harness.py when shown


def _literal(node: ast.AST) -> str | None:
    """A string's text; an f-string's with each field as one character (its shortest)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "…" for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left), _literal(node.right)
        return None if left is None and right is None else (left or "…") + (right or "…")
    return None


def hint_texts(module: Path) -> list[tuple[int, str, str]]:
    """(line, exercise number, text) of each hint written in ``module``: require's and the toolkit calls',
    and both steps of a Hint."""
    tree = ast.parse(module.read_text())
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        number = next((decorator.args[0].value for decorator in function.decorator_list
                       if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "exercise_check"),
                      "NN.N")
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None)
            texts = []
            if name == "require" and len(node.args) > 1:
                texts = [node.args[1]]
            elif name in make_kit.HINT_ARGUMENTS:  # the toolkit's calls: call_answer, must_raise, Case...
                texts = make_kit.hint_arguments(node)
            elif name == "Hint":
                texts = node.args[:2] + [keyword.value for keyword in node.keywords if keyword.arg in ("idea", "fix")]
            for text in texts:
                literal = _literal(text)
                if literal is not None:
                    found.append((node.lineno, number, literal))
    return found


@pytest.mark.parametrize("chapter", STATIC_CHAPTERS)
def test_every_hint_of_the_chapter_fits_300_characters_with_its_prefix(chapter):
    texts = hint_texts(CHECKS / f"{chapter}.py")
    assert texts
    long = [(line, len(f"Exercise {number}: {text}"), text) for line, number, text in texts
            if len(f"Exercise {number}: {text}") > 300]
    assert not long, long


@pytest.mark.parametrize("chapter", STATIC_CHAPTERS)
def test_every_first_step_names_where_the_chapter_shows_the_idea(chapter):
    tree = ast.parse((CHECKS / f"{chapter}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Hint":
            idea = node.args[0] if node.args else next(k.value for k in node.keywords if k.arg == "idea")
            text = _literal(idea)
            assert text is None or "section" in text.lower(), f"{chapter}.py line {node.lineno}: {text}"


def test_a_learners_own_not_implemented_error_is_said_to_be_theirs_not_a_librarys():
    def double(x):
        raise NotImplementedError("todo")

    with pytest.raises(LearnerCodeError) as caught:
        check_double(double)
    message = str(caught.value)
    assert "that line of yours raises it" in message and "library" not in message, message
    assert "raise NotImplementedError(\"todo\")" in message and len(message) <= 300, message


def test_a_not_implemented_error_raised_inside_a_library_still_names_the_library():
    import logging

    def double(x):
        logging.Handler().emit(logging.makeLogRecord({"msg": str(x)}))  # the library raises

    with pytest.raises(LearnerCodeError) as caught:
        check_double(double)
    assert "a library does not support that call here" in str(caught.value), str(caught.value)
