"""Write the Keras 3.15 legacy ``.h5`` fixture of tests/data/keras315 (run with the course's venv).

    python tests/data/keras315/make_fixtures.py            # rewrites this folder's files
    python tests/data/keras315/make_fixtures.py --out DIR  # or anywhere else

``model.save("x.h5")`` under Keras 3 still writes the legacy HDF5 format (with a warning):
the file a Keras 3 user who kept an old habit writes. A functional model with
BatchNormalization (moving statistics set to non-trivial values), compiled with Adam and
trained two steps so the file holds a training config.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

MANIFEST: dict = {}
WRITTEN_BY = f"tensorflow {tf.__version__} / keras {keras.__version__}"


def ramp(*shape: int, scale: float = 1.0, phase: float = 0.5) -> np.ndarray:
    """Fixed, non-zero, non-symmetric float32 values of a given shape."""
    n = int(np.prod(shape))
    return (np.sin(0.37 * np.arange(n) + phase) * scale).astype(np.float32).reshape(shape)


def functional_bn() -> keras.Model:
    keras.utils.set_random_seed(3)
    inputs = keras.Input((5,), name="features")
    hidden = keras.layers.Dense(4, activation="relu", name="dense")(inputs)
    hidden = keras.layers.BatchNormalization(name="bn")(hidden)
    outputs = keras.layers.Dense(3, name="logits")(hidden)
    model = keras.Model(inputs, outputs, name="functional_bn_k3")
    bn = model.get_layer("bn")
    bn.moving_mean.assign(ramp(4, scale=0.3, phase=0.2))
    bn.moving_variance.assign(1.0 + ramp(4, scale=0.5, phase=1.1) ** 2)
    return model


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    model = functional_bn()
    model.compile(optimizer="adam", loss="mse")
    model.fit(ramp(8, 5, phase=0.3), ramp(8, 3, phase=0.7), epochs=1, batch_size=4,
              shuffle=False, verbose=0)
    x = ramp(3, 5, phase=0.1) + 0.5
    y = model(x, training=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save(out / "functional_bn.h5")  # absl logs "This file format is considered legacy"
    MANIFEST["functional_bn_h5"] = {
        "path": "functional_bn.h5", "kind": "legacy-h5-full/keras3", "written_by": WRITTEN_BY,
        "description": "Keras 3 model.save('x.h5'): functional Dense -> BatchNormalization -> Dense, "
                       "compiled with Adam (mse), trained one epoch",
        "input": np.asarray(x, np.float64).tolist(),
        "output": np.asarray(y, np.float32).astype(np.float64).tolist(),
        "notes": "Keras 3 logs that HDF5 is legacy; keras.models.load_model(path, compile=False) "
                 "reads it back with equal outputs.",
    }
    (out / "MANIFEST.json").write_text(json.dumps(MANIFEST, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(MANIFEST)} artifact(s) to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
