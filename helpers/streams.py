"""Standard error at the file-descriptor level: the one place the course points it at /dev/null.

TensorFlow's C++ libraries write a few lines while they load ("Could not find cuda drivers",
the oneDNN banner) before any log level is read; no environment variable silences them, and
they bypass Python's ``sys.stderr``. ``stderr_to_devnull`` points file descriptor 2 (and so
whatever a process started inside the block inherits) at /dev/null, then puts it back.
Used by ``helpers.notebook`` (importing TensorFlow), ``helpers.fresh_process`` (starting a
process) and ``python -m helpers`` (identifying a file).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["stderr_to_devnull"]


@contextlib.contextmanager
def stderr_to_devnull() -> Iterator[None]:
    """File descriptor 2 points at /dev/null for the block, then where it pointed before.

    Python's ``sys.stderr`` object is untouched (it is flushed before and after), so Python
    tracebacks raised in the block still reach the caller once it ends.

    Example:
        >>> before = os.fstat(2).st_ino
        >>> with stderr_to_devnull():
        ...     os.fstat(2).st_ino == os.stat(os.devnull).st_ino
        True
        >>> os.fstat(2).st_ino == before
        True
    """
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
