"""Unit tests of helpers.keras2, on real Keras 2 files written once per session by tf-keras."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import ex10
from helpers.errors import CheckpointMismatchError, NotACheckpointError, WouldOverwriteError
from helpers.keras2 import (
    Keras2MismatchError,
    LegacyModelError,
    legacy_custom_objects,
    Keras2RunError,
    ModelNotBuiltError,
    NotAKeras2CheckpointError,
    convert_legacy_h5,
    describe_legacy_h5,
    keras2_key_map,
    keras3_checkpoint_keys,
    renumber_keras2_zip_weights,
    restore_keras2_checkpoint,
    run_keras2,
)
from helpers.migration import write_name_based
from tests.realfiles import copy_real, expected_output, model_input

PROBE = np.array([[1, 5, 9, 2, 0, 7], [3, 3, 8, 1, 4, 6]], dtype=np.int32)

# One Keras 2 run writes every file the tests need (import tensorflow costs seconds).
KERAS2_FILES = """
def tokens_net():
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(10, 3)(tokens)
    x = keras.layers.Conv1D(4, 2, activation="relu")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(tokens, keras.layers.Dense(2)(x))

class Sub(keras.Model):
    def __init__(self):
        super().__init__()
        self.embed = keras.layers.Embedding(10, 3)
        self.blocks = [keras.layers.Dense(4), keras.layers.Dense(2)]
    def call(self, tokens):
        x = tf.reduce_mean(self.embed(tokens), axis=1)
        return self.blocks[1](self.blocks[0](x))

probe = np.array(PROBE)
rng = np.random.default_rng(1)
x, y = rng.integers(0, 10, size=(32, 6)), rng.normal(size=(32, 2))

model = tokens_net()
model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
model.fit(x, y, epochs=2, batch_size=8, verbose=0)
model.save_weights("k2/weights")
tf.train.Checkpoint(model=model, optimizer=model.optimizer).save("k2/train/ckpt")
model.save("k2/model.h5")
model.save_weights("k2/only_weights.h5")
emit("answers", model(probe))
for i, value in enumerate(model.optimizer.variables):
    emit(f"optimizer_{i}", value)

sgd = tokens_net()
sgd.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
sgd.fit(x, y, epochs=1, verbose=0)
sgd.save_weights("k2/sgd")

legacy = tokens_net()
legacy.compile(optimizer=keras.optimizers.legacy.Adam(0.01), loss="mse")
legacy.fit(x, y, epochs=1, verbose=0)
legacy.save_weights("k2/legacy")
emit("legacy_answers", legacy(probe))

sub = Sub()
sub(probe)
sub.save_weights("k2/sub")
emit("sub_answers", sub(probe))

def dense_net():  # the architectures of the checks of notebook 10
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(5, activation="tanh", use_bias=False),
                             keras.layers.Dropout(0.2), keras.layers.BatchNormalization(), keras.layers.Dense(3)])

def token_net():
    tokens = keras.Input((6,), dtype="int32")
    h = keras.layers.Flatten()(keras.layers.Embedding(15, 3)(tokens))
    h = keras.layers.LayerNormalization()(keras.layers.Dense(4, activation="relu")(h))
    return keras.Model(tokens, keras.layers.Dense(2)(h))

norm = keras.layers.Normalization()
norm.adapt(rng.normal(50.0, [3.0, 30.0, 300.0], size=(64, 3)))
normed = keras.Sequential([keras.Input((3,)), norm, keras.layers.Dense(2)])
normed.save_weights("k2/normalized")
emit("normalized_answers", normed(np.array([[50.0, 80.0, -250.0]])))

pair = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, name="first"), keras.layers.Dense(4, name="second")])
pair.save_weights("k2/pair.h5")

dense_net().save_weights("k2/dense_net")
token_net().save_weights("k2/token_net")
print("done")
""".replace("PROBE", repr(PROBE.tolist()))


@pytest.fixture(scope="session")
def k2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keras2")
    run = run_keras2(KERAS2_FILES, cwd=folder)
    assert run.stdout.strip() == "done"
    return folder, run.outputs


def tokens_net() -> keras.Model:
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.Embedding(10, 3)(tokens)
    x = keras.layers.Conv1D(4, 2, activation="relu")(x)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    return keras.Model(tokens, keras.layers.Dense(2)(x))


class Sub(keras.Model):
    def __init__(self):
        super().__init__()
        self.embed = keras.layers.Embedding(10, 3)
        self.blocks = [keras.layers.Dense(4), keras.layers.Dense(2)]

    def call(self, tokens):
        x = keras.ops.mean(self.embed(tokens), axis=1)
        return self.blocks[1](self.blocks[0](x))


def values(model):
    return [v.numpy().copy() for v in model.weights]


# --------------------------------------------------------------------------- the package


def test_the_package_gives_every_name_the_chapters_tests_and_other_modules_import():
    import helpers.keras2 as package
    from helpers.keras2 import h5

    names = ["KERAS2_ENVIRONMENT", "Keras2Export", "Keras2ExportError", "Keras2MismatchError", "Keras2RestoreReport",
             "Keras2Run", "Keras2RunError", "LegacyH5", "LegacyModelError", "ModelNotBuiltError",
             "NotAKeras2CheckpointError", "convert_legacy_h5", "describe_legacy_h5", "export_for_keras2",
             "keras2_key_map", "keras2_model_config", "keras3_checkpoint_keys", "legacy_custom_objects",
             "model_from_h5", "renumber_keras2_zip_weights", "restore_keras2_checkpoint", "run_keras2", "tf215_reads"]
    assert [name for name in names if name not in package.__all__ or not hasattr(package, name)] == []
    assert package.model_from_h5 is h5.model_from_h5


# --------------------------------------------------------------------------- run_keras2


def test_run_keras2_returns_emitted_values_and_stdout(tmp_path):
    run = run_keras2("print(keras.__name__.split('.')[0]); emit('twice', np.arange(3) * 2)", cwd=tmp_path)
    assert run.stdout.strip() == "tf_keras"
    np.testing.assert_array_equal(run.outputs["twice"], [0, 2, 4])


def test_run_keras2_reports_the_scripts_error(tmp_path):
    with pytest.raises(Keras2RunError, match=r"line 2[\s\S]*ZeroDivisionError"):
        run_keras2("x = 1\ny = x / 0", cwd=tmp_path)


def test_run_keras2_refuses_a_missing_folder(tmp_path):
    with pytest.raises(NotADirectoryError):
        run_keras2("pass", cwd=tmp_path / "nowhere")


# --------------------------------------------------------------------------- restore: the right answers


@pytest.mark.parametrize("as_path", [str, pathlib.Path])
def test_restores_save_weights_dropping_the_optimizer(k2, as_path):
    folder, outputs = k2
    model = tokens_net()
    report = restore_keras2_checkpoint(as_path(folder / "k2" / "weights"), model, drop_optimizer=True)
    assert report.complete and len(report.restored) == 9
    assert any(key.startswith("optimizer/") for key in report.dropped)
    assert "left behind on purpose" in str(report)
    np.testing.assert_allclose(model(PROBE), outputs["answers"], atol=1e-5)
    bn = model.layers[3]
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)  # the moving statistics came in


def test_restores_a_training_checkpoint_with_its_optimizer(k2):
    folder, outputs = k2
    model, optimizer = tokens_net(), keras.optimizers.Adam(0.5)
    report = restore_keras2_checkpoint(folder / "k2" / "train", model, optimizer=optimizer)  # a folder: newest
    assert report.complete and report.dropped == ["save_counter/.ATTRIBUTES/VARIABLE_VALUE"]
    keras2_optimizer = [outputs[f"optimizer_{i}"] for i in range(15)]
    assert int(optimizer.iterations.numpy()) == int(keras2_optimizer[0]) == 8
    assert float(optimizer.learning_rate.numpy()) == pytest.approx(0.01)
    slots = [v for v in optimizer.variables if v is not optimizer.iterations and "learning_rate" not in v.path]
    for slot, saved in zip(slots, keras2_optimizer[1:]):
        np.testing.assert_array_equal(slot.numpy(), saved)
    np.testing.assert_allclose(model(PROBE), outputs["answers"], atol=1e-5)


def test_restores_a_subclassed_model_with_a_list_of_layers(k2):
    folder, outputs = k2
    model = Sub()
    model(PROBE)
    report = restore_keras2_checkpoint(folder / "k2" / "sub", model)
    assert report.complete and len(report.restored) == 5
    np.testing.assert_allclose(model(PROBE), outputs["sub_answers"], atol=1e-5)


def test_key_map_pairs_keras2_keys_with_keras3_variables(k2):
    folder, _ = k2
    model = tokens_net()
    key_map = keras2_key_map(str(folder / "k2" / "weights"), model)
    assert key_map["layer_with_weights-2/moving_variance/.ATTRIBUTES/VARIABLE_VALUE"] is model.layers[3].moving_variance
    assert len(key_map) == 9


def test_legacy_optimizer_slots_are_dropped_on_request(k2):
    folder, outputs = k2
    model = tokens_net()
    report = restore_keras2_checkpoint(folder / "k2" / "legacy", model, drop_optimizer=True)
    assert report.complete and any("/.OPTIMIZER_SLOT/" in key for key in report.dropped)
    np.testing.assert_allclose(model(PROBE), outputs["legacy_answers"], atol=1e-5)


def test_odd_characters_in_the_path(k2, tmp_path):
    folder, outputs = k2
    for name in ("run 1 é", "run [1] *?"):
        odd = tmp_path / name
        odd.mkdir()
        for file in os.listdir(folder / "k2"):
            if file.startswith("weights."):
                shutil.copy(folder / "k2" / file, odd / file)
    model = tokens_net()
    restore_keras2_checkpoint(tmp_path / "run 1 é" / "weights", model, drop_optimizer=True)
    np.testing.assert_allclose(model(PROBE), outputs["answers"], atol=1e-5)
    # TensorFlow's reader takes "run [1] *?" as a glob pattern, which "run 1 é" matches: make that
    # folder's data unreadable, so that reading it instead of the named one would fail.
    [data] = [f for f in os.listdir(tmp_path / "run 1 é") if ".data-" in f]
    (tmp_path / "run 1 é" / data).write_bytes(b"")
    model = tokens_net()
    restore_keras2_checkpoint(tmp_path / "run [1] *?" / "weights", model, drop_optimizer=True)
    np.testing.assert_allclose(model(PROBE), outputs["answers"], atol=1e-5)


# --------------------------------------------------------------------------- restore: bad input


def test_strict_refuses_unhandled_optimizer_state_and_assigns_nothing(k2):
    folder, _ = k2
    model = tokens_net()
    before = values(model)
    with pytest.raises(Keras2MismatchError, match="hint: the checkpoint holds optimizer state") as caught:
        restore_keras2_checkpoint(folder / "k2" / "weights", model)
    assert "optimizer/_variables/1/.ATTRIBUTES/VARIABLE_VALUE" in caught.value.unexpected
    assert isinstance(caught.value, CheckpointMismatchError)
    assert all(np.array_equal(a, b) for a, b in zip(before, values(model)))


def test_missing_keys_name_the_variables_without_a_value(k2):
    folder, _ = k2
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.BatchNormalization()(
        keras.layers.Conv1D(4, 2)(keras.layers.Embedding(10, 3)(tokens))))
    bigger = keras.Model(tokens, keras.layers.Dense(2, name="extra")(keras.layers.Dense(2, name="head")(x)))
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_keras2_checkpoint(folder / "k2" / "weights", bigger, drop_optimizer=True)
    assert caught.value.missing == ["extra/bias", "extra/kernel"]


def test_extra_keys_are_named(k2):
    folder, _ = k2
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.BatchNormalization()(keras.layers.Conv1D(4, 2)(keras.layers.Embedding(10, 3)(tokens)))
    smaller = keras.Model(tokens, keras.layers.GlobalAveragePooling1D()(x))
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_keras2_checkpoint(folder / "k2" / "weights", smaller, drop_optimizer=True)
    assert caught.value.unexpected == [
        "layer_with_weights-3/bias/.ATTRIBUTES/VARIABLE_VALUE", "layer_with_weights-3/kernel/.ATTRIBUTES/VARIABLE_VALUE"]
    assert not caught.value.missing


def test_shape_mismatch_strict_and_lax(k2):
    folder, _ = k2
    tokens = keras.Input((6,), dtype="int32")
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.BatchNormalization()(
        keras.layers.Conv1D(4, 2)(keras.layers.Embedding(10, 5)(tokens))))
    wider = keras.Model(tokens, keras.layers.Dense(2)(x))
    with pytest.raises(CheckpointMismatchError, match="wrong shape"):
        restore_keras2_checkpoint(folder / "k2" / "weights", wider, drop_optimizer=True)
    report = restore_keras2_checkpoint(folder / "k2" / "weights", wider, strict=False, drop_optimizer=True)
    assert {key for key, *_ in report.shape_mismatches} == {
        "layer_with_weights-0/embeddings/.ATTRIBUTES/VARIABLE_VALUE",
        "layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE"}
    assert len(report.restored) == 7 and not report.complete
    assert "PARTIAL" in str(report) and "skipped: layer_with_weights-0/embeddings" in str(report)


def test_optimizer_of_another_kind_is_refused(k2):
    folder, _ = k2
    with pytest.raises(CheckpointMismatchError) as caught:
        restore_keras2_checkpoint(folder / "k2" / "sgd", tokens_net(), optimizer=keras.optimizers.Adam())
    assert any("momentum" in name for name in caught.value.missing)


def test_legacy_slots_cannot_be_carried_over(k2):
    folder, _ = k2
    with pytest.raises(CheckpointMismatchError, match="OPTIMIZER_SLOT"):
        restore_keras2_checkpoint(folder / "k2" / "legacy", tokens_net(), optimizer=keras.optimizers.Adam())


def test_unbuilt_model_and_non_models_are_refused(k2):
    folder, _ = k2
    with pytest.raises(ModelNotBuiltError, match="build it first"):
        restore_keras2_checkpoint(folder / "k2" / "weights", keras.Sequential([keras.layers.Dense(2)]))
    with pytest.raises(TypeError, match="Keras 3 model"):
        restore_keras2_checkpoint(folder / "k2" / "weights", tf.Module())


def test_checkpoints_keras2_did_not_write_are_refused(tmp_path):
    name_based = write_name_based({"dense/kernel": np.ones((2, 2), np.float32)}, str(tmp_path / "tf1" / "model"))
    with pytest.raises(NotAKeras2CheckpointError, match="name-based"):
        restore_keras2_checkpoint(name_based, tokens_net())
    model = tokens_net()
    keras3 = tf.train.Checkpoint(model=model).write(str(tmp_path / "k3" / "ckpt"))
    with pytest.raises(NotAKeras2CheckpointError, match="Keras 3 wrote it"):
        restore_keras2_checkpoint(keras3, tokens_net())
    with pytest.raises(NotACheckpointError, match="no checkpoint files"):
        restore_keras2_checkpoint(tmp_path / "nothing" / "here", tokens_net())
    assert issubclass(NotAKeras2CheckpointError, NotACheckpointError)


def test_keras3_checkpoint_keys_are_the_keys_tf_train_checkpoint_writes(tmp_path):
    model = tokens_net()
    written = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    keys = {name for name, _ in tf.train.list_variables(written)} - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    assert set(keras3_checkpoint_keys(model, edge="model").values()) == keys


# --------------------------------------------------------------------------- the checks' Keras 2 layout


@pytest.mark.parametrize("name, make", [("dense_net", ex10.make_dense_net), ("token_net", ex10.make_token_net)])
def test_the_checks_layout_is_keras2s(k2, tmp_path, name, make):
    folder, _ = k2
    real = {key for key, _ in tf.train.list_variables(str(folder / "k2" / name))} - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    model = make()
    assert set(ex10.reference_keras2_keys(model)) == real
    values = {key: np.full(tuple(v.shape), 0.5, np.float32) for key, v in ex10.reference_keras2_keys(model).items()}
    synthetic = ex10.write_keras2_layout(values, str(tmp_path / "synthetic"))
    assert {key for key, _ in tf.train.list_variables(synthetic)} - {"_CHECKPOINTABLE_OBJECT_GRAPH"} == real
    restore_keras2_checkpoint(str(folder / "k2" / name), make())  # the real file restores strictly too


# --------------------------------------------------------------------------- legacy .h5


def test_describe_legacy_h5(k2):
    folder, _ = k2
    whole = describe_legacy_h5(folder / "k2" / "model.h5")
    assert whole.keras_version.startswith("2.") and whole.has_model and whole.has_optimizer
    assert whole.layers["conv1d"][0] == ("conv1d/kernel:0", (2, 3, 4))
    assert "written by Keras 2" in repr(whole)
    weights = describe_legacy_h5(str(folder / "k2" / "only_weights.h5"))
    assert not weights.has_model and "weights only" in repr(weights)


def test_describe_legacy_h5_bad_input(tmp_path):
    with pytest.raises(NotACheckpointError, match="no such file"):
        describe_legacy_h5(tmp_path / "missing.h5")
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(NotACheckpointError, match="not an HDF5 file"):
        describe_legacy_h5(tmp_path / "text.h5")
    model = tokens_net()
    model.save_weights(str(tmp_path / "k3.weights.h5"))
    with pytest.raises(NotACheckpointError, match="not a legacy Keras .h5"):
        describe_legacy_h5(tmp_path / "k3.weights.h5")


@pytest.mark.parametrize("bomb", ["metadata.json", "model.weights.h5"])
def test_keras_zips_declaring_huge_sizes_are_refused_before_a_member_is_read(tmp_path, monkeypatch, bomb):
    import zipfile

    from helpers.errors import ArchiveTooLargeError

    path = tmp_path / "bomb.keras"  # a Keras 2.13 .keras, but for one member that inflates 1000-fold
    members = {"metadata.json": json.dumps({"keras_version": "2.13.1"}), "config.json": "{}",
               "model.weights.h5": b"not read"}
    members[bomb] = (b"{" + b" " * (16 << 20) + b"}") if bomb.endswith(".json") else bytes(16 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    read = []
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *args, **kwargs: read.append(name))
    for recipe in (lambda: renumber_keras2_zip_weights(path, tmp_path / "m.weights.h5"),
                   lambda: describe_legacy_h5(path), lambda: convert_legacy_h5(path, tmp_path / "m.keras")):
        with pytest.raises(ArchiveTooLargeError, match=f"bomb.keras' is not a readable Keras file: {bomb} "):
            recipe()
    assert read == []  # refused from the sizes the zip declares: no member was inflated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bomb.keras"]
    assert issubclass(ArchiveTooLargeError, NotACheckpointError)  # caught where a damaged file is


@pytest.mark.filterwarnings("ignore:Do not pass an `input_shape`")
@pytest.mark.parametrize("out_name", ["model.keras", "odd [1] *?.weights.h5"])
def test_convert_legacy_h5(k2, tmp_path, out_name):
    folder, outputs = k2
    out = tmp_path / out_name
    assert convert_legacy_h5(str(folder / "k2" / "model.h5"), out) == str(out)
    if out_name.endswith(".keras"):
        converted = keras.models.load_model(out)
    else:
        converted = tokens_net()
        converted.load_weights(out)
    np.testing.assert_allclose(converted.predict(PROBE, verbose=0), outputs["answers"], atol=1e-5)
    with pytest.raises(WouldOverwriteError):
        convert_legacy_h5(folder / "k2" / "model.h5", out)


def test_convert_weights_only_h5_needs_a_model(k2, tmp_path):
    folder, outputs = k2
    with pytest.raises(ValueError, match="holds weights only"):
        convert_legacy_h5(folder / "k2" / "only_weights.h5", tmp_path / "a.keras")
    model = tokens_net()
    convert_legacy_h5(folder / "k2" / "only_weights.h5", tmp_path / "a.weights.h5", model)
    np.testing.assert_allclose(model(PROBE), outputs["answers"], atol=1e-5)


def test_convert_legacy_h5_bad_input(k2, tmp_path):
    folder, _ = k2
    with pytest.raises(ValueError, match="must end in .keras or .weights.h5"):
        convert_legacy_h5(folder / "k2" / "model.h5", tmp_path / "model.h5")
    other = keras.Sequential([keras.Input((6,)), keras.layers.Dense(3)])
    with pytest.raises(CheckpointMismatchError):
        convert_legacy_h5(folder / "k2" / "model.h5", tmp_path / "b.weights.h5", other)
    assert not (tmp_path / "b.weights.h5").exists()
    with h5py.File(folder / "k2" / "model.h5") as file:  # the source is only read
        assert "model_weights" in file


# --------------------------------------------------------------------------- real Keras 2.15 files (tests/data/tf215)


def answers_like_keras2(model, name):
    np.testing.assert_allclose(np.asarray(model(model_input("tf215", name))), expected_output("tf215", name),
                               atol=1e-5)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["recurrent", "attention", "depthwise", "nested_functional", "nested_sequential",
                                  "grouped", "spatial_dropout"])
def test_convert_rebuilds_keras2_configs_keras3_refuses(tmp_path, name):
    # time_major on LSTM/GRU, MultiHeadAttention's build shapes and keyword input, groups=1 on
    # DepthwiseConv2D, groups=2 on depthwise/separable/transposed convolutions (Keras 2 ignored it),
    # SpatialDropout's noise_shape and trainable, a nested model (Keras 2 numbers its calls from 1):
    # Keras 3 alone refuses each.
    out = convert_legacy_h5(copy_real("tf215", name, tmp_path), tmp_path / "out.keras")
    answers_like_keras2(keras.models.load_model(out), name)


WRAPPED = ["bidirectional_gru", "bidirectional_lstm", "time_distributed_nested"]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", WRAPPED)
def test_recurrent_layers_inside_wrappers_load_by_both_routes(tmp_path, name):
    # issue 33: Keras 3 rebuilds a wrapper's inner layer itself, past custom_objects, so the inner
    # LSTM/GRU kept Keras 2's time_major=False and both routes failed ("Unrecognized keyword arguments").
    path = copy_real("tf215", name, tmp_path)
    with pytest.raises(ValueError, match="time_major"):
        keras.models.load_model(path, compile=False)
    model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    answers_like_keras2(model, name)
    out = convert_legacy_h5(path, tmp_path / "out.keras")
    answers_like_keras2(keras.models.load_model(out), name)  # the saved file needs nothing of ours


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_keras2_bidirectional_weights_file_loads_into_a_twin_with_its_own_backward_layer(tmp_path):
    # Keras 2 names a given backward_layer 'backward_bwd' in the file, Keras 3 names it 'bwd'.
    twin = keras.models.load_model(copy_real("tf215", "bidirectional_lstm", tmp_path),
                                   custom_objects=legacy_custom_objects(), compile=False)
    for variable in twin.weights:
        variable.assign(np.zeros(variable.shape, variable.dtype))
    convert_legacy_h5(tmp_path / "bidirectional_lstm.h5", tmp_path / "m.weights.h5", model=twin)
    answers_like_keras2(twin, "bidirectional_lstm")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("wrapper", ["Bidirectional", "TimeDistributed"])
def test_time_major_true_inside_a_wrapper_is_refused_by_both_routes(tmp_path, wrapper):
    path = copy_real("tf215", "bidirectional_gru" if wrapper == "Bidirectional" else "time_distributed_nested",
                     tmp_path)

    def edit(config):
        for layer in config["config"]["layers"]:
            if layer["class_name"] == wrapper and layer["config"]["layer"]["class_name"] in ("GRU", "LSTM"):
                layer["config"]["layer"]["config"]["time_major"] = True

    _edit_config(path, edit)
    with pytest.raises(LegacyModelError, match=r"time_major=True.*\n.*route: export it once with Keras 2"):
        convert_legacy_h5(path, tmp_path / "out.keras")
    assert not (tmp_path / "out.keras").exists()
    with pytest.raises(Exception, match="time_major=True"):
        keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["nested_sequential", "nested_functional"])
def test_a_nested_model_loads_through_load_model_with_legacy_custom_objects(tmp_path, name):
    # issue 33: a Sequential inside a functional Keras 2 model raised Keras' "Invalid Functional model
    # configuration" through this route (Keras 2 numbers a nested model's calls from 1).
    path = copy_real("tf215", name, tmp_path)
    model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    answers_like_keras2(model, name)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_legacy_custom_objects_work_with_load_model(tmp_path):
    path = copy_real("tf215", "recurrent", tmp_path)
    with pytest.raises(ValueError, match="time_major"):
        keras.models.load_model(path, compile=False)
    model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    answers_like_keras2(model, "recurrent")
    assert type(model.layers[1]) is keras.layers.LSTM  # plain Keras 3 layers: saved files need nothing of ours
    assert {"LSTM", "GRU", "DepthwiseConv2D", "MultiHeadAttention"} <= set(legacy_custom_objects())


def _edit_config(path, edit):
    with h5py.File(path, "r+") as file:
        config = json.loads(file.attrs["model_config"])
        edit(config)
        file.attrs["model_config"] = json.dumps(config)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name, message", [
    ("grouped", "DepthwiseConv2D: {'groups': 2}"), ("spatial_dropout", "unexpected keyword argument 'trainable'")])
def test_keras2_arguments_that_change_nothing_load_with_the_objects(tmp_path, name, message):
    # Real TF 2.15.1 files: groups=2 where Keras 2 ignored it (its outputs are those of groups=1),
    # SpatialDropout's noise_shape and trainable. The grouping Conv2D keeps groups=2 in Keras 3.
    path = copy_real("tf215", name, tmp_path)
    with pytest.raises(TypeError, match=re.escape(message)):
        keras.models.load_model(path, compile=False)
    model = keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    answers_like_keras2(model, name)
    if name == "grouped":
        assert model.get_layer("grouped_conv").groups == 2


@pytest.mark.parametrize("name, class_name, argument, value", [("recurrent", "LSTM", "time_major", True)])
def test_arguments_that_change_the_computation_are_refused_with_the_route(tmp_path, name, class_name, argument,
                                                                         value):
    path = copy_real("tf215", name, tmp_path)
    _edit_config(path, lambda config: [layer["config"].update({argument: value})
                                       for layer in config["config"]["layers"] if layer["class_name"] == class_name])
    with pytest.raises(LegacyModelError, match=f"{argument}={value}") as caught:
        convert_legacy_h5(path, tmp_path / "out.keras")
    assert f"({class_name})" in str(caught.value) and "model=twin" in caught.value.route
    assert not (tmp_path / "out.keras").exists()
    with pytest.raises(Exception, match=f"{argument}={value}"):
        keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_time_major_true_is_refused_with_routes_that_answer_like_keras2(tmp_path):
    # A real TF 2.15.1 LSTM(time_major=True): a plain LSTM twin loads its weights and answers
    # differently; the two routes the refusal names give TF 2.15.1's outputs.
    path = copy_real("tf215", "time_major", tmp_path)
    with pytest.raises(LegacyModelError, match=r"'tm_lstm' \(LSTM\): time_major=True") as caught:
        convert_legacy_h5(path, tmp_path / "out.keras")
    route = caught.value.route
    with pytest.raises(Exception, match="time_major=True") as loading:
        keras.models.load_model(path, custom_objects=legacy_custom_objects(), compile=False)
    assert route in str(loading.value)
    x, expected = model_input("tf215", "time_major"), expected_output("tf215", "time_major")

    def twin(swapped):
        swap = lambda: keras.layers.Lambda(lambda t: keras.ops.swapaxes(t, 0, 1))  # noqa: E731, as the route
        inputs = keras.Input((3, 2), name="steps")
        h = swap()(inputs) if swapped else inputs
        h = keras.layers.LSTM(4, return_sequences=True, name="tm_lstm")(h)
        return keras.Model(inputs, keras.layers.Dense(2, name="out")(swap()(h) if swapped else h))

    assert "keras.ops.swapaxes(t, 0, 1)" in route and "model=twin" in route
    plain, swapped = twin(False), twin(True)
    convert_legacy_h5(path, tmp_path / "plain.weights.h5", model=plain)
    assert np.abs(np.asarray(plain(x)) - expected).max() > 0.1  # loads, answers differently
    convert_legacy_h5(path, tmp_path / "m.weights.h5", model=swapped)
    np.testing.assert_allclose(np.asarray(swapped(x)), expected, atol=1e-5)
    pytest.importorskip("tf_keras")
    script = re.search(r'run_keras2\("(.*?)"\)', route).group(1).replace("m.h5", path.name)
    run_keras2(script, cwd=tmp_path)
    assert "call_endpoint='serve'" in route
    served = keras.layers.TFSMLayer(str(tmp_path / "m_export"), call_endpoint="serve")
    np.testing.assert_allclose(np.asarray(served(x)), expected, atol=1e-5)


def test_unknown_classes_and_cudnn_layers_are_named(tmp_path):
    with pytest.raises(LegacyModelError, match=r"'scaled' \(course_fixtures>ScaledDense\)") as caught:
        convert_legacy_h5(copy_real("tf215", "custom_layer", tmp_path), tmp_path / "a.keras")
    assert "custom_objects" in caught.value.route
    path = copy_real("tf215", "recurrent", tmp_path)
    _edit_config(path, lambda config: config["config"]["layers"][1].update(class_name="CuDNNLSTM"))
    with pytest.raises(LegacyModelError, match="CuDNN layout"):
        convert_legacy_h5(path, tmp_path / "b.keras")


@pytest.mark.filterwarnings("ignore:The structure of `inputs`")
def test_safe_mode_refuses_a_lambda_unless_told(tmp_path):
    path = copy_real("tf215", "lambda", tmp_path)
    with pytest.raises(LegacyModelError, match="safe_mode=False"):
        convert_legacy_h5(path, tmp_path / "a.keras")
    out = convert_legacy_h5(path, tmp_path / "b.keras", safe_mode=False)
    answers_like_keras2(keras.models.load_model(out, safe_mode=False), "lambda")


def base_twin(kind: str) -> keras.Model:
    """The nested_* twin in Keras 3, with the file's names but base_dense1 NOT frozen."""
    layers = [keras.layers.Dense(8, name="base_dense1"), keras.layers.BatchNormalization(momentum=0.5, name="base_bn"),
              keras.layers.Dense(8, activation="relu", name="base_dense2")]
    if kind == "sequential":
        base = keras.Sequential([keras.Input((6,)), *layers], name="base")
    else:
        x = b_in = keras.Input((6,))
        for layer in layers:
            x = layer(x)
        base = keras.Model(b_in, x, name="base")
    inputs = keras.Input((6,))
    x = keras.layers.Dropout(0.2, name="drop")(base(inputs))
    return keras.Model(inputs, keras.layers.Dense(3, name="head")(x))


@pytest.mark.parametrize("kind", ["functional", "sequential"])
def test_a_twin_with_a_base_model_inside_converts_by_name(tmp_path, kind):
    # Keras 2 stored base's weights trainable first, then non-trainable (the frozen Dense, the
    # moving statistics); pairing by position refused this twin.
    name = f"nested_{kind}_weights"
    model = base_twin(kind)
    convert_legacy_h5(copy_real("tf215", name, tmp_path), tmp_path / "m.weights.h5", model)
    answers_like_keras2(model, name)


def test_swapped_layers_of_equal_shapes_are_refused_and_nothing_changes(k2, tmp_path):
    folder, _ = k2
    swapped = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4, name="second"),
                                keras.layers.Dense(4, name="first")])
    before = values(swapped)
    with pytest.raises(Keras2MismatchError, match="another order"):
        convert_legacy_h5(folder / "k2" / "pair.h5", tmp_path / "m.weights.h5", swapped)
    assert all(np.array_equal(a, b) for a, b in zip(before, values(swapped)))
    assert not (tmp_path / "m.weights.h5").exists()


def test_a_failure_leaves_the_twin_unchanged(tmp_path):
    # sequential_weights: Dense(8) -> Dropout -> Dense(3); a twin whose last layer is wider.
    model = keras.Sequential([keras.Input((model_input("tf215", "sequential_weights").shape[-1],)),
                              keras.layers.Dense(8, activation="relu"), keras.layers.Dropout(0.25),
                              keras.layers.Dense(4)])
    before = values(model)
    with pytest.raises(Keras2MismatchError, match="wrong shape"):
        convert_legacy_h5(copy_real("tf215", "sequential_weights", tmp_path), tmp_path / "m.weights.h5", model)
    assert all(np.array_equal(a, b) for a, b in zip(before, values(model)))


def test_cudnn_layout_converts_into_lstm_and_gru_but_not_gru_reset_after_false(tmp_path):
    # The CuDNN layout converts (outputs checked against Keras 2's own conversion in
    # test_keras2_realfiles); GRU(reset_after=False) has one bias per gate, which CuDNN's cannot fill.
    model = keras.Sequential([keras.Input((4, 2)), keras.layers.LSTM(3, name="cudnn_lstm"),
                              keras.layers.Dense(1, name="out")])
    convert_legacy_h5(copy_real("tf215", "cudnn_lstm_weights", tmp_path / "a"), tmp_path / "m.weights.h5", model)
    model = keras.Sequential([keras.Input((4, 2)), keras.layers.GRU(3, reset_after=False, name="cudnn_gru"),
                              keras.layers.Dense(1, name="out")])
    with pytest.raises(Keras2MismatchError, match="CuDNN layout"):
        convert_legacy_h5(copy_real("tf215", "cudnn_gru_weights", tmp_path / "b"), tmp_path / "g.weights.h5", model)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_adapted_normalization_converts_with_its_statistics(tmp_path):
    out = convert_legacy_h5(copy_real("tf215", "normalization", tmp_path), tmp_path / "m.keras")
    answers_like_keras2(keras.models.load_model(out), "normalization")


def test_restore_refreshes_an_adapted_normalization(k2):
    folder, outputs = k2
    model = keras.Sequential([keras.Input((3,)), keras.layers.Normalization(), keras.layers.Dense(2)])
    model.layers[0].adapt(np.zeros((4, 3), np.float32))  # adapted to other data: a stale cache
    restore_keras2_checkpoint(folder / "k2" / "normalized", model)
    np.testing.assert_allclose(model(np.array([[50.0, 80.0, -250.0]])), outputs["normalized_answers"], rtol=1e-5)


def test_restore_keras2_optimizer_from_tf215(tmp_path):
    path = copy_real("tf215", "tfckpt_opt", tmp_path)
    inputs = keras.Input((5,))
    x = keras.layers.Activation("relu")(keras.layers.BatchNormalization()(keras.layers.Dense(6)(inputs)))
    model = keras.Model(inputs, keras.layers.Dense(2)(x))
    optimizer = keras.optimizers.Adam()
    report = restore_keras2_checkpoint(path, model, optimizer=optimizer)
    assert report.complete and int(optimizer.iterations.numpy()) > 0
    answers_like_keras2(model, "tfckpt_opt")


def test_optimizer_slots_that_do_not_pair_are_not_restored_even_when_lax(k2):
    folder, _ = k2
    model, optimizer = tokens_net(), keras.optimizers.Adam(amsgrad=True)  # one slot more per variable
    optimizer.build(model.trainable_variables)
    before = [v.numpy().copy() for v in optimizer.variables]
    report = restore_keras2_checkpoint(folder / "k2" / "train", model, strict=False, optimizer=optimizer)
    assert [v.numpy() for v in optimizer.variables][0] == before[0]  # not even the step
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, optimizer.variables))
    assert not report.complete and len(report.restored) == 9  # the model itself is restored


@pytest.mark.parametrize("what, reason", [
    ("keras215", "build the model in Keras 3 code and read the weights with twin.load_weights"),
    ("truncated", "damaged HDF5 file"),
])
def test_hints_name_the_route_that_works(tmp_path, what, reason):
    if what == "keras215":
        path = copy_real("tf215", "functional_bn_keras", tmp_path)
    else:
        source = copy_real("tf215", "functional_bn", tmp_path)
        path = tmp_path / "cut.h5"
        path.write_bytes(source.read_bytes()[: source.stat().st_size // 3])
    with pytest.raises(NotACheckpointError, match=reason) as caught:
        describe_legacy_h5(path)
    assert "load it with keras.models.load_model" not in str(caught.value)  # the old hint, which fails


def test_a_damaged_h5_raises_a_named_error_that_calls_it_a_damaged_h5(tmp_path):
    from helpers.errors import DamagedH5Error

    path = copy_real("tf215", "sequential", tmp_path)
    with h5py.File(path, "r+") as h5:
        h5.attrs["model_config"] = "{not json"  # was a raw json.JSONDecodeError
    with pytest.raises(DamagedH5Error, match=r"is a damaged \.h5 file: its model_config is not JSON") as caught:
        convert_legacy_h5(path, tmp_path / "out.keras")
    assert isinstance(caught.value, NotACheckpointError) and "checkpoint" not in str(caught.value)
    assert not (tmp_path / "out.keras").exists()
    cut = tmp_path / "cut.h5"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
    for call in (lambda: describe_legacy_h5(cut), lambda: convert_legacy_h5(cut, tmp_path / "out.keras")):
        with pytest.raises(DamagedH5Error, match=r"is a damaged \.h5 file: a damaged HDF5 file") as caught:
            call()
        assert "checkpoint" not in str(caught.value)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_keras2_rnn_around_a_cell_and_a_wrapped_simple_rnn_load_by_both_routes(tmp_path):
    # Keras 2's RNN writes time_major itself (RNN(LSTMCell)), and SimpleRNN inside Bidirectional:
    # written by tf-keras 2.21 (Keras 2), here in the test process beside Keras 3.
    import tf_keras

    inputs = tf_keras.Input((5, 3))
    h = tf_keras.layers.RNN(tf_keras.layers.LSTMCell(4), name="rnn")(inputs)
    h2 = tf_keras.layers.Bidirectional(tf_keras.layers.SimpleRNN(2), name="bi")(inputs)
    written = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(tf_keras.layers.Concatenate()([h, h2])))
    x = np.sin(np.arange(30, dtype=np.float32)).reshape(2, 5, 3)
    written.save(tmp_path / "k2.h5")
    with pytest.raises(ValueError, match="time_major"):
        keras.models.load_model(tmp_path / "k2.h5", compile=False)
    loaded = keras.models.load_model(tmp_path / "k2.h5", custom_objects=legacy_custom_objects(), compile=False)
    np.testing.assert_allclose(np.asarray(loaded(x)), written(x).numpy(), atol=1e-6)
    out = convert_legacy_h5(tmp_path / "k2.h5", tmp_path / "k3.keras")
    np.testing.assert_allclose(np.asarray(keras.models.load_model(out)(x)), written(x).numpy(), atol=1e-6)
