"""Checks for notebook 14 (a model without TensorFlow: frozen graphs, LiteRT).

Each check builds its own Keras model (non-zero biases, BatchNormalization with
moved statistics, Dropout, names other than the notebook's) in a fresh
temporary folder, calls the learner's function, and proves the answer by outputs.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError

from helpers.checks import CheckFailed, LearnerCodeError, exercise_check, require
from helpers.checks.toolkit import call_answer, calls_recorded
from helpers.deploy import freeze_graph, quietly

__all__ = ["check_freeze_for_serving", "check_frozen_callable", "check_float16_litert"]

_VARIABLE_OPS = {"VarHandleOp", "VariableV2", "Variable", "ReadVariableOp"}


def _model(n_in: int, n_out: int, seed: int, input_name: str, width: int = 8) -> keras.Model:
    """Dense -> BatchNormalization (moved statistics) -> Dropout -> Dense, biases non-zero."""
    rng = np.random.default_rng(seed)
    inputs = keras.Input((n_in,), name=input_name)
    hidden = keras.layers.Dense(width, activation="relu", name="hidden")
    norm = keras.layers.BatchNormalization(name="norm")
    head = keras.layers.Dense(n_out, name="head")
    outputs = head(keras.layers.Dropout(0.4, name="drop")(norm(hidden(inputs))))
    model = keras.Model(inputs, outputs, name=f"model_{seed}")
    for variable in model.weights:
        values = rng.uniform(0.2, 1.0, size=variable.shape).astype("float32")
        variable.assign(values * rng.choice([-1.0, 1.0], size=variable.shape) if "kernel" in variable.path
                        else values)
    return model


# Likely causes of errors met in this chapter's exercises (the shared list has generic ones).
_CAUSES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"AssignVariableOp was passed .* incompatible with expected resource"),
     "with training=True, Dropout writes its random-state variable, and a frozen or converted "
     "graph has no variables: trace model(x, training=False)."),
    (re.compile(r"inference_input_type and inference_output_type must be tf.float32"),
     "float16 quantization keeps the input and output float32: leave "
     "inference_input_type and inference_output_type unset."),
    (re.compile(r"depends transitively on placeholder|must feed a value for placeholder"),
     "the output reads a placeholder you do not feed (this graph has two inputs): feed the "
     "tensor input_name names."),
    (re.compile(r"Could not translate MLIR to FlatBuffer"),
     "the model computes in float16; keep the Keras model float32 and let the converter store "
     "float16 weights."),
]
# Every hint is prefixed by "Exercise 14.N: " (the framework's wrapper); the whole must fit in 300.
_LIMIT = 300 - len("Exercise 14.1: ")


@contextlib.contextmanager
def _chapter_causes() -> Iterator[None]:
    """Give the learner-code hint this chapter's likely cause where one of ``_CAUSES`` matches.

    Every learner-code hint (a cause matched or not) is cut to fit 300 characters with
    the wrapper's "Exercise 14.N: " prefix.
    """
    from helpers.checks import learner_error_hint

    try:
        yield
    except CheckFailed:
        raise
    except NotImplementedError as error:
        if not error.args:  # the exercise's stub, `raise NotImplementedError()`: the framework says so
            raise
        raise LearnerCodeError(_fit(learner_error_hint(error, frozenset()))) from error
    except Exception as error:  # noqa: BLE001 - every error becomes a hint that fits
        text = f"{type(error).__name__}: {error}"
        cause = next((cause for pattern, cause in _CAUSES if pattern.search(text)), None)
        hint = learner_error_hint(error, frozenset())
        raise LearnerCodeError(_with_cause(hint, cause) if cause else _fit(hint)) from error


def _fit(text: str, limit: int = _LIMIT) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters (an ellipsis marks the cut)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _with_cause(hint: str, cause: str, limit: int = _LIMIT) -> str:
    """The framework's hint with this chapter's cause, within ``limit`` characters.

    The learner's line stays; TensorFlow's own message (which can list a whole path of ops) keeps
    only the lines that still fit.
    """
    where, *message = hint.split("\nLikely cause: ")[0].splitlines()
    if message and message[0].startswith("    "):  # the learner's own line of code
        where, message = f"{where}\n{message[0]}", message[1:]
    ending = f"\nLikely cause: {cause}"
    kept = []
    for line in message:
        if len(where) + sum(len(k) + 1 for k in kept) + len(line) + 1 + len(ending) > limit:
            break
        kept.append(line)
    return _fit("\n".join([where, *kept]) + ending, limit)


def _sessions_counted() -> contextlib.AbstractContextManager[list[int]]:
    """Count the tf.compat.v1 sessions made in the block (the list's length)."""
    from tensorflow.python.client import session as session_module

    return calls_recorded(session_module.BaseSession, "__init__", lambda *args, **kwargs: 1)


def _batch(n: int, n_in: int, seed: int) -> np.ndarray:
    return np.random.default_rng(100 + seed).normal(size=(n, n_in)).astype("float32")


def _expected(model: keras.Model, batch: np.ndarray) -> np.ndarray:
    return np.asarray(model(batch, training=False))


# --------------------------------------------------------------------------- 14.1


@exercise_check("14.1")
def check_freeze_for_serving(freeze_for_serving: Callable[[keras.Model, str], str]) -> str:
    from helpers.deploy import load_frozen_graph

    for seed, (n_in, n_out, input_name) in enumerate([(5, 3, "readings"), (3, 2, "sensor_values")], start=1):
        model = _model(n_in, n_out, seed, input_name)
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, f"frozen {seed}.pb")
            with _chapter_causes():
                name = freeze_for_serving(model, path)
            require(isinstance(name, str), f"freeze_for_serving returned {type(name).__name__}; return the "
                                           "output tensor's name, a str such as 'Identity:0'")
            require(os.path.isfile(path), "no file at `path`: write the frozen GraphDef there (one file)")
            graph_def = tf.compat.v1.GraphDef()
            call_answer(lambda: graph_def.ParseFromString(open(path, "rb").read()),
                        "the file is not a binary GraphDef: a text .pbtxt? Write "
                        "graph_def.SerializeToString() (tf.io.write_graph(..., as_text=False))", DecodeError)
            nodes = {node.name: node for node in graph_def.node}
            variables = sorted({node.op for node in graph_def.node if node.op in _VARIABLE_OPS})
            require(not variables, f"the graph still reads variables ({', '.join(variables)}): it is not "
                                   "frozen; convert_variables_to_constants_v2 turns them into constants")
            placeholders = [node for node in graph_def.node if node.op == "Placeholder"]
            require(len(placeholders) == 1, f"the graph has {len(placeholders)} placeholders; it should take "
                                            "exactly the model's one input")
            (placeholder,) = placeholders
            dtype = tf.dtypes.as_dtype(placeholder.attr["dtype"].type)
            require(dtype == tf.float32, f"the input is {dtype.name}; the prompt says float32 "
                                         "(the dtype of the TensorSpec you trace with)")
            dims = [dim.size for dim in placeholder.attr["shape"].shape.dim]
            require(bool(dims) and dims[0] == -1, f"the input's shape is fixed at {dims}: a frozen graph "
                                                  "keeps its traced shape; trace with batch size None")
            require(name not in (path, os.path.basename(path)) and not name.endswith(".pb"),
                    "you returned the file's path: return the name of the output tensor in the file, "
                    "such as 'Identity:0' (the frozen function's .outputs hold it)")
            require(":" in name or name not in nodes,
                    f"{name!r} is an op name; return a tensor name (op name, ':', output index)")
            require(":" in name, f"{name!r} is no tensor of the frozen graph (a Keras name?): return a "
                                 "tensor name such as 'Identity:0' from the frozen function's .outputs")
            require(name.split(":")[0] in nodes, f"{name!r} is not in the frozen graph; the frozen "
                                                 "function's .outputs hold the names")
            require(name.split(":")[0] != placeholder.name, f"{name!r} is the input; return the output's name")
            run = load_frozen_graph(path, f"{placeholder.name}:0", name)
            for rows in (7, 1):
                batch = _batch(rows, n_in, seed)
                got, want = np.asarray(run(batch)), _expected(model, batch)
                require(got.shape == want.shape, f"the output has shape {got.shape}, the model's {want.shape}")
                require(np.allclose(got, want, atol=1e-5),
                        "the frozen graph's answers differ from model(x, training=False): freeze the "
                        "inference function of this model, with its trained weights")
    return ("each .pb is a binary frozen GraphDef with one float32 input of any batch size, and the named "
            "output equals model(x, training=False)")


# --------------------------------------------------------------------------- 14.2


@exercise_check("14.2")
def check_frozen_callable(frozen_callable: Callable[[str, str, str], Callable[[np.ndarray], np.ndarray]]) -> str:
    # Two placeholders in each graph: the output asked for reads the second in the first graph and
    # the first in the second, so feeding anything but input_name shows.
    # The outputs asked for in the last two graphs are int64 and float64: "of the tensor's dtype".
    cases = [(("temperatures", "humidity"), "aux", 4, 1), (("pixels_flat", "mask"), "score", 6, 0),
             (("levels", "gain"), "label", 5, 0), (("counts", "offsets"), "score64", 3, 1)]
    for seed, ((first, second), wanted, n_in, aux_reads) in enumerate(cases, start=1):
        model = _model(n_in, 3, seed, first)
        aux = keras.layers.Dense(2, bias_initializer="ones", name="aux_head")
        aux.build((None, n_in))
        specs = [tf.TensorSpec([None, n_in], tf.float32, name=name) for name in (first, second)]
        function = tf.function(lambda *xs: {
            "score": model(xs[0], training=False), "aux": aux(xs[aux_reads]),
            "label": tf.argmax(model(xs[0], training=False), axis=-1),
            "score64": tf.cast(model(xs[0], training=False), tf.float64)}, input_signature=specs)
        with tempfile.TemporaryDirectory() as scratch:
            frozen = freeze_graph(function, os.path.join(scratch, "given [v2].pb"))
            outputs = dict(zip(["aux", "label", "score", "score64"], frozen.outputs))  # sorted keys
            input_name = frozen.inputs[aux_reads if wanted == "aux" else 0]
            before = open(frozen.path, "rb").read()
            with _sessions_counted() as sessions, _chapter_causes():
                run = frozen_callable(frozen.path, input_name, outputs[wanted])
                require(callable(run), f"frozen_callable returned {type(run).__name__}; return a function")
                for call, rows in enumerate((5, 1, 5)):
                    batch = _batch(rows, n_in, seed + 10 * call)
                    scores = np.asarray(model(batch, training=False))
                    want = {"score": scores, "aux": np.asarray(aux(batch)), "label": np.argmax(scores, -1),
                            "score64": scores.astype("float64")}[wanted]
                    got = run(batch)
                    require(not sessions, "your code makes a tf.compat.v1.Session: the exercise asks for "
                                          "TF2 (wrap_function + import_graph_def, then prune)")
                    require(isinstance(got, np.ndarray), f"the function returned {type(got).__name__}; "
                                                         "return a NumPy array (.numpy())")
                    require(got.ndim == want.ndim, f"the answer has shape {got.shape}, expected {want.shape}"
                                                   f": {_ndim_hint(got.ndim, want.ndim)}")
                    require(got.shape[0] == want.shape[0],
                            f"the answer has shape {got.shape}, expected {want.shape}: return the output "
                            "of the whole batch given at each call (no rows dropped, nothing kept from a "
                            "call before)")
                    require(got.shape == want.shape, f"the answer has shape {got.shape}: it is not the tensor "
                                                     f"{outputs[wanted]!r}; fetch the output_name you are given")
                    require(got.dtype == want.dtype, f"the answer is {got.dtype}, the tensor "
                                                     f"{outputs[wanted]!r} is {want.dtype}: return its value "
                                                     "as it is (.numpy()), without a cast")
                    require(np.allclose(got, want, atol=1e-5),
                            f"the answer is not the tensor {outputs[wanted]!r} for this batch: feed "
                            "input_name and fetch the output_name you are given, at each call")
            require(open(frozen.path, "rb").read() == before, "the .pb file was changed: only read it")
    return ("the callables feed the named input and fetch the named output of each two-input frozen "
            "graph, without a Session, as NumPy arrays of the tensor's dtype (float32, float64, int64) "
            "for any batch size")


def _ndim_hint(ndim: int, want: int) -> str:
    """Why an answer has ``ndim`` axes where the tensor has ``want``."""
    if ndim == 0:
        return "no tensor value came back: fetch a tensor name ('op:0'), not an op name"
    if ndim > want:
        return "an extra leading axis: prune(..., [name]) returns a list; fetch the name itself"
    return "keep the batch axis, even for one row"


# --------------------------------------------------------------------------- 14.3


def _litert_answer(content: bytes, batch: np.ndarray) -> tuple[np.ndarray, set[str], Any]:
    from ai_edge_litert.interpreter import Interpreter

    with quietly():
        interpreter = Interpreter(model_content=content)
        detail = interpreter.get_input_details()[0]
        interpreter.resize_tensor_input(detail["index"], batch.shape)
        interpreter.allocate_tensors()
    dtypes = {np.dtype(t["dtype"]).name for t in interpreter.get_tensor_details()
              if t["dtype"] is not None and np.dtype(t["dtype"]).kind in "fiu"}
    if detail["dtype"] != np.float32:
        return np.empty(0), dtypes, detail["dtype"]
    interpreter.set_tensor(detail["index"], batch)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"]), dtypes, detail["dtype"]


def _compile_state(model: keras.Model) -> tuple[Any, ...]:
    """Whether and how ``model`` is compiled: the optimizer object, its settings and variables, the loss."""
    optimizer = getattr(model, "optimizer", None)
    if not model.compiled or optimizer is None:
        return (model.compiled, id(optimizer))
    return (True, id(optimizer), repr(model.get_compile_config()),
            [(v.path, v.numpy().tobytes()) for v in optimizer.variables])


def _layer_settings(model: keras.Model) -> list[tuple[str, dict[str, str]]]:
    return [(layer.name, {key: repr(value) for key, value in layer.get_config().items()})
            for layer in model.layers]


def _changed_settings(before: list[tuple[str, dict[str, str]]], model: keras.Model) -> list[str]:
    """Each layer whose configuration changed, with the keys that changed ("layer 'norm': momentum changed")."""
    changed = []
    for (name, old), (_, new) in zip(before, _layer_settings(model)):
        keys = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
        if keys:
            changed.append(f"layer {name!r}: {', '.join(keys[:3])} changed")
    return changed


@exercise_check("14.3")
def check_float16_litert(float16_litert: Callable[[keras.Model], bytes]) -> str:
    policy = keras.config.dtype_policy().name
    for seed, (n_in, input_name) in enumerate([(6, "signal"), (4, "row")], start=1):
        model = _model(n_in, 3, seed, input_name, width=256)  # big enough for int8 weights (1024+)
        if seed == 1:  # one compiled model, one not: converting must leave either as it was
            model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
        weights = [w.numpy().copy() for w in model.weights]
        flags = [model.trainable] + [layer.trainable for layer in model.layers]
        compiled, settings = _compile_state(model), _layer_settings(model)
        batch = _batch(5, n_in, seed)
        want = _expected(model, batch)  # before the learner's function runs
        with quietly(), _chapter_causes():
            content = float16_litert(model)
        require(isinstance(content, (bytes, bytearray)), f"float16_litert returned {type(content).__name__}; "
                                                         "return the converted model's bytes (convert())")
        require(bytes(content[4:8]) == b"TFL3", "the bytes are not a LiteRT flatbuffer (no 'TFL3' tag)")
        require(all(a.dtype == w.numpy().dtype and np.array_equal(a, w.numpy())
                    for a, w in zip(weights, model.weights)),
                "the model's weights changed: converting must leave the model as it was")
        require(flags == [model.trainable] + [layer.trainable for layer in model.layers],
                "the model's trainable flags changed (model.trainable = False?): converting needs no "
                "change to the model; leave it as it was")
        require(keras.config.dtype_policy().name == policy,
                f"the global dtype policy is now {keras.config.dtype_policy().name!r}, was {policy!r}: "
                "float16 quantization is the converter's setting; leave Keras' policy as it was")
        require(_compile_state(model) == compiled,
                "the model's compile state changed (compile(), its optimizer or loss): converting needs "
                "no compile; leave the model as it was")
        changed = _changed_settings(settings, model)
        require(not changed, f"{'; '.join(changed[:2])}: converting with training=False needs no change; "
                             "leave the model as it was")
        require(np.allclose(_expected(model, batch), want, rtol=0, atol=1e-6),
                "the model answers differently after your function ran: leave it as it was")
        got, dtypes, input_dtype = _litert_answer(bytes(content), batch)
        require(np.dtype(input_dtype) == np.float32, f"the model takes {np.dtype(input_dtype).name} input; "
                                                     "float16 quantization keeps float32 inputs")
        require("float16" in dtypes or "int8" not in dtypes,
                "the weights are int8: that is dynamic-range quantization; float16 needs "
                "target_spec.supported_types = [tf.float16] as well")
        require("float16" in dtypes, "no float16 tensor in the file: the weights stayed float32. Set "
                                     "optimizations = [tf.lite.Optimize.DEFAULT] and supported_types")
        require(got.shape == want.shape, f"the output has shape {got.shape}, the model's {want.shape}")
        require(bool(np.all(np.isfinite(got))) and np.allclose(got, want, atol=2e-2, rtol=1e-2),
                "the file's answers differ from model(x, training=False) by more than float16 rounding: "
                "convert this model (from_keras_model, or a SavedModel) and compare outputs")
    return ("each answer is a LiteRT flatbuffer with float16 weights and float32 input whose outputs match "
            "the model's within 2e-2")
