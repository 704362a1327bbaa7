"""Bounds and measures for exercise answers written from the prompts alone (VERIFY.md part 2).

Each answer runs through its check under a watchdog (pytest-timeout is not installed):
``SIGALRM`` after ``WATCHDOG_S`` seconds raises ``CheckRanTooLong`` (a ``BaseException``, so
the check's wrapper cannot turn it into a hint), and ``faulthandler`` ends the whole process
if TensorFlow does not return to Python at all. A run over ``SLOW_S`` seconds is a defect.

``rejected(check, answer)`` asserts a wrong answer gets ``CheckFailed`` (or the framework's
``LearnerCodeError``, itself a ``CheckFailed``) with a usable hint; ``accepted`` asserts a
right one passes. Set ``ATTACK_LOG=/some/file.jsonl`` to record every outcome.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError

SLOW_S = 20.0
WATCHDOG_S = 90
HINT_MAX = 300
GENERIC = "read the message, fix that line"
_TEMPORARY = re.compile(
    "|".join(re.escape(p) for p in {os.path.realpath(tempfile.gettempdir()), tempfile.gettempdir(), "/tmp/"})
)


class CheckRanTooLong(BaseException):
    """The watchdog's alarm: the check ran past ``WATCHDOG_S`` seconds."""


@contextlib.contextmanager
def watchdog(seconds: int = WATCHDOG_S) -> Iterator[None]:
    """Interrupt the block after ``seconds``; end the process after three times that."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise CheckRanTooLong(f"the check ran over {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    faulthandler.dump_traceback_later(seconds * 3, exit=True)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        faulthandler.cancel_dump_traceback_later()


def hint_problems(message: str) -> list[str]:
    """What is wrong with a hint: too long, colour codes, temporary paths, the generic advice.

    The length counts the "Exercise NN.N: " prefix: the learner reads the whole line.
    """
    problems = []
    if len(message) > HINT_MAX:
        problems.append(f"hint of {len(message)} characters with its prefix")
    if "\x1b[" in message:
        problems.append("colour codes")
    if _TEMPORARY.search(message):
        problems.append("temporary path")
    if GENERIC in message:
        problems.append("generic 'read the message, fix that line'")
    return problems


def _log(record: dict) -> None:
    path = os.environ.get("ATTACK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


def _run(check: Callable, answer: Any) -> tuple[BaseException | None, float]:
    start = time.monotonic()
    error: BaseException | None = None
    with watchdog():
        try:
            check(answer)
        except CheckFailed as failure:
            error = failure
        except Exception as raw:  # noqa: BLE001 - a raw error escaping the check is a finding
            error = raw
        except CheckRanTooLong as alarm:
            error = alarm
    return error, time.monotonic() - start


def _name(answer: Any) -> str:
    return getattr(answer, "__qualname__", None) or getattr(answer, "__name__", repr(answer))


def _outcome(error: BaseException | None) -> str:
    if error is None:
        return "accepted"
    if isinstance(error, CheckRanTooLong):
        return "timeout"
    if isinstance(error, ExerciseNotDone):
        return "not-done"
    if isinstance(error, LearnerCodeError):
        internal = "checking what your function returned raised" in str(error)
        return "check-error" if internal else "learner-error"
    if isinstance(error, CheckFailed):
        return "rejected"
    return "raw-error"


def rejected(check: Callable, answer: Any) -> str:
    """Assert that ``check`` rejects the wrong ``answer`` quickly, with a usable hint."""
    error, elapsed = _run(check, answer)
    outcome = _outcome(error)
    problems = hint_problems(str(error)) if error is not None else []
    _log({"check": check.__name__, "answer": _name(answer), "kind": "wrong", "outcome": outcome,
          "elapsed": round(elapsed, 1), "problems": problems, "hint": str(error)[:600] if error else ""})
    assert outcome != "timeout", f"the check ran over {WATCHDOG_S} s and was interrupted"
    assert outcome != "accepted", f"the check accepted a wrong answer ({elapsed:.1f} s)"
    assert outcome != "raw-error", f"a raw {type(error).__name__} escaped the check: {error}"
    assert outcome != "not-done", "a wrong answer was reported as the untouched stub"
    assert elapsed < SLOW_S, f"the check took {elapsed:.1f} s"
    assert not problems, f"hint: {problems}: {error}"
    return str(error)


def accepted(check: Callable, answer: Any) -> None:
    """Assert that ``check`` accepts the right ``answer`` quickly."""
    error, elapsed = _run(check, answer)
    _log({"check": check.__name__, "answer": _name(answer), "kind": "right", "outcome": _outcome(error),
          "elapsed": round(elapsed, 1), "problems": [], "hint": str(error)[:600] if error else ""})
    assert error is None, f"a correct answer was rejected: {error}"
    assert elapsed < SLOW_S, f"the check took {elapsed:.1f} s"


def marked(answers: list, known: dict[str, str], hangs: dict[str, str] | None = None) -> list:
    """``answers`` as pytest params named after each function; those in ``known`` are strict xfails.

    ``known`` maps an answer's ``__name__`` to the reason today's check gets it wrong, so that the
    suite stays green and the fixer removes the entry when the check is fixed. ``hangs`` names the
    answers that make today's check run for minutes: they are skipped, not run.
    """
    hangs = hangs or {}
    params = []
    for answer in answers:
        name = answer.__name__
        marks = [pytest.mark.xfail(strict=True, reason=known[name])] if name in known else []
        if name in hangs:
            marks = [pytest.mark.skip(reason=f"hangs: {hangs[name]}")]
        params.append(pytest.param(answer, marks=marks, id=name))
    return params


def stepped(check: Callable, answer: Any) -> tuple[str, str]:
    """Run a wrong ``answer`` twice, as a learner who tries again: return the two hints.

    Both must meet ``rejected``'s rules. Where the check gives a hint in steps (``Hint``), the
    first names the idea and where the chapter shows it ("section"), and the second differs
    from it (the precise fix). Call ``helpers.checks.forget_hints()`` first so that this
    answer's kind of failure has not been hinted before.
    """
    first = rejected(check, answer)
    second = rejected(check, answer)
    if first != second:
        assert "section" in first.lower(), f"a first step that does not say where the chapter shows it: {first}"
    return first, second
