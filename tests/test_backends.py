"""helpers.backends.check_across_backends: one .keras in a fresh TensorFlow and a fresh JAX process."""

from __future__ import annotations

import os
import sys
import textwrap

import keras
import numpy as np
import pytest

from helpers.backends import BackendMismatchError, check_across_backends
from helpers.fresh_process import call_in_fresh_process
from helpers.errors import NotAKerasFileError

LAYERS = textwrap.dedent('''
    import keras
    import numpy as np
    from keras import ops


    @keras.saving.register_keras_serializable(package="course16test")
    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return ops.tanh(x) * self.w


    @keras.saving.register_keras_serializable(package="course16test")
    class TfScale(Scale):
        def call(self, x):
            import tensorflow as tf
            return tf.math.tanh(x) * self.w


    @keras.saving.register_keras_serializable(package="course16test")
    class JaxScale(Scale):
        def call(self, x):
            import jax.numpy as jnp
            return jnp.tanh(x) * self.w


    def build(layer, name):
        x = keras.Input((4,), name="x")
        h = keras.layers.Dense(8, activation="relu")(x)
        h = keras.layers.BatchNormalization()(h)
        h = layer(h)
        return keras.Model(x, keras.layers.Dense(2, name="out")(h), name=name)


    def train_and_save(kind, path):
        keras.utils.set_random_seed(0)
        data = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
        model = build({"scale": Scale, "tf": TfScale, "jax": JaxScale}[kind](), kind)
        model.compile(keras.optimizers.Adam(1e-2), "mse")
        model.fit(data, data[:, :2], epochs=1, batch_size=16, verbose=0)
        model.save(path)
        return keras.backend.backend(), int(model.optimizer.iterations)
''')
BATCH = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Files trained under TensorFlow (here) and under JAX (in a fresh process)."""
    folder = tmp_path_factory.mktemp("backends")
    (folder / "course16test_layers.py").write_text(LAYERS)
    old = os.getcwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        import course16test_layers as layers

        assert layers.train_and_save("scale", "tf_trained.keras") == ("tensorflow", 2)
        layers.train_and_save("tf", "tf_ops.keras")
        done = call_in_fresh_process("course16test_layers:train_and_save", "scale", "jax_trained.keras",
                                     env={"KERAS_BACKEND": "jax"}, timeout=300)
        assert done == ("jax", 2)
        call_in_fresh_process("course16test_layers:train_and_save", "jax", "jax_ops.keras",
                              env={"KERAS_BACKEND": "jax"}, timeout=300)
        yield folder
    finally:
        os.chdir(old)
        sys.path.remove(str(folder))


@pytest.mark.parametrize("name", ["tf_trained.keras", "jax_trained.keras"])
def test_clean_reload_both_ways(files, name):
    report = check_across_backends(files / name, BATCH, modules=["course16test_layers"])
    assert [row.backend for row in report.rows] == ["tensorflow", "jax"]
    for row in report.rows:
        # 9 layer values + 16 Adam values (iteration, learning rate, 2 slots for 7 trainables)
        assert (row.variables, row.optimizer_variables, row.variable_difference) == (25, 16, 0.0)
        assert row.output_difference < 1e-5
    assert "jax" in str(report) and "< 1e-05" in str(report)


def test_layer_calling_tensorflow_ops(files):
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends(files / "tf_ops.keras", BATCH, modules=["course16test_layers"])
    problems = caught.value.problems
    assert len(problems) == 1, problems  # TensorFlow loads it; JAX does not
    assert problems[0].startswith("jax: layer 'tf_scale' (TfScale) fails while loading")
    assert "TensorFlow functions directly" in problems[0] and "keras.ops" in problems[0]
    assert "tf.math.tanh" in problems[0]
    assert [row.backend for row in caught.value.report.rows] == ["tensorflow"]


def test_layer_calling_jax_ops(files):
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends(files / "jax_ops.keras", BATCH, modules=["course16test_layers"])
    (problem,) = caught.value.problems
    assert problem.startswith("tensorflow: layer 'jax_scale' (JaxScale) fails while loading")
    assert "JAX functions directly" in problem and "keras.ops" in problem


def test_custom_class_missing_in_the_fresh_process(files):
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends(files / "tf_trained.keras", BATCH)
    problems = caught.value.problems
    assert len(problems) == 2
    for backend, problem in zip(["tensorflow", "jax"], problems):
        assert problem.startswith(f"{backend}: layer 'scale' (class 'course16test>Scale') is not defined")
        assert "modules=[...]" in problem


def test_module_that_fails_to_import(files):
    with pytest.raises(BackendMismatchError, match="'no_such_module_16' fails to import"):
        check_across_backends(files / "tf_trained.keras", BATCH, backends=("jax",), modules=["no_such_module_16"])


def test_optimizer_state_is_compared(tmp_path, monkeypatch):
    """A mixed_float16 model's LossScaleOptimizer state is not restored on reload: each value is named."""
    monkeypatch.chdir(tmp_path)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d")], name="mixed")
        model.compile(keras.optimizers.Adam(1e-2), "mse")
        model.fit(BATCH, BATCH[:, :3], epochs=1, verbose=0)
        model.save("mixed.keras")
    finally:
        keras.config.set_dtype_policy(previous)
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends("mixed.keras", BATCH, backends=("tensorflow",))
    text = str(caught.value)
    assert "is not restored from the file's" in text or "differs from the file" in text
    assert "adam" in text or "loss_scale" in text


def test_outputs_compared_between_backends(files):
    report = check_across_backends(files / "tf_trained.keras", BATCH, backends=("jax", "tensorflow"),
                                   modules=["course16test_layers"], atol=1e-6)
    assert report.rows[0].output_difference == 0.0 and report.rows[1].output_difference <= 1e-6


@pytest.mark.parametrize("content, reason", [
    (None, "no such file"),
    (b"not a zip", "not a zip archive"),
    ("folder", "a folder, not a .keras file"),
])
def test_bad_input(tmp_path, content, reason):
    path = tmp_path / "model.keras"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(NotAKerasFileError, match=reason):
        check_across_backends(path, BATCH)


def test_weights_file_is_not_a_keras_file(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save_weights(tmp_path / "m.weights.h5")
    with pytest.raises(NotAKerasFileError, match="not a zip archive"):
        check_across_backends(tmp_path / "m.weights.h5", BATCH)


def test_backend_not_installed(files):
    with pytest.raises(ValueError, match="'torch' backend is not installed in this environment"):
        check_across_backends(files / "tf_trained.keras", BATCH, backends=("tensorflow", "torch"))
    with pytest.raises(ValueError, match="at least one backend"):
        check_across_backends(files / "tf_trained.keras", BATCH, backends=())
