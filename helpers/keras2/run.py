"""``run_keras2``: Keras 2 code (``tf-keras`` with ``TF_USE_LEGACY_KERAS=1``) run in a subprocess.

The one-time bridge for files only Keras 2 can open::

    run = run_keras2("model = keras.models.load_model('k2/sm'); model.save_weights('k3/m.weights.h5')")

The script sees ``tf``, ``keras`` (Keras 2), ``np`` and ``emit(name, value)``; what it
emits comes back as NumPy arrays.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from helpers.errors import Keras2RunError

__all__ = ["KERAS2_ENVIRONMENT", "Keras2Run", "run_keras2"]


KERAS2_ENVIRONMENT = {
    "TF_USE_LEGACY_KERAS": "1",  # tf.keras is Keras 2 (the tf-keras package) in the subprocess
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "TF_ENABLE_ONEDNN_OPTS": "0",  # the same float results as the notebook's process
}

_RUNNER = """\
import sys
import numpy as np
import tensorflow as tf
keras = tf.keras
if not keras.__name__.startswith("tf_keras"):
    raise SystemExit(f"tf.keras is {keras.__name__}, not Keras 2 (tf_keras): is TF_USE_LEGACY_KERAS=1 set?")
script, results, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
keras.utils.set_random_seed(seed)
tf.config.experimental.enable_op_determinism()
outputs = {}
def emit(name, value):
    outputs[name] = np.asarray(value)
namespace = {"__name__": "__main__", "tf": tf, "keras": keras, "np": np, "emit": emit}
with open(script) as file:
    exec(compile(file.read(), "<keras 2 script>", "exec"), namespace)
np.savez(results, **outputs)
"""


@dataclass
class Keras2Run:
    """What ``run_keras2`` brought back: the arrays the script emitted, and what it printed."""

    outputs: dict[str, np.ndarray]
    stdout: str


def run_keras2(script: str, *, cwd: str | os.PathLike = ".", seed: int = 42, timeout: float = 300) -> Keras2Run:
    """Run Keras 2 code in a subprocess (``TF_USE_LEGACY_KERAS=1``) and return what it emitted.

    The script sees ``tf``, ``keras`` (Keras 2), ``np`` and ``emit(name,
    value)``; each emitted value comes back as a NumPy array in
    ``.outputs``, and what it printed in ``.stdout``. It runs in ``cwd``
    (relative paths are relative to it), seeded and with deterministic ops,
    offline: nothing is downloaded. Needs the ``tf-keras`` package of the
    same version as TensorFlow. Raises ``Keras2RunError`` with the script's
    error when it fails. Each call starts a new Python (a few seconds for
    ``import tensorflow``): do all the Keras 2 work in one script.

    Example:
        >>> run = run_keras2("print(keras.__name__.split('.')[0]); emit('twice', np.arange(3) * 2)")
        >>> print(run.stdout.strip())
        tf_keras
        >>> run.outputs["twice"]
        array([0, 2, 4])
    """
    if importlib.util.find_spec("tf_keras") is None:
        raise Keras2RunError(
            f"Keras 2 is not installed: pip install tf-keras=={tf.__version__.rsplit('.', 1)[0]}.* "
            "(its version must match TensorFlow's)"
        )
    if not os.path.isdir(os.fspath(cwd)):
        raise NotADirectoryError(f"cwd {os.fspath(cwd)!r} is not a folder")
    with tempfile.TemporaryDirectory(prefix="keras2-") as folder:
        runner, source, results = (os.path.join(folder, n) for n in ("runner.py", "script.py", "results.npz"))
        with open(runner, "w") as file:
            file.write(_RUNNER)
        with open(source, "w") as file:
            file.write(textwrap.dedent(script))
        env = {**os.environ, **KERAS2_ENVIRONMENT}
        try:
            done = subprocess.run(
                [sys.executable, runner, source, results, str(seed)],
                cwd=os.fspath(cwd), env=env, capture_output=True, text=True, timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise Keras2RunError(f"the Keras 2 script ran longer than {timeout} s and was stopped") from None
        if done.returncode != 0:
            raise Keras2RunError("the Keras 2 script failed:\n" + _last_error(done.stderr))
        with np.load(results, allow_pickle=False) as data:
            outputs = {name: data[name] for name in data.files}
    return Keras2Run(outputs=outputs, stdout=done.stdout)


def _last_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback"):
            frames = [line for line in lines[i:] if "<keras 2 script>" in line]
            return "\n".join(frames[-1:] + lines[-1:])
    return "\n".join(lines[-3:]) if lines else "(no error message)"
