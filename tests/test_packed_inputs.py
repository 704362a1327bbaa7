"""helpers.packed_inputs: a model's inputs across a process boundary, for round_trip and backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import backends, round_trip
from helpers.packed_inputs import pack_inputs, unpack_inputs

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("inputs", [np.ones((2, 3)), [np.ones(2), np.zeros(3)], (np.ones(1),),
                                    {"b": np.ones(2), "a": np.arange(3)}])
def test_unpack_gives_back_what_was_packed_through_an_npz(inputs, tmp_path):
    layout, arrays = pack_inputs(inputs, numeric=True)
    np.savez(tmp_path / "inputs.npz", **arrays)
    with np.load(tmp_path / "inputs.npz") as data:
        back = unpack_inputs(json.loads(json.dumps(layout)), data)
        if isinstance(inputs, dict):
            assert list(back) == list(inputs)
            assert all(np.array_equal(back[key], inputs[key]) for key in inputs)
        elif isinstance(inputs, (list, tuple)):
            assert isinstance(back, list) and all(np.array_equal(b, i) for b, i in zip(back, inputs, strict=True))
        else:
            assert np.array_equal(back, inputs)


def test_only_the_numeric_packing_refuses_strings_and_none():
    assert pack_inputs(np.array(["a"]))[1]["x0"].dtype.kind == "U"  # round_trip's packing takes anything
    for wrong in (None, np.array(["a"]), [np.ones(2), None]):
        with pytest.raises(ValueError, match="inputs must be numeric arrays"):
            pack_inputs(wrong, numeric=True)


def test_round_trip_keeps_its_public_names_and_backends_uses_the_same_packing():
    assert round_trip.pack_inputs is pack_inputs and round_trip.unpack_inputs is unpack_inputs
    assert backends.pack_inputs is pack_inputs


def test_packing_imports_neither_tensorflow_nor_keras():
    """The JAX child of check_across_backends unpacks its inputs: that must not import TensorFlow."""
    code = ("import json, sys\nimport helpers.packed_inputs\n"
            "print(json.dumps(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules)))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == []
