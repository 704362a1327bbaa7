"""What is this file, and how do I load it today? (notebook 15, the course's front door)

``identify(path)`` names any model-state artifact of the course: a checkpoint
(TF1 name-based, V1 single file, object-based with Keras 2 or Keras 3 keys or a
plain ``tf.Module``), a ``CheckpointManager`` folder, a ``.meta`` graph, a
``.keras`` file (Keras 3, or Keras 2.12-2.15), ``.weights.h5`` and sharded
``.weights.json``, a legacy ``.h5``, a SavedModel (TF1 ``Builder``, TF2,
Keras 2, ``model.export``, hub format), a frozen GraphDef, a ``.tflite`` or an
``.onnx`` file; or says why it is not a model file. It reads only what it needs
(index files, headers, configurations), never a data file in full, and never
writes anywhere. The answer says what wrote the file, what it holds, the
course's silent traps that apply, and the code that loads it on TF 2.21 /
Keras 3.15; ``.verify()`` runs that code in a fresh Python and says what it
loaded. Code a file carries (a Lambda's bytecode, a SavedModel's stored functions, a
``.meta`` graph's ops, a ``TFSMLayer``'s SavedModel, modules tf-keras imports by name:
``helpers.trust``) is never run, by ``.verify()`` or ``.load()``, unless the user passes
``trust=True``; the verifying process's memory is capped (a tiny file can declare a huge
model); a ``.keras`` archive's declared sizes are checked before any member is read
(``helpers.files.check_archive_sizes``). Naming imports TensorFlow only where a kind needs it:
``.keras``, HDF5, SavedModel folders, ``.meta`` and frozen graphs, ``.tflite``, ``.onnx`` and
checkpoints (their ``.index``, object graph and state file) are read with h5py, LiteRT,
protobuf's wire format and, for TensorFlow's own messages, protobuf's parser over the whole file
with TensorFlow's message types (``tf_protos``); TensorFlow reads what these cannot read plainly,
for the same answer and the same reason for a damaged file: the chapters' recipes
``describe_checkpoint`` and ``read_object_graph`` for a checkpoint, an old V1 one among them; the
loading code uses the recipes (``describe_keras_file``, ``describe_legacy_h5``).

The package: ``identify`` and ``stored_real_file`` here (the front door); one reader module per
kind of artifact (``checkpoints``, ``meta_graphs``, ``keras_zips``, ``hdf5`` with ``legacy_h5`` and
``weights_h5``, ``sharded``, ``savedmodel_folders``, ``graph_defs``, ``tflite_models``,
``onnx_models``) behind the one table of readers (``table.READERS``); below them the answer
(``answer``: ``Identification``, ``Verification``, ``KINDS``), Keras configurations
(``keras_config``), the light readings (``savedmodel_proto``, ``bundle_index``, ``known_ops``),
TensorFlow's message types without TensorFlow (``tf_protos``) and protobuf's wire format
(``protobuf``).

Example:
    >>> info = identify("tests/data/tf215/sequential.h5")
    >>> info.kind
    'legacy-h5-model'
    >>> print(identify("tests/data/tf215/functional_bn.weights.h5").verify())
    verified: 10 model weights and 13 optimizer values, 808 bytes

From a shell: ``python -m helpers PATH [--verify [--trust]] [--json]``.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from helpers.errors import NotAModelFileError, VerificationError, first_line
from helpers.files import path_text
from helpers.identify.answer import KINDS, Identification, Verification, not_model
from helpers.identify.checkpoints import read_prefix, read_v1_or_unknown
from helpers.identify.table import READERS, Reader, reader_for_file, reader_for_folder, reader_standing_for_folder

__all__ = [
    "KINDS",
    "READERS",
    "Identification",
    "NotAModelFileError",
    "Reader",
    "Verification",
    "VerificationError",
    "identify",
    "stored_real_file",
]

_OWN_FILE = re.compile(r"\.(index|data-\d{5}-of-\d{5})$")


def identify(path: str | os.PathLike) -> Identification:
    """Name the model file or folder at ``path``: kind, writer, contents, traps, loading code.

    Never raises for a bad file: anything that is not a model file comes back
    with ``kind == "not-a-model"`` and the reason (missing, unreadable, empty,
    truncated, a zip or HDF5 file of something else; an empty path too). Only a
    path of the wrong type (not ``str`` or ``os.PathLike``) raises ``TypeError``.

    Example:
        >>> identify("no/such/file").reason
        'no such file or folder'
        >>> identify("").reason
        'the path is empty (no file or folder named)'
        >>> identify("tests/data/tf215/frozen_graph.pb").kind
        'frozen-graph'
    """
    try:
        text = path_text(path, "model file path")
    except ValueError:  # path_text's only ValueError: an empty path
        return not_model("", "the path is empty (no file or folder named)")
    if os.path.isdir(text):
        if not os.access(text, os.R_OK | os.X_OK):
            return not_model(text, "cannot read this folder (permission denied)")
        return _folder(text)
    if not os.path.exists(text):
        if os.path.isfile(text + ".index"):
            return read_prefix(text)
        if os.path.islink(text) and _is_link_loop(text):
            return not_model(text, "a symbolic link loop (the links point at each other)")
        return not_model(text, "no such file or folder")
    if not os.path.isfile(text):
        return not_model(text, "not a regular file")
    try:
        with open(text, "rb") as file:
            head = file.read(16)
    except OSError as error:
        return not_model(text, f"cannot read it ({first_line(error)})")
    own = _OWN_FILE.search(text)
    # The first bytes decide, a name only hints: an HDF5 or zip file named .index is no index
    # (a .data file's bytes are raw tensor values, so there the .index beside it decides).
    if own and ((own[1] == "index" and _magic(head)) or not os.path.isfile(text[: own.start()] + ".index")):
        own = None
    if own:
        prefix = text[: own.start()]
        info = read_prefix(prefix)
        info.traps.insert(0, f"this is one of a checkpoint's files: TensorFlow's readers take the prefix "
                             f"{os.path.basename(prefix)!r}")
        return info
    if os.path.getsize(text) == 0:
        return not_model(text, "the file is empty (0 bytes)")
    reader = reader_for_file(text, head)
    standing = reader_standing_for_folder(text)
    if standing and (reader is None or not reader.takes_head(head)):
        info = _folder(os.path.dirname(text) or ".")
        info.traps.insert(0, standing.folder_note)
        return info
    if reader is None:
        return read_v1_or_unknown(text)
    return reader.read(text)


def _magic(head: bytes) -> bool:
    """Whether ``head`` starts like a format with a magic number (LiteRT, zip, HDF5: the table's)."""
    return any(reader.takes_head(head) for reader in READERS)


def _is_link_loop(path: str) -> bool:
    import errno

    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def _folder(folder: str) -> Identification:
    names = set(os.listdir(folder))
    reader = reader_for_folder(folder, names)
    if reader is not None:
        return reader.read(folder)
    keras = sorted(n for n in names if n.endswith((".keras", ".weights.h5", ".weights.json", ".h5")))
    if keras:
        return not_model(folder, f"a folder of model files: identify each ({', '.join(keras[:3])})")
    return not_model(folder, "a folder with no model files (no saved_model.pb, checkpoint or index)")


def stored_real_file(source: str, name: str, dest: str | os.PathLike = ".") -> tuple[str, dict[str, Any]]:
    """Copy a real file the course stores (``tests/data/<source>``) into ``dest``; return (path, entry).

    ``entry`` is the artifact's manifest entry: ``written_by``, ``input`` and the ``output``
    the old software computed. For chapter 15, in a checkout of the course (nothing is
    downloaded). Refuses to overwrite: ``dest`` must not hold the artifact yet.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path, entry = stored_real_file("tf215", "sequential", folder)
        ...     os.path.relpath(path, folder), entry["written_by"], identify(path).kind
        ('tf215/sequential.h5', 'tensorflow 2.15.1 / keras 2.15.0', 'legacy-h5-model')
    """
    import shutil

    from helpers.files import refuse_existing

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    store = os.path.join(root, "tests", "data")
    manifest_path = os.path.join(store, source, "MANIFEST.json")
    if not os.path.isfile(manifest_path):
        raise FileNotFoundError(f"no stored files {source!r}: this needs a checkout of the course")
    with open(manifest_path, encoding="utf-8") as file:
        entry = json.load(file)[name]
    top = entry["path"].split("/")[0]
    target = os.path.join(path_text(dest), source, top)
    refuse_existing(target, "a copied real file")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    origin = os.path.join(store, source, top)
    (shutil.copytree if os.path.isdir(origin) else shutil.copyfile)(origin, target)
    return os.path.join(path_text(dest), source, entry["path"]), entry
