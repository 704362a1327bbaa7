"""Reusable recipes and exercise checks for the TensorFlow model-state course.

One topic module per notebook (``inspection``, ``metagraph``, ``ensembles``,
``cloning``, ``state_sync``, ``object_graph``, ``migration``, ``keras_files``,
``saved_models``, ``keras2``, ``resume``), plus:

* ``helpers.notebook``: the first cell every notebook runs (quiet logs, seeds,
  a temporary work folder) and small display aids;
* ``helpers.checks``: the check functions behind the exercises;
* ``helpers.errors``: the exceptions the recipes raise;
* ``helpers.scopes``: the one check of a variable-scope argument;
* ``helpers.tensor_bundle``: where a checkpoint's values lie, read from its
  ``.index`` alone (the data-file length check of ``inspection`` and ``saved_models``);
* ``helpers.files``: paths in (``str`` or ``os.PathLike``), and the one literal
  "refuse to overwrite" check every recipe that writes goes through;
* ``helpers.fresh_process``: the one way to run a function in a fresh process
  (``multiprocessing``'s fork server on Linux, ``COURSE_WORKERS=spawn`` for new
  interpreters), for chapters 11, 12 and 16;
* ``helpers.timing``: the measuring harness of the chapters' timing sections;
* ``helpers.preflight``: ``make check``, the one-step check of a learner's machine.

Recipes that read checkpoints resolve their paths through ``helpers.inspection``
(chapter 01), so a bad path gets the same clear ``NotACheckpointError`` everywhere.

Importing ``helpers`` does not import TensorFlow, so ``helpers.notebook`` can
set TensorFlow's logging options before TensorFlow loads.
"""

# The release, equal to pyproject.toml's version (tests/test_address.py checks).
__version__ = "0.2.0"
