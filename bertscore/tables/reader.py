"""The rows of one table in its format (CSV, TSV, JSONL, JSON), read lazily: `TableReader`.

The format: `format=` wins; else the file extension; else the content (see `bertscore.tables`).
"""

from __future__ import annotations

import csv
import itertools
import json
from typing import Any, Callable, Iterator, Sequence

from ..inputs import InputError
from .cells import JSON_TYPES, MISSING, TableRow, Where, make_row
from .columns import CANDIDATE_COLUMNS, is_reference_name, resolve_columns
from .errors import TableError
from .lines import Lines

TEXT_FORMATS = ("csv", "tsv", "jsonl", "json")
FORMATS = TEXT_FORMATS
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}


def _first_content_line(lines: Lines) -> tuple[tuple[int, str] | None, Lines]:
    """The first non-blank line, and the lines again from the start."""
    skipped = []
    for item in lines:
        skipped.append(item)
        if item[1].strip():
            return item, itertools.chain(skipped, lines)
    return None, iter(skipped)


def _sniff(first: str) -> str:
    stripped = first.lstrip()
    if stripped.startswith("["):
        return "json"
    if stripped.startswith("{"):
        return "jsonl"
    return "tsv" if "\t" in first else "csv"


def _looks_csv_quoted(field: str) -> bool:
    return len(field) >= 2 and field[0] == field[-1] == '"' and '""' in field[1:-1]


class RowSource:
    """What every table reader shares: its rows iterated once (at most `max_rows`, at least one),
    the file closed at the end, early with `close()` or on leaving a `with` block."""

    source: str
    format: str
    max_rows: int | None
    columns: tuple[str, ...]
    candidate_column: str
    reference_columns: tuple[str, ...]
    extra_columns: tuple[str, ...]
    _rows: Iterator[TableRow]
    _close: Callable[[], None]
    no_rows = "has a header but no rows"
    columns_only = False  # read the header (or first object, or schema) alone: `columns`, no rows

    def __iter__(self) -> Iterator[TableRow]:
        try:
            count = 0
            for count, row in enumerate(self._rows, start=1):
                if self.max_rows is not None and count > self.max_rows:
                    raise TableError(self.source, f"has more than {self.max_rows} rows; at most {self.max_rows} "
                                                  "are accepted here")
                yield row
            if count == 0:  # JSON formats always have a first record
                raise TableError(self.source, self.no_rows)
        finally:
            self.close()

    def close(self) -> None:
        self._close()

    def _columns(self, columns: Sequence[str], candidate_column: str | None,
                 reference_columns: Sequence[str] | None) -> None:
        self.columns = tuple(columns)  # every column of the header (or of the first JSON object)
        if self.columns_only:
            self.candidate_column, self.reference_columns = "", ()
            return
        self.candidate_column, self.reference_columns = resolve_columns(
            columns, self.source, candidate_column, reference_columns
        )
        for name in self.extra_columns:  # columns the caller reads besides the texts (a human score, ...)
            if name not in columns:
                raise TableError(self.source, f"no column {name!r}; found columns: {', '.join(map(repr, columns))}")
            if name == self.candidate_column or name in self.reference_columns:
                raise TableError(self.source, f"column {name!r} is already the candidate or a reference column")

    def __enter__(self) -> "RowSource":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class TableReader(RowSource):
    """The rows of one table, read lazily; its columns are known (and checked) on construction.

    Iterate it once for `TableRow`s; use it as a context manager (or call `close()`) to close
    the file early.
    """

    def __init__(self, lines: Lines, source: str, *, format: str | None = None, extension_format: str | None = None,
                 candidate_column: str | None = None, reference_columns: Sequence[str] | None = None,
                 max_rows: int | None = None, close: Callable[[], None] = lambda: None,
                 extra_columns: Sequence[str] = (), columns_only: bool = False):
        self.source = source
        self.extra_columns = tuple(extra_columns)
        self.columns_only = columns_only
        self.max_rows = max_rows
        self._close = close
        self._auto_columns = candidate_column is None and reference_columns is None
        try:
            if format is not None and format not in FORMATS:
                raise InputError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
            first, lines = _first_content_line(lines)
            if first is None:
                raise TableError(source, "is empty")
            if format is None:
                sniffed = _sniff(first[1])
                format = extension_format or sniffed
                if format == "json":  # .json files: an array, or JSON lines under a .json name
                    format = sniffed if sniffed in ("json", "jsonl") else "json"
            self.format: str = format
            if format in ("csv", "tsv"):
                self._rows = self._delimited(lines, candidate_column, reference_columns)
            elif format == "jsonl":
                self._rows = self._json_lines(lines, candidate_column, reference_columns)
            else:
                self._rows = self._json_array(lines, candidate_column, reference_columns)
        except BaseException:
            close()
            raise

    # CSV / TSV -----------------------------------------------------------------------------------
    def _delimited(self, lines: Lines, candidate_column: str | None,
                   reference_columns: Sequence[str] | None) -> Iterator[TableRow]:
        tsv = self.format == "tsv"
        counted = _LineCounter(lines)
        options: dict[str, Any] = {"delimiter": "\t", "quoting": csv.QUOTE_NONE} if tsv else {"delimiter": ","}
        reader = csv.reader(counted, strict=True, **options)
        kind = self.format.upper()

        def records() -> Iterator[tuple[int, list[str]]]:
            while True:
                start = counted.number + 1
                try:
                    fields = next(reader)
                except StopIteration:
                    return
                except csv.Error as error:
                    if "unexpected end of data" in str(error):  # reported at the end: name the row's start
                        raise TableError(self.source, f"not valid {kind}: a quoted field starting on this line "
                                                      "is never closed", line=start) from None
                    raise TableError(self.source, f"not valid {kind} ({error})"
                                     + ("" if tsv else "; quote fields that hold commas, quotes or line breaks"),
                                     line=counted.number) from None
                if fields and not (len(fields) == 1 and not fields[0].strip()):
                    yield start, fields

        rows = records()
        header_line, header = next(rows)
        columns = [name.strip() for name in header]
        self._columns(columns, candidate_column, reference_columns)
        if self.columns_only:
            return iter(())
        wanted = [self.candidate_column, *self.reference_columns, *self.extra_columns]
        index = {}
        for name in wanted:
            positions = [i for i, c in enumerate(columns) if c == name]
            if len(positions) > 1:
                raise TableError(self.source, f"column {name!r} appears {len(positions)} times in the header "
                                              f"(fields {', '.join(str(p + 1) for p in positions)})", line=header_line)
            index[name] = positions[0]
        return self._delimited_rows(rows, columns, index, tsv)

    def _delimited_rows(self, rows: Iterator[tuple[int, list[str]]], columns: list[str], index: dict[str, int],
                        tsv: bool) -> Iterator[TableRow]:
        for number, (line, fields) in enumerate(rows, start=1):
            where = Where(self.source, number, line)
            if len(fields) != len(columns):
                raise where.error(None, f"has {len(fields)} field{'s' * (len(fields) != 1)} but the header has "
                                        f"{len(columns)}"
                                  + (" (a tab inside a text? TSV texts cannot hold tabs or line breaks)" if tsv else ""))
            if tsv:
                for name, position in index.items():
                    if _looks_csv_quoted(fields[position]):
                        raise where.error(name, "looks CSV-quoted (\"...\"\"...\"); TSV is read without quoting, "
                                                "as WMT and Moses files: save it unquoted, or as CSV")
            yield make_row(lambda c: fields[index[c]], where, self.candidate_column, self.reference_columns,
                            lists_in_text=True, extra_columns=self.extra_columns)

    # JSONL / JSON --------------------------------------------------------------------------------
    def _json_lines(self, lines: Lines, candidate_column: str | None,
                    reference_columns: Sequence[str] | None) -> Iterator[TableRow]:
        def records() -> Iterator[tuple[int, Any]]:
            for number, line in lines:
                if not line.strip():
                    continue
                try:
                    yield number, json.loads(line)
                except json.JSONDecodeError as error:
                    raise TableError(self.source, f"is not valid JSON ({error.msg} at column {error.colno}); "
                                                  "expected one object per line", line=number) from None

        records_iter = records()
        first = next(records_iter)
        return self._records(itertools.chain([first], records_iter), candidate_column, reference_columns)

    def _json_array(self, lines: Lines, candidate_column: str | None,
                    reference_columns: Sequence[str] | None) -> Iterator[TableRow]:
        text = "".join(line for _, line in lines)
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            raise TableError(self.source, f"is not valid JSON ({error.msg} at column {error.colno})",
                             line=error.lineno) from None
        if not isinstance(items, list):
            raise TableError(self.source, "a JSON file must be an array of objects (or JSONL: one object per line)")
        if not items:
            raise TableError(self.source, "is an empty JSON array")
        return self._records(((None, item) for item in items), candidate_column, reference_columns)

    def _records(self, records: Iterator[tuple[int | None, Any]], candidate_column: str | None,
                 reference_columns: Sequence[str] | None) -> Iterator[TableRow]:
        """Rows of JSON objects; the columns come from the first object (every row needs them)."""
        records = iter(records)
        line, first = next(records)
        self._check_object(first, Where(self.source, 1, line))
        self._columns(list(first), candidate_column, reference_columns)
        if self.columns_only:
            return iter(())
        expected = {self.candidate_column, *self.reference_columns, *self.extra_columns}
        return self._record_rows(itertools.chain([(line, first)], records), expected)

    def _record_rows(self, records: Iterator[tuple[int | None, Any]], expected: set[str]) -> Iterator[TableRow]:
        for number, (line, record) in enumerate(records, start=1):
            where = Where(self.source, number, line)
            self._check_object(record, where)
            if self._auto_columns:
                extra = [k for k in record if k not in expected and
                         (is_reference_name(k) or k.strip().lower() in CANDIDATE_COLUMNS)]
                if extra:
                    raise where.error(extra[0], "is not a column of row 1 (its columns decide the table's); give "
                                                "every row the same candidate and reference keys")
            yield make_row(lambda c: record.get(c, MISSING), where, self.candidate_column, self.reference_columns,
                            lists_in_text=False, extra_columns=self.extra_columns)

    @staticmethod
    def _check_object(record: Any, where: Where) -> None:
        if not isinstance(record, dict):
            kind = JSON_TYPES.get(type(record), "null" if record is None else type(record).__name__)
            raise where.error(None, f"is a JSON {kind}, expected an object (a JSON table is an array of objects, "
                                    "JSONL one object per line)")


class _LineCounter:
    """Feeds lines to csv.reader and remembers the number of the last one."""

    def __init__(self, lines: Lines):
        self.lines = lines
        self.number = 0

    def __iter__(self) -> "_LineCounter":
        return self

    def __next__(self) -> str:
        self.number, line = next(self.lines)
        return line
