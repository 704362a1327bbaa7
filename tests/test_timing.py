"""Unit tests of helpers.timing: the harness measures the work it claims to (no speed is asserted)."""

from __future__ import annotations

import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from helpers import timing
from helpers.errors import WouldOverwriteError
from helpers.timing import (compare_seconds, ensemble_runners, first_and_later_seconds, ratio_text, seconds_per_call,
                            weight_copy_steps)

V1 = tf.compat.v1


def test_seconds_per_call_warms_up_then_samples():
    calls = []
    seconds = seconds_per_call(lambda: calls.append(1), repeat=3, min_seconds=0.0)
    assert seconds >= 0 and len(calls) == 1 + 3  # one warm-up, then one call per sample
    assert seconds_per_call(lambda: None, repeat=2, min_seconds=0.0, best=True) >= 0


def test_compare_seconds_samples_every_function_in_turns():
    order = []
    times = compare_seconds({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                            repeat=3, min_seconds=0.0)
    assert sorted(times) == ["a", "b"]
    assert order[-6:] == ["a", "b"] * 3


def test_first_and_later_seconds_times_the_first_call_alone():
    calls = []

    def traced_on_first_call():
        calls.append(len(calls))
        if len(calls) == 1:
            time.sleep(0.05)  # what tracing or compiling costs, once

    first, later = first_and_later_seconds(traced_on_first_call, repeat=3)
    assert first >= 0.05 and 0 <= later < 0.05  # the later time never includes the first call
    assert calls[0] == 0 and len(calls) >= 1 + 1 + 3  # the first call, seconds_per_call's warm-up, 3 samples


@pytest.mark.parametrize("function", [seconds_per_call, compare_seconds, first_and_later_seconds])
def test_repeat_must_be_positive(function):
    with pytest.raises(ValueError, match="repeat must be at least 1"):
        function({"a": lambda: None} if function is compare_seconds else (lambda: None), repeat=0)


def test_ratio_text():
    assert [ratio_text(r) for r in (0.05, 1.0, 9.94, 12.4, 1234.0)] == ["0.05x", "1.0x", "9.9x", "12x", "1,234x"]


def _build(x):
    w = V1.get_variable("w", [3, 2])
    b = V1.get_variable("b", [2], initializer=tf.constant_initializer(0.5))
    return tf.matmul(x, w) + b


def _make():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])


def test_ensemble_runners_compute_every_member_each_way():
    batch = np.ones((4, 3))
    runners = ensemble_runners([1, 3], batch, _build, _make)
    assert sorted(runners) == [1, 3]
    for n, ways in runners.items():
        results = {name: run() for name, run in ways.items()}
        assert len(results["Graph+Session each"]) == n and len(results["one fused run"]) == n
        keras_outputs = np.stack(results["N Keras calls"])
        np.testing.assert_allclose(np.stack(results["one tf.function"]), keras_outputs, atol=1e-6)
        np.testing.assert_allclose(results["vectorized"], keras_outputs, atol=1e-5)
        np.testing.assert_allclose(np.stack(results["N runs, one graph"]), np.stack(results["one fused run"]))
    with pytest.raises(ValueError, match="positive member counts"):
        ensemble_runners([0], batch, _build, _make)


def test_weight_copy_steps_copy_then_write_the_source(tmp_path, monkeypatch):
    made = []
    original = timing._square_model
    monkeypatch.setattr(timing, "_square_model", lambda width, value: made.append(original(width, value)) or made[-1])
    steps = weight_copy_steps(100, folder=tmp_path)
    assert list(steps) == ["NumPy copy", "write only", "graph sync op", "tf.function",
                           "get/set_weights", "checkpoint"]
    src, dst = made
    for name in ("tf.function", "get/set_weights", "checkpoint"):
        steps[name]()
        for s, d in zip(src.weights, dst.weights):  # dst holds the source from before the write
            np.testing.assert_allclose(s.numpy() - d.numpy(), 1e-3, rtol=1e-3)
    before = [w.numpy() for w in dst.weights]
    steps["write only"]()
    assert all(np.array_equal(w.numpy(), b) for w, b in zip(dst.weights, before))
    for name in ("NumPy copy", "graph sync op"):
        steps[name]()


def test_weight_copy_steps_refuse_an_existing_checkpoint(tmp_path):
    tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "copy_100"))
    with pytest.raises(WouldOverwriteError):
        weight_copy_steps(100, folder=tmp_path)
