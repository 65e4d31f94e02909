"""Scores, statistics and notes as the Space shows them: Markdown, tables and the results CSV.

Scores show with 4 decimals; every user or model text in Markdown goes through
`bertscore.space.markup.shown_as_typed`, so the page shows it as typed (no markup, no links).
"""

from __future__ import annotations

import os
import tempfile
from typing import Sequence

import pandas as pd

from ..explain import Explanation
from ..output_files import write_text
from ..stats import bootstrap_ci, compare_systems
from .markup import shown_as_typed
from .messages import ERROR_TITLE, shortened

TOKEN_COLUMNS = ["side", "#", "token", "weight", "best match", "cosine"]
# The batch table's canonical columns (BatchScores.frame) -> how the page and the CSV label them, in
# the order shown: scores first (a wide text column never pushes them out of view), each labelled raw
# or rescaled ({kind}: the main columns' kind), then the texts.
SHOWN_COLUMNS = {
    "row": "row", "f1": "F1 ({kind})", "f1 (B)": "F1 (B, {kind})", "precision": "P ({kind})", "recall": "R ({kind})",
    "f1 (raw)": "F1 (raw)", "precision (raw)": "P (raw)", "recall (raw)": "R (raw)",
    "candidate": "candidate", "candidate (B)": "candidate (B)", "references": "references",
}
SCORE_COLUMNS = ("precision", "recall", "f1", "precision (raw)", "recall (raw)", "f1 (raw)", "f1 (B)")


def fmt(value: float) -> str:
    """A score as shown: 4 decimals."""
    return f"{value:.4f}"


def error_md(message: str) -> str:
    """An error message as the page shows it."""
    return f"**{ERROR_TITLE}:** {shown_as_typed(message)}"


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


def comparison_md(f1_a: list[float], f1_b: list[float], kind: str = "") -> str:
    """System B against system A: the F1 difference (of `kind` scores: "raw" or "rescaled"), its
    interval and a paired test's p-value."""
    if len(f1_a) < 2:
        return "**System B − A:** a paired test needs at least 2 rows"
    cautions: list[str] = []
    row = compare_systems({"A": f1_a, "B": f1_b}, baseline="A", notes=cautions)[1]
    caution = "\n\n".join(f"⚠ {c}" for c in cautions)
    verdict = ("no difference: every row scores the same in both systems" if row.identical
               else "significant at p < 0.05" if row.significant(0.05) else "not significant at p < 0.05")
    label = f"ΔF1 ({kind})" if kind else "ΔF1"
    return (f"**System B − A:** {label} {row.difference:+.4f} [95% CI {row.difference_low:+.4f}, "
            f"{row.difference_high:+.4f}], p = {row.p_value:.4f} ({'see below' if caution else verdict}; paired "
            "approximate randomization, 10,000 resamples, seed 0)" + (f"\n\n{caution}" if caution else ""))


def pair_markdown(expl: Explanation, notes: list[str]) -> str:
    """One pair's scores (raw, rescaled), each reference's (raw) when several, the winner, the hash and notes."""
    lines = ["| | Precision | Recall | F1 |", "|---|---|---|---|",
             f"| raw | {fmt(expl.precision)} | {fmt(expl.recall)} | {fmt(expl.f1)} |"]
    if expl.rescaled is not None:
        p, r, f = expl.rescaled
        lines.append(f"| rescaled | {fmt(p)} | {fmt(r)} | {fmt(f)} |")
    out = "\n".join(lines)
    if len(expl.references) > 1:
        out += "\n\n**Per reference** (raw):\n\n"
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


def shown_table(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The batch table as the page and the CSV show it: scores first, each column labelled raw or
    rescaled (`kind`: the main columns'), then the texts."""
    columns = [column for column in SHOWN_COLUMNS if column in frame]
    return frame[columns].rename(columns={c: SHOWN_COLUMNS[c].format(kind=kind) for c in columns})


TABLE_WIDTH_PX = 1200  # the table's width on a laptop screen: text columns share what the scores leave
ROW_COLUMN_PX, SCORE_COLUMN_PX, MIN_TEXT_COLUMN_PX = 56, 112, 240


def column_widths(shown: pd.DataFrame) -> list[str]:
    """Widths for the shown batch table's columns: narrow fixed ones for the row and the scores, the
    rest shared by the texts (which wrap), so that the scores and the texts' start fit on screen."""
    texts = [c for c in shown.columns if c.startswith(("candidate", "references"))]
    fixed = ROW_COLUMN_PX + SCORE_COLUMN_PX * (len(shown.columns) - len(texts) - 1)
    text_px = max(MIN_TEXT_COLUMN_PX, (TABLE_WIDTH_PX - fixed) // max(1, len(texts)))
    return [f"{ROW_COLUMN_PX}px" if c == "row" else f"{text_px}px" if c in texts else f"{SCORE_COLUMN_PX}px"
            for c in shown.columns]


def shown_scores(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The batch table as the page shows it (`shown_table`), its scores with 4 decimals."""
    shown = frame.copy()
    for column in SCORE_COLUMNS:
        if column in shown:
            shown[column] = shown[column].map(fmt)
    return shown_table(shown, kind)


def results_csv(frame: pd.DataFrame, kind: str, hashcode: str) -> str:
    """The download: the batch table as shown (`shown_table`) with full-precision scores and the hash
    on each row, written as bertscore_results.csv in a new temporary folder; its path."""
    path = os.path.join(tempfile.mkdtemp(prefix="bertscore-app-"), "bertscore_results.csv")
    write_text(path, shown_table(frame, kind).assign(hashcode=hashcode).to_csv(index=False))
    return path
