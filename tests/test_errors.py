"""helpers.errors: every exception of the recipes lives there, keeps its base, and stays importable
from the topic module that raises it."""

from __future__ import annotations

import importlib
import inspect

import pytest

from helpers import errors

# (topic module, error it raises, the built-in it is a subclass of)
MOVED = [
    ("metagraph", "ScopeError", ValueError),
    ("ensembles", "InvalidLabelsError", ValueError),
    ("migration", "UnwritableValueError", ValueError),
    ("object_graph", "NameBasedCheckpointError", ValueError),
    ("keras_files", "NotAKerasFileError", ValueError),
    ("saved_models", "NotASavedModelError", ValueError),
    ("saved_models", "SignatureNotFoundError", ValueError),
    ("keras2", "NotAKeras2CheckpointError", ValueError),
    ("keras2", "ModelNotBuiltError", ValueError),
    ("keras2", "Keras2MismatchError", ValueError),
    ("keras2", "Keras2RunError", RuntimeError),
    ("keras2", "LegacyModelError", ValueError),
    ("keras2", "Keras2ExportError", ValueError),
    ("resume", "TrainingStateError", ValueError),
    ("deploy", "NotAModelFileError", ValueError),
    ("deploy", "TensorNotFoundError", ValueError),
    ("deploy", "FreezeError", ValueError),
    ("keras_files", "ReloadMismatchError", ValueError),
    ("keras_files", "ReloadFailedError", ValueError),
]
TOPICS = ["cloning", "deploy", "ensembles", "files", "inspection", "keras2", "keras_files", "metagraph", "migration",
    ("identify", "NotAModelFileError", ValueError),
    ("identify", "VerificationError", ValueError),
]
TOPICS = ["cloning", "ensembles", "files", "identify", "inspection", "keras2", "keras_files", "metagraph", "migration",
          "object_graph", "resume", "saved_models", "scopes", "state_sync", "timing"]


@pytest.mark.parametrize(("module", "name", "base"), MOVED, ids=[name for _, name, _ in MOVED])
def test_each_error_lives_in_helpers_errors_and_is_importable_where_it_is_raised(module, name, base):
    error = getattr(errors, name)
    assert getattr(importlib.import_module(f"helpers.{module}"), name) is error
    assert error.__module__ == "helpers.errors" and issubclass(error, base)
    assert error.__doc__ and error.__doc__.strip()


@pytest.mark.parametrize("module", TOPICS)
def test_no_topic_module_defines_an_exception_of_its_own(module):
    mod = importlib.import_module(f"helpers.{module}")
    own = [name for name, value in vars(mod).items()
           if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == mod.__name__
           and not name.startswith("_")]  # private control flow (resume._Interrupted) is not an error
    assert own == []


def test_the_errors_about_bad_input_are_value_errors():
    classes = [value for value in vars(errors).values()
               if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == "helpers.errors"]
    assert len(classes) > 4  # the shared ones and one or more of each topic
    # the two about a run, not its input: code in its own process failed
    assert [c.__name__ for c in classes if not issubclass(c, ValueError)] == ["Keras2RunError", "FreshProcessError"]


def test_moved_errors_keep_their_messages():
    assert str(errors.NotASavedModelError(b"model.keras", "a file")) == (
        "'model.keras' is not a readable SavedModel: a file")
    assert str(errors.NotAKerasFileError("m.ckpt", "no such file")) == "'m.ckpt' is not a readable Keras file: no such file"
    mismatch = errors.Keras2MismatchError("k2/w", "Functional 'm'", hint="drop it",
                                          missing=["dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"])
    assert "'dense/kernel'" in str(mismatch) and mismatch.missing == ["dense/kernel/.ATTRIBUTES/VARIABLE_VALUE"]
    assert str(mismatch).endswith("hint: drop it")


def test_a_partial_model_error_lists_the_unfilled_variables_and_the_route():
    error = errors.PartialModelError("tf1/m", "Dense 'dense'", hint="fix the map", missing=["dense/bias"],
                                     shape_mismatches=[("dense/kernel", (3, 2), (4, 2))])
    assert isinstance(error, errors.CheckpointMismatchError) and error.problems == 2
    assert str(error).splitlines() == [
        "checkpoint 'tf1/m' does not fill every variable of Dense 'dense':",
        "  missing from the checkpoint: 'dense/bias'",
        "  wrong shape: 'dense/kernel' is (3, 2) in the checkpoint, (4, 2) in the target",
        "  hint: fix the map",
    ]
    assert error.hint == "fix the map" and error.missing == ["dense/bias"]
