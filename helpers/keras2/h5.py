"""Legacy Keras ``.h5`` files (Keras 2's ``model.save("m.h5")`` and ``save_weights("w.h5")``): opened,
described, their architecture rebuilt; and what a file given as one is instead, with what reads it.

``open_h5`` turns every way h5py fails into ``NotACheckpointError`` with the route
for what the file is (a SavedModel folder, a TF checkpoint prefix, a ``.keras`` zip,
a ``.weights.h5`` of Keras 2.12-2.14 or Keras 3). ``describe_legacy_h5`` lists a file's
layers and weights; ``model_from_h5`` rebuilds its architecture in Keras 3. The layout
of Keras 2.12-2.14 weights files (``OLD_LAYERS``, ``renumbering``) is read here too,
for ``helpers.keras2.zips``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from helpers.errors import ArchiveTooLargeError, DamagedH5Error, NotACheckpointError, first_line
from helpers.files import check_archive_sizes, checkpoint_files_at
from helpers.keras2.legacy import model_from_keras2_config, rebuild_problems

__all__ = ["DAMAGED_H5", "OLD_LAYERS", "LegacyH5", "describe_legacy_h5", "h5_model_config", "h5_texts",
           "model_from_h5", "new_layout_reason", "not_a_file_reason", "open_h5", "renumbering"]


@dataclass(frozen=True)
class LegacyH5:
    """What a legacy Keras ``.h5`` file holds; shows itself as a short text."""

    keras_version: str
    backend: str
    has_model: bool
    has_optimizer: bool
    layers: dict[str, list[tuple[str, tuple[int, ...]]]]
    # What in the architecture Keras 3 cannot rebuild (a time-major or CuDNN layer), one line each.
    cannot_rebuild: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        kind = "a whole model (architecture + weights)" if self.has_model else "weights only"
        lines = [f"written by Keras {self.keras_version} ({self.backend}): {kind}"
                 + (", with optimizer state" if self.has_optimizer else "")]
        for layer, weights in self.layers.items():
            shown = ", ".join(f"{name} {shape}" for name, shape in weights) or "-"
            lines.append("  " + textwrap.shorten(f"{layer}: {shown}", 96))
        if self.cannot_rebuild:
            lines.append("Keras 3 cannot rebuild it as it is (convert_legacy_h5 names the routes that work):")
            for problem in self.cannot_rebuild:
                lines += textwrap.wrap(problem, 98, initial_indent="  ! ", subsequent_indent="    ")
        return "\n".join(lines)


DAMAGED_H5 = "a damaged HDF5 file (truncated or corrupted: its signature is there, its contents are not): copy it again"


@contextlib.contextmanager
def open_h5(path: str | os.PathLike):
    """An ``h5py.File``, read-only; every way h5py fails on reading it becomes ``NotACheckpointError``.

    The error says what the path is instead and what reads it (``not_a_file_reason``); a zip
    declaring sizes too large to read raises ``ArchiveTooLargeError`` before a member is read.

    Example:
        >>> with open_h5("tests/data/tf215/functional_bn.h5") as file:
        ...     print(file.attrs["keras_version"])
        2.15.0
        >>> with open_h5("tests/data/tf215/savedmodel_keras2") as file:
        ...     pass
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'tests/data/tf215/savedmodel_keras2' is not ...: a SavedModel folder, ...
    """
    import h5py

    text = os.fspath(path)
    if not os.path.isfile(text):
        raise NotACheckpointError(text, not_a_file_reason(text))
    try:
        file = h5py.File(text, "r")
    except OSError:
        file = None
    if file is None:  # outside the except: a zip bomb's own error (ArchiveTooLargeError) stays as it is
        reason = _not_hdf5_reason(text)
        raise (DamagedH5Error if reason == DAMAGED_H5 else NotACheckpointError)(text, reason)
    try:
        with file:
            yield file
    except (OSError, RuntimeError, KeyError) as error:  # h5py on a damaged header, group or dataset
        raise DamagedH5Error(text, f"{DAMAGED_H5} ({first_line(error)})") from None


def h5_model_config(file: Any) -> Any:
    """The ``model_config`` attribute of an open legacy ``.h5``, parsed; ``DamagedH5Error`` when it is
    not a JSON model configuration (a flipped bit, a cut-off write).

    Example:
        >>> with open_h5("tests/data/tf215/functional_bn.h5") as file:
        ...     h5_model_config(file)["class_name"]
        'Functional'
    """
    try:
        config = json.loads(h5_texts([file.attrs["model_config"]])[0])
    except (ValueError, UnicodeDecodeError) as error:
        raise DamagedH5Error(file.filename, f"its model_config is not JSON ({first_line(error)}): "
                                            "copy the file again") from None
    if not isinstance(config, dict):
        raise DamagedH5Error(file.filename, "its model_config is not a model configuration (a JSON "
                                            f"{type(config).__name__}): copy the file again")
    return config


def not_a_file_reason(path: str) -> str:
    """What a path that is no file is (a checkpoint prefix, a SavedModel, a folder), and what reads it.

    Example:
        >>> not_a_file_reason("tests/data/tf215/ckpt_keras2_noopt/ckpt")
        'a TF-format checkpoint prefix (Keras 2 save_weights or tf.train.Checkpoint), not a legacy .h5: ...'
    """
    if os.path.isdir(path):
        if any(os.path.isfile(os.path.join(path, name)) for name in ("saved_model.pb", "saved_model.pbtxt")):
            return ("a SavedModel folder, not a legacy .h5: serve it with keras.layers.TFSMLayer(path, "
                    "call_endpoint='serving_default') (its outputs come as a dict)")
        if os.path.isfile(os.path.join(path, "checkpoint")) or any(n.endswith(".index") for n in os.listdir(path)):
            return ("a folder of TF-format checkpoints, not a legacy .h5: restore_keras2_checkpoint(path, twin) "
                    "reads its newest one into a Keras 3 twin")
        return "a folder, not a legacy .h5 file"
    if checkpoint_files_at(path):
        return ("a TF-format checkpoint prefix (Keras 2 save_weights or tf.train.Checkpoint), not a legacy .h5: "
                "restore it into a Keras 3 twin with restore_keras2_checkpoint(path, twin)")
    return "no such file"


def _not_hdf5_reason(path: str) -> str:
    """Why h5py cannot open ``path``, and the route that works for what it is."""
    with open(path, "rb") as file:
        head = file.read(8)
    if head.startswith(b"\x89HDF"):
        return DAMAGED_H5
    if head.startswith(b"PK"):
        import zipfile

        try:
            with zipfile.ZipFile(path) as archive:
                check_archive_sizes(archive, path)  # a zip bomb is refused before anything is inflated
                version = json.loads(archive.read("metadata.json")).get("keras_version", "?")
        except ArchiveTooLargeError:
            raise
        except (zipfile.BadZipFile, KeyError, ValueError):
            return "a zip file that is not a readable .keras file (truncated or another archive)"
        if version.startswith(("2.12", "2.13")):  # their layers keyed with gaps: dense, dense_2
            return (f"a .keras file written by Keras {version}, which neither keras.models.load_model nor "
                    "twin.load_weights(path) reads (its layers are numbered otherwise than Keras 3 counts): "
                    + _RENUMBER_ROUTE)
        if version.startswith("2."):
            return (f"a .keras file written by Keras {version}, which keras.models.load_model cannot rebuild: "
                    "build the model in Keras 3 code and read the weights with twin.load_weights(path)")
        return "a Keras 3 .keras file (a zip), not a legacy .h5: load it with keras.models.load_model"
    return "not an HDF5 file (a legacy Keras .h5 is HDF5)"


def describe_legacy_h5(path: str | os.PathLike) -> LegacyH5:
    """Read a legacy ``.h5`` written by Keras 2's ``model.save`` or ``save_weights``: version, layers, weights.

    For a whole model, ``cannot_rebuild`` names the layers Keras 3 cannot
    rebuild as they are (``time_major=True``, CuDNN layers); ``convert_legacy_h5``
    refuses those files and names the routes that work. Raises
    ``NotACheckpointError`` for a missing file, a file that is not HDF5, or a
    Keras 3 ``.weights.h5`` file (another layout).

    Example:
        >>> print(describe_legacy_h5("tests/data/tf215/functional_bn.h5"))
        written by Keras 2.15.0 (tensorflow): a whole model (architecture + weights), with optimizer state
          features: -
          dense: dense/kernel:0 (5, 6), dense/bias:0 (6,)
          bn: bn/gamma:0 (6,), bn/beta:0 (6,), bn/moving_mean:0 (6,), bn/moving_variance:0 (6,)
          relu: -
          logits: logits/kernel:0 (6, 2), logits/bias:0 (2,)
        >>> describe_legacy_h5("tests/data/tf215/functional_bn.weights.h5")
        Traceback (most recent call last):
        ...
        helpers.errors.NotACheckpointError: 'tests/data/tf215/functional_bn.weights.h5' is not a readable ...
    """
    with open_h5(path) as file:
        group = file["model_weights"] if "model_weights" in file else file
        if "layer_names" not in group.attrs:
            raise NotACheckpointError(os.fspath(path), new_layout_reason(file))
        layers = {}
        for layer in h5_texts(group.attrs["layer_names"]):
            names = h5_texts(group[layer].attrs.get("weight_names", []))
            layers[layer] = [(name, tuple(group[layer][name].shape)) for name in names]
        version = group.attrs.get("keras_version", file.attrs.get("keras_version", b"?"))
        backend = group.attrs.get("backend", file.attrs.get("backend", b"?"))
        problems = []
        if "model_config" in file.attrs:
            try:
                problems = rebuild_problems(json.loads(h5_texts([file.attrs["model_config"]])[0]))
            except ValueError:  # a damaged configuration: the weights are still listed
                pass
        return LegacyH5(
            keras_version=h5_texts([version])[0],
            backend=h5_texts([backend])[0],
            has_model="model_config" in file.attrs,
            has_optimizer="optimizer_weights" in file,
            layers=layers,
            cannot_rebuild=problems,
        )


def new_layout_reason(file: Any) -> str:
    """Who wrote an HDF5 file without ``layer_names`` (the ``.weights.h5`` layout), and what reads it.

    Example:
        >>> with open_h5("tests/data/tf215/functional_bn.weights.h5") as file:
        ...     print(new_layout_reason(file))
        not a legacy Keras .h5: a .weights.h5 file written by Keras 2.14/2.15 (tf.keras' new layout; ...
    """
    if OLD_LAYERS in file:
        if not renumbering(file[OLD_LAYERS]):
            return ("not a legacy Keras .h5: a .weights.h5 file of Keras 2.12-2.14 (layers under "
                    "'_layer_checkpoint_dependencies') numbered as Keras 3 counts: it loads into a twin with "
                    "model.load_weights(path)")
        return ("not a legacy Keras .h5: a .weights.h5 file in the layout of Keras 2.12/2.13, whose layers Keras 3 "
                "counts otherwise: " + _RENUMBER_ROUTE)
    if "vars" in file and "name" in file["vars"].attrs:  # Keras 3 records each object's name; Keras 2 does not
        return "not a legacy Keras .h5: a Keras 3 .weights.h5 file: it loads with model.load_weights(path)"
    return ("not a legacy Keras .h5: a .weights.h5 file written by Keras 2.14/2.15 (tf.keras' new layout; the "
            "file records no version): it loads into a twin with model.load_weights(path)")


# Keras 3's load_weights route for the weights of a Keras 2.12/2.13 .keras zip (helpers.keras2.zips).
_RENUMBER_ROUTE = ("renumber_keras2_zip_weights(path, 'm.weights.h5') writes its weights with Keras 3's layer "
                   "numbers, then twin.load_weights('m.weights.h5')")
OLD_LAYERS = "_layer_checkpoint_dependencies"  # where Keras 2.12 to 2.14 key a model's layers in a weights file


def renumbering(layers: Any) -> dict[str, str]:
    """``{key: new key}`` for the layer groups of a Keras 2 weights file whose numbers Keras 3 counts otherwise.

    Keras 3 keys the layers of each kind ``dense``, ``dense_1``, ``dense_2``, ... in
    model order; Keras 2.12/2.13 leave gaps (``dense``, ``dense_2``). The layers of
    each kind keep their order, numbered again without gaps.

    Example:
        >>> renumbering(["dense", "dense_2", "conv1d_3", "conv1d_1"])
        {'dense_2': 'dense_1', 'conv1d_1': 'conv1d', 'conv1d_3': 'conv1d_1'}
    """
    kinds: dict[str, list[str]] = {}
    for key in layers:
        kinds.setdefault(re.sub(r"_\d+$", "", key), []).append(key)
    moves = {}
    for kind, keys in kinds.items():
        keys.sort(key=lambda key: -1 if key == kind else int(key[len(kind) + 1:]))
        for number, key in enumerate(keys):
            new = f"{kind}_{number}" if number else kind
            if new != key:
                moves[key] = new
    return moves


def h5_texts(values: Any) -> list[str]:
    """HDF5 attribute values as text (h5py gives ``bytes`` or ``str``, by how they were written).

    Example:
        >>> h5_texts([b"dense", "dense_1"])
        ['dense', 'dense_1']
    """
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def model_from_h5(path: str, safe_mode: bool, custom_objects: dict | None = None) -> Any:
    """Rebuild the architecture a legacy ``.h5`` stores, with Keras 2 arguments patched (no weights yet).

    The configuration is rebuilt by ``model_from_keras2_config``: a layer Keras 3
    cannot rebuild raises ``LegacyModelError`` naming it and the route that works.
    A ``Lambda`` holding Python code is rebuilt only with ``safe_mode=False``;
    custom layers come in through ``custom_objects``. ``convert_legacy_h5`` reads
    the weights into it; ``helpers.keras_files`` asks it why ``load_model`` fails.

    Example:
        >>> model = model_from_h5("tests/data/tf215/bidirectional_gru.h5", safe_mode=True)
        >>> [type(layer).__name__ for layer in model.layers]
        ['InputLayer', 'Bidirectional', 'Dense']
        >>> model_from_h5("tests/data/tf215/time_major.h5", safe_mode=True)
        Traceback (most recent call last):
        ...
        helpers.errors.LegacyModelError: Keras 3 cannot rebuild the Keras 2 model in 'tests/data/tf215/time_major.h5':
          layer 'tm_lstm' (LSTM): time_major=True (inputs shaped (time, batch, features)) has no Keras 3 equivalent
          route: export it once with Keras 2 and serve it as one layer: ...
    """
    with open_h5(path) as file:
        config = h5_model_config(file)
    return model_from_keras2_config(config, path, safe_mode, custom_objects)
