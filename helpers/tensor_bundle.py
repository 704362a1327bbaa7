"""Where a checkpoint's values lie, read from its ``.index`` file alone (notebooks 01 and 09).

A TF2 checkpoint (and a SavedModel's ``variables/``) is a *tensor bundle*: the
``.index`` file is a table (LevelDB's format) whose values are ``BundleEntryProto``
records, one per key, each saying in which ``.data-NNNNN-of-NNNNN`` shard a value
lies, at which offset and how many bytes long. TensorFlow reads a value only when
asked for it, so a data file cut short is found late, or never for the values
before the cut. These functions read the table directly, for every dtype (strings
and the object graph included), so a short shard is found before anything is read:

* ``bytes_by_shard(index_path)``: ``{shard: (bytes its data file must hold, shards)}``;
* ``short_data_files(prefix)``: the shards that are missing or shorter than that;
* ``table_entries(data)``: the table's keys and values, the course's one reader of a LevelDB
  table (``helpers.identify.bundle_index`` reads a checkpoint with it, without TensorFlow): each
  block's masked CRC32C (``crc32c``, ``masked``) is checked, as TensorFlow's reader checks it.

Nothing here imports TensorFlow until ``bytes_by_shard`` parses the entries.

Example:
    >>> import os, tempfile
    >>> import tensorflow as tf
    >>> folder = tempfile.mkdtemp()
    >>> prefix = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(os.path.join(folder, "model"))
    >>> bytes_by_shard(prefix + ".index")
    {0: (90, 1)}
    >>> short_data_files(prefix)
    []
"""

from __future__ import annotations

import os
import struct

__all__ = ["TABLE_MAGIC", "bytes_by_shard", "crc32c", "masked", "short_data_files", "table_entries", "varint"]

# The magic number that ends a LevelDB table (the format of a checkpoint's .index).
TABLE_MAGIC = 0xDB4775248B80FB57


def varint(data: bytes, position: int) -> tuple[int, int]:
    """The base-128 varint at ``data[position:]`` (protobuf's and LevelDB's) and the position after it.

    Example:
        >>> varint(bytes([0x96, 0x01]), 0)
        (150, 2)
    """
    result = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        result |= (byte & 0x7F) << shift
        position += 1
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _crc_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC32C (Castagnoli) of ``data``, extending ``crc``: the checksum of LevelDB's blocks and of
    TensorFlow's bundle values (pure Python, table-driven: an index file is small).

    Example:
        >>> hex(crc32c(b"123456789"))
        '0xe3069283'
    """
    crc ^= 0xFFFFFFFF
    table = _CRC_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    """A CRC32C as LevelDB and TensorFlow store it (rotated, plus a constant)."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _table_block(data: bytes, offset: int, size: int) -> list[tuple[bytes, bytes]]:
    """The key/value pairs of one table block, after its trailer's masked CRC32C is checked."""
    trailer = data[offset + size: offset + size + 5]
    if len(trailer) < 5:
        raise ValueError("a truncated table block")
    if trailer[0] != 0:  # the trailer's type byte: 0 means not compressed (TensorFlow's choice)
        raise ValueError("a compressed table block")
    if masked(crc32c(data[offset:offset + size + 1])) != struct.unpack("<I", trailer[1:])[0]:
        raise ValueError("a table block whose checksum does not match")  # TensorFlow refuses it too
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


def table_entries(data: bytes) -> list[tuple[bytes, bytes]]:
    """Every ``(key, value)`` of a LevelDB table held in ``data`` (a checkpoint's ``.index``), in order.

    Each block's masked CRC32C is checked, as TensorFlow's reader checks it; ``ValueError`` for
    anything this reader does not read plainly: not a table, a compressed or damaged block.

    Example:
        >>> with open("tests/data/tf215/tfckpt_opt/ckpt.index", "rb") as file:
        ...     keys = [key for key, _ in table_entries(file.read())]
        >>> keys[0], len(keys)
        (b'', 24)
    """
    try:
        footer = data[-48:]
        if len(footer) < 48 or struct.unpack("<Q", footer[-8:])[0] != TABLE_MAGIC:
            raise ValueError("not a table")
        _, position = varint(footer, 0)
        _, position = varint(footer, position)  # the meta-index handle, unused
        offset, position = varint(footer, position)
        size, _ = varint(footer, position)
        entries = []
        for _, handle in _table_block(data, offset, size):
            block_offset, position = varint(handle, 0)
            block_size, _ = varint(handle, position)
            entries += _table_block(data, block_offset, block_size)
    except (IndexError, struct.error) as error:
        raise ValueError(f"a damaged table ({error})") from None
    return entries


def bytes_by_shard(index_path: str | os.PathLike) -> dict[int, tuple[int, int]]:
    """``{shard: (bytes its data file must hold, number of shards)}``, read from the ``.index`` table.

    Each shard must be at least as long as the largest offset + size of the values
    the index places in it. An index of another layout (not a readable table, or a block
    whose checksum does not match) gives ``{}``: nothing is checked then, and TensorFlow's
    own reader has the last word.

    Example:
        >>> bytes_by_shard("tests/data/tf215/tfckpt_opt/ckpt.index")  # shard 0 of 1 holds 3620 bytes
        {0: (3620, 1)}
    """
    from google.protobuf import message
    from tensorflow.core.protobuf import tensor_bundle_pb2

    try:
        with open(index_path, "rb") as file:
            data = file.read()
        total, needed = 1, {}
        for key, value in table_entries(data):
            if key == b"":  # the header
                total = tensor_bundle_pb2.BundleHeaderProto.FromString(value).num_shards or 1
                continue
            entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            needed[entry.shard_id] = max(needed.get(entry.shard_id, 0), entry.offset + entry.size)
    except (OSError, ValueError, message.DecodeError):
        return {}
    return {shard: (end, total) for shard, end in needed.items()}


def short_data_files(prefix: str | os.PathLike) -> list[tuple[str, int | None, int]] | None:
    """``(data file name, its size or None when missing, bytes it must hold)`` for each bad shard.

    The names are compared literally (``[``, ``*``, ``?`` in a folder name are plain
    characters here). An empty list: every shard is there and long enough; ``None``:
    the index is not a table this reader knows, so nothing was checked.

    Example:
        >>> import os, shutil, tempfile
        >>> folder = shutil.copytree("tests/data/tf215/tfckpt_opt", os.path.join(tempfile.mkdtemp(), "ckpt"))
        >>> short_data_files(os.path.join(folder, "ckpt"))
        []
        >>> os.truncate(os.path.join(folder, "ckpt.data-00000-of-00001"), 100)  # cut it short
        >>> short_data_files(os.path.join(folder, "ckpt"))
        [('ckpt.data-00000-of-00001', 100, 3620)]
    """
    prefix = os.fspath(prefix)
    folder, stem = os.path.split(prefix)
    needs = bytes_by_shard(prefix + ".index")
    if not needs:
        return None
    short = []
    for shard, (needed, total) in sorted(needs.items()):
        name = f"{stem}.data-{shard:05d}-of-{total:05d}"
        path = os.path.join(folder, name)
        have = os.path.getsize(path) if os.path.isfile(path) else None
        if have is None or have < needed:
            short.append((name, have, needed))
    return short
