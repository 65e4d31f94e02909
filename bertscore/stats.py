"""Corpus statistics over per-segment scores: bootstrap intervals and paired significance tests.

Pure numpy (no model): every function takes per-segment scores (numpy arrays, lists or torch
tensors), a `seed`, and returns a small frozen dataclass with `to_dict()`. Statistics that mean
little say so through `bertscore.notes` (a warning, or a line in the caller's `notes=` list):
too few segments (`few_segments_note`), fewer than 1,000 resamples (`few_resamples_note`).

- `bootstrap_ci`: the mean with its percentile bootstrap interval (as `scipy.stats.bootstrap`,
  method="percentile": identical interval from the same resampled indices).
- `paired_bootstrap` / `paired_permutation`: sacrebleu's paired bootstrap resampling (Koehn 2004)
  and approximate randomization tests (its `significance` module), for a metric that is the mean
  of its segment scores: same random draws for the same seed, same statistic, same p-value.
  The permutation p is calibrated; the bootstrap p behaves one-sided (see `paired_bootstrap`).
  Intervals are scipy's percentile ones, not sacrebleu's (it takes order statistics n//40 apart).
- `compare_systems`: several systems against a baseline, one row each, in input order.

Random draws follow sacrebleu exactly and are made in blocks of rows so memory stays bounded
whatever the corpus size; blocks continue one random stream, so results do not depend on the
block size (see `bertscore.resampling`).
"""

from __future__ import annotations

import logging
import math
import numbers
from decimal import Decimal
from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np

from .notes import report, segments
from .resampling import TIE_TOLERANCE, permutation_exceedances, resampled_means, scale
from .wording import counted

logger = logging.getLogger(__name__)

METHODS = ("permutation", "bootstrap")
DEFAULT_RESAMPLES = {"bootstrap": 1000, "permutation": 10000}
# Fewer resamples than this give intervals and p-values that move with the seed: a note says so.
MIN_RESAMPLES = 1000


# ----- results -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Result:
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (floats, ints, strings, None)."""
        return asdict(self)


@dataclass(frozen=True)
class BootstrapCI(_Result):
    """The mean of the segment scores, the standard error and percentile interval of that mean."""

    mean: float
    stderr: float
    low: float
    high: float
    confidence: float
    n_resamples: int
    seed: int | None


@dataclass(frozen=True)
class PairedBootstrap(_Result):
    """mean(b) - mean(a), its percentile interval and sacrebleu's paired bootstrap p-value."""

    difference: float
    low: float
    high: float
    p_value: float
    confidence: float
    n_resamples: int
    seed: int | None


@dataclass(frozen=True)
class PairedPermutation(_Result):
    """mean(b) - mean(a) and the approximate randomization p-value (two-sided)."""

    difference: float
    p_value: float
    n_resamples: int
    seed: int | None


@dataclass(frozen=True)
class SystemComparison(_Result):
    """One system: its mean and interval; against the baseline (None on the baseline's own row):
    the difference mean(system) - mean(baseline), its bootstrap interval and the test's p-value."""

    name: str
    is_baseline: bool
    mean: float
    stderr: float
    low: float
    high: float
    difference: float | None
    difference_low: float | None
    difference_high: float | None
    p_value: float | None
    # True when every segment scores the same in both systems: nothing to test, whatever p says
    # (sacrebleu's strict rule gives such a pair p = 1/(n_resamples + 1)).
    identical: bool | None = None

    def significant(self, level: float = 0.05) -> bool:
        """p < level against the baseline, and a difference to speak of (never for identical scores)."""
        return self.p_value is not None and self.p_value < level and not self.identical


# ----- public functions ---------------------------------------------------------------------------
def bootstrap_ci(
    scores: Any, n_resamples: int = 1000, confidence: float = 0.95, seed: int | None = 0, *,
    notes: list[str] | None = None,
) -> BootstrapCI:
    """The mean of `scores` with its bootstrap standard error and percentile interval.

    Resampled means come from `numpy.random.default_rng(seed).choice(n, size=(n_resamples, n))`
    (the indices sacrebleu and `scipy.stats.bootstrap` draw from the same generator); the interval
    is their (1 - confidence) / 2 and (1 + confidence) / 2 quantiles (linear interpolation) and
    `stderr` their standard deviation (ddof=1), both as `scipy.stats.bootstrap(method="percentile")`.
    `mean` is the plain mean of the scores. `seed=None` draws fresh entropy (not reproducible).
    Fewer than `FEW_SEGMENTS` scores or `MIN_RESAMPLES` resamples give a note (a warning, or
    appended to `notes`): such an interval means little.
    """
    values = _as_scores(scores, "scores")
    _check_settings(n_resamples, seed, confidence)
    _report_weak(few_segments_note(len(values), "interval"), few_resamples_note(n_resamples, "interval"), notes=notes)
    resampled = resampled_means(values[None, :], n_resamples, seed)[0]
    low, high = _percentile_interval(resampled, confidence)
    return BootstrapCI(
        mean=float(np.mean(values)),
        stderr=_stderr(resampled),
        low=low,
        high=high,
        confidence=float(confidence),
        n_resamples=int(n_resamples),
        seed=_seed_value(seed),
    )


def paired_bootstrap(
    scores_a: Any, scores_b: Any, n_resamples: int = 1000, confidence: float = 0.95, seed: int | None = 0, *,
    notes: list[str] | None = None,
) -> PairedBootstrap:
    """Paired bootstrap resampling: is system b's mean different from system a's?

    As sacrebleu's `_paired_bs_test` for a mean-of-segments metric: both systems are resampled
    with the same indices `default_rng(seed).choice(n, size=(n_resamples, n))`; with d* the
    resampled mean(b) - mean(a), the statistic is |d*| - mean(|d*|) (centred on its resampled
    mean) and p = (count(statistic > |observed difference|) + 1) / (n_resamples + 1), strictly
    greater as sacrebleu. `low`/`high`: the percentile interval of d*.

    Beware: this p-value behaves as a one-sided one (the centred |d*| mirrors only the side of
    the observed difference): with no true difference about 10% of pairs, not 5%, get p < 0.05
    (tests/test_stats.py measures it). `paired_permutation` is calibrated; prefer it for a
    decision, or halve the threshold here. sacrebleu seeds with SACREBLEU_SEED (12345 unless
    set) and treats seed 0 as "no seed"; here `seed` is taken as given (0 is a fixed seed).
    Too few segments or resamples give a note (a warning, or appended to `notes`).
    """
    a, b = _as_pair(scores_a, scores_b)
    _check_settings(n_resamples, seed, confidence)
    _report_weak(few_segments_note(len(a)), few_resamples_note(n_resamples, "both"), notes=notes)
    _warn_if_identical(b - a, "paired_bootstrap")
    resampled = resampled_means(np.stack([a, b]), n_resamples, seed)
    deltas = resampled[1] - resampled[0]
    mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
    low, high = _percentile_interval(deltas, confidence)
    return PairedBootstrap(
        difference=mean_b - mean_a,
        low=low,
        high=high,
        p_value=_bootstrap_p_value(deltas, abs(mean_a - mean_b), scale(b - a)),
        confidence=float(confidence),
        n_resamples=int(n_resamples),
        seed=_seed_value(seed),
    )


def paired_permutation(
    scores_a: Any, scores_b: Any, n_resamples: int = 10000, seed: int | None = 0, *, notes: list[str] | None = None,
) -> PairedPermutation:
    """Approximate randomization (paired permutation) test: is mean(b) different from mean(a)?

    As sacrebleu's `_paired_ar_test` for a mean-of-segments metric: selectors
    `default_rng(seed).integers(2, size=(n_resamples, n), dtype=bool)` decide per segment whether
    the two systems swap their scores; the statistic is |mean(shuffled a) - mean(shuffled b)| and
    p = (count(statistic > |observed difference|) + 1) / (n_resamples + 1), strictly greater as
    sacrebleu (a statistic equal to the observed one up to float rounding is a tie, not counted).
    Two-sided and calibrated. Note the sacrebleu rule gives p = 1 / (n_resamples + 1) to two
    identical systems (nothing exceeds a zero difference); a warning is logged then.
    Too few segments or resamples give a note (a warning, or appended to `notes`).
    """
    a, b = _as_pair(scores_a, scores_b)
    _check_settings(n_resamples, seed)
    _report_weak(few_segments_note(len(a)), few_resamples_note(n_resamples, "p-value"), notes=notes)
    _warn_if_identical(b - a, "paired_permutation")
    mean_a, mean_b = float(np.mean(a)), float(np.mean(b))
    diffs = (b - a)[None, :]
    observed = np.array([abs(mean_a - mean_b)])
    count = permutation_exceedances(diffs, observed, n_resamples, seed)[0]
    return PairedPermutation(
        difference=mean_b - mean_a,
        p_value=(int(count) + 1) / (n_resamples + 1),
        n_resamples=int(n_resamples),
        seed=_seed_value(seed),
    )


def compare_systems(
    systems: Mapping[str, Any],
    baseline: str | None = None,
    method: str = "permutation",
    n_resamples: int | None = None,
    confidence: float = 0.95,
    seed: int | None = 0,
    ci_resamples: int = 1000,
    *,
    notes: list[str] | None = None,
) -> list[SystemComparison]:
    """Every system against the baseline (default: the first), one row per system in input order.

    `systems` maps a name to that system's per-segment scores (same segments, same order).
    method="bootstrap": intervals, difference intervals and p-values all come from the same
    `n_resamples` (default 1000) bootstrap draws, as sacrebleu --paired-bs; each row equals
    `bootstrap_ci(scores)` and `paired_bootstrap(baseline, scores)` with the same seed.
    method="permutation" (default, calibrated): p from `paired_permutation` with `n_resamples`
    (default 10000) selectors, shared by every system as in sacrebleu --paired-ar; the intervals
    (of each mean and of each difference) come from `ci_resamples` bootstrap draws, same seed.
    Too few segments or resamples give one note each per call (a warning, or appended to `notes`).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    if not isinstance(systems, Mapping) or not systems:
        raise ValueError("systems must be a non-empty mapping: system name -> per-segment scores")
    names = list(systems)
    if baseline is None:
        baseline = names[0]
    if baseline not in systems:
        raise ValueError(f"baseline {baseline!r} is not one of the systems ({', '.join(map(repr, names))})")
    if n_resamples is None:
        n_resamples = DEFAULT_RESAMPLES[method]
    _check_settings(n_resamples, seed, confidence)
    _check_settings(ci_resamples, seed, resamples_name="ci_resamples")
    arrays = [_as_scores(systems[name], f"systems[{name!r}]") for name in names]
    lengths = {name: len(values) for name, values in zip(names, arrays)}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name!r}: {length}" for name, length in lengths.items())
        raise ValueError(f"systems must score the same segments; their lengths differ ({listed})")
    # One note per kind per call, whatever the number of systems (a lone system has intervals only).
    segments_note = few_segments_note(len(arrays[0]), "paired" if len(names) > 1 else "interval")
    if method == "bootstrap":  # one set of draws for intervals and p-values
        _report_weak(segments_note, few_resamples_note(n_resamples, "both"), notes=notes)
    else:
        _report_weak(segments_note, few_resamples_note(n_resamples, "p-value"),
                     few_resamples_note(ci_resamples, "interval"), notes=notes)

    matrix = np.stack(arrays)
    base = names.index(baseline)
    means = matrix.mean(axis=1)
    resampled = resampled_means(matrix, n_resamples if method == "bootstrap" else ci_resamples, seed)
    others = [i for i in range(len(names)) if i != base]
    if method == "permutation" and others:
        observed = np.abs(means[base] - means[others])
        counts = permutation_exceedances(matrix[others] - matrix[base], observed, n_resamples, seed)
        permutation_p = {i: (int(c) + 1) / (n_resamples + 1) for i, c in zip(others, counts)}

    rows = []
    for i, name in enumerate(names):
        low, high = _percentile_interval(resampled[i], confidence)
        compared: dict[str, Any] = dict.fromkeys(("difference", "difference_low", "difference_high", "p_value"))
        if i != base:
            _warn_if_identical(matrix[i] - matrix[base], f"compare_systems: {name!r} vs the baseline {baseline!r}")
            deltas = resampled[i] - resampled[base]
            d_low, d_high = _percentile_interval(deltas, confidence)
            observed_gap = abs(float(means[base]) - float(means[i]))
            compared = {
                "difference": float(means[i]) - float(means[base]),
                "difference_low": d_low,
                "difference_high": d_high,
                "p_value": permutation_p[i] if method == "permutation"
                else _bootstrap_p_value(deltas, observed_gap, scale(matrix[i] - matrix[base])),
                "identical": not (matrix[i] - matrix[base]).any(),
            }
        rows.append(SystemComparison(
            name=name, is_baseline=i == base, mean=float(means[i]), stderr=_stderr(resampled[i]),
            low=low, high=high, **compared,
        ))
    return rows


FEW_SEGMENTS = 12  # below this, 2^n sign flips are too few for approximate randomization to mean much


def few_segments_note(n: int, statistic: str = "paired") -> str | None:
    """A caution for statistics over very few segments, or None.

    statistic="paired" (a paired test): with n segments there are only 2^n distinct swaps, and
    sacrebleu's rule counts strictly larger statistics only, so a consistent difference on 3
    segments gets p = 1/(R+1) although the exact two-sided p is 2/8. Read such p-values as "too
    few segments to tell". statistic="interval" (a bootstrap interval of a mean): resampling n
    scores gives at most C(2n-1, n) distinct means, and a percentile interval of a small sample
    is too narrow (it covers the mean less often than its confidence says).
    """
    if statistic not in ("paired", "interval"):
        raise ValueError(f"statistic must be 'paired' or 'interval'; got {statistic!r}")
    if n >= FEW_SEGMENTS:
        return None
    items = segments()  # "segments", or the door's word for them ("rows" on the Space's page)
    if statistic == "interval":
        return (f"only {n} {items}: a bootstrap interval from so few is too narrow, covering the mean less often "
                f"than its confidence says (resampling {n} scores gives at most {math.comb(2 * n - 1, n)} distinct "
                f"means); score more {items}")
    return (f"only {n} {items}: a paired test has at most 2^{n} = {2 ** n} distinct outcomes here, so its p-value "
            "is not meaningful (the exact two-sided p of a consistent difference is at least "
            f"{2 / 2 ** n:.3g}); compare systems on more {items}")


def few_resamples_note(n_resamples: int, statistic: str = "interval") -> str | None:
    """A warning for fewer than MIN_RESAMPLES resamples, or None.

    statistic: "interval", "p-value" or "both". Fewer draws leave interval ends and p-values
    moving with the seed (one resample gives a zero-width interval), and a p-value cannot go
    below 1/(n_resamples + 1).
    """
    subjects = {"interval": "a bootstrap interval", "p-value": "a p-value", "both": "intervals and p-values"}
    if statistic not in subjects:
        raise ValueError(f"statistic must be one of {', '.join(map(repr, subjects))}; got {statistic!r}")
    if n_resamples >= MIN_RESAMPLES:
        return None
    floor = "" if statistic == "interval" else (
        f"; a p-value cannot go below 1/({n_resamples} + 1) = {1 / (n_resamples + 1):.3g}")
    width = " (1 resample: an interval of zero width)" if n_resamples == 1 and statistic != "p-value" else ""
    return (f"only {counted(n_resamples, 'resample')}: fewer than {MIN_RESAMPLES:,} make "
            f"{subjects[statistic]} rough, moving with the seed{width}{floor}; use {MIN_RESAMPLES:,} or more")


def confidence_label(confidence: float) -> str:
    """`confidence` as a percentage written as given: 0.95 -> "95%", 0.999 -> "99.9%", 0.975 -> "97.5%".

    From the shortest decimal of the float (its repr), so no rounding turns 0.999 into "100%".
    """
    # A numpy float is written in its own precision: str(np.float32(0.95)) is "0.95", its float() is not.
    text = str(confidence) if isinstance(confidence, np.floating) else repr(float(confidence))
    percent = (Decimal(text) * 100).normalize()
    return f"{percent:f}%"


# ----- small helpers ------------------------------------------------------------------------------
def _report_weak(*messages: str | None, notes: list[str] | None) -> None:
    """Each caution that applies, once: a warning at the caller of the public function, or into `notes`."""
    for message in messages:
        if message is not None:
            report(message, notes)


def _bootstrap_p_value(deltas: np.ndarray, observed: float, scale: float) -> float:
    """sacrebleu's paired bootstrap p from resampled differences `deltas` (see paired_bootstrap)."""
    magnitudes = np.abs(deltas)
    statistics = magnitudes - magnitudes.mean()
    count = np.count_nonzero(statistics > observed + TIE_TOLERANCE * scale)
    return (int(count) + 1) / (len(deltas) + 1)


def _warn_if_identical(diffs: np.ndarray, what: str) -> None:
    """sacrebleu's strict `>` gives p = 1/(n_resamples + 1) to identical systems: say so."""
    if not diffs.any():
        logger.warning(
            "%s: identical scores, so no difference to test; sacrebleu's rule still gives "
            "p = 1/(n_resamples + 1) (nothing exceeds a zero difference): read it as 'no difference'", what
        )


def _percentile_interval(resampled: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1 - confidence) / 2
    low, high = np.quantile(resampled, [alpha, 1 - alpha])
    return float(low), float(high)


def _stderr(resampled: np.ndarray) -> float:
    return float(np.std(resampled, ddof=1)) if len(resampled) > 1 else 0.0


def _seed_value(seed: int | None) -> int | None:
    return None if seed is None else int(seed)


def _as_scores(values: Any, name: str) -> np.ndarray:
    """A validated float64 copy of one system's per-segment scores (a ValueError saying what is wrong)."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor, without importing torch
        values = values.detach().cpu().double().numpy()
    raw = np.asarray(values)
    if raw.dtype.kind not in "iuf":
        raise ValueError(
            f"{name} must be numbers, one score per segment; got {raw.dtype} values"
            + (" (a None or a non-number among them?)" if raw.dtype == object else "")
        )
    array = raw.astype(np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one score per segment (1-D); got shape {tuple(array.shape)}")
    if array.size < 2:
        raise ValueError(f"{name} has {array.size} segment(s); resampling needs at least 2")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        shown = ", ".join(f"index {i} ({array[i]})" for i in bad[:5])
        more = f" and {bad.size - 5} more" if bad.size > 5 else ""
        raise ValueError(f"{name} has non-finite values at {shown}{more}; fix or drop those segments")
    return array


def _as_pair(scores_a: Any, scores_b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_scores(scores_a, "scores_a"), _as_scores(scores_b, "scores_b")
    if len(a) != len(b):
        raise ValueError(
            f"scores_a and scores_b must score the same segments; they have {len(a)} and {len(b)} scores"
        )
    return a, b


def check_bootstrap_settings(n_resamples: Any, seed: Any, confidence: Any, confidence_name: str = "confidence") -> None:
    """ValueError naming the setting when `bootstrap_ci` would refuse these (check before costly work);
    `confidence_name` is the caller's name for it (evaluate's compute() says confidence_level)."""
    _check_settings(n_resamples, seed, confidence, confidence_name=confidence_name)


def _check_settings(n_resamples: Any, seed: Any, confidence: Any = None, resamples_name: str = "n_resamples",
                    confidence_name: str = "confidence") -> None:
    if not isinstance(n_resamples, numbers.Integral) or isinstance(n_resamples, bool) or n_resamples < 1:
        raise ValueError(f"{resamples_name} must be an integer >= 1; got {n_resamples!r}")
    if confidence is not None and (
        isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) or not 0 < confidence < 1
    ):
        raise ValueError(f"{confidence_name} must be between 0 and 1 (exclusive), e.g. 0.95; got {confidence!r}")
    if seed is not None and (not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"seed must be an integer >= 0 or None (fresh entropy); got {seed!r}")
