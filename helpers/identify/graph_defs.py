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

__all__ = ["read_graph_def"]


def read_graph_def(path: str) -> Identification:
    from google.protobuf.message import DecodeError
    from tensorflow.core.framework import graph_pb2

    from google.protobuf import text_format

    graph = graph_pb2.GraphDef()
    text = path.endswith(".pbtxt")  # the text format (tf.io.write_graph(..., as_text=True))
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
    consumed = {inp.split(":")[0].lstrip("^") for node in graph.node for inp in node.input}
    inputs = [n.name for n in graph.node if n.op == "Placeholder"]
    outputs = [n.name for n in graph.node
               if n.name not in consumed and n.op not in ("Const", "NoOp", "Placeholder", "Assert")]
    variables = sum(n.op in ("VarHandleOp", "VariableV2") for n in graph.node)
    info = Identification(path, "frozen-graph",
                          holds={"nodes": len(graph.node), "inputs": inputs, "outputs": outputs,
                                 "constants": sum(n.op == "Const" for n in graph.node)})
    if variables:
        info.traps.append(f"{variables} variable ops: not frozen, the values are not in this file")
    if check.library_ops:
        info.traps.append(check.library_trap)
    if check.note:
        info.traps.append(check.note)
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
