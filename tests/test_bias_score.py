"""The bias score of Sun et al. (2022) and the reading of their files (benchmarks/bias_score.py),
on small hand-made files whose values are worked out by hand in the comments."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

SPEC = importlib.util.spec_from_file_location(
    "bias_score", Path(__file__).resolve().parents[1] / "benchmarks" / "bias_score.py"
)
bias_module = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bias_module)
bias_score, read_bias_file, sentence_bleu_method1 = (
    bias_module.bias_score, bias_module.read_bias_file, bias_module.sentence_bleu_method1
)

# Two pairs, as their files are laid out: candidate, reference, score columns, and a trailing tab on
# every line (an empty last column). Row 3 has CSV-quoted cells (a comma inside the sentence); row 4
# has a quote inside an unquoted cell, which is text.
HAND_MADE = (
    "candidate\treference\tM\tN\t\n"
    "Old people get fat.\tpeople get fat.\t0.2\t5\t\n"
    "Young people get fat.\tpeople get fat.\t0.6\t1\t\n"
    '"Scott, the old man, left."\t"Scott, the man, left."\t1.0\t2\t\n'
    'She said "young" twice.\tShe said "person" twice.\t0.8\t3\t\n'
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hand.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_hand_made_file_read_as_the_authors_did(tmp_path):
    frame = read_bias_file(write(tmp_path, HAND_MADE))
    assert list(frame.columns) == ["candidate", "reference", "M", "N"]  # the empty trailing column dropped
    assert len(frame) == 4
    # CSV quotes removed (the comma stayed inside the cell, so the columns did not shift) ...
    assert frame.candidate[2] == "Scott, the old man, left."
    assert frame.reference[2] == "Scott, the man, left."
    assert frame.M[2] == 1.0 and frame.N[2] == 2.0
    # ... and a quote inside an unquoted cell kept as text.
    assert frame.candidate[3] == 'She said "young" twice.'
    assert frame.M.tolist() == [0.2, 0.6, 1.0, 0.8]


def test_bias_score_by_hand(tmp_path):
    frame = read_bias_file(write(tmp_path, HAND_MADE))
    # M: min 0.2, max 1.0 -> normalised 0, 50, 100, 75; pair gaps |0 - 50| = 50, |100 - 75| = 25;
    # 2 x (50 + 25) / 4 rows = 37.5.
    assert bias_score(frame.M.tolist()) == pytest.approx(37.5, abs=1e-12)
    # N: 5, 1, 2, 3 -> min 1, max 5 -> 100, 0, 25, 50; gaps 100 and 25; 2 x 125 / 4 = 62.5.
    assert bias_score(frame.N.tolist()) == pytest.approx(62.5, abs=1e-12)
    # A metric blind to the attribute (equal scores within each pair) scores 0.
    assert bias_score([0.3, 0.3, 0.9, 0.9]) == 0.0


def test_bias_score_refuses_what_it_cannot_score():
    with pytest.raises(ValueError, match="even"):
        bias_score([0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="all scores are equal"):
        bias_score([0.5, 0.5])
    with pytest.raises(ValueError, match="finite"):
        bias_score([0.5, math.nan])


def test_bad_files_are_errors_naming_the_place(tmp_path):
    with pytest.raises(ValueError, match="rows must come in consecutive pairs"):
        read_bias_file(write(tmp_path, "candidate\treference\tM\na\tb\t1\n"))
    with pytest.raises(ValueError, match=r"column 'M', data row 2 \(line 3\)"):
        read_bias_file(write(tmp_path, "candidate\treference\tM\na\tb\t1\nc\td\toops\n"))
    with pytest.raises(ValueError, match="no column reference"):
        read_bias_file(write(tmp_path, "candidate\tref\tM\na\tb\t1\nc\td\t2\n"))


def test_sentence_bleu_method1_by_hand():
    # Identical 4-token sentences: every precision 1, no brevity penalty.
    assert sentence_bleu_method1("a b c d", "a b c d") == pytest.approx(1.0)
    # "a b c d" vs "a b c e": p1 = 3/4, p2 = 2/3, p3 = 1/2, p4 = 0/1 -> method1: 0.1/1; c = r = 4, so
    # brevity 1; (0.75 * 2/3 * 0.5 * 0.1) ** 0.25 = 0.025 ** 0.25.
    assert sentence_bleu_method1("a b c d", "a b c e") == pytest.approx(0.025 ** 0.25, rel=1e-12)
    # Shorter candidate "a b" vs "a b c d": p1 = p2 = 1, p3 = p4 = 0.1/1 (no trigram: denominator 1);
    # brevity exp(1 - 4/2) = e^-1; e^-1 * (0.1 * 0.1) ** 0.25.
    assert sentence_bleu_method1("a b", "a b c d") == pytest.approx(math.exp(-1) * 0.01 ** 0.25, rel=1e-12)
    assert sentence_bleu_method1("x y", "a b") == 0.0  # no unigram match
    assert sentence_bleu_method1("", "a b") == 0.0


scores = st.lists(st.floats(-10, 10, allow_nan=False), min_size=2, max_size=20).filter(
    lambda s: len(s) % 2 == 0 and max(s) - min(s) > 1e-3
)


@given(scores, st.floats(0.01, 100), st.floats(-50, 50))
def test_bias_score_ignores_increasing_affine_changes(values, scale, shift):
    # Min-max normalisation: rescaling a metric (as BERTScore's baseline does) cannot change its bias.
    assert bias_score([scale * v + shift for v in values]) == pytest.approx(bias_score(values), abs=1e-6)


@given(scores)
def test_bias_score_is_the_mean_gap_of_a_plain_loop(values):
    low, high = min(values), max(values)
    gaps = [abs(values[i] - values[i + 1]) * 100 / (high - low) for i in range(0, len(values), 2)]
    assert bias_score(values) == pytest.approx(sum(gaps) / len(gaps), abs=1e-9)
    # Swapping the two rows of a pair changes nothing; the score lies in [0, 100].
    swapped = [values[i ^ 1] for i in range(len(values))]
    assert bias_score(swapped) == pytest.approx(bias_score(values), abs=1e-9)
    assert 0.0 <= bias_score(values) <= 100.0 + 1e-9
