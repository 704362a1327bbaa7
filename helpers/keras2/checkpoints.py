"""Keras 2 TF-format checkpoints into Keras 3 models: the two object graphs paired, loudly.

Keras 2 and Keras 3 save the same weights under different object paths: a
Keras 2 functional model writes ``layer_with_weights-1/kernel``, Keras 3
looks for ``_operations/2/_kernel``. ``tf.train.Checkpoint.restore`` then
restores nothing, or only the variables whose paths happen to agree, and
raises nothing. ``restore_keras2_checkpoint`` pairs the two object graphs
explicitly (``keras2_key_map``) and says what did not match;
``keras3_checkpoint_keys`` shows where Keras 3 would store each variable.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import keras
import tensorflow as tf

from helpers.errors import (
    VALUE_SUFFIX,
    Keras2MismatchError,
    NotACheckpointError,
    NotAKeras2CheckpointError,
)
from helpers.keras2.common import model_label, refresh_derived_state, require_built
from helpers.keras2.h5 import open_h5
from helpers.migration import RestoreReport, restore_name_based
from helpers.notebook import wrap_output
from helpers.object_graph import NameBasedCheckpointError, ObjectGraph, checkpoint_paths, read_object_graph

__all__ = ["Keras2RestoreReport", "keras2_key_map", "keras3_checkpoint_keys", "restore_keras2_checkpoint"]

# Edges of Keras 3 objects that Keras 2 never writes: their presence means Keras 3 wrote the file.
_KERAS3_EDGES = {"_functional", "_operations", "_kernel", "_embeddings", "_tracker"}
# Edges of Keras 2 models that lead to no weights of their own (or to weights reached another way).
_SKIPPED_EDGES = {"keras_api", "optimizer", "save_counter"}


# --------------------------------------------------------------------------- the report


@dataclass
class Keras2RestoreReport(RestoreReport):
    """What ``restore_keras2_checkpoint`` restored, and what it left alone (and why).

    ``missing`` names Keras 3 variables (by path) that found no value,
    ``unexpected`` checkpoint keys that found no variable, ``dropped`` the
    keys left behind on purpose (the optimizer with ``drop_optimizer=True``,
    the save counter). ``key_map`` is the pairing that was used. Printed,
    it shows keys without their ``/.ATTRIBUTES/VARIABLE_VALUE`` ending.
    """

    dropped: list[str] = field(default_factory=list)
    key_map: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        text = super().__str__()
        if self.dropped:
            text += "\n" + _dropped_line(self.dropped)
        return wrap_output(text.replace(VALUE_SUFFIX, ""))


def _dropped_line(keys: list[str]) -> str:
    optimizer = [key for key in keys if key.startswith("optimizer/") or "/.OPTIMIZER_SLOT/" in key]
    others = [key for key in keys if key not in optimizer]
    parts = [f"{len(optimizer)} optimizer value(s)"] if optimizer else []
    parts += [key.removesuffix(VALUE_SUFFIX) for key in others]
    return "left behind on purpose: " + ", ".join(parts)


# --------------------------------------------------------------------------- pairing the graphs


def _value_key(graph: ObjectGraph, node_id: int) -> str | None:
    return graph.by_id(node_id).checkpoint_key


def _own_variables(layer: Any) -> dict[str, Any]:
    """The variables a layer holds itself (not through sublayers), by their short name."""
    inner = set()
    if hasattr(layer, "_flatten_layers"):
        for sub in layer._flatten_layers(include_self=False, recursive=True):
            inner.update(id(v) for v in sub.weights)
    return {v.name: v for v in getattr(layer, "weights", []) if id(v) not in inner}


def _weighted_sublayers(layer: Any) -> list[Any]:
    """The layers a Keras 2 model numbers as ``layer_with_weights-0, -1, ...``."""
    return [sub for sub in getattr(layer, "layers", []) if sub.weights]


def _pair(graph: ObjectGraph, children: dict, node_id: int, obj: Any, pairs: dict[str, Any]) -> None:
    """Pair the values under ``node_id`` (a Keras 2 object) with the variables of ``obj`` (Keras 3)."""
    edges = children.get(node_id, {})
    numbered = sorted(
        (int(name.split("-", 1)[1]), child) for name, child in edges.items() if name.startswith("layer_with_weights-")
    )
    if numbered:  # a Keras 2 Sequential or functional model: its weighted layers, in order
        layers = _weighted_sublayers(obj)
        for index, child in numbered:
            if index < len(layers):
                _pair(graph, children, child, layers[index], pairs)
        return
    own = _own_variables(obj) if isinstance(obj, keras.layers.Layer) else {}
    for name, child in edges.items():
        if name in _SKIPPED_EDGES or name.startswith("layer-"):
            continue
        key = _value_key(graph, child)
        if key is not None:
            if name in own:
                pairs[key] = own[name]
            continue
        attribute = getattr(obj, name, None) if not name.isdigit() else _item(obj, int(name))
        if isinstance(attribute, (keras.layers.Layer, list, tuple)):
            _pair(graph, children, child, attribute, pairs)


def _item(obj: Any, index: int) -> Any:
    return obj[index] if isinstance(obj, (list, tuple)) and index < len(obj) else None


def _adjacency(graph: ObjectGraph) -> dict[int, dict[str, int]]:
    children: dict[int, dict[str, int]] = {}
    for edge in graph.edges:
        children.setdefault(edge.parent, {}).setdefault(edge.name, edge.child)
    return children


def _subtree_keys(graph: ObjectGraph, children: dict, start: int) -> set[str]:
    keys, seen, queue = set(), {start}, deque([start])
    while queue:
        node_id = queue.popleft()
        key = _value_key(graph, node_id)
        if key is not None:
            keys.add(key)
        for child in children.get(node_id, {}).values():
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return keys


def _read_keras2_graph(ckpt_path: str | os.PathLike) -> ObjectGraph:
    text = os.fspath(ckpt_path)
    if os.path.isfile(text) and _is_hdf5(text):
        raise NotAKeras2CheckpointError(ckpt_path, _h5_route(text))
    try:
        graph = read_object_graph(ckpt_path, include_empty=True)
    except NameBasedCheckpointError:
        raise NotAKeras2CheckpointError(
            ckpt_path, "it is name-based (a TF1 Saver wrote it): use helpers.migration.restore_name_based"
        ) from None
    names = {edge.name for edge in graph.edges}
    if names & _KERAS3_EDGES:
        # Checkpoint.save stores a save counter, Checkpoint.write does not: restore() expects one, read() not.
        saved = any(node.checkpoint_key and node.checkpoint_key.startswith("save_counter/") for node in graph.nodes)
        route = "restore(path).assert_consumed()" if saved else "read(path).assert_consumed() (written with " \
            "Checkpoint.write: no save counter, which restore() would expect)"
        # The objects go in under the names the file gives them (model=, optimizer=, ...): all must find theirs.
        roots = sorted(edge.name for edge in graph.children(0) if edge.name != "save_counter") or ["model"]
        arguments = ", ".join(f"{name}={name}" for name in roots)
        raise NotAKeras2CheckpointError(
            ckpt_path,
            "Keras 3 wrote it (its object graph has Keras 3 edges such as "
            f"{sorted(names & _KERAS3_EDGES)[0]!r}): restore it with tf.train.Checkpoint({arguments}).{route}",
        )
    return graph


def _is_hdf5(path: str) -> bool:
    with open(path, "rb") as file:
        return file.read(8) == b"\x89HDF\r\n\x1a\n"


def _h5_route(path: str) -> str:
    """What an HDF5 file given as a checkpoint is, and the recipe that reads it."""
    try:
        with open_h5(path) as file:
            group = file["model_weights"] if "model_weights" in file else file
            legacy = "layer_names" in group.attrs
    except NotACheckpointError as error:
        return f"an HDF5 file, not a TF-format checkpoint, and {error.reason}"
    if legacy:
        return ("an HDF5 file (a legacy Keras .h5), not a TF-format checkpoint: read it with "
                "convert_legacy_h5(path, 'm.weights.h5', model=model)")
    return ("an HDF5 file (a .weights.h5), not a TF-format checkpoint: read it with model.load_weights(path) "
            "(the file name must end in .weights.h5)")


def _model_node(graph: ObjectGraph, children: dict) -> int:
    # tf.train.Checkpoint(model=...) puts the model under the edge "model"; save_weights makes it the root.
    return children.get(0, {}).get("model", 0)


def _optimizer_node(children: dict, model_node: int) -> int | None:
    return children.get(0, {}).get("optimizer", children.get(model_node, {}).get("optimizer"))


def _optimizer_pairs(graph: ObjectGraph, children: dict, node: int, optimizer: Any) -> dict[str, Any]:
    """Keras 2's ``_iterations``, ``_learning_rate`` and ``_variables/1..N`` to a Keras 3 optimizer.

    Keras 2 and Keras 3 optimizers both create their slots variable by
    variable, in the order of the model's trainable variables (Adam: m, v,
    m, v, ...), so the N-th Keras 2 slot is the N-th Keras 3 slot.
    """
    pairs: dict[str, Any] = {}
    edges = children.get(node, {})
    counters = {"_iterations": optimizer.iterations}
    learning_rate = getattr(optimizer, "_learning_rate", None)
    if isinstance(learning_rate, keras.Variable):
        counters["_learning_rate"] = learning_rate
    for name, variable in counters.items():
        if name in edges and _value_key(graph, edges[name]):
            pairs[_value_key(graph, edges[name])] = variable
    special = {id(v) for v in counters.values()}
    slots = [v for v in optimizer.variables if id(v) not in special]
    numbered = sorted((int(n), c) for n, c in children.get(edges.get("_variables", -1), {}).items() if n.isdigit())
    saved_slots = [c for n, c in numbered if n > 0]  # _variables/0 is the iteration counter again
    for child, variable in zip(saved_slots, slots):
        key = _value_key(graph, child)
        if key is not None and key not in pairs:
            pairs[key] = variable
    return pairs


def keras2_key_map(ckpt_path: str | os.PathLike, model: Any) -> dict[str, Any]:
    """The ``{Keras 2 checkpoint key: Keras 3 variable}`` map for ``model``, from the two object graphs.

    A Keras 2 Sequential or functional model numbers its layers that have
    weights (``layer_with_weights-0``, ``-1``, ...); the N-th is paired with
    the N-th layer of ``model`` that has weights. Inside a layer, and in
    subclassed models (whose edges are attribute names), values are paired
    by name: ``kernel`` with the layer's variable named ``kernel``.
    BatchNormalization's moving statistics are variables like any other.
    Keys that find no variable are left out: compare with the checkpoint
    (``restore_keras2_checkpoint`` does).

    Example (``save_weights`` of Keras 2.15, read into a Keras 3 twin of the same architecture):
        >>> twin = keras.models.load_model("tests/data/tf215/functional_bn.h5", compile=False)
        >>> key_map = keras2_key_map("tests/data/tf215/ckpt_keras2_noopt/ckpt", twin)
        >>> key_map["layer_with_weights-1/moving_mean/.ATTRIBUTES/VARIABLE_VALUE"].path
        'bn/moving_mean'
    """
    require_built(model)
    graph = _read_keras2_graph(ckpt_path)
    children = _adjacency(graph)
    pairs: dict[str, Any] = {}
    _pair(graph, children, _model_node(graph, children), model, pairs)
    return pairs


def keras3_checkpoint_keys(model: Any, edge: str = "") -> dict[str, str]:
    """``{variable path: key}``: where ``tf.train.Checkpoint`` would store each variable of a Keras 3 model.

    ``edge`` is the name the model gets in the checkpoint (``"model"`` for
    ``tf.train.Checkpoint(model=model)``; empty for the model as the root).
    Paths are the shortest ones, as TensorFlow writes them.

    Example:
        >>> layer = keras.layers.Dense(2)
        >>> layer.build((None, 3))
        >>> sorted(keras3_checkpoint_keys(layer).values())
        ['_kernel/.ATTRIBUTES/VARIABLE_VALUE', 'bias/.ATTRIBUTES/VARIABLE_VALUE']
    """
    wanted = {id(v): v for v in model.weights}
    keys: dict[str, str] = {}
    for path, variable in checkpoint_paths(model, edge):
        if id(variable) in wanted:
            keys.setdefault(wanted[id(variable)].path, path + VALUE_SUFFIX)
    return keys


def restore_keras2_checkpoint(
    ckpt_path: str | os.PathLike,
    model: Any,
    strict: bool = True,
    *,
    optimizer: Any = None,
    drop_optimizer: bool = False,
) -> Keras2RestoreReport:
    """Restore a Keras 2 TF-format checkpoint into a built Keras 3 model of the same architecture, loudly.

    ``ckpt_path`` is what Keras 2's ``model.save_weights(prefix)`` or
    ``tf.train.Checkpoint(model=..., optimizer=...).save`` wrote (a prefix, or
    a folder for its newest checkpoint). Values are paired with variables by
    ``keras2_key_map``; BatchNormalization's moving statistics included.

    The optimizer's values (Keras 2 writes them even with ``save_weights``)
    must be dealt with on purpose: pass ``optimizer`` (a Keras 3 optimizer of
    the same kind; it is built for ``model.trainable_variables`` if needed) to
    carry its step, learning rate and slots over, or ``drop_optimizer=True`` to
    leave them behind (they are listed in ``report.dropped``). The save
    counter is always left behind, and listed.

    Keras 2 and Keras 3 both keep slots under ``optimizer/_variables/N``, but
    Keras 3 counts ``learning_rate`` among them: slots are paired by their
    place among the slots (not by ``N``), and every shape must agree; if one
    does not, no optimizer value is restored (``strict=False`` included).
    Layers that cache values computed from their variables (an adapted
    ``Normalization``) recompute them after the restore (``finalize_state``).

    Everything is checked before anything is assigned. With ``strict=True``,
    any Keras 3 variable without a value, any checkpoint value without a
    variable, and any wrong shape or dtype raises ``Keras2MismatchError`` (a
    ``CheckpointMismatchError``) naming them all, and nothing is restored.
    With ``strict=False`` the matching values are restored and the report
    (print it) lists the rest.

    Example (a Keras 2.15 ``save_weights`` of a compiled, trained model: its Adam state included):
        >>> twin = keras.models.load_model("tests/data/tf215/functional_bn.h5", compile=False)
        >>> saved = "tests/data/tf215/ckpt_keras2_opt/ckpt"
        >>> print(restore_keras2_checkpoint(saved, twin, drop_optimizer=True))
        restored 8 variable(s); nothing skipped
        left behind on purpose: 14 optimizer value(s)
        >>> restore_keras2_checkpoint(saved, twin)
        Traceback (most recent call last):
        ...
        helpers.errors.Keras2MismatchError: checkpoint 'tests/data/tf215/ckpt_keras2_opt/ckpt' does not match ...
          in the checkpoint but not in the target: 'optimizer/_iterations', 'optimizer/_learning_rate', ...
          hint: the checkpoint holds optimizer state: pass optimizer=<a Keras 3 optimizer> to carry it over, ...
    """
    require_built(model)
    graph = _read_keras2_graph(ckpt_path)
    children = _adjacency(graph)
    model_node = _model_node(graph, children)
    pairs: dict[str, Any] = {}
    _pair(graph, children, model_node, model, pairs)

    saved = {node.checkpoint_key: node for node in graph.nodes if node.checkpoint_key}
    dropped = {key for key in saved if key.startswith("save_counter/")}
    optimizer_node = _optimizer_node(children, model_node)
    optimizer_keys = _subtree_keys(graph, children, optimizer_node) if optimizer_node is not None else set()
    optimizer_keys |= {key for key in saved if "/.OPTIMIZER_SLOT/" in key}  # old-style (legacy) optimizers
    targets = [v for v in model.weights]
    optimizer_pairs: dict[str, Any] = {}
    if optimizer is not None:
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        if optimizer_node is not None:
            optimizer_pairs = _optimizer_pairs(graph, children, optimizer_node, optimizer)
            pairs.update(optimizer_pairs)
        targets += list(optimizer.variables)
    elif drop_optimizer:
        dropped |= optimizer_keys

    paired_ids = {id(v) for v in pairs.values()}
    missing = sorted({v.path for v in targets if id(v) not in paired_ids})
    unexpected = sorted(set(saved) - set(pairs) - dropped)
    shape_mismatches, dtype_mismatches = [], []
    for key, variable in sorted(pairs.items()):
        node = saved[key]
        if node.shape != tuple(variable.shape):
            shape_mismatches.append((key, node.shape, tuple(variable.shape)))
        elif node.dtype != tf.as_dtype(variable.dtype).name:
            dtype_mismatches.append((key, node.dtype, tf.as_dtype(variable.dtype).name))
    report = Keras2RestoreReport(
        missing=missing,
        unexpected=unexpected,
        shape_mismatches=shape_mismatches,
        dtype_mismatches=dtype_mismatches,
        dropped=sorted(dropped),
        key_map={key: variable.path for key, variable in sorted(pairs.items())},
    )
    if strict and not report.complete:
        hint = ""
        if optimizer is None and set(unexpected) & optimizer_keys:
            hint = ("the checkpoint holds optimizer state: pass optimizer=<a Keras 3 optimizer> to carry it "
                    "over, or drop_optimizer=True to leave it behind")
        raise Keras2MismatchError(
            os.fspath(ckpt_path), model_label(model), hint=hint, missing=missing, unexpected=unexpected,
            shape_mismatches=shape_mismatches, dtype_mismatches=dtype_mismatches,
        )
    bad = {key for key, *_ in shape_mismatches + dtype_mismatches}
    optimizer_ids = {id(v) for v in optimizer.variables} if optimizer is not None else set()
    if optimizer_pairs and (bad & set(optimizer_pairs) or set(unexpected) & optimizer_keys
                            or any(id(v) in optimizer_ids and v.path in missing for v in targets)):
        # Slots are paired by position: one that does not fit means the pairing is off. The optimizer's
        # state is restored whole or not at all (its model variables are restored all the same).
        bad |= set(optimizer_pairs)
        report.unexpected = sorted(set(report.unexpected) | (set(optimizer_pairs) - {k for k, *_ in shape_mismatches + dtype_mismatches}))
    matching = {key: variable for key, variable in pairs.items() if key not in bad}
    if matching:
        restored = restore_name_based(ckpt_path, matching, strict=False).restored
        report.restored = sorted(restored)
        # An adapted Normalization answers with what it computed from its old variables until told.
        refresh_derived_state(model, {id(matching[key]) for key in restored if key in matching})
    return report
