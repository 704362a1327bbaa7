"""The checks of notebook 09: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex09, forget_hints
from helpers.saved_models import describe_saved_model

V1 = tf.compat.v1


@pytest.fixture(autouse=True)
def _first_steps():
    """Every test starts from the first step of each stepped hint."""
    forget_hints()
    yield
    forget_hints()


def not_done(*args):
    raise NotImplementedError()


# --------------------------------------------------------------------------- 09.1


def call_serving_default(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (input_key,) = signature.structured_input_signature[1]
    (output_key,) = signature.structured_outputs
    return signature(**{input_key: batch})[output_key].numpy()


def call_serving_default_values(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    name = list(signature.structured_input_signature[1])[0]
    outputs = signature(**{name: tf.constant(batch, dtype=tf.float32)})
    return np.asarray(list(outputs.values())[0])


def call_serving_default_described(path, batch):
    keys = describe_saved_model(path).signature("serving_default")
    loaded = tf.saved_model.load(path)
    result = loaded.signatures["serving_default"](**{keys.input_keys[0]: tf.cast(batch, tf.float32)})
    return result[keys.output_keys[0]].numpy()


def call_serving_default_tf1(path, batch):
    with tf.Graph().as_default(), V1.Session() as sess:
        meta_graph = V1.saved_model.loader.load(sess, ["serve"], path)
        signature = meta_graph.signature_def["serving_default"]
        (feed,) = [info.name for info in signature.inputs.values()]
        (fetch,) = [info.name for info in signature.outputs.values()]
        return sess.run(fetch, {feed: batch})


def hard_coded_input(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    return signature(features=batch)["score"].numpy()


def hard_coded_output(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (input_key,) = signature.structured_input_signature[1]
    return signature(**{input_key: batch})["output_0"].numpy()


def returns_the_dict(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (input_key,) = signature.structured_input_signature[1]
    return signature(**{input_key: batch})


def returns_a_tensor(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (input_key,) = signature.structured_input_signature[1]
    (output_key,) = signature.structured_outputs
    return signature(**{input_key: batch})[output_key]


def float64_tensor(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    (input_key,) = signature.structured_input_signature[1]
    (output_key,) = signature.structured_outputs
    return signature(**{input_key: tf.constant(batch)})[output_key].numpy()


def calls_the_object(path, batch):
    return tf.saved_model.load(path)(batch).numpy()


def other_signature(path, batch):
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures[sorted(loaded.signatures)[-1]]  # 'zeros' sorts after 'serving_default'
    (input_key,) = signature.structured_input_signature[1]
    (output_key,) = signature.structured_outputs
    return signature(**{input_key: tf.constant(batch, tf.float32)})[output_key].numpy()


def first_row_only(path, batch):
    return call_serving_default(path, batch)[0]


def test_call_serving_default(capsys):
    ex09.check_call_serving_default(call_serving_default)
    assert "✔ Exercise 09.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [call_serving_default_values, call_serving_default_described, call_serving_default_tf1])
def test_call_serving_default_alternatives(answer, capsys):
    ex09.check_call_serving_default(answer)
    assert "✔ Exercise 09.1 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (hard_coded_input, r"(?s)raised TypeError in hard_coded_input.*missing a required (keyword-only )?argument: 'measurements'"),
        (hard_coded_output, r"(?s)raised KeyError in hard_coded_output.*'output_0'.*print its keys"),
        (returns_the_dict, r"returned a dict \(\['probability'\]\)"),
        (returns_a_tensor, r"returned a EagerTensor; return a NumPy array"),
        (float64_tensor, r"(?s)raised InvalidArgumentError.*float64 met float32"),
        (calls_the_object, r"(?s)raised TypeError in calls_the_object.*not callable"),
        (other_signature, r"not the serving_default signature's answer"),
        (first_row_only, r"you returned shape \(2,\)"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_call_serving_default_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex09.check_call_serving_default(answer)


def test_call_serving_default_not_done():
    with pytest.raises(ExerciseNotDone):
        ex09.check_call_serving_default(not_done)


# --------------------------------------------------------------------------- 09.2


def run_tf1_signature(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as sess:
        meta_graph = V1.saved_model.loader.load(sess, tags, path)
        signature = meta_graph.signature_def["serving_default"]
        feed_dict = {signature.inputs[key].name: value for key, value in feeds.items()}
        names = {key: info.name for key, info in signature.outputs.items()}
        return sess.run(names, feed_dict)


def run_tf1_signature_tf2(path, tags, feeds):
    signature = tf.saved_model.load(path, tags=tags).signatures["serving_default"]
    outputs = signature(**{key: tf.constant(value) for key, value in feeds.items()})
    return {key: value.numpy() for key, value in outputs.items()}


def run_tf1_signature_tensors(path, tags, feeds):
    graph = tf.Graph()
    with graph.as_default():
        sess = V1.Session(graph=graph)
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        feed = {graph.get_tensor_by_name(signature.inputs[k].name): v for k, v in feeds.items()}
        result = {}
        for key in signature.outputs:
            result[key] = sess.run(graph.get_tensor_by_name(signature.outputs[key].name), feed)
        sess.close()
    return result


def always_serve(path, tags, feeds):
    return run_tf1_signature(path, ["serve"], feeds)


def feeds_by_key_name(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as sess:
        meta_graph = V1.saved_model.loader.load(sess, tags, path)
        signature = meta_graph.signature_def["serving_default"]
        names = {key: info.name for key, info in signature.outputs.items()}
        return sess.run(names, {f"{key}:0": value for key, value in feeds.items()})


def returns_a_list(path, tags, feeds):
    return list(run_tf1_signature(path, tags, feeds).values())


def first_output_only(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as sess:
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        key = sorted(signature.outputs)[0]
        feed_dict = {signature.inputs[k].name: v for k, v in feeds.items()}
        return {key: sess.run(signature.outputs[key].name, feed_dict)}


def keyed_by_tensor_name(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as sess:
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        feed_dict = {signature.inputs[k].name: v for k, v in feeds.items()}
        fetches = [info.name for info in signature.outputs.values()]
        return dict(zip(fetches, sess.run(fetches, feed_dict)))


def feeds_only_the_first_input(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as sess:
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        first = sorted(feeds)[0]
        names = {key: info.name for key, info in signature.outputs.items()}
        return sess.run(names, {signature.inputs[first].name: feeds[first]})


def test_run_tf1_signature(capsys):
    ex09.check_run_tf1_signature(run_tf1_signature)
    assert "✔ Exercise 09.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [run_tf1_signature_tf2, run_tf1_signature_tensors])
def test_run_tf1_signature_alternatives(answer, capsys):
    ex09.check_run_tf1_signature(answer)
    assert "✔ Exercise 09.2 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (always_serve, r"tag-set \['serve', 'edge'\] you returned the keys \['probabilities', 'scores'\]"),
        (feeds_by_key_name, r"(?s)raised .*in feeds_by_key_name"),
        (returns_a_list, r"returned a list; return a dict"),
        (first_output_only, r"you returned the keys \['probabilities'\]"),
        (keyed_by_tensor_name, r"you returned the keys \['net/logits:0', 'net/probs:0'\]"),
        (feeds_only_the_first_input, r"(?s)raised InvalidArgumentError.*every placeholder"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_run_tf1_signature_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex09.check_run_tf1_signature(answer)


def test_run_tf1_signature_not_done():
    with pytest.raises(ExerciseNotDone):
        ex09.check_run_tf1_signature(not_done)


# --------------------------------------------------------------------------- 09.3


def export_for_serving(model, path, n_features):
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        lambda features: {"scores": model(features)},
        input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")],
    )
    archive.write_out(path, verbose=False)


def export_with_a_module(model, path, n_features):
    class Serving(tf.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        @tf.function(input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")])
        def serve(self, features):
            return {"scores": self.inner(features)}

    serving = Serving(model)
    tf.saved_model.save(serving, path, signatures=serving.serve)


def export_with_a_concrete_function(model, path, n_features):
    serve = tf.function(lambda features: {"scores": model(features)})
    concrete = serve.get_concrete_function(tf.TensorSpec([None, n_features], tf.float32))
    tf.saved_model.save(model, path, signatures={"serving_default": concrete})


def export_serve_endpoint(model, path, n_features):
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(  # ExportArchive registers its first endpoint as serving_default too
        "serve",
        lambda features: {"scores": model(features)},
        input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")],
    )
    archive.write_out(path, verbose=False)


def plain_export(model, path, n_features):
    model.export(path, verbose=False)


def plain_saved_model_save(model, path, n_features):
    tf.saved_model.save(model, path)


def _archive(model, path, fn, spec, name="serving_default"):
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(name, fn, input_signature=[spec])
    archive.write_out(path, verbose=False)


def three_features_always(model, path, n_features):
    _archive(model, path, lambda features: {"scores": model(features)}, tf.TensorSpec([None, 3], tf.float32, name="features"))


def batch_of_one(model, path, n_features):
    _archive(model, path, lambda features: {"scores": model(features)}, tf.TensorSpec([1, n_features], tf.float32, name="features"))


def output_not_named(model, path, n_features):
    _archive(model, path, lambda features: model(features), tf.TensorSpec([None, n_features], tf.float32, name="features"))


def float64_input(model, path, n_features):
    _archive(model, path, lambda features: {"scores": model(features)}, tf.TensorSpec([None, n_features], tf.float64, name="features"))


def wrong_endpoint_name(model, path, n_features):
    archive = keras.export.ExportArchive()
    archive.track(model)
    spec = tf.TensorSpec([None, n_features], tf.float32, name="features")
    archive.add_endpoint("predict", lambda features: {"probs": model(features)}, input_signature=[spec])
    archive.add_endpoint("scores", lambda features: {"scores": model(features)}, input_signature=[spec])
    archive.write_out(path, verbose=False)


def test_export_for_serving(capsys):
    ex09.check_export_for_serving(export_for_serving)
    assert "✔ Exercise 09.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [export_with_a_module, export_with_a_concrete_function, export_serve_endpoint])
def test_export_for_serving_alternatives(answer, capsys):
    ex09.check_export_for_serving(answer)
    assert "✔ Exercise 09.3 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (plain_export, r"takes the input key\(s\) \['raw'\]"),
        (plain_saved_model_save, r"takes the input key\(s\) \['inputs'\]"),
        (three_features_always, r"(?s)raised ValueError.*expected shape=\(None, 5\), found shape=\(None, 3\)"),
        (batch_of_one, r"has shape \(1, 5\).*\(None, 5\)"),
        (output_not_named, r"output key\(s\) \['output_0'\]"),
        (float64_input, r"'features' is float64; it must be float32"),
        (wrong_endpoint_name, r"output key\(s\) \['probs'\]"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_export_for_serving_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex09.check_export_for_serving(answer)


def test_export_for_serving_not_done():
    with pytest.raises(ExerciseNotDone):
        ex09.check_export_for_serving(not_done)


# --------------------------------------------------------------------------- 09.4


def frozen_base_with_head(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(base(inputs)))


def frozen_sequential(path, endpoint, n_inputs, units):
    return keras.Sequential(
        [
            keras.Input((n_inputs,), dtype="float32"),
            keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False),
            keras.layers.Dense(units, activation=None),
        ]
    )


def frozen_afterwards(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, endpoint)
    base.trainable = False
    x = keras.Input(shape=(n_inputs,), name="x")
    return keras.Model(x, keras.layers.Dense(units, name="new_head")(base(x)))


def trainable_base(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(base(inputs)))


def serve_endpoint(path, endpoint, n_inputs, units):
    return frozen_base_with_head(path, "serve", n_inputs, units)


def no_head(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, base(inputs))


def frozen_head_too(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units, trainable=False)(base(inputs)))


def load_model_instead(path, endpoint, n_inputs, units):
    base = keras.models.load_model(path)
    base.trainable = False
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(base(inputs)))


def one_unit_head(path, endpoint, n_inputs, units):
    return frozen_base_with_head(path, endpoint, n_inputs, 1)


def test_frozen_base_with_head(capsys):
    ex09.check_frozen_base_with_head(frozen_base_with_head)
    assert "✔ Exercise 09.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [frozen_sequential, frozen_afterwards])
def test_frozen_base_with_head_alternatives(answer, capsys):
    ex09.check_frozen_base_with_head(answer)
    assert "✔ Exercise 09.4 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (trainable_base, r"weights are in model.trainable_weights.*section 6"),
        (serve_endpoint, r"calls the endpoint 'serve'; use the endpoint you were given \('encode'\)"),
        (no_head, r"answers with shape \(2, 3\).*Dense\(2\) head"),
        (frozen_head_too, r"no trainable head"),
        (load_model_instead, r"(?s)raised ValueError in load_model_instead.*File format not supported"),
        (one_unit_head, r"answers with shape \(2, 1\)"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_frozen_base_with_head_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex09.check_frozen_base_with_head(answer)


def test_frozen_base_with_head_not_done():
    with pytest.raises(ExerciseNotDone):
        ex09.check_frozen_base_with_head(not_done)


# --------------------------------------------------------------------------- 09.5


def shares_variables(first, second):
    shared = False
    for mine, theirs in zip(first.variables, second.variables):
        old_mine, old_theirs = mine.numpy(), theirs.numpy()
        mine.assign(old_mine + tf.ones_like(old_mine))
        if not np.array_equal(theirs.numpy(), old_theirs):
            shared = True
        mine.assign(old_mine)
        theirs.assign(old_theirs)
    return shared


def shares_with_assign_add(first, second):
    answers = []
    for a, b in zip(first.variables, second.variables):
        before = b.numpy().copy()
        a.assign_add(tf.ones(a.shape, a.dtype))
        answers.append(not np.array_equal(before, b.numpy()))
        a.assign_sub(tf.ones(a.shape, a.dtype))
    return any(answers)


def shares_with_a_fill(first, second):
    found = False
    for a, b in zip(first.variables, second.variables):
        saved_a, saved_b = tf.identity(a), tf.identity(b)
        a.assign(tf.fill(a.shape, tf.cast(-123, a.dtype)))
        found |= bool(tf.reduce_all(b == tf.cast(-123, b.dtype)))
        a.assign(saved_a)
        b.assign(saved_b)
    return found


def shares_by_identity(first, second):
    return any(a is b for a, b in zip(first.variables, second.variables))


def equal_values(first, second):
    return all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first.variables, second.variables))


def first_variable_only(first, second):
    mine, theirs = first.variables[0], second.variables[0]
    old, seen = mine.numpy(), theirs.numpy()
    mine.assign(old + 1)
    shared = not np.array_equal(theirs.numpy(), seen)
    mine.assign(old)
    return shared


def never_restores(first, second):
    shared = False
    for mine, theirs in zip(first.variables, second.variables):
        old = theirs.numpy()
        mine.assign(mine.numpy() + tf.ones_like(mine.numpy()))
        shared = shared or not np.array_equal(theirs.numpy(), old)
    return shared


def same_object(first, second):
    return first is second


def floats_only(first, second):
    shared = False
    for mine, theirs in zip(first.variables, second.variables):
        if not mine.dtype.is_floating:
            continue
        old, seen = mine.numpy(), theirs.numpy()
        mine.assign(old + 1.0)
        shared = shared or not np.array_equal(theirs.numpy(), seen)
        mine.assign(old)
    return shared


def trainable_only(first, second):
    shared = False
    for mine, theirs in zip(first.variables, second.variables):
        if mine.trainable:
            old, seen = mine.numpy(), theirs.numpy()
            mine.assign(old * 2 + 1)
            shared = shared or not np.array_equal(theirs.numpy(), seen)
            mine.assign(old)
    return shared


def returns_a_count(first, second):
    return sum(a is b for a, b in zip(first.variables, second.variables))


def test_shares_variables(capsys):
    ex09.check_shares_variables(shares_variables)
    assert "✔ Exercise 09.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [shares_with_a_fill])
def test_shares_variables_alternatives(answer, capsys):
    ex09.check_shares_variables(answer)
    assert "✔ Exercise 09.5 passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "answer, hint",
    [
        (equal_values, r"two loads of one SavedModel .* you returned True, but they share nothing"),
        (first_variable_only, r"share only their bias you returned False"),
        (never_restores, r"some variable kept the value you wrote"),
        (same_object, r"share only their bias you returned False"),
        (floats_only, r"int64 step counter .* returned False.*non-trainable"),
        (trainable_only, r"int64 step counter .* returned False"),
        (returns_a_count, r"should return True or False, got 0"),
        (shares_with_assign_add, r"adding then subtracting does not give back the same float"),
        # `a is b` misses two Python objects over one resource (issue 23): no longer a right answer
        (shares_by_identity, r"distinct Python objects over the same resources you returned False"),
    ],
    ids=lambda value: getattr(value, "__name__", "hint"),
)
def test_shares_variables_mistakes(answer, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex09.check_shares_variables(answer)


def test_shares_variables_not_done():
    with pytest.raises(ExerciseNotDone):
        ex09.check_shares_variables(not_done)


def test_an_error_in_the_learners_code_names_their_line():
    with pytest.raises(LearnerCodeError, match=r'return signature\(features=batch\)\["score"\]'):
        ex09.check_call_serving_default(hard_coded_input)


# =========================================================================== Written from the prompt alone (VERIFY.md part 2)
# Wrong answers a learner would write, and right ones written differently from the reference,
# from the exercise prompts alone, before reading helpers/checks/ex09.py. Every run is bounded
# by a watchdog and must take under 20 s; every hint must be short and free of temporary paths.

import os  # noqa: E402
import tempfile  # noqa: E402

from tests.attack_harness import accepted, marked  # noqa: E402
from tests.attack_harness import rejected as _rejected  # noqa: E402


def rejected(check, answer) -> str:
    """``attack_harness.rejected``, and the hint at most 300 characters with its "Exercise NN.N: " prefix."""
    message = _rejected(check, answer)
    assert len(message) <= 300, f"{len(message)} characters with the prefix: {message}"
    return message


# What today's check gets wrong (strict xfails: remove an entry when its check is fixed).
FALSE_PASS = "check accepts this wrong answer: "
GENERIC_HINT = "hint: over 300 characters, generic 'read the message, fix that line'"
KNOWN_09: dict[str, str] = {}


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _signature_keys(signature):
    (input_key,) = signature.structured_input_signature[1]
    (output_key,) = signature.structured_outputs
    return input_key, output_key


# --------------------------------------------------------------------------- 09.1 attack


def _cast(signature, batch):
    (spec,) = signature.structured_input_signature[1].values()
    return tf.constant(batch, dtype=spec.dtype)


def csd_notebook_keys(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    return signature(inputs=_cast(signature, batch))["output_0"].numpy()


def csd_right_no_cast(path, batch):
    """Hands the NumPy array over as it is: the signature converts it to its own dtype."""
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{input_key: batch})[output_key].numpy()


def csd_returns_tensor(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{input_key: _cast(signature, batch)})[output_key]


def csd_returns_dict(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, _ = _signature_keys(signature)
    return {k: v.numpy() for k, v in signature(**{input_key: _cast(signature, batch)}).items()}


def csd_squeezed(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return np.squeeze(signature(**{input_key: _cast(signature, batch)})[output_key].numpy())


def csd_first_signature(path, batch):
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures[sorted(loaded.signatures)[0]]
    (input_key,) = signature.structured_input_signature[1]
    return next(iter(signature(**{input_key: _cast(signature, batch)}).values())).numpy()


def csd_as_list(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{input_key: _cast(signature, batch)})[output_key].numpy().tolist()


def csd_first_row_only(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{input_key: _cast(signature, batch[:1])})[output_key].numpy()


def csd_writes_into_the_folder(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    result = signature(**{input_key: _cast(signature, batch)})[output_key].numpy()
    np.save(os.path.join(path, "last_predictions.npy"), result)  # a "log" of the last call
    return result


def csd_keys_swapped(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{output_key: _cast(signature, batch)})[input_key].numpy()


def csd_serve_endpoint(path, batch):
    """Calls the Keras export's `serve` function instead of the signature."""
    loaded = tf.saved_model.load(path)
    return np.asarray(loaded.serve(_cast(loaded.signatures["serving_default"], batch)))


def csd_float64(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    input_key, output_key = _signature_keys(signature)
    return signature(**{input_key: tf.constant(batch, dtype=tf.float64)})[output_key].numpy()


def csd_right_tfsmlayer(path, batch):
    layer = keras.layers.TFSMLayer(path, call_endpoint="serving_default")
    outputs = layer(batch)
    (value,) = outputs.values() if isinstance(outputs, dict) else (outputs,)
    return np.asarray(value)


def csd_right_popitem(path, batch):
    signature = tf.saved_model.load(path).signatures["serving_default"]
    spec = list(signature.structured_input_signature[1].values())[0]
    result = dict(signature(**{spec.name: tf.convert_to_tensor(batch, dtype=spec.dtype)}))
    return result.popitem()[1].numpy()


def csd_right_output_keys_from_signature_def(path, batch):
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures["serving_default"]
    kwargs = {name: tf.cast(batch, spec.dtype) for name, spec in signature.structured_input_signature[1].items()}
    return np.array([value for value in signature(**kwargs).values()][0])


@pytest.mark.parametrize("answer", marked([
    csd_notebook_keys, csd_returns_tensor, csd_returns_dict, csd_squeezed, csd_first_signature, csd_as_list,
    csd_first_row_only, csd_writes_into_the_folder, csd_keys_swapped, csd_serve_endpoint, csd_float64,
], KNOWN_09))
def test_attack_call_serving_default_rejects(answer, in_tmp):
    rejected(ex09.check_call_serving_default, answer)


@pytest.mark.parametrize("answer", marked([
    csd_right_tfsmlayer, csd_right_popitem, csd_right_output_keys_from_signature_def, csd_right_no_cast,
], KNOWN_09))
def test_attack_call_serving_default_accepts(answer, in_tmp):
    accepted(ex09.check_call_serving_default, answer)


# --------------------------------------------------------------------------- 09.2 attack


def _run_v1(path, tags, feeds, *, pick=lambda defs: defs["serving_default"], fetch_dict=True):
    with tf.Graph().as_default() as graph, V1.Session(graph=graph) as session:
        meta_graph = V1.saved_model.loader.load(session, tags, path)
        signature = pick(meta_graph.signature_def)
        feed_dict = {signature.inputs[key].name: value for key, value in feeds.items()}
        fetches = {key: info.name for key, info in signature.outputs.items()}
        return session.run(fetches, feed_dict)


def tf1_ignores_tags(path, tags, feeds):
    return _run_v1(path, ["serve"], feeds)


def tf1_first_tag_only(path, tags, feeds):
    return _run_v1(path, [tags[0]], feeds)


def tf1_keys_as_tensor_names(path, tags, feeds):
    with tf.Graph().as_default() as graph, V1.Session(graph=graph) as session:
        meta_graph = V1.saved_model.loader.load(session, tags, path)
        signature = meta_graph.signature_def["serving_default"]
        fetches = {key: f"{key}:0" for key in signature.outputs}
        return session.run(fetches, {f"{key}:0": value for key, value in feeds.items()})


def tf1_returns_list(path, tags, feeds):
    return list(_run_v1(path, tags, feeds).values())


def tf1_tensor_names_as_keys(path, tags, feeds):
    with tf.Graph().as_default() as graph, V1.Session(graph=graph) as session:
        meta_graph = V1.saved_model.loader.load(session, tags, path)
        signature = meta_graph.signature_def["serving_default"]
        names = [info.name for info in signature.outputs.values()]
        feed_dict = {signature.inputs[key].name: value for key, value in feeds.items()}
        return dict(zip(names, session.run(names, feed_dict)))


_CACHED = {}


def tf1_reuses_one_session(path, tags, feeds):
    """Loads once and keeps the session for later calls (a session and graph shared across calls)."""
    if "session" not in _CACHED:
        graph = tf.Graph()
        session = V1.Session(graph=graph)
        with graph.as_default():
            _CACHED["meta"] = V1.saved_model.loader.load(session, tags, path)
        _CACHED["session"] = session
    signature = _CACHED["meta"].signature_def["serving_default"]
    feed_dict = {signature.inputs[key].name: value for key, value in feeds.items()}
    return _CACHED["session"].run({k: v.name for k, v in signature.outputs.items()}, feed_dict)


def tf1_first_signature_def(path, tags, feeds):
    return _run_v1(path, tags, feeds, pick=lambda defs: defs[sorted(defs)[0]])


def tf1_first_output_only(path, tags, feeds):
    outputs = _run_v1(path, tags, feeds)
    first = sorted(outputs)[0]
    return {first: outputs[first]}


def tf1_squeezed(path, tags, feeds):
    return {key: np.squeeze(value) for key, value in _run_v1(path, tags, feeds).items()}


def tf1_tf2_tensors(path, tags, feeds):
    signature = tf.saved_model.load(path, tags=tags).signatures["serving_default"]
    return dict(signature(**{key: tf.constant(value) for key, value in feeds.items()}))


def tf1_default_graph_session(path, tags, feeds):
    session = V1.Session()
    meta_graph = V1.saved_model.loader.load(session, tags, path)
    signature = meta_graph.signature_def["serving_default"]
    feed_dict = {signature.inputs[key].name: value for key, value in feeds.items()}
    return session.run({k: v.name for k, v in signature.outputs.items()}, feed_dict)


def tf1_right_tf2_load(path, tags, feeds):
    signature = tf.saved_model.load(path, tags=tags).signatures["serving_default"]
    outputs = signature(**{key: tf.constant(value) for key, value in feeds.items()})
    return {key: value.numpy() for key, value in outputs.items()}


def tf1_right_tuple_tags_list_fetches(path, tags, feeds):
    graph = tf.Graph()
    with V1.Session(graph=graph) as session:
        meta_graph = V1.saved_model.loader.load(session, set(tags), path)
        signature = meta_graph.signature_def["serving_default"]
        keys = list(signature.outputs)
        tensors = [graph.get_tensor_by_name(signature.outputs[key].name) for key in keys]
        feed_dict = {graph.get_tensor_by_name(signature.inputs[k].name): np.asarray(v) for k, v in feeds.items()}
        values = session.run(tensors, feed_dict=feed_dict)
    return {key: np.asarray(value) for key, value in zip(keys, values)}


def tf1_right_signature_def_utils(path, tags, feeds):
    with tf.Graph().as_default(), V1.Session() as session:
        meta_graph = V1.saved_model.load(session, tags, path)
        signature = meta_graph.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        result = {}
        for key, info in signature.outputs.items():
            result[key] = session.run(info.name, {signature.inputs[k].name: v for k, v in feeds.items()})
        return result


@pytest.mark.parametrize("answer", marked([
    tf1_ignores_tags, tf1_first_tag_only, tf1_keys_as_tensor_names, tf1_returns_list, tf1_tensor_names_as_keys,
    tf1_reuses_one_session, tf1_first_signature_def, tf1_first_output_only, tf1_squeezed, tf1_tf2_tensors,
    tf1_default_graph_session,
], KNOWN_09))
def test_attack_run_tf1_signature_rejects(answer, in_tmp):
    _CACHED.clear()
    rejected(ex09.check_run_tf1_signature, answer)


@pytest.mark.parametrize("answer", marked([
    tf1_right_tf2_load, tf1_right_tuple_tags_list_fetches, tf1_right_signature_def_utils,
], KNOWN_09))
def test_attack_run_tf1_signature_accepts(answer, in_tmp):
    accepted(ex09.check_run_tf1_signature, answer)


# --------------------------------------------------------------------------- 09.3 attack


def _attack_archive(model, path, spec, function):
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default", function, input_signature=[spec])
    archive.write_out(path, verbose=False)


def exp_plain_export(model, path, n_features):
    model.export(path, verbose=False)


def exp_input_key_typo(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="inputs")
    _attack_archive(model, path, spec, tf.function(lambda inputs: {"scores": model(inputs)}))


def exp_batch_of_one(model, path, n_features):
    spec = tf.TensorSpec((1, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(features)}))


def exp_any_width(model, path, n_features):
    spec = tf.TensorSpec((None, None), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(features)}))


def exp_float64(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float64, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(tf.cast(features, tf.float32))}))


def exp_output_key_typo(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"score": model(features)}))


def exp_training_true(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(features, training=True)}))


def exp_hard_coded_width(model, path, n_features):
    spec = tf.TensorSpec((None, 4), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(features)}))


def exp_exports_a_clone(model, path, n_features):
    """Clones the model 'to leave it as it is', and exports the clone (fresh weights)."""
    copy = keras.models.clone_model(model)
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(copy, path, spec, tf.function(lambda features: {"scores": copy(features)}))


def exp_identity_name_not_key(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: tf.identity(model(features), name="scores")))


def exp_into_subfolder(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, os.path.join(path, "1"), spec, tf.function(lambda features: {"scores": model(features)}))


def exp_softmax_added(model, path, n_features):
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": tf.nn.softmax(model(features))}))


def exp_trains_before_export(model, path, n_features):
    """Compiles and fits one step 'to build' the model, which changes its weights."""
    model.compile("sgd", "mse")
    x = np.ones((2, n_features), "float32")
    model.fit(x, model.predict(x, verbose=0) + 1.0, epochs=1, verbose=0)
    spec = tf.TensorSpec((None, n_features), tf.float32, name="features")
    _attack_archive(model, path, spec, tf.function(lambda features: {"scores": model(features)}))


def exp_right_tf_saved_model_save(model, path, n_features):
    @tf.function(input_signature=[tf.TensorSpec([None, n_features], tf.float32, name="features")])
    def serve(features):
        return {"scores": model(features, training=False)}

    module = tf.Module()
    module.model = model
    module.serve = serve
    tf.saved_model.save(module, path, signatures={"serving_default": serve})


def exp_right_archive_named_function(model, path, n_features):
    archive = keras.export.ExportArchive()
    archive.track(model)

    def serving_fn(features):
        return {"scores": model(features)}

    archive.add_endpoint("serving_default", serving_fn,
                         input_signature=[tf.TensorSpec(shape=[None, n_features], dtype="float32", name="features")])
    archive.write_out(os.fspath(path), verbose=False)


def exp_right_pathlib_and_module(model, path, n_features):
    class Server(tf.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        @tf.function(input_signature=[tf.TensorSpec((None, n_features), tf.float32)])
        def __call__(self, features):
            return {"scores": self.net(features)}

    server = Server(model)
    tf.saved_model.save(server, str(pathlib_path(path)), signatures={"serving_default": server.__call__})


def pathlib_path(path):
    import pathlib

    return pathlib.Path(path)


@pytest.mark.parametrize("answer", marked([
    exp_plain_export, exp_input_key_typo, exp_batch_of_one, exp_any_width, exp_float64, exp_output_key_typo,
    exp_training_true, exp_hard_coded_width, exp_exports_a_clone, exp_identity_name_not_key, exp_into_subfolder,
    exp_softmax_added, exp_trains_before_export,
], KNOWN_09))
def test_attack_export_for_serving_rejects(answer, in_tmp):
    rejected(ex09.check_export_for_serving, answer)


@pytest.mark.parametrize("answer", marked([
    exp_right_tf_saved_model_save, exp_right_archive_named_function, exp_right_pathlib_and_module,
], KNOWN_09))
def test_attack_export_for_serving_accepts(answer, in_tmp):
    accepted(ex09.check_export_for_serving, answer)


# --------------------------------------------------------------------------- 09.4 attack


def _first(outputs):
    return next(iter(outputs.values())) if isinstance(outputs, dict) else outputs


def _head_model(path, endpoint, n_inputs, units, *, trainable=False, dtype="float32", head=None, call_endpoint=None):
    inputs = keras.Input((n_inputs,), dtype=dtype)
    base = keras.layers.TFSMLayer(path, call_endpoint=call_endpoint or endpoint, trainable=trainable)
    outputs = (head or keras.layers.Dense(units))(_first(base(inputs)))
    return keras.Model(inputs, outputs)


def head_base_trainable(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, n_inputs, units, trainable=True)


def head_ignores_endpoint(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, n_inputs, units, call_endpoint="serving_default")


def head_hard_coded_inputs(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, 4, units)


def head_compiled(path, endpoint, n_inputs, units):
    model = _head_model(path, endpoint, n_inputs, units)
    model.compile("adam", "mse")
    return model


def head_relu(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, n_inputs, units, head=keras.layers.Dense(units, activation="relu"))


def head_one_unit(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, n_inputs, units, head=keras.layers.Dense(1))


def head_float64_input(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,), dtype="float64")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_first(base(tf.cast(inputs, "float32")))))


def head_lambda_not_tfsmlayer(path, endpoint, n_inputs, units):
    function = tf.saved_model.load(path).signatures[endpoint]
    (key,) = function.structured_input_signature[1]
    inputs = keras.Input((n_inputs,))
    features = keras.layers.Lambda(lambda x: _first(function(**{key: x})), output_shape=(None,))(inputs)
    return keras.Model(inputs, keras.layers.Dense(units)(features))


def head_extra_hidden_layer(path, endpoint, n_inputs, units):
    return _head_model(path, endpoint, n_inputs, units,
                       head=keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(units)]))


def head_everything_frozen(path, endpoint, n_inputs, units):
    model = _head_model(path, endpoint, n_inputs, units)
    model.trainable = False
    return model


def head_output_key_hard_coded(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,))
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(base(inputs)["output_0"]))


def head_right_trainable_after(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint)
    base.trainable = False
    inputs = keras.Input(shape=(n_inputs,), dtype=tf.float32)
    features = base(inputs)
    if isinstance(features, dict):
        (features,) = features.values()
    return keras.Model(inputs=inputs, outputs=keras.layers.Dense(units=units)(features))


def head_right_list_of_values(path, endpoint, n_inputs, units):
    inputs = keras.Input(batch_shape=(None, n_inputs), dtype="float32")
    outputs = keras.layers.TFSMLayer(os.fspath(path), call_endpoint=endpoint, trainable=False)(inputs)
    features = list(outputs.values())[0] if isinstance(outputs, dict) else outputs
    return keras.Model(inputs, keras.layers.Dense(units, name="new_head")(features), name="frozen_plus_head")


def head_right_subclassed(path, endpoint, n_inputs, units):
    class WithHead(keras.Model):
        def __init__(self):
            super().__init__()
            self.base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
            self.head = keras.layers.Dense(units)

        def call(self, x):
            return self.head(_first(self.base(x)))

    model = WithHead()
    model(np.zeros((1, n_inputs), "float32"))
    return model


@pytest.mark.parametrize("answer", marked([
    head_base_trainable, head_ignores_endpoint, head_hard_coded_inputs, head_compiled, head_relu, head_one_unit,
    head_float64_input, head_lambda_not_tfsmlayer, head_extra_hidden_layer, head_everything_frozen,
    head_output_key_hard_coded,
], KNOWN_09))
def test_attack_frozen_base_with_head_rejects(answer, in_tmp):
    rejected(ex09.check_frozen_base_with_head, answer)


@pytest.mark.parametrize("answer", marked([
    head_right_trainable_after, head_right_list_of_values, head_right_subclassed,
], KNOWN_09))
def test_attack_frozen_base_with_head_accepts(answer, in_tmp):
    accepted(ex09.check_frozen_base_with_head, answer)


# --------------------------------------------------------------------------- 09.5 attack


def _bumped(value):
    value = np.asarray(value)
    if value.dtype == bool:
        return ~value
    return value + np.ones((), value.dtype)


def share_same_object(first, second):
    return first is second


def share_equal_values(first, second):
    return any(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(first.variables, second.variables))


def share_same_variable_objects(first, second):
    return any(a is b for a, b in zip(first.variables, second.variables))


def share_same_names(first, second):
    return any(a.name == b.name for a, b in zip(first.variables, second.variables))


def share_never_puts_back(first, second):
    shared = False
    for a, b in zip(first.variables, second.variables):
        before = b.numpy().copy()
        a.assign(_bumped(a.numpy()))
        shared = shared or not np.array_equal(b.numpy(), before)
    return shared


def share_assigns_zeros(first, second):
    shared = False
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(np.zeros_like(old_a))
        shared = shared or not np.array_equal(b.numpy(), old_b)
        a.assign(old_a)
        b.assign(old_b)
    return shared


def share_doubles(first, second):
    shared = False
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(old_a * 2)
        shared = shared or not np.array_equal(b.numpy(), old_b)
        a.assign(old_a)
        b.assign(old_b)
    return shared


def share_first_variable_only(first, second):
    a, b = first.variables[0], second.variables[0]
    old_a, old_b = a.numpy().copy(), b.numpy().copy()
    a.assign(_bumped(old_a))
    shared = not np.array_equal(b.numpy(), old_b)
    a.assign(old_a)
    return shared


def share_returns_before_putting_back(first, second):
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(_bumped(old_a))
        if not np.array_equal(b.numpy(), old_b):
            return True
        a.assign(old_a)
    return False


def share_all_not_any(first, second):
    changed = []
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(_bumped(old_a))
        changed.append(not np.array_equal(b.numpy(), old_b))
        a.assign(old_a)
    return all(changed)


def share_returns_a_tensor(first, second):
    changed = []
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(_bumped(old_a))
        changed.append(tf.reduce_any(tf.not_equal(b, old_b)))
        a.assign(old_a)
    return tf.reduce_any(changed)


def share_right_loop(first, second):
    for a, b in zip(first.variables, second.variables):
        old_a, old_b = a.numpy().copy(), b.numpy().copy()
        a.assign(_bumped(old_a))
        moved = not np.array_equal(b.numpy(), old_b)
        a.assign(old_a)
        b.assign(old_b)
        if moved:
            return True
    return False


def share_right_sentinel_try_finally(first, second):
    pairs = list(zip(first.variables, second.variables))
    saved = [(a.read_value(), b.read_value()) for a, b in pairs]
    found = False
    try:
        for (a, b), (old_a, old_b) in zip(pairs, saved):
            new = tf.where(tf.equal(old_a, tf.zeros_like(old_a)), tf.ones_like(old_a), -old_a) \
                if old_a.dtype != tf.bool else tf.logical_not(old_a)
            if old_a.dtype.is_floating or old_a.dtype.is_integer:
                new = tf.where(tf.equal(new, old_a), new + tf.ones_like(new), new)
            a.assign(new)
            found = found or not bool(tf.reduce_all(tf.equal(b.read_value(), old_b)))
    finally:
        for (a, b), (old_a, old_b) in reversed(list(zip(pairs, saved))):
            a.assign(old_a)
            b.assign(old_b)
    return found


def share_right_all_at_once(first, second):
    firsts, seconds = list(first.variables), list(second.variables)
    old_first = [v.numpy().copy() for v in firsts]
    old_second = [v.numpy().copy() for v in seconds]
    for v, old in zip(firsts, old_first):
        v.assign(_bumped(old))
    answer = any(not np.array_equal(v.numpy(), old) for v, old in zip(seconds, old_second))
    for v, old in zip(firsts, old_first):
        v.assign(old)
    for v, old in zip(seconds, old_second):
        v.assign(old)
    return bool(answer)


@pytest.mark.parametrize("answer", marked([
    share_same_object, share_equal_values, share_same_variable_objects, share_same_names, share_never_puts_back,
    share_assigns_zeros, share_doubles, share_first_variable_only, share_returns_before_putting_back,
    share_all_not_any, share_returns_a_tensor,
], KNOWN_09))
def test_attack_shares_variables_rejects(answer, in_tmp):
    rejected(ex09.check_shares_variables, answer)


@pytest.mark.parametrize("answer", marked([
    share_right_loop, share_right_sentinel_try_finally, share_right_all_at_once,
], KNOWN_09))
def test_attack_shares_variables_accepts(answer, in_tmp):
    accepted(ex09.check_shares_variables, answer)


# =========================================================================== round three (issue 33)
# Written from the prompts alone. 09.2: one graph or session kept between calls (module level, a
# default argument, a cache); 09.4: float64 data and inputs that are not one float32 (None, n).


def _run_in(sess, path, tags, feeds):
    meta = V1.saved_model.loader.load(sess, tags, path)
    signature = meta.signature_def["serving_default"]
    return sess.run({k: v.name for k, v in signature.outputs.items()},
                    {signature.inputs[k].name: v for k, v in feeds.items()})


_MODULE_GRAPH = tf.Graph()
_MODULE_SESSION = V1.Session(graph=_MODULE_GRAPH)


def tf1r3_module_graph_and_session(path, tags, feeds):
    with _MODULE_GRAPH.as_default():
        return _run_in(_MODULE_SESSION, path, tags, feeds)


_LAZY: dict = {}


def tf1r3_lazy_global_session(path, tags, feeds):
    if "sess" not in _LAZY:
        graph = tf.Graph()
        _LAZY["sess"] = V1.Session(graph=graph)
    sess = _LAZY["sess"]
    with sess.graph.as_default():
        return _run_in(sess, path, tags, feeds)


def tf1r3_default_argument_graph(path, tags, feeds, _graph=tf.Graph()):
    with _graph.as_default(), V1.Session(graph=_graph) as sess:
        return _run_in(sess, path, tags, feeds)


def tf1r3_module_graph_new_session(path, tags, feeds):
    graph = _MODULE_GRAPH_2
    with graph.as_default(), V1.Session(graph=graph) as sess:
        return _run_in(sess, path, tags, feeds)


_MODULE_GRAPH_2 = tf.Graph()
_BY_TAGS: dict = {}


def tf1r3_session_cached_by_tags(path, tags, feeds):
    key = tuple(tags)
    if key not in _BY_TAGS:
        graph = tf.Graph()
        sess = V1.Session(graph=graph)
        with graph.as_default():
            meta = V1.saved_model.loader.load(sess, tags, path)
        _BY_TAGS[key] = (sess, meta.signature_def["serving_default"])
    sess, signature = _BY_TAGS[key]
    return sess.run({k: v.name for k, v in signature.outputs.items()},
                    {signature.inputs[k].name: v for k, v in feeds.items()})


_RESULTS: dict = {}


def tf1r3_results_cached_by_tags(path, tags, feeds):
    key = tuple(tags)
    if key not in _RESULTS:
        with tf.Graph().as_default(), V1.Session() as sess:
            _RESULTS[key] = _run_in(sess, path, tags, feeds)
    return _RESULTS[key]


def tf1r3_function_attribute_session(path, tags, feeds):
    holder = tf1r3_function_attribute_session
    if not hasattr(holder, "sess"):
        holder.sess = V1.Session(graph=tf.Graph())
    with holder.sess.graph.as_default():
        return _run_in(holder.sess, path, tags, feeds)


_LOADED_BY_TAGS: dict = {}


def tf1r3_tf2_load_cached_by_tags(path, tags, feeds):
    key = tuple(tags)
    if key not in _LOADED_BY_TAGS:
        _LOADED_BY_TAGS[key] = tf.saved_model.load(path, tags=tags)
    signature = _LOADED_BY_TAGS[key].signatures["serving_default"]
    return {k: v.numpy() for k, v in signature(**{k: tf.constant(v) for k, v in feeds.items()}).items()}


TF1R3_WRONG = [tf1r3_module_graph_and_session, tf1r3_lazy_global_session, tf1r3_default_argument_graph,
               tf1r3_module_graph_new_session, tf1r3_session_cached_by_tags, tf1r3_results_cached_by_tags,
               tf1r3_function_attribute_session, tf1r3_tf2_load_cached_by_tags]


@pytest.mark.parametrize("answer", TF1R3_WRONG, ids=lambda f: f.__name__)
def test_round3_run_tf1_signature_rejects(answer, in_tmp):
    _BY_TAGS.clear(), _RESULTS.clear(), _LOADED_BY_TAGS.clear(), _LAZY.clear()
    rejected(ex09.check_run_tf1_signature, answer)


def tf1r3_right_fresh_graph_each_call(path, tags, feeds):
    graph = tf.Graph()
    sess = V1.Session(graph=graph)
    try:
        with graph.as_default():
            return _run_in(sess, path, tags, feeds)
    finally:
        sess.close()


_BY_PATH_AND_TAGS: dict = {}


def tf1r3_right_cache_by_path_and_tags(path, tags, feeds):
    key = (path, tuple(tags))
    if key not in _BY_PATH_AND_TAGS:
        _BY_PATH_AND_TAGS[key] = tf.saved_model.load(path, tags=list(tags))
    signature = _BY_PATH_AND_TAGS[key].signatures["serving_default"]
    return {k: v.numpy() for k, v in signature(**{k: tf.constant(v) for k, v in feeds.items()}).items()}


def tf1r3_right_get_tensor_by_name(path, tags, feeds):
    with tf.Graph().as_default() as graph, V1.Session(graph=graph) as sess:
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        get = graph.get_tensor_by_name
        values = sess.run([get(info.name) for info in signature.outputs.values()],
                          {get(signature.inputs[k].name): v for k, v in feeds.items()})
        return dict(zip(signature.outputs.keys(), values))


@pytest.mark.parametrize("answer", [tf1r3_right_fresh_graph_each_call, tf1r3_right_cache_by_path_and_tags,
                                    tf1r3_right_get_tensor_by_name], ids=lambda f: f.__name__)
def test_round3_run_tf1_signature_accepts(answer, in_tmp):
    _BY_PATH_AND_TAGS.clear()
    accepted(ex09.check_run_tf1_signature, answer)


def _first_value(out):
    return next(iter(out.values())) if isinstance(out, dict) else out


class _Head(keras.layers.Layer):
    """A Keras layer that unpacks a TFSMLayer's dict output."""

    def call(self, out):
        return _first_value(out)


def headr3_float64_input(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,), dtype="float64")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(keras.ops.cast(inputs, "float32")))))


def headr3_sequential_without_input(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    model = keras.Sequential([base, _Head(), keras.layers.Dense(units)])
    model(np.zeros((1, n_inputs), "float32"))
    return model


def headr3_input_without_feature_axis(path, endpoint, n_inputs, units):
    inputs = keras.Input((None,))
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(inputs))))


def headr3_int_input(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,), dtype="int32")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(keras.ops.cast(inputs, "float32")))))


def headr3_two_inputs(path, endpoint, n_inputs, units):
    a, b = keras.Input((n_inputs,)), keras.Input((n_inputs,))
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model([a, b], keras.layers.Dense(units)(_Head()(base(a))))


def headr3_fixed_batch(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,), batch_size=8)
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(inputs))))


def headr3_wrong_width(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs + 1,))
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(inputs[:, :n_inputs]))))


def headr3_float16_input(path, endpoint, n_inputs, units):
    inputs = keras.Input((n_inputs,), dtype="float16")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(keras.ops.cast(inputs, "float32")))))


HEADR3_WRONG = [headr3_float64_input, headr3_sequential_without_input, headr3_input_without_feature_axis,
                headr3_int_input, headr3_two_inputs, headr3_fixed_batch, headr3_wrong_width, headr3_float16_input]


@pytest.mark.parametrize("answer", HEADR3_WRONG, ids=lambda f: f.__name__)
def test_round3_frozen_base_with_head_rejects(answer, in_tmp):
    rejected(ex09.check_frozen_base_with_head, answer)


def headr3_right_input_dtype_named(path, endpoint, n_inputs, units):
    inputs = keras.Input(shape=(n_inputs,), dtype="float32", name="features")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint)
    base.trainable = False
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(base(inputs))))


def headr3_right_sequential_with_input(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    return keras.Sequential([keras.Input((n_inputs,)), base, _Head(), keras.layers.Dense(units)])


def headr3_right_batch_shape(path, endpoint, n_inputs, units):
    inputs = keras.Input(batch_shape=(None, n_inputs))
    features = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)(inputs)
    return keras.Model(inputs, keras.layers.Dense(units)(_Head()(features)))


@pytest.mark.parametrize("answer", [headr3_right_input_dtype_named, headr3_right_sequential_with_input,
                                    headr3_right_batch_shape], ids=lambda f: f.__name__)
def test_round3_frozen_base_with_head_accepts(answer, in_tmp):
    accepted(ex09.check_frozen_base_with_head, answer)


def test_every_written_hint_fits_300_characters_with_its_prefix():
    """Each hint text written in helpers/checks/ex09.py (a require's, each step of a Hint), with its
    "Exercise NN.N: " prefix, an f-string's fields counted as one character; the answers above measure
    the texts as shown."""
    from tests.test_checks_framework import CHECKS, hint_texts

    texts = hint_texts(CHECKS / "ex09.py")
    assert texts
    long = [(line, text) for line, number, text in texts if len(f"Exercise {number}: {text}") > 300]
    assert not long, long


# --------------------------------------------------------------------------- review of checks-b (09.2, 09.4)

from tests.attack_harness import stepped  # noqa: E402


def tf1rv_feeds_cast_to_float32(path, tags, feeds):
    """Every feed cast to float32 (the first tag-sets' placeholders all are): an int64 id and a float64
    value lose their last digits."""
    feeds = {k: np.asarray(v, np.float32) for k, v in feeds.items()}
    return run_tf1_signature(path, tags, feeds)


_RV_SESSIONS: dict = {}


def tf1rv_session_kept_by_folder_stem(path, tags, feeds):
    """One session kept per folder-name stem and tag-set: the second model (same stem) runs in the first's."""
    key = (os.path.basename(os.fspath(path))[:6], tuple(tags))
    if key not in _RV_SESSIONS:
        graph = tf.Graph()
        sess = V1.Session(graph=graph)
        _RV_SESSIONS[key] = (sess, V1.saved_model.loader.load(sess, tags, path))
    sess, meta_graph = _RV_SESSIONS[key]
    signature = meta_graph.signature_def["serving_default"]
    return sess.run({k: t.name for k, t in signature.outputs.items()},
                    {signature.inputs[k].name: v for k, v in feeds.items()})


def test_review_run_tf1_signature_feeds_cast_to_float32_is_rejected(in_tmp):
    hint = rejected(ex09.check_run_tf1_signature, tf1rv_feeds_cast_to_float32)
    assert "dtype" in hint and "float32" in hint


def tf1rv_right_feeds_in_the_signature_dtype(path, tags, feeds):
    """Feeds cast to each input's own dtype, read from the signature."""
    with tf.Graph().as_default() as graph, V1.Session(graph=graph) as sess:
        signature = V1.saved_model.loader.load(sess, tags, path).signature_def["serving_default"]
        fed = {}
        for key, value in feeds.items():
            tensor = graph.get_tensor_by_name(signature.inputs[key].name)
            fed[tensor] = np.asarray(value, tensor.dtype.as_numpy_dtype)
        return sess.run({k: t.name for k, t in signature.outputs.items()}, fed)


@pytest.mark.parametrize("answer", [tf1rv_right_feeds_in_the_signature_dtype, run_tf1_signature_tf2],
                         ids=lambda f: f.__name__)
def test_review_run_tf1_signature_right_dtypes_accepted(answer, in_tmp):
    accepted(ex09.check_run_tf1_signature, answer)


def test_review_run_tf1_signature_kept_session_is_stepped(in_tmp):
    _RV_SESSIONS.clear()
    try:
        first, second = stepped(ex09.check_run_tf1_signature, tf1rv_session_kept_by_folder_stem)
    finally:
        for sess, _ in _RV_SESSIONS.values():
            sess.close()
        _RV_SESSIONS.clear()
    assert "section 4" in first and "tf.Graph()" not in first
    assert "new tf.Graph() and Session inside the function" in second


_RV_BASES: dict = {}


def headrv_base_cached_by_path(path, endpoint, n_inputs, units):
    """A module-level cache of the TFSMLayer by path: the next call ignores its endpoint."""
    if path not in _RV_BASES:
        _RV_BASES[path] = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(_RV_BASES[path](inputs)))


def headrv_stop_gradient_base_trainable(path, endpoint, n_inputs, units):
    """The base left trainable, a Lambda(tf.stop_gradient) between it and the head."""
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(keras.layers.Lambda(tf.stop_gradient)(base(inputs))))


def headrv_four_inputs_hard_coded(path, endpoint, n_inputs, units):
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((4,))
    return keras.Model(inputs, keras.layers.Dense(units)(base(inputs)))


def test_review_frozen_base_cached_by_path_is_rejected(in_tmp):
    _RV_BASES.clear()
    hint = rejected(ex09.check_frozen_base_with_head, headrv_base_cached_by_path)
    _RV_BASES.clear()
    assert "on every call" in hint


def test_review_frozen_base_stop_gradient_is_rejected(in_tmp):
    hint = rejected(ex09.check_frozen_base_with_head, headrv_stop_gradient_base_trainable)
    assert "trainable_weights" in hint


def test_review_frozen_base_hard_coded_inputs_get_the_input_hint(in_tmp):
    hint = rejected(ex09.check_frozen_base_with_head, headrv_four_inputs_hard_coded)
    assert "keras.Input((n_inputs,))" in hint and "(None, 4)" in hint


def test_review_frozen_base_trainable_is_stepped(in_tmp):
    first, second = stepped(ex09.check_frozen_base_with_head, head_base_trainable)
    assert "section 6" in first and "trainable=False" not in first
    assert "pass trainable=False" in second


def headrv_right_frozen_then_stop_gradient(path, endpoint, n_inputs, units):
    """Frozen, and a harmless Lambda(tf.stop_gradient) too: the prompt does not forbid it."""
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, trainable=False)
    inputs = keras.Input((n_inputs,))
    return keras.Model(inputs, keras.layers.Dense(units)(keras.layers.Lambda(tf.stop_gradient)(base(inputs))))


def headrv_right_functional_named(path, endpoint, n_inputs, units):
    inputs = keras.Input(shape=(n_inputs,), name="features")
    base = keras.layers.TFSMLayer(path, call_endpoint=endpoint, name="base")
    base.trainable = False
    return keras.Model(inputs=inputs, outputs=keras.layers.Dense(units, name="new_head")(base(inputs)))


@pytest.mark.parametrize("answer", [headrv_right_frozen_then_stop_gradient, headrv_right_functional_named,
                                    frozen_base_with_head], ids=lambda f: f.__name__)
def test_review_frozen_base_right_answers_accepted(answer, in_tmp):
    accepted(ex09.check_frozen_base_with_head, answer)
