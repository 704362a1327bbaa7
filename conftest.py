"""Settings that hold for every pytest run of the course (units and notebooks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Quiet TensorFlow's C++ logging in test runs too (read when TensorFlow loads).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

# Property tests (Hypothesis) draw the same examples on every run, so a run's verdict is
# reproducible, and keep no example database in the checkout.
settings.register_profile("course", derandomize=True, database=None)
settings.load_profile("course")

# Fail any run that writes into the checkout.
pytest_plugins = ["tests.clean_checkout"]

EXERCISES = Path(__file__).resolve().parent / "notebooks"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the exercise notebooks the way `--nbval-lax` does, in the same run as the strict solutions.

    The exercise notebooks have no stored outputs to compare: they must only run, with their
    stubs and check cells allowed to raise (they are tagged `raises-exception`). One pytest
    process can then run everything, spread over the cores by pytest-xdist.
    """
    for item in items:
        options = getattr(item, "options", None)
        if isinstance(options, dict) and "check" in options and EXERCISES in Path(item.path).parents:
            options["check"] = False
