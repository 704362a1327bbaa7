"""Recipes for bringing a saved graph back without the code that built it.

A ``tf.compat.v1.train.Saver`` writes the graph itself next to the weights,
in ``<prefix>.meta`` (a ``MetaGraphDef``). ``import_meta_graph`` rebuilds that
graph in the current one; tensors are then found by name
(``graph.get_tensor_by_name("x:0")``) or through the collections the author
filled. Three things go wrong often, and the recipes here handle them:

* importing the same ``.meta`` twice gives copies that SHARE their variables:
  each resource variable (``VarHandleOp``, what TF 2.x makes) keeps the
  ``shared_name`` it was saved with, whatever import scope it lands in.
  ``import_scoped`` rewrites those names first. (TF 1.x made *reference*
  variables, ``VariableV2``, found by their op name: there the copies were
  independent, and they still are.)
* a scope that is already taken: the import silently lands in ``model_1_1``
  (or ``Model_1_1``: TensorFlow compares scope names without case).
  ``import_scoped`` refuses instead.
* a ``.meta`` saved on a GPU machine pins ops to ``/device:GPU:0``; on a
  laptop without one, the import works and the first ``run`` fails.
  ``import_scoped`` clears the pins unless told not to.

Reusing a trained network as a frozen feature extractor: in a graph, put
``tf.stop_gradient`` on the restored tensor; in Keras, ``frozen_base``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import keras
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import meta_graph_pb2

from helpers.errors import NotACheckpointError, ScopeError, StructureMismatchError, first_line
from helpers.files import path_text

__all__ = [
    "ScopeError",
    "checked_scope",
    "frozen_base",
    "import_scoped",
    "read_meta_graph",
    "scope_shared_names",
    "variable_shared_names",
]

MetaGraphDef = meta_graph_pb2.MetaGraphDef

#: Op types that hold a variable's storage: resource variables (TF 2.x) and reference ones (TF 1.x).
RESOURCE_VARIABLE_OPS = ("VarHandleOp",)
REFERENCE_VARIABLE_OPS = ("VariableV2", "Variable")
VARIABLE_OPS = RESOURCE_VARIABLE_OPS + REFERENCE_VARIABLE_OPS

# One part of a scope: what TensorFlow accepts as the start of an op name, then name characters.
_SCOPE_PART = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-]*")


def checked_scope(scope: str) -> str:
    """``scope`` without surrounding slashes, or ``ScopeError`` naming what is wrong with it.

    A scope is one or more parts separated by ``/``; each part starts with a
    letter, a digit or ``.`` and goes on with those, ``_`` or ``-``; the first
    character is not a digit (TensorFlow's import code breaks on one).

    Example:
        >>> checked_scope("model_1/")
        'model_1'
        >>> checked_scope("my model")
        Traceback (most recent call last):
        ...
        helpers.errors.ScopeError: 'my model' is not a valid scope: ...
    """
    if not isinstance(scope, str):
        raise ScopeError(f"a scope must be a str such as 'model_1', got {type(scope).__name__} {scope!r}")
    name = scope.strip("/")
    if not name:
        raise ScopeError(f"a scope must be a non-empty name such as 'model_1', got {scope!r}")
    if name[0].isdigit():
        # ops.prepend_name_scope builds a regex replacement r"\1" + scope: "\10" is read as group 10
        raise ScopeError(
            f"{scope!r} starts with a digit, which TensorFlow's import_meta_graph and "
            "Variable(import_scope=...) mistake for a regex group: start it with a letter"
        )
    bad = [part for part in name.split("/") if not _SCOPE_PART.fullmatch(part)]
    if bad:
        raise ScopeError(
            f"{scope!r} is not a valid scope: {bad[0]!r} must start with a letter, a digit or '.' "
            "and hold only letters, digits, '.', '_' and '-' (no spaces, no '//')"
        )
    return name


def read_meta_graph(meta_path: str | os.PathLike) -> MetaGraphDef:
    """Read the ``MetaGraphDef`` a ``Saver`` wrote to ``<prefix>.meta``.

    Raises ``NotACheckpointError`` when the file is missing (with a hint when
    a checkpoint prefix was given instead of its ``.meta`` file) or is not a
    meta graph. The file is only read.

    Example:
        >>> meta = read_meta_graph("tests/data/tf215-graph/graph/model.meta")
        >>> [node.name for node in meta.graph_def.node][:3], sorted(meta.collection_def)[:2]
        (['x', 'y', 'is_training/input'], ['global_step', 'train_op'])
    """
    path = path_text(meta_path, "path of the .meta file")
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
    except (DecodeError, RuntimeWarning):
        meta_graph_def = None
    except OSError as error:
        raise NotACheckpointError(path, f"cannot read it ({first_line(error)})") from None
    if meta_graph_def is None or not meta_graph_def.graph_def.node or not all(
        node.name and node.op for node in meta_graph_def.graph_def.node
    ):
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
    ``shared_name`` is shared too, so it becomes ``scope/<op name>``.)
    Reference variables (``VariableV2``, from TF 1.x or ``use_resource=False``)
    with an empty ``shared_name`` are found by their op name, which the import
    scope already changes: they are left as they are. The argument is left
    unchanged.

    Example:
        >>> meta = MetaGraphDef()
        >>> node = meta.graph_def.node.add(name="w", op="VarHandleOp")
        >>> node.attr["shared_name"].s = b"w"
        >>> scope_shared_names(meta, "model_1").graph_def.node[0].attr["shared_name"].s
        b'model_1/w'
        >>> meta.graph_def.node[0].attr["shared_name"].s
        b'w'
    """
    scope = checked_scope(scope)
    if not isinstance(meta_graph_def, MetaGraphDef):
        raise StructureMismatchError(
            f"expected a MetaGraphDef (read_meta_graph reads one), got {type(meta_graph_def).__name__}"
        )
    scoped = MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        old = node.attr["shared_name"].s.decode() if "shared_name" in node.attr else ""
        if node.op in RESOURCE_VARIABLE_OPS:
            node.attr["shared_name"].s = f"{scope}/{old or node.name}".encode()
        elif node.op in REFERENCE_VARIABLE_OPS and old:
            node.attr["shared_name"].s = f"{scope}/{old}".encode()
    return scoped


def import_scoped(
    meta_path: str | os.PathLike,
    scope: str,
    input_map: Mapping[str, tf.Tensor] | None = None,
    *,
    clear_devices: bool = True,
) -> tf.compat.v1.train.Saver:
    """Import a ``.meta`` into the default graph under ``scope``, with variables of its own.

    Returns the ``Saver`` of that copy: ``saver.restore(sess, prefix)`` fills
    the copy's variables from a checkpoint saved without any scope. Import the
    same ``.meta`` under three scopes, restore three checkpoints, and the
    three copies answer differently (plain ``import_meta_graph`` would make
    them all answer like the last checkpoint restored). ``model_1`` and
    ``model_10`` are two different scopes, in either order.

    ``input_map`` replaces tensors of the saved graph by tensors of yours,
    keyed by their names in the saved graph, e.g. ``{"x:0": images}`` (``"x"``
    means ``"x:0"``). ``clear_devices=True`` (the default) drops the device
    pins the author's machine wrote, such as ``/device:GPU:0``, so the copy
    runs wherever you are; pass ``False`` to keep them.

    Raises:
        NotACheckpointError: the file is missing, is not a ``.meta`` file, or
            TensorFlow cannot import it.
        ScopeError: ``scope`` is empty or not a valid name, the import would
            land elsewhere (``scope_1``, a differently cased ``Model_1`` taken,
            or inside an open ``name_scope``), or a variable's storage name is
            already used in the graph.
        StructureMismatchError: an ``input_map`` key names no tensor of the
            saved graph, or its value's dtype or shape does not fit; or the
            graph has no variables to restore.

    Example:
        >>> prefix = "tests/data/tf215-graph/graph/model"  # a Saver's checkpoint and its .meta
        >>> with tf.Graph().as_default():
        ...     savers = [import_scoped(prefix + ".meta", scope) for scope in ("m1", "m2")]
        ...     with tf.compat.v1.Session() as sess:
        ...         sess.run(tf.compat.v1.global_variables_initializer())  # both global steps: 0
        ...         savers[0].restore(sess, prefix)  # m1's variables only: its step is 3
        ...         print([int(step) for step in sess.run(tf.compat.v1.get_collection("global_step"))])
        [3, 0]
    """
    scope = checked_scope(scope)
    path = path_text(meta_path, "path of the .meta file")
    graph = tf.compat.v1.get_default_graph()
    landing = graph.unique_name(scope, mark_as_used=False)
    if landing != scope:
        raise ScopeError(
            f"importing under {scope!r} would land in {landing!r}: that name (or one differing only "
            "in case) is taken in this graph, or a name_scope is open. Pick a new scope; two imports "
            "under one scope would not be two copies you can find by name."
        )
    meta_graph_def = scope_shared_names(read_meta_graph(path), scope)
    taken = set(variable_shared_names(graph).values())
    mine = {
        node.name: _storage_name(node, scope)
        for node in meta_graph_def.graph_def.node
        if node.op in VARIABLE_OPS
    }
    clashes = sorted(name for name in mine.values() if name in taken)
    if clashes:
        raise ScopeError(
            f"the graph already has variables stored as {clashes}: importing under {scope!r} would "
            "share them. Pick another scope."
        )
    if not mine:
        raise StructureMismatchError(f"{path!r} holds a graph without variables: nothing to restore")
    mapping = _checked_input_map(meta_graph_def, input_map or {}, graph)
    saver_def = type(meta_graph_def.saver_def)()
    saver_def.CopyFrom(meta_graph_def.saver_def)  # import_meta_graph's own Saver rewrites the original
    has_saver_def = meta_graph_def.HasField("saver_def")
    try:
        tf.compat.v1.train.import_meta_graph(
            meta_graph_def, import_scope=scope, input_map=mapping, clear_devices=clear_devices
        )
    except (ValueError, KeyError, TypeError, re.error, tf.errors.OpError) as error:
        raise NotACheckpointError(path, f"TensorFlow cannot import this graph: {first_line(error)}") from None
    return _saver_for(graph, saver_def if has_saver_def else None, scope, path)


def _saver_for(graph: tf.Graph, saver_def, scope: str, path: str) -> tf.compat.v1.train.Saver:
    """The ``Saver`` of the copy under ``scope``, built here rather than by ``import_meta_graph``.

    ``import_meta_graph`` finds the copy's variables with a regex on the scope,
    so after an import under ``model_10`` an import under ``model_1`` picks up
    ``model_10``'s variables too and returns a ``Saver`` for the wrong scope
    (its restore fails, or runs another copy's restore ops).
    """
    with graph.as_default():
        if saver_def is not None:
            return tf.compat.v1.train.Saver(saver_def=saver_def, name=scope)
        prefix = scope + "/"
        own = {
            v.op.name[len(prefix):]: v
            for v in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
            if v.op.name.startswith(prefix)
        }
        if not own:
            raise StructureMismatchError(f"{path!r} lists no variables in its collections: nothing to restore")
        return tf.compat.v1.train.Saver(var_list=own)


def _storage_name(node, scope: str) -> str:
    """The name a variable node will be stored under once imported under ``scope``."""
    shared = node.attr["shared_name"].s.decode() if "shared_name" in node.attr else ""
    container = node.attr["container"].s.decode() if "container" in node.attr else ""
    name = shared if (shared or node.op in RESOURCE_VARIABLE_OPS) else f"{scope}/{node.name}"
    return f"{container}:{name}" if container else name


def _checked_input_map(meta_graph_def: MetaGraphDef, input_map, graph: tf.Graph) -> dict[str, tf.Tensor]:
    """``input_map`` with ``name:index`` keys, every key found and every value fitting; or an error."""
    if not isinstance(input_map, Mapping):
        raise StructureMismatchError(f"input_map must be a dict {{'x:0': tensor}}, got {type(input_map).__name__}")
    nodes = {node.name: node for node in meta_graph_def.graph_def.node}
    mapping = {}
    for key, value in input_map.items():
        name = key.name if isinstance(key, tf.Tensor) else key
        if not isinstance(name, str) or not name:
            raise StructureMismatchError(f"input_map keys are tensor names such as 'x:0', got {key!r}")
        op_name, _, index = name.partition(":")
        if op_name not in nodes or (index and not index.isdigit()):
            placeholders = sorted(n.name + ":0" for n in nodes.values() if n.op == "Placeholder")
            raise StructureMismatchError(
                f"input_map key {name!r} names no tensor of the saved graph; its placeholders are {placeholders}"
            )
        name = f"{op_name}:{index or 0}"
        with graph.as_default():
            try:
                tensor = value if isinstance(value, tf.Tensor) else tf.convert_to_tensor(value)
            except (TypeError, ValueError) as error:
                raise StructureMismatchError(
                    f"input_map[{name!r}] is not a tensor or an array: {first_line(error)}"
                ) from None
        if tensor.graph is not graph:
            raise StructureMismatchError(f"input_map[{name!r}] belongs to another graph than the default one")
        node = nodes[op_name]
        if node.op == "Placeholder":
            expected = tf.dtypes.as_dtype(node.attr["dtype"].type)
            if tensor.dtype.base_dtype != expected:
                raise StructureMismatchError(
                    f"input_map[{name!r}] has dtype {tensor.dtype.name}, the saved placeholder takes "
                    f"{expected.name} (NumPy arrays are float64 by default: cast with tf.cast or astype)"
                )
            shape = tf.TensorShape(node.attr["shape"].shape) if "shape" in node.attr else tf.TensorShape(None)
            if not tensor.shape.is_compatible_with(shape):
                raise StructureMismatchError(
                    f"input_map[{name!r}] has shape {tensor.shape}, the saved placeholder takes {shape}"
                )
        mapping[name] = tensor
    return mapping


def variable_shared_names(graph: tf.Graph | None = None) -> dict[str, str]:
    """Map each variable op of ``graph`` (default: the default graph) to the name its storage has.

    Two ops with the same value are one variable at run time. For a resource
    variable (``VarHandleOp``) that is its ``shared_name`` (an empty one is
    shared by all such ops). For a reference variable (``VariableV2``, TF 1.x
    or ``use_resource=False``) it is its ``shared_name`` when set, otherwise
    its own op name: that is why copies of TF 1.x graphs were independent.
    A non-default ``container`` is written in front, as ``container:name``.

    Example:
        >>> with tf.Graph().as_default() as graph:
        ...     with tf.compat.v1.variable_scope("net"):
        ...         w = tf.compat.v1.get_variable("w", shape=[2])
        ...         old = tf.compat.v1.get_variable("old", shape=[2], use_resource=False)
        >>> variable_shared_names(graph)
        {'net/w': 'net/w', 'net/old': 'net/old'}
    """
    graph = graph or tf.compat.v1.get_default_graph()
    if not isinstance(graph, tf.Graph):
        raise StructureMismatchError(f"expected a tf.Graph, got {type(graph).__name__}")
    names = {}
    for op in graph.get_operations():
        if op.type in VARIABLE_OPS:
            shared = op.get_attr("shared_name").decode()
            container = op.get_attr("container").decode()
            name = shared if (shared or op.type in RESOURCE_VARIABLE_OPS) else op.name
            names[op.name] = f"{container}:{name}" if container else name
    return names


def frozen_base(model: keras.Model, layer_name: str) -> keras.Model:
    """A model from ``model``'s inputs to the output of ``layer_name``, with nothing trainable.

    The TF2 way to reuse a trained network as a feature extractor: build your
    new head on top of the returned model and only the head trains. The
    layers are shared with ``model`` (same weights, no copy), so they are
    frozen in ``model`` too. Any graph of layers works (branches, several
    inputs), as long as ``model`` is Sequential or functional and the layer is
    called once.

    Raises ``StructureMismatchError`` naming the available layers when
    ``layer_name`` is not one of them, for a subclassed model (it has no graph
    of layers to cut), and for a layer called more than once (a shared layer:
    which of its outputs is meant?).

    Example:
        >>> net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="hidden"),
        ...                         keras.layers.Dense(3, name="out")])
        >>> base = frozen_base(net, "hidden")
        >>> base.output_shape, len(base.trainable_weights), len(base.non_trainable_weights)
        ((None, 8), 0, 2)
    """
    if not isinstance(model, keras.Model):
        raise StructureMismatchError(f"expected a keras.Model, got {type(model).__name__}")
    names = [layer.name for layer in model.layers]
    if layer_name not in names:
        raise StructureMismatchError(f"no layer {layer_name!r} in the model; its layers are {names}")
    try:
        inputs = list(model.inputs)
    except (AttributeError, ValueError):
        inputs = []
    if not inputs:
        raise StructureMismatchError(
            f"{type(model).__name__} has no graph of layers to cut at {layer_name!r} (a subclassed "
            "model, or a Sequential without keras.Input): rebuild the base as a functional or "
            "Sequential model with an Input"
        )
    layer = model.get_layer(layer_name)
    if len(getattr(layer, "_inbound_nodes", [])) > 1:
        raise StructureMismatchError(
            f"layer {layer_name!r} is called {len(layer._inbound_nodes)} times in the model (a shared "
            "layer): its output is ambiguous. Cut at a layer called once."
        )
    base = keras.Model(inputs[0] if len(inputs) == 1 else inputs, layer.output)
    base.trainable = False
    return base
