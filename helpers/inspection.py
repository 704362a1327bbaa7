"""Look inside a checkpoint without building the graph that wrote it (notebook 01).

Three recipes:

* ``resolve_checkpoint(path)``: turn a folder or a prefix into the checkpoint
  prefix, or fail with an error that says what is wrong with the path
  (``open_checkpoint`` and ``read_tensor`` build on it, and every recipe of
  the course reads checkpoints through them);
* ``describe_checkpoint(path)``: a table of every saved key with its shape,
  dtype and size;
* ``checkpoint_files(path)``: the files behind a checkpoint and what each holds;

plus ``read_checkpoint(path)``, which loads every value as a NumPy array.
They work for name-based checkpoints (``tf.compat.v1.train.Saver``) and
object-based ones (``tf.train.Checkpoint``) alike, and for the files people
really have: the old single-file V1 format, folders moved from another
machine (their ``checkpoint`` state file names paths that are not here), a
TF1 SavedModel's ``variables/``, and names with spaces, non-ASCII letters or
``[``, ``*``, ``?``. Paths are ``str`` or ``os.PathLike``.

Example:
    >>> import os, tempfile
    >>> import tensorflow as tf
    >>> folder = tempfile.mkdtemp()
    >>> prefix = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(os.path.join(folder, "ckpt"))
    >>> describe_checkpoint(prefix)
    key                           shape  dtype    size
    ----------------------------  -----  -------  ----
    _CHECKPOINTABLE_OBJECT_GRAPH  ()     string   -
    v/.ATTRIBUTES/VARIABLE_VALUE  (2,)   float32  8 B
    1 variable, 8 B (+ the object graph)
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from helpers.errors import NotACheckpointError, first_line
from helpers.files import V1_SHARD, checkpoint_path_text, glob_safe_prefix, path_text
from helpers.notebook import format_table
from helpers.tensor_bundle import short_data_files

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
STATE_FILE = "checkpoint"
_OWN_FILE = re.compile(r"\.(index|meta|data-\d{5}-of-\d{5})$")
_DATA_FILE = re.compile(r"\.data-(\d{5})-of-(\d{5})$")


# --------------------------------------------------------------------------- paths


def resolve_checkpoint(path: str | os.PathLike) -> str:
    """Return the checkpoint prefix that ``path`` names, or raise ``NotACheckpointError``.

    ``path`` is one of:

    * a prefix (``ckpt/model-3``: the ``.index`` and ``.data-*`` files share it);
    * an old single-file checkpoint (V1 format, ``ckpt/model.ckpt`` with no
      ``.index``), or the pattern of an old sharded one (``model-?????-of-00002``);
    * a folder with a ``checkpoint`` state file, which stands for its newest
      checkpoint. When the state file names a path that is not there (the
      folder came from another machine), the folder's own file of that name
      is used; the error names every path tried;
    * a SavedModel folder, which stands for its ``variables/variables``, or a
      folder with no state file that holds exactly one checkpoint (the
      SavedModel's ``variables/``).

    One of a checkpoint's own files (``ckpt/model-3.index``) is refused with
    a hint naming the prefix: every recipe of the course, like TensorFlow's
    own API, takes the prefix.

    Example:
        >>> resolve_checkpoint("no/such/model")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'no/such/model' is not a readable checkpoint: no checkpoint files with this prefix (no 'no/such/model.index')
    """
    return _resolve_and_open(path)[0]


def open_checkpoint(path: str | os.PathLike) -> tf.train.CheckpointReader:
    """A reader for the checkpoint ``path`` names (see ``resolve_checkpoint``).

    Example:
        >>> int(open_checkpoint("tests/data/tf215-graph/graph/model").get_tensor("global_step"))
        3
    """
    return _resolve_and_open(path)[1]


def _resolve_and_open(path: str | os.PathLike) -> tuple[str, tf.train.CheckpointReader]:
    """The prefix ``path`` names and a reader for it; opening the index is also the validity check."""
    text = checkpoint_path_text(path)
    if os.path.isdir(text):
        return _resolve_and_open(_prefix_in_folder(text))
    if os.path.isfile(text + ".index"):
        reader = _open(text, "its index file")
        _require_data_files(text, reader)
        return text, reader
    if _OWN_FILE.search(text):
        prefix = text[: _OWN_FILE.search(text).start()]
        raise NotACheckpointError(text, f"this is one of a checkpoint's files; pass its prefix {prefix!r}")
    shard = V1_SHARD.search(text)
    if shard and (os.path.isfile(text) or shard[1] == "?????"):
        _require_v1_shards(text, shard)
        return text, _open(text, "it as an old sharded (V1) checkpoint")
    if os.path.isfile(text):
        return text, _open(text, "it as a checkpoint (neither '<prefix>.index' beside it nor "
                                         "an old single-file V1 checkpoint)")
    raise NotACheckpointError(text, _why_missing(text))


def _why_missing(text: str) -> str:
    shard = V1_SHARD.search(text)
    if shard and os.path.isfile(text[: shard.start()] + ".index"):
        return f"no such file; the checkpoint's prefix is {text[: shard.start()]!r}"
    shards = _v1_shards_of(text)
    if shards:  # TF 0.x wrote `model.ckpt-1000-00000-of-00001`; TensorFlow does not take the prefix
        pattern = f"{text}-?????-of-{V1_SHARD.search(shards[0])[2]}"
        if len(shards) == 1:
            return (f"an old sharded (V1) checkpoint is in the file {shards[0]!r}, and TensorFlow "
                    f"does not find it from the prefix: pass that full file name or {pattern!r}")
        return (f"an old sharded (V1) checkpoint is in {len(shards)} files ({shards[0]!r}, ...), and "
                f"TensorFlow does not find them from the prefix: pass {pattern!r}")
    if os.path.isfile(text + ".meta"):
        return "only the graph ('.meta') is there; the '.index' and '.data' files are missing"
    return f"no checkpoint files with this prefix (no {text + '.index'!r})"


def _v1_shards_of(prefix: str) -> list[str]:
    """The files of an old sharded (V1) checkpoint named ``prefix-NNNNN-of-NNNNN``, if any."""
    folder, stem = os.path.split(prefix)
    if not os.path.isdir(folder or "."):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder or ".")
                  if name.startswith(stem) and re.fullmatch(r"-\d{5}-of-\d{5}", name[len(stem):]))


def _data_files(prefix: str) -> list[str]:
    """The ``.data-*`` files of ``prefix``, compared name by name (``[``, ``*``, ``?`` are plain)."""
    folder, stem = os.path.split(prefix)
    names = os.listdir(folder or ".")
    return sorted(os.path.join(folder, name) for name in names
                  if name.startswith(stem) and _DATA_FILE.fullmatch(name[len(stem):]))


def _require_data_files(prefix: str, reader: tf.train.CheckpointReader) -> None:
    """Refuse missing data shards, and any shard shorter than the values the index places in it.

    The index says, for every value of every dtype (strings and the object graph
    too), in which shard it lies and where it ends; each shard must reach the
    largest of those ends. An index this reader cannot parse falls back to the
    total of the numeric values' bytes.
    """
    present = {os.path.basename(name) for name in _data_files(prefix)}
    stem = os.path.basename(prefix)
    total = max((int(_DATA_FILE.search(name)[2]) for name in present), default=1)
    missing = [f"{stem}.data-{shard:05d}-of-{total:05d}" for shard in range(total)]
    missing = [name for name in missing if name not in present]
    if missing:
        raise NotACheckpointError(prefix, f"its data files are missing (No such file: {', '.join(missing)})")
    short = short_data_files(prefix)
    for name, have, needed in short or []:
        state = ("missing" if have is None
                 else f"truncated or damaged ({have} B; its index places values up to {needed} B)")
        raise NotACheckpointError(prefix, f"its data file {name!r} is {state}: copy the checkpoint again")
    if short is not None:
        return
    dtypes = reader.get_variable_to_dtype_map()
    shapes = reader.get_variable_to_shape_map()
    needed = sum(_nbytes(shape, dtypes[key]) or 0 for key, shape in shapes.items())
    have = sum(os.path.getsize(name) for name in _data_files(prefix))
    if have < needed:
        raise NotACheckpointError(
            prefix, f"its data files are truncated or damaged ({have} B; the index lists {needed} B)")


def _require_v1_shards(text: str, shard: re.Match) -> None:
    """Refuse one shard of several (the pattern names them all) and a pattern with shards missing."""
    stem, total = text[: shard.start()], int(shard[2])
    if shard[1] != "?????" and total == 1:
        return
    if shard[1] != "?????":
        pattern = f"{stem}-?????-of-{total:05d}"
        raise NotACheckpointError(text, f"one of {total} shards of an old (V1) checkpoint; pass {pattern!r}")
    files = [f"{stem}-{index:05d}-of-{total:05d}" for index in range(total)]
    missing = [file for file in files if not os.path.isfile(file)]
    if missing:
        raise NotACheckpointError(text, f"shards of this old (V1) checkpoint are missing: {missing}")


def _prefix_in_folder(folder: str) -> str:
    """The newest checkpoint of ``folder``, from its state file (or its SavedModel variables)."""
    folder = folder.rstrip("/\\") or folder
    saved_model = os.path.join(folder, "variables", "variables")
    if not os.path.isfile(os.path.join(folder, STATE_FILE)):
        if os.path.isfile(saved_model + ".index"):
            return saved_model
        prefixes = sorted(n[: -len(".index")] for n in os.listdir(folder) if n.endswith(".index"))
        if len(prefixes) == 1:  # e.g. a SavedModel's variables/ folder
            return os.path.join(folder, prefixes[0])
        hint = f"; it holds {prefixes[:3]}: pass one of them as folder/prefix" if prefixes else ""
        raise NotACheckpointError(folder, f"a folder with no {STATE_FILE!r} state file naming a checkpoint"
                                          + hint)
    try:
        state = tf.train.get_checkpoint_state(folder)
    except (ValueError, tf.errors.OpError):  # not text, or not a state file
        state = None
    if state is None or not state.model_checkpoint_path:
        raise NotACheckpointError(folder, f"its {STATE_FILE!r} state file is empty or damaged")
    named = state.model_checkpoint_path  # TensorFlow joins a relative name to the folder
    # A path of another machine (POSIX or Windows): look for its last part in this folder.
    tried = list(dict.fromkeys([named, os.path.join(folder, re.split(r"[/\\]", named)[-1])]))
    for candidate in tried:
        first_file = candidate.replace("-?????-of-", "-00000-of-")  # an old sharded (V1) pattern
        if os.path.isfile(candidate + ".index") or os.path.isfile(first_file):
            return candidate
    raise NotACheckpointError(
        folder, f"its {STATE_FILE!r} state file names a checkpoint whose files are gone (tried {tried})")


def _open(prefix: str, what: str) -> tf.train.CheckpointReader:
    readable = glob_safe_prefix(prefix)  # TensorFlow takes [, *, ? in a path as a pattern
    try:
        return tf.train.load_checkpoint(readable)
    except (tf.errors.OpError, ValueError, RuntimeError) as error:
        reason = first_line(error)
        if readable != prefix:  # name the user's files, not the links
            reason = reason.replace(readable, prefix)
        raise NotACheckpointError(
            prefix, f"cannot read {what}: damaged or of another format ({reason})") from None


def read_tensor(reader: tf.train.CheckpointReader, path: str | os.PathLike, key: str) -> np.ndarray:
    """``reader.get_tensor(key)``, with a truncated or damaged data file reported as ``NotACheckpointError``.

    Example:
        >>> prefix = "tests/data/tf215-graph/graph/model"
        >>> read_tensor(open_checkpoint(prefix), prefix, "online/out/bias").shape
        (2,)
    """
    try:
        return reader.get_tensor(key)
    except (tf.errors.OpError, IndexError, ValueError, RuntimeError) as error:
        raise NotACheckpointError(
            path_text(path), f"cannot read {key!r}: its data file is truncated or damaged ({first_line(error)})"
        ) from None


# --------------------------------------------------------------------------- sizes


def format_bytes(size: int | None) -> str:
    """A byte count in B, KiB, MiB or GiB, or ``-`` when unknown.

    Example:
        >>> format_bytes(24), format_bytes(2048), format_bytes(None)
        ('24 B', '2.0 KiB', '-')
    """
    if size is None:
        return "-"
    if size < 1024:
        return f"{size} B"
    for unit in ("KiB", "MiB", "GiB"):
        size /= 1024
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- describe


@dataclass(frozen=True)
class SavedVariable:
    """One key of a checkpoint: its shape, dtype and size in bytes (``None`` for strings)."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    nbytes: int | None


@dataclass(frozen=True)
class CheckpointDescription:
    """Every key of a checkpoint; shows itself as a table."""

    prefix: str
    variables: tuple[SavedVariable, ...]

    @property
    def keys(self) -> list[str]:
        return [variable.key for variable in self.variables]

    @property
    def has_object_graph(self) -> bool:
        """True for an object-based checkpoint (written by ``tf.train.Checkpoint``)."""
        return OBJECT_GRAPH_KEY in self.keys

    @property
    def total_bytes(self) -> int:
        """Bytes of the variables' values (the object graph not counted)."""
        return sum(v.nbytes or 0 for v in self.variables if v.key != OBJECT_GRAPH_KEY)

    def __repr__(self) -> str:
        rows = [
            [v.key, _format_shape(v.shape), v.dtype, format_bytes(v.nbytes)]
            for v in self.variables
        ]
        count = len(self.variables) - self.has_object_graph
        summary = f"{count} variable{'s' * (count != 1)}, {format_bytes(self.total_bytes)}"
        if self.has_object_graph:
            summary += " (+ the object graph)"
        return format_table(["key", "shape", "dtype", "size"], rows) + "\n" + summary


def _format_shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def describe_checkpoint(path: str | os.PathLike) -> CheckpointDescription:
    """List every key of a checkpoint with its shape, dtype and size, read from its index.

    Nothing but the checkpoint's index is read: no graph, no model code. A
    partitioned variable is one key with its full shape.

    Example:
        >>> description = describe_checkpoint("tests/data/tf215-graph/graph/model")
        >>> description.keys[:3], description.has_object_graph
        (['beta1_power', 'beta2_power', 'global_step'], False)
    """
    prefix, reader = _resolve_and_open(path)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    variables = tuple(
        SavedVariable(key, tuple(shapes[key]), dtypes[key].name, _nbytes(shapes[key], dtypes[key]))
        for key in sorted(shapes)
    )
    return CheckpointDescription(prefix, variables)


def _nbytes(shape: Sequence[int], dtype: tf.DType) -> int | None:
    if dtype == tf.string:
        return None
    return math.prod(shape) * dtype.size


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load every value of a checkpoint as NumPy arrays, keyed by checkpoint key.

    Unlike ``describe_checkpoint`` this reads the data files too, so a
    truncated or damaged data file is reported here.

    Example:
        >>> values = read_checkpoint("tests/data/tf215-graph/graph/model")
        >>> int(values["global_step"]), values["online/dense/kernel"].shape
        (3, (4, 5))
    """
    prefix, reader = _resolve_and_open(path)
    return {key: read_tensor(reader, prefix, key) for key in sorted(reader.get_variable_to_shape_map())}


# --------------------------------------------------------------------------- files

_FILE_ROLES = {
    "index": "the index: each key's shape, dtype and place",
    "data": "the values (data shard {shard} of {total})",
    "meta": "the graph (a MetaGraphDef)",
    "v1": "keys and values in one file (old V1 format)",
    STATE_FILE: "state file: newest and kept checkpoints",
}


@dataclass(frozen=True)
class CheckpointFile:
    """One file behind a checkpoint: its name inside the folder, size, and what it holds."""

    name: str
    nbytes: int
    holds: str


@dataclass(frozen=True)
class CheckpointFiles:
    """The files behind one checkpoint prefix; shows itself as a table."""

    prefix: str
    files: tuple[CheckpointFile, ...]

    @property
    def names(self) -> list[str]:
        return [file.name for file in self.files]

    def __repr__(self) -> str:
        rows = [[f.name, format_bytes(f.nbytes), f.holds] for f in self.files]
        return format_table(["file", "size", "what it holds"], rows)


def checkpoint_files(path: str | os.PathLike) -> CheckpointFiles:
    """List the files behind a checkpoint and what each holds.

    The folder's ``checkpoint`` state file is listed too when it is there.
    Names are relative to the checkpoint's folder.

    Example:
        >>> checkpoint_files("tests/data/tf215/manager")  # a folder: its newest checkpoint
        file                        size     what it holds
        --------------------------  -------  --------------------------------------------
        checkpoint                  344 B    state file: newest and kept checkpoints
        ckpt-3.data-00000-of-00001  3.6 KiB  the values (data shard 1 of 1)
        ckpt-3.index                1.4 KiB  the index: each key's shape, dtype and place
    """
    prefix = resolve_checkpoint(path)
    folder, stem = os.path.split(prefix)
    shard = V1_SHARD.search(stem)
    files = []
    for name in sorted(os.listdir(folder or ".")):
        role = _role_of(name, stem, shard)
        if role is not None:
            files.append(CheckpointFile(name, os.path.getsize(os.path.join(folder, name)), role))
    return CheckpointFiles(prefix, tuple(files))


def _role_of(name: str, stem: str, v1_shard: re.Match | None) -> str | None:
    if name == STATE_FILE:
        return _FILE_ROLES[STATE_FILE]
    if name == stem or (v1_shard and re.fullmatch(re.escape(stem[: v1_shard.start()]) + r"-\d{5}-of-\d{5}", name)):
        return _FILE_ROLES["v1"]
    base = stem[: v1_shard.start()] if v1_shard else stem
    if not name.startswith(base + "."):
        return None
    suffix = name[len(base) + 1 :]
    data = re.fullmatch(r"data-(\d{5})-of-(\d{5})", suffix)
    if data and not v1_shard and name.startswith(stem + "."):
        return _FILE_ROLES["data"].format(shard=int(data[1]) + 1, total=int(data[2]))
    return _FILE_ROLES.get(suffix) if suffix in ("index", "meta") else None
