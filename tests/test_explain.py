"""explain_pair reproduces scorer.score exactly and its matches are the argmaxes."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bertscore import EMBEDDED_MODEL_NAME  # noqa: E402
from bertscore.explain import explain_pair  # noqa: E402
from bertscore.pool import ScorerPool  # noqa: E402

POOL = ScorerPool(max_models=1)

CASES = [
    ("the cat sat on the mat", ["a cat was sitting on the mat"]),
    ("The quick brown fox jumps over the lazy dog.", ["A fast brown fox leaps over a lazy dog.", "Dogs bark.", "the fox"]),
    ("Paris is the capital of France", ["Berlin is in Germany", "France's capital city is Paris"]),
    ("hello", ["", "hello there"]),
]


def _plain_scores(similarity: list[list[float]], cand_w: list[float], ref_w: list[float]) -> tuple[float, float, float]:
    """Greedy matching written out as loops over the shown matrix and weights."""
    rows = [max(row) for row in similarity]
    columns = [max(row[j] for row in similarity) for j in range(len(similarity[0]))]
    p = sum(w * x for w, x in zip(cand_w, rows)) / sum(cand_w) if sum(cand_w) else 0.0
    r = sum(w * x for w, x in zip(ref_w, columns)) / sum(ref_w) if sum(ref_w) else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("candidate,references", CASES)
def test_explain_equals_score(idf: bool, candidate: str, references: list[str]) -> None:
    scorer = POOL.get(model_type=EMBEDDED_MODEL_NAME, idf=idf)
    notes: list[str] = []
    p, r, f = scorer.score([candidate], [references], notes=notes)
    explanation = explain_pair(scorer, candidate, references)
    assert explanation.scores == pytest.approx((p.item(), r.item(), f.item()), abs=1e-6)
    assert explanation.hashcode == scorer.hash and explanation.idf is idf
    # Independently: every reference's numbers from the shown matrix and weights, then the max.
    expected = []
    for ref in explanation.references:
        if ref.empty:
            expected.append((0.0, 0.0, 0.0))
            continue
        expected.append(_plain_scores(ref.similarity.tolist(), explanation.weights, ref.weights))
        assert (ref.precision, ref.recall, ref.f1) == pytest.approx(expected[-1], abs=1e-6)
    best = tuple(max(values) for values in zip(*expected))
    assert (explanation.precision, explanation.recall, explanation.f1) == pytest.approx(best, abs=1e-6)
    if idf and len(set(references)) == 1:  # the degenerate case: every reference token weighs 0
        assert explanation.recall == 0.0 and any("idf over 1 distinct reference" in n for n in explanation.notes)
    else:
        assert explanation.f1 > 0.1
    assert [n for n in notes if "multi-reference" not in n] == [n for n in explanation.notes if "multi-reference" not in n]
    f1s = [e.f1 for e in explanation.references]
    assert explanation.winner == f1s.index(max(f1s))


def test_matches_are_argmaxes_and_weights() -> None:
    scorer = POOL.get(model_type=EMBEDDED_MODEL_NAME, idf=True)
    refs = ["a cat was sitting on the mat", "the dog sat on a log"]
    explanation = explain_pair(scorer, "the cat sat on the mat", refs)
    assert explanation.tokens[0] == "[CLS]" and explanation.tokens[-1] == "[SEP]"
    assert explanation.weights[0] == 0.0 and explanation.weights[-1] == 0.0
    weights = scorer.idf_weights_for(refs)
    ids = scorer.model.tokenize(["the cat sat on the mat"])[0]
    assert explanation.weights == pytest.approx(weights(ids).tolist())
    for ref in explanation.references:
        sim = ref.similarity
        assert sim.shape == (len(explanation.tokens), len(ref.tokens))
        assert ref.cand_best == sim.argmax(dim=1).tolist()
        assert ref.ref_best == sim.argmax(dim=0).tolist()
        assert ref.cand_best_sim == pytest.approx(sim.max(dim=1).values.tolist())
        assert torch.all(sim <= 1.0 + 1e-5)
        # Precision recomputed from the shown pieces.
        w = torch.tensor(explanation.weights)
        p = float((torch.tensor(ref.cand_best_sim) * w).sum() / w.sum())
        assert p == pytest.approx(ref.precision, abs=1e-6)


def test_single_string_reference_and_errors() -> None:
    scorer = POOL.get(model_type=EMBEDDED_MODEL_NAME)
    explanation = explain_pair(scorer, "a b c", "a b d")
    assert len(explanation.references) == 1 and explanation.winner == 0
    with pytest.raises(ValueError):
        explain_pair(scorer, "a", [])
    with pytest.raises(TypeError):
        explain_pair(scorer, "a", [3])  # type: ignore[list-item]


def test_rescaled_numbers_equal_score(tmp_path) -> None:
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{k}1,0.{k}2,0.{k}3\n" for k in range(7)))
    scorer = POOL.get(model_type=EMBEDDED_MODEL_NAME, idf=True, rescale_with_baseline=True, baseline_path=str(baseline))
    refs = ["a cat was sitting on the mat", "the dog sat on a log"]
    p, r, f = scorer.score(["the cat sat on the mat"], [refs])
    explanation = explain_pair(scorer, "the cat sat on the mat", refs)
    assert explanation.rescaled == pytest.approx((p.item(), r.item(), f.item()), abs=1e-6)
    assert explanation.scores == explanation.rescaled
    assert explanation.best.rescaled is not None
    assert explanation.f1 != pytest.approx(f.item())  # raw kept next to the rescaled numbers
