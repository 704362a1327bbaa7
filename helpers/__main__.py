"""``python -m helpers PATH [--verify] [--json]``: what is this model file, and how do I load it?

Prints ``helpers.identify.identify(PATH)`` as a short report (or JSON with
stable keys: path, kind, title, is_model, reason, written_by, holds, traps,
how_to_load, and with ``--verify`` also verified and verify_report). Installed
as the console script ``what-model-file``.

Exit codes:

* 0: a model file (and, with ``--verify``, the advised code loaded it);
* 1: not a model file (missing, unreadable, empty, truncated, another format);
* 2: a model file the advised code could not load here (``--verify`` only),
  for example because a runtime such as onnxruntime is not installed.
"""

from __future__ import annotations

import argparse
import json
import sys

OK, NOT_A_MODEL, NOT_VERIFIED = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    """Run the command; return its exit code (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="what-model-file",
        description="Name a TensorFlow/Keras model file or folder, what wrote it, what it holds, "
                    "its traps and the code that loads it on TF 2.21 / Keras 3.15.",
        epilog="exit codes: 0 ok, 1 not a model file, 2 could not verify")
    parser.add_argument("path", help="a file, a folder or a checkpoint prefix")
    parser.add_argument("--verify", action="store_true",
                        help="run the loading code in a fresh Python and report what it loaded")
    parser.add_argument("--json", action="store_true", help="print JSON (stable keys) for scripts")
    arguments = parser.parse_args(argv)

    from helpers.identify import identify

    info = identify(arguments.path)
    verification = info.verify() if arguments.verify and info.is_model else None
    if arguments.json:
        data = info.as_dict()
        if arguments.verify:
            data["verified"] = bool(verification and verification.ok)
            data["verify_report"] = verification.report if verification else info.reason
        print(json.dumps(data, indent=1, sort_keys=True, default=str))
    else:
        print(info)
        if verification is not None:
            print(verification)
    if not info.is_model:
        return NOT_A_MODEL
    return OK if verification is None or verification.ok else NOT_VERIFIED


if __name__ == "__main__":
    sys.exit(main())
