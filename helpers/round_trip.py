"""Prove a model's state survives a reload in a fresh process (notebook 12), and what a model owns.

Recipes:

* ``round_trip(model, path, inputs)``: reload a ``.keras`` file in a fresh Python process
  (``helpers.fresh_process``) and compare it with the model in memory, output by output,
  variable by variable, layer by layer; a ``RoundTripReport``, or ``ReloadMismatchError``;
* ``run_in_fresh_process(source)``: run Python code in a fresh process, like ``subprocess.run``;
* ``owned_variables(model)``: every variable a model's layers and optimizer hold, tracked by
  Keras or not (chapter 08's ``missing_from_file`` uses it too);
* ``snapshot(model, inputs)``: the description both processes make of a model, to compare.

``helpers.keras_files`` re-exports these names (``helpers.keras_files.round_trip``); this module
imports nothing of it. The fresh process runs ``helpers.round_trip_worker``, named here as a
string (that module imports this one).

Example:
    >>> import tempfile
    >>> model = keras.Sequential([keras.Input((3,), name="x"), keras.layers.Dense(1, name="out")], name="net")
    >>> x = np.ones((2, 3), "float32")
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     model.save(os.path.join(folder, "model.keras"))
    ...     round_trip(model, os.path.join(folder, "model.keras"), x)
    what      name        here    reloaded  verdict
    --------  ----------  ------  --------  -------
    output    0           (2, 1)  (2, 1)    equal
    variable  out/kernel  (3, 1)  (3, 1)    equal
    variable  out/bias    (1,)    (1,)      equal
    layer     net         built   built     equal
    layer     x           built   built     equal
    layer     out         built   built     equal
    1 output, 2 variables, 3 layers: all equal
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from helpers.errors import NotAKerasFileError, ReloadFailedError, ReloadMismatchError, first_line
from helpers.files import check_archive_sizes, path_text
from helpers.fresh_process import FreshProcessError, call_in_fresh_process
from helpers.notebook import format_table
from helpers.packed_inputs import pack_inputs, unpack_inputs

__all__ = ["ReloadFailedError", "ReloadMismatchError", "RoundTripReport", "RoundTripRow", "owned_variables",
           "pack_inputs", "round_trip", "run_in_fresh_process", "snapshot", "unpack_inputs"]

RELOAD = "helpers.round_trip_worker:reload"  # what the fresh process runs: named, not imported
SCRIPT = "helpers.round_trip_worker:run_script"
_LIBRARY_MODULES = ("keras", "tf_keras", "tensorflow", "builtins", "numpy")
_NAME_WIDTH = 44


# --------------------------------------------------------------------------- owned variables

_Variable = (tf.Variable, keras.Variable)


def owned_variables(model: keras.layers.Layer, include_optimizer: bool = True) -> dict[str, tf.Variable | keras.Variable]:
    """Every variable a model's layers (and optimizer) hold, tracked by Keras or not, by a readable name.

    Keras saves the variables it *tracks* (those in ``model.weights`` and the
    optimizer's). A plain ``tf.Variable`` stored on a layer, or a list of
    them, is not tracked; it is still found here, by walking the attributes
    of every layer. A Keras variable is named by its ``path``
    (``dense/kernel``); an untracked one by its layer's name and the
    attribute that holds it (``scaler/offset``, ``scaler/history[0]``).
    Metric accumulators and random-seed states are left out: Keras never
    saves them (metrics restart every epoch, seeds are not weights).

    Example:
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="out")], name="net")
        >>> list(owned_variables(model))
        ['net/out/kernel', 'net/out/bias']
    """
    found: dict[int, tuple[str, object]] = {}
    visited: set[int] = set()

    def visit(obj: object, owner: str, trail: str) -> None:
        if isinstance(obj, _Variable):
            if id(obj) not in found:
                name = obj.path if isinstance(obj, keras.Variable) else f"{owner}/{trail}"
                found[id(obj)] = (name, obj)
            return
        if id(obj) in visited:
            return
        if isinstance(obj, (keras.metrics.Metric, keras.random.SeedGenerator)):
            return
        if isinstance(obj, keras.optimizers.Optimizer) and not include_optimizer:
            return
        if isinstance(obj, (keras.layers.Layer, keras.optimizers.Optimizer)):
            visited.add(id(obj))
            # Plain attributes first, so that a variable is named by `offset`, not by Keras's bookkeeping.
            attributes = sorted(vars(obj).items(), key=lambda item: (item[0].startswith("_self_"), item[0].startswith("_")))
            for attribute, value in attributes:
                visit(value, obj.name, attribute)
        elif isinstance(obj, (list, tuple)):
            visited.add(id(obj))
            for i, item in enumerate(obj):
                visit(item, owner, f"{trail}[{i}]")
        elif isinstance(obj, dict):
            visited.add(id(obj))
            for key, item in list(obj.items()):
                visit(item, owner, f"{trail}[{key!r}]")

    # Tracked variables first, in Keras's own order; the walk then adds the untracked ones.
    tracked = list(model.weights)
    optimizer = getattr(model, "optimizer", None)
    if include_optimizer and isinstance(optimizer, keras.optimizers.Optimizer):
        tracked += list(optimizer.variables)
    for variable in tracked:
        visit(variable, "", "")
    visit(model, getattr(model, "name", "model"), "")
    names: dict[str, tf.Variable | keras.Variable] = {}
    for name, variable in found.values():
        unique, n = name, 1
        while unique in names:  # two variables may share a path; keep both
            n += 1
            unique = f"{name} ({n})"
        names[unique] = variable  # type: ignore[assignment]
    return names


# --------------------------------------------------------------------------- describing a model, both sides

def class_name(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def snapshot(model: Any, inputs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Describe ``model``: its layers (path, class, built), its variables and its outputs on ``inputs``.

    Layers and variables are read before the model is called, because a call
    builds (with fresh values) whatever was left unbuilt.
    """
    layers = [
        {"path": _relative(layer.path or layer.name, model.name) if layer is not model else model.name,
         "class": class_name(layer), "built": bool(layer.built)}
        for layer in model._flatten_layers(include_self=True, recursive=True)
    ]
    arrays: dict[str, Any] = {}
    variables = []
    for i, (name, variable) in enumerate(owned_variables(model).items()):
        value = np.asarray(variable.numpy())
        arrays[f"v{i}"] = value
        variables.append({"name": _relative(name, model.name), "shape": list(value.shape), "dtype": str(value.dtype), "key": f"v{i}"})
    outputs = keras.tree.flatten(model(inputs, training=False))
    for i, output in enumerate(outputs):
        arrays[f"o{i}"] = np.asarray(keras.ops.convert_to_numpy(output))
    return {"layers": layers, "variables": variables, "outputs": len(outputs)}, arrays


def _relative(path: str, model_name: str) -> str:
    """A variable's or layer's path without the model's name, which a reloaded model's paths lack.

    ``net/dense/kernel`` becomes ``dense/kernel``; an optimizer's slot
    ``adam/net_dense_kernel_momentum`` becomes ``adam/dense_kernel_momentum``.
    """
    path = path.removeprefix(model_name + "/")
    head, slash, tail = path.partition("/")
    if slash and tail.startswith(model_name + "_"):
        path = f"{head}/{tail.removeprefix(model_name + '_')}"
    return path


# --------------------------------------------------------------------------- fresh processes


def run_in_fresh_process(source: str, *, timeout: float = 300.0) -> subprocess.CompletedProcess:
    """Run the Python code ``source`` in a fresh process in this folder, like ``subprocess.run``.

    The process has none of this one's classes, registrations or settings (see
    ``helpers.fresh_process``: on Linux it is forked from a server that has imported
    TensorFlow and Keras and nothing else; elsewhere, or with ``COURSE_WORKERS=spawn``, it is a
    new interpreter), and this process's environment variables. Returns a
    ``subprocess.CompletedProcess`` with ``returncode``, ``stdout`` and ``stderr`` (text);
    raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds, the process killed.

    Example:
        >>> run_in_fresh_process("print(6 * 7)").stdout
        '42\\n'
    """
    command = [sys.executable, "-c", source]
    try:
        code, out, err = call_in_fresh_process(SCRIPT, source, timeout=timeout)
    except FreshProcessError as error:
        if error.how == "timeout":
            raise subprocess.TimeoutExpired(command, timeout) from None
        return subprocess.CompletedProcess(command, -(error.code or 1), "", error.message)
    return subprocess.CompletedProcess(command, code, out, err)


@dataclass(frozen=True)
class RoundTripRow:
    """One line of a round trip: an output, a variable or a layer, as it is here and after the reload."""

    what: str  # "output", "variable" or "layer"
    name: str
    here: str
    reloaded: str
    verdict: str  # "equal", "differs", "missing", "unexpected", "unbuilt", "class differs"

    @property
    def ok(self) -> bool:
        return self.verdict == "equal"

    def problem(self) -> str:
        where = {"missing": "missing from the reloaded model", "unexpected": "only in the reloaded model",
                 "unbuilt": "left unbuilt by the reload", "differs": "differs after the reload",
                 "class differs": f"is a {self.here} here, a {self.reloaded} in the fresh process"}[self.verdict]
        if self.verdict == "differs" and self.here != self.reloaded:
            where = f"is {self.here} here, {self.reloaded} after the reload"
        return f"{self.what} {self.name!r} {where}"


@dataclass(frozen=True)
class RoundTripReport:
    """What ``round_trip`` compared, row by row; shows itself as a table. ``ok`` when every row is equal."""

    path: str
    rows: tuple[RoundTripRow, ...]
    max_output_difference: float

    @property
    def ok(self) -> bool:
        return all(row.ok for row in self.rows)

    @property
    def problems(self) -> list[str]:
        return [row.problem() for row in self.rows if not row.ok]

    def __repr__(self) -> str:
        rows = [[row.what, _shorten(row.name), row.here, row.reloaded, row.verdict] for row in self.rows]
        counts = {what: sum(row.what == what for row in self.rows) for what in ("output", "variable", "layer")}
        summary = ", ".join(f"{n} {what}{'s' * (n != 1)}" for what, n in counts.items())
        verdict = "all equal" if self.ok else f"{len(self.problems)} problem{'s' * (len(self.problems) != 1)}"
        return format_table(["what", "name", "here", "reloaded", "verdict"], rows) + f"\n{summary}: {verdict}"


def _shorten(name: str) -> str:
    return name if len(name) <= _NAME_WIDTH else name[: _NAME_WIDTH // 2 - 1] + "…" + name[-(_NAME_WIDTH // 2):]


def round_trip(
    model: keras.Model,
    path: str | os.PathLike,
    inputs: object,
    *,
    modules: list[str | os.PathLike] | tuple[str | os.PathLike, ...] | None = None,
    compile: bool = True,  # noqa: A002 - load_model's own argument name
    safe_mode: bool = True,
    atol: float = 1e-6,
    timeout: float = 300.0,
    strict: bool = True,
) -> RoundTripReport:
    """Reload the ``.keras`` file ``path`` in a fresh Python process and compare it with ``model``.

    A fresh process has none of the classes this one defined, so a class
    that only a notebook cell defines cannot be silently reused. The
    reloaded model is compared with ``model``: its outputs on ``inputs`` (an
    array, a list or a dict of arrays; ``training=False``), every variable by
    path (non-trainable state, untracked ``tf.Variable`` attributes and the
    optimizer's variables included), and every layer's class and built state
    (read before the reloaded model is called, since a call would build a
    layer the reload left unbuilt). With ``strict`` (the default) any
    difference raises ``ReloadMismatchError`` naming each one; otherwise the
    report says so (``report.ok``, ``report.problems``).

    The fresh process imports ``modules`` first (module names, or paths of
    ``.py`` files): the modules that define or register the custom classes,
    losses and metrics. When ``modules`` is ``None``, it imports the modules
    of the model's own layer classes. Nothing is written next to ``path``: the
    inputs and results go through a pipe to the fresh process
    (``helpers.fresh_process``). A file that is not a
    ``.keras`` archive raises ``NotAKerasFileError``; a ``.keras`` file Keras 2
    wrote (2.13-2.15) raises ``ReloadFailedError`` naming the route for its
    version before any process starts; a class the fresh
    process cannot find, an error while loading, or a run longer than
    ``timeout`` seconds raises ``ReloadFailedError`` saying what to do.

    Example (the module's docstring runs one).
    """
    text = path_text(path, "Keras file path")
    _check_keras_archive(text)
    if not model.built:
        raise ValueError("the model is not built yet: call it once on data before comparing it with a file")
    entries = _modules_to_import(model) if modules is None else [path_text(m, "module") for m in modules]
    entries = [os.path.abspath(m) if m.endswith(".py") else m for m in entries]
    here, here_arrays = snapshot(model, inputs)
    layout, input_arrays = pack_inputs(inputs)
    try:
        there = call_in_fresh_process(RELOAD, os.path.abspath(text), entries, compile, safe_mode, layout,
                                      input_arrays, timeout=timeout)
    except FreshProcessError as error:
        if error.how == "timeout":
            raise ReloadFailedError(text, f"it did not finish within {timeout:g} s and was stopped; "
                                          "pass a larger timeout= for a big model") from None
        raise ReloadFailedError(text, f"the process ended: {error.message}") from None
    if "error" in there:
        raise ReloadFailedError(text, _failure_reason(there, model, entries))
    there, there_arrays = there["description"], there["arrays"]
    report = _compare(text, here, here_arrays, there, there_arrays, atol)
    if strict and not report.ok:
        raise ReloadMismatchError(text, report.problems, report)
    return report


def _check_keras_archive(text: str) -> None:
    """``NotAKerasFileError`` unless ``text`` is a ``.keras`` zip archive with a model configuration."""
    if not os.path.exists(text):
        raise NotAKerasFileError(text, "no such file or folder")
    if text.endswith((".weights.h5", ".weights.json")):
        raise NotAKerasFileError(text, "a weights-only file: round_trip reloads a whole model; save it with "
                                       "model.save('name.keras'), or check a weights file with missing_from_file")
    if os.path.isdir(text) or not text.endswith(".keras"):
        raise NotAKerasFileError(text, "round_trip reloads a .keras archive (model.save('name.keras'))")
    try:
        with zipfile.ZipFile(text) as archive:
            check_archive_sizes(archive, text)
            names = archive.namelist()
            version, module = _keras2_archive(archive) if "config.json" in names else ("", "")
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise NotAKerasFileError(text, f"not a zip archive, or a truncated one ({first_line(error)})") from None
    if "config.json" not in names:
        raise NotAKerasFileError(text, "the archive has no 'config.json': not a Keras 3 model file")
    if version:
        raise ReloadFailedError(text, _keras2_route(version, module))


def _keras2_archive(archive: zipfile.ZipFile) -> tuple[str, str]:
    """The Keras 2 version that wrote a ``.keras`` archive and its model's module; ``("", "")`` for Keras 3."""
    try:
        version = str(json.loads(archive.read("metadata.json")).get("keras_version", ""))
        module = str(json.loads(archive.read("config.json")).get("module", ""))
    except (KeyError, ValueError, AttributeError):
        return "", ""  # no or odd metadata: let Keras 3 itself try
    return (version, module) if version.startswith("2.") else ("", "")


def _keras2_route(version: str, module: str) -> str:
    """Why Keras 3 cannot reload a Keras 2 ``.keras`` archive, and the route that works for its version."""
    where = f" (its model class is in {module!r})" if module else ""
    head = f"a .keras file written by Keras {version}{where}: Keras 3 cannot rebuild Keras 2 classes. "
    minor = version.split(".")[1] if version.count(".") else ""
    if minor.isdigit() and int(minor) >= 14:
        return head + ("Build the model in Keras 3 code (same layer names) and call model.load_weights(path): "
                       "Keras 3 reads the weights of a Keras 2.14/2.15 .keras file")
    return head + ("Keras 2.12/2.13 numbered its layers otherwise: "
                   "helpers.keras2.renumber_keras2_zip_weights(path, 'm.weights.h5') writes its weights as Keras 3 "
                   "counts, then model.load_weights('m.weights.h5') into the model built in Keras 3 code (chapter 13)")


def _modules_to_import(model: keras.Model) -> list[str]:
    found: list[str] = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        module = type(layer).__module__
        if module.split(".")[0] in _LIBRARY_MODULES or module in ("__main__", "__mp_main__"):
            continue
        # A top-level module loaded from a file (a notebook's work folder) goes by its path, so that the fresh
        # process finds it wherever it runs; a module in a package goes by its name.
        file = getattr(sys.modules.get(module), "__file__", None) or ""
        entry = file if "." not in module and file.endswith(".py") else module
        if entry not in found:
            found.append(entry)
    return found


def _failure_reason(there: dict, model: keras.Model, entries: list[str]) -> str:
    if there["error"] == "import":
        return f"importing {there['module']!r} failed ({there['message']}); pass modules= that import cleanly"
    if there["error"] == "not_found":
        name = there["name"].split(">")[-1]
        defined = [type(layer) for layer in model._flatten_layers(include_self=True, recursive=True)
                   if type(layer).__name__ == name]
        where = ""
        if defined and defined[0].__module__ in ("__main__", "__mp_main__"):
            where = " It is defined in this notebook or script (__main__), which a fresh process cannot import."
        tried = f" (imported: {', '.join(entries)})" if entries else " (no module was imported)"
        return (f"it cannot find the {there['kind']} {there['name']!r}{tried}.{where} Put the {there['kind']} "
                "in a .py module, register it there with @keras.saving.register_keras_serializable(), and pass "
                "modules=['that_module'] or the file's path")
    return there["message"]


def _compare(text: str, here: dict, here_arrays: dict, there: dict, there_arrays: dict, atol: float) -> RoundTripReport:
    rows: list[RoundTripRow] = []
    worst = 0.0
    for i in range(max(here["outputs"], there["outputs"])):
        a, b = here_arrays.get(f"o{i}"), there_arrays.get(f"o{i}")
        if a is None or b is None:
            rows.append(RoundTripRow("output", str(i), _describe(a), _describe(b), "missing" if b is None else "unexpected"))
            continue
        same, difference = _within(a, b, atol)
        worst = max(worst, difference)
        rows.append(RoundTripRow("output", str(i), _shape_text(a.shape), _shape_text(b.shape),
                                 "equal" if same else "differs"))
    theirs = {v["name"]: v for v in there["variables"]}
    mine = {v["name"]: v for v in here["variables"]}
    for name, variable in mine.items():
        a = here_arrays[variable["key"]]
        if name not in theirs:
            rows.append(RoundTripRow("variable", name, _describe(a), "-", "missing"))
            continue
        b = there_arrays[theirs[name]["key"]]
        same, _ = _within(a, b, atol)
        rows.append(RoundTripRow("variable", name, _describe(a), _describe(b), "equal" if same else "differs"))
    for name in theirs.keys() - mine.keys():
        rows.append(RoundTripRow("variable", name, "-", _describe(there_arrays[theirs[name]["key"]]), "unexpected"))
    reloaded_layers = {layer["path"]: layer for layer in there["layers"]}
    for layer in here["layers"]:
        other = reloaded_layers.get(layer["path"])
        short = layer["class"].rsplit(".", 1)[-1]
        if other is None:
            rows.append(RoundTripRow("layer", layer["path"], short, "-", "missing"))
        elif other["class"] != layer["class"]:
            rows.append(RoundTripRow("layer", layer["path"], layer["class"], other["class"], "class differs"))
        elif layer["built"] and not other["built"]:
            rows.append(RoundTripRow("layer", layer["path"], "built", "unbuilt", "unbuilt"))
        else:
            rows.append(RoundTripRow("layer", layer["path"], "built" if layer["built"] else "unbuilt",
                                     "built" if other["built"] else "unbuilt", "equal"))
    return RoundTripReport(text, tuple(rows), worst)


def _describe(value: np.ndarray | None) -> str:
    return "-" if value is None else _shape_text(value.shape)


def _within(a: np.ndarray, b: np.ndarray, atol: float) -> tuple[bool, float]:
    """Whether ``a`` and ``b`` agree within ``atol`` (exactly for non-floats), and by how much they differ."""
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False, math.inf
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b)), 0.0 if np.array_equal(a, b) else math.inf
    difference = float(np.max(np.abs(a - b))) if a.size else 0.0
    return bool(np.allclose(a, b, rtol=0.0, atol=atol, equal_nan=True)), difference


def _shape_text(shape: tuple[int, ...]) -> str:
    """``(3, 2)``, ``(2,)``.

    Example:
        >>> _shape_text((2,)), _shape_text((3, 2))
        ('(2,)', '(3, 2)')
    """
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
