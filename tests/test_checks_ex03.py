"""The checks of notebook 03: a right answer passes, typical mistakes get their hints."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex03

tf1 = tf.compat.v1


def not_done(*args):
    raise NotImplementedError()


# ---------------------------------------------------------------- 03.1


def build_ensemble(build_net, ckpt_paths, x):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with tf1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        tf1.train.init_from_checkpoint(path, {"/": f"member_{k}/"})
    return outputs


def build_ensemble_with_savers(build_net, ckpt_paths, x):
    """Builds the scopes but restores nothing before the initializer runs."""
    outputs = []
    for k, _ in enumerate(ckpt_paths, start=1):
        with tf1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    return outputs


def build_ensemble_without_scopes(build_net, ckpt_paths, x):
    outputs = []
    for k, path in enumerate(ckpt_paths):
        with tf1.variable_scope(tf1.get_variable_scope(), reuse=k > 0):
            outputs.append(build_net(x))
    tf1.train.init_from_checkpoint(ckpt_paths[-1], {"/": "/"})
    return outputs


def test_03_1_right_answer_passes(capsys):
    ex03.check_build_ensemble(build_ensemble)
    assert "✔ Exercise 03.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (build_ensemble_with_savers, "init_from_checkpoint"),
        (build_ensemble_without_scopes, "expected 3 variables"),
        (lambda build_net, paths, x: build_net(x), "one output tensor per checkpoint"),
    ],
)
def test_03_1_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_build_ensemble(answer)


def test_03_1_stub_is_not_done():
    with pytest.raises(ExerciseNotDone, match="03.1"):
        ex03.check_build_ensemble(not_done)


# ---------------------------------------------------------------- 03.2


def scope_shared_names(meta_graph_def, scope):
    scoped = tf1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/{node.attr['shared_name'].s.decode()}".encode()
    return scoped


def scope_in_place(meta_graph_def, scope):
    for node in meta_graph_def.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/{node.name}".encode()
    return meta_graph_def


def copy_without_renaming(meta_graph_def, scope):
    scoped = tf1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    return scoped


def test_03_2_right_answer_passes(capsys):
    ex03.check_scope_shared_names(scope_shared_names)
    assert "✔ Exercise 03.2 passed" in capsys.readouterr().out


def test_03_2_the_helper_passes_too(capsys):
    from helpers.metagraph import scope_shared_names as helper

    ex03.check_scope_shared_names(helper)
    assert "passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (copy_without_renaming, r"shared names \['w', 'w', 'w'\]"),
        (scope_in_place, "was changed: work on a copy"),
        (lambda meta, scope: meta.graph_def, "should return a MetaGraphDef"),
    ],
)
def test_03_2_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_scope_shared_names(answer)


# ---------------------------------------------------------------- 03.3


def vote(probabilities):
    labels = probabilities.argmax(axis=-1)  # [members, batch]
    n_classes = probabilities.shape[-1]
    counts = np.stack([np.bincount(column, minlength=n_classes) for column in labels.T])
    mean = probabilities.mean(axis=0)
    return np.where(counts == counts.max(axis=1, keepdims=True), mean, -1.0).argmax(axis=1)


def soft_vote(probabilities):
    return probabilities.mean(axis=0).argmax(axis=-1)


def vote_ties_low(probabilities):
    labels = probabilities.argmax(axis=-1)
    counts = np.stack([np.bincount(c, minlength=probabilities.shape[-1]) for c in labels.T])
    return counts.argmax(axis=1)


def vote_wrong_axis(probabilities):
    return probabilities.argmax(axis=0)


def test_03_3_right_answer_passes(capsys):
    ex03.check_vote(vote)
    assert "✔ Exercise 03.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (soft_vote, "soft voting"),
        (vote_ties_low, "a tie"),
        (vote_wrong_axis, "one label per example"),
    ],
)
def test_03_3_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_vote(answer)


# ---------------------------------------------------------------- 03.4


def ensemble_forward(kernels, biases, x):
    h = tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("nbi,nio->nbo", tf.nn.relu(h), kernel) + bias[:, None, :]
    return h


def forward_without_relu(kernels, biases, x):
    h = tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("nbi,nio->nbo", h, kernel) + bias[:, None, :]
    return h


def forward_relu_everywhere(kernels, biases, x):
    return tf.nn.relu(ensemble_forward(kernels, biases, x))


def forward_batch_first(kernels, biases, x):
    return tf.transpose(ensemble_forward(kernels, biases, x), [1, 0, 2])


def test_03_4_right_answer_passes(capsys):
    ex03.check_ensemble_forward(ensemble_forward)
    assert "✔ Exercise 03.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (forward_without_relu, "apply relu between the layers"),
        (forward_relu_everywhere, "no negative values"),
        (forward_batch_first, r"\[members, batch, outputs\]"),
    ],
)
def test_03_4_mistakes_get_hints(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_ensemble_forward(answer)


def test_reference_forward_matches_a_plain_loop():
    rng = np.random.default_rng(1)
    kernels = [rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4, 1))]
    biases = [rng.normal(size=(2, 4)), rng.normal(size=(2, 1))]
    x = rng.normal(size=(5, 3))
    got = ex03._reference_forward(kernels, biases, x)
    member_1 = np.maximum(x @ kernels[0][1] + biases[0][1], 0) @ kernels[1][1] + biases[1][1]
    np.testing.assert_allclose(got[1], member_1)
