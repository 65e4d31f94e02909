"""settings.py: options are checked before a model loads, resolved once, frozen, and named by the hash."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest
import torch
from bert_score.utils import lang2model

from bertscore import EMBEDDED_MODEL_NAME, TokenWeights
from bertscore.inputs import InputError, check_whole_number
from bertscore.scoring.settings import (
    check_long_texts, resolve_idf, resolve_model_type, resolve_settings,
)
from bertscore.scoring.windows import WindowSettingError


@pytest.mark.parametrize("value", [1, 7, 2**20, np.int64(1), np.int32(64)])
def test_check_whole_number_takes_whole_numbers_from_one(value):
    """1 and up pass, numpy's integers too (a size read from an array): fails if the bound is off by one
    (`value <= 1` refusing 1) or numpy's integers are refused; 0 beside it is refused, so a check that
    lets everything through fails too."""
    assert check_whole_number(value, "batch_size") is None
    with pytest.raises(InputError, match=r"batch_size must be a whole number >= 1, got (np\.int\d+\()?0\)?$"):
        check_whole_number(value - value, "batch_size")


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "8", None])
def test_check_whole_number_refuses_anything_else_naming_the_option(value):
    with pytest.raises(InputError, match=r"chunk_size must be a whole number >= 1, got"):
        check_whole_number(value, "chunk_size")


def test_check_whole_number_takes_none_only_where_none_means_something():
    check_whole_number(None, "batch_size", 1, "None: no sentence cap")
    with pytest.raises(InputError, match=r"\(or None: no sentence cap\)"):
        check_whole_number(0, "batch_size", 1, "None: no sentence cap")
    with pytest.raises(InputError, match=r"batch_size must be a whole number >= 1, got None"):
        check_whole_number(None, "batch_size")


def test_check_whole_number_takes_its_bound():
    """num_threads starts at 0, group_size at 1: fails if the bound is ignored either way."""
    check_whole_number(0, "num_threads", 0)
    with pytest.raises(InputError, match=r"num_threads must be a whole number >= 0 \(it changes nothing here\), got -1"):
        check_whole_number(-1, "num_threads", 0, why=" (it changes nothing here)")


@pytest.mark.parametrize("mode, stride, message", [
    ("windows", None, "long_texts='windows' is not a mode"),
    (None, None, "long_texts=None is not a mode"),
    ("truncate", 64, "window_stride=64 applies to long_texts='window' only"),
])
def test_check_long_texts_names_the_bad_setting(mode, stride, message):
    with pytest.raises(WindowSettingError, match=message):
        check_long_texts(mode, stride)


@pytest.mark.parametrize("lang", ["en", "zh", "de", "en-sci"])
def test_resolve_model_type_takes_the_official_default_for_a_language(lang):
    # lang2model is a defaultdict: indexing it with a language it lacks ("de") would add that
    # language to the official table for every later test in this process.
    official = lang2model[lang] if lang in lang2model else lang2model.default_factory()
    assert resolve_model_type(None, lang) == official
    assert resolve_model_type("my/model", lang) == "my/model"  # a named model wins


def test_resolve_model_type_needs_a_model_or_a_language():
    with pytest.raises(InputError, match=r"pass model_type=\.\.\. or lang=\.\.\."):
        resolve_model_type(None, None)


def _settings(model, **options):
    defaults = dict(model_type=EMBEDDED_MODEL_NAME, lang=None, device=torch.device("cpu"), dtype="float32",
                    long_texts="truncate", window_stride=None, idf=False, idf_sents=None,
                    rescale_with_baseline=False, baseline_path=None, chunk_size=16)
    defaults.update(options)
    return resolve_settings(model, **defaults)


def test_settings_are_frozen_and_with_idf_makes_new_ones(minilm_scorer):
    plain = _settings(minilm_scorer.model)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.idf_mode = "idf"
    texts = ["the cat sat", "a dog ran"]
    fixed = plain.with_idf(True, texts)
    assert plain.idf_mode == "no-idf" and plain.idf_weights is not None
    # the label is the sha256 of the texts, each UTF-8 + NUL (computed here by hand)
    digest = hashlib.sha256(b"".join(t.encode("utf-8") + b"\0" for t in texts)).hexdigest()[:10]
    assert fixed.idf_mode == f"idf-sents:{digest}" and f"_idf-sents:{digest}_" in fixed.hash
    assert plain.hash != fixed.hash and "_no-idf_" in plain.hash


def test_a_weights_table_is_copied_and_named_by_its_content(minilm_scorer):
    """The resolved weights are a copy, equal to the table as given: fails if any part of them is a view
    of the caller's table (an edit after the fact would change the numbers under the same hash)."""
    model = minilm_scorer.model
    table = TokenWeights(torch.rand(model.vocab_size))
    given = table.table.clone()
    mode, weights = resolve_idf(table, None, model, whole=False)
    expected = hashlib.sha256(given.numpy().tobytes()).hexdigest()[:10]
    assert mode == f"idf-weights:{expected}"
    table.table[:] = 0  # the caller's edit after the fact changes nothing resolved
    assert torch.equal(weights.table, given)


@pytest.mark.parametrize("idf, message", [
    ("the cat", "got one str"),
    ({1, 2}, "got a set"),
    ([], "idf is empty"),
])
def test_resolve_idf_refuses_what_is_not_an_idf_setting(minilm_scorer, idf, message):
    with pytest.raises((InputError, TypeError), match=message):
        resolve_idf(idf, None, minilm_scorer.model, whole=False)


def test_per_call_idf_has_no_fixed_table_and_hash_for_names_other_tables(minilm_scorer):
    model = minilm_scorer.model
    per_call = _settings(model, idf=True)
    assert per_call.idf_is_per_call and per_call.idf_mode == "idf"
    counted = TokenWeights.from_documents([[5, 6]], model.vocab_size, model.zero_weight_ids, label="idf")
    assert per_call.hash_for(counted) == per_call.hash == per_call.hash_for(None)
    other = TokenWeights(torch.ones(model.vocab_size))
    assert per_call.hash_for(other) == per_call.hash.replace("_idf_", f"_idf-weights:{other.fingerprint()}_")


def test_window_settings_are_resolved_against_the_model(minilm_scorer):
    model = minilm_scorer.model
    windowed = _settings(model, long_texts="window")
    assert windowed.window == (model.content_limit, model.content_limit // 2)
    assert f"_window={model.content_limit}/{model.content_limit // 2}_" in windowed.hash
    assert _settings(model).window is None
