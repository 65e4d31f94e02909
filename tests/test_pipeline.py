"""pipeline.py: the scoring steps, checked against a plain loop over the same embeddings.

The loop below computes BERTScore as the paper defines it, one token at a time in float64
(cosine of every token pair, each candidate token's best reference token for precision, each
reference token's best candidate token for recall, idf-weighted means, F1, the max over
references): an independent route to what the pipeline's batched, chunked tensor code gives.
"""

from __future__ import annotations

import math

import pytest
import torch

from bertscore import BERTScorer


def plain_scores(embeddings, weights, candidate: str, reference: str) -> tuple[float, float, float]:
    cand, ref = embeddings[candidate].double(), embeddings[reference].double()
    cand_w, ref_w = weights[candidate].double(), weights[reference].double()

    def cosine(a, b):
        return float(a @ b) / math.sqrt(float(a @ a) * float(b @ b))

    best_for_cand = [max(cosine(c, r) for r in ref) for c in cand]
    best_for_ref = [max(cosine(c, r) for c in cand) for r in ref]
    precision = sum(w * s for w, s in zip(cand_w.tolist(), best_for_cand)) / float(cand_w.sum())
    recall = sum(w * s for w, s in zip(ref_w.tolist(), best_for_ref)) / float(ref_w.sum())
    f1 = 2 * precision * recall / (precision + recall)
    return precision, recall, f1


@pytest.mark.parametrize("idf", [False, True])
def test_score_groups_equals_a_plain_loop_over_the_pipelines_embeddings(minilm_scorer, idf):
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=idf, cache_bytes=0)
    pipeline = scorer.pipeline
    candidates = ["The cat sat on the mat.", "A dog barked at the mailman loudly."]
    groups = [["A cat was sitting on the mat.", "There is a cat on a mat."], ["The dog barked."]]
    flat = [r for group in groups for r in group]
    token_ids = pipeline.tokenize(candidates + flat)
    table = pipeline.weights_for(flat, token_ids)
    keys = list(token_ids.index)
    embeddings = pipeline.embed_texts(keys, token_ids)
    weights = {k: table(token_ids[k]) for k in keys}
    notes: list[str] = []
    (p, r, f), used = pipeline.score_groups(candidates, groups, None, False, None, notes)
    assert used is table or used.fingerprint() == table.fingerprint()
    for i, (candidate, group) in enumerate(zip(candidates, groups)):
        per_reference = [plain_scores(embeddings, weights, candidate, ref) for ref in group]
        expected = [max(s[column] for s in per_reference) for column in range(3)]
        assert [p[i].item(), r[i].item(), f[i].item()] == pytest.approx(expected, abs=2e-6)


def test_score_aligned_and_finish_are_score_in_two_steps(minilm_scorer):
    """The distributed path's steps: raw aligned pairs, then the max per candidate (+ rescaling)."""
    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    candidates = ["one two three", "four five", "six"]
    groups = [["one two", "three"], ["four five six"], ["seven", "six"]]
    owners = torch.tensor([i for i, group in enumerate(groups) for _ in group])
    raw = scorer.pipeline.score_aligned(
        [candidates[i] for i in owners.tolist()], [r for g in groups for r in g], None, False, None, True, None
    )
    assert raw.shape == (5, 3)
    for got, want in zip(scorer.pipeline.finish(raw, owners, 3), scorer.score(candidates, groups)):
        assert torch.equal(got, want)
    # the max per column, computed here by hand
    assert scorer.pipeline.finish(raw, owners, 3)[2][0].item() == max(raw[0, 2].item(), raw[1, 2].item())


def test_an_empty_side_scores_zero_without_meeting_the_encoder(minilm_scorer):
    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    notes: list[str] = []
    raw = scorer.pipeline.score_aligned(["   ", "a text"], ["a text", ""], None, False, None, True, notes)
    assert torch.equal(raw, torch.zeros(2, 3))
    assert notes == ["no content tokens in pair 0, 1: their raw scores are 0"]
