"""Write the LiteRT files that tests/test_deploy_litert_ops.py reads (run from the repository root).

    python tests/data/litert/make_fixtures.py

Each is a 2x2-matrix function converted with TensorFlow's own converter:
- ``select_tf_ops.tflite``: ``tf.linalg.inv`` with ``SELECT_TF_OPS`` (the op becomes the
  custom op ``FlexMatrixInverse``, which only an interpreter with the Flex delegate runs);
- ``custom_op.tflite``: ``tf.linalg.svd`` with ``allow_custom_ops=True`` and builtins only
  (the op becomes the custom op ``Svd``, which no interpreter registers by default);
- ``builtin.tflite``: ``tf.linalg.matmul``, builtins only (runs everywhere).
Writes MANIFEST.json with the versions, the ops each file needs and its expected output.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = [tf.TensorSpec((2, 2), tf.float32, name="matrix")]
MATRIX = np.array([[2.0, 1.0], [1.0, 3.0]], "float32")


def convert(function, select: bool = False, custom: bool = False) -> bytes:
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], function)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS] + (
        [tf.lite.OpsSet.SELECT_TF_OPS] if select else [])
    converter.allow_custom_ops = custom
    return converter.convert()


@tf.function(input_signature=SPEC)
def inverse(matrix):
    return tf.linalg.inv(matrix)


@tf.function(input_signature=SPEC)
def singular_values(matrix):
    return tf.linalg.svd(matrix, compute_uv=False)


@tf.function(input_signature=SPEC)
def square(matrix):
    return tf.linalg.matmul(matrix, matrix)


def main() -> None:
    files = {
        "select_tf_ops": (inverse, dict(select=True), ["FlexMatrixInverse"], "tflite/select-tf-ops",
                          "tf.linalg.inv converted with SELECT_TF_OPS"),
        "custom_op": (singular_values, dict(custom=True), ["Svd"], "tflite/custom-op",
                      "tf.linalg.svd(compute_uv=False) converted with allow_custom_ops=True"),
        "builtin": (square, {}, [], "tflite/builtin", "tf.linalg.matmul(x, x) converted with builtins only"),
    }
    manifest = {}
    for name, (function, options, ops, kind, description) in files.items():
        data = convert(function, **options)
        with open(os.path.join(HERE, f"{name}.tflite"), "wb") as file:
            file.write(data)
        manifest[name] = {
            "path": f"{name}.tflite", "kind": kind, "description": description,
            "written_by": f"tensorflow {tf.__version__} (TFLiteConverter), python {sys.version.split()[0]}",
            "custom_ops": ops, "input": MATRIX.tolist(), "output": np.asarray(function(MATRIX)).tolist(),
            "notes": ("runs in tf.lite.Interpreter and ai_edge_litert's Interpreter" if not ops else
                      "neither tf.lite.Interpreter (TF 2.21) nor ai_edge_litert 2.3.0 runs it: "
                      "allocate_tensors fails (" + ("Flex delegate" if ops[0].startswith("Flex")
                                                    else "unresolved custom op") + ")")}
    with open(os.path.join(HERE, "MANIFEST.json"), "w") as file:
        json.dump(manifest, file, indent=1)
        file.write("\n")


if __name__ == "__main__":
    main()
