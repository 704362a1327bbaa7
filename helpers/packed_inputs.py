"""A model's inputs as named arrays and a layout, to cross into a fresh process through an ``.npz``.

``pack_inputs`` turns an array, a list or tuple of arrays, or a dict of them into a layout (plain
JSON) and arrays named ``x0``, ``x1``, ...; ``unpack_inputs`` gives the same structure back in
the other process. Only NumPy is imported here, so a child under another Keras backend (the
JAX one of ``helpers.backends``) imports no TensorFlow for it. Used by ``helpers.round_trip``
(which re-exports both names) and ``helpers.backends``.

Example:
    >>> layout, arrays = pack_inputs([[1.0], [2.0, 3.0]])
    >>> layout, sorted(arrays)
    ({'kind': 'list', 'count': 2}, ['x0', 'x1'])
    >>> unpack_inputs(layout, arrays)[1]
    array([2., 3.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["numeric_array", "pack_inputs", "unpack_inputs"]


def numeric_array(value: Any) -> np.ndarray:
    """``value`` as a numeric NumPy array; ``ValueError`` for None, strings or objects.

    Example:
        >>> numeric_array([1, 2]).dtype.kind
        'i'
        >>> numeric_array(None)
        Traceback (most recent call last):
        ...
        ValueError: inputs must be numeric arrays (the model's inputs), got None
    """
    array = np.asarray(value) if value is not None else None
    if array is None or array.dtype.kind not in "biuf":
        shown = "None" if value is None else f"an array of {array.dtype}"  # type: ignore[union-attr]
        raise ValueError(f"inputs must be numeric arrays (the model's inputs), got {shown}")
    return array


def pack_inputs(inputs: Any, *, numeric: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``inputs`` (an array, a list or tuple of arrays, or a dict of them) as npz arrays and a layout.

    With ``numeric=True`` every array must be numeric (``numeric_array``): ``ValueError`` otherwise.

    Example:
        >>> layout, arrays = pack_inputs({"a": [1.0], "b": [2.0]})
        >>> layout
        {'kind': 'dict', 'keys': ['a', 'b']}
        >>> unpack_inputs(layout, arrays)["b"]
        array([2.])
        >>> pack_inputs(["a", "b"])[1]["x0"]
        array('a', dtype='<U1')
        >>> pack_inputs(["a", "b"], numeric=True)
        Traceback (most recent call last):
        ...
        ValueError: inputs must be numeric arrays (the model's inputs), got an array of <U1
    """
    as_array = numeric_array if numeric else np.asarray
    if isinstance(inputs, dict):
        keys = [str(key) for key in inputs]
        return {"kind": "dict", "keys": keys}, {f"x{i}": as_array(inputs[k]) for i, k in enumerate(inputs)}
    if isinstance(inputs, (list, tuple)):
        return {"kind": "list", "count": len(inputs)}, {f"x{i}": as_array(v) for i, v in enumerate(inputs)}
    return {"kind": "array"}, {"x0": as_array(inputs)}


def unpack_inputs(layout: dict[str, Any], arrays: Any) -> Any:
    """The inverse of ``pack_inputs``: ``arrays`` (a dict, or an open ``.npz``) in ``layout``'s structure.

    Example:
        >>> unpack_inputs({"kind": "array"}, {"x0": np.zeros(2)})
        array([0., 0.])
    """
    if layout["kind"] == "dict":
        return {key: arrays[f"x{i}"] for i, key in enumerate(layout["keys"])}
    if layout["kind"] == "list":
        return [arrays[f"x{i}"] for i in range(layout["count"])]
    return arrays["x0"]
