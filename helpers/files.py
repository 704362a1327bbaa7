"""Paths in, files out: the one place where recipes check a path and refuse to overwrite.

Every recipe that takes a path accepts a ``str`` or any ``os.PathLike``
(``pathlib.Path``) through ``path_text``, and every recipe that writes checks
first with ``refuse_existing`` or ``refuse_existing_checkpoint``. Existence
is tested literally, name by name, never with a glob pattern: a path such as
``runs/[best]*`` is protected like any other.

Example:
    >>> from pathlib import Path
    >>> path_text(Path("runs") / "model")
    'runs/model'
"""

from __future__ import annotations

import os

from helpers.errors import WouldOverwriteError

CHECKPOINT_SUFFIXES = (".index", ".meta")
DATA_SUFFIX = ".data-"


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


def refuse_existing(path: str | os.PathLike, what: str = "a file") -> str:
    """Return ``path`` as text, or raise ``WouldOverwriteError`` when something exists there.

    Example:
        >>> refuse_existing("surely/not/here.keras")
        'surely/not/here.keras'
    """
    text = path_text(path)
    if os.path.lexists(text):
        raise WouldOverwriteError(text, what)
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
