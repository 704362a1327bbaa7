"""What runs in the fresh processes of ``helpers.round_trip``: a model's reload, or a script.

``helpers.round_trip`` calls these through ``helpers.fresh_process``, naming them as strings
(``"helpers.round_trip_worker:reload"``); this module imports ``helpers.round_trip`` (down), so
that both processes describe a model with the same ``snapshot``.

* ``reload(path, modules, compile, safe_mode, layout, arrays)``: import the modules that define
  the custom classes, load the model with ``keras.saving.load_model``, and describe it on the
  inputs; a dict with its ``description`` and ``arrays``, or an ``error`` entry saying what went
  wrong (``import``, ``not_found``, ``load`` or ``call``);
* ``run_script(source)``: run Python code as ``__main__``; its exit code, output and errors.

Example:
    >>> run_script("print('hi')")
    (0, 'hi\\n', '')
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import tempfile
import traceback
from typing import Any

from helpers.round_trip import snapshot, unpack_inputs

NOT_FOUND = re.compile(r"Could not locate (class|function) '([^']+)'")


def import_entry(entry: str) -> None:
    """Import a module by name, or a ``.py`` file by path (as a top-level module named after the file).

    Example:
        >>> import_entry("json"); "json" in sys.modules
        True
    """
    if entry.endswith(".py") or os.sep in entry:
        name = os.path.splitext(os.path.basename(entry))[0]
        if name in sys.modules:
            return
        spec = importlib.util.spec_from_file_location(name, entry)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import the file {entry!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    else:
        importlib.import_module(entry)


def first_lines(error: BaseException, count: int = 2) -> str:
    """The first ``count`` lines of an error's message, on one line (at most 400 characters).

    Example:
        >>> first_lines(ValueError("one\\ntwo\\nthree"))
        'one two'
    """
    text = str(error).strip() or type(error).__name__
    return " ".join(text.splitlines()[:count])[:400]


def reload(path: str, modules: list[str], compile: bool, safe_mode: bool,  # noqa: A002 - load_model's name
           layout: dict[str, Any], arrays: dict[str, Any]) -> dict[str, Any]:
    """Import ``modules``, load the model at ``path``, and describe it on the inputs ``layout``/``arrays``.

    Example:
        >>> reload("missing.keras", ["no_such_module_here"], True, True, {"kind": "array"}, {})["error"]
        'import'
    """
    for entry in modules:
        try:
            import_entry(entry)
        except Exception as error:  # the learner's module: any error is reported, not raised
            return {"error": "import", "module": entry, "message": f"{type(error).__name__}: {first_lines(error)}"}
    import keras

    try:
        model = keras.saving.load_model(path, compile=compile, safe_mode=safe_mode)
    except Exception as error:
        found = NOT_FOUND.search(str(error))
        if found:
            return {"error": "not_found", "kind": found[1], "name": found[2]}
        return {"error": "load", "message": f"{type(error).__name__}: {first_lines(error)}"}
    try:
        description, described = snapshot(model, unpack_inputs(layout, arrays))
    except Exception as error:
        return {"error": "call", "message": f"{type(error).__name__}: {first_lines(error)}"}
    return {"description": description, "arrays": described}


def run_script(source: str) -> tuple[int, str, str]:
    """Run ``source`` as ``__main__`` with its output and errors caught; ``(exit code, stdout, stderr)``.

    Its output goes to files (Python's streams and file descriptors 1 and 2), read back at its end.

    Example:
        >>> run_script("import sys; sys.exit(3)")[0]
        3
    """
    import runpy

    with tempfile.TemporaryDirectory(prefix="fresh_script_") as folder:
        script = os.path.join(folder, "script.py")
        with open(script, "w", encoding="utf-8") as file:
            file.write(source)
        paths = [os.path.join(folder, name) for name in ("stdout.txt", "stderr.txt")]
        streams = sys.stdout, sys.stderr
        for stream in streams:
            stream.flush()
        saved = [os.dup(1), os.dup(2)]
        files = [open(name, "w", encoding="utf-8") for name in paths]
        for fd, file in zip((1, 2), files):
            os.dup2(file.fileno(), fd)  # what native code writes
        sys.stdout, sys.stderr = files  # what Python code writes
        code = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
            if not isinstance(exit_.code, (int, type(None))):
                print(exit_.code, file=sys.stderr)
        except BaseException:  # noqa: BLE001: reported as stderr, as a Python process would
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout, sys.stderr = streams
            for fd, (file, copy) in zip((1, 2), zip(files, saved)):
                file.close()
                os.dup2(copy, fd)
                os.close(copy)
        out, err = (open(name, encoding="utf-8", errors="replace").read() for name in paths)
    return code, out, err
