"""Is this machine ready for the course? One command answers: ``make check``.

Run it before a workshop (instructors ask every learner to). It checks, in about
half a minute, everything the chapters need: the Python version, the pinned
TensorFlow and Keras, a checkpoint written and read back, a Keras model saved
and loaded, Keras 2 and the JAX backend each in a process of its own, plotting,
and a Jupyter kernel that starts and runs code. Each line
says what was checked; a failure says what to do.

Example:
    >>> run_checks([check_python, check_checkpoint_round_trip])  # make check runs all of CHECKS
    ✔ Python 3... (the course supports 3.11, 3.12 and 3.13)  (... s)
    ✔ TensorFlow writes and restores a checkpoint  (... s)
    This machine is ready for the course.
    True
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SUPPORTED_PYTHONS = ((3, 11), (3, 12), (3, 13))
EXPECTED = {"tensorflow": "2.21.0", "keras": "3.15.1"}
EXPECTED_JAX = {"jax": "0.10.2", "orbax-checkpoint": "0.12.8"}  # chapter 16's other backend
EXPECTED_KERAS2 = "2.21.0"  # tf-keras, which chapter 10 runs in a process of its own
# Run with TF_USE_LEGACY_KERAS=1 in a fresh interpreter, as chapter 10's helpers do.
_KERAS2_CODE = """
import numpy as np
import tensorflow as tf
assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
path = "model.h5"  # the working folder is a temporary one, removed afterwards
model.save(path)
loaded = tf.keras.models.load_model(path)
x = np.ones((1, 3), dtype="float32")
assert np.allclose(model(x), loaded(x))
print("ok")
"""
# Run with KERAS_BACKEND=jax in a fresh interpreter: the backend is fixed at Keras's first import.
_JAX_CODE = """
import keras
import numpy as np
assert keras.backend.backend() == "jax", keras.backend.backend()
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
model.compile("adam", "mse")
model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
print("ok")
"""


class NotReady(RuntimeError):
    """One thing the course needs is missing; the message says what to do."""


def check_python() -> str:
    version = sys.version_info[:2]
    if version not in SUPPORTED_PYTHONS:
        raise NotReady(f"Python {sys.version.split()[0]} is not supported: use 3.11, 3.12 or 3.13 "
                       "(make setup PYTHON=python3.12)")
    return f"Python {sys.version.split()[0]} (the course supports 3.11, 3.12 and 3.13)"


def pinned_versions(expected: dict[str, str], missing_message: str, wrong_message: str) -> dict[str, str]:
    """The installed version of each package in ``expected``, which must be the one it gives.

    ``NotReady`` otherwise, with ``missing_message`` (for a package not installed) or
    ``wrong_message`` (for another version) filled in: ``{package}``, ``{installed}``, ``{expected}``.

    Example:
        >>> pinned_versions({"numpy": "0.1"}, "{package} is missing", "{package} {installed} is not {expected}")
        Traceback (most recent call last):
        ...
        helpers.preflight.NotReady: numpy ... is not 0.1
        >>> pinned_versions({"no-such-package": "1.0"}, "{package} is missing", "")
        Traceback (most recent call last):
        ...
        helpers.preflight.NotReady: no-such-package is missing
    """
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package, pinned in expected.items():
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            raise NotReady(missing_message.format(package=package)) from None
        if found[package] != pinned:
            raise NotReady(wrong_message.format(package=package, installed=found[package], expected=pinned))
    return found


def check_packages() -> str:
    found = pinned_versions(EXPECTED, "{package} is not installed: run `make setup` in the course folder",
                            "{package} {installed} is installed, the course is written for {expected}: "
                            "run `make setup` (it installs requirements.lock)")
    return ", ".join(f"{name} {found[name]}" for name in EXPECTED)


def check_checkpoint_round_trip() -> str:
    from helpers.notebook import import_tensorflow_quietly

    tf = import_tensorflow_quietly()
    with tempfile.TemporaryDirectory() as folder:
        variable = tf.Variable([1.0, 2.0, 3.0])
        prefix = tf.train.Checkpoint(v=variable).write(str(Path(folder) / "ckpt"))
        variable.assign([0.0, 0.0, 0.0])
        tf.train.Checkpoint(v=variable).read(prefix).assert_consumed()
        if variable.numpy().tolist() != [1.0, 2.0, 3.0]:
            raise NotReady("a checkpoint did not restore its values: TensorFlow is broken on this machine")
    return "TensorFlow writes and restores a checkpoint"


def check_keras_round_trip() -> str:
    import keras
    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        x = np.ones((1, 3), dtype="float32")
        path = str(Path(folder) / "model.keras")
        model.save(path)
        loaded = keras.models.load_model(path)
        if not np.allclose(model(x), loaded(x)):
            raise NotReady("a Keras model saved and loaded gives other outputs: Keras is broken here")
    return "Keras 3 saves and loads a .keras model"


@dataclass(frozen=True)
class OwnProcessCheck:
    """What ``check_in_own_process`` needs for one check: its packages, its process and its words."""

    packages: Callable[[], dict[str, str]]  # package -> pinned version, read when the check runs; the first is named when done
    chapter: str
    missing_note: str  # in brackets after the name of a package that is missing
    environment: dict[str, str]
    code: Callable[[], str]  # read when the check runs (tests replace the code)
    failure: str
    done: str  # with {version}: the first package's version


OWN_PROCESS_CHECKS = {
    "keras2": OwnProcessCheck(
        lambda: {"tf-keras": EXPECTED_KERAS2}, "chapter 10", "Keras 2, for chapter 10", {"TF_USE_LEGACY_KERAS": "1"},
        lambda: _KERAS2_CODE, "Keras 2 (tf-keras) fails in a process of its own",
        "tf-keras {version} (Keras 2) saves and loads an .h5 model in a process of its own"),
    "jax": OwnProcessCheck(
        lambda: EXPECTED_JAX, "chapter 16", "chapter 16", {"KERAS_BACKEND": "jax"},
        lambda: _JAX_CODE, "Keras does not start with the JAX backend",
        "Keras starts with the JAX backend (jax {version}) and trains, in a process of its own"),
}


def check_in_own_process(name: str) -> str:
    """The pinned packages of check ``name`` (a key of ``OWN_PROCESS_CHECKS``), then its code in a process of its own.

    The process runs in a temporary folder, removed afterwards, with the check's variables set
    (``TF_USE_LEGACY_KERAS=1``, ``KERAS_BACKEND=jax``): they take effect only at Keras's first import.
    ``NotReady`` says what is missing or how the process failed (its last line of error).

    Example:
        >>> check_in_own_process("torch")
        Traceback (most recent call last):
        ...
        ValueError: no check of 'torch' in a process of its own; known: keras2, jax
    """
    import os
    import subprocess

    if name not in OWN_PROCESS_CHECKS:
        known = ", ".join(OWN_PROCESS_CHECKS)
        raise ValueError(f"no check of {name!r} in a process of its own; known: {known}")
    check = OWN_PROCESS_CHECKS[name]
    packages = check.packages()
    found = pinned_versions(packages, f"{{package}} ({check.missing_note}) is not installed: run `make setup`",
                            f"{{package}} {{installed}} is installed, {check.chapter} is written for {{expected}}: "
                            "run `make setup`")
    environment = {**os.environ, **check.environment, "TF_CPP_MIN_LOG_LEVEL": "3"}
    with tempfile.TemporaryDirectory() as folder:
        result = subprocess.run([sys.executable, "-c", check.code()], capture_output=True, text=True,
                                env=environment, cwd=folder, timeout=300)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no error message"])[-1]
        raise NotReady(f"{check.failure}: {last}")
    first = next(iter(packages))
    return check.done.format(version=found[first])


def check_keras2() -> str:
    """tf-keras (Keras 2) saves and loads an .h5 model in a subprocess with TF_USE_LEGACY_KERAS=1."""
    return check_in_own_process("keras2")


def check_jax() -> str:
    """Keras starts with the JAX backend (chapter 16) in a subprocess with KERAS_BACKEND=jax."""
    return check_in_own_process("jax")


def check_plotting() -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots()
    axes.plot([0, 1], [1, 0])
    with tempfile.TemporaryDirectory() as folder:
        figure.savefig(Path(folder) / "plot.png")
    plt.close(figure)
    return "matplotlib draws a plot"


def check_kernel() -> str:
    import subprocess

    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3", stderr=subprocess.DEVNULL)
    try:
        reply = client.execute_interactive("import helpers", timeout=60, output_hook=lambda message: None)
        if reply["content"]["status"] != "ok":
            raise NotReady("the Jupyter kernel cannot import the course's helpers: run `make setup`")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return "a Jupyter kernel starts and imports the course's helpers"


CHECKS: list[Callable[[], str]] = [
    check_python,
    check_packages,
    check_checkpoint_round_trip,
    check_keras_round_trip,
    check_keras2,
    check_jax,
    check_plotting,
    check_kernel,
]


def run_checks(checks: list[Callable[[], str]] = CHECKS) -> bool:
    """Run every check, print one line for each, and return whether all passed."""
    ready = True
    for check in checks:
        started = time.perf_counter()
        try:
            line = f"✔ {check()}"
        except NotReady as problem:
            ready = False
            line = f"✘ {problem}"
        except Exception as error:  # noqa: BLE001 - a learner needs the message, not a traceback
            ready = False
            line = f"✘ {check.__name__.removeprefix('check_').replace('_', ' ')}: {type(error).__name__}: {error}"
        print(f"{line}  ({time.perf_counter() - started:.1f} s)", flush=True)
    print("This machine is ready for the course." if ready else
          "Not ready yet: fix the lines marked ✘ (or show them to your instructor).")
    return ready


if __name__ == "__main__":
    sys.exit(0 if run_checks() else 1)
