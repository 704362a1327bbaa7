"""Checks for the exercises of notebook 03 (many models at once).

The fixtures use names other than the notebook's (``trunk/``, not the prompt's
example ``tower/``; ``member_k``, ``copy_k``), eleven members where numbering
matters (so ``member_1`` and ``member_10`` both exist), several variables with
distinct non-zero values per member (a non-trainable ``moving_mean`` among
them), and, for the vectorized forward pass, a count of the learner's own
Python lines run and of the TensorFlow operations traced for 3 and for 7
members (no loop over the members, in Python or as a ``tf.map_fn`` While
loop), and a case with size-1 axes (a squeeze of the result shows).
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, require
from helpers.checks.toolkit import Case, calls_recorded, require_cases

V1 = tf.compat.v1


# ---------------------------------------------------------------- 03.1 majority vote


def _reference_vote(probabilities: np.ndarray) -> list[int]:
    members, batch, classes = probabilities.shape
    votes = probabilities.argmax(-1)
    winners = []
    for example in range(batch):
        counts = np.bincount(votes[:, example], minlength=classes)
        mean = probabilities[:, example].mean(0)
        tied = np.flatnonzero(counts == counts.max())
        best = mean[tied].max()
        winners.append(int(tied[mean[tied] == best][0]))
    return winners


@exercise_check("03.1")
def check_vote(vote) -> str:
    def ask(probabilities):
        probabilities = np.asarray(probabilities, np.float32)
        result = vote(probabilities.copy())
        if isinstance(result, tf.Tensor) and hasattr(result, "numpy"):  # built from TensorFlow ops: its values
            result = result.numpy()
        require(isinstance(result, np.ndarray),
                f"vote returned {type(result).__name__}, not a NumPy array: return a NumPy array of integer labels "
                "(`np.array(labels)`, or the result of NumPy's argmax).")
        require(np.issubdtype(result.dtype, np.integer),
                f"vote returned labels of dtype {result.dtype}: labels are class indices, return them as "
                "integers (argmax gives int64).")
        batch = probabilities.shape[1]
        require(
            result.shape == (batch,),
            f"for probabilities of shape {probabilities.shape} ([members, batch, classes]) expected one "
            f"label per example, shape ({batch},); got {result.shape}",
        )
        return result.astype(int).tolist()

    rng = np.random.default_rng(3)
    probabilities = rng.dirichlet(np.ones(4), size=(5, 9)).astype(np.float32)
    expected = _reference_vote(probabilities)
    require_cases(ask, [
        # two members vote 0 with little confidence, one votes 1 with full confidence
        Case([[[0.55, 0.45]], [[0.55, 0.45]], [[0.0, 1.0]]], [0],
             "with votes 0, 0, 1 the majority is 0; you returned 1, the class with the highest "
             "mean probability (soft voting). Count each member's most probable class instead"),
        # one vote each for 0 and 1: the tie goes to the higher mean probability, 1
        Case([[[0.6, 0.4, 0.0]], [[0.1, 0.9, 0.0]]], [1],
             "a tie (one vote for 0, one for 1) should go to the class with the higher mean probability, "
             "here 1 (mean 0.65 vs 0.35); counting alone picks the smallest label"),
        # class 2 has the highest mean probability but no vote: only the tied classes compete
        Case([[[0.4, 0.0, 0.35, 0.25]], [[0.0, 0.4, 0.35, 0.25]]], [0],
             "only the classes tied for the most votes compete in the tie-break: here 0 and 1 (one vote "
             "each, equal mean 0.2), so the smallest of them, 0; class 2 got no vote"),
        # a tie in votes AND in mean probability: the smallest label
        Case([[[0.3, 0.7]], [[0.7, 0.3]]], [0],
             "votes 1 and 0, mean probabilities equal (0.5 each): the smallest label, 0, should win"),
        Case(probabilities, expected, f"on 5 members x 9 examples x 4 classes expected {expected}"),
        Case(probabilities[:1], probabilities[0].argmax(-1).tolist(),
             "with a single member the vote is that member's most probable class"),
    ])
    return "majority vote over the members; ties by mean probability, then the smallest label"


# ---------------------------------------------------------------- 03.2 init_from_checkpoint

_MEMBERS = 11  # member_1 ... member_11: member_1 and member_10 start alike
_CKPT_SCOPE = "trunk"  # not the prompt's example 'tower': an answer must use ckpt_scope


def _build_affine(x: tf.Tensor) -> tf.Tensor:
    """y = x * w + b, with 'w' and 'b' starting at -100 and -1000."""
    w = V1.get_variable("w", initializer=-100.0)
    b = V1.get_variable("b", initializer=-1000.0)
    return x * w + b


def _build_normalized_affine(x: tf.Tensor) -> tf.Tensor:
    """y = (x - moving_mean) * w + b; 'moving_mean' is non-trainable state, as in BatchNorm."""
    mean = V1.get_variable("moving_mean", initializer=-10000.0, trainable=False)
    return _build_affine(x - mean)


def _member_values(k: int) -> tuple[float, float]:
    return float(k), 0.5 * k  # distinct and non-zero for every member and variable


def _member_mean(k: int) -> float:
    return 0.25 * k


def _save_scoped_members(folder: str) -> list[str]:
    """One checkpoint per member, every variable under the scope, as its training code saved it."""
    prefixes = []
    for k in range(1, _MEMBERS + 1):
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, name="x")
            with V1.variable_scope(_CKPT_SCOPE):
                _build_normalized_affine(x)
            saver = V1.train.Saver()
            with V1.Session() as sess:
                w, b = _member_values(k)
                found = {v.op.name: v for v in V1.global_variables()}
                sess.run([found[f"{_CKPT_SCOPE}/w"].assign(w), found[f"{_CKPT_SCOPE}/b"].assign(b),
                          found[f"{_CKPT_SCOPE}/moving_mean"].assign(_member_mean(k))])
                prefixes.append(saver.save(sess, os.path.join(folder, f"run_{k}")))
    return prefixes


def _check_assignment_map(assignment_map, ckpt_scope: str) -> None:
    """Hints for the scope maps init_from_checkpoint would take without a word, or refuse obscurely."""
    if not isinstance(assignment_map, dict):
        return
    existing = [v.op.name for v in V1.global_variables()]
    for key, value in assignment_map.items():
        if not (isinstance(key, str) and isinstance(value, str)):
            continue
        require(not key.startswith("member_"), Hint(
            f"your map {{{key!r}: {value!r}}} goes the wrong way: in an assignment map, which side names "
            "the checkpoint and which the graph? (section 3, \"Restoring by name mapping\")",
            "the keys are the checkpoint's names, the values the graph's: {f'{ckpt_scope}/': f'member_{k}/'}",
            kind="map direction"))
        require(key.startswith(ckpt_scope), Hint(
            f"your map reads {key!r} from the checkpoint, but its variables are under ckpt_scope "
            f"({ckpt_scope!r} here; 'tower' was only an example): see the keys section 3 (\"Restoring by name "
            "mapping\") lists with tf.train.list_variables.",
            "map f'{ckpt_scope}/' (the argument, with its '/') to f'member_{k}/'",
            kind="checkpoint scope"))
        target = value if value.endswith("/") else value + "/"
        found = value in existing or any(name.startswith(target) for name in existing)
        require(
            found or existing,
            f"init_from_checkpoint ran before the variables of {value!r} existed, so it had nothing to "
            "initialize: call build_net(x) under the member's scope first, then init_from_checkpoint",
        )
        require(
            found,
            f"no variable is under {target!r} (the graph has {sorted(existing)[:3]}): build each member "
            "under tf.compat.v1.variable_scope (tf.name_scope does not prefix get_variable names)",
        )


@exercise_check("03.2")
def check_build_ensemble(build_ensemble) -> str:
    with tempfile.TemporaryDirectory() as folder:
        prefixes = _save_scoped_members(folder)
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, name="x")
            # each map is checked as the answer hands it in, before init_from_checkpoint takes it
            with calls_recorded(V1.train, "init_from_checkpoint", lambda ckpt_dir_or_file, assignment_map:
                                _check_assignment_map(assignment_map, _CKPT_SCOPE)):
                outputs = build_ensemble(_build_normalized_affine, prefixes, x, _CKPT_SCOPE)
            require(
                isinstance(outputs, (list, tuple)) and len(outputs) == _MEMBERS,
                f"return a list with one output tensor per checkpoint ({_MEMBERS} here)",
            )
            names = sorted(v.op.name for v in V1.global_variables())
            expected_names = sorted(f"member_{k}/{n}" for k in range(1, _MEMBERS + 1)
                                    for n in ("w", "b", "moving_mean"))
            require(
                "member_0/w" not in names,
                "the scopes start at member_0: number the members from 1 (member_1, member_2, ...)",
            )
            require(
                names == expected_names,
                f"expected the variables of build_net (b, moving_mean, w) under member_1 ... "
                f"member_{_MEMBERS}; found {names[:3]}{' ...' if len(names) > 3 else ''}",
            )
            with V1.Session() as sess:
                sess.run(V1.global_variables_initializer())  # the only thing the check runs
                values = {v.op.name: float(sess.run(v)) for v in V1.global_variables()}
                answers = [float(a) for a in sess.run(list(outputs), {x: 10.0})]
    require(values["member_1/w"] != -100.0, Hint(
        "the members still hold their initial values after the initializer ran: nothing told the "
        "initializers to read a checkpoint (section 3, \"Restoring by name mapping\", shows the call that "
        "does).",
        "call tf.compat.v1.train.init_from_checkpoint(path, {f'{ckpt_scope}/': f'member_{k}/'}) for each "
        "member, after building it",
        kind="not initialized from checkpoints"))
    for k in range(1, _MEMBERS + 1):
        w, b = _member_values(k)
        got = (values[f"member_{k}/w"], values[f"member_{k}/b"])
        require(got == (w, b), Hint(
            f"member_{k} holds w, b = {got}, but its checkpoint ({os.path.basename(prefixes[k - 1])}) "
            f"holds {(w, b)}: which checkpoint feeds which scope, and does 'member_1' also match "
            "'member_10'? (section 3, \"Restoring by name mapping\")",
            "map ckpt_scope + '/' of checkpoint k into 'member_k/', with both trailing slashes (counting k "
            "from 1)",
            kind="wrong member"))
    for k in range(1, _MEMBERS + 1):
        require(
            values[f"member_{k}/moving_mean"] == _member_mean(k),
            f"member_{k}'s non-trainable variable moving_mean kept its initial value: load every "
            "variable of the scope (map the scope, or global_variables()), not only the trainable ones",
        )
    expected = [(10.0 - _member_mean(k)) * k + 0.5 * k for k in range(1, _MEMBERS + 1)]
    require(np.allclose(answers, expected),
            f"for x = 10 the outputs should be {expected[:3]} ..., got {answers[:3]} ...")
    return f"{_MEMBERS} members, each from its own checkpoint, non-trainable variables too"


# ---------------------------------------------------------------- 03.3 shared names


_QUEUE = "feed_queue"


def _without_shared_name(node) -> bytes:
    """A node's bytes with a VarHandleOp's shared_name left out (nothing else may change)."""
    if node.op != "VarHandleOp":
        return node.SerializeToString(deterministic=True)
    bare = type(node)()
    bare.CopyFrom(node)
    if "shared_name" in bare.attr:
        del bare.attr["shared_name"]
    return bare.SerializeToString(deterministic=True)


def _save_two_variable_model(folder: str) -> tuple[str, list[str]]:
    """The checkpoints of y = x * w + b for three members, and the path of the .meta."""
    prefixes = []
    for k in (1, 2, 3):
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, name="x")
            tf.identity(_build_affine(x), name="y")
            # Another kind of node with a shared_name, which the exercise leaves as it is.
            V1.FIFOQueue(2, tf.float32, shared_name=_QUEUE, name=_QUEUE)
            saver = V1.train.Saver()
            with V1.Session() as sess:
                w, b = _member_values(k)
                sess.run([V1.global_variables("w")[0].assign(w), V1.global_variables("b")[0].assign(b)])
                prefixes.append(saver.save(sess, os.path.join(folder, f"copy_source_{k}")))
    return prefixes[0] + ".meta", prefixes


@exercise_check("03.3")
def check_scope_shared_names(scope_shared_names) -> str:
    scopes = ("copy_1", "copy_10", "copy_2")
    with tempfile.TemporaryDirectory() as folder:
        meta_path, prefixes = _save_two_variable_model(folder)
        original = V1.MetaGraphDef()
        with open(meta_path, "rb") as file:
            original.ParseFromString(file.read())
        untouched = original.SerializeToString()
        with tf.Graph().as_default() as graph:
            savers = []
            for scope in scopes:
                scoped = scope_shared_names(original, scope)
                require(
                    isinstance(scoped, V1.MetaGraphDef),
                    "scope_shared_names should return a MetaGraphDef (a modified copy of its argument), "
                    f"returned {type(scoped).__name__}",
                )
                require(
                    original.SerializeToString() == untouched,
                    "the MetaGraphDef you were given was changed: work on a copy "
                    "(new = tf.compat.v1.MetaGraphDef(); new.CopyFrom(meta_graph_def))",
                )
                originals = {_without_shared_name(node) for node in original.graph_def.node}
                changed = [node for node in scoped.graph_def.node if _without_shared_name(node) not in originals]
                require(all(node.op == "VarHandleOp" for node in changed),
                        f"{[n.name for n in changed if n.op != 'VarHandleOp'][:1]} is not a VarHandleOp, but you "
                        "changed it (its shared_name?): rewrite the shared_name of the VarHandleOp nodes only, "
                        "and leave every other node as it was.")
                require(not changed,
                        f"the node {changed[:1] and changed[0].name!r} differs from the original in more than its "
                        "shared_name: change only `node.attr['shared_name'].s`, not the node's name or "
                        "inputs (import_meta_graph's import_scope adds the scope to names).")
                savers.append(V1.train.import_meta_graph(scoped, import_scope=scope))
            shared = {op.name: op.get_attr("shared_name").decode()
                      for op in graph.get_operations() if op.type == "VarHandleOp"}
            with V1.Session() as sess:
                for saver, prefix in zip(savers, prefixes):
                    saver.restore(sess, prefix)
                answers = [float(a) for a in sess.run([f"{s}/y:0" for s in scopes], {f"{s}/x:0": 10.0 for s in scopes})]
    expected_shared = {f"{s}/{n}": f"{s}/{n}" for s in scopes for n in ("w", "b")}
    wrong = sorted(name for name in expected_shared if shared.get(name) != expected_shared[name])
    require(
        len(set(shared.values())) == len(shared),
        f"some variables still share a name: {sorted(shared.values())}. Equal shared names are one "
        "variable: give EVERY VarHandleOp node the shared_name f'{scope}/{old shared name}' "
        "(node.attr['shared_name'].s is bytes)",
    )
    require(
        not wrong,
        f"{wrong[0] if wrong else ''} has the shared_name {shared.get(wrong[0]) if wrong else ''!r}; "
        "the exercise asks for scope + '/' + the old shared name",
    )
    expected = [10.0 * k + 0.5 * k for k in (1, 2, 3)]
    require(answers == expected, f"expected {expected}, got {answers}")
    return "three imports (copy_1, copy_10, copy_2), six variables of their own: 10.5, 21.0, 31.5"


# ---------------------------------------------------------------- 03.4 vectorized forward pass


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


def _lines_run(function, *args):
    """``function(*args)`` and how many lines of the learner's own file ran meanwhile."""
    own_file = function.__code__.co_filename
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if frame.f_code.co_filename != own_file:
            return None
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = function(*args)
    finally:
        sys.settrace(previous)
    return result, count


def _inputs(members: int, seed: int, batch: int = 6, last: int = 2):
    rng = np.random.default_rng(seed)
    sizes = [3, 5, 4, last]
    kernels = [rng.normal(size=(members, i, o)).astype(np.float32) for i, o in zip(sizes, sizes[1:])]
    biases = [rng.normal(size=(members, o)).astype(np.float32) for o in sizes[1:]]
    x = rng.normal(size=(batch, sizes[0])).astype(np.float32)
    return kernels, biases, x


_LOOP_OPS = {"While", "StatelessWhile", "For"}


def _traced_ops(ensemble_forward, kernels, biases, x) -> list[str] | None:
    """The op types of ``ensemble_forward`` traced once as a graph, or None if it cannot be traced."""
    traced = tf.function(lambda: ensemble_forward(kernels, biases, x), autograph=False)
    try:
        graph = traced.get_concrete_function().graph
    except Exception:  # noqa: BLE001 - eager-only code: the line count still applies
        return None
    return [op.type for op in graph.get_operations()]


def _require_shape(result: np.ndarray, expected: np.ndarray) -> None:
    squeezed = tuple(n for n in expected.shape if n != 1)
    require(
        not (result.shape != expected.shape and result.shape == squeezed),
        f"with a size-1 axis the result should keep the shape {expected.shape} = [members, batch, "
        f"outputs]; yours is {result.shape}: do not squeeze the result",
    )
    require(
        result.shape == expected.shape,
        f"expected shape {expected.shape} = [members, batch, outputs], got {result.shape}; "
        "tf.einsum('bi,nio->nbo', x, kernel) multiplies one batch by every member's kernel",
    )


@exercise_check("03.4")
def check_ensemble_forward(ensemble_forward) -> str:
    runs, ops = {}, {}
    for members in (3, 7):
        kernels, biases, x = _inputs(members, seed=members)
        result, lines = _lines_run(ensemble_forward, kernels, biases, x)
        result = np.asarray(result)
        expected = _reference_forward(kernels, biases, x)
        _require_shape(result, expected)
        no_relu = np.broadcast_to(x, (members, *x.shape))
        for kernel, bias in zip(kernels, biases):
            no_relu = np.einsum("nbi,nio->nbo", no_relu, kernel) + bias[:, None]
        require(not np.allclose(result, no_relu, atol=1e-4), "apply relu between the layers (but not after the last one)")
        require(
            not np.allclose(result, np.maximum(expected, 0.0), atol=1e-4),
            "the outputs have no negative values: do not apply relu after the last layer",
        )
        require(np.allclose(result, expected, atol=1e-4),
                "the outputs differ from running each member on its own (three layers here: "
                "apply every kernel and bias in order)")
        runs[members] = lines
        ops[members] = _traced_ops(ensemble_forward, kernels, biases, x)
    require(
        runs[3] == runs[7],
        f"your code ran {runs[3]} of its lines for 3 members and {runs[7]} for 7: that is a Python "
        "loop over the members. Let one batched operation per layer handle all of them (tf.einsum, "
        "or tf.matmul, which broadcasts over the leading members axis)",
    )
    if ops[3] is not None and ops[7] is not None:
        require(
            not _LOOP_OPS & set(ops[7]),
            "your computation loops over the members inside TensorFlow (tf.map_fn or tf.while_loop run "
            "them one after another): use one batched operation per layer for all members (tf.einsum, "
            "or tf.matmul on [members, batch, in])",
        )
        require(
            len(ops[3]) == len(ops[7]),
            f"your code makes {len(ops[3])} TensorFlow operations for 3 members and {len(ops[7])} for 7: "
            "one per member is a loop over the members. Use one batched operation per layer for all of "
            "them (tf.einsum, or tf.matmul on [members, batch, in])",
        )
    # size-1 axes (one member, one example, one output): a squeeze of the result shows here
    kernels, biases, x = _inputs(1, seed=1, batch=1, last=1)
    result = np.asarray(ensemble_forward(kernels, biases, x))
    expected = _reference_forward(kernels, biases, x)
    _require_shape(result, expected)
    require(np.allclose(result, expected, atol=1e-4),
            "with one member, one example and one output the result differs from the member's own")
    return "every member's output, with no Python loop over the members (3 and 7 members, 3 layers)"
