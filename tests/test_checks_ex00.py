"""The check of notebook 00's warm-up passes a right answer and explains wrong ones."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone
from helpers.checks.ex00 import check_affine_in_graph


def affine_in_graph(x, w, b):
    with tf.Graph().as_default():
        x_in = tf.compat.v1.placeholder(tf.float32, shape=[None, w.shape[0]])
        w_var = tf.compat.v1.get_variable("w", initializer=w)
        b_var = tf.compat.v1.get_variable("b", initializer=b)
        y = tf.matmul(x_in, w_var) + b_var
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(y, {x_in: x})


def test_right_answer_passes(capsys):
    check_affine_in_graph(affine_in_graph)
    assert capsys.readouterr().out.startswith("✔ Exercise 00.1 passed")


def test_stub_is_not_done():
    def stub(x, w, b):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        check_affine_in_graph(stub)


def test_returning_nothing():
    with pytest.raises(CheckFailed, match="returned None"):
        check_affine_in_graph(lambda x, w, b: None)


def test_eager_tensor_instead_of_graph_mode():
    with pytest.raises(CheckFailed, match="NumPy array that `sess.run` returns, got EagerTensor"):
        check_affine_in_graph(lambda x, w, b: tf.matmul(x, w) + b)


def test_elementwise_product_has_the_wrong_shape():
    with pytest.raises(CheckFailed, match="should be 4x2"):
        check_affine_in_graph(lambda x, w, b: (x[:, :1] * b).repeat(2, axis=1)[:, :3])


def test_random_initialisation_gives_wrong_values():
    def random_weights(x, w, b):
        return x @ np.ones_like(w) + b

    with pytest.raises(CheckFailed, match="differ from x @ w \\+ b"):
        check_affine_in_graph(random_weights)


def test_shared_default_graph_collides_on_the_second_call():
    graph = tf.Graph()

    def leaky(x, w, b):
        with graph.as_default():
            tf.compat.v1.get_variable("w", initializer=w)
        return x @ w + b

    with pytest.raises(CheckFailed, match="variable names collide"):
        check_affine_in_graph(leaky)
