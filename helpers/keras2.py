"""Carry Keras 2 (``tf.keras`` before TF 2.16, now ``tf-keras``) models and checkpoints into Keras 3.

Keras 2 and Keras 3 save the same weights under different object paths: a
Keras 2 functional model writes ``layer_with_weights-1/kernel``, Keras 3
looks for ``_operations/2/_kernel``. ``tf.train.Checkpoint.restore`` then
restores nothing, or only the variables whose paths happen to agree, and
raises nothing. The recipes here pair the two object graphs explicitly and
say what did not match::

    report = restore_keras2_checkpoint("k2/weights", model, drop_optimizer=True)
    report = restore_keras2_checkpoint("k2/train-3", model, optimizer=keras.optimizers.Adam())
    convert_legacy_h5("k2/model.h5", "k3/model.keras")       # a Keras 2 .h5, re-saved by Keras 3
    renumber_keras2_zip_weights("k213/m.keras", "k3/m.weights.h5")  # a Keras 2.12/2.13 .keras, for load_weights
    run = run_keras2("model = keras.models.load_model('k2/sm'); model.save_weights('k3/m.weights.h5')")

``run_keras2`` runs Keras 2 code (``tf-keras`` with ``TF_USE_LEGACY_KERAS=1``)
in a subprocess: the one-time bridge for files only Keras 2 can open.
None of the recipes overwrites an existing file.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib.util
import inspect
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import (
    VALUE_SUFFIX,
    CheckpointMismatchError,
    Keras2ExportError,
    Keras2MismatchError,
    Keras2RunError,
    LegacyModelError,
    ModelNotBuiltError,
    NotACheckpointError,
    NotAKeras2CheckpointError,
    NotWritableError,
    first_line,
)
from helpers.files import checkpoint_files_at, path_text, refuse_existing, refuse_unwritable
from helpers.keras1 import keras1_hard_sigmoid, keras3_hard_sigmoid_problems, layer_configs
from helpers.migration import RestoreReport, restore_name_based
from helpers.notebook import wrap_output
from helpers.object_graph import NameBasedCheckpointError, ObjectGraph, checkpoint_paths, read_object_graph

__all__ = [
    "KERAS2_ENVIRONMENT",
    "Keras2Export",
    "Keras2ExportError",
    "Keras2MismatchError",
    "Keras2RestoreReport",
    "tf215_reads",
    "Keras2Run",
    "Keras2RunError",
    "LegacyModelError",
    "ModelNotBuiltError",
    "NotAKeras2CheckpointError",
    "convert_legacy_h5",
    "describe_legacy_h5",
    "export_for_keras2",
    "keras2_model_config",
    "keras2_key_map",
    "keras3_checkpoint_keys",
    "legacy_custom_objects",
    "renumber_keras2_zip_weights",
    "restore_keras2_checkpoint",
    "run_keras2",
]

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
        with _open_h5(path) as file:
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


def _describe(model: Any) -> str:
    return f"{type(model).__name__} {model.name!r}"


def _require_built(model: Any) -> None:
    if not isinstance(model, keras.layers.Layer):
        raise TypeError(f"model must be a Keras 3 model or layer, not {type(model).__name__}")
    if not model.weights:
        raise ModelNotBuiltError(
            f"{_describe(model)} has no variables yet: build it first (call it on a batch, or give "
            "Sequential a keras.Input) so that every variable exists before restoring"
        )


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

    Example:
        >>> sorted(keras2_key_map("k2/weights", model))[:1]     # doctest: +SKIP
        ['layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE']
    """
    _require_built(model)
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

    Example:
        >>> print(restore_keras2_checkpoint("k2/weights", model, drop_optimizer=True))  # doctest: +SKIP
        restored 9 variable(s)
        left behind on purpose: 16 optimizer value(s)
    """
    _require_built(model)
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
            os.fspath(ckpt_path), _describe(model), hint=hint, missing=missing, unexpected=unexpected,
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
        _refresh_derived_state(model, {id(matching[key]) for key in restored if key in matching})
    return report


# --------------------------------------------------------------------------- legacy .h5 files


@dataclass(frozen=True)
class LegacyH5:
    """What a legacy Keras ``.h5`` file holds; shows itself as a short text."""

    keras_version: str
    backend: str
    has_model: bool
    has_optimizer: bool
    layers: dict[str, list[tuple[str, tuple[int, ...]]]]
    # What in the architecture Keras 3 cannot rebuild (a time-major or CuDNN layer), one line each.
    cannot_rebuild: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        kind = "a whole model (architecture + weights)" if self.has_model else "weights only"
        lines = [f"written by Keras {self.keras_version} ({self.backend}): {kind}"
                 + (", with optimizer state" if self.has_optimizer else "")]
        for layer, weights in self.layers.items():
            shown = ", ".join(f"{name} {shape}" for name, shape in weights) or "-"
            lines.append("  " + textwrap.shorten(f"{layer}: {shown}", 96))
        if self.cannot_rebuild:
            lines.append("Keras 3 cannot rebuild it as it is (convert_legacy_h5 names the routes that work):")
            for problem in self.cannot_rebuild:
                lines += textwrap.wrap(problem, 98, initial_indent="  ! ", subsequent_indent="    ")
        return "\n".join(lines)


_DAMAGED = "a damaged HDF5 file (truncated or corrupted: its signature is there, its contents are not): copy it again"


@contextlib.contextmanager
def _open_h5(path: str | os.PathLike):
    """An ``h5py.File``, read-only; every way h5py fails on reading it becomes ``NotACheckpointError``."""
    import h5py

    text = os.fspath(path)
    if not os.path.isfile(text):
        raise NotACheckpointError(text, _not_a_file_reason(text))
    try:
        file = h5py.File(text, "r")
    except OSError:
        raise NotACheckpointError(text, _not_hdf5_reason(text)) from None
    try:
        with file:
            yield file
    except (OSError, RuntimeError, KeyError) as error:  # h5py on a damaged header, group or dataset
        raise NotACheckpointError(text, f"{_DAMAGED} ({first_line(error)})") from None


def _not_a_file_reason(path: str) -> str:
    """What a path that is no file is (a checkpoint prefix, a SavedModel, a folder), and what reads it."""
    if os.path.isdir(path):
        if any(os.path.isfile(os.path.join(path, name)) for name in ("saved_model.pb", "saved_model.pbtxt")):
            return ("a SavedModel folder, not a legacy .h5: serve it with keras.layers.TFSMLayer(path, "
                    "call_endpoint='serving_default') (its outputs come as a dict)")
        if os.path.isfile(os.path.join(path, "checkpoint")) or any(n.endswith(".index") for n in os.listdir(path)):
            return ("a folder of TF-format checkpoints, not a legacy .h5: restore_keras2_checkpoint(path, twin) "
                    "reads its newest one into a Keras 3 twin")
        return "a folder, not a legacy .h5 file"
    if checkpoint_files_at(path):
        return ("a TF-format checkpoint prefix (Keras 2 save_weights or tf.train.Checkpoint), not a legacy .h5: "
                "restore it into a Keras 3 twin with restore_keras2_checkpoint(path, twin)")
    return "no such file"


def _not_hdf5_reason(path: str) -> str:
    """Why h5py cannot open ``path``, and the route that works for what it is."""
    with open(path, "rb") as file:
        head = file.read(8)
    if head.startswith(b"\x89HDF"):
        return _DAMAGED
    if head.startswith(b"PK"):
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                version = json.loads(archive.read("metadata.json")).get("keras_version", "?")
        except (zipfile.BadZipFile, KeyError, ValueError):
            return "a zip file that is not a readable .keras file (truncated or another archive)"
        if version.startswith(("2.12", "2.13")):  # their layers keyed with gaps: dense, dense_2
            return (f"a .keras file written by Keras {version}, which neither keras.models.load_model nor "
                    "twin.load_weights(path) reads (its layers are numbered otherwise than Keras 3 counts): "
                    + _RENUMBER_ROUTE)
        if version.startswith("2."):
            return (f"a .keras file written by Keras {version}, which keras.models.load_model cannot rebuild: "
                    "build the model in Keras 3 code and read the weights with twin.load_weights(path)")
        return "a Keras 3 .keras file (a zip), not a legacy .h5: load it with keras.models.load_model"
    return "not an HDF5 file (a legacy Keras .h5 is HDF5)"


def describe_legacy_h5(path: str | os.PathLike) -> LegacyH5:
    """Read a legacy ``.h5`` written by Keras 2's ``model.save`` or ``save_weights``: version, layers, weights.

    For a whole model, ``cannot_rebuild`` names the layers Keras 3 cannot
    rebuild as they are (``time_major=True``, CuDNN layers); ``convert_legacy_h5``
    refuses those files and names the routes that work. Raises
    ``NotACheckpointError`` for a missing file, a file that is not HDF5, or a
    Keras 3 ``.weights.h5`` file (another layout).

    Example:
        >>> describe_legacy_h5("k2/model.h5")      # doctest: +SKIP
        written by Keras 2.21.0 (tensorflow): a whole model (architecture + weights), with optimizer state
          dense: dense/kernel:0 (5, 2), dense/bias:0 (2,)
    """
    with _open_h5(path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        if "layer_names" not in group.attrs:
            raise NotACheckpointError(os.fspath(path), _new_layout_reason(file))
        layers = {}
        for layer in _text(group.attrs["layer_names"]):
            names = _text(group[layer].attrs.get("weight_names", []))
            layers[layer] = [(name, tuple(group[layer][name].shape)) for name in names]
        version = group.attrs.get("keras_version", file.attrs.get("keras_version", b"?"))
        backend = group.attrs.get("backend", file.attrs.get("backend", b"?"))
        problems = []
        if "model_config" in file.attrs:
            try:
                problems = _rebuild_problems(json.loads(_text([file.attrs["model_config"]])[0]))
            except ValueError:  # a damaged configuration: the weights are still listed
                pass
        return LegacyH5(
            keras_version=_text([version])[0],
            backend=_text([backend])[0],
            has_model="model_config" in file.attrs,
            has_optimizer="optimizer_weights" in file,
            layers=layers,
            cannot_rebuild=problems,
        )


def _new_layout_reason(file: Any) -> str:
    """Who wrote an HDF5 file without ``layer_names`` (the ``.weights.h5`` layout), and what reads it."""
    if _OLD_LAYERS in file:
        if not _renumbering(file[_OLD_LAYERS]):
            return ("not a legacy Keras .h5: a .weights.h5 file of Keras 2.12-2.14 (layers under "
                    "'_layer_checkpoint_dependencies') numbered as Keras 3 counts: it loads into a twin with "
                    "model.load_weights(path)")
        return ("not a legacy Keras .h5: a .weights.h5 file in the layout of Keras 2.12/2.13, whose layers Keras 3 "
                "counts otherwise: " + _RENUMBER_ROUTE)
    if "vars" in file and "name" in file["vars"].attrs:  # Keras 3 records each object's name; Keras 2 does not
        return "not a legacy Keras .h5: a Keras 3 .weights.h5 file: it loads with model.load_weights(path)"
    return ("not a legacy Keras .h5: a .weights.h5 file written by Keras 2.14/2.15 (tf.keras' new layout; the "
            "file records no version): it loads into a twin with model.load_weights(path)")


# Keras 3's load_weights route for the weights of a Keras 2.12/2.13 .keras zip (the recipe below).
_RENUMBER_ROUTE = ("renumber_keras2_zip_weights(path, 'm.weights.h5') writes its weights with Keras 3's layer "
                   "numbers, then twin.load_weights('m.weights.h5')")
_OLD_LAYERS = "_layer_checkpoint_dependencies"  # where Keras 2.12 to 2.14 key a model's layers in a weights file


def _renumbering(layers: Any) -> dict[str, str]:
    """``{key: new key}`` for the layer groups of a Keras 2 weights file whose numbers Keras 3 counts otherwise.

    Keras 3 keys the layers of each kind ``dense``, ``dense_1``, ``dense_2``, ... in
    model order; Keras 2.12/2.13 leave gaps (``dense``, ``dense_2``). The layers of
    each kind keep their order, numbered again without gaps.
    """
    kinds: dict[str, list[str]] = {}
    for key in layers:
        kinds.setdefault(re.sub(r"_\d+$", "", key), []).append(key)
    moves = {}
    for kind, keys in kinds.items():
        keys.sort(key=lambda key: -1 if key == kind else int(key[len(kind) + 1:]))
        for number, key in enumerate(keys):
            new = f"{kind}_{number}" if number else kind
            if new != key:
                moves[key] = new
    return moves


def _keras2_weights_bytes(path: str) -> bytes:
    """The bytes of the weights file a Keras 2 ``.keras`` zip holds (or of such a ``.weights.h5`` itself)."""
    import zipfile

    if not os.path.isfile(path):
        raise NotACheckpointError(path, _not_a_file_reason(path))
    with open(path, "rb") as file:
        head = file.read(8)
    if head.startswith(b"\x89HDF"):
        with _open_h5(path) as file:
            if "layer_names" in file.attrs or "model_weights" in file:
                raise NotACheckpointError(path, "a legacy Keras .h5 (HDF5), not a Keras 2.12/2.13 .keras zip: "
                                                "convert_legacy_h5(path, 'm.keras') rebuilds it in Keras 3 "
                                                "(model=twin for weights only)")
            if _OLD_LAYERS not in file:
                raise NotACheckpointError(path, _new_layout_reason(file))
        with open(path, "rb") as file:
            return file.read()
    if not head.startswith(b"PK"):
        raise NotACheckpointError(path, "not a .keras zip (nor an HDF5 weights file)")
    try:
        with zipfile.ZipFile(path) as archive:
            version = json.loads(archive.read("metadata.json")).get("keras_version", "?")
            data = archive.read("model.weights.h5")
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError):
        raise NotACheckpointError(path, "a zip file that is not a readable .keras file (truncated or another "
                                        "archive, or without its model.weights.h5): copy it again") from None
    if not str(version).startswith("2."):
        raise NotACheckpointError(path, f"a .keras file written by Keras {version}, not Keras 2: "
                                        "keras.models.load_model(path) reads it")
    return data


def renumber_keras2_zip_weights(path: str | os.PathLike, out: str | os.PathLike) -> str:
    """Write the weights of a Keras 2.12/2.13 ``.keras`` zip as a ``.weights.h5`` that Keras 3 loads.

    Keras 3 rebuilds no Keras 2 ``.keras`` file, and ``twin.load_weights(path)``
    fails on those of Keras 2.12 and 2.13 ("Layer 'logits' expected 2 variables,
    but received 0"): their weights file keys the layers of each kind with gaps
    (``dense``, ``dense_2``) where Keras 3 counts ``dense``, ``dense_1``. This
    recipe copies the weights out of the zip into ``out`` and renumbers the
    layers of each kind in the order of their numbers; load it with
    ``twin.load_weights(out)`` into a Keras 3 model of the same architecture,
    and prove the pairing by equal outputs. The optimizer's and the metrics'
    state are left out (a Keras 3 optimizer has one more variable,
    ``learning_rate``, and skips Keras 2's with a warning): compile the twin afresh.
    ``path`` may also be such a weights file taken out of the zip.

    Refuses, before writing anything: an ``out`` whose name does not end in
    ``.weights.h5`` (``ValueError``) or that exists (``WouldOverwriteError``);
    a file that is no Keras 2 ``.keras`` zip, or one whose layers Keras 3
    already counts right (2.14, 2.15: ``twin.load_weights(path)`` reads it),
    or a model with a nested model inside (``NotACheckpointError`` naming the
    route). The input file is never changed. Returns ``out``.

    Example:
        >>> renumber_keras2_zip_weights("k213/model.keras", "k3/model.weights.h5")  # doctest: +SKIP
        'k3/model.weights.h5'
        >>> twin.load_weights("k3/model.weights.h5")                                # doctest: +SKIP
    """
    import io

    import h5py

    source = path_text(path, "Keras 2 .keras file")
    target = path_text(out, "output path")
    if not target.endswith(".weights.h5"):
        raise ValueError(f"out must end in .weights.h5 (the name Keras 3's load_weights reads), got {target!r}")
    refuse_existing(target, "a weights file")
    refuse_unwritable(target)
    buffer = io.BytesIO(_keras2_weights_bytes(source))
    try:
        with h5py.File(buffer, "r+") as weights:
            layers = weights.get(_OLD_LAYERS)
            if not isinstance(layers, h5py.Group):
                raise NotACheckpointError(source, "its weights file has no '_layer_checkpoint_dependencies' "
                                                  "group of layers (not the Keras 2.12-2.14 layout): "
                                                  "twin.load_weights(path) reads a .keras file of Keras 3 or 2.15")
            nested = sorted(key for key, group in layers.items()
                            if isinstance(group, h5py.Group) and (_OLD_LAYERS in group or "layers" in group))
            if nested:
                raise NotACheckpointError(source, f"its layers {nested} are models with layers of their own, "
                                                  "whose numbering this recipe does not know: open it once with "
                                                  "the Keras that wrote it, save_weights('m.h5'), then "
                                                  "convert_legacy_h5('m.h5', 'm.weights.h5', model=twin)")
            moves = _renumbering(layers)
            if not moves:
                raise NotACheckpointError(source, "its layers are numbered as Keras 3 counts them already (as "
                                                  "Keras 2.14 writes them): twin.load_weights(path) reads it as it is")
            for key, new in moves.items():  # through a scratch group: dense_2 -> dense_1 may free a name
                layers.move(key, f"_renumbering/{new}")
            for key in list(layers["_renumbering"]):
                layers.move(f"_renumbering/{key}", key)
            del layers["_renumbering"]
            weights.move(_OLD_LAYERS, "layers")  # Keras 3's own name for the group
            for state in ("optimizer", "metrics"):
                if state in weights:
                    del weights[state]
    except (OSError, RuntimeError, KeyError) as error:  # h5py on a damaged weights file inside the zip
        raise NotACheckpointError(source, f"its weights file is damaged ({first_line(error)}): copy it again") from None
    folder = os.path.dirname(target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(target, "xb") as file:  # written in one go, from the finished copy in memory
        file.write(buffer.getvalue())
    return target


def _text(values: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def convert_legacy_h5(
    h5_path: str | os.PathLike,
    out_path: str | os.PathLike,
    model: Any = None,
    *,
    safe_mode: bool = True,
    custom_objects: dict[str, Any] | None = None,
) -> str:
    """Re-save a Keras 2 legacy ``.h5`` in a Keras 3 format (``.keras`` or ``.weights.h5``), checked.

    Without ``model`` the ``.h5`` must hold a whole model: Keras 3 rebuilds it
    from the stored architecture, with the Keras 2 arguments it no longer
    takes patched (``legacy_custom_objects``) and nested models renumbered
    (``compile=False``: the Keras 2 loss, metrics and optimizer state are not
    carried over). A configuration Keras 3 cannot rebuild raises
    ``LegacyModelError`` naming the layer, the reason and the route that
    works. With ``model`` (a built Keras 3 twin) only the weights are read.

    Either way every value goes to the variable the ``.h5`` names: layers
    are paired in order and must carry the file's names (or names the file
    does not know, as a twin built elsewhere has), and inside a layer each
    weight is found by its name (``dense_5/kernel``), not by its position.
    Recurrent weights in the CuDNN layout (Keras 2 ``CuDNNLSTM``/``CuDNNGRU``)
    are converted for a twin's ``LSTM``/``GRU`` (``reset_after=True``).
    Anything unpaired, misordered or of another shape raises
    ``Keras2MismatchError``; a folder that cannot be written into raises
    ``NotWritableError`` before anything is read; any failure leaves
    ``model`` unchanged (all or nothing), and the file is written under a
    temporary name and renamed only when complete. The values themselves
    are trusted: legacy HDF5 keeps no checksum, so a flipped bit inside a
    weight goes unseen unless it makes the value absurd (not finite, or
    beyond ±1e30: refused as damaged). Prove a conversion by equal outputs
    on the same input, as the chapter does.
    Adapted layers (``Normalization``) recompute what they derive from the
    loaded values. A ``Lambda`` holding Python code loads only with
    ``safe_mode=False``: pass it for a file you trust. Custom layers come
    in through ``custom_objects`` (``{"package>Name": cls}``). Refuses to overwrite
    ``out_path`` (``WouldOverwriteError``). Returns ``out_path``.

    Example:
        >>> convert_legacy_h5("k2/model.h5", "k3/model.keras")   # doctest: +SKIP
        'k3/model.keras'
        >>> convert_legacy_h5("k2/weights.h5", "k3/m.weights.h5", model=twin)   # doctest: +SKIP
        'k3/m.weights.h5'
    """
    out = path_text(out_path, "output path")
    if not (out.endswith(".keras") or out.endswith(".weights.h5")):
        raise ValueError(f"out_path must end in .keras or .weights.h5 (a Keras 3 format), got {out!r}")
    refuse_existing(out, "a model file")
    refuse_unwritable(out)
    source = os.fspath(h5_path)
    description = describe_legacy_h5(source)
    if model is None:
        if not description.has_model:
            raise ValueError(
                f"{source!r} holds weights only: pass a built Keras 3 model of the same architecture (model=)"
            )
        model = _model_from_h5(source, safe_mode, custom_objects)
    else:
        _require_built(model)
        _refuse_keras3_hard_sigmoid(source, model)
    pairs = _pair_h5(source, model)
    assigned = {id(variable) for _, variable, _ in pairs}
    snapshot = [(variable, variable.numpy()) for _, variable, _ in pairs]
    _assign_all(pairs)
    try:
        _refresh_derived_state(model, assigned)
        _save_new(model, out)
    except BaseException:  # the twin goes back to what it was: all or nothing
        for variable, old in snapshot:
            variable.assign(old)
        _refresh_derived_state(model, assigned)
        raise
    return out


def _refuse_keras3_hard_sigmoid(path: str, model: Any) -> None:
    """A twin whose ``hard_sigmoid`` is Keras 3's where the whole-model file's is Keras 2's: refused."""
    with _open_h5(path) as file:
        if "model_config" not in file.attrs:
            return
        config = json.loads(_text([file.attrs["model_config"]])[0])
    problems = keras3_hard_sigmoid_problems(config, model)
    if problems:
        raise Keras2MismatchError(path, _describe(model), hint="Keras 2's hard_sigmoid is clip(0.2x + 0.5, 0, 1), "
                                  "Keras 3's clip(x/6 + 0.5, 0, 1): " + "; ".join(problems))


def _save_new(model: Any, out: str) -> None:
    """Save ``model`` to ``out`` (``.keras`` or ``.weights.h5``) through a temporary file in the same folder."""
    folder = os.path.dirname(out) or "."
    suffix = ".keras" if out.endswith(".keras") else ".weights.h5"
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".converting-", suffix=suffix)
    except PermissionError:
        raise NotWritableError(out, folder) from None
    os.close(handle)
    try:
        model.save(temporary) if suffix == ".keras" else model.save_weights(temporary)
        refuse_existing(out, "a model file")  # written meanwhile by someone else: leave it
        os.replace(temporary, out)
    except PermissionError:
        raise NotWritableError(out, folder) from None
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


# --------------------------------------------------------------------------- Keras 2 configurations in Keras 3

_ANY = object()  # an argument Keras 3 ignores whatever its value
_RNNS = ("LSTM", "GRU", "SimpleRNN", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")
_GROUPED = ("DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
            "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
# Keras 2 arguments Keras 3 refuses, by class: {argument: the one value Keras 3 behaves like, or _ANY}.
_KERAS2_ONLY: dict[str, dict[str, Any]] = {
    **{name: {"time_major": False} for name in _RNNS + ("RNN",)},
    # Keras 2 accepted groups in these classes and ignored it: groups=2 computes like groups=1
    # (measured with TF 2.15.1). Conv1D/2D/3D do group in both versions: not here.
    **{name: {"groups": _ANY} for name in _GROUPED},
    # Keras 2's separable convolutions took kernel_* arguments and never used them.
    **{name: {"groups": _ANY, "kernel_initializer": _ANY, "kernel_regularizer": _ANY, "kernel_constraint": _ANY}
       for name in ("SeparableConv1D", "SeparableConv2D")},
    # Keras 2.13+ records the shapes it was built for; Keras 3 builds from the call.
    "MultiHeadAttention": {"query_shape": _ANY, "key_shape": _ANY, "value_shape": _ANY},
    # Keras 2 wrote Dropout's noise_shape and ignored it here (the shape comes from the input).
    **{name: {"trainable": _ANY, "noise_shape": _ANY}
       for name in ("SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D")},
}
_WHY = {
    "time_major": "time_major=True (inputs shaped (time, batch, features)) has no Keras 3 equivalent",
}
# A plain LSTM twin loads time_major=True weights and answers differently (measured: off by 0.4 on a
# real TF 2.15.1 file); both routes below give TF 2.15.1's outputs (tests/test_keras2.py).
_TIME_MAJOR_ROUTE = (
    "export it once with Keras 2 and serve it as one layer: run_keras2(\"keras.models.load_model('m.h5', "
    "compile=False).export('m_export')\"), then keras.layers.TFSMLayer('m_export', call_endpoint='serve'); "
    "or build a Keras 3 twin that swaps axes 0 and 1 before the layer, and after it only if it returns "
    "sequences (a plain LSTM twin loads but answers differently): "
    "swap = lambda: keras.layers.Lambda(lambda t: keras.ops.swapaxes(t, 0, 1)); "
    "h = swap()(keras.layers.LSTM(4, return_sequences=True, name='lstm')(swap()(x))), then "
    "convert_legacy_h5(path, 'm.weights.h5', model=twin), and compare outputs with Keras 2's"
)
_CUDNN = ("CuDNNLSTM", "CuDNNGRU")
_CUDNN_ROUTE = ("build the model in Keras 3 code with LSTM / GRU (reset_after=True, the default) where the file "
                "has CuDNNLSTM / CuDNNGRU, and pass it: convert_legacy_h5(path, out, model=twin) converts the "
                "CuDNN layout")
def _refusal(class_name: str, layer: str, argument: str, value: Any) -> str:
    reason = _WHY.get(argument, f"{argument}={value!r} has no Keras 3 equivalent").format(value=value)
    return f"layer {layer!r} ({class_name}): {reason}"


def _route_for(argument: str) -> str:
    from helpers.errors import _LEGACY_ROUTE

    return _TIME_MAJOR_ROUTE if argument == "time_major" else _LEGACY_ROUTE


def _legacy_class(class_name: str, arguments: dict[str, Any]) -> type:
    base = getattr(keras.layers, class_name)

    def from_config(cls, config):
        config = dict(config)
        for argument, neutral in arguments.items():
            if argument in config:
                value = config.pop(argument)
                if neutral is not _ANY and value != neutral:
                    raise LegacyModelError("", [_refusal(class_name, config.get("name", "?"), argument, value)],
                                           route=_route_for(argument))
        return base.from_config(config)  # a plain Keras 3 layer: the converted file needs no custom objects

    return type(class_name, (base,), {
        "from_config": classmethod(from_config),
        "__module__": __name__,
        "__doc__": f"Builds a keras.layers.{class_name} from a Keras 2 configuration "
                   f"(drops {', '.join(sorted(arguments))} where Keras 3 behaves the same).",
    })


# Layers whose configuration holds other layers' configurations (Keras 3 rebuilds those itself, by
# class name, past custom_objects): their inner Keras 2 arguments are dropped before it does.
_WRAPPERS = ("Bidirectional", "TimeDistributed", "RNN")


def _drop_keras2_arguments(settings: dict) -> None:
    """Drop, in place, the Keras 2 arguments of every layer configuration among ``settings``' values."""
    for inner in layer_configs(list(settings.values())):
        class_name, config = inner["class_name"], inner["config"]
        for argument, neutral in _KERAS2_ONLY.get(class_name, {}).items():
            if argument in config:
                value = config.pop(argument)
                if neutral is not _ANY and value != neutral:
                    raise LegacyModelError("", [_refusal(class_name, config.get("name", "?"), argument, value)],
                                           route=_route_for(argument))


def _legacy_wrapper(class_name: str) -> type:
    """A wrapper (``Bidirectional``, ``TimeDistributed``, ``RNN``) whose inner layers lose Keras 2 arguments."""
    base = getattr(keras.layers, class_name)

    def from_config(cls, config, custom_objects=None):
        config = copy.deepcopy(config)
        _drop_keras2_arguments({"layer": {"class_name": class_name, "config": config}})  # its own and inner ones
        return base.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 layer

    return type(class_name, (base,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": f"Builds a keras.layers.{class_name} from a Keras 2 configuration (its inner layers' "
                   "Keras 2 arguments dropped where Keras 3 behaves the same).",
    })


def _legacy_functional() -> type:
    """``Functional``/``Model`` that first rewrites Keras 2 keyword-tensor calls (``mha(q, value=v)``)."""

    def from_config(cls, config, custom_objects=None):
        config = copy.deepcopy(config)
        _renumber_nested_nodes({"class_name": "Functional", "config": config})  # a no-op once renumbered
        _keyword_tensors_to_calls({"class_name": "Functional", "config": config})
        return keras.Model.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 model

    return type("Functional", (keras.Model,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": "Builds a Keras 3 functional model from a Keras 2 configuration (keyword tensors rewritten).",
    })


_NESTED_FUNCTIONAL_ROUTE = (
    "build the model in Keras 3 code, its layers and the nested model's layers named as the file names "
    "them (describe_legacy_h5 lists them), then convert_legacy_h5(path, 'm.weights.h5', model=twin)")


def _legacy_sequential() -> type:
    """``Sequential`` that names the route when Keras 3 cannot rebuild a functional model nested in it."""

    def from_config(cls, config, custom_objects=None):
        try:
            return keras.Sequential.from_config(config, custom_objects=custom_objects)  # a plain Keras 3 model
        except ValueError as error:
            nested = [layer.get("config", {}).get("name", "?") for layer in
                      (config.get("layers", []) if isinstance(config, dict) else [])
                      if layer.get("class_name") in ("Functional", "Model")]
            if not nested or "to a shape" not in str(error):
                raise
            raise LegacyModelError("", [f"layer {name!r}: a functional model nested in a Sequential; Keras 3 "
                                        f"cannot rebuild it ({first_line(error)})" for name in nested],
                                   route=_NESTED_FUNCTIONAL_ROUTE) from None

    return type("Sequential", (keras.Sequential,), {
        "from_config": classmethod(from_config), "__module__": __name__,
        "__doc__": "Builds a Keras 3 Sequential from a Keras 2 configuration (a nested functional model refused "
                   "with its route).",
    })


def legacy_custom_objects() -> dict[str, type]:
    """Classes that let Keras 3 rebuild Keras 2 configurations with arguments it no longer accepts.

    Each class builds the plain Keras 3 layer (the model, and the files it
    saves, need nothing of this module afterwards) after dropping the Keras 2
    arguments that change nothing: ``time_major=False`` of recurrent layers,
    ``groups`` of depthwise, separable and transposed convolutions (any value:
    Keras 2 accepted it there and ignored it; ``Conv1D``/``Conv2D``/``Conv3D``
    keep their ``groups`` in Keras 3), the unused ``kernel_*`` arguments of
    separable convolutions, the build shapes of ``MultiHeadAttention``,
    ``trainable`` and ``noise_shape`` of ``SpatialDropout1D``/``2D``/``3D``; and
    ``Functional``/``Model`` rewrite calls that pass a tensor by keyword
    (Keras 2's ``mha(query, value=v)``, which Keras 3 reads as a plain list)
    and renumber the calls of nested models (Keras 2 numbers them from 1);
    ``Sequential`` refuses a functional model nested in it, which Keras 3
    cannot rebuild, with ``LegacyModelError`` naming the twin route.
    ``Bidirectional``, ``TimeDistributed`` and ``RNN`` drop the same
    arguments from the layers they wrap (Keras 3 rebuilds those itself, past
    ``custom_objects``), and ``RNN`` its own ``time_major``. A value that would change the computation
    (``time_major=True``, wrapped or not) raises ``LegacyModelError`` naming
    the layer. ``batch_input_shape`` is translated by Keras 3 itself.
    ``"hard_sigmoid"`` maps to Keras 2's function (``clip(0.2 x + 0.5, 0, 1)``,
    ``helpers.keras1.keras1_hard_sigmoid``, registered: a model saved from it
    reloads where ``helpers.keras1`` is imported); Keras 3 reads the name as
    ``clip(x / 6 + 0.5, 0, 1)``. Meant for Keras 2 ``.h5`` files only.

    Example:
        >>> sorted(legacy_custom_objects())[:3]
        ['Bidirectional', 'Conv1DTranspose', 'Conv2DTranspose']
        >>> model = keras.models.load_model("k2/rnn.h5", custom_objects=legacy_custom_objects(),
        ...                                 compile=False)    # doctest: +SKIP
    """
    functional = _legacy_functional()
    return {**{name: _legacy_class(name, arguments) for name, arguments in _KERAS2_ONLY.items()
               if hasattr(keras.layers, name)},
            **{name: _legacy_wrapper(name) for name in _WRAPPERS},
            "Functional": functional, "Model": functional, "Sequential": _legacy_sequential(),
            "hard_sigmoid": keras1_hard_sigmoid}


def _rebuild_problems(config: dict) -> list[str]:
    """What in a Keras 2 configuration no patch can carry over, one line per layer."""
    problems = []
    for layer in layer_configs(config):
        name, settings = layer["class_name"], layer["config"]
        if name in _CUDNN:
            problems.append(
                f"layer {settings.get('name', '?')!r} ({name}): Keras 3 has no CuDNN layers, and their weights "
                f"are in the CuDNN layout (a bias of {8 if name == 'CuDNNLSTM' else 6}×units)"
            )
        for argument, neutral in _KERAS2_ONLY.get(name, {}).items():
            if argument in settings and neutral is not _ANY and settings[argument] != neutral:
                problems.append(_refusal(name, settings.get("name", "?"), argument, settings[argument]))
    return problems


def _model_layers(config: Any):
    """The layer configurations listed by every model inside a Keras configuration (nested ones too)."""
    for item in layer_configs(config):
        layers = item["config"].get("layers")
        if isinstance(layers, list):
            yield from (layer for layer in layers if isinstance(layer, dict) and "class_name" in layer)


def _unknown_classes(config: dict, custom_objects: dict) -> list[str]:
    known = set(legacy_custom_objects()) | set(custom_objects) | {"Functional", "Model", "Sequential", "InputLayer"}
    return [
        f"layer {layer.get('config', {}).get('name', '?')!r} ({layer['class_name']}): a class Keras 3 does not "
        "have (a custom layer, or a TensorFlow function called on a Keras tensor)"
        for layer in _model_layers(config)
        if layer["class_name"] not in known and not hasattr(keras.layers, layer["class_name"])
        and keras.saving.get_registered_object(layer["class_name"]) is None
    ]


def _renumber_nested_nodes(config: Any) -> None:
    """Keras 2 numbers the calls of a nested model from 1 (its node 0 is its own graph); Keras 3 from 0.

    Keras 3 subtracts that 1 where a model's outputs name a nested
    functional model, but not where another layer's inputs name it, nor for
    a nested ``Sequential``; this fixes those references in place.
    """
    for item in list(layer_configs(config)):
        layers = item["config"].get("layers")
        if not isinstance(layers, list) or item["class_name"] == "Sequential":
            continue
        calls = {layer["name"]: len(layer.get("inbound_nodes", [])) for layer in layers
                 if isinstance(layer, dict) and isinstance(layer.get("config", {}).get("layers"), list)}
        if not calls:
            continue
        references = list(_tensor_references([layer.get("inbound_nodes", []) for layer in layers]))
        outputs = list(_tensor_references(item["config"].get("output_layers", [])))
        shifted = {name for name, count in calls.items()
                   if any(ref[0] == name and ref[1] >= count for ref in references + outputs)}
        for ref in references:
            if ref[0] in shifted:
                ref[1] -= 1
        sequential = {layer["name"] for layer in layers if isinstance(layer, dict)
                      and layer.get("class_name") == "Sequential"}
        for ref in outputs:
            if ref[0] in shifted & sequential:
                ref[1] -= 1


def _is_reference(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and isinstance(value[1], int) and isinstance(value[2], int))


def _keyword_tensors_to_calls(config: Any) -> None:
    """Keras 2 writes ``mha(query, value=v)`` as a legacy node whose keyword holds ``[layer, node, tensor]``.

    Keras 3 reads legacy nodes' positional inputs only (the keyword stays a
    plain list); the node is rewritten in Keras 3's own node format, where
    keyword tensors are references too.
    """
    def tensor(reference: list) -> dict:
        return {"class_name": "__keras_tensor__",
                "config": {"shape": [], "dtype": "float32", "keras_history": list(reference[:3])}}

    for item in list(layer_configs(config)):
        for layer in item["config"].get("layers", []) if isinstance(item["config"].get("layers"), list) else []:
            nodes = layer.get("inbound_nodes", []) if isinstance(layer, dict) else []
            for index, node in enumerate(nodes):
                if (isinstance(node, list) and len(node) == 1 and len(node[0]) == 4 and isinstance(node[0][3], dict)
                        and any(_is_reference(value) for value in node[0][3].values())):
                    keywords = {key: tensor(value) if _is_reference(value) else value
                                for key, value in node[0][3].items()}
                    nodes[index] = {"args": [tensor(node[0])], "kwargs": keywords}


def _tensor_references(value: Any):
    """Every ``[layer name, node index, tensor index, ...]`` list inside legacy inbound nodes."""
    if isinstance(value, list):
        if len(value) >= 3 and isinstance(value[0], str) and isinstance(value[1], int) and isinstance(value[2], int):
            yield value
            if len(value) > 3:
                yield from _tensor_references(value[3])
        else:
            for item in value:
                yield from _tensor_references(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensor_references(item)


def _model_from_h5(path: str, safe_mode: bool, custom_objects: dict | None = None) -> Any:
    """Rebuild the architecture a legacy ``.h5`` stores, with Keras 2 arguments patched (no weights yet)."""
    # Keras' own reader of legacy configurations; no public function takes a configuration.
    from keras.src.legacy.saving import saving_options, saving_utils
    from keras.src.saving import serialization_lib

    with _open_h5(path) as file:
        config = json.loads(_text([file.attrs["model_config"]])[0])
    problems = _rebuild_problems(config)
    if problems:
        cudnn = any(f"({name})" in problem for problem in problems for name in _CUDNN)
        time_major = any("time_major=" in problem for problem in problems)
        route = _CUDNN_ROUTE if cudnn else _route_for("time_major" if time_major else "")
        raise LegacyModelError(path, problems, route)
    _renumber_nested_nodes(config)
    _keyword_tensors_to_calls(config)
    custom_objects = dict(custom_objects or {})
    objects = {**legacy_custom_objects(), **keras.saving.get_custom_objects(), **custom_objects}
    try:
        with saving_options.keras_option_scope(use_legacy_config=True), \
                serialization_lib.SafeModeScope(safe_mode), keras.saving.custom_object_scope(objects):
            return saving_utils.model_from_config(copy.deepcopy(config), custom_objects=objects)
    except LegacyModelError as error:
        raise LegacyModelError(path, error.problems, error.route) from None
    except Exception as error:  # Keras wraps what a layer raises: find the cause, or say what Keras said
        text = str(error)
        if "LegacyModelError" in text or isinstance(error.__cause__, LegacyModelError):
            cause = error.__cause__
            raise LegacyModelError(path, getattr(cause, "problems", [first_line(error)]),
                                   *([cause.route] if isinstance(cause, LegacyModelError) else [])) from None
        if "safe_mode" in text:
            raise LegacyModelError(path, [
                "a Lambda layer holds Python bytecode, which safe_mode refuses to run: if you trust the file, "
                "pass safe_mode=False"], route="convert_legacy_h5(path, out, safe_mode=False)") from None
        unknown = _unknown_classes(config, custom_objects)
        if unknown:
            raise LegacyModelError(path, unknown, route=(
                "pass the class: convert_legacy_h5(path, out, custom_objects={name: cls}) with the name "
                "shown, or register it with keras.saving.register_keras_serializable; or pass model=twin"
            )) from None
        raise LegacyModelError(path, [f"Keras 3 failed: {first_line(error)}"]) from None


# --------------------------------------------------------------------------- legacy .h5 weights, by name


def _h5_names(group: Any, name: str) -> list[str]:
    """A list attribute of a legacy ``.h5`` group; large ones are split into ``name0``, ``name1``..."""
    if name in group.attrs:
        return _text(group.attrs[name])
    names, chunk = [], 0
    while f"{name}{chunk}" in group.attrs:
        names += _text(group.attrs[f"{name}{chunk}"])
        chunk += 1
    return names


def _relative(name: str, layer: str) -> str:
    """A weight's name inside its layer: ``dense_7/kernel:0`` in ``dense_7`` (Keras 2) and
    ``sequential/dense_7/kernel`` (Keras 3) -> ``kernel``; ``dense_5/kernel:0`` in ``base`` stays."""
    name = re.sub(r":\d+$", "", name)
    match = re.search(r"(^|/)" + re.escape(layer) + "/", name)
    return name[match.end():] if match else name


# Weights Keras 3 renamed, by layer class: {Keras 2 name: Keras 3 name}.
_RENAMED = {"DepthwiseConv1D": {"depthwise_kernel": "kernel"}, "DepthwiseConv2D": {"depthwise_kernel": "kernel"}}


def _bidirectional_name(layer: Any, relative: str) -> str:
    """Keras 2 names a ``Bidirectional``'s halves ``forward_<layer>`` and ``backward_<backward layer>``;
    Keras 3 names a given ``backward_layer`` by its own name: a weight's first part becomes the twin's."""
    if type(layer).__name__ != "Bidirectional" or "/" not in relative:
        return relative
    head, rest = relative.split("/", 1)
    for prefix, half in (("forward_", layer.forward_layer), ("backward_", layer.backward_layer)):
        if head.startswith(prefix) and head != half.name and head[len(prefix):] == half.name.removeprefix(prefix):
            return f"{half.name}/{rest}"
    return relative


def _cudnn_hint(value: np.ndarray, variable: Any) -> str:
    shape = tuple(variable.shape)
    if variable.path.endswith("/bias") and value.ndim == 1 and value.size in (2 * int(np.prod(shape)),) \
            or (len(shape) == 2 and shape[0] == 2 and value.ndim == 1 and value.size == int(np.prod(shape))
                and variable.path.endswith("gru_cell/bias")):
        return (f"{variable.path!r} gets a bias in the CuDNN layout (input and recurrent biases apart, "
                "written by Keras 2 CuDNNLSTM/CuDNNGRU): it converts into LSTM or GRU(reset_after=True), "
                "not into GRU(reset_after=False)")
    return ""


def _check_value(path: str, key: str, value: np.ndarray) -> np.ndarray:
    """Refuse a value no trained weight holds (not finite, or beyond ±1e30): a flipped exponent bit."""
    if value.dtype.kind == "f" and value.size and not (np.all(np.isfinite(value)) and np.abs(value).max() <= 1e30):
        raise NotACheckpointError(path, f"{_DAMAGED}: weight {key!r} holds values no model holds (not finite, "
                                  "or beyond ±1e30; a flipped exponent bit? legacy HDF5 keeps no checksum)")
    return value


def _from_cudnn(layer: Any, weights: list[tuple[str, np.ndarray]]) -> list[tuple[str, np.ndarray]]:
    """CuDNNLSTM/CuDNNGRU weights in the layout of Keras' LSTM/GRU(reset_after=True); others unchanged.

    The CuDNN layout keeps input and recurrent biases apart (8×units for
    LSTM, 6×units for GRU) and each gate's input kernel in Fortran order;
    Keras 2's ``_convert_rnn_weights`` (tf-keras, hdf5_format.py) converts
    the same way: input kernels per gate ``k.T.reshape(k.shape, order="F")``,
    recurrent kernels per gate transposed, LSTM biases summed, GRU biases
    reshaped to (2, 3×units).
    """
    kind = type(layer).__name__
    named = {weight.rsplit("/", 1)[-1].split(":")[0]: index for index, (weight, _) in enumerate(weights)}
    if kind not in ("LSTM", "GRU") or set(named) != {"kernel", "recurrent_kernel", "bias"}:
        return weights
    kernel, recurrent, bias = (weights[named[n]][1] for n in ("kernel", "recurrent_kernel", "bias"))
    gates = 4 if kind == "LSTM" else 3
    units = recurrent.shape[0]
    if bias.shape != (2 * gates * units,) or (kind == "GRU" and not getattr(layer, "reset_after", True)):
        return weights  # not the CuDNN layout (or GRU(reset_after=False): refused by the shape check)
    per_gate = lambda array, f: np.hstack([f(k) for k in np.hsplit(array, gates)])  # noqa: E731
    converted = {
        "kernel": per_gate(kernel, lambda k: k.T.reshape(k.shape, order="F")),
        "recurrent_kernel": per_gate(recurrent, lambda k: k.T),
        "bias": bias.reshape(2, -1).sum(axis=0) if kind == "LSTM" else bias.reshape(2, -1),
    }
    return [(weight, converted[weight.rsplit("/", 1)[-1].split(":")[0]]) for weight, _ in weights]


def _pair_h5(path: str, model: Any) -> list[tuple[str, Any, np.ndarray]]:
    """``(file key, variable, value)`` for every weight of a legacy ``.h5``, paired by name; or raise."""
    with _open_h5(path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        saved = []
        for name in _h5_names(group, "layer_names"):
            weights = [(weight, _check_value(path, f"{name}/{weight}", np.asarray(group[name][weight])))
                       for weight in _h5_names(group[name], "weight_names")]
            if weights:
                saved.append((name, weights))
        if "top_level_model_weights" in group and _h5_names(group["top_level_model_weights"], "weight_names"):
            raise Keras2MismatchError(path, _describe(model), hint="the file holds weights of the model itself "
                                      "(a subclassed Keras 2 model): rebuild it and use run_keras2 to re-save "
                                      "them as .weights.h5", unexpected=["top_level_model_weights"])
    layers = [layer for layer in model.layers if layer.weights]
    file_names, model_names = {name for name, _ in saved}, {layer.name for layer in layers}
    pairs, missing, unexpected, shapes, hints, renamed_layers = [], [], [], [], [], []
    for index in range(max(len(saved), len(layers))):
        if index >= len(saved):
            missing += [v.path for v in layers[index].weights]
            continue
        name, weights = saved[index]
        if index >= len(layers):
            unexpected += [f"{name}/{weight}" for weight, _ in weights]
            continue
        layer = layers[index]
        if name != layer.name and (name in model_names or layer.name in file_names):
            if file_names == model_names:  # the same names, elsewhere: layers in another order
                hints.append(f"layer {index} with weights is {name!r} in the file but {layer.name!r} in the "
                             "model (layers in another order?)")
            else:  # other names, some shared: automatic names counted from another start
                renamed_layers.append(index)
            unexpected += [f"{name}/{weight}" for weight, _ in weights]
            missing += [v.path for v in layer.weights]
            continue
        variables = {}
        for variable in layer.weights:
            variables.setdefault(_relative(variable.path, layer.name), []).append(variable)
        renamed = _RENAMED.get(type(layer).__name__, {})
        used = set()
        for weight, value in _from_cudnn(layer, weights):
            key = f"{name}/{weight}"
            relative = _relative(weight, name)
            relative = renamed.get(relative, relative)
            relative = _bidirectional_name(layer, relative)
            found = [v for v in variables.get(relative, []) if id(v) not in used]
            if not found:  # a cell Keras 2 did not name (CuDNNLSTM's bias:0 is LSTM's lstm_cell/bias): a unique last name
                last = [v for key, group in variables.items() for v in group
                        if key.rsplit("/", 1)[-1] == relative.rsplit("/", 1)[-1]]
                found = last if len(last) == 1 and id(last[0]) not in used else []
            if not found:
                unexpected.append(key)
                continue
            variable = found[0]
            used.add(id(variable))
            if value.shape != tuple(variable.shape):
                shapes.append((key, value.shape, tuple(variable.shape)))
                hints.append(_cudnn_hint(value, variable))
            else:
                pairs.append((key, variable, value))
        missing += [v.path for v in layer.weights if id(v) not in used]
    if renamed_layers:
        hints.append("the model's layer names are not the file's names (automatic names are counted from "
                     "where the session's count stood: lstm in one session is lstm_1 in another): give the "
                     "layers with weights the file's names, in this order: "
                     + ", ".join(repr(name) for name, _ in saved))
    if missing or unexpected or shapes:
        if missing and unexpected and not any(hints):
            hints.append("weights are found by the names the .h5 stores: give the model's layers (and the "
                         "layers of nested models) the file's names (describe_legacy_h5 lists them)")
        if missing and unexpected and any(isinstance(layer, (keras.layers.Bidirectional, keras.layers.TimeDistributed))
                                          for layer in layers):
            hints.append("inside Bidirectional/TimeDistributed the wrapped layer's name counts too "
                         "(forward_<name>): name the inner layer as the file does")
        raise Keras2MismatchError(path, _describe(model), hint="; ".join(h for h in hints if h),
                                  missing=missing, unexpected=unexpected, shape_mismatches=shapes)
    return pairs


def _assign_all(pairs: list[tuple[str, Any, np.ndarray]]) -> None:
    """Assign every value, or none: a failure half way puts the old values back."""
    snapshot = [(variable, variable.numpy()) for _, variable, _ in pairs]
    try:
        for _, variable, value in pairs:
            variable.assign(value)
    except Exception:
        for variable, old in snapshot:
            variable.assign(old)
        raise


def _refresh_derived_state(model: Any, assigned: set[int]) -> list[str]:
    """Let layers that cache values computed from their variables recompute them; returns their names.

    An adapted ``Normalization`` keeps the mean and variance it computes from
    its variables in plain tensors: assigning the variables alone leaves it
    answering with the old ones. ``finalize_state`` recomputes them.
    """
    refreshed = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        if hasattr(layer, "finalize_state") and any(id(v) in assigned for v in layer.weights):
            layer.finalize_state()
            refreshed.append(layer.name)
    return refreshed


# --------------------------------------------------------------------------- running Keras 2


KERAS2_ENVIRONMENT = {
    "TF_USE_LEGACY_KERAS": "1",  # tf.keras is Keras 2 (the tf-keras package) in the subprocess
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "TF_ENABLE_ONEDNN_OPTS": "0",  # the same float results as the notebook's process
}

_RUNNER = """\
import sys
import numpy as np
import tensorflow as tf
keras = tf.keras
if not keras.__name__.startswith("tf_keras"):
    raise SystemExit(f"tf.keras is {keras.__name__}, not Keras 2 (tf_keras): is TF_USE_LEGACY_KERAS=1 set?")
script, results, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
keras.utils.set_random_seed(seed)
tf.config.experimental.enable_op_determinism()
outputs = {}
def emit(name, value):
    outputs[name] = np.asarray(value)
namespace = {"__name__": "__main__", "tf": tf, "keras": keras, "np": np, "emit": emit}
with open(script) as file:
    exec(compile(file.read(), "<keras 2 script>", "exec"), namespace)
np.savez(results, **outputs)
"""


@dataclass
class Keras2Run:
    """What ``run_keras2`` brought back: the arrays the script emitted, and what it printed."""

    outputs: dict[str, np.ndarray]
    stdout: str


def run_keras2(script: str, *, cwd: str | os.PathLike = ".", seed: int = 42, timeout: float = 300) -> Keras2Run:
    """Run Keras 2 code in a subprocess (``TF_USE_LEGACY_KERAS=1``) and return what it emitted.

    The script sees ``tf``, ``keras`` (Keras 2), ``np`` and ``emit(name,
    value)``; each emitted value comes back as a NumPy array in
    ``.outputs``, and what it printed in ``.stdout``. It runs in ``cwd``
    (relative paths are relative to it), seeded and with deterministic ops,
    offline: nothing is downloaded. Needs the ``tf-keras`` package of the
    same version as TensorFlow. Raises ``Keras2RunError`` with the script's
    error when it fails. Each call starts a new Python (a few seconds for
    ``import tensorflow``): do all the Keras 2 work in one script.

    Example:
        >>> run_keras2("emit('version', keras.__version__)").outputs["version"]   # doctest: +SKIP
        array('2.21.0', dtype='<U6')
    """
    if importlib.util.find_spec("tf_keras") is None:
        raise Keras2RunError(
            f"Keras 2 is not installed: pip install tf-keras=={tf.__version__.rsplit('.', 1)[0]}.* "
            "(its version must match TensorFlow's)"
        )
    if not os.path.isdir(os.fspath(cwd)):
        raise NotADirectoryError(f"cwd {os.fspath(cwd)!r} is not a folder")
    with tempfile.TemporaryDirectory(prefix="keras2-") as folder:
        runner, source, results = (os.path.join(folder, n) for n in ("runner.py", "script.py", "results.npz"))
        with open(runner, "w") as file:
            file.write(_RUNNER)
        with open(source, "w") as file:
            file.write(textwrap.dedent(script))
        env = {**os.environ, **KERAS2_ENVIRONMENT}
        try:
            done = subprocess.run(
                [sys.executable, runner, source, results, str(seed)],
                cwd=os.fspath(cwd), env=env, capture_output=True, text=True, timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise Keras2RunError(f"the Keras 2 script ran longer than {timeout} s and was stopped") from None
        if done.returncode != 0:
            raise Keras2RunError("the Keras 2 script failed:\n" + _last_error(done.stderr))
        with np.load(results, allow_pickle=False) as data:
            outputs = {name: data[name] for name in data.files}
    return Keras2Run(outputs=outputs, stdout=done.stdout)


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback"):
            frames = [line for line in lines[i:] if "<keras 2 script>" in line]
            return "\n".join(frames[-1:] + lines[-1:])
    return "\n".join(lines[-3:]) if lines else "(no error message)"


# --------------------------------------------------------------------------- Keras 3 to Keras 2 (chapter 13)

# Arguments Keras 3 writes that Keras 2 does not know, with the value that means "as Keras 2 does":
# dropped where they hold it. Any other value is refused by Keras 2, and the check names it.
_KERAS3_ONLY: dict[str, Any] = {
    "quantization_config": None, "lora_rank": None, "lora_alpha": None,  # Dense, EinsumDense, Embedding
    "optional": False,                                                  # InputLayer
    "input_axes": None, "output_axes": None,                            # variance-scaling initializers
    "rms_scaling": False,                                               # LayerNormalization
}
_KERAS3_ONLY_IN = {"MultiHeadAttention": {"use_gate": False, "sliding_window": None, "seed": None,
                                          "flash_attention": None}}
_NESTED_MODELS = ("Functional", "Sequential", "Model")
_ARCHITECTURE_ROUTE = ("pass architecture=False: the weights file (into a Keras 2 twin written in code, "
                       "with the same layer names) and the SavedModel for inference are still written")
# Measured: Keras 2 (TF 2.15, tf-keras) load_weights of a subclassed Keras 3 model's .weights.h5 into the
# same class written in Keras 2 fails ("expected 2 variables, but received 0"); set_weights works.
_SUBCLASSED_ROUTE = ("for inference, model.export(folder) (any TF 2: tf.saved_model.load, serving_default by "
                     "keyword); for the weights, np.savez(file, *model.get_weights()) and set_weights in the "
                     "same class written in Keras 2 code (its .weights.h5 does not load there); or rebuild the "
                     "model as a Functional one")


@dataclass
class Keras2Export:
    """What ``export_for_keras2`` wrote for Keras 2, what it could not carry, and how it was checked."""

    folder: str
    files: dict[str, str]
    not_carried: list[str]
    checked: list[str]
    max_error: float

    def how_to_load(self) -> str:
        """The Keras 2 code (TF 2.15, or tf-keras) that loads these files, relative to ``folder``'s parent."""
        name = os.path.basename(os.path.normpath(self.folder))
        lines = ["import tensorflow as tf  # TF <= 2.15, or TF_USE_LEGACY_KERAS=1 with tf-keras"]
        if "model.h5" in self.files:
            lines.append(f'model = tf.keras.models.load_model("{name}/model.h5", compile=False)')
        else:
            lines.append("model = build_model()  # the same architecture and layer names, in Keras 2 code")
        if "model.weights.h5" in self.files:
            lines.append(f'model.load_weights("{name}/model.weights.h5")  # the same weights again')
        lines.append(f'served = tf.saved_model.load("{name}/saved_model").signatures["serving_default"]')
        return "\n".join(lines)

    def __str__(self) -> str:
        lines = [f"written for Keras 2 in {self.folder!r}:"]
        lines += [f"  {name}: {what}" for name, what in self.files.items()]
        lines += ["not carried:"] + [f"  {item}" for item in self.not_carried]
        lines += [f"checked: {', '.join(self.checked)}; largest difference {self.max_error:.1e}"]
        return "\n".join(wrap_output(line) for line in lines)


def _keras2_object(value: Any) -> Any:
    """A Keras 3 serialized value in Keras 2's form: ``{"class_name", "config"}``, dtype policies as names."""
    if isinstance(value, list):
        return [_keras2_object(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "class_name" in value and "config" in value and ("module" in value or "registered_name" in value):
        if value["class_name"] in ("DTypePolicy", "FloatDTypePolicy"):
            return value["config"]["name"]
        if value["class_name"] == "__tuple__":
            return _keras2_object(value["config"]["value"])
        return {"class_name": value["class_name"], "config": _keras2_object(value["config"])}
    return {key: _keras2_object(item) for key, item in value.items()
            if not (key in _KERAS3_ONLY and item == _KERAS3_ONLY[key])}


def _is_keras_tensor(value: Any) -> bool:
    return isinstance(value, dict) and value.get("class_name") == "__keras_tensor__"


def _keras2_reference(tensor: dict, nested: set[str]) -> list:
    layer, index, position = tensor["config"]["keras_history"]
    return [layer, index + (layer in nested), position]  # Keras 2: a nested model's own graph is its node 0


def _keras2_nodes(name: str, nodes: list, nested: set[str], call_names: list[str], problems: list[str]) -> list:
    """Keras 3 call records (``{"args", "kwargs"}``) as Keras 2's ``[[layer, node, tensor, kwargs], ...]``.

    A second positional tensor (``mha(query, value)``) becomes a keyword by
    the name of the call's parameter (``value=``), as Keras 2 records it.
    """
    converted = []
    for node in nodes:
        args, kwargs = list(node.get("args", [])), dict(node.get("kwargs", {}))
        if len(args) > 1 and all(_is_keras_tensor(t) for t in args) and len(call_names) >= len(args):
            kwargs.update(zip(call_names[1:], args[1:]))
            args = args[:1]
        if len(args) == 1 and _is_keras_tensor(args[0]):
            tensors = args[0:1]
        elif len(args) == 1 and isinstance(args[0], list) and all(_is_keras_tensor(t) for t in args[0]):
            tensors = args[0]
        else:
            problems.append(f"layer {name!r}: called with {len(args)} positional inputs that Keras 2's "
                            "configuration cannot record")
            continue
        keywords = {key: _keras2_reference(value, nested) if _is_keras_tensor(value) else _keras2_object(value)
                    for key, value in kwargs.items()}
        converted.append([_keras2_reference(t, nested) + [keywords] for t in tensors])
    return converted


def _keras2_layer(entry: dict, nested: set[str], problems: list[str], in_functional: bool,
                  calls: dict[str, list[str]]) -> dict:
    name = entry.get("name") or entry["config"].get("name", "?")
    class_name, module = entry["class_name"], entry.get("module") or ""
    registered = entry.get("registered_name")
    if not module.startswith("keras") or registered not in (None, class_name):
        problems.append(f"layer {name!r} ({registered or class_name}): a custom class; Keras 2 needs "
                        "it written in Keras 2 code")
        return {}
    config = _keras2_object(entry["config"])
    if class_name == "InputLayer" and "batch_shape" in config:
        config["batch_input_shape"] = config.pop("batch_shape")  # Keras 2 rejects batch_shape
    for argument, neutral in _KERAS3_ONLY_IN.get(class_name, {}).items():
        if argument in config and config[argument] == neutral:
            del config[argument]
    if class_name == "MultiHeadAttention":  # Keras 2 rebuilds it from the shapes it was built for
        shapes = (entry.get("build_config") or {}).get("shapes_dict", {})
        config.update({key: shapes.get(key) for key in ("query_shape", "value_shape", "key_shape")})
        config["key_shape"] = config["key_shape"] or config["value_shape"]  # key defaults to value
    if class_name in _NESTED_MODELS:
        config = _keras2_model_config(entry, problems, calls)["config"]
    layer = {"class_name": class_name, "config": config}
    if in_functional:
        layer["name"] = name
        layer["inbound_nodes"] = _keras2_nodes(name, entry.get("inbound_nodes", []), nested,
                                               calls.get(name, []), problems)
    return layer


def _references(value: Any) -> list:
    """``input_layers`` / ``output_layers`` as a list of ``[layer, node, tensor]`` (Keras 3 may write one bare)."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        return [list(value)]
    return [list(item) for item in value]


def _keras2_model_config(serialized: dict, problems: list[str], calls: dict[str, list[str]]) -> dict:
    """The ``{"class_name", "config"}`` Keras 2 rebuilds a Functional or Sequential model from."""
    config = serialized["config"]
    if serialized["class_name"] == "Sequential":
        layers = [_keras2_layer(entry, set(), problems, False, calls) for entry in config["layers"]]
        return {"class_name": "Sequential", "config": {"name": config["name"], "layers": layers}}
    nested = {entry["name"] for entry in config["layers"] if entry["class_name"] in _NESTED_MODELS}
    layers = [_keras2_layer(entry, nested, problems, True, calls) for entry in config["layers"]]
    outputs = [[name, index + (name in nested), position]
               for name, index, position in _references(config["output_layers"])]
    return {"class_name": "Functional", "config": {
        "name": config["name"], "layers": layers,
        "input_layers": _references(config["input_layers"]), "output_layers": outputs}}


def keras2_model_config(model: Any) -> dict:
    """The configuration Keras 2 (TF 2.15, tf-keras) rebuilds a Keras 3 Functional or Sequential model from.

    Keras 3 writes arguments Keras 2 rejects (``batch_shape``, ``optional``,
    ``quantization_config``, an initializer's ``input_axes``), dtype policies
    as objects, and calls in another form (tensors passed by keyword, such as
    ``mha(q, value=v)``, are carried); this rewrites them. Raises
    ``Keras2ExportError`` naming each layer it cannot carry (custom classes,
    calls whose positional inputs Keras 2's configuration cannot record) or a subclassed
    model.

    Example:
        >>> inputs = keras.Input((3,), name="x")
        >>> model = keras.Model(inputs, keras.layers.Dense(2, name="out")(inputs))
        >>> keras2_model_config(model)["config"]["layers"][0]["config"]["batch_input_shape"]
        [None, 3]
    """
    if not isinstance(model, keras.Model) or type(model).__name__ not in ("Functional", "Sequential"):
        raise Keras2ExportError([f"the model is a {type(model).__name__}: only Functional and Sequential "
                                 "models have a configuration Keras 2 can rebuild"],
                                _SUBCLASSED_ROUTE if isinstance(model, keras.Model) else _ARCHITECTURE_ROUTE)
    problems: list[str] = []
    calls = {layer.name: [p for p in inspect.signature(layer.call).parameters if p not in ("args", "kwargs")]
             for layer in model._flatten_layers(include_self=False, recursive=True)}
    config = _keras2_model_config(keras.saving.serialize_keras_object(model), problems, calls)
    if problems:
        raise Keras2ExportError(problems, _ARCHITECTURE_ROUTE)
    return json.loads(json.dumps(config))  # as Keras 2 reads it from a file: lists, not tuples


def _keras2_rejects(config: dict) -> list[str]:
    """Each layer that Keras 2 (tf-keras, in this process) refuses to build, with Keras 2's own reason."""
    import tf_keras  # Keras 2, importable beside Keras 3

    problems = []
    listed = {id(layer) for layer in _model_layers(config)}  # layers, not their initializers
    for layer in layer_configs(config["config"].get("layers", [])):
        if layer["class_name"] in _NESTED_MODELS:
            continue
        name = layer["config"].get("name", "?")
        try:
            built = tf_keras.layers.deserialize({"class_name": layer["class_name"],
                                                 "config": copy.deepcopy(layer["config"])})
        except Exception as error:  # Keras 2's message names the argument
            cause = re.findall(r"Exception encountered: (.*)", str(error))
            reason = cause[-1] if cause else first_line(error)
            if reason.startswith("("):  # ('Keyword argument not understood:', 'lora_rank')
                with contextlib.suppress(ValueError, SyntaxError):
                    reason = " ".join(str(part) for part in ast.literal_eval(reason))
            problems.append(f"layer {name!r} ({layer['class_name']}): Keras 2 says: {reason[:200]}")
        else:
            if isinstance(built, str) and id(layer) in listed:  # tf_keras returns the name of a class it lacks
                problems.append(f"layer {name!r} ({layer['class_name']}): Keras 2 has no such layer class")
    return problems


def _sample_inputs(model: Any) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    samples = []
    for tensor in model.inputs:
        shape = [2 if dim is None else dim for dim in tensor.shape]
        if "int" in str(tensor.dtype):
            samples.append(rng.integers(0, 2, size=shape).astype(str(tensor.dtype)))
        else:
            samples.append(rng.normal(size=shape).astype(str(tensor.dtype)))
    return samples


def _write_legacy_h5(model: Any, config: dict, path: str, scratch: str) -> None:
    """A legacy full-model ``.h5`` in the layout both Keras versions read, with a Keras 2 configuration."""
    import h5py

    keras3_h5 = os.path.join(scratch, "keras3.h5")
    absl = logging.getLogger("absl")
    level, absl.level = absl.level, logging.ERROR  # "HDF5 is legacy": here it is the point
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save(keras3_h5)
    finally:
        absl.setLevel(level)
    with h5py.File(keras3_h5, "r") as source, h5py.File(path, "w") as target:
        target.attrs["model_config"] = json.dumps(config)
        target.attrs["keras_version"] = source.attrs["keras_version"]
        target.attrs["backend"] = "tensorflow"
        source.copy("model_weights", target)  # training_config and optimizer_weights stay behind
    os.remove(keras3_h5)


def _check_in_keras2(model: Any, folder: str, inputs: list[np.ndarray], has_h5: bool,
                     notes: list[str]) -> tuple[list[str], float]:
    """Load what was written (tf-keras in this process, TF for the SavedModel) and compare outputs."""
    import tf_keras

    try:
        template = model.input  # a list of one for a Functional model rebuilt from a legacy .h5
    except (AttributeError, ValueError):
        template = model.inputs if len(model.inputs) > 1 else model.inputs[0]
    structured = tf.nest.pack_sequence_as(template, [tf.constant(x) for x in inputs])
    expected = np.asarray(model(structured, training=False))
    answers = {}
    served = tf.saved_model.load(os.path.join(folder, "saved_model"))
    answers["SavedModel"] = served.serve(structured)
    if has_h5:
        try:
            rebuilt = tf_keras.models.load_model(os.path.join(folder, "model.h5"), compile=False)
        except Exception as error:
            raise Keras2ExportError([f"model.h5: Keras 2 cannot load it: {first_line(error)[:300]}"
                                     + _layers_named_in(error, model)], _ARCHITECTURE_ROUTE) from error
        answers["model.h5 in Keras 2"] = rebuilt(inputs if len(inputs) > 1 else inputs[0], training=False)
        twin = tf_keras.models.model_from_json(rebuilt.to_json())
        weights = os.path.join(folder, "model.weights.h5")
        try:
            twin.load_weights(weights)
        except ValueError as error:  # a layer whose variables Keras 2 stores under other paths (MHA)
            os.remove(weights)
            notes.append(f"model.weights.h5 (not written: Keras 2 says {first_line(error)[:160]}); "
                         "model.h5 carries the weights")
        else:
            answers["model.weights.h5 in Keras 2"] = twin(inputs if len(inputs) > 1 else inputs[0],
                                                          training=False)
    errors = {name: float(np.abs(np.asarray(value) - expected).max()) for name, value in answers.items()}
    bad = [f"{name}: outputs differ by {error:.2e}" for name, error in errors.items()
           if not error <= 1e-5 * (1 + float(np.abs(expected).max()))]
    if bad:
        raise Keras2ExportError(bad, "report this model: its layers are written but answer differently")
    return list(errors), max(errors.values())


def _layers_named_in(error: Exception, model: Any) -> str:
    """`` (layer 'rms')`` for the layers whose class Keras 2's message names (it names classes only)."""
    text = str(error)
    names = [layer.name for layer in model._flatten_layers(include_self=False, recursive=True)
             if re.search(rf"\b{re.escape(type(layer).__name__)}\b", text)]
    return f" (layer {', '.join(map(repr, names))})" if names else ""


def _not_carried(model: Any) -> list[str]:
    items = []
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and optimizer.variables:
        items.append(f"the optimizer's state ({type(optimizer).__name__}, {len(optimizer.variables)} "
                     "variables): Keras 2's optimizers are other classes; compile and train anew")
    if getattr(model, "compiled", False):
        items.append("loss, metrics and compile() arguments: call compile() again in Keras 2")
    items.append("training behaviour in the SavedModel: its signatures run inference only (training=False)")
    return items


def export_for_keras2(model: Any, folder: str | os.PathLike, inputs: Any = None, *,
                      architecture: bool = True) -> Keras2Export:
    """Write a Keras 3 model as files a Keras 2 process (TF 2.15, tf-keras) loads with equal outputs.

    Writes a new folder (never an existing one), all or nothing:

    - ``model.h5``: the whole model as a legacy HDF5 with a configuration
      rewritten for Keras 2 (``batch_input_shape``, no Keras 3 only
      arguments): ``tf.keras.models.load_model("model.h5", compile=False)``;
    - ``model.weights.h5``: the weights, which Keras 2 loads with
      ``load_weights`` into a model of the same architecture and layer names
      (left out, with the reason in ``not_carried``, where Keras 2 cannot load
      it: ``MultiHeadAttention`` keeps its weights under other paths there;
      ``model.h5`` still carries them);
    - ``saved_model/``: ``model.export``, for inference through
      ``tf.saved_model.load`` in any TF 2: call ``serving_default`` by
      keyword; ``serve`` takes the model's input structure (a list for a
      model rebuilt from a legacy .h5).

    Before moving the folder into place it loads the files with Keras 2
    (``tf_keras`` in this process) and TensorFlow, and compares their outputs
    with the model's on ``inputs`` (an array, or a list for several inputs;
    made up when not given): the SavedModel, ``model.h5``, and
    ``model.weights.h5`` loaded into the model Keras 2 rebuilt from
    ``model.h5`` (``report.checked`` lists them). A layer Keras 2 cannot
    rebuild raises ``Keras2ExportError`` naming the layer (and the argument
    where Keras 2 names one). With ``architecture=False`` only the weights
    and the SavedModel are written, and only the SavedModel is checked:
    nothing in this process can build the Keras 2 twin the weights are for.
    A subclassed model raises ``Keras2ExportError`` whatever
    ``architecture`` is (its weights file does not load into the same class
    in Keras 2); the error gives the route that works.
    The report lists what is not carried (the optimizer's state, compile
    arguments) and ``how_to_load()`` gives the Keras 2 code.

    Example:
        >>> report = export_for_keras2(model, "for_keras2")   # doctest: +SKIP
        >>> print(report.how_to_load())                        # doctest: +SKIP
    """
    target = refuse_unwritable(refuse_existing(folder, "a folder"))
    if isinstance(model, keras.Model) and type(model).__name__ not in ("Functional", "Sequential"):
        raise Keras2ExportError([f"the model is a subclassed model ({type(model).__name__}): it has no "
                                 "configuration Keras 2 can rebuild, and its .weights.h5 does not load into "
                                 "the same class in Keras 2"], _SUBCLASSED_ROUTE)
    if not isinstance(model, keras.Model) or not model.built or not model.inputs:
        raise ModelNotBuiltError(f"export_for_keras2 needs a built Keras 3 model with inputs, got "
                                 f"{_describe(model)}: call it once, or build it from keras.Input")
    config = keras2_model_config(model) if architecture else None
    if config is not None:
        rejected = _keras2_rejects(config)
        if rejected:
            raise Keras2ExportError(rejected, _ARCHITECTURE_ROUTE)
    samples = ([np.asarray(x) for x in inputs] if isinstance(inputs, (list, tuple))
               else [np.asarray(inputs)] if inputs is not None else _sample_inputs(model))
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".keras2-export-", dir=parent)
    try:
        files = {}
        model.save_weights(os.path.join(scratch, "model.weights.h5"))
        files["model.weights.h5"] = "the weights; Keras 2: load_weights into the same architecture"
        if config is not None:
            _write_legacy_h5(model, config, os.path.join(scratch, "model.h5"), scratch)
            files["model.h5"] = "the whole model, legacy HDF5; Keras 2: load_model(compile=False)"
        with contextlib.redirect_stdout(None):
            model.export(os.path.join(scratch, "saved_model"), verbose=False)
        files["saved_model"] = "for inference; any TF 2: tf.saved_model.load, signature serving_default"
        notes: list[str] = []
        checked, max_error = _check_in_keras2(model, scratch, samples, config is not None, notes)
        if notes:
            del files["model.weights.h5"]
        refuse_existing(target, "a folder")
        os.rename(scratch, target)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if config is None:
        notes.append("the architecture (architecture=False): write the model in Keras 2 code, "
                     "with the same layer names, and load model.weights.h5 into it")
    return Keras2Export(target, files, notes + _not_carried(model), checked, max_error)


def tf215_reads() -> dict[str, Any]:
    """What TensorFlow 2.15.1 (Keras 2.15) read of the files newer Keras versions write, as measured.

    The course stores it in ``tests/data/tf215-reads/RESULTS.json``, measured by
    ``make_results.py`` beside it (TF 2.15.1 does not install beside TF 2.21):
    ``{"tensorflow": "2.15.1", "results": {writer: {format: verdict}}}``, where a
    verdict is ``"max error ..."`` against the model's stored output, or the error.
    Needs a checkout of the course.

    Example:
        >>> tf215_reads()["results"]["keras 3.15"]["SavedModel"]
        'max error 0.0e+00'
    """
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "data", "tf215-reads", "RESULTS.json")
    if not os.path.isfile(path):
        raise FileNotFoundError("tests/data/tf215-reads/RESULTS.json is missing: this needs a checkout of the course")
    with open(path, encoding="utf-8") as file:
        return json.load(file)
