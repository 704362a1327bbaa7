"""The recipes install as a package into someone else's environment, and import from there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPE_MODULES = sorted(
    f"helpers.{path.stem}" for path in (ROOT / "helpers").glob("*.py") if not path.stem.startswith("_")
) + sorted(f"helpers.{path.parent.name}" for path in (ROOT / "helpers").glob("*/__init__.py"))


def _run(*command: str | os.PathLike, cwd: Path) -> str:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True,
                            env=environment)
    assert result.returncode == 0, f"{' '.join(map(str, command))} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Build from a copy of what the package needs: setuptools writes build/ beside pyproject.toml.
    source = tmp_path_factory.mktemp("source")
    for name in ["pyproject.toml", "README.md", "LICENSE", "LICENSE-TEXT.md"]:
        shutil.copyfile(ROOT / name, source / name)
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    # --no-build-isolation: offline, with the setuptools of the course's own environment.
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", out, source, cwd=source)
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_declares_the_recipes_runtime_dependencies(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        requires = [line.split(":", 1)[1].strip() for line in archive.read(metadata).decode().splitlines()
                    if line.startswith("Requires-Dist:")]
        names = archive.namelist()
    for package in ["tensorflow", "keras", "numpy", "matplotlib", "h5py"]:
        assert any(line.startswith(package) for line in requires), f"{package} missing from {requires}"
    assert any(line.startswith("tf-keras") and "extra == \"keras2\"" in line for line in requires)
    assert "helpers/checks/__init__.py" in names
    assert not any(name.startswith(("tests/", "solutions/", "notebooks/")) for name in names)


def test_pip_install_into_a_fresh_environment_gives_working_recipes(wheel, tmp_path):
    """A fresh venv that already has TensorFlow (here: this environment's packages, made visible
    by a .pth file, as in a user's own environment) gets the recipes from `pip install`."""
    venv = tmp_path / "user-env"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path).strip())
    (site / "existing-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(python, "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check", wheel, cwd=tmp_path)
    imports = "; ".join(f"import {module}" for module in RECIPE_MODULES)
    where = _run(python, "-c", f"{imports}; import helpers; print(helpers.__file__)", cwd=tmp_path)
    assert where.strip().startswith(str(site)), f"helpers imported from {where!r}, not from the installed package"
