"""Paths in, files out: the one place where recipes check a path and refuse to overwrite.

Every recipe that takes a path accepts a ``str`` or any ``os.PathLike``
(``pathlib.Path``) through ``path_text``, and every recipe that writes checks
first with ``refuse_existing`` or ``refuse_existing_checkpoint`` (and, before
long work, ``refuse_unwritable``; before writing a checkpoint that TensorFlow is
to restore by its name, ``refuse_glob_characters``). Existence
is tested literally, name by name, never with a glob pattern: a path such as
``runs/[best]*`` is protected like any other.

TensorFlow's checkpoint functions take a prefix for a glob pattern, so a
checkpoint under ``runs/[1]/`` cannot be read by its name; every recipe hands
TensorFlow ``glob_safe_prefix(prefix)`` instead.

Example:
    >>> from pathlib import Path
    >>> path_text(Path("runs") / "model")
    'runs/model'
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import zipfile

from helpers.errors import ArchiveTooLargeError, GlobPathError, NotACheckpointError, NotWritableError, WouldOverwriteError

CHECKPOINT_SUFFIXES = (".index", ".meta")
DATA_SUFFIX = ".data-"
GLOB_CHARACTERS = re.compile(r"[][*?]")
V1_SHARD = re.compile(r"-(\d{5}|\?{5})-of-(\d{5})$")  # an old sharded (V1) name: model-00000-of-00002


def path_text(path: str | os.PathLike, what: str = "path") -> str:
    """``path`` as a string; a ``TypeError`` naming ``what`` when it is not a path at all.

    Example:
        >>> path_text(3, "checkpoint prefix")
        Traceback (most recent call last):
        ...
        TypeError: the checkpoint prefix must be a str or os.PathLike, got int 3
    """
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"the {what} must be a str or os.PathLike, got {type(path).__name__} {path!r}") from None
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text:
        raise ValueError(f"the {what} is empty")
    return text


def checkpoint_path_text(path: str | os.PathLike, what: str = "checkpoint path") -> str:
    """``path`` as a string, or ``NotACheckpointError`` when it is empty or holds a NUL character.

    A ``TypeError`` names ``what`` when ``path`` is not a path at all.

    Example:
        >>> checkpoint_path_text("bad\\x00name")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'bad\\x00name' is not a readable checkpoint: a path cannot contain a NUL character
    """
    try:
        text = path_text(path, what)
    except ValueError as error:  # an empty path
        raise NotACheckpointError("", str(error)) from None
    if "\x00" in text:
        raise NotACheckpointError(text, "a path cannot contain a NUL character")
    return text


def refuse_existing(path: str | os.PathLike, what: str = "a file") -> str:
    """Return ``path`` as text, or raise ``WouldOverwriteError`` when something exists there.

    Example:
        >>> refuse_existing("surely/not/here.keras")
        'surely/not/here.keras'
    """
    text = path_text(path)
    if os.path.lexists(text):
        raise WouldOverwriteError(text, "a folder" if os.path.isdir(text) and "folder" not in what else what)
    return text


def refuse_unwritable(path: str | os.PathLike) -> str:
    """Return ``path`` as text, or raise ``NotWritableError`` when its folder cannot be written into.

    The folder checked is the nearest one that exists (folders still to be
    made are made inside it). Call it before long work whose result goes to
    ``path``, so that a read-only folder is found before, not after.

    Example:
        >>> refuse_unwritable("surely/not/here.keras")
        'surely/not/here.keras'
    """
    text = path_text(path)
    folder = os.path.dirname(os.path.abspath(text))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    if not os.access(folder, os.W_OK | os.X_OK):  # also false for an immutable folder, as root
        raise NotWritableError(text, folder)
    return text


def checkpoint_files_at(prefix: str | os.PathLike) -> list[str]:
    """The names of the files that belong to checkpoint ``prefix`` (``.index``, ``.data-*``, ``.meta``).

    Compared name by name, so ``[``, ``*`` and ``?`` in the prefix are plain characters.

    Example:
        >>> checkpoint_files_at("surely/not/here")
        []
    """
    text = path_text(prefix, "checkpoint prefix")
    folder, stem = os.path.split(text)
    try:
        names = os.listdir(folder or ".")
    except (FileNotFoundError, NotADirectoryError):
        return []
    owned = [name for name in names if name in {stem + suffix for suffix in CHECKPOINT_SUFFIXES}
             or name.startswith(stem + DATA_SUFFIX)]
    return sorted(owned)


def refuse_existing_checkpoint(prefix: str | os.PathLike) -> str:
    """Return ``prefix`` as text, or raise ``WouldOverwriteError`` when a checkpoint is already there.

    Example:
        >>> refuse_existing_checkpoint("surely/not/here")
        'surely/not/here'
    """
    text = path_text(prefix, "checkpoint prefix")
    if checkpoint_files_at(text):
        raise WouldOverwriteError(text, "a checkpoint")
    return text


def refuse_glob_characters(path: str | os.PathLike, folder: bool = False) -> str:
    """Return ``path`` as text, or raise ``GlobPathError`` naming its ``[``, ``]``, ``*`` or ``?``.

    ``path`` is a checkpoint prefix, or with ``folder=True`` a folder to keep checkpoints in.

    TensorFlow looks for a checkpoint's files with a glob pattern: it writes a
    checkpoint under ``run[1]/``, then cannot restore it from there ("Failed to
    find any matching files": the pattern matches ``run1/``, not ``run[1]/``), and a
    ``CheckpointManager`` there never deletes its old checkpoints. ``run*/`` and ``run?/`` restore the right files, but a
    ``CheckpointManager`` in ``run*/`` deletes checkpoints of ``runA/`` too: the
    ones numbered like those it drops from its own folder (TensorFlow 2.21). Recipes that write a checkpoint for TensorFlow code to
    restore by its name call this first, before anything is written.

    Example:
        >>> refuse_glob_characters("runs/lr-0.1/ckpt")
        'runs/lr-0.1/ckpt'
        >>> refuse_glob_characters("runs/run[1]/ckpt")
        Traceback (most recent call last):
        ...
        helpers.errors.GlobPathError: 'runs/run[1]/ckpt' cannot hold a checkpoint: its folder name holds '[', ...
    """
    text = path_text(path, "checkpoint folder" if folder else "checkpoint prefix")
    found = GLOB_CHARACTERS.search(text)
    if found:
        part = "file name" if not folder and found.start() >= len(os.path.dirname(text)) else "folder name"
        raise GlobPathError(text, f"its {part} holds {found[0]!r}, and TensorFlow reads '[', ']', '*' and "
                                  f"'?' in a checkpoint path as glob patterns (the pattern 'run[1]' matches "
                                  f"'run1', not 'run[1]', and a CheckpointManager in 'run*/' deletes checkpoints "
                                  f"of 'runA/' too): use a {part} without them")
    return text


# Links made by glob_safe_prefix: {(prefix, its files and their stats): the prefix to hand TensorFlow}.
_LINKED: dict[tuple, str] = {}
_LINK_ROOT: list[str] = []


def glob_safe_prefix(prefix: str | os.PathLike) -> str:
    """A prefix that TensorFlow reads as exactly the checkpoint ``prefix``, even with ``[``, ``*``, ``?`` in it.

    TensorFlow takes a checkpoint prefix for a glob pattern in places:
    ``tf.train.load_checkpoint``, ``tf.train.Checkpoint.read`` and
    ``Saver.restore`` fail on ``runs/[1]/model`` ("Failed to find any matching
    files"), and ``*`` and ``?`` are pattern characters to them too. A prefix
    without those characters is returned as it is. Otherwise the checkpoint's
    files (``.index``, ``.data-*``, ``.meta``; the shards of an old V1
    checkpoint, whose ``-?????-of-N`` pattern is kept; an old single-file one)
    get links with a plain name in a private folder under the system's
    temporary folder, never beside your files, and the linked prefix is
    returned. The links stay for as long as Python runs (TensorFlow may read
    the files long after a restore starts: values of variables created later),
    are reused by later calls, and are removed at exit. Where links cannot be
    made, the files are copied there instead.

    Raises ``NotACheckpointError`` when no checkpoint files have this prefix,
    or when the path holds a NUL character.

    Example:
        >>> import os, tempfile
        >>> import tensorflow as tf
        >>> folder = os.path.join(tempfile.mkdtemp(), "run[1]")
        >>> path = tf.train.Checkpoint(v=tf.Variable(3.0)).write(os.path.join(folder, "ckpt"))
        >>> reader = tf.train.load_checkpoint(glob_safe_prefix(path))  # without it: no matching files
        >>> float(reader.get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE"))
        3.0
        >>> glob_safe_prefix("surely/not/here")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'surely/not/here' is not a readable checkpoint: no checkpoint files with this prefix (no 'surely/not/here.index')
    """
    text = checkpoint_path_text(prefix, "checkpoint prefix")
    name = os.path.basename(text)
    shard = V1_SHARD.search(name)
    stem = name[: shard.start()] if shard else name  # what the names of the checkpoint's files share
    files = _files_of(text, stem, shard)
    if not files and shard and shard[1] == "?????":
        raise NotACheckpointError(text, "no shard files of this old (V1) checkpoint")
    if not files:
        raise NotACheckpointError(text, f"no checkpoint files with this prefix (no {text + '.index'!r})")
    if not GLOB_CHARACTERS.search(text[: len(text) - len(name) + len(stem)]):
        return text
    key = (os.path.abspath(text), tuple((file, os.stat(file).st_mtime_ns) for file in files))
    if key in _LINKED and os.path.isdir(os.path.dirname(_LINKED[key])):
        return _LINKED[key]
    if not _LINK_ROOT:
        _LINK_ROOT.append(tempfile.mkdtemp(prefix="tf-glob-safe-checkpoints-"))
        atexit.register(shutil.rmtree, _LINK_ROOT[0], ignore_errors=True)
    alias = os.path.join(tempfile.mkdtemp(dir=_LINK_ROOT[0]), "ckpt")
    for file in files:
        target = alias + os.path.basename(file)[len(stem):]
        try:
            os.symlink(os.path.abspath(file), target)
        except OSError:  # e.g. Windows without the right to make links
            shutil.copyfile(file, target)
    _LINKED[key] = alias + name[len(stem):]
    return _LINKED[key]


def _files_of(text: str, stem: str, shard: re.Match | None) -> list[str]:
    """The files behind ``text``, found name by name (never by glob)."""
    folder = os.path.dirname(text)
    if shard and shard[1] == "?????":  # the pattern of an old sharded (V1) checkpoint
        shards = [os.path.join(folder, f"{stem}-{index:05d}-of-{shard[2]}") for index in range(int(shard[2]))]
        return [file for file in shards if os.path.isfile(file)]
    own = [os.path.join(folder, name) for name in checkpoint_files_at(text)]
    if not any(file.endswith(".index") for file in own) and os.path.isfile(text):
        return [text]  # an old single-file (V1) checkpoint, or one shard of a V1 one
    return own


def glob_safe_folder(path: str | os.PathLike) -> str:
    """``path``, or a link to it whose name has no ``[``, ``*`` or ``?``, for TensorFlow's SavedModel reader.

    ``tf.saved_model.load`` reads ``variables/variables`` through a glob, so a folder
    such as ``run[1]`` fails ("Failed to find any matching files"). The link lives in a
    temporary folder removed when Python exits; the folder itself is untouched.

    Example:
        >>> glob_safe_folder("exports/plain")
        'exports/plain'
        >>> import os, tempfile
        >>> import tensorflow as tf
        >>> module = tf.Module()
        >>> module.v = tf.Variable(3.0)
        >>> folder = os.path.join(tempfile.mkdtemp(), "run[1]", "export")
        >>> tf.saved_model.save(module, folder)
        >>> float(tf.saved_model.load(glob_safe_folder(folder)).v)
        3.0
    """
    text = path_text(path, "SavedModel folder")
    if not GLOB_CHARACTERS.search(text):
        return text
    folder = tempfile.mkdtemp(prefix="tf-glob-safe-folder-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    link = os.path.join(folder, "saved_model")
    os.symlink(os.path.abspath(text), link, target_is_directory=True)
    return link


# --------------------------------------------------------------------------- zip archives (.keras)

MAX_INFLATION = 200  # deflated JSON and HDF5 of real models shrink 2-50 times; a zip bomb ~1000
# A .keras file's config.json or metadata.json is kilobytes. Parsed, JSON of small objects costs
# about 20 times its text in memory (8 MiB of "{}," -> ~180 MB; 60 MiB -> ~1.3 GB), so the cap
# bounds what json.loads can cost, not only what reading costs.
MAX_SMALL_MEMBER = 8 << 20
_RATIO_FROM = 1 << 20  # members that inflate to less than this are never refused by their ratio


def check_archive_sizes(archive: zipfile.ZipFile, path: str | os.PathLike = "",
                        small: tuple[str, ...] = ("config.json", "metadata.json")) -> None:
    """Refuse an archive whose declared sizes would exhaust memory, before any member is read.

    Reads only the zip's central directory: each member's declared size and compressed size.
    A member that inflates more than ``MAX_INFLATION`` times (past 1 MiB), or a ``small``
    member (read whole into memory and parsed as JSON, about 20 times its size) declared over
    ``MAX_SMALL_MEMBER`` (8 MiB) bytes, raises
    ``ArchiveTooLargeError`` naming it. ``zipfile`` never inflates a member past its declared
    size, so the check bounds what reading can cost.

    Example:
        >>> import io
        >>> data = io.BytesIO()
        >>> with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as bomb:
        ...     bomb.writestr("config.json", "[" + " " * (4 << 20) + "]")
        >>> try:  # doctest: +ELLIPSIS
        ...     check_archive_sizes(zipfile.ZipFile(data), "m.keras")
        ... except ArchiveTooLargeError as error:
        ...     print(str(error).split(": ", 1)[1].split(" (")[0])
        config.json inflates ... times
    """
    text = os.fsdecode(path) if path else str(archive.filename or "")
    for member in archive.infolist():
        size, packed = member.file_size, max(member.compress_size, 1)
        if member.filename in small and size > MAX_SMALL_MEMBER:
            raise ArchiveTooLargeError(text, f"{member.filename} declares {_mib(size)}, far more than "
                                             "a model configuration; nothing was read")
        if size > _RATIO_FROM and size / packed > MAX_INFLATION:
            raise ArchiveTooLargeError(text, f"{member.filename} inflates {size // packed} times "
                                             f"({_mib(size)} from {_mib(packed)}): a zip bomb, not a "
                                             "model file; nothing was read")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size / 1024:.1f} KiB"
