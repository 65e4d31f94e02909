"""Figures: the token-similarity heatmap of an `Explanation` and a histogram of scores.

Drawn with matplotlib's object-oriented API only (`matplotlib.figure.Figure`, never
`pyplot`): a figure belongs to its caller, nothing is registered in pyplot's global figure
list, and figures drawn at the same time from several threads (a Space serving concurrent
requests) share no state. Nothing here needs a display or a GUI backend.
"""

from __future__ import annotations

import io
import logging
import math
import os
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from ..explain import Explanation, explain_pair
from ..output_files import write_bytes
from ..scoring.pipeline import HasPipeline
from ..wording import a_type
from .fonts import families_for

logger = logging.getLogger(__name__)

HEATMAP_LABEL_LIMIT = 60  # tokens per side labelled one by one at most; longer sides label every k-th token
PRECISION_MATCHES = "precision-matches"  # gid of the circles: each candidate token's best reference token
RECALL_MATCHES = "recall-matches"  # gid of the crosses: each reference token's best candidate token
SIMILARITY_IMAGE = "similarity"  # gid of the heatmap image
# The heatmap's size (inches at 90 dpi): the matrix fills at most MAX_MATRIX_* (so the figure stays
# within about 1,100 x 700 pixels, a laptop screen), each cell at most MAX_CELL_* (short pairs stay compact).
MAX_MATRIX_WIDTH, MAX_MATRIX_HEIGHT = 8.6, 4.4
MAX_CELL_WIDTH, MAX_CELL_HEIGHT = 0.42, 0.3
MIN_LABEL_POINTS, MAX_LABEL_POINTS = 7.0, 10.0


def _label(token: str, weight: float, idf: bool) -> str:
    return f"{token} ({weight:.2f})" if idf else token


def heatmap_title(explanation: Explanation) -> str:
    """What the heatmap shows, and its pair's F1 labelled raw (and rescaled, when the scorer rescales)."""
    ref = explanation.best
    scores = f"F1 {ref.f1:.4f} raw" + (f", {ref.rescaled[2]:.4f} rescaled" if ref.rescaled is not None else "")
    return f"Token similarity, candidate vs reference #{explanation.winner + 1}: {scores}"


def _ticks(count: int, length_inches: float, max_labels: int) -> tuple[list[int], float]:
    """Which of `count` tokens along an axis of `length_inches` get a label, and the labels' size in
    points: every token while the labels fit at a readable size, else every k-th token."""
    points_per_token = 72.0 * length_inches / count
    size = min(MAX_LABEL_POINTS, max(MIN_LABEL_POINTS, 0.75 * points_per_token))
    step = max(1, math.ceil(count / max_labels), math.ceil(1.25 * size / points_per_token))
    return list(range(0, count, step)), size


def _axis_label(side: str, step_of: list[int], count: int, idf: bool) -> str:
    every = "" if len(step_of) == count else f", every {_ordinal(step_of[1] - step_of[0])} labelled"
    return f"{side} tokens{' (idf weight)' if idf else ''}{every}"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def heatmap_figure(explanation: Explanation, label_limit: int = HEATMAP_LABEL_LIMIT) -> Figure:
    """Cosine similarity of candidate (rows) x winning reference (columns) tokens, with the matches.

    Circles mark each candidate token's best reference token (the row maxima behind precision),
    crosses each reference token's best candidate token (the column maxima behind recall);
    tokens of weight 0 (special tokens, idf 0) are not marked since they do not count. The title
    gives the pair's F1, labelled raw (and rescaled). Every token is labelled while labels fit at
    a readable size (at most `label_limit` per axis), else every k-th one; labels draw in fonts
    that have their characters (`fonts.families_for`).
    """
    ref = explanation.best
    if ref.similarity is None:
        raise ValueError(
            f"the {len(explanation.tokens)} x {len(ref.tokens)} similarity matrix of this pair was too large to keep "
            "(long texts): its best matches are in the explanation, but there is no matrix to draw"
        )
    sim = ref.similarity.detach().float().cpu().numpy()
    rows, cols = sim.shape
    matrix_width = max(2.5, min(MAX_MATRIX_WIDTH, MAX_CELL_WIDTH * cols))
    matrix_height = max(1.8, min(MAX_MATRIX_HEIGHT, MAX_CELL_HEIGHT * rows))
    row_ticks, row_size = _ticks(rows, matrix_height, label_limit)
    col_ticks, col_size = _ticks(cols, matrix_width, label_limit)
    fig = Figure(figsize=(matrix_width + 3.8, matrix_height + 3.4), dpi=90)
    ax = fig.add_subplot()
    image = ax.imshow(sim, cmap="viridis", vmin=min(0.0, float(sim.min())), vmax=1.0, aspect="auto")
    image.set_gid(SIMILARITY_IMAGE)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="cosine similarity")
    p_rows = [i for i in range(rows) if explanation.weights[i] > 0]
    r_cols = [j for j in range(cols) if ref.weights[j] > 0]
    ax.scatter([ref.cand_best[i] for i in p_rows], p_rows, marker="o", s=110, facecolors="none",
               edgecolors="red", linewidths=2, gid=PRECISION_MATCHES,
               label="precision: best reference token per candidate token (row max)")
    ax.scatter(r_cols, [ref.ref_best[j] for j in r_cols], marker="x", s=70, c="#ff8c00", linewidths=2,
               gid=RECALL_MATCHES, label="recall: best candidate token per reference token (column max)")
    idf = explanation.idf
    row_labels = [_label(explanation.tokens[i], explanation.weights[i], idf) for i in row_ticks]
    col_labels = [_label(ref.tokens[j], ref.weights[j], idf) for j in col_ticks]
    families = families_for(row_labels + col_labels)
    # parse_math=False: a token such as "$5" is text, not the start of a formula.
    ax.set_yticks(row_ticks, row_labels, parse_math=False, fontsize=row_size, fontfamily=families)
    ax.set_xticks(col_ticks, col_labels, rotation=60, ha="right", rotation_mode="anchor", parse_math=False,
                  fontsize=col_size, fontfamily=families)
    ax.set_ylabel(_axis_label("candidate", row_ticks, rows, idf))
    ax.set_xlabel(_axis_label(f"reference #{explanation.winner + 1}", col_ticks, cols, idf))
    ax.set_title(heatmap_title(explanation), fontsize=11)
    fig.legend(loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 0.96))  # room above the title (a page's label may sit there)
    return fig


def histogram_figure(values: Sequence[float], label: str) -> Figure:
    """A histogram of per-row scores (`label` names them, e.g. "F1 (raw)")."""
    values = [float(v) for v in values]
    fig = Figure(figsize=(6.5, 3.2), dpi=90)
    ax = fig.add_subplot()
    ax.hist(values, bins=min(30, max(5, len(values) // 2)), color="#4c72b0", edgecolor="white")
    ax.set_xlabel(label)
    ax.set_ylabel("rows")
    ax.set_title(f"Distribution of {label} over {len(values)} rows", fontsize=11)
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, path: str | os.PathLike[str], dpi: int = 100) -> Path:
    """Write `fig` to `path` (format from the extension: .png, .pdf, .svg...); returns the path."""
    path = Path(path)
    buffer = io.BytesIO()  # rendered whole first: the one writer then replaces the file atomically
    fig.savefig(buffer, dpi=dpi, format=path.suffix[1:].lower() or None)
    write_bytes(path, buffer.getvalue())
    logger.info("saved figure to %s", path)
    return path


def plot_example(scorer: HasPipeline, candidate: str, reference: str | Sequence[str], fname: str = "") -> Figure:
    """The heatmap of one pair, as the official `BERTScorer.plot_example`; saved when `fname` is given.

    Unlike the official one (which shows the figure and returns nothing), it returns the
    figure; `reference` may also be a list (the winning reference is drawn).
    """
    if not isinstance(candidate, str):
        raise TypeError(f"candidate is {a_type(candidate)}, not a string")
    fig = heatmap_figure(explain_pair(scorer, candidate, reference))
    if fname:
        save_figure(fig, fname)
    return fig


__all__ = ["HEATMAP_LABEL_LIMIT", "heatmap_figure", "heatmap_title", "histogram_figure", "plot_example", "save_figure"]
