"""The resampling engine of the statistics: sacrebleu's random draws, made in blocks of one stream.

Bootstrap indices and permutation selectors are drawn exactly as sacrebleu draws them (same
seed, same numbers), a block of rows at a time, so memory stays bounded whatever the corpus
size and results do not depend on the block size. Pure numpy.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

# Random draws per block: 8 MiB of int64 indices, small enough for malloc to reuse between blocks.
BLOCK_ELEMENTS = 1 << 20
# numpy draws booleans from a 32-bit buffer that each `integers` call starts afresh: blocks of
# a multiple of 32 rows (of any length) consume whole buffers, so they continue the same stream.
SELECTOR_ROW_MULTIPLE = 32
# Resampled statistics within this fraction of the score scale of the observed one are ties
# (equal in exact arithmetic, apart by float rounding only); ties never count as exceeding.
TIE_TOLERANCE = 1e-9


def index_blocks(n: int, n_resamples: int, seed: int | None) -> Iterator[np.ndarray]:
    """The rows of `default_rng(seed).choice(n, size=(n_resamples, n))`, a block at a time.

    `choice` draws int64 indices from 32-bit halves that the generator itself keeps between
    calls, so blocks of any size give exactly the one-shot draw.
    """
    rng = np.random.default_rng(seed)
    rows = max(1, BLOCK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        yield rng.choice(n, size=(min(rows, n_resamples - start), n))


def selector_blocks(n: int, n_resamples: int, seed: int | None) -> Iterator[np.ndarray]:
    """The rows of `default_rng(seed).integers(2, size=(n_resamples, n), dtype=bool)`, in blocks.

    Booleans come from a 32-bit buffer local to each call, so every block but the last holds a
    multiple of 32 rows: it uses whole buffers and the next block continues the same stream.
    """
    rng = np.random.default_rng(seed)
    rows = max(1, BLOCK_ELEMENTS // (n * SELECTOR_ROW_MULTIPLE)) * SELECTOR_ROW_MULTIPLE
    for start in range(0, n_resamples, rows):
        yield rng.integers(2, size=(min(rows, n_resamples - start), n), dtype=bool)


def resampled_means(matrix: np.ndarray, n_resamples: int, seed: int | None) -> np.ndarray:
    """[k, n_resamples]: each row of `matrix` [k, n] averaged over the same bootstrap resamples."""
    k, n = matrix.shape
    means = np.empty((k, n_resamples))
    gathered = np.empty((max(1, min(n_resamples, BLOCK_ELEMENTS // n)), n))
    start = 0
    for indices in index_blocks(n, n_resamples, seed):
        rows = len(indices)
        block = gathered[:rows]
        for row in range(k):
            np.take(matrix[row], indices, out=block)
            means[row, start:start + rows] = block.mean(axis=1)
        start += rows
    return means


def permutation_exceedances(diffs: np.ndarray, observed: np.ndarray, n_resamples: int, seed: int | None) -> np.ndarray:
    """Per row of `diffs` [m, n] (= b - a): how many randomizations exceed `observed` [m].

    Swapping the systems on the selected segments turns mean(a') - mean(b') into
    (sum(d) - 2 * sum(d over selected)) / n; all rows share the same selectors. A block of
    selectors is summed a slice of segments at a time, so memory stays bounded for long corpora.
    """
    m, n = diffs.shape
    totals = diffs.sum(axis=1)
    thresholds = observed + TIE_TOLERANCE * np.array([scale(row) for row in diffs])
    counts = np.zeros(m, dtype=np.int64)
    as_float = None
    for selectors in selector_blocks(n, n_resamples, seed):
        if as_float is None:
            as_float = np.empty((len(selectors), min(n, max(1, BLOCK_ELEMENTS // len(selectors)))))
        rows, columns = len(selectors), as_float.shape[1]
        selected_sums = np.zeros((rows, m))
        for start in range(0, n, columns):
            part = selectors[:, start:start + columns]
            block = as_float[:rows, : part.shape[1]]
            np.copyto(block, part)
            selected_sums += block @ diffs[:, start:start + columns].T
        statistics = np.abs(totals - 2.0 * selected_sums) / n
        counts += np.count_nonzero(statistics > thresholds, axis=0)
    return counts


def scale(values: np.ndarray) -> float:
    """The score scale of `values` (its largest magnitude): ties are judged relative to it."""
    return float(np.max(np.abs(values)))
