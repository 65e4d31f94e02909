"""Read candidate/reference tables (CSV, TSV, JSONL, JSON) for the CLI and the Space.

A table has one candidate column and one or several reference columns. Without explicit
`candidate_column` / `reference_columns`, they are found by name (case-insensitive):
candidate / prediction / hypothesis (and plurals, cand / pred / hyp) for the candidate;
reference / references / ref / refs / target / targets, plus numbered reference_1 .. reference_n
(ref_1, reference1, ...), for the references. Two candidate-like (or two plain reference-like)
columns are an error: name the one to use.

Formats: `format=` wins; else the file extension (.csv, .tsv/.tab, .jsonl/.ndjson, .json);
else the content: a first character `[` is a JSON array of objects, `{` is JSONL, otherwise a
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

import csv
import io
import itertools
import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from .inputs import InputError

FORMATS = ("csv", "tsv", "jsonl", "json")
CANDIDATE_COLUMNS = ("candidate", "candidates", "prediction", "predictions", "hypothesis", "hypotheses", "cand", "pred", "hyp")
REFERENCE_COLUMNS = ("reference", "references", "ref", "refs", "target", "targets")
EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}
HEAD_BYTES = 1 << 16  # looked at for NUL bytes (a binary file) before decoding
_NUMBERED_REFERENCE = re.compile(r"^(?:references?|refs?)_?(\d+)$")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


class TableError(InputError):
    """A table that cannot be read as it is: says where (source, row, line, column) and why."""

    def __init__(self, source: str, message: str, *, row: int | None = None, line: int | None = None,
                 column: str | None = None):
        self.source, self.row, self.line, self.column = source, row, line, column
        where = source
        if row is not None:
            where += f", row {row}" + (f" (line {line})" if line is not None else "")
        elif line is not None:
            where += f", line {line}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class TableRow:
    """One candidate and its references; `row` counts data rows from 1, `line` is where it starts."""

    candidate: str
    references: list[str]
    row: int
    line: int | None


# ----- lines of a file or a text ------------------------------------------------------------------
Lines = Iterator[tuple[int, str]]  # (1-based line number, the line with its "\n")


def _file_lines(handle: io.BufferedIOBase, source: str) -> Lines:
    """Decoded lines of a binary file: UTF-8 (BOM dropped), errors naming the byte offset."""
    head = handle.read(HEAD_BYTES)
    if head.startswith(_UTF16_BOMS):
        raise TableError(source, "is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8")
    if b"\0" in head:
        nul = head.index(b"\0")
        raise TableError(source, f"looks binary (a NUL byte at byte {nul}), "
                                 "not a UTF-8 text file (CSV, TSV, JSONL or JSON)")
    offset = 0
    for number, raw in enumerate(_byte_lines(handle, head), start=1):
        start = len(_UTF8_BOM) if number == 1 and raw.startswith(_UTF8_BOM) else 0
        try:
            text = raw[start:].decode("utf-8")
        except UnicodeDecodeError as error:
            at = offset + start + error.start
            raise TableError(
                source, f"is not UTF-8 text (byte {at}: {raw[start + error.start:start + error.start + 1]!r}); "
                        "save it as UTF-8", line=number,
            ) from None
        offset += len(raw)
        yield number, text


def _byte_lines(handle: io.BufferedIOBase, head: bytes) -> Iterator[bytes]:
    """The lines of `head` followed by the rest of `handle` (a line cut by the head is joined)."""
    for raw in io.BytesIO(head):
        yield raw if raw.endswith(b"\n") else raw + handle.readline()
    yield from handle


def _text_lines(text: str) -> Lines:
    """Lines split on "\\n" only (other Unicode line breaks stay inside texts); a BOM dropped."""
    text = text[1:] if text.startswith("\ufeff") else text
    start, number = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield number, text[start:end]
        start, number = end, number + 1


# ----- columns ------------------------------------------------------------------------------------
def _numbered_reference(name: str) -> int | None:
    match = _NUMBERED_REFERENCE.match(name.strip().lower())
    return int(match.group(1)) if match else None


def _is_reference_name(name: str) -> bool:
    return name.strip().lower() in REFERENCE_COLUMNS or _numbered_reference(name) is not None


def _shown(columns: Iterable[str]) -> str:
    return ", ".join(repr(c) for c in columns) or "none"


def resolve_columns(
    columns: Sequence[str], source: str, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """The candidate column and the reference columns among `columns` (names or overrides)."""
    if isinstance(reference_columns, str):
        reference_columns = [reference_columns]
    columns = list(dict.fromkeys(columns))  # a repeated header name is reported by the CSV reader
    found = f"found columns: {_shown(columns)}"
    if any("\t" in c for c in columns):
        found += " (tab-separated? name the file .tsv or pass format='tsv')"
    for given in [candidate_column, *(reference_columns or [])]:
        if given is not None and given not in columns:
            raise TableError(source, f"no column {given!r}; {found}")
    candidate = candidate_column
    if candidate is None:
        matches = [c for c in columns if c.strip().lower() in CANDIDATE_COLUMNS]
        if len(matches) > 1:
            raise TableError(source, f"several candidate columns ({_shown(matches)}); choose one "
                                     "(candidate_column= / --candidate-column)")
        candidate = matches[0] if matches else None
    references: list[str]
    if reference_columns is not None:
        references = list(reference_columns)
        if not references:
            raise TableError(source, "reference_columns is empty: name at least one reference column")
    else:
        plain = [c for c in columns if c.strip().lower() in REFERENCE_COLUMNS]
        if len(plain) > 1:
            raise TableError(source, f"several reference columns ({_shown(plain)}); choose "
                                     "(reference_columns= / --reference-column)")
        numbered = sorted((c for c in columns if _numbered_reference(c) is not None), key=_numbered_reference)
        references = plain + numbered
    missing = []
    if candidate is None:
        missing.append(f"a candidate column ({' / '.join(CANDIDATE_COLUMNS[:6:2])})")
    if not references:
        missing.append("reference column(s) (reference / references / reference_1..n)")
    if missing:
        raise TableError(source, f"missing {' and '.join(missing)}; {found}")
    assert candidate is not None
    if candidate in references:
        raise TableError(source, f"column {candidate!r} is both the candidate and a reference column")
    repeated = [c for c in dict.fromkeys(references) if references.count(c) > 1]
    if repeated:
        raise TableError(source, f"reference column(s) {_shown(repeated)} named twice")
    return candidate, tuple(references)


# ----- cells --------------------------------------------------------------------------------------
_MISSING = object()
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", dict: "object", list: "list"}


class _Where:
    """Where a row is, to raise errors naming it."""

    def __init__(self, source: str, row: int, line: int | None):
        self.source, self.row, self.line = source, row, line

    def error(self, column: str | None, message: str) -> TableError:
        return TableError(self.source, message, row=self.row, line=self.line, column=column)


def _text(value: Any, where: _Where, column: str, item: str = "") -> str:
    """A cell (or one item of a list cell, `item` = "[i] ") that must be a string."""
    if isinstance(value, str):
        bad = _SURROGATE.search(value)
        if bad:
            raise where.error(column, f"{item}contains a lone surrogate (U+{ord(bad.group()):04X} at character "
                                      f"{bad.start()}), which is not valid Unicode text")
        return value
    if value is None:
        raise where.error(column, f"{item}is null; write \"\" for an empty text")
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    raise where.error(column, f"{item}is a {kind} ({json.dumps(value)[:40]}), not a text; quote it if it is one")


def _reference_cell(value: Any, where: _Where, column: str, lists_in_text: bool) -> list[str]:
    """The references in one cell: a string, a JSON list of strings, or a CSV cell holding one."""
    if lists_in_text and isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            try:
                parsed = json.loads(stripped)
            except json.JSONDecodeError:
                parsed = None  # a text that happens to be bracketed, such as "[laughs] ok [applause]"
            if isinstance(parsed, list) and parsed and all(isinstance(v, str) for v in parsed):
                value = parsed
    if isinstance(value, list):
        if not value:
            raise where.error(column, "is an empty list: give at least one reference")
        return [_text(item, where, column, f"[{index}] ") for index, item in enumerate(value)]
    return [_text(value, where, column)]


def _make_row(get: Callable[[str], Any], where: _Where, candidate_column: str, reference_columns: Sequence[str],
              lists_in_text: bool) -> TableRow:
    def cell(column: str) -> Any:
        value = get(column)
        if value is _MISSING:
            raise where.error(column, "is missing")
        return value

    candidate_value = cell(candidate_column)
    if isinstance(candidate_value, list):
        raise where.error(candidate_column, "is a list; a candidate is one text")
    candidate = _text(candidate_value, where, candidate_column)
    references: list[str] = []
    several = len(reference_columns) > 1
    for column in reference_columns:
        value = cell(column)
        if several and isinstance(value, str) and not value.strip():
            continue  # a row with fewer references than columns
        references.extend(_reference_cell(value, where, column, lists_in_text))
    return TableRow(candidate, references or [""], where.row, where.line)


# ----- formats ------------------------------------------------------------------------------------
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


class TableReader:
    """The rows of one table, read lazily; its columns are known (and checked) on construction.

    Iterate it once for `TableRow`s; use it as a context manager (or call `close()`) to close
    the file early.
    """

    def __init__(self, lines: Lines, source: str, *, format: str | None = None, extension_format: str | None = None,
                 candidate_column: str | None = None, reference_columns: Sequence[str] | None = None,
                 max_rows: int | None = None, close: Callable[[], None] = lambda: None):
        self.source = source
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

    candidate_column: str
    reference_columns: tuple[str, ...]

    def __iter__(self) -> Iterator[TableRow]:
        try:
            count = 0
            for count, row in enumerate(self._rows, start=1):
                if self.max_rows is not None and count > self.max_rows:
                    raise TableError(self.source, f"has more than {self.max_rows} rows; at most {self.max_rows} "
                                                  "are accepted here")
                yield row
            if count == 0:  # JSON formats always have a first record
                raise TableError(self.source, "has a header but no rows")
        finally:
            self.close()

    def close(self) -> None:
        self._close()

    def __enter__(self) -> "TableReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _columns(self, columns: Sequence[str], candidate_column: str | None,
                 reference_columns: Sequence[str] | None) -> None:
        self.candidate_column, self.reference_columns = resolve_columns(
            columns, self.source, candidate_column, reference_columns
        )

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
        wanted = [self.candidate_column, *self.reference_columns]
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
            where = _Where(self.source, number, line)
            if len(fields) != len(columns):
                raise where.error(None, f"has {len(fields)} field{'s' * (len(fields) != 1)} but the header has "
                                        f"{len(columns)}"
                                  + (" (a tab inside a text? TSV texts cannot hold tabs or line breaks)" if tsv else ""))
            if tsv:
                for name, position in index.items():
                    if _looks_csv_quoted(fields[position]):
                        raise where.error(name, "looks CSV-quoted (\"...\"\"...\"); TSV is read without quoting, "
                                                "as WMT and Moses files: save it unquoted, or as CSV")
            yield _make_row(lambda c: fields[index[c]], where, self.candidate_column, self.reference_columns,
                            lists_in_text=True)

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
        self._check_object(first, _Where(self.source, 1, line))
        self._columns(list(first), candidate_column, reference_columns)
        expected = {self.candidate_column, *self.reference_columns}
        return self._record_rows(itertools.chain([(line, first)], records), expected)

    def _record_rows(self, records: Iterator[tuple[int | None, Any]], expected: set[str]) -> Iterator[TableRow]:
        for number, (line, record) in enumerate(records, start=1):
            where = _Where(self.source, number, line)
            self._check_object(record, where)
            if self._auto_columns:
                extra = [k for k in record if k not in expected and
                         (_is_reference_name(k) or k.strip().lower() in CANDIDATE_COLUMNS)]
                if extra:
                    raise where.error(extra[0], "is not a column of row 1 (its columns decide the table's); give "
                                                "every row the same candidate and reference keys")
            yield _make_row(lambda c: record.get(c, _MISSING), where, self.candidate_column, self.reference_columns,
                            lists_in_text=False)

    @staticmethod
    def _check_object(record: Any, where: _Where) -> None:
        if not isinstance(record, dict):
            kind = _JSON_TYPES.get(type(record), "null" if record is None else type(record).__name__)
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


# ----- public entry points --------------------------------------------------------------------------
def open_table(
    path: str | os.PathLike[str], *, format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None, name: str | None = None,
) -> TableReader:
    """A lazy reader of the table in `path` (`name`: how errors call it; default the path)."""
    source = name or os.fspath(path)
    handle = open(path, "rb")
    try:
        extension = EXTENSIONS.get(os.path.splitext(os.fspath(path))[1].lower())
        return TableReader(_file_lines(handle, source), source, format=format, extension_format=extension,
                           candidate_column=candidate_column, reference_columns=reference_columns,
                           max_rows=max_rows, close=handle.close)
    except BaseException:
        handle.close()
        raise


def table_from_text(
    text: str, *, name: str = "input", format: str | None = None, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None, max_rows: int | None = None,
) -> TableReader:
    """A lazy reader of a table given as text (pasted rows, a string in memory)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return TableReader(_text_lines(text), name, format=format, candidate_column=candidate_column,
                       reference_columns=reference_columns, max_rows=max_rows)


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
    "CANDIDATE_COLUMNS", "FORMATS", "REFERENCE_COLUMNS", "TableError", "TableReader", "TableRow", "collect",
    "open_table", "parse_table", "read_table", "resolve_columns", "table_from_text",
]
