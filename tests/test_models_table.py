"""The official model tables (language -> default model, model -> default layer), shipped as data
(bertscore/data/model_tables.json), against the official bert-score package's own tables."""

from __future__ import annotations

import bert_score.utils

import bertscore
from bertscore.models import tables as model_tables


def test_the_layer_table_is_the_official_one_plus_the_embedded_model() -> None:
    # The one intentional difference: the embedded offline default, tuned on its last layer (6 of 6).
    ours = dict(model_tables.MODEL_TO_LAYERS)
    assert ours.pop(bertscore.EMBEDDED_MODEL_NAME) == 6
    assert bertscore.EMBEDDED_MODEL_NAME not in bert_score.utils.model2layers
    assert ours == bert_score.utils.model2layers
    assert list(ours) == list(bert_score.utils.model2layers)  # same order, so the data file diffs cleanly


def test_a_few_known_layers() -> None:
    # Entries of the official table, written out (roberta-large 17: the English default of the paper).
    assert model_tables.MODEL_TO_LAYERS["roberta-large"] == 17
    assert model_tables.MODEL_TO_LAYERS["bert-base-uncased"] == 9
    assert model_tables.MODEL_TO_LAYERS["microsoft/deberta-xlarge-mnli"] == 40
    assert model_tables.MODEL_TO_LAYERS["amazon/bort"] == 0


def test_the_language_table_is_the_official_one() -> None:
    assert model_tables.LANG_TO_MODEL == dict(bert_score.utils.lang2model)
    assert model_tables.default_model_for_lang("EN") == "roberta-large"
    # a language the table lacks: the official defaultdict's default (read without adding "de" to it)
    official = bert_score.utils.lang2model
    assert "de" not in official
    assert model_tables.default_model_for_lang("de") == official.default_factory() == "bert-base-multilingual-cased"


def test_the_package_offers_the_same_tables() -> None:
    assert bertscore.MODEL_TO_LAYERS is model_tables.MODEL_TO_LAYERS
    assert bertscore.LANG_TO_MODEL is model_tables.LANG_TO_MODEL
