"""Old ``.keras`` zips: the weights of a Keras 2.12/2.13 ``.keras`` file, renumbered for Keras 3.

Keras 3 rebuilds no Keras 2 ``.keras`` file, and loads the weights of those of
Keras 2.12 and 2.13 into a twin only once their layers are numbered as Keras 3
counts them::

    renumber_keras2_zip_weights("k213/m.keras", "k3/m.weights.h5")   # then twin.load_weights(...)

Every zip is checked with ``helpers.files.check_archive_sizes`` before a member is read.
"""

from __future__ import annotations

import json
import os

from helpers.errors import ArchiveTooLargeError, NotACheckpointError, first_line
from helpers.files import check_archive_sizes, path_text, refuse_existing, refuse_unwritable
from helpers.keras2.h5 import OLD_LAYERS, new_layout_reason, not_a_file_reason, open_h5, renumbering

__all__ = ["renumber_keras2_zip_weights"]


def _keras2_weights_bytes(path: str) -> bytes:
    """The bytes of the weights file a Keras 2 ``.keras`` zip holds (or of such a ``.weights.h5`` itself)."""
    import zipfile

    if not os.path.isfile(path):
        raise NotACheckpointError(path, not_a_file_reason(path))
    with open(path, "rb") as file:
        head = file.read(8)
    if head.startswith(b"\x89HDF"):
        with open_h5(path) as file:
            if "layer_names" in file.attrs or "model_weights" in file:
                raise NotACheckpointError(path, "a legacy Keras .h5 (HDF5), not a Keras 2.12/2.13 .keras zip: "
                                                "convert_legacy_h5(path, 'm.keras') rebuilds it in Keras 3 "
                                                "(model=twin for weights only)")
            if OLD_LAYERS not in file:
                raise NotACheckpointError(path, new_layout_reason(file))
        with open(path, "rb") as file:
            return file.read()
    if not head.startswith(b"PK"):
        raise NotACheckpointError(path, "not a .keras zip (nor an HDF5 weights file)")
    try:
        with zipfile.ZipFile(path) as archive:
            check_archive_sizes(archive, path)  # a zip bomb is refused before anything is inflated
            version = json.loads(archive.read("metadata.json")).get("keras_version", "?")
            data = archive.read("model.weights.h5")
    except ArchiveTooLargeError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError):
        raise NotACheckpointError(path, "a zip file that is not a readable .keras file (truncated or another "
                                        "archive, or without its model.weights.h5): copy it again") from None
    if not str(version).startswith("2."):
        raise NotACheckpointError(path, f"a .keras file written by Keras {version}, not Keras 2: "
                                        "keras.models.load_model(path) reads it")
    return data


def renumber_keras2_zip_weights(path: str | os.PathLike, out: str | os.PathLike) -> str:
    """Write the weights of a Keras 2.12/2.13 ``.keras`` zip as a ``.weights.h5`` that Keras 3 loads.

    Keras 3 rebuilds no Keras 2 ``.keras`` file, and ``twin.load_weights(path)``
    fails on those of Keras 2.12 and 2.13 ("Layer 'logits' expected 2 variables,
    but received 0"): their weights file keys the layers of each kind with gaps
    (``dense``, ``dense_2``) where Keras 3 counts ``dense``, ``dense_1``. This
    recipe copies the weights out of the zip into ``out`` and renumbers the
    layers of each kind in the order of their numbers; load it with
    ``twin.load_weights(out)`` into a Keras 3 model of the same architecture,
    and prove the pairing by equal outputs. The optimizer's and the metrics'
    state are left out (a Keras 3 optimizer has one more variable,
    ``learning_rate``, and skips Keras 2's with a warning): compile the twin afresh.
    ``path`` may also be such a weights file taken out of the zip.

    Refuses, before writing anything: an ``out`` whose name does not end in
    ``.weights.h5`` (``ValueError``) or that exists (``WouldOverwriteError``);
    a file that is no Keras 2 ``.keras`` zip, or one whose layers Keras 3
    already counts right (2.14, 2.15: ``twin.load_weights(path)`` reads it),
    or a model with a nested model inside (``NotACheckpointError`` naming the
    route). The input file is never changed. Returns ``out``.

    Example (a ``.keras`` and a ``.h5`` of one model, both written by Keras 2.13):
        >>> import os, tempfile
        >>> import keras, numpy as np
        >>> out = os.path.join(tempfile.mkdtemp(), "model.weights.h5")
        >>> renumber_keras2_zip_weights("tests/data/tf213/functional_bn.keras", out) == out
        True
        >>> keras2_answer = keras.models.load_model("tests/data/tf213/functional_bn.h5", compile=False)
        >>> twin = keras.models.clone_model(keras2_answer)    # the same architecture, fresh weights
        >>> twin.load_weights(out)
        >>> x = [np.ones((1, 5), "float32")]
        >>> bool(np.array_equal(twin(x), keras2_answer(x)))
        True
    """
    import io

    import h5py

    source = path_text(path, "Keras 2 .keras file")
    target = path_text(out, "output path")
    if not target.endswith(".weights.h5"):
        raise ValueError(f"out must end in .weights.h5 (the name Keras 3's load_weights reads), got {target!r}")
    refuse_existing(target, "a weights file")
    refuse_unwritable(target)
    buffer = io.BytesIO(_keras2_weights_bytes(source))
    try:
        with h5py.File(buffer, "r+") as weights:
            layers = weights.get(OLD_LAYERS)
            if not isinstance(layers, h5py.Group):
                raise NotACheckpointError(source, "its weights file has no '_layer_checkpoint_dependencies' "
                                                  "group of layers (not the Keras 2.12-2.14 layout): "
                                                  "twin.load_weights(path) reads a .keras file of Keras 3 or 2.15")
            nested = sorted(key for key, group in layers.items()
                            if isinstance(group, h5py.Group) and (OLD_LAYERS in group or "layers" in group))
            if nested:
                raise NotACheckpointError(source, f"its layers {nested} are models with layers of their own, "
                                                  "whose numbering this recipe does not know: open it once with "
                                                  "the Keras that wrote it, save_weights('m.h5'), then "
                                                  "convert_legacy_h5('m.h5', 'm.weights.h5', model=twin)")
            moves = renumbering(layers)
            if not moves:
                raise NotACheckpointError(source, "its layers are numbered as Keras 3 counts them already (as "
                                                  "Keras 2.14 writes them): twin.load_weights(path) reads it as it is")
            for key, new in moves.items():  # through a scratch group: dense_2 -> dense_1 may free a name
                layers.move(key, f"_renumbering/{new}")
            for key in list(layers["_renumbering"]):
                layers.move(f"_renumbering/{key}", key)
            del layers["_renumbering"]
            weights.move(OLD_LAYERS, "layers")  # Keras 3's own name for the group
            for state in ("optimizer", "metrics"):
                if state in weights:
                    del weights[state]
    except (OSError, RuntimeError, KeyError) as error:  # h5py on a damaged weights file inside the zip
        raise NotACheckpointError(source, f"its weights file is damaged ({first_line(error)}): copy it again") from None
    folder = os.path.dirname(target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(target, "xb") as file:  # written in one go, from the finished copy in memory
        file.write(buffer.getvalue())
    return target
