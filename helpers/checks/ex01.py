"""Checks for notebook 01 (saving and restoring).

Each check builds its own graph and files in a fresh temporary folder, with names
other than the notebook's, several variables with distinct non-zero values
(biases and non-trainable state too) and look-alike scopes, then calls the answer.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

from helpers.checks import Hint, exercise_check, require
from helpers.checks.toolkit import Mistake, calls_recorded, distinct_values, folder_files, refuse_mistakes

V1 = tf.compat.v1


def _make_variables(specs: dict[str, tuple[tuple[int, ...], bool]]) -> dict[str, np.ndarray]:
    """Create ``{name: (shape, trainable)}`` in the default graph; return their values by name."""
    values = {}
    for index, (name, (shape, trainable)) in enumerate(specs.items()):
        values[name] = distinct_values(index + 1, shape)
        V1.get_variable(name, initializer=values[name], trainable=trainable)
    return values


def _move_away(sess: V1.Session, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Assign each named variable a value other than its initial one; return the new values by name.

    A checkpoint written from a fresh session, or after re-assigning ``initial_value``, then shows.
    """
    current = {name: (value * -1.5 - 0.25).astype(value.dtype) for name, value in values.items()}
    by_name = {v.op.name: v for v in sess.graph.get_collection(V1.GraphKeys.GLOBAL_VARIABLES)}
    sess.run([by_name[name].assign(value) for name, value in current.items()])
    return current


def _keys(path: str) -> set[str]:
    return {name for name, _ in tf.train.list_variables(path)}


def _returned_checkpoint(path: object, function: str) -> str:
    require(path is not None, f"{function} returned None: return the path that `saver.save(...)` gives back.")
    require(isinstance(path, (str, os.PathLike)), f"{function} should return a path, got {type(path).__name__}.")
    path = os.fspath(path)
    require(os.path.isfile(path + ".index"),
            f"no checkpoint at {os.path.basename(path)!r}: return the path `saver.save` returned.")
    return path


def _graphs_created() -> contextlib.AbstractContextManager[list]:
    """Count the ``tf.Graph`` objects (``tf.function`` graphs too) made while the answer runs."""
    return calls_recorded(tf.Graph, "__init__", lambda graph, *args, **kwargs: type(graph).__name__)


# An error TensorFlow raises when a session runs what another graph holds.
_OTHER_GRAPH_ERROR = re.compile(r"not an element of this graph|does not exist in the graph|from a different graph"
                                r"|must be from the same graph|No variables to save")


def _beside_another_graph(call: Callable[[], object], hint: Hint) -> object:
    """``call()`` while another graph, with variables of its own, is the default (a notebook's leftover graph).

    An answer that builds its Saver or reads its variables from the default graph instead of the
    session's own (``sess.graph``) adds ops to that graph, or fails on it: it gets ``hint``.
    """
    leftover = tf.Graph()
    with leftover.as_default():
        V1.get_variable("leftover/kernel", initializer=np.full((2, 2), 7.0, np.float32))
        V1.train.get_or_create_global_step()
    ops_before = len(leftover.get_operations())
    try:
        with leftover.as_default():
            result = call()
    except Exception as error:  # noqa: BLE001 - only the other graph's errors become the hint
        if len(leftover.get_operations()) > ops_before or _OTHER_GRAPH_ERROR.search(str(error)):
            require(False, hint)
        raise
    require(len(leftover.get_operations()) == ops_before, hint)
    return result


def _saved_in_own_graph(save: Callable[[V1.Session], object], specs: dict[str, tuple[tuple[int, ...], bool]],
                        hint: Hint, global_step: bool = False) -> tuple[str, dict[str, np.ndarray]]:
    """``save(sess)``'s path, and the variables' values, for a session of a graph of its own (``specs``'
    variables, a global step if asked, moved from their initial values) while another graph is the default.
    """
    graph = tf.Graph()
    with graph.as_default():
        values = _make_variables(specs)
        if global_step:
            V1.train.get_or_create_global_step()
        init = V1.global_variables_initializer()
    with V1.Session(graph=graph) as sess:
        sess.run(init)
        with graph.as_default():
            values = _move_away(sess, values)
        return os.fspath(_beside_another_graph(lambda: save(sess), hint)), values


# --------------------------------------------------------------------------- 01.1


def _save_plain(prefix: str, specs: dict[str, tuple[int, ...]]) -> str:
    with tf.Graph().as_default():
        _make_variables({name: (shape, True) for name, shape in specs.items()})
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver().save(sess, prefix)


def _save_trained(prefix: str) -> tuple[str, int]:
    """A checkpoint with int32, int64 (global_step), float64 and float32 tensors and Adam's slots."""
    with tf.Graph().as_default():
        kernel = V1.get_variable("dense/kernel", initializer=distinct_values(1, (3, 2)))
        bias = V1.get_variable("dense/bias", initializer=distinct_values(2, (2,)))
        V1.get_variable("stats/counts", initializer=np.arange(1, 6, dtype=np.int32), trainable=False)
        V1.get_variable("stats/mean", initializer=np.linspace(0.5, 2.0, 4), trainable=False)  # float64
        step = V1.train.get_or_create_global_step()
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.ones([1, 3]), kernel) + bias))
        train = V1.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        expected = sum(v.shape.num_elements() for v in V1.global_variables())
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(train)
            return V1.train.Saver().save(sess, prefix, write_meta_graph=False), expected


@exercise_check("01.1")
def check_count_parameters(count_parameters: Callable[[str | os.PathLike], int]) -> str:
    """``count_parameters(prefix)`` counts the numbers stored in a checkpoint, without building a graph."""
    cases = [  # (variables, as a Path?)
        ({"encoder/kernel": (3, 4), "encoder/bias": (4,), "head/kernel": (4, 2), "head/bias": (2,),
          "step": ()}, False),
        ({"conv/filters": (2, 2, 3, 5), "conv/bias": (5,)}, True),
    ]
    with tempfile.TemporaryDirectory() as folder:
        for number, (specs, as_path) in enumerate(cases):
            prefix = _save_plain(os.path.join(folder, f"run{number}", "weights"), specs)
            expected = sum(int(np.prod(shape, dtype=int)) for shape in specs.values())
            given = Path(prefix) if as_path else prefix
            default_graph = V1.get_default_graph()
            ops_before = len(default_graph.get_operations())
            with _graphs_created() as graphs:
                count = count_parameters(given)
            if len(default_graph.get_operations()) > ops_before:
                graphs.append("ops added to the default graph")
            kind = "a pathlib.Path" if as_path else "a str"
            require(count is not None, "count_parameters returned None: return the total as an int.")
            require(not graphs, f"count_parameters built a graph ({', '.join(graphs)}): read the checkpoint "
                                "with `tf.train.list_variables`; no graph is needed.")
            require(count != len(specs), f"{count} is the number of variables: count the numbers inside each "
                                         "one (the product of its shape).")
            shapes = " + ".join("x".join(map(str, s)) or "1 (a scalar)" for s in specs.values())
            require(isinstance(count, (int, np.integer)) and count == expected,
                    f"with the prefix given as {kind}, the checkpoint stores {expected} numbers ({shapes}); "
                    f"you returned {count!r}. A scalar (shape ()) holds one number.")
        prefix, expected = _save_trained(os.path.join(folder, "trained", "model"))
        count = count_parameters(prefix)
        require(isinstance(count, (int, np.integer)) and count == expected,
                f"a trained model's checkpoint (int and float64 tensors, a global step, Adam's slots) stores "
                f"{expected} numbers; you returned {count!r}. Count every key, whatever its dtype or name, "
                "and count values (the product of the shape), not bytes.")
    return ("three checkpoints counted (a str and a pathlib.Path prefix; int, float64 and float32 tensors, "
            "a global step and optimizer slots), no graph built")


# --------------------------------------------------------------------------- 01.2


@exercise_check("01.2")
def check_save_trainable_only(save_trainable_only: Callable[[V1.Session, str], str]) -> str:
    """``save_trainable_only(sess, prefix)``: the trainable variables, nothing else, and no ``.meta``."""
    specs = {"encoder/kernel": ((3, 2), True), "encoder/bias": ((2,), True),
             "encoder/moving_mean": ((2,), False), "decoder/kernel": ((2, 3), True),
             "decoder/bias": ((3,), True)}
    with tf.Graph().as_default(), tempfile.TemporaryDirectory() as folder:
        values = _make_variables(specs)
        V1.train.get_or_create_global_step()
        Path(folder, "notes.txt").write_text("a file of the learner's that must stay as it is")
        before = folder_files(folder, recursive=False)
        prefix = os.path.join(folder, "weights")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            values = _move_away(sess, values)
            path = _returned_checkpoint(save_trainable_only(sess, prefix), "save_trainable_only")
        require(os.path.normpath(path) == os.path.normpath(prefix),
                f"the checkpoint is at {os.path.basename(path)!r}, not at the prefix given "
                f"({os.path.basename(prefix)!r}): save at `prefix` itself, with no `global_step=` or "
                "extension added.")
        keys = _keys(path)
        trainable = {name for name, (_, is_trainable) in specs.items() if is_trainable}
        require(not any(key.endswith(":0") for key in keys),
                f"the keys end in ':0' ({sorted(keys)}): a dict of `variable.name` keys writes them; "
                "a list of variables (or `variable.op.name` keys) does not.")
        require("global_step" not in keys and "encoder/moving_mean" not in keys, Hint(
                "the checkpoint also holds non-trainable variables (global_step, encoder/moving_mean): "
                "a Saver saves every variable unless told which (section 5, \"Saving a subset\").",
                "give the Saver `var_list=V1.trainable_variables()`.",
                kind="non-trainable saved"))
        require(keys == trainable,
                f"expected the trainable variables {sorted(trainable)}, found {sorted(keys)}: save every "
                "trainable variable of the graph, whatever its name.")
        require(not os.path.exists(path + ".meta"), Hint(
                "a '.meta' file (the graph) was written too: the exercise asks for values only; section 2 "
                "(\"What `Saver` wrote\") says which argument of save() leaves it out.",
                "`saver.save(..., write_meta_graph=False)` saves values only.",
                kind="meta written"))
        reader = tf.train.load_checkpoint(path)
        for name in sorted(trainable):
            require(np.array_equal(reader.get_tensor(name), values[name]),
                    f"{name!r} does not hold the session's current value: save from the session you are "
                    "given, as it is, without initializing or assigning anything first.")
        require(all(folder_files(folder, recursive=False).get(name) == digest for name, digest in before.items()),
                "a file that was in the folder before was changed or deleted: write only the checkpoint.")
    # The session's own graph while another is the default: "every trainable variable of its graph".
    with tempfile.TemporaryDirectory() as folder:
        path, values = _saved_in_own_graph(lambda sess: save_trainable_only(sess, os.path.join(folder, "weights")),
                                           specs, _SESSION_GRAPH_01_2, global_step=True)
        reader = tf.train.load_checkpoint(path)
        require(_keys(path) == trainable and all(np.array_equal(reader.get_tensor(name), values[name])
                                                 for name in trainable), _SESSION_GRAPH_01_2)
    return ("the session's current values of the 4 trainable variables of its own graph saved at the prefix "
            "(not global_step, not the moving mean), no .meta, no earlier file touched")


_SESSION_GRAPH_01_2 = Hint(
    "your Saver read the default graph, not the session's: here another graph is the default. "
    "`V1.trainable_variables()` and a Saver use the default graph (section 5, \"Saving a subset\", builds "
    "them inside the graph's `with`).",
    "build the Saver in the session's graph: `with sess.graph.as_default(): saver = "
    "V1.train.Saver(var_list=V1.trainable_variables())`, then save with it.",
    kind="session graph")


# --------------------------------------------------------------------------- 01.3


@exercise_check("01.3")
def check_save_without_scope(save_without_scope: Callable[[V1.Session, str, str], str]) -> str:
    """``save_without_scope(sess, scope, prefix)``: scope/'s variables under keys without the scope."""
    inner = {"dense/kernel": ((2, 2), True), "dense/bias": ((2,), True), "norm/moving_mean": ((2,), False)}
    all_scopes = ("model_1", "model_10", "model_1_old", "ensemble/model_1", "ensemble/model_10")
    specs = {f"{scope}/{name}": spec for scope in all_scopes for name, spec in inner.items()}
    with tempfile.TemporaryDirectory() as folder:
        for scope in ("model_1", "model_10", "ensemble/model_1"):  # a scope may have several parts
            with tf.Graph().as_default():
                values = _make_variables(specs)
                with V1.Session() as sess:
                    sess.run(V1.global_variables_initializer())
                    initial, values = values, _move_away(sess, values)
                    target = os.path.join(folder, scope.replace("/", "_"))
                    try:
                        returned = save_without_scope(sess, scope, target)
                    except ValueError as error:  # a Saver of no variables: the scope's parts were split
                        require("/" not in scope or "No variables to save" not in str(error),
                                f"saving scope {scope!r}, your Saver got no variables: a scope may have "
                                "several parts; select the variables whose names start with scope + '/'.")
                        raise
                    path = _returned_checkpoint(returned, "save_without_scope")
            keys = _keys(path)
            reader = tf.train.load_checkpoint(path)
            tails = [scope.split("/", n)[n] for n in range(1, scope.count("/") + 1)]
            partly = sorted(key for key in keys if any(key.startswith(f"{tail}/") for tail in tails))
            require(not partly,
                    f"saving scope {scope!r}, the keys still hold part of it ({partly[:1]} ...): remove the whole "
                    f"scope and its '/' ('{scope}/'), not only its first part.")
            strangers = sorted((full, key) for key in keys - set(inner) for full, value in values.items()
                               if not full.startswith(f"{scope}/") and np.array_equal(reader.get_tensor(key), value))
            if strangers and not any(key.startswith(f"{scope}/") for key in keys):
                require(False, f"saving scope {scope!r}, variables of another scope got in ({strangers[0][0]!r} "
                               f"saved as {strangers[0][1]!r}): select with scope + '/' (mind the '/': 'model_1' is "
                               "also the start of 'model_10').")
            others = sorted({key.split("/")[0] for key in keys} & {s.split("/")[0] for s in all_scopes} - {scope})
            scoped = sorted(key for key in keys if key.startswith(f"{scope}/") or key.split("/")[0] in others)
            require(not scoped,
                    f"saving scope {scope!r}, the keys still start with a scope ({scoped[:1]} ...). Keep only "
                    f"the variables under '{scope}/' (mind the '/': 'model_1' is also the start of "
                    "'model_10'), keyed by their names without the scope: a dict as the Saver's var_list.")
            colons = sorted(key for key in keys if key.endswith(":0"))
            require(not colons,
                    f"the keys end in ':0' ({colons[:1]} ...): use `variable.op.name`, not `variable.name`.")
            missing, extra = sorted(set(inner) - keys), sorted(keys - set(inner))
            require(bool(extra) or not missing,
                    f"saving scope {scope!r}, expected the keys {sorted(inner)}; missing {missing}: keep every "
                    "variable under the scope, trainable or not.")
            require(not extra,
                    f"saving scope {scope!r}, expected the keys {sorted(inner)}, found {extra[:1]} too. Cut "
                    "exactly the scope and its '/' from the front of each name (`removeprefix`; `lstrip` "
                    "removes characters, not a prefix).")
            for name in inner:
                saved = reader.get_tensor(name)
                source = next((full for full, value in values.items() if np.array_equal(saved, value)), None)
                require(source in (None, f"{scope}/{name}"),
                        f"saving scope {scope!r}, the key {name!r} holds the value of {source!r}: keep only "
                        f"the variables under '{scope}/' (mind the '/': 'model_1' is also the start of "
                        "'model_10').")
                require(not np.array_equal(saved, initial[f"{scope}/{name}"]),
                        f"{name!r} holds the initial value of '{scope}/{name}', not its current one: save from "
                        "the session you are given, without initializing it again.")
                require(source is not None,
                        f"{name!r} does not hold the current value of '{scope}/{name}': map each key to the "
                        "variable of the scope you are given.")
        # The session's own graph while another is the default.
        path, values = _saved_in_own_graph(
            lambda sess: save_without_scope(sess, "model_10", os.path.join(folder, "own_graph")), specs,
            _SESSION_GRAPH_01_3)
        reader = tf.train.load_checkpoint(path)
        require(_keys(path) == set(inner) and all(np.array_equal(reader.get_tensor(name), values[f"model_10/{name}"])
                                                  for name in inner), _SESSION_GRAPH_01_3)
    return ("model_1/, model_10/ and ensemble/model_1/ each saved alone (3 variables), keys without the "
            "scope, the session's current values, from the session's own graph")


_SESSION_GRAPH_01_3 = Hint(
    "your code read the default graph, not the session's: here another graph is the default. "
    "`V1.global_variables(...)` and a Saver use the default graph (section 6, \"Saving under other names\", "
    "builds them inside the graph's `with`).",
    "read the variables and build the Saver in the session's graph: put them inside "
    "`with sess.graph.as_default():`.",
    kind="session graph")


# --------------------------------------------------------------------------- 01.4

_OTHER_MACHINE = "/home/alice/runs/exp7"


def _moved_folder(folder: str, steps: tuple[int, ...]) -> dict[int, dict[str, np.ndarray]]:
    """Checkpoints ``run-<step>`` in ``folder`` whose state file names another machine's paths."""
    saved = {}
    with tf.Graph().as_default():
        w = V1.get_variable("net/w", shape=[2, 2], initializer=V1.zeros_initializer())
        b = V1.get_variable("net/b", shape=[2], initializer=V1.zeros_initializer())
        step = V1.train.get_or_create_global_step()
        saver = V1.train.Saver(max_to_keep=None)
        with V1.Session() as sess:
            for number in steps:
                values = {"net/w": distinct_values(number, (2, 2)), "net/b": distinct_values(number + 100, (2,))}
                sess.run([w.assign(values["net/w"]), b.assign(values["net/b"]), step.assign(number)])
                saver.save(sess, os.path.join(folder, "run"), global_step=number, write_meta_graph=False)
                saved[number] = values
    # File times in another order than the state file's: a copy does not keep them, so they say nothing.
    now = time.time()
    for rank, number in enumerate([steps[-1], *steps[:-1]]):  # the state file's newest is the oldest file
        for file in Path(folder).glob(f"run-{number}.*"):
            os.utime(file, (now - 1000 + 100 * rank, now - 1000 + 100 * rank))
    names = [f"{_OTHER_MACHINE}/run-{number}" for number in steps]
    state = [f'model_checkpoint_path: "{names[-1]}"'] + [f'all_model_checkpoint_paths: "{n}"' for n in names]
    Path(folder, "checkpoint").write_text("\n".join(state) + "\n")
    return saved


@exercise_check("01.4")
def check_restore_moved(restore_moved: Callable[[V1.Session, str], int]) -> str:
    """``restore_moved(sess, folder)`` restores the newest checkpoint of a folder copied from elsewhere."""
    # Saved in this order: the newest is neither the first, nor the largest, nor the latest file time.
    steps = (100, 300, 250, 200)
    with tempfile.TemporaryDirectory() as folder:
        saved = _moved_folder(folder, steps)
        newest = steps[-1]
        before = folder_files(folder, recursive=False)
        with tf.Graph().as_default():
            w = V1.get_variable("net/w", initializer=np.full((2, 2), -1.0, np.float32))
            b = V1.get_variable("net/b", initializer=np.full((2,), -1.0, np.float32))
            step = V1.train.get_or_create_global_step()
            with V1.Session() as sess:
                returned = restore_moved(sess, folder)
                try:
                    restored = dict(zip(["net/w", "net/b", "step"], sess.run([w, b, step])))
                except tf.errors.FailedPreconditionError:
                    restored = None
        after = folder_files(folder, recursive=False)
    require(after == before, "a file in the folder was changed, added or deleted: restore from the files as they "
                             "are (read the state file, do not rewrite it).")
    require(restored is not None, "the variables were not restored: call `saver.restore(sess, path)` with the "
                                  "path of the folder's own file that the state file names.")
    found = next((number for number, values in saved.items()
                  if np.array_equal(restored["net/w"], values["net/w"])), None)
    refuse_mistakes(found, [  # the checkpoints a plausible wrong answer restores
        Mistake(steps[0], f"you restored run-{steps[0]}, the first one the state file lists; its newest is the "
                          "one in `model_checkpoint_path`."),
        Mistake(max(steps), f"you restored run-{max(steps)}, the largest step, but the state file says the "
                            f"newest is run-{newest}: follow `model_checkpoint_path`."),
        Mistake(steps[-2], f"you restored run-{steps[-2]}, whose files are the most recently modified: file "
                           "times say nothing about which checkpoint is newest (a copy changes them). Follow "
                           "the state file's `model_checkpoint_path`."),
    ])
    require(found == newest and np.array_equal(restored["net/b"], saved[newest]["net/b"])
            and int(restored["step"]) == newest,
            f"after restoring, every variable (net/w, net/b, global_step) should hold run-{newest}'s values.")
    require(returned is not None, "restore_moved returned None: return the restored global step as an int.")
    require(isinstance(returned, (int, np.integer)) and int(returned) == newest,
            f"the restored global step is {newest}; you returned {returned!r}.")
    require(isinstance(returned, int) and not isinstance(returned, bool),
            f"you returned the step as NumPy's {type(returned).__name__}: `sess.run` gives NumPy numbers; "
            "return a Python `int` (`int(...)`).")
    # The session's own graph while another is the default.
    with tempfile.TemporaryDirectory() as folder:
        saved = _moved_folder(folder, steps)
        graph = tf.Graph()
        with graph.as_default():
            w = V1.get_variable("net/w", initializer=np.full((2, 2), -1.0, np.float32))
            step = V1.train.get_or_create_global_step()
        with V1.Session(graph=graph) as sess:
            returned = _beside_another_graph(lambda: restore_moved(sess, folder), _SESSION_GRAPH_01_4)
            try:
                restored_w = sess.run(w)
            except tf.errors.FailedPreconditionError:
                restored_w = None
    require(restored_w is not None and np.array_equal(restored_w, saved[newest]["net/w"])
            and returned == newest, _SESSION_GRAPH_01_4)
    return (f"run-{newest}, the newest the moved state file names, restored in full into the session's own "
            "graph; no file changed")


_SESSION_GRAPH_01_4 = Hint(
    "your code restored through the default graph, not the session's: here another graph is the default. "
    "A `Saver()` and `get_global_step()` use the default graph (section 4, \"Restoring is initializing\", "
    "builds them inside the graph's `with`).",
    "build the Saver and read the global step in the session's graph: put them inside "
    "`with sess.graph.as_default():`.",
    kind="session graph")
