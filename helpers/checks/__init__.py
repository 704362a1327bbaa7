"""The machinery behind the exercises' check cells.

An exercise asks for a function; its check cell hands that function to a
check, which calls it on fresh inputs of its own and compares the result with
what is expected::

    from helpers.checks import ex01
    ex01.check_save_subset(save_subset)

A check prints one line when the answer is right. When it is not, it raises
``CheckFailed`` with a hint that says what is wrong; when the exercise still
holds the ``raise NotImplementedError()`` stub, it raises ``ExerciseNotDone``.
When the learner's own code raises, the hint names the learner's line and the
likely cause (``LearnerCodeError``). In Jupyter each of these shows as one
short block (exercise number and hint), not as a traceback of the check; "not
done yet" shows in a neutral box of its own, not the red box of an error.

Writing a check::

    @exercise_check("01.1")
    def check_double(double) -> str:
        require(double(2) == 4, "double(2) should be 4, got {}".format(double(2)))
        return "double(2) == 4"

Hints in steps, as a tutor gives them: ``require(condition, Hint(idea, fix))``
says ``idea`` (the idea, and the section of the chapter that shows it) the
first time the learner's answer fails that way, and ``fix`` (the precise fix)
when the same kind of failure comes back in the same kernel session.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
import sysconfig
import tempfile
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType, TracebackType
from typing import Any, TypeVar

__all__ = ["CheckFailed", "ExerciseNotDone", "Hint", "LearnerCodeError", "exercise_check", "forget_hints",
           "learner_error_hint", "quote", "require"]

Check = TypeVar("Check", bound=Callable[..., Any])

_WIDTH = 96
_RED_BOLD, _RESET = "\x1b[1;31m", "\x1b[0m"
_STUB_LINE = "raise NotImplementedError()"


@dataclass(frozen=True)
class Hint:
    """A hint in two steps: ``idea`` the first time an answer fails this way, ``fix`` when it fails so again.

    ``idea`` names the idea the answer missed and where the chapter shows it (the section's name),
    without handing over the code; ``fix`` is the precise fix. ``kind`` names the kind of failure
    (it defaults to ``fix``): the same kind failing again, in the same exercise and kernel
    session, gets ``fix``. Each text stays within 300 characters with the "Exercise NN.N: " prefix.

    Example:
        >>> hint = Hint("the Saver saves the default graph's variables (section 5, 'Saving a subset')",
        ...             "build the Saver inside `with sess.graph.as_default():`")
        >>> hint.kind == hint.fix
        True
    """

    idea: str
    fix: str
    kind: str = ""

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", self.fix)


# How often each (exercise, kind of failure) has been hinted in this kernel session.
_HINTS_GIVEN: dict[tuple[str, str], int] = {}


def forget_hints() -> None:
    """Start every stepped hint from its first step again (tests; a new learner on the same kernel).

    Example:
        >>> forget_hints()
    """
    _HINTS_GIVEN.clear()


def _step(exercise_id: str, hint: Hint) -> str:
    """The step of ``hint`` this failure gets: ``idea`` the first time, ``fix`` after that."""
    key = (exercise_id, hint.kind)
    _HINTS_GIVEN[key] = _HINTS_GIVEN.get(key, 0) + 1
    return hint.idea if _HINTS_GIVEN[key] == 1 else hint.fix


def quote(text: object, limit: int = 100) -> str:
    """The first line of ``text`` (an error, or its message) for a hint: at most ``limit`` characters.

    Spaces are collapsed and a longer line is cut at a word boundary, never mid-word, with "…".

    Example:
        >>> quote(ValueError("Received incompatible tensor with shape (3, 4) when attempting to restore"), 60)
        'Received incompatible tensor with shape (3, 4) when…'
    """
    lines = [line for line in str(text).splitlines() if line.strip()]
    return _shorten(" ".join(lines[0].split()) if lines else "", limit)


class CheckFailed(AssertionError):
    """The answer to an exercise is not right yet; the message says why.

    Raised with a ``Hint`` (by ``require``), it carries both steps; ``exercise_check`` picks one.
    """

    headline = "is not right yet"

    def __init__(self, *args: object) -> None:
        self.hint = args[0] if args and isinstance(args[0], Hint) else None
        if self.hint is not None:
            args = (self.hint.idea, *args[1:])
        super().__init__(*args)

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show instead of a traceback: the exercise and the hint."""
        exercise, _, hint = str(self).partition(": ")
        if not hint or not exercise.startswith("Exercise "):
            exercise, hint = "This exercise", str(self)
        lines = [f"{_RED_BOLD}✘ {exercise} {self.headline}{_RESET}"]
        lines.extend(_wrap(hint))
        return lines


class ExerciseNotDone(CheckFailed):
    """The exercise still holds its ``raise NotImplementedError()`` stub.

    Not an error of the learner's, so it does not look like one: in a Jupyter kernel the
    message shows in a neutral blue-grey box (HTML, with a plain-text twin without colour
    codes) and the error block under it, which stops "Run all" there, holds one plain line.
    Elsewhere (a terminal) it is the message in plain lines, under a "○" header.
    """

    headline = "is not done yet"

    def plain_lines(self) -> list[str]:
        """The message as a header and wrapped lines, without colour codes."""
        exercise, _, hint = str(self).partition(" is not done yet: ")
        return [f"○ {exercise} is not done yet", *_wrap(hint)]

    def html(self) -> str:
        """The message in a neutral box (blue-grey, readable on light and dark themes)."""
        from html import escape

        header, *lines = self.plain_lines()
        return (f'<div class="exercise-not-done" style="{_NOT_DONE_STYLE}"><b>{escape(header)}</b><br>'
                f'{escape(" ".join(lines))}</div>')

    def _render_traceback_(self) -> list[str]:
        # IPython may ask twice for one error (to show it, and to keep it): one box is shown.
        if getattr(self, "_shown_rich", False) or _show_rich(
                {"text/html": self.html(), "text/plain": "\n".join(self.plain_lines())}):
            self._shown_rich = True
            return [_NOT_DONE_STOP]
        return self.plain_lines()


class LearnerCodeError(CheckFailed):
    """The learner's code raised an exception while the check ran it; the hint names the line."""

    headline = "stopped with an error in your code"


_NOT_DONE_STYLE = ("border-left: 4px solid #6b7f91; background: rgba(107, 127, 145, 0.14); padding: 6px 10px; "
                   "margin: 2px 0; font-family: var(--jp-code-font-family, monospace); line-height: 1.5")
_NOT_DONE_STOP = "(stopped here: the exercise above is not done yet)"


def _show_rich(bundle: dict[str, str]) -> bool:
    """Display ``bundle`` in the Jupyter front end this runs under; False outside a Jupyter kernel."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython is installed with the course
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:  # plain Python or a terminal IPython
        return False
    display(bundle, raw=True)
    return True


def _wrap(text: str) -> list[str]:
    """Wrap ``text`` to the notebook's width, keeping its own line breaks and never splitting words."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        indent = paragraph[: len(paragraph) - len(paragraph.lstrip())]
        if indent:  # quoted code keeps its layout
            lines.append(paragraph)
            continue
        lines.extend(
            textwrap.wrap(paragraph, _WIDTH, break_long_words=False, break_on_hyphens=False) or [""]
        )
    return lines


def require(condition: bool, hint: str | Hint) -> None:
    """Fail the current check with ``hint`` unless ``condition`` holds.

    ``hint`` is one text, or a ``Hint`` whose first step (the idea) comes the first time this kind
    of failure happens and whose second (the precise fix) when it happens again.

    Example:
        >>> require(1 + 1 == 2, "arithmetic is broken")
        >>> require(1 + 1 == 2, Hint("addition: see section 1", "write 1 + 1"))
    """
    __tracebackhide__ = True  # IPython and pytest hide this frame
    if not condition:
        raise CheckFailed(hint)


# --------------------------------------------------------------------------- whose code raised


def _library_folders() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    folders = {
        os.path.dirname(os.path.abspath(__file__ + "/..")),  # the helpers package
        paths["stdlib"],
        paths["platstdlib"],
        paths["purelib"],
        paths["platlib"],
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
    }
    return tuple(os.path.join(os.path.realpath(folder), "") for folder in folders)


_LIBRARY_FOLDERS = _library_folders()


def _is_learner_file(filename: str) -> bool:
    """True for code a learner wrote: a notebook cell or a script, not a library or the course's helpers."""
    if filename.startswith("<frozen") or "__autograph_generated" in filename:
        return False
    if filename.startswith("<"):  # "<ipython-input-...>", "<string>", "<doctest ...>"
        return True
    if not os.path.isabs(filename):  # a compiled extension's source name ("h5py/h5f.pyx"): a library
        return False
    real = os.path.realpath(filename)
    return not real.startswith(_LIBRARY_FOLDERS)


def _code_objects(code: CodeType) -> set[CodeType]:
    """``code`` and the code of every function defined inside it."""
    found = {code}
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            found |= _code_objects(constant)
    return found


def _learner_frames(
    traceback: TracebackType | None, check_code: frozenset[CodeType] = frozenset()
) -> list[tuple[str, int, str]]:
    """(file, line number, function name) of each frame of learner code, outermost first."""
    frames = []
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if code not in check_code and _is_learner_file(code.co_filename):
            frames.append((code.co_filename, traceback.tb_lineno, code.co_name))
        traceback = traceback.tb_next
    return frames


def _innermost_frame_is(traceback: TracebackType | None, frame: tuple[str, int, str]) -> bool:
    while traceback is not None and traceback.tb_next is not None:
        traceback = traceback.tb_next
    if traceback is None:
        return False
    code = traceback.tb_frame.f_code
    return (code.co_filename, traceback.tb_lineno, code.co_name) == frame


def _is_untouched_stub(error: BaseException) -> bool:
    """The ``raise NotImplementedError()`` the exercise notebook puts in place of the answer."""
    if type(error) is not NotImplementedError or error.args:
        return False
    frames = _learner_frames(error.__traceback__)
    if not frames or not _innermost_frame_is(error.__traceback__, frames[-1]):
        return False
    filename, line, _ = frames[-1]
    return linecache.getline(filename, line).strip() == _STUB_LINE


# Likely causes of the errors learners meet most, from the error's message.
_CAUSES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Random ops require a seed"),
     "a random op in a graph without a graph-level seed: call V1.set_random_seed(seed) inside the "
     "graph's `with` block."),
    (re.compile(r"must feed a value for placeholder"),
     "every placeholder the result depends on needs a value: pass it in feed_dict={placeholder: value}."),
    (re.compile(r"already exists, disallowed|Variable .* already exists"),
     "that variable already exists in this graph: tf.name_scope does not prefix get_variable names "
     "(use V1.variable_scope)."),
    (re.compile(r"uninitiali[sz]ed|Could not find variable|Container .* does not exist|Resource .* does not exist"),
     "a variable is read before it has a value: run its initializer, or restore it, in this session first."),
    (re.compile(r"not an element of this graph|must be from the same graph|is not from the passed-in graph"
                r"|from a different graph"),
     "a tensor or op from another graph: build everything inside the graph you use "
     "(with graph.as_default(): ...)."),
    (re.compile(r"symbolic (tf\.)?Tensor|Tensor\.numpy|numpy\(\) is only available when eager"),
     "a graph tensor has no value until a session runs it: use sess.run(tensor) instead of NumPy on it."),
    (re.compile(r"refers to an Operation, not a Tensor"),
     "that name is an op; its first output is the tensor 'name:0'."),
    (re.compile(r"refers to a Tensor which does not exist|does not exist in the graph"),
     "no op or tensor of that name in this graph: list them with "
     "[op.name for op in graph.get_operations()]."),
    (re.compile(r"not found in checkpoint|Key .* not found"),
     "the checkpoint has no variable of that name: list its keys with tf.train.list_variables(path)."),
    (re.compile(r"No variables to save"),
     "the Saver found no variables: create it inside the graph (with graph.as_default():), after them."),
    (re.compile(r"Failed to find any matching files|Unsuccessful TensorSliceReader|not a readable checkpoint"),
     "no checkpoint at that path: pass the prefix (no .index or .data suffix) that save() returned."),
    (re.compile(r"Incompatible shapes|Dimensions must be equal|are incompatible|Matrix size-incompatible"),
     "two shapes do not fit together: print the .shape of each operand on that line."),
    (re.compile(r"Invalid reduction dimension|axis \S+ is out of bounds"),
     "that axis does not exist: print the tensor's .shape (axes count from 0; -1 is the last)."),
    (re.compile(r"required positional argument|positional arguments? but|unexpected keyword argument"),
     "your function's parameters differ from the ones the exercise gives: keep its signature."),
    (re.compile(r"unhashable"),
     "a Variable or tensor cannot be a dict key or a set member: key by variable.ref(), "
     "variable.path or id(variable) instead."),
    (re.compile(r"Could not deserialize 'keras\.metrics\."),
     "load with compile=False (the file's loss string is read as a metric)."),
    (re.compile(r"must end in `\.weights\.h5`|must end in `\.keras`"),
     "Keras picks the format by suffix: with save_weights_only=True the name must end in `.weights.h5`, "
     "a whole model's in `.keras`."),
    (re.compile(r"None values not supported|partially known TensorShape|NoneType' and 'int'"
                r"|'int' and 'NoneType'|Cannot convert .*None.* to|shape .*None.* is not fully defined"),
     "a shape holds None (a batch size unknown while tracing): use tf.shape(x)[0], or the number "
     "you were given."),
    (re.compile(r"No such file or directory|Unable to (synchronously )?open file|[Nn]o file or directory found"
                r"|File not found|does not exist|FileNotFoundError"),
     "nothing at that path: use the path your function was given (its argument), not a name of "
     "your own."),
    (re.compile(r"list index out of range|index -?\d+ is out of bounds|tuple index out of range"),
     "an index past the end: print len() or .shape of what that line indexes."),
    (re.compile(r"'NoneType' object (has no attribute|is not)"),
     "a value is None: a function that returns nothing, or an unset attribute (model.optimizer "
     "before compile())."),
]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Keras wraps an error raised in a layer's call() in sentences about the layer; the error is further in.
_KERAS_WRAPPER = re.compile(
    r"^\s*(Exception encountered when calling|Could not automatically infer the output shape"
    r"|Arguments received by|•|Error encountered:?$)")
_HINT_MAX = 300
_FLOATS = re.compile(r"\b(float64|double)\b")
_INTS = (re.compile(r"\bint64\b"), re.compile(r"\bint32\b"))


def _dtype_cause(text: str) -> str | None:
    """The likely cause of a dtype mismatch, from the dtypes an error message names."""
    wide, narrow = _FLOATS.search(text), re.search(r"\bfloat32\b|\bfloat\b", text)
    if wide and narrow:
        return "float64 met float32 (NumPy's default is float64): cast with .astype('float32') or tf.cast."
    if all(pattern.search(text) for pattern in _INTS):
        return ("int64 met int32: cast (tf.cast or .astype) to the integer dtype the spec asks, read "
                "from it, not guessed.")
    if re.search(r"\bint(32|64)\b", text) and (wide or narrow) and re.search(r"dtype|expected|type", text):
        return ("an integer value met a float one: cast (tf.cast or .astype) to the dtype the spec "
                "asks.")
    return None


_NOT_SUPPORTED = "a library does not support that call here (this is not the exercise's stub)."


def _specific_cause(error: BaseException) -> str | None:
    """The likely cause of an error learners meet often, from its message and type; None for others."""
    text = _ANSI.sub("", f"{type(error).__name__}: {error}")
    if "too many positional arguments" in text:  # before dtypes: the message lists the tensors given
        return ("a signature takes its inputs by keyword, one per input name: "
                "signature(**{name: tensor}), not signature(a, b) or a list.")
    dtype = _dtype_cause(text)
    if dtype:
        return dtype
    for pattern, cause in _CAUSES:
        if pattern.search(text):
            return cause
    if isinstance(error, KeyError):
        return "a key was not in the dict or map: print its keys to see the names it has."
    if isinstance(error, NotImplementedError):
        return _NOT_SUPPORTED
    return None


def _likely_cause(error: BaseException) -> str:
    specific = _specific_cause(error)
    if specific:
        return specific
    if isinstance(error, AttributeError):
        return "that object has no such attribute: print type(obj) and dir(obj) to see what it has."
    if isinstance(error, TypeError):
        return "a value of another type than that call takes: print type() of each argument on that line."
    if isinstance(error, (ValueError, IndexError)):
        return "a value that call refuses: print the values and .shape of the arguments on that line."
    return "the message names what failed: print the values that line uses to find the one that differs."


# A check's own temporary folder (``/tmp/tmpab12cd/...``) means nothing to a learner.
_TEMPORARY_PATH = re.compile(re.escape(os.path.join(os.path.realpath(tempfile.gettempdir()), "")) + r"[^/\s'\"]+/?")


def _clean(text: str) -> str:
    """``text`` without colour codes or the check's temporary folders."""
    return _TEMPORARY_PATH.sub("", _ANSI.sub("", text))


def _shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" where it was cut.

    Example:
        >>> _shorten("Unable to open file (file signature not found)", 30)
        'Unable to open file (file…'
    """
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 1, 0)]
    if text[len(cut)] != " " and " " in cut:  # the cut falls inside a word: end at the word before
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


def _error_lines(error: BaseException, max_lines: int = 2) -> list[str]:
    """The error's message in at most ``max_lines`` lines: no colour codes, temporary paths or Keras wrapping."""
    from helpers.notebook import error_summary

    lines = [_clean(line).strip() for line in error_summary(error, max_lines=12)]
    lines = [line for line in lines if line and not _KERAS_WRAPPER.match(line) and not line.startswith("... (")]
    return lines[:max_lines] or [type(error).__name__]


def learner_error_hint(error: BaseException, check_code: frozenset[CodeType] = frozenset(),
                       limit: int = _HINT_MAX) -> str:
    """What a learner needs to act on an error raised while the check ran their answer (at most ``limit`` characters).

    The learner's line (a frame outside the libraries and ``check_code``, the check's own code), the
    error in a line or two, and its likely cause. ``exercise_check`` gives it to every error that
    escapes a check; a check that catches the error itself (to add a cause of its chapter) asks here.

    Example:
        >>> def double(x):
        ...     return x * undefined_name
        >>> try:
        ...     double(2)
        ... except NameError as error:
        ...     print(learner_error_hint(error))
        your code raised NameError in double(), at this line:
            return x * undefined_name
          name 'undefined_name' is not defined
        Likely cause: the message names what failed: print the values that line uses to find the one that differs.
    """
    frames = _learner_frames(error.__traceback__, check_code)
    name = type(error).__name__
    if frames:
        filename, line, function = frames[-1]
        source = _shorten(_clean(linecache.getline(filename, line).strip()), 56)
        where = f"in {function}()" if function != "<module>" else "in your cell"
        head = f"your code raised {name} {where}, at this line:\n    {source}" if source else (
            f"your code raised {name} {where}:")
    else:
        head = (f"checking what your function returned raised {name}: does it return what the "
                "exercise asks (its type and structure)?")
    # A specific cause always shows; without one, the library's own message is the best guide, so it
    # gets the room, and the general advice for its type comes only if it still fits.
    specific = _specific_cause(error)
    if (specific == _NOT_SUPPORTED and frames  # the learner's own `raise NotImplementedError(...)`
            and _innermost_frame_is(error.__traceback__, frames[-1])):
        specific = ("that line of yours raises it (it is not the exercise's stub): replace the raise with "
                    "the code that answers the exercise.")
    cause = f"Likely cause: {specific or _likely_cause(error)}"
    budget = limit - len(head) - 1 - (len(cause) + 1 if specific else 0)
    lines, used = [], 0
    for text in _error_lines(error, max_lines=2 if specific else 3):
        room = budget - used - 3  # two spaces of indent and a line break
        if room < 20:
            break
        lines.append("  " + _shorten(text, room))
        used += len(lines[-1]) + 1
    hint = "\n".join([head, *lines, cause])
    if len(hint) > limit and not specific:
        hint = "\n".join([head, *lines])
    return hint if len(hint) <= limit else _shorten(hint, limit)


def exercise_check(exercise_id: str) -> Callable[[Check], Check]:
    """Turn a function into an exercise check for exercise ``exercise_id``.

    The decorated check returns a short summary of what it verified; the
    wrapper prints it with a tick. Hints are prefixed by the exercise number;
    a ``Hint`` gives its first step (the idea) the first time, its second
    (the fix) when the same kind of failure comes back.
    The untouched ``raise NotImplementedError()`` stub becomes
    ``ExerciseNotDone``; any other exception that escapes the check becomes
    ``LearnerCodeError``, naming the learner's line and a likely cause (the
    original exception stays attached as ``__cause__``).

    Example:
        >>> @exercise_check("00.1")
        ... def check_answer(answer):
        ...     require(answer == 42, f"expected 42, got {answer}")
        ...     return "the answer is 42"
        >>> check_answer(42)
        ✔ Exercise 00.1 passed: the answer is 42
    """

    def decorate(check: Check) -> Check:
        check_code = frozenset(_code_objects(check.__code__))

        @functools.wraps(check)
        def run_check(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True
            try:
                summary = check(*args, **kwargs)
            except ExerciseNotDone:
                raise
            except CheckFailed as failure:
                text = _step(exercise_id, failure.hint) if failure.hint is not None else str(failure)
                raise type(failure)(f"Exercise {exercise_id}: {_clean(text)}") from None
            except Exception as error:  # noqa: BLE001 - every error becomes a hint
                if _is_untouched_stub(error):
                    raise ExerciseNotDone(
                        f"Exercise {exercise_id} is not done yet: replace "
                        "`raise NotImplementedError()` with your code, run that cell, "
                        "then run this check again."
                    ) from None
                prefix = f"Exercise {exercise_id}: "
                hint = learner_error_hint(error, check_code, _HINT_MAX - len(prefix))
                raise LearnerCodeError(prefix + hint) from error
            from helpers.notebook import wrap_output

            print(wrap_output(f"✔ Exercise {exercise_id} passed" + (f": {summary}" if summary else "")))

        return run_check  # type: ignore[return-value]

    return decorate
