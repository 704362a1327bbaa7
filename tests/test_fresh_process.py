"""helpers.fresh_process: the one way the course starts fresh processes (chapters 11, 12, 16)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import fresh_process
from helpers.errors import FreshProcessError
from helpers.fresh_process import call_in_fresh_process, fork_workers, start_fresh_process, tell_parent

LINUX = sys.platform.startswith("linux")
MODES = [pytest.param("fork", marks=pytest.mark.skipif(not LINUX, reason="the fork server is Linux only")), "spawn"]


@pytest.fixture(params=MODES)
def workers(request, monkeypatch):
    """Run this test's fresh processes the way named by the parameter (COURSE_WORKERS)."""
    monkeypatch.setenv("COURSE_WORKERS", request.param)
    return request.param


def announce_and_wait(count: int) -> str:
    """Run in a child: tell the parent ``count`` times, then sleep."""
    for n in range(count):
        tell_parent(f"saving {n}")
    time.sleep(600)
    return "never"


def raise_key_error() -> None:
    raise KeyError("gone")


def die_by_signal() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def keras_state() -> tuple[str, bool, str]:
    import keras

    marked = hasattr(keras, "MARK")
    keras.MARK = 1
    return keras.backend.backend(), marked, os.environ.get("FRESH_PROBE", "")


def test_result_and_fresh_state(workers):
    assert call_in_fresh_process("operator:add", 2, 40) == 42
    assert call_in_fresh_process("tests.test_fresh_process:keras_state") == ("tensorflow", False, "")
    assert call_in_fresh_process("tests.test_fresh_process:keras_state")[1] is False  # nothing carried over


def test_the_exception_is_carried_over(workers):
    with pytest.raises(FreshProcessError, match="KeyError: 'gone'") as caught:
        call_in_fresh_process("tests.test_fresh_process:raise_key_error")
    assert (caught.value.how, caught.value.error_type) == ("exception", "KeyError")
    assert "raise_key_error" in caught.value.details and isinstance(caught.value, RuntimeError)


def test_a_timeout_kills_the_child(workers):
    started = time.monotonic()
    with pytest.raises(FreshProcessError, match="did not finish within 0.5 s") as caught:
        call_in_fresh_process("time:sleep", 60, timeout=0.5)
    assert caught.value.how == "timeout" and time.monotonic() - started < 30
    assert call_in_fresh_process("operator:neg", 1) == -1  # the next call runs


def test_a_killed_child_says_how_it_died(workers):
    with pytest.raises(FreshProcessError, match="killed by SIGKILL") as caught:
        call_in_fresh_process("tests.test_fresh_process:die_by_signal")
    assert (caught.value.how, caught.value.code) == ("signal", signal.SIGKILL)
    with pytest.raises(FreshProcessError, match="exited with code 3"):
        call_in_fresh_process("sys:exit", 3)


def test_messages_then_kill(workers):
    process = start_fresh_process("tests.test_fresh_process:announce_and_wait", 2)
    seen = list(itertools.islice(process.messages(timeout=120), 2))
    assert seen == ["saving 0", "saving 1"]
    process.kill()
    with pytest.raises(FreshProcessError, match="SIGKILL"):
        process.result(timeout=30)


def test_env_switches_the_backend_in_a_new_interpreter(monkeypatch):
    """A forked server has imported Keras with TensorFlow: another backend needs a new interpreter."""
    monkeypatch.delenv("COURSE_WORKERS", raising=False)
    backend, _, probe = call_in_fresh_process("tests.test_fresh_process:keras_state",
                                              env={"KERAS_BACKEND": "jax", "FRESH_PROBE": "yes"})
    assert (backend, probe) == ("jax", "yes")
    assert "FRESH_PROBE" not in os.environ
    assert call_in_fresh_process("tests.test_fresh_process:keras_state")[0] == "tensorflow"


def test_folder_path_environment_and_new_modules(tmp_path, monkeypatch, workers):
    """The child runs in this folder, sees variables set now and modules written now."""
    call_in_fresh_process("operator:add", 1, 1)  # the server (if any) started before the file exists
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fresh_mod_probe.py").write_text("VALUE = 41\n")
    monkeypatch.setenv("FRESH_PROBE", "set now")
    assert call_in_fresh_process("os:getcwd") == str(tmp_path)
    assert call_in_fresh_process("fresh_mod_probe:VALUE.__add__", 1) == 42
    assert call_in_fresh_process("tests.test_fresh_process:keras_state")[2] == "set now"


def test_bad_names_and_settings(monkeypatch):
    with pytest.raises(FreshProcessError, match="package.module:function"):
        call_in_fresh_process("os.getcwd")
    monkeypatch.setenv("COURSE_WORKERS", "threads")
    with pytest.raises(ValueError, match="COURSE_WORKERS must be 'fork' or 'spawn'"):
        call_in_fresh_process("os:getcwd")
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.delenv("COURSE_WORKERS")
    assert not fork_workers()  # fork after importing TensorFlow: unsafe on macOS


_PARENT = """
import multiprocessing.forkserver, os, signal, sys
from helpers.fresh_process import start_fresh_process
process = start_fresh_process("tests.test_fresh_process:announce_and_wait", 1)
assert next(process.messages(timeout=120)) == "saving 0"
print(multiprocessing.forkserver._forkserver._forkserver_pid, process.pid, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # dead, waiting to be reaped


@pytest.mark.skipif(not LINUX, reason="the fork server is Linux only")
@pytest.mark.parametrize("end", ["exit", "kill"])
def test_server_and_children_end_with_their_parent(tmp_path, end):
    """A kernel that exits, or is killed, leaves neither the server nor a running child behind."""
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root, "PYTHONWARNINGS": "error::DeprecationWarning",
           "TF_CPP_MIN_LOG_LEVEL": "3", "COURSE_WORKERS": "fork"}
    done = subprocess.run([sys.executable, "-c", _PARENT, end], env=env, capture_output=True, text=True,
                          timeout=300, cwd=root)
    assert done.returncode == (-signal.SIGKILL if end == "kill" else 0), done.stderr[-2000:]
    assert "DeprecationWarning" not in done.stderr  # Python 3.12+ warns at a fork with threads
    pids = [int(word) for word in done.stdout.split()]
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(pids) == 2 and all(_gone(pid) for pid in pids), pids


def fail_on_load() -> None:
    raise ValueError("this result cannot be rebuilt here")


class Unreadable:
    """Pickles in the child; unpickling it in the parent raises ValueError."""

    def __reduce__(self):
        return fail_on_load, ()


def unreadable_result() -> Unreadable:
    return Unreadable()


def test_an_unreadable_result_is_a_fresh_process_error(workers):
    """A result that does not unpickle here: FreshProcessError how="result", pipe closed, child waited for."""
    process = start_fresh_process("tests.test_fresh_process:unreadable_result")
    with pytest.raises(FreshProcessError) as caught:
        process.result(timeout=60)
    assert caught.value.how == "result" and "ValueError" in str(caught.value)
    assert process._connection.closed and process._process.exitcode is not None


def _caller_state() -> tuple:
    stat = os.fstat(2)
    return dict(os.environ), sys.modules["__main__"], (stat.st_dev, stat.st_ino)


def test_calls_from_threads_leave_this_process_as_it_was(monkeypatch):
    """Starts overlap in threads (chapter 16 checks backends side by side): each restores only its own swap."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.delenv("COURSE_WORKERS", raising=False)
    before = _caller_state()
    envs = [None, {"KERAS_BACKEND": "jax", "FRESH_PROBE": "t"}] * 4
    for _ in range(2):
        with ThreadPoolExecutor(len(envs)) as pool:
            results = list(pool.map(lambda env: call_in_fresh_process("operator:add", 1, 1, env=env), envs))
        assert results == [2] * len(envs)
        assert _caller_state() == before


def test_env_always_means_a_new_interpreter(monkeypatch):
    """The server imported Keras under its start's environment: env= equal to this process's still spawns."""
    monkeypatch.delenv("COURSE_WORKERS", raising=False)
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    call_in_fresh_process("operator:add", 1, 1)  # the server (if any) runs with TensorFlow's Keras
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # as a notebook cell might, after TensorFlow's import
    backend, _, _ = call_in_fresh_process("tests.test_fresh_process:keras_state", env={"KERAS_BACKEND": "jax"})
    assert backend == "jax"


CONV_SCRIPT = """
import numpy as np, keras
from helpers.keras_files import round_trip
keras.utils.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(8, 32, 32, 3)).astype("float32") * 10
m = keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Conv2D(64, 3), keras.layers.Conv2D(64, 3),
                      keras.layers.Flatten(), keras.layers.Dense(256), keras.layers.Dense(10)], name="c")
m(x)
m.save("c.keras")
report = round_trip(m, "c.keras", x, strict=False)
print("ok:", report.ok, report.max_output_difference)
"""


@pytest.mark.skipif(not LINUX, reason="the fork server is Linux only")
def test_children_compute_like_a_script_without_the_course_setup(tmp_path):
    """TF_ENABLE_ONEDNN_OPTS is the caller's: a script that left oneDNN on reloads with oneDNN on."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("TF_ENABLE_ONEDNN_OPTS", "COURSE_WORKERS", "KERAS_BACKEND")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    (tmp_path / "conv.py").write_text(CONV_SCRIPT)
    done = subprocess.run([sys.executable, "conv.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ok: True" in done.stdout, done.stdout


def test_stderr_to_devnull_is_the_one_swap_and_restores_on_errors():
    """helpers.streams.stderr_to_devnull: fd 2 at /dev/null in the block, back after, even on an exception."""
    import helpers.__main__
    import helpers.fresh_process
    import helpers.notebook
    from helpers.streams import stderr_to_devnull

    before = os.fstat(2)
    with pytest.raises(KeyError), stderr_to_devnull():
        assert os.fstat(2).st_ino == os.stat(os.devnull).st_ino
        raise KeyError("inside")
    assert (os.fstat(2).st_dev, os.fstat(2).st_ino) == (before.st_dev, before.st_ino)
    for module in (helpers.__main__, helpers.fresh_process, helpers.notebook):
        assert module.stderr_to_devnull is stderr_to_devnull, module.__name__


def test_resume_worker_has_no_old_command_line():
    """Its workers start only through helpers.fresh_process (run); no `python -m` protocol beside it."""
    import helpers.resume_worker

    assert 'if __name__ == "__main__"' not in Path(helpers.resume_worker.__file__).read_text()


def test_a_variable_read_at_import_changed_since_the_server_started_means_a_new_interpreter(monkeypatch):
    """A fork would keep the server's oneDNN setting (results differ in the last bits): spawn instead."""
    if not fresh_process.fork_workers():
        pytest.skip("no fork server on this system")
    fresh_process.warm_up()
    started_with = fresh_process._server_started_with
    assert started_with is not None
    assert fresh_process._context(None).get_start_method() == "forkserver"
    flipped = "1" if started_with["TF_ENABLE_ONEDNN_OPTS"] == "0" else "0"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", flipped)
    assert fresh_process._context(None).get_start_method() == "spawn"
    assert call_in_fresh_process("os:getenv", "TF_ENABLE_ONEDNN_OPTS") == flipped
    monkeypatch.undo()
    assert fresh_process._context(None).get_start_method() == "forkserver"


def test_a_variable_changed_right_after_the_choice_of_fork_does_not_reach_the_forked_child(monkeypatch):
    """The choice of fork and the child's variables come from one reading of the environment.

    Another thread can change os.environ between the two; here the change is made at the worst
    moment, just after the server was found to match, deterministically.
    """
    if not fresh_process.fork_workers():
        pytest.skip("no fork server on this system")
    fresh_process.warm_up()
    server_value = fresh_process._server_started_with["TF_ENABLE_ONEDNN_OPTS"] or "0"
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", server_value)
    matches = fresh_process._server_matches

    def matches_then_another_thread_changes_it(*args):
        answer = matches(*args)
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if server_value == "0" else "0"
        return answer

    monkeypatch.setattr(fresh_process, "_server_matches", matches_then_another_thread_changes_it)
    process = start_fresh_process("os:getenv", "TF_ENABLE_ONEDNN_OPTS")
    forked = type(process._process._popen).__module__ == "multiprocessing.popen_forkserver"
    assert forked and process.result(timeout=60) == server_value
