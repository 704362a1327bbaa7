"""helpers.tensor_bundle: the one reader of a checkpoint's ``.index`` table (LevelDB), checksums checked.

Compared with TensorFlow's own reader on every stored index, and on copies with bits flipped at
places drawn from a fixed seed: whatever the light reader accepts, TensorFlow reads with the same
keys; a flipped bit in a block is refused (its masked CRC32C does not match), as TensorFlow refuses it.
"""

from __future__ import annotations

import glob
import random
import shutil
from pathlib import Path

import pytest

from helpers.tensor_bundle import bytes_by_shard, crc32c, masked, short_data_files, table_entries

ROOT = Path(__file__).resolve().parent.parent
INDEXES = sorted(glob.glob(str(ROOT / "tests/data/**/*.index"), recursive=True))


def _tensorflow_keys(prefix: str) -> set[str] | None:
    """The keys TensorFlow's reader lists, or None when it refuses the checkpoint."""
    import tensorflow as tf

    try:
        return set(tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
    except Exception:  # TensorFlow's DataLossError, NotFoundError, InvalidArgumentError...
        return None


def test_crc32c_is_castagnolis_and_masked_as_leveldb_masks_it():
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert crc32c(b"6789", crc32c(b"12345")) == crc32c(b"123456789")
    assert masked(0) == 0xA282EAD8


def test_every_stored_index_reads_with_tensorflows_keys():
    assert len(INDEXES) >= 10
    for index in INDEXES:
        keys = {key.decode() for key, _ in table_entries(Path(index).read_bytes()) if key}
        assert keys == _tensorflow_keys(index[: -len(".index")]), index


@pytest.mark.parametrize("seed", range(12))
def test_a_flipped_bit_in_an_index_is_refused_or_read_as_tensorflow_reads_it(tmp_path, seed):
    folder = shutil.copytree(ROOT / "tests/data/tf215/tfckpt_opt", tmp_path / "ckpt")
    index = folder / "ckpt.index"
    data = bytearray(index.read_bytes())
    draw = random.Random(seed)
    for _ in range(1 + seed % 3):
        data[draw.randrange(len(data))] ^= 1 << draw.randrange(8)
    index.write_bytes(bytes(data))
    try:
        light = {key.decode() for key, _ in table_entries(bytes(data)) if key}
    except (ValueError, UnicodeDecodeError):
        light = None
    heavy = _tensorflow_keys(str(folder / "ckpt"))
    if light is not None:  # never accept what TensorFlow refuses, never other keys
        assert light == heavy
    if heavy is None:
        assert bytes_by_shard(index) == {} and short_data_files(folder / "ckpt") is None


def test_a_flipped_bit_inside_a_block_fails_its_checksum():
    data = (ROOT / "tests/data/tf215/tfckpt_opt/ckpt.index").read_bytes()
    entries, refused = table_entries(data), 0
    for position in range(len(data)):  # every byte: a block, a trailer, the meta-index, the footer
        damaged = bytearray(data)
        damaged[position] ^= 1 << position % 8
        try:
            read = table_entries(bytes(damaged))
        except ValueError:
            refused += 1
            continue
        assert read == entries, position  # a byte it does not read (the unused meta-index, padding)
    assert refused > 0.9 * len(data)
