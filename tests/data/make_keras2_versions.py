"""Write tests/data/tf212, tf213, tf214: a .keras and a legacy .h5 from TensorFlow 2.12-2.14.

One script for every version: it writes into ``tests/data/tf<major><minor>/`` of the
TensorFlow that runs it (or ``--out DIR``). Make one virtual environment per version
(Python 3.11) and run it with each:

    python3.11 -m venv /tmp/venv-tf212 && /tmp/venv-tf212/bin/pip install "tensorflow-cpu==2.12.*"
    /tmp/venv-tf212/bin/python tests/data/make_keras2_versions.py

The model is the same small functional model with BatchNormalization in every version,
fit briefly so the moving statistics and the optimizer slots are non-zero; MANIFEST.json
records a fixed input and the output that version computed. The course's tests never run
this script (tests/data/conftest.py keeps pytest from importing it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402

HERE = Path(__file__).resolve().parent


def ramp(*shape: int, scale: float = 1.0, phase: float = 0.5) -> np.ndarray:
    """Fixed, non-zero, non-symmetric float32 values (the same as tf215/make_fixtures.py)."""
    n = int(np.prod(shape))
    return (np.sin(0.37 * np.arange(n) + phase) * scale).astype(np.float32).reshape(shape)


def tolist(value) -> list:
    return np.asarray(value).astype(np.float64).tolist()


def functional_bn() -> keras.Model:
    """Input(5) -> Dense(6) -> BatchNormalization -> relu -> Dense(2), fit 2 epochs (Adam, mse)."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(12)
    inputs = keras.Input((5,), name="features")
    x = keras.layers.Dense(6, name="dense")(inputs)
    x = keras.layers.BatchNormalization(momentum=0.5, name="bn")(x)
    x = keras.layers.Activation("relu", name="relu")(x)
    outputs = keras.layers.Dense(2, name="logits")(x)
    model = keras.Model(inputs, outputs, name="functional_bn")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    model.fit(ramp(32, 5, scale=2.0, phase=1.0) + 0.75, ramp(32, 2, phase=2.0), batch_size=8,
              epochs=2, shuffle=False, verbose=0)
    return model


def main(argv: list[str] | None = None) -> int:
    tag = "tf" + "".join(tf.__version__.split(".")[:2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / tag)
    out = parser.parse_args(argv).out.resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written_by = f"tensorflow {tf.__version__} / keras {version('keras')}"
    model = functional_bn()
    x = ramp(3, 5, phase=0.1) + 0.5
    y = tolist(model(x, training=False))
    model.save(out / "functional_bn.keras")
    model.save(out / "functional_bn.h5", save_format="h5")
    import zipfile
    keras_is_zip = zipfile.is_zipfile(out / "functional_bn.keras")
    keras_note = ("A zip (config.json, metadata.json, model.weights.h5)." if keras_is_zip else
                  "NOT a zip: Keras 2.12's model.save('*.keras') writes the legacy HDF5 layout "
                  "under a .keras name (the zip format needs save_format='keras_v3'). ")
    description = ("Functional: Dense(6) -> BatchNormalization(momentum=0.5) -> relu -> Dense(2), "
                   "compiled Adam + mse, fit 2 epochs (8 steps)")
    manifest = {
        "functional_bn_keras": {
            "path": "functional_bn.keras", "kind": f"keras-zip/keras{version('keras')[:4]}",
            "written_by": written_by, "description": description + f" as a .keras zip "
            f"(model.save('*.keras')) of Keras {version('keras')}", "input": tolist(x),
            "output": y, "notes": keras_note + " Holds optimizer variables (compiled, fit)."},
        "functional_bn": {
            "path": "functional_bn.h5", "kind": "legacy-h5-full/functional",
            "written_by": written_by, "description": description + " as a legacy .h5",
            "input": tolist(x), "output": y,
            "notes": "Full model with training_config and optimizer_weights."},
    }
    rows = ""
    if not keras_is_zip:
        model.save(out / "functional_bn_v3.keras", save_format="keras_v3")
        manifest["functional_bn_v3_keras"] = {
            "path": "functional_bn_v3.keras", "kind": f"keras-zip/keras{version('keras')[:4]}",
            "written_by": written_by, "description": description + " as a .keras zip, "
            "model.save('*.keras', save_format='keras_v3')", "input": tolist(x), "output": y,
            "notes": "The zip layout this version writes only when asked (keras_v3)."}
        rows = ("| functional_bn_v3_keras | `functional_bn_v3.keras` | the same model, "
                "`save_format='keras_v3'`: the zip layout |\n")
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    packages = ", ".join(f"{name} {version(name)}" for name in
                         ("tensorflow-cpu", "keras", "h5py", "numpy", "protobuf"))
    (out / "README.md").write_text(f"""# Real files written by TensorFlow {tf.__version__} / Keras {version('keras')}

Written by `tests/data/make_keras2_versions.py` (see its docstring to re-run) with Python
{platform.python_version()} on Linux {platform.machine()}, CPU only: {packages}.

| name | path | what it is |
|---|---|---|
| functional_bn_keras | `functional_bn.keras` | {description}, `model.save('*.keras')` |
| functional_bn | `functional_bn.h5` | the same model as a legacy full-model `.h5` |
{rows}
`functional_bn.keras`: {keras_note}

MANIFEST.json gives the fixed input and the output Keras {version('keras')} computed
(`model(x, training=False)`), as exact float32 values. The same architecture and input as
`tests/data/tf215` (`functional_bn*`); the weights differ (each version draws its own
initial values). The files and the script are the course's own work, under the course's
licence (LICENSE at the repository root); all values are made by the script.
""")
    print(f"{written_by}: {len(manifest)} artifacts in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
