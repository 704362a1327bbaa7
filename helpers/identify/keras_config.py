"""What a Keras model configuration (``config.json``, an HDF5 ``model_config``) says about loading it.

Shared by the ``.keras`` zip and HDF5 readers: the class configurations in it, the custom classes
it needs, whether a Lambda carries bytecode or a ``TFSMLayer`` loads a SavedModel (both run code:
``helpers.trust``), and the comments and report lines their loading code shares.

Example:
    >>> config = {"class_name": "Sequential", "config": {"layers": [
    ...     {"class_name": "Dense", "module": "keras.layers", "config": {}},
    ...     {"class_name": "Scale", "module": "my_layers", "registered_name": "Custom>Scale", "config": {}}]}}
    >>> custom_classes(config), has_lambda_code(config)
    (['Custom>Scale'], False)
"""

from __future__ import annotations

from typing import Any

from helpers.identify.answer import code_tail

__all__ = ["LAMBDA_NOTE", "MODEL_REPORT", "TFSM_NOTE", "class_configs", "custom_classes", "has_lambda_code",
           "has_tfsm_layer", "keras_module"]

LAMBDA_NOTE = ("# A Lambda holds Python bytecode: safe_mode (the default) refuses it. safe_mode=False\n"
                "# runs that code: only for a file you trust (python -m helpers FILE --verify --trust).")


TFSM_NOTE = ("\n# A TFSMLayer loads the SavedModel its config names, which runs that folder's functions:\n"
              "# safe_mode (the default) refuses it; safe_mode=False only for a file you trust.")


def has_tfsm_layer(config: Any) -> bool:
    """Whether a configuration holds a ``TFSMLayer`` (it loads a SavedModel: ``helpers.trust.TFSM``)."""
    return any(item.get("class_name") == "TFSMLayer" for item in class_configs(config))



MODEL_REPORT = code_tail("""
    shapes = lambda tensors: ", ".join(str(tuple(t.shape)) for t in tensors)
    report = (f"{type(loaded).__name__} {loaded.name!r}: {len(loaded.weights)} weights, "
              f"input {shapes(loaded.inputs)} -> output {shapes(loaded.outputs)}")
    """)


def class_configs(config: Any):
    if isinstance(config, dict):
        if "class_name" in config:
            yield config
        for value in config.values():
            yield from class_configs(value)
    elif isinstance(config, list):
        for value in config:
            yield from class_configs(value)


def custom_classes(config: Any) -> list[str]:
    """Class names a configuration needs that Keras itself does not provide."""
    found = []
    for item in class_configs(config):
        registered, module = item.get("registered_name") or "", item.get("module") or ""
        if ">" in registered or (module and not keras_module(module)):
            found.append(registered or item["class_name"])
    return sorted(set(found))


_KERAS_PACKAGES = ("keras", "keras_hub", "keras_cv", "keras_nlp")


def keras_module(module: str) -> bool:
    """Whether ``module`` is Keras' own (``keras``, ``keras.layers``; not ``keras_mark``)."""
    return any(module == package or module.startswith(package + ".") for package in _KERAS_PACKAGES)


def has_lambda_code(config: Any) -> bool:
    for item in class_configs(config):
        settings = item.get("config") if isinstance(item.get("config"), dict) else {}
        if item["class_name"] == "Lambda" and (settings.get("function_type") == "lambda" or
                                               isinstance(settings.get("function"), dict) and
                                               settings["function"].get("class_name") == "__lambda__"):
            return True
    return False

