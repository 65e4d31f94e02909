"""BERTScore as a `datasets` map function: `dataset.map(score_columns(scorer), batched=True)`.

A `ScoreColumns` holds a `BERTScorer` and two column names; datasets hashes it (its map cache
fingerprint) as the scorer's settings and those names, since a scorer pickles as its settings
(`BERTScorer.__reduce__`): the fingerprint is the same in every process and after any amount of
scoring, and a `num_proc` worker rebuilds the scorer from those settings. Per-call idf
(`idf=True`) is refused: in `map` a call is one batch, and idf over a batch is not idf over the
column; `column_texts` gives the column's texts to build the scorer with (`idf=column_texts(...)`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .inputs import InputError, MissingColumnError, normalize_group

if TYPE_CHECKING:
    from .scorer import BERTScorer

OUTPUTS = ("precision", "recall", "f1")


class ScoreColumns:
    """A batched map function adding `<prefix>precision`, `<prefix>recall`, `<prefix>f1` columns: the
    scores of `predictions` against `references` (a string or a list of strings per row)."""

    def __init__(self, scorer: BERTScorer, predictions: str = "prediction", references: str = "reference",
                 prefix: str = "bertscore_"):
        for name, value in (("predictions", predictions), ("references", references), ("prefix", prefix)):
            if not isinstance(value, str) or (not value and name != "prefix"):
                raise InputError(f"{name} must be a column name (a non-empty str), got {value!r}")
        if scorer.idf_is_per_call:
            raise InputError(
                "this scorer has idf=True, which counts idf over each call's references: in Dataset.map a call is "
                "one batch, so the weights would change from batch to batch. Build the scorer with the column's "
                f"texts instead: BERTScorer(..., idf=bertscore.dataset_map.column_texts(dataset, {references!r}))"
            )
        self.scorer, self.predictions, self.references, self.prefix = scorer, predictions, references, prefix

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list]:
        for column in (self.predictions, self.references):
            if column not in batch:
                raise MissingColumnError(f"the batch has no column {column!r} (its columns: {', '.join(map(repr, batch))}): "
                               f"name the columns with score_columns(scorer, predictions=..., references=...)")
        scores = self.scorer.score(list(batch[self.predictions]), list(batch[self.references]))
        # [N] per column, or [K, N] with all_layers: one list of K per row
        return {self.prefix + name: (values.T if values.dim() == 2 else values).tolist()
                for name, values in zip(OUTPUTS, scores)}

    def __repr__(self) -> str:
        return (f"ScoreColumns({self.scorer!r}, predictions={self.predictions!r}, references={self.references!r}, "
                f"prefix={self.prefix!r})")


def score_columns(scorer: BERTScorer, predictions: str = "prediction", references: str = "reference",
                  prefix: str = "bertscore_") -> ScoreColumns:
    """The map function for `dataset.map(..., batched=True)` (also `IterableDataset.map`, `num_proc`)."""
    return ScoreColumns(scorer, predictions, references, prefix)


def column_texts(dataset: Any, column: str, batch_size: int = 1000) -> list[str]:
    """Every text of `column` (a string per row, or a list of strings per row, flattened), read in
    batches: the texts to compute idf from, as `score(idf=True)` does from all the references."""
    texts: list[str] = []
    row = 0
    for batch in dataset.select_columns([column]).iter(batch_size=batch_size):
        for value in batch[column]:  # checked as `score()` checks a candidate's references
            texts.extend(normalize_group(value, f"column {column!r}[{row}]"))
            row += 1
    return texts
