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


@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("candidate,references", CASES)
def test_explain_equals_score(idf: bool, candidate: str, references: list[str]) -> None:
    scorer = POOL.get(model_type=EMBEDDED_MODEL_NAME, idf=idf)
    with pytest.warns(UserWarning) if any(not r.strip() for r in references) else _nothing():
        p, r, f = scorer.score([candidate], [references])
    explanation = explain_pair(scorer, candidate, references)
    assert explanation.scores == pytest.approx((p.item(), r.item(), f.item()), abs=1e-6)
    assert explanation.hashcode == scorer.hash
    assert explanation.idf is idf
    # Per reference: the same numbers as scoring that single pair (idf from all the references).
    if len(references) > 1 and not idf:
        for ref_expl, ref in zip(explanation.references, references):
            with pytest.warns(UserWarning) if not ref.strip() else _nothing():
                single = scorer.score([candidate], [ref])
            assert (ref_expl.precision, ref_expl.recall, ref_expl.f1) == pytest.approx(
                tuple(x.item() for x in single), abs=1e-6
            )
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


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> bool:
        return False


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
