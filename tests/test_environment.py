"""The setup files agree with each other, and CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
SUPPORTED = ["3.11", "3.12", "3.13"]


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines, environment: dict[str, str] | None = None) -> dict[str, str]:
    """``{package: version}`` of the exact pins in ``lines`` whose markers hold in ``environment``."""
    pins = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "-")):
            continue
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==", f"not an exact pin: {line!r}"
        if requirement.marker is None or requirement.marker.evaluate(environment):
            name = _normalise(requirement.name)
            assert name not in pins, f"{name} is pinned twice for one environment"
            pins[name] = specifiers[0].version
    return pins


def _requirements(environment: dict[str, str] | None = None) -> dict[str, str]:
    return _pins((ROOT / "requirements.txt").read_text().splitlines(), environment)


def _lock(environment: dict[str, str] | None = None) -> dict[str, str]:
    return _pins((ROOT / "requirements.lock").read_text().splitlines(), environment)


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


def test_the_supported_pythons_agree_everywhere():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"
    assert "python>=3.11,<3.14" in _conda_environment()["dependencies"]
    assert "Python 3.11, 3.12 and 3.13" in (ROOT / "requirements.lock").read_text().splitlines()[0]
    assert "SUPPORTED_PYTHONS := " + " ".join(SUPPORTED) in (ROOT / "Makefile").read_text()


@pytest.mark.parametrize("python", SUPPORTED)
@pytest.mark.parametrize("platform", ["linux", "darwin", "win32"])
def test_lock_agrees_with_requirements_on_every_supported_python(python, platform):
    environment = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": platform,
                   "os_name": "nt" if platform == "win32" else "posix",
                   "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}[platform]}
    lock = _lock(environment)
    for package, version in _requirements(environment).items():
        assert lock.get(package) == version, f"{package}: requirements.txt says {version}, lock says {lock.get(package)}"


def test_package_dependencies_admit_the_locked_versions():
    """`pip install <repo>` asks for ranges; the course's own lock must sit inside them."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lock = _lock()
    declared = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    for line in declared:
        requirement = Requirement(line)
        locked = lock.get(_normalise(requirement.name))
        assert locked, f"{requirement.name} is a dependency of the package but not in requirements.lock"
        assert requirement.specifier.contains(locked), f"{line} does not admit the locked {locked}"


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
