"""Fixed inputs and output summaries for the PyPI model files (numpy only, any Python).

Image, audio and volume models take inputs of 10^4 to 10^6 values and answer with as
many: too many to keep in a MANIFEST.json. For those the manifest stores a *pattern*
(``{"pattern": "waves", "shape": ..., "low": ..., "high": ..., "sha256": ...}``) that
``make_input`` turns into the same float32 array on any machine (the hash proves it),
and a *summary* of each output (shape, mean, mean of absolute values, min, max and
32 values taken at even strides) that a test compares within a tolerance.

Used by pypi_expected.py (TensorFlow 2.15.1), pypi_expected_runtimes.py (the course's
LiteRT and onnxruntime) and tests/test_pypi_files.py.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

SAMPLES = 32  # strided values kept per output summary
FULL_LIMIT = 64  # outputs with at most this many values are stored whole


def waves(shape: tuple[int, ...], low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """A smooth, non-constant float32 array in [low, high] (same bytes on every machine)."""
    count = int(np.prod(shape))
    index = np.arange(count, dtype=np.float64)
    unit = 0.5 + 0.5 * np.sin(index * 0.7071) * np.cos(index * 0.0123 + 0.4)
    # Round to multiples of 1/1024: exact in float32, so libm's last bit cannot move a value.
    unit = np.round(unit * 1024) / 1024
    return (low + (high - low) * unit).astype(np.float32).reshape(shape)


def digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def pattern(shape: tuple[int, ...], low: float = -1.0, high: float = 1.0) -> dict[str, Any]:
    """The manifest's description of ``waves(shape, low, high)``."""
    return {"pattern": "waves", "shape": list(shape), "low": low, "high": high,
            "sha256": digest(waves(shape, low, high))}


def make_input(spec: Any) -> Any:
    """The array a manifest's ``input`` describes: a stored list, a pattern, or a dict of them."""
    if isinstance(spec, dict) and spec.get("pattern") == "waves":
        array = waves(tuple(spec["shape"]), spec["low"], spec["high"])
        if digest(array) != spec["sha256"]:
            raise ValueError("the waves pattern no longer gives the stored bytes")
        return array
    if isinstance(spec, dict):
        return {key: make_input(value) for key, value in spec.items()}
    array = np.asarray(spec)
    return array.astype(np.float32) if array.dtype == np.float64 else array


def summary(array: Any) -> dict[str, Any]:
    """Shape, mean, mean |x|, min, max and SAMPLES strided values of one output."""
    values = np.asarray(array, dtype=np.float64)
    flat = values.reshape(-1)
    step = max(1, flat.size // SAMPLES)
    return {"shape": list(values.shape), "mean": float(flat.mean()), "mean_abs": float(np.abs(flat).mean()),
            "min": float(flat.min()), "max": float(flat.max()), "stride": step,
            "samples": flat[::step][:SAMPLES].tolist()}


def summary_close(got: Any, want: dict[str, Any], atol: float, rtol: float = 1e-4) -> list[str]:
    """What differs between an output and a stored summary, beyond atol + rtol * |want| (empty: close)."""
    have = summary(got)
    if have["shape"] != want["shape"]:
        return [f"shape {have['shape']} != {want['shape']}"]
    problems = []
    for key in ("mean", "mean_abs", "min", "max"):
        if abs(have[key] - want[key]) > atol + rtol * abs(want[key]):
            problems.append(f"{key} {have[key]:.7g} != {want[key]:.7g}")
    gap = np.abs(np.asarray(have["samples"]) - np.asarray(want["samples"]))
    if np.any(gap > atol + rtol * np.abs(want["samples"])):
        problems.append(f"samples differ by up to {gap.max():.3g}")
    return problems


def outputs_entry(outputs: dict[str, Any], first: str) -> dict[str, Any]:
    """Manifest keys for named outputs: ``output`` (whole, or None when large), summaries, order."""
    arrays = {name: np.asarray(value) for name, value in outputs.items()}
    small = all(a.size <= FULL_LIMIT for a in arrays.values())
    whole = None
    if small:
        as_list = {name: a.astype(np.float64).tolist() for name, a in arrays.items()}
        whole = as_list[first] if len(as_list) == 1 else as_list
    return {"output": whole, "output_names": list(arrays), "first_output": first,
            "output_summary": {name: summary(a) for name, a in arrays.items()}}
