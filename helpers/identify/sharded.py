"""Reader: a sharded-weights index (``.weights.json``, ``save_weights(..., max_shard_size=)``).

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     index = os.path.join(folder, "model.weights.json")
    ...     with open(index, "w") as file:
    ...         json.dump({"weight_map": {"dense/vars": "model_00000.weights.h5"}}, file)
    ...     info = read_sharded(index)
    >>> info.kind, info.holds["shards"]
    ('sharded-weights', ['model_00000.weights.h5'])
    >>> info.traps[0][:70]
    'shard file(s) missing beside the index: model_00000.weights.h5: load_w'
"""

from __future__ import annotations

import json
import os

from helpers.errors import first_line
from helpers.identify.answer import Identification, loading_code, not_model

__all__ = ["read_sharded"]


def read_sharded(path: str) -> Identification:
    try:
        with open(path, encoding="utf-8") as file:
            index = json.load(file)
        weight_map = index["weight_map"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        return not_model(path, f"a .weights.json that is not a sharded-weights index ({first_line(error)})")
    shards = sorted({s for v in weight_map.values() for s in ([v] if isinstance(v, str) else v)})
    folder = os.path.dirname(path)
    missing = [s for s in shards if not os.path.isfile(os.path.join(folder, s))]
    info = Identification(path, "sharded-weights", holds={"weight groups": len(weight_map), "shards": shards})
    if missing:
        info.traps.append(f"shard file(s) missing beside the index: {', '.join(missing)}: load_weights "
                          "finds this only when it reaches them, leaving the model half-loaded")
    info.traps.append("weights only: the architecture is not in the file")
    info.how_to_load = loading_code(path, """
        from helpers.keras_files import describe_keras_file
        # Weights only: build the model in Keras 3 code, then model.load_weights(path).
        loaded = describe_keras_file(path)  # refuses an index with a missing shard
        report = f"{len(loaded)} weights in {len(loaded.shards)} shards"
        """)
    return info
