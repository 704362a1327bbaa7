"""Unit tests of helpers.checks: how a check reports success and failure."""

from __future__ import annotations

import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, exercise_check, require


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


def test_other_errors_from_the_learner_code_propagate():
    with pytest.raises(ZeroDivisionError):
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
