"""Write the real-file fixtures of tests/data/tf215 with TensorFlow 2.15.1 / Keras 2.15.

Run with the old TensorFlow, from the repository root:

    /work/venv-tf215/bin/python tests/data/tf215/make_fixtures.py            # rewrite in place
    /work/venv-tf215/bin/python tests/data/tf215/make_fixtures.py --out DIR  # write elsewhere

Every model is tiny (dozens to a few thousand weights) and built from fixed initial
values (``keras.utils.set_random_seed`` before each builder), so a re-run writes the
same numbers. MANIFEST.json records, for every artifact, a fixed input and the output
that TensorFlow 2.15.1 itself computed on it: tests compare against these without the
old TensorFlow. The course's tests never run this script (tests/data/conftest.py keeps
pytest from importing it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras as keras_package  # noqa: E402
from tensorflow import keras  # noqa: E402

HERE = Path(__file__).resolve().parent
KEEP = {"make_fixtures.py", "README.md"}
WRITTEN_BY = f"tensorflow {tf.__version__} / keras {keras_package.__version__}"
MANIFEST: dict[str, dict] = {}


# ----------------------------------------------------------------------------- helpers

def ramp(*shape: int, scale: float = 1.0, phase: float = 0.5) -> np.ndarray:
    """Fixed, non-zero, non-symmetric float32 values of a given shape."""
    n = int(np.prod(shape))
    return (np.sin(0.37 * np.arange(n) + phase) * scale).astype(np.float32).reshape(shape)


def tolist(value) -> list | float:
    """float32 values as Python floats that round-trip exactly (full precision)."""
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return array.astype(np.float64).tolist()
    if array.dtype.kind in "OSU":
        return [v.decode() if isinstance(v, bytes) else v for v in array.ravel().tolist()]
    return array.tolist()


def record(name: str, path: str, kind: str, description: str, inputs, output,
           notes: str = "", **extra) -> None:
    """Add one artifact to the manifest (inputs: array or {name: array})."""
    if isinstance(inputs, dict):
        inputs = {key: tolist(value) for key, value in inputs.items()}
    else:
        inputs = tolist(inputs)
    if output is None:
        pass
    elif isinstance(output, dict):
        output = {key: tolist(value) for key, value in output.items()}
    else:
        output = tolist(output)
    entry = {"path": path, "kind": kind, "written_by": WRITTEN_BY, "description": description,
             "input": inputs, "output": output, "notes": notes}
    entry.update(extra)
    assert name not in MANIFEST, name
    MANIFEST[name] = entry


def fresh(value: int = 1) -> None:
    """The same initial values on every run."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(value)


def optimizer_state(optimizer) -> dict:
    """The optimizer's class, step count and every variable as [name, value] in its order."""
    variables = optimizer.variables
    variables = variables() if callable(variables) else variables
    return {"class": type(optimizer).__name__,
            "iterations": int(optimizer.iterations.numpy()),
            "variables": [[v.name, tolist(v.numpy())] for v in variables]}  # in order


def save_h5_pair(model: keras.Model, out: Path, stem: str, kind: str, description: str,
                 x, notes: str = "", **extra) -> None:
    """A full-model legacy .h5 and a weights-only legacy .h5 of one model, same outputs."""
    y = model(x, training=False)
    model.save(out / f"{stem}.h5", save_format="h5")
    model.save_weights(out / f"{stem}_weights.h5")  # ends in .h5, not .weights.h5: legacy format
    record(stem, f"{stem}.h5", f"legacy-h5-full/{kind}", description, x, y, notes, **extra)
    record(f"{stem}_weights", f"{stem}_weights.h5", f"legacy-h5-weights/{kind}",
           description + " (weights only: model.save_weights('*.h5'))", x, y,
           notes + " Load into the same architecture (see the full file's config).", **extra)


# ----------------------------------------------------------------------------- models

def sequential() -> keras.Model:
    fresh(11)
    return keras.Sequential([
        keras.Input((4,)),
        keras.layers.Dense(8, activation="relu", name="hidden"),
        keras.layers.Dropout(0.25, name="drop"),
        keras.layers.Dense(3, name="out"),
    ], name="seq")


def functional_bn(train: bool = True) -> keras.Model:
    """Input(5) -> Dense -> BatchNorm -> relu -> Dense; a short fit moves the BN statistics."""
    fresh(12)
    inputs = keras.Input((5,), name="features")
    x = keras.layers.Dense(6, name="dense")(inputs)
    x = keras.layers.BatchNormalization(momentum=0.5, name="bn")(x)
    x = keras.layers.Activation("relu", name="relu")(x)
    outputs = keras.layers.Dense(2, name="logits")(x)
    model = keras.Model(inputs, outputs, name="functional_bn")
    if train:
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        data = ramp(32, 5, scale=2.0, phase=1.0) + 0.75
        target = ramp(32, 2, phase=2.0)
        model.fit(data, target, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return model


def nested(base_kind: str) -> keras.Model:
    """Transfer learning: a base model inside (first layer frozen, BatchNorm), a new head."""
    fresh(13)
    if base_kind == "sequential":
        base = keras.Sequential([
            keras.Input((6,)),
            keras.layers.Dense(8, name="base_dense1"),
            keras.layers.BatchNormalization(momentum=0.5, name="base_bn"),
            keras.layers.Dense(8, activation="relu", name="base_dense2"),
        ], name="base")
    else:
        b_in = keras.Input((6,), name="base_input")
        b = keras.layers.Dense(8, name="base_dense1")(b_in)
        b = keras.layers.BatchNormalization(momentum=0.5, name="base_bn")(b)
        b = keras.layers.Dense(8, activation="relu", name="base_dense2")(b)
        base = keras.Model(b_in, b, name="base")
    base.get_layer("base_dense1").trainable = False
    inputs = keras.Input((6,), name="image")
    x = base(inputs)
    x = keras.layers.Dropout(0.2, name="drop")(x)
    outputs = keras.layers.Dense(3, name="head")(x)
    model = keras.Model(inputs, outputs, name=f"transfer_{base_kind}")
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    model.fit(ramp(24, 6, scale=1.5) + 0.5, ramp(24, 3, phase=3.0), batch_size=8, epochs=2,
              shuffle=False, verbose=0)
    return model


def recurrent() -> keras.Model:
    fresh(14)
    inputs = keras.Input((5, 3), name="sequence")
    x = keras.layers.LSTM(4, return_sequences=True, name="lstm")(inputs)
    x = keras.layers.GRU(3, name="gru")(x)
    outputs = keras.layers.Dense(2, name="out")(x)
    model = keras.Model(inputs, outputs, name="recurrent")
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")  # outputs of order 1
    model.fit(ramp(8, 5, 3, scale=2.0), ramp(8, 2, scale=2.0, phase=0.3), epochs=8,
              batch_size=4, shuffle=False, verbose=0)
    return model


def attention() -> keras.Model:
    fresh(15)
    inputs = keras.Input((4, 6), name="tokens")
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(inputs, inputs)
    x = keras.layers.GlobalAveragePooling1D(name="pool")(x)
    out = keras.layers.Dense(2, name="out")
    outputs = out(x)
    out.kernel.assign(out.kernel * 6.0)  # outputs of order 0.1-1, not 0.01
    return keras.Model(inputs, outputs, name="attention")


def normalization() -> keras.Model:
    fresh(16)
    norm = keras.layers.Normalization(name="norm")
    norm.adapt(ramp(40, 3, scale=5.0) * np.array([1.0, 10.0, 100.0], np.float32) + 50.0)
    inputs = keras.Input((3,), name="raw")
    outputs = keras.layers.Dense(2, name="out")(norm(inputs))
    return keras.Model(inputs, outputs, name="normalized")


CUSTOM_LAYER_SOURCE = '''
@keras.saving.register_keras_serializable(package="course_fixtures")
class ScaledDense(keras.layers.Layer):
    """Dense times a learned scalar, plus a fixed offset from the config."""

    def __init__(self, units, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.offset = offset

    def build(self, input_shape):
        self.kernel = self.add_weight(name="kernel", shape=(input_shape[-1], self.units),
                                      initializer="glorot_uniform")
        self.scale = self.add_weight(name="scale", shape=(), initializer="ones")

    def call(self, inputs):
        return self.scale * tf.matmul(inputs, self.kernel) + self.offset

    def get_config(self):
        return {**super().get_config(), "units": self.units, "offset": self.offset}
'''
exec(CUSTOM_LAYER_SOURCE)  # the README quotes this source: what a test must define to load it


def custom() -> keras.Model:
    fresh(17)
    inputs = keras.Input((3,), name="x")
    scaled = ScaledDense(4, offset=0.5, name="scaled")  # noqa: F821 (defined by exec)
    x = scaled(inputs)
    scaled.scale.assign(1.75)
    outputs = keras.layers.Dense(2, name="out")(x)
    return keras.Model(inputs, outputs, name="custom")


def with_lambda() -> keras.Model:
    fresh(18)
    inputs = keras.Input((3,), name="x")
    x = keras.layers.Lambda(lambda t: t * 2.0 + 1.0, name="affine")(inputs)
    outputs = keras.layers.Dense(2, name="out")(x)
    return keras.Model(inputs, outputs, name="with_lambda")


def depthwise() -> keras.Model:
    """Teachable-Machine style: DepthwiseConv2D (Keras 2 writes groups=1), BN, ReLU(6)."""
    fresh(19)
    model = keras.Sequential([
        keras.Input((6, 6, 3)),
        keras.layers.Conv2D(4, 3, strides=2, padding="same", use_bias=False, name="conv"),
        keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw"),
        keras.layers.BatchNormalization(name="dw_bn"),
        keras.layers.ReLU(6.0, name="relu6"),
        keras.layers.GlobalAveragePooling2D(name="pool"),
        keras.layers.Dense(2, activation="softmax", name="probs"),
    ], name="depthwise")
    bn = model.get_layer("dw_bn")
    bn.moving_mean.assign(ramp(4, scale=0.1))
    bn.moving_variance.assign(ramp(4, scale=0.3) ** 2 + 0.05)
    probs = model.get_layer("probs")
    probs.kernel.assign(probs.kernel * 30.0)  # probabilities far from 0.5/0.5
    return model


def grouped() -> keras.Model:
    """groups=2 on the classes Keras 2 accepted it in: a grouping Conv2D, and depthwise,
    separable and transposed convolutions, where Keras 2 ignored it (Keras 3 rejects it)."""
    fresh(22)
    inputs = keras.Input((6, 6, 4), name="image")
    h = keras.layers.Conv2D(4, 1, groups=2, name="grouped_conv")(inputs)
    h = keras.layers.DepthwiseConv2D(3, padding="same", groups=2, name="dw")(h)
    h = keras.layers.SeparableConv2D(4, 3, padding="same", groups=2, name="sep")(h)
    h = keras.layers.Conv2DTranspose(4, 3, padding="same", groups=2, name="up")(h)
    h = keras.layers.GlobalAveragePooling2D(name="pool")(h)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="grouped")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 50.0)  # outputs far from 0
    return model


def spatial_dropout() -> keras.Model:
    """SpatialDropout1D/2D/3D: Keras 2 writes Dropout's noise_shape (None) and trainable."""
    fresh(23)
    inputs = keras.Input((4, 4, 3), name="grid")
    h = keras.layers.SpatialDropout2D(0.2, name="drop2d")(inputs)
    h = keras.layers.Reshape((4, 2, 2, 3), name="to_3d")(h)
    h = keras.layers.SpatialDropout3D(0.2, name="drop3d")(h)
    h = keras.layers.Reshape((16, 3), name="to_1d")(h)
    h = keras.layers.SpatialDropout1D(0.3, name="drop1d")(h)
    h = keras.layers.Conv1D(4, 2, name="conv")(h)
    h = keras.layers.GlobalAveragePooling1D(name="pool")(h)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="spatial_dropout")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 50.0)  # outputs far from 0
    return model


def time_major() -> keras.Model:
    """LSTM(time_major=True): its input is read as (time, batch, features); Keras 3 has no such
    argument. The model's first axis is time, its second the batch."""
    fresh(24)
    inputs = keras.Input((3, 2), name="steps")  # (time, batch=3, features=2)
    h = keras.layers.LSTM(4, time_major=True, return_sequences=True, name="tm_lstm")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="time_major")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 5.0)  # outputs far from 0
    return model


def save_h5_full(model: keras.Model, out: Path, stem: str, kind: str, description: str,
                 x, notes: str = "") -> None:
    """A full-model legacy .h5 alone (its configuration is the point)."""
    y = model(x, training=False)
    model.save(out / f"{stem}.h5", save_format="h5")
    record(stem, f"{stem}.h5", f"legacy-h5-full/{kind}", description, x, y, notes)


def trained_mse() -> keras.Model:
    fresh(20)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh",
                                                                     name="hidden"),
                              keras.layers.Dense(1, name="out")], name="trained_mse")
    model.compile(optimizer="adam", loss="mse")
    model.fit(ramp(16, 3), ramp(16, 1, phase=1.5), batch_size=4, epochs=3, shuffle=False,
              verbose=0)
    return model


def two_inputs() -> keras.Model:
    fresh(21)
    a = keras.Input((3,), name="numbers")
    b = keras.Input((2,), name="extra")
    x = keras.layers.Concatenate(name="concat")([keras.layers.Dense(4, name="da")(a), b])
    outputs = keras.layers.Dense(2, name="out")(x)
    return keras.Model([a, b], outputs, name="two_inputs")


# ----------------------------------------------------------------------------- wrappers (issue 33)

def bidirectional_gru() -> keras.Model:
    """Bidirectional(GRU): the inner GRU's config carries Keras 2's time_major=False."""
    fresh(25)
    inputs = keras.Input((5, 3), name="steps")
    h = keras.layers.Bidirectional(keras.layers.GRU(3, name="gru"), name="bi_gru")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="bidirectional_gru")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 5.0)  # outputs far from 0
    return model


def bidirectional_lstm() -> keras.Model:
    """Bidirectional(LSTM, merge_mode='sum', return_sequences) with an explicit backward_layer
    (its config nests two LSTM configs), then Bidirectional(LSTM) ending the sequence."""
    fresh(26)
    inputs = keras.Input((5, 3), name="steps")
    forward = keras.layers.LSTM(3, return_sequences=True, name="fwd")
    backward = keras.layers.LSTM(3, return_sequences=True, go_backwards=True, name="bwd")
    h = keras.layers.Bidirectional(forward, backward_layer=backward, merge_mode="sum",
                                   name="bi_seq")(inputs)
    h = keras.layers.Bidirectional(keras.layers.LSTM(2, name="lstm"), name="bi_last")(h)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="bidirectional_lstm")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 5.0)
    return model


def time_distributed_dense() -> keras.Model:
    fresh(27)
    model = keras.Sequential([
        keras.Input((4, 3)),
        keras.layers.TimeDistributed(keras.layers.Dense(5, activation="tanh", name="inner"),
                                     name="td_dense"),
        keras.layers.TimeDistributed(keras.layers.Dense(2, name="proj"), name="td_proj"),
    ], name="time_distributed_dense")
    model.get_layer("td_proj").layer.kernel.assign(model.get_layer("td_proj").layer.kernel * 5.0)
    return model


def time_distributed_nested() -> keras.Model:
    """TimeDistributed around a Conv1D and around a GRU (a recurrent layer per outer step)."""
    fresh(28)
    inputs = keras.Input((3, 6, 2), name="clips")  # 3 clips of 6 steps, 2 features
    h = keras.layers.TimeDistributed(keras.layers.Conv1D(3, 2, activation="relu", name="conv"),
                                     name="td_conv")(inputs)
    h = keras.layers.TimeDistributed(keras.layers.GRU(4, name="gru"), name="td_gru")(h)
    h = keras.layers.LSTM(3, name="lstm")(h)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="time_distributed_nested")
    model.get_layer("out").kernel.assign(model.get_layer("out").kernel * 5.0)
    return model


def make_wrappers(out: Path) -> None:
    note = ("The inner layers' configs carry Keras 2's 'time_major': false (recurrent layers); "
            "Keras 3 rebuilds the wrapper's inner layer itself, from the nested config.")
    save_h5_pair(bidirectional_gru(), out, "bidirectional_gru", "wrapper",
                 "Bidirectional(GRU(3)) -> Dense(2), input (batch 2, steps 5, features 3)",
                 ramp(2, 5, 3, scale=2.0, phase=0.4), note)
    save_h5_full(bidirectional_lstm(), out, "bidirectional_lstm", "wrapper",
                 "Bidirectional(LSTM(3, return_sequences), backward_layer=LSTM(3, go_backwards), "
                 "merge_mode='sum') -> Bidirectional(LSTM(2)) -> Dense(2)",
                 ramp(2, 5, 3, scale=2.0, phase=1.4), note)
    save_h5_full(time_distributed_dense(), out, "time_distributed_dense", "wrapper",
                 "Sequential: TimeDistributed(Dense(5, tanh)) -> TimeDistributed(Dense(2))",
                 ramp(2, 4, 3, phase=0.9))
    save_h5_full(time_distributed_nested(), out, "time_distributed_nested", "wrapper",
                 "TimeDistributed(Conv1D(3, 2)) -> TimeDistributed(GRU(4)) -> LSTM(3) -> Dense(2), "
                 "input (batch 2, clips 3, steps 6, features 2)",
                 ramp(2, 3, 6, 2, scale=2.0, phase=0.6), note)


# ----------------------------------------------------------------------------- hard_sigmoid

def hard_sigmoid_model() -> keras.Model:
    """LSTM(recurrent_activation='hard_sigmoid') and Dense(activation='hard_sigmoid'): Keras 2's
    hard_sigmoid is clip(0.2 x + 0.5, 0, 1), Keras 3 reads the name as clip(x / 6 + 0.5, 0, 1)."""
    fresh(29)
    inputs = keras.Input((5, 3), name="steps")
    h = keras.layers.LSTM(4, recurrent_activation="hard_sigmoid", name="lstm")(inputs)
    h = keras.layers.Dense(4, activation="hard_sigmoid", name="gate")(h)
    model = keras.Model(inputs, keras.layers.Dense(2, name="out")(h), name="hard_sigmoid")
    for layer in (model.get_layer("lstm"), model.get_layer("gate")):  # pre-activations beyond +-1
        layer.weights[0].assign(layer.weights[0] * 4.0)
    return model


def make_hard_sigmoid(out: Path) -> None:
    save_h5_pair(hard_sigmoid_model(), out, "hard_sigmoid", "activation",
                 "LSTM(4, recurrent_activation='hard_sigmoid') -> Dense(4, activation="
                 "'hard_sigmoid') -> Dense(2), input (batch 2, steps 5, features 3)",
                 ramp(2, 5, 3, scale=2.0, phase=0.3),
                 "Keras 2's hard_sigmoid is clip(0.2 x + 0.5, 0, 1); Keras 3's is clip(x / 6 + 0.5, 0, 1)")


def functional_in_sequential() -> keras.Model:
    """A functional model nested in a Sequential: Keras 3 cannot rebuild it (it builds the Sequential
    from a shape it reads wrong); the twin route works."""
    fresh(30)
    inner_in = keras.Input((3,), name="mid_in")
    inner = keras.Model(inner_in, keras.layers.Dense(3, name="mid_out")(
        keras.layers.Dense(4, activation="tanh", name="mid_hidden")(inner_in)), name="mid_func")
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, name="first"), inner,
                             keras.layers.Dense(2, name="last")], name="functional_in_sequential")


def make_functional_in_sequential(out: Path) -> None:
    save_h5_full(functional_in_sequential(), out, "functional_in_sequential", "nested",
                 "Sequential: Dense(3) -> functional model (Dense(4, tanh) -> Dense(3)) -> Dense(2)",
                 ramp(2, 3, scale=2.0, phase=0.7))


STEPS = {"wrappers": make_wrappers, "hard_sigmoid": make_hard_sigmoid,
         "functional_in_sequential": make_functional_in_sequential}  # --only NAME: these alone


# ----------------------------------------------------------------------------- artifacts

def make_h5(out: Path) -> None:
    opt_note = "Compiled and fit briefly: the full .h5 holds optimizer_weights."
    save_h5_pair(sequential(), out, "sequential", "sequential",
                 "Sequential: Dense(8, relu) -> Dropout(0.25) -> Dense(3); not compiled",
                 ramp(2, 4))
    model = functional_bn()
    save_h5_pair(model, out, "functional_bn", "functional",
                 "Functional: Dense(6) -> BatchNormalization -> relu -> Dense(2); moving "
                 "statistics moved by a 2-epoch fit (Adam, mse)", ramp(3, 5, phase=0.1) + 0.5,
                 opt_note, bn_moving_mean=tolist(model.get_layer("bn").moving_mean.numpy()))
    for base_kind in ("sequential", "functional"):
        save_h5_pair(nested(base_kind), out, f"nested_{base_kind}", "nested",
                     f"Transfer-learning shape: a {base_kind} base model 'base' (Dense "
                     "base_dense1 frozen, BatchNormalization, Dense) inside a functional "
                     "model with a Dropout and a Dense head; fit 2 epochs (SGD, mse)",
                     ramp(2, 6, phase=0.3) + 0.5,
                     "Keras 2 orders a nested model's weights as all trainable then all "
                     "non-trainable in model.weights and in the .h5 layer 'base'. " + opt_note)
    save_h5_pair(recurrent(), out, "recurrent", "recurrent",
                 "LSTM(4, return_sequences) -> GRU(3, reset_after) -> Dense(2), fit 8 epochs "
                 "(Adam, mse); configs carry Keras 2's time_major", ramp(2, 5, 3, scale=2.0, phase=0.7))
    save_h5_pair(attention(), out, "attention", "attention",
                 "MultiHeadAttention(2 heads, key_dim 3) self-attention -> "
                 "GlobalAveragePooling1D -> Dense(2)", ramp(2, 4, 6, scale=2.0, phase=0.2))
    save_h5_pair(normalization(), out, "normalization", "normalization",
                 "An adapted Normalization (means near 50, variances ~12/1250/125000) -> "
                 "Dense(2)", ramp(2, 3, scale=5.0, phase=0.9) * np.array([1, 10, 100],
                                                                         np.float32) + 50,
                 "The adapted mean/variance are stored as weights of layer 'norm'.")
    save_h5_pair(custom(), out, "custom_layer", "custom",
                 "A registered custom layer course_fixtures>ScaledDense(4, offset=0.5, "
                 "scale=1.75) -> Dense(2)", ramp(2, 3, phase=1.1),
                 "Needs ScaledDense (source in README.md and make_fixtures.py) via "
                 "custom_objects or registration.", custom_source=CUSTOM_LAYER_SOURCE.strip())
    save_h5_pair(with_lambda(), out, "lambda", "lambda",
                 "Lambda(lambda t: t * 2.0 + 1.0) -> Dense(2)", ramp(2, 3, phase=1.3),
                 "The Lambda is stored as marshalled Python 3.11 bytecode (base64).")
    save_h5_pair(depthwise(), out, "depthwise", "depthwise",
                 "Teachable-Machine style Sequential: Conv2D -> DepthwiseConv2D -> "
                 "BatchNormalization -> ReLU(6) -> GlobalAveragePooling2D -> Dense(softmax)",
                 ramp(1, 6, 6, 3, scale=2.0, phase=0.4),
                 "Keras 2 writes DepthwiseConv2D config with 'groups': 1 (Keras 3 rejects it).")
    save_h5_full(grouped(), out, "grouped", "grouped",
                 "Conv2D, DepthwiseConv2D, SeparableConv2D and Conv2DTranspose, each with "
                 "groups=2 -> GlobalAveragePooling2D -> Dense(2)", ramp(2, 6, 6, 4, phase=0.8),
                 "Keras 2 writes 'groups': 2 in all four configs; it ignored it in the depthwise, "
                 "separable and transposed layers (same outputs as groups=1), Conv2D groups.")
    save_h5_full(spatial_dropout(), out, "spatial_dropout", "spatial_dropout",
                 "SpatialDropout2D -> Reshape -> SpatialDropout3D -> Reshape -> "
                 "SpatialDropout1D -> Conv1D -> GlobalAveragePooling1D -> Dense(2)",
                 ramp(2, 4, 4, 3, phase=1.7),
                 "Keras 2 writes 'noise_shape': null and 'trainable' in the SpatialDropout "
                 "configs; Keras 3's SpatialDropout takes neither.")
    save_h5_full(time_major(), out, "time_major", "time_major",
                 "LSTM(4, time_major=True, return_sequences) -> Dense(2): input (time 4, batch 3, "
                 "features 2)", ramp(4, 3, 2, phase=2.3),
                 "Keras 2 writes 'time_major': true; Keras 3's LSTM has no such argument, and a "
                 "plain LSTM with these weights reads the axes the other way round.")
    model = trained_mse()
    save_h5_pair(model, out, "trained_mse", "trained",
                 "Sequential Dense(4, tanh) -> Dense(1), compiled Adam + loss 'mse', fit 3 "
                 "epochs (12 steps)", ramp(2, 3, phase=0.6),
                 "The full .h5 holds training_config (loss 'mse') and optimizer_weights.",
                 optimizer=optimizer_state(model.optimizer))


def make_keras_formats(out: Path) -> None:
    model = functional_bn()
    x = ramp(3, 5, phase=0.1) + 0.5
    y = model(x, training=False)
    model.save(out / "functional_bn.keras")
    record("functional_bn_keras", "functional_bn.keras", "keras-zip/keras2",
           "The functional_bn model as a .keras zip written by Keras 2.15 (model.save('*.keras'))",
           x, y, "Keras 2.15's .keras: config.json with module 'keras.src...' style entries "
           "differing from Keras 3's; model.weights.h5 inside holds the weights by layer "
           "name. Compiled (Adam, mse), so it holds optimizer variables too.")
    model.save_weights(out / "functional_bn.weights.h5")
    record("functional_bn_weights_new", "functional_bn.weights.h5", "weights-h5/keras2",
           "The functional_bn model's weights as '*.weights.h5' written by Keras 2.15 (the "
           "new saving_lib layout, not the legacy .h5)", x, y)


def make_checkpoints(out: Path) -> None:
    x = ramp(3, 5, phase=0.1) + 0.5
    # Keras 2 TF-format weights: model.save_weights('folder/ckpt'), with and without optimizer.
    model = functional_bn(train=True)
    y = model(x, training=False)
    model.save_weights(out / "ckpt_keras2_opt" / "ckpt")
    record("ckpt_keras2_opt", "ckpt_keras2_opt/ckpt", "tf-checkpoint/keras2-save-weights",
           "Keras 2 model.save_weights('ckpt_keras2_opt/ckpt') (TF format) of the trained, "
           "compiled functional_bn model: keys under the model root, optimizer included",
           x, y, "Prefix path; files ckpt.index, ckpt.data-00000-of-00001 and 'checkpoint'.",
           optimizer=optimizer_state(model.optimizer))
    fresh_model = functional_bn(train=False)
    fresh_model.set_weights(model.get_weights())
    fresh_model.save_weights(out / "ckpt_keras2_noopt" / "ckpt")
    record("ckpt_keras2_noopt", "ckpt_keras2_noopt/ckpt", "tf-checkpoint/keras2-save-weights",
           "Keras 2 model.save_weights('ckpt_keras2_noopt/ckpt') of an uncompiled "
           "functional_bn holding the trained weights: no optimizer", x, y)
    # tf.train.Checkpoint(model=..., optimizer=...)
    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    ckpt.write(str(out / "tfckpt_opt" / "ckpt"))
    record("tfckpt_opt", "tfckpt_opt/ckpt", "tf-checkpoint/keras2-object",
           "tf.train.Checkpoint(model=..., optimizer=...).write('tfckpt_opt/ckpt') of the "
           "trained functional_bn (Adam, slots non-zero)", x, y,
           "Written with .write(): no 'checkpoint' state file, no save counter.",
           optimizer=optimizer_state(model.optimizer))
    tf.train.Checkpoint(model=model).write(str(out / "tfckpt_noopt" / "ckpt"))
    record("tfckpt_noopt", "tfckpt_noopt/ckpt", "tf-checkpoint/keras2-object",
           "tf.train.Checkpoint(model=...).write('tfckpt_noopt/ckpt'): the trained "
           "functional_bn without its optimizer", x, y)
    # CheckpointManager with 3 checkpoints, training between them.
    model = functional_bn(train=False)
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    # The manager records paths relative to the folder; built in a temporary working
    # folder so no machine path lands in the 'checkpoint' state file.
    manager = tf.train.CheckpointManager(ckpt, str(out / "manager"), max_to_keep=3)
    by_step = {}
    data, target = ramp(16, 5, scale=2.0, phase=1.0) + 0.75, ramp(16, 2, phase=2.0)
    for _ in range(3):
        model.fit(data, target, batch_size=8, epochs=1, shuffle=False, verbose=0)
        path = manager.save()
        by_step[Path(path).name] = tolist(model(x, training=False))
    record("manager", "manager", "tf-checkpoint-manager/keras2-object",
           "A tf.train.CheckpointManager folder (max_to_keep=3) of tf.train.Checkpoint("
           "model=functional_bn, optimizer=Adam): ckpt-1, ckpt-2, ckpt-3, one epoch between",
           x, model(x, training=False), "The output is the latest (ckpt-3); outputs_by_"
           "checkpoint gives each.", outputs_by_checkpoint=by_step,
           optimizer=optimizer_state(model.optimizer))


def make_saved_models(out: Path) -> None:
    x = ramp(3, 5, phase=0.1) + 0.5
    model = functional_bn()
    y = model(x, training=False)
    model.save(out / "savedmodel_keras2")
    record("savedmodel_keras2", "savedmodel_keras2", "savedmodel/keras2",
           "Keras 2 model.save('savedmodel_keras2') of the trained functional_bn (SavedModel "
           "with keras_metadata.pb, signature serving_default)", x, y,
           "Signature serving_default takes keyword 'features'; output key 'logits'.")
    tf.saved_model.save(model, str(out / "savedmodel_tf"))
    record("savedmodel_tf", "savedmodel_tf", "savedmodel/tf2-of-keras2",
           "tf.saved_model.save(functional_bn model, 'savedmodel_tf') from Keras 2 (no "
           "keras_metadata.pb)", x, y, "Signature serving_default, keyword 'features'.")
    model = two_inputs()
    inputs = {"numbers": ramp(2, 3, phase=0.8), "extra": ramp(2, 2, phase=1.9)}
    y = model(inputs, training=False)
    model.save(out / "savedmodel_two_inputs")
    record("savedmodel_two_inputs", "savedmodel_two_inputs", "savedmodel/keras2",
           "Keras 2 model.save of a functional model with TWO inputs 'numbers' (3) and "
           "'extra' (2) -> Dense(2) 'out'", inputs, y,
           "serving_default takes keywords numbers= and extra=; no 'serve' endpoint "
           "(that is model.export's).")
    model.save(out / "two_inputs.h5", save_format="h5")
    record("two_inputs", "two_inputs.h5", "legacy-h5-full/functional",
           "The two-input functional model as a legacy .h5", inputs, y,
           "Call with a list [numbers, extra] or a dict by input name.")

    class Scaler(tf.Module):
        def __init__(self):
            super().__init__(name="scaler")
            self.w = tf.Variable(ramp(3, 2, phase=0.2), name="w")
            self.b = tf.Variable([0.25, -0.75], name="b")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def predict(self, x):
            return {"y": tf.matmul(x, self.w) + self.b}

    module = Scaler()
    xm = ramp(2, 3, phase=2.2)
    tf.saved_model.save(module, str(out / "tf_module"),
                        signatures={"serving_default": module.predict})
    record("tf_module", "tf_module", "savedmodel/tf2-module",
           "A tf.Module (variables w, b) with tf.function predict, saved with a "
           "serving_default signature", {"x": xm}, module.predict(xm)["y"],
           "signatures['serving_default'](x=...) returns {'y': ...}; loaded.predict(x) too.")

    from tensorflow.python.trackable.autotrackable import AutoTrackable
    hub = AutoTrackable()  # TF Hub's reusable SavedModel: plain attributes, not tf.Module's
    hub.kernel = tf.Variable(ramp(3, 4, phase=0.6), name="kernel")
    hub.bias = tf.Variable(ramp(4, scale=0.1), name="bias")
    hub.variables = [hub.kernel, hub.bias]
    hub.trainable_variables = [hub.kernel, hub.bias]
    hub.regularization_losses = []

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32),
                                  tf.TensorSpec([], tf.bool)])
    def call(x, training=False):
        return tf.nn.relu(tf.matmul(x, hub.kernel) + hub.bias)

    hub.__call__ = call
    xh = ramp(2, 3, phase=0.05)
    tf.saved_model.save(hub, str(out / "hub_module"))
    record("hub_module", "hub_module", "savedmodel/hub-reusable",
           "A hub-format (reusable SavedModel) module made locally: __call__(x, training), "
           "variables, trainable_variables, regularization_losses", xh, hub.__call__(xh, False),
           "A serving_default signature (x and training) is added by tf.saved_model.save from "
           "the one tf.function with an input_signature; load with tf.saved_model.load and call "
           "obj(x, False), or hub.KerasLayer (needs tf-keras).")


def make_tf1_builder(out: Path) -> None:
    """A TF1 SavedModel from Builder with a vocabulary asset (collection saved_model_assets)."""
    V1 = tf.compat.v1
    words = ["<unk>", "apple", "banana", "cherry", "date"]
    feed = np.array(["banana", "date", "kiwi", "apple"])
    target = out / "tf1_builder"
    with tempfile.TemporaryDirectory() as work:
        previous = os.getcwd()
        os.chdir(work)  # the asset path recorded in the graph is then just 'vocab.txt'
        try:
            Path("vocab.txt").write_text("\n".join(words) + "\n")
            with tf.Graph().as_default() as graph, V1.Session(graph=graph) as sess:
                vocab = tf.constant("vocab.txt", name="vocab_path")
                V1.add_to_collection(V1.GraphKeys.ASSET_FILEPATHS, vocab)
                table = V1.lookup.StaticHashTable(
                    V1.lookup.TextFileInitializer(vocab, tf.string, V1.lookup.TextFileIndex
                                                  .WHOLE_LINE, tf.int64,
                                                  V1.lookup.TextFileIndex.LINE_NUMBER),
                    default_value=0)
                text = V1.placeholder(tf.string, [None], name="words")
                ids = table.lookup(text)
                embedding = V1.get_variable("embedding", initializer=ramp(5, 2, phase=0.9))
                scores = tf.identity(tf.gather(embedding, ids) * 3.0, name="scores")
                sess.run([V1.global_variables_initializer(), V1.tables_initializer()])
                expected, expected_ids = sess.run([scores, ids], {text: feed})
                builder = V1.saved_model.Builder("export")
                signature = V1.saved_model.predict_signature_def({"words": text},
                                                                 {"scores": scores})
                builder.add_meta_graph_and_variables(
                    sess, [V1.saved_model.tag_constants.SERVING],
                    signature_def_map={"serving_default": signature},
                    assets_collection=V1.get_collection(V1.GraphKeys.ASSET_FILEPATHS),
                    main_op=V1.tables_initializer())
                builder.save()
            shutil.copytree("export", target)
        finally:
            os.chdir(previous)
    record("tf1_builder", "tf1_builder", "savedmodel/tf1-builder",
           "TF1 tf.compat.v1.saved_model.Builder SavedModel (tag serve): a vocabulary "
           "lookup table initialised from the asset assets/vocab.txt, an embedding "
           "variable; signature serving_default words (string) -> scores",
           {"words": feed}, expected,
           "Assets are listed in collection_def['saved_model_assets'], not asset_file_def; "
           "'kiwi' is out of vocabulary (id 0).", ids=tolist(expected_ids), vocabulary=words)


def make_frozen_and_tflite(out: Path) -> None:
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2)
    model = functional_bn()
    x = ramp(3, 5, phase=0.1) + 0.5
    y = model(x, training=False)
    fn = tf.function(lambda features: model(features, training=False))
    concrete = fn.get_concrete_function(tf.TensorSpec([None, 5], tf.float32, name="features"))
    frozen = convert_variables_to_constants_v2(concrete)
    graph_def = frozen.graph.as_graph_def()
    (out / "frozen_graph.pb").write_bytes(graph_def.SerializeToString())
    input_name = frozen.inputs[0].name
    output_name = frozen.outputs[0].name
    frozen_y = frozen(tf.constant(x))[0]
    record("frozen_graph", "frozen_graph.pb", "frozen-graphdef",
           "A frozen GraphDef (convert_variables_to_constants_v2) of functional_bn's "
           "inference function", x, frozen_y, "Import with tf.graph_util.import_graph_def "
           "and prune from the input tensor to the output tensor.",
           input_tensor=input_name, output_tensor=output_name,
           keras_output=tolist(y))
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    flat = converter.convert()
    (out / "functional_bn.tflite").write_bytes(flat)
    interpreter = tf.lite.Interpreter(model_content=flat)
    interpreter.resize_tensor_input(interpreter.get_input_details()[0]["index"], x.shape)
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    lite_y = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
    record("functional_bn_tflite", "functional_bn.tflite", "tflite",
           "functional_bn converted by TF 2.15's TFLiteConverter.from_keras_model (float32, "
           "no optimizations)", x, lite_y,
           "Output computed by tf.lite.Interpreter of TF 2.15 (batch resized to 3).",
           keras_output=tolist(y))


def make_cudnn(out: Path) -> None:
    """CuDNNLSTM/CuDNNGRU files (Keras 2.0/2.1 layout, bias 8*units / 6*units) without a GPU."""
    for name, cls, units in (("lstm", tf.compat.v1.keras.layers.CuDNNLSTM, 3),
                             ("gru", tf.compat.v1.keras.layers.CuDNNGRU, 3)):
        try:
            fresh(22)
            layer = cls(units, name=f"cudnn_{name}")
            model = keras.Sequential([keras.Input((4, 2)), layer, keras.layers.Dense(1, name="out")],
                                     name=f"cudnn_{name}")
            model.save_weights(out / f"cudnn_{name}_weights.h5")
            model.save(out / f"cudnn_{name}.h5", save_format="h5")
            shapes = [list(w.shape) for w in layer.get_weights()]
            what = (f"Sequential[{cls.__name__}({units}), Dense(1)] built by TF 2.15's "
                    f"tf.compat.v1.keras.layers.{cls.__name__} on a CPU (never run)")
            note = (f"Weight shapes {shapes}: bias of {shapes[2][0] // units}*units (CuDNN "
                    f"layout). No output: {cls.__name__} runs only on a GPU; convert to "
                    f"{name.upper()} to run it.")
            record(f"cudnn_{name}_weights", f"cudnn_{name}_weights.h5",
                   "legacy-h5-weights/cudnn", "Weights-only .h5 of " + what, ramp(1, 4, 2),
                   None, note, weight_shapes=shapes)
            record(f"cudnn_{name}", f"cudnn_{name}.h5", "legacy-h5-full/cudnn",
                   "Full-model .h5 of " + what + f"; config class_name {cls.__name__}",
                   ramp(1, 4, 2), None, note, weight_shapes=shapes)
        except Exception as error:  # reported; the README says what worked
            print(f"{cls.__name__}: {type(error).__name__}: {error}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--only", choices=sorted(STEPS), default=None,
                        help="write only these artifacts and merge their entries into the "
                             "folder's MANIFEST.json (the other files stay as they are)")
    args = parser.parse_args(argv)
    if not tf.__version__.startswith("2.15."):
        print(f"needs TensorFlow 2.15, this is {tf.__version__}", file=sys.stderr)
        return 2
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.only:
        manifest_path = out / "MANIFEST.json"
        old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
        STEPS[args.only](out)
        for name, entry in MANIFEST.items():
            assert (out / entry["path"]).exists(), name
        old.update(MANIFEST)
        manifest_path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
        print(f"{len(MANIFEST)} artifacts written, {len(old)} in {out}")
        return 0
    for entry in out.iterdir():  # regenerate: remove every artifact, keep script and README
        if entry.name not in KEEP:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    for step in (make_h5, make_wrappers, make_hard_sigmoid, make_functional_in_sequential, make_keras_formats, make_checkpoints, make_saved_models,
                 make_tf1_builder, make_frozen_and_tflite, make_cudnn):
        step(out)
    for name, entry in MANIFEST.items():
        assert (out / entry["path"]).exists() or Path(f"{out / entry['path']}.index").exists(), name
    (out / "MANIFEST.json").write_text(json.dumps(MANIFEST, indent=1, sort_keys=True) + "\n")
    print(f"{len(MANIFEST)} artifacts in {out}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
