"""Reader: Keras ``.weights.h5`` (``save_weights`` in the Keras 3 layout; Keras 2.12-2.15 too).

Called by ``helpers.identify.hdf5`` with the open file: counts model and optimizer values and
refuses datasets that declare a shape but store nothing. Read with h5py, no TensorFlow.

Example:
    >>> import h5py
    >>> with h5py.File("tests/data/tf215/functional_bn.weights.h5", "r") as file:
    ...     read_weights_h5("tests/data/tf215/functional_bn.weights.h5", file).kind
    'weights-h5'
"""

from __future__ import annotations

from typing import Any

from helpers.identify.answer import Identification, loading_code

__all__ = ["read_weights_h5"]


def read_weights_h5(path: str, file: Any) -> Identification:
    counts = {"model": 0, "optimizer": 0}
    unstored: list[str] = []
    int8: list[str] = []

    def visit(name: str, item: Any) -> None:
        if hasattr(item, "shape"):
            counts["optimizer" if name.startswith("optimizer/") else "model"] += 1
            if str(item.dtype) == "int8" and not name.startswith("optimizer/"):
                int8.append(name)
            if item.size and item.id.get_storage_size() == 0:  # declared, never written
                unstored.append(f"{name} {tuple(item.shape)}")

    file.visititems(visit)
    info = Identification(path, "weights-h5", holds={"weights": counts["model"],
                                                     "optimizer state": "optimizer" in file and
                                                     len(file["optimizer"]) > 0})
    if unstored:
        info.blocked = (f"values not stored: {len(unstored)} dataset(s) declare a shape but hold no "
                        f"data ({', '.join(unstored[:2])}): not weights Keras saved")
        info.traps.append(info.blocked)
    if counts["optimizer"]:
        info.holds["optimizer values"] = counts["optimizer"]
    info.traps.append("weights only: the architecture is not in the file; load_weights into a model "
                      "built with the same layers")
    if int8:
        info.holds["int8 weights"] = len(int8)
        info.traps.append(f"quantized: {len(int8)} int8 kernel(s) with their scales; an unquantized twin "
                          "fails ('expected 2 variables, but received 3'): quantize the twin first: "
                          "model.quantize('int8') (or the mode it was saved with), then load_weights")
    if "optimizer" in file and "inner_optimizer" in file["optimizer"]:
        info.holds["loss scale optimizer"] = True
        info.traps.append("mixed precision: the optimizer state of a LossScaleOptimizer (loss scale, step "
                          "counter, inner optimizer): compile the twin under "
                          "keras.mixed_precision.set_dtype_policy('mixed_float16') and build its optimizer "
                          "before load_weights")
    if "optimizer" in file:
        info.traps.append("load_weights into a compiled model whose optimizer is not built drops the "
                          "optimizer state with only a warning: optimizer.build(model.trainable_variables) "
                          "first")
    info.how_to_load = loading_code(path, """
        from helpers.keras_files import describe_keras_file
        # Weights only: build the model in Keras 3 code, then model.load_weights(path).
        # helpers.keras_files.missing_from_file(model, path) lists what the file lacks.
        loaded = describe_keras_file(path)
        optimizer = sum(w.path.startswith("optimizer/") for w in loaded.weights)
        report = (f"{len(loaded) - optimizer} model weights and {optimizer} optimizer values, "
                  f"{loaded.total_bytes} bytes")
        """)
    return info
