"""helpers.keras1 on real Keras 1.2.2 files (tests/data/keras1-dl4j) and on Keras 1 layouts written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

from helpers.errors import CheckpointMismatchError, ModelNotBuiltError, NotACheckpointError
from helpers.keras1 import Keras1LayoutError, describe_keras1_h5, keras1_hard_sigmoid, load_keras1_weights
from tests.realfiles import copy_real, expected_output, model_input

LSTM_FILE, CONV_FILE = "simple_lstm_th_keras_1", "conv2d_tensorflow_1"


def lstm_twin(units=50, recurrent_activation=keras1_hard_sigmoid, names=("lstm_1", "dense_1")):
    return keras.Sequential([keras.Input((1, 1)),
                             keras.layers.LSTM(units, recurrent_activation=recurrent_activation, name=names[0]),
                             keras.layers.Dense(1, name=names[1])])


def conv_twin():
    return keras.Sequential([keras.Input((5, 5, 5)), keras.layers.Conv2D(6, 3, name="convolution2d_1")])


def answers(model, name):
    np.testing.assert_allclose(np.asarray(model(model_input("keras1-dl4j", name))),
                               expected_output("keras1-dl4j", name), rtol=1e-5, atol=1e-5)


def values(model):
    return [v.numpy().copy() for v in model.weights]


def unchanged(model, before):
    return all(np.array_equal(a, b) for a, b in zip(values(model), before))


@pytest.fixture
def lstm_file(tmp_path):
    return copy_real("keras1-dl4j", LSTM_FILE, tmp_path)


def test_describe_reads_the_keras1_layout(lstm_file):
    info = describe_keras1_h5(lstm_file)
    assert info.keras_version == "1.2.2" and info.backend is None  # Keras 1 does not record the backend
    assert info.classes == {"lstm_1": "LSTM", "dense_1": "Dense"}
    assert [w for w, _ in info.layers["lstm_1"]][:3] == ["lstm_1_W_i", "lstm_1_U_i", "lstm_1_b_i"]
    assert info.configs["lstm_1"]["inner_activation"] == "hard_sigmoid"


def test_describe_refuses_other_files(tmp_path):
    keras2 = copy_real("tf215", "sequential", tmp_path)
    with pytest.raises(NotACheckpointError, match=r"not a Keras 1 file \(keras_version '2\.15\.0'\).*convert_legacy_h5"):
        describe_keras1_h5(keras2)
    with pytest.raises(NotACheckpointError, match="no such file"):
        describe_keras1_h5(tmp_path / "nope.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(NotACheckpointError, match="not an HDF5 file"):
        describe_keras1_h5(tmp_path / "text.h5")


def test_the_lstm_answers_like_keras_1_itself(lstm_file):
    before = lstm_file.read_bytes()
    twin = lstm_twin()
    assert load_keras1_weights(lstm_file, twin) == ["lstm_1", "dense_1"]
    answers(twin, LSTM_FILE)
    assert lstm_file.read_bytes() == before  # only read


@pytest.mark.parametrize("activation", ["hard_sigmoid", "sigmoid"])
def test_keras3_gate_activations_are_refused_before_anything_is_assigned(lstm_file, activation):
    twin = lstm_twin(recurrent_activation=activation)
    before = values(twin)
    with pytest.raises(Keras1LayoutError, match=r"Keras 1.s hard_sigmoid \(0\.2x \+ 0\.5\).*keras1_hard_sigmoid"):
        load_keras1_weights(lstm_file, twin)
    assert unchanged(twin, before)


def test_keras3_hard_sigmoid_would_answer_differently(lstm_file):
    # why the refusal above: the same weights under Keras 3's hard_sigmoid (x/6 + 0.5) are off by more than 1
    right, wrong = lstm_twin(), lstm_twin(recurrent_activation="hard_sigmoid")
    load_keras1_weights(lstm_file, right)
    wrong.set_weights(right.get_weights())
    x = model_input("keras1-dl4j", LSTM_FILE)
    assert np.abs(np.asarray(wrong(x)) - expected_output("keras1-dl4j", LSTM_FILE)).max() > 1.0


def test_other_names_are_refused_naming_every_weight(lstm_file):
    twin = lstm_twin(names=("lstm", "dense"))
    before = values(twin)
    with pytest.raises(CheckpointMismatchError) as caught:
        load_keras1_weights(lstm_file, twin)
    error = caught.value
    assert len(error.missing) == 5 and len(error.unexpected) == 14, (error.missing, error.unexpected)
    assert "give the model's layers the file's names ('lstm_1', 'dense_1')" in str(error)
    assert unchanged(twin, before)


def test_other_shapes_are_refused_and_nothing_is_half_loaded(lstm_file):
    twin = keras.Sequential([keras.Input((1, 1)),
                             keras.layers.LSTM(40, recurrent_activation=keras1_hard_sigmoid, name="lstm_1"),
                             keras.layers.Dense(1, name="dense_1")])
    before = values(twin)
    with pytest.raises(CheckpointMismatchError) as caught:
        load_keras1_weights(lstm_file, twin)
    assert {name for name, _, _ in caught.value.shape_mismatches} == {
        "lstm_1/kernel", "lstm_1/recurrent_kernel", "lstm_1/bias", "dense_1/kernel"}
    assert unchanged(twin, before)


def test_an_unbuilt_model_or_a_wrong_argument_is_refused(lstm_file):
    with pytest.raises(ModelNotBuiltError):
        load_keras1_weights(lstm_file, keras.Sequential([keras.layers.Dense(1, name="dense_1")]))
    with pytest.raises(ValueError, match="kernels_from"):
        load_keras1_weights(lstm_file, lstm_twin(), kernels_from="th")
    with pytest.raises(TypeError, match="Keras 3 model"):
        load_keras1_weights(lstm_file, object())


def test_a_convolution_needs_its_backend_named(tmp_path):
    path = copy_real("keras1-dl4j", CONV_FILE, tmp_path)
    twin = conv_twin()
    before = values(twin)
    with pytest.raises(Keras1LayoutError, match=r"kernels_from='tensorflow' or 'theano'"):
        load_keras1_weights(path, twin)
    assert unchanged(twin, before)
    load_keras1_weights(path, twin, kernels_from="tensorflow")
    answers(twin, CONV_FILE)  # NumPy's cross-correlation of the file's weights (no Keras 1 output shipped)
    flipped = conv_twin()
    load_keras1_weights(path, flipped, kernels_from="theano")
    assert np.array_equal(flipped.weights[0].numpy(), twin.weights[0].numpy()[::-1, ::-1])


def test_a_th_ordered_kernel_is_transposed(tmp_path):
    path = copy_real("keras1-dl4j", CONV_FILE, tmp_path)
    with h5py.File(path, "r+") as file:  # the same layer as Keras 1 wrote it with dim_ordering='th'
        config = json.loads(file.attrs["model_config"])
        config["config"][0]["config"]["dim_ordering"] = "th"
        file.attrs["model_config"] = json.dumps(config)
        group = file["model_weights/convolution2d_1"]
        kernel = group["convolution2d_1_W:0"][()]
        del group["convolution2d_1_W:0"]
        group["convolution2d_1_W:0"] = np.transpose(kernel, (3, 2, 0, 1))  # (out, in, rows, cols)
    last = conv_twin()  # channels_last: refused (a Flatten -> Dense after it would answer wrong)
    with pytest.raises(Keras1LayoutError, match="data_format='channels_first'"):
        load_keras1_weights(path, last, kernels_from="tensorflow")
    twin = keras.Sequential([keras.Input((5, 5, 5)),
                             keras.layers.Conv2D(6, 3, data_format="channels_first", name="convolution2d_1")])
    load_keras1_weights(path, twin, kernels_from="tensorflow")
    np.testing.assert_array_equal(twin.get_layer("convolution2d_1").kernel.numpy(), kernel)  # (rows, cols, in, out)


def _write_keras1_gru(path, source):
    """A Keras 1 style GRU file (weights gru_1_W_z ... per gate) from a Keras 3 GRU(reset_after=False)."""
    kernel, recurrent, bias = source.get_layer("gru_1").get_weights()
    dense_w, dense_b = source.get_layer("dense_1").get_weights()
    with h5py.File(path, "w") as file:
        file.attrs["keras_version"] = b"1.2.2"
        file.attrs["model_config"] = json.dumps({"class_name": "Sequential", "config": [
            {"class_name": "GRU", "config": {"name": "gru_1", "inner_activation": "hard_sigmoid"}},
            {"class_name": "Dense", "config": {"name": "dense_1"}}]})
        weights = file.create_group("model_weights")
        weights.attrs["layer_names"] = [b"gru_1", b"dense_1"]
        gru = weights.create_group("gru_1")
        names = []
        for index, gate in enumerate("zrh"):
            for short, array in (("W", kernel), ("U", recurrent), ("b", bias)):
                name = f"gru_1_{short}_{gate}"
                gru[name] = np.split(array, 3, axis=-1)[index]
                names.append(name.encode())
        gru.attrs["weight_names"] = names
        dense = weights.create_group("dense_1")
        dense["dense_1_W"], dense["dense_1_b"] = dense_w, dense_b
        dense.attrs["weight_names"] = [b"dense_1_W", b"dense_1_b"]


def gru_model(reset_after=False, seed=3):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4, 2)), keras.layers.GRU(3, reset_after=reset_after, name="gru_1",
                                                                   recurrent_activation=keras1_hard_sigmoid),
                             keras.layers.Dense(2, name="dense_1")])


def test_a_gru_in_the_keras1_layout_loads_into_reset_after_false(tmp_path):
    source = gru_model()
    _write_keras1_gru(tmp_path / "gru.h5", source)
    x = np.sin(np.arange(16, dtype=np.float32)).reshape(2, 4, 2)
    twin = gru_model(seed=9)
    assert not np.allclose(twin(x), source(x))
    load_keras1_weights(tmp_path / "gru.h5", twin)
    np.testing.assert_allclose(np.asarray(twin(x)), np.asarray(source(x)), atol=1e-6)
    default = gru_model(reset_after=True)
    with pytest.raises(CheckpointMismatchError, match=r"GRU\(reset_after=False\)"):
        load_keras1_weights(tmp_path / "gru.h5", default)


def test_keras3_and_tf_keras_cannot_load_the_keras1_file(lstm_file):
    # measured on Keras 3.15.1: load_model stumbles on the Keras 1 config with a raw TypeError,
    # load_weights pairs arrays by position (12 per-gate arrays for 3 variables)
    with pytest.raises(TypeError, match="pop expected at most 1 argument"):
        keras.models.load_model(lstm_file, compile=False)
    with pytest.raises(ValueError, match="expects 3 weight.*Received 12"):
        lstm_twin().load_weights(lstm_file)
    script = ("import tf_keras, sys\n"
              "try:\n    tf_keras.models.load_model(sys.argv[1], compile=False)\n"
              "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, "-c", script, str(lstm_file)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert "missing 1 required positional argument: 'units'" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("name", [LSTM_FILE, CONV_FILE])
def test_identify_names_a_keras1_file_and_its_route(tmp_path, name):
    from helpers.identify import identify

    info = identify(copy_real("keras1-dl4j", name, tmp_path))
    assert info.is_model and info.kind == "legacy-h5-model"
    assert info.written_by == {"Keras": "1.2.2 (backend not recorded)"}
    assert any("written by Keras 1" in trap and "load_keras1_weights" in trap for trap in info.traps)
    assert "describe_keras1_h5" in info.how_to_load and "convert_legacy_h5" not in info.how_to_load


# --------------------------------------------------------------------------- review: layouts, damage, all at once


def _th_conv_dense(path, rng):
    """A Keras 1 th-ordered Conv -> Flatten -> Dense file and the outputs Keras 1 (TensorFlow backend) computes."""
    kernel, bias = rng.normal(size=(2, 3, 2, 2)).astype("float32"), rng.normal(size=2).astype("float32")
    dense, dense_b = rng.normal(size=(18, 2)).astype("float32"), rng.normal(size=2).astype("float32")
    config = {"class_name": "Sequential", "config": [
        {"class_name": "Convolution2D", "config": {"name": "convolution2d_1", "nb_filter": 2, "nb_row": 2,
                                                    "nb_col": 2, "dim_ordering": "th"}},
        {"class_name": "Flatten", "config": {"name": "flatten_1"}},
        {"class_name": "Dense", "config": {"name": "dense_1", "output_dim": 2}}]}
    with h5py.File(path, "w") as file:
        file.attrs["keras_version"], file.attrs["model_config"] = "1.2.2", json.dumps(config)
        group = file.create_group("model_weights")
        group.attrs["layer_names"] = [b"convolution2d_1", b"flatten_1", b"dense_1"]
        for name, arrays in (("convolution2d_1", {"W": kernel, "b": bias}), ("flatten_1", {}),
                             ("dense_1", {"W": dense, "b": dense_b})):
            layer = group.create_group(name)
            for short, array in arrays.items():
                layer[f"{name}_{short}"] = array
            layer.attrs["weight_names"] = [f"{name}_{short}".encode() for short in arrays]
    x = rng.normal(size=(2, 3, 4, 4)).astype("float32")  # th: batch, channels, rows, cols
    out = np.zeros((2, 2, 3, 3), "float32")
    for o in range(2):
        for r in range(3):
            for c in range(3):
                out[:, o, r, c] = np.sum(x[:, :, r:r + 2, c:c + 2] * kernel[o], axis=(1, 2, 3)) + bias[o]
    return x, out.reshape(2, -1) @ dense + dense_b


def _conv_dense_twin(data_format):
    shape = (3, 4, 4) if data_format == "channels_first" else (4, 4, 3)
    return keras.Sequential([keras.Input(shape), keras.layers.Conv2D(2, 2, data_format=data_format,
                                                                     name="convolution2d_1"),
                             keras.layers.Flatten(name="flatten_1"), keras.layers.Dense(2, name="dense_1")])


def test_a_th_file_refuses_a_channels_last_twin_and_answers_in_a_channels_first_one(tmp_path):
    x, expected = _th_conv_dense(tmp_path / "th.h5", np.random.default_rng(0))
    last = _conv_dense_twin("channels_last")
    before = values(last)
    with pytest.raises(Keras1LayoutError, match="data_format='channels_first'"):
        load_keras1_weights(tmp_path / "th.h5", last, kernels_from="tensorflow")
    assert all(np.array_equal(a, b) for a, b in zip(before, values(last)))
    # TensorFlow convolves channels_first on a CPU only through oneDNN (its default; conftest turns it off)
    np.save(tmp_path / "x.npy", x)
    script = ("import sys, numpy as np, keras; from tests.test_keras1 import _conv_dense_twin; "
              "from helpers.keras1 import load_keras1_weights; twin = _conv_dense_twin('channels_first'); "
              "load_keras1_weights(sys.argv[1] + '/th.h5', twin, kernels_from='tensorflow'); "
              "np.save(sys.argv[1] + '/y.npy', np.asarray(twin(np.load(sys.argv[1] + '/x.npy'))))")
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, env=env, capture_output=True,
                   timeout=300, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-4)


def test_a_tf_file_refuses_a_channels_first_twin(tmp_path):
    path = copy_real("keras1-dl4j", CONV_FILE, tmp_path)
    first = keras.Sequential([keras.Input((5, 5, 5)),
                              keras.layers.Conv2D(6, 3, data_format="channels_first", name="convolution2d_1")])
    with pytest.raises(Keras1LayoutError, match="data_format='channels_last'"):
        load_keras1_weights(path, first, kernels_from="tensorflow")


def test_a_weights_only_conv_file_needs_its_dim_ordering(tmp_path):
    path, kernel = tmp_path / "w.h5", np.random.default_rng(1).normal(size=(3, 3, 3, 3)).astype("float32")
    with h5py.File(path, "w") as file:  # square: the shape cannot tell th from tf
        file.attrs["keras_version"], file.attrs["layer_names"] = "1.2.2", [b"convolution2d_1"]
        layer = file.create_group("convolution2d_1")
        layer["convolution2d_1_W"], layer["convolution2d_1_b"] = kernel, np.zeros(3, "float32")
        layer.attrs["weight_names"] = [b"convolution2d_1_W", b"convolution2d_1_b"]
    twin = keras.Sequential([keras.Input((5, 5, 3)), keras.layers.Conv2D(3, 3, name="convolution2d_1")])
    with pytest.raises(Keras1LayoutError, match="dim_ordering='th' or 'tf'"):
        load_keras1_weights(path, twin, kernels_from="tensorflow")
    load_keras1_weights(path, twin, kernels_from="tensorflow", dim_ordering="tf")
    np.testing.assert_array_equal(twin.layers[0].kernel.numpy(), kernel)
    first = keras.Sequential([keras.Input((3, 5, 5)),
                              keras.layers.Conv2D(3, 3, data_format="channels_first", name="convolution2d_1")])
    load_keras1_weights(path, first, kernels_from="tensorflow", dim_ordering="th")
    np.testing.assert_array_equal(first.layers[0].kernel.numpy(), np.transpose(kernel, (2, 3, 1, 0)))


def test_describe_a_missing_dataset_says_damaged(tmp_path):
    path = copy_real("keras1-dl4j", LSTM_FILE, tmp_path)
    with h5py.File(path, "r+") as file:
        del file["model_weights/dense_1/dense_1_b"]
    with pytest.raises(NotACheckpointError, match=r"damaged: layer 'dense_1' lists weight 'dense_1_b'"):
        describe_keras1_h5(path)


def test_every_problem_is_named_at_once(tmp_path):
    path = copy_real("keras1-dl4j", CONV_FILE, tmp_path)
    lstm = copy_real("keras1-dl4j", LSTM_FILE, tmp_path / "l")
    wrong = keras.Sequential([keras.Input((1, 1)), keras.layers.GRU(50, name="lstm_1"),
                              keras.layers.Dense(1, name="dense_1")])
    with pytest.raises(Keras1LayoutError) as caught:
        load_keras1_weights(lstm, wrong)
    assert "file LSTM, model GRU" in str(caught.value) and "recurrent_activation" in str(caught.value)
    twin = lstm_twin(recurrent_activation="hard_sigmoid", names=("lstm_1", "dense_9"))
    with pytest.raises(Keras1LayoutError) as caught:
        load_keras1_weights(lstm, twin)
    text = str(caught.value)
    assert "keras1_hard_sigmoid" in text and "dense_9" in text and "dense_1" in text, text
    first = keras.Sequential([keras.Input((5, 5, 5)),
                              keras.layers.Conv2D(6, 3, data_format="channels_first", name="convolution2d_1")])
    with pytest.raises(Keras1LayoutError) as caught:
        load_keras1_weights(path, first)
    assert "kernels_from" in str(caught.value) and "channels_last" in str(caught.value)


def test_a_bidirectional_model_is_refused_with_the_tf_keras_route(lstm_file):
    twin = keras.Sequential([keras.Input((1, 1)), keras.layers.Bidirectional(keras.layers.LSTM(25), name="lstm_1"),
                             keras.layers.Dense(1, name="dense_1")])
    with pytest.raises(Keras1LayoutError, match="tf-keras"):
        load_keras1_weights(lstm_file, twin)


def test_a_consume_less_gpu_lstm_loads(tmp_path):
    path = copy_real("keras1-dl4j", LSTM_FILE, tmp_path)
    with h5py.File(path, "r+") as file:  # the same LSTM as Keras 1 stored it with consume_less='gpu'
        group = file["model_weights/lstm_1"]
        arrays = {w: group[w][()] for w in group}
        for w in list(group):
            del group[w]
        for short, join in (("W", np.hstack), ("U", np.hstack), ("b", np.concatenate)):
            group[f"lstm_1_{short}"] = join([arrays[f"lstm_1_{short}_{gate}"] for gate in "ifco"])
        group.attrs["weight_names"] = [b"lstm_1_W", b"lstm_1_U", b"lstm_1_b"]
        config = json.loads(file.attrs["model_config"])
        config["config"][0]["config"]["consume_less"] = "gpu"
        file.attrs["model_config"] = json.dumps(config)
    twin = lstm_twin()
    load_keras1_weights(path, twin)
    answers(twin, LSTM_FILE)


def test_identify_verify_of_a_keras1_file_is_not_called_verified(tmp_path):
    from helpers.__main__ import NOT_VERIFIED, main
    from helpers.identify import identify

    path = copy_real("keras1-dl4j", LSTM_FILE, tmp_path)
    verification = identify(path).verify()
    assert not verification.ok and verification.partial
    assert str(verification).startswith("not verified: ") and "build the twin yourself" in str(verification)
    assert main([str(path), "--verify"]) == NOT_VERIFIED
    conv = identify(copy_real("keras1-dl4j", CONV_FILE, tmp_path / "conv"))
    assert any("kernels_from" in trap for trap in conv.traps), conv.traps
