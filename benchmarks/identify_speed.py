"""How long ``identify`` takes to name each kind of file, in a fresh Python, side by side.

Each measurement is one fresh process that imports ``helpers.identify`` and names one stored file
(``tests/data``): the seconds from before the import to the answer, and the process's peak
memory (RSS). Without ``--verify``, naming should import TensorFlow only where a kind needs it;
the last column says whether it did. Give other checkouts of the course to compare, e.g. the
code before a change (runs alternate between checkouts, so a busy machine slows both alike)::

    python benchmarks/identify_speed.py --compare before=../main --runs 3

Every checkout names the files of this one. The median of ``--runs`` runs is shown.

Example:
    >>> row = measure(".", "tests/data/onnx/relu_opset5.onnx")
    >>> row["kind"], row["tensorflow"]
    ('onnx', False)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# One stored file per kind of artifact (the readers of helpers.identify), in tests/data.
SAMPLES = {
    "keras (.keras zip)": "tests/data/tf215/functional_bn.keras",
    "legacy .h5 model": "tests/data/tf215/sequential.h5",
    "legacy .h5 weights": "tests/data/tf215/sequential_weights.h5",
    "Keras 3 .h5": "tests/data/keras315/functional_bn.h5",
    ".weights.h5": "tests/data/tf215/functional_bn.weights.h5",
    "SavedModel (TF2)": "tests/data/tf215/tf_module",
    "SavedModel (Keras 2)": "tests/data/tf215/savedmodel_keras2",
    "SavedModel (TF1)": "tests/data/tf215/tf1_builder",
    ".tflite": "tests/data/litert/builtin.tflite",
    ".onnx": "tests/data/onnx/relu_opset5.onnx",
    "frozen GraphDef": "tests/data/tf215/frozen_graph.pb",
    ".meta graph": "tests/data/tf215-graph/graph/model.meta",
    "checkpoint": "tests/data/tf215/tfckpt_noopt/ckpt",
    "checkpoint folder": "tests/data/tf215/manager",
}

_CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from helpers.identify import identify
kind = identify(sys.argv[1]).kind
print(json.dumps({"seconds": time.perf_counter() - start, "kind": kind, "tensorflow": "tensorflow" in sys.modules,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(code_root: str | os.PathLike, path: str) -> dict:
    """Name ``path`` (relative to this checkout) in a fresh Python running ``code_root``'s helpers.

    Returns ``seconds`` (import and naming), ``peak_mb`` (the process's peak RSS), ``kind`` and
    ``tensorflow`` (whether naming imported it).
    """
    env = {**os.environ, "PYTHONPATH": str(Path(code_root).resolve()), "TF_CPP_MIN_LOG_LEVEL": "3"}  # -P: not the cwd
    done = subprocess.run([sys.executable, "-P", "-c", _CHILD, str(ROOT / path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"naming {path} with {code_root} failed: {done.stderr.strip()[-300:]}")
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", nargs="*", default=[], metavar="NAME=PATH",
                        help="other checkouts to time beside this one (their helpers name this one's files)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kinds", nargs="*", default=list(SAMPLES), help="which rows (default: all)")
    arguments = parser.parse_args(argv)
    roots = [tuple(item.split("=", 1)) for item in arguments.compare] + [("this", str(ROOT))]
    results: dict[tuple[str, str], list[dict]] = {}
    for kind in arguments.kinds:
        for _ in range(arguments.runs):
            for name, root in roots:  # alternate, so load on the machine falls on both alike
                results.setdefault((kind, name), []).append(measure(root, SAMPLES[kind]))
    header = f"{'kind':<22}" + "".join(f"{name + ' s':>10}{name + ' MB':>10}{'TF':>4}" for name, _ in roots)
    print(header)
    print("-" * len(header))
    for kind in arguments.kinds:
        cells = []
        for name, _ in roots:
            runs = results[(kind, name)]
            tensorflow = "yes" if any(run["tensorflow"] for run in runs) else "no"
            cells.append(f"{statistics.median(r['seconds'] for r in runs):>10.2f}"
                         f"{statistics.median(r['peak_mb'] for r in runs):>10.0f}{tensorflow:>4}")
        print(f"{kind:<22}" + "".join(cells))
    answers = {kind: {results[(kind, name)][0]["kind"] for name, _ in roots} for kind in arguments.kinds}
    differ = {kind: sorted(found) for kind, found in answers.items() if len(found) > 1}
    print("same kinds in every checkout" if not differ else f"kinds differ: {differ}")
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
