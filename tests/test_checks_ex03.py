"""The checks of notebook 03: right answers written several ways pass, plausible wrong ones get their hints."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex03

V1 = tf.compat.v1


def _stub(*args):
    raise NotImplementedError()


def _passes(check, answer, capsys, exercise):
    check(answer)
    assert f"Exercise {exercise} passed" in capsys.readouterr().out


# ---------------------------------------------------------------- 03.1 vote


def vote_reference(probabilities):
    labels = probabilities.argmax(axis=-1)
    n_classes = probabilities.shape[-1]
    counts = np.stack([np.bincount(column, minlength=n_classes) for column in labels.T])
    mean = probabilities.mean(axis=0)
    return np.where(counts == counts.max(axis=1, keepdims=True), mean, -1.0).argmax(axis=1)


def vote_one_hot(probabilities):
    classes = probabilities.shape[-1]
    counts = np.eye(classes)[probabilities.argmax(-1)].sum(axis=0)          # [batch, classes]
    score = counts + probabilities.mean(axis=0) / 2                          # mean < 1 breaks ties only
    return score.argmax(-1)


def vote_loop(probabilities):
    winners = []
    for example in range(probabilities.shape[1]):
        p = probabilities[:, example]
        counts = np.bincount(p.argmax(-1), minlength=p.shape[-1])
        best = [c for c in range(p.shape[-1]) if counts[c] == counts.max()]
        winners.append(max(best, key=lambda c: (p[:, c].mean(), -c)))
    return np.array(winners)


@pytest.mark.parametrize("answer", [vote_reference, vote_one_hot, vote_loop])
def test_vote_accepts(answer, capsys):
    _passes(ex03.check_vote, answer, capsys, "03.1")


def vote_soft(probabilities):
    return probabilities.mean(axis=0).argmax(-1)


def vote_no_tie_break(probabilities):
    labels = probabilities.argmax(-1)
    return np.array([np.bincount(column, minlength=probabilities.shape[-1]).argmax() for column in labels.T])


def vote_tie_by_max_probability(probabilities):
    labels = probabilities.argmax(-1)
    counts = np.stack([np.bincount(c, minlength=probabilities.shape[-1]) for c in labels.T])
    top = probabilities.max(axis=0)
    return np.where(counts == counts.max(1, keepdims=True), top, -1.0).argmax(1)


def vote_tie_over_all_classes(probabilities):
    labels = probabilities.argmax(-1)
    counts = np.stack([np.bincount(c, minlength=probabilities.shape[-1]) for c in labels.T])
    tied = (counts == counts.max(1, keepdims=True)).sum(1) > 1
    return np.where(tied, probabilities.mean(0).argmax(-1), counts.argmax(1))


def vote_wrong_axis(probabilities):
    return probabilities.argmax(-1).max(axis=1)


def vote_tie_to_largest(probabilities):
    labels = probabilities.argmax(-1)
    counts = np.stack([np.bincount(c, minlength=probabilities.shape[-1]) for c in labels.T])
    score = np.where(counts == counts.max(1, keepdims=True), probabilities.mean(0), -1.0)
    return score.shape[1] - 1 - score[:, ::-1].argmax(1)


@pytest.mark.parametrize("answer, hint", [
    (vote_soft, "soft voting"),
    (vote_no_tie_break, "should go to the class with the higher mean probability"),
    (vote_tie_by_max_probability, "only the classes tied|smallest label|expected"),
    (vote_tie_over_all_classes, "only the classes tied for the most votes compete"),
    (vote_wrong_axis, "expected one label per example"),
    (vote_tie_to_largest, "so the smallest of them, 0"),
])
def test_vote_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_vote(answer)


def test_vote_not_done():
    with pytest.raises(ExerciseNotDone):
        ex03.check_vote(_stub)


# ---------------------------------------------------------------- 03.2 build_ensemble


def build_reference(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def build_variable_by_variable(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}") as scope:
            outputs.append(build_net(x))
        mapping = {f"{ckpt_scope}/{v.op.name[len(scope.name) + 1:]}": v
                   for v in V1.global_variables(scope.name + "/")}
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


@pytest.mark.parametrize("answer", [build_reference, build_variable_by_variable])
def test_build_ensemble_accepts(answer, capsys):
    _passes(ex03.check_build_ensemble, answer, capsys, "03.2")


def build_from_zero(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def build_without_init(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, _ in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    return outputs


def build_all_from_first(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, _ in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(ckpt_paths[0], {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def build_shared(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths):
        with V1.variable_scope("member", reuse=k > 0):
            outputs.append(build_net(x))
    return outputs


def build_notebook_scope(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"model_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"model_{k}/"})
    return outputs


def build_ignores_ckpt_scope(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {"/": f"member_{k}/"})
    return outputs


@pytest.mark.parametrize("answer, error, hint", [
    (build_from_zero, CheckFailed, "number the members from 1"),
    (build_without_init, CheckFailed, "still hold their initial values"),
    (build_all_from_first, CheckFailed, r"member_2 holds w, b = \(1.0, 0.5\)"),
    (build_shared, CheckFailed, "expected the variables"),
    (build_notebook_scope, CheckFailed, "expected the variables"),
    (build_ignores_ckpt_scope, CheckFailed, "its variables are under ckpt_scope"),
])
def test_build_ensemble_rejects(answer, error, hint):
    with pytest.raises(error, match=hint):
        ex03.check_build_ensemble(answer)


def test_build_ensemble_not_done():
    with pytest.raises(ExerciseNotDone):
        ex03.check_build_ensemble(_stub)


# ---------------------------------------------------------------- 03.3 scope_shared_names


def scope_reference(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            old = node.attr["shared_name"].s.decode() or node.name
            node.attr["shared_name"].s = f"{scope}/{old}".encode()
    return scoped


def scope_deepcopy(meta_graph_def, scope):
    scoped = copy.deepcopy(meta_graph_def)
    handles = [n for n in scoped.graph_def.node if n.op == "VarHandleOp"]
    for node in handles:
        node.attr["shared_name"].s = (scope + "/").encode() + node.attr["shared_name"].s
    return scoped


@pytest.mark.parametrize("answer", [scope_reference, scope_deepcopy])
def test_scope_shared_names_accepts(answer, capsys):
    _passes(ex03.check_scope_shared_names, answer, capsys, "03.3")


def scope_in_place(meta_graph_def, scope):
    for node in meta_graph_def.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/{node.attr['shared_name'].s.decode()}".encode()
    return meta_graph_def


def scope_first_only(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    node = next(n for n in scoped.graph_def.node if n.op == "VarHandleOp")
    node.attr["shared_name"].s = f"{scope}/{node.attr['shared_name'].s.decode()}".encode()
    return scoped


def scope_emptied(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = b""
    return scoped


def scope_only_scope(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = scope.encode()
    return scoped


def scope_no_slash(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = scope.encode() + node.attr["shared_name"].s
    return scoped


def scope_forgot_return(meta_graph_def, scope):
    scoped = V1.MetaGraphDef()
    scoped.CopyFrom(meta_graph_def)
    for node in scoped.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/{node.attr['shared_name'].s.decode()}".encode()


@pytest.mark.parametrize("answer, hint", [
    (scope_in_place, "was changed: work on a copy"),
    (scope_first_only, "some variables still share a name"),
    (scope_emptied, "some variables still share a name"),
    (scope_only_scope, "some variables still share a name"),
    (scope_no_slash, r"scope \+ '/' \+ the old shared name"),
    (scope_forgot_return, "returned NoneType"),
])
def test_scope_shared_names_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex03.check_scope_shared_names(answer)


def test_scope_shared_names_not_done():
    with pytest.raises(ExerciseNotDone):
        ex03.check_scope_shared_names(_stub)


# ---------------------------------------------------------------- 03.4 ensemble_forward


def forward_reference(kernels, biases, x):
    h = tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("nbi,nio->nbo", tf.nn.relu(h), kernel) + bias[:, None, :]
    return h


def forward_numpy_broadcast(kernels, biases, x):
    h = x
    for depth, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = h @ kernel + bias[:, None, :]          # [batch, in] @ [N, in, out] broadcasts to [N, batch, out]
        if depth < len(kernels) - 1:
            h = np.maximum(h, 0)
    return h


def forward_matmul(kernels, biases, x):
    h = tf.tile(x[None], [kernels[0].shape[0], 1, 1])
    last = len(kernels) - 1
    for depth, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = tf.matmul(h, kernel) + tf.expand_dims(bias, 1)
        h = tf.nn.relu(h) if depth < last else h
    return h


@pytest.mark.parametrize("answer", [forward_reference, forward_numpy_broadcast, forward_matmul])
def test_ensemble_forward_accepts(answer, capsys):
    _passes(ex03.check_ensemble_forward, answer, capsys, "03.4")


def forward_member_loop(kernels, biases, x):
    outputs = []
    for member in range(kernels[0].shape[0]):
        h = x
        for depth, (kernel, bias) in enumerate(zip(kernels, biases)):
            h = h @ kernel[member] + bias[member]
            if depth < len(kernels) - 1:
                h = np.maximum(h, 0)
        outputs.append(h)
    return np.stack(outputs)


def forward_comprehension(kernels, biases, x):
    def one(member):
        h = x
        for depth, (kernel, bias) in enumerate(zip(kernels, biases)):
            h = tf.nn.relu(h @ kernel[member] + bias[member]) if depth < len(kernels) - 1 else h @ kernel[member] + bias[member]
        return h
    return tf.stack([one(m) for m in range(len(kernels[0]))])


def forward_relu_everywhere(kernels, biases, x):
    h = tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("nbi,nio->nbo", tf.nn.relu(h), kernel) + bias[:, None, :]
    return tf.nn.relu(h)


def forward_no_relu(kernels, biases, x):
    h = tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("nbi,nio->nbo", h, kernel) + bias[:, None, :]
    return h


def forward_two_layers_only(kernels, biases, x):
    h = tf.nn.relu(tf.einsum("bi,nio->nbo", x, kernels[0]) + biases[0][:, None, :])
    return tf.einsum("nbi,nio->nbo", h, kernels[1]) + biases[1][:, None, :]


def forward_batch_first(kernels, biases, x):
    return tf.transpose(forward_reference(kernels, biases, x), [1, 0, 2])


@pytest.mark.parametrize("answer, error, hint", [
    (forward_member_loop, CheckFailed, "that is a Python loop over the members"),
    (forward_comprehension, CheckFailed, "that is a Python loop over the members"),
    (forward_relu_everywhere, CheckFailed, "do not apply relu after the last layer"),
    (forward_no_relu, CheckFailed, "apply relu between the layers"),
    (forward_two_layers_only, (CheckFailed, LearnerCodeError), "shape|apply every kernel"),
    (forward_batch_first, CheckFailed, r"= \[members, batch, outputs\]"),
])
def test_ensemble_forward_rejects(answer, error, hint):
    with pytest.raises(error, match=hint):
        ex03.check_ensemble_forward(answer)


def test_ensemble_forward_not_done():
    with pytest.raises(ExerciseNotDone):
        ex03.check_ensemble_forward(_stub)


# ===========================================================================
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {
}


def _votes(probabilities):
    probabilities = np.asarray(probabilities)
    return probabilities.argmax(axis=-1)  # [members, batch]


# ----- 03.1 wrong


def vote_mean_probability(probabilities):
    return np.asarray(probabilities).mean(axis=0).argmax(axis=-1)


def vote_bincount_smallest(probabilities):
    votes = _votes(probabilities)
    classes = np.asarray(probabilities).shape[-1]
    return np.array([np.bincount(votes[:, i], minlength=classes).argmax() for i in range(votes.shape[1])])


def vote_tie_by_max_probability(probabilities):
    p = np.asarray(probabilities)
    votes, classes = _votes(p), p.shape[-1]
    out = []
    for i in range(p.shape[1]):
        counts = np.bincount(votes[:, i], minlength=classes)
        tied = np.flatnonzero(counts == counts.max())
        out.append(tied[np.argmax(p[:, i, tied].max(axis=0))])
    return np.array(out)


def vote_tie_over_all_classes(probabilities):
    p = np.asarray(probabilities)
    votes, classes = _votes(p), p.shape[-1]
    out = []
    for i in range(p.shape[1]):
        counts = np.bincount(votes[:, i], minlength=classes)
        tied = np.flatnonzero(counts == counts.max())
        out.append(tied[0] if len(tied) == 1 else int(p[:, i].mean(axis=0).argmax()))
    return np.array(out)


def _reference_like(p):
    p = np.asarray(p)
    votes, classes = p.argmax(axis=-1), p.shape[-1]
    out = []
    for i in range(p.shape[1]):
        counts = np.bincount(votes[:, i], minlength=classes)
        tied = np.flatnonzero(counts == counts.max())
        means = p[:, i, tied].mean(axis=0)
        out.append(int(tied[np.flatnonzero(means == means.max())[0]]))
    return out


def vote_returns_list(probabilities):
    return _reference_like(probabilities)


def vote_float_labels(probabilities):
    return np.array(_reference_like(probabilities), dtype=np.float64)


def vote_squeezed(probabilities):
    return np.squeeze(np.array(_reference_like(np.squeeze(probabilities))))


def vote_tie_largest_label(probabilities):
    p = np.asarray(probabilities)
    votes, classes = p.argmax(axis=-1), p.shape[-1]
    out = []
    for i in range(p.shape[1]):
        counts = np.bincount(votes[:, i], minlength=classes)
        tied = np.flatnonzero(counts == counts.max())
        means = p[:, i, tied].mean(axis=0)
        out.append(int(tied[np.flatnonzero(means == means.max())[-1]]))
    return np.array(out)


def vote_tie_mean_over_voters(probabilities):
    p = np.asarray(probabilities)
    votes, classes = p.argmax(axis=-1), p.shape[-1]
    out = []
    for i in range(p.shape[1]):
        counts = np.bincount(votes[:, i], minlength=classes)
        tied = np.flatnonzero(counts == counts.max())
        means = [p[votes[:, i] == c, i, c].mean() for c in tied]
        out.append(int(tied[int(np.argmax(means))]))
    return np.array(out)


def vote_returns_tensor(probabilities):
    return tf.constant(_reference_like(probabilities))


# ----- 03.1 right


def vote_lexsort(probabilities):
    p = np.asarray(probabilities, dtype=np.float64)
    members, batch, classes = p.shape
    counts = np.zeros((batch, classes), dtype=np.int64)
    np.add.at(counts, (np.arange(batch)[None, :].repeat(members, 0), p.argmax(-1)), 1)
    means = p.mean(axis=0)
    labels = np.empty(batch, dtype=np.int64)
    for i in range(batch):
        order = np.lexsort((np.arange(classes), -means[i], -counts[i]))
        labels[i] = order[0]
    return labels


def vote_pure_python(probabilities):
    p = np.asarray(probabilities)
    labels = []
    for i in range(p.shape[1]):
        counts = {}
        for m in range(p.shape[0]):
            c = int(np.argmax(p[m, i]))
            counts[c] = counts.get(c, 0) + 1
        best = max(counts.values())
        tied = [c for c in counts if counts[c] == best]
        labels.append(min(tied, key=lambda c: (-p[:, i, c].mean(), c)))
    return np.array(labels)


def vote_one_hot_sum(probabilities):
    p = np.asarray(probabilities)
    counts = np.eye(p.shape[-1], dtype=np.int64)[p.argmax(-1)].sum(axis=0)
    means = p.mean(axis=0)
    score = np.where(counts == counts.max(axis=-1, keepdims=True), means, -np.inf)
    return score.argmax(axis=-1)


@pytest.mark.parametrize("answer", cases([
    vote_mean_probability, vote_bincount_smallest, vote_tie_by_max_probability, vote_tie_over_all_classes,
    vote_returns_list, vote_float_labels, vote_squeezed, vote_tie_largest_label, vote_tie_mean_over_voters,
], HOLES))
def test_03_1_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex03.check_vote, answer, may_raise=answer in (vote_squeezed,))


# A tensor of integer labels, as TensorFlow ops give it, holds the answer (issue 33): accepted.
@pytest.mark.parametrize("answer", cases([vote_lexsort, vote_pure_python, vote_one_hot_sum, vote_returns_tensor],
                                         HOLES))
def test_03_1_prompt_only_right_answers_pass(answer):
    passes(ex03.check_vote, answer)


# ----- 03.3 wrong


def _rewrite(meta_graph_def, scope, new_name=lambda scope, old: f"{scope}/".encode() + old,
             op_types=("VarHandleOp",)):
    for node in meta_graph_def.graph_def.node:
        if node.op in op_types:
            node.attr["shared_name"].s = new_name(scope, node.attr["shared_name"].s)
    return meta_graph_def


def shared_in_place(meta_graph_def, scope):
    return _rewrite(meta_graph_def, scope)


def shared_no_slash(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    return _rewrite(result, scope, new_name=lambda s, old: s.encode() + old)


def shared_underscore(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    return _rewrite(result, scope, new_name=lambda s, old: f"{s}_".encode() + old)


def shared_every_node_with_attr(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    for node in result.graph_def.node:
        if "shared_name" in node.attr:
            node.attr["shared_name"].s = f"{scope}/".encode() + node.attr["shared_name"].s
    return result


def shared_renames_nodes_too(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    for node in result.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/".encode() + node.attr["shared_name"].s
            node.name = f"{scope}/{node.name}"
    return result


def shared_returns_graph_def(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    return _rewrite(result, scope).graph_def


def shared_aliased_copy(meta_graph_def, scope):
    result = V1.MetaGraphDef()
    result.CopyFrom(meta_graph_def)
    _rewrite(meta_graph_def, scope)
    return meta_graph_def


def shared_suffix(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    return _rewrite(result, scope, new_name=lambda s, old: old + f"/{s}".encode())


def shared_only_first(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    for node in result.graph_def.node:
        if node.op == "VarHandleOp":
            node.attr["shared_name"].s = f"{scope}/".encode() + node.attr["shared_name"].s
            break
    return result


def shared_double_scope(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    return _rewrite(result, scope, new_name=lambda s, old: f"{s}/{s}/".encode() + old)


# ----- 03.3 right


def shared_deepcopy(meta_graph_def, scope):
    result = copy.deepcopy(meta_graph_def)
    for node in result.graph_def.node:
        if node.op == "VarHandleOp":
            old = node.attr["shared_name"].s.decode()
            node.attr["shared_name"].s = f"{scope}/{old}".encode()
    return result


def shared_from_string(meta_graph_def, scope):
    result = type(meta_graph_def).FromString(meta_graph_def.SerializeToString())
    prefix = scope.encode() + b"/"
    for node in filter(lambda n: n.op == "VarHandleOp", result.graph_def.node):
        node.attr["shared_name"].s = prefix + node.attr["shared_name"].s
    return result


def shared_copy_from(meta_graph_def, scope):
    result = V1.MetaGraphDef()
    result.CopyFrom(meta_graph_def)
    for node in result.graph_def.node:
        if node.op != "VarHandleOp":
            continue
        attr = node.attr["shared_name"]
        attr.s = b"/".join([scope.encode("utf-8"), attr.s])
    return result


@pytest.mark.parametrize("answer", cases([
    shared_in_place, shared_no_slash, shared_underscore, shared_every_node_with_attr, shared_renames_nodes_too,
    shared_returns_graph_def, shared_aliased_copy, shared_suffix, shared_only_first, shared_double_scope,
], HOLES))
def test_03_3_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex03.check_scope_shared_names, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([shared_deepcopy, shared_from_string, shared_copy_from], HOLES))
def test_03_3_prompt_only_right_answers_pass(answer):
    passes(ex03.check_scope_shared_names, answer)


# ===========================================================================
# 03.2 and 03.4, written from the prompt alone (attack0203). The answers below were written from
# the prompts before ex03.py was read; those marked "after reading" were added afterwards.

from tests.attack_harness import accepted, rejected  # noqa: E402

# ----- 03.2
# ----- 03.2 wrong
def ens_wrong_section3_map(build_net, ckpt_paths, x, ckpt_scope):
    """Section 3's map {'/': 'member_k/'}, ignoring ckpt_scope."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {"/": f"member_{k}/"})
    return outputs


def ens_wrong_count_from_zero(build_net, ckpt_paths, x, ckpt_scope):
    """Scopes member_0, member_1, ... (not counting from 1)."""
    outputs = []
    for k, path in enumerate(ckpt_paths):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def ens_wrong_first_ckpt_only(build_net, ckpt_paths, x, ckpt_scope):
    """Every member from the first checkpoint."""
    outputs = []
    for k in range(1, len(ckpt_paths) + 1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(ckpt_paths[0], {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def ens_wrong_name_scope(build_net, ckpt_paths, x, ckpt_scope):
    """tf.name_scope instead of variable_scope: get_variable ignores it."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with tf.name_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def ens_wrong_reversed_map(build_net, ckpt_paths, x, ckpt_scope):
    """The map the wrong way round {member_k/: ckpt_scope/}."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"member_{k}/": f"{ckpt_scope}/"})
    return outputs


def ens_wrong_last_output_only(build_net, ckpt_paths, x, ckpt_scope):
    """Returns only the last member's output, in a list."""
    output = None
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            output = build_net(x)
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return [output]


def ens_wrong_shared_auto_reuse(build_net, ckpt_paths, x, ckpt_scope):
    """One scope with AUTO_REUSE: all members share one set of variables."""
    outputs = []
    for path in ckpt_paths:
        with V1.variable_scope("member", reuse=V1.AUTO_REUSE):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": "member/"})
    return outputs


def ens_wrong_nested_in_ckpt_scope(build_net, ckpt_paths, x, ckpt_scope):
    """Builds under ckpt_scope/member_k and maps the whole checkpoint there."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(ckpt_scope), V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {"/": f"{ckpt_scope}/member_{k}/"})
    return outputs


def ens_wrong_hardcoded_tower(build_net, ckpt_paths, x, ckpt_scope):
    """Hard-codes the prompt's example scope 'tower'."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {"tower/": f"member_{k}/"})
    return outputs


def ens_wrong_no_slashes(build_net, ckpt_paths, x, ckpt_scope):
    """Scope names without the trailing slash."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {ckpt_scope: f"member_{k}"})
    return outputs


def ens_wrong_init_before_build(build_net, ckpt_paths, x, ckpt_scope):
    """Calls init_from_checkpoint before the variables exist."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    return outputs


def ens_wrong_one_ckpt_per_all(build_net, ckpt_paths, x, ckpt_scope):
    """Builds all members, then maps every checkpoint into every member (last wins)."""
    outputs = []
    for k in range(1, len(ckpt_paths) + 1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    for path in ckpt_paths:
        for k in range(1, len(ckpt_paths) + 1):
            V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
    return outputs


def ens_wrong_skips_trainable_only(build_net, ckpt_paths, x, ckpt_scope):
    """Maps only the trainable variables, one by one (forgets non-trainable state)."""
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        prefix = f"member_{k}/"
        mapping = {f"{ckpt_scope}/{v.op.name[len(prefix):]}": v
                   for v in V1.trainable_variables(prefix)}
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


# ----- 03.2 right
def ens_right_scope_map(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, {ckpt_scope + "/": f"member_{k}/"})
    return outputs


def ens_right_variable_map(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}") as scope:
            outputs.append(build_net(x))
        prefix = scope.name + "/"
        mapping = {f"{ckpt_scope}/{v.op.name[len(prefix):]}": v
                   for v in V1.global_variables(prefix)}
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


def ens_right_build_then_map_by_keys(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k in range(len(ckpt_paths)):
        with V1.variable_scope("member_%d" % (k + 1)):
            outputs.append(build_net(x))
    for k, path in enumerate(ckpt_paths, start=1):
        mapping = {}
        for key, _ in tf.train.list_variables(path):
            if key.startswith(ckpt_scope + "/"):
                mapping[key] = f"member_{k}/" + key[len(ckpt_scope) + 1:]
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


@pytest.mark.parametrize("answer, hint", [
    (ens_wrong_section3_map, "but its variables are under ckpt_scope"),
    (ens_wrong_count_from_zero, "number the members from 1"),
    (ens_wrong_first_ckpt_only, "member_2 holds w, b = (1.0, 0.5), but its checkpoint (run_2)"),
    (ens_wrong_name_scope, "tf.name_scope does not prefix get_variable names"),
    (ens_wrong_reversed_map, "goes the wrong way"),
    (ens_wrong_last_output_only, "return a list with one output tensor per checkpoint"),
    (ens_wrong_shared_auto_reuse, "found ['member/b', 'member/moving_mean', 'member/w']"),
    (ens_wrong_nested_in_ckpt_scope, "but its variables are under ckpt_scope"),
    (ens_wrong_no_slashes, "Should be 'scope/': 'other_scope/'"),
    (ens_wrong_init_before_build, "ran before the variables of 'member_1/' existed"),
    (ens_wrong_one_ckpt_per_all, "member_1 holds w, b = (11.0, 5.5)"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_03_2_prompt_only_wrong_answers_get_their_hints(answer, hint):
    assert hint in rejected(ex03.check_build_ensemble, answer)


@pytest.mark.parametrize("answer, hint", [
    (ens_wrong_hardcoded_tower, "'tower' was only an example"),
    (ens_wrong_skips_trainable_only, "non-trainable variable moving_mean kept its initial value"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_03_2_prompt_only_former_holes_get_their_hints(answer, hint):
    assert hint in rejected(ex03.check_build_ensemble, answer)


@pytest.mark.parametrize("answer", cases([
    ens_right_scope_map, ens_right_variable_map, ens_right_build_then_map_by_keys,
], HOLES))
def test_03_2_prompt_only_right_answers_pass(answer):
    accepted(ex03.check_build_ensemble, answer)


# ----- 03.4
# ----- 03.4 wrong
def fwd_wrong_relu_after_last(kernels, biases, x):
    h = tf.convert_to_tensor(x)
    h = tf.einsum("bi,mio->mbo", h, kernels[0]) + tf.expand_dims(biases[0], 1)
    h = tf.nn.relu(h)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.nn.relu(tf.einsum("mbi,mio->mbo", h, kernel) + tf.expand_dims(bias, 1))
    return h


def fwd_wrong_no_relu(kernels, biases, x):
    h = tf.einsum("bi,mio->mbo", x, kernels[0]) + tf.expand_dims(biases[0], 1)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,mio->mbo", h, kernel) + tf.expand_dims(bias, 1)
    return h


def fwd_wrong_python_loop(kernels, biases, x):
    members = kernels[0].shape[0]
    outputs = []
    for m in range(members):
        h = tf.convert_to_tensor(x)
        for i, (kernel, bias) in enumerate(zip(kernels, biases)):
            h = tf.matmul(h, kernel[m]) + bias[m]
            if i < len(kernels) - 1:
                h = tf.nn.relu(h)
        outputs.append(h)
    return tf.stack(outputs)


def fwd_wrong_bias_no_expand(kernels, biases, x):
    """Adds [members, out] to [members, batch, out] without a batch axis."""
    h = tf.einsum("bi,mio->mbo", x, kernels[0]) + biases[0]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,mio->mbo", tf.nn.relu(h), kernel) + bias
    return h


def fwd_wrong_batch_first(kernels, biases, x):
    """Returns [batch, members, out]."""
    h = tf.einsum("bi,mio->bmo", x, kernels[0]) + biases[0][None]
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("bmi,mio->bmo", tf.nn.relu(h), kernel) + bias[None]
    return h


def fwd_wrong_squeeze(kernels, biases, x):
    h = tf.einsum("bi,mio->mbo", x, kernels[0]) + tf.expand_dims(biases[0], 1)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,mio->mbo", tf.nn.relu(h), kernel) + tf.expand_dims(bias, 1)
    return tf.squeeze(h)


def fwd_wrong_mean_over_members(kernels, biases, x):
    """Averages the members: [batch, out] (a partial answer)."""
    h = tf.einsum("bi,mio->mbo", x, kernels[0]) + tf.expand_dims(biases[0], 1)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,mio->mbo", tf.nn.relu(h), kernel) + tf.expand_dims(bias, 1)
    return tf.reduce_mean(h, axis=0)


def fwd_wrong_transposed_kernels(kernels, biases, x):
    """Reads kernels as [members, out, in]."""
    h = tf.einsum("bi,moi->mbo", x, kernels[0]) + tf.expand_dims(biases[0], 1)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,moi->mbo", tf.nn.relu(h), kernel) + tf.expand_dims(bias, 1)
    return h


def fwd_wrong_return_in_loop(kernels, biases, x):
    """Indentation slip: returns after the first layer."""
    h = tf.tile(tf.convert_to_tensor(x)[None], [kernels[0].shape[0], 1, 1])
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = tf.matmul(h, kernel) + bias[:, None, :]
        if i < len(kernels) - 1:
            h = tf.nn.relu(h)
        return h


def fwd_wrong_relu_before_bias(kernels, biases, x):
    h = tf.convert_to_tensor(x)[None]
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = tf.matmul(h, kernel)
        if i < len(kernels) - 1:
            h = tf.nn.relu(h)
        h = h + bias[:, None, :]
    return h


def fwd_wrong_two_layers_hardcoded(kernels, biases, x):
    """Hard-codes the notebook's two layers."""
    h = tf.nn.relu(tf.einsum("bi,mio->mbo", x, kernels[0]) + biases[0][:, None])
    return tf.einsum("mbi,mio->mbo", h, kernels[1]) + biases[1][:, None]


def fwd_wrong_map_fn(kernels, biases, x):
    """tf.map_fn over the members (a loop in disguise)."""
    def one(params):
        *ks, = params[0]
        *bs, = params[1]
        h = tf.convert_to_tensor(x)
        for i, (k, b) in enumerate(zip(ks, bs)):
            h = tf.matmul(h, k) + b
            if i < len(ks) - 1:
                h = tf.nn.relu(h)
        return h
    return tf.map_fn(one, (list(kernels), list(biases)),
                     fn_output_signature=tf.float32)


# ----- 03.4 right
def fwd_right_einsum(kernels, biases, x):
    h = tf.einsum("bi,mio->mbo", tf.convert_to_tensor(x, tf.float32), kernels[0])
    h = h + tf.expand_dims(biases[0], 1)
    for kernel, bias in zip(kernels[1:], biases[1:]):
        h = tf.einsum("mbi,mio->mbo", tf.nn.relu(h), kernel) + tf.expand_dims(bias, 1)
    return h


def fwd_right_tile_matmul(kernels, biases, x):
    members = tf.shape(kernels[0])[0]
    h = tf.tile(tf.convert_to_tensor(x)[None], tf.stack([members, 1, 1]))
    last = len(kernels) - 1
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = tf.linalg.matmul(h, kernel) + bias[:, None, :]
        if i != last:
            h = tf.nn.relu(h)
    return h


def fwd_right_broadcast_matmul(kernels, biases, x):
    h = tf.convert_to_tensor(x)[tf.newaxis]
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        if i:
            h = tf.nn.relu(h)
        h = h @ kernel + tf.expand_dims(bias, -2)
    return h


def fwd_right_vectorized_map(kernels, biases, x):
    def one(params):
        ks, bs = params
        h = tf.convert_to_tensor(x)
        for i, (k, b) in enumerate(zip(ks, bs)):
            h = tf.matmul(h, k) + b
            if i < len(ks) - 1:
                h = tf.nn.relu(h)
        return h
    return tf.vectorized_map(one, (list(kernels), list(biases)))


def fwd_wrong_comprehension_loop(kernels, biases, x):  # after reading
    """A loop over the members in list comprehensions."""
    h = [tf.convert_to_tensor(x)] * kernels[0].shape[0]
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = [a @ k + b for a, k, b in zip(h, kernel, bias)]
        if i < len(kernels) - 1:
            h = [tf.nn.relu(a) for a in h]
    return tf.stack(h)


def fwd_wrong_builtin_map_loop(kernels, biases, x):  # after reading
    """A loop over the members through builtin map(): no line of this file runs per member."""
    h = [tf.convert_to_tensor(x)] * kernels[0].shape[0]
    for i, (kernel, bias) in enumerate(zip(kernels, biases)):
        h = list(map(tf.add, map(tf.matmul, h, list(kernel)), list(bias)))
        if i < len(kernels) - 1:
            h = list(map(tf.nn.relu, h))
    return tf.stack(h)


_PYTHON_LOOP = "that is a Python loop over the members"
_SHAPE = "= [members, batch, outputs], got"


@pytest.mark.parametrize("answer, hint", [
    (fwd_wrong_relu_after_last, "do not apply relu after the last layer"),
    (fwd_wrong_no_relu, "apply relu between the layers"),
    (fwd_wrong_python_loop, _PYTHON_LOOP),
    (fwd_wrong_bias_no_expand, "Incompatible shapes: [3,6,5] vs. [3,5]"),
    (fwd_wrong_batch_first, "got (6, 3, 2)"),
    (fwd_wrong_mean_over_members, "got (6, 2)"),
    (fwd_wrong_transposed_kernels, "Expected dimension 3 at axis 2"),
    (fwd_wrong_return_in_loop, _SHAPE),
    (fwd_wrong_relu_before_bias, "the outputs differ from running each member on its own"),
    (fwd_wrong_two_layers_hardcoded, _SHAPE),
    (fwd_wrong_comprehension_loop, _PYTHON_LOOP),
], ids=lambda value: getattr(value, "__name__", ""))
def test_03_4_prompt_only_wrong_answers_get_their_hints(answer, hint):
    assert hint in rejected(ex03.check_ensemble_forward, answer)


@pytest.mark.parametrize("answer, hint", [
    (fwd_wrong_squeeze, "do not squeeze the result"),
    (fwd_wrong_map_fn, "loops over the members inside TensorFlow"),
    (fwd_wrong_builtin_map_loop, "TensorFlow operations for 3 members"),
], ids=lambda value: getattr(value, "__name__", ""))
def test_03_4_prompt_only_former_holes_get_their_hints(answer, hint):
    assert hint in rejected(ex03.check_ensemble_forward, answer)


@pytest.mark.parametrize("answer", cases([
    fwd_right_einsum, fwd_right_tile_matmul, fwd_right_broadcast_matmul, fwd_right_vectorized_map,
], HOLES))
def test_03_4_prompt_only_right_answers_pass(answer):
    accepted(ex03.check_ensemble_forward, answer)


# ===========================================================================
# Hints in steps: each test starts from the first step (helpers.checks.Hint)

from helpers.checks import forget_hints  # noqa: E402
from tests.attack_harness import accepted, rejected, stepped  # noqa: E402


@pytest.fixture(autouse=True)
def _first_hints():
    forget_hints()


# ----- 03.1 built from TensorFlow ops (issue 33: a correct one was rejected), written from the prompt alone


def _tf_counts(probabilities):
    p = tf.constant(probabilities)
    labels = tf.argmax(p, axis=-1)  # [members, batch]
    return p, tf.reduce_sum(tf.one_hot(labels, p.shape[-1]), axis=0)  # [batch, classes]


def vote_tf_soft(probabilities):
    return tf.argmax(tf.reduce_mean(tf.constant(probabilities), axis=0), axis=-1).numpy()


def vote_tf_counts_only(probabilities):
    return tf.argmax(_tf_counts(probabilities)[1], axis=-1).numpy()


def vote_tf_tie_by_max(probabilities):
    p, counts = _tf_counts(probabilities)
    top = counts == tf.reduce_max(counts, axis=1, keepdims=True)
    return tf.argmax(tf.where(top, tf.reduce_max(p, axis=0), -1.0), axis=1).numpy()


def vote_tf_float_labels(probabilities):
    p, counts = _tf_counts(probabilities)
    return tf.cast(tf.argmax(counts + tf.reduce_mean(p, axis=0), axis=1), tf.float32).numpy()


def vote_tf_keepdims(probabilities):
    p, counts = _tf_counts(probabilities)
    return tf.argmax(counts + tf.reduce_mean(p, axis=0), axis=1)[:, None].numpy()


def vote_tf_over_batch(probabilities):
    p = tf.constant(probabilities)
    counts = tf.reduce_sum(tf.one_hot(tf.argmax(p, axis=-1), p.shape[-1]), axis=1)  # summed over the batch
    return tf.argmax(counts, axis=-1).numpy()


def vote_tf_members_axis(probabilities):
    p = tf.constant(probabilities)
    return tf.argmax(tf.reduce_max(p, axis=-1), axis=0).numpy() * 0 + tf.argmax(p[0], axis=-1).numpy()


def vote_tf_tie_by_sum_of_winners(probabilities):
    p = tf.constant(probabilities)
    winners = tf.one_hot(tf.argmax(p, axis=-1), p.shape[-1])  # mean only over the members that voted for it
    confidence = tf.reduce_sum(winners * p, axis=0)
    counts = tf.reduce_sum(winners, axis=0)
    top = counts == tf.reduce_max(counts, axis=1, keepdims=True)
    return tf.argmax(tf.where(top, confidence, -1.0), axis=1).numpy()


@pytest.mark.parametrize("answer", [vote_tf_soft, vote_tf_counts_only, vote_tf_tie_by_max, vote_tf_float_labels,
                                    vote_tf_keepdims, vote_tf_over_batch, vote_tf_members_axis,
                                    vote_tf_tie_by_sum_of_winners], ids=lambda f: f.__name__)
def test_03_1_wrong_answers_built_from_tensorflow_ops_are_rejected(answer):
    rejected(ex03.check_vote, answer)


def vote_tf_eager(probabilities):
    p, counts = _tf_counts(probabilities)
    top = counts == tf.reduce_max(counts, axis=1, keepdims=True)
    return tf.argmax(tf.where(top, tf.reduce_mean(p, axis=0), -1.0), axis=1).numpy()


def vote_tf_count_plus_mean(probabilities):
    # A count difference is at least 1; a mean difference is below 1: the sum ranks by votes, then mean.
    p, counts = _tf_counts(probabilities)
    return tf.argmax(counts + tf.reduce_mean(p, axis=0), axis=1, output_type=tf.int32)


def vote_tf_graph_mode(probabilities):
    with tf.Graph().as_default():
        given = V1.placeholder(tf.float32, [None, None, None])
        labels = tf.argmax(given, axis=-1)
        counts = tf.reduce_sum(tf.one_hot(labels, tf.shape(given)[-1]), axis=0)
        top = tf.equal(counts, tf.reduce_max(counts, axis=1, keepdims=True))
        mean = tf.reduce_mean(given, axis=0)
        vote = tf.argmax(tf.where(top, mean, -tf.ones_like(mean)), axis=1)
        with V1.Session() as sess:
            return sess.run(vote, {given: probabilities})


@pytest.mark.parametrize("answer", [vote_tf_eager, vote_tf_count_plus_mean, vote_tf_graph_mode],
                         ids=lambda f: f.__name__)
def test_03_1_right_answers_built_from_tensorflow_ops_pass(answer):
    accepted(ex03.check_vote, answer)


# ----- 03.2 hints in steps (issue 34), answers written from the prompt alone


def _members(build_net, ckpt_paths, x, mapping_of, start=1, scope=None):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=start):
        with (scope or V1.variable_scope)(f"member_{k}"):
            outputs.append(build_net(x))
        V1.train.init_from_checkpoint(path, mapping_of(k))
    return outputs


def ens_reversed_map(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, ckpt_paths, x, lambda k: {f"member_{k}/": f"{ckpt_scope}/"})


def ens_tower_hard_coded(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, ckpt_paths, x, lambda k: {"tower/": f"member_{k}/"})


def ens_no_slashes(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, ckpt_paths, x, lambda k: {ckpt_scope: f"member_{k}"})


def ens_from_zero(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, ckpt_paths, x, lambda k: {f"{ckpt_scope}/": f"member_{k}/"}, start=0)


def ens_name_scope(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, ckpt_paths, x, lambda k: {f"{ckpt_scope}/": f"member_{k}/"}, scope=tf.name_scope)


def ens_init_first(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/": f"member_{k}/"})
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    return outputs


def ens_trainable_only(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        mapping = {f"{ckpt_scope}/{v.op.name.split('/', 1)[1]}": v for v in V1.trainable_variables(f"member_{k}/")}
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


def ens_first_checkpoint_for_all(build_net, ckpt_paths, x, ckpt_scope):
    return _members(build_net, [ckpt_paths[0]] * len(ckpt_paths), x, lambda k: {f"{ckpt_scope}/": f"member_{k}/"})


def ens_restores_in_a_session(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
    return outputs  # "loads" them later with a Saver the check never runs


@pytest.mark.parametrize("answer", [ens_reversed_map, ens_tower_hard_coded, ens_no_slashes, ens_from_zero,
                                    ens_name_scope, ens_init_first, ens_trainable_only, ens_first_checkpoint_for_all,
                                    ens_restores_in_a_session], ids=lambda f: f.__name__)
def test_03_2_wrong_answers_get_a_hint(answer):
    rejected(ex03.check_build_ensemble, answer)


@pytest.mark.parametrize("answer, fix", [
    (ens_reversed_map, "the keys are the checkpoint's names"),
    (ens_tower_hard_coded, "map f'{ckpt_scope}/'"),
    (ens_first_checkpoint_for_all, "of checkpoint k into 'member_k/'"),
    (ens_restores_in_a_session, "init_from_checkpoint(path, {f'{ckpt_scope}/': f'member_{k}/'})"),
], ids=["direction", "scope", "member", "nothing"])
def test_03_2_the_first_hint_gives_the_idea_and_the_section_not_the_code(answer, fix):
    first, second = stepped(ex03.check_build_ensemble, answer)
    assert "section 3" in first and "f'member_{k}/'" not in first and fix not in first, first
    assert fix in second, second


def ens_per_variable(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}") as scope:
            outputs.append(build_net(x))
        mapping = {f"{ckpt_scope}/{v.op.name[len(scope.name) + 1:]}": v for v in V1.global_variables(scope.name + "/")}
        V1.train.init_from_checkpoint(path, mapping)
    return outputs


def ens_names_as_strings(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k, path in enumerate(ckpt_paths, start=1):
        with V1.variable_scope(f"member_{k}"):
            outputs.append(build_net(x))
        names = [v.op.name.split("/", 1)[1] for v in V1.global_variables(f"member_{k}/")]
        V1.train.init_from_checkpoint(path, {f"{ckpt_scope}/{n}": f"member_{k}/{n}" for n in names})
    return outputs


def ens_build_all_then_map(build_net, ckpt_paths, x, ckpt_scope):
    outputs = []
    for k in range(1, len(ckpt_paths) + 1):
        with V1.variable_scope("member_%d" % k):
            outputs.append(build_net(x))
    for k, path in zip(range(1, len(ckpt_paths) + 1), ckpt_paths):
        V1.train.init_from_checkpoint(path, {ckpt_scope + "/": "member_%d/" % k})
    return tuple(outputs)


@pytest.mark.parametrize("answer", [ens_per_variable, ens_names_as_strings, ens_build_all_then_map],
                         ids=lambda f: f.__name__)
def test_03_2_right_answers_written_otherwise_pass(answer):
    accepted(ex03.check_build_ensemble, answer)
