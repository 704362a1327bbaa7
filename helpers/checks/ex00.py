"""Checks for notebook 00 (start here): translating a TF 1.x name, and a layer in a graph."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from unittest import mock

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

V1 = tf.compat.v1
AffineInGraph = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

# Two calls with other shapes and values: an answer that hard-codes the first call's shapes fails.
_CASES = [((4, 3), (3, 2)), ((2, 5), (5, 3))]


def _example_inputs(seed: int, x_shape: tuple[int, int], w_shape: tuple[int, int]):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=x_shape).astype(np.float32)
    w = rng.normal(size=w_shape).astype(np.float32)
    b = (np.arange(w_shape[1], dtype=np.float32) + 1.5) * (-1) ** seed  # non-zero, distinct
    return x, w, b


@contextlib.contextmanager
def _session_results() -> Iterator[list]:
    """Record what every ``Session.run`` returns while the learner's function runs."""
    results: list = []
    original = V1.Session.run

    def run(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        results.append(result)
        return result

    with mock.patch.object(V1.Session, "run", run):
        yield results


def _came_from(result: np.ndarray, results: list) -> bool:
    return any(isinstance(r, np.ndarray) and r.shape == result.shape and np.array_equal(r, result)
               for r in results)


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
                f"be {expected_shape[0]}x{expected_shape[1]}; got shape {result.shape}. Did you use tf.matmul(x, w)?")
        require(not np.allclose(result, x @ w, atol=1e-5),
                "the result is x @ w without the bias: add `b` after the product.")
        require(np.allclose(result, x @ w + b, atol=1e-5),
                "the values differ from x @ w + b: initialise the variables from the arrays you are given "
                "(`initializer=w`), and feed x to the placeholder.")
        require(_came_from(result, results),
                "the values are right but they are not what `sess.run` returned: return the session's result.")
    return "x @ w + b came back from a session run, for two inputs of different shapes"
