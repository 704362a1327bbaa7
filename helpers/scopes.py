"""Variable-scope names, checked once for every graph-mode recipe."""

from __future__ import annotations


def scope_name(scope: str) -> str:
    """``scope`` without surrounding slashes; a ``ValueError`` when it is empty or not a string.

    Append ``"/"`` before matching variable names against it: TensorFlow's
    collection filters match the start of a name, so ``"net"`` alone would also
    pick ``"net_past/w"``.

    Example:
        >>> scope_name("model_1/")
        'model_1'
        >>> scope_name("/")
        Traceback (most recent call last):
        ...
        ValueError: a scope must be a non-empty name such as 'model_1', got '/'
    """
    if not isinstance(scope, str) or not scope.strip("/"):
        raise ValueError(f"a scope must be a non-empty name such as 'model_1', got {scope!r}")
    return scope.strip("/")
