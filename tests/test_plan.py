"""plan.py: how pairs are grouped (pure index arithmetic), checked against plain loops and bounds."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.scoring import plan

HIDDEN = 384


def corpus(draw_lengths: list[tuple[int, int]]) -> tuple[list[str], list[str], dict[str, int]]:
    """Pairs (cand_i, ref_i) with the drawn token lengths; some references repeat (shared texts)."""
    cands = [f"c{i}" for i in range(len(draw_lengths))]
    refs = [f"r{i % 5}" for i in range(len(draw_lengths))]
    length = {}
    for i, (lc, lr) in enumerate(draw_lengths):
        length[cands[i]] = lc
        length.setdefault(refs[i], lr)
    return cands, refs, length


pairs_strategy = st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 3000)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(pairs_strategy, st.integers(1, 20), st.integers(1, 13))
def test_chunks_cover_every_pair_once_in_order_within_both_budgets(lengths, max_pairs, layers):
    cands, refs, length = corpus(lengths)
    order = list(range(len(cands)))
    floats_per_token = HIDDEN * layers
    budget = max(1, plan.CHUNK_EMBEDDING_BYTES // (4 * floats_per_token))
    chunks = list(plan.chunks(order, cands, refs, length.__getitem__, max_pairs, floats_per_token))
    assert [i for chunk in chunks for i in chunk] == order
    for chunk in chunks:
        assert 1 <= len(chunk) <= max_pairs
        held = sum(length[k] for k in {cands[i] for i in chunk} | {refs[i] for i in chunk})
        # Over the budget only when one pair alone is (it cannot be split).
        assert held <= budget or len(chunk) == 1


@settings(max_examples=150, deadline=None)
@given(pairs_strategy, st.integers(1, 13))
def test_match_batches_stay_under_the_batch_bytes_and_tile_exactly_the_oversized_pairs(lengths, layers):
    cands, refs, length = corpus(lengths)
    floats_per_token = HIDDEN * layers
    batches = list(plan.match_batches(range(len(cands)), cands, refs, length.__getitem__, floats_per_token, layers))
    # every pair once (a tiled pair comes out as it is met, ahead of the batch being filled)
    assert sorted(i for batch, _ in batches for i in batch) == list(range(len(cands)))
    for batch, tiled in batches:
        sizes = [(length[cands[i]], length[refs[i]]) for i in batch]
        oversized = [lc * lr * layers * 4 > plan.MATCH_BATCH_BYTES for lc, lr in sizes]
        if tiled:
            assert batch and len(batch) == 1 and oversized[0]
            continue
        assert not any(oversized) and len(batch) <= plan.MAX_PAIRS_PER_MATCH
        lc, lr = max(s[0] for s in sizes), max(s[1] for s in sizes)
        padded = len(batch) * (lc * lr * layers + (lc + lr) * floats_per_token) * 4
        assert padded <= plan.MATCH_BATCH_BYTES or len(batch) == 1


@pytest.mark.parametrize("layers", [1, 7, 25])
def test_needs_tiling_is_the_64_mb_similarity_threshold(layers):
    side = int((plan.MATCH_BATCH_BYTES / (4 * layers)) ** 0.5)
    assert not plan.needs_tiling(side, side, layers)
    assert plan.needs_tiling(side + 1, side + 1, layers)
    # never for texts within the limit of any encoder we know (512 tokens, 25 layers)
    assert not plan.needs_tiling(512, 512, 25)


def test_a_text_already_held_costs_nothing_in_a_chunk():
    """Pairs sharing a reference: the reference counts once, so they fit in one chunk."""
    floats_per_token = plan.CHUNK_EMBEDDING_BYTES // (4 * 1000)  # a budget of 1000 tokens
    cands, refs = ["a", "b", "c"], ["r", "r", "r"]
    length = {"a": 100, "b": 100, "c": 100, "r": 600}.__getitem__
    assert list(plan.chunks([0, 1, 2], cands, refs, length, 10, floats_per_token)) == [[0, 1, 2]]
    length = {"a": 200, "b": 200, "c": 200, "r": 600}.__getitem__  # 600 + 3 x 200 > 1000
    assert list(plan.chunks([0, 1, 2], cands, refs, length, 10, floats_per_token)) == [[0, 1], [2]]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 20_000), st.integers(1, 5000), st.integers(0, 2**32 - 1), st.booleans())
def test_stream_blocks_partition_the_pairs_small_first_growing_in_cost(num_pairs, block_pairs, seed, shortest_first):
    """Every pair once, in order; a call within a chunk is one block; after the first block of 256
    pairs, each block takes every next pair while its cost stays within 1.5x the block before (at
    least one pair, at most `block_pairs`), checked against a plain loop's sums."""
    rng = random.Random(seed)
    costs = [rng.randint(2, 600) for _ in range(num_pairs)]
    if shortest_first:  # as `stream_order` gives them
        costs.sort()
    blocks = plan.stream_blocks(costs, block_pairs)
    assert [i for block in blocks for i in block] == list(range(num_pairs))
    if num_pairs <= block_pairs:
        assert blocks == [range(num_pairs)]  # scored as one chunk always was
        return
    assert len(blocks[0]) == min(256, block_pairs)
    for before, block in zip(blocks, blocks[1:]):
        allowed = max(1, int(sum(costs[i] for i in before) * 1.5))
        cost = sum(costs[i] for i in block)
        assert 1 <= len(block) <= block_pairs
        assert cost <= allowed or len(block) == 1  # within its budget, except a lone pair
        if len(block) < block_pairs and block.stop < num_pairs:
            assert cost + costs[block.stop] > allowed  # the next pair did not fit


def test_pair_cost_counts_characters_and_each_texts_special_tokens():
    assert plan.pair_cost("", "") == 2
    assert plan.pair_cost("abc", "de") == 7


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "bb b", "ccc c c", "d", "a b c d e"]),
                          st.text(max_size=12)), min_size=1, max_size=80))
def test_stream_order_keeps_pairs_of_one_reference_together_shortest_references_first(pairs):
    refs = [ref for ref, _ in pairs]
    cands = [cand for _, cand in pairs]
    order = plan.stream_order(cands, refs)
    assert sorted(order) == list(range(len(pairs)))
    taken = [refs[i] for i in order]
    runs = [ref for k, ref in enumerate(taken) if k == 0 or taken[k - 1] != ref]
    assert len(runs) == len(set(refs))  # one contiguous run per distinct reference
    assert [len(ref) for ref in taken] == sorted(len(ref) for ref in refs)
