"""One address, one version: every place that names the course follows pyproject.toml.

And the Colab route: the install cell that the exercise notebooks get once the address is set,
run in a fresh virtual environment without ``helpers``, as Colab would run it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import nbformat
import pytest

import helpers
from helpers import notebook
from tests.fresh_env import fresh_environment_without_helpers, offline_environment

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import course_address  # noqa: E402
import make_exercises  # noqa: E402

URL = "https://github.com/example-org/tf-model-state-course"
CHAPTERS = sorted(path.stem for path in (ROOT / "solutions").glob("*.ipynb"))


_URLS = re.compile(r'^#? ?\[project\.urls\]\n#? ?Repository = ".*"\n', re.M)


def _published_copy(tmp_path: Path, url: str | None = URL) -> Path:
    """A copy of the files that name the address, with the address set (or unset: ``url=None``).

    Whatever this checkout's setting is (commented out as shipped, or set by a publisher), the
    copy's pyproject.toml gets exactly ``url``: the tests hold in both states.
    """
    root = tmp_path / "course"
    for name in ["README.md", "instructors/README.md", "instructors/setup.md", "CITATION.cff"]:
        if (ROOT / name).exists():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, root / name)
    (root / "solutions").mkdir()
    for stem in CHAPTERS:
        (root / "solutions" / f"{stem}.ipynb").write_text("{}")
    text = (ROOT / "pyproject.toml").read_text()
    text, found = _URLS.subn("", text)
    assert found == 1, "pyproject.toml no longer has the address setting ([project.urls] Repository)"
    if url is not None:
        text += f'\n[project.urls]\nRepository = "{url}"\n'
    (root / "pyproject.toml").write_text(text)
    if url is None or url.startswith("https://"):
        assert course_address.repository(root) == url
    return root


# --------------------------------------------------------------------------- the setting


def test_every_file_follows_the_address_setting():
    assert course_address.main(["course_address.py", "--check"]) == 0, "run `python tools/course_address.py`"


def test_the_notebooks_colab_cells_follow_the_address_setting():
    url, ref = course_address.repository(), course_address.release_ref()
    for stem in CHAPTERS:
        cells = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells
        colab = [cell.source for cell in cells if make_exercises.COLAB_TAG in cell.get("metadata", {}).get("tags", [])]
        expected = [cell.source for cell in make_exercises.colab_cells(stem, url, ref)]
        assert colab == expected, f"notebooks/{stem}.ipynb: run `python tools/make_exercises.py`"


def test_while_unset_the_docs_say_where_to_set_it_and_point_nowhere(tmp_path):
    root = _published_copy(tmp_path, None)
    texts = course_address.rendered(root)
    readme = texts["README.md"]
    assert "git+<the course's address>" in readme and "[project.urls] Repository" in readme
    assert "mybinder.org/v2/gh/<owner>/<name>/<release tag>" in readme
    assert "colab.research.google.com" not in readme
    assert "instructors/README.md" not in texts, "the guide points to the setup page, it has no clone line"
    setup = re.sub(r"<!--.*?-->", "", texts["instructors/setup.md"])  # the learners' page: nothing for them to fill in or skip
    for note in ["<the course's address>", "<its folder>", "pyproject.toml", "course_address", "This copy"]:
        assert note not in setup, note
    assert "zip file" in setup and "make check" in setup
    assert "working alone" in setup, "the page is also for learners working alone, with no instructor"
    assert "# repository-code: not set yet" in texts["CITATION.cff"]
    assert make_exercises.colab_cells(CHAPTERS[0], None, "v0.2.0") == []


def test_once_set_every_place_names_the_address(tmp_path):
    root = _published_copy(tmp_path)
    texts = course_address.rendered(root)
    readme = texts["README.md"]
    assert f'pip install "tf-model-state-course @ git+{URL}@v0.2.0"' in readme
    for placeholder in ["<the course's address>", "<owner>", "<release tag>", "OWNER/NAME"]:
        assert placeholder not in "".join(texts.values()), placeholder
    colab = re.findall(r"\((https://colab\.research\.google\.com/[^)]*)\)", readme)
    assert colab == [f"https://colab.research.google.com/github/example-org/tf-model-state-course/blob/v0.2.0/"
                     f"notebooks/{stem}.ipynb" for stem in CHAPTERS]
    binder = re.findall(r"\((https://mybinder\.org/v2/[^)]*)\)", readme)
    assert binder == ["https://mybinder.org/v2/gh/example-org/tf-model-state-course/v0.2.0"
                      "?urlpath=lab/tree/notebooks/00_start_here.ipynb"]
    assert f"git clone {URL} && cd tf-model-state-course" in texts["instructors/setup.md"]
    assert "pyproject.toml" not in re.sub(r"<!--.*?-->", "", texts["instructors/setup.md"])
    assert f'repository-code: "{URL}"' in texts["CITATION.cff"]
    assert "# repository-code" not in texts["CITATION.cff"]
    cells = make_exercises.colab_cells(CHAPTERS[1], URL, "v0.2.0")
    assert colab[1] in cells[0].source
    assert f'URL, REF = "{URL}", "v0.2.0"' in cells[1].source and "[keras2,jax,hub]" in cells[1].source


def test_publishing_in_a_copy_then_unpublishing_gives_back_the_same_files(tmp_path):
    """Setting the address and running the tool, then unsetting it, leaves no trace: both states hold."""
    published = _published_copy(tmp_path / "set")
    for name, text in course_address.rendered(published).items():
        (published / name).write_text(text)
    (published / "pyproject.toml").write_text(_URLS.sub("", (published / "pyproject.toml").read_text()))
    assert course_address.repository(published) is None
    unpublished = _published_copy(tmp_path / "unset", None)
    assert course_address.rendered(published) == course_address.rendered(unpublished)


def test_a_non_github_address_gets_install_and_clone_lines_but_no_colab_links(tmp_path):
    root = _published_copy(tmp_path, "https://gitlab.example.org/course/tf-state")
    texts = course_address.rendered(root)
    assert "git+https://gitlab.example.org/course/tf-state@v0.2.0" in texts["README.md"]
    assert "colab.research.google.com" not in texts["README.md"]
    assert make_exercises.colab_cells(CHAPTERS[0], "https://gitlab.example.org/course/tf-state", "v0") == []


def test_an_address_that_is_not_https_is_refused(tmp_path):
    root = _published_copy(tmp_path, "git@github.com:example/course.git")
    with pytest.raises(ValueError, match="must be an https:// address"):
        course_address.repository(root)


def test_one_version_string():
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert helpers.__version__ == version
    assert f"\nversion: {version}\n" in (ROOT / "CITATION.cff").read_text()


# --------------------------------------------------------------------------- Colab


def test_the_colab_cells_go_before_the_setup_cell_and_fit_the_course_rules():
    solution = nbformat.read(ROOT / "solutions" / f"{CHAPTERS[1]}.ipynb", as_version=4)
    colab = make_exercises.colab_cells(CHAPTERS[1], URL, "v0.2.0")
    exercise = make_exercises.make_exercise_notebook(solution, colab)
    code = [cell for cell in exercise.cells if cell.cell_type == "code"]
    assert code[0].source == colab[1].source
    assert code[1].source.startswith("from helpers.notebook import start_notebook")
    assert exercise.cells[0].source.startswith("# "), "the title stays first"
    lines = code[0].source.splitlines()
    assert len(lines) <= 25 and max(map(len, lines)) <= 100
    # Generating again from a generated notebook does not add a second pair.
    again = make_exercises.make_exercise_notebook(exercise, colab)
    assert sum("colab" in cell.metadata.get("tags", []) for cell in again.cells) == 2


def test_start_notebook_in_colab_asks_for_a_restart_when_an_old_package_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setitem(sys.modules, "h5py", types.SimpleNamespace(__version__="1.0.0"))
    assert notebook.in_colab()
    message = notebook.restart_needed()
    assert message.startswith("Restart the runtime now (Colab: Runtime > Restart session)")
    assert "h5py (1.0.0 loaded" in message
    with pytest.raises(RuntimeError, match="Restart the runtime"):
        notebook.start_notebook()


def _published_repository(tmp_path: Path) -> str:
    """A git repository of the course's package and stored files, release tag v<version>: its file:// URL."""
    source = tmp_path / "origin" / "tf-model-state-course"
    source.mkdir(parents=True)
    for name in ["pyproject.toml", "README.md", "LICENSE", "LICENSE-TEXT.md"]:
        shutil.copyfile(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=ignore)
    shutil.copytree(ROOT / "tests" / "data", source / "tests" / "data", ignore=ignore)
    git = ["git", "-c", "user.name=course", "-c", "user.email=course@example.org", "-C", str(source)]
    for command in (["init", "--quiet"], ["add", "."], ["commit", "--quiet", "-m", "release"],
                    ["tag", f"v{helpers.__version__}"]):
        subprocess.run(git + command, check=True, capture_output=True)
    return source.as_uri()


def test_the_colab_cell_copies_and_installs_the_course_in_a_fresh_environment_and_only_in_colab(tmp_path):
    python = fresh_environment_without_helpers(tmp_path)
    url = _published_repository(tmp_path)
    content = tmp_path / "content"  # Colab's working folder
    content.mkdir()
    (content / "cell.py").write_text(make_exercises.colab_install_source(url, f"v{helpers.__version__}"))
    (content / "bad.py").write_text(make_exercises.colab_install_source(url, "v0.0.0-no-such-release"))
    as_colab = ("import sys, types; sys.modules['google.colab'] = types.ModuleType('google.colab'); "
                "exec(open({!r}).read())")
    environment = offline_environment()  # no index; the environment's own setuptools builds

    def run(code: str) -> str:
        result = subprocess.run([str(python), "-c", code], cwd=content, env=environment,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
        return result.stdout

    helpers_missing = "import importlib.util; assert importlib.util.find_spec('helpers') is None"
    run(helpers_missing)
    assert run("exec(open('cell.py').read())") == "", "outside Colab the cell does nothing"
    run(helpers_missing)
    failed = run(as_colab.format("bad.py")).splitlines()
    assert failed[0] == "Installing the course (a few minutes the first time)..."
    assert "no-such-release" in "\n".join(failed), "git's message is shown"
    assert failed[-1] == ("The install failed (the lines above say why): Runtime > Restart session, then run "
                           "this cell again; if it fails again, send this output to your instructor.")
    run(helpers_missing)
    out = run(as_colab.format("cell.py"))
    assert out.splitlines() == ["Installing the course (a few minutes the first time)...",
                                "The course is installed: run the next cell."]
    # After a restart (a new process): the installed copy, with the files chapters 13 and 15 read.
    where = run("import helpers; print(helpers.__file__, helpers.__version__)")
    assert str(content / "tf-model-state-course" / "helpers") in where and helpers.__version__ in where
    chapters_13_and_15 = ("from helpers.identify import stored_real_file; from helpers.keras2 import tf215_reads\n"
                          "path, entry = stored_real_file('tf215', 'sequential', 'old'); print(path)\n"
                          "print(tf215_reads()['tensorflow'])")
    assert run(chapters_13_and_15).splitlines() == ["old/tf215/sequential.h5", "2.15.1"]
    assert run(as_colab.format("cell.py")) == "", "with the course installed the cell does nothing"
