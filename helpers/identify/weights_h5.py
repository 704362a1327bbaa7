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


def _mode(variables: list[tuple[str, tuple[int, ...]]]) -> str:
    """The quantization mode a layer's saved variables show (as ``helpers.shipped_models`` reads them)."""
    int8 = sum(dtype == "int8" for dtype, _ in variables)
    if int8 >= 2:  # int4: the packed kernel and its zero point
        return "int4"
    if int8 == 1:
        return "int8"
    if sum(shape == () for _, shape in variables) >= 3:  # float8: scales beside their amax histories
        return "float8"
    return "float"


def read_weights_h5(path: str, file: Any) -> Identification:
    counts = {"model": 0, "optimizer": 0}
    unstored: list[str] = []
    layers: dict[str, list[tuple[str, tuple[int, ...]]]] = {}

    def visit(name: str, item: Any) -> None:
        if hasattr(item, "shape"):
            counts["optimizer" if name.startswith("optimizer/") else "model"] += 1
            if "/vars/" in name and not name.startswith("optimizer/"):
                layers.setdefault(name.rsplit("/vars/", 1)[0], []).append((str(item.dtype), tuple(item.shape)))
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
    modes = sorted({mode for variables in layers.values() if (mode := _mode(variables)) != "float"})
    if modes:
        quantized = sum(_mode(variables) != "float" for variables in layers.values())
        info.holds["quantized layers"] = f"{quantized} ({', '.join(modes)})"
        info.traps.append(f"quantized ({', '.join(modes)}): {quantized} layer(s) hold more variables than a float "
                          "twin's, which fails ('expected 2 variables, but received ...'): build the twin "
                          f"unquantized, quantize it first: model.quantize({modes[0]!r}), then load_weights")
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
