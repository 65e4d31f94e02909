"""Pure greedy-matching math on small tensors, checked against plain loops written here."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.scoring.matching import (
    all_pairs_match,
    greedy_match,
    greedy_match_tiled,
    harmonic_mean,
    normalize,
    pad_by_index,
    pad_sequences,
    tiled_maxima,
)


def loop_bertscore(cand: list[list[float]], ref: list[list[float]], cw: list[float], rw: list[float]):
    """P, R, F of one pair in plain Python: cosine, greedy max both ways, weighted means."""

    def unit(v):
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v] if norm > 0 else v

    cand, ref = [unit(v) for v in cand], [unit(v) for v in ref]
    sim = [[sum(a * b for a, b in zip(c, r)) for r in ref] for c in cand]
    best_c = [max(row) for row in sim]
    best_r = [max(sim[i][j] for i in range(len(cand))) for j in range(len(ref))]

    def mean(scores, weights):
        total = sum(weights)
        return sum(s * w for s, w in zip(scores, weights)) / total if total > 0 else 0.0

    p, r = mean(best_c, cw), mean(best_r, rw)
    return p, r, (2 * p * r / (p + r) if p + r != 0 else 0.0)


def _pair(cand: torch.Tensor, ref: torch.Tensor, cw=None, rw=None):
    cw = torch.ones(cand.shape[0]) if cw is None else cw
    rw = torch.ones(ref.shape[0]) if rw is None else rw
    c = pad_sequences([normalize(cand)], [cw])
    r = pad_sequences([normalize(ref)], [rw])
    return greedy_match(*c, *r)


def test_hand_computed_example():
    cand = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    ref = torch.tensor([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])
    p, r, f = _pair(cand, ref)
    s = 2 ** -0.5
    # cand 0 -> best 1.0; cand 1 -> best s. ref 0 -> 1.0; ref 1 -> s; ref 2 -> max(-1, 0) = 0.
    assert torch.allclose(p, torch.tensor([(1 + s) / 2]))
    assert torch.allclose(r, torch.tensor([(1 + s + 0) / 3]))
    assert torch.allclose(f, harmonic_mean(p, r))
    # Unequal weights: an implementation that ignored them would give the numbers above.
    p, r, f = _pair(cand, ref, torch.tensor([3.0, 1.0]), torch.tensor([1.0, 2.0, 5.0]))
    assert torch.allclose(p, torch.tensor([(3 + s) / 4]))
    assert torch.allclose(r, torch.tensor([(1 + 2 * s + 0) / 8]))
    assert torch.allclose(f, torch.tensor([2 * p.item() * r.item() / (p.item() + r.item())]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 7), st.integers(1, 7)), min_size=1, max_size=4),
       st.integers(1, 6), st.integers(0, 10_000))
def test_padded_batch_equals_a_plain_loop_per_pair(lengths, dim, seed):
    # Unequal (idf-like) weights with some zeros, lengths that force padding in the batch.
    generator = torch.Generator().manual_seed(seed)
    cands = [torch.randn(lc, dim, generator=generator) for lc, _ in lengths]
    refs = [torch.randn(lr, dim, generator=generator) for _, lr in lengths]
    cws = [torch.rand(lc, generator=generator) * (torch.rand(lc, generator=generator) > 0.2) for lc, _ in lengths]
    rws = [torch.rand(lr, generator=generator) * (torch.rand(lr, generator=generator) > 0.2) for _, lr in lengths]
    c = pad_sequences([normalize(x) for x in cands], cws)
    r = pad_sequences([normalize(x) for x in refs], rws)
    p, rec, f = greedy_match(*c, *r)
    for i in range(len(lengths)):
        expected = loop_bertscore(cands[i].tolist(), refs[i].tolist(), cws[i].tolist(), rws[i].tolist())
        assert [p[i].item(), rec[i].item()] == pytest.approx(expected[:2], abs=1e-5)
        assert f[i].item() == pytest.approx(expected[2], rel=1e-3, abs=1e-5)  # ill-conditioned when P ~ -R


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=6), st.sampled_from([0, 3]), st.integers(0, 2**16))
def test_pad_sequences_places_every_text_exactly(lengths, layers, seed):
    # Texts as the embedder gives them: views into one batch tensor ([B, (K,) L, D]), sliced per text.
    # The padded tensor must hold each text bit for bit at its row, zeros after, in the layout
    # pad_sequence gave ([B, L, K, D] seen as [B, K, L, D]: the matching's strides), whatever the lengths.
    generator = torch.Generator().manual_seed(seed)
    batch = torch.randn(len(lengths), *((layers,) if layers else ()), max(lengths) + 2, 5, generator=generator)
    texts = [row[..., :n, :] for row, n in zip(batch.unbind(0), lengths)]
    weights = [torch.rand(n, generator=generator, dtype=torch.float64) for n in lengths]
    padded, mask, padded_weights = pad_sequences(texts, weights)
    longest = max(lengths)
    assert padded.shape == (len(lengths), *((layers,) if layers else ()), longest, 5)
    assert padded.dtype == torch.float32 and padded_weights.dtype == torch.float32 and mask.dtype == torch.bool
    if layers:
        assert padded.permute(0, 2, 1, 3).is_contiguous()
    for i, n in enumerate(lengths):
        assert torch.equal(padded[i, ..., :n, :], texts[i])
        assert not padded[i, ..., n:, :].any() and not padded_weights[i, n:].any()
        assert mask[i].tolist() == [True] * n + [False] * (longest - n)
        assert torch.equal(padded_weights[i, :n], weights[i].float())
    # The accelerators' route (a few copies per batch, not one per text): the same tensor and strides.
    by_index = pad_by_index(texts, mask)
    assert torch.equal(by_index, padded) and by_index.stride() == padded.stride()


def test_padding_never_wins_a_max():
    # All similarities are negative: a 0-masked implementation would return 0 from padding.
    cand = torch.tensor([[1.0, 0.0]])
    ref_short = torch.tensor([[-1.0, 0.1]])
    ref_long = torch.tensor([[-1.0, 0.2], [-1.0, 0.3], [-1.0, 0.4]])
    cands = [normalize(cand), normalize(cand)]
    refs = [normalize(ref_short), normalize(ref_long)]
    c = pad_sequences(cands, [torch.ones(1), torch.ones(1)])
    r = pad_sequences(refs, [torch.ones(1), torch.ones(3)])
    p, rec, _ = greedy_match(*c, *r)
    alone, _, _ = _pair(cand, ref_short)
    assert p[0] < 0 and torch.allclose(p[0], alone[0])
    assert torch.isfinite(rec).all()


def test_zero_weights_give_zero_not_nan():
    cand = torch.randn(3, 4)
    ref = torch.randn(2, 4)
    p, r, f = _pair(cand, ref, cw=torch.zeros(3))
    assert p.item() == 0.0 and torch.isfinite(f).all() and torch.isfinite(r).all()


def test_weights_are_normalised():
    torch.manual_seed(1)
    cand, ref = torch.randn(4, 8), torch.randn(5, 8)
    cw, rw = torch.rand(4) + 0.1, torch.rand(5) + 0.1
    p1, r1, _ = _pair(cand, ref, 2.5 * cw, 3.0 * rw)
    p2, r2, _ = _pair(cand, ref, cw, rw)
    assert torch.allclose(p1, p2) and torch.allclose(r1, r2)
    p3, r3, _ = _pair(cand, ref)  # and the weights matter: uniform weights give other numbers
    assert not torch.allclose(p1, p3) and not torch.allclose(r1, r3)


def test_all_layers_shape_matches_per_layer():
    torch.manual_seed(0)
    cand, ref = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 4, 8)
    mask_c, mask_r = torch.ones(2, 5, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool)
    w_c, w_r = torch.rand(2, 5), torch.rand(2, 4)
    p, r, f = greedy_match(normalize(cand), mask_c, w_c, normalize(ref), mask_r, w_r)
    assert p.shape == (2, 3)
    for layer in range(3):
        pl, rl, fl = greedy_match(normalize(cand[:, layer]), mask_c, w_c, normalize(ref[:, layer]), mask_r, w_r)
        assert torch.allclose(p[:, layer], pl) and torch.allclose(r[:, layer], rl) and torch.allclose(f[:, layer], fl)


def test_harmonic_mean_zero_denominator():
    assert harmonic_mean(torch.tensor([0.0]), torch.tensor([0.0])).item() == 0.0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 10_000))
def test_precision_of_c_r_is_recall_of_r_c(lc, lr, seed):
    generator = torch.Generator().manual_seed(seed)
    cand, ref = torch.randn(lc, 6, generator=generator), torch.randn(lr, 6, generator=generator)
    wc, wr = torch.rand(lc, generator=generator) + 0.1, torch.rand(lr, generator=generator) + 0.1
    p, r, f = _pair(cand, ref, wc, wr)
    p2, r2, f2 = _pair(ref, cand, wr, wc)
    assert torch.allclose(p, r2, atol=1e-6) and torch.allclose(r, p2, atol=1e-6) and torch.allclose(f, f2, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(0, 10_000))
def test_identical_texts_score_one(length, seed):
    emb = torch.randn(length, 6, generator=torch.Generator().manual_seed(seed))
    p, r, f = _pair(emb, emb.clone())
    assert torch.allclose(torch.stack([p, r, f]), torch.ones(3, 1), atol=1e-6)


# --- Tiled matching: the same numbers without the whole similarity matrix ---------------------


def _random_batch(generator, lengths, dim, layers):
    """A padded batch like the scorer's: embeddings [B, (K,) L, D], masks, idf-like weights with zeros."""
    def side(which):
        texts, weights = [], []
        for pair in lengths:
            length = pair[which]
            shape = (layers, length, dim) if layers else (length, dim)
            texts.append(normalize(torch.randn(*shape, generator=generator)))
            weights.append(torch.rand(length, generator=generator) * (torch.rand(length, generator=generator) > 0.2))
        embeddings, mask, padded_weights = pad_sequences(texts, weights)
        # Garbage (not zeros) in the padding: only the masks may keep it out of the maxima.
        garbage = torch.randn(embeddings.shape, generator=generator)
        pad = ~mask[:, None, :, None] if layers else ~mask[:, :, None]
        return torch.where(pad, garbage, embeddings), mask, padded_weights

    return side(0), side(1)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=3),
    st.integers(1, 5),
    st.sampled_from([0, 1, 3]),
    st.integers(4, 4 * 9 * 9 * 3 * 3 + 64),
    st.integers(0, 10_000),
)
def test_tiled_equals_untiled_on_padded_batches(lengths, dim, layers, max_bytes, seed):
    # Budgets from one similarity per tile (4 bytes) to more than the whole batch: tiles of size 1,
    # ragged last tiles, several items per tile, one tile for everything.
    generator = torch.Generator().manual_seed(seed)
    cand, ref = _random_batch(generator, lengths, dim, layers)
    expected = greedy_match(*cand, *ref)
    tiled = greedy_match_tiled(*cand, *ref, max_bytes=max_bytes)
    for got, want in zip(tiled, expected):
        assert got.shape == want.shape
        assert torch.allclose(got, want, atol=1e-6, rtol=0)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 6), st.sampled_from([0, 1, 4]),
       st.integers(4, 2000), st.integers(0, 10_000))
def test_tiled_one_pair_without_padding(lc, lr, dim, layers, max_bytes, seed):
    # One pair as the scorer holds it: [L, D] or [K, L, D], weights [L], no masks.
    generator = torch.Generator().manual_seed(seed)
    shape = (layers,) if layers else ()
    cand = normalize(torch.randn(*shape, lc, dim, generator=generator))
    ref = normalize(torch.randn(*shape, lr, dim, generator=generator))
    cw, rw = torch.rand(lc, generator=generator), torch.rand(lr, generator=generator)
    p, r, f = greedy_match_tiled(cand, None, cw, ref, None, rw, max_bytes=max_bytes)
    assert p.shape == shape
    for index in [()] if not layers else [(k,) for k in range(layers)]:
        expected = loop_bertscore(cand[index].tolist(), ref[index].tolist(), cw.tolist(), rw.tolist())
        assert [p[index].item(), r[index].item()] == pytest.approx(expected[:2], abs=1e-5)
        assert f[index].item() == pytest.approx(expected[2], rel=1e-3, abs=1e-5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 9), st.integers(1, 9)), min_size=1, max_size=3),
       st.integers(4, 600), st.integers(0, 10_000))
def test_tiled_maxima_and_their_indices_equal_the_full_matrix(lengths, max_bytes, seed):
    generator = torch.Generator().manual_seed(seed)
    (cand, cand_mask, _), (ref, ref_mask, _) = _random_batch(generator, lengths, 4, 0)
    best_c, arg_c, best_r, arg_r = tiled_maxima(cand, ref, cand_mask, ref_mask, max_bytes, with_indices=True)
    for b, (lc, lr) in enumerate(lengths):
        similarity = cand[b, :lc] @ ref[b, :lr].T  # the real tokens only: no padding to mask
        values, indices = similarity.max(dim=1)
        assert torch.allclose(best_c[b, :lc], values, atol=1e-6, rtol=0) and torch.equal(arg_c[b, :lc], indices)
        values, indices = similarity.max(dim=0)
        assert torch.allclose(best_r[b, :lr], values, atol=1e-6, rtol=0) and torch.equal(arg_r[b, :lr], indices)
        # Padded positions: 0 and index -1.
        assert (best_c[b, lc:] == 0).all() and (arg_c[b, lc:] == -1).all()
        assert (best_r[b, lr:] == 0).all() and (arg_r[b, lr:] == -1).all()


def test_tiled_ties_keep_the_first_maximum_across_tiles():
    cand = torch.tensor([[1.0, 0.0]])
    ref = torch.tensor([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])  # columns 1-3 tie at 1
    _, arg_c, _, _ = tiled_maxima(cand, ref, max_bytes=4, with_indices=True)
    assert arg_c.tolist() == [1]


def test_tiled_padding_never_wins_a_max():
    # Every real similarity is negative: a 0 from padding would win if padding were not -inf.
    cand = normalize(torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]]]))
    ref = normalize(torch.tensor([[[-1.0, 0.1], [0.0, 0.0]], [[-1.0, 0.2], [-1.0, 0.3]]]))
    cand_mask = torch.tensor([[True], [True]])
    ref_mask = torch.tensor([[True, False], [True, True]])
    best_c, best_r = tiled_maxima(cand, ref, cand_mask, ref_mask, max_bytes=4)
    assert best_c[0, 0] == pytest.approx(-1 / math.sqrt(1.01)) and best_r[0, 1] == 0


def test_tiled_never_holds_more_than_the_budget_of_similarities(monkeypatch):
    largest = []
    real_matmul = torch.matmul

    def recording_matmul(a, b):
        out = real_matmul(a, b)
        largest.append(out.numel() * out.element_size())
        return out

    monkeypatch.setattr(torch, "matmul", recording_matmul)
    generator = torch.Generator().manual_seed(0)
    cand, ref = _random_batch(generator, [(37, 53), (20, 41)], 8, 3)
    for max_bytes in [4, 100, 1000, 4 * 53, 4 * 53 * 3 + 7, 10_000]:
        largest.clear()
        greedy_match_tiled(*cand, *ref, max_bytes=max_bytes)
        assert largest and max(largest) <= max_bytes
    largest.clear()
    greedy_match_tiled(*cand, *ref, max_bytes=1 << 30)  # everything fits: one product per outer item
    assert len(largest) == 2  # the batch dim is walked item by item, layers x rows x columns in one tile


def test_tiled_zero_weights_give_zero_not_nan():
    generator = torch.Generator().manual_seed(3)
    cand, ref = normalize(torch.randn(2, 6, 4, generator=generator)), normalize(torch.randn(2, 5, 4, generator=generator))
    p, r, f = greedy_match_tiled(cand, None, torch.zeros(6), ref, None, torch.rand(5, generator=generator), max_bytes=8)
    assert torch.equal(p, torch.zeros(2)) and torch.equal(f, torch.zeros(2)) and torch.isfinite(r).all()


def test_tiled_rejects_shapes_and_masks_that_do_not_fit():
    cand, ref = torch.randn(3, 5, 4), torch.randn(3, 6, 4)
    with pytest.raises(ValueError, match="cand_weights has shape \\(4,\\)"):
        greedy_match_tiled(cand, None, torch.ones(4), ref, None, torch.ones(6))
    with pytest.raises(ValueError, match="ref_mask has shape \\(2, 6\\)"):
        tiled_maxima(cand, ref, None, torch.ones(2, 6, dtype=torch.bool))
    with pytest.raises(TypeError, match="cand_mask must be a bool tensor"):
        tiled_maxima(cand, ref, torch.ones(3, 5), None)
    with pytest.raises(ValueError, match="differ in leading dims or hidden size"):
        tiled_maxima(cand, torch.randn(2, 6, 4))


@pytest.mark.parametrize("max_bytes", [1, 300, 1 << 20])
@pytest.mark.parametrize("lengths_given", [False, True])
def test_all_pairs_match_equals_the_plain_loop_for_every_pair(max_bytes, lengths_given):
    """P, R, F of every candidate x reference pair, every layer, against loop_bertscore (plain Python):
    texts of lengths 1..5 with uneven weights, blocks from one pair (max_bytes=1) to all at once, the
    lengths read from the masks or given. Fails if a block is cut short of its longest text, a pair lands
    in another's cell, a layer or a weight is mixed up, or the padding wins a max."""
    generator = torch.Generator().manual_seed(5)
    layers, cand_lengths, ref_lengths = 2, [3, 1, 5, 2], [4, 2, 1]
    cands = [normalize(torch.rand(layers, n, 6, generator=generator)) for n in cand_lengths]
    refs = [normalize(torch.rand(layers, n, 6, generator=generator)) for n in ref_lengths]
    cand_w = [torch.rand(n, generator=generator) + 0.1 for n in cand_lengths]
    ref_w = [torch.rand(n, generator=generator) + 0.1 for n in ref_lengths]
    lengths = (cand_lengths, ref_lengths) if lengths_given else None
    got = all_pairs_match(pad_sequences(cands, cand_w), pad_sequences(refs, ref_w), max_bytes=max_bytes,
                          lengths=lengths)
    assert got.shape == (4, 3, layers, 3) and got.dtype == torch.float32
    for i, (c, cw) in enumerate(zip(cands, cand_w)):
        for j, (r, rw) in enumerate(zip(refs, ref_w)):
            for k in range(layers):
                expected = loop_bertscore(c[k].tolist(), r[k].tolist(), cw.tolist(), rw.tolist())
                assert got[i, j, k].tolist() == pytest.approx(expected, abs=1e-6), (i, j, k)


def test_maxima_outside_a_cosines_range_are_clamped_on_both_sides():
    """Maxima 1.5, -3 and 0.5 (float rounding of unit vectors gives 1.0000001; these exaggerate it), unit
    weights: clamped to [-1, 1] the mean is (1 - 1 + 0.5) / 3 by hand, for precision and recall alike.
    Fails if either bound of the clamp is dropped or widened."""
    from bertscore.scoring.matching import _weighted_scores

    maxima = torch.tensor([[1.5, -3.0, 0.5]])
    ones = torch.ones(1, 3)
    p, r, f = _weighted_scores(maxima, None, ones, maxima.clone(), None, ones)
    assert p.tolist() == r.tolist() == f.tolist() == [pytest.approx(0.5 / 3, abs=1e-7)]
    up, down = torch.tensor([[1.0000001, 1.0]]), torch.tensor([[-1.0000001, -1.0]])
    assert _weighted_scores(up, None, torch.ones(1, 2), down, None, torch.ones(1, 2))[:2] == (
        torch.tensor([1.0]), torch.tensor([-1.0]))


def test_a_weight_total_at_or_below_zero_gives_zero():
    """No positive weight, no mean: all-zero weights and (outside idf's range) weights summing below 0
    both give 0, never a quotient. Fails if a zero or negative total is divided by."""
    from bertscore.scoring.matching import _weighted_mean

    scores = torch.tensor([[0.5, 0.25], [0.5, 0.25], [0.5, 0.25], [0.5, 0.25]])
    weights = torch.tensor([[0.0, 0.0], [-1.0, -1.0], [1.0, -1.0], [1.0, 3.0]])
    assert _weighted_mean(scores, weights).tolist() == [0.0, 0.0, 0.0, pytest.approx((0.5 + 0.75) / 4)]


def test_tiled_puts_cpu_weights_beside_embeddings_on_another_device():
    """Embeddings on the meta device (a stand-in for an accelerator), weights given on the CPU: the
    scores come out on the embeddings' device. Fails if the weights are left on the CPU (a device
    mismatch in the weighted means)."""
    cand, ref = torch.empty(6, 4, device="meta"), torch.empty(2, 5, 4, device="meta")
    p, r, f = greedy_match_tiled(cand, None, torch.ones(6), ref[0], None, torch.ones(5), max_bytes=40)
    assert p.device.type == r.device.type == f.device.type == "meta"


def test_tiled_names_the_weights_that_do_not_fit():
    """A reference weight vector of the wrong length is refused under its own name, with the shapes:
    fails if the message names the wrong argument or none."""
    cand, ref = normalize(torch.randn(6, 4)), normalize(torch.randn(5, 4))
    with pytest.raises(ValueError) as error:
        greedy_match_tiled(cand, None, torch.ones(6), ref, None, torch.ones(4))
    assert str(error.value) == ("ref_weights has shape (4,), which does not fit embeddings with leading dims () "
                                "and length 5: expected [*P, 5] with P a prefix of ()")
    with pytest.raises(ValueError) as error:
        greedy_match_tiled(cand, None, torch.ones(5), ref, None, torch.ones(5))
    assert str(error.value).startswith("cand_weights has shape (5,)")


@pytest.mark.parametrize("max_bytes", [1, 300, 1 << 20])
def test_all_pairs_match_with_negative_similarities_and_half_precision(max_bytes):
    """Candidates and references pointing apart (every real cosine < 0) in float16, texts of lengths
    1..5: P, R, F equal loop_bertscore, in float32. Fails if the zero padding wins a max (a mask not
    applied on either side) or the result takes the embeddings' half precision."""
    generator = torch.Generator().manual_seed(8)
    layers, cand_lengths, ref_lengths = 2, [3, 1, 5], [4, 1, 2]
    cands = [normalize(torch.rand(layers, n, 6, generator=generator)).half() for n in cand_lengths]
    refs = [-normalize(torch.rand(layers, n, 6, generator=generator)).half() for n in ref_lengths]
    cand_w = [torch.rand(n, generator=generator) + 0.1 for n in cand_lengths]
    ref_w = [torch.rand(n, generator=generator) + 0.1 for n in ref_lengths]
    got = all_pairs_match(pad_sequences(cands, cand_w), pad_sequences(refs, ref_w), max_bytes=max_bytes)
    assert got.dtype == torch.float32 and bool((got[..., :2] < 0).all())
    for i, (c, cw) in enumerate(zip(cands, cand_w)):
        for j, (r, rw) in enumerate(zip(refs, ref_w)):
            for k in range(layers):
                expected = loop_bertscore(c[k].float().tolist(), r[k].float().tolist(), cw.tolist(), rw.tolist())
                assert got[i, j, k].tolist() == pytest.approx(expected, abs=2e-3), (i, j, k)


@pytest.mark.parametrize("max_bytes", [1, 2 * 2 * 5 * 4 * 4, 3 * 2 * 5 * 4 * 4 + 3, 1 << 20])
def test_all_pairs_match_blocks_follow_the_budget(monkeypatch, max_bytes):
    """The blocks' products, recorded: as many references per block as the budget holds at the padded
    size (K x Lc x Lr x 4 bytes a pair, at least one), then as many candidates as fit beside them, each
    block cut to its longest texts (the rule of the docstring, walked by a plain loop here). Fails if a
    block is larger than the budget allows, smaller than it allows, or not cut to its texts."""
    products = []
    real_bmm = torch.bmm

    def recording_bmm(a, b):
        out = real_bmm(a, b)
        products.append(tuple(out.shape))
        return out

    monkeypatch.setattr(torch, "bmm", recording_bmm)
    generator = torch.Generator().manual_seed(2)
    layers, cand_lengths, ref_lengths, dim = 2, [3, 5, 1, 2, 4], [4, 1, 2, 1], 7
    cands = [normalize(torch.rand(layers, n, dim, generator=generator)) for n in cand_lengths]
    refs = [normalize(torch.rand(layers, n, dim, generator=generator)) for n in ref_lengths]
    all_pairs_match(pad_sequences(cands, [torch.ones(n) for n in cand_lengths]),
                    pad_sequences(refs, [torch.ones(n) for n in ref_lengths]), max_bytes=max_bytes)
    per_pair = layers * 5 * 4 * 4  # padded lengths 5 x 4, fp32
    ref_block = max(1, min(4, max_bytes // per_pair))
    cand_block = max(1, min(5, max_bytes // (per_pair * ref_block)))
    expected = []
    for r0 in range(0, 4, ref_block):
        rs = ref_lengths[r0:r0 + ref_block]
        for c0 in range(0, 5, cand_block):
            cs = cand_lengths[c0:c0 + cand_block]
            expected.append((layers, len(cs) * max(cs), len(rs) * max(rs)))
    assert products == expected


def test_tile_sizes_fill_the_budget_in_fp32_elements():
    """64 bytes hold 16 fp32 similarities (worked by hand): whole rows of 8 columns, two rows, one item;
    12 bytes hold 3 columns of one row. Fails if the budget is counted in anything but 4-byte floats."""
    from bertscore.scoring.matching import _tile_sizes

    assert _tile_sizes(3, 10, 8, 64) == (1, 2, 8)
    assert _tile_sizes(3, 10, 8, 12) == (1, 1, 3)
    assert _tile_sizes(3, 2, 8, 4 * 8 * 2 * 2) == (2, 2, 8)


def test_tiled_maxima_refuses_a_non_bool_mask_on_either_side():
    """A float mask (1.0 / 0.0 instead of True / False) is refused under its own name, candidate or
    reference: fails if one side's mask is not checked."""
    cand, ref = normalize(torch.randn(4, 3)), normalize(torch.randn(5, 3))
    for keywords, name in (({"cand_mask": torch.ones(4)}, "cand_mask"), ({"ref_mask": torch.ones(5)}, "ref_mask")):
        with pytest.raises(TypeError) as error:
            tiled_maxima(cand, ref, **keywords)
        assert str(error.value) == f"{name} must be a bool tensor (True = real token), got torch.float32"


def test_tiled_maxima_names_the_mask_that_does_not_fit():
    """A candidate mask of the reference's length is refused under its own name, with the shapes: fails
    if the message names the wrong argument or none."""
    with pytest.raises(ValueError) as error:
        tiled_maxima(torch.randn(6, 4), torch.randn(5, 4), torch.ones(5, dtype=torch.bool))
    assert str(error.value) == ("cand_mask has shape (5,), which does not fit embeddings with leading dims () "
                                "and length 6: expected [*P, 6] with P a prefix of ()")


def test_pad_sequences_takes_the_weights_as_one_concatenated_tensor():
    """Weights given as one [sum L] tensor (as score() holds them) are laid out text by text under the
    mask, 0 on padding: fails if only a list of per-text weights is accepted."""
    _, mask, weights = pad_sequences([torch.ones(3, 2), torch.ones(1, 2)], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert mask.tolist() == [[True, True, True], [True, False, False]]
    assert weights.tolist() == [[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]] and weights.dtype == torch.float32


def test_pad_sequences_off_the_cpu_pads_under_the_mask():
    """Texts on the meta device (a stand-in for an accelerator, where the embeddings are padded by one
    indexed copy under the mask): embeddings, mask and weights all land there, in the padded shapes.
    Fails if that route is not handed the mask."""
    texts = [torch.empty(2, 3, 4, device="meta"), torch.empty(2, 1, 4, device="meta")]
    embeddings, mask, weights = pad_sequences(texts, [torch.ones(3), torch.ones(1)])
    assert [t.device.type for t in (embeddings, mask, weights)] == ["meta"] * 3
    assert (tuple(embeddings.shape), tuple(mask.shape), tuple(weights.shape)) == ((2, 2, 3, 4), (2, 3), (2, 3))


def test_tiled_indices_are_minus_one_at_padded_references():
    """With a reference mask, each padded reference position has index -1 and maximum 0, whatever its
    (zero) embedding scores; real positions hold the first argmax of a plain loop. Fails if the padded
    reference indices are left as the tiles found them."""
    generator = torch.Generator().manual_seed(4)
    cand, ref = normalize(torch.randn(4, 3, generator=generator)), normalize(torch.randn(5, 3, generator=generator))
    ref[3:] = 0.0
    ref_mask = torch.tensor([True, True, True, False, False])
    best_c, idx_c, best_r, idx_r = tiled_maxima(cand, ref, None, ref_mask, max_bytes=8, with_indices=True)
    sim = [[sum(a * b for a, b in zip(c, r)) for r in ref.tolist()] for c in cand.tolist()]
    for j in range(3):
        column = [sim[i][j] for i in range(4)]
        assert idx_r[j].item() == column.index(max(column)) and best_r[j].item() == pytest.approx(max(column), abs=1e-6)
    assert idx_r[3:].tolist() == [-1, -1] and best_r[3:].tolist() == [0.0, 0.0]
    for i in range(4):
        assert idx_c[i].item() == sim[i][:3].index(max(sim[i][:3]))


def test_padded_idf_weights_through_the_dropin_give_the_official_numbers():
    """A caller of the drop-in's `greedy_cos_idf` may pad idf with ones (mbrs pads with eps): the padded
    weights count in each text's normaliser and their positions score 0, as in the official helper
    (`bert_score.utils.greedy_cos_idf`, the reference). Fails if a padded position scores its clamped
    -inf (-1) or 1 instead of 0, on the candidate side (lengths 3 and 5) or the reference side (5 and 3)."""
    bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")
    from bertscore.dropin import greedy_cos_idf

    generator = torch.Generator().manual_seed(7)
    hyp, ref = torch.rand(2, 5, 6, generator=generator) + 0.1, torch.rand(2, 5, 6, generator=generator) + 0.1
    hyp_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    ref_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    hyp_idf, ref_idf = torch.ones(2, 5), torch.ones(2, 5)  # padded with ones, not 0
    ours = torch.stack(greedy_cos_idf(ref, ref_mask, ref_idf, hyp, hyp_mask, hyp_idf))
    official = torch.stack(bert_score.utils.greedy_cos_idf(
        *(t.clone() for t in (ref, ref_mask, ref_idf, hyp, hyp_mask, hyp_idf))))
    # every similarity is positive (positive vectors), so the official padded 0 never wins a max
    assert (ours - official).abs().max() <= 1e-6
    # the padding counts: the length-3 text's precision is its 3 real maxima over 5, not over 3
    assert official[0, 0] < 0.62 and ours[0, 0] < 0.62


def test_the_tiled_path_stays_fp32_under_a_float64_default_dtype():
    """torch's default dtype set to float64 by the caller (a supported guest setting) changes nothing:
    `tiled_maxima` and `greedy_match_tiled` (taken when a pair's similarities exceed their tile budget)
    return the fp32 values they return under the float32 default. Fails if the running maxima start
    in the default dtype (they would come back float64)."""
    generator = torch.Generator().manual_seed(3)
    cand = normalize(torch.randn(2, 4, 8, generator=generator))
    ref = normalize(torch.randn(2, 6, 8, generator=generator))
    cand_mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    ref_mask = torch.tensor([[True] * 6, [True, True, False, False, False, False]])
    cand_w, ref_w = torch.rand(2, 4, generator=generator) * cand_mask, torch.rand(2, 6, generator=generator) * ref_mask

    def run():
        return (*tiled_maxima(cand, ref, cand_mask, ref_mask, max_bytes=64, with_indices=True),
                *greedy_match_tiled(cand, cand_mask, cand_w, ref, ref_mask, ref_w, max_bytes=64))

    expected = run()
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got = run()
    finally:
        torch.set_default_dtype(previous)
    assert [t.dtype for t in got] == [torch.float32, torch.long, torch.float32, torch.long] + [torch.float32] * 3
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_a_real_token_with_nothing_real_to_match_has_index_minus_one():
    """`tiled_maxima(with_indices=True)` gives -1 where a token has no match: padding, and a real token
    whose other side has no real token (pair 0: no real reference token; pair 1: no real candidate).
    Fails if the indices start at any other value, which then survives where no tile overwrites it."""
    cand, ref = normalize(torch.randn(2, 3, 4)), normalize(torch.randn(2, 5, 4))
    cand_mask = torch.tensor([[True, True, True], [False, False, False]])
    ref_mask = torch.tensor([[False] * 5, [True] * 5])
    _, cand_best, _, ref_best = tiled_maxima(cand, ref, cand_mask, ref_mask, max_bytes=32, with_indices=True)
    assert cand_best.tolist() == [[-1, -1, -1], [-1, -1, -1]]
    assert ref_best.tolist() == [[-1] * 5, [-1] * 5]


class _CudaCopyStandIn:
    """What `pinned_to_device` does to a host tensor bound for CUDA, without a GPU: `pin_memory()`
    and `.to(...)` are recorded, and `.to`'s arguments go through torch's own argument parser (on the
    CPU), which rejects what CUDA's copy would (e.g. `non_blocking=None`: TypeError)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor, self.calls = tensor, []

    def pin_memory(self) -> "_CudaCopyStandIn":
        self.calls.append("pin_memory")
        return self

    def to(self, device, *args, **kwargs) -> torch.Tensor:
        self.calls.append(("to", device, args, kwargs))
        return self.tensor.to(torch.device("cpu"), *args, **kwargs)


def test_the_copy_to_cuda_is_pinned_and_non_blocking():
    """To CUDA: pinned first, then one `.to(device, non_blocking=True)` that torch accepts; to the CPU
    a plain `.to(device)`. Fails if the CUDA copy is not pinned, not asynchronous, goes elsewhere, or
    passes torch a `non_blocking` it rejects."""
    from bertscore.scoring.matching import pinned_to_device

    cuda, host = torch.device("cuda", 0), torch.arange(4.0)
    stand_in = _CudaCopyStandIn(host)
    assert torch.equal(pinned_to_device(stand_in, cuda), host)
    assert stand_in.calls == ["pin_memory", ("to", cuda, (), {"non_blocking": True})]
    assert stand_in.calls[1][3]["non_blocking"] is True
    cpu = torch.device("cpu")
    assert pinned_to_device(host, cpu) is host  # already there: no copy
