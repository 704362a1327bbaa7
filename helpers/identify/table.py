"""The one table of readers: which paths each kind of artifact's reader takes, in the order asked.

A ``Reader`` says which paths it takes (magic bytes at the start of a file, a name's ending,
a sniffing function, names a folder holds) and which function names them (``read(path)`` returns
an ``Identification``). ``helpers.identify.identify`` asks the rows in order: magic bytes first
(the bytes decide, a name only hints), then names; a folder by the names it holds. Adding a kind
of artifact is one reader module and one row here.

How to add a reader (the full recipe, with an example row: CONTRIBUTING.md's "How the recipes
are laid out" and the ``Reader`` fields below):

1. the kind goes into ``KINDS`` (``helpers.identify.answer``); a row whose kind is not there
   fails at import;
2. one module ``helpers/identify/<kind>.py`` with ``read_<kind>(path) -> Identification`` and a
   running docstring example; it never raises for a bad file (``not_model(path, "why")``) and
   imports TensorFlow, Keras or jax inside the function, only where the answer needs them;
3. one ``Reader(...)`` row in ``READERS`` below, at the place it must be asked.

Two things a new row must know:

* **Checkpoints are routed before this table.** ``identify`` itself sends a checkpoint's own
  files (``x.index``, ``x.data-00000-of-00001``, when the ``.index`` is beside them) and a bare
  prefix (no file ``x``, but ``x.index`` beside it) to ``checkpoints.read_prefix``, and a file no row
  takes to ``checkpoints.read_v1_or_unknown`` (a V1 checkpoint is a table with no magic at its
  start). A row for another file named ``.index`` or ``.data-*`` is never asked unless the file
  starts with a magic number a row takes (HDF5, zip, LiteRT).
* **A light reader must check the file's integrity, or leave the file to TensorFlow.** A reader
  that answers without TensorFlow (``savedmodel_proto``, ``meta_graphs``, ``graph_defs``,
  ``bundle_index``) must not name a damaged file as a healthy model: parse the WHOLE message
  with protobuf's parser (``tf_protos.parse``: a bit-flipped length or bad UTF-8 raises), check
  the checksums the format carries (a table block's CRC32C, a zip's CRC), and on any doubt
  return None / fall back to TensorFlow's reading, so that the answer, and the reason for a
  damaged file, are word for word TensorFlow's. ``tests/test_identify_light.py`` flips bits in
  stored files and compares both routes.

Example:
    >>> [reader.name for reader in READERS][:3]
    ['tflite', 'keras-zip', 'hdf5']
    >>> reader_for_file("model.weights.json", b"{").name
    'sharded-weights'
    >>> reader_for_folder("model", {"saved_model.pb", "variables"}).name
    'savedmodel'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass

from helpers.identify.answer import KINDS, Identification
from helpers.identify.checkpoints import read_checkpoint_folder, read_loose_folder
from helpers.identify.graph_defs import read_graph_def
from helpers.identify.hdf5 import read_hdf5
from helpers.identify.keras_hub_presets import looks_like_preset, read_preset_folder
from helpers.identify.keras_zips import read_keras_zip
from helpers.identify.meta_graphs import read_meta_graph
from helpers.identify.onnx_models import looks_like_onnx, read_onnx
from helpers.identify.orbax_folders import looks_like_orbax, read_orbax_folder
from helpers.identify.savedmodel_folders import read_saved_model_folder
from helpers.identify.sharded import read_sharded
from helpers.identify.tflite_models import read_tflite

__all__ = ["READERS", "Reader", "reader_for_file", "reader_for_folder", "reader_standing_for_folder"]


@dataclass(frozen=True)
class Reader:
    """One kind of artifact: which paths it takes, and ``read(path) -> Identification``.

    ``kinds``: the ``KINDS`` it answers with (besides ``not-a-model``). A file is taken by its
    ``magic`` (``(offset, bytes)`` pairs: any one matching), else by its name's ``suffixes``
    or, failing those, by ``sniff(path)``; a folder by the ``folder_names`` it holds, or a
    file in it ending in one of ``folder_suffixes``, or by ``folder_sniff(folder)`` (a layout that
    needs a look inside: step folders, a manifest). A file named as in ``names_its_folder``
    (``saved_model.pb``) is answered for its folder, with ``folder_note`` as the first trap.
    """

    name: str
    read: Callable[[str], Identification]
    kinds: tuple[str, ...]
    magic: tuple[tuple[int, bytes], ...] = ()
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[str], bool] | None = None
    folder_names: tuple[str, ...] = ()
    folder_suffixes: tuple[str, ...] = ()
    folder_sniff: Callable[[str], bool] | None = None
    names_its_folder: tuple[str, ...] = ()
    folder_note: str = ""

    def __post_init__(self) -> None:
        unknown = [kind for kind in self.kinds if kind not in KINDS]
        if unknown:
            raise ValueError(f"reader {self.name!r} answers with kinds not in KINDS: {unknown}")

    def takes_head(self, head: bytes) -> bool:
        """Whether a file starting with ``head`` (its first 16 bytes) has this reader's magic bytes."""
        return any(head[offset: offset + len(magic)] == magic for offset, magic in self.magic)

    def takes_name(self, path: str) -> bool:
        """Whether the file at ``path`` is this reader's by its name, or by sniffing it."""
        return path.endswith(self.suffixes) or bool(self.sniff and self.sniff(path))

    def takes_folder(self, folder: str, names: Collection[str]) -> bool:
        """Whether ``folder``, holding ``names``, is this reader's."""
        return any(name in names for name in self.folder_names) or any(
            name.endswith(self.folder_suffixes) for name in names) or bool(
            self.folder_sniff and self.folder_sniff(folder))


HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"

READERS: tuple[Reader, ...] = (
    Reader("tflite", read_tflite, ("tflite",), magic=((4, b"TFL3"),)),
    Reader("keras-zip", read_keras_zip, ("keras3-archive", "keras2-archive"), magic=((0, b"PK"),)),
    Reader("hdf5", read_hdf5, ("keras2-hdf5-named-keras", "weights-h5", "legacy-h5-model", "legacy-h5-weights"),
           magic=((0, HDF5_MAGIC),)),
    Reader("savedmodel", read_saved_model_folder,
           ("savedmodel-tf1", "savedmodel-tf2", "savedmodel-keras2", "savedmodel-export", "savedmodel-hub"),
           folder_names=("saved_model.pb", "saved_model.pbtxt"),
           names_its_folder=("saved_model.pb", "saved_model.pbtxt"),
           folder_note="this is a SavedModel's graph file: pass its folder"),
    Reader("orbax", read_orbax_folder, ("orbax-checkpoint",), folder_names=("_CHECKPOINT_METADATA",),
           folder_sniff=looks_like_orbax),
    Reader("keras-hub-preset", read_preset_folder, ("keras-hub-preset",), folder_sniff=looks_like_preset),
    Reader("checkpoint-folder", read_checkpoint_folder, ("checkpoint-folder",), folder_names=("checkpoint",)),
    Reader("checkpoint-in-folder", read_loose_folder,
           ("tf1-checkpoint", "checkpoint-keras2", "checkpoint-keras3", "checkpoint-module"),
           folder_suffixes=(".index",)),
    Reader("meta-graph", read_meta_graph, ("meta-graph",), suffixes=(".meta",)),
    Reader("sharded-weights", read_sharded, ("sharded-weights",), suffixes=(".weights.json",)),
    Reader("onnx", read_onnx, ("onnx",), suffixes=(".onnx",), sniff=looks_like_onnx),
    Reader("graph-def", read_graph_def, ("frozen-graph",), suffixes=(".pb", ".pbtxt")),
)


def reader_for_file(path: str, head: bytes) -> Reader | None:
    """The first reader whose magic bytes ``head`` has, else the first that takes the name; else None."""
    for reader in READERS:
        if reader.takes_head(head):
            return reader
    for reader in READERS:
        if reader.takes_name(path):
            return reader
    return None


def reader_for_folder(folder: str, names: Collection[str]) -> Reader | None:
    """The first reader that takes ``folder``, which holds ``names``, else None."""
    for reader in READERS:
        if reader.takes_folder(folder, names):
            return reader
    return None


def reader_standing_for_folder(path: str) -> Reader | None:
    """The reader whose folder a file named so stands for (``saved_model.pb``), else None."""
    name = os.path.basename(path)
    for reader in READERS:
        if name in reader.names_its_folder:
            return reader
    return None
