"""The clean-checkout guard fails a test run that writes into the checkout."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.clean_checkout import git_status, new_changes

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent


def test_new_changes_lists_only_what_the_run_added():
    assert new_changes(" M README.md\n", " M README.md\n?? leak.txt\n") == ["?? leak.txt"]
    assert new_changes("?? a\n", "") == []


def test_git_status_outside_a_checkout(tmp_path):
    assert git_status(tmp_path) is None


@pytest.fixture
def checkout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A throwaway git checkout holding one committed file, with the guard plugin available."""
    subprocess.run(["git", "init", "-q", "."], cwd=pytester.path, check=True)
    pytester.makefile(".toml", pyproject="[tool.pytest.ini_options]\n")
    subprocess.run(["git", "add", "-A"], cwd=pytester.path, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
        cwd=pytester.path, check=True,
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return pytester


def _run(checkout: pytest.Pytester, body: str, outside: Path) -> pytest.RunResult:
    """Run a one-test file kept outside the checkout, with the checkout as rootdir."""
    test_file = outside / "test_probe.py"
    test_file.write_text(textwrap.dedent(body))
    return checkout.runpytest_subprocess(
        "-p", "tests.clean_checkout", "-p", "no:cacheprovider",
        "--rootdir", str(checkout.path), "--basetemp", str(outside / "basetemp"), str(test_file),
    )


def test_a_run_that_writes_into_the_checkout_fails(checkout, tmp_path_factory):
    result = _run(checkout, f"""
        def test_leaks():
            open({str(checkout.path / 'leak.txt')!r}, "w").write("oops")
    """, tmp_path_factory.mktemp("outside"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*the test run changed the checkout*", "*?? leak.txt*"])


def test_a_clean_run_passes(checkout, tmp_path_factory):
    result = _run(checkout, """
        def test_clean(tmp_path):
            (tmp_path / "fine.txt").write_text("temporary")
    """, tmp_path_factory.mktemp("outside"))
    assert result.ret == pytest.ExitCode.OK
