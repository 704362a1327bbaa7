"""A checkpoint's object graph (``TrackableObjectGraph``), read without TensorFlow.

``read_graph_facts(data)`` parses the proto's wire format and returns what naming a checkpoint
needs: the names of the edges between the objects that were saved, and whether one of them is an
optimizer. The kinds follow ``helpers.object_graph.read_object_graph(..., include_empty=True)``
(an optimizer has slot variables or an ``_iterations``/``iter``/``iterations`` child, and is
neither the root, a variable nor a slot). ``ValueError`` for anything it does not read plainly
(an unknown field type, a node id out of range, an empty graph): the caller asks TensorFlow then.

Example:
    >>> from helpers.identify.bundle_index import OBJECT_GRAPH_KEY, read_bundle_index, read_string_scalar
    >>> prefix = "tests/data/tf215/tfckpt_opt/ckpt"
    >>> data = read_string_scalar(prefix, read_bundle_index(prefix + ".index"), OBJECT_GRAPH_KEY)
    >>> facts = read_graph_facts(data)
    >>> facts.has_optimizer, sorted(name for name in facts.edge_names if name.startswith("layer"))[:2]
    (True, ['layer-0', 'layer-1'])
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from helpers.identify.protobuf import fields

__all__ = ["GraphFacts", "read_graph_facts"]

_OPTIMIZER_MARKERS = {"_iterations", "iter", "iterations"}  # as helpers.object_graph recognises one


@dataclass(frozen=True)
class GraphFacts:
    """The edge names between saved objects, and whether an optimizer is among them."""

    edge_names: frozenset[str]
    has_optimizer: bool


@dataclass
class _Node:
    children: list[tuple[int, str]]
    attributes: list[tuple[str, str]]  # (name, checkpoint_key)
    slots: list[tuple[int, str, int]]  # (original variable, slot name, slot variable)


def _text(value: object) -> str:
    if not isinstance(value, bytes):
        raise ValueError("a string field of another wire type")
    return value.decode("utf-8")


def _int32(value: object) -> int:
    if not isinstance(value, int) or value >= 1 << 31:
        raise ValueError("a node id out of range")
    return value


def _message(data: bytes, wanted: dict[int, str]) -> dict[str, object]:
    """The fields numbered in ``wanted`` (last one wins), others skipped."""
    found: dict[str, object] = {}
    for number, _, value in fields(data):
        if number in wanted:
            found[wanted[number]] = value
    return found


def _node(data: bytes) -> _Node:
    node = _Node([], [], [])
    for number, wire, value in fields(data):
        if number in (1, 2, 3) and wire != 2:
            raise ValueError("a message field of another wire type")
        if number == 1:
            child = _message(value, {1: "id", 2: "name"})
            node.children.append((_int32(child.get("id", 0)), _text(child.get("name", b""))))
        elif number == 2:
            attribute = _message(value, {1: "name", 3: "key"})
            node.attributes.append((_text(attribute.get("name", b"")), _text(attribute.get("key", b""))))
        elif number == 3:
            slot = _message(value, {1: "original", 2: "name", 3: "slot"})
            node.slots.append((_int32(slot.get("original", 0)), _text(slot.get("name", b"")),
                               _int32(slot.get("slot", 0))))
    return node


def _reachable(start: set[int], edges: list[tuple[int, int, str]], blocked: set[int] = frozenset()) -> set[int]:
    children: dict[int, list[int]] = {}
    for parent, child, _ in edges:
        children.setdefault(parent, []).append(child)
    seen, stack = set(start), list(start)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in seen and child not in blocked:
                seen.add(child)
                stack.append(child)
    return seen


def read_graph_facts(data: bytes) -> GraphFacts:
    """The edge names and optimizer presence of a serialized ``TrackableObjectGraph``."""
    nodes = []
    for number, wire, value in fields(data):
        if number == 1:
            if wire != 2:
                raise ValueError("a node of another wire type")
            nodes.append(_node(value))
    count = len(nodes)
    if not count:
        raise ValueError("an empty object graph")
    ids = [child for node in nodes for child, _ in node.children]
    ids += [i for node in nodes for original, _, slot in node.slots for i in (original, slot)]
    if any(not 0 <= i < count for i in ids):
        raise ValueError("a node id out of range")
    edges = [(parent, child, name) for parent, node in enumerate(nodes) for child, name in node.children]
    reached = _reachable({0}, edges)  # every node with a path from the root
    slot_ids = set()
    for parent, node in enumerate(nodes):
        for original, name, slot in node.slots:
            slot_ids.add(slot)
            edges += [(parent, slot, name), (original, slot, name)]
    values = {i: next((key for name, key in node.attributes if name == "VARIABLE_VALUE"),
                      node.attributes[0][1] if node.attributes else None) for i, node in enumerate(nodes)}
    optimizers = {i for i, node in enumerate(nodes)
                  if node.slots or {name for _, name in node.children} & _OPTIMIZER_MARKERS}
    if optimizers:  # variables reached only through an optimizer, other than its direct children
        alone = _reachable({0}, edges, blocked=optimizers)
        direct = {child for parent, child, _ in edges if parent in optimizers}
        under = _reachable(set(optimizers), edges)
        slot_ids |= {i for i in range(count) if values[i] is not None and i in under
                     and i not in alone and i not in direct}
    kept = {i for i in range(count) if i in reached or values[i] is not None}
    variables = {i for i, node in enumerate(nodes)
                 if values[i] is not None and any(name == "VARIABLE_VALUE" for name, _ in node.attributes)}
    has_optimizer = any(i in kept and i != 0 and i not in slot_ids and i not in variables
                        for i in optimizers)
    names = frozenset(name for parent, child, name in edges if parent in kept and child in kept)
    return GraphFacts(names, has_optimizer)
