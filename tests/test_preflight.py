"""helpers.preflight: the one-step check of a learner's machine."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import preflight


def test_this_machine_is_ready_and_every_line_says_what_was_checked():
    result = subprocess.run([sys.executable, "-m", "helpers.preflight"], capture_output=True, text=True,
                            timeout=300)
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(lines) == len(preflight.CHECKS) + 1
    assert all(line.startswith("✔ ") for line in lines[:-1]), result.stdout
    assert lines[-1] == "This machine is ready for the course."


def test_a_failing_check_is_reported_with_what_to_do(capsys):
    def check_broken() -> str:
        raise preflight.NotReady("keras 2.15 is installed: run `make setup`")

    def check_crashing() -> str:
        raise OSError("disk full")

    assert preflight.run_checks([preflight.check_python, check_broken, check_crashing]) is False
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("✔ Python")
    assert out[1].startswith("✘ keras 2.15 is installed: run `make setup`")
    assert out[2].startswith("✘ crashing: OSError: disk full")
    assert out[3].startswith("Not ready yet")


def test_keras2_is_checked_in_a_process_of_its_own(monkeypatch):
    assert preflight.check_keras2 in preflight.CHECKS
    monkeypatch.setattr(preflight, "_KERAS2_CODE", "raise SystemExit('tf_keras could not load')")
    try:
        preflight.check_keras2()
    except preflight.NotReady as problem:
        assert str(problem) == "Keras 2 (tf-keras) fails in a process of its own: tf_keras could not load"
    else:
        raise AssertionError("a failing Keras 2 subprocess was not reported")


def test_the_keras2_check_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the check's own process
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # this one (tempfile caches its folder)
    assert preflight.check_keras2().startswith("tf-keras ")
    assert list(scratch.iterdir()) == [], "the Keras 2 check left files behind"


def test_the_jax_backend_is_checked_in_a_process_of_its_own(monkeypatch):
    assert preflight.check_jax in preflight.CHECKS
    assert preflight.check_jax().startswith("Keras starts with the JAX backend")
    monkeypatch.setattr(preflight, "_JAX_CODE", "import keras; assert keras.backend.backend() == 'tensorflow'")
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")  # the check must set it for its process
    try:
        preflight.check_jax()
    except preflight.NotReady as problem:
        assert str(problem).startswith("Keras does not start with the JAX backend: AssertionError")
    else:
        raise AssertionError("the check did not run Keras with KERAS_BACKEND=jax")


def test_the_pins_of_a_check_in_its_own_process_are_read_when_it_runs(monkeypatch):
    """A test (or a maintainer) that changes a pin after import changes what the check expects."""
    monkeypatch.setattr(preflight, "EXPECTED_KERAS2", "9.9")
    monkeypatch.setattr(preflight, "EXPECTED_JAX", {"jax": "9.9"})
    for check in (preflight.check_keras2, preflight.check_jax):
        with pytest.raises(preflight.NotReady, match="written for 9.9"):
            check()
