"""Unit tests of helpers.scopes."""

from __future__ import annotations

import pytest

from helpers.scopes import scope_name


@pytest.mark.parametrize("given, expected", [("net", "net"), ("net/", "net"), ("/a/b/", "a/b")])
def test_slashes_are_trimmed(given, expected):
    assert scope_name(given) == expected


@pytest.mark.parametrize("bad", ["", "/", "//", None, 3])
def test_empty_or_non_string_scopes_are_refused(bad):
    with pytest.raises(ValueError, match="a scope must be a non-empty name"):
        scope_name(bad)
