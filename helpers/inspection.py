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
object-based ones (``tf.train.Checkpoint``) alike.

Example:
    >>> import tensorflow as tf
    >>> prefix = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write("demo/ckpt")  # doctest: +SKIP
    >>> describe_checkpoint(prefix)                                                  # doctest: +SKIP
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
from pathlib import Path

import numpy as np
import tensorflow as tf

from helpers.errors import NotACheckpointError, first_line
from helpers.notebook import format_table

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
STATE_FILE = "checkpoint"
_CHECKPOINT_FILE = re.compile(r"\.(index|meta|data-\d{5}-of-\d{5})$")


# --------------------------------------------------------------------------- paths


def resolve_checkpoint(path: str | os.PathLike) -> str:
    """Return the checkpoint prefix that ``path`` names, or raise ``NotACheckpointError``.

    ``path`` is a prefix (``ckpt/model-3``: the ``.index`` and ``.data-*``
    files share it) or a folder with a ``checkpoint`` state file, which
    stands for its newest checkpoint. One of the checkpoint's own files
    (``ckpt/model-3.index``) is refused with a hint naming the prefix: every
    recipe of the course, like TensorFlow's own API, takes the prefix.

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
        >>> open_checkpoint("ckpt/model-3").get_tensor("step")   # doctest: +SKIP
        5
    """
    return _resolve_and_open(path)[1]


def _resolve_and_open(path: str | os.PathLike) -> tuple[str, tf.train.CheckpointReader]:
    """The prefix ``path`` names and a reader for it; opening the index is also the validity check."""
    text = os.fspath(path)
    if os.path.isdir(text):
        return _latest_in_folder(text)
    own_file = _CHECKPOINT_FILE.search(text)
    if own_file:
        raise NotACheckpointError(text, f"this is one of a checkpoint's files; pass its prefix {text[: own_file.start()]!r}")
    if not os.path.isfile(text + ".index"):
        raise NotACheckpointError(text, _why_no_index(text))
    try:
        return text, tf.train.load_checkpoint(text)
    except (tf.errors.OpError, ValueError) as error:
        raise NotACheckpointError(text, f"its index file is damaged or of another format ({first_line(error)})") from None


def read_tensor(reader: tf.train.CheckpointReader, path: str | os.PathLike, key: str) -> np.ndarray:
    """``reader.get_tensor(key)``, with a truncated or damaged data file reported as ``NotACheckpointError``.

    Example:
        >>> read_tensor(open_checkpoint("ckpt/model-3"), "ckpt/model-3", "step")   # doctest: +SKIP
        5
    """
    try:
        return reader.get_tensor(key)
    except (tf.errors.OpError, IndexError, ValueError) as error:
        raise NotACheckpointError(
            os.fspath(path), f"cannot read {key!r}: its data file is truncated or damaged ({first_line(error)})"
        ) from None


def _latest_in_folder(folder: str) -> tuple[str, tf.train.CheckpointReader]:
    if not os.path.exists(os.path.join(folder, STATE_FILE)):
        raise NotACheckpointError(folder, f"a folder with no {STATE_FILE!r} state file naming a checkpoint")
    latest = tf.train.latest_checkpoint(folder)
    if latest is None:
        raise NotACheckpointError(folder, f"its {STATE_FILE!r} state file names a checkpoint whose files are gone")
    return _resolve_and_open(latest)


def _why_no_index(text: str) -> str:
    if os.path.isfile(text):
        return "a file, not a checkpoint prefix (a prefix has a '<prefix>.index' file beside it)"
    if os.path.isfile(text + ".meta"):
        return "only the graph ('.meta') is there; the '.index' and '.data' files are missing"
    return f"no checkpoint files with this prefix (no {text + '.index'!r})"


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

    Nothing but the checkpoint's index is read: no graph, no model code.

    Example:
        >>> description = describe_checkpoint("ckpt/model-3")   # doctest: +SKIP
        >>> description.keys                                    # doctest: +SKIP
        ['model/w', 'step']
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
        >>> read_checkpoint("ckpt/model-3")["step"]   # doctest: +SKIP
        5
    """
    reader = open_checkpoint(path)
    return {key: read_tensor(reader, path, key) for key in sorted(reader.get_variable_to_shape_map())}


# --------------------------------------------------------------------------- files

_FILE_ROLES = {
    "index": "the index: every key with its shape, dtype and where its bytes are",
    "data": "the values of the variables (data shard {shard} of {total})",
    "meta": "the graph (a MetaGraphDef): ops, collections, the Saver's settings",
    STATE_FILE: "state file: the newest checkpoint, and the ones still kept (text)",
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
        >>> checkpoint_files("ckpt/model-3")   # doctest: +SKIP
        file                               size    what it holds
        ---------------------------------  ------  ------------------------------
        checkpoint                         ...
    """
    prefix = resolve_checkpoint(path)
    folder = Path(prefix).parent
    stem = Path(prefix).name
    files = []
    for file in sorted(folder.iterdir()):
        role = _role_of(file.name, stem)
        if role is not None:
            files.append(CheckpointFile(file.name, file.stat().st_size, role))
    return CheckpointFiles(prefix, tuple(files))


def _role_of(name: str, stem: str) -> str | None:
    if name == STATE_FILE:
        return _FILE_ROLES[STATE_FILE]
    if not name.startswith(stem + "."):
        return None
    suffix = name[len(stem) + 1 :]
    data = re.fullmatch(r"data-(\d{5})-of-(\d{5})", suffix)
    if data:
        return _FILE_ROLES["data"].format(shard=int(data[1]) + 1, total=int(data[2]))
    return _FILE_ROLES.get(suffix) if suffix in ("index", "meta") else None
