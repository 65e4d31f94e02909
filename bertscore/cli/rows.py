"""Where the per-pair rows of `bertscore -c/-r` (or `--input`) go: their formats, the output
plan checked before the model loads, and resuming an interrupted `--resume` file.

`--resume` continues an interrupted run after its last complete row, if its settings and input
files are unchanged; a TSV keeps every score's full precision in `OUTPUT.meta.values`, so means
and intervals equal an uninterrupted run's. A Parquet file is whole only once its footer is
written: a resumable one keeps each finished chunk as a Parquet file of its own in `OUTPUT.parts/`
(written whole or not at all), joins them into OUTPUT (one row group each) when the run ends, and
resumes after its last complete part.

Rows are numbered as lines of a file are, from 1: row N of every output (the text table, the
`line` column of JSONL, TSV and Parquet) is line N of the -c/-r files (row N of an --input table),
the line `bertscore explain --line N` explains and the notes name. Resumable files that earlier
versions wrote, whose `index` column counted from 0, are renumbered when `--resume` continues them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

from ..inputs import InputError
from ..output_files import (
    changed_inputs, check_not_an_input, check_output, fingerprint, meta_path, open_output, parts_path, read_meta,
    values_path,
    write_meta,
)
from ..wording import counted
from .io import input_paths, read_files

logger = logging.getLogger("bertscore")

TSV_HEADER = "line\tprecision\trecall\tf1\n"
ROW_COLUMNS = ("line", "precision", "recall", "f1")  # the output's columns, the row's number first
# what a resumable file's meta records of its rows' numbering; earlier versions wrote none (0-based `index`)
NUMBERING = {"rows": "line, from 1"}
HASH_KEY = b"bertscore.hashcode"  # a Parquet output's schema metadata: the settings' hash


@dataclass
class Row:
    """One scored pair of the output: its line (counted from 1, as the input files' lines) and its P, R, F1."""

    line: int
    precision: float
    recall: float
    f1: float


def format_row(row: Row, fmt: str) -> str:
    """The row as written in `fmt` (jsonl, tsv, or the text output's line)."""
    if fmt == "jsonl":
        return json.dumps({"line": row.line, "precision": row.precision, "recall": row.recall, "f1": row.f1}) + "\n"
    if fmt == "tsv":
        return f"{row.line}\t{row.precision:.6f}\t{row.recall:.6f}\t{row.f1:.6f}\n"
    return f"{row.line}\tP={row.precision:.6f}\tR={row.recall:.6f}\tF1={row.f1:.6f}\n"


def exact_values_text(rows: list[Row]) -> str:
    """A resumable TSV's full-precision values file: line and P, R, F1 as Python writes floats."""
    return "".join(f"{r.line}\t{r.precision!r}\t{r.recall!r}\t{r.f1!r}\n" for r in rows)


class ParquetRows:
    """Rows written to a binary file as Parquet, one row group per chunk: line (int64), precision,
    recall, f1 (float64, full precision); the scorer's hash in the schema's metadata. `close()`
    writes the footer: a file whose run failed is never closed, and the one writer drops it."""

    def __init__(self, handle: IO[bytes], hashcode: str) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._pa = pa
        self.schema = pa.schema([("line", pa.int64()), ("precision", pa.float64()), ("recall", pa.float64()),
                                 ("f1", pa.float64())], metadata={HASH_KEY: hashcode.encode("utf-8")})
        self._writer = pq.ParquetWriter(handle, self.schema)

    def write_rows(self, rows: list[Row]) -> None:
        columns = [[row.line for row in rows], [row.precision for row in rows], [row.recall for row in rows],
                   [row.f1 for row in rows]]
        self.write_table(self._pa.Table.from_arrays(columns, schema=self.schema))

    def write_table(self, table: Any) -> None:
        self._writer.write_table(table.replace_schema_metadata(self.schema.metadata))

    def close(self) -> None:
        self._writer.close()


def _part_name(first_line: int) -> str:
    return f"part-{first_line:012d}.parquet"


class ParquetParts:
    """A resumable Parquet output: each chunk's rows a whole Parquet file in the parts folder (through
    the one writer: complete or absent), joined into the output by `finish()`."""

    def __init__(self, folder: Path, hashcode: str) -> None:
        self.folder, self.hashcode = folder, hashcode

    def write_rows(self, rows: list[Row]) -> None:
        with open_output(self.folder / _part_name(rows[0].line), replaces_meta=False, binary=True) as handle:
            part = ParquetRows(handle, self.hashcode)
            part.write_rows(rows)
            part.close()

    def finish(self, output: Path) -> None:
        """The parts, a row group each and in order, into `output` (atomically); then the parts go."""
        import pyarrow.parquet as pq

        with open_output(output, replaces_meta=False, binary=True) as handle:
            joined = ParquetRows(handle, self.hashcode)
            for part in sorted(self.folder.glob("part-*.parquet")):
                with pq.ParquetFile(part) as parquet:
                    for group in range(parquet.num_row_groups):
                        joined.write_table(parquet.read_row_group(group))
            joined.close()
        shutil.rmtree(self.folder)


@dataclass(frozen=True)
class Numbering:
    """How a file's rows are numbered: the number's column and the first row's number."""

    column: str
    first: int

    def tsv_header(self) -> str:
        return f"{self.column}\tprecision\trecall\tf1\n"


LINES = Numbering("line", 1)
OLD_INDEX = Numbering("index", 0)  # resumable files of earlier versions: `index`, counted from 0


def _recover_parquet(path: Path, numbering: Numbering) -> list[Row]:
    """Rows of an interrupted resumable Parquet run, at full precision: its parts in order while each
    continues the rows (a later, unreadable or stray file is removed); without parts, a finished
    output, first copied into the parts folder (the run then ends by joining them again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = parts_path(path)
    if not any(folder.glob("part-*.parquet")):
        if not path.exists():
            return []
        folder.mkdir(exist_ok=True)
        first_part = folder / _part_name(numbering.first)
        with open(path, "rb") as source, open_output(first_part, replaces_meta=False, binary=True) as copy:
            shutil.copyfileobj(source, copy)
    for stray in folder.iterdir():  # a temporary file of a part being written when the run was killed
        if not stray.name.startswith("part-"):
            stray.unlink()
    rows: list[Row] = []
    complete = True
    shift = 1 - numbering.first
    for part in sorted(folder.glob("part-*.parquet")):
        if complete and part.name == _part_name(len(rows) + numbering.first):
            try:
                table = pq.read_table(part, columns=[numbering.column, *ROW_COLUMNS[1:]])
                found = [Row(number + shift, *values)
                         for number, *values in zip(*(column.to_pylist() for column in table.columns))]
            except (pa.ArrowException, OSError):
                found = []
            if found and [row.line for row in found] == list(range(len(rows) + 1, len(rows) + len(found) + 1)):
                rows.extend(found)
                continue
        complete = False
        part.unlink()  # not the next part (damaged, or out of order): it and all later ones go
    return rows


def parse_row(line: str, fmt: str, numbering: Numbering = LINES) -> Row | None:
    """A complete output row (its line counted from 1), or None for a header or a damaged (partly
    written) line; `numbering` says how the file counts (earlier versions: `index` from 0)."""
    if not line.endswith("\n"):
        return None
    shift = 1 - numbering.first
    try:
        if fmt == "jsonl":
            data = json.loads(line)
            return Row(int(data[numbering.column]) + shift, float(data["precision"]), float(data["recall"]),
                       float(data["f1"]))
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 4 or fields[0] == numbering.column:
            return None
        return Row(int(fields[0]) + shift, float(fields[1]), float(fields[2]), float(fields[3]))
    except (ValueError, KeyError, TypeError):
        return None


def _complete_rows(path: Path, fmt: str, header: str | None, numbering: Numbering) -> tuple[list[Row], list[int]]:
    """The complete rows 1, 2, 3, ... at the start of `path`, and the byte offset after the header
    (or 0) followed by the offset after each row; a damaged or out-of-order line ends them."""
    rows: list[Row] = []
    offsets = [0]
    with open(path, "r", encoding="utf-8", newline="") as handle:
        offset = 0
        for line in handle:
            offset += len(line.encode("utf-8"))
            row = parse_row(line, fmt, numbering)
            if row is not None and row.line == len(rows) + 1:
                rows.append(row)
                offsets.append(offset)
            elif line == header and not rows:
                offsets[0] = offset
            else:
                break
    return rows, offsets


def _kept_rows(path: Path, fmt: str, numbering: Numbering = LINES) -> tuple[list[Row], int, int | None]:
    """The rows of an interrupted JSONL or TSV output that a resume keeps, at full precision, and
    the byte offsets to cut it (and a TSV's values file) at; nothing is changed. A TSV shows 6
    decimals: its exact values come from the values file beside it (written before each chunk's
    rows), and only rows present, and equal, in both are kept."""
    rows, offsets = _complete_rows(path, fmt, numbering.tsv_header(), numbering)
    values_offset = None
    if fmt == "tsv":
        values_file = values_path(path)
        exact, value_offsets = (_complete_rows(values_file, "tsv", None, numbering) if values_file.exists()
                                else ([], [0]))
        kept = 0
        while kept < min(len(rows), len(exact)) and format_row(exact[kept], fmt) == format_row(rows[kept], fmt):
            kept += 1
        rows, values_offset = exact[:kept], value_offsets[kept]
    return rows, (offsets[len(rows)] if rows else 0), values_offset  # no row: start afresh (header again)


def _recover(path: Path, fmt: str, numbering: Numbering = LINES) -> list[Row]:
    """Rows of an interrupted output file, at full precision (`_kept_rows`); cut the file after its
    last complete row (a TSV's values file too). Parquet: its parts."""
    if fmt == "parquet":
        return _recover_parquet(path, numbering)
    rows, offset, values_offset = _kept_rows(path, fmt, numbering)
    if values_offset is not None:
        with open(values_path(path), "ab") as handle:
            handle.truncate(values_offset)
    with open(path, "r+b") as handle:
        handle.truncate(offset)
    return rows


def _parquet_rows_kept(folder: Path) -> int:
    """Rows of the parts a resume of a Parquet output keeps (read-only: those that continue the rows
    from line 1, as `_recover_parquet` reads them)."""
    import pyarrow.parquet as pq

    count = 0
    for part in sorted(folder.glob("part-*.parquet")):
        if part.name != _part_name(count + 1):
            break
        try:
            lines = pq.read_table(part, columns=["line"]).column(0).to_pylist()
        except Exception:  # noqa: BLE001 - a part that cannot be read is not kept (the resume drops it)
            break
        if not lines or lines != list(range(count + 1, count + len(lines) + 1)):
            break
        count += len(lines)
    return count


def interrupted_message(args: argparse.Namespace) -> str:
    """What an interrupted `--resume` run says it kept, counted in the output as a resume will read
    it: how many rows, or that there are none; then how to continue."""
    output = Path(args.output)
    fmt = getattr(args, "format", None)
    again = "run the same command again (with --resume) to continue"
    try:
        meta = read_meta(output) if output.exists() or parts_path(output).exists() else None
        if meta is None or meta.get("rows") != NUMBERING["rows"] or fmt not in ("jsonl", "tsv", "parquet"):
            count = None if meta is not None else 0
        elif fmt == "parquet":
            count = _parquet_rows_kept(parts_path(output)) if parts_path(output).exists() else _parquet_rows(output)
        else:
            count = len(_kept_rows(output, fmt)[0])
    except (InputError, OSError, ValueError):
        count = None
    if count is None:
        return f": the rows written to {output} so far are kept; {again}"
    if count == 0:
        return f": no row was written yet, so {output} keeps none; {again}"
    return f": {counted(count, 'row')} kept in {output} (lines 1 to {count}); {again} after them"


def _parquet_rows(path: Path) -> int:
    """Rows of a finished Parquet output."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def _renumber(path: Path, fmt: str, meta: dict[str, Any]) -> None:
    """A resumable output an earlier version started (rows `index`ed from 0): its complete rows
    written again, numbered from 1 (a damaged last row dropped, as on any resume), then its meta
    marked; killed in between, the next --resume reads it as unnumbered and starts afresh."""
    rows = _recover(path, fmt, OLD_INDEX)
    if fmt == "parquet":
        folder = parts_path(path)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        if rows:
            ParquetParts(folder, meta["hashcode"]).write_rows(rows)
    elif rows:
        with open_output(path, replaces_meta=False) as handle:
            handle.write((TSV_HEADER if fmt == "tsv" else "") + "".join(format_row(row, fmt) for row in rows))
        if fmt == "tsv":
            with open_output(values_path(path), replaces_meta=False) as handle:
                handle.write(exact_values_text(rows))
    kept = {key: value for key, value in meta.items() if key not in ("written_by", "meta_version")}
    write_meta(path, {**kept, **NUMBERING})
    logger.info("%s was started by an earlier bertscore that counted rows from 0: its %d rows now count from 1 "
                "(column %r)", path, len(rows), LINES.column)


@dataclass
class OutputPlan:
    """Where and how the results go, decided (and checked) before the model loads."""

    path: Path | None = None  # None: stdout
    in_place: bool = False  # a device or pipe (e.g. /dev/null): written directly, no meta
    resume: bool = False  # a resumable file: appended to, with a meta file beside it
    fingerprints: dict[str, Any] | None = None  # of the inputs (resumable runs)


def _input_fingerprints(args: argparse.Namespace) -> dict[str, Any]:
    first, *references = input_paths(args)
    return {"candidates": fingerprint(first), "references": [fingerprint(p) for p in references]}


def _check_resumable(output: Path, args: argparse.Namespace, fingerprints: dict[str, Any]) -> None:
    """An existing output may be continued only if our CLI started it, in this format, on these inputs."""
    meta = read_meta(output)
    if meta.get("format") != args.format:
        raise InputError(f"{output} holds {meta.get('format')} rows, not {args.format}: use the same --format")
    recorded = meta.get("inputs") or {}
    if len(recorded.get("references", [])) != len(args.references):
        raise InputError(f"{output} was started with {len(recorded.get('references', []))} reference file(s), "
                         f"now {len(args.references)}: use the same inputs, or another -o")
    chunk_size = meta.get("chunk_size")  # earlier versions recorded none
    if chunk_size is not None and chunk_size != args.chunk_size:
        raise InputError(f"{output} was started with --chunk-size {chunk_size}, now {args.chunk_size}: continue it "
                         f"with --chunk-size {chunk_size} (its chunks, from line 1, meet the encoder in the same "
                         "batches as an uninterrupted run's: the same numbers), or use another -o")
    changed = changed_inputs(
        [recorded["candidates"], *recorded["references"]],
        [fingerprints["candidates"], *fingerprints["references"]],
        input_paths(args),
    )
    if changed:
        raise InputError(f"{', '.join(changed)} changed since {output} was started (size or sha256 differ from "
                         f"{meta_path(output).name}): resuming would mix scores of different inputs; "
                         "restore the file, or run without --resume to start afresh")


def plan_output(args: argparse.Namespace) -> OutputPlan:
    """Check the output before anything is loaded or written: never an input, a usable folder,
    and for --resume a file our CLI started on the same inputs (or none yet)."""
    if args.output is None:
        return OutputPlan()
    output = Path(args.output)
    inputs = read_files(args, input_paths(args))
    check_not_an_input(output, inputs, [meta_path(output), values_path(output), parts_path(output)])  # removed or written
    if check_output(output, inputs):
        if args.resume:
            raise InputError(f"--resume needs a regular file as --output, not {output}: its meta file would go "
                             f"beside it in {output.parent}")
        return OutputPlan(output, in_place=True)
    if not args.resume:
        return OutputPlan(output)
    fingerprints = _input_fingerprints(args)
    if output.exists() or parts_path(output).exists():
        _check_resumable(output, args, fingerprints)
    return OutputPlan(output, resume=True, fingerprints=fingerprints)


def resumed_rows(args: argparse.Namespace, scorer) -> list[Row]:
    """The complete rows of the resumable output being continued (none for a new one)."""
    plan: OutputPlan = args.output_plan
    if not plan.resume or not (plan.path.exists() or parts_path(plan.path).exists()):
        return []
    meta = read_meta(plan.path)
    previous = meta.get("hashcode")
    if previous != scorer.hash:
        raise InputError(
            f"{plan.path} was written with other settings ({previous}); now {scorer.hash}. "
            "Use the same options, or a new --output"
        )
    if meta.get("rows") != NUMBERING["rows"]:  # started by an earlier version: rows counted from 0
        _renumber(plan.path, args.format, meta)
    done = _recover(plan.path, args.format)
    logger.info("resuming after %d complete rows of %s", len(done), plan.path)
    return done


@contextlib.contextmanager
def open_rows(args: argparse.Namespace, scorer, appending: bool) -> Iterator[tuple[IO[str], IO[str] | None]]:
    """The rows' file and, for a resumable TSV, its full-precision values file: stdout; a
    resumable file appended to (its meta first); otherwise the one writer (a device in place, a
    regular file through a temporary file that replaces it only if the run succeeds), for
    `-f parquet` wrapped in `ParquetRows`."""
    plan: OutputPlan = args.output_plan
    if plan.path is None:
        yield sys.stdout, None
    elif plan.resume and args.format == "parquet":
        folder = parts_path(plan.path)
        if not appending:
            write_meta(plan.path, {"hashcode": scorer.hash, "format": args.format, "inputs": plan.fingerprints,
                                   "chunk_size": args.chunk_size, **NUMBERING})
            shutil.rmtree(folder, ignore_errors=True)  # parts of a run with other settings or inputs
        folder.mkdir(exist_ok=True)
        parts = ParquetParts(folder, scorer.hash)
        yield parts, None  # type: ignore[misc]
        parts.finish(plan.path)
    elif plan.resume:
        if not appending:
            write_meta(plan.path, {"hashcode": scorer.hash, "format": args.format, "inputs": plan.fingerprints,
                                   "chunk_size": args.chunk_size, **NUMBERING})
        mode = "a" if appending else "w"
        with contextlib.ExitStack() as stack:
            values = (stack.enter_context(open(values_path(plan.path), mode, encoding="utf-8", newline="\n"))
                      if args.format == "tsv" else None)
            yield stack.enter_context(open(plan.path, mode, encoding="utf-8", newline="\n")), values
    elif args.format == "parquet":
        with open_output(plan.path, binary=True) as handle:
            rows = ParquetRows(handle, scorer.hash)
            yield rows, None  # type: ignore[misc]
            rows.close()
    else:
        with open_output(plan.path) as handle:
            yield handle, None

