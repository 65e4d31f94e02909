"""The Space's model field: for a model without an official default layer, the page says which layer is
used and how to choose one (`bertscore.space.layer_hint`, wired into app.py)."""

from __future__ import annotations

import pytest

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.space.markup import shown_as_typed
from bertscore.space.layer_hint import layer_hint


def test_a_model_of_the_official_table_or_a_typed_layer_needs_no_hint(tiny_models) -> None:
    assert layer_hint(EMBEDDED_MODEL_NAME, "") == ""
    assert layer_hint("roberta-large") == ""
    assert layer_hint(str(tiny_models["electra"]), "2") == ""
    assert layer_hint("", "") == ""


def test_an_unknown_model_is_said_to_use_its_last_layer_with_the_command_to_measure_one(tiny_models) -> None:
    model = str(tiny_models["electra"])
    hint = layer_hint(model, " ")
    shown = shown_as_typed(model)
    assert hint.startswith(f"**{shown}** is not in the official model table, so it is scored at its last layer (3)")
    assert f"<code>bertscore layers --model {shown} --data judgements.tsv</code>" in hint
    assert 'type the layer it reports into "Layer"' in hint
    # a bad layer is the scoring's to report; the hint still says what a blank layer would do
    assert "its last layer (3)" in layer_hint(model, "-2")


def test_a_model_whose_config_cannot_be_read_here_still_gets_the_hint() -> None:
    hint = layer_hint("someone/a_model-*[x]", "")  # offline: no config to count its layers
    assert "scored at its last layer, a guess" in hint
    assert "*[x]" not in hint and shown_as_typed("someone/a_model-*[x]") in hint  # a name, never Markdown


def test_the_page_shows_the_hint_under_the_model_field_and_updates_it(tiny_models) -> None:
    app = pytest.importorskip("app")
    model = str(tiny_models["electra"])
    demo = app.build_demo(app.AppConfig(models=(EMBEDDED_MODEL_NAME, model), default_model=model))
    note = next(block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "layer-hint")
    assert note.value == layer_hint(model)
    controls = {getattr(demo.blocks[target], "elem_id", None)
                for function in demo.fns.values() if function.fn is layer_hint
                for target, event in function.targets if event == "change"}
    assert controls == {"model", "layer"}
