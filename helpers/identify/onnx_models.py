"""Reader: an ONNX model (``.onnx``, or a file whose header reads as an ONNX ``ModelProto``).

Reads the header (IR version, producer, opsets, graph inputs and outputs) with the wire-format
reader (``helpers.identify.protobuf``): no ``onnx`` package, and never the weights.

Example:
    >>> read_onnx("tests/data/onnx/relu_opset5.onnx").holds["opsets"]
    'ai.onnx 5'
"""

from __future__ import annotations

import os
from typing import Any

from helpers.identify.answer import Identification, bytes_text, loading_code, not_model
from helpers.identify.protobuf import fields, read_at, stream_fields

__all__ = ["looks_like_onnx", "read_onnx"]


_SMALL = 1 << 20  # a ValueInfo, opset or name larger than this is no ONNX header


def _onnx_header(path: str) -> dict[str, Any]:
    """ir_version, producer, opsets and graph inputs of an ONNX ModelProto, read without onnx.

    Reads only these fields: node lists and initializers (the weights) are skipped.
    """
    found: dict[str, Any] = {"opsets": {}}
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size

        def small(span: tuple[int, int]) -> bytes:
            if span[1] > _SMALL:
                raise ValueError("a header field too large")
            return read_at(file, span)

        for number, wire, value in stream_fields(file, 0, size):
            if number == 1 and wire == 0:
                found["ir_version"] = value
            elif number == 2 and wire == 2:
                found["producer"] = small(value).decode(errors="replace")
            elif number == 3 and wire == 2:
                found["producer_version"] = small(value).decode(errors="replace")
            elif number == 8 and wire == 2:
                opset = {n: v for n, w, v in fields(small(value))}
                found["opsets"][(opset.get(1) or b"ai.onnx").decode() or "ai.onnx"] = opset.get(2, 0)
            elif number == 7 and wire == 2:
                initializers, inputs, outputs, nodes = set(), [], [], 0
                for inner, kind, span in stream_fields(file, value[0], value[0] + value[1]):
                    if kind != 2:
                        continue
                    if inner == 1:
                        nodes += 1
                    elif inner == 5:  # a TensorProto: its name (field 8), never its data
                        names = [read_at(file, v) for n, w, v in stream_fields(file, span[0], sum(span))
                                 if n == 8 and w == 2 and v[1] <= _SMALL]
                        initializers.add(names[0].decode(errors="replace") if names else "?")
                    elif inner in (11, 12):
                        (inputs if inner == 11 else outputs).append(_name_of(small(span)))
                found["inputs"] = [name for name in inputs if name not in initializers]
                found["outputs"], found["nodes"] = outputs, nodes
    if "ir_version" not in found or "inputs" not in found:
        raise ValueError("no ir_version or graph")
    return found


def _name_of(message: bytes) -> str:
    for number, wire, value in fields(message):
        if number == 1 and wire == 2:
            return value.decode(errors="replace")
    return "?"


def looks_like_onnx(path: str) -> bool:
    with open(path, "rb") as file:
        head = file.read(2)
    if head[:1] != b"\x08":
        return False
    try:
        _onnx_header(path)
    except ValueError:
        return False
    return True


def read_onnx(path: str) -> Identification:
    try:
        header = _onnx_header(path)
    except ValueError as error:
        return not_model(path, f"an .onnx file that is not a readable ONNX model (truncated?): {error}")
    producer = " ".join(filter(None, [header.get("producer"), header.get("producer_version")]))
    written = {"producer": producer} if producer else {}
    written["ONNX IR"] = str(header["ir_version"])
    info = Identification(path, "onnx", written_by=written)
    info.holds = {"inputs": header["inputs"], "outputs": header["outputs"], "nodes": header["nodes"],
                  "opsets": ", ".join(f"{k} {v}" for k, v in header["opsets"].items()),
                  "bytes": bytes_text(os.path.getsize(path))}
    info.traps.append("TensorFlow does not load ONNX: run it with onnxruntime (pip install onnxruntime)")
    opset = header["opsets"].get("ai.onnx", header["opsets"].get(""))
    if opset is not None and opset < 7:
        info.traps.append(f"opset {opset} is older than the 7 onnxruntime guarantees: some ops (Relu-1, "
                          "Sigmoid-1, Add-1 measured) have no kernel (NOT_IMPLEMENTED), others run; if it "
                          "fails, upgrade it with onnx.version_converter.convert_version(onnx.load(path), 13) "
                          "and compare outputs")
    info.how_to_load = loading_code(path, """
        import onnxruntime  # pip install onnxruntime
        loaded = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        report = "inputs " + ", ".join(f"{i.name} {i.shape}" for i in loaded.get_inputs())
        """)
    return info
