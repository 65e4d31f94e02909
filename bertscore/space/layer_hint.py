"""What the page says under its model field: the layer a model without an official default uses,
and how to choose one by measurement (`bertscore layers`). Testable without Gradio."""

from __future__ import annotations

from typing import Any

from ..models.families import count_layers
from ..models.tables import MODEL_TO_LAYERS
from ..sources import load_config, resolve_source
from .markup import shown_as_typed
from .messages import UserError
from .user_input import parse_layer


def layer_hint(model: str, layer: Any = "") -> str:
    """Markdown for the model field: empty for a model in the official table or a layer typed in;
    otherwise which layer is used (its last) and how to measure a better one."""
    model = (model or "").strip()
    try:
        chosen = parse_layer(layer)
    except UserError:  # a bad layer is the scoring's to report, in its own words
        chosen = None
    if not model or model in MODEL_TO_LAYERS or chosen is not None:
        return ""
    try:
        last = f"its last layer ({count_layers(load_config(resolve_source(model)[0]))})"
    except (OSError, ValueError):  # no config here (offline, not a model): the count waits for scoring
        last = "its last layer"
    shown = shown_as_typed(model)  # a name is text, not Markdown; inside <code> its references still read as typed
    return (f"**{shown}** is not in the official model table, so it is scored at {last}, a guess. "
            f"To choose by measurement, run <code>bertscore layers --model {shown} --data judgements.tsv</code> "
            "on human judgements of texts like yours (see docs/layers.md), then type the layer it reports "
            'into "Layer".')
