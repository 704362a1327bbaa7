"""Does LiteRT accept this ``.tflite``? Its interpreter built and its tensors allocated, without TensorFlow.

The one check behind ``helpers.deploy.model_file_kind`` (chapter 14) and ``helpers.identify``'s
reader of ``.tflite`` files: a flatbuffer that does not verify, or whose tensors do not allocate,
is damaged (``NotAModelFileError``); one that verifies but names ops LiteRT has no kernel for
(Select TF ops, custom ops without a registered kernel) raises ``UnsupportedOpsError`` naming them
and what runs them. Nothing here imports TensorFlow, so naming a ``.tflite`` stays light
(``tests/test_identify_light.py``).

Example:
    >>> interpreter = litert_interpreter("tests/data/litert/builtin.tflite")
    >>> len(interpreter.get_input_details())
    1
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from helpers.errors import NotAModelFileError
from helpers.model_ops import UnsupportedOpsError, litert_ops_text, litert_route, tflite_ops_needed

__all__ = ["litert_interpreter", "native_output_silenced", "refuse_litert_ops"]

# LiteRT's words when a file verifies but needs ops it has no kernel for (anything else: damaged).
_OPS_MESSAGE = re.compile(r"Select TensorFlow op|Flex delegate|unresolved custom op")
_UNRESOLVED = re.compile(r"unresolved custom op: (\S+?)\.?(?:\s|$)")


@contextlib.contextmanager
def native_output_silenced() -> Iterator[None]:
    """File descriptors 1 and 2 to /dev/null for the block (LiteRT's C++ prints its delegate there).

    Example:
        >>> with native_output_silenced():
        ...     os.fstat(1).st_ino == os.stat(os.devnull).st_ino
        True
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def refuse_litert_ops(path: str, data: bytes, message: str) -> None:
    """Raise ``UnsupportedOpsError`` if LiteRT's error ``message`` is about ops the verified ``data`` names.

    Returns quietly when the message is about something else, or the flatbuffer itself is damaged:
    the caller then calls the file damaged. When LiteRT names unresolved custom ops, only those (and
    any ``Flex`` op) are named: its default resolver registers some custom ops.

    Example:
        >>> path = "tests/data/litert/select_tf_ops.tflite"
        >>> with open(path, "rb") as file:
        ...     data = file.read()
        >>> refuse_litert_ops(path, data, "tensor index out of range")  # not about ops: nothing raised
        >>> refuse_litert_ops(path, data, "Select TensorFlow op(s), included in the given model, is(are) not supported")
        Traceback (most recent call last):
        ...
        helpers.model_ops.UnsupportedOpsError: ... needs the Flex delegate (Select TF ops): FlexMatrixInverse. ...
    """
    if not _OPS_MESSAGE.search(message):
        return
    try:
        ops = tflite_ops_needed(data)
    except ValueError:  # the flatbuffer itself is damaged
        return
    unresolved = set(_UNRESOLVED.findall(message))
    if unresolved:  # LiteRT's default resolver registers some custom ops: name only those it lacks
        ops = [op for op in ops if op.startswith("Flex") or op in unresolved] or sorted(unresolved)
    if ops:
        raise UnsupportedOpsError(path, litert_ops_text(ops), litert_route(ops),
                                  what="a LiteRT file that verifies") from None


def litert_interpreter(path: str, data: bytes | None = None,
                       quiet: Callable[[], AbstractContextManager[Any]] = native_output_silenced) -> Any:
    """LiteRT's interpreter for the ``.tflite`` at ``path`` (its bytes ``data`` if read already), tensors allocated.

    The constructor verifies the flatbuffer: a failure there is damage, whatever ops the file
    names (``NotAModelFileError``). A failure of ``allocate_tensors`` whose message is about ops
    the file names raises ``UnsupportedOpsError`` (``refuse_litert_ops``; its ``needs`` and
    ``route`` say what runs them); any other is damage too. ``quiet`` silences what LiteRT prints while it works;
    ``ImportError`` without the ai-edge-litert package.

    Example:
        >>> litert_interpreter("tests/data/litert/select_tf_ops.tflite")
        Traceback (most recent call last):
        ...
        helpers.model_ops.UnsupportedOpsError: 'tests/data/litert/select_tf_ops.tflite' is a LiteRT file that verifies, but this runtime cannot run it: needs the Flex delegate (Select TF ops): FlexMatrixInverse. ...
        >>> litert_interpreter("tests/data/litert/builtin.tflite", b"TFL3 but cut short")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAModelFileError: 'tests/data/litert/builtin.tflite' is not a readable model file: a LiteRT file that does not verify (truncated or damaged): ...
    """
    from ai_edge_litert.interpreter import Interpreter

    if data is None:
        with open(path, "rb") as file:
            data = file.read()
    try:
        with quiet():
            interpreter = Interpreter(model_content=data)
    except (ValueError, RuntimeError) as error:  # "not a valid Flatbuffer buffer", schema version
        raise NotAModelFileError(path, "a LiteRT file that does not verify (truncated or damaged): "
                                       f"{str(error).splitlines()[0]}") from None
    try:
        with quiet():
            interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as error:  # missing kernels, bad tensor indices
        refuse_litert_ops(path, data, str(error))
        raise NotAModelFileError(path, "a LiteRT file whose tensors do not allocate (damaged?): "
                                       f"{str(error).splitlines()[0]}") from None
    return interpreter
