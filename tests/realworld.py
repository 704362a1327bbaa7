"""Fixture builders: checkpoints in the formats people really have, written offline.

Each builder writes one real-world format with TensorFlow itself, the way the
program that made the user's file did, and returns the path a user would hold
(a prefix, a file or a folder). Values default to ``VALUES``: several
variables, biases too, with distinct non-zero numbers, so a reader that drops
or mixes up one of them is caught. The graphs are built in a private
``tf.Graph()``, so the builders can be called from any test.

    >>> from tests import realworld                        # doctest: +SKIP
    >>> prefix = realworld.v1_format(tmp_path / "old" / "model.ckpt")  # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2

V1 = tf.compat.v1

VALUES: dict[str, np.ndarray] = {
    "dense/kernel": np.arange(1, 7, dtype=np.float32).reshape(3, 2),
    "dense/bias": np.array([0.5, -1.5], np.float32),
    "out/kernel": np.array([[2.5], [-3.5]], np.float32),
    "out/bias": np.array([7.25], np.float32),
    "global_step": np.array(42, np.int64),
}


def _save(prefix: str | os.PathLike, values: Mapping[str, np.ndarray], *, use_resource: bool = True,
          device: str | None = None, **saver_args) -> str:
    """Create one variable per value in a fresh graph and save them with a ``Saver(**saver_args)``."""
    os.makedirs(os.path.dirname(os.fspath(prefix)) or ".", exist_ok=True)
    with tf.Graph().as_default(), tf.device(device):
        for name, value in values.items():
            V1.get_variable(name, initializer=np.asarray(value), use_resource=use_resource,
                            trainable=name != "global_step")
        config = V1.ConfigProto(allow_soft_placement=True)  # a GPU-pinned graph runs on this CPU
        with V1.Session(config=config) as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver(**saver_args).save(sess, os.fspath(prefix))


def name_based(prefix: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """A ``Saver`` checkpoint of today (V2: ``.index``, ``.data-*``, ``.meta``); returns the prefix."""
    return _save(prefix, values)


def object_based(prefix: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """A ``tf.train.Checkpoint`` (TF2) of one ``tf.Variable`` per value; returns the prefix.

    Keys look like ``dense|kernel/.ATTRIBUTES/VARIABLE_VALUE`` (``/`` is not allowed in
    an attribute name, so it becomes ``|``).
    """
    variables = {name.replace("/", "|"): tf.Variable(value) for name, value in values.items()}
    return tf.train.Checkpoint(**variables).write(os.fspath(prefix))


def v1_format(path: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """An old single-file checkpoint (``Saver(write_version=SaverDef.V1)``, as TF <= 0.12 wrote).

    One file, named exactly ``path`` (no ``.index``), beside ``path.meta`` and the
    folder's ``checkpoint`` state file. Returns ``path``.
    """
    return _save(path, values, write_version=V1.train.SaverDef.V1)


def v1_sharded(path: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """An old sharded V1 checkpoint: ``path-00000-of-00002`` and ``path-00001-of-00002``.

    Shards come from devices: the first half of the variables is placed on a second
    CPU. Returns the pattern TensorFlow itself records, ``path-?????-of-00002``.
    """
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    names = list(values)
    with tf.Graph().as_default():
        for index, name in enumerate(names):
            with tf.device(f"/cpu:{int(index < len(names) // 2)}"):
                V1.get_variable(name, initializer=np.asarray(values[name]))
        saver = V1.train.Saver(write_version=V1.train.SaverDef.V1, sharded=True)
        with V1.Session(config=V1.ConfigProto(device_count={"CPU": 2})) as sess:
            sess.run(V1.global_variables_initializer())
            return saver.save(sess, os.fspath(path))


def reference_variables(prefix: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """A graph of TF 1.x *reference* variables (``VariableV2``, ``use_resource=False``), saved.

    Returns the prefix; ``prefix.meta`` holds ``VariableV2`` ops, not ``VarHandleOp``.
    """
    return _save(prefix, values, use_resource=False)


def device_pinned(prefix: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES,
                  device: str = "/device:GPU:0") -> str:
    """A checkpoint whose ``.meta`` places every variable on ``device`` (a GPU by default).

    This is what a training machine with a GPU writes; importing the ``.meta`` on a
    CPU-only machine needs ``clear_devices=True``. Returns the prefix.
    """
    return _save(prefix, values, device=device)


def meta_devices(prefix: str | os.PathLike) -> set[str]:
    """The device strings of the nodes in ``prefix.meta`` (to assert a fixture is pinned)."""
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString(Path(os.fspath(prefix) + ".meta").read_bytes())
    return {node.device for node in meta.graph_def.node}


def moved_from_another_machine(folder: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES,
                               other: str = "/home/alice/runs/exp1", steps: tuple[int, ...] = (1, 2)) -> str:
    """A folder of checkpoints whose ``checkpoint`` state file names ``other``'s absolute paths.

    That is what ``Saver.save("/home/alice/runs/exp1/model", ...)`` leaves behind once the
    folder is copied elsewhere. ``other`` may be a Windows path (``C:\\\\runs``). Returns the
    folder; its newest checkpoint is ``folder/model-<steps[-1]>``.
    """
    folder = os.fspath(folder)
    for step in steps:
        _save(os.path.join(folder, f"model-{step}"), {**values, "global_step": np.int64(step)})
    separator = "\\" if re.match(r"^[A-Za-z]:\\", other) else "/"
    names = [f"{other}{separator}model-{step}" for step in steps]
    lines = [f"model_checkpoint_path: {_quoted(names[-1])}"]
    lines += [f"all_model_checkpoint_paths: {_quoted(name)}" for name in names]
    Path(folder, "checkpoint").write_text("\n".join(lines) + "\n")
    return folder


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tf1_saved_model(folder: str | os.PathLike, values: Mapping[str, np.ndarray] = VALUES) -> str:
    """A TF1 SavedModel (``saved_model.pb`` and ``variables/variables.*``); returns the folder."""
    folder = os.fspath(folder)
    with tf.Graph().as_default():
        for name, value in values.items():
            V1.get_variable(name, initializer=np.asarray(value))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            builder = V1.saved_model.Builder(folder)
            builder.add_meta_graph_and_variables(sess, [V1.saved_model.tag_constants.SERVING])
            builder.save()
    return folder


def partitioned(prefix: str | os.PathLike, shape: tuple[int, int] = (6, 2), parts: int = 3) -> tuple[str, np.ndarray]:
    """A variable ``layer/w`` split into ``parts`` slices (``partitioner=``), saved by a ``Saver``.

    The checkpoint holds one key, ``layer/w``, with the full shape. Returns the prefix and
    the full value.
    """
    value = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    os.makedirs(os.path.dirname(os.fspath(prefix)) or ".", exist_ok=True)
    with tf.Graph().as_default():
        variable = V1.get_variable("layer/w", shape=shape, partitioner=V1.fixed_size_partitioner(parts),
                                   initializer=V1.zeros_initializer())
        assigns = [part.assign(value[offset : offset + part.shape[0]])
                   for part, offset in zip(variable, np.cumsum([0] + [p.shape[0] for p in variable]))]
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(assigns)
            return V1.train.Saver().save(sess, os.fspath(prefix)), value


def _field(number: int, value: bytes | int) -> bytes:
    """One protobuf field: a varint for an int, length-delimited for bytes."""
    def varint(n: int) -> bytes:
        out = b""
        while True:
            out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
            n >>= 7
            if not n:
                return out
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def onnx_identity(path: str | os.PathLike, size: int = 3) -> str:
    """A minimal ONNX model (``y = Identity(x)``, float32 ``(size,)``), encoded by hand.

    Written without the ``onnx`` package, so the tests need no ONNX library; onnxruntime
    runs it. Returns the path.
    """
    tensor_type = _field(1, _field(1, 1) + _field(2, _field(1, _field(1, size))))  # FLOAT, (size,)
    value = lambda name: _field(1, name.encode()) + _field(2, tensor_type)  # noqa: E731
    node = _field(1, b"x") + _field(2, b"y") + _field(4, b"Identity")
    graph = _field(1, node) + _field(2, b"identity") + _field(11, value("x")) + _field(12, value("y"))
    model = (_field(1, 8) + _field(2, b"course-builder") + _field(3, b"1.0") + _field(7, graph)
             + _field(8, _field(1, b"") + _field(2, 13)))
    Path(path).write_bytes(model)
    return os.fspath(path)
