"""Which tf2onnx works with the pinned TensorFlow, Keras, onnx and NumPy: one run per version.

Not run by the tests (it needs old tf2onnx releases). How the chapter 14 table was measured
(TF 2.21.0, Keras 3.15.1, onnx 1.23.2, NumPy 2.4.6, Python 3.11), without touching the course's
environment: each old tf2onnx in a folder of its own, first on the path:

    pip install --no-deps --target ../tf2onnx-1.11.1 tf2onnx==1.11.1
    PYTHONPATH=../tf2onnx-1.11.1 .venv/bin/python tests/data/onnx/measure_tf2onnx_versions.py keras
    PYTHONPATH=../tf2onnx-1.11.1 .venv/bin/python tests/data/onnx/measure_tf2onnx_versions.py direct

``keras``: ``model.export(path, format="onnx")``; ``direct``: ``tf2onnx.convert.from_keras``.
Prints OK with the largest output difference, or FAIL with the error and where it was raised.
"""
import os, sys, tempfile, warnings, traceback
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tf2onnx, onnx, onnxruntime
mode = sys.argv[1]
print("tf2onnx", tf2onnx.__version__, "onnx", onnx.__version__, "numpy", np.__version__, "mode", mode)
keras.utils.set_random_seed(0)
inp = keras.Input((4,), name="features")
model = keras.Model(inp, keras.layers.Dense(3)(keras.layers.Dense(8, activation="relu")(inp)))
x = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")
model(x)
path = os.path.join(tempfile.mkdtemp(), "m.onnx")
try:
    if mode == "keras":
        model.export(path, format="onnx", verbose=False)
    else:
        import tensorflow as tf
        spec = (tf.TensorSpec((None, 4), tf.float32, name="features"),)
        tf2onnx.convert.from_keras(model, input_signature=spec, output_path=path)
    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    print("OK max diff", float(np.max(np.abs(got - model(x).numpy()))))
except Exception as e:
    tb = traceback.extract_tb(e.__traceback__)[-1]
    print("FAIL", type(e).__name__, str(e).splitlines()[0][:200], "at", os.path.basename(tb.filename), tb.lineno)
