"""One ``.keras`` file across Keras 3's backends, proved by outputs and every variable (chapter 16).

Keras 3 picks its backend once, when ``keras`` is first imported in a process (from
``KERAS_BACKEND``, else ``~/.keras/keras.json``, else TensorFlow). So the proof that a file
crosses runs one fresh interpreter per backend: ``check_across_backends`` loads the file in
each, compares every stored value Keras restored (layers, and the optimizer's state) with the
value in the file itself, runs the model on the same inputs, and compares the outputs between
backends. When a layer cannot be loaded or run in a backend, ``BackendMismatchError`` names the
first one that fails there, the reason and the fix (fix it and run the check again).

The children run ``helpers.backends_worker.reload_in_backend`` through
``helpers.fresh_process.call_in_fresh_process`` (named by a string: this module never imports
the worker); this side packs the inputs and the worker unpacks them, both with ``helpers.packed_inputs``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import tempfile
import zipfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from helpers.errors import BackendMismatchError, NotAKerasFileError
from helpers.files import check_archive_sizes, path_text
from helpers.fresh_process import call_in_fresh_process
from helpers.identify.orbax_folders import looks_like_orbax, read_orbax_folder
from helpers.packed_inputs import pack_inputs

__all__ = ["BackendMismatchError", "BackendReport", "BackendRow", "backend_available", "check_across_backends"]

WORKER = "helpers.backends_worker:reload_in_backend"
PACKAGE = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch", "numpy": "numpy"}
FIX = {
    "tensorflow": "calls TensorFlow functions directly: write it with keras.ops, which every backend runs",
    "jax": "calls JAX functions directly: write it with keras.ops, which every backend runs",
    "jaxlib": "calls JAX functions directly: write it with keras.ops, which every backend runs",
    "torch": "calls PyTorch functions directly: write it with keras.ops, which every backend runs",
}


@dataclass
class BackendRow:
    """What one backend did with the file: variables compared, the worst difference, the outputs'."""

    backend: str
    variables: int
    variable_difference: float
    output_difference: float
    optimizer_variables: int


@dataclass
class BackendReport:
    """The file's values and outputs in each backend (``check_across_backends``); ``str()`` is a table."""

    path: str
    rows: list[BackendRow] = field(default_factory=list)
    atol: float = 1e-5

    def __str__(self) -> str:
        lines = [f"{'backend':<11} {'variables':>9} {'of them optimizer':>17} {'max |diff| vs file':>19} "
                 f"{'outputs vs ' + self.rows[0].backend:>22}"]
        for row in self.rows:
            verdict = f"< {self.atol:g}" if row.output_difference <= self.atol else f"{row.output_difference:.1e}"
            stored = "0" if row.variable_difference == 0 else f"{row.variable_difference:.1e}"
            lines.append(f"{row.backend:<11} {row.variables:>9} {row.optimizer_variables:>17} {stored:>19} {verdict:>22}")
        return "\n".join(lines)


def backend_available(backend: str) -> bool:
    """Whether the package behind a Keras backend is installed here (without importing it).

    Example:
        >>> backend_available("numpy"), backend_available("no-such-backend")
        (True, False)
    """
    package = PACKAGE.get(backend)
    return bool(package) and importlib.util.find_spec(package) is not None


def _check_path(path: str) -> None:
    if not os.path.exists(path):
        raise NotAKerasFileError(path, "no such file")
    if os.path.isdir(path):
        if looks_like_orbax(path):
            damage = read_orbax_folder(path).reason  # the folder's files checked, nothing loaded
            raise NotAKerasFileError(path, damage or "an Orbax checkpoint folder, not a .keras file: load it "
                                     "with keras.saving.load_model(folder), save it as .keras and check that file")
        raise NotAKerasFileError(path, "a folder, not a .keras file (a SavedModel or an Orbax checkpoint "
                                       "is not a Keras 3 model file; see helpers.identify)")
    if not zipfile.is_zipfile(path):
        raise NotAKerasFileError(path, "not a zip archive, so not a .keras file (see helpers.identify)")
    try:
        with zipfile.ZipFile(path) as archive:
            check_archive_sizes(archive, path)  # a zip bomb is refused before a process reads it
            names = set(archive.namelist())
            bad = archive.testzip()
    except zipfile.BadZipFile as error:
        raise NotAKerasFileError(path, f"a damaged zip archive ({error}): get the file again") from None
    if not {"config.json", "model.weights.h5"} <= names:
        raise NotAKerasFileError(path, "a zip archive without config.json and model.weights.h5")
    if bad is not None:
        raise NotAKerasFileError(path, f"a damaged zip archive (member {bad!r} fails its CRC-32 check): "
                                       "get the file again")


def _keras_version(path: str) -> str:
    """The Keras version in the file's metadata.json ('' when it has none)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return str(json.loads(archive.read("metadata.json")).get("keras_version", ""))
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, AttributeError):
        return ""


def _clean(text: str) -> str:
    return re.sub(r"(/[\w.+-]+){2,}/?", "<path>", text)[:240]


def _route(message: str, version: str) -> str:
    """The route that works for a file that fails to load for a reason no layer explains."""
    if version.startswith(("1.", "2.")):
        return (f" (written by Keras {version}, not Keras 3: helpers.identify names the file and the route, "
                "chapter 10 converts Keras 2 files)")
    if "safe_mode" in message or "Lambda" in message:
        return (" (a Lambda layer holds Python code, which Keras refuses to run unless you trust the file: "
                "pass trust=True, which loads it with safe_mode=False, only if you do)")
    return ""


def _problems(backend: str, result: dict[str, Any], modules: Sequence[str], version: str = "") -> list[str]:
    failure = result["failure"]
    if failure["kind"] == "import":
        return [f"{backend}: the module {failure['module']!r} fails to import: {_clean(failure['message'])}"]
    if failure["kind"] == "missing_class":
        return [f"{backend}: layer {name!r} (class {registered!r}) is not defined in a fresh process: "
                f"put the class in a module and name it in modules=[...] (now {list(modules)})"
                for name, registered in failure["layers"]]
    if failure["kind"] == "layer_code":
        why = FIX.get(failure["package"], "its code fails in this backend: write it with keras.ops")
        stage = "loading" if failure["stage"] == "load" else "computing"
        return [f"{backend}: layer {failure['layer']!r} ({failure['class']}) fails while {stage}: {why} "
                f"(`{failure['line']}`)"]
    return [f"{backend}: the file fails while {failure['stage']}ing: {_clean(failure['message'])}"
            f"{_route(failure['message'], version)}"]


def _run_child(backend: str, path: str, inputs_file: str, layout: dict, modules: list[str],
               timeout: float, trust: bool = False) -> dict[str, Any]:
    env = {"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = call_in_fresh_process(WORKER, path, inputs_file, layout, modules, trust, env=env, timeout=timeout)
    if "keras" in result and result["backend"] != backend:  # Keras ran: its own word, not the variable's
        raise RuntimeError(f"asked for Keras's {backend!r} backend, the fresh process ran {result['backend']!r}")
    return result


def check_across_backends(path: str | os.PathLike, inputs: Any, backends: Iterable[str] = ("tensorflow", "jax"),
                          modules: Sequence[str] | None = None, atol: float = 1e-5,
                          timeout: float = 300.0, *, trust: bool = False) -> BackendReport:
    """Load a ``.keras`` in a fresh interpreter per backend; prove its values and outputs equal.

    In each backend's process (``KERAS_BACKEND`` set before Keras is imported) the modules
    named in ``modules`` are imported (those that define the file's custom classes), the file
    is loaded, every stored value Keras restored (the layers' and the optimizer's, matched to
    the file's ``model.weights.h5`` entry by entry) is compared with the file's own, and the
    model runs on ``inputs`` (``training=False``). Outputs are compared with the first
    backend's. The processes run side by side.

    ``trust=True`` loads the file with ``safe_mode=False`` in each backend's fresh process: the
    Python code the file carries (a ``Lambda`` layer's function, stored as bytecode) runs there,
    once per backend. Pass it only for a file you trust. Keras 3.15 restores that code without
    the globals it was written with, so a ``Lambda`` whose function names a module (``np``,
    ``ops``) fails there with ``NameError``: rebuild it as a custom layer whose module
    ``modules`` names. Without ``trust``, a file holding a ``Lambda``
    raises ``BackendMismatchError`` naming ``trust=True`` as the route.

    Raises ``BackendMismatchError`` naming, in each backend, the first layer that fails to load
    or compute (a class not defined there; a ``call`` that runs TensorFlow or JAX functions
    directly: use ``keras.ops``; fix it and run again), each value that differs from the file's,
    each output that differs by more than ``atol``; ``NotAKerasFileError`` for a path that is
    not a ``.keras`` (``ArchiveTooLargeError`` for one that declares members too large to read);
    ``ValueError`` for a backend that is not installed here, inputs that are not numeric arrays,
    a negative ``atol``, or a ``trust`` that is not True or False. ``backends`` may be one name (``"jax"``).

    Example:
        >>> import keras
        >>> path = os.path.join(tempfile.mkdtemp(), "m.keras")
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")])
        >>> model.compile("adam", "mse")
        >>> history = model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
        >>> model.save(path)
        >>> report = check_across_backends(path, np.ones((2, 3), "float32"))
        >>> [(row.backend, row.variables, row.optimizer_variables, row.variable_difference) for row in report.rows]
        [('tensorflow', 8, 6, 0.0), ('jax', 8, 6, 0.0)]
    """
    text = path_text(path, ".keras path")
    if isinstance(atol, bool) or not isinstance(atol, (int, float)) or not math.isfinite(atol) or atol < 0:
        raise ValueError(f"atol must be a number >= 0, got {atol!r}")
    if not isinstance(trust, bool):
        raise ValueError(f"trust must be True or False, got {trust!r}")
    _check_path(text)
    backends = [backends] if isinstance(backends, str) else list(backends)
    if not backends:
        raise ValueError("name at least one backend, e.g. backends=('tensorflow', 'jax')")
    for backend in backends:
        if not backend_available(backend):
            raise ValueError(f"the {backend!r} backend is not installed in this environment "
                             f"(installed here: {[b for b in PACKAGE if backend_available(b)]})")
    modules = list(modules or [])
    layout, arrays = pack_inputs(inputs, numeric=True)
    with tempfile.TemporaryDirectory(prefix="backends-") as folder:
        inputs_file = os.path.join(folder, "inputs.npz")
        np.savez(inputs_file, **arrays)
        with ThreadPoolExecutor(len(backends)) as pool:
            futures = [pool.submit(_run_child, b, os.path.abspath(text), inputs_file, layout, modules, timeout,
                                   trust) for b in backends]
            results = [future.result() for future in futures]
    return _compare(text, backends, results, modules, atol, _keras_version(text))


def _value_problems(backend: str, rows: list[dict[str, Any]]) -> list[str]:
    """One line per value that differs from the file's; one line for an optimizer Keras skipped."""
    def problem(row: dict[str, Any]) -> str:
        if row["difference"] is None:
            return f"{row['path']!r} is not restored from the file's {row['key']!r}"
        return f"{row['path']!r} differs from the file by {row['difference']:.1e}"

    bad = [row for row in rows if row["difference"] is None or row["difference"] > 0]
    optimizer = [row for row in bad if row.get("optimizer")]
    lines = [f"{backend}: {problem(row)}" for row in bad if not row.get("optimizer")]
    if optimizer:
        total = sum(1 for row in rows if row.get("optimizer"))
        lines.append(f"{backend}: the optimizer's state is not restored ({len(optimizer)} of its {total} values; "
                     f"first: {problem(optimizer[0])}): Keras skips, with only a warning, an optimizer whose "
                     "variables do not match the file's, e.g. a mixed-precision LossScaleOptimizer's in every "
                     "backend (chapter 17); training on would restart it")
    return lines


def _compare(path: str, backends: list[str], results: list[dict[str, Any]], modules: Sequence[str],
             atol: float, version: str = "") -> BackendReport:
    problems: list[str] = []
    report = BackendReport(path, atol=atol)
    reference: list[np.ndarray] | None = None
    for backend, result in zip(backends, results):
        if "failure" in result:
            problems += _problems(backend, result, modules, version)
            continue
        rows = result["variables"]
        problems += _value_problems(backend, rows)
        outputs = result["outputs"]
        if reference is None:
            reference = outputs
        difference = max((float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
                          for a, b in zip(outputs, reference) if a.shape == b.shape), default=0.0)
        if [a.shape for a in outputs] != [b.shape for b in reference]:
            problems.append(f"{backend}: outputs have shapes {[a.shape for a in outputs]}, "
                            f"{backends[0]} gave {[b.shape for b in reference]}")
        elif difference > atol:
            problems.append(f"{backend}: outputs differ from {backends[0]}'s by {difference:.1e} (atol {atol:g})")
        known = [row["difference"] for row in rows if row["difference"] is not None]
        report.rows.append(BackendRow(backend, len(rows), max(known, default=0.0), difference,
                                      sum(1 for row in rows if row.get("optimizer"))))
    if problems:
        nowhere = len(backends) > 1 and all("failure" in result for result in results)
        raise BackendMismatchError(path, problems, report,
                                   header="does not load in any backend" if nowhere else "does not cross backends")
    return report

