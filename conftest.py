"""Checks that hold for every pytest run of the course (units and notebooks)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent

# Quiet TensorFlow's C++ logging in test runs too (read when TensorFlow loads).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def _git_status() -> str | None:
    try:
        result = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout: nothing to compare
    return result.stdout


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STATUS_BEFORE] = _git_status()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if it created or changed files in the checkout.

    Notebooks and tests must write only inside temporary folders.
    """
    before = session.config.stash.get(_STATUS_BEFORE, None)
    after = _git_status()
    if before is None or after is None or before == after:
        return
    new_lines = sorted(set(after.splitlines()) - set(before.splitlines()))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "the test run changed the checkout (tests must write only to temporary folders):"
    if reporter is not None:
        reporter.write_line(message, red=True)
        for line in new_lines:
            reporter.write_line(f"    {line}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


_STATUS_BEFORE = pytest.StashKey[str | None]()
