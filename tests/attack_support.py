"""Shared tools of the answers written from the prompts alone (VERIFY.md part 2).

``rejects`` runs a check on a wrong answer and asserts that it is refused with a
``CheckFailed`` (a ``LearnerCodeError`` counts only where the answer's own code
is expected to raise); ``passes`` runs it on a correct alternative and asserts
the tick. Both run under a watchdog (``WATCHDOG_S``): pytest-timeout is not
installed, so a ``SIGALRM`` raises a ``BaseException`` that no check catches.
Set ``ATTACK_LOG=/some/file.jsonl`` to record every verdict with its hint and
time (for the verifier's report); nothing is written otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any, Callable

from helpers.checks import CheckFailed, LearnerCodeError

WATCHDOG_S = 60


class WatchdogExpired(BaseException):
    """A check ran longer than the watchdog allows (not an Exception, so no check can catch it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise WatchdogExpired(f"over {WATCHDOG_S} s")


def _run(check: Callable[..., Any], answer: Callable[..., Any]) -> tuple[BaseException | None, float]:
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(WATCHDOG_S)
    start = time.perf_counter()
    try:
        check(answer)
    except CheckFailed as failure:
        return failure, time.perf_counter() - start
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return None, time.perf_counter() - start


def _log(exercise: str, name: str, kind: str, outcome: BaseException | None, seconds: float) -> None:
    path = os.environ.get("ATTACK_LOG")
    if not path:
        return
    record = {
        "exercise": exercise,
        "answer": name,
        "kind": kind,
        "outcome": type(outcome).__name__ if outcome is not None else "passed",
        "message": str(outcome) if outcome is not None else "",
        "seconds": round(seconds, 2),
    }
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")


def rejects(check: Callable[..., Any], answer: Callable[..., Any], *, may_raise: bool = False) -> str:
    """Assert that ``check`` refuses ``answer``; return the hint."""
    outcome, seconds = _run(check, answer)
    exercise = getattr(check, "__name__", "?")
    _log(exercise, getattr(answer, "__name__", "?"), "wrong", outcome, seconds)
    assert outcome is not None, f"{exercise} accepted the wrong answer {answer.__name__}"
    if not may_raise:
        assert not isinstance(outcome, LearnerCodeError), f"raw error instead of a hint: {outcome}"
    return str(outcome)


def passes(check: Callable[..., Any], answer: Callable[..., Any]) -> None:
    """Assert that ``check`` accepts ``answer``."""
    outcome, seconds = _run(check, answer)
    _log(getattr(check, "__name__", "?"), getattr(answer, "__name__", "?"), "right", outcome, seconds)
    assert outcome is None, f"rejected a correct answer: {outcome}"


def cases(answers: list[Callable[..., Any]], holes: dict[str, str]) -> list[Any]:
    """The answers as pytest parameters; those named in ``holes`` are marked xfail(strict) with its reason.

    A reason starting with "hangs" marks the answer skipped instead.
    """
    import pytest

    params = []
    for answer in answers:
        reason = holes.get(answer.__name__)
        if reason is None:
            marks = ()
        elif reason.startswith("hangs"):
            marks = (pytest.mark.skip(reason=reason),)
        else:
            marks = (pytest.mark.xfail(strict=True, reason=reason),)
        params.append(pytest.param(answer, marks=marks, id=answer.__name__))
    return params
