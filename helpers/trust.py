"""Which loading routes run code that a model file carries, and what ``identify`` says instead.

``helpers.identify`` never runs such code unless the user says they trust the file
(``python -m helpers FILE --verify --trust``, ``info.verify(trust=True)``). Each route below
was measured on TF 2.21 / Keras 3.15.1 with a file that writes a marker file when its code runs:

* ``LAMBDA``: a ``Lambda`` layer holding marshalled Python bytecode (a ``.keras`` file, a legacy
  ``.h5`` from Keras 2 or Keras 3). ``safe_mode`` (the default) refuses it; ``safe_mode=False``
  runs the bytecode.
* ``SAVEDMODEL``: ``tf.saved_model.load`` and ``keras.layers.TFSMLayer`` run functions stored in
  the folder (resource initializers, restore functions, a TF1 ``main_op``), and calling a
  signature runs its graph: TensorFlow ops can read and write files.
* ``GRAPH``: a ``.meta`` graph: running its variables' initializer or its Saver's restore op
  (``saver.restore``) runs ops stored in the graph, which can read and write files.
* ``TFSM``: a ``TFSMLayer`` inside a ``.keras`` configuration loads the SavedModel it names,
  which runs that folder's functions (the ``SAVEDMODEL`` route).
* ``MODULES``: tf-keras (Keras 2) imports any module a ``.keras`` configuration names, to find a
  custom class by name (Keras 3 imports only Keras' own packages).

Example:
    >>> print(refusal([LAMBDA])[:57])
    nothing was run: loading it would run code the file carri
"""

from __future__ import annotations

__all__ = ["GRAPH", "LAMBDA", "MODULES", "SAVEDMODEL", "TFSM", "TRUST_HINT", "refusal"]

LAMBDA = "a Lambda layer holds Python bytecode, which safe_mode=False would run"
SAVEDMODEL = ("loading a SavedModel runs the TensorFlow functions stored in the folder (initializers, "
              "restore functions), and TensorFlow ops can read and write files")
GRAPH = ("running a graph's initializer or its Saver's restore op runs the graph's ops, which can "
         "read and write files")
TFSM = ("a TFSMLayer in the configuration loads the SavedModel it names, which runs the functions "
        "stored in that folder")
MODULES = ("tf-keras imports the modules its configuration names to find its custom classes "
           "(they run on import)")
TRUST_HINT = "only for a file you trust: python -m helpers FILE --verify --trust (verify(trust=True))"


def refusal(routes: list[str]) -> str:
    """The one line ``verify()`` reports when it did not run a file's code, naming each route.

    Example:
        >>> refusal([SAVEDMODEL]).startswith("nothing was run: loading it would run code")
        True
    """
    return f"nothing was run: loading it would run code the file carries ({'; '.join(routes)}); {TRUST_HINT}"
