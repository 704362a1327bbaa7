"""What ``identify`` needs of a SavedModel, read from its files without TensorFlow.

``read_savedmodel_facts(folder)`` reads ``saved_model.pb`` with the wire-format reader
(``helpers.identify.protobuf``) and ``variables/variables.index`` with
``helpers.identify.bundle_index``, and returns the same facts ``helpers.saved_models``'
``describe_saved_model`` gives (signatures, tag-sets, TensorFlow version, saved values, assets),
plus the object graph's root and variables. It returns None for anything it does not read
plainly: a ``.pbtxt``, a damaged file, missing or short variables, a sliced variable, or an op
type not in ``KNOWN_OPS`` (only TensorFlow's registry knows whether it knows it). The caller then
reads the folder with TensorFlow, which gives the same answer and its exact errors.

Example:
    >>> facts = read_savedmodel_facts("tests/data/tf215/tf_module")
    >>> facts.signatures, facts.tag_sets, facts.tensorflow_version
    ({'serving_default': ['x']}, (('serve',),), '2.15.1')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from helpers.identify.bundle_index import OBJECT_GRAPH_KEY, read_bundle_index
from helpers.identify.known_ops import KNOWN_OPS
from helpers.identify.protobuf import fields

__all__ = ["SavedModelFacts", "read_savedmodel_facts"]

_INTERNAL_SIGNATURES = {"__saved_model_init_op", "__saved_model_train_op"}
_VARIABLE_KIND = 7  # SavedObject.variable (the kind oneof)


@dataclass
class SavedModelFacts:
    """The facts of a SavedModel folder ``identify`` names it by (``describe_saved_model``'s, and more)."""

    tensorflow_version: str = ""
    tag_sets: tuple[tuple[str, ...], ...] = ()
    tf1_meta_graph: bool = False
    signatures: dict[str, list[str]] = field(default_factory=dict)
    variable_count: int = 0
    variable_bytes: int = 0
    optimizer_values: int = 0
    metric_values: int = 0
    assets: list[str] = field(default_factory=list)
    missing_assets: list[str] = field(default_factory=list)
    unknown_ops: list[str] = field(default_factory=list)
    root: set[str] = field(default_factory=set)  # the object graph root's children's names
    graph_variables: int = 0  # variables in the first MetaGraph's object graph, else its variable ops


def _text(value: bytes) -> str:
    return value.decode("utf-8")


def _map_entry(entry: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, wire, item in fields(entry):
        if number == 1 and wire == 2:
            key = _text(item)
        elif number == 2 and wire == 2:
            value = item
    return key, value


def _node_ops(graph_def: bytes, ops: set[str], defined: set[str]) -> list[str]:
    """The op of each node of a GraphDef (in order); adds its functions' ops and names to the sets."""
    node_ops = []
    for number, wire, item in fields(graph_def):
        if number == 1 and wire == 2:  # NodeDef: op is field 2
            node_ops.append(next((_text(v) for n, w, v in fields(item) if n == 2 and w == 2), ""))
        elif number == 2 and wire == 2:  # FunctionDefLibrary
            for inner, inner_wire, function in fields(item):
                if inner != 1 or inner_wire != 2:
                    continue
                for part, part_wire, value in fields(function):
                    if part == 1 and part_wire == 2:  # OpDef signature: its name
                        defined.update(_text(v) for n, w, v in fields(value) if n == 1 and w == 2)
                    elif part == 3 and part_wire == 2:  # a NodeDef of the function
                        ops.update(_text(v) for n, w, v in fields(value) if n == 2 and w == 2)
    ops.update(node_ops)
    return node_ops


def _assets(meta_graph: list[tuple[int, int, object]]) -> list[str]:
    """Asset file names: TF2's asset_file_def, then TF1's ``saved_model_assets`` collection."""
    names = [_text(v) for number, wire, item in meta_graph if number == 6 and wire == 2
             for n, w, v in fields(item) if n == 2 and w == 2]
    for number, wire, item in meta_graph:
        if number != 4 or wire != 2:
            continue
        key, collection = _map_entry(item)
        if key != "saved_model_assets":
            continue
        for kind, kind_wire, any_list in fields(collection):
            if kind != 5 or kind_wire != 2:
                continue
            for n, w, packed in fields(any_list):
                parts = {p: v for p, pw, v in fields(packed) if pw == 2}
                if n == 1 and _text(parts.get(1, b"")).split("/")[-1] == "tensorflow.AssetFileDef":
                    names += [_text(v) for p, pw, v in fields(parts.get(2, b"")) if p == 2 and pw == 2]
    return names


def _signature(definition: bytes) -> list[str]:
    return sorted(_map_entry(item)[0] for number, wire, item in fields(definition) if number == 1 and wire == 2)


def _object_graph(graph: bytes) -> tuple[int, set[str], int]:
    """Nodes of a SavedObjectGraph, its root's children's names, and how many nodes are variables."""
    nodes = [item for number, wire, item in fields(graph) if number == 1 and wire == 2]
    root = set()
    if nodes:
        for number, wire, reference in fields(nodes[0]):
            if number == 1 and wire == 2:
                root.update(_text(v) for n, w, v in fields(reference) if n == 2 and w == 2)
    variables = sum(any(n == _VARIABLE_KIND and w == 2 for n, w, _ in fields(node)) for node in nodes)
    return len(nodes), root, variables


def _variables(folder: str, facts: SavedModelFacts) -> bool:
    """Fill in the saved values from ``variables/``; False when TensorFlow must read them."""
    prefix = os.path.join(folder, "variables", "variables")
    if not os.path.isfile(prefix + ".index"):
        listing = os.listdir(os.path.dirname(prefix)) if os.path.isdir(os.path.dirname(prefix)) else []
        return not any(name.startswith("variables.data-") for name in listing)
    index = read_bundle_index(prefix + ".index")
    if index.short_data_files(prefix):
        return False
    keys = [key for key in index.entries if key != OBJECT_GRAPH_KEY]
    facts.variable_count, facts.variable_bytes = len(keys), index.value_bytes()
    facts.optimizer_values = sum(key.startswith("optimizer/") or ".OPTIMIZER_SLOT" in key for key in keys)
    facts.metric_values = sum(key.startswith("keras_api/metrics/") for key in keys)
    return True


def read_savedmodel_facts(folder: str) -> SavedModelFacts | None:
    """The facts of the SavedModel in ``folder``, or None when TensorFlow must read it (see the module)."""
    path = os.path.join(folder, "saved_model.pb")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as file:
            data = file.read()
        meta_graphs = [list(fields(item)) for number, wire, item in fields(data) if number == 2 and wire == 2]
        if not meta_graphs:
            return None
        facts = SavedModelFacts()
        ops: set[str] = set()
        defined: set[str] = set()
        tag_sets, asset_names = [], {}
        for position, meta_graph in enumerate(meta_graphs):
            info = b"".join(item for number, wire, item in meta_graph if number == 1 and wire == 2)
            tags = tuple(_text(v) for n, w, v in fields(info) if n == 4 and w == 2)
            tag_sets.append(tags)
            if position == 0:
                facts.tensorflow_version = next((_text(v) for n, w, v in fields(info) if n == 5 and w == 2), "")
            signatures = dict(_map_entry(item) for number, wire, item in meta_graph if number == 5 and wire == 2)
            for name in sorted(signatures):
                if name not in _INTERNAL_SIGNATURES:
                    facts.signatures[name] = _signature(signatures[name])
            graph_def = b"".join(item for number, wire, item in meta_graph if number == 2 and wire == 2)
            node_ops = _node_ops(graph_def, ops, defined)
            graph = b"".join(item for number, wire, item in meta_graph if number == 7 and wire == 2)
            count, root, variables = _object_graph(graph)
            facts.tf1_meta_graph |= not count
            if position == 0:
                facts.root = root
                facts.graph_variables = variables or sum(op in ("VarHandleOp", "VariableV2") for op in node_ops)
            for name in _assets(meta_graph):
                asset_names.setdefault(name)
        unknown = {op for op in ops - defined if op}
        if not unknown <= KNOWN_OPS or not _variables(folder, facts):
            return None
        facts.tag_sets = tuple(tag_sets)
        facts.assets = list(asset_names)
        facts.missing_assets = [name for name in asset_names
                                if not os.path.isfile(os.path.join(folder, "assets", name))]
        return facts
    except (ValueError, UnicodeDecodeError, OSError):
        return None
