"""Look inside a SavedModel without its code (notebook 09).

A SavedModel is a folder: ``saved_model.pb`` (the graphs, the functions and
their signatures), ``variables/`` (a checkpoint, the format of chapter 01),
``assets/`` (files the graph reads, such as vocabularies) and, in recent versions,
``fingerprint.pb``. The recipes read those files directly, so they work on a
SavedModel written by any TensorFlow version, TF1 graph code included, and
never run its graph:

* ``describe_saved_model(path)``: its signatures with input and output names,
  dtypes and shapes, its tag-sets, whether it holds only a TF1
  ``MetaGraphDef``, its variables (count and bytes), its assets (and whether
  each file is still there) and the op types this TensorFlow does not know;
* ``unregistered_ops(path)``: those op types alone, the check to run before a
  load fails with "Op type not registered";
* ``saved_model_cli_show(path, *options)``: TensorFlow's own command-line
  tool, run from this Python's environment, its output made deterministic.

Example:
    >>> import tensorflow as tf
    >>> class Double(tf.Module):
    ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    ...     def __call__(self, x):
    ...         return {"y": 2.0 * x}
    >>> tf.saved_model.save(Double(), "double")                      # doctest: +SKIP
    >>> describe_saved_model("double")                                # doctest: +SKIP
    SavedModel 'double': TF2 (object graph), written by TensorFlow 2.21.0
    tag-set  signature        in/out  key  dtype    shape
    -------  ---------------  ------  ---  -------  -------
    serve    serving_default  in      x    float32  (None,)
                              out     y    float32  (None,)
    variables: 0 values, 0 B
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import tensorflow as tf
from google.protobuf import message, text_format
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2
from tensorflow.python.framework import op_def_registry

from helpers.errors import NotACheckpointError, NotASavedModelError, SignatureNotFoundError, first_line
from helpers.files import path_text
from helpers.inspection import OBJECT_GRAPH_KEY, describe_checkpoint, format_bytes
from helpers.notebook import format_table, hide_work_folder
from helpers.tensor_bundle import short_data_files

__all__ = [
    "NotASavedModelError",
    "SignatureNotFoundError",
    "TensorInfo",
    "SignatureInfo",
    "AssetInfo",
    "SavedModelDescription",
    "describe_saved_model",
    "unregistered_ops",
    "saved_model_cli_show",
]

SAVED_MODEL_PB = "saved_model.pb"
SAVED_MODEL_PBTXT = "saved_model.pbtxt"
VARIABLES_PREFIX = os.path.join("variables", "variables")
# Signature keys TensorFlow adds for its own use; callers never call them.
_INTERNAL_SIGNATURES = {"__saved_model_init_op", "__saved_model_train_op"}


# --------------------------------------------------------------------------- the description


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a signature: its key, dtype and shape (``None`` for an unknown rank)."""

    key: str
    dtype: str
    shape: tuple[int | None, ...] | None

    @property
    def shape_text(self) -> str:
        if self.shape is None:
            return "unknown"
        return "(" + ", ".join(map(str, self.shape)) + ("," if len(self.shape) == 1 else "") + ")"


@dataclass(frozen=True)
class SignatureInfo:
    """One signature: its key, the tag-set of the meta graph holding it, its inputs and outputs."""

    name: str
    tags: tuple[str, ...]
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    method: str

    @property
    def input_keys(self) -> list[str]:
        return [info.key for info in self.inputs]

    @property
    def output_keys(self) -> list[str]:
        return [info.key for info in self.outputs]


@dataclass(frozen=True)
class AssetInfo:
    """A file the SavedModel's graph reads from ``assets/``, and whether it is still there."""

    filename: str
    present: bool


@dataclass(frozen=True)
class SavedModelDescription:
    """What a SavedModel holds, read from its files; shows itself as a table.

    ``tf1_meta_graph`` is True when a meta graph has no object graph: it was
    written by TF1-style graph code (``tf.compat.v1.saved_model.Builder`` or
    ``simple_save``): ``tf.saved_model.load`` gives its signatures and
    variables, plus ``prune``, ``restore``, ``graph`` and ``initializer``, but
    no restored methods.
    ``variable_count`` and ``variable_bytes`` count the values stored in
    ``variables/`` (``optimizer_values`` of them are an optimizer's state, ``metric_values`` a
    Keras 2 model's metric totals and counts);
    ``variables_missing`` is True when the graph has variables and ``variables/``
    holds no checkpoint (a copy without that folder: ``tf.saved_model.load`` fails).
    """

    path: str
    tag_sets: tuple[tuple[str, ...], ...]
    tf1_meta_graph: bool
    tensorflow_version: str
    signatures: tuple[SignatureInfo, ...]
    variable_count: int
    variable_bytes: int
    assets: tuple[AssetInfo, ...]
    unknown_ops: tuple[str, ...]
    optimizer_values: int = 0
    variables_missing: bool = False
    metric_values: int = 0

    @property
    def signature_names(self) -> list[str]:
        return [signature.name for signature in self.signatures]

    def signature(self, name: str = "serving_default") -> SignatureInfo:
        """The signature with key ``name``, or ``SignatureNotFoundError`` listing those there are."""
        for signature in self.signatures:
            if signature.name == name:
                return signature
        raise SignatureNotFoundError(self.path, name, self.signature_names)

    @property
    def missing_assets(self) -> list[str]:
        return [asset.filename for asset in self.assets if not asset.present]

    def __repr__(self) -> str:
        kind = "TF1 MetaGraphDef (no object graph)" if self.tf1_meta_graph else "TF2 (object graph)"
        version = self.tensorflow_version or "an unrecorded version"
        lines = [f"SavedModel {self.path!r}: {kind}, written by TensorFlow {version}"]
        rows = []
        for signature in self.signatures:
            first = [", ".join(signature.tags), signature.name]
            for direction, infos in (("in", signature.inputs), ("out", signature.outputs)):
                for info in infos or (TensorInfo("(none)", "", ()),):
                    rows.append([*first, direction, info.key, info.dtype, info.shape_text if info.dtype else ""])
                    first = ["", ""]
                    direction = ""
        if rows:
            lines.append(format_table(["tag-set", "signature", "in/out", "key", "dtype", "shape"], rows))
        else:
            tags = "; ".join(", ".join(tags) for tags in self.tag_sets)
            lines.append(f"no signatures (tag-sets: {tags})")
        count = self.variable_count
        if self.variables_missing:
            lines.append("variables: MISSING: the graph has variables but variables/ holds no checkpoint "
                         "(tf.saved_model.load fails): copy the whole folder")
        else:
            optimizer = f" ({self.optimizer_values} of them optimizer state)" if self.optimizer_values else ""
            lines.append(f"variables: {count} value{'s' * (count != 1)}{optimizer}, "
                         f"{format_bytes(self.variable_bytes)}")
        if self.assets:
            listed = ", ".join(a.filename + ("" if a.present else " (MISSING)") for a in self.assets)
            lines.append(f"assets: {listed}")
        if self.unknown_ops:
            lines.append(f"op types this TensorFlow does not know: {', '.join(self.unknown_ops)}")
        return "\n".join(lines)


def describe_saved_model(path: str | os.PathLike) -> SavedModelDescription:
    """Describe a SavedModel folder from its files alone: signatures, tags, variables, assets, ops.

    Nothing is loaded or run, so this also works on a SavedModel that
    ``tf.saved_model.load`` refuses (a missing asset, an unknown op type) and
    on folders whose names hold ``[``, ``*`` or ``?`` (which TensorFlow's own
    readers take for glob patterns). Signature keys TensorFlow adds for itself
    (``__saved_model_init_op``) are left out.

    Example:
        >>> description = describe_saved_model("exported")             # doctest: +SKIP
        >>> description.signature("serving_default").output_keys       # doctest: +SKIP
        ['output_0']
        >>> describe_saved_model("no/such/folder")
        Traceback (most recent call last):
        ...
        helpers.errors.NotASavedModelError: 'no/such/folder' is not a readable SavedModel: no such file or folder
    """
    folder = path_text(path, "SavedModel folder")
    proto = read_saved_model(folder)
    signatures = []
    tag_sets = []
    asset_names: dict[str, None] = {}
    for meta_graph in proto.meta_graphs:
        tags = tuple(meta_graph.meta_info_def.tags)
        tag_sets.append(tags)
        for name in sorted(meta_graph.signature_def):
            if name in _INTERNAL_SIGNATURES:
                continue
            definition = meta_graph.signature_def[name]
            signatures.append(
                SignatureInfo(
                    name,
                    tags,
                    tuple(_tensor_info(key, definition.inputs[key]) for key in sorted(definition.inputs)),
                    tuple(_tensor_info(key, definition.outputs[key]) for key in sorted(definition.outputs)),
                    definition.method_name,
                )
            )
        for asset in _asset_file_defs(meta_graph):
            asset_names.setdefault(asset.filename)
    count, nbytes, optimizer, metrics = _variables(folder)
    assets = tuple(
        AssetInfo(name, os.path.isfile(os.path.join(folder, "assets", name))) for name in asset_names
    )
    first = proto.meta_graphs[0]
    return SavedModelDescription(
        path=folder,
        tag_sets=tuple(tag_sets),
        tf1_meta_graph=any(not meta_graph.object_graph_def.nodes for meta_graph in proto.meta_graphs),
        tensorflow_version=first.meta_info_def.tensorflow_version,
        signatures=tuple(signatures),
        variable_count=count,
        variable_bytes=nbytes,
        assets=assets,
        unknown_ops=tuple(_unknown_ops(proto)),
        optimizer_values=optimizer,
        metric_values=metrics,
        variables_missing=not count and _graph_has_variables(proto),
    )


def unregistered_ops(path: str | os.PathLike) -> list[str]:
    """The op types a SavedModel's graphs use that this TensorFlow has not registered.

    A custom op (from a library such as TensorFlow Text, or your own
    ``tf.load_op_library``) must be registered before ``tf.saved_model.load``:
    import that library first. An empty list means every op is known.

    Example:
        >>> unregistered_ops("exported")     # doctest: +SKIP
        []
    """
    return _unknown_ops(read_saved_model(path_text(path, "SavedModel folder")))


def saved_model_cli_show(path: str | os.PathLike, *options: str, timeout: float = 120) -> str:
    """Run ``saved_model_cli show --dir path [options]`` from this Python's environment; return its output.

    The tool is the one installed next to ``sys.executable`` (a virtual
    environment's ``bin/``), so it belongs to the same TensorFlow. Its output
    is returned with this machine's work folder hidden and the op-type list
    of ``--all`` sorted (the tool prints a Python set, whose order changes
    from run to run). Common options: none (the tag-sets), ``--tag_set
    serve`` (the signature keys), ``--tag_set serve --signature_def
    serving_default`` (one signature), ``--all`` (everything).

    Example:
        >>> print(saved_model_cli_show("exported", "--tag_set", "serve"))   # doctest: +SKIP
        The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:
        SignatureDef key: "__saved_model_init_op"
        SignatureDef key: "serve"
        SignatureDef key: "serving_default"
    """
    folder = path_text(path, "SavedModel folder")
    read_saved_model(folder)
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if not os.path.isfile(cli):
        raise FileNotFoundError(f"no saved_model_cli next to this Python ({os.path.dirname(sys.executable)})")
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
    result = subprocess.run(
        [cli, "show", "--dir", folder, *options],
        capture_output=True,
        text=True,
        env=environment,
        timeout=timeout,
    )
    if result.returncode != 0:
        problem = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit status {result.returncode}"
        raise ValueError(f"saved_model_cli show {' '.join(options)} failed: {hide_work_folder(problem)}")
    return hide_work_folder(_sort_op_sets(result.stdout.strip("\n")))


# --------------------------------------------------------------------------- reading the files


def read_saved_model(folder: str) -> saved_model_pb2.SavedModel:
    if not os.path.exists(folder):
        raise NotASavedModelError(folder, "no such file or folder")
    if not os.path.isdir(folder):
        raise NotASavedModelError(folder, _why_a_file(folder))
    binary = os.path.join(folder, SAVED_MODEL_PB)
    text = os.path.join(folder, SAVED_MODEL_PBTXT)
    proto = saved_model_pb2.SavedModel()
    try:
        if os.path.isfile(binary):
            with open(binary, "rb") as file:
                proto.ParseFromString(file.read())
        elif os.path.isfile(text):
            with open(text, encoding="utf-8") as file:
                text_format.Parse(file.read(), proto)
        else:
            raise NotASavedModelError(folder, _why_no_graph(folder))
    except (message.DecodeError, text_format.ParseError, UnicodeDecodeError) as error:
        name = SAVED_MODEL_PB if os.path.isfile(binary) else SAVED_MODEL_PBTXT
        raise NotASavedModelError(folder, f"its {name} is damaged or truncated ({first_line(error)})") from None
    if not proto.meta_graphs:
        raise NotASavedModelError(folder, f"its {SAVED_MODEL_PB} holds no MetaGraphDef (an empty or damaged file)")
    return proto


def _why_a_file(path: str) -> str:
    if path.endswith(".keras"):
        return "a Keras file, not a SavedModel folder: open it with keras.models.load_model"
    if path.endswith((".h5", ".hdf5")):
        return "an HDF5 file, not a SavedModel folder: open it with keras.models.load_model (legacy H5)"
    if path.endswith(".pb"):
        return f"a file; a SavedModel is the folder that holds {SAVED_MODEL_PB}: pass {os.path.dirname(path) or '.'!r}"
    return "a file, not a SavedModel folder"


def _why_no_graph(folder: str) -> str:
    names = set(os.listdir(folder))
    if "variables.index" in names:
        return f"no {SAVED_MODEL_PB}; this looks like a SavedModel's variables/ folder: pass the folder above it"
    if "checkpoint" in names or any(name.endswith(".index") for name in names):
        return f"no {SAVED_MODEL_PB}; this folder holds a checkpoint: read it with helpers.inspection.describe_checkpoint"
    inside = sorted(
        name for name in names if os.path.isfile(os.path.join(folder, name, SAVED_MODEL_PB))
    )
    if inside:
        listed = ", ".join(repr(name) for name in inside)
        return f"no {SAVED_MODEL_PB} here, but in its subfolder(s) {listed} (a versioned serving layout): pass one of those"
    return f"no {SAVED_MODEL_PB} in this folder"


def _tensor_info(key: str, info) -> TensorInfo:
    dtype = tf.dtypes.as_dtype(info.dtype).name if info.dtype else "unknown"
    if info.tensor_shape.unknown_rank:
        shape = None
    else:
        shape = tuple(None if dim.size == -1 else dim.size for dim in info.tensor_shape.dim)
    return TensorInfo(key, dtype, shape)


def _asset_file_defs(meta_graph: meta_graph_pb2.MetaGraphDef) -> list[meta_graph_pb2.AssetFileDef]:
    """The assets a meta graph lists: TF2 in ``asset_file_def``, TF1's ``Builder`` in the
    ``saved_model_assets`` collection (``AssetFileDef`` protos packed in ``Any``)."""
    assets = list(meta_graph.asset_file_def)
    collection = meta_graph.collection_def.get("saved_model_assets")
    if collection is not None:
        for packed in collection.any_list.value:
            asset = meta_graph_pb2.AssetFileDef()
            if packed.Unpack(asset):
                assets.append(asset)
    return assets


def _graph_has_variables(proto: saved_model_pb2.SavedModel) -> bool:
    """Whether a SavedModel's graphs create variables (TF2 object graph nodes, or TF1 variable ops)."""
    for meta_graph in proto.meta_graphs:
        if any(node.WhichOneof("kind") == "variable" for node in meta_graph.object_graph_def.nodes):
            return True
        if any(node.op in ("VarHandleOp", "VariableV2", "Variable") for node in meta_graph.graph_def.node):
            return True
    return False


def _variables(folder: str) -> tuple[int, int, int, int]:
    """How many values ``variables/`` holds, their bytes, and how many are optimizer state and
    metrics (all 0 when it holds no checkpoint at all).

    Data files without their ``.index`` are refused (a damaged copy), and
    every data file must be as long as its index says: the values of all
    dtypes (strings and the object graph too) end where the index places them.
    """
    prefix = os.path.join(folder, VARIABLES_PREFIX)
    if not os.path.isfile(prefix + ".index"):
        base = os.path.basename(prefix)
        data = sorted(name for name in _listing(os.path.dirname(prefix)) if name.startswith(base + ".data-"))
        if data:  # values without the index that says where each one lies: tf.saved_model.load fails too
            raise NotASavedModelError(folder, f"its variables/ index file {base + '.index'!r} is missing, while "
                                      f"{data[0]!r} is there: a damaged or incomplete copy; copy the folder again")
        return 0, 0, 0, 0
    for name, have, needed in short_data_files(prefix) or []:  # before TensorFlow reads a value
        state = "missing" if have is None else f"truncated ({have} B; its index places values up to {needed} B)"
        raise NotASavedModelError(folder, f"its variables/ data file {name!r} is {state}: copy the folder again")
    try:
        description = describe_checkpoint(prefix)  # reads names with [, *, ? literally
    except NotACheckpointError as error:
        raise NotASavedModelError(folder, f"its variables/ checkpoint is damaged ({error.reason})") from None
    keys = [key for key in description.keys if key != OBJECT_GRAPH_KEY]
    optimizer = [key for key in keys if key.startswith("optimizer/") or ".OPTIMIZER_SLOT" in key]
    metrics = [key for key in keys if key.startswith("keras_api/metrics/")]
    return len(keys), description.total_bytes, len(optimizer), len(metrics)


def _listing(folder: str) -> list[str]:
    return os.listdir(folder) if os.path.isdir(folder) else []


def _unknown_ops(proto: saved_model_pb2.SavedModel) -> list[str]:
    used = set()
    for meta_graph in proto.meta_graphs:
        used.update(node.op for node in meta_graph.graph_def.node)
        for function in meta_graph.graph_def.library.function:
            used.update(node.op for node in function.node_def)
    defined = {
        function.signature.name
        for meta_graph in proto.meta_graphs
        for function in meta_graph.graph_def.library.function
    }
    return sorted(op for op in used - defined if op and op_def_registry.get(op) is None)


def _sort_op_sets(text: str) -> str:
    def sort_set(match: re.Match) -> str:
        items = sorted(item.strip() for item in match[2].split(",") if item.strip())
        return match[1] + "{" + ", ".join(items) + "}"

    return re.sub(r"(contains the following ops: )\{([^}]*)\}", sort_set, text)
