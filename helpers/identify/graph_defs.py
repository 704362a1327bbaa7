"""Reader: a frozen GraphDef (``.pb``, or ``.pbtxt`` in the text format): constants, no variables.

Example:
    >>> read_graph_def("tests/data/tf215/frozen_graph.pb").kind
    'frozen-graph'
"""

from __future__ import annotations

import os
import textwrap

from helpers.errors import first_line
from helpers.identify.answer import Identification, loading_code, not_model
from helpers.identify.known_ops import KNOWN_OPS
from helpers.identify.protobuf import fields

__all__ = ["read_graph_def"]


# GraphDef's and NodeDef's own fields, with their wire types (graph.proto, node_def.proto): a field
# outside these is one this TensorFlow does not have, which TensorFlow's reading reports.
_GRAPH_FIELDS = {1: 2, 2: 2, 3: 0, 4: 2, 5: 2}
_NODE_FIELDS = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 2}


def _light_nodes(path: str) -> list[tuple[str, str, list[str]]] | None:
    """``(name, op, inputs)`` of a binary GraphDef's nodes, read without TensorFlow, or None.

    None when TensorFlow must read it: a field a GraphDef does not have, an op type outside
    ``KNOWN_OPS`` (or none), no nodes, or bytes that do not read as a message.
    """
    with open(path, "rb") as file:
        data = file.read()
    nodes = []
    try:
        for number, wire, item in fields(data):
            if _GRAPH_FIELDS.get(number) != wire:
                return None
            if number != 1:
                continue
            parts: dict[int, str] = {}
            inputs = []
            for inner, inner_wire, value in fields(item):
                if _NODE_FIELDS.get(inner) != inner_wire:
                    return None
                if inner == 3:
                    inputs.append(value.decode("utf-8"))
                elif inner in (1, 2):
                    parts[inner] = value.decode("utf-8")
            if parts.get(2, "") not in KNOWN_OPS:
                return None
            nodes.append((parts.get(1, ""), parts[2], inputs))
    except (ValueError, UnicodeDecodeError):
        return None
    return nodes or None


def read_graph_def(path: str) -> Identification:
    text = path.endswith(".pbtxt")  # the text format (tf.io.write_graph(..., as_text=True))
    light = None if text else _light_nodes(path)
    traps: list[str] = []
    if light is None:
        read = _read_with_tensorflow(path, text)
        if isinstance(read, Identification):
            return read
        light, traps = read
    nodes = light
    consumed = {inp.split(":")[0].lstrip("^") for _, _, inputs in nodes for inp in inputs}
    inputs = [name for name, op, _ in nodes if op == "Placeholder"]
    outputs = [name for name, op, _ in nodes
               if name not in consumed and op not in ("Const", "NoOp", "Placeholder", "Assert")]
    variables = sum(op in ("VarHandleOp", "VariableV2") for _, op, _ in nodes)
    info = Identification(path, "frozen-graph",
                          holds={"nodes": len(nodes), "inputs": inputs, "outputs": outputs,
                                 "constants": sum(op == "Const" for _, op, _ in nodes)})
    if variables:
        info.traps.append(f"{variables} variable ops: not frozen, the values are not in this file")
    info.traps += traps
    info.traps.append("a frozen graph has no variables, no optimizer and no Keras model: it can "
                      "only run forward")
    feeds = ", ".join(repr(n + ":0") for n in inputs)
    fetches = ", ".join(repr(n + ":0") for n in outputs)
    parse = ("""
        from google.protobuf import text_format
        graph_def = tf.compat.v1.GraphDef()
        with open(path, encoding="utf-8") as file:  # the text format
            text_format.Parse(file.read(), graph_def)
        """ if text else """
        graph_def = tf.compat.v1.GraphDef()
        with open(path, "rb") as file:
            graph_def.ParseFromString(file.read())
        """)
    info.how_to_load = loading_code(path, "import tensorflow as tf\n" + textwrap.dedent(parse).strip() + "\n"
                             + textwrap.dedent(f"""
        wrapped = tf.compat.v1.wrap_function(
            lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
        loaded = wrapped.prune([{feeds}], [{fetches}])  # a concrete function
        report = f"a function of {{len(loaded.inputs)}} input(s) -> {{len(loaded.outputs)}} output(s)"
        """).strip())
    return info


def _read_with_tensorflow(path: str, text: bool) -> Identification | tuple[list[tuple[str, str, list[str]]], list[str]]:
    """The nodes and the traps of ``helpers.deploy.check_graph_def`` (library ops, unknown fields),
    read with TensorFlow's ``GraphDef``; or the answer for a file that is not a GraphDef."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef()
    try:
        if text:
            with open(path, encoding="utf-8") as file:
                text_format.Parse(file.read(), graph)
        else:
            with open(path, "rb") as file:
                graph.ParseFromString(file.read())
    except (DecodeError, RuntimeError, ValueError, text_format.ParseError) as error:
        return not_model(path, f"a .pb{'txt' if text else ''} that is not a GraphDef (truncated, or "
                               f"another message): {first_line(error)}")
    if not graph.node:
        return not_model(path, "a .pb that holds no graph nodes (not a GraphDef)")
    from helpers.deploy import check_graph_def

    check = check_graph_def(graph)  # shared with helpers.deploy.model_file_kind
    if check.not_graph_def:  # another message read as a GraphDef
        return not_model(path, check.not_graph_def)
    traps = [check.library_trap] * bool(check.library_ops) + [check.note] * bool(check.note)
    return [(node.name, node.op, list(node.input)) for node in graph.node], traps
