"""Reader: TensorFlow checkpoints (a prefix, a V1 single file, a folder with a state file).

Names the flavour by the keys: no object graph is a TF1 name-based checkpoint; an object graph
with Keras 3 edges (``_functional``, ``_kernel``...) is Keras 3, with ``layer_with_weights-N`` edges
Keras 2, otherwise a plain ``tf.Module``. The index, the object graph and a ``checkpoint`` state
file are read without TensorFlow (``bundle_index``, ``object_graph_proto``) where they read
plainly; anything else (a damaged or missing file, an old V1 checkpoint, a state file in another
form) is read through ``helpers.inspection`` and ``helpers.object_graph`` (TensorFlow's checkpoint
reader), so the answer and its reason are the same either way. ``light=False`` asks TensorFlow.

Example:
    >>> info = read_prefix("tests/data/tf215-graph/graph/model")
    >>> info.kind, info.written_by, info.holds["graph (.meta) beside it"]
    ('tf1-checkpoint', {'TensorFlow': '2.15.1'}, True)
    >>> read_prefix("tests/data/tf215/tfckpt_noopt/ckpt").kind
    'checkpoint-keras2'
    >>> read_checkpoint_folder("tests/data/tf215/manager").holds["latest"]
    'ckpt-3'
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any

from helpers.errors import first_line
from helpers.identify.answer import KINDS, Identification, bytes_text, loading_code, not_model
from helpers.identify.bundle_index import (OBJECT_GRAPH_KEY, data_files_complete, is_table, read_bundle_index,
                                           read_string_scalar)
from helpers.identify.meta_graphs import meta_summary
from helpers.identify.object_graph_proto import GraphFacts, read_graph_facts

__all__ = ["read_checkpoint_folder", "read_loose_folder", "read_prefix", "read_v1_or_unknown"]

_KERAS3_EDGES = {"_functional", "_operations", "_kernel", "_embeddings", "_tracker"}
_NAME_RESTORE_TRAP = ("tf.train.Checkpoint(...).restore(path) of a name-based checkpoint restores "
                      "NOTHING into a Keras 3 model and raises nothing: map names explicitly "
                      "(helpers.migration.restore_name_based)")
_K2_OPTIMIZER_TRAP = ("Keras 2 and Keras 3 optimizers both save under optimizer/_variables/N, but Keras 3 "
                      "keeps learning_rate among them: indexes are one apart (restore_keras2_checkpoint "
                      "pairs them)")
_K2_CHECKPOINT_TRAP = ("tf.train.Checkpoint(model=model).restore(path) into a Keras 3 model pairs few or "
                       "no keys (Keras 2 paths differ) and raises nothing: use "
                       "helpers.keras2.restore_keras2_checkpoint(path, model)")


def _state_file(folder: str) -> tuple[str, list[str]]:
    """``model_checkpoint_path`` and ``all_model_checkpoint_paths`` of a state file, read as text."""
    with open(os.path.join(folder, "checkpoint"), encoding="utf-8", errors="replace") as file:
        text = file.read()
    latest = re.search(r'^model_checkpoint_path:\s*"((?:[^"\\]|\\.)*)"', text, re.M)
    every = re.findall(r'^all_model_checkpoint_paths:\s*"((?:[^"\\]|\\.)*)"', text, re.M)
    unquote = lambda value: value.encode().decode("unicode_escape")  # noqa: E731
    return (unquote(latest[1]) if latest else ""), [unquote(v) for v in every]


_PLAIN_STATE_LINE = re.compile(r'(model_checkpoint_path|all_model_checkpoint_paths):\s*"([^"\\]*)"'
                               r'|(all_model_checkpoint_timestamps|last_preserved_timestamp):\s*[-+.0-9eE]+')


def light_latest(folder: str) -> str | None:
    """The prefix ``helpers.inspection.resolve_checkpoint(folder)`` gives, found without TensorFlow
    where the state file is plain text of the usual lines (no escapes, no comments) and names a
    checkpoint with an ``.index`` here; None where TensorFlow must decide.

    Example:
        >>> light_latest("tests/data/tf215/manager")
        'tests/data/tf215/manager/ckpt-3'
    """
    folder = folder.rstrip("/\\") or folder
    try:
        with open(os.path.join(folder, "checkpoint"), encoding="utf-8") as file:
            lines = [line.strip() for line in file.read().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    matches = [_PLAIN_STATE_LINE.fullmatch(line) for line in lines]
    named = [match[2] for match in matches if match and match[1] == "model_checkpoint_path"]
    if not all(matches) or len(named) != 1 or not named[0] or "\x00" in folder:
        return None
    latest = os.path.join(folder, named[0])  # as TensorFlow joins a relative name (an absolute one stays)
    for candidate in dict.fromkeys([latest, os.path.join(folder, re.split(r"[/\\]", latest)[-1])]):
        if os.path.isfile(candidate + ".index"):
            return candidate
        if os.path.isfile(candidate.replace("-?????-of-", "-00000-of-")):
            return None  # an old sharded (V1) checkpoint
    return None


def read_checkpoint_folder(folder: str, *, light: bool = True) -> Identification:
    """A folder with a ``checkpoint`` state file: its latest checkpoint, and the traps of the folder.

    ``light=False`` resolves and reads it with TensorFlow (the same answer).
    """
    named, listed = _state_file(folder)
    prefix = light_latest(folder) if light else None
    reading = _light_reading(prefix) if prefix else None
    if reading is None:
        from helpers.errors import NotACheckpointError
        from helpers.inspection import resolve_checkpoint

        try:
            prefix = resolve_checkpoint(folder)
        except NotACheckpointError as error:
            return not_model(folder, f"a checkpoint folder whose state file is unusable: {error.reason}")
    inner = _named_prefix(prefix, reading) if reading else read_prefix(prefix, light=False)
    latest = os.path.basename(prefix)
    kept = [re.split(r"[/\\]", p)[-1] for p in listed] or [latest]
    info = Identification(folder, "checkpoint-folder", written_by=inner.written_by)
    info.holds = {"latest": latest, "checkpoints": kept, "flavour": KINDS[inner.kind], **inner.holds}
    if named and (os.path.isabs(named) or re.match(r"^[A-Za-z]:\\", named)) and \
            os.path.normpath(named) != os.path.normpath(prefix):
        info.traps.append(f"the state file names another machine's path ({named!r}): "
                          "tf.train.latest_checkpoint(folder) returns None (and logs an error), "
                          "CheckpointManager(...).latest_checkpoint returns that path, which does not "
                          "exist here; helpers.inspection.resolve_checkpoint(folder) finds the file here")
    times = {}
    for name in kept:
        candidate = os.path.join(folder, name + ".index")
        if os.path.isfile(candidate):
            times[name] = os.path.getmtime(candidate)
    if times and max(times, key=times.get) != latest and times[max(times, key=times.get)] > times.get(latest, 0):
        info.traps.append(f"the latest checkpoint ({latest}, per the state file) is not the newest file "
                          f"on disk ({max(times, key=times.get)}): trust the state file, not file times")
    info.traps += inner.traps
    body = inner.how_to_load.split("\n", 1)[1]  # the prefix's code, after its `path = ...`
    info.how_to_load = ("from helpers.inspection import resolve_checkpoint\n"
                        f"path = resolve_checkpoint({folder!r})  # the latest, as the state file says\n"
                        + body)
    return info


# --------------------------------------------------------------------------- checkpoints


def read_prefix(prefix: str, *, light: bool = True) -> Identification:
    """A checkpoint prefix: its flavour, what it holds, its traps and the code that loads its values.

    ``light=False`` reads it with TensorFlow's checkpoint reader (the same answer).
    """
    reading = _light_reading(prefix) if light else None
    if reading is None:
        reading = _tensorflow_reading(prefix)
        if isinstance(reading, Identification):
            return reading
    return _named_prefix(prefix, reading)


# The keys of the values (the object graph's not among them), their bytes, and the object graph's
# facts (None: a name-based checkpoint).
_Reading = tuple[list[str], int, GraphFacts | None]


def _light_reading(prefix: str) -> _Reading | None:
    """What naming needs, read without TensorFlow; None where TensorFlow's reader must decide."""
    if not prefix or "\x00" in prefix or os.path.isdir(prefix) or not os.path.isfile(prefix + ".index"):
        return None
    try:
        index = read_bundle_index(prefix + ".index")
        if not data_files_complete(prefix, index):
            return None
        keys = sorted(key for key in index.entries if key != OBJECT_GRAPH_KEY)
        if OBJECT_GRAPH_KEY not in index.entries:
            return keys, index.value_bytes(), None
        return keys, index.value_bytes(), read_graph_facts(read_string_scalar(prefix, index, OBJECT_GRAPH_KEY))
    except (OSError, ValueError, struct.error):  # UnicodeDecodeError is a ValueError
        return None


def _tensorflow_reading(prefix: str) -> _Reading | Identification:
    from helpers.errors import NotACheckpointError
    from helpers.inspection import describe_checkpoint

    try:
        description = describe_checkpoint(prefix)
    except NotACheckpointError as error:
        return not_model(prefix, f"a checkpoint prefix that cannot be read: {error.reason}")
    keys = [v.key for v in description.variables if v.key != OBJECT_GRAPH_KEY]
    if not description.has_object_graph:
        return keys, description.total_bytes, None
    from helpers.object_graph import read_object_graph

    graph = read_object_graph(prefix, include_empty=True)
    return keys, description.total_bytes, GraphFacts(frozenset(edge.name for edge in graph.edges),
                                                      bool(graph.of_kind("optimizer")))


def _named_prefix(prefix: str, reading: _Reading) -> Identification:
    keys, total, facts = reading
    holds: dict[str, Any] = {"variables": len(keys), "bytes": bytes_text(total)}
    written: dict[str, str] = {}
    traps: list[str] = []
    if os.path.isfile(prefix + ".meta"):
        from google.protobuf.message import DecodeError

        try:
            version, _, _ = meta_summary(prefix + ".meta")
        except DecodeError as error:  # the values may be fine: say so, and name the checkpoint
            version = ""
            traps.append(f"the .meta beside it is damaged ({first_line(error)}): the graph cannot be "
                         "imported; the values can still be read")
        if version:
            written["TensorFlow"] = version
    if facts is None:
        holds["optimizer state"] = any(re.search(r"/(Adam|Momentum|RMSProp|Adagrad)(_\d+)?$|beta[12]_power",
                                                 key) for key in keys)
        holds["graph (.meta) beside it"] = os.path.isfile(prefix + ".meta")
        traps.append(_NAME_RESTORE_TRAP)
        return Identification(prefix, "tf1-checkpoint", written_by=written, holds=holds, traps=traps,
                              how_to_load=_values_code(prefix, "helpers.migration.restore_name_based("
                                                                "path, {key: variable})"))
    edges = facts.edge_names
    holds["optimizer state"] = facts.has_optimizer
    if edges & _KERAS3_EDGES:
        kind, route = "checkpoint-keras3", "tf.train.Checkpoint(model=model).restore(path).assert_consumed()"
    elif any(e.startswith(("layer_with_weights-", "layer-")) or e == "keras_api" for e in edges):
        kind, route = "checkpoint-keras2", "helpers.keras2.restore_keras2_checkpoint(path, model)"
        traps.append(_K2_CHECKPOINT_TRAP if not holds["optimizer state"] else _K2_CHECKPOINT_TRAP.replace(
            " and raises nothing", "; when the checkpoint's optimizer is reached through what you restore "
            "(a compiled Keras 2 model's tf.train.Checkpoint(model=...), or optimizer= passed too), it "
            "overwrites some optimizer variables, then raises a shape error (a partial restore)"))
        if holds["optimizer state"]:
            traps.append(_K2_OPTIMIZER_TRAP)
    else:
        kind, route = "checkpoint-module", "tf.train.Checkpoint(<same attributes>).restore(path)"
    if os.path.isfile(prefix + ".meta"):
        traps.append("a .meta file lies beside it, but the checkpoint is object-based (TF2): "
                     "the .meta does not make it a TF1 checkpoint")
    return Identification(prefix, kind, written_by=written, holds=holds, traps=traps,
                          how_to_load=_values_code(prefix, route))


def _values_code(prefix: str, route: str) -> str:
    return loading_code(prefix, f"""
        from helpers.inspection import read_checkpoint
        # The architecture is not in a checkpoint: these are its values by key.
        # Into your model: {route}
        loaded = read_checkpoint(path)
        report = f"{{len(loaded)}} values by key, e.g. {{sorted(loaded)[:2]}}"
        """)


def read_v1_or_unknown(text: str) -> Identification:
    """A file no other reader took: an old single-file V1 checkpoint, or not a model file."""
    from helpers.errors import NotACheckpointError

    with open(text, "rb") as file:
        shown = file.read(8).hex(" ")
    unknown = not_model(text, f"not a format this course knows (first bytes {shown})")
    if not is_table(text) and not os.path.exists(text + ".index"):  # TensorFlow's reader says so too
        return unknown
    from helpers.inspection import describe_checkpoint

    try:
        description = describe_checkpoint(text)
    except NotACheckpointError:
        return unknown
    holds = {"variables": len(description.variables), "bytes": bytes_text(description.total_bytes)}
    return Identification(text, "tf1-checkpoint-v1", holds=holds, traps=[_NAME_RESTORE_TRAP],
                          how_to_load=_values_code(text, "helpers.migration.restore_name_based("
                                                         "path, {key: variable})"))



def read_loose_folder(folder: str) -> Identification:
    """A folder of ``.index`` files and no ``checkpoint`` state file: its one checkpoint, or which to pass."""
    indexes = sorted(n[: -len(".index")] for n in os.listdir(folder) if n.endswith(".index"))
    if len(indexes) == 1:
        info = read_prefix(os.path.join(folder, indexes[0]))
        info.traps.insert(0, f"a folder with one checkpoint and no 'checkpoint' state file: "
                             f"pass the prefix {indexes[0]!r}")
        return info
    return not_model(folder, f"a folder of {len(indexes)} checkpoints with no 'checkpoint' state "
                             f"file: identify one prefix ({', '.join(indexes[:3])})")
