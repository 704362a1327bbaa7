"""Move checkpoints between TF1 (name-based) and TF2 (object-based) code.

A TF1 ``tf.compat.v1.train.Saver`` stores each variable under its global name
(``dense/kernel``). TF2's ``tf.train.Checkpoint`` stores values under paths of
the object graph (``model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE``) and,
given a name-based file, falls back to matching global names: on Keras 3
layers that restores nothing and raises nothing. The recipes here restore by
an explicit ``{checkpoint_key: variable}`` map and say what did not match::

    restore_name_based("tf1/model", {"dense/kernel": layer.kernel, "dense/bias": layer.bias})
    name_based_to_object_based("tf1/model", "tf2/model", model, name_map)   # convert once
    object_based_to_name_based("tf2/model-1", "tf1/export", model, name_map)  # for a TF1 pipeline

None of them overwrites an existing checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from helpers.errors import CheckpointMismatchError, NotACheckpointError, first_line
from helpers.inspection import OBJECT_GRAPH_KEY, open_checkpoint, read_tensor

__all__ = [
    "RestoreReport",
    "checkpoint_format",
    "name_based_to_object_based",
    "object_based_to_name_based",
    "restore_name_based",
    "variables_by_key",
    "write_name_based",
]


@dataclass
class RestoreReport:
    """What ``restore_name_based`` restored, and what it left alone."""

    restored: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    shape_mismatches: list[tuple[str, tuple, tuple]] = field(default_factory=list)
    dtype_mismatches: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every key matched a variable, both ways, with the right shape and dtype."""
        return not (self.missing or self.unexpected or self.shape_mismatches or self.dtype_mismatches)

    def __str__(self) -> str:
        lines = [f"restored {len(self.restored)} variable(s)"]
        if self.missing:
            lines.append(f"not in the checkpoint (left as they were): {', '.join(self.missing)}")
        if self.unexpected:
            lines.append(f"in the checkpoint but unused: {', '.join(self.unexpected)}")
        for key, in_ckpt, in_target in self.shape_mismatches:
            lines.append(f"skipped {key}: shape {in_ckpt} in the checkpoint, {in_target} in the target")
        for key, in_ckpt, in_target in self.dtype_mismatches:
            lines.append(f"skipped {key}: dtype {in_ckpt} in the checkpoint, {in_target} in the target")
        return "\n".join(lines)


def checkpoint_format(ckpt_path: str) -> str:
    """``"object-based"`` (``tf.train.Checkpoint``) or ``"name-based"`` (TF1 ``Saver``).

    Raises ``NotACheckpointError`` when the path is not a readable checkpoint.

    Example:
        >>> checkpoint_format("tf1/model")                 # doctest: +SKIP
        'name-based'
    """
    reader = open_checkpoint(ckpt_path)
    return "object-based" if reader.has_tensor(OBJECT_GRAPH_KEY) else "name-based"


def _is_variable(value: Any) -> bool:
    return all(hasattr(value, attr) for attr in ("assign", "shape", "dtype", "numpy"))


def _key_of(variable: Any) -> str:
    # Keras 3 variables know their path ("dense/kernel"); tf.Variables their name ("dense/kernel:0").
    path = getattr(variable, "path", None)
    return path if isinstance(path, str) and path else variable.name.split(":")[0]


def variables_by_key(target: Any) -> dict[str, Any]:
    """The ``{global name: variable}`` map a TF1 ``Saver`` would use for ``target``.

    Keras 3 variables are keyed by their ``path`` (``sequential/dense/kernel``),
    other ``tf.Variable`` s by their name without ``:0``. Start from this map
    and rewrite its keys to the names a TF1 checkpoint uses.

    Example:
        >>> layer = tf.keras.layers.Dense(2, name="dense")
        >>> layer.build((None, 3))
        >>> sorted(variables_by_key(layer))
        ['dense/bias', 'dense/kernel']
    """
    if isinstance(target, Mapping):
        bad = [key for key, value in target.items() if not _is_variable(value)]
        if bad:
            raise TypeError(f"the name map's values must be variables; not for keys {sorted(bad)}")
        return dict(target)
    if hasattr(target, "weights"):
        variables = list(target.weights)  # a Keras layer or model
    elif isinstance(target, tf.Module):
        variables = list(target.variables)
    else:
        raise TypeError(
            f"target must be a tf.Module, a Keras layer or model, or a {{checkpoint_key: variable}} "
            f"dict, not {type(target).__name__}"
        )
    if not variables:
        raise ValueError(
            f"{_describe(target)} has no variables yet: build it (call it once) before restoring"
        )
    keyed: dict[str, Any] = {}
    for variable in variables:
        key = _key_of(variable)
        if key in keyed and keyed[key] is not variable:
            raise ValueError(
                f"two variables of {_describe(target)} share the name {key!r}: "
                "pass an explicit {checkpoint_key: variable} dict instead"
            )
        keyed[key] = variable
    return keyed


def _describe(target: Any) -> str:
    if isinstance(target, Mapping):
        return f"the name map of {len(target)} variable(s)"
    name = getattr(target, "name", None)
    return f"{type(target).__name__} {name!r}" if name else type(target).__name__


def _dtype_name(dtype: Any) -> str:
    return tf.as_dtype(dtype).name


def restore_name_based(ckpt_path: str, target: Any, strict: bool = True) -> RestoreReport:
    """Restore a name-based (TF1 ``Saver``) checkpoint into TF2 variables, loudly.

    ``target`` is a Keras layer or model, a ``tf.Module`` (variables keyed as
    in ``variables_by_key``), or an explicit ``{checkpoint_key: variable}``
    dict. Everything is checked before anything is assigned. With
    ``strict=True`` any key the target needs but the checkpoint lacks, any
    key of the checkpoint left unused, and any wrong shape or dtype raises
    ``CheckpointMismatchError`` listing them all, and nothing is restored.
    With ``strict=False`` the matching variables are restored and the report
    lists the rest. Eager mode only: in a graph, use
    ``tf.compat.v1.train.Saver(var_list=name_map)``.

    Example:
        >>> report = restore_name_based("tf1/model", {"dense/kernel": layer.kernel})  # doctest: +SKIP
        Traceback (most recent call last):
        CheckpointMismatchError: checkpoint 'tf1/model' does not match the name map of 1 variable(s):
          in the checkpoint but not in the target: 'dense/bias'
    """
    if not tf.executing_eagerly():
        raise RuntimeError(
            "restore_name_based runs eagerly; inside a tf.Graph use "
            "tf.compat.v1.train.Saver(var_list={checkpoint_key: variable}).restore(sess, path)"
        )
    name_map = variables_by_key(target)
    reader = open_checkpoint(ckpt_path)
    shapes = {k: tuple(v) for k, v in reader.get_variable_to_shape_map().items() if k != OBJECT_GRAPH_KEY}
    dtypes = {k: v.name for k, v in reader.get_variable_to_dtype_map().items()}

    report = RestoreReport(
        missing=sorted(set(name_map) - set(shapes)),
        unexpected=sorted(set(shapes) - set(name_map)),
    )
    matching = []
    for key in sorted(set(name_map) & set(shapes)):
        variable = name_map[key]
        if shapes[key] != tuple(variable.shape):
            report.shape_mismatches.append((key, shapes[key], tuple(variable.shape)))
        elif dtypes[key] != _dtype_name(variable.dtype):
            report.dtype_mismatches.append((key, dtypes[key], _dtype_name(variable.dtype)))
        else:
            matching.append(key)
    if strict and not report.complete:
        raise CheckpointMismatchError(
            ckpt_path,
            _describe(target),
            missing=report.missing,
            unexpected=report.unexpected,
            shape_mismatches=report.shape_mismatches,
            dtype_mismatches=report.dtype_mismatches,
        )
    values = {key: read_tensor(reader, ckpt_path, key) for key in matching}  # read all, then assign
    for key in matching:
        name_map[key].assign(values[key])
        report.restored.append(key)
    return report


def _refuse_existing(out_prefix: str, ckpt_path: str | None = None) -> None:
    out_prefix = os.fspath(out_prefix)
    if ckpt_path is not None and os.path.abspath(out_prefix) == os.path.abspath(os.fspath(ckpt_path)):
        raise FileExistsError(f"{out_prefix!r} is the input checkpoint: write the converted one elsewhere")
    existing = tf.io.gfile.glob(out_prefix + ".index") + tf.io.gfile.glob(out_prefix + ".data-*")
    if existing:
        raise FileExistsError(
            f"a checkpoint already exists at {out_prefix!r}: refusing to overwrite it; choose another prefix"
        )


def write_name_based(values: Mapping[str, Any], out_prefix: str) -> str:
    """Write ``{global name: value}`` as a name-based checkpoint a TF1 ``Saver`` can restore.

    Values may be variables, tensors or NumPy arrays. Only ``<out_prefix>.index``
    and ``.data-00000-of-00001`` are written (no ``checkpoint`` state file, no
    ``.meta``); an existing checkpoint at ``out_prefix`` is never overwritten.

    Example:
        >>> write_name_based({"dense/kernel": np.ones((3, 2))}, "tf1/export")   # doctest: +SKIP
        'tf1/export'
    """
    if not values:
        raise ValueError("nothing to write: the name map is empty")
    _refuse_existing(out_prefix)
    folder = os.path.dirname(os.fspath(out_prefix))
    if folder:
        tf.io.gfile.makedirs(folder)
    keys = sorted(values)
    tensors = [tf.convert_to_tensor(values[key]) for key in keys]
    tf.raw_ops.SaveV2(
        prefix=os.fspath(out_prefix), tensor_names=keys, shape_and_slices=[""] * len(keys), tensors=tensors
    )
    return os.fspath(out_prefix)


def name_based_to_object_based(
    ckpt_path: str,
    out_prefix: str,
    root: Any,
    name_map: Mapping[str, Any] | None = None,
    *,
    edge: str = "model",
    strict: bool = True,
) -> str:
    """Convert a TF1 name-based checkpoint into an object-based one, once.

    The values are restored into ``root`` (a built Keras model or layer, or a
    ``tf.Module``) with ``restore_name_based`` (through ``name_map`` when the
    names differ), then written as ``tf.train.Checkpoint(**{edge: root})``, so
    TF2 code loads them with ``tf.train.Checkpoint(model=...).restore(path)``
    (``assert_consumed()`` passes on a fresh object of the same structure).
    Refuses to overwrite an existing checkpoint at ``out_prefix``.

    Example:
        >>> name_based_to_object_based("tf1/model", "tf2/model", model, name_map)  # doctest: +SKIP
        'tf2/model'
    """
    _refuse_existing(out_prefix, ckpt_path)
    restore_name_based(ckpt_path, name_map if name_map is not None else root, strict=strict)
    checkpoint = tf.train.Checkpoint(**{edge: root})
    checkpoint.save_counter  # created now, so that restore(...).assert_consumed() finds it
    return checkpoint.write(os.fspath(out_prefix))


def object_based_to_name_based(
    ckpt_path: str,
    out_prefix: str,
    root: Any,
    name_map: Mapping[str, Any] | None = None,
    *,
    edge: str = "model",
) -> str:
    """Export an object-based checkpoint under TF1 global names, for a TF1 pipeline.

    ``root`` must be built and shaped like the object saved under ``edge``;
    every one of its variables must be found in the checkpoint (extra values,
    such as an optimizer's, are ignored). The values are then written under
    the keys of ``name_map`` (``{tf1_name: variable of root}``; by default
    ``variables_by_key(root)``). Refuses to overwrite an existing checkpoint.

    Example:
        >>> object_based_to_name_based("tf2/model-3", "tf1/export", model, name_map)  # doctest: +SKIP
        'tf1/export'
    """
    _refuse_existing(out_prefix, ckpt_path)
    name_map = variables_by_key(name_map if name_map is not None else root)
    if checkpoint_format(ckpt_path) != "object-based":
        raise NotACheckpointError(
            ckpt_path, "it is name-based; expected an object-based checkpoint written by tf.train.Checkpoint"
        )
    try:
        # read() is restore() without the save counter, so that the check below
        # is about root's variables only.
        status = tf.train.Checkpoint(**{edge: root}).read(os.fspath(ckpt_path))
        status.assert_existing_objects_matched()
    except (AssertionError, ValueError) as error:
        message = str(error)
        unmatched = [key for key, var in name_map.items() if f"path={_key_of(var)}," in message
                     or f"'{var.name}'" in message or f"name {var.name}" in message]
        target = f"{_describe(root)} saved under the edge {edge!r}"
        if not unmatched:
            target += f" ({first_line(error)[:160]})"
        raise CheckpointMismatchError(ckpt_path, target, missing=unmatched) from None
    status.expect_partial()  # e.g. optimizer values, which a TF1 inference graph does not need
    return write_name_based({key: variable.numpy() for key, variable in name_map.items()}, out_prefix)
