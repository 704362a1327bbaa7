"""The measuring harness behind the course's timing sections (chapters 03 and 05).

A timing cell in a notebook should show the idea (what is compared, and the
result), not a page of loops. The loops live here:

* ``seconds_per_call(fn)``: one call's time, the median of several samples
  of enough calls each to be measurable (``timeit``'s way);
* ``compare_seconds(fns)``: the same for several functions, sampled in turns;
* ``first_and_later_seconds(fn)``: the first call (which traces or compiles)
  against a later one;
* ``ensemble_runners(...)``: the ways of running N members of an ensemble
  (chapter 03), each a function that computes every member's output once;
* ``weight_copy_steps(...)``: the ways of keeping a copy of a network's
  weights (chapter 05), each a function that makes ONE copy and then writes
  to the source, as a training step would, so that every way pays for the
  bytes it copies (TensorFlow's ``assign`` is copy-on-write: a sync that is
  never followed by a write copies nothing).

Times depend on the machine and its load: compare ratios measured in one
run, never absolute numbers from elsewhere, and never assert them in tests.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from helpers.files import refuse_existing_checkpoint
from helpers.state_sync import copy_weights, make_sync_op

__all__ = [
    "compare_seconds",
    "ensemble_runners",
    "first_and_later_seconds",
    "ratio_text",
    "seconds_per_call",
    "weight_copy_steps",
]

V1 = tf.compat.v1


def seconds_per_call(
    fn: Callable[[], object], *, repeat: int = 7, min_seconds: float = 0.02, best: bool = False
) -> float:
    """Seconds one call of ``fn()`` takes: the median (or, with ``best``, the minimum) of ``repeat`` samples.

    ``fn`` is called once first (tracing, allocation, caches), then the number
    of calls per sample is doubled until a sample lasts ``min_seconds``.

    Example:
        >>> seconds = seconds_per_call(lambda: sum(range(100)), repeat=3)   # about a microsecond
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    fn()
    number = 1
    while True:
        elapsed = _run(fn, number)
        if elapsed >= min_seconds or number >= 1 << 20:
            break
        number *= 2
    samples = [elapsed / number] + [_run(fn, number) / number for _ in range(repeat - 1)]
    return min(samples) if best else statistics.median(samples)


def first_and_later_seconds(fn: Callable[[], object], *, repeat: int = 7) -> tuple[float, float]:
    """Seconds of the FIRST call of ``fn()``, which pays for tracing or compiling, and of a later call.

    Call it with a function that has not run yet; the later call's time is
    ``seconds_per_call``'s median. ``repeat`` must be at least 1.

    Example:
        >>> first, later = first_and_later_seconds(tf.function(lambda: tf.ones([2]) * 2.0), repeat=3)
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    return first, seconds_per_call(fn, repeat=repeat)


def compare_seconds(
    fns: dict[str, Callable[[], object]], *, repeat: int = 7, min_seconds: float = 0.01
) -> dict[str, float]:
    """Seconds per call of each function, median of ``repeat`` samples taken in turns.

    The samples are interleaved (one of each function, then the next round),
    so a burst of load on a shared machine hits every function alike and the
    ratios between them stay meaningful.

    Example:
        >>> times = compare_seconds({"sum": lambda: sum(range(10)), "max": lambda: max(range(10))}, repeat=3)
        >>> sorted(times)
        ['max', 'sum']
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    numbers = {}
    for name, fn in fns.items():
        fn()  # warm-up: tracing, allocation, caches
        number = 1
        while _run(fn, number) < min_seconds and number < 1 << 20:
            number *= 2
        numbers[name] = number
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            samples[name].append(_run(fn, numbers[name]) / numbers[name])
    return {name: statistics.median(values) for name, values in samples.items()}


def _run(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return time.perf_counter() - start


def ratio_text(ratio: float) -> str:
    """A ratio for a table: ``'0.52x'``, ``'3.6x'``, ``'45x'``, ``'2,832x'``.

    Example:
        >>> [ratio_text(r) for r in (0.523, 3.61, 45.2, 2832.0)]
        ['0.52x', '3.6x', '45x', '2,832x']
    """
    if ratio >= 10:
        return f"{ratio:,.0f}x"
    return f"{ratio:.1f}x" if ratio >= 1 else f"{ratio:.2f}x"


# ---------------------------------------------------------------- chapter 03: N members


def ensemble_runners(
    sizes: list[int],
    batch: np.ndarray,
    build_graph_member: Callable[[tf.Tensor], tf.Tensor],
    make_keras_member: Callable[[], keras.Model],
) -> dict[int, dict[str, Callable[[], object]]]:
    """For each N in ``sizes``: six ways to compute N members' outputs for ``batch``, each done once per call.

    Graph mode (``build_graph_member(x)`` builds one member under the current
    variable scope): one Graph and Session per member, run one after the
    other; one graph with a scope per member and N ``session.run`` calls; the
    same graph and ONE ``session.run`` fetching all N outputs. TF2
    (``make_keras_member()`` returns a built Keras model): N eager model
    calls; ONE ``tf.function`` calling the N models; ONE call of
    ``helpers.ensembles.VectorizedEnsemble``. Every way returns NumPy values,
    so each pays for fetching its results. The members are built once, for
    the largest N, with random weights (the time does not depend on them).

    Example:
        >>> def build_member(x):  # graph mode: under the member's variable scope
        ...     return tf.matmul(x, tf.compat.v1.get_variable("w", [3, 2]))
        >>> def make_member():
        ...     return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        >>> runners = ensemble_runners([1, 4], np.ones((8, 3)), build_member, make_member)
        >>> len(runners[4]), np.shape(runners[4]["vectorized"]())  # 6 ways; [members, batch, outputs]
        (6, (4, 8, 2))
        >>> times = compare_seconds(runners[4], repeat=3)
    """
    from helpers.ensembles import VectorizedEnsemble

    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes must be positive member counts, got {sizes}")
    batch = np.asarray(batch, np.float32)
    features, largest = batch.shape[1], max(sizes)

    sessions = []
    for k in range(largest):  # the simplest baseline: a whole graph and session per member
        graph = tf.Graph()
        with graph.as_default():
            V1.set_random_seed(k)
            x = V1.placeholder(tf.float32, [None, features])
            y = build_graph_member(x)
            sess = V1.Session(graph=graph)
            sess.run(V1.global_variables_initializer())
        sessions.append((sess, x, y))

    graph = tf.Graph()
    with graph.as_default():
        V1.set_random_seed(0)
        shared_x = V1.placeholder(tf.float32, [None, features])
        outputs = []
        for k in range(largest):
            with V1.variable_scope(f"member_{k}"):
                outputs.append(build_graph_member(shared_x))
        shared_sess = V1.Session(graph=graph)
        shared_sess.run(V1.global_variables_initializer())

    members = [make_keras_member() for _ in range(largest)]
    tensor_batch, feed = tf.constant(batch), {shared_x: batch}
    return {n: _runners(n, sessions, shared_sess, outputs, feed, members, tensor_batch, VectorizedEnsemble)
            for n in sizes}


def _runners(n, sessions, shared_sess, outputs, feed, members, tensor_batch, vectorized_class):
    sessions, outputs, members = sessions[:n], outputs[:n], members[:n]
    batch = next(iter(feed.values()))

    @tf.function
    def all_members(inputs):
        return [member(inputs) for member in members]

    vectorized = vectorized_class(members)
    return {
        "Graph+Session each": lambda: [s.run(y, {x: batch}) for s, x, y in sessions],
        "N runs, one graph": lambda: [shared_sess.run(o, feed) for o in outputs],
        "one fused run": lambda: shared_sess.run(outputs, feed),
        "N Keras calls": lambda: [member(tensor_batch).numpy() for member in members],
        "one tf.function": lambda: [o.numpy() for o in all_members(tensor_batch)],
        "vectorized": lambda: vectorized(tensor_batch).numpy(),
    }


# ---------------------------------------------------------------- chapter 05: copies of the weights


def _square_model(width: int, value: float) -> keras.Model:
    layers = [keras.layers.Dense(width, kernel_initializer=keras.initializers.Constant(value),
                                 bias_initializer=keras.initializers.Constant(value)) for _ in range(4)]
    return keras.Sequential([keras.Input((width,)), *layers])


def weight_copy_steps(n_params: int, folder: str | os.PathLike = "timing") -> dict[str, Callable[[], object]]:
    """Ways to keep a copy of ``n_params`` weights, each ONE step: copy, then write the source.

    The network is four square Dense layers (about ``n_params`` weights).
    Each step copies source into destination one way, then adds a constant
    to every source variable (the training update that follows a sync). The
    write makes the copy real: ``assign`` is copy-on-write, so a sync alone
    would only share the source's buffers.

    * ``NumPy copy``: ``np.copyto`` between preallocated arrays, then ``+=``;
    * ``write only``: the write alone, no copy (what the step costs anyway);
    * ``graph sync op``: one ``session.run`` of the sync op, then the write (control dependency);
    * ``tf.function``: ``copy_weights`` and the write in one ``tf.function``;
    * ``get/set_weights``: through NumPy, then the write;
    * ``checkpoint``: ``tf.train.Checkpoint`` write and read into ``folder``, then the write.

    Example:
        >>> import tempfile
        >>> steps = weight_copy_steps(1000, folder=tempfile.mkdtemp())
        >>> list(steps)
        ['NumPy copy', 'write only', 'graph sync op', 'tf.function', 'get/set_weights', 'checkpoint']
        >>> times = compare_seconds(steps, repeat=3)
    """
    width = max(1, round((n_params / 4) ** 0.5))
    shapes = [shape for _ in range(4) for shape in ((width, width), (width,))]

    src_arrays = [np.full(shape, 1.0, np.float32) for shape in shapes]
    dst_arrays = [np.zeros(shape, np.float32) for shape in shapes]

    def numpy_step():
        for d, s in zip(dst_arrays, src_arrays):
            np.copyto(d, s)
            s += 1e-3

    graph = tf.Graph()
    with graph.as_default():
        for scope, value in (("online", 1.0), ("target", 0.0)):
            with V1.variable_scope(scope):
                for i in range(4):
                    V1.get_variable(f"w{i}", [width, width], initializer=tf.constant_initializer(value))
                    V1.get_variable(f"b{i}", [width], initializer=tf.constant_initializer(value))
        sync = make_sync_op("online", "target")
        with tf.control_dependencies([sync]):
            graph_step = tf.group(*[v.assign_add(tf.fill(v.shape, 1e-3)) for v in V1.trainable_variables("online/")])
        sess = V1.Session(graph=graph)
        sess.run(V1.global_variables_initializer())

    src, dst = _square_model(width, 1.0), _square_model(width, 0.0)
    deltas = [tf.fill(v.shape, 1e-3) for v in src.weights]

    @tf.function
    def write_source():
        for variable, delta in zip(src.weights, deltas):
            variable.assign_add(delta)

    @tf.function
    def assign_step():
        copy_weights(src, dst)
        write_source()

    def get_set_step():
        dst.set_weights(src.get_weights())
        write_source()

    writer, reader = tf.train.Checkpoint(model=src), tf.train.Checkpoint(model=dst)
    prefix = refuse_existing_checkpoint(os.path.join(os.fspath(folder), f"copy_{n_params}"))

    def checkpoint_step():
        reader.read(writer.write(prefix)).assert_consumed()
        write_source()

    return {
        "NumPy copy": numpy_step,
        "write only": write_source,
        "graph sync op": lambda: sess.run(graph_step),
        "tf.function": assign_step,
        "get/set_weights": get_set_step,
        "checkpoint": checkpoint_step,
    }
