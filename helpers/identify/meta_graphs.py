"""Reader: a TF1 ``.meta`` file (a MetaGraphDef: the graph, not the values).

Example:
    >>> info = read_meta_graph("tests/data/tf215-graph/graph/model.meta")
    >>> info.kind, info.written_by, info.holds
    ('meta-graph', {'TensorFlow': '2.15.1'}, {'variables in the graph': 23, 'checkpoint beside it': True})
"""

from __future__ import annotations

import os
import re

from helpers.errors import first_line
from helpers.identify.answer import Identification, code_tail, loading_code, not_model
from helpers.identify.tf_protos import NO_TENSORFLOW, parse
from helpers.trust import GRAPH

__all__ = ["meta_summary", "read_meta_graph"]


def meta_summary(path: str) -> tuple[str, int, set[str]]:
    """TensorFlow version, number of variables and the GPU/TPU/other machines' devices of a ``.meta``.

    The whole file is parsed as a ``MetaGraphDef`` (``helpers.identify.tf_protos``, no TensorFlow
    import): a damaged one raises protobuf's ``DecodeError``, as TensorFlow's class does.
    """
    with open(path, "rb") as file:
        meta = parse(file.read(), "tensorflow.MetaGraphDef")
    nodes = meta.graph_def.node
    variables = sum(node.op in ("VarHandleOp", "VariableV2", "Variable") for node in nodes)
    devices = {node.device for node in nodes if _foreign_device(node.device)}
    return meta.meta_info_def.tensorflow_version, variables, devices


def _foreign_device(device: str) -> bool:
    """A device string this CPU-only process may not have: a GPU/TPU, or another job or task."""
    if re.search(r"(GPU|TPU)", device, re.I):
        return True
    job, task = re.search(r"/job:([^/]+)", device), re.search(r"/task:(\d+)", device)
    return bool(job and job[1] != "localhost") or bool(task and task[1] != "0")


def read_meta_graph(path: str) -> Identification:
    from google.protobuf.message import DecodeError

    try:
        version, variables, devices = meta_summary(path)
    except (DecodeError, RuntimeError, ValueError) as error:
        return not_model(path, f"a .meta file that is not a MetaGraphDef (truncated?): {first_line(error)}")
    except ModuleNotFoundError as error:
        if error.name != "tensorflow":
            raise
        return not_model(path, NO_TENSORFLOW)
    prefix = path[: -len(".meta")]
    has_values = os.path.isfile(prefix + ".index") or os.path.isfile(prefix)
    info = Identification(path, "meta-graph", written_by={"TensorFlow": version} if version else {},
                          holds={"variables in the graph": variables, "checkpoint beside it": has_values},
                          runs_code=[GRAPH])
    if devices:
        info.traps.append(f"the graph pins ops to {', '.join(sorted(devices))}: import it with "
                          "clear_devices=True")
    if not has_values:
        info.traps.append("no checkpoint beside it: the graph alone has no trained values")
    if has_values:
        last = "    saver.restore(loaded, glob_safe_prefix(path[: -len('.meta')]))"
    else:
        last = "    loaded.run(tf.compat.v1.global_variables_initializer())  # no saved values"
    info.how_to_load = loading_code(path, """
        # Restoring or initializing runs ops stored in the graph: only for a file you trust.
        VALUES
        import tensorflow as tf
        from helpers.files import glob_safe_prefix
        graph = tf.Graph()
        with graph.as_default():  # Saver.restore needs the graph as default
            saver = tf.compat.v1.train.import_meta_graph(path, clear_devices=True)
            loaded = tf.compat.v1.Session(graph=graph)
        """) + last + "\n" + code_tail("""
        report = (f"a Session over {len(graph.get_operations())} ops, "
                  f"{len(graph.get_collection('variables'))} variables")
        """)
    values = ("# The values alone, without running the graph: helpers.inspection.read_checkpoint(prefix).\n"
              if has_values else "")
    info.how_to_load = info.how_to_load.replace("VALUES\n", values, 1)
    return info

