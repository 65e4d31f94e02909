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


STREAM_CANDIDATES = ["The cat sat on the mat.", "", "A dog barked at the mailman loudly.", "word " * 600,
                     "Paris is the capital of France.", "Rain falls.", "The cat sat.", "   "]
STREAM_GROUPS = [["A cat was sitting on the mat.", "There is a cat on a mat."], ["The dog barked."],
                 ["The dog barked."], ["Rain falls."], ["France's capital is Paris.", ""], ["It rains."],
                 ["A cat was sitting on the mat."], ["Nothing here."]]


@pytest.mark.parametrize("ahead", [True, False])
def test_a_call_longer_than_a_chunk_is_scored_in_blocks_with_the_same_numbers_and_notes(minilm_scorer, monkeypatch,
                                                                                         ahead):
    """chunk_size=3: 10 pairs in blocks (`plan.stream_blocks`), each tokenized apart (ahead on a
    thread or not): every number is the plain loop's, the notes are those of one block, and the
    thread's presence changes no bit."""
    from bertscore.scoring import plan
    from bertscore.scoring import tokenize_ahead

    monkeypatch.setattr(tokenize_ahead, "core_is_free", lambda device: ahead)
    streamed = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0, chunk_size=3)
    whole = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    pair_cands = [c.strip() for c, group in zip(STREAM_CANDIDATES, STREAM_GROUPS) for _ in group]
    pair_refs = [r.strip() for group in STREAM_GROUPS for r in group]
    order = plan.stream_order(pair_cands, pair_refs)
    blocks = plan.stream_blocks([plan.pair_cost(pair_cands[i], pair_refs[i]) for i in order], 3)
    assert [len(block) for block in blocks] == [3, 3, 2, 2]  # 10 pairs, growing in cost (chars), not pairs
    calls = []
    original = streamed.pipeline.tokenize
    monkeypatch.setattr(streamed.pipeline, "tokenize", lambda texts: calls.append(len(texts)) or original(texts))
    streamed_notes: list[str] = []
    whole_notes: list[str] = []
    p, r, f = streamed.score(STREAM_CANDIDATES, STREAM_GROUPS, notes=streamed_notes)
    assert calls == [6, 6, 4, 4]  # each block's candidates and references, tokenized apart
    whole.score(STREAM_CANDIDATES, STREAM_GROUPS, notes=whole_notes)
    assert streamed_notes == whole_notes  # the same notes, in the same order
    assert any("candidates[1]" in note and "references[4][1]" in note for note in streamed_notes)  # empty texts
    assert any("candidates[3]" in note and "truncated" in note for note in streamed_notes)

    pipeline = whole.pipeline
    flat = [r for group in STREAM_GROUPS for r in group]
    token_ids = pipeline.tokenize(STREAM_CANDIDATES + flat)
    table = pipeline.weights_for(flat, token_ids)
    keys = [k for k in token_ids.index if not pipeline.settings.is_empty(token_ids, k)]
    embeddings = pipeline.embed_texts(keys, token_ids)
    weights = {k: table(token_ids[k]) for k in keys}
    for i, (candidate, group) in enumerate(zip(STREAM_CANDIDATES, STREAM_GROUPS)):
        per_reference = [plain_scores(embeddings, weights, candidate.strip(), ref.strip()) if candidate.strip() in weights
                         and ref.strip() in weights else (0.0, 0.0, 0.0) for ref in group]
        expected = [max(s[column] for s in per_reference) for column in range(3)]
        assert [p[i].item(), r[i].item(), f[i].item()] == pytest.approx(expected, abs=2e-6), i

    other = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0, chunk_size=3)
    monkeypatch.setattr(tokenize_ahead, "core_is_free", lambda device: not ahead)
    for mine, theirs in zip((p, r, f), other.score(STREAM_CANDIDATES, STREAM_GROUPS, notes=[])):
        assert torch.equal(mine, theirs)  # the same blocks with or without the thread: the same bits


@pytest.mark.parametrize("chunk_size", [3, 2048])
def test_a_call_sorts_its_pairs_once_and_chunks_take_that_order(minilm_scorer, monkeypatch, chunk_size):
    """One sort per call: by characters when it streams (chunk_size=3: blocks in `plan.stream_order`,
    each scored in that order), by tokens when it is one block. Each chunk's pairs must come in the
    order a plain sort of the call's pairs by (reference length, reference, candidate length) gives."""
    from bertscore.scoring import plan

    sorts: list[int] = []
    seen: list[list[tuple[str, str]]] = []
    original_sort, original_chunks = plan.sort_pairs, plan.chunks

    def counted_sort(pairs, *keys):
        sorts.append(len(keys))
        return original_sort(pairs, *keys)

    def recorded_chunks(order, cand_keys, ref_keys, *rest):
        for chunk in original_chunks(order, cand_keys, ref_keys, *rest):
            seen.append([(cand_keys[i], ref_keys[i]) for i in chunk])
            yield chunk

    monkeypatch.setattr(plan, "sort_pairs", counted_sort)
    monkeypatch.setattr(plan, "chunks", recorded_chunks)
    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0, chunk_size=chunk_size)
    cands = [c for c, group in zip(STREAM_CANDIDATES, STREAM_GROUPS) for _ in group if c.strip()]
    refs = [r for c, group in zip(STREAM_CANDIDATES, STREAM_GROUPS) for r in group if c.strip()]
    pairs = [(c.strip(), r.strip()) for c, r in zip(cands, refs) if r.strip()]
    scorer.score([c for c, _ in pairs], [r for _, r in pairs])
    assert sorts == [3]  # one sort of the whole call, not one more per block
    taken = [pair for chunk in seen for pair in chunk]
    if chunk_size == 3:
        expected = sorted(pairs, key=lambda p: (len(p[1]), p[1], len(p[0])))  # characters: stream order
    else:
        tokens = minilm_scorer.model.tokenizer
        size = {t: len(tokens(t, add_special_tokens=True)["input_ids"]) for pair in pairs for t in pair}
        expected = sorted(pairs, key=lambda p: (size[p[1]], p[1], size[p[0]]))
    assert taken == expected and (len(seen) > 1) == (chunk_size == 3)  # several blocks, or one chunk


def test_score_pairs_in_blocks_names_the_empty_pairs_as_one_block_does(minilm_scorer):
    cands = [c for c, group in zip(STREAM_CANDIDATES, STREAM_GROUPS) for _ in group]
    refs = [r for group in STREAM_GROUPS for r in group]
    streamed_notes: list[str] = []
    whole_notes: list[str] = []
    streamed = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0, chunk_size=2)
    whole = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    raw = streamed.score_pairs(cands, refs, notes=streamed_notes)
    expected = whole.score_pairs(cands, refs, notes=whole_notes)
    assert streamed_notes == whole_notes == ["no content tokens in pair 2, 6, 9: their raw scores are 0"]
    assert torch.allclose(raw, expected, atol=2e-6, rtol=0)
    assert raw[[2, 6, 9]].abs().sum() == 0


GRID = ["The cat sat on the mat.", "A dog barked at the mailman loudly.", "Paris is the capital of France.",
        "Rain falls.", "word " * 520, "It rains in Paris today."]


@pytest.mark.parametrize("long_texts", ["truncate", "window"])
def test_a_flattened_grid_meets_the_encoder_once_per_text_across_chunks_and_blocks(minilm_scorer, monkeypatch,
                                                                                   long_texts):
    """36 pairs of 6 texts with the cache off (as module-level `score()`), 4 pairs a chunk: each text
    is embedded once in the call (it was once per chunk, 3 to 5 times), and every number is the
    plain loop's. (A long text's later windows are still encoded per chunk it is in.)"""
    from bertscore.scoring.embed import Embedder

    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0, chunk_size=4, long_texts=long_texts)
    texts: list[str] = []
    original = Embedder.embed
    monkeypatch.setattr(Embedder, "embed", lambda self, keys, *a, **k: texts.extend(keys) or original(self, keys, *a, **k))
    cands = [c for c in GRID for _ in GRID]
    refs = [r for _ in GRID for r in GRID]
    p, r, f = scorer.score(cands, refs, notes=[])
    assert sorted(texts) == sorted(t.strip() for t in GRID)

    pipeline = scorer.pipeline
    token_ids = pipeline.tokenize(GRID)
    table = pipeline.weights_for(GRID, token_ids)
    keys = [t.strip() for t in GRID]
    embeddings = pipeline.embed_texts(keys, token_ids)
    whole = long_texts == "window"
    weights = {k: table(token_ids[k] if whole else token_ids.head(k, pipeline.model.content_limit)) for k in keys}
    for i, (cand, ref) in enumerate(zip(cands, refs)):
        expected = matrix_scores(embeddings, weights, cand.strip(), ref.strip())
        assert [p[i].item(), r[i].item(), f[i].item()] == pytest.approx(expected, abs=2e-6), i


def matrix_scores(embeddings, weights, candidate: str, reference: str) -> tuple[float, float, float]:
    """`plain_scores` as one float64 cosine matrix (a 520-token text makes the token loop slow)."""
    cand = torch.nn.functional.normalize(embeddings[candidate].double(), dim=-1)
    ref = torch.nn.functional.normalize(embeddings[reference].double(), dim=-1)
    cand_w, ref_w = weights[candidate].double(), weights[reference].double()
    similarity = cand @ ref.T
    precision = float((similarity.max(dim=1).values * cand_w).sum() / cand_w.sum())
    recall = float((similarity.max(dim=0).values * ref_w).sum() / ref_w.sum())
    return precision, recall, 2 * precision * recall / (precision + recall)


def test_module_level_score_embeds_a_flattened_grid_once_per_text(minilm_scorer, monkeypatch):
    """The door that runs with the cache off: `bertscore.score` on a 6 x 6 grid flattened, 5,000
    pairs over several blocks (`plan.stream_blocks`)."""
    import bertscore
    from bertscore import EMBEDDED_MODEL_NAME
    from bertscore.scoring.embed import Embedder

    texts = GRID[:4] + ["Snow falls.", "The mailman ran."]
    cands = [c for c in texts for _ in texts] * 139  # 5,004 pairs: more than two chunks of 2,048
    refs = [r for _ in texts for r in texts] * 139
    rows: list[int] = []
    original = Embedder._forward
    monkeypatch.setattr(Embedder, "_forward", lambda self, ids: rows.append(len(ids)) or original(self, ids))
    _, _, f = bertscore.score(cands, refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4, device="cpu")
    assert sum(rows) == len(texts)
    assert torch.equal(f[:36], f[36:72])


def test_embed_hands_the_whole_result_to_before_check_before_the_check_and_the_cache(minilm_scorer):
    """The pipeline matches a chunk inside `embed(before_check=...)`, while the device may still encode:
    it must see every text of the call (several batches here), and nothing may be cached before the
    overflow check that follows it."""
    from bertscore.scoring.embed import Embedder, EmbeddingCache

    cache = EmbeddingCache(1 << 20)
    embedder = Embedder(minilm_scorer.model, max_tokens_per_batch=16, cache=cache)
    texts = ["a cat", "the dog sat on the mat today", "hello there", "one more text of several tokens"]
    seen: list[tuple[list[str], int]] = []
    out = embedder.embed(texts, minilm_scorer.model.tokenize(texts),
                         before_check=lambda result: seen.append((sorted(result), len(cache))))
    assert seen == [(sorted(texts), 0)]
    assert sorted(out) == sorted(texts) and len(cache) == len(texts)
