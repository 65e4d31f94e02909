"""Bad input: errors name the index; empty text scores 0 with one warning."""

import pytest
import torch

from bertscore.inputs import normalize_inputs


def test_single_and_multi_references():
    cands, groups = normalize_inputs(["a", "b"], ["x", ["y", "z"]])
    assert cands == ["a", "b"] and groups == [["x"], ["y", "z"]]


@pytest.mark.parametrize(
    "cands, refs, error, message",
    [
        (["a", "b"], ["x"], ValueError, "2 candidates but 1 references"),
        ([], [], ValueError, "candidates is empty"),
        (["a", None], ["x", "y"], TypeError, r"candidates\[1\] is None"),
        (["a", 3], ["x", "y"], TypeError, r"candidates\[1\] is an int"),
        (["a", "b"], ["x", None], TypeError, r"references\[1\] is None"),
        (["a", "b"], ["x", ["y", 5]], TypeError, r"references\[1\]\[1\] is an int"),
        (["a", "b"], ["x", []], ValueError, r"references\[1\] is an empty list"),
        ("abc", ["x"], TypeError, "candidates must be a list"),
        (["a"], "x", TypeError, "references must be a list"),
    ],
)
def test_errors_name_the_index(cands, refs, error, message):
    with pytest.raises(error, match=message):
        normalize_inputs(cands, refs)


def test_scorer_rejects_bad_input(minilm_scorer):
    with pytest.raises(ValueError, match="3 candidates but 2"):
        minilm_scorer.score(["a", "b", "c"], ["x", "y"])
    with pytest.raises(TypeError, match=r"candidates\[0\]"):
        minilm_scorer.score([b"bytes"], ["x"])


def test_empty_and_whitespace_texts_score_zero_with_one_warning(minilm_scorer):
    with pytest.warns(UserWarning, match=r"candidates\[1\], candidates\[2\], references\[3\]") as record:
        p, r, f = minilm_scorer.score(["a cat", "", "   ", "a dog", "a bird"], ["a cat", "x", "y", " \t", "a bird"])
    assert len(record) == 1
    assert p.tolist()[1:4] == [0.0, 0.0, 0.0] and f.tolist()[1:4] == [0.0, 0.0, 0.0]
    assert f[0].item() == pytest.approx(1.0, abs=1e-6) and f[4].item() == pytest.approx(1.0, abs=1e-6)


def test_no_output_is_ever_nan(minilm_scorer):
    from bertscore import BERTScorer

    scorer = BERTScorer(model_type=minilm_scorer.model_type, num_layers=4, idf=True, loaded_model=minilm_scorer.model)
    # "." appears in every reference: idf 0, so the candidate "." has all weights 0.
    with pytest.warns(UserWarning):
        p, r, f = scorer.score([".", "", "the end ."], ["a b .", "c d .", "the end ."])
    for column in (p, r, f):
        assert torch.isfinite(column).all()
    assert p[0].item() == 0.0 and f[0].item() == 0.0
