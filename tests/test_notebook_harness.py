"""Unit tests of helpers.notebook: the first cell every notebook runs."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

from helpers import notebook
from helpers.notebook import expect_error, hide_work_folder


def _run_fresh_python(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter, as a notebook kernel would."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=240, check=False,
    )


@pytest.fixture(scope="module")
def started():
    """What a fresh interpreter prints and leaves behind when it runs start_notebook()."""
    result = _run_fresh_python(
        """
        import os
        from helpers.notebook import start_notebook, work_folder
        start_notebook()
        print("cwd-is-work-folder", os.getcwd() == str(work_folder()))
        print("work-folder", work_folder())
        import tensorflow as tf
        with tf.Graph().as_default():
            tf.compat.v1.set_random_seed(0)
            w = tf.compat.v1.get_variable("w", shape=[3])
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                print("graph-values", sess.run(w).round(4).tolist())
        print("eager-values", tf.random.uniform([3]).numpy().round(4).tolist())
        print("saved", tf.train.Checkpoint(v=tf.Variable(1.0)).write("ckpt/v"))
        print("tf32", tf.config.experimental.tensor_float_32_execution_enabled())
        """
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return result, lines


def test_prints_one_line_and_no_logs(started):
    result, _ = started
    assert result.stdout.splitlines()[0].startswith("TensorFlow 2.21.0 is ready: quiet logs, seed 42")
    assert result.stderr == "", "TensorFlow wrote to stderr:\n" + result.stderr


def test_moves_into_a_temporary_folder_that_is_removed_at_exit(started, tmp_path):
    _, lines = started
    assert lines["cwd-is-work-folder"] == "True"
    folder = lines["work-folder"]
    assert "tf-course-" in folder
    assert not __import__("os").path.exists(folder), "the work folder outlived the kernel"
    assert lines["saved"] == "ckpt/v", "relative paths stay relative"


def test_tensor_float_32_is_off(started):
    """On Ampere+ GPUs TF32 would move float32 matmuls by ~1e-3 from the CPU's (LiteRT, ONNX)."""
    _, lines = started
    assert lines["tf32"] == "False"


def test_randomness_repeats_across_runs(started):
    _, first = started
    again = _run_fresh_python(
        """
        from helpers.notebook import start_notebook
        start_notebook()
        import tensorflow as tf
        print("eager-values", tf.random.uniform([3]).numpy().round(4).tolist())
        """
    )
    assert again.stdout.splitlines()[-1] == "eager-values " + first["eager-values"]


def test_unseeded_graph_randomness_raises_under_determinism():
    """A tf.Graph has a seed of its own; with deterministic ops, building an unseeded random op fails."""
    result = _run_fresh_python(
        """
        from helpers.notebook import start_notebook
        start_notebook()
        import tensorflow as tf
        with tf.Graph().as_default():
            try:
                tf.compat.v1.get_variable("w", shape=[3])
            except RuntimeError as error:
                print("raised", "seed" in str(error))
        """
    )
    assert result.stdout.splitlines()[-1] == "raised True"


def test_expect_error_shows_the_error(capsys):
    with expect_error(ZeroDivisionError):
        1 / 0
    assert capsys.readouterr().out == "ZeroDivisionError: division by zero\n"


def test_expect_error_shortens_long_messages(capsys):
    with expect_error(ValueError, max_lines=2):
        raise ValueError("one\ntwo\nthree\nfour")
    assert capsys.readouterr().out == "ValueError: one\ntwo\n... (2 more lines)\n"


def test_expect_error_fails_when_nothing_is_raised():
    with pytest.raises(AssertionError, match="ran without an error"):
        with expect_error(KeyError):
            pass


def test_expect_error_fails_on_another_error():
    with pytest.raises(AssertionError, match="expected KeyError, but the block raised TypeError"):
        with expect_error(KeyError):
            raise TypeError("wrong kind")


def test_expect_error_needs_a_type():
    with pytest.raises(TypeError, match="at least one exception type"):
        with expect_error():
            pass


def test_hide_work_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(notebook, "_work_folder", tmp_path)
    assert hide_work_folder(f"no file {tmp_path}/ckpt/m here") == "no file ckpt/m here"
    assert hide_work_folder(f"in {tmp_path}") == "in ."


def test_work_folder_before_start(monkeypatch):
    monkeypatch.setattr(notebook, "_work_folder", None)
    with pytest.raises(RuntimeError, match="run start_notebook"):
        notebook.work_folder()


def test_error_summary_of_a_graph_execution_error():
    message = (
        "Graph execution error:\n\nDetected at node 'w/Read' defined at (most recent call last):\n"
        '    File "<stdin>", line 5, in <module>\nNode: \'w/Read\'\n'
        "Could not find variable w.\n\t [[{{node w/Read}}]]\n\nOriginal stack trace for 'w/Read':\n"
        '  File "/somewhere/ops.py", line 1, in f\n'
    )
    assert notebook.error_summary(RuntimeError(message)) == ["Could not find variable w."]


def test_error_summary_of_a_tf_function_tracing_error():
    message = (
        "in user code:\n\n"
        '    File "/tmp/ipykernel_26732/1648480633.py", line 6, in sync_arguments  *\n'
        "        dst.assign(src)\n\n"
        "    AttributeError: 'SymbolicTensor' object has no attribute 'assign'\n"
    )
    assert notebook.error_summary(AttributeError(message)) == ["'SymbolicTensor' object has no attribute 'assign'"]


def test_error_summary_keeps_indented_detail_lines():
    message = "checkpoint 'c' does not match m:\n  missing from the checkpoint: 'b'"
    assert notebook.error_summary(ValueError(message)) == ["checkpoint 'c' does not match m:", "  missing from the checkpoint: 'b'"]


def test_error_summary_drops_the_eager_function_node_prefix():
    from helpers.notebook import error_summary

    error = ValueError("{{function_node __wrapped__Mean_device_/job:localhost/replica:0/task:0/device:CPU:0}} "
                       "Invalid reduction dimension (2 for input with 2 dimension(s) [Op:Mean]")
    assert error_summary(error) == ["Invalid reduction dimension (2 for input with 2 dimension(s) [Op:Mean]"]


# --------------------------------------------------------------------------- captured_warnings


def test_captured_warnings_collects_tensorflow_logs_and_python_warnings(tmp_path):
    import logging
    import warnings

    import tensorflow as tf

    from helpers.notebook import captured_warnings

    class Net(tf.Module):
        def __init__(self):
            self.w = tf.Variable([1.0, 2.0])

    saved = tf.train.Checkpoint(model=Net(), step=tf.Variable(3)).write(str(tmp_path / "c"))
    loggers = [logging.getLogger(name) for name in ("tensorflow", "absl")]
    before = [(lg.level, list(lg.handlers), lg.propagate) for lg in loggers]
    with captured_warnings() as lines:
        tf.train.Checkpoint(model=Net()).restore(saved)  # step is left unread: logged when collected
        warnings.warn("Gradients do not exist for variables ['w']")
        logging.getLogger("tensorflow").warning("From /site/x.py:12: a moved function")
    assert any(m.startswith("tensorflow warning | Value in checkpoint could not be found") for m in lines)
    assert "tensorflow warning | a moved function" in lines  # the source location is dropped
    assert lines[-1] == "user warning | Gradients do not exist for variables ['w']"  # logged ones first
    assert all(len(line) <= 100 for message in lines for line in message.splitlines())
    assert [(lg.level, list(lg.handlers), lg.propagate) for lg in loggers] == before  # put back


def test_captured_warnings_names_keras_and_leaves_out_library_deprecations(tmp_path):
    import warnings

    import keras

    from helpers.notebook import captured_warnings

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    with captured_warnings(width=60) as caught:
        model.save(tmp_path / "m.keras", save_format="keras")  # logged through absl by Keras
        warnings.warn_explicit("numpy noise", DeprecationWarning, "/x/site-packages/numpy/a.py", 1)
        warnings.warn("your own deprecation", DeprecationWarning)
        warnings.warn("two\nlines")
    assert caught[0].startswith("keras warning | The `save_format` argument is deprecated")
    assert all(len(line) <= 60 for message in caught for line in message.splitlines())
    assert "\n    " in caught[0]  # wrapped, continued indented
    assert caught[1:] == ["deprecation warning | your own deprecation", "user warning | two\nlines"]


def test_captured_warnings_hides_the_work_folder_and_keeps_the_loggers_on_error(monkeypatch, tmp_path):
    import logging

    from helpers.notebook import captured_warnings

    monkeypatch.setattr(notebook, "_work_folder", tmp_path)
    absl = logging.getLogger("absl")
    level, handlers = absl.level, list(absl.handlers)
    with pytest.raises(ZeroDivisionError):
        with captured_warnings() as caught:
            logging.getLogger("absl").warning("cannot write %s", tmp_path / "m.keras")
            1 / 0
    assert (absl.level, absl.handlers) == (level, handlers)
    with captured_warnings() as caught:
        logging.getLogger("absl").warning("cannot write %s", tmp_path / "m.keras")
    assert caught == ["absl warning | cannot write m.keras"]


def test_work_folders_of_killed_kernels_are_removed(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)
    orphan = tmp_path / f"tf-course-{finished.stdout.strip()}-abc"  # its process is gone
    alive = tmp_path / f"tf-course-{os.getpid()}-def"  # this process: still running
    unrelated = tmp_path / "tf-course-notes"
    for folder in (orphan, alive, unrelated):
        (folder / "ckpt").mkdir(parents=True)
    made = notebook._make_work_folder()
    assert made.parent == tmp_path and made.name.startswith(f"tf-course-{os.getpid()}-")
    assert not orphan.exists() and alive.exists() and unrelated.exists()


def test_fresh_processes_start_their_server_under_the_notebooks_settings():
    """start_notebook(fresh_processes=True): the fork server imports TensorFlow with oneDNN off, as the kernel."""
    result = _run_fresh_python(
        """
        import gc
        from helpers import fresh_process
        from helpers.notebook import start_notebook
        start_notebook(fresh_processes=True)
        if fresh_process.fork_workers():
            print("server-onednn", fresh_process._server_started_with["TF_ENABLE_ONEDNN_OPTS"])
            print("server-matches", fresh_process._server_matches())
        print("frozen", gc.get_freeze_count() > 1000)
        print("child", fresh_process.call_in_fresh_process("os:getenv", "TF_ENABLE_ONEDNN_OPTS"))
        """
    )
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    if "server-onednn" in lines:
        assert lines["server-onednn"] == "0" and lines["server-matches"] == "True"
    assert lines["frozen"] == "True", "start_notebook should freeze what the imports loaded (gc.freeze)"
    assert lines["child"] == "0"


def test_a_full_collection_runs_after_a_cell_only_when_due(monkeypatch):
    collections = []
    monkeypatch.setattr(notebook.gc, "collect", lambda: collections.append(1))
    monkeypatch.setattr(notebook, "_last_full_collection", [100.0])
    monkeypatch.setattr(notebook.time, "monotonic", lambda: 101.0)
    notebook._collect_if_due()
    assert collections == []  # one ran 1 s ago
    monkeypatch.setattr(notebook.time, "monotonic", lambda: 100.0 + notebook._COLLECT_AFTER_S)
    notebook._collect_if_due()
    assert collections == [1]


def test_every_full_collection_restarts_the_count(monkeypatch):
    monkeypatch.setattr(notebook, "_last_full_collection", [0.0])
    monkeypatch.setattr(notebook.time, "monotonic", lambda: 50.0)
    notebook._note_full_collection("start", {"generation": 2})
    notebook._note_full_collection("stop", {"generation": 1})
    assert notebook._last_full_collection == [0.0]
    notebook._note_full_collection("stop", {"generation": 2})
    assert notebook._last_full_collection == [50.0]


def test_outside_ipython_nothing_is_registered():
    result = _run_fresh_python(
        """
        import gc
        from helpers import notebook
        notebook._collect_between_cells()
        print(gc.callbacks.count(notebook._note_full_collection))
        """
    )
    assert result.stdout.split() == ["0"], result.stderr[-2000:]


def test_the_collection_between_cells_is_registered_once_in_a_kernel_also_after_a_reload():
    result = _run_fresh_python(
        """
        import gc, importlib
        from IPython.testing.globalipapp import start_ipython
        shell = start_ipython()
        from helpers import notebook

        def registered():
            hooks = shell.events.callbacks["post_run_cell"]
            return (sum(h.__qualname__ == "_collect_if_due" for h in hooks),
                    sum(getattr(c, "__qualname__", "") == "_note_full_collection" for c in gc.callbacks))

        notebook._collect_between_cells()
        notebook._collect_between_cells()
        print(*registered())
        importlib.reload(notebook)
        notebook._collect_between_cells()
        print(*registered())
        """
    )
    assert result.stdout.split() == ["1", "1", "1", "1"], result.stderr[-2000:]


def test_a_fit_stopped_by_an_exception_keeps_its_iterator_until_a_full_collection():
    """Why the notebooks collect between cells (see ``_freeze_what_is_loaded``)."""
    result = _run_fresh_python(
        """
        import gc, os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import keras, numpy as np
        from tensorflow.python.data.ops.iterator_ops import OwnedIterator

        class Crash(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                raise KeyboardInterrupt

        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        x = np.ones((32, 2), "float32")
        gc.collect()
        gc.disable()
        try:
            model.fit(x, x[:, :1], epochs=2, batch_size=8, verbose=0, callbacks=[Crash()])
        except KeyboardInterrupt:
            pass
        alive = lambda: sum(isinstance(o, OwnedIterator) for o in gc.get_objects())
        before = alive()
        gc.collect()
        print(before, alive())
        """
    )
    assert result.stdout.split() == ["1", "0"], result.stderr[-2000:]
