"""One batch scored for the Space: per-row scores, raw ones next to rescaled ones, a second system
compared, and the summary (corpus means with intervals, the comparison, the hash, notes)."""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from ..notes import name_some, spelled
from .messages import BATCH_SPELLING, shortened
from .reports import comparison_md, fmt, means_md, notes_md
from .service import ScorerSettings, ScoringService


class BatchScores(NamedTuple):
    """A scored batch: its table (full precision), the summary in Markdown, which scores the main
    columns hold ("rescaled" or "raw") and the scorer's hash."""

    frame: pd.DataFrame
    summary: str
    kind: str
    hashcode: str


def score_batch(service: ScoringService, settings: ScorerSettings, candidates: list[str], groups: list[list[str]],
                candidates_b: list[str] | None = None) -> BatchScores:
    """Score checked rows (and system B's candidates against the same references, when given)."""
    with spelled(BATCH_SPELLING):  # notes name rows as the page shows them, counting from 1
        return _score_batch(service, settings, candidates, groups, candidates_b)


def _score_batch(service: ScoringService, settings: ScorerSettings, candidates: list[str], groups: list[list[str]],
                 candidates_b: list[str] | None) -> BatchScores:
    scorer, notes = service.scorer(**settings._asdict())
    score_notes: list[str] = []
    # verbose: the scorer's tqdm bar (advanced per encoder batch) drives the page's progress bar.
    precision, recall, f1 = scorer.score(candidates, groups, verbose=True, notes=score_notes)
    notes += [shortened(note, 300) for note in score_notes]
    frame = pd.DataFrame({
        "row": range(1, len(candidates) + 1),
        "candidate": candidates,
        "references": [" ‖ ".join(g) for g in groups],
        "precision": precision.tolist(),
        "recall": recall.tolist(),
        "f1": f1.tolist(),
    })
    kind = "rescaled" if scorer.rescale_with_baseline else "raw"
    summary = f"**{len(frame)} rows** — corpus mean ({kind})" + means_md(frame, notes)
    if scorer.rescale_with_baseline:  # raw scores next to rescaled ones (same encoder and cache)
        raw_scorer, _ = service.scorer(**settings._replace(rescale=False)._asdict())
        raw = raw_scorer.score(candidates, groups, notes=[])
        for name, values in zip(("precision", "recall", "f1"), raw):
            frame[f"{name} (raw)"] = values.tolist()
        summary += (f"\n\ncorpus mean (raw): P {fmt(raw[0].mean().item())}, R {fmt(raw[1].mean().item())}, "
                    f"F1 {fmt(raw[2].mean().item())}")
        zero_note = _rescaled_zero_note(frame)
        if zero_note:
            notes.append(zero_note)
    if candidates_b is not None:
        b_notes: list[str] = []
        f1_b = scorer.score(candidates_b, groups, notes=b_notes)[2]
        notes += [shortened(f"system B: {note}", 300) for note in b_notes]
        frame["candidate (B)"], frame["f1 (B)"] = candidates_b, f1_b.tolist()
        summary += "\n\n" + comparison_md(frame.f1.tolist(), frame["f1 (B)"].tolist(), kind)
    summary += f"\n\n**Hash:** `{scorer.hash}`"
    if notes:
        summary += "\n\n" + notes_md(notes)
    return BatchScores(frame, summary, kind, scorer.hash)


def _rescaled_zero_note(frame: pd.DataFrame) -> str | None:
    """Rows whose raw scores are all 0 (an empty text, or weights all 0), and what 0 reads rescaled:
    below 0, and counted in the means and the histogram like every row."""
    zero = frame[(frame["precision (raw)"] == 0) & (frame["recall (raw)"] == 0) & (frame["f1 (raw)"] == 0)]
    if zero.empty:
        return None
    first = zero.iloc[0]
    rows = name_some([f"row {row}" for row in zero.row])
    return (f"raw scores 0 in {rows}: rescaled, a raw 0 reads P {fmt(first.precision)}, R {fmt(first.recall)}, "
            f"F1 {fmt(first.f1)} ((raw − baseline) / (1 − baseline), as in the official package); these rows count "
            "in the corpus means and the histogram like every row")
