"""Checks for notebook 15 (what is this file, and how do I load it today?).

Each check writes its own files in a fresh temporary folder, with names and
models other than the notebook's, calls the learner's function, and says what
is wrong when the answer is not right.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import os
import pkgutil
import shutil
import sys
import tempfile
import types
import zipfile
from collections.abc import Callable, Iterator

import keras
import numpy as np
import tensorflow as tf

import helpers.identify
from helpers.errors import VerificationError
from helpers.checks import CheckFailed, Hint, exercise_check, require
from helpers.checks.toolkit import call_answer, no_warning_lines

__all__ = ["check_checkpoint_flavour", "check_keras_file_facts", "check_predict_any"]

V1 = tf.compat.v1


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """``no_warning_lines``, and a collection before the levels come back.

    A dropped restore status logs its unrestored values ("ERROR:tensorflow:...") when it is collected.
    """
    with no_warning_lines():
        yield
        gc.collect()


# --------------------------------------------------------------------------- a forbidden helper

_CALLED: list[str] = []


def _helper_called(name: str) -> None:
    """What a forbidden function runs instead of its own code: note the call, and stop the answer."""
    _CALLED.append(name)
    raise CheckFailed(_FORBIDDEN_HINT)


_STAND_IN = "_course_check_forbids_this"  # set in the forbidden module's globals while a check runs


def _forbidden(*args, **kwargs):
    # This code runs with the globals of the function whose code it replaced: the name below is
    # put there by `_without`, so nothing is imported back up.
    _course_check_forbids_this()  # noqa: F821


_FORBIDDEN_HINT = Hint(
    idea="this exercise asks you to read the file yourself, as the chapter's sections before it do: "
         "helpers.identify gives the answer away, under whatever name you imported it",
    fix="do not call identify (nor anything from helpers.identify): read the keys or the file with "
        "the libraries the exercise names",
    kind="forbidden helper")


def _modules_of(package: types.ModuleType) -> list[types.ModuleType]:
    """``package`` and every module in it, each imported (a reader is a module of its own)."""
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), package.__name__ + "."):
        importlib.import_module(info.name)
    return [module for name, module in sorted(sys.modules.items())
            if name == package.__name__ or name.startswith(package.__name__ + ".")]


def _functions_of(module: types.ModuleType) -> list[types.FunctionType]:
    """The functions ``module`` defines, its classes' methods included (closures aside)."""
    functions = []
    for value in vars(module).values():
        if isinstance(value, types.FunctionType):
            functions.append(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            functions += [member for member in vars(value).values() if isinstance(member, types.FunctionType)]
    return [function for function in functions
            if function.__module__ == module.__name__ and not function.__code__.co_freevars]


@contextlib.contextmanager
def _without(package: types.ModuleType) -> Iterator[None]:
    """Every function ``package``'s modules define raises while the block runs, under any name.

    A notebook that ran ``from helpers.identify import identify`` holds the function object
    itself, so replacing the module's attribute would not reach it: each function's code is
    replaced instead, and put back after. Each module of the package gets the stand-in its
    replaced functions call, so a reader called directly is caught too.
    """
    modules = _modules_of(package)
    saved = {function: function.__code__ for module in modules for function in _functions_of(module)}
    _CALLED.clear()
    for module in modules:
        setattr(module, _STAND_IN, lambda: _helper_called(package.__name__))
    try:
        for function in saved:
            function.__code__ = _forbidden.__code__
        yield
    finally:
        for function, code in saved.items():
            function.__code__ = code
        for module in modules:
            delattr(module, _STAND_IN)


def _require_no_forbidden_call() -> None:
    require(not _CALLED, _FORBIDDEN_HINT)


# --------------------------------------------------------------------------- 15.1


def _saver_checkpoint(prefix: str, meta: bool) -> str:
    with tf.Graph().as_default():
        V1.get_variable("encoder/w", initializer=np.full((2, 3), 0.5, np.float32))
        V1.get_variable("encoder/b", initializer=np.array([1.0, -2.0, 3.0], np.float32))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver().save(sess, prefix, write_meta_graph=meta)


def _keras2_layout(prefix: str, optimizer: bool) -> str:
    """A checkpoint with Keras 2's object paths (``layer_with_weights-0``, ``keras_api``...)."""
    layer = tf.Module()
    layer.kernel = tf.Variable(np.full((3, 2), 0.25, np.float32))
    layer.bias = tf.Variable([0.5, -0.5])
    edges = {"layer_with_weights-0": layer, "layer-0": tf.Module(), "keras_api": tf.Module()}
    if not optimizer:  # save_weights: the model is the root
        return tf.train.Checkpoint(**edges).write(prefix)
    net = tf.Module()
    for name, child in edges.items():
        setattr(net, name, child)
    opt = tf.Module()
    opt._iterations = tf.Variable(7, dtype=tf.int64)  # as Keras 2.15 writes them
    opt._learning_rate = tf.Variable(0.01)
    opt._variables = [tf.Variable(7), tf.Variable(np.ones((3, 2), np.float32))]
    return tf.train.Checkpoint(model=net, optimizer=opt).write(prefix)


def _flavour_fixtures(folder: str) -> dict[str, tuple[str, str]]:
    """{label: (prefix, expected flavour)}."""
    path = lambda *parts: os.path.join(folder, *parts)  # noqa: E731
    fixtures = {
        "a TF1 Saver checkpoint with its .meta": (_saver_checkpoint(path("a", "net"), True), "tf1"),
        "a TF1 Saver checkpoint without a .meta": (_saver_checkpoint(path("b", "net"), False), "tf1"),
    }
    module = tf.Module()
    module.scale = tf.Variable([2.0, 3.0])
    module.shift = tf.Variable(-1.0)
    plain = tf.train.Checkpoint(net=module).write(path("c", "net"))
    with open(fixtures["a TF1 Saver checkpoint with its .meta"][0] + ".meta", "rb") as source, \
            open(plain + ".meta", "wb") as copy:
        copy.write(source.read())  # a .meta someone copied beside a TF2 checkpoint
    fixtures["a TF2 tf.Module checkpoint with a .meta beside it"] = (plain, "module")
    keras.utils.set_random_seed(15)
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(3)(inputs)))
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    fixtures["a Keras 3 model with its optimizer"] = (
        tf.train.Checkpoint(model=model, optimizer=optimizer).write(path("d", "net")), "keras3")
    sequential = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2), keras.layers.BatchNormalization()])
    fixtures["a Keras 3 Sequential without an optimizer"] = (
        tf.train.Checkpoint(network=sequential).write(path("e", "net")), "keras3")
    fixtures["a subclassed Keras 3 model"] = (
        tf.train.Checkpoint(classifier=_subclassed()).write(path("h", "net")), "keras3")
    fixtures["Keras 2 keys, weights only"] = (_keras2_layout(path("f", "net"), False), "keras2")
    fixtures["Keras 2 keys with an optimizer"] = (_keras2_layout(path("g", "net"), True), "keras2")
    private = tf.Module()
    private.scale = tf.Variable([2.0, 3.0])
    private._offset = tf.Variable(-1.0)  # a private name of the learner's code, no Keras sign
    fixtures["a tf.Module with a private attribute"] = (
        tf.train.Checkpoint(net=private).write(path("i", "net")), "module")
    return fixtures


class _Scale(keras.layers.Layer):
    """A layer of the learner's kind: its weights are named by the code (``w``, ``b``)."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        self.b = self.add_weight(shape=(), initializer="zeros", name="b")

    def call(self, x):
        return x * self.w + self.b


class _Classifier(keras.Model):
    """A subclassed Keras 3 model: no '_functional' or '_operations' in its keys."""

    def __init__(self):
        # Named: Keras 3.15 leaves a name scope open after calling a layer whose generated name
        # starts with '__' (a class named '_Scale'), and every later model's paths nest under it.
        super().__init__(name="classifier")
        self.scale_layer = _Scale(name="scale")  # a name with 'layer' in it: no Keras 2 sign
        self.head = keras.layers.Dense(2)

    def call(self, x):
        return self.head(self.scale_layer(x))


def _subclassed() -> keras.Model:
    model = _Classifier()
    model(np.ones((1, 3), np.float32))  # built, so that its variables exist
    return model


@exercise_check("15.1")
def check_checkpoint_flavour(checkpoint_flavour: Callable[[str], str]) -> str:
    with _quiet(), tempfile.TemporaryDirectory() as folder:
        fixtures = _flavour_fixtures(folder)
        with _without(helpers.identify):
            for label, (prefix, expected) in fixtures.items():
                got = checkpoint_flavour(prefix)
                _require_no_forbidden_call()
                rule = "not tf1" if got == "tf1" else expected
                idea, fix = _FLAVOUR_HINTS[rule]
                seen = f"for {label} you returned {got!r:.12}, expected {expected!r}. "
                require(got == expected, Hint(seen + idea, seen + fix, kind=f"flavour {rule}"))
    return (f"{len(fixtures)} checkpoints named right: TF1 with and without .meta, TF2 modules (one "
            "with a .meta beside it), Keras 3 (functional, Sequential, subclassed) and Keras 2 keys")


_SECTION = 'section "Checkpoints: which flavour"'
# (the rule, and where the chapter shows it; the precise fix): a hint in two steps.
_FLAVOUR_HINTS = {
    "tf1": (f"A TF1 Saver keys each variable by its graph name and stores no object graph; files "
            f"beside a prefix prove nothing ({_SECTION}).",
            "No '_CHECKPOINTABLE_OBJECT_GRAPH' key means 'tf1'; a .meta beside it does not."),
    "not tf1": (f"An object-based checkpoint stores its object graph, whatever files lie beside the "
                f"prefix ({_SECTION}).",
                "Say 'tf1' only when the '_CHECKPOINTABLE_OBJECT_GRAPH' key is missing: a .meta beside "
                "the prefix does not make it TF1."),
    "module": (f"A key is the path of names from the root: a tf.Module's are only the "
               f"names its code gave, `_private` ones too, none of Keras' ({_SECTION}).",
               "No 'layer-N' or 'layer_with_weights-N' part, and none of '_functional', "
               "'_operations', '_layers', '_kernel': 'module'."),
    "keras3": (f"Keras 3 keys hold Keras' names (starting with '_'): in a subclassed model "
               f"after your layer names; beside an optimizer, under its '_trainable_variables' "
               f"({_SECTION}).",
               "A part (split at '/') among '_functional', '_operations', '_layers', '_kernel', "
               "'_trainable_variables' means 'keras3'."),
    "keras2": (f"Keras 2 names a Sequential or functional model's layers by their position, not by "
               f"attribute names ({_SECTION}).",
               "A part 'layer-N' or 'layer_with_weights-N' means 'keras2' (its optimizer's "
               "'_variables' is no Keras 3 sign)."),
}


# --------------------------------------------------------------------------- 15.2


def _keras3_files(folder: str) -> list[tuple[str, str, tuple[str | None, bool]]]:
    """Keras 3 files of every layout it writes, with a model never compiled and one trained."""
    keras.utils.set_random_seed(152)
    version = keras.__version__

    def model() -> keras.Model:
        inputs = keras.Input((3,), name="signal")
        hidden = keras.layers.BatchNormalization(name="norm")(keras.layers.Dense(4, name="body")(inputs))
        return keras.Model(inputs, keras.layers.Dense(2, name="score")(hidden), name="meter")

    fresh, trained = model(), model()
    trained.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    trained.fit(np.linspace(-1, 1, 24).reshape(8, 3), np.ones((8, 2)), epochs=2, verbose=0)
    path = lambda name: os.path.join(folder, name)  # noqa: E731
    fresh.save(path("fresh_model.keras"))
    trained.save(path("run_7.keras"))
    fresh.save_weights(path("fresh.weights.h5"))
    trained.save_weights(path("run_7.weights.h5"))
    trained.save(path("run_7_legacy.h5"))
    fresh.save(path("fresh_legacy.hdf5"))
    shutil.copyfile(path("run_7.keras"), path("renamed_run.h5"))  # a zip someone gave an .h5 name
    return [
        ("a Keras 3 .keras of a trained model", path("run_7.keras"), (version, True)),
        ("a Keras 3 .keras of a model never compiled", path("fresh_model.keras"), (version, False)),
        ("a Keras 3 .weights.h5 of a trained model", path("run_7.weights.h5"), (None, True)),
        ("a Keras 3 .weights.h5 of a model never compiled", path("fresh.weights.h5"), (None, False)),
        ("a Keras 3 legacy .h5 of a trained model", path("run_7_legacy.h5"), (version, True)),
        ("a Keras 3 legacy HDF5 model never compiled", path("fresh_legacy.hdf5"), (version, False)),
        ("a Keras 3 .keras zip renamed to .h5", path("renamed_run.h5"), (version, True)),
    ]


# The course's stored files written by Keras 2 (tests/data), under names other than the notebook's.
_KERAS2_FILES = [
    ("tf215", "functional_bn", "old_trained.h5", "a Keras 2.15 .h5 of a trained model", ("2.15.0", True)),
    ("tf215", "sequential", "old_plain.h5", "a Keras 2.15 .h5 never compiled", ("2.15.0", False)),
    ("tf215", "sequential_weights", "old_weights.h5", "a Keras 2.15 weights-only .h5", ("2.15.0", False)),
    ("tf212", "functional_bn_keras", "old_2_12.keras", "a Keras 2.12 HDF5 file named .keras",
     ("2.12.0", True)),
    ("tf215", "functional_bn_keras", "old_2_15.keras", "a Keras 2.15 .keras zip", ("2.15.0", True)),
    ("tf215", "functional_bn_weights_new", "old_2_15.weights.h5", "a Keras 2.15 .weights.h5", (None, True)),
]


def _facts_fixtures(folder: str) -> list[tuple[str, str, tuple[str | None, bool]]]:
    fixtures = _keras3_files(folder)
    for source, name, new_name, label, expected in _KERAS2_FILES:
        copied, _ = helpers.identify.stored_real_file(source, name, os.path.join(folder, "stored"))
        target = os.path.join(folder, new_name)
        os.replace(copied, target)
        fixtures.append((label, target, expected))
    return fixtures


def _fingerprint(path: str) -> tuple[str, float]:
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest(), os.path.getmtime(path)


_READ = 'section "What a file records"'


def _version_hint(label: str, got: object, expected: str | None) -> Hint:
    seen = f"for {label} you returned the version {got!r:.24}, the file records {expected!r}. "
    if expected is None:
        return Hint(seen + f"A .weights.h5 records no Keras version; the Keras running here did not write it "
                           f"({_READ}).",
                    seen + "Return None when there is no metadata.json and no 'keras_version' attribute.",
                    kind="version none")
    if got == keras.__version__:
        return Hint(seen + f"The version is the one that wrote the file, read from the file, not the one "
                           f"running here ({_READ}).",
                    seen + "Read metadata.json's 'keras_version' (a zip) or the HDF5 root attribute "
                           "'keras_version'.", kind="version of this Keras")
    return Hint(seen + f"A .keras zip and a legacy HDF5 file each record the version that wrote them "
                       f"({_READ}).",
                seen + "A zip: json.loads(archive.read('metadata.json'))['keras_version']; HDF5: "
                       "file.attrs['keras_version'].", kind="version")


def _optimizer_hint(label: str, got: bool, expected: bool) -> Hint:
    seen = f"for {label} you returned {got}, the file {'holds' if expected else 'holds no'} optimizer values. "
    if expected and "weights.h5" in label:
        idea = f"A .weights.h5 holds the optimizer's values too when the model had one ({_READ})."
    elif expected:
        idea = (f"Optimizer values are stored as arrays in the weights' file, under the optimizer's "
                f"group (not as settings; {_READ}).")
    else:
        idea = f"Only arrays of an optimizer count: a model never compiled has none ({_READ})."
    return Hint(seen + idea, seen + "Look for arrays under 'optimizer_weights' (legacy HDF5) or "
                                    "'optimizer' (a .weights.h5, or model.weights.h5 in a zip).",
                kind=f"optimizer {expected}")


_NAME_IS_NOT_FORMAT = Hint(
    idea="a file's name is not its format: Keras 2.12 wrote HDF5 under .keras, and anyone can rename a "
         'zip (section "One call names each of them")',
    fix="choose by content: zipfile.is_zipfile(path), else h5py.File(path, 'r'); never by the suffix",
    kind="name is not format")


def _call(keras_file_facts: Callable[[str], object], label: str, path: str) -> object:
    """The learner's answer for one file; opening a file as the format its name suggests gets a hint."""
    try:
        return keras_file_facts(path)
    except zipfile.BadZipFile:
        raise CheckFailed(_NAME_IS_NOT_FORMAT) from None
    except OSError as error:
        if "signature not found" not in str(error):
            raise
        raise CheckFailed(_NAME_IS_NOT_FORMAT) from None


@exercise_check("15.2")
def check_keras_file_facts(keras_file_facts: Callable[[str], object]) -> str:
    with _quiet(), tempfile.TemporaryDirectory() as folder:
        fixtures = _facts_fixtures(folder)
        before = {path: _fingerprint(path) for _, path, _ in fixtures}
        with _without(helpers.identify):
            for label, path, (version, optimizer) in fixtures:
                got = _call(keras_file_facts, label, path)
                _require_no_forbidden_call()
                require(isinstance(got, tuple) and len(got) == 2,
                        f"for {label} you returned {type(got).__name__} {got!r:.60}: return a pair, a "
                        "tuple (version, optimizer), e.g. ('2.15.0', True)")
                got_version, got_optimizer = got
                require(not isinstance(got_version, bytes), f"for {label} the version is bytes "
                        f"({got_version!r:.24}): return a str (.decode())")
                require(got_version is None or isinstance(got_version, str),
                        f"for {label} the version is a {type(got_version).__name__}: return the text the "
                        "file records, or None")
                require(got_version == version, _version_hint(label, got_version, version))
                require(isinstance(got_optimizer, (bool, np.bool_)),
                        f"for {label} the second value is {got_optimizer!r:.24}: return True or False "
                        "(whether any optimizer value is stored), not a count or a name")
                require(bool(got_optimizer) == optimizer, _optimizer_hint(label, bool(got_optimizer), optimizer))
                require(_fingerprint(path) == before[path],
                        f"for {label} the file changed: open it to read only (h5py.File(path, 'r'))")
    return (f"{len(fixtures)} files read right: Keras 3 and Keras 2 (2.12, 2.15) models, legacy HDF5 and "
            ".weights.h5 files, with and without optimizer values, under names that do not tell")


# --------------------------------------------------------------------------- 15.3


def _predict_fixtures(folder: str) -> tuple[np.ndarray, dict[str, tuple[str, np.ndarray]]]:
    keras.utils.set_random_seed(151)
    inputs = keras.Input((4,), name="readings")
    hidden = keras.layers.Dropout(0.5)(keras.layers.Dense(5, activation="relu")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(2)(hidden), name="sensor")
    x = np.linspace(-1, 1, 12).reshape(3, 4)  # float64 on purpose
    expected = model(x.astype(np.float32), training=False).numpy()
    rounded = x.astype(np.float16).astype(np.float32)  # what an answer that feeds float16 computes
    expected16 = model(rounded, training=False).numpy()
    fixtures = {}
    model.save(os.path.join(folder, "sensor.keras"))
    fixtures["a Keras 3 .keras file"] = (os.path.join(folder, "sensor.keras"), expected, expected16)
    model.export(os.path.join(folder, "sensor_export"), verbose=False)
    fixtures["a model.export folder"] = (os.path.join(folder, "sensor_export"), expected, expected16)

    class Scaled(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(np.arange(4, dtype=np.float32).reshape(4, 1) / 10)  # one output unit

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="signal")])
        def __call__(self, signal):
            return {"scores": tf.matmul(signal, self.w) + 1.0}

    module = Scaled()
    tf.saved_model.save(module, os.path.join(folder, "scaled_module"),
                        signatures=module.__call__.get_concrete_function())
    fixtures["a tf.saved_model.save folder (signature input 'signal')"] = (
        os.path.join(folder, "scaled_module"), module(tf.constant(x, tf.float32))["scores"].numpy(),
        module(tf.constant(rounded))["scores"].numpy())
    return x, fixtures


@exercise_check("15.3")
def check_predict_any(predict_any: Callable[[str, np.ndarray], np.ndarray]) -> str:
    with _quiet(), tempfile.TemporaryDirectory() as folder:
        x, fixtures = _predict_fixtures(folder)
        for label, (path, expected, expected16) in fixtures.items():
            got = call_answer(lambda: predict_any(path, x.copy()), Hint(
                "identify(path).load() refuses a SavedModel without trust: loading one runs the functions"
                " it stores (section \"Code a file carries\")",
                "these are the course's own files: call identify(path).load(trust=True)"), VerificationError)
            require(isinstance(got, np.ndarray), f"for {label} you returned a {type(got).__name__}: return "
                    "the outputs as one NumPy array (a signature returns a dict: take its one value)")
            require(got.shape == expected.shape, f"for {label} the shape is {got.shape}, expected "
                    f"{expected.shape}" + (": return the outputs as the model gives them (no squeeze or "
                                           "reshape)" if got.size == expected.size else ""))
            require(not (np.allclose(got, expected16, atol=1e-5) and not np.allclose(got, expected, atol=1e-5)),
                    f"for {label} the outputs are those of x rounded to float16: feed x as float32 (the "
                    "model's dtype), never a lower precision")
            require(np.allclose(got, expected, atol=1e-5), f"for {label} the outputs differ from the model's"
                    + (" (inference mode: Dropout must be off, so training=False)" if "Keras" in label
                       or "export" in label else ""))
    return ("a .keras file, a model.export folder and a TF2 SavedModel (one output unit) each predicted "
            "equal to their model")
