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
    run = run_keras2("model = keras.models.load_model('k2/sm'); model.save_weights('k3/m.weights.h5')")

``run_keras2`` runs Keras 2 code (``tf-keras`` with ``TF_USE_LEGACY_KERAS=1``)
in a subprocess: the one-time bridge for files only Keras 2 can open.
None of the recipes overwrites an existing file.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import (
    VALUE_SUFFIX,
    CheckpointMismatchError,
    Keras2MismatchError,
    Keras2RunError,
    ModelNotBuiltError,
    NotACheckpointError,
    NotAKeras2CheckpointError,
)
from helpers.files import path_text, refuse_existing
from helpers.migration import RestoreReport, restore_name_based
from helpers.notebook import wrap_output
from helpers.object_graph import NameBasedCheckpointError, ObjectGraph, checkpoint_paths, read_object_graph

__all__ = [
    "KERAS2_ENVIRONMENT",
    "Keras2MismatchError",
    "Keras2RestoreReport",
    "Keras2Run",
    "Keras2RunError",
    "ModelNotBuiltError",
    "NotAKeras2CheckpointError",
    "convert_legacy_h5",
    "describe_legacy_h5",
    "keras2_key_map",
    "keras3_checkpoint_keys",
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
    try:
        graph = read_object_graph(ckpt_path, include_empty=True)
    except NameBasedCheckpointError:
        raise NotAKeras2CheckpointError(
            ckpt_path, "it is name-based (a TF1 Saver wrote it): use helpers.migration.restore_name_based"
        ) from None
    names = {edge.name for edge in graph.edges}
    if names & _KERAS3_EDGES:
        raise NotAKeras2CheckpointError(
            ckpt_path,
            "Keras 3 wrote it (its object graph has Keras 3 edges such as "
            f"{sorted(names & _KERAS3_EDGES)[0]!r}): restore it with "
            "tf.train.Checkpoint(model=model).restore(path).assert_consumed()",
        )
    return graph


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
    if optimizer is not None:
        if not optimizer.built:
            optimizer.build(model.trainable_variables)
        if optimizer_node is not None:
            pairs.update(_optimizer_pairs(graph, children, optimizer_node, optimizer))
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
    matching = {key: variable for key, variable in pairs.items() if key not in bad}
    if matching:
        restored = restore_name_based(ckpt_path, matching, strict=False).restored
        report.restored = sorted(restored)
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

    def __repr__(self) -> str:
        kind = "a whole model (architecture + weights)" if self.has_model else "weights only"
        lines = [f"written by Keras {self.keras_version} ({self.backend}): {kind}"
                 + (", with optimizer state" if self.has_optimizer else "")]
        for layer, weights in self.layers.items():
            shown = ", ".join(f"{name} {shape}" for name, shape in weights) or "-"
            lines.append("  " + textwrap.shorten(f"{layer}: {shown}", 96))
        return "\n".join(lines)


def _open_h5(path: str | os.PathLike):
    import h5py

    text = os.fspath(path)
    if not os.path.isfile(text):
        raise NotACheckpointError(text, "no such file")
    try:
        return h5py.File(text, "r")
    except OSError:
        raise NotACheckpointError(text, "not an HDF5 file (a .keras file is a zip: use keras.models.load_model)") from None


def describe_legacy_h5(path: str | os.PathLike) -> LegacyH5:
    """Read a legacy ``.h5`` written by Keras 2's ``model.save`` or ``save_weights``: version, layers, weights.

    Raises ``NotACheckpointError`` for a missing file, a file that is not
    HDF5, or a Keras 3 ``.weights.h5`` file (another layout).

    Example:
        >>> describe_legacy_h5("k2/model.h5")      # doctest: +SKIP
        written by Keras 2.21.0 (tensorflow): a whole model (architecture + weights), with optimizer state
          dense: dense/kernel:0 (5, 2), dense/bias:0 (2,)
    """
    with _open_h5(path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        if "layer_names" not in group.attrs:
            raise NotACheckpointError(
                os.fspath(path), "not a legacy Keras .h5 (no 'layer_names'): a Keras 3 .weights.h5 file "
                "loads with model.load_weights"
            )
        layers = {}
        for layer in _text(group.attrs["layer_names"]):
            names = _text(group[layer].attrs.get("weight_names", []))
            layers[layer] = [(name, tuple(group[layer][name].shape)) for name in names]
        version = group.attrs.get("keras_version", file.attrs.get("keras_version", b"?"))
        backend = group.attrs.get("backend", file.attrs.get("backend", b"?"))
        return LegacyH5(
            keras_version=_text([version])[0],
            backend=_text([backend])[0],
            has_model="model_config" in file.attrs,
            has_optimizer="optimizer_weights" in file,
            layers=layers,
        )


def _text(values: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def convert_legacy_h5(h5_path: str | os.PathLike, out_path: str | os.PathLike, model: Any = None) -> str:
    """Re-save a Keras 2 legacy ``.h5`` in a Keras 3 format (``.keras`` or ``.weights.h5``), checked.

    Without ``model`` the ``.h5`` must hold a whole model: Keras 3 rebuilds it
    from the stored architecture (``compile=False``: the Keras 2 loss,
    metrics and optimizer state are not carried over). With ``model`` (a
    built Keras 3 model of the same architecture) only the weights are read.
    Keras 3 pairs legacy ``.h5`` weights with layers by order, so afterwards
    every value of the file is compared with the variable it went to; any
    difference raises ``CheckpointMismatchError``. Refuses to overwrite
    ``out_path`` (``WouldOverwriteError``). Returns ``out_path``.

    Example:
        >>> convert_legacy_h5("k2/model.h5", "k3/model.keras")   # doctest: +SKIP
        'k3/model.keras'
    """
    out = path_text(out_path, "output path")
    if not (out.endswith(".keras") or out.endswith(".weights.h5")):
        raise ValueError(f"out_path must end in .keras or .weights.h5 (a Keras 3 format), got {out!r}")
    refuse_existing(out, "a model file")
    description = describe_legacy_h5(h5_path)
    if model is None:
        if not description.has_model:
            raise ValueError(
                f"{os.fspath(h5_path)!r} holds weights only: pass a built Keras 3 model of the same architecture"
            )
        model = keras.models.load_model(os.fspath(h5_path), compile=False)
    else:
        _require_built(model)
        try:
            model.load_weights(os.fspath(h5_path))
        except ValueError as error:
            raise CheckpointMismatchError(os.fspath(h5_path), f"{_describe(model)} ({error})".split("\n")[0]) from None
    _compare_with_h5(h5_path, model)
    folder = os.path.dirname(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    if out.endswith(".keras"):
        model.save(out)
    else:
        model.save_weights(out)
    return out


def _compare_with_h5(h5_path: str | os.PathLike, model: Any) -> None:
    with _open_h5(h5_path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        saved = []
        for layer in _text(group.attrs["layer_names"]):
            for name in _text(group[layer].attrs.get("weight_names", [])):
                saved.append((f"{layer}/{name}", group[layer][name][()]))
    loaded = model.weights
    problems = [key for (key, value), variable in zip(saved, loaded)
                if value.shape != tuple(variable.shape) or not np.array_equal(value, variable.numpy())]
    if len(saved) != len(loaded) or problems:
        raise CheckpointMismatchError(
            os.fspath(h5_path), _describe(model),
            missing=[v.path for v in loaded[len(saved):]],
            unexpected=[key for key, _ in saved[len(loaded):]] + problems,
        )


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
