"""TokenStore keeps each text's `lead + content[:limit] + trail`, checked against a plain loop."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore import tokens
from bertscore.tokens import TokenStore

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
