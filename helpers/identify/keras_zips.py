"""Reader: a ``.keras`` zip archive (Keras 3, or Keras 2.12-2.15).

Reads ``metadata.json`` and ``config.json`` and the HDF5 metadata of ``model.weights.h5`` in place
(never a weight array); a zip bomb is refused before anything is inflated
(``helpers.files.check_archive_sizes``). No TensorFlow.

Example:
    >>> read_keras_zip("tests/data/tf215/functional_bn.keras").kind
    'keras2-archive'
"""

from __future__ import annotations

import io
import json
import textwrap
import zipfile
from typing import Any

from helpers.errors import ArchiveTooLargeError, first_line
from helpers.files import check_archive_sizes
from helpers.identify.answer import Identification, code_tail, loading_code, not_model
from helpers.identify.keras_config import (LAMBDA_NOTE, MIXED_TRAP, MODEL_REPORT, QUANTIZED_TRAP, TFSM_NOTE,
                                           custom_classes, has_lambda_code, has_tfsm_layer, policy_names)
from helpers.trust import LAMBDA, MODULES, TFSM

__all__ = ["read_keras_zip"]


def read_keras_zip(path: str) -> Identification:
    try:
        with zipfile.ZipFile(path) as archive:
            check_archive_sizes(archive, path)  # a zip bomb is refused before anything is inflated
            names = archive.namelist()
            metadata = json.loads(archive.read("metadata.json")) if "metadata.json" in names else None
            config = json.loads(archive.read("config.json")) if "config.json" in names else None
            try:
                optimizer, scaled = _archive_optimizer(archive) if "model.weights.h5" in names else (False, False)
            except (OSError, ValueError, KeyError) as error:  # h5py: not HDF5, or cut short
                return not_model(path, f"a .keras zip whose model.weights.h5 is truncated or damaged "
                                        f"({first_line(error)})")
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        return not_model(path, f"a truncated or damaged zip file ({first_line(error)})")
    except ArchiveTooLargeError as error:
        return not_model(path, error.reason)
    except (ValueError, KeyError) as error:
        return not_model(path, f"a zip whose metadata.json or config.json is damaged ({first_line(error)})")
    if config is None or "model.weights.h5" not in names:
        return not_model(path, f"a zip of something else, not a .keras file (holds "
                                f"{', '.join(names[:3]) or 'nothing'}{', ...' if len(names) > 3 else ''})")
    version = str((metadata or {}).get("keras_version", "?"))
    info = Identification(path, "keras3-archive" if version.startswith("3") else "keras2-archive",
                          written_by={"Keras": version})
    info.holds = {"model": f"{config.get('class_name', '?')} "
                           f"{config.get('config', {}).get('name', '')!r}".strip(),
                  "optimizer state": optimizer,
                  "custom objects": custom_classes(config)}
    lam, tfsm = has_lambda_code(config), has_tfsm_layer(config)
    info.runs_code += [LAMBDA] * lam + [TFSM] * tfsm
    policies = policy_names(config)
    quantized = [name for name in policies if "_from_" in name]
    mixed = next((name for name in policies if name.startswith("mixed_")), None)
    if quantized:
        info.holds["quantized"] = ", ".join(quantized)
        info.traps.append(QUANTIZED_TRAP.format(policies=", ".join(quantized),
                                                mode=quantized[0].split("_from_")[0].split("/")[0]))
    if mixed:
        info.holds["dtype policy"] = mixed
        if scaled:  # a LossScaleOptimizer's state (not with compile(auto_scale_loss=False))
            info.traps.append(MIXED_TRAP.format(policy=mixed))
    if info.kind == "keras3-archive":
        if info.holds["custom objects"]:
            info.traps.append("needs its custom classes: import or register them before loading "
                              "(custom_objects=)")
            info.how_to_load = _archive_weights_code(
                path,
                """
                # The architecture needs its custom classes: keras.models.load_model(path,
                # custom_objects={...}) with them. Without them, these are the weights:
                """,
                'report = f"{len(loaded)} weight arrays (the model needs its custom classes)"')
            info.partial = "only the weights were read: the model needs its custom classes"
        elif mixed and scaled and not (lam or tfsm):
            info.how_to_load = loading_code(path, f"""
                import keras
                # compile() wraps the optimizer in a LossScaleOptimizer only under a mixed global policy
                before = keras.mixed_precision.global_policy()
                keras.mixed_precision.set_dtype_policy({mixed!r})
                try:
                    loaded = keras.models.load_model(path)
                finally:
                    keras.mixed_precision.set_dtype_policy(before)
                """) + code_tail("""
                optimizer = loaded.optimizer
                report = (f"{type(loaded).__name__} {loaded.name!r}: {len(loaded.weights)} weights; "
                          f"{type(optimizer).__name__} with {len(optimizer.variables)} variables kept")
                """)
        else:
            info.how_to_load = loading_code(path, LAMBDA_NOTE * lam + TFSM_NOTE * tfsm + textwrap.dedent("""
                import keras
                loaded = keras.models.load_model(path)
                """)) + MODEL_REPORT
            if lam or tfsm:
                info.trusted_code = info.how_to_load.replace("load_model(path)",
                                                             "load_model(path, safe_mode=False)")
        return info
    info.traps.append(f"Keras 3's load_model cannot rebuild a .keras written by Keras {version} "
                      "(its config names Keras 2 modules)")
    if info.holds["custom objects"]:
        info.runs_code.append(MODULES)
    if version.startswith("2.15"):
        info.how_to_load = loading_code(path, """
            import os, tempfile, keras
            from helpers.keras2 import convert_legacy_h5, run_keras2
            with tempfile.TemporaryDirectory() as folder:  # never next to the file; removed after
                # Keras 2 (tf-keras) reads its own .keras and re-saves it as a legacy .h5 ...
                source = os.path.abspath(path)  # the Keras 2 process runs in `folder`
                run_keras2(f"keras.models.load_model({source!r}, compile=False).save('model.h5')",
                           cwd=folder)
                # ... which the course's recipe carries into Keras 3, weight by weight.
                out = os.path.join(folder, "model.keras")
                convert_legacy_h5(os.path.join(folder, "model.h5"), out)
                loaded = keras.models.load_model(out)
            """) + MODEL_REPORT
    else:
        info.traps.append("tf-keras 2.21 cannot read it either: "
                          "build the model in Keras 3 code and assign these weights by layer")
        info.how_to_load = _archive_weights_code(
            path,
            """
            # Neither Keras 3 nor tf-keras rebuilds it: build the model in Keras 3 code and
            # assign these arrays layer by layer (model.get_layer(name).set_weights([...])).
            """,
            'report = f"{len(loaded)} weight arrays, e.g. {sorted(loaded)[:1]}"')
        info.partial = "only the weights were read: no Keras here rebuilds this model"
    return info



def _archive_weights_code(path: str, why: str, report: str) -> str:
    """Loading code that reads every weight array of a ``.keras`` archive (no model is rebuilt)."""
    return loading_code(path, "import h5py, io, zipfile\n" + textwrap.dedent(why).strip() + "\n" + """\
with zipfile.ZipFile(path) as archive:
    data = io.BytesIO(archive.read("model.weights.h5"))
loaded = {}
def keep(name, item):  # visititems stops at the first non-None return
    if isinstance(item, h5py.Dataset):
        loaded[name] = item[()]
with h5py.File(data, "r") as h5:
    h5.visititems(keep)
""" + report)



def _archive_optimizer(archive: zipfile.ZipFile) -> tuple[bool, bool]:
    """Whether the archive's model.weights.h5 holds optimizer variables, and a LossScaleOptimizer's (an inner
    optimizer); reads only HDF5 metadata."""
    import h5py

    member = archive.getinfo("model.weights.h5")
    if member.compress_type == zipfile.ZIP_STORED:  # Keras writes it so: read it in place
        source: Any = _Window(archive.filename, member)
    else:
        source = archive.open(member)  # streamed: seeks back re-read from the start, never all in memory
    with source, h5py.File(source, "r") as h5:
        held = "optimizer" in h5 and len(h5["optimizer"]) > 0
        return held, held and "inner_optimizer" in h5["optimizer"]


class _Window(io.RawIOBase):
    """The bytes of one stored (uncompressed) zip member, read from the archive file in place."""

    def __init__(self, path: str, member: zipfile.ZipInfo) -> None:
        super().__init__()
        self._file = open(path, "rb")
        self._file.seek(member.header_offset)
        header = self._file.read(30)
        if header[:4] != b"PK\x03\x04":
            raise OSError("model.weights.h5: bad local header in the zip (damaged)")
        name_length, extra_length = int.from_bytes(header[26:28], "little"), int.from_bytes(header[28:30], "little")
        self._start = member.header_offset + 30 + name_length + extra_length
        self._size, self._position = member.file_size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._position, 2: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: Any) -> int:
        count = max(0, min(len(buffer), self._size - self._position))
        self._file.seek(self._start + self._position)
        data = self._file.read(count)
        buffer[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        self._file.close()
        super().close()

