"""bertscore.stats against independent routes: scipy.stats.bootstrap / permutation_test,
sacrebleu's significance formulas (a plain loop here, and sacrebleu's own functions), exact
enumeration with fractions, and null simulations for calibration.

Real scores: tests/data/wmt17_de-en_f1.tsv (400 WMT17 de-en segments, four systems, F1 of the
embedded MiniLM; tests/data/make_wmt17_f1.py writes it), so nothing here needs ../shared.
"""

from __future__ import annotations

import csv
import itertools
import logging
import math
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore import resampling, stats

FIXTURE = Path(__file__).with_name("data") / "wmt17_de-en_f1.tsv"
# Many tests here use few resamples or segments on purpose (speed, exact enumeration); the
# notes that say so are tested below (pytest.warns records whatever these filters say).
pytestmark = [pytest.mark.filterwarnings(r"ignore:only \d+ resamples?\b:UserWarning"),
              pytest.mark.filterwarnings(r"ignore:only \d+ segments\b:UserWarning")]


def read_fixture() -> dict[str, np.ndarray]:
    with FIXTURE.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    systems = [name for name in rows[0] if name != "sid"]
    return {name: np.array([float(row[name]) for row in rows]) for name in systems}


WMT = read_fixture()
ONLINE_B, KIT, UEDIN, ONLINE_F = (WMT[name] for name in ("online-B.0", "KIT.4951", "uedin-nmt.4723", "online-F.0"))
# Pairs with p-values spread from "clearly different" to "no evidence" (see the values in the tests).
PAIRS = [(ONLINE_B, KIT), (ONLINE_B[:100], UEDIN[:100]), (KIT, UEDIN), (ONLINE_F[:60], KIT[:60])]


# ----- sacrebleu's formulas for a mean-of-segments metric, written plainly --------------------------
def sacrebleu_paired_bs_p(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """sacrebleu.significance._paired_bs_test, one resample at a time."""
    idxs = np.random.default_rng(seed).choice(len(a), size=(n_resamples, len(a)), replace=True)
    observed = abs(np.mean(a) - np.mean(b))
    sample_diffs = [abs(np.mean(b[row]) - np.mean(a[row])) for row in idxs]
    centre = np.mean(sample_diffs)
    count = sum(1 for diff in sample_diffs if diff - centre > observed)
    return (count + 1) / (n_resamples + 1)


def sacrebleu_paired_ar_p(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int) -> float:
    """sacrebleu.significance._paired_ar_test, one randomization at a time."""
    pos_sel = np.random.default_rng(seed).integers(2, size=(n_resamples, len(a)), dtype=bool)
    observed = abs(np.mean(a) - np.mean(b))
    count = 0
    for keep in pos_sel:
        shuffled_a = np.where(keep, a, b).mean()
        shuffled_b = np.where(keep, b, a).mean()
        count += abs(shuffled_a - shuffled_b) > observed
    return (count + 1) / (n_resamples + 1)


@pytest.mark.parametrize("pair", range(len(PAIRS)))
@pytest.mark.parametrize("seed", [0, 12345])
def test_paired_p_values_equal_sacrebleu_formulas(pair: int, seed: int) -> None:
    a, b = PAIRS[pair]
    assert stats.paired_bootstrap(a, b, 1000, seed=seed).p_value == sacrebleu_paired_bs_p(a, b, 1000, seed)
    assert stats.paired_permutation(a, b, 4000, seed=seed).p_value == sacrebleu_paired_ar_p(a, b, 4000, seed)


def test_p_values_cover_the_range() -> None:
    """The pairs above are not all trivial: some significant, some not (else equality proves little)."""
    p_values = [stats.paired_permutation(a, b, 4000).p_value for a, b in PAIRS]
    assert min(p_values) < 0.01 and max(p_values) > 0.3


class MeanOfSegments:
    """A sacrebleu-style metric whose corpus score is the mean of per-segment scores.

    Its "hypotheses" are the scores themselves; sufficient statistics are (score, 1) per segment.
    """

    def _extract_corpus_statistics(self, hypotheses, references):
        return [[float(h), 1.0] for h in hypotheses]

    def _aggregate_and_compute(self, statistics):
        total, count = np.sum(np.asarray(statistics, dtype=float), axis=0)
        return SimpleNamespace(score=total / count)

    def _compute_score_from_stats(self, sums):
        return SimpleNamespace(score=sums[0] / sums[1])


@pytest.mark.parametrize("pair", [0, 1, 2])
def test_paired_p_values_equal_sacrebleu_itself(pair: int) -> None:
    """sacrebleu's own private test functions, fed per-segment scores through a mean metric."""
    significance = pytest.importorskip("sacrebleu.significance")
    a, b = PAIRS[pair]
    metric = MeanOfSegments()
    baseline = {"m": (metric._extract_corpus_statistics(a, None), significance.Result(float(np.mean(a))))}
    seed = 12345
    _, bs = significance._paired_bs_test(baseline, "b", list(b), None, {"m": metric}, n_samples=1000, seed=seed)
    _, ar = significance._paired_ar_test(baseline, "b", list(b), None, {"m": metric}, n_samples=2000, seed=seed)
    assert stats.paired_bootstrap(a, b, 1000, seed=seed).p_value == bs["m"].p_value
    assert stats.paired_permutation(a, b, 2000, seed=seed).p_value == ar["m"].p_value


# ----- random streams in blocks ---------------------------------------------------------------------
@pytest.mark.parametrize("budget", [1, 50, 333, 1 << 20])
@pytest.mark.parametrize("n", [7, 100])
def test_blocks_reproduce_the_one_shot_draws(monkeypatch, budget: int, n: int) -> None:
    """Fails when drawing in blocks (a memory budget) changes the draws from the one call that
    resampling.py's docstrings name (a block boundary that splits numpy's buffered bits, a reseed
    per block): results would then depend on the budget. The one call is numpy's public API."""
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", budget)
    indices = np.concatenate(list(resampling.index_blocks(n, 203, seed=5)))
    assert np.array_equal(indices, np.random.default_rng(5).choice(n, size=(203, n)))
    selectors = list(resampling.selector_blocks(n, 203, seed=5))
    assert np.array_equal(np.concatenate(selectors), np.random.default_rng(5).integers(2, size=(203, n), dtype=bool))
    if budget < n * 64:
        assert len(selectors) > 1  # several blocks were really drawn


def test_results_do_not_depend_on_the_block_size(monkeypatch) -> None:
    a, b = ONLINE_B, KIT
    before = (stats.bootstrap_ci(a, 300), stats.paired_bootstrap(a, b, 300), stats.paired_permutation(a, b, 300))
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 1000)
    after = (stats.bootstrap_ci(a, 300), stats.paired_bootstrap(a, b, 300), stats.paired_permutation(a, b, 300))
    assert before == after


# ----- scipy ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize("seed", [0, 7])
def test_bootstrap_ci_is_the_percentile_interval_of_its_draws(confidence: float, seed: int) -> None:
    """A plain loop over the draws `bootstrap_ci` documents (rows of default_rng(seed).choice(n, (B, n))):
    their means, quantiles with linear interpolation and standard deviation (ddof=1), as
    scipy.stats.bootstrap(method="percentile") defines them (compared with scipy itself on its own
    draws below). Fails on a wrong quantile, level, ddof, or other draws. Different summation orders:
    a relative tolerance of 1e-12, not bit equality."""
    scores = ONLINE_B
    ours = stats.bootstrap_ci(scores, 2000, confidence, seed=seed)
    draws = np.random.default_rng(seed).choice(len(scores), size=(2000, len(scores)))
    means = np.array([sum(scores[row]) / len(row) for row in draws])
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    assert np.allclose(resampling.resampled_means(scores[None], 2000, seed)[0], means, rtol=1e-12, atol=0)
    assert ours.low == pytest.approx(low, rel=1e-12, abs=0) and ours.high == pytest.approx(high, rel=1e-12, abs=0)
    assert ours.stderr == pytest.approx(np.std(means, ddof=1), rel=1e-9, abs=0)
    assert ours.mean == pytest.approx(sum(scores) / len(scores), rel=1e-12, abs=0)


@pytest.mark.parametrize("system", ["online-B.0", "online-F.0"])
def test_bootstrap_ci_agrees_with_scipy_on_independent_draws(system: str) -> None:
    scores = WMT[system]
    ours = stats.bootstrap_ci(scores, 20000, 0.95, seed=0)
    theirs = scipy.stats.bootstrap(
        (scores,), np.mean, n_resamples=20000, method="percentile", rng=np.random.default_rng(2024), vectorized=True,
    ).confidence_interval
    width = ours.high - ours.low
    for mine, scipys in ((ours.low, theirs.low), (ours.high, theirs.high)):
        assert abs(mine - scipys) < 0.003
        # Tighter: the Monte-Carlo error of a bound is ~1% of the width here; a wrong confidence
        # level (90% for 95%) moves a bound by ~8% of the width.
        assert abs(mine - scipys) < 0.05 * width


def _scipy_permutation_p(a: np.ndarray, b: np.ndarray, n_resamples: float, seed: int) -> float:
    def gap(x, y, axis):
        return np.abs(np.mean(y, axis=axis) - np.mean(x, axis=axis))

    return scipy.stats.permutation_test(
        (a, b), gap, permutation_type="samples", vectorized=True, n_resamples=n_resamples,
        alternative="greater", rng=np.random.default_rng(seed),
    ).pvalue


@pytest.mark.parametrize("pair", [0, 1, 2])
def test_paired_permutation_agrees_with_scipy_permutation_test(pair: int) -> None:
    a, b = PAIRS[pair]
    ours = stats.paired_permutation(a, b, 10000, seed=0).p_value
    theirs = _scipy_permutation_p(a, b, 10000, seed=99)
    # Two independent Monte-Carlo estimates of one p: 4 standard deviations of their difference.
    tolerance = 4 * np.sqrt(2 * theirs * (1 - theirs) / 10000) + 2 / 10001
    assert abs(ours - theirs) <= tolerance


def test_paired_permutation_agrees_with_the_exact_test() -> None:
    a, b = KIT[:12], UEDIN[:12]  # 4096 swap patterns: scipy enumerates them all
    exact = _scipy_permutation_p(a, b, np.inf, seed=0)
    ours = stats.paired_permutation(a, b, 20000, seed=0).p_value
    assert 0.01 < exact < 0.99  # not a trivial p (it is 0.045 here)
    # scipy counts the observed pattern and its mirror (>=); sacrebleu's rule does not (>).
    assert abs(ours - (exact - 2 / 4096)) <= 4 * np.sqrt(exact * (1 - exact) / 20000)


def test_ties_follow_exact_arithmetic() -> None:
    """A swap pattern whose statistic equals the observed one only up to float rounding is a tie.

    Four segments: p by enumerating the 16 patterns in exact fractions (sacrebleu's strict >);
    without the tie tolerance the observed pattern's rounding error would add about 1/16.
    """
    a_text, b_text = ["0.1", "0.7", "0.3", "0.2"], ["0.3", "0.4", "0.6", "0.25"]
    fa, fb = [Fraction(x) for x in a_text], [Fraction(x) for x in b_text]
    observed = abs(sum(fa) - sum(fb)) / 4
    exceed = 0
    for keep in itertools.product([True, False], repeat=4):
        shuffled_a = sum(x if k else y for k, x, y in zip(keep, fa, fb)) / 4
        shuffled_b = sum(y if k else x for k, x, y in zip(keep, fa, fb)) / 4
        exceed += abs(shuffled_a - shuffled_b) > observed
    exact = exceed / 16
    ours = stats.paired_permutation([float(x) for x in a_text], [float(x) for x in b_text], 20000, seed=0).p_value
    assert abs(ours - exact) <= 4 * np.sqrt(exact * (1 - exact) / 20000)


# ----- calibration --------------------------------------------------------------------------------
def _simulated_p_values(shift: float, simulations: int = 500, n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of systems on n segments: a shared segment difficulty (real F1 values) plus
    independent system noise; b's true mean is higher by `shift`. 1,000 resamples per test
    (not 10,000) keeps the 1,000 tests fast; the p-value resolution (0.001) is ample for 0.05."""
    rng = np.random.default_rng(20240601)
    permutation, bootstrap = [], []
    for simulation in range(simulations):
        difficulty = rng.choice(ONLINE_B, size=n)
        a = difficulty + rng.normal(0, 0.04, n)
        b = difficulty + rng.normal(0, 0.04, n) + shift
        permutation.append(stats.paired_permutation(a, b, 1000, seed=simulation).p_value)
        bootstrap.append(stats.paired_bootstrap(a, b, 1000, seed=simulation).p_value)
    return np.array(permutation), np.array(bootstrap)


def test_calibration_with_no_true_difference() -> None:
    permutation, bootstrap = _simulated_p_values(shift=0.0)
    assert 0.03 <= np.mean(permutation < 0.05) <= 0.07
    # sacrebleu's paired bootstrap p behaves one-sided (as its docstring warns): about twice
    # the nominal rate at 0.05, calibrated when the threshold is halved.
    assert 0.07 <= np.mean(bootstrap < 0.05) <= 0.15
    assert 0.03 <= np.mean(bootstrap < 0.025) <= 0.07


def test_power_with_a_clear_difference() -> None:
    # sd of the mean difference: 0.04 * sqrt(2 / 100) = 0.0057; a shift of 0.025 is ~4.4 sd.
    permutation, bootstrap = _simulated_p_values(shift=0.025)
    assert np.mean(permutation < 0.05) >= 0.95
    assert np.mean(bootstrap < 0.05) >= 0.95


# ----- properties -------------------------------------------------------------------------------------
paired_scores = st.integers(2, 40).flatmap(
    lambda n: st.tuples(*(st.lists(st.floats(0, 1), min_size=n, max_size=n) for _ in range(2)))
)


@settings(max_examples=40, deadline=None)
@given(paired_scores)
def test_swapping_the_systems_negates_the_difference_only(pair) -> None:
    a, b = pair
    forward, backward = stats.paired_permutation(a, b, 200), stats.paired_permutation(b, a, 200)
    assert forward.p_value == backward.p_value
    assert forward.difference == -backward.difference
    forward, backward = stats.paired_bootstrap(a, b, 200), stats.paired_bootstrap(b, a, 200)
    assert forward.p_value == backward.p_value
    assert (forward.low, forward.high) == pytest.approx((-backward.high, -backward.low), abs=1e-12)
    assert 1 / 201 <= forward.p_value <= 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=2, max_size=60), st.floats(0.5, 0.99))
def test_interval_lies_within_the_scores(scores, confidence) -> None:
    result = stats.bootstrap_ci(scores, 200, confidence)
    slack = 1e-12  # a mean of equal floats may round one ulp past them
    assert min(scores) - slack <= result.low <= result.high <= max(scores) + slack
    assert result.mean == pytest.approx(sum(scores) / len(scores), abs=1e-12)


def test_identical_systems_follow_sacrebleu_and_warn(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="bertscore.stats"):
        permutation = stats.paired_permutation(KIT, KIT.copy(), 999)
        bootstrap = stats.paired_bootstrap(KIT, KIT.copy(), 999)
    assert permutation.p_value == bootstrap.p_value == 1 / 1000
    assert permutation.difference == 0.0
    assert caplog.text.count("identical scores") == 2


def test_compare_systems_flags_identical_rows_and_never_calls_them_significant() -> None:
    copy = KIT.copy()
    nudged = KIT.copy()
    nudged[0] += 1e-6  # one segment apart: not identical, whatever the test says
    for method in stats.METHODS:
        rows = stats.compare_systems({"base": KIT, "copy": copy, "nudged": nudged, "other": ONLINE_B}, method=method)
        assert [r.identical for r in rows] == [None, True, False, False]
        assert rows[1].p_value < 0.05 and not rows[1].significant()
        assert not rows[0].significant()
        assert rows[3].significant() == (rows[3].p_value < 0.05)
        assert rows[3].significant(0.0) is False


# ----- determinism, inputs, multi-system ----------------------------------------------------------------
def test_fixed_seed_is_deterministic_and_seeds_differ() -> None:
    a, b = ONLINE_B, KIT
    for run in (lambda s: stats.bootstrap_ci(a, 500, seed=s), lambda s: stats.paired_bootstrap(a, b, 500, seed=s),
                lambda s: stats.paired_permutation(a, b, 500, seed=s)):
        assert run(3) == run(3)
        assert run(3) != run(4)


def test_accepts_lists_float32_and_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    expected = stats.bootstrap_ci(ONLINE_B, 300)
    assert stats.bootstrap_ci(ONLINE_B.tolist(), 300) == expected
    assert stats.bootstrap_ci(torch.tensor(ONLINE_B, dtype=torch.float64), 300) == expected
    for dtype in (torch.float32, torch.bfloat16):
        tensor = torch.tensor(ONLINE_B, dtype=dtype)
        as_float64 = np.array([float(v) for v in tensor.tolist()])
        assert stats.bootstrap_ci(tensor, 300) == stats.bootstrap_ci(as_float64, 300)
    tracked = torch.tensor(ONLINE_B, requires_grad=True)
    assert stats.bootstrap_ci(tracked, 300) == expected


def test_results_are_json_ready() -> None:
    import json

    row = stats.compare_systems({"a": ONLINE_B, "b": KIT}, n_resamples=100)[1].to_dict()
    assert json.loads(json.dumps(row)) == row
    assert set(row) == {"name", "is_baseline", "mean", "stderr", "low", "high", "difference",
                        "difference_low", "difference_high", "p_value", "identical"}
    assert stats.paired_bootstrap(ONLINE_B, KIT, 100, seed=np.int64(3)).to_dict()["seed"] == 3


def test_compare_systems_bootstrap_rows_equal_the_single_calls() -> None:
    systems = {"KIT": KIT, "online-B": ONLINE_B, "online-F": ONLINE_F, "uedin": UEDIN}
    rows = stats.compare_systems(systems, baseline="online-B", method="bootstrap", n_resamples=700, seed=11)
    assert [row.name for row in rows] == list(systems)
    for row, (name, scores) in zip(rows, systems.items()):
        ci = stats.bootstrap_ci(scores, 700, seed=11)
        assert (row.mean, row.stderr, row.low, row.high) == (ci.mean, ci.stderr, ci.low, ci.high)
        assert row.is_baseline == (name == "online-B")
        if name == "online-B":
            assert (row.difference, row.difference_low, row.difference_high, row.p_value) == (None,) * 4
            continue
        paired = stats.paired_bootstrap(ONLINE_B, scores, 700, seed=11)
        assert (row.difference, row.difference_low, row.difference_high, row.p_value) == (
            paired.difference, paired.low, paired.high, paired.p_value)


def test_compare_systems_permutation_rows_equal_the_single_calls() -> None:
    systems = {"online-B": ONLINE_B, "KIT": KIT, "online-F": ONLINE_F, "uedin": UEDIN}
    rows = stats.compare_systems(systems, n_resamples=3000, seed=2, ci_resamples=400, confidence=0.9)
    assert rows[0].is_baseline and rows[0].p_value is None
    for row, scores in zip(rows[1:], (KIT, ONLINE_F, UEDIN)):
        permutation = stats.paired_permutation(ONLINE_B, scores, 3000, seed=2)
        assert row.p_value == permutation.p_value
        assert row.difference == pytest.approx(permutation.difference, abs=1e-15)
        ci = stats.bootstrap_ci(scores, 400, 0.9, seed=2)
        assert (row.low, row.high) == (ci.low, ci.high)
        paired = stats.paired_bootstrap(ONLINE_B, scores, 400, 0.9, seed=2)
        assert (row.difference_low, row.difference_high) == (paired.low, paired.high)


BAD_SCORES = [
    (([0.1, 0.2, 0.3], [0.1, 0.2]), "3 and 2"),
    (([0.5], [0.5]), "at least 2"),
    (([0.1, 0.2, 0.3, float("nan")], [0.1, 0.2, 0.3, 0.4]), "scores_a has non-finite values at index 3"),
    (([0.1, 0.2], [float("inf"), 0.3]), "scores_b has non-finite values at index 0"),
    (([[0.1, 0.2], [0.3, 0.4]], [[0.1, 0.2], [0.3, 0.4]]), "1-D"),
    ((["0.1", "0.2"], [0.1, 0.2]), "must be numbers"),
    (([0.1, None], [0.1, 0.2]), "None"),
]


@pytest.mark.parametrize("arguments, message", BAD_SCORES)
def test_bad_scores_raise(arguments, message) -> None:
    for test in (stats.paired_bootstrap, stats.paired_permutation):
        with pytest.raises(ValueError, match=message):
            test(*arguments)


@pytest.mark.parametrize("keyword, value, message", [
    ("confidence", 0.0, "confidence"), ("confidence", 1.0, "confidence"), ("confidence", 95, "confidence"),
    ("confidence", True, "confidence"), ("n_resamples", 0, "n_resamples"), ("n_resamples", 10.0, "n_resamples"),
    ("n_resamples", True, "n_resamples"), ("seed", -1, "seed"), ("seed", 0.5, "seed"),
])
def test_bad_settings_raise(keyword, value, message) -> None:
    with pytest.raises(ValueError, match=message):
        stats.bootstrap_ci(KIT, **{keyword: value})


def test_compare_systems_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="baseline 'X' is not one of the systems"):
        stats.compare_systems({"a": KIT, "b": UEDIN}, baseline="X")
    with pytest.raises(ValueError, match="method must be one of"):
        stats.compare_systems({"a": KIT, "b": UEDIN}, method="t-test")
    with pytest.raises(ValueError, match="non-empty mapping"):
        stats.compare_systems({})
    with pytest.raises(ValueError, match=r"lengths differ \('a': 400, 'b': 399\)"):
        stats.compare_systems({"a": KIT, "b": UEDIN[:-1]})
    with pytest.raises(ValueError, match=r"systems\['b'\] has non-finite values at index 2"):
        stats.compare_systems({"a": KIT, "b": np.r_[UEDIN[:2], np.nan, UEDIN[3:]]})
    with pytest.raises(ValueError, match="ci_resamples"):
        stats.compare_systems({"a": KIT, "b": UEDIN}, ci_resamples=0)


def test_few_segments_are_flagged_where_sacrebleus_rule_overstates_significance() -> None:
    # A consistent difference on 3 segments: the exact two-sided p is 2/8, the AR rule says 1/(R+1).
    result = stats.paired_permutation([0.1, 0.2, 0.3], [0.5, 0.6, 0.7], n_resamples=1000, seed=0)
    assert result.p_value == pytest.approx(1 / 1001)
    assert "2^3 = 8 distinct outcomes" in stats.few_segments_note(3) and "0.25" in stats.few_segments_note(3)
    assert stats.few_segments_note(stats.FEW_SEGMENTS) is None


# ----- statistics that mean little say so ------------------------------------------------------------
def _notes_of(call) -> tuple[list[str], list[str]]:
    """The notes a call reports with notes=[] (no warning may escape then), and the warnings it
    gives without a list."""
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning despite notes= would raise here
        call(notes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(None)
    return notes, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


TWO = {"a": KIT[:40], "b": UEDIN[:40]}
RESAMPLE_CALLS = {  # each public function with R resamples on 40 segments (enough segments: no caution)
    "bootstrap_ci": lambda r, notes: stats.bootstrap_ci(KIT[:40], r, notes=notes),
    "paired_bootstrap": lambda r, notes: stats.paired_bootstrap(KIT[:40], UEDIN[:40], r, notes=notes),
    "paired_permutation": lambda r, notes: stats.paired_permutation(KIT[:40], UEDIN[:40], r, notes=notes),
    "compare_systems bootstrap": lambda r, notes: stats.compare_systems(TWO, method="bootstrap", n_resamples=r,
                                                                       notes=notes),
    "compare_systems permutation": lambda r, notes: stats.compare_systems(TWO, n_resamples=r, notes=notes),
}


@pytest.mark.parametrize("function", list(RESAMPLE_CALLS))
@pytest.mark.parametrize("n_resamples", [1, 999])
def test_fewer_than_1000_resamples_give_one_note(function: str, n_resamples: int) -> None:
    notes, warned = _notes_of(lambda notes: RESAMPLE_CALLS[function](n_resamples, notes))
    assert len(notes) == 1 and notes == warned
    assert notes[0].startswith(f"only {n_resamples} resample") and "fewer than 1,000" in notes[0]
    if function != "bootstrap_ci":  # a p-value: its floor is named
        assert f"{1 / (n_resamples + 1):.3g}" in notes[0]
    assert _notes_of(lambda notes: RESAMPLE_CALLS[function](1000, notes)) == ([], [])


def test_one_resample_is_a_zero_width_interval_and_says_so() -> None:
    with pytest.warns(UserWarning, match="only 1 resample: .*zero width") as record:
        result = stats.bootstrap_ci(KIT[:40], n_resamples=1)
    assert result.low == result.high
    assert record[0].filename == __file__  # the warning points at the caller's line, not into stats.py


def test_compare_systems_notes_its_interval_resamples_too() -> None:
    notes, _ = _notes_of(lambda notes: stats.compare_systems(TWO, n_resamples=5000, ci_resamples=200, notes=notes))
    assert len(notes) == 1 and notes[0].startswith("only 200 resamples") and "bootstrap interval" in notes[0]


PAIRED_CALLS = {
    "paired_bootstrap": lambda n, notes: stats.paired_bootstrap(KIT[:n], UEDIN[:n], notes=notes),
    "paired_permutation": lambda n, notes: stats.paired_permutation(KIT[:n], UEDIN[:n], notes=notes),
    "compare_systems": lambda n, notes: stats.compare_systems({"a": KIT[:n], "b": UEDIN[:n], "c": ONLINE_B[:n]},
                                                              notes=notes),
}


@pytest.mark.parametrize("function", list(PAIRED_CALLS))
def test_paired_tests_on_few_segments_give_one_caution(function: str) -> None:
    for n in (2, 3, 11):
        notes, warned = _notes_of(lambda notes: PAIRED_CALLS[function](n, notes))
        assert notes == warned == [stats.few_segments_note(n)]
        assert f"2^{n} = {2 ** n} distinct outcomes" in notes[0]
    assert _notes_of(lambda notes: PAIRED_CALLS[function](12, notes)) == ([], [])


def test_a_lone_interval_on_few_segments_gives_a_caution() -> None:
    values = [0.1, 0.25, 0.7]
    with pytest.warns(UserWarning, match="only 3 segments: a bootstrap interval") as record:
        stats.bootstrap_ci(values)
    assert len(record) == 1 and record[0].filename == __file__
    # The count it names: every way to draw 3 of 3 scores with replacement, by enumeration.
    distinct = {round(sum(draw) / 3, 12) for draw in itertools.product(values, repeat=3)}
    assert f"at most {len(distinct)} distinct means" in str(record[0].message) and len(distinct) == 10
    notes, _ = _notes_of(lambda notes: stats.bootstrap_ci(KIT[:11], notes=notes))
    assert notes == [stats.few_segments_note(11, "interval")]
    assert _notes_of(lambda notes: stats.bootstrap_ci(KIT[:12], notes=notes)) == ([], [])
    # compare_systems of a single system has intervals only: the interval caution.
    notes, _ = _notes_of(lambda notes: stats.compare_systems({"a": KIT[:5]}, notes=notes))
    assert notes == [stats.few_segments_note(5, "interval")]


def test_the_interval_caution_is_true_small_samples_undercover() -> None:
    """What the caution claims: a 95% percentile interval of a few scores covers the true mean
    less often than 95% (about 80% for 5 normal scores); on 40 scores it is close to 95%."""
    rng = np.random.default_rng(7)

    def coverage(n: int, simulations: int = 300) -> float:
        hits = 0
        for seed in range(simulations):
            ci = stats.bootstrap_ci(rng.normal(0.0, 1.0, n), 1000, 0.95, seed=seed, notes=[])
            hits += ci.low <= 0.0 <= ci.high
        return hits / simulations

    assert coverage(5) < 0.88
    assert coverage(40) > 0.9


@pytest.mark.parametrize("confidence, label", [
    (0.95, "95%"), (0.999, "99.9%"), (0.975, "97.5%"), (0.9, "90%"), (0.5, "50%"), (0.99999, "99.999%"),
    (0.07, "7%"), (np.float64(0.999), "99.9%"),
    # numpy floats as written in their own precision (float(np.float32(0.95)) is 0.949999988079071)
    (np.float32(0.95), "95%"), (np.float32(0.999), "99.9%"), (np.float16(0.9), "90%"),
])
def test_confidence_labels_are_printed_as_given(confidence: float, label: str) -> None:
    assert stats.confidence_label(confidence) == label


@given(st.integers(1, 99999))
def test_confidence_label_round_trips(thousandths_of_a_percent: int) -> None:
    confidence = thousandths_of_a_percent / 100000
    label = stats.confidence_label(confidence)
    assert label.endswith("%") and not label.startswith("100")
    assert Decimal(label[:-1]) / 100 == Decimal(repr(confidence))
    assert math.isclose(float(label[:-1]), confidence * 100)


# ----- each rule of compare_systems, pinned (written against mutmut's survivors of bertscore/stats.py) -----
def _row(p_value: float | None, identical: bool | None = False) -> stats.SystemComparison:
    return stats.SystemComparison(name="b", is_baseline=False, mean=0.5, stderr=0.01, low=0.48, high=0.52,
                                  difference=0.01, difference_low=0.0, difference_high=0.02, p_value=p_value,
                                  identical=identical)


def test_significant_means_p_strictly_below_the_level_5_percent_by_default() -> None:
    """p = 0.05 is not significant at the default level, p just below it is: fails if the default level
    or the strict `<` changes."""
    assert not _row(0.05).significant() and _row(0.0499).significant()
    assert _row(0.05).significant(0.0500001) and not _row(0.0499).significant(0.0499)
    assert not _row(None).significant(1.0) and not _row(0.001, identical=True).significant()


def test_compare_systems_defaults_are_seed_0_and_1000_interval_draws() -> None:
    """The defaults written out give the same rows, another seed or draw count other intervals: fails if
    a default changes."""
    rows = stats.compare_systems(TWO)
    assert rows == stats.compare_systems(TWO, "a", "permutation", 10000, 0.95, 0, 1000)
    assert rows != stats.compare_systems(TWO, seed=1) and rows != stats.compare_systems(TWO, ci_resamples=1001)


def test_compare_systems_messages_in_full() -> None:
    """Each refusal written out in full: fails if a message loses what it names (the methods, the
    systems, the bad setting) or a setting is not checked before the draws."""
    cases = [
        (dict(method="t-test"), "method must be one of 'permutation', 'bootstrap'; got 't-test'"),
        (dict(baseline="X"), "baseline 'X' is not one of the systems ('a', 'b')"),
        (dict(confidence=1.5), "confidence must be between 0 and 1 (exclusive), e.g. 0.95; got 1.5"),
        (dict(seed=-1), "seed must be an integer >= 0 or None (fresh entropy); got -1"),
        (dict(seed=-1, ci_resamples=0), "seed must be an integer >= 0 or None (fresh entropy); got -1"),
        (dict(ci_resamples=0), "ci_resamples must be an integer >= 1; got 0"),
        (dict(n_resamples=0), "n_resamples must be an integer >= 1; got 0"),
    ]
    for keywords, message in cases:
        with pytest.raises(ValueError) as error:
            stats.compare_systems(TWO, **keywords)
        assert str(error.value) == message, keywords
    with pytest.raises(ValueError) as error:
        stats.compare_systems({})
    assert str(error.value) == "systems must be a non-empty mapping: system name -> per-segment scores"


@pytest.mark.parametrize("method", stats.METHODS)
def test_compare_systems_notes_name_the_statistic_they_weaken(method: str) -> None:
    """A lone system on few segments gets the interval caution, two the paired one; bootstrap's few
    draws weaken "intervals and p-values" at once, permutation's the p-value (and its interval draws the
    interval): fails if a note names another statistic, or one is dropped."""
    lone, _ = _notes_of(lambda notes: stats.compare_systems({"a": KIT[:5]}, method=method, notes=notes))
    assert lone == [stats.few_segments_note(5, "interval")]
    pair, _ = _notes_of(lambda notes: stats.compare_systems({"a": KIT[:5], "b": UEDIN[:5]}, method=method,
                                                             n_resamples=500, notes=notes))
    if method == "bootstrap":
        assert pair == [stats.few_segments_note(5, "paired"), stats.few_resamples_note(500, "both")]
    else:
        assert pair == [stats.few_segments_note(5, "paired"), stats.few_resamples_note(500, "p-value")]


def test_compare_systems_names_an_identical_pair_in_its_warning(caplog) -> None:
    """The warning names the system and the baseline, for a copy only: fails if it is lost, or raised
    for a system that differs (a sum in place of the difference)."""
    with caplog.at_level(logging.WARNING, logger="bertscore.stats"):
        stats.compare_systems({"base": KIT[:40], "copy": KIT[:40].copy(), "other": UEDIN[:40]}, ci_resamples=1000)
    assert [r.getMessage() for r in caplog.records] == [
        "compare_systems: 'copy' vs the baseline 'base': identical scores, so no difference to test; sacrebleu's "
        "rule still gives p = 1/(n_resamples + 1) (nothing exceeds a zero difference): read it as 'no difference'"]


def test_a_confidence_given_as_a_fraction_is_labelled_by_its_value() -> None:
    """Any real number is read by its float's shortest decimal (numpy's floats by their own): fails if
    every confidence is written with str() (Fraction(19, 20) is "19/20")."""
    assert stats.confidence_label(Fraction(19, 20)) == "95%"
    assert stats.confidence_label(np.float32(0.95)) == "95%" and stats.confidence_label(0.999) == "99.9%"


# ----- the resampling engine's blocks and tie rule (written against mutmut's survivors of resampling.py) -----
def test_blocks_hold_at_most_the_budget_and_one_row_when_a_row_is_larger(monkeypatch) -> None:
    """With a budget of 16 draws, rows of 20 come one per block (never two: 40 draws) and selector
    blocks hold one multiple of 32 rows: fails if a block's floor is more than one row (or one multiple)."""
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 16)
    assert [b.shape for b in resampling.index_blocks(20, 5, 0)] == [(1, 20)] * 5
    assert [b.shape for b in resampling.selector_blocks(20, 70, 0)] == [(32, 20), (32, 20), (6, 20)]
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 1 << 20)
    assert [b.shape for b in resampling.index_blocks(20, 5, 0)] == [(5, 20)]


def test_a_statistic_above_the_observed_by_more_than_rounding_counts() -> None:
    """Scores on a 1e-3 scale, the observed statistic 5e-9 below the no-swap one: 5e-9 is far above
    the tie band (1e-9 of the scale = 1e-12), so every selector row that swaps both segments or neither
    exceeds; counted here straight from numpy's draws. Fails if the band is not relative to the scale
    (1e-9 / scale = 7e-7 would swallow the 5e-9)."""
    diffs = np.array([[1e-3, 2e-3]])
    observed = np.array([1.5e-3 - 5e-9])
    draws = np.random.default_rng(3).integers(2, size=(500, 2), dtype=bool)
    expected = int(np.count_nonzero(draws[:, 0] == draws[:, 1]))
    assert resampling.permutation_exceedances(diffs, observed, 500, 3).tolist() == [expected]
    assert 0 < expected < 500


def test_notes_and_refusals_of_the_scores_in_full() -> None:
    """The cautions and the refusals of bad scores written out in full (counts worked by hand): fails
    if a note or a message loses a number or the advice it gives."""
    assert stats.few_segments_note(3, "interval") == (
        "only 3 segments: a bootstrap interval from so few is too narrow, covering the mean less often than its "
        "confidence says (resampling 3 scores gives at most 10 distinct means); score more segments")
    assert stats.few_segments_note(3) == (
        "only 3 segments: a paired test has at most 2^3 = 8 distinct outcomes here, so its p-value is not "
        "meaningful (the exact two-sided p of a consistent difference is at least 0.25); compare systems on "
        "more segments")
    assert stats.few_segments_note(11) is not None and stats.few_segments_note(12, "interval") is None
    assert stats.few_resamples_note(500, "both") == (
        "only 500 resamples: fewer than 1,000 make intervals and p-values rough, moving with the seed; a p-value "
        "cannot go below 1/(500 + 1) = 0.002; use 1,000 or more")
    assert stats.few_resamples_note(1) == ("only 1 resample: fewer than 1,000 make a bootstrap interval rough, "
                                           "moving with the seed (1 resample: an interval of zero width); use "
                                           "1,000 or more")
    assert stats.few_resamples_note(1, "p-value") == (
        "only 1 resample: fewer than 1,000 make a p-value rough, moving with the seed; a p-value cannot go below "
        "1/(1 + 1) = 0.5; use 1,000 or more")
    assert stats.few_resamples_note(999, "p-value") is not None and stats.few_resamples_note(1000, "both") is None
    cases = [
        (lambda: stats.few_segments_note(3, "pairs"), "statistic must be 'paired' or 'interval'; got 'pairs'"),
        (lambda: stats.few_resamples_note(3, "x"),
         "statistic must be one of 'interval', 'p-value', 'both'; got 'x'"),
        (lambda: stats.bootstrap_ci(["a", "b"]), "scores must be numbers, one score per segment; got <U1 values"),
        (lambda: stats.bootstrap_ci([0.1, None]),
         "scores must be numbers, one score per segment; got object values (a None or a non-number among them?)"),
        (lambda: stats.bootstrap_ci([[0.1, 0.2]]), "scores must be one score per segment (1-D); got shape (1, 2)"),
        (lambda: stats.bootstrap_ci([0.1]), "scores has 1 segment(s); resampling needs at least 2"),
        (lambda: stats.bootstrap_ci([np.nan] * 7 + [0.5]),
         "scores has non-finite values at index 0 (nan), index 1 (nan), index 2 (nan), index 3 (nan), index 4 (nan)"
         " and 2 more; fix or drop those segments"),
        (lambda: stats.paired_permutation([0.1, 0.2, 0.3], [0.1, 0.2]),
         "scores_a and scores_b must score the same segments; they have 3 and 2 scores"),
        (lambda: stats.paired_permutation([0.1, 0.2], [np.inf, 0.2]),
         "scores_b has non-finite values at index 0 (inf); fix or drop those segments"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert str(error.value) == message


def test_results_carry_the_settings_they_were_computed_with() -> None:
    """Each result records the settings of its call, the defaults (1000 resamples, 95%, seed 0) when
    none are given: fails if a default changes or a field drops or replaces the value given."""
    for call in (lambda **kw: stats.bootstrap_ci(KIT[:50], **kw),
                 lambda **kw: stats.paired_bootstrap(KIT[:50], UEDIN[:50], **kw)):
        default = call()
        assert (default.n_resamples, default.confidence, default.seed) == (1000, 0.95, 0)
        given_ = call(n_resamples=200, confidence=0.9, seed=7)
        assert (given_.n_resamples, given_.confidence, given_.seed) == (200, 0.9, 7)
        assert type(given_.n_resamples) is int and type(given_.confidence) is float
        assert call(n_resamples=200, seed=None).seed is None


def test_a_lone_interval_notes_name_the_interval() -> None:
    """5 scores and 10 resamples: two notes, both about an interval (resampling 5 scores gives at most
    C(9, 5) = 126 distinct means, worked by hand). Fails if a note is dropped or speaks of a paired test."""
    notes: list[str] = []
    stats.bootstrap_ci([0.1, 0.4, 0.2, 0.8, 0.5], n_resamples=10, notes=notes)
    assert notes == [
        "only 5 segments: a bootstrap interval from so few is too narrow, covering the mean less often than its "
        "confidence says (resampling 5 scores gives at most 126 distinct means); score more segments",
        "only 10 resamples: fewer than 1,000 make a bootstrap interval rough, moving with the seed; use 1,000 or more",
    ]


@pytest.mark.parametrize("keyword, value, message", [
    ("seed", -1, "seed must be an integer >= 0 or None (fresh entropy); got -1"),
    ("confidence", 1.5, "confidence must be between 0 and 1 (exclusive), e.g. 0.95; got 1.5"),
    ("n_resamples", 0, "n_resamples must be an integer >= 1; got 0"),
])
def test_paired_bootstrap_refuses_bad_settings_by_name(keyword, value, message) -> None:
    """paired_bootstrap checks every setting itself: fails if one is not passed to the check (numpy
    would then fail later with its own message, or not at all)."""
    with pytest.raises(ValueError) as error:
        stats.paired_bootstrap(KIT[:20], UEDIN[:20], **{keyword: value})
    assert str(error.value) == message


def test_check_bootstrap_settings_refuses_as_bootstrap_ci_does() -> None:
    """The early check says what bootstrap_ci would refuse, under the caller's name for confidence:
    fails if it drops or swaps a setting or names it wrongly."""
    assert stats.check_bootstrap_settings(1000, 0, 0.95) is None
    assert stats.check_bootstrap_settings(1, None, 0.5, confidence_name="confidence_level") is None
    cases = [
        ((0, 0, 0.95), {}, "n_resamples must be an integer >= 1; got 0"),
        ((10, -1, 0.95), {}, "seed must be an integer >= 0 or None (fresh entropy); got -1"),
        ((10, 0, 1.5), {}, "confidence must be between 0 and 1 (exclusive), e.g. 0.95; got 1.5"),
        ((10, 0, 1.5), {"confidence_name": "confidence_level"},
         "confidence_level must be between 0 and 1 (exclusive), e.g. 0.95; got 1.5"),
    ]
    for arguments, keywords, message in cases:
        with pytest.raises(ValueError) as error:
            stats.check_bootstrap_settings(*arguments, **keywords)
        assert str(error.value) == message


def test_paired_bootstrap_names_itself_when_the_scores_are_identical(caplog) -> None:
    """The warning about identical systems starts with the function's name: fails if it names nothing
    or another function."""
    with caplog.at_level(logging.WARNING, logger="bertscore.stats"):
        stats.paired_bootstrap(KIT[:20], KIT[:20].copy(), 1000)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["paired_bootstrap"]


def test_bootstrap_p_value_is_unchanged_by_a_common_offset() -> None:
    """Adding 2^20 to both systems' scores (exact in float64: the scores are multiples of 1/64) leaves
    the differences, hence the p-value, as they were: fails if the tie band is scaled by the scores
    themselves (their sum) instead of their differences, which makes it 2e-3 wide and swallows the
    statistics that exceed the observed difference."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 64, size=200) / 64
    b = a + rng.integers(-40, 41, size=200) / 64
    offset = 2.0 ** 20
    plain = stats.paired_bootstrap(a, b, 1000, seed=1)
    shifted = stats.paired_bootstrap(a + offset, b + offset, 1000, seed=1)
    assert plain.p_value == shifted.p_value
    assert plain.p_value == sacrebleu_paired_bs_p(a, b, 1000, 1)
    rows = stats.compare_systems({"a": a + offset, "b": b + offset}, method="bootstrap", n_resamples=1000, seed=1)
    assert rows[1].p_value == plain.p_value


def test_a_statistic_equal_to_the_observed_gap_does_not_count() -> None:
    """Resampled differences 0, 0, 3: |d*| - mean|d*| = -1, -1, 2 (exact); observed gap 2: no statistic is
    strictly greater (sacrebleu's >), so p = (0 + 1) / (3 + 1). Fails if the tie band lowers the bar
    below the observed gap (the tie then counts: p = 2/4)."""
    assert stats._bootstrap_p_value(np.array([0.0, 0.0, 3.0]), 2.0, 1.0) == 0.25
    assert stats._bootstrap_p_value(np.array([0.0, 0.0, 3.0]), 2.0 - 1e-6, 1.0) == 0.5


def test_standard_error_of_two_and_of_one_resample() -> None:
    """Two resampled means 1 and 3: standard deviation (ddof=1) sqrt(2) by hand; one resample: no spread,
    0. Fails if two resamples are taken as too few, or one resample gives a nonzero error."""
    assert stats._stderr(np.array([1.0, 3.0])) == pytest.approx(math.sqrt(2), rel=1e-15)
    assert stats._stderr(np.array([5.0])) == 0.0
    one = stats.bootstrap_ci(KIT[:20], n_resamples=1, notes=[])
    assert one.stderr == 0.0 and one.low == one.high
    two = stats.bootstrap_ci(KIT[:20], n_resamples=2, notes=[])
    # the 2.5% and 97.5% quantiles of two means are 0.95 of their gap apart; their sd is gap / sqrt(2)
    assert two.high > two.low
    assert two.stderr == pytest.approx((two.high - two.low) / 0.95 / math.sqrt(2), rel=1e-9)


def test_paired_permutation_carries_its_settings_checks_its_seed_and_names_itself(caplog) -> None:
    """paired_permutation's defaults (10,000 selectors, seed 0) and given settings are in its result; a
    negative seed is refused by name; its warning about identical scores starts with its name. Fails if
    a default changes, a field drops its value, the seed goes unchecked, or the warning names another."""
    default = stats.paired_permutation(KIT[:20], UEDIN[:20])
    assert (default.n_resamples, default.seed) == (10000, 0)
    given_ = stats.paired_permutation(KIT[:20], UEDIN[:20], n_resamples=50, seed=7)
    assert (given_.n_resamples, given_.seed) == (50, 7) and type(given_.n_resamples) is int
    with pytest.raises(ValueError) as error:
        stats.paired_permutation(KIT[:20], UEDIN[:20], seed=-1)
    assert str(error.value) == "seed must be an integer >= 0 or None (fresh entropy); got -1"
    with caplog.at_level(logging.WARNING, logger="bertscore.stats"):
        stats.paired_permutation(KIT[:20], KIT[:20].copy(), 1000)
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["paired_permutation"]
