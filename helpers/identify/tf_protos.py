"""TensorFlow's protobuf messages, parsed in full without importing TensorFlow.

A light reader must not answer from a damaged file: ``parse(data, name)`` parses the WHOLE
file with protobuf's own parser (a bit-flipped length, a truncated field or bad UTF-8 in a
string field raises ``google.protobuf.message.DecodeError``, as TensorFlow's classes do).
The message types come from TensorFlow's generated ``*_pb2.py`` files, which each hold their
serialized ``FileDescriptorProto`` (``AddSerializedFile(b'...')``): the bytes are read from the
files' text (``ast.literal_eval``; the files are never imported or run) and added, dependencies
first, to a private ``DescriptorPool``. This takes a few hundredths of a second, once per
process. Without TensorFlow installed there are no descriptors: ``ModuleNotFoundError`` (the
readers answer not-a-model with ``NO_TENSORFLOW``).

Example:
    >>> with open("tests/data/tf215/frozen_graph.pb", "rb") as file:
    ...     graph = parse(file.read(), "tensorflow.GraphDef")
    >>> len(graph.node) > 0, graph.node[0].op
    (True, 'Placeholder')
    >>> parse(b"\\x0a\\x05ab", "tensorflow.GraphDef")
    Traceback (most recent call last):
    ...
    google.protobuf.message.DecodeError: Error parsing message with type 'tensorflow.GraphDef': Wire format was corrupt
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import os
import re
from typing import Any

__all__ = ["NO_TENSORFLOW", "message_class", "parse"]

# The .proto files whose messages the readers parse (their dependencies are added first).
_ROOTS = ("tensorflow/core/protobuf/saved_model.proto", "tensorflow/core/framework/graph.proto")
# What a reader answers where TensorFlow is not installed (no message types to parse with).
NO_TENSORFLOW = "TensorFlow is not installed here: reading this file needs its message types (pip install tensorflow)"
_SERIALIZED = re.compile(rb"AddSerializedFile\((b'(?:[^'\\]|\\.)*')\)")


def _serialized(name: str, root: str) -> bytes:
    """The serialized FileDescriptorProto of the ``.proto`` file ``name``."""
    if name.startswith("google/protobuf/"):  # protobuf's own well-known types
        module = importlib.import_module("google.protobuf." + os.path.basename(name)[: -len(".proto")] + "_pb2")
        return module.DESCRIPTOR.serialized_pb
    with open(os.path.join(root, name[: -len(".proto")] + "_pb2.py"), "rb") as file:
        found = _SERIALIZED.search(file.read())
    if found is None:
        raise ValueError(f"no serialized descriptor in {name[: -len('.proto')]}_pb2.py")
    return ast.literal_eval(found[1].decode("latin-1"))


@functools.lru_cache(maxsize=1)
def _pool() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool

    spec = importlib.util.find_spec("tensorflow")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(NO_TENSORFLOW, name="tensorflow")
    root = os.path.dirname(list(spec.submodule_search_locations)[0])
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        data = _serialized(name, root)
        for dependency in descriptor_pb2.FileDescriptorProto.FromString(data).dependency:
            add(dependency)
        pool.AddSerializedFile(data)
        added.add(name)

    for name in _ROOTS:
        add(name)
    return pool


@functools.lru_cache(maxsize=None)
def message_class(name: str) -> Any:
    """The message class of a TensorFlow message type, e.g. ``"tensorflow.MetaGraphDef"``."""
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(name))


def parse(data: bytes, name: str) -> Any:
    """``data`` parsed in full as the message ``name``; ``DecodeError`` for a damaged one."""
    message = message_class(name)()
    message.ParseFromString(data)
    return message
