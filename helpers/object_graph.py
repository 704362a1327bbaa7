"""Read and draw the object graph stored in an object-based checkpoint.

``tf.train.Checkpoint`` saves more than variables: it stores the graph of
Python objects that own them (a model, its layers, an optimizer ...) with a
*named edge* for every attribute that leads from one object to another. This
module reads that graph back from the checkpoint file alone, as plain data
(``read_object_graph``), and draws it with matplotlib (``plot_object_graph``)::

    graph = read_object_graph("ckpt/train-1")
    graph.node("model/hidden/_kernel").shape        # (3, 4)
    fig = plot_object_graph("ckpt/train-1")

The graph is stored under the key ``_CHECKPOINTABLE_OBJECT_GRAPH`` as a
``TrackableObjectGraph`` protocol buffer. It records objects, edges and which
checkpoint key holds each saved value, but not the objects' Python classes, so
the kind of each node is inferred (see ``read_object_graph``). Name-based
checkpoints written by ``tf.compat.v1.train.Saver`` have no object graph.

Small aids go with it: ``checkpoint_paths`` (the path under which a
checkpoint would store each variable of a model, found without writing one),
``brief_assertion`` and ``assertion_verdicts`` (what a
restore status's assertions say, in a line), and ``reading`` (a reader and the
path as the user wrote it; a path with ``[``, ``*``, ``?``, which TensorFlow
takes for a glob pattern, is read as written). The warnings TensorFlow logs
are shown with ``helpers.notebook.captured_warnings``.
Paths are ``str`` or ``os.PathLike``.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import keras
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from helpers.errors import NameBasedCheckpointError, NotACheckpointError, first_line
from helpers.files import path_text
from helpers.inspection import OBJECT_GRAPH_KEY, open_checkpoint, read_tensor

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "KIND_COLOURS",
    "GraphEdge",
    "GraphNode",
    "NameBasedCheckpointError",
    "ObjectGraph",
    "plot_object_graph",
    "assertion_verdicts",
    "brief_assertion",
    "checkpoint_paths",
    "read_object_graph",
]

VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"

# The colours of the classic picture of an object graph: layer objects black,
# variables blue, optimizers red, optimizer slot variables orange.
KIND_COLOURS = {
    "root": "#2e7d32",
    "object": "#111111",
    "list": "#8a8a8a",
    "optimizer": "#c62828",
    "variable": "#1f5fbf",
    "slot variable": "#ef8a00",
}
_KIND_LABELS = {
    "root": "the checkpoint (root)",
    "object": "object (model, layer, module)",
    "list": "list of objects",
    "optimizer": "optimizer",
    "variable": "variable",
    "slot variable": "optimizer slot variable",
}
# Children through which an optimizer can be recognised (Keras 3, Keras 2).
_OPTIMIZER_MARKERS = {"_iterations", "iter", "iterations"}


@dataclass(frozen=True)
class GraphNode:
    """One object of the graph.

    ``path`` is the shortest chain of edge names from the root, the one
    TensorFlow uses to build checkpoint keys ("" for the root); between paths
    of equal length the first in edge order wins (a ``tf.train.Checkpoint``
    orders its own arguments alphabetically, so an optimizer saved under a
    name that sorts before ``model`` owns the model's keys). Variables also
    carry their ``checkpoint_key``, ``shape``, ``dtype`` and ``full_name``
    (the variable's own name when it was saved, which matching ignores).
    """

    id: int
    kind: str
    path: str
    checkpoint_key: str | None = None
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    full_name: str | None = None

    @property
    def name(self) -> str:
        """The last edge name of ``path`` ("root" for the root)."""
        return self.path.rsplit("/", 1)[-1] if self.path else "root"


@dataclass(frozen=True)
class GraphEdge:
    """A named dependency: ``parent.<name>`` is ``child``."""

    parent: int
    child: int
    name: str


@dataclass(frozen=True)
class ObjectGraph:
    """The object graph of a checkpoint, as plain data (nodes and named edges)."""

    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]

    def node(self, path: str) -> GraphNode:
        """The node whose shortest path from the root is ``path``."""
        for node in self.nodes:
            if node.path == path:
                return node
        raise KeyError(f"no object at path {path!r} in this graph")

    def by_id(self, node_id: int) -> GraphNode:
        """The node with id ``node_id``."""
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(f"no node with id {node_id}")

    def children(self, node_id: int) -> list[GraphEdge]:
        """The edges leaving ``node_id``, in the order they were saved."""
        return [edge for edge in self.edges if edge.parent == node_id]

    def of_kind(self, kind: str) -> list[GraphNode]:
        """Every node of one kind, e.g. ``graph.of_kind("variable")``."""
        if kind not in KIND_COLOURS:
            raise ValueError(f"unknown node kind {kind!r}; kinds are {sorted(KIND_COLOURS)}")
        return [node for node in self.nodes if node.kind == kind]


def checkpoint_paths(root: Any, edge: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, variable)`` for every variable a checkpoint of ``root`` would hold, named as it would be.

    This is the breadth-first walk over tracked objects that
    ``tf.train.Checkpoint`` makes when it writes, so a variable reachable along
    several paths comes once, with the path the file records (the first one
    found). ``edge`` is the name the root gets in the checkpoint (``"model"``
    for ``tf.train.Checkpoint(model=root)``; empty when ``root`` is the
    checkpoint's root). Nothing is written.

    Example:
        >>> layer = keras.layers.Dense(2)
        >>> layer.build((None, 3))
        >>> sorted(path for path, _ in checkpoint_paths(layer, "model"))
        ['model/_kernel', 'model/bias']
    """
    view = tf.train.TrackableView(root)
    seen, queue = {id(root)}, deque([(root, edge)])
    while queue:
        obj, path = queue.popleft()
        for name, child in view.children(obj).items():
            if id(child) in seen:
                continue
            seen.add(id(child))
            child_path = f"{path}/{name}" if path else name
            if isinstance(child, (tf.Variable, keras.Variable)):
                yield child_path, child
            else:
                queue.append((child, child_path))


def _load_proto(ckpt_path: str) -> tuple[trackable_object_graph_pb2.TrackableObjectGraph, dict, dict]:
    with reading(ckpt_path) as (ckpt_path, reader):
        return _proto_of(ckpt_path, reader)


def _proto_of(ckpt_path: str, reader) -> tuple[trackable_object_graph_pb2.TrackableObjectGraph, dict, dict]:
    shapes = reader.get_variable_to_shape_map()
    if OBJECT_GRAPH_KEY not in shapes:
        raise NameBasedCheckpointError(ckpt_path)
    proto = trackable_object_graph_pb2.TrackableObjectGraph()
    try:
        proto.ParseFromString(read_tensor(reader, ckpt_path, OBJECT_GRAPH_KEY))
    except Exception as error:  # a protobuf DecodeError, whatever its class
        if isinstance(error, NotACheckpointError):
            raise
        raise NotACheckpointError(ckpt_path, f"the object graph is corrupt: {first_line(error)}") from None
    if not proto.nodes:
        raise NotACheckpointError(ckpt_path, "the object graph is empty")
    dtypes = {key: dtype.name for key, dtype in reader.get_variable_to_dtype_map().items()}
    return proto, shapes, dtypes


def read_object_graph(ckpt_path: str | os.PathLike, *, include_empty: bool = False) -> ObjectGraph:
    """The object graph stored in an object-based checkpoint, as plain data.

    Kinds are inferred from the graph, which does not store Python classes:
    ``root`` (the ``tf.train.Checkpoint``), ``variable`` (holds a saved
    value), ``optimizer`` (has slot variables, or an ``_iterations``/``iter``
    child), ``slot variable`` (a variable only an optimizer reaches, other
    than the optimizer's own counters), ``list`` (children named 0, 1, ...) and
    ``object`` (anything else: models, layers, modules). Objects that hold no
    saved value anywhere below them (Keras keeps several empty trackers) are
    left out unless ``include_empty`` is true.

    Raises ``NotACheckpointError`` when ``ckpt_path`` is not a readable
    checkpoint, and ``NameBasedCheckpointError`` (a subclass) when it is a
    name-based one.

    Example:
        >>> graph = read_object_graph("tests/data/tf215/tfckpt_opt/ckpt")  # a Keras 2 model and its optimizer
        >>> graph.node("model/layer_with_weights-0/kernel").shape
        (5, 6)
        >>> graph.node("optimizer").kind, len(graph.of_kind("slot variable"))
        ('optimizer', 12)
    """
    proto, shapes, dtypes = _load_proto(ckpt_path)
    edges = [
        GraphEdge(parent, child.node_id, child.local_name)
        for parent, node in enumerate(proto.nodes)
        for child in node.children
    ]
    paths = _shortest_paths(len(proto.nodes), edges)
    # Old-style (TF1) optimizers list their slots apart from the children: a
    # slot belongs both to the optimizer and to the variable it shadows.
    slot_ids = set()
    for parent, node in enumerate(proto.nodes):
        for slot in node.slot_variables:
            slot_ids.add(slot.slot_variable_node_id)
            edges.append(GraphEdge(parent, slot.slot_variable_node_id, slot.slot_name))
            edges.append(GraphEdge(slot.original_variable_node_id, slot.slot_variable_node_id, slot.slot_name))

    values = {i: _value_attribute(node) for i, node in enumerate(proto.nodes)}
    full_names = {i: n.attributes[0].full_name for i, n in enumerate(proto.nodes) if n.attributes}
    optimizers = {
        i
        for i, node in enumerate(proto.nodes)
        if node.slot_variables or {c.local_name for c in node.children} & _OPTIMIZER_MARKERS
    }
    slot_ids |= _keras_slots(len(proto.nodes), edges, values, optimizers)
    keep = _holding_values(len(proto.nodes), edges, {i for i, n in enumerate(proto.nodes) if n.attributes})

    nodes = []
    for i, node in enumerate(proto.nodes):
        if not include_empty and i != 0 and i not in keep:
            continue
        key = values[i]
        path = paths.get(i)
        if path is None and key is not None:  # reachable only as an old-style slot
            path = key[: -len(VALUE_SUFFIX)] if key.endswith(VALUE_SUFFIX) else key
        if path is None:
            continue  # not reachable from the root: not part of what was saved
        nodes.append(
            GraphNode(
                id=i,
                kind=_kind(i, node, key, optimizers, slot_ids),
                path=path,
                checkpoint_key=key,
                shape=tuple(shapes[key]) if key in shapes else None,
                dtype=dtypes.get(key) if key else None,
                full_name=full_names.get(i) or None,
            )
        )
    kept_ids = {node.id for node in nodes}
    return ObjectGraph(
        nodes=tuple(nodes),
        edges=tuple(e for e in edges if e.parent in kept_ids and e.child in kept_ids),
    )


def _value_attribute(node) -> str | None:
    for attribute in node.attributes:
        if attribute.name == "VARIABLE_VALUE":
            return attribute.checkpoint_key
    return node.attributes[0].checkpoint_key if node.attributes else None


def _kind(i: int, node, key: str | None, optimizers: set[int], slots: set[int]) -> str:
    if i == 0:
        return "root"
    if i in slots:
        return "slot variable"
    if key is not None and any(a.name == "VARIABLE_VALUE" for a in node.attributes):
        return "variable"
    if i in optimizers:
        return "optimizer"
    if node.children and all(c.local_name.isdigit() for c in node.children):
        return "list"
    return "object"


def _shortest_paths(count: int, edges: list[GraphEdge]) -> dict[int, str]:
    """Breadth-first paths from the root, children in saved order (as TF names keys)."""
    children: dict[int, list[GraphEdge]] = {}
    for edge in edges:
        children.setdefault(edge.parent, []).append(edge)
    paths = {0: ""}
    queue = deque([0])
    while queue:
        parent = queue.popleft()
        for edge in children.get(parent, []):
            if edge.child not in paths and edge.child < count:
                paths[edge.child] = f"{paths[parent]}/{edge.name}".lstrip("/")
                queue.append(edge.child)
    return paths


def _reachable(start: set[int], edges: list[GraphEdge], blocked: set[int] = frozenset()) -> set[int]:
    children: dict[int, list[int]] = {}
    for edge in edges:
        children.setdefault(edge.parent, []).append(edge.child)
    seen = set(start)
    stack = list(start)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in seen and child not in blocked:
                seen.add(child)
                stack.append(child)
    return seen


def _keras_slots(count, edges, values, optimizers) -> set[int]:
    """Variables reached only through an optimizer, other than its direct children."""
    if not optimizers:
        return set()
    without_optimizers = _reachable({0}, edges, blocked=optimizers)
    direct = {e.child for e in edges if e.parent in optimizers}
    under_optimizers = _reachable(set(optimizers), edges)
    return {
        i
        for i in range(count)
        if values[i] is not None
        and i in under_optimizers
        and i not in without_optimizers
        and i not in direct
    }


def _holding_values(count: int, edges: list[GraphEdge], holders: set[int]) -> set[int]:
    """Nodes that hold a value or lead to one."""
    parents: dict[int, list[int]] = {}
    for edge in edges:
        parents.setdefault(edge.child, []).append(edge.parent)
    keep = set(holders)
    stack = list(holders)
    while stack:
        for parent in parents.get(stack.pop(), []):
            if parent not in keep:
                keep.add(parent)
                stack.append(parent)
    return keep


# ----------------------------------------------------------------- drawing


def _display_tree(graph: ObjectGraph) -> dict[int, GraphEdge]:
    """Choose one parent edge per node, so the graph can be laid out as a tree.

    An edge from the root wins (it was named in ``tf.train.Checkpoint(...)``);
    otherwise each object goes under its most specific owner: the parent with
    the fewest children (a layer rather than the optimizer's list of every
    trainable variable); ties go to the parent nearest the root. A parent is
    never one of the node's own descendants, so the result is a tree.
    """
    count = {n.id: len(graph.children(n.id)) for n in graph.nodes}
    depth = {n.id: (n.path.count("/") + 1 if n.path else 0) for n in graph.nodes}
    edges = list(graph.edges)
    chosen: dict[int, GraphEdge] = {}
    for node in graph.nodes:
        if node.id == 0:
            continue
        below = _reachable({node.id}, edges)
        candidates = [e for e in edges if e.child == node.id and e.parent not in below]
        if candidates:
            chosen[node.id] = min(
                candidates, key=lambda e: (e.parent != 0, count[e.parent], depth[e.parent], edges.index(e))
            )
    return chosen


def _layout(graph: ObjectGraph, tree: dict[int, GraphEdge]) -> tuple[dict[int, tuple[float, float]], int]:
    """Left-to-right tree layout: x is the depth, leaves stacked top to bottom."""
    kids: dict[int, list[int]] = {}
    for child, edge in tree.items():
        kids.setdefault(edge.parent, []).append(child)
    order = {e: i for i, e in enumerate(graph.edges)}
    for parent in kids:
        kids[parent].sort(key=lambda c: order[tree[c]])
    position: dict[int, tuple[float, float]] = {}
    next_row = [0]

    def place(node_id: int, level: int) -> float:
        children = kids.get(node_id, [])
        if not children:
            row = float(next_row[0])
            next_row[0] += 1
        else:
            rows = [place(child, level + 1) for child in children]
            row = (rows[0] + rows[-1]) / 2
        position[node_id] = (float(level), row)
        return row

    place(0, 0)
    return position, next_row[0]


def _label(node: GraphNode, tree: dict[int, GraphEdge], hidden_links: int) -> str:
    if node.kind == "root":
        return "checkpoint"
    name = tree[node.id].name if node.id in tree else node.name
    if node.kind == "slot variable" and node.full_name:
        # Keras 3 links a slot to its variable only by name: show that name.
        name = f"{name}: {node.full_name.rsplit('/', 1)[-1]}"
    if node.shape is not None:
        shape = "(" + ", ".join(str(d) for d in node.shape) + ("," if len(node.shape) == 1 else "") + ")"
        name = f"{name} {shape}"
    if hidden_links:
        name = f"{name} [{hidden_links}]"
    return name


_MAX_DRAWN_LINKS = 2  # more extra paths than this from one object are counted, not drawn
_INCHES_PER_LEVEL = 2.1  # horizontal room per level of the tree
_CHARS_PER_LEVEL = 26.0  # about how many 9-point characters fit in one level
_INDENT = 0.3  # boxes start this far (in levels) left of their node


def plot_object_graph(ckpt_path: str | os.PathLike, *, title: str | None = None) -> Figure:
    """Draw the object graph of an object-based checkpoint and return the figure.

    Every box is an object, labelled with the name of the edge that leads to
    it (the attribute name, or a list index), plus the shape for variables.
    Colours follow the classic picture: objects black, variables blue,
    optimizers red, optimizer slot variables orange. An object reached by
    several paths is drawn once, under its most specific owner; the other
    paths are dashed, or counted as ``[n]`` when one object has many (the
    optimizer's list of every variable it updates).

    Raises what ``read_object_graph`` raises.

    Example:
        >>> import os, tempfile
        >>> fig = plot_object_graph("tests/data/tf215/tfckpt_opt/ckpt")
        >>> fig.savefig(os.path.join(tempfile.mkdtemp(), "graph.png"))
    """
    # matplotlib only here: the rest of the module (and the recipes that import it) works without it.
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    graph = read_object_graph(ckpt_path)
    tree = _display_tree(graph)
    position, rows = _layout(graph, tree)
    extra = [e for e in graph.edges if tree.get(e.child) != e and e.parent in position and e.child in position]
    extra_from = {n.id: sum(e.parent == n.id for e in extra) for n in graph.nodes}
    hidden = {i: k for i, k in extra_from.items() if k > _MAX_DRAWN_LINKS}
    labels = {n.id: _label(n, tree, hidden.get(n.id, 0)) for n in graph.nodes if n.id in position}
    # Boxes start just left of their node's x; estimate where the longest one ends.
    right = max(position[i][0] - _INDENT + len(text) / _CHARS_PER_LEVEL + 0.1 for i, text in labels.items())
    fig, ax = plt.subplots(figsize=(_INCHES_PER_LEVEL * (right + 0.5), 0.42 * rows + 1.6), dpi=100)

    for child, edge in tree.items():
        (x0, y0), (x1, y1) = position[edge.parent], position[child]
        elbow = x0 + 1 - _INDENT - 0.12
        ax.plot([x0 - _INDENT, elbow, elbow, x1 - _INDENT], [y0, y0, y1, y1], color="#444444", lw=1, zorder=1)
    for edge in extra:
        if edge.parent in hidden:
            continue
        (x0, y0), (x1, y1) = position[edge.parent], position[edge.child]
        ax.annotate(
            "", xy=(x1 - _INDENT, y1), xytext=(x0 - _INDENT, y0), zorder=0,
            arrowprops=dict(arrowstyle="-", color="#aaaaaa", lw=0.9, ls="--",
                            connectionstyle="arc3,rad=0.15", shrinkA=6, shrinkB=6),
        )
    for node_id, text in labels.items():
        x, y = position[node_id]
        ax.text(
            x - _INDENT, y, text, ha="left", va="center", fontsize=9, color="white", zorder=3,
            bbox=dict(boxstyle="round,pad=0.3", fc=KIND_COLOURS[graph.by_id(node_id).kind], ec="none"),
        )

    kinds = [k for k in KIND_COLOURS if any(n.kind == k for n in graph.nodes)]
    handles = [Patch(color=KIND_COLOURS[k], label=_KIND_LABELS[k]) for k in kinds]
    if any(edge.parent not in hidden for edge in extra):
        handles.append(Line2D([], [], color="#aaaaaa", ls="--", label="another path to the same object"))
    if hidden:
        handles.append(Line2D([], [], ls="", label="[n]: n more paths to objects drawn elsewhere"))
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(3, len(handles)),
              fontsize=8, frameon=False)
    ax.set_xlim(-0.5, right)
    ax.set_ylim(rows - 0.4, -0.6)
    ax.axis("off")
    ax.set_title(title or f"Object graph of checkpoint {os.path.basename(path_text(ckpt_path))!r}")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------- reading paths as they are written


@contextlib.contextmanager
def reading(ckpt_path: str | os.PathLike) -> Iterator[tuple[str, Any]]:
    """``(path as the user wrote it, reader)`` for a checkpoint; errors name the user's path.

    Example:
        >>> with reading("tests/data/tf215/tfckpt_opt/ckpt") as (path, reader):
        ...     reader.get_tensor("model/layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE").shape
        (6,)
    """
    real = path_text(ckpt_path, "checkpoint path")
    yield real, open_checkpoint(real)  # which reads paths with [, *, ? as they are written


# ----------------------------------------------------------------- restore statuses, briefly

ASSERTIONS = ("assert_consumed", "assert_existing_objects_matched", "assert_nontrivial_match")


def brief_assertion(assertion: Callable[[], Any], width: int = 160) -> None:
    """Run one of a restore status's ``assert_*`` methods; re-raise its error on one short line.

    TensorFlow's message lists every unmatched object with its values, over
    many lines; this keeps the sentence that says what is wrong.

    Example:
        >>> def failing():
        ...     raise AssertionError("Found 2 Python objects that were not bound: [<tf.Variable 'w' numpy=1.0>]")
        >>> brief_assertion(failing)
        Traceback (most recent call last):
        ...
        AssertionError: Found 2 Python objects that were not bound
    """
    try:
        assertion()
    except AssertionError as error:
        text = " ".join(str(error).split()).split(": [<")[0]  # the list of objects comes in any order
        text = re.sub(r", (value|numpy)=[^>]*>", ">", text)
        raise AssertionError(text[:width] + (" ..." if len(text) > width else "")) from None


def assertion_verdicts(status: Any) -> dict[str, str]:
    """``"passes"`` or ``"raises"`` for each assertion of a restore status, in ``ASSERTIONS`` order.

    Example:
        >>> import os, tempfile
        >>> path = tf.train.Checkpoint(v=tf.Variable(1.0)).write(os.path.join(tempfile.mkdtemp(), "ckpt"))
        >>> status = tf.train.Checkpoint(v=tf.Variable(0.0), w=tf.Variable(0.0)).read(path)  # w: not saved
        >>> assertion_verdicts(status)
        {'assert_consumed': 'raises', 'assert_existing_objects_matched': 'raises',
         'assert_nontrivial_match': 'passes'}
    """
    verdicts = {}
    for name in ASSERTIONS:
        try:
            getattr(status, name)()
            verdicts[name] = "passes"
        except AssertionError:
            verdicts[name] = "raises"
    return verdicts
