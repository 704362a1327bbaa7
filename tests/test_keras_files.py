"""Unit tests of helpers.keras_files: describing Keras 3 files and proving a model's state is in one."""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.errors import NotACheckpointError
from tests.realfiles import copy_real, truncated
from helpers.keras_files import (
    ModelNotBuiltError,
    NotAKerasFileError,
    describe_keras_file,
    latest_keras_file,
    missing_from_file,
    owned_variables,
)

X = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)
Y = X.sum(axis=1, keepdims=True)


def _model(hidden: int = 4) -> keras.Sequential:
    keras.utils.set_random_seed(0)
    return keras.Sequential([
        keras.Input((3,)),
        keras.layers.Dense(hidden, name="hidden"),
        keras.layers.BatchNormalization(name="norm"),
        keras.layers.Dense(1, name="head"),
    ])


@pytest.fixture(scope="module")
def trained() -> keras.Sequential:
    model = _model()
    model.compile(keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    model.fit(X, Y, epochs=2, verbose=0)
    return model


@pytest.fixture(scope="module")
def files(trained, tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("odd [name] *?")  # a folder name that globbing would misread
    paths = {
        "keras": folder / "model one.keras",
        "weights": folder / "model one.weights.h5",
        "sharded": folder / "model [v2].weights.json",
    }
    trained.save(paths["keras"])
    trained.save_weights(paths["weights"])
    trained.save_weights(paths["sharded"], max_shard_size=1e-7)  # about 107 bytes a shard
    return paths


class Odd(keras.layers.Layer):
    """A layer that keeps state in every way people do, tracked or not."""

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 2), name="w")
        self.count = self.add_weight(shape=(), initializer="zeros", trainable=False, name="count", dtype="int64")
        self.offset = tf.Variable([0.5, -0.5], name="offset")  # untracked: a plain tf.Variable
        self.history = [tf.Variable(1.0), tf.Variable(2.0)]  # untracked: a list of them
        self.keras_list = [keras.Variable(3.0, name="in_list")]  # tracked

    def call(self, x):
        return x @ self.w + self.offset


# --------------------------------------------------------------------------- describe_keras_file


@pytest.mark.parametrize("kind", ["keras", "weights"])
def test_describe_lists_every_weight(files, trained, kind):
    description = describe_keras_file(files[kind])
    assert description.kind == {"keras": "keras archive", "weights": "weights"}[kind]
    assert "layers/dense/vars/0" in description.paths
    kernel = description.weights[description.paths.index("layers/dense/vars/0")]
    assert (kernel.layer, kernel.shape, kernel.dtype, kernel.nbytes) == ("hidden", (3, 4), "float32", 48)
    # the model's weights and the optimizer's (its iterations, learning rate and 2 slots per weight)
    assert len(description) == len(trained.weights) + 2 + 2 * len(trained.trainable_weights)
    assert description.paths.index("optimizer/vars/2") < description.paths.index("optimizer/vars/10")
    text = repr(description)
    assert text.splitlines()[0].split() == ["weight", "layer", "shape", "dtype", "size"]
    assert text.splitlines()[-1] == f"{len(description)} weights, {description.total_bytes} B"
    assert max(len(line) for line in text.splitlines()) < 100


def test_describe_sharded_names_each_shard(files):
    sharded = describe_keras_file(str(files["sharded"]))
    whole = describe_keras_file(files["weights"])
    assert sharded.kind == "sharded weights"
    assert sharded.paths == whole.paths
    assert [w.layer for w in sharded.weights] == [w.layer for w in whole.weights]
    assert len(sharded.shards) > 2
    assert all(w.shard.startswith("model [v2]_") for w in sharded.weights)
    assert repr(sharded).splitlines()[0].split()[-1] == "shard"
    assert repr(sharded).endswith(f"in {len(sharded.shards)} shards")


def test_describe_accepts_str_and_pathlike(files):
    assert describe_keras_file(str(files["weights"])).paths == describe_keras_file(files["weights"]).paths


def test_describe_refuses_what_is_not_a_path():
    with pytest.raises(TypeError, match="must be a str or os.PathLike"):
        describe_keras_file(3)


def test_describe_refuses_a_missing_path_and_a_folder(tmp_path):
    with pytest.raises(NotAKerasFileError, match="no such file"):
        describe_keras_file(tmp_path / "gone.keras")
    with pytest.raises(NotAKerasFileError, match="a folder"):
        describe_keras_file(tmp_path)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("model", "does not end in .keras"),
        ("model.h5", "truncated or damaged HDF5"),
        ("ckpt-1.index", "checkpoint's files"),
        ("ckpt-1.data-00000-of-00001", "checkpoint's files"),
    ],
)
def test_describe_refuses_other_names(tmp_path, name, reason):
    (tmp_path / name).write_bytes(b"x")
    with pytest.raises(NotAKerasFileError, match=reason):
        describe_keras_file(tmp_path / name)


def test_error_is_a_value_error_and_names_the_path(tmp_path):
    with pytest.raises(ValueError) as caught:
        describe_keras_file(tmp_path / "x.keras")
    assert isinstance(caught.value, NotACheckpointError)
    assert str(caught.value).startswith(repr(str(tmp_path / "x.keras")) + " is not a readable Keras file")


def test_describe_refuses_a_truncated_archive(files, tmp_path):
    broken = tmp_path / "broken.keras"
    broken.write_bytes(files["keras"].read_bytes()[:300])
    with pytest.raises(NotAKerasFileError, match="truncated"):
        describe_keras_file(broken)


def test_describe_refuses_a_zip_without_weights(tmp_path):
    with zipfile.ZipFile(tmp_path / "config only.keras", "w") as archive:
        archive.writestr("config.json", "{}")
    with pytest.raises(NotAKerasFileError, match="no 'model.weights.h5'"):
        describe_keras_file(tmp_path / "config only.keras")


def test_describe_refuses_npz_weights_in_an_archive(tmp_path):
    with zipfile.ZipFile(tmp_path / "npz.keras", "w") as archive:
        archive.writestr("model.weights.npz", b"")
    with pytest.raises(NotAKerasFileError, match="model.weights.npz"):
        describe_keras_file(tmp_path / "npz.keras")


def test_describe_refuses_a_truncated_weights_file(files, tmp_path):
    broken = tmp_path / "broken.weights.h5"
    broken.write_bytes(files["weights"].read_bytes()[:1000])
    with pytest.raises(NotAKerasFileError, match="truncated"):
        describe_keras_file(broken)


def test_describe_refuses_hdf5_that_is_not_keras_weights(tmp_path):
    with h5py.File(tmp_path / "data.weights.h5", "w") as h5:
        h5["images"] = np.zeros((2, 2))
    with pytest.raises(NotAKerasFileError, match="not Keras weights.*'images'"):
        describe_keras_file(tmp_path / "data.weights.h5")
    with h5py.File(tmp_path / "empty.weights.h5", "w"):
        pass
    with pytest.raises(NotAKerasFileError, match="no Keras weights"):
        describe_keras_file(tmp_path / "empty.weights.h5")


def test_describe_refuses_a_keras2_weights_file_renamed(tmp_path):
    with h5py.File(tmp_path / "old.weights.h5", "w") as h5:
        h5.attrs["layer_names"] = [b"dense"]
        h5.create_group("dense")["dense/kernel:0"] = np.zeros((3, 2))
    with pytest.raises(NotAKerasFileError, match="Keras 2 layout"):
        describe_keras_file(tmp_path / "old.weights.h5")


def test_describe_refuses_a_text_file_with_a_weights_name(tmp_path):
    (tmp_path / "notes.weights.h5").write_text("not hdf5")
    with pytest.raises(NotAKerasFileError, match="not an HDF5 file"):
        describe_keras_file(tmp_path / "notes.weights.h5")


def test_describe_sharded_with_a_missing_shard(files, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(files["sharded"].parent, copy)
    shard = sorted(copy.glob("model ?v2?_*.weights.h5"))[1]
    shard.unlink()
    with pytest.raises(NotAKerasFileError, match=re.escape(f"missing beside the index: '{shard.name}'")):
        describe_keras_file(copy / files["sharded"].name)


@pytest.mark.parametrize("content", ["not json", json.dumps({"metadata": {}}), json.dumps({"weight_map": []})])
def test_describe_refuses_a_bad_index(tmp_path, content):
    (tmp_path / "x.weights.json").write_text(content)
    with pytest.raises(NotAKerasFileError, match="not a sharded-weights index"):
        describe_keras_file(tmp_path / "x.weights.json")


# --------------------------------------------------------------------------- owned_variables


def test_owned_variables_finds_untracked_ones():
    model = keras.Sequential([keras.Input((3,)), Odd(name="odd")])
    names = list(owned_variables(model))
    assert all("odd/" in name for name in names)
    tracked = {v.path for v in model.weights}
    assert tracked <= set(names)
    assert {"odd/offset", "odd/history[0]", "odd/history[1]"} <= set(names)
    assert len(names) == len(tracked) + 3


def test_owned_variables_leaves_out_metrics_and_seeds(trained):
    dropout = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    assert list(owned_variables(dropout)) == [v.path for v in dropout.weights]
    names = owned_variables(trained)
    assert not any("mean_absolute_error" in name or name.startswith("loss/") for name in names)
    assert len(owned_variables(trained, include_optimizer=False)) == len(trained.weights)


# --------------------------------------------------------------------------- missing_from_file


@pytest.mark.parametrize("kind", ["keras", "weights", "sharded"])
def test_a_complete_file_misses_nothing(files, trained, kind):
    before = [v.numpy().copy() for v in trained.variables]
    assert missing_from_file(trained, files[kind]) == []
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, trained.variables))  # the model is unchanged


def test_missing_from_file_finds_untracked_state(tmp_path):
    model = keras.Sequential([keras.Input((3,)), Odd(name="odd")])
    model.save_weights(tmp_path / "odd.weights.h5")
    missing = missing_from_file(model, str(tmp_path / "odd.weights.h5"))
    assert missing == ["odd/offset", "odd/history[0]", "odd/history[1]"]


def test_missing_from_file_in_a_changed_model(files):
    wider = _model(hidden=5)  # 'hidden' and 'norm' no longer fit; 'head' is (5, 1) now, too
    missing = missing_from_file(wider, files["weights"], include_optimizer=False)
    assert missing == [v.path for v in wider.weights]
    same = _model()
    assert missing_from_file(same, files["weights"], include_optimizer=False) == []


def test_missing_from_file_says_the_optimizer_is_not_built(files):
    fresh = _model()
    fresh.compile(keras.optimizers.Adam(0.01), "mse")
    with pytest.raises(ModelNotBuiltError, match="optimizer 'adam.*' is not built.*optimizer.build"):
        missing_from_file(fresh, files["weights"])
    assert missing_from_file(fresh, files["weights"], include_optimizer=False) == []
    fresh.optimizer.build(fresh.trainable_variables)  # the route the message names
    assert missing_from_file(fresh, files["weights"]) == []


def test_missing_from_file_exact_even_when_the_file_holds_the_markers(tmp_path):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="d")])
    model.layers[0].kernel.assign(np.ones((2, 1)))  # 1 is one of the markers
    model.layers[0].bias.assign([2.0])  # and 2 the other
    model.save_weights(tmp_path / "m.weights.h5")
    assert missing_from_file(model, tmp_path / "m.weights.h5") == []


def test_missing_from_file_refuses_bad_input(tmp_path, files):
    model = _model()
    with pytest.raises(NotAKerasFileError):
        missing_from_file(model, tmp_path / "none.weights.h5")
    unbuilt = keras.Sequential([keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="not built"):
        missing_from_file(unbuilt, files["weights"])


# --------------------------------------------------------------------------- latest_keras_file


def test_latest_keras_file_compares_numbers(tmp_path):
    folder = tmp_path / "runs [1]"
    folder.mkdir()
    for epoch in (2, 9, 10):
        (folder / f"model-{epoch}.weights.h5").write_bytes(b"")
    (folder / "model-11.keras").write_bytes(b"")
    assert latest_keras_file(folder) == os.path.join(str(folder), "model-10.weights.h5")
    assert latest_keras_file(str(folder), ".keras") == os.path.join(str(folder), "model-11.keras")
    assert tf.train.latest_checkpoint(str(folder)) is None


def test_latest_keras_file_skips_shards(tmp_path):
    (tmp_path / "big.weights.json").write_text("{}")
    (tmp_path / "big_00003.weights.h5").write_bytes(b"")
    (tmp_path / "run_00002.weights.h5").write_bytes(b"")  # no index beside it: a whole file
    assert latest_keras_file(tmp_path) == os.path.join(str(tmp_path), "run_00002.weights.h5")
    assert latest_keras_file(tmp_path, ".weights.json") == os.path.join(str(tmp_path), "big.weights.json")


def test_latest_keras_file_none_and_errors(tmp_path):
    assert latest_keras_file(tmp_path) is None
    with pytest.raises(NotAKerasFileError, match="no such folder"):
        latest_keras_file(tmp_path / "nope")
    (tmp_path / "f.keras").write_bytes(b"")
    with pytest.raises(NotAKerasFileError, match="a file, not a folder"):
        latest_keras_file(tmp_path / "f.keras")
    with pytest.raises(ValueError, match="suffix must be one of"):
        latest_keras_file(tmp_path, ".h5")


def test_owned_variables_in_a_subclassed_model_with_a_dict(tmp_path):
    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.encoder = keras.layers.Dense(2, name="encoder")
            self.offsets = {"low": tf.Variable(-1.0), "high": tf.Variable(1.0)}  # untracked by Keras

        def call(self, x):
            return self.encoder(x) + self.offsets["low"]

    net = Net()
    net(tf.ones((1, 3)))
    names = list(owned_variables(net))
    assert names[:2] == [v.path for v in net.weights]
    assert names[2:] == ["net/offsets['low']", "net/offsets['high']"]
    net.save_weights(tmp_path / "net.weights.h5")
    assert missing_from_file(net, tmp_path / "net.weights.h5") == names[2:]


# --------------------------------------------------------------------------- nothing changes (issue 22, item 5)


def _trained_adam(tmp_path):
    model = _model()
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.fit(X, Y, epochs=2, verbose=0)
    model.save_weights(tmp_path / "early.weights.h5")
    model.fit(X, Y, epochs=1, verbose=0)  # the model moves on: the file holds older values
    return model


def _values(model) -> list[np.ndarray]:
    return [np.array(v.numpy(), copy=True) for v in [*model.variables, *model.optimizer.variables]]


@pytest.mark.parametrize("include_optimizer", [True, False])
def test_missing_from_file_leaves_the_optimizer_alone(tmp_path, include_optimizer):
    model = _trained_adam(tmp_path)
    before = _values(model)
    assert missing_from_file(model, tmp_path / "early.weights.h5", include_optimizer=include_optimizer) == []
    after = _values(model)
    assert all(np.array_equal(a, b) for a, b in zip(before, after))  # iterations and slots too
    assert int(model.optimizer.iterations) == 3


def test_missing_from_file_leaves_an_adapted_layer_alone(tmp_path):
    data = np.random.default_rng(3).normal(50.0, 20.0, size=(32, 3)).astype("float32")
    norm = keras.layers.Normalization(name="norm")
    norm.adapt(data)
    model = keras.Sequential([keras.Input((3,)), norm, keras.layers.Dense(1, name="out")])
    model.save_weights(tmp_path / "adapted.weights.h5")
    norm.adapt(data * 3.0 + 7.0)  # adapted again: the file holds other statistics
    answer = model(data[:4]).numpy()
    assert missing_from_file(model, tmp_path / "adapted.weights.h5") == []
    np.testing.assert_array_equal(model(data[:4]).numpy(), answer)  # the derived mean and variance too


@keras.saving.register_keras_serializable("test_keras_files")
class LayersInBuild(keras.Model):
    """Makes its layer in build(): reloads from .keras with that layer never built."""

    def build(self, shape):
        self.inner = keras.layers.Dense(2, name="inner")

    def call(self, x):
        return self.inner(x)


def test_missing_from_file_reports_layers_a_reload_never_built(tmp_path):
    net = LayersInBuild()
    net(X)
    net.save(tmp_path / "net.keras")
    reloaded = keras.models.load_model(tmp_path / "net.keras")
    assert reloaded.built and not reloaded.inner.built  # no error from Keras
    with pytest.raises(ModelNotBuiltError, match="'inner'.*never built.*fresh random"):
        missing_from_file(reloaded, tmp_path / "net.keras")
    reloaded(X)  # built now, with fresh random weights; the file holds values for all of them
    assert missing_from_file(reloaded, tmp_path / "net.keras") == []


# --------------------------------------------------------------------------- real files (Keras 2.15)


def _keras2_twin() -> keras.Model:
    """The Keras 3 twin of tests/data/tf215's functional_bn."""
    keras.utils.set_random_seed(1)
    inputs = keras.Input((5,))
    hidden = keras.layers.BatchNormalization()(keras.layers.Dense(6)(inputs))
    outputs = keras.layers.Dense(2)(keras.layers.Activation("relu")(hidden))
    return keras.Model(inputs, outputs)


def test_real_keras2_weights_file_with_an_unbuilt_optimizer(tmp_path):
    path = copy_real("tf215", "functional_bn_weights_new", tmp_path)  # written by Keras 2.15
    model = _keras2_twin()
    model.compile(keras.optimizers.Adam(0.01), "mse")
    with pytest.raises(ModelNotBuiltError, match="not built.*the file holds 13 optimizer values"):
        missing_from_file(model, path)
    assert missing_from_file(model, path, include_optimizer=False) == []
    model.optimizer.build(model.trainable_variables)
    missing = missing_from_file(model, path)  # Keras 2's 13 values do not fit Keras 3's 14
    optimizer = [name for name in owned_variables(model) if name not in owned_variables(model, False)]
    assert len(optimizer) == 14 and missing == optimizer


def test_real_keras2_archive_leaves_the_model_alone(tmp_path):
    path = copy_real("tf215", "functional_bn_keras", tmp_path)
    model = _keras2_twin()
    model.compile(keras.optimizers.Adam(0.01), "mse")
    model.fit(np.ones((4, 5), "float32"), np.ones((4, 2), "float32"), verbose=0)
    before = _values(model) + [np.array(v.numpy()) for v in model.metrics_variables]
    missing_from_file(model, path)
    after = _values(model) + [np.array(v.numpy()) for v in model.metrics_variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after))


def test_a_truncated_legacy_h5_is_called_truncated(tmp_path):
    path = truncated(copy_real("tf215", "functional_bn", tmp_path), tmp_path / "cut.h5", 0.5)
    with pytest.raises(NotAKerasFileError, match="truncated or damaged HDF5") as caught:
        describe_keras_file(path)
    assert "zip" not in str(caught.value)


@pytest.mark.parametrize("name, route", [
    ("functional_bn", "load_model"), ("functional_bn_weights", "load_weights"),
])
def test_a_legacy_h5_gets_the_route_that_reads_it(tmp_path, name, route):
    path = copy_real("tf215", name, tmp_path)
    with pytest.raises(NotAKerasFileError, match=f"legacy .*{route}"):
        describe_keras_file(path)
    if route == "load_model":
        keras.models.load_model(path, compile=False)  # the advice works
    else:
        _keras2_twin().load_weights(path)


def test_a_checkpoint_prefix_is_named(tmp_path):
    from helpers.inspection import describe_checkpoint
    from helpers.keras2 import restore_keras2_checkpoint

    prefix = copy_real("tf215", "ckpt_keras2_noopt", tmp_path)
    with pytest.raises(NotAKerasFileError, match="checkpoint prefix.*describe_checkpoint.*restore_keras2_checkpoint"):
        describe_keras_file(prefix)
    with pytest.raises(NotAKerasFileError, match="checkpoint prefix"):
        missing_from_file(_keras2_twin(), prefix)
    assert len(describe_checkpoint(prefix).keys) > 0  # the routes the message names work
    restore_keras2_checkpoint(prefix, _keras2_twin())


@pytest.mark.parametrize("name, words", [
    ("savedmodel_keras2", "SavedModel folder.*describe_saved_model"),
    ("manager", "checkpoints.*describe_checkpoint"),
])
def test_a_folder_is_named(tmp_path, name, words):
    path = copy_real("tf215", name, tmp_path)
    with pytest.raises(NotAKerasFileError, match=words):
        describe_keras_file(path)


# --------------------------------------------------------------------------- latest_keras_file (item 6)


def test_latest_keras_file_prefers_the_newest_numbered_file(tmp_path):
    for name in ("model-9.weights.h5", "model-10.weights.h5", "model.weights.h5", "best.weights.h5"):
        (tmp_path / name).write_bytes(b"")
    assert latest_keras_file(tmp_path) == os.path.join(str(tmp_path), "model-10.weights.h5")


def test_latest_keras_file_ties_and_unnumbered_files(tmp_path):
    (tmp_path / "model.weights.h5").write_bytes(b"")
    (tmp_path / "best.weights.h5").write_bytes(b"")
    assert latest_keras_file(tmp_path) == os.path.join(str(tmp_path), "model.weights.h5")  # by name
    (tmp_path / "model-05.weights.h5").write_bytes(b"")
    (tmp_path / "model-5.weights.h5").write_bytes(b"")
    assert latest_keras_file(tmp_path) == os.path.join(str(tmp_path), "model-5.weights.h5")
    (tmp_path / "model-03-0.12.weights.h5").write_bytes(b"")  # epoch, then a loss: the epoch decides
    assert latest_keras_file(tmp_path) == os.path.join(str(tmp_path), "model-5.weights.h5")
