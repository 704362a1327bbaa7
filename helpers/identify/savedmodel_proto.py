"""What ``identify`` needs of a SavedModel, read from its files without TensorFlow.

``read_savedmodel_facts(folder)`` parses the whole ``saved_model.pb`` with protobuf's parser and
TensorFlow's message types (``helpers.identify.tf_protos``: no TensorFlow import), reads
``variables/variables.index`` with ``helpers.identify.bundle_index``, and returns the same facts
``helpers.saved_models``' ``describe_saved_model`` gives (signatures, tag-sets, TensorFlow
version, saved values, assets), plus the object graph's root and variables. A ``saved_model.pb``
that does not parse raises ``NotASavedModelError`` in ``read_saved_model``'s words. It returns
None for anything else it does not read plainly: a ``.pbtxt``, no MetaGraphDef, a damaged
index, missing or short variables, a sliced variable, or an op type not in ``KNOWN_OPS`` (only
TensorFlow's registry knows whether it knows it). The caller then reads the folder with
TensorFlow, which gives the same answer and its exact errors.

Example:
    >>> facts = read_savedmodel_facts("tests/data/tf215/tf_module")
    >>> facts.signatures, facts.tag_sets, facts.tensorflow_version
    ({'serving_default': ['x']}, (('serve',),), '2.15.1')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError

from helpers.errors import NotASavedModelError, first_line
from helpers.identify.bundle_index import OBJECT_GRAPH_KEY, read_bundle_index
from helpers.identify.known_ops import KNOWN_OPS
from helpers.identify.tf_protos import parse

__all__ = ["SavedModelFacts", "read_savedmodel_facts"]

_INTERNAL_SIGNATURES = {"__saved_model_init_op", "__saved_model_train_op"}


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


def _assets(meta_graph: Any) -> list[str]:
    """Asset file names: TF2's asset_file_def, then TF1's ``saved_model_assets`` collection."""
    names = [asset.filename for asset in meta_graph.asset_file_def]
    if "saved_model_assets" in meta_graph.collection_def:
        for packed in meta_graph.collection_def["saved_model_assets"].any_list.value:
            if packed.type_url.split("/")[-1] == "tensorflow.AssetFileDef":
                names.append(parse(packed.value, "tensorflow.AssetFileDef").filename)
    return names


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
    """The facts of the SavedModel in ``folder``, or None when TensorFlow must read it (see the module).

    Raises ``NotASavedModelError`` (TensorFlow's words) when ``saved_model.pb`` does not parse.
    """
    path = os.path.join(folder, "saved_model.pb")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as file:
            proto = parse(file.read(), "tensorflow.SavedModel")
    except DecodeError as error:  # helpers.saved_models.read_saved_model's words
        raise NotASavedModelError(folder, f"its saved_model.pb is damaged or truncated ({first_line(error)})") from None
    except OSError:
        return None
    if not proto.meta_graphs:
        return None
    facts = SavedModelFacts(tensorflow_version=proto.meta_graphs[0].meta_info_def.tensorflow_version)
    ops: set[str] = set()
    defined: set[str] = set()
    tag_sets, asset_names = [], {}
    for position, meta_graph in enumerate(proto.meta_graphs):
        tag_sets.append(tuple(meta_graph.meta_info_def.tags))
        for name in sorted(meta_graph.signature_def):
            if name not in _INTERNAL_SIGNATURES:
                facts.signatures[name] = sorted(meta_graph.signature_def[name].inputs)
        graph_def = meta_graph.graph_def
        node_ops = [node.op for node in graph_def.node]
        ops.update(node_ops)
        for function in graph_def.library.function:
            defined.add(function.signature.name)
            ops.update(node.op for node in function.node_def)
        nodes = meta_graph.object_graph_def.nodes
        facts.tf1_meta_graph |= not nodes
        if position == 0:
            facts.root = {child.local_name for child in nodes[0].children} if nodes else set()
            facts.graph_variables = (sum(node.WhichOneof("kind") == "variable" for node in nodes)
                                     or sum(op in ("VarHandleOp", "VariableV2") for op in node_ops))
        for name in _assets(meta_graph):
            asset_names.setdefault(name)
    unknown = {op for op in ops - defined if op}
    try:
        if not unknown <= KNOWN_OPS or not _variables(folder, facts):
            return None
    except (ValueError, OSError):
        return None
    facts.tag_sets = tuple(tag_sets)
    facts.assets = list(asset_names)
    facts.missing_assets = [name for name in asset_names
                            if not os.path.isfile(os.path.join(folder, "assets", name))]
    return facts
