"""The checks of notebook 09: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers.checks import CheckFailed, ExerciseNotDone, LearnerCodeError, ex09
from helpers.saved_models import describe_saved_model

V1 = tf.compat.v1


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
        (float64_tensor, r"(?s)raised InvalidArgumentError.*expected to be a float tensor but is a double"),
        (calls_the_object, r"(?s)raised TypeError in calls_the_object.*not callable"),
        (other_signature, r"not the serving_default signature's answer"),
        (first_row_only, r"values of shape \(2,\)"),
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
        (feeds_only_the_first_input, r"(?s)raised InvalidArgumentError.*must feed a value for placeholder"),
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
        (trainable_base, r"TFSMLayer is trainable by default, pass trainable=False"),
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


@pytest.mark.parametrize("answer", [shares_with_a_fill, shares_by_identity])
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
