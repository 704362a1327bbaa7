"""Unit tests of helpers.checks.toolkit: the pieces the exercise checks share, and how the kit reads them."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from helpers.checks import CheckFailed, Hint, LearnerCodeError, exercise_check, learner_error_hint, require
from helpers.checks.toolkit import (
    Case,
    Mistake,
    call_answer,
    calls_recorded,
    distinct_values,
    files_unchanged,
    folder_files,
    must_raise,
    refuse_mistakes,
    require_array,
    require_cases,
    working_folder,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_kit  # noqa: E402


# --------------------------------------------------------------------------- files


def test_folder_files_reads_nested_files_and_only_top_level_ones_when_asked(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.bin").write_bytes(b"\x00\x01")
    (tmp_path / "sub" / "b.bin").write_bytes(b"b")
    assert folder_files(tmp_path) == {"a.bin": b"\x00\x01", "sub/b.bin": b"b"}
    assert folder_files(str(tmp_path), recursive=False) == {"a.bin": b"\x00\x01"}


@pytest.mark.parametrize("change", ["write", "add", "delete", "add nested"])
def test_files_unchanged_fails_with_its_hint_on_any_change(tmp_path, change):
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.index").write_bytes(b"index")
    with pytest.raises(CheckFailed, match="only read them"):
        with files_unchanged(tmp_path, "your function changed the files: only read them"):
            if change == "write":
                (tmp_path / "model.index").write_bytes(b"other")
            elif change == "add":
                (tmp_path / "model.meta").write_bytes(b"meta")
            elif change == "delete":
                (tmp_path / "model.index").unlink()
            else:
                (tmp_path / "sub" / "new").write_bytes(b"x")


def test_files_unchanged_lets_a_failure_inside_its_block_through_first(tmp_path):
    (tmp_path / "model.index").write_bytes(b"index")
    with pytest.raises(CheckFailed, match="the first problem"):
        with files_unchanged(tmp_path, "files changed"):
            (tmp_path / "model.index").write_bytes(b"other")
            require(False, "the first problem")


def test_working_folder_comes_back_after_an_error(tmp_path):
    before = Path.cwd()
    with pytest.raises(ZeroDivisionError), working_folder(tmp_path / "cwd"):
        assert Path.cwd() == (tmp_path / "cwd").resolve()
        1 / 0  # noqa: B018
    assert Path.cwd() == before


# --------------------------------------------------------------------------- what the answer did


class _Counter:
    def __init__(self, start: int) -> None:
        self.value = start

    def add(self, amount: int) -> int:
        if amount < 0:
            raise ValueError("only up")
        self.value += amount
        return self.value


def test_calls_recorded_notes_each_call_before_or_after_it_and_puts_the_method_back():
    original = _Counter.add
    counter = _Counter(1)
    with calls_recorded(_Counter, "add", lambda self, amount: (self.value, amount)) as before:
        counter.add(2)
        with pytest.raises(ValueError):
            counter.add(-1)
    assert before == [(1, 2), (3, -1)]  # a call that raises is noted before it runs
    with calls_recorded(_Counter, "add", lambda result, self, amount: result, after=True) as after:
        counter.add(amount=4)
        with pytest.raises(ValueError):
            counter.add(-1)
    assert after == [7]  # and not at all after
    assert _Counter.add is original


# --------------------------------------------------------------------------- fixtures


def test_distinct_values_never_repeat_across_variables_and_are_never_zero():
    values = [distinct_values(index, (3, 4)) for index in range(1, 6)]
    flat = np.concatenate([value.ravel() for value in values])
    assert len(np.unique(flat)) == flat.size and np.all(flat != 0)
    assert distinct_values(2, (2,), np.float64).dtype == np.float64


# --------------------------------------------------------------------------- calling the answer


def test_call_answer_turns_only_the_named_errors_into_the_hint():
    assert call_answer(lambda: 3, "never shown") == 3
    with pytest.raises(CheckFailed, match="refused"):
        call_answer(lambda: int("x"), "refused", ValueError)
    with pytest.raises(KeyError):
        call_answer(lambda: {}["x"], "refused", ValueError)


def test_call_answer_gives_a_stepped_hint_and_lets_unknown_errors_pass_on():
    hint = Hint("the idea (section 1)", "the fix")
    with pytest.raises(CheckFailed) as caught:
        call_answer(lambda: int("x"), lambda error: hint, ValueError)
    assert caught.value.hint is hint
    with pytest.raises(ValueError, match="invalid literal"):
        call_answer(lambda: int("x"), lambda error: "known" if "other" in str(error) else None, ValueError)


def test_must_raise_returns_the_error_and_fails_on_a_quiet_return():
    error = must_raise(lambda: [][1], "raise on an empty list", IndexError)
    assert isinstance(error, IndexError)
    with pytest.raises(CheckFailed, match="accepted silently"):
        must_raise(lambda: None, "a partial checkpoint was accepted silently")
    with pytest.raises(KeyError):  # an error the prompt does not allow is not a refusal
        must_raise(lambda: {}["x"], "raise a ValueError", ValueError)


def test_a_learner_error_through_the_toolkit_names_the_learner_line():
    @exercise_check("99.7")
    def check_answer(answer) -> str:
        call_answer(lambda: answer(2), "never shown", ValueError)
        return "fine"

    def answer(x):
        return x / 0

    with pytest.raises(LearnerCodeError) as caught:
        check_answer(answer)
    assert "in answer(), at this line" in str(caught.value) and "return x / 0" in str(caught.value)
    assert "toolkit" not in str(caught.value)


def test_learner_error_hint_is_public_and_fits_its_limit():
    try:
        {}["a key nobody wrote"]
    except KeyError as error:
        hint = learner_error_hint(error, limit=120)
    assert len(hint) <= 120 and "KeyError" in hint


# --------------------------------------------------------------------------- tables and arrays


def test_require_cases_stops_at_the_first_failing_row():
    asked = []

    def answer(x):
        asked.append(x)
        return x + 1

    cases = [Case(1, 2, "one"), Case(2, 4, "two"), Case(3, 4, "three")]
    with pytest.raises(CheckFailed, match="two"):
        require_cases(answer, cases)
    assert asked == [1, 2]


def test_refuse_mistakes_uses_the_comparison_given():
    mistakes = [Mistake(np.zeros(2), "all zeros: restore the weights")]
    refuse_mistakes(np.ones(2), mistakes, same=np.allclose)
    with pytest.raises(CheckFailed, match="all zeros"):
        refuse_mistakes(np.full(2, 1e-9), mistakes, same=np.allclose)


@pytest.mark.parametrize("got, message", [
    ([1.0, 2.0], "type"),
    (np.array([[1.0, 2.0]], np.float32), "shape"),
    (np.array([1.0, 2.0], np.float64), "dtype"),
    (np.array([-1.0, -2.0], np.float32), "sign"),
    (np.array([1.0, 2.5], np.float32), "values"),
])
def test_require_array_gives_the_standard_ladder_of_hints(got, message):
    expected = np.array([1.0, 2.0], np.float32)
    with pytest.raises(CheckFailed, match=message):
        require_array(got, expected, type_hint="type", shape_hint="shape", dtype_hint="dtype",
                      mistakes=[(-expected, "sign")], values_hint="values")
    require_array(expected + 1e-7, expected, type_hint="type", shape_hint="shape", dtype_hint="dtype",
                  mistakes=[(-expected, "sign")], values_hint="values")


def test_a_mistake_row_takes_its_own_tolerance():
    expected = np.array([1.0], np.float32)
    require_array(np.array([2.0001]), expected, mistakes=[(np.array([2.0]), "close to 2")])  # atol 1e-8
    with pytest.raises(CheckFailed, match="close to 2"):
        require_array(np.array([2.0001]), expected, mistakes=[(np.array([2.0]), "close to 2", 1e-3)])


# --------------------------------------------------------------------------- one way down, and the kit


def test_the_toolkit_imports_only_the_framework_core():
    tree = ast.parse((ROOT / "helpers" / "checks" / "toolkit.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert {name for name in imported if name and name.startswith("helpers")} == {"helpers.checks"}


def test_the_kit_reads_the_hints_the_toolkit_calls_carry(tmp_path):
    module = tmp_path / "ex99.py"
    module.write_text(textwrap.dedent('''
        from helpers.checks import Hint, exercise_check, require
        from helpers.checks.toolkit import Case, Mistake, call_answer, files_unchanged, must_raise, require_array


        @exercise_check("99.1")
        def check_one(answer):
            with files_unchanged(folder, "the function changed the files it read: only read them"):
                result = call_answer(lambda: answer(1), lambda error: f"the answer raised on a good input: {error}")
                require_cases(answer, [Case(1, 2, "one plus one is two, not three or four")])
                require(result == 2, "the result should be two, counted from one")
            refuse_mistakes(result, [Mistake(3, "three is one too many: count from one")])
            must_raise(lambda: answer(-1), Hint("a negative input must be refused (section 2)",
                                                 "raise a ValueError for a negative input"))
            call_answer(lambda: answer(0), lambda error: "zero has no answer: return None" if "x" in str(error)
                        else None)
            require_array(result, result, shape_hint="the array has another shape: no reshape",
                          mistakes=[(0.0, "all zeros: restore the weights before running")],
                          values_hint=f"the values differ from the model's {result}")
    '''))
    listed = make_kit.mistakes_by_exercise(module)["99.1"]
    assert listed == [
        "the answer raised on a good input: …",
        "one plus one is two, not three or four",
        "the result should be two, counted from one",
        "the function changed the files it read: only read them",  # listed where its block ends
        "three is one too many: count from one",
        "a negative input must be refused (section 2) — raise a ValueError for a negative input",
        "zero has no answer: return None",
    ] + ["the array has another shape: no reshape", "all zeros: restore the weights before running",
         "the values differ from the model's …"][:make_kit.MAX_MISTAKES - 7]
