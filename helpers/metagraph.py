"""Recipes for bringing a saved graph back without the code that built it.

A ``tf.compat.v1.train.Saver`` writes the graph itself next to the weights,
in ``<prefix>.meta`` (a ``MetaGraphDef``). ``import_meta_graph`` rebuilds that
graph in the current one; tensors are then found by name
(``graph.get_tensor_by_name("x:0")``) or through the collections the author
filled. Two things go wrong often, and the recipes here handle them:

* importing the same ``.meta`` twice gives copies that SHARE their variables:
  each ``VarHandleOp`` keeps the ``shared_name`` it was saved with, whatever
  import scope it lands in. ``import_scoped`` rewrites those names first.
* reusing a trained network as a frozen feature extractor: in a graph, put
  ``tf.stop_gradient`` on the restored tensor; in Keras, ``frozen_base``.

Graph-mode recipes first, the TF2 (Keras) one last.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import keras
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import meta_graph_pb2

from helpers.errors import NotACheckpointError
from helpers.scopes import scope_name

__all__ = [
    "frozen_base",
    "import_scoped",
    "read_meta_graph",
    "scope_shared_names",
    "variable_shared_names",
]

MetaGraphDef = meta_graph_pb2.MetaGraphDef


def read_meta_graph(meta_path: str | os.PathLike) -> MetaGraphDef:
    """Read the ``MetaGraphDef`` a ``Saver`` wrote to ``<prefix>.meta``.

    Raises ``NotACheckpointError`` when the file is missing (with a hint when
    a checkpoint prefix was given instead of its ``.meta`` file) or is not a
    meta graph.

    Example:
        >>> meta = read_meta_graph("ckpt/model.meta")          # doctest: +SKIP
        >>> [node.name for node in meta.graph_def.node][:3]    # doctest: +SKIP
        ['x', 'w/Initializer/initial_value', 'w']
    """
    path = os.fspath(meta_path)
    if not os.path.isfile(path):
        reason = "no such file"
        if os.path.isdir(path):
            reason = "this is a folder; pass the '<prefix>.meta' file inside it"
        elif os.path.isfile(path + ".meta"):
            reason = f"no such file (did you mean {path + '.meta'!r}?)"
        raise NotACheckpointError(path, reason)
    meta_graph_def = MetaGraphDef()
    try:
        with open(path, "rb") as file:
            meta_graph_def.ParseFromString(file.read())
    except DecodeError:
        meta_graph_def = None
    if meta_graph_def is None or not meta_graph_def.graph_def.node:
        raise NotACheckpointError(
            path, "not a meta graph (expected the '.meta' file a tf.compat.v1.train.Saver writes)"
        )
    return meta_graph_def


def scope_shared_names(meta_graph_def: MetaGraphDef, scope: str) -> MetaGraphDef:
    """Return a copy of ``meta_graph_def`` whose variables get their own storage under ``scope``.

    A resource variable is found at run time by the ``shared_name`` of its
    ``VarHandleOp``, not by the op's name. Import scopes rename the ops but
    keep ``shared_name``, so two imports would read and write the same
    variable. Here each ``shared_name`` becomes ``scope/<old name>``, which
    is also the name the op gets once imported under ``scope``. (An empty
    ``shared_name`` is shared too, so it becomes ``scope/<op name>``.) The
    argument is left unchanged.

    Example:
        >>> meta = MetaGraphDef()
        >>> node = meta.graph_def.node.add(name="w", op="VarHandleOp")
        >>> node.attr["shared_name"].s = b"w"
        >>> scope_shared_names(meta, "model_1").graph_def.node[0].attr["shared_name"].s
        b'model_1/w'
        >>> meta.graph_def.node[0].attr["shared_name"].s
        b'w'
    """
    scope = scope_name(scope)
    scoped = MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            old = node.attr["shared_name"].s.decode() or node.name
            node.attr["shared_name"].s = f"{scope}/{old}".encode()
    return scoped


def import_scoped(
    meta_path: str | os.PathLike,
    scope: str,
    input_map: Mapping[str, tf.Tensor] | None = None,
) -> tf.compat.v1.train.Saver:
    """Import a ``.meta`` into the default graph under ``scope``, with variables of its own.

    Returns the ``Saver`` of that copy: ``saver.restore(sess, prefix)`` fills
    the copy's variables from a checkpoint saved without any scope. Import the
    same ``.meta`` under three scopes, restore three checkpoints, and the
    three copies answer differently (plain ``import_meta_graph`` would make
    them all answer like the last checkpoint restored).

    ``input_map`` replaces tensors of the saved graph by tensors of yours,
    keyed by their names in the saved graph, e.g. ``{"x:0": images}``.

    Raises ``NotACheckpointError`` for a missing or unreadable file and
    ``ValueError`` when ``scope`` is empty or already holds ops in the
    default graph (the import would silently land in ``scope_1``) or when
    the graph has no variables to restore.

    Example:
        >>> with tf.Graph().as_default():                     # doctest: +SKIP
        ...     savers = [import_scoped("ckpt/model.meta", f"m{i}") for i in (1, 2, 3)]
        ...     with tf.compat.v1.Session() as sess:
        ...         for i, saver in enumerate(savers, start=1):
        ...             saver.restore(sess, f"ckpt/model_{i}")
    """
    scope = scope_name(scope)
    graph = tf.compat.v1.get_default_graph()
    if any(op.name.startswith(scope + "/") for op in graph.get_operations()):
        raise ValueError(
            f"scope {scope!r} already holds ops in this graph: importing again would land in "
            f"{scope + '_1'!r}, with variables shared with another copy. Pick a new scope."
        )
    meta_graph_def = scope_shared_names(read_meta_graph(meta_path), scope)
    saver = tf.compat.v1.train.import_meta_graph(
        meta_graph_def, import_scope=scope, input_map=dict(input_map or {})
    )
    if saver is None:
        raise ValueError(f"{os.fspath(meta_path)!r} holds a graph without variables: nothing to restore")
    return saver


def variable_shared_names(graph: tf.Graph | None = None) -> dict[str, str]:
    """Map each variable op of ``graph`` (default: the default graph) to its ``shared_name``.

    Two ops with the same ``shared_name`` are one variable at run time.

    Example:
        >>> with tf.Graph().as_default() as graph:
        ...     with tf.compat.v1.variable_scope("net"):
        ...         w = tf.compat.v1.get_variable("w", shape=[2])
        >>> variable_shared_names(graph)
        {'net/w': 'net/w'}
    """
    graph = graph or tf.compat.v1.get_default_graph()
    return {
        op.name: op.get_attr("shared_name").decode()
        for op in graph.get_operations()
        if op.type == "VarHandleOp"
    }


def frozen_base(model: keras.Model, layer_name: str) -> keras.Model:
    """A model from ``model``'s inputs to the output of ``layer_name``, with nothing trainable.

    The TF2 way to reuse a trained network as a feature extractor: build your
    new head on top of the returned model and only the head trains. The
    layers are shared with ``model`` (same weights, no copy), so they are
    frozen in ``model`` too.

    Raises ``ValueError`` naming the available layers when ``layer_name`` is
    not one of them.

    Example:
        >>> net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
        ...                         keras.layers.Dense(3, name="out")])
        >>> base = frozen_base(net, "hidden")
        >>> base.output_shape, len(base.trainable_weights), len(base.non_trainable_weights)
        ((None, 8), 0, 2)
    """
    names = [layer.name for layer in model.layers]
    if layer_name not in names:
        raise ValueError(f"no layer {layer_name!r} in the model; its layers are {names}")
    inputs = model.inputs[0] if len(model.inputs) == 1 else model.inputs
    base = keras.Model(inputs, model.get_layer(layer_name).output)
    base.trainable = False
    return base
