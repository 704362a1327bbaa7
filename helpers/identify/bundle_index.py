"""A checkpoint's ``.index`` (a tensor bundle's table), read without TensorFlow.

The index is a LevelDB table whose values are ``BundleEntryProto`` records, one per key: its
dtype, shape, shard, offset and size. ``read_bundle_index(path)`` returns them (and the number of
shards) or raises ``ValueError`` for anything it does not read plainly (a compressed block, a
sliced variable, a dtype without a fixed size): the caller then asks TensorFlow's own reader.
``helpers.tensor_bundle`` reads the same table with TensorFlow's protobuf classes.

Example:
    >>> index = read_bundle_index("tests/data/tf215/tf_module/variables/variables.index")
    >>> sorted(index.entries)[:1], index.shards
    (['_CHECKPOINTABLE_OBJECT_GRAPH'], 1)
    >>> index.value_bytes(), index.short_data_files("tests/data/tf215/tf_module/variables/variables")
    (32, [])
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

from helpers.identify.protobuf import fields, varint

__all__ = ["OBJECT_GRAPH_KEY", "BundleEntry", "BundleIndex", "is_table", "read_bundle_index"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_TABLE_MAGIC = 0xDB4775248B80FB57  # the magic number that ends a LevelDB table
_STRING = 7
# Bytes per element of TensorFlow's dtypes (types.proto), those a checkpoint stores as plain arrays.
_SIZES = {1: 4, 2: 8, 3: 4, 4: 1, 5: 2, 6: 1, 8: 8, 9: 8, 10: 1, 11: 1, 12: 1, 13: 4, 14: 2, 15: 2, 16: 2,
          17: 2, 18: 16, 19: 2, 22: 4, 23: 8}


@dataclass(frozen=True)
class BundleEntry:
    """One key of the index: dtype number, shape, and where its bytes lie."""

    dtype: int
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int

    @property
    def nbytes(self) -> int:
        """Bytes of the value (0 for strings, as ``helpers.inspection`` counts them)."""
        return 0 if self.dtype == _STRING else math.prod(self.shape) * _SIZES[self.dtype]


@dataclass(frozen=True)
class BundleIndex:
    entries: dict[str, BundleEntry]
    shards: int

    def value_bytes(self) -> int:
        """Bytes of every value but the object graph (``CheckpointDescription.total_bytes``)."""
        return sum(entry.nbytes for key, entry in self.entries.items() if key != OBJECT_GRAPH_KEY)

    def short_data_files(self, prefix: str) -> list[str]:
        """The data files that are missing or shorter than the index places values in them."""
        needed: dict[int, int] = {}
        for entry in self.entries.values():
            needed[entry.shard] = max(needed.get(entry.shard, 0), entry.offset + entry.size)
        folder, stem = os.path.split(prefix)
        short = []
        for shard, end in sorted(needed.items()):
            name = os.path.join(folder, f"{stem}.data-{shard:05d}-of-{self.shards:05d}")
            if not os.path.isfile(name) or os.path.getsize(name) < end:
                short.append(os.path.basename(name))
        return short


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _block(data: bytes, offset: int, size: int) -> list[tuple[bytes, bytes]]:
    if data[offset + size] != 0:  # the trailer's type byte: 0 is an uncompressed block
        raise ValueError("a compressed table block")
    block = data[offset:offset + size]
    restarts = struct.unpack_from("<I", block, size - 4)[0]
    end, position, key, entries = size - 4 * (1 + restarts), 0, b"", []
    while position < end:
        shared, position = varint(block, position)
        unshared, position = varint(block, position)
        length, position = varint(block, position)
        key = key[:shared] + block[position:position + unshared]
        position += unshared
        entries.append((key, block[position:position + length]))
        position += length
    return entries


def _entry(value: bytes) -> BundleEntry:
    found = {"dtype": 0, "shard": 0, "offset": 0, "size": 0}
    shape: list[int] = []
    for number, wire, item in fields(value):
        if number == 1 and wire == 0:
            found["dtype"] = item
        elif number == 2 and wire == 2:
            for inner, inner_wire, dim in fields(item):
                if inner == 2 and inner_wire == 2:
                    shape.append(_signed(dict((n, v) for n, w, v in fields(dim) if n == 1).get(1, 0)))
                elif inner == 3 and dim:
                    raise ValueError("a shape of unknown rank")
        elif number in (3, 4, 5) and wire == 0:
            found[{3: "shard", 4: "offset", 5: "size"}[number]] = _signed(item)
        elif number == 7:
            raise ValueError("a sliced (partitioned) variable")
    if found["dtype"] != _STRING and found["dtype"] not in _SIZES:
        raise ValueError(f"dtype {found['dtype']}")
    if any(dim < 0 for dim in shape):
        raise ValueError("a negative dimension")
    return BundleEntry(found["dtype"], tuple(shape), found["shard"], found["offset"], found["size"])


def is_table(path: str) -> bool:
    """Whether the file ends as a LevelDB table does (its footer's magic number): a V1 checkpoint
    and a V2 ``.index`` both do; TensorFlow's readers refuse anything else ("not an sstable")."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size < 48:
            return False
        file.seek(size - 8)
        return struct.unpack("<Q", file.read(8))[0] == _TABLE_MAGIC


def read_bundle_index(path: str) -> BundleIndex:
    """The entries of a tensor bundle's ``.index``; ``ValueError`` for what this reader does not read."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        footer = data[-48:]
        if len(footer) < 48 or struct.unpack("<Q", footer[-8:])[0] != _TABLE_MAGIC:
            raise ValueError("not a table")
        _, position = varint(footer, 0)
        _, position = varint(footer, position)  # the meta-index handle, unused
        offset, position = varint(footer, position)
        size, _ = varint(footer, position)
        entries: dict[str, BundleEntry] = {}
        shards = 1
        for _, handle in _block(data, offset, size):
            block_offset, position = varint(handle, 0)
            block_size, _ = varint(handle, position)
            for key, value in _block(data, block_offset, block_size):
                if key == b"":  # the header: BundleHeaderProto
                    shards = dict((n, v) for n, w, v in fields(value) if w == 0).get(1, 0) or 1
                    continue
                entries[key.decode()] = _entry(value)
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"a damaged index ({error})") from None
    return BundleIndex(entries, shards)
