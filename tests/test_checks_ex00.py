"""The checks of notebook 00: right answers pass, a learner's wrong ones get their hint."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError
from helpers.checks.ex00 import check_affine_in_graph, check_initial_weights, check_modern_name

V1 = tf.compat.v1


# --------------------------------------------------------------------------- 00.1


def exists(dotted_name):
    obj = tf
    for part in dotted_name.split(".")[1:]:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def modern_name(old):
    if exists(old):
        return old
    moved = old.replace("tf.", "tf.compat.v1.", 1)
    return moved if exists(moved) else None


def modern_name_with_getattr_chain(old):
    import functools

    def lookup(name):
        try:
            functools.reduce(getattr, name.split(".")[1:], tf)
            return True
        except AttributeError:
            return False

    candidates = [old, "tf.compat.v1." + old[len("tf."):]]
    return next((name for name in candidates if lookup(name)), None)


@pytest.mark.parametrize("answer", [modern_name, modern_name_with_getattr_chain])
def test_00_1_right_answers(answer, capsys):
    check_modern_name(answer)
    assert capsys.readouterr().out.startswith("✔ Exercise 00.1 passed")


def test_00_1_stub():
    def stub(old):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        check_modern_name(stub)


def _top_level_only(old):
    first = old.split(".")[1]
    return old if hasattr(tf, first) else "tf.compat.v1." + old[3:]


@pytest.mark.parametrize("wrong, hint", [
    (lambda old: "tf.compat.v1." + old[3:], "still exists"),
    (lambda old: old, "is gone"),
    (lambda old: old if exists(old) else "tf.compat.v1." + old[3:], "does not exist"),
    (_top_level_only, "not only the first"),
    (lambda old: "tf.compat.v1" + old[2:] if not exists(old) else old, "does not exist"),
    (lambda old: eval(old, {"tf": tf}) if exists(old) else None, "returned a function"),
    (lambda old: old.replace("tf.", "tf.compat.v1.") if not exists(old) else old, "does not exist"),
])
def test_00_1_wrong_answers(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        check_modern_name(wrong)


# --------------------------------------------------------------------------- 00.2


def affine_in_graph(x, w, b):
    with tf.Graph().as_default():
        x_in = V1.placeholder(tf.float32, shape=[None, w.shape[0]])
        w_var = V1.get_variable("w", initializer=w)
        b_var = V1.get_variable("b", initializer=b)
        y = tf.matmul(x_in, w_var) + b_var
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return sess.run(y, {x_in: x})


# --------------------------------------------------------------------------- accepted


def test_reference_answer_passes(capsys):
    check_affine_in_graph(affine_in_graph)
    assert capsys.readouterr().out.startswith("✔ Exercise 00.2 passed")


def test_tf_variable_and_an_explicit_graph_pass(capsys):
    def explicit(x, w, b):
        graph = tf.Graph()
        with graph.as_default():
            x_in = V1.placeholder(tf.float32, shape=x.shape)
            y = tf.add(tf.matmul(x_in, tf.Variable(w)), tf.Variable(b))
            init = V1.global_variables_initializer()
        with V1.Session(graph=graph) as sess:
            sess.run(init)
            return sess.run(y, feed_dict={x_in: x})

    check_affine_in_graph(explicit)
    assert "passed" in capsys.readouterr().out


def test_constants_and_bias_add_pass(capsys):
    def with_constants(x, w, b):
        with tf.Graph().as_default(), V1.Session() as sess:
            return sess.run(tf.nn.bias_add(tf.matmul(tf.constant(x), tf.constant(w)), b))

    check_affine_in_graph(with_constants)
    assert "passed" in capsys.readouterr().out


# --------------------------------------------------------------------------- rejected


def test_stub_is_not_done():
    def stub(x, w, b):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        check_affine_in_graph(stub)


def test_returning_nothing():
    def forgets_return(x, w, b):
        affine_in_graph(x, w, b)

    with pytest.raises(CheckFailed, match="returned None"):
        check_affine_in_graph(forgets_return)


def test_eager_tensor_instead_of_graph_mode():
    with pytest.raises(CheckFailed, match="NumPy array that `sess.run` returns, got EagerTensor"):
        check_affine_in_graph(lambda x, w, b: tf.matmul(x, w) + b)


def test_numpy_alone_is_not_the_graph_mode_way():
    with pytest.raises(CheckFailed, match="no session ran"):
        check_affine_in_graph(lambda x, w, b: x @ w + b)


def test_list_from_sess_run():
    def returns_list(x, w, b):
        with tf.Graph().as_default(), V1.Session() as sess:
            return sess.run([tf.matmul(x, w) + b])

    with pytest.raises(CheckFailed, match="you returned a list"):
        check_affine_in_graph(returns_list)


def test_forgetting_the_bias():
    def no_bias(x, w, b):
        with tf.Graph().as_default(), V1.Session() as sess:
            return sess.run(tf.matmul(x, w))

    with pytest.raises(CheckFailed, match="without the bias"):
        check_affine_in_graph(no_bias)


def test_random_weights_instead_of_the_given_ones():
    def random_weights(x, w, b):
        with tf.Graph().as_default():
            V1.set_random_seed(0)
            w_var = V1.get_variable("w", shape=w.shape)
            y = tf.matmul(x, w_var) + b
            with V1.Session() as sess:
                sess.run(V1.global_variables_initializer())
                return sess.run(y)

    with pytest.raises(CheckFailed, match="differ from x @ w \\+ b"):
        check_affine_in_graph(random_weights)


def test_hard_coded_placeholder_shape_fails_on_the_second_input():
    def fixed_shape(x, w, b):
        with tf.Graph().as_default():
            x_in = V1.placeholder(tf.float32, shape=[None, 3])
            y = tf.matmul(x_in, V1.get_variable("w", initializer=w)) + b
            with V1.Session() as sess:
                sess.run(V1.global_variables_initializer())
                return sess.run(y, {x_in: x})

    with pytest.raises(LearnerCodeError, match="two shapes do not fit together"):
        check_affine_in_graph(fixed_shape)


def test_one_shared_graph_collides_on_the_second_call():
    graph = tf.Graph()

    def leaky(x, w, b):
        with graph.as_default():
            w_var = V1.get_variable("w", initializer=w)
            with V1.Session() as sess:
                sess.run(w_var.initializer)
                return sess.run(tf.matmul(x, w_var) + b)

    with pytest.raises(LearnerCodeError, match="already exists"):
        check_affine_in_graph(leaky)


def test_forgetting_the_feed():
    def no_feed(x, w, b):
        with tf.Graph().as_default():
            x_in = V1.placeholder(tf.float32, shape=[None, w.shape[0]])
            y = tf.matmul(x_in, tf.constant(w)) + b
            with V1.Session() as sess:
                return sess.run(y)

    with pytest.raises(LearnerCodeError, match="feed_dict"):
        check_affine_in_graph(no_feed)


def test_right_values_computed_outside_the_session():
    def side_numpy(x, w, b):
        with tf.Graph().as_default(), V1.Session() as sess:
            sess.run(tf.constant(0.0))
        return x @ w + b

    with pytest.raises(CheckFailed, match="not what `sess.run` returned"):
        check_affine_in_graph(side_numpy)


# --------------------------------------------------------------------------- 00.3


def initial_weights(seed, shape):
    with tf.Graph().as_default():
        V1.set_random_seed(seed)
        weights = V1.get_variable("weights", shape=shape)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return sess.run(weights)


def test_00_3_reference_answer_passes(capsys):
    check_initial_weights(initial_weights)
    assert capsys.readouterr().out.startswith("✔ Exercise 00.3 passed")


def test_00_3_explicit_graph_placeholder_and_initial_value_pass(capsys):
    def with_placeholder(seed, shape):
        graph = tf.Graph()
        with graph.as_default():
            tf.random.set_seed(seed)  # inside a graph block it sets that graph's seed
            x = V1.placeholder(tf.float32, shape=[None, shape[0]], name="x")
            kernel = V1.get_variable("dense/kernel", shape=[x.shape[-1], shape[1]])
        with V1.Session(graph=graph) as sess:
            return sess.run(kernel.initial_value)

    check_initial_weights(with_placeholder)
    assert "passed" in capsys.readouterr().out


def test_00_3_explicit_default_initializer_in_a_scope_passes(capsys):
    def explicit_glorot(seed, shape):
        with tf.Graph().as_default() as graph:
            graph.seed = seed
            with V1.variable_scope("layer"):
                w = V1.get_variable("w", shape, initializer=V1.glorot_uniform_initializer())
            sess = V1.Session()
            sess.run(w.initializer)
            value = sess.run(w.read_value())
            sess.close()
        return value

    check_initial_weights(explicit_glorot)
    assert "passed" in capsys.readouterr().out


def test_00_3_interactive_session_passes(capsys):
    def interactive(seed, shape):
        graph = tf.Graph()
        with graph.as_default():
            V1.set_random_seed(seed)
            v = V1.get_variable("v", shape=list(shape))
            sess = V1.InteractiveSession(graph=graph)
            V1.global_variables_initializer().run()
            value = sess.run(v)
            sess.close()
        return value

    check_initial_weights(interactive)
    assert "passed" in capsys.readouterr().out


def test_00_3_stub_is_not_done():
    def stub(seed, shape):
        raise NotImplementedError()

    with pytest.raises(ExerciseNotDone):
        check_initial_weights(stub)


def _without_graph_seed(seed, shape):
    with tf.Graph().as_default():
        w = V1.get_variable("w", shape=shape)
        with V1.Session() as sess:
            sess.run(w.initializer)
            return sess.run(w)


def _eager_seed_outside_the_graph(seed, shape):
    tf.random.set_seed(seed)
    with tf.Graph().as_default():
        w = V1.get_variable("w", shape=shape)
        with V1.Session() as sess:
            sess.run(w.initializer)
            return sess.run(w)


@pytest.fixture
def deterministic_ops():
    """Deterministic ops on, as the notebooks' setup cell leaves them, for one test only."""
    from tensorflow.python.framework import config

    was_enabled = config.is_op_determinism_enabled()
    config.enable_op_determinism()
    yield
    if not was_enabled:
        config.disable_op_determinism()


@pytest.mark.parametrize("wrong", [_without_graph_seed, _eager_seed_outside_the_graph])
def test_00_3_unseeded_graph_names_the_learners_line(wrong, deterministic_ops):
    with pytest.raises(LearnerCodeError, match=r"(?s)at this line:\n    w = V1.get_variable.*Random ops require a seed"):
        check_initial_weights(wrong)
    tf.random.set_seed(42)


def test_00_3_unseeded_graph_hint_points_at_the_graph_level_seed(deterministic_ops):
    with pytest.raises(LearnerCodeError, match="Likely cause: .*graph-level seed"):
        check_initial_weights(_without_graph_seed)


@pytest.mark.parametrize("wrong", [_without_graph_seed, _eager_seed_outside_the_graph])
def test_00_3_unseeded_graph_without_deterministic_ops(wrong):
    with pytest.raises(CheckFailed, match="no graph-level seed .*: call `V1.set_random_seed"):
        check_initial_weights(wrong)
    tf.random.set_seed(42)


def test_00_3_returning_the_variable():
    def returns_variable(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            return V1.get_variable("w", shape=shape)

    with pytest.raises(CheckFailed, match="returned a ResourceVariable, which has no value outside a session"):
        check_initial_weights(returns_variable)


def test_00_3_returning_the_initial_value_tensor():
    def returns_tensor(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            return V1.get_variable("w", shape=shape).initial_value

    with pytest.raises(CheckFailed, match="no value outside a session"):
        check_initial_weights(returns_tensor)


def test_00_3_a_list_from_sess_run():
    def returns_list(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run([w])

    with pytest.raises(CheckFailed, match="returned a list"):
        check_initial_weights(returns_list)


def test_00_3_one_graph_for_every_call_with_reuse():
    graph = tf.Graph()

    def shared_graph(seed, shape):
        with graph.as_default():
            V1.set_random_seed(seed)
            with V1.variable_scope("layer", reuse=V1.AUTO_REUSE):
                w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="same graph as an earlier call"):
        check_initial_weights(shared_graph)


def test_00_3_one_graph_for_every_call_collides():
    graph = tf.Graph()

    def shared_graph(seed, shape):
        with graph.as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(LearnerCodeError, match="already exists"):
        check_initial_weights(shared_graph)


def test_00_3_an_op_level_seed_instead_of_the_graph_seed():
    def op_seed(seed, shape):
        with tf.Graph().as_default():
            w = V1.get_variable("w", shape=shape, initializer=V1.glorot_uniform_initializer(seed=seed))
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="a graph with no graph-level seed"):
        check_initial_weights(op_seed)


def test_00_3_a_fixed_seed_ignores_the_argument():
    def fixed_seed(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(42)
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="graph-level seed is 42, not 7"):
        check_initial_weights(fixed_seed)


def test_00_3_zeros():
    def zeros(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape, initializer=V1.zeros_initializer())
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="all equal to 0"):
        check_initial_weights(zeros)


def test_00_3_another_initializer():
    def normal(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape, initializer=V1.random_normal_initializer())
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="beyond ±0.8165"):
        check_initial_weights(normal)


def test_00_3_numpy_draw():
    def numpy_glorot(seed, shape):
        limit = np.sqrt(6 / (shape[0] + shape[1]))
        return np.random.default_rng(seed).uniform(-limit, limit, shape).astype(np.float32)

    with pytest.raises(CheckFailed, match="ran no session"):
        check_initial_weights(numpy_glorot)


def test_00_3_eager_variable():
    def eager(seed, shape):
        tf.random.set_seed(seed)
        return V1.get_variable("w", shape=shape).numpy()

    with pytest.raises(CheckFailed, match="ran no session"):
        check_initial_weights(eager)
    tf.random.set_seed(42)


def test_00_3_initial_value_drawn_again_after_the_initializer():
    def second_draw(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(V1.global_variables_initializer())
                return sess.run(w.initial_value)

    with pytest.raises(CheckFailed, match="`initial_value` run again after the initializer"):
        check_initial_weights(second_draw)


def test_00_3_a_random_op_before_the_variable():
    def noise_first(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            noise = tf.random.normal([shape[0]])
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="a random op made before the variable"):
        check_initial_weights(noise_first)


def test_00_3_forgetting_the_initializer():
    def uninitialized(seed, shape):
        with tf.Graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable("w", shape=shape)
            with V1.Session() as sess:
                return sess.run(w)

    with pytest.raises(LearnerCodeError, match="read before it has a value"):
        check_initial_weights(uninitialized)


def test_00_3_the_default_graph():
    def default_graph(seed, shape):
        with V1.get_default_graph().as_default():
            V1.set_random_seed(seed)
            w = V1.get_variable(f"w_{seed}_{shape[0]}", shape=shape)
            with V1.Session() as sess:
                sess.run(w.initializer)
                return sess.run(w)

    with pytest.raises(CheckFailed, match="in the default graph"):
        check_initial_weights(default_graph)
