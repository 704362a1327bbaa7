"""The checks of notebook 02: a right answer passes, typical mistakes get their hints."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex02

tf1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# ---------------------------------------------------------------- 02.1


def run_from_collections(prefix, x):
    with tf.Graph().as_default():
        saver = tf1.train.import_meta_graph(prefix + ".meta")
        inputs = tf1.get_collection("inputs")[0]
        outputs = tf1.get_collection("outputs")[0]
        with tf1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(outputs, {inputs: x})


def run_by_notebook_names(prefix, x):
    with tf.Graph().as_default() as graph:
        saver = tf1.train.import_meta_graph(prefix + ".meta")
        with tf1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(graph.get_tensor_by_name("logits:0"), {graph.get_tensor_by_name("x:0"): x})


def run_without_restoring(prefix, x):
    with tf.Graph().as_default():
        tf1.train.import_meta_graph(prefix + ".meta")
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            return sess.run(tf1.get_collection("outputs")[0], {tf1.get_collection("inputs")[0]: x})


def test_02_1_right_answer_passes(capsys):
    ex02.check_run_from_collections(run_from_collections)
    assert "✔ Exercise 02.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (run_by_notebook_names, "decoy"),
        (run_without_restoring, "freshly initialized"),
        (lambda prefix, x: None, "returned None"),
    ],
)
def test_02_1_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_run_from_collections(answer)


def test_02_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone):
        ex02.check_run_from_collections(not_done)


# ---------------------------------------------------------------- 02.2


def import_with_new_input(meta_path, raw):
    saver = tf1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return tf1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_scaling(meta_path, raw):
    saver = tf1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw})
    return tf1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_input_map(meta_path, raw):
    saver = tf1.train.import_meta_graph(meta_path, import_scope="net")
    return tf1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_scope(meta_path, raw):
    saver = tf1.train.import_meta_graph(meta_path, input_map={"x:0": raw / 255.0})
    return tf1.get_default_graph().get_tensor_by_name("y:0"), saver


def test_02_2_right_answer_passes(capsys):
    ex02.check_import_with_new_input(import_with_new_input)
    assert "✔ Exercise 02.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (import_without_scaling, "divide them by 255"),
        (import_without_input_map, "input_map"),
        (import_without_scope, "import under the scope 'net'"),
        (lambda meta_path, raw: import_with_new_input(meta_path, raw)[0], "return a pair"),
    ],
)
def test_02_2_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_import_with_new_input(answer)


# ---------------------------------------------------------------- 02.3


def add_frozen_head(features, n_classes):
    frozen = tf.stop_gradient(features)
    with tf1.variable_scope("head"):
        w = tf1.get_variable("w", shape=[frozen.shape[-1], n_classes])
        b = tf1.get_variable("b", shape=[n_classes], initializer=tf1.zeros_initializer())
    return tf.matmul(frozen, w) + b


def add_head_without_freezing(features, n_classes):
    with tf1.variable_scope("head"):
        w = tf1.get_variable("w", shape=[features.shape[-1], n_classes])
        b = tf1.get_variable("b", shape=[n_classes])
    return tf.matmul(features, w) + b


def add_head_without_bias(features, n_classes):
    with tf1.variable_scope("head"):
        w = tf1.get_variable("w", shape=[features.shape[-1], n_classes])
    return tf.matmul(tf.stop_gradient(features), w)


def test_02_3_right_answer_passes(capsys):
    ex02.check_add_frozen_head(add_frozen_head)
    assert "✔ Exercise 02.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (add_head_without_freezing, "stop_gradient"),
        (add_head_without_bias, "exactly two new trainable variables"),
        (lambda features, n: tf.stop_gradient(features), "logits should have shape"),
    ],
)
def test_02_3_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_add_frozen_head(answer)


# ---------------------------------------------------------------- 02.4


def head_on_frozen_base(model, layer_name, n_classes):
    base = keras.Model(model.inputs[0], model.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_trainable_base(model, layer_name, n_classes):
    base = keras.Model(model.inputs[0], model.get_layer(layer_name).output)
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_old_output(model, layer_name, n_classes):
    model.trainable = False
    return keras.Sequential([model, keras.layers.Dense(n_classes)])


def test_02_4_right_answer_passes(capsys):
    ex02.check_head_on_frozen_base(head_on_frozen_base)
    assert "✔ Exercise 02.4 passed" in capsys.readouterr().out


def test_02_4_the_helper_passes_too(capsys):
    from helpers.metagraph import frozen_base

    ex02.check_head_on_frozen_base(
        lambda model, name, n: keras.Sequential([frozen_base(model, name), keras.layers.Dense(n)])
    )
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (head_on_trainable_base, "only the new head should be trainable"),
        (head_on_old_output, "old model's output"),
        (lambda model, name, n: "model", "should return a keras.Model"),
    ],
)
def test_02_4_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_head_on_frozen_base(answer)


def test_02_4_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="02.4"):
        ex02.check_head_on_frozen_base(not_done)

