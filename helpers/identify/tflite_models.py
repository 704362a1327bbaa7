"""Reader: a LiteRT / TensorFlow Lite flatbuffer (``.tflite``, ``TFL3`` at byte 4).

Example:
    >>> read_tflite("tests/data/litert/builtin.tflite").kind
    'tflite'
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator

from helpers.errors import NotAModelFileError
from helpers.identify.answer import Identification, bytes_text, loading_code, not_model
from helpers.model_ops import litert_ops_text, litert_route, tflite_ops_needed

__all__ = ["read_tflite"]


# LiteRT's words when a file verifies but needs ops it has no kernel for (anything else: damaged);
# the same reading as helpers.deploy.model_file_kind's, without importing TensorFlow.
_OPS_MESSAGE = re.compile(r"Select TensorFlow op|Flex delegate|unresolved custom op")
_UNRESOLVED = re.compile(r"unresolved custom op: (\S+?)\.?(?:\s|$)")


@contextlib.contextmanager
def _native_output_silenced() -> Iterator[None]:
    """File descriptors 1 and 2 to /dev/null for the block (LiteRT's C++ prints its delegate there)."""
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


def _check_with_litert(path: str) -> tuple[str, str]:
    """Build LiteRT's interpreter and allocate its tensors: ``(needs, route)`` when ops are missing.

    Raises ``NotAModelFileError`` for a flatbuffer that does not verify or allocate (truncated,
    damaged), ``ImportError`` without ai-edge-litert.
    """
    from ai_edge_litert.interpreter import Interpreter

    with open(path, "rb") as file:
        data = file.read()
    try:
        with _native_output_silenced():
            interpreter = Interpreter(model_content=data)
    except (ValueError, RuntimeError) as error:  # "not a valid Flatbuffer buffer", schema version
        raise NotAModelFileError(path, "a LiteRT file that does not verify (truncated or damaged): "
                                       f"{str(error).splitlines()[0]}") from None
    try:
        with _native_output_silenced():
            interpreter.allocate_tensors()
    except (ValueError, RuntimeError) as error:  # missing kernels, bad tensor indices
        message = str(error)
        ops: list[str] | None = []
        if _OPS_MESSAGE.search(message):
            try:
                ops = tflite_ops_needed(data)
            except ValueError:  # the flatbuffer itself is damaged
                ops = None
            unresolved = set(_UNRESOLVED.findall(message))
            if ops is not None and unresolved:  # LiteRT's default resolver registers some custom ops
                ops = [op for op in ops if op.startswith("Flex") or op in unresolved] or sorted(unresolved)
        if ops:
            return litert_ops_text(ops), litert_route(ops)
        raise NotAModelFileError(path, "a LiteRT file whose tensors do not allocate (damaged?): "
                                       f"{message.splitlines()[0]}") from None
    return "", ""


def read_tflite(path: str) -> Identification:
    needs = route = ""
    try:
        needs, route = _check_with_litert(path)  # a truncated flatbuffer is refused
    except ImportError:  # no ai-edge-litert here: the four magic bytes are all we know
        pass
    except NotAModelFileError as error:
        return not_model(path, error.reason)
    info = Identification(path, "tflite", holds={"bytes": bytes_text(os.path.getsize(path))})
    if needs:
        info.holds["ops beyond LiteRT's builtins"] = ", ".join(tflite_ops_needed(path))
        info.traps.append(f"{needs}. {route} (the code below fails at allocate_tensors)")
    info.traps.append("tf.lite.Interpreter is deprecated (it warns): the LiteRT interpreter is in the "
                      "ai-edge-litert package")
    info.how_to_load = loading_code(path, """
        try:
            from ai_edge_litert.interpreter import Interpreter  # pip install ai-edge-litert
        except ImportError:
            from tensorflow.lite import Interpreter  # deprecated, still in TF 2.21
        loaded = Interpreter(model_path=path)
        loaded.allocate_tensors()
        report = ("inputs " + ", ".join(f"{d['name']} {tuple(int(n) for n in d['shape'])}"
                                        for d in loaded.get_input_details()))
        """)
    return info
