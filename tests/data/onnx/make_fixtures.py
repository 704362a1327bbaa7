"""Write the ONNX file that tests/test_deploy_litert_ops.py reads (run from the repository root).

    python tests/data/onnx/make_fixtures.py

``relu_opset5.onnx``: one ``Relu`` node at opset 5 (IR version 3), built with the ``onnx``
helper API, as an exporter of 2017 wrote it. onnxruntime has no kernel for ``Relu`` before
its version 6 ("NOT_IMPLEMENTED : Could not find an implementation for Relu(1) node");
``onnx.version_converter.convert_version(model, 13)`` upgrades it and the result runs.
Writes MANIFEST.json with the versions, the input and the expected output.
"""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
INPUT = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]], "float32")


def main() -> None:
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu_opset5",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 5)], ir_version=3,
                              producer_name="course fixture")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "relu_opset5.onnx"))
    manifest = {"relu_opset5": {
        "path": "relu_opset5.onnx", "kind": "onnx/old-opset", "op": "Relu", "opset": 5,
        "description": "one Relu node at opset 5 (IR version 3), built with the onnx helper API",
        "written_by": f"onnx {onnx.__version__} (helper API)",
        "input": INPUT.tolist(), "output": np.maximum(INPUT, 0).tolist(),
        "notes": ("onnxruntime 1.32.0: NOT_IMPLEMENTED, no kernel for Relu(1); "
                  "onnx.version_converter.convert_version(model, 13) gives a model that runs")}}
    with open(os.path.join(HERE, "MANIFEST.json"), "w") as file:
        json.dump(manifest, file, indent=1)
        file.write("\n")


if __name__ == "__main__":
    main()
