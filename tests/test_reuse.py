"""reuse.py: a call's embeddings kept while later chunks need them, within a byte budget."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.scoring.reuse import CallReuse


def rows(n: int) -> torch.Tensor:
    return torch.ones(n, 4)  # n tokens x 4 floats = 16 n bytes


def test_a_text_is_kept_while_uses_remain_and_dropped_after_its_last():
    cands, refs = ["a", "a", "b", "a"], ["x", "y", "x", "z"]
    reuse = CallReuse(cands, refs)
    embeddings = {"a": rows(2), "x": rows(3), "y": rows(1)}
    reuse.done(cands, refs, [0, 1], embeddings)  # a: 1 use left (pair 3); x: 1 left (pair 2); y: none
    assert sorted(reuse.kept) == ["a", "x"]
    assert reuse.kept_bytes == (2 + 3) * 16
    assert set(reuse.held(["a", "b", "x", "y"])) == {"a", "x"}
    reuse.done(cands, refs, [2], {"b": rows(1), "x": rows(3)})  # x's last use; b never returns
    assert sorted(reuse.kept) == ["a"]
    reuse.done(cands, refs, [3], {"z": rows(1)})
    assert reuse.kept == {} and reuse.kept_bytes == 0 and not reuse.uses


def test_a_pair_of_one_text_with_itself_is_one_use():
    reuse = CallReuse(["s", "s"], ["s", "t"])
    assert reuse.uses == {"s": 2, "t": 1}


def test_nothing_past_the_budget_is_kept():
    cands, refs = ["a", "b", "a", "b"], ["r", "r", "r", "r"]
    reuse = CallReuse(cands, refs, max_bytes=3 * 16)
    reuse.done(cands, refs, [0, 1], {"a": rows(2), "b": rows(2), "r": rows(1)})
    assert sorted(reuse.kept) == ["a", "r"]  # b would pass 48 bytes
    assert reuse.kept_bytes == 3 * 16


def test_a_kept_view_does_not_pin_its_batch():
    batch = torch.ones(8, 100, 4)
    reuse = CallReuse(["a", "a"], ["x", "x"])
    reuse.done(["a", "a"], ["x", "x"], [0], {"a": batch[0, :3], "x": batch[1, :2]})
    assert all(t._base is None and t.untyped_storage().nbytes() == t.numel() * 4 for t in reuse.kept.values())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("abcxy")), min_size=1, max_size=30),
       st.integers(1, 6))
def test_chunk_by_chunk_a_text_is_held_exactly_when_a_later_chunk_uses_it(pairs, chunk):
    cands, refs = [c for c, _ in pairs], [r for _, r in pairs]
    reuse = CallReuse(cands, refs)
    embedded = []
    for start in range(0, len(pairs), chunk):
        block = range(start, min(start + chunk, len(pairs)))
        needed = {t for i in block for t in (cands[i], refs[i])}
        held = reuse.held(needed)
        embedded += sorted(needed - set(held))
        reuse.done(cands, refs, block, {t: rows(1) for t in needed})
        later = {t for i in range(block.stop, len(pairs)) for t in (cands[i], refs[i])}
        assert set(reuse.kept) == later & {t for i in range(block.stop) for t in (cands[i], refs[i])}
    assert sorted(embedded) == sorted(set(cands) | set(refs))  # each text embedded once in the call
    assert reuse.kept == {}
