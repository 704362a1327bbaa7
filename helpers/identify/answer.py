"""The answer ``identify`` gives, and ``verify()``: shared by every reader below the table.

``Identification`` (what a file is, what wrote it, what it holds, its traps, the code that loads
it) and ``Verification`` (what that code loaded in a fresh Python), the ``KINDS`` they name, and
the small pieces every reader writes its answer with: ``not_model``, ``loading_code``,
``code_tail``, ``bytes_text``. Nothing here imports TensorFlow.

Example:
    >>> info = not_model("notes.txt", "not a format this course knows")
    >>> info.is_model, info.title
    (False, 'not a model file')
    >>> print(loading_code("m.keras", "import keras\\nloaded = keras.models.load_model(path)"))
    path = 'm.keras'
    import keras
    loaded = keras.models.load_model(path)
    <BLANKLINE>
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from typing import Any

from helpers.errors import NotAModelFileError, VerificationError
from helpers.trust import refusal

__all__ = ["KINDS", "MAX_VERIFY_MEMORY", "VERIFY_MEMORY_BASE", "Identification", "Verification", "bytes_text",
           "code_tail", "last_error", "loading_code", "not_model"]

# Every kind identify names, with the words the report uses.
KINDS: dict[str, str] = {
    "tf1-checkpoint": "TF1 name-based checkpoint (tf.compat.v1.train.Saver, V2 format)",
    "tf1-checkpoint-v1": "TF1 name-based checkpoint, old V1 single-file format",
    "checkpoint-keras2": "object-based checkpoint with Keras 2 keys (tf.keras before TF 2.16)",
    "checkpoint-keras3": "object-based checkpoint with Keras 3 keys",
    "checkpoint-module": "object-based checkpoint of a plain tf.Module or tf.Variables",
    "checkpoint-folder": "a folder of checkpoints (CheckpointManager or Saver) with a state file",
    "meta-graph": "TF1 MetaGraphDef (.meta): the graph, not the values",
    "keras3-archive": "Keras 3 .keras archive (architecture + weights)",
    "keras2-archive": "Keras 2.12-2.15 .keras zip archive",
    "keras2-hdf5-named-keras": "legacy HDF5 model under a .keras name (Keras 2.12's model.save)",
    "weights-h5": "Keras 3-layout weights (.weights.h5)",
    "sharded-weights": "sharded Keras weights (.weights.json index + shards)",
    "legacy-h5-model": "legacy Keras HDF5 whole model (.h5)",
    "legacy-h5-weights": "legacy Keras HDF5 weights only (.h5)",
    "savedmodel-tf1": "SavedModel from TF1 graph code (Builder / simple_save)",
    "savedmodel-tf2": "TF2 SavedModel (tf.saved_model.save)",
    "savedmodel-keras2": "SavedModel of a Keras 2 model (model.save(folder))",
    "savedmodel-export": "SavedModel from Keras 3 model.export",
    "savedmodel-hub": "hub-format (reusable) SavedModel",
    "frozen-graph": "frozen GraphDef (.pb): constants, no variables",
    "tflite": "LiteRT / TensorFlow Lite flatbuffer (.tflite)",
    "onnx": "ONNX model (.onnx)",
    "keras-hub-preset": "KerasHub preset folder (save_to_preset: config, metadata, weights, assets)",
    "not-a-model": "not a model file",
    "orbax-checkpoint": "Orbax checkpoint folder (keras.callbacks.OrbaxCheckpoint, or a JAX program)",
}

_MARK = "@@identify@@"


@dataclass
class Verification:
    """What ``Identification.verify()`` saw: ``ok``, one line ``report``, and the fix when not ok."""

    ok: bool
    report: str
    missing: str = ""  # a package to install, when that is why it failed
    untrusted: bool = False  # not run: loading would run code the file carries (verify(trust=True))
    partial: bool = False  # the code ran but read less than the file is (weights of a whole model)

    def __str__(self) -> str:
        if self.ok:
            return "verified: " + self.report
        if self.untrusted or self.partial:
            return "not verified: " + self.report
        return "could not verify: " + self.report

    def require(self, path: str = "") -> "Verification":
        """Return self when ok, else raise ``VerificationError`` with the reason."""
        if not self.ok:
            raise VerificationError(path, self.report)
        return self


@dataclass
class Identification:
    """What a file is, what wrote it, what it holds, its traps and the code that loads it.

    ``kind`` is one of ``KINDS``; ``how_to_load`` is Python code that defines
    ``loaded`` (the model, signatures, session or values) and ``report`` (one
    line on what was loaded). ``str(info)`` is a short report (<= 100 columns).
    """

    path: str
    kind: str
    reason: str = ""
    written_by: dict[str, str] = field(default_factory=dict)
    holds: dict[str, Any] = field(default_factory=dict)
    traps: list[str] = field(default_factory=list)
    how_to_load: str = ""
    runs_code: list[str] = field(default_factory=list)  # why loading runs code the file carries
    trusted_code: str = ""  # what verify(trust=True) runs, when it differs from how_to_load
    partial: str = ""  # why how_to_load reads less than the file is (the weights of a whole model)
    blocked: str = ""  # why how_to_load cannot load it here, known without running it

    @property
    def is_model(self) -> bool:
        return self.kind != "not-a-model"

    @property
    def title(self) -> str:
        return KINDS[self.kind]

    def as_dict(self) -> dict[str, Any]:
        """Plain data with stable keys, for ``--json`` and scripts."""
        return {"path": self.path, "kind": self.kind, "title": self.title, "is_model": self.is_model,
                "reason": self.reason, "written_by": dict(self.written_by), "holds": dict(self.holds),
                "traps": list(self.traps), "how_to_load": self.how_to_load,
                "runs_code": list(self.runs_code), "partial": self.partial}

    def __str__(self) -> str:
        lines = [f"{os.path.basename(self.path.rstrip('/')) or self.path}: {self.title}"]
        if self.reason:
            lines.append(f"  why: {self.reason}")
        if self.written_by:
            lines.append("  written by: " + ", ".join(f"{k} {v}" for k, v in self.written_by.items()))
        for key, value in self.holds.items():
            lines.append(f"  {key}: {_brief(value)}")
        lines = [_clip(line) for line in lines]
        for trap in self.traps + [f"loading runs code the file carries: {why}" for why in self.runs_code]:
            lines += textwrap.wrap(trap, 98, initial_indent="  ! ", subsequent_indent="    ",
                                   break_long_words=False, break_on_hyphens=False)
        if self.how_to_load:  # code is never clipped: it must stay runnable
            lines.append("  how to load (TF 2.21 / Keras 3.15):")
            lines += ["    " + line for line in self.how_to_load.splitlines()]
        return "\n".join(lines)

    __repr__ = __str__

    def load(self, trust: bool = False) -> Any:
        """Run ``how_to_load`` in this process and return what it loaded (``loaded``).

        With ``trust=True``, the code that also runs what the file carries (``runs_code``: a
        Lambda's bytecode with ``safe_mode=False``): only for a file you trust.

        A file whose loading runs code it carries (``runs_code``: a SavedModel's functions,
        a graph's ops, modules tf-keras imports) raises ``VerificationError`` without trust:
        nothing is run.

        Example:
            >>> from helpers.identify import identify
            >>> model = identify("tests/data/keras315/functional_bn.h5").load()
            >>> type(model).__name__, model.name
            ('Functional', 'functional_bn_k3')
        """
        if not self.is_model:
            raise NotAModelFileError(self.path, self.reason)
        if self.runs_code and not trust and not self.trusted_code:
            raise VerificationError(self.path, refusal(self.runs_code))
        namespace: dict[str, Any] = {"__name__": "__identify__"}
        code = (self.trusted_code or self.how_to_load) if trust else self.how_to_load
        exec(compile(code, f"<how to load {self.kind}>", "exec"), namespace)
        return namespace["loaded"]

    def verify(self, timeout: float = 600, trust: bool = False) -> Verification:
        """Run ``how_to_load`` in a fresh Python (``sys.executable``); say what it loaded.

        A failure is reported, not raised (``.ok`` is False): the error with its reason
        and route, and the package to install when a runtime is missing. A file whose
        loading runs code it carries (``runs_code``) is not run at all unless ``trust=True``
        (``.untrusted``); code that reads only the weights of a whole model is not called
        verified (``.partial``).

        Example:
            >>> from helpers.identify import identify
            >>> print(identify("tests/data/tf215/tf_module").verify())
            not verified: nothing was run: ...
            >>> print(identify("tests/data/tf215/tf_module").verify(trust=True))
            verified: signatures serving_default(x)
        """
        if not self.is_model:
            return Verification(False, f"not a model file: {self.reason}")
        if self.blocked:
            return Verification(False, self.blocked)
        if self.runs_code and not trust:
            return Verification(False, refusal(self.runs_code), untrusted=True)
        code = (self.trusted_code or self.how_to_load) if trust else self.how_to_load
        script = code + f"\nprint({_MARK!r} + str(report))\n"
        stored = _stored_bytes(self.path)
        cap = min(MAX_VERIFY_MEMORY, VERIFY_MEMORY_BASE + 4 * stored)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
               "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        with tempfile.TemporaryDirectory(prefix="identify-") as folder:
            source = os.path.join(folder, "load.py")
            with open(source, "w", encoding="utf-8") as file:
                file.write(script)
            try:
                done = subprocess.run([sys.executable, source], capture_output=True, text=True,
                                      timeout=timeout, env=env, cwd=os.getcwd(),
                                      preexec_fn=functools.partial(_cap_memory, cap)
                                      if os.name == "posix" else None)
            except subprocess.TimeoutExpired:
                return Verification(False, f"the loading code ran longer than {timeout:g} s")
        for line in done.stdout.splitlines():
            if line.startswith(_MARK):
                if self.partial:
                    return Verification(False, f"{line[len(_MARK):]}; {self.partial}", partial=True)
                return Verification(True, line[len(_MARK):])
        if _OUT_OF_MEMORY.search(done.stderr):
            return Verification(False, f"the model this file declares needs more than "
                                       f"{cap / (1 << 30):.1f} GiB of memory to load, far more than its "
                                       f"{bytes_text(stored)} on disk take")
        error = last_error(done.stderr)
        custom = self.holds.get("custom objects")
        if custom and isinstance(custom, list) and "custom_objects" not in error:
            error = (f"{error} (the model needs its custom classes {', '.join(custom)}: import or "
                     "register them before loading, or pass custom_objects=)")
        missing = re.search(r"No module named '([\w.]+)'", error)
        if missing:
            package = _PACKAGES.get(missing[1].split(".")[0], missing[1].split(".")[0])
            return Verification(False, f"{error}: pip install {package}", missing=package)
        return Verification(False, error)


# The loading process's data memory (RLIMIT_DATA): a 1.5 KB .keras can declare a Dense layer of
# 100 million units, and Keras allocates it before any shape is compared (4.5 GB measured). Importing
# TensorFlow and loading the course's files needs under 1 GiB (measured on TF 2.21), and loading
# takes a few times what the file stores: the cap is VERIFY_MEMORY_BASE + 4 x the bytes on disk,
# at most MAX_VERIFY_MEMORY.
VERIFY_MEMORY_BASE = 2 << 30
MAX_VERIFY_MEMORY = 64 << 30
_OUT_OF_MEMORY = re.compile(r"\bMemoryError\b|OOM when allocating|std::bad_alloc|Unable to allocate|"
                            r"failed to allocate|Cannot allocate memory")


def _stored_bytes(path: str) -> int:
    """Bytes ``path`` stores on disk (the cap on the loading process's memory grows with them).

    ``path`` counts with the files beside it that share its stem (a checkpoint's ``.index`` and
    ``.data`` files beside a ``.meta``), or every file under it for a folder.
    """
    stored = 0
    if os.path.isdir(path):
        for folder, _, names in os.walk(path):
            stored += sum(os.path.getsize(os.path.join(folder, n)) for n in names
                          if os.path.isfile(os.path.join(folder, n)))
    else:
        folder, stem = os.path.split(os.path.abspath(path))
        stem = stem.split(".")[0]
        try:
            names = os.listdir(folder)
        except OSError:
            names = []
        stored = sum(os.path.getsize(os.path.join(folder, n)) for n in names
                     if n.split(".")[0] == stem and os.path.isfile(os.path.join(folder, n)))
    return stored


def _cap_memory(cap: int) -> None:
    """In the child before it runs: at most ``cap`` bytes of data memory (never raises a lower limit)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))


_PACKAGES = {"onnxruntime": "onnxruntime", "ai_edge_litert": "ai-edge-litert", "tf_keras": "tf-keras"}


def last_error(stderr: str) -> str:
    """The last exception of a traceback with its indented lines (a course error's reasons and route)."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if re.match(r"^[\w.]+(Error|Exception|Exit)\b", line)]
    if not starts:
        return (lines or ["(no error message)"])[-1].strip()[:300]
    tail = [lines[starts[-1]]] + [line.strip() for line in lines[starts[-1] + 1:] if line[:1].isspace()]
    return " ".join(tail)[:700]


def _brief(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(f"{k}({', '.join(v)})" if isinstance(v, list) else f"{k}: {v}"
                         for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    return str(value)


def _clip(line: str, width: int = 100) -> str:
    return line if len(line) <= width else line[: width - 3] + "..."


def bytes_text(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def loading_code(path: str, body: str) -> str:
    return f"path = {path!r}\n" + textwrap.dedent(body).strip() + "\n"




def not_model(path: str, reason: str) -> Identification:
    """The answer for anything that is not a model file, with the reason."""
    return Identification(path, "not-a-model", reason=reason)


def code_tail(body: str) -> str:
    return textwrap.dedent(body).strip() + "\n"

