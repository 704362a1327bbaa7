"""Resume training exactly, survive crashes, and check it (notebook 11).

Recipes:

* ``state_digest(*trackables)``: one short hex string for every variable,
  ``tf.random.Generator`` and ``tf.data`` iterator reachable from the given
  objects. Equal digests mean equal variables, bit for bit, and iterators
  that will yield the same next two elements (two positions of a dataset
  repeated without shuffling can share a digest), so it shows that a resumed
  run holds the uninterrupted one's state;
* ``state_table(**pieces)``: one digest per named piece, to see *which* piece
  of two states differs;
* ``train_resumably(...)``: the resumable training loop: restore the newest
  checkpoint if there is one, run the steps still missing, save through a
  ``tf.train.CheckpointManager``;
* ``audit_checkpoint_folder(directory)``: after a crash, what the folder's
  ``checkpoint`` state file names, whether each named checkpoint loads, and
  what half-written leftovers lie beside them;
* ``run_worker(...)``, ``crash_and_resume(...)``, ``run_two_workers(...)``,
  ``time_saves(...)``: the harness the notebook uses to run training in fresh
  processes (``helpers.fresh_process`` starts them; each runs
  ``helpers.resume_worker.run``, named as a string, as that module imports this
  one), kill them, and time saves.

Example:
    >>> import tensorflow as tf
    >>> a, b = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    >>> state_digest(a) == state_digest(b)
    True
    >>> _ = b.assign_add([0.0, 1e-3])
    >>> state_digest(a) == state_digest(b)
    False
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import keras
import numpy as np
import tensorflow as tf

from tensorflow.core.protobuf.trackable_object_graph_pb2 import TrackableObjectGraph

from helpers.errors import NotACheckpointError, NotWritableError, TrainingStateError
from helpers.files import refuse_glob_characters, refuse_unwritable
from helpers.fresh_process import FreshProcess, FreshProcessError, fork_workers, start_fresh_process
from helpers.inspection import OBJECT_GRAPH_KEY, open_checkpoint, read_tensor

__all__ = [
    "FolderAudit",
    "NotWritableError",
    "TrainingStateError",
    "audit_checkpoint_folder",
    "checkpoint_misfits",
    "crash_and_resume",
    "fit_with_interruption",
    "fork_workers",
    "free_ports",
    "naive_audit",
    "naive_files",
    "run_two_workers",
    "run_worker",
    "start_worker",
    "state_digest",
    "state_table",
    "time_saves",
    "train_resumably",
    "untracked_variables",
    "walk_objects",
]


# --------------------------------------------------------------------------- digests

_VARIABLES = (tf.Variable, keras.Variable)


def _children(obj: object) -> dict[str, object]:
    return dict(tf.train.TrackableView(obj).children(obj))


def walk_objects(root: object) -> list[tuple[str, object]]:
    """Every object reachable from ``root`` as ``(path, object)``, breadth first, children in name order, each once.

    Example:
        >>> step = tf.Variable(0)
        >>> [path for path, _ in walk_objects(tf.train.Checkpoint(step=step, again=step))]
        ['', 'again']
    """
    seen: set[int] = set()
    found: list[tuple[str, object]] = []
    queue: list[tuple[str, object]] = [("", root)]
    while queue:
        path, obj = queue.pop(0)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        found.append((path, obj))
        if isinstance(obj, _VARIABLES):
            continue
        children = _children(obj)
        queue.extend((f"{path}/{name}" if path else name, children[name]) for name in sorted(children))
    # Keras keeps some state outside the object graph (a Dropout's SeedGenerator): add it last
    for path, obj in list(found):
        if isinstance(obj, keras.layers.Layer):
            for index, variable in enumerate(obj.variables):
                if id(variable) not in seen:
                    seen.add(id(variable))
                    found.append((f"{path}/<variables>/{index}", variable))
    return found


def untracked_variables(*trackables: object) -> list:
    """Variables of Keras layers that ``tf.train.Checkpoint`` of ``trackables`` would not save.

    In Keras 3 the state of a ``SeedGenerator`` (the one inside ``Dropout``,
    ``RandomFlip``, ``GaussianNoise``...) is in ``layer.variables`` but not in
    the object graph a checkpoint walks. Add the list to the checkpoint:
    ``tf.train.Checkpoint(model=model, seed_states=untracked_variables(model))``.

    Example:
        >>> import keras
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.5)])
        >>> [v.path.split("/")[-1] for v in untracked_variables(model)]
        ['seed_generator_state']
    """
    if not trackables:
        raise TrainingStateError("untracked_variables needs at least one object, e.g. untracked_variables(model)")
    tracked: set[int] = set()
    layers = []
    for position, root in enumerate(trackables):
        if not _is_trackable(root):
            raise TrainingStateError(f"argument {position} is a {type(root).__name__}, not a trackable TensorFlow object")
        seen: set[int] = set()
        queue = [root]
        while queue:
            obj = queue.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if isinstance(obj, _VARIABLES):
                tracked.add(id(obj))
                continue
            if isinstance(obj, keras.layers.Layer):
                layers.append(obj)
            queue.extend(_children(obj).values())
    found, ids = [], set()
    for layer in layers:
        for variable in layer.variables:
            if id(variable) not in tracked and id(variable) not in ids:
                ids.add(id(variable))
                found.append(variable)
    return found


def _iterator_bytes(iterator: tf.data.Iterator, peek: int = 2) -> bytes:
    """What ``iterator`` yields next, read from a copy so that it does not move.

    The copy gets the position through a checkpoint of the iterator (written
    to a temporary folder and read back). Neither of the two fuller identities
    of a position is stable on TensorFlow 2.21, so the digest uses the next
    ``peek`` elements (with a shuffle buffer they pin the position down) and
    marks the end of the data:

    * the checkpoint's bytes hold however many elements a prefetch stage
      (``tf.data`` adds one by default) had buffered at that moment, so one
      position gives different bytes from run to run;
    * what a restored copy yields after the current epoch of a reshuffled
      dataset depends on what other iterators over datasets with the same
      seeds did in this process, so reading far ahead is not stable either.

    The price: two positions whose next ``peek`` elements are equal (a
    dataset repeated without shuffling, say) share a digest.
    """
    dataset = getattr(iterator, "_dataset", None)
    if dataset is None:
        raise TrainingStateError(f"cannot read the position of {type(iterator).__name__}: only tf.data iterators made with iter(dataset) are supported")
    copy = iter(dataset)
    with tempfile.TemporaryDirectory() as folder:
        try:
            saved = tf.train.Checkpoint(iterator=iterator).write(os.path.join(folder, "position"))
        except (tf.errors.OpError, ValueError) as error:  # from_generator iterators cannot be checkpointed
            raise TrainingStateError(
                f"cannot read the position of this iterator: it cannot be checkpointed ({str(error).splitlines()[0][:160]}); "
                "a tf.data pipeline built from tensors or files can"
            ) from None
        tf.train.Checkpoint(iterator=copy).read(saved).assert_consumed()
    hasher = hashlib.sha256()
    for _ in range(peek):
        element = copy.get_next_as_optional()
        if not element.has_value():
            hasher.update(b"<end of data>")
            break
        for tensor in tf.nest.flatten(element.get_value()):
            hasher.update(str(tensor.dtype).encode() + str(tuple(tensor.shape)).encode())
            hasher.update(tensor.numpy().tobytes())
    return hasher.digest()


def _is_trackable(obj: object) -> bool:
    try:
        tf.train.TrackableView(obj).children(obj)
    except (AttributeError, TypeError):
        return False
    return True


def state_digest(*trackables: object) -> str:
    """A short hex digest of all training state reachable from ``trackables``.

    Every ``tf.Variable`` (weights, optimizer slots and counters, the step,
    ``tf.random.Generator`` and Keras seed states) contributes its path,
    dtype, shape and bytes; every ``tf.data`` iterator contributes the next
    two elements it yields, read from a copy restored from the iterator's
    checkpoint (two positions with equal next elements, as in a dataset
    repeated without shuffling, share a digest: see ``_iterator_bytes`` for
    why the checkpoint itself cannot be hashed). Objects are visited in a
    stable order (argument order, then attribute names), so equal digests
    mean equal variables, bit for bit, and iterators that will yield the same
    next two elements. Raises
    ``TrainingStateError`` when given nothing, something that is not
    trackable, or an object that holds no state yet (an unbuilt model).

    Example:
        >>> step = tf.Variable(3, dtype=tf.int64)
        >>> state_digest(step) == state_digest(tf.Variable(3, dtype=tf.int64))
        True
        >>> state_digest(step) == state_digest(tf.Variable(3, dtype=tf.int32))
        False
    """
    if not trackables:
        raise TrainingStateError("state_digest needs at least one object, e.g. state_digest(model, optimizer, step)")
    hasher = hashlib.sha256()
    for position, root in enumerate(trackables):
        if not _is_trackable(root):
            raise TrainingStateError(
                f"argument {position} is a {type(root).__name__}, not a trackable TensorFlow object "
                "(a model, layer, optimizer, tf.Variable, tf.random.Generator, tf.data iterator or tf.train.Checkpoint)"
            )
        pieces = 0
        for path, obj in walk_objects(root):
            key = f"{position}/{path}"
            if isinstance(obj, _VARIABLES):
                value = obj.numpy()
                hasher.update(f"{key}:{value.dtype}:{value.shape}".encode())
                hasher.update(np.ascontiguousarray(value).tobytes())
                pieces += 1
            elif isinstance(obj, tf.data.Iterator):
                hasher.update(f"{key}:iterator".encode())
                hasher.update(_iterator_bytes(obj))
                pieces += 1
        if pieces == 0:
            raise TrainingStateError(
                f"argument {position} ({type(root).__name__}) holds no variables yet: build the model "
                "(call it once) and the optimizer (optimizer.build(model.trainable_variables)) first"
            )
    return hasher.hexdigest()[:16]


def state_table(**pieces: object) -> dict[str, str]:
    """``{name: state_digest(piece)}`` for each named piece of training state.

    Compare two tables to see which piece of two runs differs.

    Example:
        >>> table = state_table(step=tf.Variable(1), lr=tf.Variable(0.5))
        >>> sorted(table)
        ['lr', 'step']
    """
    if not pieces:
        raise TrainingStateError("state_table needs named pieces, e.g. state_table(model=model, step=step)")
    return {name: state_digest(piece) for name, piece in pieces.items()}


# --------------------------------------------------------------------------- the loop


def train_resumably(
    checkpoint: tf.train.Checkpoint,
    step: tf.Variable,
    train_step: Callable[[], object],
    directory: str | os.PathLike,
    total_steps: int,
    *,
    save_every: int = 1,
    max_to_keep: int = 3,
    stop_at: int | None = None,
    before_save: Callable[[int], None] | None = None,
) -> str | None:
    """Run ``train_step`` until ``step`` reaches ``total_steps``, resuming from ``directory``.

    ``checkpoint`` must track ``step`` and everything else the run needs (the
    model, the optimizer, random generators, data iterators). The newest
    checkpoint in ``directory`` is restored first: every saved value must find
    its object, with the same shape and dtype, and every object its value;
    this is checked before anything is assigned (``checkpoint_misfits``), so
    a checkpoint of another program, or one with extra objects, raises
    ``TrainingStateError`` and changes nothing. So does a Keras 2
    optimizer's state (see ``checkpoint_misfits``); ``train_step()`` runs
    once per step and must not touch ``step``, which this loop increments; a
    checkpoint is saved every ``save_every`` steps and at the end. ``stop_at``
    ends the run early (to simulate an interruption). ``before_save(n)`` is
    called just before each save. Returns the newest checkpoint's path.

    Refused before anything runs: a folder that cannot be written into
    (``NotWritableError``), and a folder holding checkpoints without the
    ``checkpoint`` state file that lists them (``Checkpoint.write`` makes
    no state file, so ``CheckpointManager`` would not see them and the run
    would start from step 0 beside them: ``TrainingStateError``). With a
    state file, its newest checkpoint is the one resumed from; checkpoints
    it does not list (a save torn by a crash) are left alone, as
    ``audit_checkpoint_folder`` shows.

    Example:
        >>> step = tf.Variable(0, dtype=tf.int64)
        >>> w = tf.Variable(1.0)
        >>> ckpt = tf.train.Checkpoint(step=step, w=w)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     os.path.basename(train_resumably(ckpt, step, lambda: w.assign(w * 2), folder, 3))
        'ckpt-3'
        >>> int(step), float(w)
        (3, 8.0)
    """
    if not isinstance(step, tf.Variable) or not step.dtype.is_integer:
        raise TrainingStateError(f"step must be an integer tf.Variable, got {type(step).__name__}")
    if not isinstance(checkpoint, tf.train.Checkpoint):
        raise TrainingStateError(f"checkpoint must be a tf.train.Checkpoint, got {type(checkpoint).__name__}")
    if not any(obj is step for _, obj in walk_objects(checkpoint)):
        raise TrainingStateError("the checkpoint does not track `step`: add it, e.g. tf.train.Checkpoint(..., step=step)")
    for name, value in (("total_steps", total_steps), ("save_every", save_every), ("max_to_keep", max_to_keep)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "total_steps" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'total_steps' else 'positive'} int, got {value!r}")
    folder = os.fspath(directory)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise NotACheckpointError(folder, "a file, not a folder to keep checkpoints in")
    refuse_glob_characters(folder, folder=True)  # TensorFlow would save there, then fail to restore
    refuse_unwritable(os.path.join(folder, "checkpoint"))  # before the first step, not at the first save
    manager = tf.train.CheckpointManager(checkpoint, folder, max_to_keep=max_to_keep)
    unlisted = _unlisted_checkpoints(folder) if not manager.latest_checkpoint else []
    if unlisted:
        raise TrainingStateError(
            f"{folder!r} holds checkpoint(s) {', '.join(map(repr, unlisted))} but no 'checkpoint' state file "
            "listing them (Checkpoint.write makes none): CheckpointManager would not see them and the run "
            "would start from step 0 beside them; nothing was run. To go on from one, restore it with "
            "checkpoint.read(prefix).assert_consumed() and train into a new folder; to start afresh, "
            "use an empty folder")
    if manager.latest_checkpoint:
        latest = manager.latest_checkpoint
        problems = checkpoint_misfits(checkpoint, latest)  # before anything is assigned
        if problems:
            raise TrainingStateError(f"the newest checkpoint in {folder!r} does not fit this run, nothing was "
                                     "restored:\n  " + "\n  ".join(problems))
        try:
            checkpoint.restore(latest).assert_consumed()  # every saved value found its object, and back
        except AssertionError as error:
            raise TrainingStateError(
                f"the newest checkpoint in {folder!r} does not fit this run: {str(error).splitlines()[0][:200]}"
            ) from None
    end = total_steps if stop_at is None else min(stop_at, total_steps)
    while int(step) < end:
        train_step()
        step.assign_add(1)
        if int(step) % save_every == 0 or int(step) == total_steps:
            if before_save is not None:
                before_save(int(step))
            manager.save(checkpoint_number=int(step))
    return manager.latest_checkpoint


def _unlisted_checkpoints(folder: str) -> list[str]:
    """The checkpoint prefixes (by their ``.index`` files) in ``folder``, by name."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return [name[: -len(".index")] for name in names if name.endswith(".index")]


def checkpoint_misfits(checkpoint: tf.train.Checkpoint, prefix: str | os.PathLike) -> list[str]:
    """What keeps ``checkpoint.restore(prefix)`` from restoring exactly; an empty list when it fits.

    The saved object graph is walked from the root next to the live objects,
    by the same child names TensorFlow matches on, without assigning
    anything. Listed: saved values with no live object, live variables with
    no saved value, values of another shape or dtype, and a Keras 2
    optimizer's state meeting a Keras 3 optimizer. Both save slots under
    ``optimizer/_variables/N``, but Keras 3 keeps ``learning_rate`` among
    them (at index 1), so every slot would pair with its neighbour: carry
    such state over with ``helpers.keras2.restore_keras2_checkpoint(path,
    model, optimizer=optimizer)`` and save a Keras 3 checkpoint to resume
    from.

    Example:
        >>> step = tf.Variable(0, dtype=tf.int64)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = tf.train.Checkpoint(step=step).save(os.path.join(folder, "ckpt"))
        ...     checkpoint_misfits(tf.train.Checkpoint(step=step, w=tf.Variable(1.0)), path)
        ["'w' has no saved value"]
    """
    prefix_text = os.fspath(prefix)
    checkpoint.save_counter  # noqa: B018: made on first use, as every save does; the saved one needs it
    reader = open_checkpoint(prefix_text)
    try:
        raw = read_tensor(reader, prefix_text, OBJECT_GRAPH_KEY)
        graph = TrackableObjectGraph.FromString(raw if isinstance(raw, bytes) else raw.item())
    except (NotACheckpointError, KeyError) as error:
        return [f"it has no object graph ({error}): it was not written by tf.train.Checkpoint"]
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    live: dict[int, object] = {0: checkpoint}
    paths: dict[int, str] = {0: ""}
    problems: list[str] = []
    queue = [0]
    while queue:
        node_id = queue.pop(0)
        children = _children(live[node_id]) if not isinstance(live[node_id], _VARIABLES) else {}
        for reference in graph.nodes[node_id].children:
            path = f"{paths[node_id]}/{reference.local_name}".lstrip("/")
            if reference.node_id in live:
                continue
            if reference.local_name not in children:
                saved = _saved_keys(graph, reference.node_id)
                if saved:
                    problems.append(f"{path!r} is saved ({len(saved)} value(s)) but this run has no such object")
                continue
            live[reference.node_id], paths[reference.node_id] = children[reference.local_name], path
            queue.append(reference.node_id)
        if isinstance(live[node_id], keras.optimizers.Optimizer):
            problems.extend(_keras2_optimizer(graph, node_id, live[node_id], paths[node_id]))
    for node_id, obj in live.items():
        values = [a for a in graph.nodes[node_id].attributes if a.name == "VARIABLE_VALUE"]
        if isinstance(obj, _VARIABLES) and values:
            key = values[0].checkpoint_key
            saved_shape, saved_dtype = tuple(shapes.get(key, ())), dtypes.get(key)
            if saved_shape != tuple(obj.shape) or (saved_dtype is not None and saved_dtype != tf.as_dtype(obj.dtype)):
                problems.append(f"{paths[node_id]!r} is {saved_dtype.name if saved_dtype else '?'}{list(saved_shape)} "
                                f"in the checkpoint, {tf.as_dtype(obj.dtype).name}{list(obj.shape)} in this run")
    matched = {id(obj) for obj in live.values()}
    for path, obj in walk_objects(checkpoint):
        if isinstance(obj, _VARIABLES) and id(obj) not in matched and "<variables>" not in path:
            problems.append(f"{path!r} has no saved value")
    return problems


def _saved_keys(graph: TrackableObjectGraph, start: int) -> list[str]:
    keys, seen, queue = [], set(), [start]
    while queue:
        node_id = queue.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        keys.extend(a.checkpoint_key for a in graph.nodes[node_id].attributes)
        queue.extend(reference.node_id for reference in graph.nodes[node_id].children)
    return keys


def _keras2_optimizer(graph: TrackableObjectGraph, node_id: int, optimizer, path: str) -> list[str]:
    """A Keras 2 optimizer's saved ``_variables`` list lacks the learning rate Keras 3 keeps at index 1."""
    children = {reference.local_name: reference.node_id for reference in graph.nodes[node_id].children}
    if "_variables" not in children or "_learning_rate" not in children:
        return []
    listed = {reference.node_id for reference in graph.nodes[children["_variables"]].children}
    live_rate = getattr(optimizer, "_learning_rate", None)
    if children["_learning_rate"] in listed or not any(v is live_rate for v in optimizer.variables):
        return []
    return [f"{path!r} holds a Keras 2 optimizer's state: its learning rate is not among optimizer/_variables, "
            "where Keras 3 keeps it at index 1, so every slot would pair with its neighbour. Carry it over "
            "with helpers.keras2.restore_keras2_checkpoint(path, model, optimizer=optimizer), then save a "
            "Keras 3 checkpoint to resume from"]


# --------------------------------------------------------------------------- crashes


@dataclass(frozen=True)
class FolderAudit:
    """What a checkpoint folder holds after a crash (see ``audit_checkpoint_folder``)."""

    latest: str | None
    latest_loads: bool
    listed: tuple[str, ...]
    listed_missing: tuple[str, ...]
    leftovers: tuple[str, ...]
    unlisted: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """The state file names a latest checkpoint, and every value of it reads back."""
        return self.latest is not None and self.latest_loads


def audit_checkpoint_folder(directory: str | os.PathLike) -> FolderAudit:
    """Check a folder written by ``CheckpointManager`` after the process died.

    Reports the checkpoint the ``checkpoint`` state file names as latest and
    whether all its values read back, the older checkpoints it lists whose
    files are gone, checkpoints on disk it does not list, and leftovers of an
    interrupted save (``*_temp`` folders). Raises ``NotACheckpointError`` for
    a missing folder; a folder with no state file yet gives ``latest=None``.

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     manager = tf.train.CheckpointManager(tf.train.Checkpoint(w=tf.Variable(1.0)), folder, 2)
        ...     _ = manager.save()
        ...     audit = audit_checkpoint_folder(folder)
        >>> audit.latest, audit.ok
        ('ckpt-1', True)
    """
    folder = os.fspath(directory)
    if not os.path.isdir(folder):
        raise NotACheckpointError(folder, "no such folder" if not os.path.exists(folder) else "a file, not a folder")
    names = sorted(os.listdir(folder))
    leftovers = tuple(name for name in names if name.endswith("_temp") or ".tmp" in name or "tempstate" in name)
    on_disk = {name[: -len(".index")] for name in names if name.endswith(".index")}
    state = tf.train.get_checkpoint_state(folder) if os.path.exists(os.path.join(folder, "checkpoint")) else None
    if state is None or not state.model_checkpoint_path:
        return FolderAudit(None, False, (), (), leftovers, tuple(sorted(on_disk)))
    def local(path: str) -> str:
        return os.path.join(folder, os.path.basename(path))  # state files may name other machines' paths
    listed = tuple(os.path.basename(p) for p in state.all_model_checkpoint_paths) or (os.path.basename(state.model_checkpoint_path),)
    missing = tuple(name for name in listed if not os.path.exists(local(name) + ".index"))
    latest = local(state.model_checkpoint_path)
    try:
        reader = open_checkpoint(latest)
        for key, dtype in reader.get_variable_to_dtype_map().items():
            if dtype == tf.variant:  # a tf.data iterator's state: NumPy cannot hold it, TensorFlow can
                tf.raw_ops.RestoreV2(prefix=latest, tensor_names=[key], shape_and_slices=[""], dtypes=[dtype])
            else:
                read_tensor(reader, latest, key)
        loads = True
    except (NotACheckpointError, tf.errors.OpError):
        loads = False
    unlisted = tuple(sorted(on_disk - set(listed)))
    return FolderAudit(os.path.basename(latest), loads, listed, missing, leftovers, unlisted)


# --------------------------------------------------------------------------- processes


def naive_files(folder: str) -> dict[str, str]:
    """The three NumPy files the naive saver of notebook 11 writes in place, by name.

    Example:
        >>> sorted(naive_files("run"))
        ['slots', 'step', 'weights']
    """
    return {name: os.path.join(folder, name + ".npy") for name in ("weights", "slots", "step")}


def naive_audit(folder: str) -> dict:
    """Can the naive files be loaded, and were they written at the same step?

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     naive_audit(folder)
        {'loads': False, 'consistent': False, 'weights': 'missing', 'slots': 'missing', 'step': 'missing'}
    """
    stamps = {}
    for name, path in naive_files(folder).items():
        try:
            value = np.load(path, allow_pickle=True)
            stamps[name] = int(value) if name == "step" else int(value[-1])
        except FileNotFoundError:
            stamps[name] = "missing"
        except Exception:  # noqa: BLE001: any failure to parse is what we report
            stamps[name] = "unreadable"
    numbers = [s for s in stamps.values() if isinstance(s, int)]
    loads = len(numbers) == len(stamps)
    return {"loads": loads, "consistent": loads and len(set(numbers)) == 1, **stamps}


WORKER = "helpers.resume_worker:run"  # what a fresh process runs: named, not imported (it imports this module)


def start_worker(*args: object) -> FreshProcess:
    """Start ``helpers.resume_worker.run(ARGS)`` in a fresh process and return at once.

    ``run_worker`` is this and ``.result(timeout)``: start a worker first when this process
    has work of its own to do meanwhile (the worker runs on another core).

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     worker = start_worker("train", "--dir", folder, "--steps", 3, "--width", 4)
        ...     worker.result(timeout=120)["step"]
        3
    """
    return start_fresh_process(WORKER, [str(arg) for arg in args])


def run_worker(*args: object, timeout: float = 120) -> dict:
    """Run ``helpers.resume_worker.run(ARGS)`` in a fresh process; its report.

    On Linux the process is forked from a server that has imported TensorFlow once, so it
    starts in milliseconds, with no TensorFlow state of its own; elsewhere (or with
    ``COURSE_WORKERS=spawn``) it is a new interpreter. Raises ``FreshProcessError`` with the
    worker's error if it fails, or after ``timeout`` seconds.

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     run_worker("train", "--dir", folder, "--steps", 3, "--width", 4)["step"]
        3
    """
    return start_worker(*args).result(timeout)


def _end(process: FreshProcess) -> None:
    """Kill a worker and wait for it: its end (killed, failed or finished) is not news here."""
    process.kill()
    try:
        process.result(timeout=30)
    except FreshProcessError:
        pass


def crash_and_resume(
    directory: str | os.PathLike,
    kills: int = 4,
    seed: int = 0,
    steps: int = 40,
    timeout: float = 120,
    naive: bool = False,
    width: int = 32,
) -> list[dict]:
    """Start the training worker ``kills`` times, SIGKILL it at a random moment each time.

    Each run resumes from what the previous one left. The kill comes a
    random 0-40 ms after the worker announces its 2nd, 3rd or 4th save since
    it started (so many land inside the save) or, one time in three,
    10-50 ms after the announcement (often after the save ended).
    ``width`` sizes the model: wider means longer saves. After each kill the
    folder is audited (``audit_checkpoint_folder``, or for ``naive=True``
    ``naive_audit``). Returns one row per kill.

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [row["latest_loads"] for row in crash_and_resume(folder, kills=1, steps=6, width=4)]
        [True]
    """
    if kills < 1:
        raise ValueError(f"kills must be at least 1, got {kills!r}")
    rng = random.Random(seed)
    folder = os.fspath(directory)
    rows = []
    for attempt in range(1, kills + 1):
        mode = "naive" if naive else "train"
        process = start_worker(mode, "--dir", folder, "--steps", steps, "--width", width, "--announce")
        saves_to_wait = rng.randint(2, 4)  # the first save of a start completes
        between = rng.random() < 1 / 3
        delay = rng.uniform(0.0, 0.04)
        seen, killed_at = 0, None
        for message in process.messages(timeout):
            seen += 1
            if seen == saves_to_wait:
                time.sleep(0.01 + delay if between else delay)
                killed_at = int(str(message).split()[1])
                break
        _end(process)
        if naive:
            report = naive_audit(folder)
        else:
            audit = audit_checkpoint_folder(folder)
            report = {"latest": audit.latest, "latest_loads": audit.latest_loads,
                      "listed_missing": len(audit.listed_missing), "leftovers": len(audit.leftovers)}
        rows.append({"kill": attempt, "near save": killed_at, "moment": "after it" if between else "during it", **report})
    return rows


def free_ports(count: int = 2) -> list[int]:
    """``count`` free TCP ports on 127.0.0.1, chosen by the operating system now.

    Example:
        >>> len(set(free_ports(2)))
        2
    """
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_two_workers(directory: str | os.PathLike, steps: int = 6, timeout: float = 90) -> list[dict]:
    """Train with ``MultiWorkerMirroredStrategy`` on two worker processes on 127.0.0.1.

    Each worker gets a ``TF_CONFIG`` naming both (ports chosen now), trains
    ``steps`` steps and saves: the chief into ``directory/chief``, the other
    into a temporary folder it deletes. Both are killed after ``timeout``
    seconds, so the call always returns. Returns each worker's report.

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [report["role"] for report in run_two_workers(folder, steps=1)]
        ['chief', 'worker']
    """
    folder = os.fspath(directory)
    ports = ",".join(map(str, free_ports(2)))
    processes = [start_worker("multiworker", "--dir", folder, "--steps", steps, "--index", index, "--ports", ports)
                 for index in (0, 1)]
    deadline = time.monotonic() + timeout
    try:
        return [process.result(max(1.0, deadline - time.monotonic())) for process in processes]
    finally:
        for process in processes:
            process.kill()


def time_saves(
    make_checkpoint: Callable[[], tf.train.Checkpoint],
    train_step: Callable[[], object],
    prefix: str | os.PathLike,
    steps: int = 30,
    save_every: int = 5,
    options: tf.train.CheckpointOptions | None = None,
) -> np.ndarray:
    """Seconds taken by each of ``steps`` training steps, writing a checkpoint every ``save_every``.

    A step's time includes the save that follows it, so saves show as
    stalls. With ``options=None`` nothing is written; pass
    ``tf.train.CheckpointOptions()`` for synchronous writes or
    ``CheckpointOptions(enable_async=True)`` for asynchronous ones. Each
    write uses a new ``make_checkpoint()`` (with Keras 3 variables, one
    ``tf.train.Checkpoint`` object can save asynchronously only once) at
    ``prefix-<step>``; the call waits for every asynchronous write to end.

    Example:
        >>> w = tf.Variable(1.0)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     times = time_saves(lambda: tf.train.Checkpoint(w=w), lambda: w.assign_add(1.0),
        ...                        os.path.join(folder, "ckpt"), steps=4, save_every=2,
        ...                        options=tf.train.CheckpointOptions())
        ...     sorted(name for name in os.listdir(folder) if name.endswith(".index"))
        ['ckpt-2.index', 'ckpt-4.index']
        >>> times.shape
        (4,)
    """
    if steps < 1 or save_every < 1:
        raise ValueError(f"steps and save_every must be positive, got {steps!r} and {save_every!r}")
    times = np.zeros(steps)
    pending = []
    for i in range(steps):
        start = time.perf_counter()
        train_step()
        if options is not None and (i + 1) % save_every == 0:
            checkpoint = make_checkpoint()
            checkpoint.write(f"{os.fspath(prefix)}-{i + 1}", options=options)
            pending.append(checkpoint)
        times[i] = time.perf_counter() - start
    if options is not None and options.enable_async:
        for checkpoint in pending:
            checkpoint.sync()
    return times


# --------------------------------------------------------------------------- model.fit


class _Interrupted(Exception):
    """Raised by ``_InterruptAfter`` to stop ``fit`` the way a crash would."""


class _InterruptAfter(keras.callbacks.Callback):
    def __init__(self, batches: int) -> None:
        super().__init__()
        self.batches, self.seen = batches, 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1
        if self.seen == self.batches:
            raise _Interrupted()


def fit_with_interruption(
    make_model: Callable[[], keras.Model],
    x: np.ndarray,
    y: np.ndarray,
    backup_dir: str | os.PathLike,
    *,
    epochs: int,
    batch_size: int,
    stop_after_batches: int,
    save_freq: str | int = "epoch",
) -> keras.Model:
    """``fit`` with ``BackupAndRestore``, interrupted after some batches, then fit again on a fresh model.

    ``make_model()`` must return a compiled, built model, made the same way
    each time (seeded): the second model stands for the one a restarted
    process builds. Returns that second model after its ``fit``.

    Example:
        >>> def make_model():
        ...     keras.utils.set_random_seed(0)
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        ...     model.compile("sgd", "mse")
        ...     return model
        >>> x, y = np.ones((32, 2), "float32"), np.ones((32, 1), "float32")
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     resumed = fit_with_interruption(make_model, x, y, os.path.join(folder, "backup"),
        ...                                     epochs=2, batch_size=16, stop_after_batches=3)
        >>> int(resumed.optimizer.iterations)
        4
    """
    if stop_after_batches < 1:
        raise ValueError(f"stop_after_batches must be at least 1, got {stop_after_batches!r}")
    folder = os.fspath(backup_dir)
    first = make_model()
    try:
        first.fit(x, y, epochs=epochs, batch_size=batch_size, verbose=0,
                  callbacks=[keras.callbacks.BackupAndRestore(folder, save_freq=save_freq),
                             _InterruptAfter(stop_after_batches)])
    except _Interrupted:
        pass
    else:
        raise ValueError(f"fit ended before batch {stop_after_batches}: nothing was interrupted")
    second = make_model()
    second.fit(x, y, epochs=epochs, batch_size=batch_size, verbose=0,
               callbacks=[keras.callbacks.BackupAndRestore(folder, save_freq=save_freq)])
    return second
