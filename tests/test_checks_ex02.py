"""The checks of notebook 02: right answers pass, plausible wrong answers get their hints."""

from __future__ import annotations

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex02

V1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# ---------------------------------------------------------------- 02.1


def run_from_collections(prefix, x):
    with tf.Graph().as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta")
        inputs = V1.get_collection("inputs")[0]
        outputs = V1.get_collection("outputs")[0]
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(outputs, {inputs: x})


def run_through_graph_collections(prefix, x):
    graph = tf.Graph()
    with graph.as_default():
        saver = V1.train.import_meta_graph(pathlib.Path(prefix + ".meta"))
    [inputs], [outputs] = graph.get_collection("inputs"), graph.get_collection("outputs")
    with V1.Session(graph=graph) as sess:
        saver.restore(sess, prefix)
        return sess.run([outputs], feed_dict={inputs: x})[0]


def run_by_notebook_names(prefix, x):
    with tf.Graph().as_default() as graph:
        saver = V1.train.import_meta_graph(prefix + ".meta")
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(graph.get_tensor_by_name("logits:0"), {graph.get_tensor_by_name("x:0"): x})


def run_without_restoring(prefix, x):
    with tf.Graph().as_default():
        V1.train.import_meta_graph(prefix + ".meta")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return sess.run(V1.get_collection("outputs")[0], {V1.get_collection("inputs")[0]: x})


def return_the_tensor(prefix, x):
    with tf.Graph().as_default():
        V1.train.import_meta_graph(prefix + ".meta")
        return V1.get_collection("outputs")[0]


def run_the_input(prefix, x):
    with tf.Graph().as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta")
        inputs = V1.get_collection("inputs")[0]
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(inputs, {inputs: x})


def run_and_save_again(prefix, x):
    with tf.Graph().as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta")
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            out = sess.run(V1.get_collection("outputs")[0], {V1.get_collection("inputs")[0]: x})
            sess.run(V1.global_variables()[0].assign(tf.zeros([3, 3])))
            saver.save(sess, prefix)
            return out


def import_the_prefix(prefix, x):
    with tf.Graph().as_default():
        saver = V1.train.import_meta_graph(prefix)
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(V1.get_collection("outputs")[0], {V1.get_collection("inputs")[0]: x})


def run_with_the_recipe(prefix, x):
    from helpers.metagraph import import_scoped

    with tf.Graph().as_default() as graph:
        saver = import_scoped(prefix + ".meta", "imported")
        with V1.Session(graph=graph) as sess:
            saver.restore(sess, prefix)
            return np.array(sess.run(graph.get_collection("outputs")[0], {graph.get_collection("inputs")[0]: x}))


@pytest.mark.parametrize("answer", [run_from_collections, run_through_graph_collections, run_with_the_recipe])
def test_02_1_right_answers_pass(answer, capsys):
    ex02.check_run_from_collections(answer)
    assert "✔ Exercise 02.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (run_by_notebook_names, "decoy"),
        (run_without_restoring, "freshly initialized"),
        (lambda prefix, x: None, "returned None"),
        (return_the_tensor, "not its value"),
        (run_the_input, "shape"),
        (run_and_save_again, "changed the checkpoint's files"),
    ],
)
def test_02_1_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_run_from_collections(answer)


def test_02_1_a_missing_meta_suffix_names_the_learners_line():
    with pytest.raises(LearnerCodeError, match="import_meta_graph"):
        ex02.check_run_from_collections(import_the_prefix)


def test_02_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="02.1"):
        ex02.check_run_from_collections(not_done)


# ---------------------------------------------------------------- 02.2


def import_with_new_input(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_with_the_recipe(meta_path, raw):
    from helpers.metagraph import import_scoped

    saver = import_scoped(pathlib.Path(meta_path), "net/", input_map={"x": tf.multiply(raw, 1 / 255)})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_scaling(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_with_floor_division(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw // 255})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_input_map(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, import_scope="net")
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def import_without_scope(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("y:0"), saver


def import_and_make_a_new_saver(meta_path, raw):
    V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), V1.train.Saver()


def import_and_find_the_output_by_suffix(meta_path, raw):
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    graph = V1.get_default_graph()
    first_y = next(op for op in graph.get_operations() if op.name.endswith("/y"))
    return first_y.outputs[0], saver


def import_and_find_the_op(meta_path, raw):
    scaled = tf.math.truediv(raw, tf.constant(255.0))
    saver = V1.train.import_meta_graph(meta_path, input_map={"x": scaled}, import_scope="net")
    return V1.get_default_graph().get_operation_by_name("net/y").outputs[0], saver


@pytest.mark.parametrize("answer", [import_with_new_input, import_with_the_recipe, import_and_find_the_op])
def test_02_2_right_answers_pass(answer, capsys):
    ex02.check_import_with_new_input(answer)
    assert "✔ Exercise 02.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (import_without_scaling, "divide them by 255"),
        (import_with_floor_division, "float division"),
        (import_without_input_map, "input_map"),
        (import_without_scope, "import under the scope 'net'"),
        (import_and_make_a_new_saver, "not a new one"),
        (import_and_find_the_output_by_suffix, "existed before your import"),
        (lambda meta_path, raw: import_with_new_input(meta_path, raw)[0], "return a pair"),
    ],
)
def test_02_2_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_import_with_new_input(answer)


def test_02_2_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="02.2"):
        ex02.check_import_with_new_input(not_done)


# ---------------------------------------------------------------- 02.3


def add_frozen_head(features, n_classes):
    frozen = tf.stop_gradient(features)
    with V1.variable_scope("head"):
        w = V1.get_variable("w", shape=[frozen.shape[-1], n_classes])
        b = V1.get_variable("b", shape=[n_classes], initializer=V1.zeros_initializer())
    return tf.matmul(frozen, w) + b


def add_frozen_head_transposed(features, n_classes):
    with V1.variable_scope("classifier_head"):
        w = V1.get_variable("weights", shape=[n_classes, features.shape[-1]])
        b = V1.get_variable("offset", initializer=tf.constant([0.1] * n_classes))
    return tf.nn.bias_add(tf.matmul(tf.stop_gradient(features), w, transpose_b=True), b)


def add_head_without_freezing(features, n_classes):
    with V1.variable_scope("head"):
        w = V1.get_variable("w", shape=[features.shape[-1], n_classes])
        b = V1.get_variable("b", shape=[n_classes])
    return tf.matmul(features, w) + b


def add_head_and_untrain_the_base(features, n_classes):
    graph = features.graph
    base = graph.get_collection(V1.GraphKeys.TRAINABLE_VARIABLES)
    graph.clear_collection(V1.GraphKeys.TRAINABLE_VARIABLES)
    logits = add_head_without_freezing(features, n_classes)
    assert all(v not in V1.trainable_variables() for v in base)
    return logits


def add_head_without_bias(features, n_classes):
    with V1.variable_scope("head"):
        w = V1.get_variable("w", shape=[features.shape[-1], n_classes])
    return tf.matmul(tf.stop_gradient(features), w)


def add_head_stopping_the_kernel(features, n_classes):
    with V1.variable_scope("head"):
        w = V1.get_variable("w", shape=[features.shape[-1], n_classes])
        b = V1.get_variable("b", shape=[n_classes])
    return tf.matmul(features, tf.stop_gradient(w)) + b


def add_head_with_softmax(features, n_classes):
    return tf.nn.softmax(add_frozen_head(features, n_classes))


def add_head_with_untrainable_variables(features, n_classes):
    with V1.variable_scope("head"):
        w = V1.get_variable("w", shape=[features.shape[-1], n_classes], trainable=False)
        b = V1.get_variable("b", shape=[n_classes], trainable=False)
    return tf.matmul(tf.stop_gradient(features), w) + b


def add_frozen_head_with_einsum(features, n_classes):
    n_features = features.shape.as_list()[-1]
    kernel = V1.get_variable("readout_kernel", [n_features, n_classes], initializer=V1.glorot_normal_initializer())
    bias = V1.get_variable("readout_bias", [n_classes], initializer=V1.constant_initializer(0.2))
    return tf.einsum("bf,fc->bc", tf.stop_gradient(features), kernel) + bias


@pytest.mark.parametrize("answer", [add_frozen_head, add_frozen_head_transposed, add_frozen_head_with_einsum])
def test_02_3_right_answers_pass(answer, capsys):
    ex02.check_add_frozen_head(answer)
    assert "✔ Exercise 02.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (add_head_without_freezing, "stop_gradient"),
        (add_head_and_untrain_the_base, "taking them out of trainable_variables"),
        (add_head_without_bias, "exactly two new variables"),
        (add_head_stopping_the_kernel, "still reaches the restored variables"),
        (add_head_with_softmax, "no activation"),
        (add_head_with_untrainable_variables, "should be trainable"),
        (lambda features, n: tf.stop_gradient(features), "logits should have shape"),
    ],
)
def test_02_3_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_add_frozen_head(answer)


def test_02_3_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="02.3"):
        ex02.check_add_frozen_head(not_done)


# ---------------------------------------------------------------- 02.4


def head_on_frozen_copy(model, layer_name, n_classes):
    twin = keras.models.clone_model(model)
    twin.set_weights(model.get_weights())
    base = keras.Model(twin.inputs[0], twin.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_rebuilt_layers(model, layer_name, n_classes):
    """Rebuild each layer from its config up to the cut, copying the weights."""
    from helpers.metagraph import frozen_base

    inputs = keras.Input(model.inputs[0].shape[1:])
    x = inputs
    for layer in model.layers[1:]:
        copy = type(layer).from_config(layer.get_config())
        x = copy(x)
        copy.set_weights(layer.get_weights())
        if layer.name == layer_name:
            break
    base = frozen_base(keras.Model(inputs, x), layer_name)
    outputs = keras.layers.Dense(n_classes, name="new_head")(base.output)
    return keras.Model(base.inputs, outputs)


def head_on_shared_base(model, layer_name, n_classes):  # the chapter's section 6
    base = keras.Model(model.inputs[0], model.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_fresh_clone(model, layer_name, n_classes):
    twin = keras.models.clone_model(model)
    base = keras.Model(twin.inputs[0], twin.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_clone_output(model, layer_name, n_classes):
    twin = keras.models.clone_model(model)
    twin.set_weights(model.get_weights())
    twin.trainable = False
    return keras.Sequential([twin, keras.layers.Dense(n_classes)])


def head_on_unfrozen_clone(model, layer_name, n_classes):
    twin = keras.models.clone_model(model)
    twin.set_weights(model.get_weights())
    base = keras.Model(twin.inputs[0], twin.get_layer(layer_name).output)
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_wrong_layer(model, layer_name, n_classes):
    twin = keras.models.clone_model(model)
    twin.set_weights(model.get_weights())
    base = keras.Model(twin.inputs[0], twin.layers[1].output)  # the first Dense, whatever its name
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def head_on_shared_then_unfrozen(model, layer_name, n_classes):
    new = head_on_shared_base(model, layer_name, n_classes)
    for layer in model.layers:
        layer.trainable = True
    return new


def head_on_a_copied_functional_base(model, layer_name, n_classes):
    import copy

    from helpers.metagraph import frozen_base

    base = frozen_base(copy.copy(model), layer_name)
    return keras.Model(base.inputs, keras.layers.Dense(n_classes)(base.output))


@pytest.mark.parametrize("answer", [head_on_frozen_copy, head_on_rebuilt_layers, head_on_a_copied_functional_base])
def test_02_4_right_answers_pass(answer, capsys):
    ex02.check_head_on_frozen_copy(answer)
    assert "✔ Exercise 02.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (head_on_shared_base, "frozen now: your frozen part shares them"),
        (head_on_shared_then_unfrozen, "shares variables with the pretrained one"),
        (head_on_fresh_clone, "copy the pretrained weights"),
        (head_on_clone_output, "old model's output"),
        (head_on_unfrozen_clone, "only the new head should be trainable"),
        (head_on_wrong_layer, "not at a fixed position"),
        (lambda model, name, n: model, "the pretrained model itself"),
        (lambda model, name, n: "model", "should return a keras.Model"),
    ],
)
def test_02_4_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex02.check_head_on_frozen_copy(answer)


def test_02_4_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="02.4"):
        ex02.check_head_on_frozen_copy(not_done)


# ===========================================================================
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import os  # noqa: E402

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {
}


def _run_collections(prefix, x, fetch=lambda y: y, restore=True, graph=None, restore_from=None):
    graph = graph if graph is not None else tf.Graph()
    with graph.as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta")
        x_in = V1.get_collection("inputs")[0]
        y = V1.get_collection("outputs")[0]
        with V1.Session() as sess:
            if restore:
                saver.restore(sess, restore_from(prefix) if restore_from else prefix)
            else:
                sess.run(V1.global_variables_initializer())
            return sess.run(fetch(y), feed_dict={x_in: x})


# ----- 02.1 wrong


def collections_by_notebook_names(prefix, x):
    with tf.Graph().as_default() as graph:
        saver = V1.train.import_meta_graph(prefix + ".meta")
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(graph.get_tensor_by_name("y:0"), {graph.get_tensor_by_name("x:0"): x})


def collections_no_restore(prefix, x):
    return _run_collections(prefix, x, restore=False)


_ONE_GRAPH = tf.Graph()


def collections_one_shared_graph(prefix, x):
    return _run_collections(prefix, x, graph=_ONE_GRAPH)


def collections_returns_list(prefix, x):
    return _run_collections(prefix, x, fetch=lambda y: [y])


def collections_squeezed(prefix, x):
    return np.squeeze(_run_collections(prefix, x))


def collections_float64(prefix, x):
    return _run_collections(prefix, x).astype(np.float64)


def collections_latest_in_folder(prefix, x):
    return _run_collections(prefix, x, restore_from=lambda p: tf.train.latest_checkpoint(os.path.dirname(p)))


def collections_swapped(prefix, x):
    with tf.Graph().as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta")
        x_in = V1.get_collection("outputs")[0]
        y = V1.get_collection("inputs")[0]
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(y, feed_dict={x_in: x})


def collections_tolist(prefix, x):
    return _run_collections(prefix, x).tolist()


# ----- 02.1 right


def collections_session_on_graph(prefix, x):
    graph = tf.Graph()
    with graph.as_default():
        saver = V1.train.import_meta_graph(prefix + ".meta", clear_devices=True)
    (x_in,), (y,) = graph.get_collection("inputs"), graph.get_collection("outputs")
    with V1.Session(graph=graph) as sess:
        saver.restore(sess, prefix)
        return sess.run(y, {x_in: x})


def collections_new_saver(prefix, x):
    with tf.Graph().as_default():
        V1.train.import_meta_graph(prefix + ".meta")
        saver = V1.train.Saver()
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return V1.get_collection("outputs")[-1].eval({V1.get_collection("inputs")[-1]: x}, session=sess)


def collections_import_scope(prefix, x):
    with tf.Graph().as_default() as graph:
        saver = V1.train.import_meta_graph(prefix + ".meta", import_scope="loaded")
        x_in = graph.get_collection("inputs", scope="loaded")[0]
        y = graph.get_collection("outputs", scope="loaded")[0]
        with V1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(y, feed_dict={x_in: x})


@pytest.mark.parametrize("answer", cases([
    collections_by_notebook_names, collections_no_restore, collections_one_shared_graph,
    collections_returns_list, collections_squeezed, collections_float64, collections_latest_in_folder,
    collections_swapped, collections_tolist,
], HOLES))
def test_02_1_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex02.check_run_from_collections, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([collections_session_on_graph, collections_new_saver,
                                          collections_import_scope], HOLES))
def test_02_1_prompt_only_right_answers_pass(answer):
    passes(ex02.check_run_from_collections, answer)


# ----- 02.3 wrong


def _head(features, n_classes, transform=lambda f: f, trainable=True):
    n_features = features.shape[-1]
    with V1.variable_scope("frozen_head"):
        kernel = V1.get_variable("kernel", [n_features, n_classes], trainable=trainable)
        bias = V1.get_variable("bias", [n_classes], initializer=V1.zeros_initializer(), trainable=trainable)
    return tf.matmul(transform(features), kernel) + bias


def head_no_stop_gradient(features, n_classes):
    return _head(features, n_classes)


def head_stops_the_logits(features, n_classes):
    return tf.stop_gradient(_head(features, n_classes))


def head_untrainable_collection(features, n_classes):
    graph = features.graph
    trainable = graph.get_collection_ref(V1.GraphKeys.TRAINABLE_VARIABLES)
    trainable[:] = []
    return _head(features, n_classes)


def head_identity(features, n_classes):
    return _head(features, n_classes, transform=tf.identity)


def head_head_not_trainable(features, n_classes):
    return _head(tf.stop_gradient(features), n_classes, trainable=False)


def head_stop_only_kernel_path(features, n_classes):
    n_features = features.shape[-1]
    with V1.variable_scope("frozen_head"):
        kernel = V1.get_variable("kernel", [n_features, n_classes])
        bias = V1.get_variable("bias", [n_classes], initializer=V1.zeros_initializer())
    return tf.matmul(features, tf.stop_gradient(kernel)) + bias


def head_scaled_gradient(features, n_classes):
    return _head(features, n_classes, transform=lambda f: f * 1e-3 + tf.stop_gradient(f) * (1 - 1e-3))


def head_no_bias(features, n_classes):
    n_features = features.shape[-1]
    kernel = V1.get_variable("frozen_head_kernel", [n_features, n_classes])
    return tf.matmul(tf.stop_gradient(features), kernel)


# ----- 02.3 right


def head_transposed(features, n_classes):
    n_features = features.shape[-1]
    with V1.variable_scope("new_head"):
        kernel = V1.get_variable("kernel", [n_classes, n_features])
        bias = V1.get_variable("bias", [n_classes], initializer=V1.constant_initializer(0.1))
    return tf.matmul(tf.stop_gradient(features), kernel, transpose_b=True) + bias


def head_bias_add(features, n_classes):
    frozen = tf.stop_gradient(features, name="frozen_features")
    kernel = V1.get_variable("head_w", shape=[features.shape[-1], n_classes])
    bias = V1.get_variable("head_b", shape=[n_classes], initializer=V1.zeros_initializer())
    return tf.nn.bias_add(tf.linalg.matmul(frozen, kernel), bias)


def head_placeholder_with_default(features, n_classes):
    cut = tf.stop_gradient(tf.identity(features))
    with V1.variable_scope(None, default_name="head"):
        kernel = V1.get_variable("kernel", shape=(int(features.shape[-1]), n_classes))
        bias = V1.get_variable("bias", shape=(n_classes,), initializer=V1.zeros_initializer())
    return cut @ kernel + bias


@pytest.mark.parametrize("answer", cases([
    head_no_stop_gradient, head_stops_the_logits, head_untrainable_collection, head_identity,
    head_head_not_trainable, head_stop_only_kernel_path, head_scaled_gradient, head_no_bias,
], HOLES))
def test_02_3_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex02.check_add_frozen_head, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([head_transposed, head_bias_add, head_placeholder_with_default], HOLES))
def test_02_3_prompt_only_right_answers_pass(answer):
    passes(ex02.check_add_frozen_head, answer)


# ===========================================================================
# 02.2 and 02.4, written from the prompt alone (attack0203). The answers below were written from
# the prompts before ex02.py was read; those marked "after reading" were added afterwards.

import tempfile  # noqa: E402

from tests.attack_harness import accepted, rejected  # noqa: E402

# ----- 02.2
# ----- 02.2 wrong
def mapin_wrong_no_input_map(meta_path, raw):
    """Forgets input_map: the model still reads its own placeholder."""
    saver = V1.train.import_meta_graph(meta_path, import_scope="net")
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_wrong_raw_not_scaled(meta_path, raw):
    """Maps the raw tensor itself (forgets / 255)."""
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_wrong_times_255(meta_path, raw):
    """The wrong direction: raw * 255."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"x:0": raw * 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_wrong_floordiv(meta_path, raw):
    """Integer division: raw // 255 zeroes almost everything."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"x:0": raw // 255})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_wrong_no_scope(meta_path, raw):
    """No import_scope: the ops land at the root."""
    saver = V1.train.import_meta_graph(meta_path, input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("y:0"), saver


def mapin_wrong_other_scope(meta_path, raw):
    """Wrong scope name (the notebook's 'pretrained')."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="pretrained", input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("pretrained/y:0"), saver


def mapin_wrong_first_y_found(meta_path, raw):
    """Looks the output up by a suffix and takes the first match: the old model's."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    ops = [op for op in V1.get_default_graph().get_operations() if op.name.endswith("/y")]
    return ops[0].outputs[0], saver


def mapin_wrong_new_saver(meta_path, raw):
    """Returns a new Saver over all variables instead of the import's Saver."""
    V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), V1.train.Saver()


def mapin_wrong_new_saver_scoped(meta_path, raw):
    """A new Saver over the scope's variables: the names no longer match the checkpoint."""
    V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return (V1.get_default_graph().get_tensor_by_name("net/y:0"),
            V1.train.Saver(V1.global_variables("net/")))


def mapin_wrong_swapped_pair(meta_path, raw):
    """Returns (saver, tensor)."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return saver, V1.get_default_graph().get_tensor_by_name("net/y:0")


def mapin_wrong_scoped_key(meta_path, raw):
    """input_map key with the scope: 'net/x:0' (keys are the file's names)."""
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"net/x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_wrong_new_graph(meta_path, raw):
    """Imports into a new graph instead of the current default graph."""
    with tf.Graph().as_default() as graph:
        saver = V1.train.import_meta_graph(meta_path, import_scope="net")
        return graph.get_tensor_by_name("net/y:0"), saver


def mapin_wrong_returns_placeholder_scaled_output(meta_path, raw):
    """Returns the mapped input (raw / 255), not the output."""
    scaled = raw / 255.0
    saver = V1.train.import_meta_graph(meta_path, import_scope="net", input_map={"x:0": scaled})
    return scaled, saver


# ----- 02.2 right
def mapin_right_plain(meta_path, raw):
    saver = V1.train.import_meta_graph(
        meta_path, import_scope="net", input_map={"x:0": raw / 255.0})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_right_import_scoped(meta_path, raw):
    from helpers.metagraph import import_scoped
    saver = import_scoped(meta_path, "net", input_map={"x:0": raw / 255})
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


def mapin_right_parsed_def_op_lookup(meta_path, raw):
    meta_graph_def = V1.MetaGraphDef()
    with open(meta_path, "rb") as file:
        meta_graph_def.ParseFromString(file.read())
    saver = V1.train.import_meta_graph(
        meta_graph_def, import_scope="net", input_map={"x": raw * (1.0 / 255.0)})
    return V1.get_default_graph().get_operation_by_name("net/y").outputs[0], saver


def mapin_right_divide_cast(meta_path, raw):
    scaled = tf.math.divide(tf.cast(raw, tf.float32), 255.0)
    saver = V1.train.import_meta_graph(meta_path, import_scope="net",
                                       input_map={"x:0": scaled}, clear_devices=True)
    return V1.get_default_graph().get_tensor_by_name("net/y:0"), saver


@pytest.mark.parametrize("answer, hint", [
    (mapin_wrong_no_input_map, "input_map={'x:0': raw / 255.0}"),
    (mapin_wrong_raw_not_scaled, "divide them by 255"),
    (mapin_wrong_times_255, "the model should read raw / 255.0"),
    (mapin_wrong_floordiv, "(a float division)"),
    (mapin_wrong_no_scope, "your output is named 'y:0'"),
    (mapin_wrong_other_scope, "your output is named 'pretrained/y:0'"),
    (mapin_wrong_first_y_found, "your output 'net_old/y/y:0' existed before your import"),
    (mapin_wrong_new_saver, "return the Saver that import_meta_graph returned"),
    (mapin_wrong_new_saver_scoped, "return the Saver that import_meta_graph returned"),
    (mapin_wrong_swapped_pair, "the first item should be the output tensor"),
    (mapin_wrong_scoped_key, "not found in graph_def: [net/x:0]"),
    (mapin_wrong_new_graph, "import into the default graph"),
    (mapin_wrong_returns_placeholder_scaled_output, "your output is named 'truediv:0'"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_02_2_prompt_only_wrong_answers_get_their_hints(answer, hint):
    assert hint in rejected(ex02.check_import_with_new_input, answer)


@pytest.mark.parametrize("answer", cases([
    mapin_right_plain, mapin_right_import_scoped, mapin_right_parsed_def_op_lookup, mapin_right_divide_cast,
], HOLES))
def test_02_2_prompt_only_right_answers_pass(answer):
    accepted(ex02.check_import_with_new_input, answer)


# ----- 02.4
# ----- 02.4 wrong
def fcopy_wrong_shared_section6(model, layer_name, n_classes):
    """Section 6's shared base: freezes the original's layers too."""
    base = keras.Model(model.inputs[0], model.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_shared_unfrozen(model, layer_name, n_classes):
    """Shares the layers and does not freeze: training moves the original's weights."""
    base = keras.Model(model.inputs[0], model.get_layer(layer_name).output)
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_clone_no_weights(model, layer_name, n_classes):
    """clone_model without copying the weights: fresh random weights."""
    clone = keras.models.clone_model(model)
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_clone_not_frozen(model, layer_name, n_classes):
    """Copies the weights but forgets to freeze the copy."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_all_frozen(model, layer_name, n_classes):
    """Freezes the whole new model, head included."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    new = keras.Sequential([base, keras.layers.Dense(n_classes)])
    new.trainable = False
    return new


def fcopy_wrong_off_by_one(model, layer_name, n_classes):
    """Stops one layer early: 'up to' read as excluding layer_name."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    names = [layer.name for layer in clone.layers]
    before = clone.layers[names.index(layer_name) - 1]
    base = keras.Model(clone.inputs[0], before.output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_ignores_layer_name(model, layer_name, n_classes):
    """Puts the head on the model's last output, ignoring layer_name."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    clone.trainable = False
    return keras.Sequential([clone, keras.layers.Dense(n_classes)])


def fcopy_wrong_hardcoded_classes(model, layer_name, n_classes):
    """Hard-codes the notebook's 2 classes."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(2)])


def fcopy_wrong_hardcoded_features(model, layer_name, n_classes):
    """Hard-codes the notebook's layer name 'features', else the first layer."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    names = [layer.name for layer in clone.layers]
    layer = clone.get_layer("features") if "features" in names else clone.layers[0]
    base = keras.Model(clone.inputs[0], layer.output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_freeze_original_then_clone(model, layer_name, n_classes):
    """Freezes the original's layers, clones (the flag is copied), forgets to unfreeze."""
    for layer in model.layers:
        layer.trainable = False
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_stop_gradient_only(model, layer_name, n_classes):
    """Freezes with stop_gradient: the copied weights stay in trainable_weights."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    cut = keras.layers.Lambda(lambda t: tf.stop_gradient(t))(base.output)
    return keras.Model(base.inputs[0], keras.layers.Dense(n_classes)(cut))


def fcopy_wrong_reuse_layer_objects(model, layer_name, n_classes):
    """A new Sequential of the original's layer objects, frozen: shares them."""
    layers = []
    for layer in model.layers:
        layers.append(layer)
        if layer.name == layer_name:
            break
    base = keras.Sequential([keras.Input(model.inputs[0].shape[1:]), *layers])
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_softmax_head(model, layer_name, n_classes):
    """A softmax head: not 'Dense(n_classes)' (borderline)."""
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes, activation="softmax")])


# ----- 02.4 right
def fcopy_right_clone(model, layer_name, n_classes):
    clone = keras.models.clone_model(model)
    clone.set_weights(model.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    base.trainable = False
    return keras.Model(base.inputs[0], keras.layers.Dense(n_classes)(base.output))


def fcopy_right_json_roundtrip_layer_flags(model, layer_name, n_classes):
    copy = keras.models.model_from_json(model.to_json())
    copy.set_weights(model.get_weights())
    for layer in copy.layers:
        layer.trainable = False
    features = copy.get_layer(layer_name).output
    head = keras.layers.Dense(n_classes, name="my_head")(features)
    return keras.Model(copy.inputs, head)


def fcopy_right_keras_file(model, layer_name, n_classes):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "copy.keras")
        model.save(path)
        copy = keras.models.load_model(path, compile=False)
    base = keras.Model(copy.inputs[0], copy.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_right_clone_function(model, layer_name, n_classes):
    def clone_layer(layer):
        config = layer.get_config()
        config["trainable"] = False
        return layer.__class__.from_config(config)

    copy = keras.models.clone_model(model, clone_function=clone_layer)
    copy.set_weights(model.get_weights())
    out = keras.layers.Dense(n_classes)(copy.get_layer(layer_name).output)
    return keras.Model(copy.inputs[0], out)


def fcopy_wrong_reuse_layers_after_input(model, layer_name, n_classes):  # after reading
    """fcopy_wrong_reuse_layer_objects without its InputLayer slip: shares the original's layers."""
    layers = []
    for layer in model.layers[1:]:
        layers.append(layer)
        if layer.name == layer_name:
            break
    base = keras.Sequential([keras.Input(model.inputs[0].shape[1:]), *layers])
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


def fcopy_wrong_set_weights_backwards(model, layer_name, n_classes):  # after reading
    """The wrong direction: writes the clone's fresh weights into the pretrained model."""
    clone = keras.models.clone_model(model)
    model.set_weights(clone.get_weights())
    base = keras.Model(clone.inputs[0], clone.get_layer(layer_name).output)
    base.trainable = False
    return keras.Sequential([base, keras.layers.Dense(n_classes)])


_FROZEN_ORIGINAL = "the pretrained model's layers are frozen now"
_FREEZE_BASE = "Freeze the copied base with trainable = False"
_NOT_THE_PRETRAINED = "does not compute what the pretrained model computes up to 'mixer'"


@pytest.mark.parametrize("answer, hint", [
    (fcopy_wrong_shared_section6, _FROZEN_ORIGINAL),
    (fcopy_wrong_shared_unfrozen, "shares variables with the pretrained one"),
    (fcopy_wrong_clone_no_weights, _NOT_THE_PRETRAINED),
    (fcopy_wrong_clone_not_frozen, _FREEZE_BASE),
    (fcopy_wrong_all_frozen, "the trainable weights are []"),
    (fcopy_wrong_off_by_one, "your head reads 6 features, but 'mixer' outputs 4"),
    (fcopy_wrong_ignores_layer_name, "the head sits on the old model's output"),
    (fcopy_wrong_hardcoded_classes, "should have shape (None, 3), got (None, 2)"),
    (fcopy_wrong_hardcoded_features, "your head reads 2 features, but 'mixer' outputs 4"),
    (fcopy_wrong_freeze_original_then_clone, _FROZEN_ORIGINAL),
    (fcopy_wrong_stop_gradient_only, _FREEZE_BASE),
    (fcopy_wrong_reuse_layer_objects, "already been configured to use input shape"),
    (fcopy_wrong_softmax_head, _NOT_THE_PRETRAINED),
    (fcopy_wrong_reuse_layers_after_input, _FROZEN_ORIGINAL),
    (fcopy_wrong_set_weights_backwards, _NOT_THE_PRETRAINED),
], ids=lambda value: getattr(value, "__name__", ""))
def test_02_4_prompt_only_wrong_answers_get_their_hints(answer, hint):
    assert hint in rejected(ex02.check_head_on_frozen_copy, answer)


@pytest.mark.parametrize("answer", cases([
    fcopy_right_clone, fcopy_right_json_roundtrip_layer_flags, fcopy_right_keras_file,
    fcopy_right_clone_function,
], HOLES))
def test_02_4_prompt_only_right_answers_pass(answer):
    accepted(ex02.check_head_on_frozen_copy, answer)


# ===========================================================================
# Hints in steps: each test starts from the first step (helpers.checks.Hint)

from helpers.checks import forget_hints  # noqa: E402


@pytest.fixture(autouse=True)
def _first_hints():
    forget_hints()
