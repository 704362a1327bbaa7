"""Re-measure the speed figures of chapters 03 and 05 (not run by CI; timings are never asserted).

    PYTHONPATH=. python benchmarks/ensembles_and_copies.py            # everything
    PYTHONPATH=. python benchmarks/ensembles_and_copies.py --quick    # fewer sizes

Prints, measured in one run on this machine:

1. chapter 03: for tiny (2->16->3, batch 1024) and realistic (784->256->10,
   batch 256) members and N from 1 to 32, each way of running N members
   divided by the faster of (one fused session.run, one tf.function over the
   N Keras models); VectorizedEnsemble's column is the issue's target (<= 1.2);
2. chapter 05: milliseconds per step (one copy, then one write to the
   source) for each way of keeping a copy, and the ratio to the NumPy copy;
3. eager copy_weights against the same assigns in a tf.function (fixed cost).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # as the notebooks run (helpers.notebook)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from helpers.notebook import format_table  # noqa: E402
from helpers.state_sync import copy_weights  # noqa: E402
from helpers.timing import compare_seconds, ensemble_runners, ratio_text, weight_copy_steps  # noqa: E402

V1 = tf.compat.v1


def graph_mlp(sizes):
    def build(x):
        h = x
        for depth, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            h = tf.matmul(h, V1.get_variable(f"l{depth}/kernel", [n_in, n_out])) + V1.get_variable(
                f"l{depth}/bias", [n_out], initializer=V1.zeros_initializer())
            if depth < len(sizes) - 2:
                h = tf.nn.relu(h)
        return h
    return build


def keras_mlp(sizes):
    def make():
        layers = [keras.layers.Dense(n, activation="relu") for n in sizes[1:-1]] + [keras.layers.Dense(sizes[-1])]
        return keras.Sequential([keras.Input((sizes[0],)), *layers])
    return make


def ensembles(quick: bool) -> None:
    members = [1, 4, 32] if quick else [1, 2, 4, 8, 16, 32]
    cases = {"tiny 2-16-3, batch 1024": ([2, 16, 3], 1024), "realistic 784-256-10, batch 256": ([784, 256, 10], 256)}
    ways = ["Graph+Session each", "N runs, one graph", "one fused run", "N Keras calls", "one tf.function", "vectorized"]
    for title, (sizes, batch_size) in cases.items():
        batch = np.random.default_rng(0).normal(size=(batch_size, sizes[0])).astype(np.float32)
        runners = ensemble_runners(members, batch, graph_mlp(sizes), keras_mlp(sizes))
        rows, vectorized = [], []
        for n, fns in runners.items():
            seconds = compare_seconds(fns, repeat=9, min_seconds=0.05)
            best = min(seconds["one fused run"], seconds["one tf.function"])
            rows.append([n, f"{1e3 * best:.3f}", *(ratio_text(seconds[w] / best) for w in ways)])
            vectorized.append(seconds["vectorized"] / best)
        print(f"\nchapter 03, {title}: time / faster of (fused run, one tf.function)")
        print(format_table(["N", "best (ms)", *ways], rows))
        print(f"vectorized: {ratio_text(min(vectorized))} to {ratio_text(max(vectorized))} of the faster one-call way")


def copies(quick: bool) -> None:
    sizes = [10**4, 10**6] if quick else [10**4, 10**5, 10**6, 10**7]
    ways = ["write only", "graph sync op", "tf.function", "get/set_weights", "checkpoint"]
    with tempfile.TemporaryDirectory() as folder:
        results = {n: compare_seconds(weight_copy_steps(n, folder), repeat=5) for n in sizes}
    print("\nchapter 05: milliseconds per step (one copy, then one write to the source), and / NumPy copy")
    print(format_table(["weights", "NumPy copy", *ways],
                       [[f"{n:,}", *(f"{1e3 * s[w]:.3f}" for w in ["NumPy copy", *ways])] for n, s in results.items()]))
    print(format_table(["weights", *ways],
                       [[f"{n:,}", *(ratio_text(s[w] / s["NumPy copy"]) for w in ways)] for n, s in results.items()]))


def eager_copy_cost() -> None:
    make = keras_mlp([8, 16, 16, 16, 4])
    src, dst = make(), make()

    @tf.function
    def assigns():
        for s, d in zip(src.weights, dst.weights):
            d.assign(s)

    @tf.function
    def soft_assigns():
        for s, d in zip(src.weights, dst.weights):
            d.assign(0.99 * d + 0.01 * s)

    seconds = compare_seconds({
        "hard: copy_weights, eager": lambda: copy_weights(src, dst),
        "hard: same assigns in a tf.function": assigns,
        "soft: copy_weights, eager, tau=0.01": lambda: copy_weights(src, dst, tau=0.01),
        "soft: same assigns in a tf.function": soft_assigns,
    }, repeat=15, min_seconds=0.05)
    print("\ncopy_weights' fixed cost, 8 small variables (ratio to the same assigns in a tf.function)")
    rows = []
    for kind in ("hard", "soft"):
        base = seconds[f"{kind}: same assigns in a tf.function"]
        rows += [[name, f"{1e3 * s:.3f}", ratio_text(s / base)] for name, s in seconds.items() if name.startswith(kind)]
    print(format_table(["way", "ms per call", "ratio"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes")
    quick = parser.parse_args().quick
    ensembles(quick)
    copies(quick)
    eager_copy_cost()


if __name__ == "__main__":
    main()
