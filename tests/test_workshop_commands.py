"""The workshop's commands as the instructors' guide writes them: the offline install from a
folder of wheels, `make lab` landing on chapter 00, and `make results`."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)


@pytest.fixture(autouse=True)
def _make_as_a_user_runs_it(monkeypatch):
    """`make test` runs these tests inside make: the make they start must not inherit its level
    and flags, or it prints "make[1]: Entering directory" lines a user never sees."""
    for name in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"):
        monkeypatch.delenv(name, raising=False)


def _make_n(*args: str) -> str:
    """What make would run (dry run), with .venv taken as set up."""
    done = subprocess.run(["make", "-n", "-o", ".venv/.installed", *args], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return done.stdout.replace("\\\n", " ")


# --------------------------------------------------------------------------- the offline install


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def _repack(distribution: str, folder: Path) -> Path:
    """A wheel of an installed distribution (its files as installed), made without a network."""
    dist = importlib.metadata.distribution(distribution)
    version = dist.version
    target = folder / f"{distribution}-{version}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(target, "w") as wheel:
        info = None
        for file in dist.files:
            parts = Path(str(file)).parts
            if "__pycache__" in parts or parts[0].startswith("..") or file.name in ("RECORD", "INSTALLER", "REQUESTED"):
                continue
            if parts[0].endswith(".dist-info"):
                info = parts[0]
            data = Path(dist.locate_file(file)).read_bytes()
            wheel.writestr(str(file), data)
            records.append(_record_line(str(file), data))
        lines = io.StringIO()
        csv.writer(lines, lineterminator="\n").writerows([*records, [f"{info}/RECORD", "", ""]])
        wheel.writestr(f"{info}/RECORD", lines.getvalue())
    return target


def _tiny_wheel(folder: Path, name: str = "tinydep", version: str = "1.0", tag: str = "py3-none-any") -> Path:
    """A one-module wheel standing in for the lock's packages (tagged ``tag``)."""
    info = f"{name}-{version}.dist-info"
    files = {f"{name}.py": b"VALUE = 42\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()}
    target = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(target, "w") as wheel:
        records = []
        for path, data in files.items():
            wheel.writestr(path, data)
            records.append(",".join(_record_line(path, data)))
        wheel.writestr(f"{info}/RECORD", "\n".join([*records, f"{info}/RECORD,,"]) + "\n")
    return target


def _no_network(command: list[str]) -> list[str]:
    """The command in a network namespace of its own (no network at all), where that is allowed."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn", *command]
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n", *command]
    return command  # still --no-index, and the proxies below lead nowhere


def test_the_lock_holds_what_the_course_package_is_built_with():
    """`make wheels` downloads the lock; the editable install needs the build system's packages."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line.split(";")[0].strip())
            pins[requirement.name] = str(requirement.specifier).lstrip("=")
    for needed in map(Requirement, build):
        assert needed.name in pins and needed.specifier.contains(pins[needed.name]), (
            f"{needed} is not in requirements.lock: `make wheels` would not download it")


def test_make_wheels_downloads_every_wheel_of_the_lock():
    command = _make_n("wheels", "WHEELS=stick/wheels")
    assert "-m pip download" in command and "--only-binary=:all:" in command
    assert "--dest stick/wheels -r requirements.lock" in command
    refused = subprocess.run(["make", "wheels"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "make wheels WHEELS=" in refused.stdout


def test_make_wheels_for_another_python_names_every_linux_tag_the_wheels_carry():
    command = _make_n("wheels", "WHEELS=stick/wheels", "WHEELS_PY=3.12")
    assert "--python-version 3.12" in command
    platforms = re.findall(r"--platform (\S+)", command)
    assert platforms == ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                         "manylinux2014_x86_64", "manylinux_2_5_x86_64", "manylinux1_x86_64"]
    assert "--platform" not in _make_n("wheels", "WHEELS=stick/wheels")
    guide = (ROOT / "instructors" / "README.md").read_text(encoding="utf-8")
    assert "make wheels WHEELS=/media/usb/wheels WHEELS_PY=3.12" in guide
    assert "one operating system per run" in guide and "repeated `--platform`" in guide
    assert 'WHEELS_FOR="--platform\nmanylinux2014_x86_64 --python-version 3.12"' not in guide


def test_make_wheels_py_finds_wheels_tagged_like_tensorflow_and_onnxruntime_with_no_network(tmp_path):
    """pip matches --platform tags exactly: the tags TensorFlow 2.21 (manylinux_2_27) and
    onnxruntime (manylinux_2_28) carry are found with WHEELS_PY, not with manylinux2014 alone."""
    index, lock = tmp_path / "index", tmp_path / "lock.txt"
    index.mkdir()
    for name, tag in [("liketf", "manylinux_2_27_x86_64"), ("likeort", "manylinux_2_28_x86_64"),
                      ("likeold", "manylinux_2_17_x86_64.manylinux2014_x86_64"), ("likeolder", "manylinux1_x86_64")]:
        _tiny_wheel(index, name, tag=f"cp312-cp312-{tag}")
    lock.write_text("liketf==1.0\nlikeort==1.0\nlikeold==1.0\nlikeolder==1.0\n")

    def download(dest: Path, *options: str) -> subprocess.CompletedProcess:
        return subprocess.run(_no_network(["make", "wheels", f"WHEELS={dest}", f"LOCK={lock}", f"PYTHON={sys.executable}",
                                           f"WHEELS_FOR=--no-index --find-links {index}", *options]),
                              cwd=ROOT, capture_output=True, text=True, timeout=300)

    done = download(tmp_path / "py312", "WHEELS_PY=3.12")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list((tmp_path / "py312").glob("*.whl"))) == 4
    narrow = download(tmp_path / "narrow", "WHEELS_FOR=--no-index --find-links "
                      f"{index} --platform manylinux2014_x86_64 --python-version 3.12")
    assert narrow.returncode != 0 and "liketf" in narrow.stdout + narrow.stderr


def test_make_offline_builds_a_fresh_venv_from_a_folder_of_wheels_with_no_network(tmp_path):
    """The instructors' route on a copy of the course: no .venv yet, only a folder of wheels."""
    course = tmp_path / "course"
    course.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md", "LICENSE", "LICENSE-TEXT.md"):
        shutil.copy(ROOT / name, course / name)
    for package in ("helpers", "helpers/checks"):
        (course / package).mkdir()
        (course / package / "__init__.py").write_text("")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    setuptools_wheel = _repack("setuptools", wheels)
    _tiny_wheel(wheels)
    # The lock's part that matters here: the build system (setuptools), and one package.
    version = setuptools_wheel.name.split("-")[1]
    (course / "requirements.lock").write_text(f"setuptools=={version}\ntinydep==1.0\n")
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "PIP_NO_CACHE_DIR": "1", "PYTHONPATH": ""}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(_no_network(["make", "offline", f"WHEELS={wheels}", f"PYTHON={BASE_PYTHON}"]),
                          cwd=course, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Creating .venv" in done.stdout and (course / ".venv" / ".installed").exists()
    python = course / ".venv" / "bin" / "python"
    found = subprocess.run([python, "-c", "import helpers, tinydep; print(helpers.__file__, tinydep.VALUE)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert found.stdout.split() == [str(course / "helpers" / "__init__.py"), "42"], found.stderr
    # `make check` now finds .venv ready: it installs nothing and runs only the machine check.
    check = subprocess.run(["make", "-n", "check", f"PYTHON={BASE_PYTHON}"], cwd=course, env=env,
                           capture_output=True, text=True)
    assert check.stdout.strip() == ".venv/bin/python -m helpers.preflight", check.stdout


def test_make_offline_says_what_it_needs_without_a_folder():
    refused = subprocess.run(["make", "offline", "WHEELS=no/such/folder"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "make offline WHEELS=" in refused.stdout


def test_the_guide_writes_the_offline_route_as_the_makefile_runs_it():
    guide = (ROOT / "instructors" / "README.md").read_text(encoding="utf-8")
    assert "make wheels WHEELS=" in guide and "make offline WHEELS=" in guide
    assert "pip install --no-index --find-links wheels -r requirements.lock` inside `.venv`" not in guide


# --------------------------------------------------------------------------- make lab


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(address: str) -> str:
    """The page at ``address``; the server may print its address a moment before it answers."""
    for _ in range(60):
        try:
            return urllib.request.urlopen(address, timeout=30).read().decode()
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError):
                raise
            time.sleep(0.5)
    raise AssertionError(f"nothing answers at {address.split('?')[0]}")


def test_make_lab_prints_an_address_that_opens_chapter_00_and_hides_build_output(tmp_path):
    command = shlex.split(_make_n("lab"))
    assert command[0] == ".venv/bin/jupyter" and command[1] == "lab"
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in command
    hidden = next(arg for arg in command if arg.startswith("--ContentsManager.hide_globs="))
    assert {"build", "*.egg-info", "__pycache__"} <= set(json.loads(hidden.split("=", 1)[1]))
    # One real start of the installed JupyterLab with those flags, no browser: where does the
    # printed address land, and what does the file browser list?
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", tmp_path / "notebooks")
    (tmp_path / "build").mkdir()
    (tmp_path / "course.egg-info").mkdir()
    jupyter = Path(sys.executable).with_name("jupyter")
    port = _free_port()
    flags = [arg for arg in command[2:] if arg != "--allow-root"]
    server = subprocess.Popen([jupyter, "lab", *flags, "--no-browser", f"--port={port}", "--allow-root",
                               "--ServerApp.port_retries=0"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        address = None
        deadline = time.monotonic() + 90
        while address is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line and server.poll() is not None:
                break
            found = re.search(rf"(http://(?:localhost|127\.0\.0\.1):{port}/\S+)", line)
            address = found[1] if found else None
        assert address, "JupyterLab printed no address"
        path, token = address.split(f":{port}", 1)[1].split("?token=")
        assert path == "/lab/tree/notebooks/00_start_here.ipynb", address
        page = _get(f"http://127.0.0.1:{port}{path}?token={token}")
        assert re.search(r'"treePath": "notebooks/00_start_here.ipynb"', page), "the page does not open chapter 00"
        listing = json.loads(_get(f"http://127.0.0.1:{port}/api/contents?token={token}"))
        assert [item["name"] for item in listing["content"]] == ["notebooks"]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


# --------------------------------------------------------------------------- make results


def test_make_results_runs_the_collector_with_the_venvs_python():
    command = _make_n("results", "FOLDER=submissions", "CSV=results.csv", "FORCE=1")
    assert command.strip().splitlines()[-1] == ".venv/bin/python tools/collect_results.py submissions --csv results.csv --force"
    refused = subprocess.run(["make", "-o", ".venv/.installed", "results"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "make results FOLDER=" in refused.stdout
    for page in ("README.md", "instructors/README.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "make results FOLDER=" in text, page
        assert "python tools/collect_results.py FOLDER" not in text, f"{page}: runs outside the venv"
