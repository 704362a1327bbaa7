"""A model without TensorFlow's Python code: frozen graphs, LiteRT and ONNX files, proved by outputs.

Three recipes, for chapter 14:

* ``freeze_graph(model_or_function, path)`` writes one binary GraphDef ``.pb``
  whose variables have become constants (``convert_variables_to_constants_v2``);
* ``load_frozen_graph(path, inputs, outputs)`` turns such a ``.pb`` into a
  callable in TF2 (``wrap_function`` + ``import_graph_def`` + ``prune``), with an
  error naming the tensors that do not exist;
* ``compare_runtimes(model, inputs, files)`` runs a Keras model and every
  converted file (SavedModel folder, frozen ``.pb``, ``.tflite``, ``.onnx``) on
  one batch and tabulates size, largest output difference and latency ratio.

``quietly()`` silences what converters print (LiteRT's "Saved artifact at
'/tmp/...'", tf2onnx's log lines, the XNNPACK banner) and keeps the log lines
it caught, so a notebook can show the ones that matter.

Example:
    >>> import os, tempfile
    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    >>> frozen = freeze_graph(model, os.path.join(tempfile.mkdtemp(), "model.pb"))
    >>> run = load_frozen_graph(frozen.path, frozen.inputs, frozen.outputs)
    >>> run(np.ones((2, 3), "float32")).shape
    (2, 2)
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf
from google.protobuf.message import DecodeError
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from helpers.errors import (
    FreezeError,
    NotAModelFileError,
    StructureMismatchError,
    TensorNotFoundError,
    WouldOverwriteError,
)
from helpers.files import glob_safe_folder, path_text, refuse_existing
from helpers.litert_check import litert_interpreter, refuse_litert_ops
from helpers.model_ops import (
    ONNX_DOMAIN_ROUTE, ONNX_ROUTE, UnsupportedOpsError, onnx_not_implemented, onnx_op_unregistered)

__all__ = [
    "FreezeError",
    "FrozenGraph",
    "FrozenGraphFunction",
    "GraphDefCheck",
    "NotAModelFileError",
    "RuntimeComparison",
    "RuntimeRow",
    "TensorNotFoundError",
    "UnsupportedOpsError",
    "WouldOverwriteError",
    "compare_runtimes",
    "check_graph_def",
    "freeze_graph",
    "load_frozen_graph",
    "model_file_kind",
    "quietly",
]

# Ops that write to a variable: a frozen graph has no variables left to write to.
_STATE_WRITERS = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "ResourceApply",
                  "ResourceScatter", "ResourceStridedSliceAssign")
_VARIABLE_OPS = {"VarHandleOp", "VariableV2", "Variable", "VarIsInitializedOp"}
KINDS = ("SavedModel folder", "frozen GraphDef (.pb)", "LiteRT (.tflite)", "ONNX (.onnx)")


# --------------------------------------------------------------------------- quiet converters


@contextlib.contextmanager
def quietly() -> Iterator[list[str]]:
    """Silence converters' prints, log lines, warnings and native banners; yield the log lines caught.

    Python's ``sys.stdout``/``sys.stderr`` and the process's file descriptors 1
    and 2 (where C++ code prints) are redirected for the block; log records of
    ``tf2onnx`` and ``absl`` are collected as ``"LEVEL: message"`` lines.

    Example:
        >>> with quietly() as lines:
        ...     print("Saved artifact at '/tmp/x'")
        ...     logging.getLogger("tf2onnx.tfonnx").error("Unsupported ops: Counter({'Svd': 1})")
        >>> lines
        ["ERROR: Unsupported ops: Counter({'Svd': 1})"]
    """
    lines: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(f"{record.levelname}: {record.getMessage()}")

    handler = _Collect(level=logging.WARNING)
    loggers = [logging.getLogger(name) for name in ("tf2onnx", "absl", "tensorflow")]
    saved = [(logger, logger.level, logger.propagate, list(logger.handlers)) for logger in loggers]
    for logger in loggers:
        logger.handlers = [handler]
        logger.propagate = False
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                yield lines
    finally:
        for fd, copy in zip((1, 2), saved_fds):
            os.dup2(copy, fd)
            os.close(copy)
        for logger, level, propagate, handlers in saved:
            logger.setLevel(level)
            logger.propagate = propagate
            logger.handlers = handlers


# --------------------------------------------------------------------------- freezing


@dataclass(frozen=True)
class FrozenGraph:
    """What ``freeze_graph`` wrote: the file and the tensor names to feed and fetch."""

    path: str
    inputs: list[str]
    outputs: list[str]


def _concrete_function(model_or_function: Any, input_signature: Sequence[tf.TensorSpec] | None):
    import keras

    if isinstance(model_or_function, tf.types.experimental.ConcreteFunction):
        return model_or_function
    if isinstance(model_or_function, keras.Model):
        model = model_or_function
        if not model.built:
            raise FreezeError("the model is not built (it has no weights yet)",
                              "call it once on a batch, or build it, then freeze")
        if input_signature is None:
            try:
                input_signature = [tf.TensorSpec(t.shape, t.dtype, name=t.name.split(":")[0])
                                   for t in model.inputs]
            except (AttributeError, ValueError):
                raise FreezeError("a subclassed model does not say what its input looks like",
                                  "pass input_signature=[tf.TensorSpec([None, ...], tf.float32)]") from None
        specs = list(input_signature)
        if len(specs) == 1:
            function = tf.function(lambda x: model(x, training=False))
        else:
            function = tf.function(lambda *xs: model(list(xs), training=False))
        return function.get_concrete_function(*specs)
    if hasattr(model_or_function, "get_concrete_function"):
        if input_signature is not None:
            return model_or_function.get_concrete_function(*input_signature)
        if getattr(model_or_function, "input_signature", None) is None:
            raise FreezeError("a tf.function without input_signature has no shapes to freeze",
                              "pass input_signature=[tf.TensorSpec(...)] or a concrete function")
        return model_or_function.get_concrete_function()
    raise TypeError("freeze_graph takes a keras.Model, a tf.function or a concrete function, got "
                    f"{type(model_or_function).__name__}")


def _state_writers(graph_def: tf.compat.v1.GraphDef) -> list[str]:
    nodes = list(graph_def.node) + [node for function in graph_def.library.function
                                    for node in function.node_def]
    return sorted({node.op for node in nodes if node.op.startswith(_STATE_WRITERS)})


def freeze_graph(model_or_function: Any, path: str | os.PathLike,
                 input_signature: Sequence[tf.TensorSpec] | None = None) -> FrozenGraph:
    """Write the inference graph of a Keras model or a TF function as one binary GraphDef ``.pb``.

    Every variable becomes a constant (``convert_variables_to_constants_v2``); a
    Keras model is called with ``training=False``. Refuses to overwrite ``path``
    and refuses functions that write to variables (``training=True``, counters):
    a frozen graph has no variables left. Returns the path and the names of the
    tensors to feed and fetch (what ``load_frozen_graph`` takes).

    Example:
        >>> import os, tempfile
        >>> import keras
        >>> model = keras.Sequential([keras.Input((3,), name="features"), keras.layers.Dense(2)])
        >>> frozen = freeze_graph(model, os.path.join(tempfile.mkdtemp(), "model.pb"))
        >>> frozen.inputs, frozen.outputs
        (['features:0'], ['Identity:0'])
    """
    target = refuse_existing(path, "a file")
    function = _concrete_function(model_or_function, input_signature)
    writers = _state_writers(function.graph.as_graph_def())
    if writers:
        raise FreezeError(f"the function writes to variables ({', '.join(writers)}), e.g. training=True "
                          "or a counter, and a frozen graph has none",
                          "freeze the inference function (training=False)")
    frozen = convert_variables_to_constants_v2(function)
    graph_def = frozen.graph.as_graph_def()
    folder = os.path.dirname(target)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(target, "xb") as file:  # "x": never replace a file that appeared meanwhile
        file.write(graph_def.SerializeToString())
    inputs = [t.name for t in frozen.inputs if t.dtype != tf.resource]
    return FrozenGraph(target, inputs, [t.name for t in frozen.outputs])


# --------------------------------------------------------------------------- loading a frozen graph


def _sniff(data: bytes) -> str | None:
    """The kind of a file another recipe reads, from its first bytes, or None."""
    if data[4:8] == b"TFL3":
        return "a LiteRT (.tflite) flatbuffer: run it with ai_edge_litert.interpreter.Interpreter"
    if data[:4] == b"PK\x03\x04":
        return "a zip file (a .keras model?): load it with keras.saving.load_model"
    if data[:8] == b"\x89HDF\r\n\x1a\n":
        return "an HDF5 file (.h5): load it with keras.saving.load_model"
    return None


def _read_graph_def(text: str) -> tf.compat.v1.GraphDef:
    if not os.path.lexists(text):
        raise NotAModelFileError(text, "no such file")
    if os.path.isdir(text):
        raise NotAModelFileError(text, "a folder, not a frozen .pb file (a SavedModel? load it with "
                                       "tf.saved_model.load)")
    with open(text, "rb") as file:
        data = file.read()
    if not data:
        raise NotAModelFileError(text, "an empty file")
    other = _sniff(data)
    if other:
        raise NotAModelFileError(text, other)
    graph_def = tf.compat.v1.GraphDef()
    try:
        graph_def.ParseFromString(data)
    except DecodeError:
        if _is_onnx(data):
            raise NotAModelFileError(text, "an ONNX model: run it with onnxruntime.InferenceSession") from None
        if _is_saved_model_proto(data):
            raise NotAModelFileError(text, "a SavedModel's saved_model.pb: load its folder with "
                                           "tf.saved_model.load") from None
        raise NotAModelFileError(text, "not a binary GraphDef (truncated, damaged, or a text .pbtxt?)") from None
    if _is_saved_model_proto(data):
        raise NotAModelFileError(text, "a SavedModel's saved_model.pb: load its folder with tf.saved_model.load")
    if not graph_def.node:
        raise NotAModelFileError(text, "a GraphDef without any node (truncated, or another kind of file)")
    check = check_graph_def(graph_def)
    if check.not_graph_def:
        raise NotAModelFileError(text, check.not_graph_def)
    if check.library_ops:
        raise UnsupportedOpsError(text, check.library_needs, _LIBRARY_ROUTE,
                                  what="a frozen graph (a GraphDef)")
    variables = sorted({node.op for node in graph_def.node if node.op in _VARIABLE_OPS})
    if variables:
        raise NotAModelFileError(text, f"a graph that still holds variables ({', '.join(variables)}), "
                                       "not a frozen one: freeze it first (helpers.deploy.freeze_graph)")
    return graph_def


_LIBRARY_ROUTE = "Import that library (e.g. tensorflow_text) first, in the same Python, then load the graph"


@dataclass(frozen=True)
class GraphDefCheck:
    """What ``check_graph_def`` found in a protobuf that parsed as a GraphDef.

    ``not_graph_def``: why it is not a TensorFlow GraphDef at all (None: it is
    one); ``library_ops``: ops TensorFlow here does not have while its other ops
    are TensorFlow's (they come from a library not imported here);
    ``unknown_fields``: fields a GraphDef of this TensorFlow does not have.
    """

    not_graph_def: str | None
    library_ops: list[str]
    unknown_fields: int

    @property
    def library_needs(self) -> str:
        """What ``library_ops`` need, in words ("" when there are none)."""
        if not self.library_ops:
            return ""
        shown = ", ".join(self.library_ops[:3]) + (", ..." if len(self.library_ops) > 3 else "")
        return f"needs ops from a library not imported here ({shown})"

    @property
    def library_trap(self) -> str:
        """``library_needs`` with what to do ("" when there are none)."""
        return f"{self.library_needs}: import it (e.g. tensorflow_text) first" if self.library_ops else ""

    @property
    def note(self) -> str:
        """The words for ``unknown_fields`` in a GraphDef ("" when there are none)."""
        if not self.unknown_fields or self.not_graph_def:
            return ""
        return (f"{self.unknown_fields} field(s) a GraphDef of this TensorFlow does not have (written by a "
                "newer TensorFlow?): TensorFlow ignores them")


_OP_NAME = re.compile(r"[A-Z][A-Za-z0-9_>]*")  # what TensorFlow accepts as an op's name (op_def_builder)
_OP_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"


def _one_byte_from(op: str) -> str:
    """The TensorFlow op whose name differs from ``op`` in exactly one character ("" if none)."""
    from tensorflow.python.framework import op_def_registry

    for position in range(len(op)):
        for letter in _OP_LETTERS:
            name = op[:position] + letter + op[position + 1:]
            if letter != op[position] and op_def_registry.get(name) is not None:
                return name
    return ""


def check_graph_def(graph_def: tf.compat.v1.GraphDef) -> GraphDefCheck:
    """Whether a protobuf that parsed as a GraphDef is one, and which of its ops TensorFlow here lacks.

    Protobuf parses any message as any other: a MediaPipe graph config's ``node``
    field has GraphDef's number, its ``calculator`` lands in ``op``. A file none
    of whose node ops TensorFlow knows (nor its library's functions) is another
    message; one where only some ops are unknown is a graph that needs ops from a
    library not imported here (``tensorflow_text``'s ``SentencepieceOp``). Unknown
    fields alone do not refuse a graph (a newer TensorFlow may write them): they
    are a ``note``. ``helpers.identify`` and ``model_file_kind`` both use this.

    Example:
        >>> graph_def = tf.compat.v1.GraphDef()
        >>> graph_def.node.add(name="x", op="Placeholder").attr["dtype"].type = 1
        >>> graph_def.node.add(name="tok", op="ExampleLibraryOp", input=["x"]) and None
        >>> check_graph_def(graph_def).library_trap
        'needs ops from a library not imported here (ExampleLibraryOp): import it (e.g. tensorflow_text) first'
    """
    from google.protobuf.unknown_fields import UnknownFieldSet
    from tensorflow.python.framework import op_def_registry

    unknown = len(UnknownFieldSet(graph_def)) + sum(len(UnknownFieldSet(node)) for node in graph_def.node)
    functions = {function.signature.name for function in graph_def.library.function}
    ops = {node.op for node in graph_def.node}
    missing = sorted(op or "(none)" for op in ops
                     if op not in functions and (not op or op_def_registry.get(op) is None))
    if missing and len(missing) == len(ops):
        shown = ", ".join(repr(op) for op in missing[:3]) + (", ..." if len(missing) > 3 else "")
        fields = f"; it holds {unknown} field(s) a GraphDef does not have" if unknown else ""
        return GraphDefCheck(
            f"a protobuf that is not a TensorFlow GraphDef, so not a frozen graph: none of its "
            f"{len(graph_def.node)} 'nodes' names a TensorFlow op (ops read: {shown}){fields}; another "
            "message saved as .pb (a MediaPipe graph config?)", [], unknown)
    damaged = ["a node names no op"] if "(none)" in missing else []
    for op in (op for op in missing if op != "(none)"):
        near = _one_byte_from(op)
        if near or not _OP_NAME.fullmatch(op):
            damaged.append(f"op {op!r} is one character from {near!r}" if near else f"{op!r} is no valid op name")
    if damaged:  # a flipped bit in an op's name, not a library's op
        return GraphDefCheck(f"a damaged GraphDef: {'; '.join(damaged[:2])} (a flipped bit?); restore "
                             "the file from a copy", [], unknown)
    return GraphDefCheck(None, missing, unknown)


def _is_saved_model_proto(data: bytes) -> bool:
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    try:
        proto.ParseFromString(data)
    except DecodeError:
        return False
    return bool(proto.meta_graphs) and bool(proto.meta_graphs[0].graph_def.node)


def _is_onnx(data: bytes) -> bool:
    try:
        import onnx
    except ImportError:  # pragma: no cover - onnx is in the course's lock
        return False
    try:
        model = onnx.load_model_from_string(data)
    except Exception:  # noqa: BLE001 - any parse failure means "not ONNX"
        return False
    return bool(model.graph.node)


def _tensor_name(name: str) -> str:
    return name if ":" in name else f"{name}:0"


def _candidates(graph_def: tf.compat.v1.GraphDef, inputs: bool) -> list[str]:
    if inputs:
        return [f"{node.name}:0" for node in graph_def.node if node.op == "Placeholder"]
    consumed = {name.lstrip("^").split(":")[0] for node in graph_def.node for name in node.input}
    return [f"{node.name}:0" for node in graph_def.node
            if node.name not in consumed and node.op not in {"NoOp", "Const", "Placeholder"}]


class FrozenGraphFunction:
    """A frozen graph as a TF2 callable: NumPy arrays in (one per input), a NumPy array out
    (a list of arrays when there are several outputs).

    ``inputs`` and ``outputs`` are the tensor names; ``dtypes`` and ``shapes`` those of the inputs.
    """

    def __init__(self, path: str, function: Any, inputs: list[str], outputs: list[str]) -> None:
        self.path, self.function, self.inputs, self.outputs = path, function, inputs, outputs
        self.dtypes = [t.dtype for t in function.inputs]
        self.shapes = [t.shape for t in function.inputs]

    def __call__(self, *arrays: Any) -> np.ndarray | list[np.ndarray]:
        if len(arrays) != len(self.inputs):
            raise StructureMismatchError(f"the frozen graph takes {len(self.inputs)} input(s) "
                                         f"({', '.join(self.inputs)}), got {len(arrays)}")
        tensors = []
        for name, dtype, shape, array in zip(self.inputs, self.dtypes, self.shapes, arrays):
            tensor = tf.convert_to_tensor(array)
            if tensor.dtype != dtype:
                raise StructureMismatchError(f"input {name!r} takes {dtype.name}, got {tensor.dtype.name}: "
                                             f"cast it first (np.asarray(x, '{dtype.name}'))")
            if not shape.is_compatible_with(tensor.shape):
                raise StructureMismatchError(f"input {name!r} takes shape {shape}, got {tensor.shape}"
                                             " (a frozen graph keeps the shapes it was traced with)")
            tensors.append(tensor)
        result = self.function(*tensors)
        if isinstance(result, (list, tuple)):
            values = [np.asarray(value) for value in result]
            return values[0] if len(values) == 1 else values
        return np.asarray(result)

    def __repr__(self) -> str:
        return f"FrozenGraphFunction({self.path!r}, inputs={self.inputs}, outputs={self.outputs})"


def load_frozen_graph(path: str | os.PathLike, inputs: str | Sequence[str],
                      outputs: str | Sequence[str]) -> FrozenGraphFunction:
    """A frozen GraphDef ``.pb`` as a TF2 callable, from the tensors ``inputs`` to ``outputs``.

    Names are tensor names (``"features:0"``) or op names (``"features"``, read
    as output 0). The graph is imported inside ``tf.compat.v1.wrap_function``
    and pruned to the requested tensors. Raises ``NotAModelFileError`` for a
    missing, damaged or other kind of file (a SavedModel, a ``.tflite``, a graph
    that still holds variables) and ``TensorNotFoundError`` naming the tensors
    that do not exist, with candidates (the placeholders; the ops nothing consumes).
    A graph whose ops are partly unknown here raises ``UnsupportedOpsError``: it
    needs ops from a library not imported here (``tensorflow_text``); import it first.

    Example:
        >>> import numpy as np
        >>> run = load_frozen_graph("tests/data/tf215/frozen_graph.pb", "features:0", "Identity:0")
        >>> run(np.ones((3, 5), "float32")).shape
        (3, 2)
    """
    text = path_text(path, "frozen graph path")
    graph_def = _read_graph_def(text)
    feeds = [_tensor_name(name) for name in ([inputs] if isinstance(inputs, str) else inputs)]
    fetches = [_tensor_name(name) for name in ([outputs] if isinstance(outputs, str) else outputs)]
    if not feeds or not fetches:
        raise StructureMismatchError("name at least one input and one output tensor")
    nodes = {node.name: node for node in graph_def.node}
    for names, are_inputs in ((feeds, True), (fetches, False)):
        missing = [name for name in names if name.rsplit(":", 1)[0] not in nodes]
        if missing:
            raise TensorNotFoundError(text, missing, _candidates(graph_def, are_inputs))
    try:
        wrapped = tf.compat.v1.wrap_function(
            lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    except (ValueError, tf.errors.OpError) as error:  # e.g. a truncation that cut a node's inputs off
        raise NotAModelFileError(text, f"its graph does not import: {str(error).splitlines()[0]}") from None
    graph = wrapped.graph
    try:
        function = wrapped.prune([graph.get_tensor_by_name(n) for n in feeds],
                                 [graph.get_tensor_by_name(n) for n in fetches])
    except (KeyError, ValueError) as error:  # an output index the op does not have
        missing = [n for n in feeds + fetches if not _has_tensor(graph, n)]
        if missing:
            raise TensorNotFoundError(text, missing, _candidates(graph_def, False)) from None
        raise
    return FrozenGraphFunction(text, function, feeds, fetches)


def _has_tensor(graph: tf.Graph, name: str) -> bool:
    try:
        graph.get_tensor_by_name(name)
    except (KeyError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- comparing runtimes


def model_file_kind(path: str | os.PathLike) -> str:
    """Which of the runtimes ``compare_runtimes`` knows reads ``path``: one of ``KINDS``.

    Raises ``NotAModelFileError`` for a missing file or one of another kind. A file
    tagged ``TFL3`` is LiteRT only if LiteRT's interpreter accepts it (its
    flatbuffer verifies and its tensors allocate): a truncated ``.tflite`` is
    refused. A ``.tflite`` that verifies but whose tensors do not allocate because
    LiteRT lacks its ops (Select TF ops, custom ops without a registered kernel)
    raises ``UnsupportedOpsError`` naming them and what runs them
    (``helpers.model_ops.tflite_ops_needed``); so does a frozen graph that needs ops
    from a library not imported here (``check_graph_def``). A flipped bit inside weight bytes passes every such check (none of
    these formats holds a checksum): keep a hash of the file to detect that.

    Example:
        >>> model_file_kind("surely/not/here.onnx")
        Traceback (most recent call last):
        ...
        helpers.errors.NotAModelFileError: 'surely/not/here.onnx' is not a readable model file: no such file or folder
    """
    text = path_text(path, "model file path")
    if not os.path.lexists(text):
        raise NotAModelFileError(text, "no such file or folder")
    if os.path.isdir(text):
        if os.path.isfile(os.path.join(text, "saved_model.pb")):
            return KINDS[0]
        raise NotAModelFileError(text, f"a folder without saved_model.pb; known kinds: {', '.join(KINDS)}")
    with open(text, "rb") as file:
        data = file.read()
    if data[4:8] == b"TFL3":
        litert_interpreter(text, data, quiet=quietly)
        return KINDS[2]
    if _is_onnx(data):
        return KINDS[3]
    graph_def = None if _sniff(data) else _parsed_graph_def(data)
    if graph_def is not None:
        check = check_graph_def(graph_def)
        if check.not_graph_def:
            raise NotAModelFileError(text, check.not_graph_def)
        if check.library_ops:
            raise UnsupportedOpsError(text, check.library_needs, _LIBRARY_ROUTE,
                                      what="a frozen graph (a GraphDef)")
        return KINDS[1]
    raise NotAModelFileError(text, f"not a kind this recipe runs (known kinds: {', '.join(KINDS)}); "
                                   "a truncated or damaged .pb or .onnx that no longer parses reads as none")


def _parsed_graph_def(data: bytes) -> tf.compat.v1.GraphDef | None:
    """``data`` as a GraphDef with nodes (not a SavedModel's proto), or None."""
    graph_def = tf.compat.v1.GraphDef()
    try:
        graph_def.ParseFromString(data)
    except DecodeError:
        return None
    if not graph_def.node or _is_saved_model_proto(data):
        return None
    return graph_def


def _folder_size(path: str) -> int:
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


def _runner(path: str, kind: str, batch: np.ndarray) -> Callable[[], np.ndarray]:
    if kind == KINDS[0]:
        loaded = tf.saved_model.load(glob_safe_folder(path))
        signatures = dict(loaded.signatures)
        if "serving_default" not in signatures:
            raise NotAModelFileError(path, "a SavedModel without a serving_default signature")
        signature = signatures["serving_default"]
        keys = list(signature.structured_input_signature[1])
        if len(keys) != 1:
            raise StructureMismatchError(f"{path!r} takes {len(keys)} inputs; compare_runtimes runs one")
        tensor = tf.constant(batch)
        return lambda: next(iter(signature(**{keys[0]: tensor}).values())).numpy()
    if kind == KINDS[1]:
        graph_def = _read_graph_def(path)
        inputs, outputs = _candidates(graph_def, True), _candidates(graph_def, False)
        if len(inputs) != 1 or len(outputs) != 1:
            raise StructureMismatchError(f"{path!r} has inputs {inputs} and outputs {outputs}; "
                                         "compare_runtimes runs one of each (use load_frozen_graph)")
        function = load_frozen_graph(path, inputs, outputs)
        return lambda: function(batch)
    if kind == KINDS[2]:
        with open(path, "rb") as file:
            interpreter = litert_interpreter(path, file.read(), quiet=quietly)
        details = interpreter.get_input_details()
        if len(details) != 1:
            raise StructureMismatchError(f"{path!r} takes {len(details)} inputs; compare_runtimes runs one")
        (detail,) = details
        if detail["dtype"] != batch.dtype:
            raise StructureMismatchError(f"{path!r} takes {np.dtype(detail['dtype']).name} input "
                                         "(a fully integer model?); compare_runtimes feeds float32")
        try:
            with quietly():
                interpreter.resize_tensor_input(detail["index"], batch.shape)
                interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as error:
            raise NotAModelFileError(path, "a LiteRT file that does not run on this batch (damaged?): "
                                           f"{str(error).splitlines()[0]}") from None
        output = interpreter.get_output_details()[0]["index"]

        def run_litert() -> np.ndarray:
            interpreter.set_tensor(detail["index"], batch)
            interpreter.invoke()
            return interpreter.get_tensor(output)

        return run_litert
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime's own exception classes: NotImplemented, Fail, ...
        import onnx

        opsets = {entry.domain: entry.version for entry in onnx.load(path, load_external_data=False).opset_import}
        needs = onnx_not_implemented(str(error), opsets)
        if needs is not None:
            raise UnsupportedOpsError(path, needs, ONNX_ROUTE, what="an ONNX file that parses") from None
        needs = onnx_op_unregistered(str(error))
        if needs is not None:
            raise UnsupportedOpsError(path, needs, ONNX_DOMAIN_ROUTE, what="an ONNX file that parses") from None
        raise
    names = [entry.name for entry in session.get_inputs()]
    if len(names) != 1:
        raise StructureMismatchError(f"{path!r} takes {len(names)} inputs ({', '.join(names)}); "
                                     "compare_runtimes runs one")
    name = names[0]
    return lambda: session.run(None, {name: batch})[0]


@dataclass(frozen=True)
class RuntimeRow:
    """One line of a ``RuntimeComparison``."""

    label: str
    kind: str
    size_bytes: int | None
    max_difference: float
    latency_ratio: float


class RuntimeComparison:
    """The Keras model and each file on one batch: size, largest output difference, latency ratio.

    Shows itself as a table; ``rows`` holds ``RuntimeRow``s (the model first),
    ``row(label)`` one of them, ``plot()`` draws a figure.
    """

    def __init__(self, rows: list[RuntimeRow]) -> None:
        self.rows = rows

    def row(self, label: str) -> RuntimeRow:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(f"no row {label!r}; rows: {[row.label for row in self.rows]}")

    def __str__(self) -> str:
        from helpers.notebook import format_table

        return format_table(
            ["file", "kind", "size (KiB)", "max |diff|", "latency ratio"],
            [[row.label, row.kind, "-" if row.size_bytes is None else f"{row.size_bytes / 1024:.1f}",
              f"{row.max_difference:.1e}", f"{row.latency_ratio:.3g}"] for row in self.rows])

    __repr__ = __str__

    def plot(self):
        """A matplotlib ``Figure``: size, largest difference and latency ratio per file."""
        import matplotlib.pyplot as plt

        rows = [row for row in self.rows if row.size_bytes is not None]
        figure, axes = plt.subplots(1, 3, figsize=(12, 3.2))
        labels = [row.label for row in rows]
        axes[0].barh(labels, [row.size_bytes / 1024 for row in rows])
        axes[0].set_xlabel("size (KiB)")
        axes[1].barh(labels, [max(row.max_difference, 1e-9) for row in rows])
        axes[1].set_xscale("log")
        axes[1].set_xlabel("largest |difference| from Keras")
        axes[2].barh(["Keras model"] + labels, [1.0] + [row.latency_ratio for row in rows])
        axes[2].set_xlabel("latency per batch / Keras model's")
        figure.suptitle("One batch, every runtime, one run")
        figure.tight_layout()
        return figure


def compare_runtimes(model: Any, inputs: Any, files: Sequence[str | os.PathLike] | Mapping[str, Any],
                     *, repeat: int = 5) -> RuntimeComparison:
    """Run ``model`` (with ``training=False``) and each file on the batch ``inputs``; tabulate the results.

    ``files`` is a list of paths (labelled by their names) or a ``{label: path}``
    dict. Known kinds: a SavedModel folder (its ``serving_default``), a frozen
    GraphDef ``.pb`` (one placeholder in, one output), a LiteRT ``.tflite``, an
    ``.onnx`` file. Every file is checked before anything is timed: one of
    another kind raises ``NotAModelFileError``; one whose ops this runtime lacks
    (a ``.tflite`` with Flex or custom ops, an ONNX op onnxruntime has no kernel
    for at the file's opset) raises ``UnsupportedOpsError`` with the route. Latencies are medians of
    ``repeat`` interleaved samples (``helpers.timing.compare_seconds``), divided
    by the Keras model's from the same run.

    Example:
        >>> import os, tempfile
        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
        >>> frozen = freeze_graph(model, os.path.join(tempfile.mkdtemp(), "model.pb"))
        >>> table = compare_runtimes(model, np.ones((4, 3)), [frozen.path])
        >>> [row.label for row in table.rows], table.row("model.pb").max_difference < 1e-5
        (['Keras model', 'model.pb'], True)
    """
    from helpers.timing import compare_seconds

    batch = np.asarray(inputs, dtype="float32")
    items = list(files.items()) if isinstance(files, Mapping) else [
        (os.path.basename(os.path.normpath(path_text(path))), path) for path in files]
    kinds = [(label, path_text(path), model_file_kind(path)) for label, path in items]
    expected = np.asarray(model(batch, training=False))
    runners: dict[str, Callable[[], Any]] = {"Keras model": lambda: model(batch, training=False)}
    differences = {"Keras model": 0.0}
    for label, path, kind in kinds:
        runner = _runner(path, kind, batch)
        try:
            with quietly():
                got = np.asarray(runner())
        except RuntimeError as error:  # LiteRT's invoke on a damaged file
            if kind != KINDS[2]:
                raise
            with open(path, "rb") as file:
                refuse_litert_ops(path, file.read(), str(error))
            raise NotAModelFileError(path, "a LiteRT file that fails to run (damaged?): "
                                           f"{str(error).splitlines()[0]}") from None
        if got.shape != expected.shape:
            raise StructureMismatchError(f"{label!r} answers with shape {got.shape}, the model with "
                                         f"{expected.shape}: is it a conversion of this model?")
        differences[label] = float(np.max(np.abs(got.astype("float64") - expected)))
        runners[label] = runner
    with quietly():
        seconds = compare_seconds(runners, repeat=repeat)
    base = seconds["Keras model"]
    rows = [RuntimeRow("Keras model", "Keras", None, 0.0, 1.0)]
    rows += [RuntimeRow(label, kind, _folder_size(path), differences[label], seconds[label] / base)
             for label, path, kind in kinds]
    return RuntimeComparison(rows)
