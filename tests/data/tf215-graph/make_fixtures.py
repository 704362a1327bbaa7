"""Write TF1-style graph files with TensorFlow 2.15.1 (run with the TF 2.15.1 venv's python).

Usage: python tests/data/tf215-graph/make_fixtures.py [OUT_DIR]   (default: this script's folder)
Writes OUT_DIR/graph/model (Saver checkpoint + .meta, no `checkpoint` state file: it would name this
machine's paths) of a graph with scopes `online` and
`target` (each: dense w,b -> BatchNorm-like moving_mean/moving_variance (non-trainable) ->
relu -> dense w2,b2), flags `is_training` and `keep_prob` (placeholder_with_default),
Adam on `online` only (slots online/.../Adam), a global_step; trained 3 steps so that
online and target differ and the moving averages moved. OUT_DIR/graph/expected.json holds
the input and the outputs TF 2.15.1 computed (inference and training flags), OUT_DIR/MANIFEST.json
the entry tests/realfiles.py reads (input, the online head's inference output).
"""
import json, os, sys
import numpy as np
import tensorflow as tf

base = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
out = os.path.join(base, "graph")
os.makedirs(out, exist_ok=True)
v1 = tf.compat.v1
g = tf.Graph()
with g.as_default():
    v1.set_random_seed(7)
    x = v1.placeholder(tf.float32, [None, 4], name="x")
    y_true = v1.placeholder(tf.float32, [None, 2], name="y")
    is_training = v1.placeholder_with_default(False, [], name="is_training")
    keep_prob = v1.placeholder_with_default(1.0, [], name="keep_prob")
    outs, updates = {}, []
    for scope in ("online", "target"):
        with v1.variable_scope(scope):
            w = v1.get_variable("dense/kernel", [4, 5])
            b = v1.get_variable("dense/bias", [5], initializer=v1.zeros_initializer())
            h = tf.matmul(x, w) + b
            mean = v1.get_variable("bn/moving_mean", [5], initializer=v1.zeros_initializer(), trainable=False)
            var = v1.get_variable("bn/moving_variance", [5], initializer=v1.ones_initializer(), trainable=False)
            bm, bv = tf.nn.moments(h, [0])
            m, s = tf.cond(is_training, lambda: (bm, bv), lambda: (tf.identity(mean), tf.identity(var)))
            if scope == "online":
                updates += [v1.assign(mean, 0.9 * mean + 0.1 * bm), v1.assign(var, 0.9 * var + 0.1 * bv)]
            h = tf.nn.relu((h - m) / tf.sqrt(s + 1e-3))
            h = tf.nn.dropout(h, rate=1.0 - keep_prob)
            w2 = v1.get_variable("out/kernel", [5, 2])
            b2 = v1.get_variable("out/bias", [2], initializer=v1.constant_initializer(0.1))
            outs[scope] = tf.identity(tf.matmul(h, w2) + b2, name="logits")
    loss = tf.reduce_mean(tf.square(outs["online"] - y_true))
    step = v1.train.get_or_create_global_step()
    with tf.control_dependencies(updates):
        train = v1.train.AdamOptimizer(0.05).minimize(loss, global_step=step,
                                                    var_list=v1.trainable_variables("online/"))
    saver = v1.train.Saver()
    rng = np.random.RandomState(0)
    xs, ys = rng.randn(8, 4).astype("float32"), rng.randn(8, 2).astype("float32")
    probe = rng.randn(3, 4).astype("float32")
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {x: xs, y_true: ys, is_training: True})
        prefix = saver.save(sess, os.path.join(out, "model"), write_state=False)
        result = {
            "input": probe.tolist(),
            "online_inference": sess.run(outs["online"], {x: probe}).tolist(),
            "target_inference": sess.run(outs["target"], {x: probe}).tolist(),
            "online_training_flag": sess.run(outs["online"], {x: probe, is_training: True}).tolist(),
            "values": {v.op.name: sess.run(v).tolist() for v in v1.global_variables()},
            "written_by": f"tensorflow {tf.__version__}",
        }
with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump(result, f)
manifest = {"graph": {
    "path": "graph/model", "kind": "tf-checkpoint/tf1-saver", "written_by": result["written_by"],
    "description": "TF1 graph (Saver checkpoint + model.meta): scopes online/target, each dense -> "
                   "BatchNorm-like moving statistics -> relu -> dropout(keep_prob) -> dense; flags "
                   "is_training and keep_prob (placeholder_with_default); Adam on online only; 3 steps",
    "input": result["input"], "output": result["online_inference"],
    "notes": "output: online/logits:0 fed x only (inference flags). expected.json beside it holds every "
             "variable's value, the target head's output and the online head's with is_training=True.",
}}
with open(os.path.join(base, "MANIFEST.json"), "w") as f:
    json.dump(manifest, f, indent=1, sort_keys=True)
print(prefix, sorted(result["values"]))
