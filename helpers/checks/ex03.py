"""Checks for the exercises of notebook 03 (many models at once)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import tensorflow as tf

from helpers.checks import exercise_check, require

tf1 = tf.compat.v1


def _build_adder(x: tf.Tensor) -> tf.Tensor:
    """The seed's network: y = x + w, with one variable 'w' (initial value -100)."""
    w = tf1.get_variable("w", initializer=-100.0)
    return x + w


def _save_adders(folder: str) -> list[str]:
    """Three checkpoints of _build_adder, saved without a scope, with w = 1, 2, 3."""
    prefixes = []
    for value in (1.0, 2.0, 3.0):
        with tf.Graph().as_default():
            x = tf1.placeholder(tf.float32, name="x")
            tf.identity(_build_adder(x), name="y")
            saver = tf1.train.Saver()
            with tf1.Session() as sess:
                sess.run(tf1.global_variables_initializer())
                sess.run(tf1.global_variables()[0].assign(value))
                prefixes.append(saver.save(sess, os.path.join(folder, f"adder_{int(value)}")))
    return prefixes


@exercise_check("03.1")
def check_build_ensemble(build_ensemble) -> str:
    with tempfile.TemporaryDirectory() as folder:
        prefixes = _save_adders(folder)
        with tf.Graph().as_default():
            x = tf1.placeholder(tf.float32, name="x")
            outputs = build_ensemble(_build_adder, prefixes, x)
            require(
                isinstance(outputs, (list, tuple)) and len(outputs) == 3,
                "return a list with one output tensor per checkpoint",
            )
            n_variables = len(tf1.global_variables())
            require(
                n_variables == 3,
                f"expected 3 variables (one 'w' per member, each in its own scope), found {n_variables}: "
                "call build_net inside tf.compat.v1.variable_scope(f'member_{k}')",
            )
            with tf1.Session() as sess:
                sess.run(tf1.global_variables_initializer())  # the only thing the check runs
                answers = [float(a) for a in sess.run(list(outputs), {x: 10.0})]
    require(
        answers != [-90.0] * 3,
        "the members still hold their initial values after the initializer ran: call "
        "tf.compat.v1.train.init_from_checkpoint(path, {'/': 'member_k/'}) for each member "
        "while building the graph (before the initializer runs)",
    )
    require(answers == [11.0, 12.0, 13.0], f"for x = 10 expected [11.0, 12.0, 13.0], got {answers}")
    return "each member is initialized from its own checkpoint: 11, 12, 13"


@exercise_check("03.2")
def check_scope_shared_names(scope_shared_names) -> str:
    with tempfile.TemporaryDirectory() as folder:
        prefixes = _save_adders(folder)
        original = tf1.MetaGraphDef()
        with open(prefixes[0] + ".meta", "rb") as file:
            original.ParseFromString(file.read())
        untouched = original.SerializeToString()
        with tf.Graph().as_default() as graph:
            savers = []
            for k in (1, 2, 3):
                scoped = scope_shared_names(original, f"copy_{k}")
                require(
                    isinstance(scoped, tf1.MetaGraphDef),
                    "scope_shared_names should return a MetaGraphDef (a modified copy of its argument)",
                )
                savers.append(tf1.train.import_meta_graph(scoped, import_scope=f"copy_{k}"))
            require(
                original.SerializeToString() == untouched,
                "the MetaGraphDef you were given was changed: work on a copy "
                "(new = tf.compat.v1.MetaGraphDef(); new.CopyFrom(meta_graph_def))",
            )
            shared = sorted(op.get_attr("shared_name").decode() for op in graph.get_operations() if op.type == "VarHandleOp")
            with tf1.Session() as sess:
                for saver, prefix in zip(savers, prefixes):
                    saver.restore(sess, prefix)
                answers = [float(a) for a in sess.run([f"copy_{k}/y:0" for k in (1, 2, 3)], {f"copy_{k}/x:0": 10.0 for k in (1, 2, 3)})]
    require(
        len(set(shared)) == 3,
        f"the copies' variables have shared names {shared}: equal names are one variable. "
        "Give each VarHandleOp node the shared_name f'{scope}/{old name}' "
        "(node.attr['shared_name'].s is bytes)",
    )
    require(answers == [11.0, 12.0, 13.0], f"expected [11.0, 12.0, 13.0], got {answers}")
    return "three imports, three variables: 11, 12, 13"


@exercise_check("03.3")
def check_vote(vote) -> str:
    def ask(probabilities):
        result = np.asarray(vote(np.asarray(probabilities, np.float32)))
        require(
            result.shape == (np.shape(probabilities)[1],),
            f"for probabilities of shape {np.shape(probabilities)} ([members, batch, classes]) expected "
            f"one label per example, shape ({np.shape(probabilities)[1]},); got {result.shape}",
        )
        return result.astype(int).tolist()

    # two members vote 0 with little confidence, one votes 1 with full confidence
    outvoted = [[[0.55, 0.45]], [[0.55, 0.45]], [[0.0, 1.0]]]
    require(
        ask(outvoted) == [0],
        "with votes 0, 0, 1 the majority is 0; you returned 1, the class with the highest "
        "mean probability (soft voting). Count each member's argmax instead",
    )
    # one vote each: the tie goes to the class with the higher mean probability, 1
    tie = [[[0.6, 0.4]], [[0.1, 0.9]]]
    require(
        ask(tie) == [1],
        "a tie (one vote for 0, one for 1) should go to the class with the higher mean "
        "probability, here 1 (mean 0.65 vs 0.35); np.argmax alone picks the smallest label",
    )
    rng = np.random.default_rng(3)
    probabilities = rng.dirichlet(np.ones(4), size=(5, 9))
    counts = np.stack([np.bincount(column, minlength=4) for column in probabilities.argmax(-1).T])
    mean = probabilities.mean(0)
    expected = [int(np.argmax(np.where(c == c.max(), m, -1.0))) for c, m in zip(counts, mean)]
    require(ask(probabilities) == expected, f"on 5 members x 9 examples x 4 classes expected {expected}")
    return "majority vote, ties broken by the mean probability"


def _reference_forward(kernels, biases, x):
    outputs = []
    for member in range(kernels[0].shape[0]):
        h = x
        for depth, (kernel, bias) in enumerate(zip(kernels, biases)):
            h = h @ kernel[member] + bias[member]
            if depth < len(kernels) - 1:
                h = np.maximum(h, 0.0)
        outputs.append(h)
    return np.stack(outputs)


@exercise_check("03.4")
def check_ensemble_forward(ensemble_forward) -> str:
    rng = np.random.default_rng(0)
    members, batch, sizes = 4, 6, [3, 5, 2]
    kernels = [rng.normal(size=(members, i, o)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    biases = [rng.normal(size=(members, o)).astype(np.float32) for o in sizes[1:]]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    result = np.asarray(ensemble_forward(kernels, biases, x))
    expected = _reference_forward(kernels, biases, x)
    require(
        result.shape == expected.shape,
        f"expected shape {expected.shape} = [members, batch, outputs], got {result.shape}; "
        "tf.einsum('bi,nio->nbo', x, kernel) multiplies one batch by every member's kernel",
    )
    no_relu = np.broadcast_to(x, (members, *x.shape))
    for kernel, bias in zip(kernels, biases):
        no_relu = np.einsum("nbi,nio->nbo", no_relu, kernel) + bias[:, None]
    require(not np.allclose(result, no_relu, atol=1e-4), "apply relu between the layers (but not after the last one)")
    require(
        not np.allclose(result, np.maximum(expected, 0.0), atol=1e-4) or np.allclose(expected, np.maximum(expected, 0)),
        "the outputs have no negative values: do not apply relu after the last layer",
    )
    require(np.allclose(result, expected, atol=1e-4), "the outputs differ from running each member on its own")
    return "every member's output in one batched computation per layer"
