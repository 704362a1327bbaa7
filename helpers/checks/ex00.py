"""Checks for notebook 00 (start here)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from helpers.checks import exercise_check, require

AffineInGraph = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _example_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    w = rng.normal(size=(3, 2)).astype(np.float32)
    b = rng.normal(size=(2,)).astype(np.float32)
    return x, w, b


@exercise_check("00.1")
def check_affine_in_graph(affine_in_graph: AffineInGraph) -> str:
    """``affine_in_graph(x, w, b)`` runs ``x @ w + b`` in a fresh graph and session."""
    for seed in (0, 1):  # twice: a second call must not collide with the first one's variables
        x, w, b = _example_inputs(seed)
        try:
            result = affine_in_graph(x, w, b)
        except ValueError as error:
            require("already exists" not in str(error),
                    "the second call failed because variable names collide: build each call's "
                    "variables inside a new graph (`with tf.Graph().as_default():`).")
            raise
        require(result is not None, "affine_in_graph returned None: return what `sess.run(...)` gives you.")
        require(isinstance(result, np.ndarray),
                f"expected the NumPy array that `sess.run` returns, got {type(result).__name__}: "
                "build the computation inside `with tf.Graph().as_default():` and run it in a "
                "`tf.compat.v1.Session`.")
        require(result.shape == (4, 2),
                f"x is 4x3 and w is 3x2, so the result should be 4x2; got shape {result.shape}. "
                "Did you use tf.matmul(x, w)?")
        require(np.allclose(result, x @ w + b, atol=1e-5),
                "the values differ from x @ w + b: initialise the variables from the arrays you are "
                "given (`initializer=w`), and feed x to the placeholder.")
    return "x @ w + b computed in a graph, twice, with fresh variables each time"
