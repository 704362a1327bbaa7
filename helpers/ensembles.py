"""Recipes for loading many models of one architecture side by side.

The situation: several checkpoints of the same network, each saved without
any scope (its variables are ``dense/kernel``, ``dense/bias``, ...), and you
want all of them alive at once, to average or vote their predictions.

Graph mode (``tf.compat.v1``): build one copy of the network per scope, then
fill each scope from its checkpoint with ``restore_into_scope``: one
``Saver`` per scope that maps checkpoint names to the scoped variables,
built once and reused, so restoring again adds nothing to the graph.

TF2: ``load_keras_ensemble`` builds N Keras models and restores each with
``tf.train.Checkpoint``, checking every key first; ``VectorizedEnsemble``
stacks the members' weights so that the whole ensemble runs as one batched
call.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import CheckpointMismatchError, NotACheckpointError, StructureMismatchError
from helpers.inspection import OBJECT_GRAPH_KEY, resolve_checkpoint
from helpers.scopes import scope_name

__all__ = [
    "VectorizedEnsemble",
    "load_keras_ensemble",
    "majority_vote",
    "restore_into_scope",
    "scope_variables",
]

# One Saver per (graph, scope, checkpoint keys): a second restore reuses it.
_SAVERS: weakref.WeakKeyDictionary[tf.Graph, dict[tuple[str, frozenset[str]], tf.compat.v1.train.Saver]]
_SAVERS = weakref.WeakKeyDictionary()



def scope_variables(graph: tf.Graph, scope: str) -> dict[str, tf.Variable]:
    """The global variables under ``scope/`` in ``graph``, keyed by their name inside the scope.

    Example:
        >>> with tf.Graph().as_default() as graph:
        ...     for scope in ("m1", "m10"):
        ...         with tf.compat.v1.variable_scope(scope):
        ...             _ = tf.compat.v1.get_variable("w", shape=[2])
        >>> scope_variables(graph, "m1")
        {'w': <tf.Variable 'm1/w:0' shape=(2,) dtype=float32>}
    """
    prefix = scope_name(scope) + "/"
    return {
        variable.op.name[len(prefix):]: variable
        for variable in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
        if variable.op.name.startswith(prefix)
    }


def restore_into_scope(
    sess: tf.compat.v1.Session, ckpt_path: str | os.PathLike, scope: str
) -> tf.compat.v1.train.Saver:
    """Restore a checkpoint saved without a scope into the variables under ``scope/``.

    The checkpoint key ``dense/kernel`` fills the variable ``scope/dense/kernel``.
    The ``Saver`` doing it maps checkpoint names to variables
    (``Saver({"dense/kernel": var, ...})``); it is built on the first call
    for this graph, scope and set of keys, and reused afterwards, so calling
    again (another checkpoint of the same network, say) adds no ops to the
    graph. It is returned.

    Nothing is restored unless the names, shapes and dtypes match exactly:
    ``CheckpointMismatchError`` lists every variable missing from the
    checkpoint, every checkpoint key with no variable, and every shape or
    dtype difference. ``NotACheckpointError`` is raised for a path that is
    not a checkpoint, ``ValueError`` when no variable lives under ``scope/``.

    Example:
        >>> with tf.Graph().as_default():                      # doctest: +SKIP
        ...     outputs = [build_net(x, scope=f"m{i}") for i in (1, 2, 3)]
        ...     with tf.compat.v1.Session() as sess:
        ...         for i in (1, 2, 3):
        ...             restore_into_scope(sess, f"ckpt/model_{i}", f"m{i}")
    """
    scope = scope_name(scope)
    prefix = resolve_checkpoint(ckpt_path)
    graph = sess.graph
    targets = scope_variables(graph, scope)
    if not targets:
        scopes = sorted({v.op.name.split("/")[0] for v in graph.get_collection("variables")})
        raise ValueError(
            f"no variables under {scope + '/'!r} in the session's graph"
            + (f"; scopes with variables: {scopes}" if scopes else "")
        )
    _check_names_shapes_dtypes(prefix, targets, f"the variables under {scope + '/'!r}")
    key = (scope, frozenset(targets))
    savers = _SAVERS.setdefault(graph, {})
    with graph.as_default():  # the Saver builds and runs graph ops, even if called from eager code
        if key not in savers:
            savers[key] = tf.compat.v1.train.Saver(
                var_list=dict(sorted(targets.items())), name=f"restore_{scope.replace('/', '_')}"
            )
        savers[key].restore(sess, prefix)
    return savers[key]


def load_keras_ensemble(
    build_model: Callable[[], keras.Model],
    ckpt_paths: Sequence[str | os.PathLike],
    root: str = "model",
) -> list[keras.Model]:
    """Build one Keras model per checkpoint and restore it with ``tf.train.Checkpoint``.

    The checkpoints were written by ``tf.train.Checkpoint(**{root: model}).save(...)``
    for models made by ``build_model`` (which must return a built model, e.g.
    one that starts with ``keras.Input``). Before anything is restored each
    checkpoint is compared with what the model needs, key by key:
    ``CheckpointMismatchError`` lists every missing, unexpected or wrongly
    shaped variable, and ``NotACheckpointError`` is raised for a path that is
    not a checkpoint, or a name-based (``tf.compat.v1`` ``Saver``) one, which
    ``tf.train.Checkpoint`` would silently not restore.

    Example:
        >>> members = load_keras_ensemble(make_mlp, ["ckpt/m1-1", "ckpt/m2-1"])  # doctest: +SKIP
    """
    if not ckpt_paths:
        raise ValueError("ckpt_paths is empty: give at least one checkpoint")
    prefixes = [resolve_checkpoint(path) for path in ckpt_paths]
    models = [build_model() for _ in prefixes]
    expected = _object_checkpoint_layout(models[0], root)
    for model, prefix in zip(models, prefixes):
        reader = tf.train.load_checkpoint(prefix)
        if not reader.has_tensor(OBJECT_GRAPH_KEY):
            raise NotACheckpointError(
                prefix,
                "a name-based checkpoint (written by a tf.compat.v1 Saver); "
                "tf.train.Checkpoint needs one written by tf.train.Checkpoint",
            )
        found = _layout(reader)
        _raise_on_mismatch(prefix, f"the model under {root!r}", found, expected)
        # read(), unlike restore(), adds no save_counter of its own to match;
        # a save_counter in the checkpoint is the one key left unused.
        status = tf.train.Checkpoint(**{root: model}).read(prefix)
        status.assert_existing_objects_matched().expect_partial()
    return models


class VectorizedEnsemble(tf.Module):
    """N Dense-layer models of one architecture, run as ONE batched computation.

    The members' kernels are stacked into ``[N, in, out]`` tensors and their
    biases into ``[N, out]``; a call multiplies the batch by every member's
    kernel at once (``einsum``), so the ensemble costs one call instead of N.
    The weights are copied when the ensemble is made: training a member later
    does not change it.

    Members must be Keras models made only of ``Dense`` layers with biases,
    with equal shapes and activations; otherwise ``StructureMismatchError``
    says where they differ.

    Example:
        >>> members = [keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)]) for _ in range(5)]
        >>> ensemble = VectorizedEnsemble(members)
        >>> ensemble(np.zeros((2, 4), np.float32)).shape       # [members, batch, outputs]
        TensorShape([5, 2, 3])
    """

    def __init__(self, models: Sequence[keras.Model], name: str = "vectorized_ensemble") -> None:
        super().__init__(name=name)
        if not models:
            raise StructureMismatchError("an ensemble needs at least one model")
        layer_lists = [_dense_layers(model, number) for number, model in enumerate(models)]
        for number, layers in enumerate(layer_lists):
            if len(layers) != len(layer_lists[0]):
                raise StructureMismatchError(
                    f"model {number} has {len(layers)} Dense layers, model 0 has {len(layer_lists[0])}"
                )
        self.kernels: list[tf.Variable] = []
        self.biases: list[tf.Variable] = []
        self.activations: list[Callable] = []
        for depth, layers in enumerate(zip(*layer_lists)):
            first = layers[0]
            for number, layer in enumerate(layers[1:], start=1):
                if layer.kernel.shape != first.kernel.shape or layer.activation != first.activation:
                    raise StructureMismatchError(
                        f"model {number} differs from model 0 at Dense layer {depth}: kernel "
                        f"{tuple(layer.kernel.shape)} with {layer.activation.__name__} vs "
                        f"{tuple(first.kernel.shape)} with {first.activation.__name__}"
                    )
            self.kernels.append(tf.Variable(np.stack([np.asarray(l.kernel) for l in layers]), trainable=False))
            self.biases.append(tf.Variable(np.stack([np.asarray(l.bias) for l in layers]), trainable=False))
            self.activations.append(first.activation)

    @property
    def size(self) -> int:
        """How many members the ensemble holds."""
        return int(self.kernels[0].shape[0])

    @tf.function(reduce_retracing=True)
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        """Every member's output for the batch ``x`` of shape ``[batch, in]``: ``[members, batch, out]``."""
        x = tf.convert_to_tensor(x, dtype=self.kernels[0].dtype)
        h = tf.einsum("bi,nio->nbo", x, self.kernels[0]) + self.biases[0][:, None, :]
        h = self.activations[0](h)
        for kernel, bias, activation in zip(self.kernels[1:], self.biases[1:], self.activations[1:]):
            h = activation(tf.einsum("nbi,nio->nbo", h, kernel) + bias[:, None, :])
        return h


def majority_vote(labels: np.ndarray, num_classes: int | None = None) -> np.ndarray:
    """The most frequent label per example, for ``labels`` of shape ``[members, batch]``.

    Ties go to the smallest label. ``num_classes`` defaults to ``labels.max() + 1``.

    Example:
        >>> majority_vote(np.array([[0, 1, 2], [0, 2, 2], [1, 1, 0]]))
        array([0, 1, 2])
    """
    labels = np.asarray(labels)
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers of shape [members, batch], got {labels.dtype} {labels.shape}")
    num_classes = int(labels.max()) + 1 if num_classes is None else num_classes
    counts = np.stack([np.bincount(column, minlength=num_classes) for column in labels.T])
    return counts.argmax(axis=1)


# ---------------------------------------------------------------- internals


Layout = dict[str, tuple[tuple[int, ...], str]]


def _layout(reader) -> Layout:
    """``{key: (shape, dtype)}`` for the variables of a checkpoint (bookkeeping keys left out)."""
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    return {
        key: (tuple(shape), dtypes[key].name)
        for key, shape in shapes.items()
        if key != OBJECT_GRAPH_KEY and not key.startswith("save_counter/")
    }


def _check_names_shapes_dtypes(prefix: str, targets: dict[str, tf.Variable], described: str) -> None:
    expected = {
        name: (tuple(variable.shape.as_list()), variable.dtype.base_dtype.name)
        for name, variable in targets.items()
    }
    _raise_on_mismatch(prefix, described, _layout(tf.train.load_checkpoint(prefix)), expected)


def _raise_on_mismatch(prefix: str, described: str, found: Layout, expected: Layout) -> None:
    shared = sorted(found.keys() & expected.keys())
    error = CheckpointMismatchError(
        prefix,
        described,
        missing=expected.keys() - found.keys(),
        unexpected=found.keys() - expected.keys(),
        shape_mismatches=[(k, found[k][0], expected[k][0]) for k in shared if found[k][0] != expected[k][0]],
        dtype_mismatches=[(k, found[k][1], expected[k][1]) for k in shared if found[k][1] != expected[k][1]],
    )
    if error.problems:
        raise error


def _object_checkpoint_layout(model: keras.Model, root: str) -> Layout:
    """The keys, shapes and dtypes a ``tf.train.Checkpoint(root=model)`` checkpoint has.

    Writing the fresh model to a throwaway folder and listing what was written
    is the one public way to learn them.
    """
    if not model.built or not model.weights:
        raise ValueError("build_model must return a built model (start it with keras.Input)")
    with tempfile.TemporaryDirectory() as folder:
        path = tf.train.Checkpoint(**{root: model}).write(os.path.join(folder, "layout"))
        return _layout(tf.train.load_checkpoint(path))


def _dense_layers(model: keras.Model, number: int) -> list[keras.layers.Dense]:
    layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    for layer in layers:
        if not isinstance(layer, keras.layers.Dense) or not layer.use_bias:
            raise StructureMismatchError(
                f"model {number}: layer {layer.name!r} ({type(layer).__name__}) is not a Dense layer "
                "with a bias; VectorizedEnsemble stacks only those"
            )
    if not layers:
        raise StructureMismatchError(f"model {number} has no Dense layers")
    return layers
