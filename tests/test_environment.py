"""The setup files agree with each other, and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.\-\[\]]+)==([^\s;#]+)$")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "-")):
            continue
        match = PIN.match(line)
        assert match, f"not an exact pin: {line!r}"
        pins[_normalise(match[1])] = match[2]
    return pins


def _requirements() -> dict[str, str]:
    return _pins((ROOT / "requirements.txt").read_text().splitlines())


def _lock() -> dict[str, str]:
    return _pins((ROOT / "requirements.lock").read_text().splitlines())


def _conda_environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _conda_pip_lines() -> list[str]:
    for dependency in _conda_environment()["dependencies"]:
        if isinstance(dependency, dict) and "pip" in dependency:
            return dependency["pip"]
    raise AssertionError("environment.yml has no pip section")


def test_course_packages_are_pinned():
    for package in ["tensorflow", "numpy", "jupyter", "nbval", "matplotlib", "pytest", "keras", "jupyterlab"]:
        assert package in _requirements(), f"{package} is not pinned in requirements.txt"
    assert _requirements()["tensorflow"] == "2.21.0"


def test_environment_yml_pins_what_requirements_txt_pins():
    assert _pins(_conda_pip_lines()) == _requirements()


def test_environment_yml_uses_the_lock_and_the_helpers_package():
    lines = _conda_pip_lines()
    assert "-c requirements.lock" in lines
    assert "-e ." in lines


def test_environment_yml_python_is_the_one_the_lock_was_made_with():
    assert "python=3.11" in _conda_environment()["dependencies"]
    assert "Python 3.11" in (ROOT / "requirements.lock").read_text().splitlines()[0]


def test_lock_agrees_with_requirements():
    lock = _lock()
    for package, version in _requirements().items():
        assert lock.get(package) == version, f"{package}: requirements.txt says {version}, lock says {lock.get(package)}"


def test_installed_versions_are_the_locked_ones():
    from importlib.metadata import PackageNotFoundError, version

    wrong = {}
    for package, locked in _lock().items():
        try:
            installed = version(package)
        except PackageNotFoundError:
            installed = None
        if installed != locked:
            wrong[package] = (locked, installed)
    assert not wrong, f"installed packages differ from requirements.lock (locked, installed): {wrong}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    assert re.search(r"^make test$", ci, re.MULTILINE), ".ci/run must call `make test`"
