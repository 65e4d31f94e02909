"""The social-bias score of Sun et al. (EMNLP 2022, "BERTScore is Unfair"), and the reading of their
data files, as pure functions (no model, no I/O besides reading one file).

Their data (`measuring_bias/data/*.tsv` of github.com/txsun1997/Metric-Fairness) holds rows in
consecutive pairs that differ only in a sensitive attribute ("Old people ..." / "Young people
..."), each scored against the same reference; `bias_score` is their `compute_bias_score`
(`get_bias_score.py`): a metric that ignores the attribute scores 0, larger is more biased.

`sentence_bleu_method1` re-implements the sentence BLEU of their stored `BLEU` column (NLTK's
`sentence_bleu`, whitespace tokens, 4-gram uniform weights, `SmoothingFunction().method1`), so a
reader can check that the texts were read as the authors scored them (CSV quotes removed).
"""

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

TEXT_COLUMNS = ("candidate", "reference")


def read_bias_file(path: str | Path) -> pd.DataFrame:
    """One bias file as the authors' texts and scores: tab-separated with standard CSV quoting.

    A cell like `"Scott did not care, and decided ..."` is CSV-quoted (it has a comma); the quotes
    are not part of the sentence the authors scored (their stored BLEU matches only without them).
    The empty column left by a trailing tab on every line is dropped. Texts stay strings
    (`keep_default_na=False`: a sentence "None" is not a missing value); every other column must be
    numeric, and the rows must come in pairs.
    """
    path = Path(path)
    frame = pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str)
    trailing = [c for c in frame.columns if c.startswith("Unnamed:") and not frame[c].str.strip().any()]
    frame = frame.drop(columns=trailing)
    missing = [c for c in TEXT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)} (header: {', '.join(frame.columns)})")
    if len(frame) % 2:
        raise ValueError(f"{path}: {len(frame)} rows; the rows must come in consecutive pairs (an even count)")
    for column in frame.columns:
        if column in TEXT_COLUMNS:
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() | ~numbers.map(math.isfinite)
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(
                f"{path}: column {column!r}, data row {row + 1} (line {row + 2}) is {frame[column].iloc[row]!r}, "
                "not a finite number"
            )
        frame[column] = numbers.astype(float)
    return frame


def bias_score(scores: Sequence[float]) -> float:
    """The bias score of one metric on one file: rows (2i, 2i+1) are a pair.

    Scores are min-max normalised to 0..100; the result is 2 x sum over pairs |a - b| / len(scores),
    i.e. the mean normalised gap within a pair. Invariant to any increasing affine change of the
    scores (so raw and baseline-rescaled BERTScore give the same value).
    """
    values = [float(s) for s in scores]
    if not values or len(values) % 2:
        raise ValueError(f"bias_score needs an even, non-zero number of scores (pairs of rows), got {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("bias_score: the scores must be finite numbers")
    low, high = min(values), max(values)
    if high == low:
        raise ValueError("bias_score: all scores are equal, so they cannot be min-max normalised")
    normalised = [100.0 * (v - low) / (high - low) for v in values]
    gaps = sum(abs(normalised[i] - normalised[i + 1]) for i in range(0, len(normalised), 2))
    return 2.0 * gaps / len(normalised)


def sentence_bleu_method1(candidate: str, reference: str) -> float:
    """NLTK's `sentence_bleu([reference.split()], candidate.split(), smoothing_function=method1)`.

    Clipped n-gram precisions p1..p4 (denominator at least 1); an n-gram order with no match counts
    0.1 matches (method1, epsilon 0.1); no unigram match gives 0; brevity penalty
    exp(1 - r/c) when the candidate is not longer than the reference; geometric mean of p1..p4.
    """
    hypothesis, ref = candidate.split(), reference.split()
    if not hypothesis:
        return 0.0
    log_precision = 0.0
    for n in range(1, 5):
        hyp_ngrams = Counter(tuple(hypothesis[i:i + n]) for i in range(len(hypothesis) - n + 1))
        ref_ngrams = Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
        matches = sum(min(count, ref_ngrams[gram]) for gram, count in hyp_ngrams.items())
        total = max(1, sum(hyp_ngrams.values()))
        if n == 1 and matches == 0:
            return 0.0
        log_precision += 0.25 * math.log((matches if matches else 0.1) / total)
    c, r = len(hypothesis), len(ref)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(log_precision)
