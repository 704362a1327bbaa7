"""Checks for notebook 16 (one model across Keras backends, and Orbax checkpoints).

Each check builds its own models and folders in a fresh temporary folder, with names other
than the notebook's, calls the learner's function, and says what is wrong when the answer is
not right. Nothing here starts another process, so no check waits on one.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from unittest import mock

import keras
import numpy as np

from helpers.checks import Hint, exercise_check, require
from helpers.checks.toolkit import no_warning_lines, working_folder

__all__ = ["check_latest_orbax_step", "check_save_with_orbax", "check_variables_by_path"]


@contextlib.contextmanager
def _in_temporary_folder() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="ex16-") as folder, working_folder(folder):
        yield folder


@contextlib.contextmanager
def _orbax_writes_awaited() -> Iterator[None]:
    """Each ``OrbaxCheckpoint`` waits for its writes when ``fit`` ends, inside the check.

    With a relative folder, Orbax's threads go on logging the failed write after ``fit`` has
    returned: without this wait, the traceback would land under the learner's check cell, after
    the check's quiet block.
    """
    original = keras.callbacks.OrbaxCheckpoint.on_train_end

    def on_train_end(self: keras.callbacks.OrbaxCheckpoint, logs: dict | None = None) -> None:
        original(self, logs)
        with contextlib.suppress(Exception):  # a failed write: the check's own tests name it
            self.wait_until_finished()

    with mock.patch.object(keras.callbacks.OrbaxCheckpoint, "on_train_end", on_train_end):
        yield


def _trained_model(seed: int) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    """BatchNormalization (non-trainable state), a frozen layer, Adam with state: every kind of variable."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,), name="features")
    h = keras.layers.Dense(5, name="frozen_in")(inputs)
    h = keras.layers.BatchNormalization(name="stats")(h)
    outputs = keras.layers.Dense(1, name="head")(h)
    model = keras.Model(inputs, outputs, name=f"exercise_net_{seed}")
    model.get_layer("frozen_in").trainable = False
    model.compile(keras.optimizers.Adam(0.05), "mse")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(24, 3)).astype("float32")
    y = rng.normal(size=(24, 1)).astype("float32")
    with no_warning_lines():
        model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    return model, x, y


# --------------------------------------------------------------------------- 16.1


@exercise_check("16.1")
def check_variables_by_path(variables_by_path: Callable[[keras.Model], dict]) -> str:
    model, x, y = _trained_model(16)
    expected = {v.path: np.array(v.numpy()) for v in model.variables + model.optimizer.variables}
    with no_warning_lines():
        got = variables_by_path(model)
    require(isinstance(got, dict), f"return a dict from each variable's path to its value, got {type(got).__name__}")
    keys = set(got)
    optimizer_paths = {v.path for v in model.optimizer.variables}
    stats = {v.path for v in model.get_layer("stats").non_trainable_variables}
    frozen = {v.path for v in model.get_layer("frozen_in").variables}
    require(bool(keys & set(expected)),
            Hint("name each value by the variable's `path` ('head/kernel'), as section 2 does",
                 "use `variable.path` as the key, not `variable.name`", kind="names"))
    require(not stats - keys, Hint("BatchNormalization's moving statistics are variables too (section 2)",
                                   "take `model.variables`, not `model.trainable_variables`", kind="non-trainable"))
    require(not frozen - keys, Hint("a frozen layer's variables are still the model's (section 2)",
                                    "take `model.variables`, not `model.trainable_variables`", kind="non-trainable"))
    require(not optimizer_paths - keys, Hint("the optimizer's state crosses too: its step count and Adam's moments",
                                             "add `model.optimizer.variables` to the model's variables",
                                             kind="optimizer"))
    require(keys == set(expected), f"the keys should be exactly the {len(expected)} paths of the model's and its "
                                   f"optimizer's variables; extra: {sorted(keys - set(expected))[:3]}")
    for path, value in expected.items():
        item = got[path]
        if isinstance(item, np.generic):  # `v.numpy()` of a scalar variable: a 0-d value, as good as an array
            item = got[path] = np.asarray(item)
        require(isinstance(item, np.ndarray) and item.shape == value.shape,
                f"'{path}' should map to a NumPy array of shape {value.shape}, got {type(item).__name__}")
        require(item.dtype == value.dtype,
                Hint(f"'{path}' should keep the variable's dtype {value.dtype}, got {item.dtype}",
                     "copy the values as they are, without casting", kind="dtype"))
        require(np.array_equal(item, value), f"the value for '{path}' is not the variable's value")
    with no_warning_lines():
        model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    require(all(np.array_equal(got[path], value) for path, value in expected.items()),
            Hint("the arrays changed when the model trained on: they are views of the variables, not copies",
                 "copy each value: `np.array(variable.numpy())`", kind="copies"))
    return (f"{len(expected)} values by path, {len(optimizer_paths)} of them the optimizer's, "
            "copied so that training on leaves them as they were")


# --------------------------------------------------------------------------- 16.2


def _values(model: keras.Model) -> dict[str, np.ndarray]:
    return {v.path: np.array(v.numpy()) for v in model.variables + model.optimizer.variables}


@exercise_check("16.2")
def check_save_with_orbax(save_with_orbax: Callable[..., str]) -> str:
    with _in_temporary_folder() as here:
        model, x, y = _trained_model(7)
        before = int(model.optimizer.iterations)
        printed = io.StringIO()
        with no_warning_lines(), _orbax_writes_awaited(), contextlib.redirect_stdout(printed):
            answer = save_with_orbax(model, x, y, "runs/first")
        require(not printed.getvalue().strip(), Hint("train without output, as the exercise asks",
                                                     "pass verbose=0 to fit", kind="verbose"))
        require(int(model.optimizer.iterations) == before + 3,
                "train for exactly one epoch with batch size 8: 24 samples are 3 steps")
        require(isinstance(answer, str), f"return the folder's absolute path as a str, got {type(answer).__name__}")
        folder = os.path.join(here, "runs", "first")
        require(os.path.isabs(answer) and os.path.realpath(answer) == os.path.realpath(folder),
                Hint("return the folder as an absolute path, the one Orbax must get (section 7)",
                     "return `os.path.abspath(folder)`", kind="absolute"))
        require(os.path.isdir(folder), Hint("nothing was written to the folder: save during the fit (section 7)",
                                            "pass callbacks=[keras.callbacks.OrbaxCheckpoint(...)] to fit",
                                            kind="no callback"))
        steps = sorted(os.listdir(folder))
        require(any(step.isdigit() for step in steps),
                Hint("no complete step was written: Orbax needs an absolute path (section 7, the relative trap)",
                     "pass `os.path.abspath(folder)` to `keras.callbacks.OrbaxCheckpoint`", kind="relative"))
        require(any(os.path.exists(os.path.join(folder, step, "model_config")) for step in steps if step.isdigit()),
                Hint("the steps hold weights only, no model to load: save the whole model",
                     "leave save_weights_only at its default (False)", kind="weights only"))
        with no_warning_lines():
            restored = keras.saving.load_model(folder)
        want, got = _values(model), _values(restored)
        require(sorted(want) == sorted(got) and all(np.array_equal(want[p], got[p]) for p in want),
                "the checkpoint does not restore the model as trained: save with the callback during this fit")
        with no_warning_lines(), _orbax_writes_awaited():
            os.makedirs("runs/second")
            raised = None
            try:
                save_with_orbax(model, x, y, "runs/second")
            except FileExistsError as error:
                raised = error
            except Exception as error:  # noqa: BLE001: the hint names what was raised
                raised = error
        require(isinstance(raised, FileExistsError),
                Hint("an existing folder must be refused: Orbax skips a second run's steps (section 7)",
                     "raise FileExistsError when `os.path.exists(folder)`, before training", kind="exists"))
        require(os.listdir("runs/second") == [] and int(model.optimizer.iterations) == before + 3,
                "refuse an existing folder before training or writing anything")
    return "one epoch saved to Orbax under an absolute path, restored equal; an existing folder refused"


# --------------------------------------------------------------------------- 16.3


def _step(root: str, name: str, complete: bool = True) -> None:
    """A step folder; an unfinished one (``N.orbax-checkpoint-tmp...``) holds the metadata file too, as
    Orbax writes it first; ``complete=False`` on a numbered folder leaves the file out."""
    os.makedirs(os.path.join(root, name, "pytree"))
    if complete or not name.isdigit():
        with open(os.path.join(root, name, "_CHECKPOINT_METADATA"), "w") as file:
            file.write("{}")


def _newest_first(root: str) -> None:
    """Give lower step numbers later modification times, so that time does not follow the numbers."""
    names = sorted((n for n in os.listdir(root) if n.split(".")[0].isdigit()), key=lambda n: int(n.split(".")[0]))
    for age, name in enumerate(names):
        os.utime(os.path.join(root, name), (1_700_000_000 - age * 60, 1_700_000_000 - age * 60))


def _snapshot(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, dirs, files in os.walk(root) for f in dirs + files)


@exercise_check("16.3")
def check_latest_orbax_step(latest_orbax_step: Callable[[str], int | None]) -> str:
    with _in_temporary_folder():
        cases: list[tuple[str, list[tuple[str, bool]], list[str], int | None, Hint | str]] = [
            ("plain", [("0", True), ("1", True), ("2", True)], [], 2, "the largest step number"),
            ("numeric", [("9", True), ("10", True)], [], 10,
             Hint("step names are numbers: '10' comes after '9'", "compare `int(name)`, not the names",
                  kind="numeric")),
            ("unfinished", [("3", True), ("4.orbax-checkpoint-tmp-17", False)], [], 3,
             Hint("an unfinished step (its name ends in a temporary suffix) is not a step", "keep names that are digits",
                  kind="tmp")),
            ("incomplete", [("5", True), ("6", False)], [], 5,
             Hint("a step folder without _CHECKPOINT_METADATA is not complete", "require the file in the step folder",
                  kind="incomplete")),
            ("other", [("2", True), ("best", True)], ["8"], 2,
             Hint("only folders named by a number are steps: a file named '8' is not", "check the entry is a folder",
                  kind="other")),

            ("none", [("0.orbax-checkpoint-tmp-1", False)], [], None,
             Hint("with no complete step the answer is None", "return None when no step qualifies", kind="none")),
            ("empty", [], [], None,
             Hint("with no complete step the answer is None", "return None when no step qualifies", kind="none")),
        ]
        for label, steps, files, want, hint in cases:
            root = os.path.join("orbax", label)
            os.makedirs(root)
            for name, complete in steps:
                _step(root, name, complete)
            for name in files:
                with open(os.path.join(root, name), "w") as file:
                    file.write("x")
            _newest_first(root)
            before = _snapshot(root)
            got = latest_orbax_step(root)
            require(_snapshot(root) == before, "do not change the folder: read it only")
            require(got == want and type(got) is type(want), hint if isinstance(hint, Hint) else
                    f"expected {want!r} for a folder with {[s for s, _ in steps]}, got {got!r}")
        raised = None
        try:
            latest_orbax_step(os.path.join("orbax", "missing"))
        except Exception as error:  # noqa: BLE001: the hint names what was raised
            raised = error
        require(isinstance(raised, FileNotFoundError),
                Hint("a folder that does not exist is an error, not 'no step'",
                     "raise FileNotFoundError when `os.path.isdir(folder)` is false", kind="missing"))
    return "the latest complete step in each of 7 folders (numbers compared as numbers, unfinished steps skipped)"
