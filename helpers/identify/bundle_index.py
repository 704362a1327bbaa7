"""A checkpoint's ``.index`` (a tensor bundle's table), read without TensorFlow.

The index is a LevelDB table whose values are ``BundleEntryProto`` records, one per key: its
dtype, shape, shard, offset and size. ``read_bundle_index(path)`` returns them (and the number of
shards) or raises ``ValueError`` for anything it does not read plainly (a compressed block, a
sliced variable, a dtype without a fixed size): the caller then asks TensorFlow's own reader.
The table itself is read by ``helpers.tensor_bundle.table_entries`` (the one LevelDB table reader:
each block's masked CRC32C is checked as TensorFlow checks it, so a damaged index is left to
TensorFlow's reader, for its own words).
``read_string_scalar(prefix, index, key)`` reads one string value (the object graph) from its
data file and checks its CRC32C as TensorFlow does; ``data_files_complete`` says whether every
data file is there, long enough, and no stray shard count lies beside them.

Example:
    >>> index = read_bundle_index("tests/data/tf215/tf_module/variables/variables.index")
    >>> sorted(index.entries)[:1], index.shards
    (['_CHECKPOINTABLE_OBJECT_GRAPH'], 1)
    >>> index.value_bytes(), index.short_data_files("tests/data/tf215/tf_module/variables/variables")
    (32, [])
    >>> prefix = "tests/data/tf215/tfckpt_opt/ckpt"
    >>> index = read_bundle_index(prefix + ".index")
    >>> data_files_complete(prefix, index), len(read_string_scalar(prefix, index, OBJECT_GRAPH_KEY))
    (True, 2810)
"""

from __future__ import annotations

import math
import os
import re
import struct
from dataclasses import dataclass

from helpers.identify.protobuf import fields
from helpers.tensor_bundle import TABLE_MAGIC, crc32c, masked, table_entries, varint

__all__ = ["OBJECT_GRAPH_KEY", "BundleEntry", "BundleIndex", "data_files_complete", "is_table",
           "read_bundle_index", "read_string_scalar"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
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
    crc32c: int = 0  # the masked CRC32C of the value's bytes, as the data file holds them

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


def _entry(value: bytes) -> BundleEntry:
    found = {"dtype": 0, "shard": 0, "offset": 0, "size": 0, "crc32c": 0}
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
        elif number == 6 and wire == 5:
            found["crc32c"] = struct.unpack("<I", item)[0]
        elif number == 7:
            raise ValueError("a sliced (partitioned) variable")
    if found["dtype"] != _STRING and found["dtype"] not in _SIZES:
        raise ValueError(f"dtype {found['dtype']}")
    if any(dim < 0 for dim in shape):
        raise ValueError("a negative dimension")
    return BundleEntry(found["dtype"], tuple(shape), found["shard"], found["offset"], found["size"],
                       found["crc32c"])


def _header_shards(value: bytes) -> int:
    """The number of shards; ``ValueError`` for a header TensorFlow may refuse (big-endian, a newer
    bundle version), so that its reader decides."""
    header = {number: item for number, _, item in fields(value)}
    if not isinstance(header.get(1, 0), int) or not isinstance(header.get(3, b""), bytes):
        raise ValueError("a header of another layout")
    if header.get(2, 0) != 0:
        raise ValueError("a big-endian bundle")
    version = list(fields(header.get(3, b"")))
    if any(number == 2 and item > 1 or number == 3 for number, _, item in version):
        raise ValueError("a bundle version this reader does not know")
    return header.get(1, 0) or 1


def is_table(path: str) -> bool:
    """Whether the file ends as a LevelDB table does (its footer's magic number): a V1 checkpoint
    and a V2 ``.index`` both do; TensorFlow's readers refuse anything else ("not an sstable")."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size < 48:
            return False
        file.seek(size - 8)
        return struct.unpack("<Q", file.read(8))[0] == TABLE_MAGIC


def read_bundle_index(path: str) -> BundleIndex:
    """The entries of a tensor bundle's ``.index``; ``ValueError`` for what this reader does not read."""
    with open(path, "rb") as file:
        data = file.read()
    entries: dict[str, BundleEntry] = {}
    shards = 1
    try:
        for key, value in table_entries(data):  # each block's checksum checked, as TensorFlow does
            if key == b"":  # the header: BundleHeaderProto
                shards = _header_shards(value)
                continue
            entries[key.decode()] = _entry(value)
    except (IndexError, struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"a damaged index ({error})") from None
    return BundleIndex(entries, shards)


# --------------------------------------------------------------------------- values

_DATA_FILE = re.compile(r"\.data-(\d{5})-of-(\d{5})$")


def data_files_complete(prefix: str, index: BundleIndex) -> bool:
    """Whether the data files beside ``prefix`` are exactly the index's shards, each long enough.

    Names are compared literally (``[``, ``*``, ``?`` are plain characters here).
    """
    folder, stem = os.path.split(prefix)
    present = {name for name in os.listdir(folder or ".")
               if name.startswith(stem) and _DATA_FILE.fullmatch(name[len(stem):])}
    expected = {f"{stem}.data-{shard:05d}-of-{index.shards:05d}" for shard in range(index.shards)}
    return present == expected and not index.short_data_files(prefix)


def read_string_scalar(prefix: str, index: BundleIndex, key: str) -> bytes:
    """The bytes of the scalar string value ``key``, checked as TensorFlow checks them.

    A string in a data file is its length (a varint), a masked CRC32C of that length (as 4
    little-endian bytes; 8 past 4 GiB), then its bytes; the index keeps the masked CRC32C of all of it.
    ``ValueError`` for anything else (another shape, a checksum that does not match).
    """
    entry = index.entries[key]
    if entry.dtype != _STRING or entry.shape != ():
        raise ValueError(f"{key!r} is not a scalar string")
    folder, stem = os.path.split(prefix)
    name = os.path.join(folder, f"{stem}.data-{entry.shard:05d}-of-{index.shards:05d}")
    with open(name, "rb") as file:
        file.seek(entry.offset)
        data = file.read(entry.size)
    if len(data) != entry.size:
        raise ValueError("a truncated data file")
    length, position = varint(data, 0)
    crc = crc32c(struct.pack("<I" if length < 1 << 32 else "<Q", length))
    if position + 4 + length != entry.size or struct.unpack_from("<I", data, position)[0] != masked(crc):
        raise ValueError("a damaged string value (its length does not check)")
    crc = crc32c(data[position:position + 4], crc)
    value = data[position + 4:]
    if masked(crc32c(value, crc)) != entry.crc32c:
        raise ValueError("a damaged string value (its checksum does not match)")
    return value
