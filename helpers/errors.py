"""Exceptions raised by the course's recipes.

Every error names what is wrong, so that a learner never gets a silent wrong
answer. All of them are ``ValueError`` subclasses, so ``except ValueError``
catches them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Shape = Sequence[int | None]


def _quote(names: Iterable[str]) -> str:
    return ", ".join(repr(name) for name in sorted(names))


def first_line(error: BaseException) -> str:
    """The first line of an error's message (TensorFlow's run on for pages), or its type's name.

    Example:
        >>> first_line(ValueError("not an sstable\\nmore detail"))
        'not an sstable'
    """
    text = (getattr(error, "message", None) or str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _shape(shape: Shape) -> str:
    return "(" + ", ".join(str(dim) for dim in shape) + ("," if len(shape) == 1 else "") + ")"


class NotACheckpointError(ValueError):
    """The path given is not a checkpoint TensorFlow can read.

    Example:
        >>> raise NotACheckpointError("ckpt/model", "no such file or folder")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'ckpt/model' is not a readable checkpoint: no such file or folder
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path!r} is not a readable checkpoint: {reason}")


class CheckpointMismatchError(ValueError):
    """A checkpoint's variables do not match the variables they should fill.

    Every problem is listed at once: keys the target needs but the checkpoint
    lacks (``missing``), keys the checkpoint has but the target does not use
    (``unexpected``), and keys present in both with a different shape or dtype.

    Example:
        >>> raise CheckpointMismatchError("ckpt/m", "scope 'net/'", missing=["b"],
        ...                               shape_mismatches=[("w", (3, 2), (2, 2))])
        Traceback (most recent call last):
        ...
        helpers.errors.CheckpointMismatchError: checkpoint 'ckpt/m' does not match scope 'net/':
          missing from the checkpoint: 'b'
          wrong shape: 'w' is (3, 2) in the checkpoint, (2, 2) in the target
    """

    def __init__(
        self,
        ckpt_path: str,
        target: str,
        *,
        missing: Iterable[str] = (),
        unexpected: Iterable[str] = (),
        shape_mismatches: Iterable[tuple[str, Shape, Shape]] = (),
        dtype_mismatches: Iterable[tuple[str, str, str]] = (),
    ) -> None:
        self.ckpt_path = str(ckpt_path)
        self.target = target
        self.missing = sorted(missing)
        self.unexpected = sorted(unexpected)
        self.shape_mismatches = sorted(shape_mismatches)
        self.dtype_mismatches = sorted(dtype_mismatches)
        lines = [f"checkpoint {self.ckpt_path!r} does not match {target}:"]
        if self.missing:
            lines.append(f"  missing from the checkpoint: {_quote(self.missing)}")
        if self.unexpected:
            lines.append(f"  in the checkpoint but not in the target: {_quote(self.unexpected)}")
        for name, in_ckpt, in_target in self.shape_mismatches:
            lines.append(
                f"  wrong shape: {name!r} is {_shape(in_ckpt)} in the checkpoint, "
                f"{_shape(in_target)} in the target"
            )
        for name, in_ckpt, in_target in self.dtype_mismatches:
            lines.append(
                f"  wrong dtype: {name!r} is {in_ckpt} in the checkpoint, {in_target} in the target"
            )
        super().__init__("\n".join(lines))

    @property
    def problems(self) -> int:
        """How many variables are wrong, counted over every kind of problem."""
        return (
            len(self.missing)
            + len(self.unexpected)
            + len(self.shape_mismatches)
            + len(self.dtype_mismatches)
        )


class StructureMismatchError(ValueError):
    """Two sets of variables that should line up one to one do not.

    Raised, for example, when copying the weights of one network into another
    whose variables have other names, shapes or dtypes.

    Example:
        >>> raise StructureMismatchError("cannot copy 'online/' into 'target/': 'w' has shape (2,) vs (3,)")
        Traceback (most recent call last):
        ...
        helpers.errors.StructureMismatchError: cannot copy 'online/' into 'target/': 'w' has shape (2,) vs (3,)
    """


class WouldOverwriteError(FileExistsError, ValueError):
    """A recipe was asked to write where a file (a checkpoint, a model) already exists.

    No recipe of the course overwrites or deletes a user's file: choose another
    path, or remove the old one yourself. It is both a ``FileExistsError`` and
    a ``ValueError``.

    Example:
        >>> raise WouldOverwriteError("runs/model", "a checkpoint")
        Traceback (most recent call last):
        ...
        helpers.errors.WouldOverwriteError: a checkpoint already exists at 'runs/model': refusing to overwrite it; choose another path
    """

    def __init__(self, path: str, what: str = "a file") -> None:
        self.path = str(path)
        super().__init__(f"{what} already exists at {self.path!r}: refusing to overwrite it; choose another path")
