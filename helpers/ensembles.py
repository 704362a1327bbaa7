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

import collections
import numbers
import os
import weakref
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import trackable_object_graph_pb2

from helpers.errors import (
    CheckpointMismatchError,
    InvalidLabelsError,
    NotACheckpointError,
    StructureMismatchError,
    first_line,
)
from helpers.files import glob_safe_prefix, path_text
from helpers.inspection import OBJECT_GRAPH_KEY, open_checkpoint, read_tensor, resolve_checkpoint
from helpers.object_graph import checkpoint_paths
from helpers.scopes import scope_name

__all__ = [
    "InvalidLabelsError",
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
        >>> import os, tempfile
        >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
        >>> with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # saved without a scope
        ...     sess.run(tf.compat.v1.get_variable("w", initializer=[1.0, 2.0]).initializer)
        ...     prefix = tf.compat.v1.train.Saver().save(sess, prefix)
        >>> with tf.Graph().as_default(), tf.compat.v1.Session() as sess:  # one copy per scope
        ...     copies = [tf.compat.v1.get_variable(f"m{i}/w", [2]) for i in (1, 2)]
        ...     savers = [restore_into_scope(sess, prefix, f"m{i}") for i in (1, 2)]
        ...     print(sess.run(copies))
        [array([1., 2.], dtype=float32), array([1., 2.], dtype=float32)]
    """
    scope = scope_name(scope)
    prefix = resolve_checkpoint(path_text(ckpt_path, "checkpoint path"))
    graph = sess.graph
    targets = _restore_targets(graph, scope)
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
        try:
            savers[key].restore(sess, glob_safe_prefix(prefix))  # TensorFlow takes [, *, ? as a pattern
        except tf.errors.OpError as error:
            raise NotACheckpointError(
                prefix, f"its data could not be read: the data file is truncated or damaged ({first_line(error)})"
            ) from None
    return savers[key]


def load_keras_ensemble(
    build_model: Callable[[], keras.Model],
    ckpt_paths: Sequence[str | os.PathLike],
    root: str = "model",
) -> list[keras.Model]:
    """Build one Keras model per checkpoint and restore it with ``tf.train.Checkpoint``.

    The checkpoints were written by ``tf.train.Checkpoint(**{root: model})``
    (``save`` or ``write``), during training too: a checkpoint that also holds
    an optimizer (``tf.train.Checkpoint(model=..., optimizer=...)``) is read
    for its model part, even where the optimizer owns the model's keys.
    ``build_model`` must return a NEW, built model on every call (one that
    starts with ``keras.Input``); models that share variables are refused.

    Before anything is restored each checkpoint is compared with what the
    model needs, variable by variable, through the checkpoint's object graph
    (no file is written to learn the layout): ``CheckpointMismatchError`` lists
    every missing, unexpected or wrongly shaped variable, and
    ``NotACheckpointError`` is raised for a path that is not a checkpoint, or a
    name-based (``tf.compat.v1`` ``Saver``) one, which ``tf.train.Checkpoint``
    would silently not restore.

    Example:
        >>> import tempfile
        >>> def make_member():
        ...     return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        >>> trained, folder = [make_member(), make_member()], tempfile.mkdtemp()
        >>> paths = [tf.train.Checkpoint(model=m).write(f"{folder}/m{i}") for i, m in enumerate(trained)]
        >>> members = load_keras_ensemble(make_member, paths)
        >>> all(np.array_equal(a.layers[0].kernel, b.layers[0].kernel) for a, b in zip(members, trained))
        True
    """
    if isinstance(ckpt_paths, (str, bytes, os.PathLike)):
        raise TypeError("ckpt_paths must be a list of checkpoint paths; for one checkpoint pass [path]")
    prefixes = [resolve_checkpoint(path_text(path, "checkpoint path")) for path in ckpt_paths]
    if not prefixes:
        raise StructureMismatchError("ckpt_paths is empty: an ensemble needs at least one checkpoint")
    models = [build_model() for _ in prefixes]
    _refuse_shared_variables(models)
    expected = _model_layout(models[0])
    for model, prefix in zip(models, prefixes):
        reader = open_checkpoint(prefix)
        if not reader.has_tensor(OBJECT_GRAPH_KEY):
            raise NotACheckpointError(
                prefix,
                "a name-based checkpoint (written by a tf.compat.v1 Saver); "
                "tf.train.Checkpoint needs one written by tf.train.Checkpoint",
            )
        found = _checkpoint_layout(reader, prefix, root)
        _raise_on_mismatch(prefix, f"the model under {root!r}", found, expected)
        # read(), unlike restore(), adds no save_counter of its own to match; whatever
        # else the file holds (save_counter, an optimizer) is left unread on purpose.
        try:  # TensorFlow takes [, *, ? in a path as a pattern
            status = tf.train.Checkpoint(**{root: model}).read(glob_safe_prefix(prefix))
        except tf.errors.OpError as error:
            raise NotACheckpointError(prefix, f"its data could not be read ({first_line(error)})") from None
        status.assert_existing_objects_matched().expect_partial()
    return models


class VectorizedEnsemble(tf.Module):
    """N Dense-layer models of one architecture, run as ONE compiled computation.

    The first layer's kernels are laid side by side as one ``[in, N*out]``
    matrix (one matmul for all members); the deeper layers' kernels are
    stacked into ``[N, in, out]`` tensors and applied with one batched matmul
    each. ``kernels`` and ``biases`` hold every layer stacked (``[N, in,
    out]``, ``[N, out]``). The weights are copied when the ensemble is made:
    training a member later does not change it.

    The forward pass is compiled with XLA (``jit_compile=True``), which fuses
    the layers into a few kernels: the ensemble then costs about what one
    call of one member costs, plus the arithmetic. XLA compiles once per
    batch shape, so the first call with a new batch size takes a fraction of
    a second; pass ``jit_compile=False`` if every call brings a new size.

    Members must be Keras models made only of ``Dense`` layers with biases,
    with equal shapes and activations, applied one after the other: a
    ``Sequential``, or a functional model that is one chain from its input to
    its output. What cannot be stacked is refused with
    ``StructureMismatchError`` saying where and what works instead: members
    that differ, other layers, a functional model with two heads (stack one
    model per head: ``keras.Model(m.inputs, m.outputs[k])``) or a layer
    applied twice, and a subclassed model (its ``call()`` cannot be read). A batch of any float dtype (NumPy's default
    float64 too) is cast to the members' dtype.

    Example:
        >>> members = [keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)]) for _ in range(5)]
        >>> ensemble = VectorizedEnsemble(members)
        >>> ensemble(np.zeros((2, 4))).shape       # [members, batch, outputs]
        TensorShape([5, 2, 3])
        >>> x = keras.Input((4,))
        >>> hidden = keras.layers.Dense(8)(x)
        >>> heads = [keras.layers.Dense(1)(hidden), keras.layers.Dense(2)(hidden)]
        >>> two_heads = keras.Model(x, heads, name="two_heads")
        >>> VectorizedEnsemble([two_heads])
        Traceback (most recent call last):
        ...
        helpers.errors.StructureMismatchError: model 0 ('two_heads') has 1 input(s) and 2 output(s); ...
        >>> VectorizedEnsemble([keras.Model(two_heads.inputs, two_heads.outputs[1])]).size
        1
    """

    def __init__(
        self, models: Sequence[keras.Model], name: str = "vectorized_ensemble", *, jit_compile: bool = True
    ) -> None:
        super().__init__(name=name)
        if isinstance(models, keras.Model) or not isinstance(models, Sequence) or not models:
            raise StructureMismatchError("an ensemble needs a non-empty list of Keras models")
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
                if (layer.kernel.shape != first.kernel.shape or layer.activation != first.activation
                        or layer.kernel.dtype != first.kernel.dtype):
                    raise StructureMismatchError(
                        f"model {number} differs from model 0 at Dense layer {depth}: kernel "
                        f"{tuple(layer.kernel.shape)} {layer.kernel.dtype} with {layer.activation.__name__} vs "
                        f"{tuple(first.kernel.shape)} {first.kernel.dtype} with {first.activation.__name__}"
                    )
            self.kernels.append(tf.Variable(np.stack([np.asarray(l.kernel) for l in layers]), trainable=False))
            self.biases.append(tf.Variable(np.stack([np.asarray(l.bias) for l in layers]), trainable=False))
            self.activations.append(first.activation)
        n, n_in, n_out = self.kernels[0].shape
        # [N, in, out] -> [in, N*out]: column block k is member k's kernel
        self._first_kernel = tf.Variable(
            np.transpose(self.kernels[0].numpy(), (1, 0, 2)).reshape(n_in, n * n_out), trainable=False
        )
        self._first_bias = tf.Variable(self.biases[0].numpy().reshape(n * n_out), trainable=False)
        # Traced once for any batch size; calling the traced function directly skips
        # tf.function's per-call argument matching, a fixed cost as large as a small ensemble's work.
        self._forward = tf.function(self._layers, jit_compile=jit_compile).get_concrete_function(
            tf.TensorSpec([None, n_in], self.kernels[0].dtype)
        )

    @property
    def size(self) -> int:
        """How many members the ensemble holds."""
        return int(self.kernels[0].shape[0])

    def __call__(self, x) -> tf.Tensor:
        """Every member's output for the batch ``x`` of shape ``[batch, in]``: ``[members, batch, out]``."""
        return self._forward(self._batch(x))

    def _batch(self, x) -> tf.Tensor:
        n_in = int(self.kernels[0].shape[1])
        try:
            x = tf.convert_to_tensor(x)
        except (TypeError, ValueError) as error:
            raise StructureMismatchError(f"the batch is not an array of numbers: {first_line(error)}") from None
        if not (x.dtype.is_floating or x.dtype.is_integer):
            raise StructureMismatchError(f"the batch holds {x.dtype.name} values; the members take numbers")
        if x.shape.rank != 2 or x.shape[-1] not in (None, n_in):
            raise StructureMismatchError(
                f"the batch has shape {tuple(x.shape)}; the members take [batch, {n_in}]"
            )
        return tf.cast(x, self.kernels[0].dtype)

    def _layers(self, x: tf.Tensor) -> tf.Tensor:
        n, _, n_out = self.kernels[0].shape
        h = tf.nn.bias_add(tf.matmul(x, self._first_kernel), self._first_bias)  # [batch, N*out]
        h = tf.transpose(tf.reshape(h, [-1, n, n_out]), [1, 0, 2])             # [N, batch, out]
        h = self.activations[0](h)
        for kernel, bias, activation in zip(self.kernels[1:], self.biases[1:], self.activations[1:]):
            h = activation(tf.matmul(h, kernel) + bias[:, None, :])
        return h


def majority_vote(labels: np.ndarray, num_classes: int | None = None) -> np.ndarray:
    """The most frequent label per example, for ``labels`` of shape ``[members, batch]``.

    Ties go to the smallest label. ``num_classes`` defaults to ``labels.max() + 1``;
    a label outside ``[0, num_classes)`` is refused with ``InvalidLabelsError``.

    Example:
        >>> majority_vote(np.array([[0, 1, 2], [0, 2, 2], [1, 1, 0]]))
        array([0, 1, 2])
    """
    labels = np.asarray(labels)
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise InvalidLabelsError(
            f"labels must be integers of shape [members, batch], got {labels.dtype} {labels.shape}"
        )
    if labels.size == 0:
        raise InvalidLabelsError(f"labels is empty (shape {labels.shape}): no member voted")
    if num_classes is None:
        num_classes = int(labels.max()) + 1
    elif isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) or num_classes < 1:
        raise InvalidLabelsError(f"num_classes must be a positive integer, got {num_classes!r}")
    outside = np.unique(labels[(labels < 0) | (labels >= num_classes)])
    if outside.size:
        raise InvalidLabelsError(
            f"labels must lie in [0, {num_classes}); found {outside[:5].tolist()}"
            + (" and more" if outside.size > 5 else "")
        )
    counts = (labels[:, :, None] == np.arange(num_classes)).sum(axis=0)  # [batch, classes]
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


def _restore_targets(graph: tf.Graph, scope: str) -> dict[str, tf.Variable | list[tf.Variable]]:
    """What a name-based restore fills under ``scope/``: ``{checkpoint key: variable}``.

    The parts of a partitioned variable (``scope/w/part_0``, ``scope/w/part_1``...)
    are saved under ONE key (``w``, the full tensor), so they are grouped into
    one list under that key; a ``Saver`` restores such a list slice by slice.
    """
    grouped: dict[str, list[tf.Variable]] = {}
    targets: dict[str, tf.Variable | list[tf.Variable]] = {}
    prefix = scope + "/"
    for name, variable in scope_variables(graph, scope).items():
        info = getattr(variable, "_save_slice_info", None)
        if info is not None and info.full_name.startswith(prefix):
            grouped.setdefault(info.full_name[len(prefix):], []).append(variable)
        else:
            targets[name] = variable
    targets.update(grouped)
    return targets


def _shape_and_dtype(target: tf.Variable | list[tf.Variable]) -> tuple[tuple[int, ...], str]:
    if isinstance(target, list):  # the parts of one partitioned variable
        return tuple(target[0]._save_slice_info.full_shape), target[0].dtype.base_dtype.name
    return tuple(target.shape.as_list()), target.dtype.base_dtype.name


def _check_names_shapes_dtypes(prefix: str, targets: dict, described: str) -> None:
    expected = {name: _shape_and_dtype(target) for name, target in targets.items()}
    _raise_on_mismatch(prefix, described, _layout(open_checkpoint(prefix)), expected)


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


def _refuse_shared_variables(models: Sequence[keras.Model]) -> None:
    """Members that share a variable would all end up holding the last checkpoint restored."""
    owner: dict[int, int] = {}
    for number, model in enumerate(models):
        if not isinstance(model, keras.Model):
            raise TypeError(f"build_model must return a Keras model, returned {type(model).__name__}")
        for variable in model.weights:
            if id(variable) in owner:
                raise StructureMismatchError(
                    f"build_model returned models {owner[id(variable)]} and {number} sharing the variable "
                    f"{variable.path!r}: each member needs variables of its own, so build_model must "
                    "make a new model on every call"
                )
            owner[id(variable)] = number


def _model_layout(model: keras.Model) -> Layout:
    """``{path from the model: (shape, dtype)}`` of every variable a checkpoint of ``model`` holds.

    The paths are those writing a checkpoint would record
    (``helpers.object_graph.checkpoint_paths``); nothing is written.
    """
    if not model.built or not model.weights:
        raise StructureMismatchError("build_model must return a built model (start it with keras.Input)")
    return {path: (tuple(v.shape), tf.as_dtype(v.dtype).name) for path, v in checkpoint_paths(model)}


def _checkpoint_layout(reader, prefix: str, root: str) -> Layout:
    """``{path from root: (shape, dtype)}`` of the variables under ``root`` in an object-based checkpoint.

    Walks the checkpoint's object graph from ``root``, so a variable whose key
    lives under another object's path (an optimizer's) is found by its place
    in the model, as ``tf.train.Checkpoint`` itself finds it.
    """
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(read_tensor(reader, prefix, OBJECT_GRAPH_KEY))
    roots = {child.local_name: child.node_id for child in graph.nodes[0].children}
    if root not in roots:
        raise CheckpointMismatchError(
            prefix, f"a model saved as tf.train.Checkpoint({root}=...); its root holds {sorted(roots)}",
            missing=[root],
        )
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    layout: Layout = {}
    seen, queue = {0, roots[root]}, collections.deque([(roots[root], "")])
    while queue:
        node_id, path = queue.popleft()
        for child in graph.nodes[node_id].children:
            if child.node_id in seen:
                continue
            seen.add(child.node_id)
            child_path = f"{path}/{child.local_name}" if path else child.local_name
            values = [a.checkpoint_key for a in graph.nodes[child.node_id].attributes if a.name == "VARIABLE_VALUE"]
            if values:
                layout[child_path] = (tuple(shapes[values[0]]), dtypes[values[0]].name)
            else:
                queue.append((child.node_id, child_path))
    return layout


_ONE_BY_ONE = "or run the members one by one (np.stack([m(x) for m in members]))"


def _dense_layers(model: keras.Model, number: int) -> list[keras.layers.Dense]:
    """The Dense layers of ``model`` in the order it applies them: one chain, input to output.

    Refuses what stacking would compute wrong: a model whose call() cannot be
    read (subclassed), several inputs or outputs (two heads), other layers,
    and a layer applied more than once.
    """
    if not isinstance(model, keras.Model):
        raise StructureMismatchError(f"model {number} is a {type(model).__name__}, not a Keras model")
    layers = [layer for layer in model.layers if not isinstance(layer, keras.layers.InputLayer)]
    for layer in layers:
        if not isinstance(layer, keras.layers.Dense) or not layer.use_bias:
            raise StructureMismatchError(
                f"model {number}: layer {layer.name!r} ({type(layer).__name__}) is not a Dense layer "
                "with a bias; VectorizedEnsemble stacks only those"
            )
    if not layers:
        raise StructureMismatchError(f"model {number} has no Dense layers")
    try:
        inputs, outputs = list(model.inputs), list(model.outputs)
    except (AttributeError, TypeError, ValueError):
        inputs = outputs = []
    if not inputs or not outputs:
        raise StructureMismatchError(
            f"model {number} ({type(model).__name__} {model.name!r}) has no inputs and outputs to follow "
            "(a subclassed model, or one built without keras.Input): nothing shows in which order its "
            "call() applies its layers, so they cannot be stacked; build each member as "
            "keras.Sequential([keras.Input(...), Dense, ...]) with the same weights, " + _ONE_BY_ONE
        )
    if len(inputs) != 1 or len(outputs) != 1:
        raise StructureMismatchError(
            f"model {number} ({model.name!r}) has {len(inputs)} input(s) and {len(outputs)} output(s); "
            "VectorizedEnsemble stacks one chain of Dense layers, one input to one output. For several "
            "heads, make one model per head, keras.Model(member.inputs, member.outputs[k]), and stack "
            "those, " + _ONE_BY_ONE
        )
    chain = _chain_to(outputs[0], inputs[0], model, number)
    if [id(layer) for layer in chain] != [id(layer) for layer in layers]:
        counts = collections.Counter(layer.name for layer in chain)
        twice = sorted(name for name, count in counts.items() if count > 1)
        problem = (f"applies the layer(s) {twice} more than once" if twice
                   else "does not apply its Dense layers one after the other")
        raise StructureMismatchError(
            f"model {number} ({model.name!r}) {problem}: VectorizedEnsemble stacks a chain in which "
            "each layer is applied once; give each application a layer of its own, " + _ONE_BY_ONE
        )
    return layers


def _chain_to(output, model_input, model: keras.Model, number: int) -> list:
    """The layers met walking back from ``output`` to ``model_input``, in the order they are applied."""
    chain, tensor = [], output
    for _ in range(10_000):
        if tensor is model_input:
            return chain[::-1]
        history = getattr(tensor, "_keras_history", None)
        nodes = getattr(getattr(history, "operation", None), "_inbound_nodes", None)
        if history is None or nodes is None or isinstance(history.operation, keras.layers.InputLayer):
            break
        node = nodes[history.node_index]
        if len(node.input_tensors) != 1:
            break
        chain.append(history.operation)
        tensor = node.input_tensors[0]
    raise StructureMismatchError(
        f"model {number} ({model.name!r}): its output is not a chain of Dense layers from its input; "
        "build each member as keras.Sequential([keras.Input(...), Dense, ...]), " + _ONE_BY_ONE
    )
