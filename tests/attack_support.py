"""The lenient runner of the answers written from the prompts alone (VERIFY.md part 2).

Built on ``tests.attack_harness`` (one watchdog, one log): ``rejects`` runs a check on a wrong
answer and asserts that it is refused with a ``CheckFailed`` (a ``LearnerCodeError`` counts only
where the answer's own code is expected to raise, ``may_raise=True``); ``passes`` runs it on a
correct alternative and asserts the tick; ``cases`` turns answers into pytest parameters, with
the known holes of today's check marked. ``tests.attack_harness.rejected`` is the strict form,
which also holds the hint to the course's rules (length, colour codes, paths).
"""

from __future__ import annotations

from typing import Any, Callable

from helpers.checks import CheckFailed, LearnerCodeError
from tests.attack_harness import CheckRanTooLong, _log, _name, _outcome, marked, watchdog

WATCHDOG_S = 60


def _run(check: Callable[..., Any], answer: Callable[..., Any]) -> tuple[BaseException | None, float]:
    import time

    start = time.perf_counter()
    with watchdog(WATCHDOG_S):
        try:
            check(answer)
        except CheckFailed as failure:
            return failure, time.perf_counter() - start
    return None, time.perf_counter() - start


def _record(check: Callable[..., Any], answer: Any, kind: str, outcome: BaseException | None,
            seconds: float) -> None:
    _log({"check": getattr(check, "__name__", "?"), "answer": _name(answer), "kind": kind,
          "outcome": _outcome(outcome), "elapsed": round(seconds, 2),
          "hint": str(outcome)[:600] if outcome is not None else ""})


def rejects(check: Callable[..., Any], answer: Callable[..., Any], *, may_raise: bool = False) -> str:
    """Assert that ``check`` refuses ``answer``; return the hint."""
    outcome, seconds = _run(check, answer)
    _record(check, answer, "wrong", outcome, seconds)
    exercise = getattr(check, "__name__", "?")
    assert outcome is not None, f"{exercise} accepted the wrong answer {answer.__name__}"
    if not may_raise:
        assert not isinstance(outcome, LearnerCodeError), f"raw error instead of a hint: {outcome}"
    return str(outcome)


def passes(check: Callable[..., Any], answer: Callable[..., Any]) -> None:
    """Assert that ``check`` accepts ``answer``."""
    outcome, seconds = _run(check, answer)
    _record(check, answer, "right", outcome, seconds)
    assert outcome is None, f"rejected a correct answer: {outcome}"


def cases(answers: list[Callable[..., Any]], holes: dict[str, str]) -> list[Any]:
    """The answers as pytest parameters; those named in ``holes`` are marked xfail(strict) with its reason.

    A reason starting with "hangs" marks the answer skipped instead.
    """
    hangs = {name: reason for name, reason in holes.items() if reason.startswith("hangs")}
    known = {name: reason for name, reason in holes.items() if name not in hangs}
    return marked(answers, known, {name: reason.removeprefix("hangs: ") for name, reason in hangs.items()})


__all__ = ["CheckRanTooLong", "cases", "passes", "rejects"]
