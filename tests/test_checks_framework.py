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
