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


# --------------------------------------------------------------------------- review of chapter 16


def _zip_bomb(path, member):
    """A .keras-shaped archive whose ``member`` declares far more than it packs (the review's were 1.5 GB)."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", "{}")
        big = b"[" + b" " * (16 << 20) + b"]" if member == "config.json" else b"\0" * (64 << 20)
        archive.writestr(member, big)
        archive.writestr("model.weights.h5" if member == "config.json" else "config.json", b"{}")


@pytest.mark.parametrize("member", ["model.weights.h5", "config.json"])
def test_zip_bomb_is_refused_before_any_process(tmp_path, monkeypatch, member):
    """Review F1: the sizes are checked in this process, before a child reads the archive."""
    from helpers import backends
    from helpers.errors import ArchiveTooLargeError

    path = tmp_path / "bomb.keras"
    _zip_bomb(path, member)
    monkeypatch.setattr(backends, "_run_child", lambda *args: pytest.fail("a process was started"))
    with pytest.raises(ArchiveTooLargeError, match=member.replace(".", r"\.")):
        check_across_backends(path, BATCH)


def test_damaged_member_is_refused(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    data = bytearray((tmp_path / "m.keras").read_bytes())
    start = data.index(b"model.weights.h5") + len("model.weights.h5") + 200  # inside the stored member
    data[start] ^= 0xFF
    (tmp_path / "bad.keras").write_bytes(bytes(data))
    with pytest.raises(NotAKerasFileError, match="damaged zip archive"):
        check_across_backends(tmp_path / "bad.keras", BATCH)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"inputs": None}, ValueError, "inputs must be numeric arrays"),
    ({"inputs": np.array(["a", "b"])}, ValueError, "inputs must be numeric arrays"),
    ({"atol": -1}, ValueError, "atol must be a number >= 0"),
    ({"atol": float("nan")}, ValueError, "atol must be a number >= 0"),
    ({"path": 123}, TypeError, "must be a str or os.PathLike"),
])
def test_bad_arguments_are_named_before_any_process(tmp_path, monkeypatch, kwargs, error, message):
    """Review F10."""
    from helpers import backends

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    monkeypatch.setattr(backends, "_run_child", lambda *args: pytest.fail("a process was started"))
    arguments = {"path": tmp_path / "m.keras", "inputs": BATCH, **kwargs}
    with pytest.raises(error, match=message):
        check_across_backends(**arguments)


def test_one_backend_as_a_string(tmp_path, monkeypatch):
    """Review F10: backends="jax" means the JAX backend, not the backends 'j', 'a', 'x'."""
    from helpers import backends

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    asked = []
    monkeypatch.setattr(backends, "_run_child", lambda backend, *args: asked.append(backend) or {
        "backend": backend, "variables": [], "outputs": [np.zeros((5, 2), "float32")]})
    report = check_across_backends(tmp_path / "m.keras", BATCH, backends="jax")
    assert asked == ["jax"] and [row.backend for row in report.rows] == ["jax"]


def _canned(monkeypatch, result):
    from helpers import backends

    monkeypatch.setattr(backends, "_run_child", lambda backend, *args: {"backend": backend, **result})


def test_a_file_no_backend_loads_says_so(tmp_path, monkeypatch):
    """Review F6: every backend failing is not a crossing problem; a Keras 2 file gets its route."""
    import zipfile

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as source, zipfile.ZipFile(tmp_path / "old.keras", "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            target.writestr(item, b'{"keras_version": "2.15.0"}' if item.filename == "metadata.json" else data)
    _canned(monkeypatch, {"failure": {"stage": "load", "kind": "other", "message": "TypeError: could not be "
                                      "deserialized properly"}})
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends(tmp_path / "old.keras", BATCH)
    text = str(caught.value)
    assert "does not load in any backend" in text and "does not cross" not in text
    assert "written by Keras 2.15.0" in text and "chapter 10" in text


def test_a_lambda_file_names_safe_mode(tmp_path, monkeypatch):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    _canned(monkeypatch, {"failure": {"stage": "load", "kind": "other", "message": "ValueError: Requested the "
                                      "deserialization of a `Lambda` layer whose `function` is a Python lambda. " * 3}})
    with pytest.raises(BackendMismatchError, match=r"pass trust=True, which loads it with safe_mode=False, only"):
        check_across_backends(tmp_path / "m.keras", BATCH, backends=("jax",))


def test_a_trusted_lambda_file_crosses_with_trust(tmp_path):
    """Was: no route through check_across_backends for a Lambda file its user trusts (no trust= option)."""
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="d"),
                              keras.layers.Lambda(lambda x: x * 2.0, name="twice")])
    path = tmp_path / "lambda.keras"
    model.save(path)
    with pytest.raises(BackendMismatchError, match="does not load in any backend") as caught:
        check_across_backends(path, BATCH)
    assert "Lambda" in str(caught.value) and "trust=True" in str(caught.value)
    report = check_across_backends(path, BATCH, trust=True)
    assert [row.backend for row in report.rows] == ["tensorflow", "jax"]
    assert all(row.variable_difference == 0.0 and row.output_difference <= 1e-5 for row in report.rows)
    expected = keras.ops.convert_to_numpy(model(BATCH))
    assert np.allclose(expected, 2.0 * keras.ops.convert_to_numpy(model.layers[0](BATCH)))
    with pytest.raises(ValueError, match="trust must be True or False"):
        check_across_backends(path, BATCH, trust="yes")


def test_a_skipped_optimizer_is_one_line(tmp_path, monkeypatch):
    """Review F6: a LossScaleOptimizer skipped by Keras is named once, with the cause."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.save(tmp_path / "m.keras")
    rows = [{"path": "d/kernel", "key": "d/vars/0", "difference": 0.0, "optimizer": False}] + [
        {"path": f"adam/{i}", "key": f"adam/vars/{i}", "difference": 1.0, "optimizer": True} for i in range(16)]
    _canned(monkeypatch, {"variables": rows, "outputs": [np.zeros((5, 2), "float32")]})
    with pytest.raises(BackendMismatchError) as caught:
        check_across_backends(tmp_path / "m.keras", BATCH, backends=("tensorflow",))
    (problem,) = caught.value.problems
    assert "the optimizer's state is not restored (16 of its 16 values" in problem
    assert "LossScaleOptimizer" in problem and "chapter 17" in problem


def test_an_optimizer_saved_before_training_is_not_a_loss(tmp_path):
    """Review F5: compiled, never trained: the file holds iteration and learning rate; no false alarm."""
    import zipfile

    from helpers.backends_worker import compare_with_file

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="d")])
    model.compile(keras.optimizers.Adam(1e-2), "mse")
    model.save(tmp_path / "untrained.keras")
    loaded = keras.saving.load_model(tmp_path / "untrained.keras")
    if not loaded.optimizer.built:
        loaded.optimizer.build(loaded.trainable_variables)  # as training on would
    with zipfile.ZipFile(tmp_path / "untrained.keras") as archive:
        rows = compare_with_file(loaded, archive)
    assert rows and all(row["difference"] == 0.0 for row in rows), rows


def test_a_process_that_runs_another_backend_than_asked_is_refused(monkeypatch):
    # Keras's own answer is checked, not the environment variable: a fresh process on the wrong
    # backend would otherwise report rows computed elsewhere.
    import helpers.backends as backends

    monkeypatch.setattr(backends, "call_in_fresh_process",
                        lambda *args, **kwargs: {"backend": "tensorflow", "keras": "3.15.1"})
    with pytest.raises(RuntimeError, match="asked for Keras's 'jax' backend, the fresh process ran 'tensorflow'"):
        backends._run_child("jax", "m.keras", "inputs.npz", {}, [], 60)


def test_a_trusted_lambda_naming_a_module_fails_with_name_error_as_documented(tmp_path):
    """The docstring's claim (review F10): Keras restores a Lambda's code without its globals."""
    assert "fails there with ``NameError``" in check_across_backends.__doc__
    model = keras.Sequential([keras.Input((4,)), keras.layers.Lambda(lambda x: x * np.float32(2), name="np_twice")])
    model.save(tmp_path / "np_lambda.keras")
    with pytest.raises(BackendMismatchError, match="NameError: name 'np' is not defined"):
        check_across_backends(tmp_path / "np_lambda.keras", BATCH, trust=True)
