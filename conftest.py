"""Settings that hold for every pytest run of the course (units and notebooks)."""

from __future__ import annotations

import os

# Quiet TensorFlow's C++ logging in test runs too (read when TensorFlow loads).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

# Fail any run that writes into the checkout.
pytest_plugins = ["tests.clean_checkout"]
