"""Parity with the official bert-score package (run with batch_size=1) on the same model and inputs.

The official package is a test-only dependency. It is run with batch_size=1, where its
0-masked padding cannot leak into a max; batched, it drifts where a best cosine is negative (up to
1.5e-2 on MiniLM between unrelated texts: benchmarks/results/torchmetrics_compare.md).
"""

from __future__ import annotations

import oracle
import pytest
import torch

from bertscore import BERTScorer, score

bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

TOLERANCE = 1e-5


def official(cands, refs, model_dir, num_layers, **kwargs):
    """bert_score.score at batch_size=1, computed once (tests/oracle.py: a baseline file by its content)."""
    return oracle.call(bert_score.score, cands, refs, model_type=str(model_dir), num_layers=num_layers, batch_size=1,
                       **kwargs)


def assert_close(ours, theirs, label):
    for name, a, b in zip("PRF", ours, theirs):
        delta = (a - b.to(a.dtype)).abs().max().item()
        assert a.shape == b.shape, f"{label} {name}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert delta <= TOLERANCE, f"{label} {name}: max |delta| {delta:.2e}"
        assert torch.isfinite(a).all()


@pytest.mark.slow
@pytest.mark.parametrize("idf", [False, True], ids=["no-idf", "idf"])
def test_minilm_real_sentences(minilm_dir, wmt17_de_en, idf):
    cands, refs = wmt17_de_en
    ours = score(cands, refs, model_type=str(minilm_dir), num_layers=4, idf=idf, device="cpu")
    assert_close(ours, official(cands, refs, minilm_dir, 4, idf=idf), f"MiniLM idf={idf}")


@pytest.mark.slow
def test_minilm_multi_reference(minilm_dir, wmt17_de_en):
    cands, refs = wmt17_de_en[0][:100], wmt17_de_en[1][:101]
    multi = [[refs[i], refs[i + 1]] if i % 3 else [refs[i]] * 2 for i in range(100)]
    for idf in (False, True):
        ours = score(cands, multi, model_type=str(minilm_dir), num_layers=5, idf=idf, device="cpu")
        assert_close(ours, official(cands, multi, minilm_dir, 5, idf=idf), f"multi-ref idf={idf}")


@pytest.mark.slow
def test_minilm_custom_baseline(minilm_dir, wmt17_de_en, tmp_path):
    cands, refs = wmt17_de_en[0][:100], wmt17_de_en[1][:100]
    baseline = tmp_path / "minilm.tsv"
    rows = ["LAYER,P,R,F"] + [f"{k},{0.30 + 0.05 * k:.4f},{0.32 + 0.05 * k:.4f},{0.31 + 0.05 * k:.4f}" for k in range(7)]
    baseline.write_text("\n".join(rows) + "\n")
    ours = score(cands, refs, model_type=str(minilm_dir), num_layers=3, rescale_with_baseline=True,
                 baseline_path=str(baseline), device="cpu")
    theirs = official(cands, refs, minilm_dir, 3, rescale_with_baseline=True, baseline_path=str(baseline), lang="en")
    assert_close(ours, theirs, "custom baseline")


@pytest.mark.slow
def test_minilm_all_layers(minilm_dir, wmt17_de_en):
    cands, refs = wmt17_de_en[0][:60], wmt17_de_en[1][:60]
    ours = score(cands, refs, model_type=str(minilm_dir), all_layers=True, num_layers=6, device="cpu")
    assert ours[0].shape == (7, 60)
    assert_close(ours, official(cands, refs, minilm_dir, 6, all_layers=True), "all layers")


@pytest.mark.parametrize("family", ["roberta", "xlmr", "electra"])
def test_tiny_model_families(tiny_models, wmt17_de_en, family):
    from conftest import SENTENCES

    cands = wmt17_de_en[0][:50] + SENTENCES
    refs = wmt17_de_en[1][:50] + SENTENCES[1:] + SENTENCES[:1]
    scorer = BERTScorer(model_type=str(tiny_models[family]), num_layers=2, device="cpu")
    assert scorer.model.add_prefix_space == (family == "roberta")
    assert_close(scorer.score(cands, refs), official(cands, refs, tiny_models[family], 2), f"{family} no-idf")
    idf_scorer = BERTScorer(model_type=str(tiny_models[family]), num_layers=2, device="cpu", idf=True)
    theirs = official(cands, refs, tiny_models[family], 2, idf=True)
    assert_close(idf_scorer.score(cands, refs), theirs, f"{family} idf")


def test_roberta_prefix_space_is_set_at_construction(tiny_models):
    """The tokenizer is built with the prefix space, so the first word encodes like any other."""
    scorer = BERTScorer(model_type=str(tiny_models["roberta"]), num_layers=1, device="cpu")
    assert scorer.model.tokenize(["hello"])[0] == scorer.model.tokenize([" hello"])[0]
    assert "prefix-space" in scorer.hash and "no-prefix-space" not in scorer.hash


def test_t5_encoder_truncation_keeps_the_final_norm(tiny_t5, wmt17_de_en):
    """Layer k of a T5 encoder = its first k blocks followed by the final layer norm, as official."""
    cands, refs = wmt17_de_en[0][:30], wmt17_de_en[1][:30]
    ours = score(cands, refs, model_type=str(tiny_t5), num_layers=2, device="cpu")
    assert_close(ours, official(cands, refs, tiny_t5, 2), "T5 encoder L2")


INVISIBLE = ["\u200b", "\ufeff", "\x00", "\u0301", "a \u200b b"]


@pytest.mark.parametrize("family", ["minilm", "roberta", "xlmr", "electra"])
def test_texts_without_content_tokens_match_the_official_zeros(tiny_models, minilm_dir, family):
    """Emptiness is decided on token ids, as the official package does (its mask of 2 tokens):
    a zero-width space or a lone accent is empty for WordPiece, but not for byte-level BPE."""
    import warnings

    from conftest import SENTENCES

    folder = minilm_dir if family == "minilm" else tiny_models[family]
    cands = INVISIBLE + SENTENCES[:3] + SENTENCES[3:6]
    refs = SENTENCES[:5] + INVISIBLE[:3] + SENTENCES[6:9]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = score(cands, refs, model_type=str(folder), num_layers=2, device="cpu")
        theirs = official(cands, refs, folder, 2)
    assert_close(ours, theirs, f"{family} invisible texts")
    if family in ("minilm", "electra"):  # WordPiece drops these characters: the official zeros
        assert (ours[2][:4] == 0).all() and (ours[2][5:8] == 0).all()
