"""Settings that hold for every pytest run of the course (units and notebooks)."""

from __future__ import annotations

import os

from hypothesis import settings

# Quiet TensorFlow's C++ logging in test runs too (read when TensorFlow loads).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

# Property tests (Hypothesis) draw the same examples on every run, so a run's verdict is
# reproducible, and keep no example database in the checkout.
settings.register_profile("course", derandomize=True, database=None)
settings.load_profile("course")

# Fail any run that writes into the checkout; test each exercise notebook in notebooks/ for
# what differs from its solution (tests/exercise_run.py), instead of re-running it whole.
pytest_plugins = ["tests.clean_checkout", "tests.exercise_run"]
