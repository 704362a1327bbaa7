"""Write tests/data/tf215-more with TensorFlow 2.15.1 (tensorflow-cpu, in its own venv).

    venv-tf215/bin/python tests/data/tf215-more/make_fixtures.py            # rewrites this folder
    venv-tf215/bin/python tests/data/tf215-more/make_fixtures.py --out DIR  # or anywhere else

``tf1_two_metagraphs``: a TF1 ``tf.compat.v1.saved_model.Builder`` SavedModel with two
MetaGraphs, as training code wrote them: tag-set ``serve`` (a predict signature) and
tag-set ``train`` (the same graph plus a training op). ``tf.saved_model.load(path)``
needs ``tags=`` for such a folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

MANIFEST: dict = {}
import keras  # noqa: E402  (Keras 2.15, bundled)

WRITTEN_BY = f"tensorflow {tf.__version__} / keras {keras.__version__}"


def ramp(*shape: int, scale: float = 1.0, phase: float = 0.5) -> np.ndarray:
    """Fixed, non-zero, non-symmetric float32 values of a given shape."""
    n = int(np.prod(shape))
    return (np.sin(0.37 * np.arange(n) + phase) * scale).astype(np.float32).reshape(shape)


def tolist(value) -> list:
    return np.asarray(value).astype(np.float64).tolist()


def make_two_metagraphs(out: Path) -> None:
    V1 = tf.compat.v1
    x_value = ramp(3, 4, phase=0.1)
    with tempfile.TemporaryDirectory() as work:
        export = os.path.join(work, "export")
        with tf.Graph().as_default() as graph, V1.Session(graph=graph) as sess:
            V1.set_random_seed(0)
            x = V1.placeholder(tf.float32, [None, 4], name="x")
            target = V1.placeholder(tf.float32, [None, 2], name="target")
            kernel = V1.get_variable("kernel", initializer=ramp(4, 2, phase=0.3))
            bias = V1.get_variable("bias", initializer=ramp(2, phase=1.7))
            y = tf.identity(tf.matmul(x, kernel) + bias, name="y")
            loss = tf.reduce_mean(tf.square(y - target))
            train = V1.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
            sess.run(V1.global_variables_initializer())
            expected = sess.run(y, {x: x_value})
            builder = V1.saved_model.Builder(export)
            predict = V1.saved_model.predict_signature_def({"x": x}, {"y": y})
            builder.add_meta_graph_and_variables(
                sess, [V1.saved_model.tag_constants.SERVING],
                signature_def_map={"serving_default": predict})
            builder.add_meta_graph([V1.saved_model.tag_constants.TRAINING],
                                   signature_def_map={"serving_default": predict})
            builder.save()
            del train
        shutil.copytree(export, out / "tf1_two_metagraphs")
    MANIFEST["tf1_two_metagraphs"] = {
        "path": "tf1_two_metagraphs", "kind": "savedmodel/tf1-builder", "written_by": WRITTEN_BY,
        "description": "TF1 Builder SavedModel with two MetaGraphs: tag-sets serve and train "
                       "(add_meta_graph_and_variables, then add_meta_graph); signature "
                       "serving_default x (float32, (None, 4)) -> y (float32, (None, 2))",
        "input": {"x": tolist(x_value)}, "output": tolist(expected),
        "notes": "tf.saved_model.load(path) fails without tags=; tags=['serve'] loads it.",
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for name in ("tf1_two_metagraphs",):
        shutil.rmtree(out / name, ignore_errors=True)
    make_two_metagraphs(out)
    (out / "MANIFEST.json").write_text(json.dumps(MANIFEST, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(MANIFEST)} artifact(s) to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
