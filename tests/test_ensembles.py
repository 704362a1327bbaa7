"""Unit tests of helpers.ensembles (many models of one architecture, side by side)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.ensembles import (
    VectorizedEnsemble,
    load_keras_ensemble,
    majority_vote,
    restore_into_scope,
    scope_variables,
)
from helpers.errors import CheckpointMismatchError, NotACheckpointError, StructureMismatchError

tf1 = tf.compat.v1


def build_net(x: tf.Tensor, hidden: int = 3, dtype=tf.float32) -> tf.Tensor:
    """A two-layer graph-mode network made of get_variable and plain ops."""
    w1 = tf1.get_variable("dense/kernel", shape=[2, hidden], dtype=dtype)
    b1 = tf1.get_variable("dense/bias", shape=[hidden], dtype=dtype, initializer=tf1.zeros_initializer())
    w2 = tf1.get_variable("out/kernel", shape=[hidden, 1], dtype=dtype)
    return tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2)


def save_net(prefix: str, value: float, hidden: int = 3, dtype=tf.float32, extra: bool = False) -> str:
    """Save a network whose every weight equals ``value``, without any scope."""
    with tf.Graph().as_default():
        tf1.set_random_seed(0)
        build_net(tf1.placeholder(dtype, [None, 2]), hidden, dtype)
        if extra:
            tf1.get_variable("global_step", initializer=0)
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            for variable in tf1.global_variables():
                if variable.dtype.base_dtype.is_floating:
                    sess.run(variable.assign(np.full(variable.shape, value)))
            return saver.save(sess, prefix)


@pytest.fixture
def checkpoints(tmp_path) -> list[str]:
    return [save_net(str(tmp_path / f"model_{i}"), float(i)) for i in (1, 2, 3)]


@pytest.fixture
def three_scopes():
    """A graph with the network built under m1/, m2/, m3/, and a session."""
    graph = tf.Graph()
    with graph.as_default():
        tf1.set_random_seed(0)
        x = tf1.placeholder(tf.float32, [None, 2], name="x")
        outputs = []
        for i in (1, 2, 3):
            with tf1.variable_scope(f"m{i}"):
                outputs.append(build_net(x))
        sess = tf1.Session(graph=graph)
        sess.run(tf1.global_variables_initializer())
    yield graph, sess, x, outputs
    sess.close()


# Checkpoint paths are resolved by helpers.inspection.resolve_checkpoint (tests/test_inspection.py).


# ---------------------------------------------------------------- scope_variables


def test_scope_variables_keys_by_name_inside_the_scope(three_scopes):
    graph, *_ = three_scopes
    found = scope_variables(graph, "m2/")
    assert sorted(found) == ["dense/bias", "dense/kernel", "out/kernel"]
    assert all(variable.op.name.startswith("m2/") for variable in found.values())


# ---------------------------------------------------------------- restore_into_scope


def test_restore_into_scope_fills_each_scope_from_its_checkpoint(checkpoints, three_scopes):
    graph, sess, x, outputs = three_scopes
    for i, prefix in enumerate(checkpoints, start=1):
        saver = restore_into_scope(sess, prefix, f"m{i}")
        assert isinstance(saver, tf1.train.Saver)
    for i in (1, 2, 3):
        for variable in scope_variables(graph, f"m{i}").values():
            np.testing.assert_array_equal(sess.run(variable), np.full(variable.shape, float(i)))
    # for x = [1, 1], every hidden unit is 2 i + i = 3 i, and the output 3 * 3 i * i = 9 i**2
    answers = sess.run(outputs, {x: [[1.0, 1.0]]})
    assert [float(a[0, 0]) for a in answers] == [9.0, 36.0, 81.0]


def test_restore_into_scope_adds_no_ops_the_second_time(checkpoints, three_scopes):
    graph, sess, *_ = three_scopes
    first = restore_into_scope(sess, checkpoints[0], "m1")
    ops_before = len(graph.get_operations())
    second = restore_into_scope(sess, checkpoints[2], "m1")
    assert len(graph.get_operations()) == ops_before
    assert second is first
    value = sess.run(scope_variables(graph, "m1")["out/kernel"])
    np.testing.assert_array_equal(value, np.full((3, 1), 3.0))


def test_restore_into_scope_builds_one_saver_per_scope(checkpoints, three_scopes):
    graph, sess, *_ = three_scopes
    ops_before = len(graph.get_operations())
    saver_1 = restore_into_scope(sess, checkpoints[0], "m1")
    grown_by_one = len(graph.get_operations()) - ops_before
    saver_2 = restore_into_scope(sess, checkpoints[0], "m2")
    assert saver_1 is not saver_2
    assert len(graph.get_operations()) - ops_before == 2 * grown_by_one


def test_restore_into_scope_does_not_touch_other_scopes(checkpoints, three_scopes):
    graph, sess, *_ = three_scopes
    before = sess.run(scope_variables(graph, "m2"))
    restore_into_scope(sess, checkpoints[0], "m1")
    after = sess.run(scope_variables(graph, "m2"))
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_restore_into_scope_lists_missing_and_unexpected(tmp_path, three_scopes):
    _, sess, *_ = three_scopes
    with tf.Graph().as_default():
        tf1.set_random_seed(0)
        tf1.get_variable("dense/kernel", shape=[2, 3])
        tf1.get_variable("dense/extra", shape=[3])
        saver = tf1.train.Saver()
        with tf1.Session() as other:
            other.run(tf1.global_variables_initializer())
            prefix = saver.save(other, str(tmp_path / "partial"))
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_into_scope(sess, prefix, "m1")
    error = caught.value
    assert error.missing == ["dense/bias", "out/kernel"]
    assert error.unexpected == ["dense/extra"]
    assert error.problems == 3
    assert "does not match the variables under 'm1/'" in str(error)
    assert "'dense/bias', 'out/kernel'" in str(error)


def test_restore_into_scope_lists_shape_and_dtype_mismatches(tmp_path, three_scopes):
    _, sess, *_ = three_scopes
    wider = save_net(str(tmp_path / "wider"), 1.0, hidden=4)
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_into_scope(sess, wider, "m1")
    assert caught.value.shape_mismatches == [
        ("dense/bias", (4,), (3,)),
        ("dense/kernel", (2, 4), (2, 3)),
        ("out/kernel", (4, 1), (3, 1)),
    ]
    doubles = save_net(str(tmp_path / "doubles"), 1.0, dtype=tf.float64)
    with pytest.raises(CheckpointMismatchError, match="wrong dtype: 'dense/bias' is float64"):
        restore_into_scope(sess, doubles, "m1")


def test_restore_into_scope_refuses_extra_checkpoint_keys(tmp_path, three_scopes):
    _, sess, *_ = three_scopes
    with_step = save_net(str(tmp_path / "with_step"), 1.0, extra=True)
    with pytest.raises(CheckpointMismatchError, match="in the checkpoint but not in the target: 'global_step'"):
        restore_into_scope(sess, with_step, "m1")


def test_restore_into_scope_restores_nothing_on_a_mismatch(tmp_path, three_scopes):
    graph, sess, *_ = three_scopes
    before = sess.run(scope_variables(graph, "m1"))
    with pytest.raises(CheckpointMismatchError):
        restore_into_scope(sess, save_net(str(tmp_path / "wider"), 9.0, hidden=4), "m1")
    after = sess.run(scope_variables(graph, "m1"))
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])


def test_restore_into_scope_refuses_a_path_that_is_not_a_checkpoint(tmp_path, three_scopes):
    _, sess, *_ = three_scopes
    with pytest.raises(NotACheckpointError, match="no checkpoint files"):
        restore_into_scope(sess, str(tmp_path / "nothing_here"), "m1")


def test_restore_into_scope_names_the_scopes_on_a_typo(checkpoints, three_scopes):
    _, sess, *_ = three_scopes
    with pytest.raises(ValueError, match=r"no variables under 'model_1/'.*\['m1', 'm2', 'm3'\]"):
        restore_into_scope(sess, checkpoints[0], "model_1")


@pytest.mark.parametrize("scope", ["", "/"])
def test_restore_into_scope_refuses_an_empty_scope(checkpoints, three_scopes, scope):
    _, sess, *_ = three_scopes
    with pytest.raises(ValueError, match="non-empty"):
        restore_into_scope(sess, checkpoints[0], scope)


# ---------------------------------------------------------------- TF2: Keras members


def make_mlp() -> keras.Model:
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, activation="relu"), keras.layers.Dense(3)]
    )


def save_keras(path: str, value: float, model: keras.Model | None = None, root: str = "model") -> str:
    model = model or make_mlp()
    for weight in model.weights:
        weight.assign(np.full(weight.shape, value, np.float32))
    return tf.train.Checkpoint(**{root: model}).write(path)


def test_load_keras_ensemble_restores_each_member(tmp_path):
    paths = [save_keras(str(tmp_path / f"m{i}"), 0.1 * i) for i in (1, 2, 3)]
    members = load_keras_ensemble(make_mlp, paths)
    assert len(members) == 3
    for i, member in enumerate(members, start=1):
        for weight in member.weights:
            np.testing.assert_allclose(weight.numpy(), np.full(weight.shape, 0.1 * i, np.float32))


def test_load_keras_ensemble_writes_no_file(tmp_path, monkeypatch):
    paths = [save_keras(str(tmp_path / f"m{i}"), 0.1 * i) for i in (1, 2)]
    before = sorted(p.name for p in tmp_path.iterdir())

    def no_writing(*args, **kwargs):
        raise AssertionError("load_keras_ensemble wrote a checkpoint to learn the layout")

    monkeypatch.setattr(tf.train.Checkpoint, "write", no_writing)
    monkeypatch.setattr(tf.train.Checkpoint, "save", no_writing)
    assert len(load_keras_ensemble(make_mlp, paths)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_load_keras_ensemble_reads_a_saved_checkpoint_and_another_root(tmp_path):
    model = make_mlp()
    path = tf.train.Checkpoint(net=model).save(str(tmp_path / "net"))
    [member] = load_keras_ensemble(make_mlp, [path], root="net")
    for mine, theirs in zip(member.weights, model.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_load_keras_ensemble_lists_every_mismatch(tmp_path):
    deeper = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3), keras.layers.Dense(2)]
    )
    path = save_keras(str(tmp_path / "deeper"), 1.0, deeper)
    with pytest.raises(CheckpointMismatchError) as caught:
        load_keras_ensemble(make_mlp, [path])
    error = caught.value
    assert error.missing == []
    assert [key.split("/")[2:4] for key in error.unexpected] == [["3", "_kernel"], ["3", "bias"]]
    assert sorted(name.split("/")[2] for name, _, _ in error.shape_mismatches) == ["1", "1", "2"]
    assert error.problems == 5  # layer 1 kernel and bias shapes, layer 2 kernel shape, layer 3 unexpected


def test_load_keras_ensemble_names_the_roots_a_checkpoint_has(tmp_path):
    path = save_keras(str(tmp_path / "net"), 1.0, root="net")
    with pytest.raises(CheckpointMismatchError, match=r"root holds \['net'\]") as caught:
        load_keras_ensemble(make_mlp, [path])
    assert caught.value.missing == ["model"]


def test_load_keras_ensemble_refuses_a_name_based_checkpoint(tmp_path):
    prefix = save_net(str(tmp_path / "tf1"), 1.0)
    with pytest.raises(NotACheckpointError, match="name-based"):
        load_keras_ensemble(make_mlp, [prefix])


def test_load_keras_ensemble_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        load_keras_ensemble(make_mlp, [])
    with pytest.raises(NotACheckpointError):
        load_keras_ensemble(make_mlp, [str(tmp_path / "missing")])
    path = save_keras(str(tmp_path / "m"), 1.0)
    with pytest.raises(ValueError, match="built model"):
        load_keras_ensemble(lambda: keras.Sequential([keras.layers.Dense(3)]), [path])


# ---------------------------------------------------------------- VectorizedEnsemble


def test_vectorized_ensemble_matches_each_member():
    keras.utils.set_random_seed(0)
    members = [make_mlp() for _ in range(4)]
    x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    ensemble = VectorizedEnsemble(members)
    assert ensemble.size == 4
    stacked = ensemble(x).numpy()
    assert stacked.shape == (4, 6, 3)
    for number, member in enumerate(members):
        np.testing.assert_allclose(stacked[number], member(x).numpy(), rtol=1e-5, atol=1e-5)


def test_vectorized_ensemble_copies_the_weights():
    members = [make_mlp() for _ in range(2)]
    ensemble = VectorizedEnsemble(members)
    before = ensemble(np.ones((1, 4), np.float32)).numpy()
    for weight in members[0].weights:
        weight.assign(tf.zeros_like(weight))
    np.testing.assert_array_equal(ensemble(np.ones((1, 4), np.float32)).numpy(), before)


def test_vectorized_ensemble_refuses_mismatched_members():
    wider = keras.Sequential([keras.Input((4,)), keras.layers.Dense(7, activation="relu"), keras.layers.Dense(3)])
    with pytest.raises(StructureMismatchError, match=r"model 1 differs from model 0 at Dense layer 0"):
        VectorizedEnsemble([make_mlp(), wider])
    tanh = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(3)])
    with pytest.raises(StructureMismatchError, match="tanh"):
        VectorizedEnsemble([make_mlp(), tanh])
    deeper = keras.Sequential([keras.Input((4,)), keras.layers.Dense(5), keras.layers.Dense(3), keras.layers.Dense(3)])
    with pytest.raises(StructureMismatchError, match="model 1 has 3 Dense layers, model 0 has 2"):
        VectorizedEnsemble([make_mlp(), deeper])


def test_vectorized_ensemble_refuses_other_layers_and_no_models():
    with_dropout = keras.Sequential([keras.Input((4,)), keras.layers.Dropout(0.5), keras.layers.Dense(3)])
    with pytest.raises(StructureMismatchError, match="Dropout"):
        VectorizedEnsemble([with_dropout])
    no_bias = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, use_bias=False)])
    with pytest.raises(StructureMismatchError, match="with a bias"):
        VectorizedEnsemble([no_bias])
    with pytest.raises(StructureMismatchError, match="non-empty list of Keras models"):
        VectorizedEnsemble([])


def _two_heads() -> keras.Model:
    x = keras.Input((4,))
    hidden = keras.layers.Dense(5, activation="relu", name="hidden")(x)
    return keras.Model(x, [keras.layers.Dense(5, name="head_a")(hidden),
                           keras.layers.Dense(5, name="head_b")(hidden)], name="two_heads")


def test_vectorized_ensemble_refuses_two_heads_and_stacks_one_model_per_head():
    members = [_two_heads() for _ in range(3)]
    with pytest.raises(StructureMismatchError, match=r"model 0 \('two_heads'\) has 1 input\(s\) and 2 output\(s\)"
                       r".*keras\.Model\(member\.inputs, member\.outputs\[k\]\)"):
        VectorizedEnsemble(members)
    batch = np.random.default_rng(2).normal(size=(6, 4)).astype(np.float32)
    for head in (0, 1):  # the route the error names works, and computes each head
        per_head = [keras.Model(m.inputs, m.outputs[head]) for m in members]
        expected = np.stack([m(batch)[head].numpy() for m in members])
        np.testing.assert_allclose(VectorizedEnsemble(per_head)(batch).numpy(), expected, atol=1e-5)


def test_vectorized_ensemble_refuses_a_branch_that_skips_a_layer():
    x = keras.Input((4,))
    unused_by_the_output = keras.layers.Dense(4, name="side")(x)
    out = keras.layers.Dense(3, name="out")(x)
    branch = keras.Model(x, [out, unused_by_the_output], name="branch")
    with pytest.raises(StructureMismatchError, match="2 output"):
        VectorizedEnsemble([branch])


def test_vectorized_ensemble_refuses_a_layer_applied_twice():
    x = keras.Input((4,))
    shared = keras.layers.Dense(4, activation="tanh", name="shared")
    twice = keras.Model(x, keras.layers.Dense(2)(shared(shared(x))), name="twice")
    with pytest.raises(StructureMismatchError, match=r"model 0 \('twice'\) applies the layer\(s\) \['shared'\] more than once"):
        VectorizedEnsemble([twice])


def test_vectorized_ensemble_refuses_subclassed_models_and_non_models():
    class Sum(keras.Model):
        def __init__(self):
            super().__init__(name="sum")
            self.a, self.b = keras.layers.Dense(3), keras.layers.Dense(3)

        def call(self, x):
            return self.a(x) + self.b(x)

    model = Sum()
    model(np.ones((1, 4), np.float32))
    with pytest.raises(StructureMismatchError, match=r"model 0 \(Sum 'sum'\) has no inputs and outputs.*"
                       r"keras\.Sequential"):
        VectorizedEnsemble([model])
    with pytest.raises(StructureMismatchError, match="model 1 is a Dense, not a Keras model"):
        VectorizedEnsemble([make_mlp(), keras.layers.Dense(3)])


def test_a_chain_that_does_not_reach_the_input_is_refused():
    from helpers.ensembles import _chain_to

    model, other = make_mlp(), make_mlp()
    with pytest.raises(StructureMismatchError, match=r"model 2 \('.*'\): its output is not a chain of Dense"):
        _chain_to(other.outputs[0], model.inputs[0], model, 2)
    assert _chain_to(model.outputs[0], model.inputs[0], model, 0) == model.layers


def test_vectorized_ensemble_takes_a_functional_chain():
    def chain() -> keras.Model:
        x = keras.Input((4,))
        return keras.Model(x, keras.layers.Dense(2)(keras.layers.Dense(5, activation="relu")(x)))

    members = [chain() for _ in range(3)]
    batch = np.random.default_rng(3).normal(size=(4, 4)).astype(np.float32)
    expected = np.stack([m(batch).numpy() for m in members])
    np.testing.assert_allclose(VectorizedEnsemble(members)(batch).numpy(), expected, atol=1e-5)


# ---------------------------------------------------------------- majority_vote


def test_majority_vote_counts_and_breaks_ties_low():
    labels = np.array([[2, 0, 1, 1], [2, 1, 0, 1], [0, 2, 2, 1]])
    np.testing.assert_array_equal(majority_vote(labels), [2, 0, 0, 1])
    np.testing.assert_array_equal(majority_vote(labels, num_classes=5), [2, 0, 0, 1])


@pytest.mark.parametrize("labels", [np.array([0, 1, 1]), np.array([[0.0, 1.0]])])
def test_majority_vote_refuses_bad_labels(labels):
    with pytest.raises(ValueError, match="integers of shape"):
        majority_vote(labels)


# ---------------------------------------------------------------- real-world input (issue: trustworthy recipes)


def test_restore_into_scope_takes_a_pathlib_path(checkpoints, three_scopes):
    from pathlib import Path

    _, sess, x, outputs = three_scopes
    restore_into_scope(sess, Path(checkpoints[1]), "m1")
    assert np.allclose(sess.run(scope_variables(sess.graph, "m1")["dense/bias"]), 2.0)


@pytest.mark.parametrize("order", [("model_1", "model_10"), ("model_10", "model_1")])
def test_restore_into_scopes_that_are_prefixes_of_each_other(checkpoints, order):
    with tf.Graph().as_default() as graph:
        tf1.set_random_seed(0)
        x = tf1.placeholder(tf.float32, [None, 2])
        for scope in order:
            with tf1.variable_scope(scope):
                build_net(x)
        with tf1.Session() as sess:
            restore_into_scope(sess, checkpoints[0], "model_1")
            restore_into_scope(sess, checkpoints[2], "model_10")
            one = sess.run(scope_variables(graph, "model_1")["out/kernel"])
            ten = sess.run(scope_variables(graph, "model_10")["out/kernel"])
    assert np.all(one == 1.0) and np.all(ten == 3.0)


def test_restore_into_scope_fills_partitioned_variables(checkpoints):
    with tf.Graph().as_default() as graph:
        with tf1.variable_scope("m1"):
            parts = tf1.get_variable("dense/kernel", [2, 3], partitioner=tf1.fixed_size_partitioner(2),
                                     initializer=tf1.zeros_initializer())
            tf1.get_variable("dense/bias", [3], initializer=tf1.zeros_initializer())
            tf1.get_variable("out/kernel", [3, 1], initializer=tf1.zeros_initializer())
        with tf1.Session() as sess:
            restore_into_scope(sess, checkpoints[1], "m1")
            kernel = np.concatenate(sess.run(list(parts)))
    assert len(list(parts)) == 2 and kernel.shape == (2, 3) and np.all(kernel == 2.0)


def test_restore_into_scope_names_a_partitioned_variable_of_the_wrong_shape(checkpoints):
    with tf.Graph().as_default():
        with tf1.variable_scope("m1"):
            tf1.get_variable("dense/kernel", [4, 3], partitioner=tf1.fixed_size_partitioner(2),
                             initializer=tf1.zeros_initializer())
            tf1.get_variable("dense/bias", [3], initializer=tf1.zeros_initializer())
            tf1.get_variable("out/kernel", [3, 1], initializer=tf1.zeros_initializer())
        with tf1.Session() as sess, pytest.raises(CheckpointMismatchError, match=r"'dense/kernel' is \(2, 3\)"):
            restore_into_scope(sess, checkpoints[0], "m1")


def test_restore_into_scope_reports_a_damaged_data_file(checkpoints, three_scopes):
    import glob

    _, sess, *_ = three_scopes
    [data] = glob.glob(glob.escape(checkpoints[0]) + ".data-*")
    with open(data, "r+b") as file:
        file.truncate(4)
    with pytest.raises(NotACheckpointError, match="truncated or damaged"):
        restore_into_scope(sess, checkpoints[0], "m1")


def test_load_keras_ensemble_reads_training_checkpoints_with_an_optimizer(tmp_path):
    from pathlib import Path

    trained = make_mlp()
    optimizer = keras.optimizers.Adam(0.1)
    x, y = np.ones((8, 4), np.float32), np.zeros((8, 3), np.float32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(trained(x) - y))
    optimizer.apply_gradients(zip(tape.gradient(loss, trained.trainable_variables), trained.trainable_variables))
    path = tf.train.Checkpoint(model=trained, optimizer=optimizer).save(str(tmp_path / "train"))
    keys = [key for key, _ in tf.train.list_variables(path)]
    assert any(key.startswith("optimizer/_trainable_variables/") for key in keys)  # the model's keys moved
    [member] = load_keras_ensemble(make_mlp, [Path(path)])
    for mine, theirs in zip(member.weights, trained.weights):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_load_keras_ensemble_refuses_one_shared_model(tmp_path):
    paths = [save_keras(str(tmp_path / f"m{i}"), float(i)) for i in (1, 2)]
    shared = make_mlp()
    with pytest.raises(StructureMismatchError, match="models 0 and 1 sharing"):
        load_keras_ensemble(lambda: shared, paths)
    layer = keras.layers.Dense(3)
    with pytest.raises(StructureMismatchError, match="new model on every call"):
        load_keras_ensemble(lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(5), layer]), paths)


def test_load_keras_ensemble_refuses_one_path_and_non_models(tmp_path):
    path = save_keras(str(tmp_path / "m"), 1.0)
    with pytest.raises(TypeError, match=r"pass \[path\]"):
        load_keras_ensemble(make_mlp, path)
    with pytest.raises(TypeError, match="must return a Keras model"):
        load_keras_ensemble(lambda: "model", [path])


def test_vectorized_ensemble_takes_float64_numpy_batches():
    members = [make_mlp() for _ in range(3)]
    ensemble = VectorizedEnsemble(members)
    batch = np.random.default_rng(0).normal(size=(5, 4))  # float64, NumPy's default
    expected = np.stack([member(batch.astype(np.float32)).numpy() for member in members])
    np.testing.assert_allclose(ensemble(batch).numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("batch, message", [
    (np.zeros((5, 3)), r"shape \(5, 3\); the members take \[batch, 4\]"),
    (np.zeros(4), r"shape \(4,\)"),
    (np.array([["a"] * 4]), "holds string values"),
    ([[1.0, 2.0], [3.0]], "not an array of numbers"),
])
def test_vectorized_ensemble_names_a_bad_batch(batch, message):
    with pytest.raises(StructureMismatchError, match=message):
        VectorizedEnsemble([make_mlp()])(batch)


@pytest.mark.parametrize("members", [1, 2, 7])
def test_vectorized_ensemble_matches_its_members_for_deeper_nets(members):
    def net():
        return keras.Sequential([keras.Input((6,)), keras.layers.Dense(5, activation="tanh"),
                                 keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])

    models = [net() for _ in range(members)]
    batch = np.random.default_rng(1).normal(size=(9, 6)).astype(np.float32)
    expected = np.stack([model(batch).numpy() for model in models])
    np.testing.assert_allclose(VectorizedEnsemble(models)(batch).numpy(), expected, atol=1e-5)


@pytest.mark.parametrize("labels, num_classes, message", [
    ([[0, 3], [1, 1]], 3, r"in \[0, 3\); found \[3\]"),
    ([[0, -1], [1, 1]], None, r"found \[-1\]"),
    (np.zeros((0, 4), np.int64), None, "empty"),
    ([[0, 1]], 0, "positive integer"),
    ([[0, 1]], 2.5, "positive integer"),
    ([[0.0, 1.0]], None, "integers"),
])
def test_majority_vote_names_bad_labels(labels, num_classes, message):
    from helpers.ensembles import InvalidLabelsError

    with pytest.raises(InvalidLabelsError, match=message):
        majority_vote(np.asarray(labels), num_classes)


# ---------------------------------------------------------------- properties (Hypothesis)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from helpers.ensembles import InvalidLabelsError  # noqa: E402

_FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FAST
@given(hnp.arrays(np.int64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
                  elements=st.integers(-2, 6)),
       st.one_of(st.none(), st.integers(1, 6)))
def test_majority_vote_counts_or_names_the_bad_label(labels, num_classes):
    try:
        voted = majority_vote(labels, num_classes)
    except InvalidLabelsError as error:
        classes = labels.max() + 1 if num_classes is None else num_classes
        assert labels.min() < 0 or labels.max() >= classes, error
        return
    classes = labels.max() + 1 if num_classes is None else num_classes
    for column, winner in zip(labels.T, voted):
        counts = np.bincount(column, minlength=classes)
        assert counts[winner] == counts.max() and winner == np.flatnonzero(counts == counts.max())[0]


@_FAST
@given(st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), max_size=12))
def test_restore_into_scope_with_any_scope_text_restores_or_refuses(checkpoints, scope):
    with tf.Graph().as_default():
        with tf1.Session() as sess:
            try:
                restore_into_scope(sess, checkpoints[0], scope)
            except ValueError as error:
                assert str(error)
            else:  # pragma: no cover - an empty graph has no scope to restore into
                raise AssertionError("restored into an empty graph")


@_FAST
@given(st.sampled_from(["a b", "ünï", "[best]*", "q?", "x/", "tr[ai]l"]), st.booleans())
def test_load_keras_ensemble_with_odd_folder_names(tmp_path_factory, name, as_path):
    from pathlib import Path

    folder = tmp_path_factory.mktemp("odd") / name.rstrip("/")
    path = save_keras(str(folder / "ckpt"), 0.5)
    [member] = load_keras_ensemble(make_mlp, [Path(path) if as_path else path])
    assert all(np.all(w.numpy() == 0.5) for w in member.weights)


@pytest.mark.parametrize("name", ["runs [best]", "ünï*", "q?"])
def test_restore_into_scope_reads_folders_with_glob_characters(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    prefix = save_net(str(folder / "model"), 4.0)
    with tf.Graph().as_default() as graph:
        tf1.set_random_seed(0)
        with tf1.variable_scope("m1"):
            build_net(tf1.placeholder(tf.float32, [None, 2]))
        with tf1.Session() as sess:
            restore_into_scope(sess, prefix, "m1")
            assert np.all(sess.run(scope_variables(graph, "m1")["out/kernel"]) == 4.0)


@_FAST
@given(hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64, np.int32, np.int64]),
                  hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5),
                  elements=st.integers(-3, 3)))
def test_vectorized_ensemble_answers_or_names_the_batch_problem(batch):
    global _PROPERTY_MEMBERS
    try:
        members = _PROPERTY_MEMBERS
    except NameError:
        members = _PROPERTY_MEMBERS = [make_mlp() for _ in range(2)]
    try:
        result = VectorizedEnsemble(members)(batch)
    except StructureMismatchError as error:
        assert batch.ndim != 2 or batch.shape[1] != 4, error
        return
    expected = np.stack([m(batch.astype(np.float32)).numpy() for m in members])
    np.testing.assert_allclose(result.numpy(), expected, atol=1e-4)
