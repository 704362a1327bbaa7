"""Wrong answers and raw errors the review found in helpers.keras2's legacy routes.

Keras 2's ``hard_sigmoid`` is Keras 1's (clip(0.2 x + 0.5, 0, 1)), not Keras 3's (clip(x / 6 + 0.5, 0, 1)).

A real TF 2.15.1 ``.h5`` (tests/data/tf215/hard_sigmoid*.h5: LSTM(recurrent_activation='hard_sigmoid')
and Dense(activation='hard_sigmoid')) answers like Keras 2 through every route of helpers.keras2, and a
twin built with Keras 3's hard_sigmoid is refused for a whole-model file.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from helpers.errors import Keras2MismatchError, LegacyModelError
from helpers.keras1 import keras1_hard_sigmoid
from helpers.keras2 import convert_legacy_h5, legacy_custom_objects
from tests.realfiles import copy_real, expected_output, model_input, untouched

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def close(model) -> float:
    return float(np.max(np.abs(np.asarray(model(model_input("tf215", "hard_sigmoid"), training=False))
                               - expected_output("tf215", "hard_sigmoid"))))


def twin(activation) -> keras.Model:
    inputs = keras.Input((5, 3))
    h = keras.layers.LSTM(4, recurrent_activation=activation, name="lstm")(inputs)
    h = keras.layers.Dense(4, activation=activation, name="gate")(h)
    return keras.Model(inputs, keras.layers.Dense(2, name="out")(h))


def test_legacy_custom_objects_maps_hard_sigmoid_to_keras2s():
    assert legacy_custom_objects()["hard_sigmoid"] is keras1_hard_sigmoid
    x = np.array([-3.0, -1.0, 0.0, 1.0, 3.0], dtype="float32")
    assert np.allclose(keras1_hard_sigmoid(x), np.clip(0.2 * x + 0.5, 0, 1))


def test_load_model_with_legacy_custom_objects_answers_like_keras2(tmp_path):
    path = copy_real("tf215", "hard_sigmoid", tmp_path / "in")
    with untouched(path):
        model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    assert close(model) < 1e-5


def test_convert_whole_file_answers_like_keras2_and_reloads(tmp_path):
    path = copy_real("tf215", "hard_sigmoid", tmp_path / "in")
    with untouched(path):
        out = convert_legacy_h5(path, tmp_path / "m.keras")
    assert close(keras.models.load_model(out)) < 1e-5


def test_convert_refuses_a_twin_with_keras3s_hard_sigmoid_and_leaves_it(tmp_path):
    path = copy_real("tf215", "hard_sigmoid", tmp_path / "in")
    wrong = twin("hard_sigmoid")
    before = [v.numpy().copy() for v in wrong.weights]
    with untouched(path), pytest.raises(Keras2MismatchError) as caught:
        convert_legacy_h5(path, tmp_path / "m.weights.h5", model=wrong)
    text = str(caught.value)
    assert "'lstm'" in text and "'gate'" in text and "keras1_hard_sigmoid" in text, text
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, wrong.weights))
    assert not (tmp_path / "m.weights.h5").exists()
    right = twin(keras1_hard_sigmoid)
    convert_legacy_h5(path, tmp_path / "m.weights.h5", model=right)
    assert close(right) < 1e-5


def test_weights_only_file_into_the_right_twin(tmp_path):
    path = copy_real("tf215", "hard_sigmoid_weights", tmp_path / "in")
    right = twin(keras1_hard_sigmoid)
    convert_legacy_h5(path, tmp_path / "m.weights.h5", model=right)
    assert close(right) < 1e-5


# --------------------------------------------------------------------------- a functional model in a Sequential


def functional_in_sequential_twin() -> keras.Model:
    """tests/data/tf215/functional_in_sequential.h5 in Keras 3 code, with the file's names."""
    inner_in = keras.Input((3,), name="mid_in")
    hidden = keras.layers.Dense(4, activation="tanh", name="mid_hidden")(inner_in)
    inner = keras.Model(inner_in, keras.layers.Dense(3, name="mid_out")(hidden), name="mid_func")
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, name="first"), inner,
                             keras.layers.Dense(2, name="last")])


def test_a_functional_model_in_a_sequential_is_refused_naming_the_twin_route_which_works(tmp_path):
    path = copy_real("tf215", "functional_in_sequential", tmp_path / "in")
    with untouched(path):
        with pytest.raises(LegacyModelError, match="model=twin") as by_load:
            keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
        with pytest.raises(LegacyModelError, match="model=twin") as by_convert:
            convert_legacy_h5(path, tmp_path / "m.keras")
        assert "'mid_func'" in str(by_load.value) and "'mid_func'" in str(by_convert.value)
        twin = functional_in_sequential_twin()
        convert_legacy_h5(path, tmp_path / "m.weights.h5", model=twin)
    assert float(np.max(np.abs(np.asarray(twin(model_input("tf215", "functional_in_sequential")))
                               - expected_output("tf215", "functional_in_sequential")))) < 1e-5


# --------------------------------------------------------------------------- a wrapped layer of another name


def test_a_bidirectional_twin_with_another_inner_name_is_told_that_name_counts(tmp_path):
    path = copy_real("tf215", "bidirectional_gru_weights", tmp_path / "in")
    inputs = keras.Input((5, 3))
    h = keras.layers.Bidirectional(keras.layers.GRU(3, name="gru_7"), name="bi_gru")(inputs)
    twin = keras.Model(inputs, keras.layers.Dense(2, name="out")(h))
    with pytest.raises(Keras2MismatchError, match=r"forward_<name>\): name the inner layer as the file does"):
        convert_legacy_h5(path, tmp_path / "m.weights.h5", model=twin)
