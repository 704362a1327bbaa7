"""A ``ModelCheckpoint`` that never leaves a half-written file (notebook 11).

Recipe:

* ``AtomicModelCheckpoint(filepath, ...)``: a Keras callback that saves like
  ``keras.callbacks.ModelCheckpoint`` (every epoch, or only when the monitored
  value improves; the whole model or only its weights), but writes each save
  to a new temporary file in the target's folder, flushes it to disk, and then
  ``os.replace``-s it onto the target in one step. A crash or a kill during a
  save leaves the previous file whole, and a reader that opened the previous
  file keeps reading it. The temporary name is created exclusively
  (``tempfile.mkstemp``), so no file of yours is ever overwritten but the
  target itself.

``ModelCheckpoint`` itself calls ``model.save_weights(filepath)`` or
``model.save(filepath)`` on the target's name: a kill in the middle leaves a
cut file where the last good checkpoint was (chapter 11, section 5).

A kill the process cannot catch (``SIGKILL``, a power cut) can leave the
temporary file behind, a hidden ``.NAME.XXXXXXXX.weights.h5`` (or ``.keras``)
beside the target ``NAME``; the next ``fit`` with the same callback removes
such leftovers of its own target in ``on_train_begin``, and no other file.
A target that is a symbolic link stays a link: the file it points to is
replaced (``os.path.realpath``).

Example:
    >>> import os, tempfile
    >>> import keras, numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> keep = AtomicModelCheckpoint(os.path.join(folder, "last.weights.h5"), save_weights_only=True)
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0, callbacks=[keep])
    >>> sorted(os.listdir(folder))  # the target only: no temporary file is left behind
    ['last.weights.h5']
"""

from __future__ import annotations

import os
import re
import string
import tempfile
from typing import Any

import keras
import numpy as np

from helpers.errors import NotWritableError

__all__ = ["AtomicModelCheckpoint", "NotWritableError"]


def _umask() -> int:
    """The process's umask, read from ``/proc/self/status`` where it is (Linux) without changing it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)  # elsewhere only setting it reads it: set it back at once
    os.umask(umask)
    return umask


def _mode_for(target: str) -> int:
    """The permission bits ``target`` has, or those a new file gets under the current umask."""
    if os.path.exists(target):
        return os.stat(target).st_mode & 0o777
    return 0o666 & ~_umask()


def _name_pattern(name: str, suffix: str) -> re.Pattern[str]:
    """The names ``mkstemp`` gives the temporary files of targets named ``name`` (fields: any text)."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(name):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(r"[^/]+?")
    return re.compile(r"\." + "".join(parts) + r"\.[a-z0-9_]{8}" + re.escape(suffix))


class AtomicModelCheckpoint(keras.callbacks.Callback):
    """Save the model (or its weights) at each epoch's end, atomically.

    Args:
        filepath: the target file; it may hold ``{epoch}`` and the names of
            logged values, as ``ModelCheckpoint``'s does (``"ckpt-{epoch:02d}.keras"``).
            It must end in ``.weights.h5`` with ``save_weights_only=True``,
            else in ``.keras``.
        monitor: the logged value that decides "best" (``save_best_only``).
        mode: ``"min"`` or ``"max"``: which direction is better. Left out, it
            is ``"min"`` for a monitored value whose name ends in ``loss``, and
            a ``ValueError`` with ``save_best_only`` for any other (``val_auc``
            is better high: say ``mode="max"``). There is no ``"auto"``.
        save_best_only: save only when ``monitor`` improves on the best so far.
        save_weights_only: ``model.save_weights`` instead of ``model.save``.

    Raises ``ValueError`` at once for a wrong suffix or mode, and at an
    epoch's end when ``save_best_only`` watches a value that is not logged
    (``ModelCheckpoint`` warns, then saves every epoch as if it were not
    asked for the best), when ``filepath`` names a value that is not logged,
    or when the target is a folder; ``NotWritableError`` when the folder
    cannot be written (each save goes to a temporary file beside the target).
    """

    def __init__(self, filepath: str | os.PathLike, monitor: str = "val_loss", mode: str | None = None,
                 save_best_only: bool = False, save_weights_only: bool = False) -> None:
        super().__init__()
        self.filepath = os.fspath(filepath)
        suffix = ".weights.h5" if save_weights_only else ".keras"
        if not self.filepath.endswith(suffix):
            raise ValueError(f"AtomicModelCheckpoint: {os.path.basename(self.filepath)!r} must end in "
                             f"{suffix!r} with save_weights_only={save_weights_only}")
        if mode is None:
            if save_best_only and not monitor.endswith("loss"):
                raise ValueError(f"AtomicModelCheckpoint: is a higher or a lower {monitor!r} better? "
                                 "pass mode='max' or mode='min'")
            mode = "min"
        if mode not in ("min", "max"):
            raise ValueError(f"AtomicModelCheckpoint: mode={mode!r}; pass 'min' or 'max' (which is better)")
        self.monitor, self.mode = monitor, mode
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.best: float | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        """Remove what a killed save of this target left: its temporary files, and no other file."""
        named = self.filepath if "{" in self.filepath else os.path.realpath(self.filepath)
        folder, name = os.path.split(os.path.abspath(named))
        if "{" in folder or not os.path.isdir(folder):
            return
        suffix = ".weights.h5" if self.save_weights_only else ".keras"
        pattern = _name_pattern(name, suffix)
        for entry in os.listdir(folder):
            path = os.path.join(folder, entry)
            if pattern.fullmatch(entry) and os.path.isfile(path) and not os.path.islink(path):
                os.remove(path)

    def _improves(self, value: float) -> bool:
        if self.best is None:
            return True
        return value < self.best if self.mode == "min" else value > self.best

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = dict(logs or {})
        if self.save_best_only:
            if self.monitor not in logs:
                raise ValueError(f"AtomicModelCheckpoint: {self.monitor!r} is not logged (logged: "
                                 f"{sorted(logs)}); pass validation data or monitor a logged value")
            value = float(np.asarray(logs[self.monitor]))
            if not self._improves(value):
                return
            self.best = value
        try:
            target = self.filepath.format(epoch=epoch + 1, **logs)
        except KeyError as error:
            raise ValueError(f"AtomicModelCheckpoint: the filepath {self.filepath!r} names "
                             f"{error.args[0]!r}, which is not logged (logged: {sorted(logs)}, "
                             "and 'epoch')") from None
        self.save_atomically(target)

    def save_atomically(self, target: str) -> None:
        """Write the model to a new temporary file beside ``target``, then replace ``target`` with it.

        A symbolic link stays: the file it points to is the one replaced.
        """
        target = os.path.realpath(target)
        if os.path.isdir(target):
            raise ValueError(f"AtomicModelCheckpoint: {target!r} is a folder; the target must be "
                             "a file's name: choose another filepath")
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        suffix = ".weights.h5" if self.save_weights_only else ".keras"
        try:
            handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=suffix,
                                                 dir=folder)
        except PermissionError as error:
            refused = NotWritableError(target, folder)
            refused.add_note("AtomicModelCheckpoint: the folder must be writable: each save goes "
                             "to a temporary file beside the target")
            raise refused from error
        os.close(handle)  # the name is ours alone; Keras writes over the empty file
        os.chmod(temporary, _mode_for(target))  # mkstemp makes it private (0o600)
        try:
            if self.save_weights_only:
                self.model.save_weights(temporary, overwrite=True)
            else:
                self.model.save(temporary, overwrite=True)
            with open(temporary, "rb") as written:
                os.fsync(written.fileno())  # on disk before its name changes (a power cut too)
            os.replace(temporary, target)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
        if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
            try:
                directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(directory)
                finally:
                    os.close(directory)
            except OSError:  # some file systems refuse to sync a folder: the rename is done all the same
                pass
