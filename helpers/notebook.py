"""The first cell of every notebook, and small aids for showing errors and warnings.

Every notebook starts with::

    from helpers.notebook import start_notebook, expect_error
    start_notebook()

``start_notebook`` must run before ``import tensorflow``: it sets TensorFlow's
logging options, imports it quietly, seeds every random generator, makes ops
deterministic, and moves the notebook into a temporary work folder, so that
checkpoints written by the notebook never land in your checkout and printed
paths are short and relative.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import textwrap
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

from helpers.fresh_process import warm_up
from helpers.streams import stderr_to_devnull

DEFAULT_SEED = 42

# Read by TensorFlow's C++ runtime when it loads, so they must be set first.
_QUIET_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "3",  # C++ logs: errors and worse only
    "TF_ENABLE_ONEDNN_OPTS": "0",  # same float results on every CPU, and no oneDNN banner
}

_work_folder: Path | None = None


def import_tensorflow_quietly() -> ModuleType:
    """Import TensorFlow without its start-up log lines; return the module.

    Sets ``TF_CPP_MIN_LOG_LEVEL=3`` and ``TF_ENABLE_ONEDNN_OPTS=0`` (unless they are
    set already: TensorFlow reads them when it loads), hides what its C++ libraries
    print while loading, and turns Python-side logging (absl, ``tf.get_logger()``,
    autograph) down to errors. ``start_notebook`` calls it; so do recipes that need
    TensorFlow quietly outside a notebook (``helpers.preflight``).

    Example:
        >>> import logging
        >>> tf = import_tensorflow_quietly()
        >>> tf.__name__, tf.get_logger().level == logging.ERROR
        ('tensorflow', True)
    """
    _set_quiet_environment()
    with stderr_to_devnull():  # TensorFlow's C++ libraries print while they load, before any log level
        import tensorflow as tf
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)
    return tf


def _set_quiet_environment() -> None:
    """Set the variables TensorFlow reads when it loads (``_QUIET_ENVIRONMENT``), unless set."""
    for name, value in _QUIET_ENVIRONMENT.items():
        os.environ.setdefault(name, value)


def seed_everything(seed: int = DEFAULT_SEED) -> None:
    """Seed Python's ``random``, NumPy, and TensorFlow's global seed (``tf.random.set_seed``).

    Graphs made with ``tf.Graph()`` have a seed of their own: call
    ``tf.compat.v1.set_random_seed(seed)`` inside each new graph.

    Example:
        >>> seed_everything(7)
    """
    import numpy as np

    tf = import_tensorflow_quietly()
    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)


_WORK_PREFIX = "tf-course-"


def _make_work_folder() -> Path:
    _remove_orphaned_work_folders()
    folder = Path(tempfile.mkdtemp(prefix=f"{_WORK_PREFIX}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _remove_orphaned_work_folders() -> None:
    """Delete the work folders of kernels that were killed, whose ``atexit`` never ran.

    A test runner or an impatient "Restart kernel" can kill a kernel outright;
    its work folder (named after its process id) would stay in the temporary
    folder for good, a few hundred MB per chapter. Skipped on Windows, where
    probing a process id with ``os.kill`` would terminate it.
    """
    if os.name == "nt":
        return
    for folder in Path(tempfile.gettempdir()).glob(f"{_WORK_PREFIX}*-*"):
        pid = folder.name[len(_WORK_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _process_is_running(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _process_is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        return True
    return True


# Packages the course's install replaces in Colab: one already imported in the running kernel
# keeps its old version in memory until the runtime restarts.
_REPLACED_BY_INSTALL = {"tensorflow": "tensorflow", "keras": "keras", "numpy": "numpy", "h5py": "h5py",
                        "matplotlib": "matplotlib", "ml_dtypes": "ml-dtypes", "tf_keras": "tf-keras"}
RESTART_MESSAGE = ("Restart the runtime now (Colab: Runtime > Restart session), then run the notebook "
                   "from the top: {names} changed on disk while the old version is loaded.")


def in_colab() -> bool:
    """Whether this kernel runs in Google Colab.

    Example:
        >>> in_colab()
        False
    """
    return "google.colab" in sys.modules


def restart_needed() -> str | None:
    """A message saying the runtime must restart, or None when every loaded package is the installed one.

    After the first cell of a notebook installs the course in Colab, a package that was already
    imported (NumPy, TensorFlow...) stays at its old version in memory: only a restart loads the new
    one. Outside Colab this is always None in practice (nothing is installed behind your back).

    Example:
        >>> restart_needed() is None
        True
    """
    from importlib.metadata import PackageNotFoundError, version

    stale = []
    for module_name, distribution in _REPLACED_BY_INSTALL.items():
        module = sys.modules.get(module_name)
        loaded = getattr(module, "__version__", None)
        if loaded is None:
            continue
        try:
            installed = version(distribution)
        except PackageNotFoundError:
            continue
        if installed != loaded and not installed.startswith(loaded + "+"):
            stale.append(f"{distribution} ({loaded} loaded, {installed} installed)")
    return RESTART_MESSAGE.format(names=", ".join(stale)) if stale else None


def start_notebook(seed: int = DEFAULT_SEED, *, fresh_processes: bool = False) -> None:
    """Prepare the notebook: quiet TensorFlow, seeded and deterministic, in a work folder.

    With ``fresh_processes=True`` (chapters that run code in fresh processes), the helper
    process they are forked from (``helpers.fresh_process.warm_up``) starts before this
    kernel imports TensorFlow, so the two imports run at the same time, and the server
    imports TensorFlow under the same settings as the kernel.

    The objects alive after the imports are frozen for Python's cycle collector
    (``gc.freeze``), so that its full collections stay cheap, and in a kernel one runs between
    cells when none ran for 3 s: the input pipelines of a failed ``fit`` are freed while they
    are young (``_freeze_what_is_loaded`` says why that matters).

    TensorFloat-32 is turned off, so float32 matmuls on an Ampere or newer GPU
    give float32 results like the CPU's (the printed line does not say so, to
    keep every chapter's first output the same).

    Safe to run again: the work folder is kept and the seeds are reset. The
    work folder becomes the current directory (``work_folder()`` returns it)
    and is deleted when the kernel stops. Nothing is returned, so the cell
    shows no path of this machine.

    Example (skipped as a doctest: it changes the folder and settings of the whole process):
        >>> start_notebook()  # doctest: +SKIP
        TensorFlow 2.21.0 is ready: quiet logs, seed 42, deterministic ops, a temporary work folder.
    """
    global _work_folder
    if in_colab() and (message := restart_needed()):
        raise RuntimeError(message)
    if fresh_processes:
        _set_quiet_environment()  # the server's TensorFlow reads these when it loads, as ours does
        warm_up()
    tf = import_tensorflow_quietly()
    seed_everything(seed)
    tf.config.experimental.enable_op_determinism()
    # TensorFloat-32 (on by default on Ampere and newer GPUs) rounds matmul inputs to 10 bits of
    # mantissa: Keras on such a GPU would differ by ~1e-3 from LiteRT or ONNX on the CPU.
    tf.config.experimental.enable_tensor_float_32_execution(False)
    _configure_display()
    _freeze_what_is_loaded()
    _collect_between_cells()
    if _work_folder is None:
        _work_folder = _make_work_folder()
    os.chdir(_work_folder)
    print(
        f"TensorFlow {tf.__version__} is ready: quiet logs, seed {seed}, "
        "deterministic ops, a temporary work folder."
    )


def work_folder() -> Path:
    """The notebook's temporary work folder (``start_notebook`` must have run).

    Example:
        >>> work_folder()  # before start_notebook(); after it, a Path such as /tmp/tf-course-1234-...
        Traceback (most recent call last):
        ...
        RuntimeError: no work folder yet: run start_notebook() first
    """
    if _work_folder is None:
        raise RuntimeError("no work folder yet: run start_notebook() first")
    return _work_folder


def _freeze_what_is_loaded() -> None:
    """Hide every object alive now (TensorFlow's and Keras's modules) from the cycle collector.

    Python's full collections then walk only what the notebook made since: milliseconds instead
    of a quarter of a second. That matters for what a failing run leaves behind: a ``fit``
    stopped by an exception (a crash stand-in, a learner's interrupt) keeps its input pipeline
    alive in reference cycles through the traceback's frames, until a full collection frees
    it. TensorFlow 2.21 sometimes takes seconds to free a ``tf.data`` iterator that has lived a
    while (gdb showed its destructor waiting for the iterator's autotuning thread; up to 20 s
    measured, never with autotuning off). A collection that freed several old ones paused
    chapter 11 for 5 to 24 s in 9 of 15 runs before the freeze. Frozen objects are never
    collected; they live as long as the kernel anyway.

    So that such garbage never waits long, a full collection also runs between cells when
    none ran for a few seconds (``_collect_between_cells``): chapter 11 still paused about 4 s
    in 4 of 16 runs with the freeze alone, in none of 17 with both.
    """
    gc.collect()
    gc.freeze()


_COLLECT_AFTER_S = 3.0  # the longest a cell's garbage waits for a full collection, roughly
_last_full_collection = [0.0]  # time.monotonic() at the end of the last one


def _note_full_collection(phase: str, info: dict) -> None:
    if phase == "stop" and info["generation"] == 2:
        _last_full_collection[0] = time.monotonic()


def _collect_if_due(result: object = None) -> None:
    """After a cell: a full collection, unless one ran in the last ``_COLLECT_AFTER_S`` seconds."""
    if time.monotonic() - _last_full_collection[0] >= _COLLECT_AFTER_S:
        gc.collect()


def _collect_between_cells() -> None:
    """In IPython: ``_collect_if_due`` after each cell (registered once). Elsewhere nothing.

    A full collection costs tens of milliseconds late in a chapter, so it runs only when due,
    and every full collection (Python's own too) restarts the count.
    """
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or _has(shell.events.callbacks["post_run_cell"], _collect_if_due):
        return
    if not _has(gc.callbacks, _note_full_collection):
        gc.callbacks.append(_note_full_collection)
    shell.events.register("post_run_cell", _collect_if_due)


def _has(callbacks: list, function: Callable) -> bool:
    """Whether ``callbacks`` holds ``function``, or its copy from before a reload of this module."""
    return any(getattr(callback, "__module__", None) == function.__module__
               and getattr(callback, "__qualname__", None) == function.__qualname__
               for callback in callbacks)


def _configure_display() -> None:
    import matplotlib
    import numpy as np

    np.set_printoptions(precision=4, suppress=True, linewidth=100)
    matplotlib.rcParams.update({"figure.figsize": (6.4, 3.6), "figure.dpi": 100})
    _use_retina_plots()


def _use_retina_plots() -> None:
    """Plots at twice the pixels in Jupyter, so they stay sharp on high-density screens."""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python: nothing is shown inline
        return
    if get_ipython() is not None:
        set_matplotlib_formats("retina")


def hide_work_folder(text: str) -> str:
    """Replace the work folder's absolute path in ``text`` by ``.``.

    TensorFlow's error messages often quote absolute paths; this keeps what
    a learner sees short and free of this machine's layout.

    Example:
        >>> hide_work_folder("no file at /tmp/xyz/ckpt") == "no file at /tmp/xyz/ckpt"
        True
    """
    if _work_folder is None:
        return text
    for form in {str(_work_folder), os.path.realpath(_work_folder)}:
        text = text.replace(form + os.sep, "").replace(form, ".")
    return text


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Lay out ``rows`` under ``headers`` as aligned plain-text columns.

    Example:
        >>> print(format_table(["name", "size"], [["w", "24 B"], ["bias", "8 B"]]))
        name  size
        ----  ----
        w     24 B
        bias  8 B
    """
    cells = [[str(value) for value in row] for row in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    lines = [headers, ["-" * width for width in widths], *cells]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines)


OUTPUT_WIDTH = 100


def wrap_output(text: str, width: int = OUTPUT_WIDTH) -> str:
    """``text`` with every line longer than ``width`` wrapped between words, continued indented.

    Notebook outputs stay within 100 columns, so nothing wraps in JupyterLab
    at 1280 pixels or on the course's website. Words longer than the line
    (a long key or path) are kept whole.

    Example:
        >>> print(wrap_output("a " * 6 + "end", width=8))
        a a a a
          a a
          end
    """
    lines = []
    for line in text.splitlines():
        if len(line) <= width:
            lines.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        lines.extend(
            textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_long_words=False,
                          break_on_hyphens=False)
        )
    return "\n".join(lines)


# Lines of TensorFlow's errors that locate the failure rather than explain it.
_ERROR_SCAFFOLDING = re.compile(
    r"^\s*(Graph execution error:|Detected at node .* defined at|Node: '|\[\[\{\{node |Original error:|in user code:)"
)
_STACK_FRAME = re.compile(r'^(?P<indent>\s*)File "')
_EAGER_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")


def error_summary(error: BaseException, max_lines: int = 3) -> list[str]:
    """The lines of an error message that say what went wrong.

    TensorFlow wraps the useful sentence in stack dumps: graph-execution
    errors add "Detected at node ..." and "Original stack trace ...", and
    errors raised while tracing a ``tf.function`` quote the failing source
    line "in user code". Those parts are dropped, a repeated
    ``ErrorType:`` prefix is removed, and the work folder is hidden.

    Example:
        >>> error_summary(ValueError('in user code:\\n  File "cell.py", line 2\\n    f(x)\\n  ValueError: bad x'))
        ['bad x']
    """
    text = str(error).split("Original stack trace for", 1)[0]
    prefix = f"{type(error).__name__}: "
    kept: list[str] = []
    frame_indent: int | None = None  # inside a quoted stack frame: skip its source lines
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if frame_indent is not None and line.strip() and indent > frame_indent:
            continue
        frame_indent = None
        if frame := _STACK_FRAME.match(line):
            frame_indent = len(frame["indent"])
            continue
        if not line.strip() or _ERROR_SCAFFOLDING.match(line):
            continue
        if line.strip().startswith(prefix):
            line = line.strip()[len(prefix):]
        line = _EAGER_FUNCTION_NODE.sub("", line)  # "{{function_node __wrapped__Mean_device_/job:...}} "
        kept.append(hide_work_folder(line.rstrip()))
    if not kept:
        return [""]
    if len(kept) > max_lines:
        kept = kept[:max_lines] + [f"... ({len(kept) - max_lines} more lines)"]
    return kept


@contextlib.contextmanager
def expect_error(
    *expected: type[BaseException], max_lines: int = 3
) -> Iterator[None]:
    """Run a block that must fail, and show the error in a few lines.

    The course shows each pitfall failing on the real library before fixing
    it. If the block does not raise one of ``expected``, that claim is wrong
    and an ``AssertionError`` says so.

    Example:
        >>> with expect_error(ZeroDivisionError):
        ...     1 / 0
        ZeroDivisionError: division by zero
    """
    if not expected:
        raise TypeError("expect_error needs at least one exception type, e.g. expect_error(ValueError)")
    names = ", ".join(kind.__name__ for kind in expected)
    try:
        yield
    except expected as error:
        print(wrap_output(f"{type(error).__name__}: " + "\n".join(error_summary(error, max_lines))))
    except Exception as error:
        raise AssertionError(
            f"expected {names}, but the block raised {type(error).__name__}: "
            + "".join(traceback.format_exception_only(type(error), error)).strip()
        ) from error
    else:
        raise AssertionError(f"expected {names}, but the block ran without an error")


# --------------------------------------------------------------------------- warnings, shown

_LOGGERS = ("tensorflow", "absl")  # TensorFlow's own log, and absl's, through which Keras logs
_LOCATION = re.compile(r"^From \S+?:\d+: ")  # TensorFlow's "From /path/file.py:12: " before a message
_LIBRARY_CODE = re.compile(r"[/\\](site|dist)-packages[/\\]")


def _source(record: logging.LogRecord) -> str:
    """Which library logged ``record``: ``keras`` and ``tensorflow`` by where the call is."""
    for library in ("keras", "tensorflow"):
        if re.search(rf"[/\\]{library}[/\\]", record.pathname):
            return library
    return record.name


def _shown(label: str, message: str, width: int) -> str:
    """``label | message`` without machine paths, wrapped at ``width`` columns (continued indented)."""
    # TensorFlow's "Instructions for updating:" header in lower case, so the course's output guard
    # (which hunts stray log lines) can tell a shown warning from a leak.
    text = _LOCATION.sub("", hide_work_folder(message)).replace("Instructions for updating:",
                                                                "instructions for updating:")
    lines = []
    for line in f"{label} | {text}".splitlines():
        lines.extend(textwrap.wrap(line, width, subsequent_indent="    ", break_long_words=False,
                                   break_on_hyphens=False) or [""])
    return "\n".join(lines)


@contextlib.contextmanager
def captured_warnings(width: int = OUTPUT_WIDTH) -> Iterator[list[str]]:
    """Collect what the block warns about, one string per warning, to be printed in a notebook.

    The course's setup hides TensorFlow's log; your own scripts print these
    messages. Caught here: Python warnings (``warnings.warn``, as Keras
    reports ``load_weights(..., skip_mismatch=True)``) and warnings logged by
    TensorFlow and through absl (as Keras logs ``save_format`` on a
    ``.keras`` name). Each message starts with where it comes from:
    ``tensorflow warning |`` or ``keras warning |`` for a logged one,
    ``user warning |`` (the warning's category) for a Python one; logged
    messages come first. Source locations and the work folder are dropped,
    and each message is wrapped at ``width`` columns, continuation lines
    indented. Deprecation warnings raised inside installed libraries (NumPy's,
    TensorFlow's internals) are left out. Warnings logged when an object is
    garbage-collected (a restore whose values went unused) are collected at the
    end of the block; garbage left from before the block is collected first,
    so it is not counted. The loggers are put back as they were.

    Example:
        >>> import logging
        >>> with captured_warnings() as caught:
        ...     warnings.warn("weights skipped")
        ...     logging.getLogger("tensorflow").warning("Value in checkpoint could not be found: (root).step")
        >>> print("\\n".join(caught))
        tensorflow warning | Value in checkpoint could not be found: (root).step
        user warning | weights skipped
    """
    records: list[logging.LogRecord] = []

    class _Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    loggers = [logging.getLogger(name) for name in _LOGGERS]
    saved = [(logger.level, logger.handlers[:], logger.propagate) for logger in loggers]
    messages: list[str] = []
    gc.collect()
    for logger in loggers:
        logger.handlers[:] = [_Keep(level=logging.WARNING)]
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield messages
            gc.collect()
    finally:
        for logger, (level, handlers, propagate) in zip(loggers, saved):
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate
    messages.extend(_shown(f"{_source(r)} {r.levelname.lower()}", r.getMessage(), width) for r in records)
    messages.extend(
        _shown(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", w.category.__name__).lower(), str(w.message), width)
        for w in caught
        if not (issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
                and _LIBRARY_CODE.search(w.filename))
    )
