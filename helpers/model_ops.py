"""Which ops a converted model needs that a runtime may lack: LiteRT's custom and Flex ops, ONNX opsets.

A ``.tflite`` converted with ``SELECT_TF_OPS`` carries TensorFlow ops as custom
ops named ``Flex<Op>``: they run only in an interpreter linked with the Flex
delegate. One converted with ``allow_custom_ops=True`` carries custom ops that
run only where someone registered a kernel for them (LiteRT's default resolver
registers a few, e.g. ``Convolution2DTransposeBias``). Both files verify, yet
LiteRT refuses to prepare them. ``tflite_ops_needed`` reads those names from the
flatbuffer's operator codes, without any runtime; ``litert_ops_text`` says what
each needs. An ONNX model that names an op at an opset onnxruntime has no kernel
for is named by ``onnx_not_implemented``; an op no registered domain has by
``onnx_op_unregistered``.
Nothing here imports TensorFlow.

Example:
    >>> tflite_ops_needed("tests/data/litert/select_tf_ops.tflite")
    ['FlexMatrixInverse']
    >>> litert_ops_text(["FlexMatrixInverse", "Svd"])
    "needs the Flex delegate (Select TF ops): FlexMatrixInverse; custom op 'Svd': needs a runtime with a kernel for it registered"
"""
from __future__ import annotations

import os
import re
import struct

from helpers.files import path_text

__all__ = ["UnsupportedOpsError", "tflite_ops_needed", "litert_ops_text", "onnx_not_implemented",
           "onnx_op_unregistered", "converter_ops_missing", "litert_route",
           "LITERT_ROUTE", "ONNX_ROUTE", "ONNX_DOMAIN_ROUTE"]

_CUSTOM = 32  # BuiltinOperator.CUSTOM in LiteRT's schema
LITERT_ROUTE = ("Neither interpreter here links the Flex delegate or has a kernel for {ops} (a kernel can be "
                "registered with Interpreter(custom_op_registerers=...)). Routes: rewrite the model with "
                "builtin ops and convert again, or export another format (ONNX, a frozen graph)")
ONNX_ROUTE = ("Route: upgrade the model's opset with onnx.version_converter.convert_version(onnx.load(path), "
              "13), save it under a new name and compare its outputs with the old software's; if it stops "
              "with 'Dimension is a param', give the inputs fixed sizes first")
ONNX_DOMAIN_ROUTE = ("Route: re-export with ops ONNX has (a rewrite), or a runtime that registers that domain")


class UnsupportedOpsError(ValueError):
    """A model file that parses but whose ops this runtime does not run: names the ops, what runs them, the route.

    ``what`` says how far the file was checked (``"a LiteRT file that verifies"``).
    """

    def __init__(self, path: str, needs: str, route: str, what: str = "a model file that parses") -> None:
        self.path, self.needs, self.route, self.what = path, needs, route, what
        super().__init__(f"{path!r} is {what}, but this runtime cannot run it: {needs}. {route}")


def _table(data: bytes, position: int) -> tuple[int, list[int]]:
    """A flatbuffer table at ``position``: (its position, the offsets of its fields, 0 when absent)."""
    vtable = position - struct.unpack_from("<i", data, position)[0]
    size = struct.unpack_from("<H", data, vtable)[0]
    return position, [struct.unpack_from("<H", data, vtable + 4 + 2 * i)[0] for i in range((size - 4) // 2)]


def _field(fields: list[int], index: int) -> int:
    return fields[index] if index < len(fields) else 0


def _indirect(data: bytes, position: int) -> int:
    return position + struct.unpack_from("<I", data, position)[0]


def tflite_ops_needed(path: str | os.PathLike | bytes) -> list[str]:
    """Every custom op a ``.tflite`` names (ops beyond LiteRT's builtins), in file order (``[]``: none).

    Read from the flatbuffer's operator codes (their ``custom_code`` strings);
    ``Flex<Op>`` names are TensorFlow ops kept by ``SELECT_TF_OPS``: neither
    interpreter here links the Flex delegate. A custom op runs where a kernel for
    it is registered (``Interpreter(custom_op_registerers=...)``); LiteRT's default
    resolver registers a few (e.g. ``Convolution2DTransposeBias``), so a custom op
    listed here does not make the file unrunnable: build the interpreter and see
    whether ``allocate_tensors`` names it. Accepts a path
    or the file's bytes. Raises ``ValueError`` for bytes that are not a LiteRT
    flatbuffer (no ``TFL3`` tag, or offsets outside the file).

    Example:
        >>> tflite_ops_needed("tests/data/litert/custom_op.tflite")
        ['Svd']
        >>> tflite_ops_needed("tests/data/litert/builtin.tflite")
        []
    """
    if isinstance(path, bytes):
        data = path
    else:
        with open(path_text(path, "LiteRT file path"), "rb") as file:
            data = file.read()
    if data[4:8] != b"TFL3":
        raise ValueError("not a LiteRT flatbuffer (no TFL3 tag)")
    try:
        _, model = _table(data, _indirect(data, 0))
        if not _field(model, 1):
            return []
        codes = _indirect(data, _indirect(data, 0) + model[1])
        names = []
        for i in range(struct.unpack_from("<I", data, codes)[0]):
            position, code = _table(data, _indirect(data, codes + 4 + 4 * i))
            deprecated = struct.unpack_from("<b", data, position + code[0])[0] if _field(code, 0) else 0
            builtin = struct.unpack_from("<i", data, position + code[3])[0] if _field(code, 3) else 0
            if max(deprecated, builtin) != _CUSTOM:
                continue
            name = ""
            if _field(code, 1):
                text = _indirect(data, position + code[1])
                length = struct.unpack_from("<I", data, text)[0]
                name = data[text + 4:text + 4 + length].decode(errors="replace")
            names.append(name or "?")
    except struct.error:
        raise ValueError("its operator codes point outside the file (truncated or damaged)") from None
    return names


def litert_ops_text(ops: list[str]) -> str:
    """What runs a ``.tflite`` that needs ``ops`` (custom op names from ``tflite_ops_needed``), in one line.

    Example:
        >>> litert_ops_text(["FlexMatrixInverse", "FlexCumprod"])
        'needs the Flex delegate (Select TF ops): FlexMatrixInverse, FlexCumprod'
    """
    flex = [op for op in ops if op.startswith("Flex")]
    custom = [op for op in ops if not op.startswith("Flex")]
    parts = [f"needs the Flex delegate (Select TF ops): {', '.join(flex)}"] if flex else []
    parts += [f"custom op {op!r}: needs a runtime with a kernel for it registered" for op in custom]
    return "; ".join(parts)


def litert_route(ops: list[str]) -> str:
    """``LITERT_ROUTE`` for the custom ops ``ops`` (from ``tflite_ops_needed``).

    Example:
        >>> litert_route(["FlexMatrixInverse"])[:75]
        'Neither interpreter here links the Flex delegate or has a kernel for FlexMa'
    """
    return LITERT_ROUTE.format(ops=", ".join(ops) or "its custom ops")


_NEITHER = re.compile(r"'tf\.(\w+)' op is neither a custom op nor a flex op")
_CODE = re.compile(r"Error code: ERROR_NEEDS_(\w+?)_OPS?\b")


def converter_ops_missing(error: BaseException | str) -> dict[str, str]:
    """The TensorFlow ops a LiteRT conversion stopped at, each with what it needs: ``"flex"`` or ``"custom"``.

    Read from ``TFLiteConverter.convert()``'s ``ConverterError`` (its text holds MLIR
    locations, machine paths included; this keeps only the op names and error codes).
    ``"flex"``: ``SELECT_TF_OPS`` converts it; ``"custom"``: no TensorFlow kernel in
    the Select set either (only ``allow_custom_ops=True`` and a runtime with the op).

    Example:
        >>> converter_ops_missing("x.py:8:1: error: 'tf.MatrixInverse' op is neither a custom op "
        ...                       "nor a flex op\\nx.py:8:1: note: Error code: ERROR_NEEDS_FLEX_OPS")
        {'MatrixInverse': 'flex'}
    """
    found: dict[str, str] = {}
    last = None
    for line in str(error).splitlines():
        op, code = _NEITHER.search(line), _CODE.search(line)
        if op:
            last = op.group(1)
            found.setdefault(last, "?")
        if code and last:
            found[last] = code.group(1).lower()
    return found


_NOT_IMPLEMENTED = re.compile(r"implementation for (\w+)\((\d+)\) node")


def onnx_not_implemented(message: str, opsets: dict[str, int] | None = None) -> str | None:
    """onnxruntime's NOT_IMPLEMENTED error as the course's words (op, opset), or None for another error.

    ``opsets`` maps each opset domain to its version (``{"": 5}`` from
    ``model.opset_import``; ``""`` is ``ai.onnx``).

    Example:
        >>> onnx_not_implemented("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an "
        ...                      "implementation for Relu(1) node with name ''", {"": 5})
        'op Relu at opset 5: onnxruntime has no kernel for that version of it (Relu-1)'
        >>> onnx_not_implemented("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : bad input") is None
        True
    """
    if "NOT_IMPLEMENTED" not in message:
        return None
    found = _NOT_IMPLEMENTED.search(message)
    if not found:
        return "onnxruntime has no kernel for one of its ops: " + message.splitlines()[0][-200:]
    opset = (opsets or {}).get("", (opsets or {}).get("ai.onnx"))
    at = f" at opset {opset}" if opset is not None else ""
    return f"op {found.group(1)}{at}: onnxruntime has no kernel for that version of it ({found.group(1)}-{found.group(2)})"


_UNREGISTERED = (re.compile(r"No Op registered for (\w+) with domain_version of (\d+)"),
                 re.compile(r"(?:([\w.]+):)?(\w+)\(-?\d+\) is not a registered function/op"))


def onnx_op_unregistered(message: str) -> str | None:
    """onnxruntime's error for an op no registered domain has, as the course's words, or None for another.

    Example:
        >>> onnx_op_unregistered("Fatal error: com.example:Frob(-1) is not a registered function/op")
        "op 'Frob' of domain 'com.example': onnxruntime registers no such op"
        >>> onnx_op_unregistered("Error No Op registered for NoSuchOp with domain_version of 13")
        "op 'NoSuchOp' of domain 'ai.onnx' (version 13): onnxruntime registers no such op"
    """
    found = _UNREGISTERED[0].search(message)
    if found:
        return f"op {found.group(1)!r} of domain 'ai.onnx' (version {found.group(2)}): onnxruntime registers no such op"
    found = _UNREGISTERED[1].search(message)
    if found:
        return f"op {found.group(2)!r} of domain {found.group(1) or 'ai.onnx'!r}: onnxruntime registers no such op"
    return None
