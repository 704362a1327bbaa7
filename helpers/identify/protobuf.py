"""Protocol buffers' wire format, read without protobuf classes or TensorFlow.

``fields(data)`` yields ``(number, wire type, value)`` of a message held in memory;
``stream_fields(file, start, end)`` walks a message in a file without reading its
long values (an ONNX model's weights). Readers decode the few fields they need by number.

Example:
    >>> list(fields(bytes([0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69])))
    [(1, 0, 150), (2, 2, b'hi')]
"""

from __future__ import annotations

from typing import Any

from helpers.tensor_bundle import varint  # the one varint reader (LevelDB's tables use it too)

__all__ = ["fields", "read_at", "stream_fields", "varint"]


def fields(data: bytes, stop_at: int | None = None):
    """Yield ``(number, wire type, value)`` of a protobuf message; length-delimited values as bytes."""
    position = 0
    while position < len(data):
        key, position = varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = varint(data, position)
        elif wire == 2:
            length, position = varint(data, position)
            if position + length > len(data):
                raise ValueError("truncated field")
            value, position = data[position: position + length], position + length
        elif wire == 1:
            value, position = data[position: position + 8], position + 8
        elif wire == 5:
            value, position = data[position: position + 4], position + 4
        else:
            raise ValueError(f"wire type {wire}")
        if number == 0:
            raise ValueError("field number 0")
        yield number, wire, value


def stream_fields(file: Any, start: int, end: int):
    """Yield ``(number, wire type, value)`` of the protobuf message in ``file[start:end]``.

    A length-delimited value comes as ``(offset, length)`` and is skipped, not read: the
    caller reads what it needs, so a model's weights are never loaded.
    """
    position = start
    while position < end:
        key, position = _file_varint(file, position, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, position = _file_varint(file, position, end)
        elif wire == 2:
            length, position = _file_varint(file, position, end)
            if position + length > end:
                raise ValueError("truncated field")
            value, position = (position, length), position + length
        elif wire in (1, 5):
            value, position = None, position + (8 if wire == 1 else 4)
            if position > end:
                raise ValueError("truncated field")
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _file_varint(file: Any, position: int, end: int) -> tuple[int, int]:
    file.seek(position)
    data = file.read(min(10, end - position))
    value, used = varint(data, 0)
    return value, position + used


def read_at(file: Any, span: tuple[int, int]) -> bytes:
    file.seek(span[0])
    return file.read(span[1])
