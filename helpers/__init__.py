"""Reusable recipes and exercise checks for the TensorFlow model-state course.

One topic module per notebook (``inspection``, ``metagraph``, ``ensembles``,
``cloning``, ``state_sync``, ``object_graph``, ``migration``), plus:

* ``helpers.notebook``: the first cell every notebook runs (quiet logs, seeds,
  a temporary work folder) and small display aids;
* ``helpers.checks``: the check functions behind the exercises;
* ``helpers.errors``: the exceptions the recipes raise;
* ``helpers.scopes``: the one check of a variable-scope argument;
* ``helpers.files``: paths in (``str`` or ``os.PathLike``), and the one literal
  "refuse to overwrite" check every recipe that writes goes through.

Recipes that read checkpoints resolve their paths through ``helpers.inspection``
(chapter 01), so a bad path gets the same clear ``NotACheckpointError`` everywhere.

Importing ``helpers`` does not import TensorFlow, so ``helpers.notebook`` can
set TensorFlow's logging options before TensorFlow loads.
"""

__version__ = "0.1.0"
