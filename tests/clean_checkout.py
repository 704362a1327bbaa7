"""A pytest plugin that fails any run which creates or changes files in the git checkout.

Notebooks and tests must write only inside temporary folders; this holds them
to it for every run of the course's suite (the root conftest.py loads it).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

_STATUS_BEFORE = pytest.StashKey[str | None]()


def git_status(root: Path) -> str | None:
    """``git status --porcelain`` of ``root``, or None when it is not a git checkout."""
    try:
        result = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=root, capture_output=True, text=True, check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return result.stdout


def new_changes(before: str, after: str) -> list[str]:
    """Status lines present after the run and not before it.

    Example:
        >>> new_changes("?? a\\n", "?? a\\n?? b\\n")
        ['?? b']
    """
    return sorted(set(after.splitlines()) - set(before.splitlines()))


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STATUS_BEFORE] = git_status(session.config.rootpath)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_STATUS_BEFORE, None)
    after = git_status(session.config.rootpath)
    if before is None or after is None:
        return
    changes = new_changes(before, after)
    if not changes:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            "the test run changed the checkout (tests must write only to temporary folders):", red=True
        )
        for line in changes:
            reporter.write_line(f"    {line}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
