"""Candidate/reference tables for the CLI and the Space: CSV, TSV, JSONL, JSON, Parquet, Arrow IPC.

Parquet, Arrow IPC and datasets' `save_to_disk` folders are read through pyarrow (`columnar.py`).

A table has one candidate column and one or several reference columns. Without explicit
`candidate_column` / `reference_columns`, they are found by name (case-insensitive):
candidate / prediction / hypothesis (and plurals, cand / pred / hyp) for the candidate;
reference / references / ref / refs / target / targets, plus numbered reference_1 .. reference_n
(ref_1, reference1, ...), for the references. Two candidate-like (or two plain reference-like)
columns are an error: name the one to use.

Formats: `format=` wins; else a folder is a `save_to_disk` folder, and a file starting with
Parquet's or Arrow's magic bytes is one (see `columnar.py`); else the file extension (.csv,
.tsv/.tab, .jsonl/.ndjson, .json); else the content: a first character `[` is a JSON array of objects, `{` is JSONL, otherwise a
header line with a tab is TSV and one without is CSV.
- CSV follows RFC 4180 (fields with commas, quotes or line breaks are quoted); malformed
  quoting is an error, never a guess.
- TSV has no quoting (as WMT and Moses files): a field is everything between two tabs. A field
  written with CSV quoting (`"a ""b"" c"`, as `pandas.to_csv(sep="\\t")` writes it) is an error.
- JSONL: one object per line (blank lines skipped); JSON: an array of objects.

Cells (every format): a missing cell (a short or long CSV/TSV row, an absent JSON key, a JSON
`null`) is an error naming the row and column; an empty string is a valid, empty text (it
scores 0); a JSON number, boolean or object is an error, never stringified. A reference cell
may hold several references: a JSON list of strings (in JSON), or a CSV/TSV cell that is a
JSON list of strings such as `["a", "b"]`. With several reference columns a row may have fewer
references than columns: its blank reference cells are skipped (a row whose reference cells
are all blank has one empty reference, as with one column).

Encoding: UTF-8 only (a byte-order mark is allowed and dropped); anything else is an error
naming the byte offset. Errors are `TableError` (a ValueError) naming the source, the row (and
line) and the column.

Streaming: `open_table` reads the header (or first record) at once, so column errors come
before any work, then yields `TableRow`s lazily (CSV, TSV, JSONL; a JSON array is parsed
whole). `read_table` / `parse_table` return `(candidates, reference_groups)` as `score()` takes.
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

from .cells import TableRow
from .columnar import COLUMNAR_FORMATS, ColumnarReader, columnar_format
from .columns import CANDIDATE_COLUMNS, REFERENCE_COLUMNS, resolve_columns
from .errors import TableError
from .lines import HEAD_BYTES, file_lines, text_lines
from .reader import EXTENSIONS, TEXT_FORMATS, RowSource, TableReader

FORMATS = TEXT_FORMATS + COLUMNAR_FORMATS


def open_table(
    path: str | os.PathLike[str], *, format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None, name: str | None = None,
    extra_columns: Sequence[str] = (),
) -> RowSource:
    """A lazy reader of the table in `path` (`name`: how errors call it; default the path).

    `extra_columns`: further columns every row must have, read as they are into `TableRow.extras`
    (a human score, a second candidate): their meaning is the caller's."""
    source = name or os.fspath(path)
    columnar = _columnar(path, source, format)
    if columnar is not None:
        return ColumnarReader(path, source, columnar, candidate_column=candidate_column,
                              reference_columns=reference_columns, max_rows=max_rows, extra_columns=extra_columns)
    handle = open(path, "rb")
    try:
        extension = EXTENSIONS.get(os.path.splitext(os.fspath(path))[1].lower())
        return TableReader(file_lines(handle, source), source, format=format, extension_format=extension,
                           candidate_column=candidate_column, reference_columns=reference_columns,
                           max_rows=max_rows, close=handle.close, extra_columns=extra_columns)
    except BaseException:
        handle.close()
        raise


def table_columns(path: str | os.PathLike[str], *, format: str | None = None, name: str | None = None) -> tuple[str, ...]:
    """Every column of the table in `path` (its header, or its first JSON object's keys), in order,
    whatever they hold: for a caller that chooses its columns from what a table has."""
    source = name or os.fspath(path)
    columnar = _columnar(path, source, format)
    if columnar is not None:
        return ColumnarReader(path, source, columnar, columns_only=True).columns
    with open(path, "rb") as handle:
        extension = EXTENSIONS.get(os.path.splitext(os.fspath(path))[1].lower())
        reader = TableReader(file_lines(handle, source), source, format=format, extension_format=extension,
                             columns_only=True)
        return reader.columns


def _columnar(path: str | os.PathLike[str], source: str, format: str | None) -> str | None:
    """The columnar format of `path` ('parquet', 'arrow', 'dataset'), or None for a text table."""
    if format is not None and format not in FORMATS:
        raise TableError(source, f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    return columnar_format(path, format, name=source)


def table_from_text(
    text: str, *, name: str = "input", format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None, extra_columns: Sequence[str] = (),
) -> TableReader:
    """A lazy reader of a table given as text (pasted rows, a string in memory); `extra_columns` as `open_table`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return TableReader(text_lines(text), name, format=format, candidate_column=candidate_column,
                       reference_columns=reference_columns, max_rows=max_rows, extra_columns=extra_columns)


def collect(rows: Iterable[TableRow]) -> tuple[list[str], list[list[str]]]:
    """(candidates, reference groups) of some rows, as `score()` takes them."""
    candidates: list[str] = []
    groups: list[list[str]] = []
    for row in rows:
        candidates.append(row.candidate)
        groups.append(row.references)
    return candidates, groups


def read_table(
    path: str | os.PathLike[str], *, format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None, name: str | None = None,
) -> tuple[list[str], list[list[str]]]:
    """(candidates, reference groups) of the table in `path`; see the module docstring."""
    with open_table(path, format=format, candidate_column=candidate_column, reference_columns=reference_columns,
                    max_rows=max_rows, name=name) as table:
        return collect(table)


def parse_table(
    text: str, *, name: str = "input", format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None,
) -> tuple[list[str], list[list[str]]]:
    """(candidates, reference groups) of a table given as text."""
    return collect(table_from_text(text, name=name, format=format, candidate_column=candidate_column,
                                   reference_columns=reference_columns, max_rows=max_rows))


__all__ = [
    "CANDIDATE_COLUMNS", "COLUMNAR_FORMATS", "ColumnarReader", "FORMATS", "RowSource", "HEAD_BYTES", "REFERENCE_COLUMNS", "TableError", "TableReader", "TableRow",
    "collect", "open_table", "table_columns", "parse_table", "read_table", "resolve_columns", "table_from_text",
]
