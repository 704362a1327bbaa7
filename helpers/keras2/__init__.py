"""Carry Keras 2 (``tf.keras`` before TF 2.16, now ``tf-keras``) models and checkpoints into Keras 3.

Keras 2 and Keras 3 save the same weights under different object paths: a
Keras 2 functional model writes ``layer_with_weights-1/kernel``, Keras 3
looks for ``_operations/2/_kernel``. ``tf.train.Checkpoint.restore`` then
restores nothing, or only the variables whose paths happen to agree, and
raises nothing. The recipes here pair the two object graphs explicitly and
say what did not match::

    report = restore_keras2_checkpoint("k2/weights", model, drop_optimizer=True)
    report = restore_keras2_checkpoint("k2/train-3", model, optimizer=keras.optimizers.Adam())
    convert_legacy_h5("k2/model.h5", "k3/model.keras")       # a Keras 2 .h5, re-saved by Keras 3
    renumber_keras2_zip_weights("k213/m.keras", "k3/m.weights.h5")  # a Keras 2.12/2.13 .keras, for load_weights
    run = run_keras2("model = keras.models.load_model('k2/sm'); model.save_weights('k3/m.weights.h5')")

``run_keras2`` runs Keras 2 code (``tf-keras`` with ``TF_USE_LEGACY_KERAS=1``)
in a subprocess: the one-time bridge for files only Keras 2 can open.
None of the recipes overwrites an existing file.

One module per kind of file, each importing only those below it:

- ``checkpoints``: Keras 2 TF-format checkpoints (``restore_keras2_checkpoint``,
  ``keras2_key_map``, ``keras3_checkpoint_keys``);
- ``convert``: a legacy ``.h5`` re-saved for Keras 3 (``convert_legacy_h5``);
- ``zips``: Keras 2.12/2.13 ``.keras`` zips (``renumber_keras2_zip_weights``);
- ``export``: Keras 3 to Keras 2 (``export_for_keras2``, ``keras2_model_config``, ``tf215_reads``);
- ``run``: Keras 2 code in a subprocess (``run_keras2``);
- ``h5``: opening and describing legacy ``.h5`` files, rebuilding their architecture
  (``describe_legacy_h5``, ``model_from_h5``), and what a file that is not one is;
- ``legacy``: Keras 2 configurations in Keras 3 (``legacy_custom_objects``, the patched classes);
- ``common``: the small bits several of them share.

``from helpers.keras2 import X`` works for every recipe, report class and error named here.
"""

from __future__ import annotations

from helpers.errors import (
    CheckpointMismatchError,
    DamagedH5Error,
    Keras2ExportError,
    Keras2MismatchError,
    Keras2RunError,
    LegacyModelError,
    ModelNotBuiltError,
    NotACheckpointError,
    NotAKeras2CheckpointError,
    NotWritableError,
)
from helpers.keras2.checkpoints import (
    Keras2RestoreReport,
    keras2_key_map,
    keras3_checkpoint_keys,
    restore_keras2_checkpoint,
)
from helpers.keras2.convert import convert_legacy_h5
from helpers.keras2.export import Keras2Export, export_for_keras2, keras2_model_config, tf215_reads
from helpers.keras2.h5 import LegacyH5, describe_legacy_h5, model_from_h5
from helpers.keras2.legacy import legacy_custom_objects
from helpers.keras2.run import KERAS2_ENVIRONMENT, Keras2Run, run_keras2
from helpers.keras2.zips import renumber_keras2_zip_weights

__all__ = [
    "KERAS2_ENVIRONMENT",
    "CheckpointMismatchError",
    "DamagedH5Error",
    "Keras2Export",
    "Keras2ExportError",
    "Keras2MismatchError",
    "Keras2RestoreReport",
    "Keras2Run",
    "Keras2RunError",
    "LegacyH5",
    "LegacyModelError",
    "ModelNotBuiltError",
    "NotACheckpointError",
    "NotAKeras2CheckpointError",
    "NotWritableError",
    "convert_legacy_h5",
    "describe_legacy_h5",
    "export_for_keras2",
    "keras2_key_map",
    "keras2_model_config",
    "keras3_checkpoint_keys",
    "legacy_custom_objects",
    "model_from_h5",
    "renumber_keras2_zip_weights",
    "restore_keras2_checkpoint",
    "run_keras2",
    "tf215_reads",
]
