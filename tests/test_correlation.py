"""bertscore.correlation against independent routes: scipy (pearsonr, kendalltau, t, bootstrap), plain
O(n^2) loops, a published Williams' test value, and a null simulation for the test's calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore import correlation

small_ints = st.lists(st.integers(-3, 3), min_size=2, max_size=60)
floats = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def _pairs(draw_lists):
    return st.integers(2, 60).flatmap(lambda n: st.tuples(
        st.lists(draw_lists, min_size=n, max_size=n), st.lists(draw_lists, min_size=n, max_size=n)))


@settings(max_examples=100, deadline=None)
@given(_pairs(st.one_of(st.integers(-3, 3).map(float), floats)))
def test_kendall_tau_b_equals_scipy_with_and_without_ties(pair) -> None:
    x, y = map(np.array, pair)
    ours, theirs = correlation.kendall_tau_b(x, y), scipy.stats.kendalltau(x, y).statistic
    if math.isnan(theirs):
        assert math.isnan(ours)
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_kendall_tau_b_on_a_large_sample_equals_scipy() -> None:
    rng = np.random.default_rng(3)
    human = np.round(rng.normal(size=20_000), 2)  # many ties, as rounded human scores have
    metric = human + rng.normal(size=20_000)
    assert correlation.kendall_tau_b(metric, human) == pytest.approx(scipy.stats.kendalltau(metric, human).statistic,
                                                                     abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 5), min_size=0, max_size=70))
def test_count_inversions_equals_a_plain_loop(values) -> None:
    expected = sum(values[i] > values[j] for i in range(len(values)) for j in range(i + 1, len(values)))
    assert correlation.count_inversions(np.array(values)) == expected


@settings(max_examples=100, deadline=None)
@given(_pairs(floats))
def test_pearson_equals_scipy(pair) -> None:
    x, y = map(np.array, pair)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        assert math.isnan(correlation.pearson(x, y))
        return
    theirs = scipy.stats.pearsonr(x, y).statistic
    assert correlation.pearson(x, y) == pytest.approx(theirs, abs=1e-9)


def test_a_tiny_spread_still_has_its_correlation() -> None:
    """Spreads whose squares underflow (subnormal floats) are not constant: r is defined, as scipy says."""
    tiny = [0.0, 5e-324, 1e-323]
    assert correlation.pearson(tiny, [1.0, 2.0, 3.0]) == pytest.approx(scipy.stats.pearsonr(tiny, [1, 2, 3]).statistic)
    assert correlation.pearson([0.0, 5e-324], [2.0, 1.0]) == -1.0


def test_constant_sides_have_no_correlation() -> None:
    assert math.isnan(correlation.pearson([1, 1, 1], [1, 2, 3]))
    assert math.isnan(correlation.kendall_tau_b([1, 2, 3], [5, 5, 5]))


def test_concordance_counts_a_metric_tie_against_the_metric() -> None:
    better, worse = [0.9, 0.5, 0.7, 0.7], [0.8, 0.6, 0.7, 0.1]
    signs = correlation.concordance(better, worse)
    assert signs.tolist() == [1.0, -1.0, -1.0, 1.0]  # the tie (0.7 = 0.7) is discordant, as WMT counts it
    concordant, discordant = 2, 2
    assert signs.mean() == (concordant - discordant) / (concordant + discordant)


def test_williams_test_equals_the_published_example() -> None:
    # The example of the Python port of Graham & Baldwin's williams.R (r12 .65, r13 .55, r23 .3, n 50).
    result = correlation.williams_test(0.65, 0.55, 0.3, 50)
    assert result.p_value == pytest.approx(0.20928617286753592, abs=1e-12)
    assert result.df == 47


@pytest.mark.parametrize("r12, r13, r23, n", [(0.6, 0.5, 0.8, 300), (0.5, 0.6, 0.9, 560), (0.3, 0.1, 0.2, 30),
                                              (0.9, 0.89, 0.99, 3920)])
def test_williams_test_equals_its_formula_with_scipy_t(r12, r13, r23, n) -> None:
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(
        2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
    result = correlation.williams_test(r12, r13, r23, n)
    assert result.statistic == pytest.approx(t, rel=1e-12)
    assert result.p_value == pytest.approx(scipy.stats.t.sf(t, n - 3), rel=1e-9, abs=1e-15)


def test_williams_test_is_calibrated_under_the_null() -> None:
    """Two metrics with the same true correlation with the humans: about 5% of samples reach p < 0.05."""
    rng = np.random.default_rng(0)
    p_values = []
    for _ in range(2000):
        human = rng.normal(size=60)
        shared = rng.normal(size=60)  # the metrics agree with each other beyond the humans, as layers do
        a = human + shared + rng.normal(size=60)
        b = human + shared + rng.normal(size=60)
        r12, r13, r23 = (np.corrcoef(u, v)[0, 1] for u, v in ((human, a), (human, b), (a, b)))
        p_values.append(correlation.williams_test(r12, r13, r23, 60).p_value)
    assert 0.035 <= np.mean(np.array(p_values) < 0.05) <= 0.065


@settings(max_examples=200, deadline=None)
@given(st.floats(-60, 60, allow_nan=False), st.integers(1, 5000))
def test_student_t_sf_equals_scipy(t, df) -> None:
    assert correlation.student_t_sf(t, df) == pytest.approx(scipy.stats.t.sf(t, df), rel=1e-9, abs=1e-300)


def test_williams_test_refuses_what_it_cannot_test() -> None:
    with pytest.raises(ValueError, match="n >= 4"):
        correlation.williams_test(0.5, 0.4, 0.3, 3)
    with pytest.raises(ValueError, match="r23 must be a correlation"):
        correlation.williams_test(0.5, 0.4, 1.5, 30)


@pytest.mark.parametrize("seed", [0, 11])
def test_bootstrap_pearson_ci_equals_scipy_given_the_same_indices(seed: int) -> None:
    rng = np.random.default_rng(1)
    human = rng.normal(size=150)
    rows = np.stack([human + rng.normal(scale=s, size=150) for s in (0.5, 1.0, 3.0)])
    low, high = correlation.bootstrap_pearson_ci(rows, human, 999, 0.9, seed)
    for row, lo, hi in zip(rows, low, high):
        theirs = scipy.stats.bootstrap(
            (row, human), lambda x, y, axis: np.array([np.corrcoef(a, b)[0, 1] for a, b in zip(x, y)]),
            paired=True, vectorized=True, n_resamples=999, confidence_level=0.9, method="percentile",
            rng=np.random.default_rng(seed))
        assert lo == pytest.approx(theirs.confidence_interval.low, abs=1e-12)
        assert hi == pytest.approx(theirs.confidence_interval.high, abs=1e-12)


def test_bootstrap_pearson_ci_does_not_depend_on_the_block_size(monkeypatch) -> None:
    from bertscore import resampling

    rng = np.random.default_rng(2)
    human = rng.normal(size=80)
    rows = np.stack([human + rng.normal(size=80), rng.normal(size=80)])
    before = correlation.bootstrap_pearson_ci(rows, human, 500, 0.95, 3)
    monkeypatch.setattr(resampling, "BLOCK_ELEMENTS", 333)
    after = correlation.bootstrap_pearson_ci(rows, human, 500, 0.95, 3)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
