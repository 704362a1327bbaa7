"""AtomicModelCheckpoint: saves like ModelCheckpoint, never leaves a cut file, touches no other file."""

import os
import stat

import keras
import numpy as np
import pytest

from helpers.atomic_checkpoint import AtomicModelCheckpoint

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
