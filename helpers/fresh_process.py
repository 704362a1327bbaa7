"""Fresh processes: the one way the course runs code away from the notebook's own process.

``call_in_fresh_process("package.module:function", *args, **kwargs)`` runs that function in a
process that has none of this process's objects, classes, registrations or TensorFlow state,
and returns its result (anything picklable). Chapter 11 trains and kills workers in them,
chapter 12 reloads models in them, chapter 16 loads a file under each Keras backend.

How a process starts (the standard library's ``multiprocessing``, nothing hand-written):

* on Linux, the ``"forkserver"`` context: one server process, started on first use, imports
  TensorFlow, Keras and NumPy once (``set_forkserver_preload``); each call forks a child from
  it, so a child starts in milliseconds, fresh but for those imported modules;
* elsewhere (macOS's system libraries are not fork-safe after TensorFlow's import, Windows has
  no fork), with ``COURSE_WORKERS=spawn``, or whenever ``env=`` is given (``KERAS_BACKEND``
  is read when Keras is imported, which the server did under the environment it had when it
  started), or once a variable TensorFlow or Keras reads at import (``READ_AT_IMPORT``:
  oneDNN, the backend, legacy Keras, visible GPUs) differs from the server's start:
  ``"spawn"``, a new interpreter that pays the imports itself.

Either way the child runs in this process's working folder, with this process's ``sys.path``
(the working folder first) and environment variables, and imports modules written after the
server started. It ends if this process dies. What it prints goes to this process's standard
output (file descriptor 1: the terminal, or in Jupyter the cell, which ipykernel forwards);
what it writes to standard error is lost (file descriptor 2 is /dev/null, for TensorFlow's
C++ start-up lines), but its exception comes back. Starts are one at a time (a lock), so calls
from threads are safe.

What the child does, or how it ends, is raised here as ``FreshProcessError``: its exception
type, message and last traceback lines, how it died (a signal, a time-out), or a result that
could not be sent or read back. Raised here directly: ``ValueError`` for a bad
``COURSE_WORKERS``, and ``pickle``'s error for an argument that cannot be sent to the child.

Example:
    >>> call_in_fresh_process("operator:add", 2, 40)
    42
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from helpers.errors import FreshProcessError
from helpers.streams import stderr_to_devnull

__all__ = ["FreshProcess", "FreshProcessError", "call_in_fresh_process", "fork_workers", "start_fresh_process",
           "tell_parent", "warm_up"]

PRELOAD = ["numpy", "tensorflow", "keras", "helpers.fresh_process"]
# read when TensorFlow loads: set for the server (which imports it) unless this process chose otherwise.
# Only the log level: TF_ENABLE_ONEDNN_OPTS changes results in the last float bits, so a child
# gets this process's value (or TensorFlow's default), never one chosen here.
SERVER_DEFAULTS = {"TF_CPP_MIN_LOG_LEVEL": "3"}
# Read once, when TensorFlow or Keras loads (in the server, at its start) and able to change a
# child's results: a call made while one of them differs from the server's start gets a new
# interpreter instead of a fork that would silently keep the server's value.
READ_AT_IMPORT = ("TF_ENABLE_ONEDNN_OPTS", "KERAS_BACKEND", "TF_USE_LEGACY_KERAS", "CUDA_VISIBLE_DEVICES")
TRACEBACK_LINES = 12
# os.environ, sys.modules["__main__"] and file descriptor 2 are swapped while a process starts and
# restored after: one start at a time, or overlapping starts (threads) restore each other's values.
_START_LOCK = threading.Lock()
_server_started_with: dict[str, str | None] | None = None  # READ_AT_IMPORT when the server started

# The server forks before any TensorFlow runtime exists, which is what makes forking safe; Python
# 3.12+ still warns at each fork of a process with threads. This module is preloaded in the server.
warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)


def fork_workers() -> bool:
    """Whether fresh processes are forked from a server (Linux) or started as new interpreters.

    Forking a process that imported TensorFlow is safe on Linux only; there, and wherever
    ``COURSE_WORKERS=spawn`` is set, every fresh process is a new interpreter.

    Example:
        >>> os.environ["COURSE_WORKERS"] = "spawn"
        >>> fork_workers()
        False
        >>> del os.environ["COURSE_WORKERS"]
    """
    choice = os.environ.get("COURSE_WORKERS", "").strip().lower()
    if choice not in ("", "fork", "spawn"):
        raise ValueError(f"COURSE_WORKERS must be 'fork' or 'spawn', got {choice!r}")
    return choice != "spawn" and sys.platform.startswith("linux")


def _context(env: Mapping[str, str] | None,
             environ: Mapping[str, str] | None = None) -> multiprocessing.context.BaseContext:
    """The ``forkserver`` context (preloading TensorFlow) where it can serve, else ``spawn``.

    Any ``env`` (even one equal to this process's environment: the server imported Keras under
    the environment it had when it started, which may differ from both) means ``spawn``.

    Side effect: ``set_forkserver_preload`` changes ``multiprocessing``'s one shared forkserver
    setting for this process, so a learner's own ``forkserver`` processes would preload
    TensorFlow, Keras and NumPy too (and share the course's server).

    Example:
        >>> _context({"KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}).get_start_method()
        'spawn'
    """
    if not fork_workers() or env is not None or not _server_matches(environ):
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def _read_at_import(environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The values of the ``READ_AT_IMPORT`` variables in ``environ`` (this process's by default)."""
    environ = os.environ if environ is None else environ
    return {name: environ.get(name) for name in READ_AT_IMPORT}


def _server_matches(environ: Mapping[str, str] | None = None) -> bool:
    """Whether a child forked from the server would load as a new interpreter started now would.

    The server read ``READ_AT_IMPORT`` when it imported TensorFlow and Keras; a child keeps
    what they made of them, whatever its environment says. False once one of them changed here.

    Example:
        >>> _server_matches()  # no server yet, or one started with this environment
        True
    """
    return _server_started_with is None or _server_started_with == _read_at_import(environ)


def _ensure_server(environ: Mapping[str, str] | None = None) -> None:
    """Start the fork server if it is not running, with ``environ`` (this process's by default).

    Called with ``_START_LOCK`` held.
    """
    global _server_started_with
    environ = dict(os.environ) if environ is None else environ
    if _server_started_with is None:
        _server_started_with = _read_at_import(environ)
    # a server that died is started again with the values the first one had
    with _environment({**SERVER_DEFAULTS, **environ, **_present(_server_started_with)}), _starting():
        multiprocessing.forkserver.ensure_running()


def _present(values: Mapping[str, str | None]) -> dict[str, str]:
    """``values`` without the unset ones."""
    return {name: value for name, value in values.items() if value is not None}


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """This process's environment variables set to ``values`` for the block, then restored.

    A new interpreter (and the fork server) takes its environment from this process at its start.

    Example:
        >>> with _environment({"FRESH_PROBE": "1"}):
        ...     os.environ["FRESH_PROBE"]
        '1'
        >>> "FRESH_PROBE" in os.environ
        False
    """
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update({name: str(value) for name, value in values.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _starting() -> Iterator[None]:
    """While a process (or the server) starts: no ``__main__`` to carry over, native errors to /dev/null.

    ``multiprocessing`` makes a child import the parent's ``__main__`` (a notebook's kernel
    launcher, or a script, run again in each child if it lacks ``if __name__ == "__main__"``);
    a fresh process needs none of it, so ``__main__`` is a bare module while the child starts.
    The child's file descriptor 2 is /dev/null, as TensorFlow's C++ logs at import go there
    (its Python errors come back to the parent, with ``FreshProcessError``).

    Example:
        >>> with _starting():
        ...     sys.modules["__main__"].__spec__ is None
        True
    """
    import types

    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        with stderr_to_devnull():
            yield
    finally:
        sys.modules["__main__"] = main


def warm_up() -> None:
    """Start the fork server now (Linux; elsewhere nothing) and return at once.

    The server imports TensorFlow, Keras and NumPy (seconds) while this process goes on, so
    the first fresh process does not wait for them. Harmless to call again.

    Example:
        >>> warm_up()
        >>> call_in_fresh_process("operator:truth", 1)
        True
    """
    if not fork_workers():
        return
    if _context(None).get_start_method() != "forkserver":
        return
    with _START_LOCK:
        _ensure_server()


def _die_with_parent() -> None:
    """In the child: end it when the process that started it ends, however that ends.

    ``multiprocessing`` gives a child its parent's sentinel (a pipe that closes when the
    parent dies, server or no server); a thread waits on it. The fork server itself ends when
    the parent and its last child have ended.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="fresh-process-lifeline", daemon=True).start()


def resolve(function: str) -> Any:
    """The function named ``"package.module:function"`` (imported now).

    Example:
        >>> resolve("os.path:join")("a", "b") == os.path.join("a", "b")
        True
        >>> resolve("os.path.join")
        Traceback (most recent call last):
        ...
        ValueError: name a function as 'package.module:function', got 'os.path.join'
    """
    module, colon, name = function.partition(":")
    if not colon or not module or not name:
        raise ValueError(f"name a function as 'package.module:function', got {function!r}")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target


_parent: multiprocessing.connection.Connection | None = None


def tell_parent(message: object) -> None:
    """In a fresh process: send ``message`` to the parent now (``FreshProcess.messages``); elsewhere nothing.

    Example:
        >>> tell_parent("saving 3")  # not in a fresh process: no one to tell
    """
    if _parent is not None:
        _parent.send(("message", message))


def _error_report(error: BaseException) -> tuple[str, str, str, str]:
    """``("error", type, message, last traceback lines)`` for the parent.

    Example:
        >>> _error_report(KeyError("gone"))[:3]
        ('error', 'KeyError', "KeyError: 'gone'")
    """
    lines = "".join(traceback.format_exception(error)).rstrip().splitlines()
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return "error", type(error).__name__, text, "\n".join(lines[-TRACEBACK_LINES:])


def _child(connection: multiprocessing.connection.Connection, setting: dict[str, Any], function: str,
           args: tuple, kwargs: dict) -> None:
    """In the fresh process: take the parent's folder, path and environment, run ``function``, answer."""
    global _parent
    _die_with_parent()
    _parent = connection
    os.chdir(setting["cwd"])
    sys.path[:] = [setting["cwd"], *(entry for entry in setting["path"] if entry not in ("", setting["cwd"]))]
    os.environ.clear()
    os.environ.update(setting["environ"])
    importlib.invalidate_caches()  # modules written since the server started
    try:
        answer: tuple = ("result", resolve(function)(*args, **kwargs))
    except SystemExit as exit_:
        code = exit_.code
        answer = ("result", None) if code in (0, None) else ("exit", code)
    except BaseException as error:  # noqa: BLE001: the parent raises it as FreshProcessError
        answer = _error_report(error)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        connection.send(answer)
    except Exception as error:  # noqa: BLE001: an unpicklable result
        connection.send(("unsent", f"its result could not be sent back: {type(error).__name__}: {error}"))
    connection.close()


class FreshProcess:
    """One running fresh process (``start_fresh_process``): its messages, its result, a kill.

    Example:
        >>> process = start_fresh_process("helpers.fresh_process:tell_parent", "hello")
        >>> process.result(timeout=60) is None, process.pid > 0
        (True, True)
    """

    def __init__(self, function: str, args: tuple, kwargs: dict, env: Mapping[str, str] | None) -> None:
        self.function = function
        with _START_LOCK:  # the environment is read, swapped and restored by one start at a time
            environ = dict(os.environ)  # read once: the choice of fork and the child's variables agree
            context = _context(env, environ)
            self._connection, child_end = context.Pipe(duplex=False)
            setting = {"cwd": os.getcwd(), "path": list(sys.path), "environ": {**environ, **(env or {})}}
            self._process = context.Process(target=_child, args=(child_end, setting, function, args, kwargs),
                                            daemon=True, name=f"fresh:{function}")
            if isinstance(context, multiprocessing.context.ForkServerContext):
                _ensure_server(environ)
            with _environment({**SERVER_DEFAULTS, **environ, **(env or {})}), _starting():
                self._process.start()
        child_end.close()  # ours: so that the pipe ends when the child does
        self.pid: int = self._process.pid
        self._answer: tuple | None = None

    def _receive(self, timeout: float | None) -> tuple | None:
        """The child's next message; ``("died",)`` when it ended without answering; None on time-out."""
        if not self._connection.poll(timeout):
            return None
        try:
            return self._connection.recv()
        except (EOFError, OSError):
            return ("died",)
        except Exception as error:  # noqa: BLE001: a result that does not unpickle here
            return ("unsent", f"its result could not be read here: {type(error).__name__}: {error}")

    def messages(self, timeout: float | None = None) -> Iterator[object]:
        """What the child sends with ``tell_parent``, as it comes, until it answers or ``timeout`` s pass."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._answer is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            received = self._receive(left)
            if received is None:
                return
            if received[0] == "message":
                yield received[1]
            else:
                self._answer = received

    def kill(self) -> None:
        """SIGKILL the child now (no clean-up in it); nothing if it has ended."""
        if self._process.is_alive():
            self._process.kill()

    def result(self, timeout: float | None = None) -> Any:
        """The function's result; ``FreshProcessError`` if it raised, died, or ran past ``timeout`` s."""
        for _ in self.messages(timeout):
            pass  # messages no one asked for
        answer = self._answer
        if answer is None:
            self.kill()
        self._process.join(5 if answer is not None else None)
        self._connection.close()
        if answer is None:
            raise FreshProcessError(self.function, "timeout", f"it did not finish within {timeout:g} s and was "
                                    "stopped; pass a larger timeout=")
        return self._outcome(answer)

    def _outcome(self, answer: tuple) -> Any:
        kind = answer[0]
        if kind == "result":
            return answer[1]
        if kind == "error":
            raise FreshProcessError(self.function, "exception", answer[2], error_type=answer[1], details=answer[3])
        if kind == "exit":
            raise FreshProcessError(self.function, "exit", f"it exited with code {answer[1]}", code=answer[1])
        if kind == "unsent":
            raise FreshProcessError(self.function, "result", answer[1])
        return self._death()

    def _death(self) -> Any:
        code = self._process.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            memory = " (often the system running out of memory)" if -code == signal.SIGKILL else ""
            raise FreshProcessError(self.function, "signal", f"it was killed by {name}{memory}", code=-code)
        raise FreshProcessError(self.function, "exit", f"it ended with code {code} without an answer", code=code)


def start_fresh_process(function: str, *args: Any, env: Mapping[str, str] | None = None,
                        **kwargs: Any) -> FreshProcess:
    """Start ``function`` (``"package.module:function"``) in a fresh process; returns at once.

    For callers that watch the child (``messages``), kill it, or run several side by side;
    ``call_in_fresh_process`` is this and ``.result(timeout)``.

    Example:
        >>> start_fresh_process("operator:mul", 6, 7).result(timeout=60)
        42
    """
    return FreshProcess(function, args, kwargs, env)


def call_in_fresh_process(function: str, *args: Any, env: Mapping[str, str] | None = None,
                          timeout: float | None = None, **kwargs: Any) -> Any:
    """Run ``function`` (``"package.module:function"``) with ``args`` in a fresh process; its result.

    ``env`` sets environment variables in the child (for instance ``{"KERAS_BACKEND": "jax"}``);
    with ``env`` the child is always a new interpreter. After ``timeout`` seconds
    the child is killed. Raises ``FreshProcessError`` with the child's exception type, message
    and last traceback lines, or how it died.

    Example:
        >>> call_in_fresh_process("os:getcwd") == os.getcwd()
        True
        >>> call_in_fresh_process("math:sqrt", -1)
        Traceback (most recent call last):
        ...
        helpers.errors.FreshProcessError: 'math:sqrt' in a fresh process: ValueError: math domain error
    """
    return start_fresh_process(function, *args, env=env, **kwargs).result(timeout)
