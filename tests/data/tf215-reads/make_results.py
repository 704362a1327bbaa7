"""What Keras 2.15 (TensorFlow 2.15.1) reads of the files Keras 3.15 and tf-keras 2.21 write.

Run with the course's Python (TF 2.21, Keras 3.15, tf-keras 2.21) from the repository root:

    PYTHONPATH=. .venv/bin/python tests/data/tf215-reads/make_results.py /path/to/venv-tf215/bin/python

It writes the stored functional_bn model (tests/data/tf215, written by Keras 2.15) in every
format from Keras 3.15 (here) and tf-keras 2.21 (run_keras2), plus export_for_keras2's folder,
into a temporary folder; runs READER below with TF 2.15.1; and writes RESULTS.json beside this
script: {writer: {format: "max error 0.0e+00" or the error's first line}}. Chapter 13 reads it,
so the notebook needs no TF 2.15.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from helpers.keras2 import export_for_keras2, run_keras2
from tests.realfiles import expected_output, model_input, real_file

READER = r'''
import json, os, sys
import numpy as np, tensorflow as tf
keras = tf.keras
folder = sys.argv[1]
x = np.load(os.path.join(folder, "x.npy")); y = np.load(os.path.join(folder, "y.npy"))
def twin():
    i = keras.Input((5,), name="features"); h = keras.layers.Dense(6, name="dense")(i)
    h = keras.layers.BatchNormalization(momentum=0.5, name="bn")(h)
    h = keras.layers.Activation("relu", name="relu")(h)
    return keras.Model(i, keras.layers.Dense(2, name="logits")(h), name="functional_bn")
def weights(path):
    m = twin(); m.load_weights(path); return m(x)
class Silent(Exception):
    pass
def checkpoint(path):
    m = twin(); before = np.asarray(m(x)); tf.train.Checkpoint(model=m).read(path)
    if np.array_equal(before, np.asarray(m(x))):
        raise Silent("nothing restored, no error raised")
    return m(x)
def signature(path):
    f = tf.saved_model.load(path).signatures["serving_default"]
    (name,) = f.structured_input_signature[1]
    return list(f(**{name: tf.constant(x)}).values())[0]
READS = {".keras": lambda p: keras.models.load_model(p, compile=False)(x),
         "legacy .h5": lambda p: keras.models.load_model(p, compile=False)(x),
         ".weights.h5": weights, "TF checkpoint": checkpoint, "SavedModel": signature}
results = {}
for writer in sorted(os.listdir(os.path.join(folder, "files"))):
    results[writer] = {}
    for fmt, name in json.load(open(os.path.join(folder, "names.json"))).items():
        path = os.path.join(folder, "files", writer, name)
        if not os.path.exists(path) and not os.path.exists(path + ".index"):
            continue
        try:
            error = float(np.abs(np.asarray(READS[fmt](path)) - y).max())
            results[writer][fmt] = f"max error {error:.1e}"
        except Exception as e:
            text = str(e).strip().splitlines()
            cause = [line for line in text if "Exception encountered:" in line]
            shown = (cause or text or [""])[-1].replace("Exception encountered: ", "")
            kind = "silent" if isinstance(e, Silent) else type(e).__name__
            results[writer][fmt] = f"{kind}: {shown[:160]}"
print(json.dumps({"tensorflow": tf.__version__, "results": results}))
'''
NAMES = {".keras": "model.keras", "legacy .h5": "model.h5", ".weights.h5": "model.weights.h5",
         "TF checkpoint": "ckpt/ckpt", "SavedModel": "saved_model"}
KERAS2_WRITER = """
model = keras.models.load_model(SOURCE, compile=False)
os.makedirs("files/tf-keras 2.21")
os.chdir("files/tf-keras 2.21")
model.save("model.keras"); model.save("model.h5"); model.save_weights("model.weights.h5")
tf.train.Checkpoint(model=model).write("ckpt/ckpt"); model.save("saved_model")
"""


def main(tf215_python: str) -> None:
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        x = model_input("tf215", "functional_bn").astype(np.float32)
        np.save(work / "x.npy", x)
        np.save(work / "y.npy", expected_output("tf215", "functional_bn"))
        (work / "names.json").write_text(json.dumps(NAMES))
        model = keras.models.load_model(real_file("tf215", "functional_bn"), compile=False)
        out = work / "files" / "keras 3.15"
        out.mkdir(parents=True)
        model.save(out / "model.keras"); model.save(out / "model.h5")
        model.save_weights(out / "model.weights.h5")
        tf.train.Checkpoint(model=model).write(str(out / "ckpt" / "ckpt"))
        model.export(out / "saved_model", verbose=False)
        report = export_for_keras2(model, work / "files" / "export_for_keras2", x)
        run_keras2(f"import os\nSOURCE = {str(real_file('tf215', 'functional_bn'))!r}\n" + KERAS2_WRITER,
                   cwd=work)
        own = work / "files" / "keras 2.15"  # Keras 2.15 reading the files it wrote (stored)
        for fmt, name in {".keras": "functional_bn_keras", "legacy .h5": "functional_bn",
                          ".weights.h5": "functional_bn_weights_new", "TF checkpoint": "tfckpt_noopt",
                          "SavedModel": "savedmodel_keras2"}.items():
            stored = real_file("tf215", name)
            if fmt == "TF checkpoint":
                shutil.copytree(stored.parent, own / "ckpt")
            elif stored.is_dir():
                shutil.copytree(stored, own / NAMES[fmt])
            else:
                own.mkdir(parents=True, exist_ok=True)
                shutil.copy(stored, own / NAMES[fmt])
        reader = work / "reader.py"
        reader.write_text(READER)
        done = subprocess.run([tf215_python, str(reader), str(work)], capture_output=True, text=True,
                              env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"}, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["export_for_keras2 files"] = sorted(report.files)
    result["input"] = "tests/data/tf215 functional_bn: its MANIFEST input; errors against its MANIFEST output"
    (Path(__file__).parent / "RESULTS.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
