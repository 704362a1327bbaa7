"""Reader: a SavedModel folder (TF1 ``Builder``, TF2, Keras 2 ``model.save``, ``model.export``, hub).

Names the writer from the folder's files and the object graph's root, lists signatures, saved
values, assets and tag-sets, and the traps (missing variables or assets, unknown ops, glob
characters in the path, the endpoint ``TFSMLayer`` expects). Loading it runs functions the
folder stores (``helpers.trust.SAVEDMODEL``).

Example:
    >>> read_saved_model_folder("tests/data/tf215/tf_module").kind
    'savedmodel-tf2'
"""

from __future__ import annotations

import os
import re

from helpers.identify.answer import Identification, bytes_text, loading_code, not_model
from helpers.identify.savedmodel_proto import SavedModelFacts, read_savedmodel_facts
from helpers.identify.tf_protos import NO_TENSORFLOW
from helpers.trust import SAVEDMODEL

__all__ = ["read_saved_model_folder"]


def _facts_with_tensorflow(folder: str) -> SavedModelFacts:
    """The facts read with TensorFlow's protobuf classes and registry (``helpers.saved_models``).

    Raises ``NotACheckpointError`` (``NotASavedModelError``) with the reason for a folder it cannot read.
    """
    from helpers.saved_models import describe_saved_model, read_saved_model

    description = describe_saved_model(folder)
    proto = read_saved_model(folder)
    graph = proto.meta_graphs[0].object_graph_def
    return SavedModelFacts(
        tensorflow_version=description.tensorflow_version, tag_sets=description.tag_sets,
        tf1_meta_graph=description.tf1_meta_graph,
        signatures={s.name: s.input_keys for s in description.signatures},
        variable_count=description.variable_count, variable_bytes=description.variable_bytes,
        optimizer_values=description.optimizer_values, metric_values=description.metric_values,
        assets=[a.filename for a in description.assets], missing_assets=description.missing_assets,
        unknown_ops=list(description.unknown_ops),
        root={child.local_name for child in graph.nodes[0].children} if graph.nodes else set(),
        graph_variables=sum(node.WhichOneof("kind") == "variable" for node in graph.nodes) or sum(
            node.op in ("VarHandleOp", "VariableV2") for node in proto.meta_graphs[0].graph_def.node))


def read_saved_model_folder(folder: str) -> Identification:
    from helpers.errors import NotACheckpointError

    try:
        description = read_savedmodel_facts(folder)  # without TensorFlow, when the files read plainly
        if description is None:
            description = _facts_with_tensorflow(folder)
    except NotACheckpointError as error:
        return not_model(folder, f"a SavedModel folder that cannot be read: {error.reason}")
    except ModuleNotFoundError as error:
        if error.name != "tensorflow":
            raise
        return not_model(folder, NO_TENSORFLOW)
    names = set(os.listdir(folder))
    root = description.root
    signatures = description.signatures
    written = {"TensorFlow": description.tensorflow_version} if description.tensorflow_version else {}
    if "keras_metadata.pb" in names:
        kind = "savedmodel-keras2"
        version = _keras_metadata_version(os.path.join(folder, "keras_metadata.pb"))
        if version:
            written["Keras"] = version
    elif description.tf1_meta_graph:
        kind = "savedmodel-tf1"
    elif "serve" in signatures and "_misc_assets" in root:
        kind = "savedmodel-export"
    elif {"__call__", "variables", "trainable_variables", "regularization_losses"} <= root \
            and "keras_api" not in root:
        kind = "savedmodel-hub"
    else:
        kind = "savedmodel-tf2"
    info = Identification(folder, kind, written_by=written, runs_code=[SAVEDMODEL])
    optimizer, metrics = description.optimizer_values, description.metric_values
    parts = [f"{description.variable_count - optimizer - metrics} model", f"{optimizer} optimizer state",
             f"{metrics} metrics"]
    info.holds = {"signatures": signatures,
                  "saved values": (f"{description.variable_count} ({', '.join(parts[:2 + bool(metrics)])})"
                                   if optimizer or metrics else description.variable_count),
                  "bytes": bytes_text(description.variable_bytes),
                  "assets": list(description.assets)}
    if len(description.tag_sets) > 1:
        info.holds["tag-sets"] = [", ".join(tags) for tags in description.tag_sets]
    if "tfhub_module.pb" in names:
        info.holds["hub module (TF1 format)"] = True
    if description.missing_assets:
        info.traps.append(f"asset file(s) missing from assets/: {', '.join(description.missing_assets)}: "
                          "tf.saved_model.load fails")
    if description.unknown_ops:
        info.traps.append(f"op types this TensorFlow does not know: {', '.join(description.unknown_ops)}: "
                          "import the library that registers them first")
    if description.graph_variables and not os.path.isfile(os.path.join(folder, "variables", "variables.index")):
        info.blocked = ("variables/variables.index is missing: the graph has no values to load and "
                        "tf.saved_model.load fails; copy the whole folder, variables/ included")
        info.traps.append(info.blocked)
    from helpers.files import GLOB_CHARACTERS

    glob_safe = bool(GLOB_CHARACTERS.search(folder))
    if glob_safe:
        info.traps.append("the path holds '[', '*' or '?': tf.saved_model.load(path) fails (TensorFlow "
                          "reads variables/ through a glob): load through a plain-named link "
                          "(helpers.files.glob_safe_folder)")
    if kind != "savedmodel-export" and signatures and "serve" not in signatures:
        info.traps.append("keras.layers.TFSMLayer's default endpoint 'serve' is not in this folder "
                          "(model.export writes it): pass call_endpoint='serving_default'")
    info.traps.append("call a signature by keyword (sig(**{name: x})): two positional tensors fail")
    if kind == "savedmodel-export":
        info.how_to_load = loading_code(folder, """
            import keras
            loaded = keras.layers.TFSMLayer(path)  # endpoint 'serve': model.export wrote it
            report = f"TFSMLayer over endpoint 'serve', {len(loaded.weights)} model variables"
            """)
    elif kind == "savedmodel-tf1":
        tags = _serving_tags(description.tag_sets)
        if len(description.tag_sets) > 1:
            info.traps.append(f"{len(description.tag_sets)} MetaGraphs (tag-sets "
                              f"{'; '.join(', '.join(t) for t in description.tag_sets)}): "
                              f"tf.saved_model.load(path) fails without tags=; pass tags={tags!r}")
        info.how_to_load = loading_code(folder, """
            import tensorflow as tf
            loaded = tf.saved_model.load(path, tags=TAGS)  # a TF1 graph: signatures, no methods
            report = "signatures " + ", ".join(
                f"{name}({', '.join(sorted(fn.structured_input_signature[1]))})"
                for name, fn in loaded.signatures.items())
            """).replace("TAGS", repr(tags))
    else:
        info.how_to_load = loading_code(folder, """
            import tensorflow as tf
            loaded = tf.saved_model.load(path)
            report = "signatures " + (", ".join(
                f"{name}({', '.join(sorted(fn.structured_input_signature[1]))})"
                for name, fn in loaded.signatures.items()) or "none") + \\
                (", callable" if callable(loaded) else "")
            """)
    info.how_to_load = info.how_to_load.replace(
        "\n", "\n# Loading runs functions stored in the folder: only for a folder you trust.\n", 1)
    if glob_safe:
        info.how_to_load = info.how_to_load.replace(
            "\n", "\nfrom helpers.files import glob_safe_folder\npath = glob_safe_folder(path)  "
            "# a link without '[' for TensorFlow's reader\n", 1)
    return info


def _serving_tags(tag_sets: tuple[tuple[str, ...], ...]) -> list[str]:
    """The tag-set to load a TF1 SavedModel by: the one holding 'serve', else the first."""
    serving = [tags for tags in tag_sets if "serve" in tags]
    return sorted((serving or list(tag_sets) or [("serve",)])[0])


def _keras_metadata_version(path: str) -> str:
    with open(path, "rb") as file:
        head = file.read(4096)
    found = re.search(rb'"keras_version":\s*"([^"]+)"', head)
    return found[1].decode() if found else ""
