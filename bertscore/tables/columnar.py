"""Tables stored as Arrow columns: Parquet files, Arrow IPC files (file and stream format) and the
folders `datasets.Dataset.save_to_disk` writes, read through pyarrow by record batches.

The format: `format=` wins (parquet, arrow); else the first bytes (`PAR1`, `ARROW1`, an IPC
stream's continuation marker) and, for a folder, its layout (`state.json` naming its
`data-*.arrow` stream files; a `DatasetDict`'s `dataset_dict.json` asks for one split); a
`.parquet` / `.arrow` name whose bytes say otherwise is an error, never a guess.

Columns: a text column is Arrow `string` (or `large_string`, `string_view`, a dictionary of
strings); a reference column may also be a list of strings (`list<string>`, as `datasets`
stores a list feature): several references in one cell. Any other type (an integer, a float,
binary) is refused with the column named, before any row is read; a null cell or a null list
item is refused with its row (counted from 1, as every table reader counts) and column. Memory
holds one record batch at a time (a Parquet file is read `BATCH_ROWS` rows at a time, whatever
its row groups).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ..wording import with_article
from .cells import TableRow, Where, make_row
from .errors import TableError
from .reader import RowSource

if TYPE_CHECKING:
    import pyarrow

COLUMNAR_FORMATS = ("parquet", "arrow")
EXTENSIONS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
              ".arrows": "arrow"}
BATCH_ROWS = 4096  # rows converted to Python at a time
_PARQUET_MAGIC = b"PAR1"
_ARROW_FILE_MAGIC = b"ARROW1"
_ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"  # an IPC stream's first message: continuation marker, then its length
INSTALL_HINT = "pip install pyarrow"


def _pyarrow(source: str) -> Any:
    try:
        import pyarrow
        import pyarrow.ipc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise TableError(source, f"is a Parquet/Arrow table, which needs pyarrow ({INSTALL_HINT})") from None
    return pyarrow


def columnar_format(path: str | os.PathLike[str], format: str | None = None, name: str | None = None) -> str | None:
    """'parquet', 'arrow' or 'dataset' (a save_to_disk folder) for a table read through pyarrow; None
    for a text table (CSV, TSV, JSONL, JSON). A folder that is no dataset, or a file whose name
    says Parquet/Arrow but whose bytes do not, is a TableError (naming `name`, default the path)."""
    source = name or os.fspath(path)
    if os.path.isdir(path):
        if format is not None:
            raise TableError(source, f"is a folder, not {with_article(format)} file")
        return _dataset_folder(os.fspath(path), source) and "dataset"
    if format is not None and format not in COLUMNAR_FORMATS:
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except FileNotFoundError:
        raise TableError(source, "file not found") from None
    sniffed = ("parquet" if head.startswith(_PARQUET_MAGIC) else
               "arrow" if head.startswith((_ARROW_FILE_MAGIC, _ARROW_STREAM_MAGIC)) else None)
    named = format or EXTENSIONS.get(os.path.splitext(source)[1].lower())
    if named is not None and sniffed != named:
        what = {"parquet": "Parquet file (it does not start with PAR1)",
                "arrow": "Arrow IPC file (it starts with neither ARROW1 nor a stream's 0xFFFFFFFF)"}[named]
        raise TableError(source, f"is not {with_article(what)}"
                                 + (f"; it looks like {sniffed}" if sniffed else ": a damaged file, or another format"))
    return sniffed


def _dataset_folder(folder: str, source: str) -> bool:
    """True for a `save_to_disk` folder of one Dataset; an error naming what else the folder is."""
    if os.path.isfile(os.path.join(folder, "dataset_dict.json")):
        splits = sorted(name for name in os.listdir(folder) if os.path.isdir(os.path.join(folder, name)))
        raise TableError(source, f"is a DatasetDict folder (splits: {', '.join(splits) or 'none'}): give one split's "
                                 f"folder, e.g. {os.path.join(source, splits[0] if splits else 'train')}")
    if not os.path.isfile(os.path.join(folder, "state.json")):
        raise TableError(source, "is a folder, but not one datasets' save_to_disk wrote (no state.json): give a "
                                 "table file (CSV, TSV, JSONL, JSON, Parquet, Arrow) or a save_to_disk folder")
    return True


def _data_files(folder: str, source: str) -> list[str]:
    """The Arrow stream files of a save_to_disk folder, in order (state.json's `_data_files`)."""
    try:
        with open(os.path.join(folder, "state.json"), encoding="utf-8") as handle:
            state = json.load(handle)
        names = [entry["filename"] for entry in state["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TableError(source, f"state.json cannot be read as datasets' save_to_disk state ({error!r})") from None
    if not names:
        raise TableError(source, "state.json names no data files")
    files = [os.path.join(folder, name) for name in names]
    missing = [name for name, path in zip(names, files) if not os.path.isfile(path)]
    if missing:
        raise TableError(source, f"state.json names {missing[0]}, which is not in the folder")
    return files


def _is_text(pa: Any, kind: "pyarrow.DataType") -> bool:
    types = pa.types
    if types.is_dictionary(kind):
        kind = kind.value_type
    return (types.is_string(kind) or types.is_large_string(kind)
            or (hasattr(types, "is_string_view") and types.is_string_view(kind)))


def _is_text_list(pa: Any, kind: "pyarrow.DataType") -> bool:
    types = pa.types
    lists = types.is_list(kind) or types.is_large_list(kind) or types.is_fixed_size_list(kind)
    return lists and (_is_text(pa, kind.value_type) or types.is_null(kind.value_type))


class ColumnarReader(RowSource):
    """The rows of a Parquet file, an Arrow IPC file or stream, or a save_to_disk folder, one record
    batch at a time; its columns are known (and their types checked) on construction."""

    no_rows = "has columns but no rows"

    def __init__(self, path: str | os.PathLike[str], source: str, format: str, *, candidate_column: str | None = None,
                 reference_columns: Sequence[str] | None = None, max_rows: int | None = None,
                 extra_columns: Sequence[str] = (), columns_only: bool = False):
        self.source, self.format, self.max_rows = source, format, max_rows
        self.extra_columns, self.columns_only = tuple(extra_columns), columns_only
        self._pa = _pyarrow(source)
        self._open: list[Any] = []
        self._close = self._close_files
        try:
            files = _data_files(os.fspath(path), source) if format == "dataset" else [os.fspath(path)]
            schema = self._schema(files[0])
            names = list(schema.names)
            repeated = sorted({name for name in names if names.count(name) > 1})
            if repeated:
                raise TableError(source, f"column {repeated[0]!r} appears {names.count(repeated[0])} times")
            self._columns(names, candidate_column, reference_columns)
            if not columns_only:
                self._check_types(schema)
            self._rows = iter(()) if columns_only else self._read(files)
        except BaseException:
            self.close()
            raise

    def _close_files(self) -> None:
        while self._open:
            self._open.pop().close()

    def _schema(self, path: str) -> "pyarrow.Schema":
        return self._batches(path, schema_only=True)

    def _batches(self, path: str, schema_only: bool = False) -> Any:
        """The schema of one file (`schema_only`), or an iterator of its record batches (wanted columns)."""
        pa = self._pa
        where = self.source if self.format != "dataset" else f"{self.source} ({os.path.basename(path)})"
        try:
            if self.format == "parquet":
                parquet = pa.parquet.ParquetFile(path, buffer_size=1 << 20, pre_buffer=False)  # pages, not whole chunks
                self._open.append(parquet)
                if schema_only:
                    return parquet.schema_arrow
                return parquet.iter_batches(batch_size=BATCH_ROWS, columns=self._wanted())
            handle = pa.memory_map(path)
            self._open.append(handle)
            with open(path, "rb") as raw:
                stream = raw.read(6) != _ARROW_FILE_MAGIC
            reader = pa.ipc.open_stream(handle) if stream else pa.ipc.open_file(handle)
            if schema_only:
                return reader.schema
            if stream:
                return iter(reader)
            return (reader.get_batch(i) for i in range(reader.num_record_batches))
        except (pa.ArrowException, OSError) as error:
            kind = "Parquet" if self.format == "parquet" else "Arrow IPC"
            raise TableError(where, f"cannot be read as {kind} ({error})") from None

    def _wanted(self) -> list[str]:
        return [self.candidate_column, *self.reference_columns, *self.extra_columns]

    def _check_types(self, schema: "pyarrow.Schema") -> None:
        pa = self._pa
        for name in [self.candidate_column, *self.reference_columns]:
            kind = schema.field(name).type
            if _is_text(pa, kind) or (name != self.candidate_column and _is_text_list(pa, kind)):
                continue
            if pa.types.is_null(kind):
                detail = "null in every row (a column without a single text)"
            else:
                detail = f"of Arrow type {kind}"
            wanted = "text (string)" if name == self.candidate_column else "text (string) or a list of texts"
            raise TableError(self.source, f"is {detail}, not {wanted}: convert the column to strings if it holds texts",
                             column=name)

    def _read(self, files: list[str]) -> Iterator[TableRow]:
        wanted = self._wanted()
        number = 0
        for path in files:
            schema = self._schema(path) if len(files) > 1 else None
            if schema is not None and [n for n in wanted if n not in schema.names]:
                raise TableError(f"{self.source} ({os.path.basename(path)})",
                                 f"lacks column(s) {', '.join(repr(n) for n in wanted if n not in schema.names)} "
                                 "that the first data file has")
            batches = self._batches(path)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except (self._pa.ArrowException, OSError) as error:
                    raise TableError(self.source, f"cannot be read after row {number} ({error})") from None
                columns = {name: batch.column(batch.schema.get_field_index(name)).to_pylist() for name in wanted}
                for offset in range(batch.num_rows):
                    number += 1
                    yield make_row(lambda c: columns[c][offset], Where(self.source, number, None),
                                   self.candidate_column, self.reference_columns, lists_in_text=False,
                                   extra_columns=self.extra_columns)
            self._close_files()
