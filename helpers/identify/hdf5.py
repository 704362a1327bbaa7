"""Reader: an HDF5 file (magic bytes ``\\x89HDF``): which Keras wrote it, and in which layout.

A ``model_config`` attribute is a legacy whole model, ``layer_names`` legacy weights (both:
``helpers.identify.legacy_h5``); a ``vars``/``layers`` tree is ``save_weights`` to ``.weights.h5``
(``helpers.identify.weights_h5``); anything else is a plain HDF5 file. Read with h5py, no TensorFlow.

Example:
    >>> read_hdf5("tests/data/tf215/sequential_weights.h5").kind
    'legacy-h5-weights'
"""

from __future__ import annotations

from typing import Any

from helpers.errors import first_line
from helpers.identify.answer import Identification, not_model
from helpers.identify.legacy_h5 import read_legacy_h5
from helpers.identify.weights_h5 import read_weights_h5

__all__ = ["read_hdf5"]


def read_hdf5(path: str) -> Identification:
    import h5py

    try:
        file = h5py.File(path, "r")
    except OSError as error:
        return not_model(path, f"a truncated or damaged HDF5 file ({first_line(error)})")
    with file:
        try:
            return _read_open(path, file)
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as error:
            # h5py on a damaged group, dataset or attribute (a flipped bit past the header)
            text = error.args[0] if isinstance(error, KeyError) and error.args else first_line(error)
            return not_model(path, f"a truncated or damaged HDF5 file ({text})")


def _read_open(path: str, file: Any) -> Identification:
    import h5py

    if "model_config" in file.attrs:
        return read_legacy_h5(path, file, whole=True)
    group = file["model_weights"] if "model_weights" in file else file
    if "layer_names" in group.attrs:
        return read_legacy_h5(path, file, whole=False)
    if _keras_weights_layout(file):
        return read_weights_h5(path, file)
    if "lora" in file and isinstance(file["lora"], h5py.Group) and "vars" in file["lora"]:
        rank = file["lora/vars"].get("rank")
        rank_text = f", rank {int(rank[()])}" if rank is not None and rank.shape == () else ""
        return not_model(path, f"a KerasHub LoRA adapter (save_lora_weights{rank_text}), not a model: load it "
                               "onto the backbone of the preset it was trained on, "
                               "task.backbone.load_lora_weights(path)")
    shown = ", ".join(list(file)[:3]) or "nothing"
    return not_model(path, f"a plain HDF5 file, not Keras weights (top-level entries: {shown})")


def _keras_weights_layout(file: Any) -> bool:
    """Whether an HDF5 file has the layout of ``save_weights`` to ``.weights.h5``.

    Keras 2.12/2.13 keys layers under ``_layer_checkpoint_dependencies``; Keras 2.15 and 3
    write a top-level ``vars`` group and a ``layers`` group of layer groups, each with ``vars``.
    """
    import h5py

    if isinstance(file.get("_layer_checkpoint_dependencies"), h5py.Group):
        return True
    if not isinstance(file.get("vars"), h5py.Group):
        return False
    layers = file.get("layers")
    if layers is None:
        return True
    return isinstance(layers, h5py.Group) and all(
        isinstance(layer, h5py.Group) and ("vars" in layer or "layers" in layer) for layer in layers.values())

