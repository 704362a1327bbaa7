"""AtomicModelCheckpoint: saves like ModelCheckpoint, never leaves a cut file, touches no other file."""

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import helpers.atomic_checkpoint
from helpers.atomic_checkpoint import AtomicModelCheckpoint, NotWritableError

ROOT = Path(__file__).resolve().parents[1]

X = np.linspace(-1.0, 1.0, 16, dtype="float32").reshape(8, 2)
Y = X.sum(axis=1, keepdims=True)


def small_model() -> keras.Model:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def crashing_save(path, overwrite=True):
    """What a kill in the middle of a save leaves: the first bytes of a file, then no more."""
    with open(path, "wb") as cut:
        cut.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    raise KeyboardInterrupt("killed in the middle of the save")


def test_saves_every_epoch_and_the_file_loads(tmp_path):
    model = small_model()
    target = tmp_path / "last.weights.h5"
    model.fit(X, Y, epochs=2, verbose=0,
              callbacks=[AtomicModelCheckpoint(target, save_weights_only=True)])
    restored = small_model()
    restored.load_weights(target)
    np.testing.assert_array_equal(restored.predict(X, verbose=0), model.predict(X, verbose=0))
    assert sorted(os.listdir(tmp_path)) == ["last.weights.h5"]


def test_whole_model_with_epoch_in_the_name(tmp_path):
    model = small_model()
    model.fit(X, Y, epochs=2, verbose=0,
              callbacks=[AtomicModelCheckpoint(tmp_path / "run-{epoch:02d}.keras")])
    assert sorted(os.listdir(tmp_path)) == ["run-01.keras", "run-02.keras"]
    loaded = keras.models.load_model(tmp_path / "run-02.keras")
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_save_best_only_rewrites_only_when_the_value_improves(tmp_path):
    model = small_model()
    target = tmp_path / "best.weights.h5"
    callback = AtomicModelCheckpoint(target, monitor="val_auc", mode="max", save_best_only=True,
                                     save_weights_only=True)
    callback.set_model(model)
    kept = []
    for epoch, auc in enumerate([0.6, 0.8, 0.7, 0.9, 0.85]):
        model.layers[0].kernel.assign(np.full((2, 3), epoch + 1.0, dtype="float32"))
        callback.on_epoch_end(epoch, {"val_auc": auc, "loss": 1.0})
        probe = small_model()
        probe.load_weights(target)
        kept.append(float(probe.layers[0].kernel.numpy()[0, 0]))
    assert kept == [1.0, 2.0, 2.0, 4.0, 4.0]
    assert callback.best == 0.9


def test_a_crash_in_the_middle_of_a_save_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    model = small_model()
    target = tmp_path / "last.weights.h5"
    callback = AtomicModelCheckpoint(target, save_weights_only=True)
    callback.set_model(model)
    callback.on_epoch_end(0, {})
    before = target.read_bytes()
    model.layers[0].kernel.assign(np.ones((2, 3), dtype="float32"))
    monkeypatch.setattr(model, "save_weights", crashing_save)
    with pytest.raises(KeyboardInterrupt):
        callback.on_epoch_end(1, {})
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["last.weights.h5"]  # the cut temporary file is removed


def test_keras_model_checkpoint_under_the_same_crash_leaves_a_cut_file(tmp_path, monkeypatch):
    """Why the recipe exists: the plain callback writes on the target's own name."""
    model = small_model()
    target = tmp_path / "last.weights.h5"
    callback = keras.callbacks.ModelCheckpoint(target, save_weights_only=True)
    callback.set_model(model)
    callback.on_epoch_end(0, {})
    before = target.read_bytes()
    monkeypatch.setattr(model, "save_weights", crashing_save)
    with pytest.raises(KeyboardInterrupt):
        callback.on_epoch_end(1, {})
    assert target.read_bytes() != before
    with pytest.raises(Exception):
        small_model().load_weights(target)


def test_no_file_but_the_target_is_ever_written(tmp_path):
    users = {".last.weights.h5.abc.weights.h5": b"mine", "last.weights.h5.tmp": b"mine too",
             "other.weights.h5": b"not a checkpoint", "notes.txt": b"keep me"}
    for name, content in users.items():
        (tmp_path / name).write_bytes(content)
    (tmp_path / "last.weights.h5").write_bytes(b"an old target")
    model = small_model()
    model.fit(X, Y, epochs=3, verbose=0, callbacks=[
        AtomicModelCheckpoint(tmp_path / "last.weights.h5", save_weights_only=True)])
    for name, content in users.items():
        assert (tmp_path / name).read_bytes() == content, name
    assert sorted(os.listdir(tmp_path)) == sorted([*users, "last.weights.h5"])
    small_model().load_weights(tmp_path / "last.weights.h5")


def test_the_saved_file_has_ordinary_permissions_not_the_temporary_files(tmp_path):
    target = tmp_path / "last.keras"
    model = small_model()
    callback = AtomicModelCheckpoint(target)
    callback.set_model(model)
    callback.on_epoch_end(0, {})
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~umask
    os.chmod(target, 0o640)
    callback.on_epoch_end(1, {})
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


@pytest.mark.parametrize("kwargs, message", [
    ({"filepath": "x.h5", "save_weights_only": True}, "must end in '.weights.h5'"),
    ({"filepath": "x.weights.h5"}, "must end in '.keras'"),
    ({"filepath": "x.keras", "mode": "auto"}, "pass 'min' or 'max'"),
    ({"filepath": "x.keras", "monitor": "val_auc", "save_best_only": True}, "pass mode='max'"),
])
def test_wrong_arguments_are_refused_at_once(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AtomicModelCheckpoint(**kwargs)


def test_a_monitored_value_that_is_not_logged_is_an_error_not_a_silent_skip(tmp_path):
    model = small_model()
    callback = AtomicModelCheckpoint(tmp_path / "best.keras", monitor="val_loss",
                                     save_best_only=True)
    with pytest.raises(ValueError, match="'val_loss' is not logged"):
        model.fit(X, Y, epochs=1, verbose=0, callbacks=[callback])
    assert os.listdir(tmp_path) == []


KILLED_MID_SAVE = """
import sys, time
import keras
from helpers.atomic_checkpoint import AtomicModelCheckpoint

def slow_save(path, overwrite=True):
    with open(path, "wb") as cut:
        cut.write(b"\\x89HDF\\r\\n\\x1a\\n" + bytes(100))
    print("writing", flush=True)
    time.sleep(600)  # killed here

model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.save_weights = slow_save
callback = AtomicModelCheckpoint(sys.argv[1], save_weights_only=True)
callback.set_model(model)
callback.on_epoch_end(0, {})
"""


def test_a_real_kill_leaves_a_temporary_file_that_the_next_fit_removes_and_nothing_else(tmp_path):
    target = tmp_path / "last.weights.h5"
    target.write_bytes(b"the previous checkpoint")
    others = {  # names close to the recipe's temporary names, but not its own for this target
        ".last.weights.h5.abc.weights.h5": b"mine", ".last.weights.h5.abcdefgh.keras": b"mine",
        ".other.weights.h5.abcdefgh.weights.h5": b"another target's", "last.weights.h5.abcdefgh": b"x",
        ".last.weights.h5.abcdefgh.weights.h5.bak": b"a backup", "notes.txt": b"keep me"}
    for name, content in others.items():
        (tmp_path / name).write_bytes(content)
    worker = subprocess.Popen([sys.executable, "-c", KILLED_MID_SAVE, str(target)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert worker.stdout.readline().strip() == "writing"
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=60)
    left = sorted(set(os.listdir(tmp_path)) - set(others) - {"last.weights.h5"})
    assert len(left) == 1 and re.fullmatch(r"\.last\.weights\.h5\.\w{8}\.weights\.h5", left[0]), left
    assert target.read_bytes() == b"the previous checkpoint"

    callback = AtomicModelCheckpoint(target, save_weights_only=True)
    small_model().fit(X, Y, epochs=1, verbose=0, callbacks=[callback])
    assert sorted(os.listdir(tmp_path)) == sorted([*others, "last.weights.h5"])
    for name, content in others.items():
        assert (tmp_path / name).read_bytes() == content, name
    small_model().load_weights(target)


def test_leftovers_of_a_filepath_with_fields_are_removed_and_nothing_else(tmp_path):
    (tmp_path / ".run-03.keras.k2j4_x9a.keras").write_bytes(b"left by a kill")
    (tmp_path / ".run-03.keras.k2j4_x9a.weights.h5").write_bytes(b"not this callback's")
    (tmp_path / "run-03.keras").write_bytes(b"not a leftover")
    callback = AtomicModelCheckpoint(tmp_path / "run-{epoch:02d}.keras")
    callback.set_model(small_model())
    callback.on_train_begin()
    assert sorted(os.listdir(tmp_path)) == [".run-03.keras.k2j4_x9a.weights.h5", "run-03.keras"]


@pytest.mark.parametrize("monitor", ["val_auc", "accuracy", "val_precision"])
def test_a_monitored_value_other_than_a_loss_needs_its_mode(monitor):
    with pytest.raises(ValueError, match=rf"{monitor}'.*pass mode='max' or mode='min'"):
        AtomicModelCheckpoint("best.keras", monitor=monitor, save_best_only=True)
    assert AtomicModelCheckpoint("best.keras", monitor=monitor, mode="max", save_best_only=True).mode == "max"
    assert AtomicModelCheckpoint("last.keras", monitor=monitor).mode == "min"  # saves every epoch


def test_a_loss_is_better_low_by_default():
    assert AtomicModelCheckpoint("best.keras", monitor="val_loss", save_best_only=True).mode == "min"
    assert AtomicModelCheckpoint("best.keras", monitor="loss", save_best_only=True).mode == "min"


def test_a_filepath_naming_a_value_that_is_not_logged_is_a_clear_error(tmp_path):
    callback = AtomicModelCheckpoint(tmp_path / "ckpt-{val_loss:.2f}.keras")
    callback.set_model(small_model())
    with pytest.raises(ValueError, match=r"ckpt-\{val_loss:\.2f\}\.keras' names 'val_loss'.*not logged"):
        callback.on_epoch_end(0, {"loss": 1.0})
    assert os.listdir(tmp_path) == []


def test_a_folder_as_the_target_is_refused_before_any_save(tmp_path):
    (tmp_path / "last.keras").mkdir()
    callback = AtomicModelCheckpoint(tmp_path / "last.keras")
    callback.set_model(small_model())
    with pytest.raises(ValueError, match="is a folder"):
        callback.on_epoch_end(0, {})
    assert os.listdir(tmp_path) == ["last.keras"] and os.listdir(tmp_path / "last.keras") == []


def test_a_folder_that_cannot_be_written_is_a_named_error(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(helpers.atomic_checkpoint.tempfile, "mkstemp", refuse)
    callback = AtomicModelCheckpoint(tmp_path / "last.keras")
    callback.set_model(small_model())
    with pytest.raises(NotWritableError, match="no permission to write into the folder") as refused:
        callback.on_epoch_end(0, {})
    assert "temporary file beside the target" in " ".join(refused.value.__notes__)
    assert os.listdir(tmp_path) == []


def test_a_folder_that_cannot_be_synced_still_saves(tmp_path, monkeypatch):
    def refuse(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(22, "Invalid argument")
        return real_fsync(fd)

    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", refuse)
    callback = AtomicModelCheckpoint(tmp_path / "last.weights.h5", save_weights_only=True)
    callback.set_model(small_model())
    callback.on_epoch_end(0, {})
    small_model().load_weights(tmp_path / "last.weights.h5")


def test_a_symbolic_link_stays_a_link_to_the_new_file(tmp_path):
    (tmp_path / "runs").mkdir()
    real = tmp_path / "runs" / "last.weights.h5"
    real.write_bytes(b"old")
    link = tmp_path / "last.weights.h5"
    link.symlink_to(real)
    model = small_model()
    callback = AtomicModelCheckpoint(link, save_weights_only=True)
    model.fit(X, Y, epochs=1, verbose=0, callbacks=[callback])
    assert link.is_symlink() and os.readlink(link) == str(real)
    restored = small_model()
    restored.load_weights(real)
    np.testing.assert_array_equal(restored.predict(X, verbose=0), model.predict(X, verbose=0))
    assert sorted(os.listdir(tmp_path / "runs")) == ["last.weights.h5"]


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux reads the umask there")
def test_the_umask_is_read_without_being_changed(tmp_path, monkeypatch):
    with open("/proc/self/status") as status:
        umask = int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    calls = []
    monkeypatch.setattr(os, "umask", lambda *args: calls.append(args) or 0)
    callback = AtomicModelCheckpoint(tmp_path / "new.keras")
    callback.set_model(small_model())
    callback.on_epoch_end(0, {})
    assert calls == []  # the process-wide umask is never set, not even for a moment
    assert stat.S_IMODE(os.stat(tmp_path / "new.keras").st_mode) == 0o666 & ~umask
