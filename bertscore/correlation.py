"""Agreement of a metric with human judgements: correlations, their intervals, and tests between them.

Pure numpy (no scipy, no model), beside `stats.py` (which compares means of segment scores):

- `pearson(x, y)`: Pearson's r, in float64 over centred values.
- `kendall_tau_b(x, y)`: Kendall's tau-b (ties in either variable corrected), as
  `scipy.stats.kendalltau`'s default, in O(n log^2 n) with numpy (a bottom-up merge count of
  discordant pairs), so 100,000 segments take well under a second.
- `concordance(better, worse)`: the WMT relative-ranking (DARR) Kendall-like tau: per judged pair
  +1 when the metric scores the human's better output higher, -1 otherwise (a metric tie counts
  against the metric, as in the WMT18-20 metrics tasks); tau = (Concordant - Discordant) /
  (Concordant + Discordant) is the mean of these signs, so `stats.bootstrap_ci` and
  `stats.paired_permutation` apply to it as to any mean of segment scores.
- `williams_test(r12, r13, r23, n)`: Williams' (1959) test for two dependent correlations
  sharing a variable (metric A and metric B, each with the human scores), one-sided, as the WMT
  metrics tasks use it (Graham & Baldwin 2014; the `r.test` of R's psych package).
- `bootstrap_pearson_ci(rows, human, ...)`: percentile intervals of r for several score rows
  (layers) from one set of bootstrap resamples, drawn as `stats` draws them (sacrebleu's
  indices, in blocks of one random stream: bounded memory whatever the corpus size).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .resampling import index_blocks


@dataclass(frozen=True)
class WilliamsTest:
    """Williams' t for r12 > r13 (both with variable 1), its degrees of freedom and one-sided p."""

    statistic: float
    df: int
    p_value: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _vector(values: Any, name: str) -> np.ndarray:
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor, without importing torch
        values = values.detach().cpu().double().numpy()
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one value per segment (1-D); got shape {tuple(array.shape)}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} has non-finite values (index {int(np.flatnonzero(~np.isfinite(array))[0])})")
    return array


def _pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = _vector(x, "x"), _vector(y, "y")
    if len(a) != len(b):
        raise ValueError(f"x and y must have one value per segment each; they have {len(a)} and {len(b)}")
    if len(a) < 2:
        raise ValueError(f"a correlation needs at least 2 segments, got {len(a)}")
    return a, b


def pearson(x: Any, y: Any) -> float:
    """Pearson's r of x and y; NaN when either is constant (no correlation is defined)."""
    a, b = map(_standardised, _pair(x, y))
    if a is None or b is None:
        return math.nan
    denominator = math.sqrt(float(a @ a) * float(b @ b))
    return max(-1.0, min(1.0, float(a @ b) / denominator)) if denominator > 0 else math.nan


def _standardised(values: np.ndarray) -> np.ndarray | None:
    """values centred, at a largest |value| of 1 (Pearson's r does not change); None if constant.
    Scaled before centring and after: a tiny spread such as [0, 5e-324] would otherwise lose its
    mean to rounding or square to 0, giving a wrong r or NaN where r is defined (as scipy scales)."""
    scale = float(np.abs(values).max(initial=0.0))
    if scale == 0:
        return None
    centred = values / scale
    centred = centred - centred.mean()
    spread = float(np.abs(centred).max(initial=0.0))
    return centred / spread if spread > 0 else None


def _tied_pairs(sorted_values: np.ndarray) -> int:
    """Pairs of equal values in a sorted array: the sum of c(c-1)/2 over runs of length c."""
    if len(sorted_values) == 0:
        return 0
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1], True])
    counts = np.diff(starts).astype(np.int64)
    return int((counts * (counts - 1) // 2).sum())


def count_inversions(values: np.ndarray) -> int:
    """Pairs i < j with values[i] > values[j] (strictly), by a bottom-up merge in numpy.

    At each width w, every block of w values is sorted; for each value of a right block, the
    values of its left partner that exceed it are counted with one `searchsorted` over keys
    (pair index, value), globally sorted because blocks are; then each pair of blocks is merged
    by one sort of those keys. log2(n) levels of O(n log n): O(n log^2 n).
    """
    _, ranks = np.unique(values, return_inverse=True)
    ranks = ranks.astype(np.int64).ravel()
    n = len(ranks)
    span = int(ranks.max()) + 1 if n else 1
    inversions = 0
    width = 1
    positions = np.arange(n, dtype=np.int64)
    while width < n:
        pair = positions // (2 * width)
        right = (positions // width) % 2 == 1
        keys = pair * span + ranks
        left_keys = keys[~right]  # sorted: pairs in order, each left block sorted
        right_keys, right_pairs = keys[right], pair[right]
        ends = np.searchsorted(left_keys, (right_pairs + 1) * span, side="left")
        not_greater = np.searchsorted(left_keys, right_keys, side="right")
        inversions += int((ends - not_greater).sum())
        ranks = np.sort(keys) - np.repeat(np.arange(pair[-1] + 1, dtype=np.int64) * span,
                                          np.bincount(pair))
        width *= 2
    return inversions


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's tau-b of x and y (ties corrected, as scipy's default); NaN when either is constant.

    tau_b = (n0 - n1 - n2 + n3 - 2 * discordant) / sqrt((n0 - n1) * (n0 - n2)), with n0 all pairs,
    n1 / n2 the pairs tied in x / in y and n3 those tied in both (Knight's method).
    """
    a, b = _pair(x, y)
    order = np.lexsort((b, a))  # by x, ties in x by y: a pair tied in x is never counted discordant
    a, b = a[order], b[order]
    n0 = len(a) * (len(a) - 1) // 2
    tied_x = _tied_pairs(a)
    tied_y = _tied_pairs(np.sort(b))
    both = np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1]), True]
    counts = np.diff(np.flatnonzero(both)).astype(np.int64)
    tied_both = int((counts * (counts - 1) // 2).sum())
    discordant = count_inversions(b)
    denominator = math.sqrt(float(n0 - tied_x) * float(n0 - tied_y))
    if denominator == 0:
        return math.nan
    return float(n0 - tied_x - tied_y + tied_both - 2 * discordant) / denominator


def concordance(better: Any, worse: Any) -> np.ndarray:
    """+1 where the metric scores the human's better output higher, else -1 (a tie counts against it).

    The WMT relative-ranking tau is the mean of these signs: (Concordant - Discordant) / all pairs.
    """
    b, w = _vector(better, "better"), _vector(worse, "worse")
    if len(b) != len(w):
        raise ValueError(f"better and worse must score the same judged pairs; they have {len(b)} and {len(w)}")
    return np.where(b > w, 1.0, -1.0)


# ----- Williams' test -------------------------------------------------------------------------------
def williams_test(r12: float, r13: float, r23: float, n: int) -> WilliamsTest:
    """Williams' t for "r12 > r13" where r12 = r(human, A), r13 = r(human, B), r23 = r(A, B).

    t = (r12 - r13) sqrt((n - 1)(1 + r23)) / sqrt(2 K (n - 1)/(n - 3) + (r12 + r13)^2 / 4 (1 - r23)^3),
    K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23, with n - 3 degrees of freedom; p = P(T > t),
    one-sided (Williams 1959, eq. in Steiger 1980; Graham & Baldwin 2014 for MT metrics).
    """
    for name, value in (("r12", r12), ("r13", r13), ("r23", r23)):
        if not (isinstance(value, (int, float)) and -1 <= value <= 1):
            raise ValueError(f"{name} must be a correlation in [-1, 1]; got {value!r}")
    if int(n) != n or n < 4:
        raise ValueError(f"Williams' test needs n >= 4 segments (n - 3 degrees of freedom); got {n!r}")
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3
    if r12 == r13:
        t = 0.0
    elif denominator <= 0:  # A and B perfectly correlated, or a degenerate matrix: the sign says it all
        t = math.copysign(math.inf, r12 - r13)
    else:
        t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denominator)
    return WilliamsTest(statistic=float(t), df=int(n) - 3, p_value=student_t_sf(t, int(n) - 3))


def student_t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom (the regularized incomplete beta)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _incomplete_beta(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta I_x(a, b), y = 1 - x given exactly (x near 1 loses it), by
    its continued fraction (Lentz's method)."""
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast on this side only: use the symmetry
        return 1.0 - _incomplete_beta(b, a, y, x)
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return math.exp(log_front) * fraction / a


# ----- bootstrap interval of r ----------------------------------------------------------------------
def bootstrap_pearson_ci(
    rows: Any, human: Any, n_resamples: int = 1000, confidence: float = 0.95, seed: int | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): the percentile interval of Pearson's r for each row of `rows` [L, n] with `human` [n].

    Every row is resampled with the same indices, `default_rng(seed).choice(n, size=(n_resamples, n))`
    drawn in blocks (`resampling.index_blocks`), so the intervals of all rows come from one set of
    draws, and memory stays bounded. A resample where a side is constant has no r and is left
    out of that row's quantiles (NaN bounds if no resample has one).
    """
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    target = _vector(human, "human")
    if matrix.shape[1] != len(target):
        raise ValueError(f"rows have {matrix.shape[1]} values each but human has {len(target)}")
    resampled = np.empty((len(matrix), n_resamples))
    start = 0
    for indices in index_blocks(len(target), n_resamples, seed):
        h = target[indices]
        h -= h.mean(axis=1, keepdims=True)
        h_norm = np.sqrt(np.einsum("ij,ij->i", h, h))
        for row, values in enumerate(matrix):
            x = values[indices]
            x -= x.mean(axis=1, keepdims=True)
            denominator = np.sqrt(np.einsum("ij,ij->i", x, x)) * h_norm
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled[row, start:start + len(indices)] = np.where(
                    denominator > 0, np.einsum("ij,ij->i", x, h) / denominator, np.nan)
        start += len(indices)
    alpha = (1 - confidence) / 2
    low, high = np.full(len(matrix), np.nan), np.full(len(matrix), np.nan)
    for row in range(len(matrix)):
        values = resampled[row][np.isfinite(resampled[row])]
        if len(values):
            low[row], high[row] = np.quantile(values, [alpha, 1 - alpha])
    return low, high


__all__ = [
    "WilliamsTest", "bootstrap_pearson_ci", "concordance", "count_inversions", "kendall_tau_b", "pearson",
    "student_t_sf", "williams_test",
]
