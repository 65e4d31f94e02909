"""The official package's model tables: language -> default model, model -> default layer.

Shipped as data beside the package (bertscore/data/model_tables.json, copied from bert_score/utils.py
v0.3.13: lang2model, model2layers; tests/test_models_table.py compares), plus the embedded offline
model's layer, and what a door says when a model has no known default layer.
"""

from __future__ import annotations

import json
from importlib import resources

from ..notes import advice
from ..sources import EMBEDDED_MODEL_NAME

DEFAULT_MULTILINGUAL_MODEL = "bert-base-multilingual-cased"  # the official default of a language not in the table

_OFFICIAL = json.loads(resources.files("bertscore").joinpath("data/model_tables.json").read_text(encoding="utf-8"))

# The official language -> default model table.
LANG_TO_MODEL: dict[str, str] = dict(_OFFICIAL["lang_to_model"])

# Default layer per model: the official table, plus the embedded offline default (a
# sentence-transformers model tuned on its last layer).
MODEL_TO_LAYERS: dict[str, int] = {**_OFFICIAL["model_to_layers"], EMBEDDED_MODEL_NAME: 6}


def default_model_for_lang(lang: str) -> str:
    """The official default model for a language code (any unknown code -> multilingual BERT)."""
    return LANG_TO_MODEL.get(lang.lower(), DEFAULT_MULTILINGUAL_MODEL)


def unknown_layer_message(model_type: str, last_layer: int) -> str:
    """What a door says when `model_type` has no official default layer (its last one is used)."""
    return (f"no default layer is known for {model_type!r}: using its last layer ({last_layer}); "
            f"{advice('num_layers', last_layer)} to keep it, or measure which layer agrees best with human "
            f"judgements: `bertscore layers --model {model_type} --data JUDGEMENTS` (docs/layers.md)")
