"""Write a KerasHub preset folder and a LoRA adapter with keras-hub 0.21.1 / Keras 3.10.0.

Run with an interpreter that has those versions (the course's own has keras-hub 0.32 and Keras
3.15): see README.md. Writes into this folder (or --out DIR):

* ``bert_tiny/``: ``BertTextClassifier.save_to_preset`` of a tiny BERT (1 layer, hidden size 4,
  a 9-word vocabulary), built from a configuration, weights fixed by a seed;
* ``adapter.lora.h5``: ``backbone.save_lora_weights`` after ``enable_lora(2)`` with LoRA's B
  matrices set to 0.5 (A as initialized by the seed);
* ``MANIFEST.json``: the preprocessed input and the outputs this software computed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil

import keras
import keras_hub
import numpy as np

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "ran"]
TEXTS = ["the cat sat", "the cat ran"]


def main(out: str) -> None:
    keras.utils.set_random_seed(21)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=6)
    backbone = keras_hub.models.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2,
                                             hidden_dim=4, intermediate_dim=8, max_sequence_length=6,
                                             dropout=0.0)
    task = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=preprocessor, dropout=0.0)
    features = {key: keras.ops.convert_to_numpy(value) for key, value in preprocessor(np.array(TEXTS)).items()}
    base = keras.ops.convert_to_numpy(task(features))
    folder = os.path.join(out, "bert_tiny")
    shutil.rmtree(folder, ignore_errors=True)
    task.save_to_preset(folder)
    backbone.enable_lora(2)
    for weight in backbone.trainable_weights:
        if weight.path.endswith("lora_kernel_b"):
            weight.assign(np.full(weight.shape, 0.5, "float32"))
    adapted = keras.ops.convert_to_numpy(task(features))
    adapter = os.path.join(out, "adapter.lora.h5")
    if os.path.exists(adapter):
        os.remove(adapter)
    backbone.save_lora_weights(adapter)
    written_by = f"keras {keras.__version__} / keras-hub {keras_hub.__version__}"
    manifest = {
        "bert_tiny": {
            "path": "bert_tiny", "kind": "keras-hub-preset", "written_by": written_by,
            "description": "BertTextClassifier.save_to_preset: 1-layer BERT, hidden 4, 9-word vocabulary",
            "texts": TEXTS, "input": {key: value.tolist() for key, value in features.items()},
            "output": base.tolist(),
            "notes": "from_preset under keras-hub 0.32 / Keras 3.15 loads it; outputs on `input`."},
        "adapter": {
            "path": "adapter.lora.h5", "kind": "not-a-model/lora-adapter", "written_by": written_by,
            "description": "backbone.save_lora_weights after enable_lora(2), B matrices set to 0.5",
            "input": {key: value.tolist() for key, value in features.items()},
            "output": adapted.tolist(),
            "notes": "load_lora_weights onto bert_tiny's backbone gives `output`."},
    }
    with open(os.path.join(out, "MANIFEST.json"), "w") as file:
        json.dump(manifest, file, indent=1)
    print(written_by, "->", out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    main(parser.parse_args().out)
