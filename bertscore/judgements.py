"""Human judgements of outputs, read and checked before any model loads, then streamed in chunks.

Two kinds of table (CSV, TSV, JSONL or JSON, read by `bertscore.tables`, texts and reference
columns as everywhere else):

- **direct scores** (as WMT's Direct Assessment): a candidate column, reference column(s) and a
  numeric human score column: `human_column`, else the first of `HUMAN_COLUMNS` the table has.
- **relative ranking** (as WMT's DARR): two candidate columns, `better` and `worse` (a human
  judged the first the better translation of the same source), and reference column(s).

`read_judgements` reads the whole table once: every text and score is checked, too few rows or
constant human scores are refused (`MIN_SEGMENTS`, and why), and only the human scores are kept.
`Judgements.chunks` then streams the texts again, a chunk at a time, so memory stays bounded
whatever the file's size. `judgements_from_lists` does the same checks on texts in memory.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from .inputs import InputError, normalize_inputs
from .tables import TableReader, open_table, table_columns
from .wording import a_type

DIRECT, RELATIVE = "direct", "relative"
HUMAN_COLUMNS = ("human_score", "human", "score", "z_score", "z", "da", "rating")
BETTER_COLUMN, WORSE_COLUMN = "better", "worse"
# Below this many judged segments a correlation means little: the 95% interval of r = 0.5 from
# 30 segments is about [0.17, 0.73] (Fisher's z), wider than the whole spread between layers.
MIN_SEGMENTS = 30
MIN_SEGMENTS_WHY = (
    f"choosing a layer needs at least {MIN_SEGMENTS}: with fewer, the 95% interval of a correlation spans "
    "more than +-0.25 (r = 0.5 from 30 segments: [0.17, 0.73]), wider than the differences between layers "
    "(0.01 to 0.1), and no test can tell layers apart; hundreds are better (WMT's sets have 560 per language pair)"
)


@dataclass(frozen=True)
class Chunk:
    """Consecutive judged rows: `offset` (0-based) of the first, the candidates (the `better` ones
    for relative ranking), the `worse` ones (relative ranking only) and the reference groups."""

    offset: int
    candidates: list[str]
    worse: list[str] | None
    references: list[list[str]]


@dataclass(frozen=True)
class Judgements:
    """A checked human-judgement set: its kind, size, human scores (direct) and a way to stream it."""

    source: str
    kind: str
    size: int
    human: np.ndarray | None  # [size] float64 for direct scores; None for relative ranking
    columns: dict[str, Any]  # the columns read: candidate / better, worse, references, human
    _rows: Callable[[], Iterable[tuple[str, str | None, list[str]]]] = field(repr=False)

    def chunks(self, size: int) -> Iterator[Chunk]:
        """The rows again, `size` at a time (a file that changed since it was checked is an error)."""
        offset, candidates, worse, references = 0, [], [], []
        count = 0
        for candidate, other, refs in self._rows():
            count += 1
            if count > self.size:
                break
            candidates.append(candidate)
            worse.append(other)
            references.append(refs)
            if len(candidates) == size:
                yield Chunk(offset, candidates, worse if self.kind == RELATIVE else None, references)
                offset, candidates, worse, references = offset + size, [], [], []
        if count != self.size:
            raise InputError(f"{self.source} changed while it was read: {self.size} rows when checked, "
                             f"{'more' if count > self.size else count} now")
        if candidates:
            yield Chunk(offset, candidates, worse if self.kind == RELATIVE else None, references)


def _number(value: Any, where: str) -> float:
    """A human score cell as a finite float; InputError naming where and the value otherwise."""
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise InputError(f"{where}: {value!r} is not a number; every row needs a numeric human score") from None
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    else:
        shown = "null" if value is None else f"{a_type(value)} ({value!r})"
        raise InputError(f"{where}: the human score is {shown}, not a number")
    if not math.isfinite(number):
        raise InputError(f"{where}: the human score {value!r} is not finite; fix or drop that row")
    return number


def _pick_column(columns: Sequence[str], names: Sequence[str]) -> list[str]:
    lowered = {name: name.strip().lower() for name in columns}
    return [c for c in columns if lowered[c] in names]


def _kind_and_columns(columns: Sequence[str], source: str, human_column: str | None, better_column: str | None,
                      worse_column: str | None) -> tuple[str, dict[str, str]]:
    """Which kind of judgements a table holds and its columns, from its header and the options."""
    found = f"found columns: {', '.join(map(repr, columns))}"
    if (better_column is None) != (worse_column is None):
        raise InputError("relative ranking needs both columns: pass better_column and worse_column "
                         "(--better-column and --worse-column)")
    if better_column is not None and human_column is not None:
        raise InputError("pass either a human score column (direct scores) or better/worse columns "
                         "(relative ranking), not both")
    if better_column is None and human_column is None:
        better, worse = _pick_column(columns, (BETTER_COLUMN,)), _pick_column(columns, (WORSE_COLUMN,))
        humans = _pick_column(columns, HUMAN_COLUMNS)
        if better and worse:
            if humans:
                raise InputError(f"{source} has both a human score column ({humans[0]!r}) and better/worse columns: "
                                 "choose with human_column= (--human-column) or better_column= and worse_column=")
            return RELATIVE, {"better": better[0], "worse": worse[0]}
        if len(humans) > 1:
            raise InputError(f"{source} has several human score columns ({', '.join(map(repr, humans))}): "
                             "choose one with human_column= (--human-column)")
        if not humans:
            raise InputError(f"{source} has no human score column ({' / '.join(HUMAN_COLUMNS)}) and no better/worse "
                             f"columns; {found}; name the human column with human_column= (--human-column)")
        return DIRECT, {"human": humans[0]}
    if human_column is not None:
        return DIRECT, {"human": human_column}
    return RELATIVE, {"better": better_column, "worse": worse_column}


def read_judgements(
    path: str | os.PathLike[str], *, human_column: str | None = None, better_column: str | None = None,
    worse_column: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, name: str | None = None,
) -> Judgements:
    """Check a human-judgement table whole (see the module docstring) and keep its human scores.

    Errors (`InputError`) name the file, row, line and column: a missing or non-numeric human
    score, fewer than MIN_SEGMENTS rows, constant human scores, a bad text cell.
    """
    source = name or os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"file not found: {source}" if not os.path.isdir(path) else f"{source} is a folder, not a table")
    header = table_columns(path, name=source)
    kind, chosen = _kind_and_columns(header, source, human_column, better_column, worse_column)

    def table() -> TableReader:
        if kind == RELATIVE:
            return open_table(path, candidate_column=chosen["better"], reference_columns=reference_columns,
                              name=source, extra_columns=[chosen["worse"]])
        return open_table(path, candidate_column=candidate_column, reference_columns=reference_columns,
                          name=source, extra_columns=[chosen["human"]])

    def rows() -> Iterator[tuple[str, str | None, list[str]]]:
        with table() as reader:
            for row in reader:
                where = f"{source}, row {row.row}" + (f" (line {row.line})" if row.line is not None else "")
                extra = row.extras[0]
                if kind == RELATIVE:
                    if not isinstance(extra, str):
                        kind_name = "null" if extra is None else type(extra).__name__
                        raise InputError(f"{where}, column {chosen['worse']!r}: is {kind_name}, not a text")
                    yield row.candidate, extra, row.references
                else:
                    yield row.candidate, _number(extra, f"{where}, column {chosen['human']!r}"), row.references

    with table() as reader:
        columns: dict[str, Any] = {"candidate": reader.candidate_column, "references": list(reader.reference_columns)}
    columns.update(chosen)
    human = []
    for _, value, _ in rows():  # every row checked before any model loads
        human.append(value)
    judged = _checked(source, kind, human, columns)

    def texts() -> Iterator[tuple[str, str | None, list[str]]]:
        for candidate, value, refs in rows():
            yield candidate, value if kind == RELATIVE else None, refs

    return Judgements(source, kind, len(human), judged, columns, texts)


def judgements_from_lists(
    references: Sequence[Any], *, candidates: Sequence[str] | None = None, human: Sequence[float] | None = None,
    better: Sequence[str] | None = None, worse: Sequence[str] | None = None,
) -> Judgements:
    """The same checks on texts in memory: `candidates` with `human` scores, or `better` and `worse`."""
    if (candidates is None) == (better is None):
        raise InputError("pass candidates= with human= (direct scores), or better= and worse= (relative ranking)")
    if candidates is not None:
        if human is None or worse is not None:
            raise InputError("direct scores need candidates= and human= (and no worse=)")
        texts, groups = normalize_inputs(candidates, references)
        if len(human) != len(texts):
            raise InputError(f"human has {len(human)} scores but there are {len(texts)} candidates")
        scores = [_number(value, f"human[{i}]") for i, value in enumerate(human)]
        judged = _checked("human", DIRECT, scores, {})
        return Judgements("the judgements", DIRECT, len(texts), judged, {},
                          lambda: ((c, None, g) for c, g in zip(texts, groups)))
    if worse is None or human is not None:
        raise InputError("relative ranking needs better= and worse= (and no human=)")
    texts, groups = normalize_inputs(better, references)
    others, _ = normalize_inputs(worse, references)
    _checked("better", RELATIVE, [None] * len(texts), {})
    return Judgements("the judgements", RELATIVE, len(texts), None, {},
                      lambda: ((b, w, g) for b, w, g in zip(texts, others, groups)))


def _checked(source: str, kind: str, human: list[Any], columns: dict[str, Any]) -> np.ndarray | None:
    """Enough rows, and human scores that vary: the scores as an array (None for relative ranking)."""
    what = "judged pairs" if kind == RELATIVE else "judged segments"
    if len(human) < MIN_SEGMENTS:
        raise InputError(f"{source} has {len(human)} {what}; {MIN_SEGMENTS_WHY}")
    if kind == RELATIVE:
        return None
    scores = np.asarray(human, dtype=np.float64)
    if np.all(scores == scores[0]):
        column = f" (column {columns['human']!r})" if "human" in columns else ""
        raise InputError(f"{source}: every human score{column} is {scores[0]:g}; constant scores correlate with "
                         "nothing, so no layer can be chosen from them")
    return scores


__all__ = [
    "BETTER_COLUMN", "Chunk", "DIRECT", "HUMAN_COLUMNS", "Judgements", "MIN_SEGMENTS", "RELATIVE", "WORSE_COLUMN",
    "judgements_from_lists", "read_judgements",
]
