"""The machinery behind the exercises' check cells.

An exercise asks for a function; its check cell hands that function to a
check, which calls it on fresh inputs of its own and compares the result with
what is expected::

    from helpers.checks import ex01
    ex01.check_save_subset(save_subset)

A check prints one line when the answer is right. When it is not, it raises
``CheckFailed`` with a hint that says what is wrong; when the exercise still
holds the ``raise NotImplementedError()`` stub, it raises ``ExerciseNotDone``.

Writing a check::

    @exercise_check("01.1")
    def check_double(double) -> str:
        require(double(2) == 4, "double(2) should be 4, got {}".format(double(2)))
        return "double(2) == 4"
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CheckFailed", "ExerciseNotDone", "exercise_check", "require"]

Check = TypeVar("Check", bound=Callable[..., Any])


class CheckFailed(AssertionError):
    """The answer to an exercise is not right yet; the message says why."""


class ExerciseNotDone(CheckFailed):
    """The exercise still holds its ``raise NotImplementedError()`` stub."""


def require(condition: bool, hint: str) -> None:
    """Fail the current check with ``hint`` unless ``condition`` holds.

    Example:
        >>> require(1 + 1 == 2, "arithmetic is broken")
    """
    __tracebackhide__ = True  # IPython and pytest hide this frame
    if not condition:
        raise CheckFailed(hint)


def exercise_check(exercise_id: str) -> Callable[[Check], Check]:
    """Turn a function into an exercise check for exercise ``exercise_id``.

    The decorated check returns a short summary of what it verified; the
    wrapper prints it with a tick. Hints are prefixed by the exercise number,
    and a ``NotImplementedError`` from the learner's code becomes
    ``ExerciseNotDone``.

    Example:
        >>> @exercise_check("00.1")
        ... def check_answer(answer):
        ...     require(answer == 42, f"expected 42, got {answer}")
        ...     return "the answer is 42"
        >>> check_answer(42)
        ✔ Exercise 00.1 passed: the answer is 42
    """

    def decorate(check: Check) -> Check:
        @functools.wraps(check)
        def run_check(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True
            try:
                summary = check(*args, **kwargs)
            except ExerciseNotDone:
                raise
            except CheckFailed as failure:
                raise CheckFailed(f"Exercise {exercise_id}: {failure}") from None
            except NotImplementedError:
                raise ExerciseNotDone(
                    f"Exercise {exercise_id} is not done yet: replace "
                    "`raise NotImplementedError()` with your code, run that cell, "
                    "then run this check again."
                ) from None
            print(f"✔ Exercise {exercise_id} passed" + (f": {summary}" if summary else ""))

        return run_check  # type: ignore[return-value]

    return decorate
