"""Figures: the token-similarity heatmap of an `Explanation` and a histogram of scores.

Drawn with matplotlib's object-oriented API only (`matplotlib.figure.Figure`, never
`pyplot`): a figure belongs to its caller, nothing is registered in pyplot's global figure
list, and figures drawn at the same time from several threads (a Space serving concurrent
requests) share no state. Nothing here needs a display or a GUI backend.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from .explain import Explanation, explain_pair
from .output_files import write_bytes
from .pipeline import HasPipeline

logger = logging.getLogger(__name__)

HEATMAP_LABEL_LIMIT = 60  # tokens per side beyond which tick labels are dropped
PRECISION_MATCHES = "precision-matches"  # gid of the circles: each candidate token's best reference token
RECALL_MATCHES = "recall-matches"  # gid of the crosses: each reference token's best candidate token
SIMILARITY_IMAGE = "similarity"  # gid of the heatmap image


def _label(token: str, weight: float, idf: bool) -> str:
    return f"{token} ({weight:.2f})" if idf else token


def heatmap_figure(explanation: Explanation, label_limit: int = HEATMAP_LABEL_LIMIT) -> Figure:
    """Cosine similarity of candidate (rows) x winning reference (columns) tokens, with the matches.

    Circles mark each candidate token's best reference token (the row maxima behind precision),
    crosses each reference token's best candidate token (the column maxima behind recall);
    tokens of weight 0 (special tokens, idf 0) are not marked since they do not count.
    """
    ref = explanation.best
    if ref.similarity is None:
        raise ValueError(
            f"the {len(explanation.tokens)} x {len(ref.tokens)} similarity matrix of this pair was too large to keep "
            "(long texts): its best matches are in the explanation, but there is no matrix to draw"
        )
    sim = ref.similarity.detach().float().cpu().numpy()
    rows, cols = sim.shape
    fig = Figure(figsize=(min(18.0, 3.0 + 0.42 * cols), min(18.0, 3.0 + 0.36 * rows)), dpi=90)
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
    if rows <= label_limit and cols <= label_limit:
        # parse_math=False: a token such as "$5" is text, not the start of a formula.
        ax.set_yticks(range(rows), [_label(t, w, explanation.idf) for t, w in zip(explanation.tokens, explanation.weights)],
                      parse_math=False)
        ax.set_xticks(range(cols), [_label(t, w, explanation.idf) for t, w in zip(ref.tokens, ref.weights)],
                      rotation=60, ha="right", parse_math=False)
    weight_note = " (idf weight)" if explanation.idf else ""
    ax.set_ylabel("candidate tokens" + weight_note)
    ax.set_xlabel(f"reference #{explanation.winner + 1} tokens" + weight_note)
    ax.set_title(f"Token similarity, candidate vs reference #{explanation.winner + 1}  (F1 {ref.f1:.4f})", fontsize=11)
    fig.legend(loc="lower center", ncol=1, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
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
        raise TypeError(f"candidate is a {type(candidate).__name__}, not a string")
    fig = heatmap_figure(explain_pair(scorer, candidate, reference))
    if fname:
        save_figure(fig, fname)
    return fig


__all__ = ["HEATMAP_LABEL_LIMIT", "heatmap_figure", "histogram_figure", "plot_example", "save_figure"]
