"""Scores, statistics and notes as the Space shows them: Markdown, tables and the results CSV.

Scores show with 4 decimals; every user or model text in Markdown goes through
`bertscore.markup.shown_as_typed`, so the page shows it as typed (no markup, no links).
"""

from __future__ import annotations

import os
import tempfile
from typing import Sequence

import pandas as pd

from ..explain import Explanation
from ..markup import shown_as_typed
from ..output_files import write_text
from ..stats import bootstrap_ci, compare_systems
from .messages import shortened

TOKEN_COLUMNS = ["side", "#", "token", "weight", "best match", "cosine"]
BATCH_COLUMNS = ["row", "candidate", "references", "precision", "recall", "f1"]
SCORE_COLUMNS = ("precision", "recall", "f1", "precision (raw)", "recall (raw)", "f1 (raw)", "f1 (B)")


def fmt(value: float) -> str:
    """A score as shown: 4 decimals."""
    return f"{value:.4f}"


def error_md(message: str) -> str:
    """An error message as the page shows it."""
    return f"**Error:** {shown_as_typed(message)}"


def notes_md(notes: Sequence[str]) -> str:
    """Notes as a Markdown list."""
    return "\n".join(f"- {shown_as_typed(n)}" for n in notes)


def means_md(frame: pd.DataFrame, notes: list[str]) -> str:
    """Each column's mean with its 95% percentile bootstrap interval (1,000 resamples, seed 0);
    a caution for few rows joins `notes` once."""
    if len(frame) < 2:
        return f": P {fmt(frame.precision.mean())}, R {fmt(frame.recall.mean())}, **F1 {fmt(frame.f1.mean())}**"
    cells = []
    cautions: list[str] = []
    for label, column in (("P", "precision"), ("R", "recall"), ("**F1", "f1")):
        ci = bootstrap_ci(frame[column].tolist(), notes=cautions)
        cells.append(f"{label} {fmt(ci.mean)} [{fmt(ci.low)}, {fmt(ci.high)}]" + ("**" if label.startswith("**") else ""))
    notes.extend(dict.fromkeys(cautions))
    return " with 95% bootstrap intervals: " + ", ".join(cells)


def comparison_md(f1_a: list[float], f1_b: list[float]) -> str:
    """System B against system A: the F1 difference, its interval and a paired test's p-value."""
    if len(f1_a) < 2:
        return "**System B − A:** a paired test needs at least 2 rows"
    cautions: list[str] = []
    row = compare_systems({"A": f1_a, "B": f1_b}, baseline="A", notes=cautions)[1]
    caution = "\n\n".join(f"⚠ {c}" for c in cautions)
    verdict = ("no difference: every row scores the same in both systems" if row.identical
               else "significant at p < 0.05" if row.significant(0.05) else "not significant at p < 0.05")
    return (f"**System B − A:** ΔF1 {row.difference:+.4f} [95% CI {row.difference_low:+.4f}, "
            f"{row.difference_high:+.4f}], p = {row.p_value:.4f} ({'see below' if caution else verdict}; paired "
            "approximate randomization, 10,000 resamples, seed 0)" + (f"\n\n{caution}" if caution else ""))


def pair_markdown(expl: Explanation, notes: list[str]) -> str:
    """One pair's scores (raw, rescaled), each reference's when several, the winner, the hash and notes."""
    lines = ["| | Precision | Recall | F1 |", "|---|---|---|---|",
             f"| raw | {fmt(expl.precision)} | {fmt(expl.recall)} | {fmt(expl.f1)} |"]
    if expl.rescaled is not None:
        p, r, f = expl.rescaled
        lines.append(f"| rescaled | {fmt(p)} | {fmt(r)} | {fmt(f)} |")
    out = "\n".join(lines)
    if len(expl.references) > 1:
        out += "\n\n**Per reference** (the candidate's scores are the max of each column):\n\n"
        out += "| # | reference | P | R | F1 |\n|---|---|---|---|---|\n"
        for index, ref in enumerate(expl.references):
            mark = " **(best)**" if index == expl.winner else ""
            text = shown_as_typed(shortened(ref.text, 80))
            out += f"| {index + 1}{mark} | {text} | {fmt(ref.precision)} | {fmt(ref.recall)} | {fmt(ref.f1)} |\n"
    winner = expl.best
    out += f"\n\n**Winning reference:** #{expl.winner + 1}: {shown_as_typed(shortened(winner.text, 160))}"
    out += f"\n\n**Hash:** `{expl.hashcode}`"
    all_notes = notes + expl.notes
    if all_notes:
        out += "\n\n" + notes_md(all_notes)
    return out


def token_table(expl: Explanation) -> pd.DataFrame:
    """Each token of the candidate and the winning reference: its weight, best match and cosine."""
    ref = expl.best
    rows = []
    for i, token in enumerate(expl.tokens):
        rows.append(["candidate", i, token, round(expl.weights[i], 4), ref.tokens[ref.cand_best[i]],
                     round(ref.cand_best_sim[i], 4)])
    for j, token in enumerate(ref.tokens):
        rows.append([f"reference #{expl.winner + 1}", j, token, round(ref.weights[j], 4),
                     expl.tokens[ref.ref_best[j]], round(ref.ref_best_sim[j], 4)])
    return pd.DataFrame(rows, columns=TOKEN_COLUMNS)


def empty_token_table() -> pd.DataFrame:
    """The token table before (or instead of) an explanation."""
    return pd.DataFrame(columns=TOKEN_COLUMNS)


def empty_batch_table() -> pd.DataFrame:
    """The batch table before (or instead of) any scores."""
    return pd.DataFrame(columns=BATCH_COLUMNS)


def shown_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of the batch table with its score columns as shown (4 decimals)."""
    shown = frame.copy()
    for column in SCORE_COLUMNS:
        if column in shown:
            shown[column] = shown[column].map(fmt)
    return shown


def results_csv(frame: pd.DataFrame, hashcode: str) -> str:
    """The download: the batch table with full-precision scores and the hash on each row, written as
    bertscore_results.csv in a new temporary folder; its path."""
    path = os.path.join(tempfile.mkdtemp(prefix="bertscore-app-"), "bertscore_results.csv")
    write_text(path, frame.assign(hashcode=hashcode).to_csv(index=False))
    return path
