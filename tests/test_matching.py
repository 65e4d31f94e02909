"""Pure greedy-matching math on small tensors."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.matching import greedy_match, harmonic_mean, normalize, pad_sequences


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
    cand, ref = torch.randn(4, 8), torch.randn(5, 8)
    p1, r1, _ = _pair(cand, ref, torch.full((4,), 2.0), torch.full((5,), 3.0))
    p2, r2, _ = _pair(cand, ref)
    assert torch.allclose(p1, p2) and torch.allclose(r1, r2)


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
