"""Keep a second copy of a network's weights in memory, and sync it: snapshots and target networks.

Two flavours, side by side:

* graph mode (``tf.compat.v1``): build the network twice under two scopes
  with one builder, then ``make_sync_op(src_scope, dst_scope, tau)`` makes one
  op that copies (``tau=1``) or blends (``0 < tau < 1``, a soft or Polyak
  update) every variable of ``src_scope/`` into its namesake in ``dst_scope/``;
* eager (TF2): ``copy_weights(src, dst, tau)`` does the same between two Keras
  models, two ``tf.Module``s or two lists of variables. Call it inside your
  own ``tf.function`` to make one graph of all the assigns.

Both check the structure first and raise ``StructureMismatchError`` naming
every variable that does not line up, instead of copying part of it.
A soft update moves the destination a fraction ``tau`` of the way::

    dst <- (1 - tau) * dst + tau * src
"""

from __future__ import annotations

import dataclasses
import numbers
import weakref
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import StructureMismatchError
from helpers.scopes import scope_name

__all__ = ["buffer_address", "copy_weights", "make_sync_op", "network_variables", "paired_variables"]

_V1 = tf.compat.v1


def _check_tau(tau: float) -> float:
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise TypeError(f"tau must be a number in (0, 1], got {type(tau).__name__}")
    if not 0.0 < tau <= 1.0:  # also false for NaN
        raise ValueError(
            f"tau must be in (0, 1], got {tau}: 1 copies the weights, "
            "0.01 moves the destination 1% of the way towards the source"
        )
    return float(tau)


def network_variables(graph: tf.Graph | None = None) -> list[tf.Variable]:
    """The global variables of ``graph`` that make up its networks: optimizer slots left out.

    "A copy of the network" means every variable that decides what it
    computes, trainable or not (a BatchNorm's moving mean and variance
    included), and not the state of the optimizer that trains it. A slot
    (``Adam``'s ``w/Adam`` and ``w/Adam_1``, ``w/Momentum``, an
    ``ExponentialMovingAverage`` shadow) is named under the variable it
    belongs to, so a variable named under another variable is left out.
    Optimizer variables of no variable (``beta1_power``, ``global_step``)
    are kept: a sync names them if they lie under one scope only.

    Example:
        >>> with tf.Graph().as_default() as g:
        ...     with tf.compat.v1.variable_scope("net"):
        ...         w = tf.compat.v1.get_variable("w", [1], initializer=tf.ones_initializer())
        ...         mean = tf.compat.v1.get_variable("mean", [1], trainable=False)
        ...     _ = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9).minimize(tf.reduce_sum(w))
        >>> [v.op.name for v in g.get_collection("variables")]
        ['net/w', 'net/mean', 'net/w/Momentum']
        >>> [v.op.name for v in network_variables(g)]
        ['net/w', 'net/mean']
    """
    graph = graph or _V1.get_default_graph()
    everything = graph.get_collection(_V1.GraphKeys.GLOBAL_VARIABLES)
    names = {v.op.name for v in everything}

    def is_slot(name: str) -> bool:
        parts = name.split("/")
        return any("/".join(parts[:end]) in names for end in range(1, len(parts)))

    return [v for v in everything if not is_slot(v.op.name)]


def paired_variables(
    src_scope: str,
    dst_scope: str,
    collection: str | None = None,
    graph: tf.Graph | None = None,
) -> list[tuple[tf.Variable, tf.Variable]]:
    """Pair the variables under ``src_scope/`` with those under ``dst_scope/`` by relative name.

    ``online/layer1/w`` pairs with ``target/layer1/w``, whatever order the
    variables were created in. By default the variables are those of the
    network (``network_variables``: every global variable, trainable or not,
    optimizer slots left out); ``collection`` names a graph collection to
    take instead, as it is (``tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES``:
    trainable ones only). Raises ``StructureMismatchError`` listing every
    name found on one side only, and every pair whose shape or dtype differs.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     for scope in ("online", "target"):
        ...         with tf.compat.v1.variable_scope(scope):
        ...             _ = tf.compat.v1.get_variable("w", [2], initializer=tf.zeros_initializer())
        ...     [(s.name, d.name) for s, d in paired_variables("online", "target")]
        [('online/w:0', 'target/w:0')]
    """
    graph = graph or _V1.get_default_graph()
    src_prefix, dst_prefix = scope_name(src_scope) + "/", scope_name(dst_scope) + "/"
    if src_prefix == dst_prefix:
        raise StructureMismatchError(f"source and destination are the same scope {src_prefix!r}")
    if src_prefix.startswith(dst_prefix) or dst_prefix.startswith(src_prefix):
        outer, inner = sorted((src_prefix, dst_prefix), key=len)
        raise StructureMismatchError(
            f"{inner!r} lies inside {outer!r}: the variables of one scope would be synced into themselves"
        )
    if collection is None:
        everything, taken = network_variables(graph), "network variables (optimizer slots left out)"
    else:
        everything, taken = graph.get_collection(collection), f"variables in the {collection!r} collection"
    src = {v.op.name[len(src_prefix):]: v for v in everything if v.op.name.startswith(src_prefix)}
    dst = {v.op.name[len(dst_prefix):]: v for v in everything if v.op.name.startswith(dst_prefix)}
    if not src:
        raise StructureMismatchError(f"no {taken} under {src_prefix!r}")
    problems = []
    if set(src) - set(dst):
        problems.append(f"missing under {dst_prefix}: {_names(set(src) - set(dst))}")
    if set(dst) - set(src):
        problems.append(f"only under {dst_prefix}: {_names(set(dst) - set(src))}")
    for name in sorted(set(src) & set(dst)):
        problems += _differences(repr(name), src[name], dst[name], src_prefix, dst_prefix)
    if problems:
        if collection is None:
            problems.append(
                "(compared: every global variable, trainable or not, optimizer slots left out; "
                "collection=tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES compares the trainable ones only)"
            )
        raise StructureMismatchError(
            f"cannot sync {src_prefix!r} into {dst_prefix!r}:\n  " + "\n  ".join(problems)
        )
    aliased = [name for name in sorted(src) if _shared_name(src[name]) == _shared_name(dst[name])]
    if aliased:
        raise StructureMismatchError(
            f"{src_prefix!r} and {dst_prefix!r} are ONE set of variables: {_names(aliased)} share the "
            f"shared_name {_shared_name(src[aliased[0]])!r} (a .meta imported twice?); give each copy "
            "its own (helpers.metagraph.import_scoped)"
        )
    return [(src[name], dst[name]) for name in sorted(src)]


def make_sync_op(
    src_scope: str,
    dst_scope: str,
    tau: float = 1.0,
    *,
    collection: str | None = None,
    name: str = "sync",
) -> tf.Operation:
    """One graph op that copies (or softly blends) ``src_scope/`` into ``dst_scope/``.

    Variables are paired by their name relative to the scope (see
    ``paired_variables``). What is synced is a copy of the NETWORK, as
    ``copy_weights`` copies a Keras model's ``weights``: every global
    variable under the scope, trainable or not (a BatchNorm's moving mean
    and variance too, or the copy would normalize with stale statistics),
    and not the optimizer's slots (``w/Adam``: see ``network_variables``).
    ``collection`` picks a graph collection instead, taken as it is:
    ``tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES`` syncs the trainable
    variables only (what this function did before), ``GLOBAL_VARIABLES``
    everything, slots included (they then have to exist on both sides).
    Build the op ONCE, outside the training loop, and run it as often as you like.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     for scope, value in (("online", 1.0), ("target", 0.0)):
        ...         with tf.compat.v1.variable_scope(scope):
        ...             _ = tf.compat.v1.get_variable("w", [2], initializer=tf.constant_initializer(value))
        ...     soft = make_sync_op("online", "target", tau=0.25)
        ...     with tf.compat.v1.Session() as sess:
        ...         sess.run(tf.compat.v1.global_variables_initializer())
        ...         sess.run(soft)
        ...         sess.run(soft)
        ...         print(sess.run(tf.compat.v1.trainable_variables("target/")[0]))
        [0.4375 0.4375]

    Non-trainable variables come along; the optimizer's slots do not:

        >>> with g.as_default():
        ...     for scope in ("online", "target"):
        ...         with tf.compat.v1.variable_scope(scope):
        ...             _ = tf.compat.v1.get_variable("moving_mean", [2], trainable=False)
        ...     online_w = tf.compat.v1.trainable_variables("online/")[0]
        ...     _ = tf.compat.v1.train.AdamOptimizer().minimize(tf.reduce_sum(online_w))  # online/w/Adam
        ...     [(s.op.name, d.op.name) for s, d in paired_variables("online", "target")]
        [('online/moving_mean', 'target/moving_mean'), ('online/w', 'target/w')]
    """
    tau = _check_tau(tau)
    if tf.executing_eagerly():
        raise RuntimeError(
            "make_sync_op builds a graph-mode op: call it inside `with graph.as_default():`; "
            "in eager code use copy_weights"
        )
    pairs = paired_variables(src_scope, dst_scope, collection)
    _refuse_soft_update_of_integers([dst for _, dst in pairs], tau)
    return tf.group(*[_assign(dst, src, tau) for src, dst in pairs], name=name)


def copy_weights(src, dst, tau: float = 1.0) -> int:
    """Copy (``tau=1``) or blend (``0 < tau < 1``) the weights of ``src`` into ``dst``; eager.

    ``src`` and ``dst`` are two Keras models (or layers), two ``tf.Module``s,
    or two lists of variables, of the same structure: variables are paired
    in order (``model.weights``, ``module.variables``), and each pair must
    have the same short name (``kernel``, ``bias``: the last part of the
    name), shape and dtype. Returns the number of variables written.

    A Keras model's ``weights`` are the network: trainable and non-trainable
    (a BatchNorm's moving mean and variance are copied too), without the
    optimizer's variables or a dropout layer's random-generator state. That
    is what ``make_sync_op`` syncs in a graph by default. To copy the
    trainable weights only, pass the lists: ``copy_weights(src.trainable_weights,
    dst.trainable_weights)``.

    Call it eagerly, or inside your own ``tf.function``. Eagerly, the
    structure of a pair is checked on its first copy only, and all the
    assigns run as ONE call of a traced function, made on the first copy and
    kept on ``dst`` (it holds the pair's variables, so ``dst`` keeps ``src``'s
    variables alive). It is called directly, without ``tf.function``'s
    per-call argument matching, so a sync at every step costs less than the
    same assigns in your own ``tf.function``.
    Refusals (other structures, shared variables) happen before anything is
    written. Inside your own ``tf.function``, let it close over the models.
    A Keras 3 variable passed AS AN ARGUMENT of a ``tf.function`` arrives as
    a read-only tensor, and this function says so.

    Example:
        >>> online = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
        >>> target = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
        >>> copy_weights(online, target, tau=0.5)
        2
        >>> target.layers[0].kernel.numpy().ravel().tolist()
        [0.5, 0.5]
    """
    tau = _check_tau(tau)
    src_vars, dst_vars = _variables_of(src, "src"), _variables_of(dst, "dst")
    checked = _checked_pair(src_vars, dst_vars)
    if tau != 1.0 and checked.integers:
        _refuse_soft_update_of_integers(dst_vars, tau)
    if tf.executing_eagerly():
        _compiled_copy(dst, checked.key, src_vars, dst_vars)(tau)
    else:
        for s, d in zip(src_vars, dst_vars):
            _assign(d, s, tau)
    return len(src_vars)


@dataclasses.dataclass(frozen=True)
class _CheckedPair:
    """A (src, dst) pair of variable lists whose structure was checked."""

    key: tuple  # the variables' ids
    refs: tuple  # weak references to them, to tell a recycled id from the same variable
    integers: bool  # does dst hold integer variables (refused by a soft update)?


# Checked pairs by their variables' ids, so a check runs once per pair, not once per copy.
_CHECKED: dict[tuple, _CheckedPair] = {}


def _checked_pair(src_vars: list, dst_vars: list) -> _CheckedPair:
    key = (tuple(map(id, src_vars)), tuple(map(id, dst_vars)))
    checked = _CHECKED.get(key)
    if checked is not None and all(ref() is v for ref, v in zip(checked.refs, src_vars + dst_vars)):
        return checked
    for variables, what in ((src_vars, "src"), (dst_vars, "dst")):
        _refuse_non_variables(variables, what)
    _check_pair(src_vars, dst_vars)
    if len(_CHECKED) >= 64:  # a few pairs are synced over and over; forget the oldest
        _CHECKED.pop(next(iter(_CHECKED)))
    integers = any(not tf.as_dtype(v.dtype).is_floating for v in dst_vars)
    checked = _CHECKED[key] = _CheckedPair(key, tuple(weakref.ref(v) for v in src_vars + dst_vars), integers)
    return checked


def _check_pair(src_vars: list, dst_vars: list) -> None:
    shared = {id(v) for v in src_vars} & {id(v) for v in dst_vars}
    if shared:
        names = [_leaf(v) for v in src_vars if id(v) in shared]
        raise StructureMismatchError(
            f"src and dst share {len(shared)} of their variables ({', '.join(names[:4])}"
            f"{', ...' if len(names) > 4 else ''}): a model copied into itself, or into a model "
            "built from the same layers, is not a second copy; build dst with its own variables"
        )
    problems = []
    if len(src_vars) != len(dst_vars):
        problems.append(f"src has {len(src_vars)} variables, dst has {len(dst_vars)}")
    for index, (s, d) in enumerate(zip(src_vars, dst_vars)):
        if _leaf(s) != _leaf(d):
            problems.append(f"variable {index} is {_leaf(s)!r} in src but {_leaf(d)!r} in dst")
        problems += _differences(f"variable {index} ({_leaf(s)})", s, d, "src", "dst")
    if problems:
        raise StructureMismatchError("cannot copy src into dst:\n  " + "\n  ".join(problems))


def _tf_variable(variable) -> tf.Variable:
    """The ``tf.Variable`` behind a Keras 3 variable (its ``.value``), or the variable itself."""
    inner = getattr(variable, "value", None)
    return inner if isinstance(inner, tf.Variable) else variable


def _compiled_copy(dst, key: tuple, src_vars: list, dst_vars: list):
    """A function ``copy(tau)`` doing every assign of this pair in one compiled call, made once.

    The compiled functions close over the variables and take no arguments,
    one per value of ``tau`` (the first few values; past that, one function
    takes ``tau`` as a tensor, so an annealed ``tau`` costs one trace), so a
    call costs what the same assigns in your own ``tf.function`` cost. They
    are kept on ``dst`` (outside Keras' and tf.Module's tracking) and live as
    long as ``dst``; for plain lists of variables, which cannot hold them, the
    variables are passed as arguments of one shared function instead.
    """
    plans = None
    if not isinstance(dst, (list, tuple)):
        plans = getattr(dst, "_copy_weights_plans", None)
        if plans is None:
            plans = {}
            try:
                object.__setattr__(dst, "_copy_weights_plans", plans)
            except (AttributeError, TypeError):  # an object without a __dict__
                plans = None
    if plans is None:
        src_tf, dst_tf = [_tf_variable(v) for v in src_vars], [_tf_variable(v) for v in dst_vars]
        return lambda tau: _assign_all(dst_tf, src_tf, tau)
    if key not in plans:
        plans[key] = _CopyPlan(list(zip(src_vars, dst_vars)))
    return plans[key]


class _CopyPlan:
    """The compiled copies of one (src, dst) pair: ``plan(tau)``.

    Each is a traced function called directly (a concrete function): that
    skips ``tf.function``'s per-call argument matching, a fixed cost as large
    as the assigns of a small model. The assigns write the ``tf.Variable``s
    behind Keras' variables and read nothing back.
    """

    _FIXED_TAUS = 4  # no-argument functions for this many values of tau

    def __init__(self, pairs: list) -> None:
        self.pairs = [(_tf_variable(s), _tf_variable(d)) for s, d in pairs]
        self.by_tau: dict[float, object] = {}

        def blend(tau):
            for s, d in self.pairs:
                t = tf.cast(tau, d.dtype)
                d.assign((1.0 - t) * d + t * s, read_value=False)

        self.any_tau = tf.function(blend).get_concrete_function(tf.TensorSpec([], tf.float64))

    def __call__(self, tau: float) -> None:
        function = self.by_tau.get(tau)
        if function is None and len(self.by_tau) < self._FIXED_TAUS:

            def assign_all():  # no arguments: calling it matches nothing
                for s, d in self.pairs:
                    d.assign(_new_value(d, s, tau), read_value=False)

            function = self.by_tau[tau] = tf.function(assign_all).get_concrete_function()
        if function is None:
            self.any_tau(tf.constant(tau, tf.float64))
        else:
            function()


@tf.function
def _assign_all(dst_vars, src_vars, tau: float):
    for d, s in zip(dst_vars, src_vars):  # tau is a Python number: one trace per structure and tau
        _assign(d, s, tau)


def buffer_address(variable) -> int:
    """The memory address of the buffer that holds ``variable``'s values now (eager, CPU).

    Two variables with the same address share one buffer. It shows
    TensorFlow's copy-on-write: ``dst.assign(src)`` makes ``dst`` share
    ``src``'s buffer, and the bytes are copied only when one of the two is
    next written.

    Example:
        >>> src, dst = tf.Variable(tf.ones([1000])), tf.Variable(tf.zeros([1000]))
        >>> _ = dst.assign(src)
        >>> buffer_address(dst) == buffer_address(src)
        True
        >>> _ = src.assign_add(tf.ones([1000]))          # a write: now the copy is made
        >>> buffer_address(dst) == buffer_address(src)
        False
    """
    tensor = variable
    for _ in range(3):  # a Keras variable's .value is the tf.Variable; a tf.Variable's .value() the tensor
        if isinstance(tensor, tf.Tensor):
            break
        value = getattr(tensor, "value", None)
        tensor = value() if callable(value) else value
    if not isinstance(tensor, tf.Tensor) or not hasattr(tensor, "numpy"):
        raise TypeError(f"buffer_address needs an eager variable, got {type(variable).__name__}")
    return int(np.from_dlpack(tensor).__array_interface__["data"][0])


def _variables_of(obj, what: str) -> list:
    if isinstance(obj, keras.layers.Layer):
        variables = list(obj.weights)
        if not variables:
            raise StructureMismatchError(
                f"{what} has no weights yet: a Keras model makes them when it is built "
                "(give it an Input, or call it once)"
            )
    elif isinstance(obj, tf.Module):
        variables = list(obj.variables)
    elif isinstance(obj, Sequence) and not isinstance(obj, str):
        variables = list(obj)
    else:
        raise TypeError(
            f"{what} must be a Keras model or layer, a tf.Module or a list of variables, "
            f"got {type(obj).__name__}"
        )
    return variables


def _refuse_non_variables(variables: list, what: str) -> None:
    for variable in variables:
        if isinstance(variable, tf.Tensor):
            raise TypeError(
                f"{what} holds a tensor, not a variable: a Keras variable passed as an argument "
                "of a tf.function arrives as a tensor; let the function close over the model instead"
            )
        if not hasattr(variable, "assign"):
            raise TypeError(f"{what} holds a {type(variable).__name__}, not a variable")


def _new_value(dst, src, tau: float):
    """What ``dst`` holds after a copy (``tau=1``) or a soft update of ``src`` into it."""
    return src if tau == 1.0 else (1.0 - tau) * dst + tau * src


def _assign(dst, src, tau: float):
    return dst.assign(_new_value(dst, src, tau))


def _refuse_soft_update_of_integers(variables, tau: float) -> None:
    if tau == 1.0:
        return
    integers = [_leaf(v) for v in variables if not tf.as_dtype(v.dtype).is_floating]
    if integers:
        raise StructureMismatchError(
            f"a soft update (tau={tau}) blends values, but {_names(integers)} hold integers "
            "(a step counter?): copy them with tau=1, or leave them out"
        )


def _shared_name(variable) -> str:
    """The name the runtime knows a graph variable by (resource variables), else its op name."""
    op = variable.op
    if op.type == "VarHandleOp":
        return op.get_attr("shared_name").decode() or op.name
    return op.name


def _leaf(variable) -> str:
    return variable.name.split(":")[0].rsplit("/", 1)[-1]


def _differences(label: str, src, dst, src_side: str, dst_side: str) -> list[str]:
    problems = []
    src_shape, dst_shape = tuple(src.shape), tuple(dst.shape)
    if src_shape != dst_shape:
        problems.append(f"{label} has shape {src_shape} in {src_side}, {dst_shape} in {dst_side}")
    src_dtype, dst_dtype = tf.as_dtype(src.dtype).name, tf.as_dtype(dst.dtype).name
    if src_dtype != dst_dtype:
        problems.append(f"{label} has dtype {src_dtype} in {src_side}, {dst_dtype} in {dst_side}")
    return problems


def _names(names) -> str:
    return ", ".join(repr(name) for name in sorted(names))
