"""TokenStore keeps each text's `lead + content[:limit] + trail`, checked against a plain loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.scoring import tokens
from bertscore.scoring.tokens import TokenStore

ID_LISTS = st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=12), max_size=9)
SPECIALS = st.lists(st.integers(0, 1000), max_size=2)


@settings(max_examples=200, deadline=None)
@given(ID_LISTS, SPECIALS, SPECIALS, st.one_of(st.none(), st.integers(0, 8)), st.integers(1, 4))
def test_store_holds_what_a_plain_loop_builds(content, lead, trail, limit, tokenize_batch) -> None:
    texts = [f"text {i}" for i in range(len(content))]
    by_text = dict(zip(texts, content))
    original = tokens.TOKENIZE_BATCH
    tokens.TOKENIZE_BATCH = tokenize_batch  # several tokenizer batches in one store
    try:
        store = TokenStore(texts, lambda batch: [by_text[t] for t in batch], lead, trail, limit)
    finally:
        tokens.TOKENIZE_BATCH = original
    for text, ids in by_text.items():
        expected = lead + (ids if limit is None else ids[:limit]) + trail
        assert store[text].tolist() == expected and store.length(text) == len(expected)
        assert store.content_length(text) == len(ids)
    assert store.flat.dtype == np.int32 and len(store) == len(texts)


@settings(max_examples=80, deadline=None)
@given(ID_LISTS, SPECIALS, SPECIALS, st.integers(0, 8), st.integers(0, 12))
def test_heads_counts_and_totals_equal_plain_loops(content, lead, trail, cut, token) -> None:
    """head / heads / head_length(s) at a cut, counts_of a token and weight_totals of a table, each
    against a plain loop over the texts' lists: fails if a cut keeps one token too many or too few, drops
    the trailing specials, a count or total lands on a neighbouring text, or an empty text is skipped."""
    content = [[i % 13 for i in ids] for ids in content]  # small ids: repeats, and a table to index
    texts = [f"text {i}" for i in range(len(content))]
    by_text = dict(zip(texts, content))
    store = TokenStore(texts, lambda batch: [by_text[t] for t in batch], lead, trail)
    table = np.array([0.0, 0.5, 1.25, 2.0, 0.0, 3.5, 0.125, 7.0, 1.0, 0.25, 4.0, 0.75, 9.0] + [0.5] * 1001)
    heads = store.heads(texts, cut)
    assert ("text 0" in store) == bool(texts) and "not stored" not in store
    for i, (text, ids) in enumerate(by_text.items()):
        expected = lead + ids[:cut] + trail
        assert store.head(text, cut).tolist() == expected and heads[i].tolist() == expected
        assert store.head_length(text, cut) == len(expected)
    assert store.head_lengths(cut) == {text: len(lead) + len(ids[:cut]) + len(trail) for text, ids in by_text.items()}
    assert store.counts_of(token).tolist() == [(lead + ids + trail).count(token) for ids in content]
    totals = store.weight_totals(table)
    assert totals.tolist() == [float(sum(table[t] for t in lead + ids + trail)) for ids in content]
    assert totals.dtype == np.float64


def test_a_head_is_the_stored_row_itself_when_it_fits() -> None:
    """No copy for a text within the cut (a view into the store), a new array past it: fails if the
    fits test is off by one (a copy at the limit, or a view of a text one too long)."""
    store = TokenStore(["a", "b"], lambda batch: [[5, 6, 7], [5, 6, 7, 8]], [1], [2])
    assert np.shares_memory(store.head("a", 3), store.flat)
    assert not np.shares_memory(store.head("b", 3), store.flat)
    assert store.head("b", 3).tolist() == [1, 5, 6, 7, 2]
    assert [np.shares_memory(h, store.flat) for h in store.heads(["a", "b"], 3)] == [True, False]
    assert store.heads([], 3) == []


def test_an_empty_store_holds_nothing() -> None:
    """No texts: no ids, no lengths, no counts (int32 / int64 as a full store's): fails if an empty store
    starts with a stray entry or another dtype."""
    store = TokenStore([], lambda batch: [], [1], [2])
    assert len(store) == 0 and store.flat.shape == (0,) and store.flat.dtype == np.int32
    assert store.content_lengths.shape == (0,) and store.content_lengths.dtype == np.int64
    assert store.offsets.tolist() == [0] and store.lengths.tolist() == [] and store.head_lengths(3) == {}
    assert store.counts_of(0).tolist() == [] and store.weight_totals(np.ones(4)).tolist() == []
