"""Reader: a LiteRT / TensorFlow Lite flatbuffer (``.tflite``, ``TFL3`` at byte 4).

Example:
    >>> read_tflite("tests/data/litert/builtin.tflite").kind
    'tflite'
"""

from __future__ import annotations

import os

from helpers.errors import NotAModelFileError
from helpers.identify.answer import Identification, bytes_text, loading_code, not_model
from helpers.litert_check import litert_interpreter
from helpers.model_ops import UnsupportedOpsError, tflite_ops_needed

__all__ = ["read_tflite"]


def read_tflite(path: str) -> Identification:
    needs = route = ""
    try:
        litert_interpreter(path)  # a truncated flatbuffer is refused
    except UnsupportedOpsError as error:  # it verifies, but needs ops LiteRT has no kernel for
        needs, route = error.needs, error.route
    except ImportError:  # no ai-edge-litert here: the four magic bytes are all we know
        pass
    except NotAModelFileError as error:
        return not_model(path, error.reason)
    info = Identification(path, "tflite", holds={"bytes": bytes_text(os.path.getsize(path))})
    if needs:
        info.holds["ops beyond LiteRT's builtins"] = ", ".join(tflite_ops_needed(path))
        info.traps.append(f"{needs}. {route} (the code below fails at allocate_tensors)")
    info.traps.append("tf.lite.Interpreter is deprecated (it warns): the LiteRT interpreter is in the "
                      "ai-edge-litert package")
    info.how_to_load = loading_code(path, """
        try:
            from ai_edge_litert.interpreter import Interpreter  # pip install ai-edge-litert
        except ImportError:
            from tensorflow.lite import Interpreter  # deprecated, still in TF 2.21
        loaded = Interpreter(model_path=path)
        loaded.allocate_tensors()
        report = ("inputs " + ", ".join(f"{d['name']} {tuple(int(n) for n in d['shape'])}"
                                        for d in loaded.get_input_details()))
        """)
    return info
