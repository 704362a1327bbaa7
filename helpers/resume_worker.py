"""The training programs notebook 11 runs in fresh processes, and the runs it builds in its own.

``run(argv)`` is the entry point ``helpers.resume`` calls in a fresh process
(``call_in_fresh_process("helpers.resume_worker:run", [MODE, ...])``, see ``helpers.fresh_process``);
it returns a JSON-able dict. Modes:

* ``train``: the resumable run of ``build_run`` through ``helpers.resume.train_resumably``
  (a save every ``--save-every`` steps, 1 by default; ``--stop-at`` interrupts it, ``--announce`` tells the parent ``saving N`` before each save so
  that it can kill the process there);
* ``naive``: the same run saved the naive way, NumPy files written in place;
* ``multiworker``: one of two ``MultiWorkerMirroredStrategy`` workers on 127.0.0.1.

``build_run`` and ``build_mw_model`` are importable, so the notebook builds the very same runs in
its own process. This module imports ``helpers.resume`` (down); ``helpers.resume`` names it only
as a string, the function a fresh process runs. It has no command line (the old
``python -m helpers.resume_worker`` protocol is gone): the only way in is ``run`` in a fresh process.

Example (in a fresh process, as the library calls it: a training run turns on TensorFlow's op
determinism for its whole process):
    >>> import tempfile
    >>> from helpers.fresh_process import call_in_fresh_process
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     call_in_fresh_process("helpers.resume_worker:run",
    ...                           ["train", "--dir", folder, "--steps", "2", "--width", "4"])["step"]
    2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from helpers.fresh_process import tell_parent
from helpers.resume import naive_audit, naive_files, state_digest, state_table, train_resumably, untracked_variables

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PIECES", "Run", "build_mw_model", "build_run", "fit_after_restore", "naive_audit", "resume_without", "run",
           "save_mw_checkpoint"]

PIECES = ("model", "optimizer", "step", "generator", "iterator")


@dataclass
class Run:
    """Everything a training run changes, and the step that changes it."""

    model: object
    optimizer: object
    step: object
    generator: object
    iterator: object
    train_step: object
    start: tempfile.TemporaryDirectory | None = field(default=None, repr=False)

    def pieces(self, leave_out: tuple[str, ...] = ()) -> dict[str, object]:
        """The state as ``{name: object}``, without the pieces named in ``leave_out``."""
        return {name: getattr(self, name) for name in PIECES if name not in leave_out}

    def checkpoint(self, leave_out: tuple[str, ...] = ()) -> object:
        """A ``tf.train.Checkpoint`` of every piece but ``leave_out``; "seeds" is Dropout's seed state."""
        import tensorflow as tf

        pieces = self.pieces(leave_out)
        if "seeds" not in leave_out:
            pieces["seeds"] = untracked_variables(self.model)
        return tf.train.Checkpoint(**pieces)

    def reset(self) -> None:
        """Put every piece back in the state it was built in (``build_run(..., resettable=True)``).

        The objects stay, so ``train_step`` is not traced again (tracing is most of what a short
        run costs): ``resume_without`` reuses two runs this way instead of building new ones.

        Example:
            >>> run = build_run(width=4, resettable=True)
            >>> built = state_digest(run.model, run.optimizer, run.generator)
            >>> _ = run.train_step(); _ = run.step.assign_add(1)
            >>> run.reset()
            >>> state_digest(run.model, run.optimizer, run.generator) == built, int(run.step)
            (True, 0)
        """
        if self.start is None:
            raise ValueError("this run keeps no copy of its start: build it with build_run(..., resettable=True)")
        self.checkpoint().read(os.path.join(self.start.name, "start")).assert_consumed()


def build_run(width: int = 32, seed: int = 0, resettable: bool = False) -> Run:
    """A small regression run that uses every kind of training state.

    Dropout (a Keras seed state in the model), Adam with a decaying learning
    rate (slots, an iteration count and a schedule position), a step counter,
    a ``tf.random.Generator`` adding noise to the inputs, and a shuffled,
    repeated ``tf.data`` pipeline. With ``resettable=True`` the run keeps a copy of its start
    (a checkpoint in a temporary folder, removed with the run) for ``Run.reset()``.
    """
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([
        keras.Input((8,)),
        keras.layers.Dense(width, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(width, activation="relu"),
        keras.layers.Dense(1),
    ])
    schedule = keras.optimizers.schedules.ExponentialDecay(0.01, decay_steps=10, decay_rate=0.5)
    optimizer = keras.optimizers.Adam(schedule)
    optimizer.build(model.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64, name="step")
    generator = tf.random.Generator.from_seed(seed + 7)
    features = np.random.default_rng(seed).normal(size=(96, 8)).astype("float32")
    targets = features @ np.linspace(-1.0, 1.0, 8, dtype="float32")[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((features, targets))
    dataset = dataset.shuffle(96, seed=seed).batch(16).repeat()
    iterator = iter(dataset)

    @tf.function
    def train_step():
        x, y = next(iterator)
        x = x + generator.normal(tf.shape(x), stddev=0.05)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    run = Run(model, optimizer, step, generator, iterator, train_step)
    if resettable:
        run.start = tempfile.TemporaryDirectory(prefix="run_start_")
        run.checkpoint().write(os.path.join(run.start.name, "start"))
    return run


def _train(args: argparse.Namespace) -> dict:
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    run = build_run(args.width)
    checkpoint = run.checkpoint()
    announce = (lambda n: tell_parent(f"saving {n}")) if args.announce else None
    train_resumably(checkpoint, run.step, run.train_step, args.dir, args.steps, save_every=args.save_every,
                    stop_at=args.stop_at, before_save=announce)
    return {"step": int(run.step), "digest": state_digest(*run.pieces().values()), "pieces": state_table(**run.pieces())}


def resume_without(directory: str, leave_out: tuple[str, ...], stop_at: int, total: int, width: int = 32,
                   runs: tuple[Run, Run] | None = None) -> Run:
    """Train to ``stop_at`` saving every piece but ``leave_out``, then resume fresh objects to ``total``.

    The second half runs in this process on newly built objects, which is
    what a new process starts from. A left-out step counter restarts at 0,
    so the resumed loop runs ``total`` more steps. ``runs``: two runs built
    with ``build_run(width, resettable=True)``, reset here to their start
    instead of building new ones (the same state, without tracing
    ``train_step`` again); the second one is returned.

    Example:
        >>> runs = build_run(width=4, resettable=True), build_run(width=4, resettable=True)
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     reused = resume_without(os.path.join(folder, "a"), ("step",), 2, 3, width=4, runs=runs)
        ...     built = resume_without(os.path.join(folder, "b"), ("step",), 2, 3, width=4)
        >>> int(reused.optimizer.iterations), int(built.optimizer.iterations)
        (5, 5)
        >>> state_digest(reused.model) == state_digest(built.model)
        True
    """
    import tensorflow as tf

    if runs is None:
        first, second = build_run(width), build_run(width)
    else:
        first, second = runs
        first.reset()
        second.reset()
    manager = tf.train.CheckpointManager(first.checkpoint(leave_out), directory, max_to_keep=1)
    while int(first.step) < stop_at:
        first.train_step()
        first.step.assign_add(1)
    manager.save()
    second.checkpoint(leave_out).restore(manager.latest_checkpoint).assert_consumed()
    steps_run = 0
    while int(second.step) < total and steps_run < total:
        second.train_step()
        second.step.assign_add(1)
        steps_run += 1
    return second


def _naive(args: argparse.Namespace) -> dict:
    """Save by writing NumPy files in place, one after another: what a crash does to that."""
    import numpy as np

    run = build_run(args.width)
    os.makedirs(args.dir, exist_ok=True)
    paths = naive_files(args.dir)
    if os.path.exists(paths["step"]):
        for variable, value in zip(run.model.weights, np.load(paths["weights"], allow_pickle=True)):
            variable.assign(value)
        for variable, value in zip(run.optimizer.variables, np.load(paths["slots"], allow_pickle=True)):
            variable.assign(value)
        run.step.assign(int(np.load(paths["step"])))
    while int(run.step) < args.steps:
        run.train_step()
        run.step.assign_add(1)
        if args.announce:
            tell_parent(f"saving {int(run.step)}")
        stamp = int(run.step)
        # each file records the step it was written at, to see mismatches after a crash
        np.save(paths["weights"], np.array([w.numpy() for w in run.model.weights] + [stamp], dtype=object), allow_pickle=True)
        np.save(paths["slots"], np.array([v.numpy() for v in run.optimizer.variables] + [stamp], dtype=object), allow_pickle=True)
        np.save(paths["step"], np.array(stamp))
    return {"step": int(run.step)}


def build_mw_model(seed: int = 1):
    """The model and optimizer of sections 9-11 (build them under a strategy's scope, or not)."""
    import keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    optimizer = keras.optimizers.SGD(0.05, momentum=0.9)
    optimizer.build(model.trainable_variables)
    return model, optimizer


def fit_after_restore(
    checkpoint_path: str, build_first: bool, features: np.ndarray, targets: np.ndarray
) -> dict:
    """Restore ``checkpoint_path`` under a two-device ``MirroredStrategy``, then ``fit`` one epoch.

    Chapter 11, section 9, runs it in fresh processes, one per case, side by side: the process
    splits its CPU into two logical devices (before TensorFlow's runtime starts) and builds
    the model of ``build_mw_model(seed=5)`` in the strategy's scope, with its optimizer built
    first, or a new, unbuilt one (``build_first=False``). Returns whether
    ``assert_consumed()`` passed after the restore, and ``state_digest`` of the model and
    optimizer after the epoch.

    Example:
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     import numpy as np
        ...     from helpers.fresh_process import call_in_fresh_process
        ...     path = call_in_fresh_process("helpers.resume_worker:save_mw_checkpoint", folder)
        ...     x = np.ones((32, 4), "float32")
        ...     call_in_fresh_process("helpers.resume_worker:fit_after_restore", path, False, x,
        ...                           x[:, :1])["assert_consumed"]
        False
    """
    import keras
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model, optimizer = build_mw_model(seed=5)
        if not build_first:
            optimizer = keras.optimizers.SGD(0.05, momentum=0.9)  # not built
        status = tf.train.Checkpoint(model=model, optimizer=optimizer).read(checkpoint_path)
        model.compile(optimizer, "mse")
    try:
        status.assert_consumed()
        consumed = True
    except AssertionError:
        consumed = False
    model.fit(features, targets, batch_size=16, epochs=1, shuffle=False, verbose=0)
    return {"assert_consumed": consumed, "digest": state_digest(model, optimizer)}


def save_mw_checkpoint(folder: str, seed: int = 2) -> str:
    """Write ``build_mw_model(seed)``'s model and optimizer to ``folder/ckpt``; its path."""
    import tensorflow as tf

    model, optimizer = build_mw_model(seed=seed)
    return tf.train.Checkpoint(model=model, optimizer=optimizer).write(os.path.join(folder, "ckpt"))


def _multiworker(args: argparse.Namespace) -> dict:
    ports = args.ports.split(",")
    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
        "task": {"type": "worker", "index": args.index},
    })
    import numpy as np
    import tensorflow as tf

    options = tf.distribute.experimental.CommunicationOptions(timeout_seconds=30)
    strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    with strategy.scope():
        model, optimizer = build_mw_model()
    features = np.random.default_rng(1).normal(size=(64, 4)).astype("float32")
    targets = features.sum(axis=1, keepdims=True)
    dataset = tf.data.Dataset.from_tensor_slices((features, targets)).batch(16).repeat()
    iterator = iter(strategy.experimental_distribute_dataset(dataset))

    @tf.function
    def train_step():
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum((model(x) - y) ** 2) / 16.0
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        strategy.run(replica_step, args=next(iterator))

    for _ in range(args.steps):
        train_step()
    resolver = strategy.cluster_resolver
    is_chief = resolver.task_id == 0
    # every worker must take part in the save; only the chief's copy is kept
    folder = os.path.join(args.dir, "chief") if is_chief else os.path.join(args.dir, f"worker_tmp_{resolver.task_id}")
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).write(os.path.join(folder, "ckpt"))
    if not is_chief:
        tf.io.gfile.rmtree(folder)
    return {
        "role": "chief" if is_chief else "worker",
        "replicas": strategy.num_replicas_in_sync,
        "saved": os.path.relpath(path, args.dir),
        "kept": os.path.exists(folder),
        "digest": state_digest(model, optimizer),
    }


class _Parser(argparse.ArgumentParser):
    """Raises ``ValueError`` with argparse's message instead of printing it and exiting."""

    def error(self, message: str):  # type: ignore[override]
        raise ValueError(f"{self.prog}: {message}")


def run(argv: list[str]) -> dict:
    """Run one mode (``train``, ``naive`` or ``multiworker``) with command-line style ``argv``; its report.

    Example:
        >>> run(["train", "--steps", "1"])
        Traceback (most recent call last):
        ...
        ValueError: helpers.resume_worker: the following arguments are required: --dir
    """
    parser = _Parser(prog="helpers.resume_worker")
    parser.add_argument("mode", choices=["train", "naive", "multiworker"])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--stop-at", type=int, default=None)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--save-every", type=int, default=1)
    parser.add_argument("--announce", action="store_true")
    parser.add_argument("--index", type=int, default=0)
    parser.add_argument("--ports", default="")
    args = parser.parse_args([str(arg) for arg in argv])
    os.environ.pop("TF_CONFIG", None)  # only the multiworker mode sets its own
    return {"train": _train, "naive": _naive, "multiworker": _multiworker}[args.mode](args)
