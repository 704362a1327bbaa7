"""Unit tests of helpers.state_sync: hard and soft syncs, graph and eager, and every refusal."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import StructureMismatchError
from helpers.state_sync import copy_weights, make_sync_op, paired_variables

V1 = tf.compat.v1


def _scoped(scope: str, value: float, shapes=None, extra: str | None = None):
    """Variables w [2, 3] and b [3] (plus an optional extra) under ``scope``, all equal to ``value``."""
    shapes = shapes or {"layer/w": [2, 3], "layer/b": [3]}
    if extra:
        shapes = {**shapes, extra: [1]}
    with V1.variable_scope(scope):
        for name, shape in shapes.items():
            V1.get_variable(name, shape, initializer=tf.constant_initializer(value))


def _values(sess, scope: str) -> dict[str, np.ndarray]:
    found = [v for v in V1.global_variables() if v.op.name.startswith(scope + "/")]
    return {v.op.name[len(scope) + 1:]: sess.run(v) for v in found}


# --- graph mode -------------------------------------------------------------------------------


def test_hard_sync_copies_by_relative_name_whatever_the_creation_order():
    with tf.Graph().as_default():
        _scoped("online", 1.0)
        _scoped("target", 0.0, shapes={"layer/b": [3], "layer/w": [2, 3]})  # other order
        sync = make_sync_op("online", "target")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(sync)
            target = _values(sess, "target")
    assert isinstance(sync, tf.Operation)
    np.testing.assert_array_equal(target["layer/w"], np.ones((2, 3)))
    np.testing.assert_array_equal(target["layer/b"], np.ones(3))


def test_soft_sync_moves_a_fraction_tau_each_run():
    with tf.Graph().as_default():
        _scoped("online", 1.0)
        _scoped("target", 0.0)
        soft = make_sync_op("online/", "target/", tau=0.1, name="soft")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for _ in range(3):
                sess.run(soft)
            target, online = _values(sess, "target"), _values(sess, "online")
    assert soft.name == "soft"
    np.testing.assert_allclose(target["layer/w"], np.full((2, 3), 1 - 0.9**3), rtol=1e-6)
    np.testing.assert_array_equal(online["layer/w"], np.ones((2, 3)))  # the source is untouched


def test_a_scope_that_is_a_prefix_of_another_is_not_confused():
    with tf.Graph().as_default():
        _scoped("net", 1.0)
        _scoped("net_past", 0.0)
        _scoped("net_past_2", 5.0)
        pairs = paired_variables("net", "net_past")
        sync = make_sync_op("net", "net_past")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(sync)
            untouched = _values(sess, "net_past_2")
    assert [(s.name, d.name) for s, d in pairs] == [
        ("net/layer/b:0", "net_past/layer/b:0"), ("net/layer/w:0", "net_past/layer/w:0")]
    np.testing.assert_array_equal(untouched["layer/w"], np.full((2, 3), 5.0))


def _batch_norm_like(scope: str, value: float) -> None:
    """A weight and BatchNorm-like moving statistics (non-trainable) under ``scope``, all ``value``."""
    with V1.variable_scope(scope):
        V1.get_variable("w", [2], initializer=tf.constant_initializer(value))
        for name in ("bn/moving_mean", "bn/moving_variance"):
            V1.get_variable(name, [2], trainable=False, initializer=tf.constant_initializer(value))


def test_the_default_sync_copies_the_moving_statistics_too():
    with tf.Graph().as_default():
        _batch_norm_like("online", 1.0)
        _batch_norm_like("target", 0.0)
        sync, soft = make_sync_op("online", "target"), make_sync_op("online", "target", tau=0.5)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(sync)
            copied = _values(sess, "target")
            sess.run([v.initializer for v in V1.global_variables("target/")])
            sess.run(soft)
            blended = _values(sess, "target")
    assert {name: value.tolist() for name, value in copied.items()} == {
        "w": [1.0, 1.0], "bn/moving_mean": [1.0, 1.0], "bn/moving_variance": [1.0, 1.0]}
    assert {name: value.tolist() for name, value in blended.items()} == {
        "w": [0.5, 0.5], "bn/moving_mean": [0.5, 0.5], "bn/moving_variance": [0.5, 0.5]}


def test_the_default_sync_leaves_the_optimizer_slots_out():
    with tf.Graph().as_default():
        _batch_norm_like("online", 1.0)
        _batch_norm_like("target", 0.0)
        online_w = V1.trainable_variables("online/")[0]
        train = V1.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(online_w))  # online/w/Adam, Adam_1
        assert "online/w/Adam" in [v.op.name for v in V1.global_variables()]
        pairs = paired_variables("online", "target")
        sync = make_sync_op("online", "target")
        with pytest.raises(StructureMismatchError, match=r"missing under target/: 'w/Adam', 'w/Adam_1'"):
            make_sync_op("online", "target", collection=V1.GraphKeys.GLOBAL_VARIABLES)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train)
            slots = sess.run(["online/w/Adam:0", "online/w/Adam_1:0"])
            sess.run(sync)
            assert all(np.array_equal(a, b) for a, b in zip(slots, sess.run(["online/w/Adam:0", "online/w/Adam_1:0"])))
            target = _values(sess, "target")
    assert [s.op.name[len("online/"):] for s, _ in pairs] == ["bn/moving_mean", "bn/moving_variance", "w"]
    np.testing.assert_allclose(target["w"], [0.9, 0.9], rtol=1e-5)  # after one Adam step of 0.1
    assert target["bn/moving_mean"].tolist() == [1.0, 1.0]


def test_trainable_only_and_every_global_variable_on_request():
    with tf.Graph().as_default():
        _batch_norm_like("online", 1.0)
        _batch_norm_like("target", 0.0)
        trainable = make_sync_op("online", "target", collection=V1.GraphKeys.TRAINABLE_VARIABLES)
        everything = make_sync_op("online", "target", collection=V1.GraphKeys.GLOBAL_VARIABLES)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(trainable)
            after_trainable = _values(sess, "target")
            sess.run(everything)
            after_everything = _values(sess, "target")
    assert after_trainable["w"].tolist() == [1.0, 1.0] and after_trainable["bn/moving_mean"].tolist() == [0.0, 0.0]
    assert after_everything["bn/moving_mean"].tolist() == [1.0, 1.0]


def test_a_default_sync_mismatch_says_what_it_compared():
    with tf.Graph().as_default():
        _batch_norm_like("online", 1.0)
        with V1.variable_scope("target"):
            V1.get_variable("w", [2])  # no moving statistics
        with pytest.raises(StructureMismatchError) as caught:
            make_sync_op("online", "target")
        pairs = paired_variables("online", "target", collection=V1.GraphKeys.TRAINABLE_VARIABLES)
    assert [(s.op.name, d.op.name) for s, d in pairs] == [("online/w", "target/w")]
    message = str(caught.value)
    assert "missing under target/: 'bn/moving_mean', 'bn/moving_variance'" in message
    assert "trainable or not, optimizer slots left out" in message and "TRAINABLE_VARIABLES" in message


def test_copy_weights_copies_a_keras_models_moving_statistics_like_the_graph_sync():
    def net(seed: int) -> keras.Model:
        keras.utils.set_random_seed(seed)
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.BatchNormalization(),
                                 keras.layers.Dropout(0.5, seed=seed), keras.layers.Dense(1)])

    online, target = net(0), net(1)
    online.layers[1].moving_mean.assign(np.full(4, 3.0, np.float32))
    assert copy_weights(online, target) == 8  # kernels, biases, gamma, beta and both statistics
    np.testing.assert_array_equal(target.layers[1].moving_mean.numpy(), np.full(4, 3.0))
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(online(x, training=False), target(x, training=False))
    online.layers[1].moving_mean.assign(np.full(4, 5.0, np.float32))
    copy_weights(online.trainable_weights, target.trainable_weights)  # the route to trainable only
    np.testing.assert_array_equal(target.layers[1].moving_mean.numpy(), np.full(4, 3.0))


def test_missing_and_extra_variables_are_named():
    with tf.Graph().as_default():
        _scoped("online", 1.0, extra="layer/gain")
        _scoped("target", 0.0, extra="layer/scale")
        with pytest.raises(StructureMismatchError) as caught:
            make_sync_op("online", "target")
    message = str(caught.value)
    assert "cannot sync 'online/' into 'target/'" in message
    assert "missing under target/: 'layer/gain'" in message
    assert "only under target/: 'layer/scale'" in message


def test_shape_and_dtype_mismatches_are_named():
    with tf.Graph().as_default():
        _scoped("online", 1.0)
        _scoped("target", 0.0, shapes={"layer/w": [3, 3], "layer/b": [3]})
        with V1.variable_scope("online"):
            V1.get_variable("k", [1], dtype=tf.float64)
        with V1.variable_scope("target"):
            V1.get_variable("k", [1], dtype=tf.float32)
        with pytest.raises(StructureMismatchError) as caught:
            paired_variables("online", "target")
    message = str(caught.value)
    assert "'layer/w' has shape (2, 3) in online/, (3, 3) in target/" in message
    assert "'k' has dtype float64 in online/, float32 in target/" in message


def test_graph_mode_argument_errors():
    with tf.Graph().as_default():
        _scoped("online", 1.0)
        with pytest.raises(StructureMismatchError, match="no network variables .* under 'nothing/'"):
            make_sync_op("nothing", "online")
        with pytest.raises(ValueError, match="the same scope 'online/'"):
            make_sync_op("online", "online/")
        with pytest.raises(ValueError, match="non-empty name"):
            make_sync_op("", "online")
        for tau in (0.0, -0.5, 1.5, float("nan")):
            with pytest.raises(ValueError, match=r"tau must be in \(0, 1\]"):
                make_sync_op("online", "target", tau=tau)
        with pytest.raises(TypeError, match="tau must be a number"):
            make_sync_op("online", "target", tau="0.5")
        with pytest.raises(TypeError, match="tau must be a number"):
            make_sync_op("online", "target", tau=True)
    with pytest.raises(RuntimeError, match="graph-mode op"):
        make_sync_op("online", "target")


# --- eager --------------------------------------------------------------------------------------


def _mlp(seed: int, width: int = 4) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(width, activation="relu"),
                             keras.layers.Dense(1)])


def test_copy_weights_between_keras_models():
    online, target = _mlp(0), _mlp(1)
    x = np.ones((2, 3), np.float32)
    assert not np.allclose(online(x), target(x))
    assert copy_weights(online, target) == 4
    np.testing.assert_allclose(online(x), target(x))
    online.layers[0].kernel.assign(np.zeros((3, 4), np.float32))
    assert not np.allclose(online(x), target(x))  # a copy, not an alias


def test_copy_weights_soft_update_for_keras_models():
    online, target = _mlp(0), _mlp(1)
    before = [w.copy() for w in target.get_weights()]
    copy_weights(online, target, tau=0.25)
    for blended, old, new in zip(target.get_weights(), before, online.get_weights()):
        np.testing.assert_allclose(blended, 0.75 * old + 0.25 * new, rtol=1e-6)


def test_copy_weights_between_modules_and_lists():
    class Net(tf.Module):
        def __init__(self, value: float) -> None:
            super().__init__()
            self.w = tf.Variable(tf.fill([2, 2], value), name="w")
            self.b = tf.Variable(tf.fill([2], value), name="b")

    src, dst = Net(1.0), Net(0.0)
    assert copy_weights(src, dst, tau=0.5) == 2
    np.testing.assert_allclose(dst.w.numpy(), np.full((2, 2), 0.5))
    assert copy_weights([src.w, src.b], [dst.w, dst.b]) == 2
    np.testing.assert_allclose(dst.b.numpy(), np.ones(2))


def test_copy_weights_inside_a_tf_function_closing_over_the_models():
    online, target = _mlp(0), _mlp(1)

    @tf.function
    def sync() -> None:
        copy_weights(online, target)

    sync()
    for a, b in zip(online.get_weights(), target.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_keras_variables_passed_as_tf_function_arguments_get_a_clear_error():
    online, target = _mlp(0), _mlp(1)

    @tf.function
    def sync(src, dst) -> None:
        copy_weights(list(src), list(dst))

    with pytest.raises(TypeError, match="close over the model"):
        sync(online.weights, target.weights)


def test_copy_weights_refuses_other_structures():
    with pytest.raises(StructureMismatchError, match=r"variable 0 \(kernel\) has shape \(3, 4\) in src, \(3, 5\) in dst"):
        copy_weights(_mlp(0), _mlp(1, width=5))
    src = [tf.Variable([1.0], name="w"), tf.Variable([1.0], name="b")]
    dst = [tf.Variable([0.0], name="b"), tf.Variable([0.0], name="w")]
    with pytest.raises(StructureMismatchError, match="variable 0 is 'w' in src but 'b' in dst"):
        copy_weights(src, dst)
    with pytest.raises(StructureMismatchError, match="src has 2 variables, dst has 1"):
        copy_weights(src, dst[:1])
    with pytest.raises(StructureMismatchError, match="dtype float64 in src, float32 in dst"):
        copy_weights([tf.Variable([1.0], dtype=tf.float64, name="w")], [tf.Variable([1.0], name="w")])
    np.testing.assert_array_equal(dst[0].numpy(), [0.0])  # nothing was written


def test_copy_weights_argument_errors():
    model = _mlp(0)
    with pytest.raises(ValueError, match=r"tau must be in \(0, 1\]"):
        copy_weights(model, model, tau=0)
    with pytest.raises(TypeError, match="must be a Keras model or layer"):
        copy_weights({"w": 1}, model)
    with pytest.raises(TypeError, match="holds a tensor, not a variable"):
        copy_weights([tf.constant(1.0)], [tf.Variable(1.0)])
    with pytest.raises(TypeError, match="holds a ndarray, not a variable"):
        copy_weights(model, model.get_weights())
    with pytest.raises(ValueError, match="has no weights yet"):
        copy_weights(keras.Sequential([keras.layers.Dense(1)]), model)


# --- aliasing, reference variables, odd input -------------------------------------------------


def test_copy_weights_refuses_a_model_into_itself_or_a_model_sharing_its_layers():
    model = _mlp(0)
    before = [w.numpy() for w in model.weights]
    with pytest.raises(StructureMismatchError, match="share 4 of their variables"):
        copy_weights(model, model)
    sharing = keras.Sequential([keras.Input((3,)), model.layers[0], keras.layers.Dense(1)])
    with pytest.raises(StructureMismatchError, match=r"share 2 of their variables \(kernel, bias\)"):
        copy_weights(model, sharing)
    with pytest.raises(StructureMismatchError, match="not a second copy"):
        copy_weights(model, model, tau=0.5)
    variable = tf.Variable([1.0], name="w")
    with pytest.raises(StructureMismatchError, match="share 1"):
        copy_weights([variable], [variable])
    assert all(np.array_equal(w.numpy(), b) for w, b in zip(model.weights, before))


def test_sync_refuses_a_scope_inside_the_other():
    with tf.Graph().as_default():
        _scoped("net", 1.0)
        _scoped("net/target", 0.0)
        with pytest.raises(StructureMismatchError, match="'net/target/' lies inside 'net/'"):
            make_sync_op("net", "net/target")
        with pytest.raises(StructureMismatchError, match="lies inside"):
            make_sync_op("net/target", "net")


def test_sync_refuses_two_imports_that_are_one_variable(tmp_path):
    with tf.Graph().as_default():
        _scoped("", 1.0) if False else V1.get_variable("w", [2], initializer=tf.constant_initializer(1.0))
        saver = V1.train.Saver()
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            path = saver.save(sess, str(tmp_path / "model"))
    with tf.Graph().as_default():
        for scope in ("online", "target"):
            V1.train.import_meta_graph(path + ".meta", import_scope=scope)
        with pytest.raises(StructureMismatchError, match="ONE set of variables: 'w' share the shared_name 'w'"):
            make_sync_op("online", "target", collection=V1.GraphKeys.GLOBAL_VARIABLES)


def test_sync_works_for_reference_variables():
    with tf.Graph().as_default():
        for scope, value in (("online", 2.0), ("target", 0.0)):
            with V1.variable_scope(scope):
                V1.get_variable("w", [2], initializer=tf.constant_initializer(value), use_resource=False)
        sync = make_sync_op("online", "target")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(sync)
            assert V1.trainable_variables("target/")[0].op.type == "VariableV2"
            np.testing.assert_array_equal(sess.run("target/w:0"), [2.0, 2.0])


def test_copy_weights_refuses_an_unbuilt_model_with_a_course_error():
    with pytest.raises(StructureMismatchError, match="has no weights yet"):
        copy_weights(keras.Sequential([keras.layers.Dense(1)]), _mlp(0))


# --- properties (Hypothesis) --------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
_dtypes = st.sampled_from([tf.float32, tf.float64, tf.int32])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(_shapes, _dtypes), min_size=1, max_size=3),
       st.lists(st.tuples(_shapes, _dtypes), min_size=1, max_size=3),
       st.sampled_from([1.0, 0.5]))
def test_copy_weights_copies_exactly_or_writes_nothing(src_spec, dst_spec, tau):
    src = [tf.Variable(tf.fill(s, tf.cast(3, d)), name=f"v{i}") for i, (s, d) in enumerate(src_spec)]
    dst = [tf.Variable(tf.fill(s, tf.cast(1, d)), name=f"v{i}") for i, (s, d) in enumerate(dst_spec)]
    dst_before = [v.numpy() for v in dst]
    try:
        copy_weights(src, dst, tau=tau)
    except StructureMismatchError as error:
        integers = tau < 1 and any(d == tf.int32 for _, d in dst_spec)
        assert src_spec != dst_spec or integers, error
        assert "cannot copy" in str(error) or "hold integers" in str(error)
        assert all(np.array_equal(v.numpy(), b) for v, b in zip(dst, dst_before))
    else:
        assert src_spec == dst_spec
        for s, d in zip(src, dst):
            expected = 3 if tau == 1.0 else 2
            assert np.all(d.numpy() == expected) and np.all(s.numpy() == 3)


@settings(max_examples=30, deadline=None)
@given(st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=10),
       st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=10))
def test_make_sync_op_with_any_scope_names_builds_or_refuses_with_a_value_error(src, dst):
    with tf.Graph().as_default():
        _scoped("online", 1.0)
        _scoped("online_old", 5.0)
        try:
            make_sync_op(src, dst)
        except ValueError as error:
            assert str(error)
        else:  # only the one pair that exists can be synced
            assert {src.strip("/"), dst.strip("/")} == {"online", "online_old"}


def test_buffer_address_shows_copy_on_write_for_tf_and_keras_variables():
    from helpers.state_sync import buffer_address

    model_a, model_b = _mlp(0), _mlp(1)
    pairs = [(tf.Variable(tf.ones([100])), tf.Variable(tf.zeros([100]))),
             (model_a.weights[0], model_b.weights[0])]
    for src, dst in pairs:
        assert buffer_address(src) != buffer_address(dst)
        dst.assign(src)
        shared = buffer_address(src)
        assert buffer_address(dst) == shared  # assign shares the buffer
        src.assign_add(tf.ones_like(src))
        assert buffer_address(dst) == shared and buffer_address(src) != shared  # the write copied
    with pytest.raises(TypeError, match="eager variable"):
        buffer_address(np.ones(3))


def test_eager_copy_weights_checks_each_pair_once_and_compiles_one_function(monkeypatch):
    from helpers import state_sync

    online, target = _mlp(0), _mlp(1)
    calls = []
    original = state_sync._check_pair
    monkeypatch.setattr(state_sync, "_check_pair", lambda s, d: calls.append(1) or original(s, d))
    for tau in (1.0, 0.5, 1.0, 0.5):
        copy_weights(online, target, tau=tau)
    assert len(calls) == 1  # the structure is checked on the first call only
    copy_weights(online, _mlp(2))
    assert len(calls) == 2  # a new pair is checked again
    lists = [[tf.Variable(float(i), name="w")] for i in range(4)]
    copy_weights(lists[0], lists[1])
    traces = state_sync._assign_all.experimental_get_tracing_count()
    copy_weights(lists[2], lists[3])  # plain lists share one compiled function
    assert state_sync._assign_all.experimental_get_tracing_count() == traces
    assert lists[3][0].numpy() == 2.0
    with pytest.raises(StructureMismatchError, match="share"):  # aliasing is still refused after caching
        copy_weights(online, online)


def test_the_compiled_copy_kept_on_dst_changes_nothing_it_saves(tmp_path):
    online, target = _mlp(0), _mlp(1)
    keys_before = sorted(k for k, _ in tf.train.list_variables(
        tf.train.Checkpoint(model=target).write(str(tmp_path / "before"))))
    copy_weights(online, target)
    copy_weights(online, target, tau=0.5)
    keys_after = sorted(k for k, _ in tf.train.list_variables(
        tf.train.Checkpoint(model=target).write(str(tmp_path / "after"))))
    assert keys_after == keys_before
    target.save(str(tmp_path / "target.keras"))  # Keras' own saving ignores it too
    module_src, module_dst = tf.Module(), tf.Module()
    module_src.w, module_dst.w = tf.Variable([1.0, 2.0], name="w"), tf.Variable([0.0, 0.0], name="w")
    copy_weights(module_src, module_dst)
    np.testing.assert_array_equal(module_dst.w.numpy(), [1.0, 2.0])
    tf.saved_model.save(module_dst, str(tmp_path / "module"))


def test_soft_updates_with_changing_tau_use_one_trace():
    online, target = _mlp(0), _mlp(1)
    for tau in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        before = [w.numpy() for w in target.weights]
        copy_weights(online, target, tau=tau)
        for w, b, o in zip(target.weights, before, online.weights):
            np.testing.assert_allclose(w.numpy(), (1 - tau) * b + tau * o.numpy(), rtol=1e-5, atol=1e-6)
    [plan] = target._copy_weights_plans.values()
    assert len(plan.by_tau) == 4  # the first four values get a function each...
    # ...the rest share one function traced once, with tau as an argument
    assert isinstance(plan.any_tau, tf.types.experimental.ConcreteFunction)
