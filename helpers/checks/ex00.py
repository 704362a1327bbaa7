"""Checks for notebook 00 (start here): translating a TF 1.x name, a layer in a graph, seeded initial weights."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require
from helpers.checks.toolkit import calls_recorded

V1 = tf.compat.v1
AffineInGraph = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

# Calls with other shapes and values: an answer that hard-codes the first call's shapes fails, and the
# last one's 1x1 result has size-1 axes that np.squeeze would drop.
_CASES = [((4, 3), (3, 2)), ((2, 5), (5, 3)), ((1, 4), (4, 1))]


def _example_inputs(seed: int, x_shape: tuple[int, int], w_shape: tuple[int, int]):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=x_shape).astype(np.float32)
    w = rng.normal(size=w_shape).astype(np.float32)
    b = (np.arange(w_shape[1], dtype=np.float32) + 1.5) * (-1) ** seed  # non-zero, distinct
    return x, w, b


# BaseSession.run serves Session and InteractiveSession alike.
_BASE_SESSION = next(cls for cls in V1.Session.__mro__ if cls.__name__ == "BaseSession")


def _session_results() -> contextlib.AbstractContextManager[list]:
    """Record (session, fetched values, feed) of every ``Session.run`` while the learner's function runs."""
    return calls_recorded(_BASE_SESSION, "run", lambda result, session, fetches, feed_dict=None, *args, **kwargs: (
        session, result, feed_dict), after=True)


def _arrays(value) -> Iterator[np.ndarray]:
    """Every NumPy array in what ``sess.run`` returned: the value itself, or inside a list, tuple or dict."""
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)


def _source_run(result: np.ndarray, results: list):
    """The last recorded run whose fetched values hold ``result`` (same shape, dtype and values), or None."""
    return next((run for run in reversed(results) if any(_same(a, result) for a in _arrays(run[1]))), None)


def _was_fed(feed_dict, x: np.ndarray) -> bool:
    values = feed_dict.values() if isinstance(feed_dict, dict) else ()
    return any(np.shape(v) == x.shape and np.array_equal(np.asarray(v), x) for v in values)


def _variable_shapes(graph: tf.Graph) -> list[tuple]:
    return [tuple(v.shape.as_list()) for v in graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)]


# Names from old answers, none of them in the notebook's table: still there, moved, or gone.
_OLD_NAMES = ["tf.nn.relu", "tf.assign", "tf.train.exponential_decay", "tf.contrib.layers.xavier_initializer",
              "tf.random_normal", "tf.matmul", "tf.Print", "tf.train.Optimizer", "tf.reduce_sum",
              "tf.contrib.slim", "tf.no_such_function"]


def _exists(dotted_name: str) -> bool:
    obj = tf
    for part in dotted_name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _modern(old_name: str) -> str | None:
    moved = "tf.compat.v1." + old_name.removeprefix("tf.")
    return old_name if _exists(old_name) else moved if _exists(moved) else None


@exercise_check("00.1")
def check_modern_name(modern_name: Callable[[str], str | None]) -> str:
    """``modern_name(old)``: the name itself, its ``tf.compat.v1`` twin, or None, as TensorFlow says."""
    for old_name in _OLD_NAMES:
        expected, answer = _modern(old_name), modern_name(old_name)
        require(answer is None or isinstance(answer, str),
                f"modern_name({old_name!r}) returned a {type(answer).__name__}: return the name as a string "
                "(or None), not the object it names.")
        if expected is None:
            require(answer is None, f"modern_name({old_name!r}) returned {answer!r}, but that name does not exist "
                                    "in TensorFlow 2.21: return None when neither name exists.")
        elif expected == old_name:
            require(answer == old_name, f"modern_name({old_name!r}) returned {answer!r}, but {old_name} still "
                                        "exists: return the old name itself when it still works.")
        else:
            require(answer == expected, f"modern_name({old_name!r}) returned {answer!r}; {old_name} is gone and "
                                        f"{expected} exists. Check every part of the dotted name, not only the "
                                        "first ('tf.train' exists, 'tf.train.exponential_decay' does not).")
    return f"{len(_OLD_NAMES)} old names translated: kept, moved to tf.compat.v1, or gone (None)"


@exercise_check("00.2")
def check_affine_in_graph(affine_in_graph: AffineInGraph) -> str:
    """``affine_in_graph(x, w, b)`` runs ``x @ w + b`` in a new graph and returns what a session gives."""
    graphs, sessions, calls = [], [], []
    for seed, (x_shape, w_shape) in enumerate(_CASES):
        x, w, b = _example_inputs(seed, x_shape, w_shape)
        with _session_results() as results:
            result = affine_in_graph(x, w, b)
        require(result is not None, "affine_in_graph returned None: return what `sess.run(...)` gives you.")
        require(not isinstance(result, (list, tuple)),
                f"you returned a {type(result).__name__}: `sess.run([y])` gives a list; run `y` itself.")
        require(isinstance(result, np.ndarray),
                f"expected the NumPy array that `sess.run` returns, got {type(result).__name__}: build the "
                "computation inside `with tf.Graph().as_default():` and run it in a `V1.Session`.")
        require(results, "no session ran: the exercise asks for the graph-mode way, a graph of ops run by "
                         "`sess.run(...)` in a `V1.Session`, not NumPy or eager TensorFlow.")
        expected_shape = (x_shape[0], w_shape[1])
        require(result.shape == expected_shape,
                f"x is {x_shape[0]}x{x_shape[1]} and w is {w_shape[0]}x{w_shape[1]}, so the result should "
                f"be {expected_shape[0]}x{expected_shape[1]}; got shape {result.shape}. Use tf.matmul(x, w), "
                "and return the array as `sess.run` gives it, without reshaping or squeezing it.")
        require(result.dtype == np.float32,
                f"the result is {result.dtype}, but the graph computes float32: return the array exactly as "
                "`sess.run` gives it, without converting it.")
        require(not np.allclose(result, x @ w, atol=1e-5),
                "the result is x @ w without the bias: add `b` after the product.")
        require(np.allclose(result, x @ w + b, atol=1e-5),
                "the values differ from x @ w + b: initialise the variables from the arrays you are given "
                "(`initializer=w`), and feed x to the placeholder.")
        run = _source_run(result, results)
        require(run is not None,
                "the values are right but they are not what `sess.run` returned: return the session's result.")
        session, _, feed_dict = run
        graph = session.graph
        require(all(graph is not earlier for earlier in graphs) and all(session is not s for s in sessions),
                "a second call ran in the graph or session of an earlier call: open a new graph "
                "(`with tf.Graph().as_default():`) and a new `V1.Session` inside the function, on every call.")
        graphs.append(graph)
        sessions.append(session)
        calls.append((x, w, b, feed_dict, graph))
    # Checked once every call has run, so that a graph shared across calls shows its own error first.
    for x, w, b, feed_dict, graph in calls:
        require(_was_fed(feed_dict, x),
                "x was not fed: make `x` a `V1.placeholder` and give its value in `feed_dict` when you run "
                "the result, rather than building it into the graph as a constant.")
        shapes = _variable_shapes(graph)
        require(w.shape in shapes and b.shape in shapes,
                "the graph lacks a variable for "
                f"{'w' if w.shape not in shapes else 'b'}: make both `w` and `b` variables "
                "(`V1.get_variable(\"b\", initializer=b)`), initialised from the arrays given.")
    return (f"x @ w + b came back from a session run with x fed and w, b variables, for {len(_CASES)} inputs "
            "of different shapes, each in a new graph and session")


# --------------------------------------------------------------------------- 00.3

InitialWeights = Callable[[int, tuple[int, int]], np.ndarray]

# (seed, shape) of each call, in order: a repeat of the first (a reused graph shows there), another
# seed, another shape. None of them is the notebook's seed or shape.
_SEED_CALLS = [(7, (4, 5)), (7, (4, 5)), (2024, (4, 5)), (11, (6, 2))]


def _session_runs() -> contextlib.AbstractContextManager[list]:
    """Record (graph, result) of every session run while the learner's function runs."""
    return calls_recorded(_BASE_SESSION, "run", lambda result, session, *args, **kwargs: (session.graph, result),
                          after=True)


def _default_draw(seed: int, shape: tuple[int, int]) -> np.ndarray:
    """What the prompt's recipe gives: one variable, default initializer, in a new graph seeded with `seed`."""
    with tf.Graph().as_default():
        V1.set_random_seed(seed)
        variable = V1.get_variable("check_00_3", shape=shape)
        with V1.Session() as sess:
            return sess.run(variable.initial_value)


def _glorot_limit(shape: tuple[int, int]) -> float:
    return float(np.sqrt(6.0 / (shape[0] + shape[1])))


def _checked_call(initial_weights: InitialWeights, seed: int, shape: tuple[int, int]):
    """Call the learner's function once; check what one call alone can show. Returns (array, graph)."""
    caller_graph = V1.get_default_graph()
    ops_before = len(caller_graph.get_operations())
    with _session_runs() as runs:
        result = initial_weights(seed, shape)
    call = f"initial_weights({seed}, {shape})"
    require(tf.executing_eagerly(),
            f"after {call} TensorFlow no longer runs eagerly: do not call disable_eager_execution(); "
            "a `with tf.Graph().as_default():` block is all graph mode needs.")
    require(result is not None, f"{call} returned None: return the array that `sess.run(...)` gives you.")
    require(not isinstance(result, (list, tuple)),
            f"{call} returned a {type(result).__name__}: `sess.run([v])` gives a list; run `v` itself.")
    require(not isinstance(result, (tf.Variable, tf.Tensor)),
            f"{call} returned a {type(result).__name__}, which has no value outside a session: return "
            "what `sess.run(...)` gives for it, a NumPy array.")
    require(isinstance(result, np.ndarray), f"{call} returned a {type(result).__name__}: return the NumPy array "
                                            "that `sess.run(...)` gives for the variable.")
    require(result.shape == shape, f"{call} returned an array of shape {result.shape}: create the variable "
                                   "with `shape=shape`.")
    require(result.dtype == np.float32, f"{call} returned {result.dtype} values: leave the variable's dtype "
                                        "at its default, float32.")
    require(bool(runs), f"{call} ran no session: the values must be the ones TensorFlow's initializer draws, "
                        "in a new graph run by a `V1.Session`, not NumPy's or eager TensorFlow's.")
    graphs = [graph for graph, value in runs if any(_same(a, result) for a in _arrays(value))]
    require(bool(graphs), f"{call} returned an array that no `sess.run` gave back: return what the session "
                          "gives for the variable.")
    graph = graphs[-1]
    require(shape in _variable_shapes(graph),
            f"{call} made no variable of shape {shape} in the graph it ran: create one with "
            "`V1.get_variable(name, shape=shape)` and return what `sess.run` gives for that variable.")
    require(graph is not caller_graph and len(caller_graph.get_operations()) == ops_before,
            f"{call} built the variable in the default graph: build it in a new one, "
            "`with tf.Graph().as_default():`, so that each call starts from an empty graph.")
    return result, graph


@exercise_check("00.3")
def check_initial_weights(initial_weights: InitialWeights) -> str:
    """``initial_weights(seed, shape)``: the default initializer's draw in a new graph seeded with `seed`."""
    results, graphs = [], []
    for seed, shape in _SEED_CALLS:
        call = f"initial_weights({seed}, {shape})"
        result, graph = _checked_call(initial_weights, seed, shape)
        require(all(graph is not earlier for earlier in graphs),
                f"{call} ran in the same graph as an earlier call: build a new graph on each call "
                "(`with tf.Graph().as_default():` inside the function).")
        limit = _glorot_limit(shape)
        require(not np.all(result == result.flat[0]),
                f"{call} returned {result.size} values all equal to {result.flat[0]:.4g}: leave out "
                "`initializer=`, so that the variable gets the default initializer's random values.")
        require(bool(np.all(np.abs(result) <= limit)),
                f"{call} returned values beyond ±{limit:.4f}, the limit sqrt(6 / (fan_in + fan_out)) of the "
                "default initializer (Glorot uniform): leave out `initializer=`.")
        require(graph.seed is not None,
                f"{call} ran a graph with no graph-level seed (its graph.seed is None): call "
                "`V1.set_random_seed(seed)` at the top of the `with tf.Graph().as_default():` block. A seed "
                "given to the initializer is an op-level seed, not the graph's.")
        require(graph.seed == seed, f"{call} ran a graph whose graph-level seed is {graph.seed}, not {seed}: "
                                    "pass the function's `seed` argument to `V1.set_random_seed`.")
        require(np.array_equal(result, _default_draw(seed, shape)),
                f"{call} returned values other than the default initializer's draw for one variable in a "
                f"new graph seeded with {seed}. Look for an `initializer=` or op-level seed, a random op made "
                "before the variable, or `initial_value` run again after the initializer.")
        if results and (seed, shape) == _SEED_CALLS[0]:
            require(np.array_equal(result, results[0]),
                    f"two calls {call} returned different values: each call must build its own new graph.")
        if results and seed != _SEED_CALLS[0][0] and shape == _SEED_CALLS[0][1]:
            require(not np.array_equal(result, results[0]),
                    f"seeds {_SEED_CALLS[0][0]} and {seed} gave identical values: the graph-level seed must "
                    "be the `seed` argument.")
        results.append(result)
        graphs.append(graph)
    (seed, shape), (other_seed, _), (_, other_shape) = _SEED_CALLS[0], _SEED_CALLS[2], _SEED_CALLS[3]
    return (f"float32 arrays of shapes {shape} and {other_shape}, each the default (Glorot uniform) "
            "initializer's draw in a new graph whose graph-level seed is `seed`; seed "
            f"{seed} gave the same array twice, seed {other_seed} another one")
