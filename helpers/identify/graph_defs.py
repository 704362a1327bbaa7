"""Reader: a frozen GraphDef (``.pb``, or ``.pbtxt`` in the text format): constants, no variables.

Example:
    >>> read_graph_def("tests/data/tf215/frozen_graph.pb").kind
    'frozen-graph'
"""

from __future__ import annotations

import os
import textwrap

from google.protobuf.message import DecodeError

from helpers.errors import first_line
from helpers.identify.answer import Identification, loading_code, not_model
from helpers.identify.known_ops import KNOWN_OPS
from helpers.identify.tf_protos import NO_TENSORFLOW, parse

__all__ = ["read_graph_def"]


def _light_nodes(path: str) -> list[tuple[str, str, list[str]]] | None:
    """``(name, op, inputs)`` of a binary GraphDef's nodes, read without TensorFlow, or None.

    The whole file is parsed as a ``GraphDef`` (``helpers.identify.tf_protos``): a damaged one
    raises protobuf's ``DecodeError``. None when TensorFlow must read it: a field a GraphDef or a
    NodeDef does not have (TensorFlow's reading reports it), an op type outside ``KNOWN_OPS`` (or
    none), or no nodes.
    """
    from google.protobuf.unknown_fields import UnknownFieldSet

    with open(path, "rb") as file:
        graph = parse(file.read(), "tensorflow.GraphDef")
    if not graph.node or len(UnknownFieldSet(graph)) or any(len(UnknownFieldSet(node)) for node in graph.node):
        return None
    if any(node.op not in KNOWN_OPS for node in graph.node):
        return None
    return [(node.name, node.op, list(node.input)) for node in graph.node]


def read_graph_def(path: str) -> Identification:
    text = path.endswith(".pbtxt")  # the text format (tf.io.write_graph(..., as_text=True))
    try:
        light = None if text else _light_nodes(path)
        traps: list[str] = []
        read = _read_with_tensorflow(path, text) if light is None else None
    except DecodeError as error:  # TensorFlow's GraphDef raises the same error
        return _not_graph_def(path, text, error)
    except ModuleNotFoundError as error:
        if error.name != "tensorflow":
            raise
        return not_model(path, NO_TENSORFLOW)
    if light is None:
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
        return _not_graph_def(path, text, error)
    if not graph.node:
        return not_model(path, "a .pb that holds no graph nodes (not a GraphDef)")
    from helpers.deploy import check_graph_def

    check = check_graph_def(graph)  # shared with helpers.deploy.model_file_kind
    if check.not_graph_def:  # another message read as a GraphDef
        return not_model(path, check.not_graph_def)
    traps = [check.library_trap] * bool(check.library_ops) + [check.note] * bool(check.note)
    return [(node.name, node.op, list(node.input)) for node in graph.node], traps


def _not_graph_def(path: str, text: bool, error: Exception) -> Identification:
    return not_model(path, f"a .pb{'txt' if text else ''} that is not a GraphDef (truncated, or "
                           f"another message): {first_line(error)}")
