"""Performance machinery keeps the numbers: cache, chunking, batching, bf16, cache bounds, budgets.

Fast (a few dozen sentences, the embedded MiniLM on CPU); every speed-up must give the same
scores as the plain path.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer  # noqa: E402
from bertscore.scoring.embed import ATTENTION_LENGTH, EmbeddingCache, token_budget_batches  # noqa: E402
from bertscore.models.loading import load_model  # noqa: E402

CANDS = [
    "the cat sat on the mat .",
    "a man is playing a guitar on stage",
    "the government announced new measures to fight inflation on monday .",
    "he said that the results were better than expected",
    "twenty-eight-year-old chef found dead in the store in san francisco",
    "the weather will be sunny tomorrow with a light breeze from the west .",
    "police arrested two suspects after the robbery",
    "the company reported a loss of three million euros in the second quarter .",
    "she has been working at the hospital for ten years",
    "it is not clear when the bridge will be reopened to traffic .",
    "the team won the match by two goals to one",
    "children must be accompanied by an adult at all times .",
    "the minister refused to comment on the report",
    "prices for fresh vegetables rose sharply last month because of the drought .",
    "the museum will be closed for renovation until the end of the year",
    "a",
    "ok .",
    "the new law comes into force on the first of january , officials said on tuesday evening in a statement .",
    "scientists discovered a new species of frog in the rainforest",
    "the train was delayed by forty minutes due to a signal failure near the station .",
    "he is expected to make a full recovery",
    "the festival attracts thousands of visitors every summer .",
    "voters will go to the polls next sunday",
    "the film was nominated for three awards",
]
REFS = [
    "a cat was sitting on the mat .",
    "a man plays the guitar on the stage",
    "on monday the government unveiled new steps against inflation .",
    "according to him , the results exceeded expectations",
    "28-year-old chef found dead at san francisco mall",
    "tomorrow it will be sunny with a light westerly wind .",
    "two suspects were arrested by police following the robbery",
    "the firm posted a second-quarter loss of three million euros .",
    "she has worked at the hospital for a decade",
    "it remains unclear when the bridge will reopen to traffic .",
    "the team won the game 2-1",
    "children must always be accompanied by an adult .",
    "the minister declined to comment on the report",
    "fresh vegetable prices soared last month due to the drought .",
    "the museum will remain closed for renovations until the end of the year",
    "a",
    "okay .",
    "officials said in a statement on tuesday evening that the new law takes effect on january 1 .",
    "researchers have found a new frog species in the rainforest",
    "a signal failure near the station delayed the train by forty minutes .",
    "a full recovery is expected",
    "every summer the festival draws thousands of visitors .",
    "voters go to the polls next sunday",
    "the movie received three award nominations",
]
# Repeated references (several candidates per reference) and repeated candidates exercise the cache.
CANDS2 = CANDS[::-1] + CANDS[:6]
REFS2 = REFS + REFS[:6]


@pytest.fixture(scope="module")
def model32():
    return load_model(EMBEDDED_MODEL_NAME)


@pytest.fixture(scope="module")
def reference(model32):
    """Scores on the plain path: cache off, one chunk, default batching."""
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, cache_bytes=0, device="cpu")
    return torch.stack(scorer.score(CANDS2, REFS2))


def _scores(scorer: BERTScorer) -> torch.Tensor:
    return torch.stack(scorer.score(CANDS2, REFS2))


def test_cache_hits_give_identical_numbers(model32, reference):
    """Fails when a cache hit returns another text's embedding, a stale or truncated one, or the
    hit and miss counts are wrong. A second identical call is the same path: bit for bit."""
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, device="cpu")
    first = _scores(scorer)
    assert scorer.cache.misses > 0 and len(scorer.cache) == len({t.strip() for t in CANDS2 + REFS2})
    hits_before = scorer.cache.hits
    second = _scores(scorer)
    assert scorer.cache.hits - hits_before == len(scorer.cache)  # every text came from the cache
    assert torch.equal(first, second)
    torch.testing.assert_close(first, reference, rtol=0, atol=1e-6)
    # Same references, new candidates: the references are hits, the new candidates misses.
    hits_before, misses_before = scorer.cache.hits, scorer.cache.misses
    new_cands = [c + " indeed" for c in CANDS]
    mixed = torch.stack(scorer.score(new_cands, REFS))
    assert scorer.cache.hits - hits_before == len(set(REFS))
    assert scorer.cache.misses - misses_before == len(set(new_cands))
    plain = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, cache_bytes=0, device="cpu")
    # the cached references were embedded in other batches than a cache-off run embeds them in (other
    # shapes: the last bits may round otherwise on some CPUs), so within 1e-6, as `reference` above
    torch.testing.assert_close(mixed, torch.stack(plain.score(new_cands, REFS)), rtol=0, atol=1e-6)


def test_cached_embeddings_never_copy_towards_the_host_asynchronously(model32, monkeypatch):
    """A copy with non_blocking=True towards the host returns before the data arrives: with the
    cache on CUDA and scoring on the CPU, the CPU read a buffer the GPU had not filled yet. A spy
    on Tensor.to: every asynchronous copy the scorer asks for goes host -> accelerator."""
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, device="cpu")
    first = torch.stack(scorer.score(CANDS[:6], REFS[:6]))
    asynchronous: list[tuple[str, str]] = []
    original = torch.Tensor.to

    def spy(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        if kwargs.get("non_blocking") or any(arg is True for arg in args[1:2]):
            asynchronous.append((self.device.type, result.device.type))
        return result

    monkeypatch.setattr(torch.Tensor, "to", spy)
    hits = scorer.cache.hits
    again = torch.stack(scorer.score(CANDS[:6], REFS[:6]))
    assert scorer.cache.hits - hits == len(set(CANDS[:6] + REFS[:6]))  # the cached path ran
    assert torch.equal(first, again)
    assert all(source == "cpu" and target != "cpu" for source, target in asynchronous), asynchronous


def test_cache_off_same_numbers(model32, reference):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, cache_bytes=0, device="cpu")
    assert torch.equal(_scores(scorer), reference)
    assert len(scorer.cache) == 0 and scorer.cache.hits == 0


def test_identical_pairs_score_one(model32):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, device="cpu")
    p, r, f = scorer.score(REFS, REFS)
    torch.testing.assert_close(f, torch.ones_like(f), rtol=0, atol=1e-5)


def test_chunked_equals_unchunked(model32, reference):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, cache_bytes=0, chunk_size=3, device="cpu")
    torch.testing.assert_close(_scores(scorer), reference, rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "max_tokens, batch_size", [(40, None), (200, 3), (100_000, None), (None, 5)]
)
def test_batching_does_not_change_numbers(model32, reference, max_tokens, batch_size):
    scorer = BERTScorer(
        model_type=EMBEDDED_MODEL_NAME, loaded_model=model32, cache_bytes=0, device="cpu",
        max_tokens_per_batch=max_tokens, batch_size=batch_size,
    )
    torch.testing.assert_close(_scores(scorer), reference, rtol=0, atol=1e-6)


def test_bf16_close_to_fp32(reference):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, dtype="bfloat16", device="cpu")
    assert next(scorer.model.encoder.parameters()).dtype == torch.bfloat16
    scores = _scores(scorer)
    assert scores.dtype == torch.float32
    delta = (scores - reference).abs().max().item()
    assert delta <= 5e-3, delta
    assert delta > 0  # it did run in bf16
    f16, f32 = scores[2], reference[2]
    assert torch.corrcoef(torch.stack([f16, f32]))[0, 1] >= 0.999
    assert "bfloat16" in scorer.hash


def test_cache_lru_eviction_respects_byte_bound():
    item = torch.zeros(10, 4)  # 160 bytes
    size = item.numel() * item.element_size()
    cache = EmbeddingCache(max_bytes=3 * size + size // 2)
    for key in "abc":
        cache.put(key, item.clone())
    assert len(cache) == 3 and cache.bytes == 3 * size
    assert cache.get("a") is not None  # "a" becomes the most recent; "b" is now the oldest
    cache.put("d", item.clone())
    assert cache.bytes <= cache.max_bytes and len(cache) == 3
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("d") is not None
    cache.put("huge", torch.zeros(1000))  # larger than the whole bound: not stored, nothing evicted
    assert cache.get("huge") is None and len(cache) == 3
    assert EmbeddingCache(0).max_bytes == 0
    off = EmbeddingCache(0)
    off.put("x", item)
    assert len(off) == 0 and off.bytes == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=600), max_size=200),
    st.integers(min_value=1, max_value=5000),
)
def test_cache_bytes_never_exceed_bound(sizes, bound):
    cache = EmbeddingCache(bound)
    for index, size in enumerate(sizes):
        cache.put(index, torch.zeros(size))
        assert cache.bytes <= bound
        assert cache.bytes == sum(v.numel() * v.element_size() for v in cache._items.values())


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=512), max_size=300),
    st.integers(min_value=1, max_value=20_000),
    st.one_of(st.none(), st.integers(min_value=1, max_value=64)),
)
def test_token_budget_batches_respect_budget(lengths, max_tokens, max_sentences):
    batches = list(token_budget_batches(lengths, max_tokens, max_sentences))
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))  # a partition: every text exactly once
    for batch in batches:
        assert batch
        if max_sentences is not None:
            assert len(batch) <= max_sentences
        longest = max(lengths[i] for i in batch)
        padded = longest * len(batch)
        # Over budget only when a single text is longer than the budget (it gets its own batch).
        assert padded <= max_tokens or len(batch) == 1
        assert padded * longest <= max_tokens * ATTENTION_LENGTH or len(batch) == 1


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=40), max_size=300),
    st.integers(min_value=1, max_value=2_000),
    st.one_of(st.none(), st.integers(min_value=1, max_value=64)),
)
def test_one_length_batches_never_pad_and_stay_in_budget(lengths, max_tokens, max_sentences):
    """For encoders whose states depend on padding: every batch holds one length, the budget holds,
    and texts of one length share batches (as many as the budget allows: no batch of one needlessly)."""
    batches = list(token_budget_batches(lengths, max_tokens, max_sentences, one_length=True))
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len({lengths[i] for i in batch}) == 1
        assert lengths[batch[0]] * len(batch) <= max_tokens or len(batch) == 1
        assert max_sentences is None or len(batch) <= max_sentences
    per_length: dict[int, int] = {}
    for batch in batches:
        per_length[lengths[batch[0]]] = per_length.get(lengths[batch[0]], 0) + 1
    for length, count in per_length.items():
        fits = max(1, min(max_tokens // length, max_sentences or len(lengths)))
        assert count == -(-lengths.count(length) // fits)  # ceil: full batches but the last
