"""``python -m helpers PATH [--verify [--trust]] [--json]``: what is this model file, and how to load it?

Prints ``helpers.identify.identify(PATH)`` as a short report (or JSON with
stable keys: path, kind, title, is_model, reason, written_by, holds, traps,
how_to_load, and with ``--verify`` also verified and verify_report). Installed
as the console script ``what-model-file``.

Exit codes:

* 0: a model file (and, with ``--verify``, the advised code loaded it);
* 1: not a model file (missing, unreadable, empty, truncated, another format);
* 2: a model file the advised code could not load here (``--verify`` only),
  for example because a runtime such as onnxruntime is not installed, or code that
  read only the weights of a whole model (it did not load the model), or a file that
  declares a model far larger than it stores (the loading process's memory is capped);
* 3: not verified, nothing run: loading the file would run code it carries (a Lambda's
  bytecode, a SavedModel's stored functions, a ``.meta`` graph's ops, modules tf-keras imports
  by name);
  ``--trust`` runs it, only for a file you trust.

TensorFlow's log lines and library warnings are kept out of the output. Without ``--verify``
naming imports TensorFlow only for the kinds that need it (checkpoints, ``.meta`` graphs,
frozen GraphDefs): a ``.keras``, ``.h5``, SavedModel folder, ``.tflite`` or ``.onnx`` is named in
a fraction of a second (``benchmarks/identify_speed.py``).

Example:
    >>> main(["no/such/file"])
    file: not a model file
      why: no such file or folder
    1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import warnings
from collections.abc import Iterator

from helpers.streams import stderr_to_devnull

OK, NOT_A_MODEL, NOT_VERIFIED, NOT_TRUSTED = 0, 1, 2, 3


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit code (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="what-model-file",
        description="Name a TensorFlow/Keras model file or folder, what wrote it, what it holds, "
                    "its traps and the code that loads it on TF 2.21 / Keras 3.15.",
        epilog="exit codes: 0 ok, 1 not a model file, 2 could not verify, "
               "3 not verified: the file carries code (pass --trust only for a file you trust)")
    parser.add_argument("path", help="a file, a folder or a checkpoint prefix")
    parser.add_argument("--verify", action="store_true",
                        help="run the loading code in a fresh Python and report what it loaded")
    parser.add_argument("--trust", action="store_true",
                        help="with --verify: also run code the file carries (a Lambda's bytecode, a "
                             "SavedModel's functions, a graph's ops); only for a file you trust")
    parser.add_argument("--json", action="store_true", help="print JSON (stable keys) for scripts")
    arguments = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # library warnings are not the report
        from helpers.identify import identify

        with _quiet_tensorflow():  # TensorFlow is imported only by the readers that need it
            info = identify(arguments.path)
    verification = (info.verify(trust=arguments.trust) if arguments.verify and info.is_model
                    else None)
    if arguments.json:
        data = info.as_dict()
        if arguments.verify:
            data["verified"] = bool(verification and verification.ok)
            data["verify_report"] = verification.report if verification else info.reason
        print(json.dumps(data, indent=1, sort_keys=True, default=str))
    else:
        print(info)
        if verification is not None:
            print(textwrap.fill(str(verification), 100, subsequent_indent="  ",
                                break_long_words=False, break_on_hyphens=False))
    if not info.is_model:
        return NOT_A_MODEL
    if verification is None or verification.ok:
        return OK
    return NOT_TRUSTED if verification.untrusted else NOT_VERIFIED


@contextlib.contextmanager
def _quiet_tensorflow() -> Iterator[None]:
    """TensorFlow's C++ and Python logs at errors only, its load banner discarded, if a reader imports it.

    Naming most files imports no TensorFlow at all (``helpers.identify`` reads them with h5py,
    LiteRT or the protobuf wire format); lines written to the error stream while identifying
    (a C++ library loading) obey no log level, so the stream is closed for the block.
    """
    import logging

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # read when TensorFlow's libraries load
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # no oneDNN banner
    try:
        with stderr_to_devnull():
            yield
    finally:
        for name in ("tensorflow", "absl", "h5py"):
            logging.getLogger(name).setLevel(logging.ERROR)


if __name__ == "__main__":
    sys.exit(main())
