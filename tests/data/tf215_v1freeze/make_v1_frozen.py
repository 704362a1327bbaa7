"""Frozen GraphDefs written by TF 2.15.1's tf.compat.v1 graph_util.convert_variables_to_constants.

Run with tensorflow-cpu==2.15.1 (Python 3.11): python make_v1_frozen.py OUT_FOLDER
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

V1 = tf.compat.v1
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
batch = np.random.default_rng(3).normal(size=(3, 4)).astype(np.float32)
written_by = f"tensorflow {tf.__version__}"
manifest = {}
for name, use_resource in (("v1_resource", True), ("v1_ref", False)):
    with tf.Graph().as_default() as graph:
        V1.set_random_seed(0)
        x = V1.placeholder(tf.float32, [None, 4], name="input_x")
        w = V1.get_variable("dense/kernel", [4, 3], use_resource=use_resource)
        b = V1.get_variable("dense/bias", [3], initializer=V1.constant_initializer(0.25),
                            use_resource=use_resource)
        logits = tf.add(tf.matmul(x, w), b, name="logits")
        probs = tf.nn.softmax(logits, name="probs")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(V1.assign_add(b, [0.5, -0.5, 1.0]))
            values = sess.run({"logits": logits, "probs": probs}, {x: batch})
            frozen = V1.graph_util.convert_variables_to_constants(
                sess, graph.as_graph_def(), ["probs", "logits"])
    with open(os.path.join(out, name + ".pb"), "wb") as f:
        f.write(frozen.SerializeToString())
    with open(os.path.join(out, name + ".pbtxt"), "w") as f:
        f.write(str(frozen))
    variables = "resource" if use_resource else "reference"
    common = {"kind": "frozen-graphdef", "written_by": written_by, "input": batch.tolist(),
              "output": {k: v.tolist() for k, v in values.items()}}
    manifest[name] = {"path": name + ".pb", **common,
                      "description": f"a TF1 graph with {variables} variables frozen by "
                                     "tf.compat.v1.graph_util.convert_variables_to_constants "
                                     "(binary GraphDef)",
                      "notes": "ops in the frozen graph: " + ", ".join(sorted({n.op for n in frozen.node}))}
    manifest[name + "_pbtxt"] = {"path": name + ".pbtxt", **common,
                                 "description": f"the same frozen graph ({variables} variables) "
                                                "as a text GraphDef",
                                 "notes": "text form of " + name + ".pb"}
with open(os.path.join(out, "MANIFEST.json"), "w") as f:
    json.dump(manifest, f, indent=1)
