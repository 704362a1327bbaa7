"""The checks of notebook 06: right answers pass, plausible mistakes get their hint."""

from __future__ import annotations

import os

import keras
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, ex06


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 06.1


def restore_hidden_layer(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_built_first(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    layer(tf.zeros((1, 3)))
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).read(ckpt_path)
    status.assert_existing_objects_matched()
    return layer


def restore_hidden_layer_by_keys(ckpt_path):
    reader = tf.train.load_checkpoint(ckpt_path)
    layer = keras.layers.Dense(4, activation="relu")
    layer.build((None, 3))
    layer.set_weights([reader.get_tensor("model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"),
                       reader.get_tensor("model/hidden/bias/.ATTRIBUTES/VARIABLE_VALUE")])
    return layer


def restore_hidden_layer_flat(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(hidden=layer).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_no_relu(ckpt_path):
    layer = keras.layers.Dense(4)
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    layer.build((None, 3))
    return layer


def restore_hidden_layer_only_kernel(ckpt_path):
    reader = tf.train.load_checkpoint(ckpt_path)
    layer = keras.layers.Dense(4, activation="relu")
    layer.build((None, 3))
    layer.kernel.assign(reader.get_tensor("model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"))
    return layer


def restore_hidden_layer_asserting_everything(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path)
    layer.build((None, 3))
    status.assert_consumed()
    return layer


def restore_hidden_layer_wrong_units(ckpt_path):
    layer = keras.layers.Dense(2, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    return layer


def test_restore_hidden_layer_accepts_correct_answers(capsys):
    for answer in (restore_hidden_layer, restore_hidden_layer_built_first, restore_hidden_layer_by_keys):
        ex06.check_restore_hidden_layer(answer)
        assert "✔ Exercise 06.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, error, hint",
    [
        (restore_hidden_layer_flat, CheckFailed, "mirror both"),
        (restore_hidden_layer_no_relu, CheckFailed, "activation=\"relu\""),
        (restore_hidden_layer_only_kernel, CheckFailed, "kernel and bias"),
        (restore_hidden_layer_asserting_everything, CheckFailed, "Use expect_partial"),
        (restore_hidden_layer_wrong_units, CheckFailed, "make Dense\\(4\\)"),
        (lambda path: None, CheckFailed, "should return a keras.layers.Dense"),
    ],
)
def test_restore_hidden_layer_rejects_mistakes(answer, error, hint):
    with pytest.raises(error, match=hint):
        ex06.check_restore_hidden_layer(answer)


def test_restore_hidden_layer_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_hidden_layer(not_done)


# --------------------------------------------------------------------------- 06.2


def restore_for_inference(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.assert_existing_objects_matched().expect_partial()
    return model


def restore_for_inference_read(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).read(ckpt_path).assert_existing_objects_matched().expect_partial()
    return model


def restore_for_inference_own_check(ckpt_path, make_model):
    model = make_model()
    keys = {key for key, _ in tf.train.list_variables(ckpt_path)}
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    for needed in ("model/hidden/_kernel", "model/hidden/bias", "model/out/_kernel", "model/out/bias"):
        if needed + "/.ATTRIBUTES/VARIABLE_VALUE" not in keys:
            raise ValueError(f"the checkpoint has no {needed}")
    return model


def restore_for_inference_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return model


def restore_for_inference_unchecked(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


def restore_for_inference_nontrivial(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_nontrivial_match().expect_partial()
    return model


def restore_for_inference_wrong_edge(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(net=model).restore(ckpt_path).expect_partial()
    return model


def restore_for_inference_new_model(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_existing_objects_matched().expect_partial()
    return make_model()


def test_restore_for_inference_accepts_correct_answers(capsys):
    for answer in (restore_for_inference, restore_for_inference_read, restore_for_inference_own_check):
        ex06.check_restore_for_inference(answer)
        assert "✔ Exercise 06.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (restore_for_inference_consumed, "Which assertion allows those"),
        (restore_for_inference_unchecked, "accepted silently"),
        (restore_for_inference_nontrivial, "accepted silently"),
        (restore_for_inference_wrong_edge, "does not hold the saved values"),
        (restore_for_inference_new_model, "call make_model\\(\\) once and return that model"),
        (lambda path, make: make(), "does not hold the saved values"),
    ],
)
def test_restore_for_inference_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex06.check_restore_for_inference(answer)


def test_restore_for_inference_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_restore_for_inference(not_done)


# --------------------------------------------------------------------------- 06.3


def train_and_keep(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def train_and_keep_returning_saves(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory=directory, max_to_keep=keep)
    path = None
    for step in range(1, steps + 1):
        step_fn()
        path = manager.save(checkpoint_number=step)
    return path


def train_and_keep_everything(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.save(os.path.join(directory, "ckpt"))
    return path


def train_and_keep_first(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    first = None
    for _ in range(steps):
        step_fn()
        path = manager.save()
        first = first or path
    return first


def train_and_keep_save_before_step(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        manager.save()
        step_fn()
    return manager.latest_checkpoint


def train_and_keep_two(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def train_and_keep_save_at_end(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
    return manager.save()


def train_and_keep_five_steps(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(5):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def test_train_and_keep_accepts_correct_answers(capsys):
    for answer in (train_and_keep, train_and_keep_returning_saves):
        ex06.check_train_and_keep(answer)
        assert "✔ Exercise 06.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (train_and_keep_everything, "it should hold exactly 2"),
        (train_and_keep_first, "but the latest checkpoint is"),
        (train_and_keep_save_before_step, "save after calling step_fn"),
        (train_and_keep_two, "with steps=4 and keep=3"),
        (train_and_keep_save_at_end, "no checkpoint was saved after step"),
        (train_and_keep_five_steps, "should run 6 times"),
        (lambda *args: None, "nothing was written"),
    ],
)
def test_train_and_keep_rejects_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex06.check_train_and_keep(answer)


def test_train_and_keep_stub():
    with pytest.raises(ExerciseNotDone):
        ex06.check_train_and_keep(not_done)


def train_and_keep_only_the_last(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for step in range(steps):
        step_fn()
        if step >= steps - keep:
            manager.save()
    return manager.latest_checkpoint


def test_train_and_keep_rejects_saving_only_the_last_steps():
    with pytest.raises(CheckFailed, match=r"no checkpoint was saved after step\(s\) \[1, 2, 3, 4\]"):
        ex06.check_train_and_keep(train_and_keep_only_the_last)


# ===========================================================================
# Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and correct alternatives, written before the checks were
# read. A test marked xfail(strict=True) is a hole in today's check: remove the entry from HOLES
# when the check is fixed.

import glob  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from tests.attack_support import cases, passes, rejects  # noqa: E402

# Today's check gets these wrong (xfail strict: remove an entry when the check is fixed).
HOLES: dict[str, str] = {
}


# ----- 06.1 wrong


def keep_everything(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.save(os.path.join(directory, "ckpt"))
    return path


def keep_save_before_step(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        manager.save()
        step_fn()
    return manager.latest_checkpoint


def keep_one_too_many(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep + 1)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def keep_returns_directory(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return directory


def keep_returns_oldest(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.checkpoints[0]


def keep_one_step_short(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(1, steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def keep_fixed_five(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=5)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def keep_deletes_lexicographically(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.save(os.path.join(directory, "ckpt"))
        prefixes = sorted({p.rsplit(".", 1)[0] for p in glob.glob(os.path.join(directory, "ckpt-*.index"))})
        for old in prefixes[:-keep]:
            for file in glob.glob(old + ".*"):
                os.remove(file)
    return path


def keep_save_once_at_end(step_fn, checkpoint, directory, steps, keep):
    for _ in range(steps):
        step_fn()
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    return manager.save()


def keep_write_without_number(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.write(os.path.join(directory, "ckpt"))
    return path


def keep_returns_prefix_without_number(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        step_fn()
        manager.save()
    return os.path.join(directory, "ckpt")


# ----- 06.1 right


def keep_with_manager_path(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, Path(directory), max_to_keep=keep, checkpoint_name="state")
    path = None
    for _ in range(steps):
        step_fn()
        path = manager.save()
    return Path(path)


def keep_by_hand(step_fn, checkpoint, directory, steps, keep):
    saved = []
    for _ in range(steps):
        step_fn()
        saved.append(checkpoint.save(os.path.join(directory, "model")))
        while len(saved) > keep:
            for file in glob.glob(saved.pop(0) + ".*"):
                os.remove(file)
    return saved[-1]


def keep_by_hand_numeric_sort(step_fn, checkpoint, directory, steps, keep):
    for _ in range(steps):
        step_fn()
        checkpoint.save(os.path.join(directory, "ckpt"))
        prefixes = sorted({p[: -len(".index")] for p in glob.glob(os.path.join(directory, "ckpt-*.index"))},
                          key=lambda p: int(re.search(r"-(\d+)$", p).group(1)))
        for old in prefixes[:-keep]:
            for file in glob.glob(old + ".*"):
                os.remove(file)
    return tf.train.latest_checkpoint(directory)


@pytest.mark.parametrize("answer", cases([
    keep_everything, keep_save_before_step, keep_one_too_many, keep_returns_directory, keep_returns_oldest,
    keep_one_step_short, keep_fixed_five, keep_deletes_lexicographically, keep_save_once_at_end,
    keep_write_without_number, keep_returns_prefix_without_number,
], HOLES))
def test_06_1_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex06.check_train_and_keep, answer)


@pytest.mark.parametrize("answer", cases([keep_with_manager_path, keep_by_hand, keep_by_hand_numeric_sort],
                                         HOLES))
def test_06_1_prompt_only_right_answers_pass(answer):
    passes(ex06.check_train_and_keep, answer)


# ----- 06.2 wrong


def inference_silent(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path)
    return model


def inference_assert_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return model


def inference_expect_partial(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


def inference_nontrivial(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial().assert_nontrivial_match()
    return model


def inference_wrong_edge(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(net=model).restore(ckpt_path).expect_partial()
    return model


def inference_makes_two_models(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=make_model()).restore(ckpt_path).expect_partial().assert_existing_objects_matched()
    return model


def inference_read_no_assert(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).read(ckpt_path)
    return model


def inference_with_new_optimizer(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model, optimizer=keras.optimizers.Adam()).restore(ckpt_path)
    status.assert_consumed()
    return model


def inference_resaves(ckpt_path, make_model):
    model = make_model()
    checkpoint = tf.train.Checkpoint(model=model)
    checkpoint.restore(ckpt_path).expect_partial().assert_existing_objects_matched()
    checkpoint.write(os.fspath(ckpt_path))
    return model


def inference_raises_only_if_nothing_loaded(ckpt_path, make_model):
    model = make_model()
    before = [w.numpy().copy() for w in model.weights]
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    if all(np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights)):
        raise ValueError("nothing was restored")
    return model


# ----- 06.2 right


def inference_existing_matched(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).read(os.fspath(ckpt_path))
    status.assert_existing_objects_matched()
    status.expect_partial()
    return model


def inference_raises_runtime_error(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.expect_partial()
    try:
        status.assert_existing_objects_matched()
    except AssertionError as error:
        raise RuntimeError(f"checkpoint incomplete: {error}") from None
    return model


def inference_raises_assertion_by_keys(ckpt_path, make_model):
    model = make_model()
    keys = {name for name, _ in tf.train.list_variables(ckpt_path)}
    needed = {
        "model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "model/hidden/bias/.ATTRIBUTES/VARIABLE_VALUE",
        "model/out/_kernel/.ATTRIBUTES/VARIABLE_VALUE", "model/out/bias/.ATTRIBUTES/VARIABLE_VALUE",
    }
    missing = needed - keys
    if missing:
        raise AssertionError(f"the checkpoint lacks {sorted(missing)}")
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


@pytest.mark.parametrize("answer", cases([
    inference_silent, inference_assert_consumed, inference_expect_partial, inference_nontrivial,
    inference_wrong_edge, inference_makes_two_models, inference_read_no_assert, inference_with_new_optimizer,
    inference_resaves, inference_raises_only_if_nothing_loaded,
], HOLES))
def test_06_2_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex06.check_restore_for_inference, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([inference_existing_matched, inference_raises_runtime_error,
                                          inference_raises_assertion_by_keys], HOLES))
def test_06_2_prompt_only_right_answers_pass(answer):
    passes(ex06.check_restore_for_inference, answer)


# ----- 06.3 wrong


def _dense(built=True, activation="relu", inputs=3):
    layer = keras.layers.Dense(4, activation=activation)
    if built:
        layer.build((None, inputs))
    return layer


def hidden_top_level_edge(ckpt_path):
    layer = _dense()
    tf.train.Checkpoint(hidden=layer).restore(ckpt_path).expect_partial()
    return layer


def hidden_as_model(ckpt_path):
    layer = _dense()
    tf.train.Checkpoint(model=layer).restore(ckpt_path).expect_partial()
    return layer


def hidden_no_activation(ckpt_path):
    layer = _dense(activation=None)
    tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path).expect_partial()
    return layer


def hidden_the_output_layer(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    tf.train.Checkpoint(model=tf.train.Checkpoint(out=layer)).restore(ckpt_path).expect_partial()
    return layer


def hidden_fresh_layer(ckpt_path):
    return _dense()


def hidden_kernel_only(ckpt_path):
    layer = _dense()
    layer.kernel.assign(tf.train.load_variable(ckpt_path, "model/hidden/_kernel/.ATTRIBUTES/VARIABLE_VALUE"))
    return layer


def hidden_writes_back(ckpt_path):
    layer = _dense()
    checkpoint = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer))
    checkpoint.restore(ckpt_path).expect_partial()
    checkpoint.write(os.fspath(ckpt_path))
    return layer


def hidden_first_matching_key(ckpt_path):
    layer = _dense()
    names = [name for name, _ in tf.train.list_variables(ckpt_path)]
    kernel = next(name for name in names if "kernel" in name)
    bias = next(name for name in names if "bias" in name)
    layer.set_weights([tf.train.load_variable(ckpt_path, kernel), tf.train.load_variable(ckpt_path, bias)])
    return layer


def hidden_optimizer_slot(ckpt_path):
    layer = _dense()
    names = sorted(name for name, _ in tf.train.list_variables(ckpt_path) if "hidden" in name)
    kernel = [n for n in names if "kernel" in n][-1]
    bias = [n for n in names if "bias" in n][-1]
    layer.set_weights([tf.train.load_variable(ckpt_path, kernel), tf.train.load_variable(ckpt_path, bias)])
    return layer


# ----- 06.3 right


def hidden_deferred(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(hidden=layer)).restore(ckpt_path)
    layer.build((None, 3))
    status.expect_partial().assert_existing_objects_matched()
    return layer


def hidden_by_keys(ckpt_path):
    layer = keras.layers.Dense(4, activation=tf.nn.relu)
    layer(tf.zeros([1, 3]))
    prefix = "model/hidden/{}/.ATTRIBUTES/VARIABLE_VALUE"
    layer.kernel.assign(tf.train.load_variable(ckpt_path, prefix.format("_kernel")))  # Keras 3 key
    layer.bias.assign(tf.train.load_variable(ckpt_path, prefix.format("bias")))
    return layer


def hidden_module_path(ckpt_path):
    layer = keras.layers.Dense(4, activation="relu")
    layer.build((3,))
    model_node = tf.Module()
    model_node.hidden = layer
    tf.train.Checkpoint(model=model_node).read(str(ckpt_path)).expect_partial()
    return layer


@pytest.mark.parametrize("answer", cases([
    hidden_top_level_edge, hidden_as_model, hidden_no_activation, hidden_the_output_layer, hidden_fresh_layer,
    hidden_kernel_only, hidden_writes_back,
], HOLES))
def test_06_3_prompt_only_wrong_answers_are_rejected(answer):
    rejects(ex06.check_restore_hidden_layer, answer, may_raise=True)


@pytest.mark.parametrize("answer", cases([hidden_deferred, hidden_by_keys, hidden_module_path], HOLES))
def test_06_3_prompt_only_right_answers_pass(answer):
    passes(ex06.check_restore_hidden_layer, answer)


# ===========================================================================
# Hints in steps: each test starts from the first step (helpers.checks.Hint)

from helpers.checks import forget_hints  # noqa: E402


@pytest.fixture(autouse=True)
def _first_hints():
    forget_hints()
from tests.attack_harness import accepted, rejected, stepped  # noqa: E402


# ----- 06.1 hints in steps (issue 34), answers written from the prompt alone


def keep_by_file_name(step_fn, checkpoint, directory, steps, keep):
    for _ in range(steps):
        step_fn()
        checkpoint.save(os.path.join(directory, "ckpt"))
        prefixes = sorted({name.split(".")[0] for name in os.listdir(directory) if name.startswith("ckpt-")})
        for old in prefixes[:-keep]:
            for name in os.listdir(directory):
                if name.split(".")[0] == old:
                    os.remove(os.path.join(directory, name))
    return tf.train.latest_checkpoint(directory)


def keep_all(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=None)
    for _ in range(steps):
        step_fn()
        manager.save()
    return manager.latest_checkpoint


def keep_every_other_step(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for step in range(steps):
        step_fn()
        if step % 2 or step == steps - 1:
            manager.save()
    return manager.latest_checkpoint


def keep_with_write(step_fn, checkpoint, directory, steps, keep):
    path = None
    for _ in range(steps):
        step_fn()
        path = checkpoint.write(os.path.join(directory, "ckpt"))
    return path


def keep_save_first(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    for _ in range(steps):
        manager.save()
        step_fn()
    return manager.latest_checkpoint


def keep_first_save_path(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
    paths = []
    for _ in range(steps):
        step_fn()
        paths.append(manager.save())
    return paths[-keep]


@pytest.mark.parametrize("answer", [keep_by_file_name, keep_one_too_many, keep_all, keep_returns_directory,
                                    keep_returns_oldest, keep_every_other_step, keep_with_write,
                                    keep_save_first, keep_first_save_path], ids=lambda f: f.__name__)
def test_06_1_wrong_answers_get_a_hint(answer):
    rejected(ex06.check_train_and_keep, answer)


@pytest.mark.parametrize("answer, fix", [
    (keep_by_file_name, "by step number, not by file name"),
    (keep_one_too_many, "max_to_keep=keep"),
    (keep_returns_oldest, "manager.latest_checkpoint"),
], ids=["by name", "count", "latest"])
def test_06_1_the_first_hint_names_the_idea_and_the_section_a_repeat_the_fix(answer, fix):
    first, second = stepped(ex06.check_train_and_keep, answer)
    assert "section 6" in first.lower() and fix not in first
    assert fix in second


def keep_manual_by_step(step_fn, checkpoint, directory, steps, keep):
    saved = []
    for _ in range(steps):
        step_fn()
        saved.append(checkpoint.save(os.path.join(directory, "ckpt")))
        while len(saved) > keep:
            old = saved.pop(0)
            for name in os.listdir(directory):
                if name.startswith(os.path.basename(old) + "."):
                    os.remove(os.path.join(directory, name))
    return saved[-1]


def keep_returns_last_save(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory=directory, max_to_keep=keep,
                                         checkpoint_name="step")
    path = None
    for _ in range(steps):
        step_fn()
        path = manager.save()
    return path


def keep_returns_a_path_object(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, directory, keep)
    for _ in range(steps):
        step_fn()
        manager.save(checkpoint_number=checkpoint.save_counter + 1)
    return Path(directory) / os.path.basename(manager.latest_checkpoint)


@pytest.mark.parametrize("answer", [keep_manual_by_step, keep_returns_last_save, keep_returns_a_path_object],
                         ids=lambda f: f.__name__)
def test_06_1_right_answers_written_otherwise_pass(answer):
    accepted(ex06.check_train_and_keep, answer)


# ----- 06.2 hints in steps (issue 34), answers written from the prompt alone


def infer_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_consumed()
    return model


def infer_expect_partial_only(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).expect_partial()
    return model


def infer_nontrivial(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).restore(ckpt_path).assert_nontrivial_match().expect_partial()
    return model


def infer_root_is_the_model(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(root=model).restore(ckpt_path).expect_partial()
    return model


def infer_with_a_fresh_optimizer_consumed(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model, optimizer=keras.optimizers.Adam()).restore(ckpt_path).assert_consumed()
    return model


def infer_twice(ckpt_path, make_model):
    tf.train.Checkpoint(model=make_model()).restore(ckpt_path).assert_existing_objects_matched().expect_partial()
    return make_model()


def infer_swallows_the_assertion(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    try:
        status.assert_existing_objects_matched()
    except AssertionError:
        pass
    status.expect_partial()
    return model


def infer_assertion_before_restore(ckpt_path, make_model):
    model = make_model()
    checkpoint = tf.train.Checkpoint(model=model)
    checkpoint.restore(ckpt_path).expect_partial()
    checkpoint.restore(ckpt_path).assert_nontrivial_match()
    return model


@pytest.mark.parametrize("answer", [infer_consumed, infer_expect_partial_only, infer_nontrivial,
                                    infer_root_is_the_model, infer_with_a_fresh_optimizer_consumed, infer_twice,
                                    infer_swallows_the_assertion, infer_assertion_before_restore],
                         ids=lambda f: f.__name__)
def test_06_2_wrong_answers_get_a_hint(answer):
    rejected(ex06.check_restore_for_inference, answer)


@pytest.mark.parametrize("answer, fix", [
    (infer_consumed, "assert_existing_objects_matched()"),
    (infer_expect_partial_only, "assert_existing_objects_matched()"),
    (infer_root_is_the_model, "tf.train.Checkpoint(model=model)"),
], ids=["consumed", "silent", "edge"])
def test_06_2_the_first_hint_names_the_idea_and_the_section_a_repeat_the_fix(answer, fix):
    first, second = stepped(ex06.check_restore_for_inference, answer)
    assert "section" in first and fix not in first
    assert fix in second


def infer_read(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model=model).read(os.fspath(ckpt_path)).assert_existing_objects_matched().expect_partial()
    return model


def infer_matched_without_expect_partial(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.assert_existing_objects_matched()
    return model


def infer_expect_partial_first(ckpt_path, make_model):
    model = make_model()
    status = tf.train.Checkpoint(model=model).restore(ckpt_path)
    status.expect_partial()
    status.assert_existing_objects_matched()
    return model


@pytest.mark.parametrize("answer", [infer_read, infer_matched_without_expect_partial, infer_expect_partial_first],
                         ids=lambda f: f.__name__)
def test_06_2_right_answers_written_otherwise_pass(answer):
    accepted(ex06.check_restore_for_inference, answer)


def test_06_3_the_hint_quoting_tensorflow_fits_300_characters_with_its_prefix():
    hint = rejected(ex06.check_restore_hidden_layer, restore_hidden_layer_asserting_everything)
    assert len(hint) <= 300 and "TensorFlow: " in hint and hint.endswith("…"), hint


# ----- review of the checks (findings 1 and 4a): orphan data files, relative paths, the root's edge


def keep_deletes_index_only(step_fn, checkpoint, directory, steps, keep):
    paths = []
    for _ in range(steps):
        step_fn()
        paths.append(checkpoint.save(os.path.join(directory, "ckpt")))
        while len(paths) > keep:
            os.remove(paths.pop(0) + ".index")
    return paths[-1]


def keep_relative_manager(step_fn, checkpoint, directory, steps, keep):
    manager = tf.train.CheckpointManager(checkpoint, "ckpts", max_to_keep=keep)
    path = None
    for _ in range(steps):
        step_fn()
        path = manager.save()
    return path


def test_06_1_deleting_only_the_index_files_of_old_checkpoints_is_rejected():
    hint = rejected(ex06.check_train_and_keep, keep_deletes_index_only)
    assert "files of deleted checkpoints remain (" in hint and ".data-" in hint, hint
    assert "CheckpointManager" in hint and len(hint) <= 300, hint


def test_06_1_a_relative_path_writes_nothing_beside_the_notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hint = rejected(ex06.check_train_and_keep, keep_relative_manager)
    assert "current folder" in hint and "`directory`" in hint, hint
    assert os.listdir(tmp_path) == [] and os.getcwd() == str(tmp_path)


def test_06_1_the_answer_runs_in_a_folder_of_its_own_and_the_current_folder_comes_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    accepted(ex06.check_train_and_keep, keep_by_hand)
    assert os.listdir(tmp_path) == [] and os.getcwd() == str(tmp_path)


def infer_model_as_root(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(model).restore(ckpt_path).assert_existing_objects_matched()
    return model


def infer_edge_net(ckpt_path, make_model):
    model = make_model()
    tf.train.Checkpoint(net=model).restore(ckpt_path).assert_existing_objects_matched()
    return model


@pytest.mark.parametrize("answer", [infer_model_as_root, infer_edge_net], ids=lambda f: f.__name__)
def test_06_2_unbound_objects_get_the_hint_about_the_edge_model(answer):
    first, second = stepped(ex06.check_restore_for_inference, answer)
    assert "edge 'model'" in first and "section 4" in first and "assert_consumed" not in first, first
    assert "tf.train.Checkpoint(model=model)" in second, second
