"""The pieces every exercise check is built from, written once.

A check (``helpers/checks/exNN.py``) builds its own inputs, calls the learner's
function and compares what comes back. What repeats from check to check lives here:

- ``folder_files`` and ``files_unchanged``: the files a learner's function is
  handed to read, and the proof that it only read them;
- ``calls_recorded``: what the learner's function did on the way (each session run,
  each graph made), for what its result cannot show;
- ``distinct_values``: a fixture's variables get distinct, non-zero values, so
  an answer that maps one variable onto another shows;
- ``call_answer``: the learner's function called where raising is a mistake the
  check has a hint for (its exception becomes that hint);
- ``must_raise``: the learner's function called where the prompt asks for an
  error (returning quietly gets the hint);
- ``same_arrays``: two snapshots of named values compared;
- ``require_array``: an answer compared with the expected array in the standard
  order of hints: its type, its shape, its dtype, known wrong answers, its values;
- ``Case``, ``require_cases``, ``Mistake`` and ``refuse_mistakes``: a check's
  probes written as a table of rows, walked by one loop.

Every hint stays in the check that gives it, as a literal string, f-string or
``Hint`` (``tools/make_kit.py`` reads each check's mistakes from its source, these
calls' hint arguments included). Imports run one way: the ``exNN`` modules import
this module, which imports only the framework's core (``helpers.checks``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar
from unittest import mock

import numpy as np

from helpers.checks import Hint, require

__all__ = [
    "Case",
    "Mistake",
    "call_answer",
    "calls_recorded",
    "distinct_values",
    "files_unchanged",
    "folder_files",
    "must_raise",
    "no_warning_lines",
    "refuse_mistakes",
    "require_array",
    "require_cases",
    "same_arrays",
    "working_folder",
]

Result = TypeVar("Result")
HintText = str | Hint


# --------------------------------------------------------------------------- files a check hands in


def folder_files(folder: str | os.PathLike, recursive: bool = True) -> dict[str, bytes]:
    """The contents of each file under ``folder``, by path relative to it (only its own files unless ``recursive``).

    Compare two of them to tell whether a learner's function changed, added or deleted a file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = Path(folder, "sub").mkdir(), Path(folder, "a.txt").write_text("a")
        ...     _ = Path(folder, "sub", "b.txt").write_text("b")
        ...     folder_files(folder), folder_files(folder, recursive=False)
        ({'a.txt': b'a', 'sub/b.txt': b'b'}, {'a.txt': b'a'})
    """
    root = Path(folder)
    paths = sorted(root.rglob("*")) if recursive else sorted(root.iterdir())
    return {str(path.relative_to(root)): path.read_bytes() for path in paths if path.is_file()}


@contextlib.contextmanager
def files_unchanged(folder: str | os.PathLike, hint: HintText, recursive: bool = True) -> Iterator[None]:
    """Fail with ``hint`` when the block (which calls the learner's function) changed a file under ``folder``.

    The files are read when the block starts and compared when it ends; a block that fails (its own
    hint, or an error) ends the check there, before any comparison.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     _ = Path(folder, "model.txt").write_text("weights")
        ...     with files_unchanged(folder, "your function changed the files it read: only read them"):
        ...         _ = Path(folder, "model.txt").read_text()  # reading is fine
        ...     with files_unchanged(folder, "your function changed the files it read: only read them"):
        ...         _ = Path(folder, "model.txt").write_text("other weights")
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: your function changed the files it read: only read them
    """
    before = folder_files(folder, recursive)
    yield
    require(folder_files(folder, recursive) == before, hint)


@contextlib.contextmanager
def no_warning_lines() -> Iterator[None]:
    """No TensorFlow, absl or Python warning lines while a check runs: the learner reads only the hint.

    TensorFlow logs through the "tensorflow" logger, Keras through absl's; both levels are put
    back as they were, also when the check fails.

    Example:
        >>> import warnings
        >>> with no_warning_lines():
        ...     warnings.warn("not shown")
        ...     logging.getLogger("tensorflow").error("not shown either")
    """
    loggers = [logging.getLogger(name) for name in ("tensorflow", "absl")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


@contextlib.contextmanager
def working_folder(folder: str | os.PathLike) -> Iterator[None]:
    """Run the block with ``folder`` (created) as the current folder; the previous one is restored after.

    A relative path the learner's function writes then lands in ``folder``, where the check sees it.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with working_folder(os.path.join(folder, "cwd")):
        ...         _ = Path("notes.txt").write_text("written here")
        ...     os.listdir(os.path.join(folder, "cwd"))
        ['notes.txt']
    """
    os.makedirs(folder, exist_ok=True)
    previous = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


# --------------------------------------------------------------------------- what the answer did on the way


@contextlib.contextmanager
def calls_recorded(owner: object, name: str, note: Callable[..., Any], *, after: bool = False) -> Iterator[list]:
    """A list of ``note(*arguments)`` for every call of ``owner.name`` while the block runs; each call runs as usual.

    For what a check must see the learner's function do, but cannot see in its result: every
    ``Session.run`` (which graph, which feed), every graph or session made. A method of a class
    gets the instance as its first argument. With ``after=True`` the note is taken once the call
    returned, and gets its result first: ``note(result, *arguments)``; a call that raises then
    leaves no note.

    Example:
        >>> class Session:
        ...     def run(self, fetches, feed_dict=None):
        ...         return [fetches] * 2
        >>> with calls_recorded(Session, "run", lambda session, fetches, feed_dict=None: feed_dict) as feeds:
        ...     Session().run("y", feed_dict={"x": 1.0})
        ['y', 'y']
        >>> feeds
        [{'x': 1.0}]
        >>> with calls_recorded(Session, "run", lambda result, *arguments: len(result), after=True) as sizes:
        ...     _ = Session().run("y"), Session().run("z")
        >>> sizes
        [2, 2]
    """
    notes: list = []
    original = getattr(owner, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        if not after:
            notes.append(note(*args, **kwargs))
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        notes.append(note(result, *args, **kwargs))
        return result

    with mock.patch.object(owner, name, watched):
        yield notes


# --------------------------------------------------------------------------- fixtures that reveal mistakes


def distinct_values(index: int, shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    """Distinct, non-zero numbers for the ``index``-th variable of a fixture (no two variables share one).

    Give each variable of a fixture its own ``index``: an answer that reads, saves or copies the
    wrong variable then holds values no right answer holds.

    Example:
        >>> distinct_values(1, (2, 2))
        array([[10.5, 11. ],
               [11.5, 12. ]], dtype=float32)
        >>> bool(np.intersect1d(distinct_values(1, (3,)), distinct_values(2, (3,))).size)
        False
    """
    size = int(np.prod(shape, dtype=int))
    return (np.arange(1, size + 1, dtype=dtype) * 0.5 + 10 * index).reshape(shape)


# --------------------------------------------------------------------------- calling the learner's function


def call_answer(call: Callable[[], Result], hint: HintText | Callable[[Exception], HintText | None],
                errors: type[Exception] | tuple[type[Exception], ...] = Exception) -> Result:
    """``call()``'s result, or the check fails with ``hint`` when it raises one of ``errors``.

    For a call where raising is a mistake the check can explain (a right input refused, an
    assertion too strict); ``hint`` may be made from the error (``lambda error: f"... {quote(error)}"``),
    and may then be None for an error the check has no hint for. Such errors, and those not in
    ``errors``, pass on: the framework turns them into a hint naming the learner's line.

    Example:
        >>> call_answer(lambda: int("42"), "return the number as an int")
        42
        >>> call_answer(lambda: int("forty-two"), lambda error: f"int() refused it: {error}", ValueError)
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: int() refused it: invalid literal for int() with base 10: 'forty-two'
        >>> call_answer(lambda: int("4.5"), lambda error: "no words" if "forty" in str(error) else None, ValueError)
        Traceback (most recent call last):
        ...
        ValueError: invalid literal for int() with base 10: '4.5'
    """
    __tracebackhide__ = True
    try:
        return call()
    except errors as error:
        text = hint(error) if callable(hint) else hint
        if text is None:
            raise
        require(False, text)
        raise  # pragma: no cover - require(False, ...) always raises


def must_raise(call: Callable[[], object], hint: HintText,
               errors: type[BaseException] | tuple[type[BaseException], ...] = Exception) -> BaseException:
    """The error ``call()`` raised; the check fails with ``hint`` when it returns without one of ``errors``.

    For inputs the prompt says must be refused (a partial checkpoint, a file that changes the
    computation). Any exception type counts unless ``errors`` names the ones the prompt allows.

    Example:
        >>> must_raise(lambda: int("forty-two"), "a word is not a number: raise")
        ValueError("invalid literal for int() with base 10: 'forty-two'")
        >>> must_raise(lambda: int("42"), "raise on every input")
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: raise on every input
    """
    __tracebackhide__ = True
    try:
        call()
    except errors as error:
        return error
    require(False, hint)
    raise AssertionError("unreachable")  # pragma: no cover - require(False, ...) always raises


# --------------------------------------------------------------------------- comparing answers


class Mistake(NamedTuple):
    """A known wrong answer, and the hint an answer equal to it gets (a row of a check's table)."""

    wrong: Any
    hint: HintText


class Case(NamedTuple):
    """A probe the learner's function is given, what it must give back, and the hint when it does not."""

    probe: Any
    expected: Any
    hint: HintText


def same_arrays(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The same names in both, and equal arrays under each (``np.array_equal``): two snapshots of variables.

    Example:
        >>> before = {"dense/kernel": np.ones((2, 2)), "dense/bias": np.zeros(2)}
        >>> same_arrays(before, {"dense/bias": np.zeros(2), "dense/kernel": np.ones((2, 2))})
        True
        >>> same_arrays(before, {"dense/kernel": np.ones((2, 2))})  # a name missing
        False
        >>> same_arrays(before, {**before, "dense/bias": np.ones(2)})  # a value changed
        False
    """
    return a.keys() == b.keys() and all(np.array_equal(a[key], b[key]) for key in a)


def _equal(a: Any, b: Any) -> bool:
    return bool(a == b)


def refuse_mistakes(answer: Any, mistakes: Iterable[Mistake],
                    same: Callable[[Any, Any], bool] = _equal) -> None:
    """Fail with the hint of the first known wrong answer that ``answer`` is the ``same`` as.

    Example:
        >>> mistakes = [Mistake(100, "you restored the first checkpoint listed, not the newest"),
        ...             Mistake(300, "you restored the largest step, not the newest")]
        >>> refuse_mistakes(200, mistakes)
        >>> refuse_mistakes(300, mistakes)
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: you restored the largest step, not the newest
    """
    __tracebackhide__ = True
    for mistake in mistakes:
        require(not same(answer, mistake.wrong), mistake.hint)


def require_cases(answer: Callable[[Any], Any], cases: Iterable[Case],
                  same: Callable[[Any, Any], bool] = _equal) -> None:
    """Give ``answer`` each case's probe in turn; fail with the first case's hint whose result is not ``same``.

    Example:
        >>> cases = [Case(2, 4, "double(2) should be 4"), Case(-1, -2, "double(-1) should be -2: keep the sign")]
        >>> require_cases(lambda x: 2 * x, cases)
        >>> require_cases(lambda x: abs(2 * x), cases)
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: double(-1) should be -2: keep the sign
    """
    __tracebackhide__ = True
    for case in cases:
        require(same(answer(case.probe), case.expected), case.hint)


def require_array(got: Any, expected: np.ndarray, *, type_hint: HintText | None = None,
                  shape_hint: HintText | None = None, dtype_hint: HintText | None = None,
                  mistakes: Iterable[tuple[Any, HintText] | tuple[Any, HintText, float]] = (),
                  values_hint: HintText | None = None, atol: float = 1e-5) -> None:
    """Compare an answer with ``expected`` in the standard order of hints; a rung without a hint is skipped.

    1. ``type_hint``: ``got`` is not a NumPy array;
    2. ``shape_hint``: its shape differs;
    3. ``dtype_hint``: its dtype differs;
    4. ``mistakes``: rows ``(wrong, hint)`` or ``(wrong, hint, atol)``: ``got`` is close to a known
       wrong answer (``np.allclose``, NumPy's default tolerance unless the row gives one);
    5. ``values_hint``: ``got`` is not close to ``expected`` (within ``atol``).

    Example:
        >>> expected = np.array([1.0, 2.0], np.float32)
        >>> require_array(np.array([1.0, 2.0], np.float32), expected, shape_hint="shape", values_hint="values")
        >>> require_array([1.0, 2.0], expected, type_hint="return a NumPy array (.numpy())")
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: return a NumPy array (.numpy())
        >>> require_array(np.array([[1.0, 2.0]], np.float32), expected, shape_hint="return it as it is (no reshape)")
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: return it as it is (no reshape)
        >>> require_array(np.array([-1.0, -2.0], np.float32), expected, mistakes=[(-expected, "the sign is flipped")])
        Traceback (most recent call last):
        ...
        helpers.checks.CheckFailed: the sign is flipped
    """
    __tracebackhide__ = True
    if type_hint is not None:
        require(isinstance(got, np.ndarray), type_hint)
    if shape_hint is not None:
        require(got.shape == expected.shape, shape_hint)
    if dtype_hint is not None:
        require(got.dtype == expected.dtype, dtype_hint)
    for wrong, hint, *tolerance in mistakes:
        require(not np.allclose(got, wrong, **({"atol": tolerance[0]} if tolerance else {})), hint)
    if values_hint is not None:
        require(np.allclose(got, expected, atol=atol), values_hint)
