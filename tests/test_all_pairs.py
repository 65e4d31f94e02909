"""All pairs: `score_matrix` equals the flattened `score()` pair by pair, and MBR picks what an
argmax over the flattened scores picks (issue 48). The flattened call is the independent route:
`score()` matches each pair on its own, and equals the official package (tests/test_parity.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.inputs import InputError
from bertscore.scoring.matching import all_pairs_match, greedy_match, normalize, pad_sequences
from bertscore.mbr import expected_utilities, group_rewards, mbr_select


def flattened(scorer, cands, refs, **options):
    """P, R, F [H, R] from one `score()` call over every (i, j) pair."""
    pairs = [(c, r) for c in cands for r in refs]
    out = scorer.score([c for c, _ in pairs], [r for _, r in pairs], notes=[], **options)
    return [t.reshape(*t.shape[:-1], len(cands), len(refs)) for t in out]


def assert_close(matrix, expected) -> None:
    for got, want in zip(matrix, expected):
        assert got.shape == want.shape
        assert not torch.isnan(got).any()
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


@pytest.fixture(scope="module")
def texts(wmt17_de_en):
    cands, refs = wmt17_de_en
    # Held-out text (the last pairs of the fixture), an empty text, a duplicate and stray spaces.
    return cands[-9:] + ["", cands[-1] + "  "], refs[-7:] + [" ", refs[-7]]


def test_plain_equals_flattened_score(minilm_scorer, texts):
    cands, refs = texts
    matrix = minilm_scorer.score_matrix(cands, refs, notes=[])
    assert matrix[0].shape == (len(cands), len(refs))
    assert_close(matrix, flattened(minilm_scorer, cands, refs))
    assert (matrix[2][-2] == 0).all() and (matrix[2][:, -2] == 0).all()  # the empty texts score 0


def test_idf_from_texts_and_rescaled_equal_flattened_score(minilm_scorer, texts, wmt17_de_en):
    cands, refs = texts
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=wmt17_de_en[1][:50],
                        rescale_with_baseline=True, lang="en")
    assert_close(scorer.score_matrix(cands, refs, notes=[]), flattened(scorer, cands, refs))


def test_idf_true_is_idf_over_the_references_given_each_once(minilm_scorer, texts):
    cands, refs = texts
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=True)
    (matrix, digest) = scorer.score_matrix(cands, refs, notes=[], return_hash=True)
    weights = scorer.idf_weights_for(refs)
    assert_close(matrix, flattened(scorer, cands, refs, weights=weights))
    assert digest == scorer.hash_for(weights)
    # The flattened call's own idf counts each reference once per candidate: other weights.
    assert not torch.allclose(matrix[2], flattened(scorer, cands, refs)[2], atol=1e-4)


def test_all_layers_is_layers_by_candidates_by_references(texts):
    cands, refs = texts[0][:4], texts[1][:3]
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, all_layers=True, device="cpu", cache_bytes=0)
    matrix = scorer.score_matrix(cands, refs, notes=[])
    assert matrix[0].shape == (scorer.pipeline.settings.score_layers, 4, 3)
    assert_close(matrix, flattened(scorer, cands, refs))


def test_window_mode_scores_long_texts_whole(minilm_scorer, texts):
    cands, refs = texts[0][:3], texts[1][:2]
    long_text = " ".join(texts[1][:12] * 3)
    scorer = BERTScorer(loaded_model=minilm_scorer.model, long_texts="window")
    assert len(scorer.pipeline.document_ids([long_text])[0]) > scorer.pipeline.model.max_length  # windowed
    matrix = scorer.score_matrix(cands + [long_text], refs + [long_text], notes=[])
    assert_close(matrix, flattened(scorer, cands + [long_text], refs + [long_text]))
    assert matrix[2][-1, -1] == pytest.approx(1.0)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_order_and_batch_independent(minilm_scorer, texts, data):
    cands, refs = texts
    matrix = minilm_scorer.score_matrix(cands, refs, notes=[])
    cand_order = data.draw(st.permutations(range(len(cands))))
    ref_order = data.draw(st.permutations(range(len(refs))))
    batch_size = data.draw(st.sampled_from([1, 3, None]))
    shuffled = minilm_scorer.score_matrix([cands[i] for i in cand_order], [refs[j] for j in ref_order],
                                          batch_size=batch_size, notes=[])
    assert_close(shuffled, [m[cand_order][:, ref_order] for m in matrix])


@settings(max_examples=15, deadline=None)
@given(
    cand_lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    ref_lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    layers=st.integers(1, 2),
    max_bytes=st.sampled_from([1, 200, 1 << 20]),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_greedy_match_pair_by_pair(cand_lengths, ref_lengths, layers, max_bytes, seed):
    generator = torch.Generator().manual_seed(seed)
    # Positive cosines, as contextual embeddings give (with P near -R, F = 2PR / (P + R) amplifies rounding).
    cands = [normalize(torch.rand(layers, n, 8, generator=generator)) for n in cand_lengths]
    refs = [normalize(torch.rand(layers, n, 8, generator=generator)) for n in ref_lengths]
    cand_w = [torch.rand(n, generator=generator) for n in cand_lengths]
    ref_w = [torch.rand(n, generator=generator) for n in ref_lengths]
    got = all_pairs_match(pad_sequences(cands, cand_w), pad_sequences(refs, ref_w), max_bytes=max_bytes)
    assert got.shape == (len(cands), len(refs), layers, 3)
    for i, (c, cw) in enumerate(zip(cands, cand_w)):
        for j, (r, rw) in enumerate(zip(refs, ref_w)):  # one pair alone: no padding at all
            p, rr, f = greedy_match(c[None], torch.ones(1, c.shape[1], dtype=torch.bool), cw[None],
                                    r[None], torch.ones(1, r.shape[1], dtype=torch.bool), rw[None])
            torch.testing.assert_close(got[i, j], torch.stack((p[0], rr[0], f[0]), dim=-1), atol=1e-6, rtol=0)


@pytest.mark.parametrize(("cands", "refs", "message"), [
    ([], ["a"], "candidates is empty"),
    (["a"], [], "references is empty"),
    ("a", ["a"], "wrap a single text"),
    (["a", 3], ["a"], r"candidates\[1\] is an int"),
    (["a"], ["a", ["b", "c"]], r"references\[1\] is a list"),
    (["a"], ["a", None], r"references\[1\] is None"),
])
def test_bad_input_is_a_clear_error(minilm_scorer, cands, refs, message):
    with pytest.raises(InputError, match=message):
        minilm_scorer.score_matrix(cands, refs)


def test_mbr_picks_the_argmax_of_the_flattened_scores(minilm_scorer, texts):
    hypotheses = texts[0][:6] + [texts[0][0]]  # a repeated sample counts as evidence for itself
    f1 = flattened(minilm_scorer, hypotheses, hypotheses)[2]
    expected = [sum(float(f1[i, j]) for j in range(7) if j != i) / 6 for i in range(7)]  # self-pairs left out
    choice = mbr_select(hypotheses, scorer=minilm_scorer, notes=[])
    assert choice.index == max(range(7), key=expected.__getitem__)
    torch.testing.assert_close(choice.utilities, torch.tensor(expected), atol=1e-6, rtol=0)
    pseudo = texts[1][:4]
    with_refs = mbr_select(hypotheses, pseudo, scorer=minilm_scorer, column="R", notes=[])
    torch.testing.assert_close(with_refs.utilities, flattened(minilm_scorer, hypotheses, pseudo)[1].mean(1),
                               atol=1e-6, rtol=0)
    assert mbr_select(["alone"], scorer=minilm_scorer).utilities.tolist() == pytest.approx([1.0])
    with pytest.raises(InputError, match="column='X'"):
        expected_utilities(minilm_scorer, hypotheses, column="X")


def test_group_rewards_score_each_group_against_itself(minilm_scorer, texts):
    completions = texts[0][:6]
    chats = [[{"role": "user", "content": "q"}, {"role": "assistant", "content": c}] for c in completions[3:]]
    rewards = group_rewards(completions[:3] + chats, 3, scorer=minilm_scorer, prompts=["p0"] * 3 + ["p1"] * 3)
    expected = []
    for group in (completions[:3], completions[3:]):
        f1 = flattened(minilm_scorer, group, group)[2]
        expected += [(float(f1[i].sum()) - float(f1[i, i])) / 2 for i in range(3)]
    assert rewards == pytest.approx(expected, abs=1e-6)
    with pytest.raises(InputError, match="not a whole number of groups of 4"):
        group_rewards(completions, 4, scorer=minilm_scorer)


def test_texts_padded_in_groups_give_the_same_numbers(minilm_scorer, texts, monkeypatch):
    """Each side padded in groups (one text each here), as a long text among short ones is."""
    from bertscore.scoring import all_pairs

    cands, refs = texts[0][-5:], texts[1][-4:]  # the empty and the repeated texts among them
    whole = minilm_scorer.score_matrix(cands, refs, notes=[])
    monkeypatch.setattr(all_pairs, "PADDED_BYTES", 1)
    assert_close(minilm_scorer.score_matrix(cands, refs, notes=[]), whole)
