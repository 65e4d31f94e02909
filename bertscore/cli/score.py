"""`bertscore -c cands.txt -r refs.txt [refs2.txt ...]` (or `--input TABLE`): score pairs, write rows.

Input files are streamed (one text per line) and scored chunk by chunk. Every input is checked
(exists, UTF-8, equal lengths) before any output is touched; `-o` is written to a temporary file
that replaces the target only when the run succeeds. `--resume` (JSONL/TSV) writes and flushes
per chunk and continues an interrupted run after its last complete row (see `rows.py`).
`--input` also reads Parquet, Arrow and datasets `save_to_disk` folders by record batches
(`bertscore.tables`); `-f parquet` writes a row group per chunk (resumable through part files).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
from itertools import islice
from typing import Any, Iterator

from tqdm.auto import tqdm

from ..inputs import InputError
from ..wording import counted
from .io import decoded_lines, input_paths, name_lines, open_text
from .options import build_scorer, chunk_size
from .rows import TSV_HEADER, Row, exact_values_text, format_row, open_rows, plan_output, resumed_rows

logger = logging.getLogger("bertscore")


def _count_lines(path: str) -> int:
    with open_text(path) as handle:
        return sum(1 for _ in decoded_lines(handle, path))


class Summary:
    """Running means of P, R, F over the rows (and every value, when intervals are wanted)."""

    def __init__(self, keep_values: bool = False) -> None:
        self.count = 0
        self.sums = [0.0, 0.0, 0.0]
        self.values: list[list[float]] | None = [[], [], []] if keep_values else None

    def add(self, row: Row) -> None:
        self.count += 1
        for i, value in enumerate((row.precision, row.recall, row.f1)):
            self.sums[i] += value
            if self.values is not None:
                self.values[i].append(value)

    def intervals(self, args: argparse.Namespace) -> dict[str, dict[str, Any]]:
        """The bootstrap interval of each mean (`--ci`); its cautions (few pairs or resamples) once each."""
        from ..stats import bootstrap_ci

        assert self.values is not None
        if self.count < 2:  # stdin: its length is known only now
            raise InputError(_ci_needs_two(args, self.count))
        notes: list[str] = []
        intervals = {
            name: bootstrap_ci(values, n_resamples=args.n_resamples or 1000, confidence=args.confidence,
                               seed=args.seed, notes=notes).to_dict()
            for name, values in zip(("precision", "recall", "f1"), self.values)
        }
        for note in dict.fromkeys(notes):  # the same for P, R and F1: said once
            print(f"bertscore: note: {note}", file=sys.stderr)
        return intervals

    def means(self) -> dict[str, float]:
        if self.count == 0:
            return {"precision": math.nan, "recall": math.nan, "f1": math.nan}
        return dict(zip(("precision", "recall", "f1"), (s / self.count for s in self.sums)))


def _table(args: argparse.Namespace) -> Any:
    """The --input table, opened for streaming (its columns are checked on opening)."""
    from ..tables import TableError, open_table

    if not os.path.exists(args.input):  # a file, or a datasets save_to_disk folder
        raise InputError(f"file not found: {args.input}")
    try:
        return open_table(args.input, candidate_column=args.candidate_column, reference_columns=args.reference_columns)
    except TableError as error:
        raise InputError(str(error)) from None


def _table_pairs(args: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    from ..tables import TableError

    try:
        with _table(args) as table:
            for row in table:
                yield row.candidate, list(row.references)
    except TableError as error:
        raise InputError(str(error)) from None


def _pairs(args: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    """Stream (candidate, references) pairs, checking that all files have the same length."""
    if args.input:
        yield from _table_pairs(args)
        return
    with contextlib.ExitStack() as stack:
        cand_lines = decoded_lines(stack.enter_context(open_text(args.candidates)), args.candidates)
        ref_lines = [decoded_lines(stack.enter_context(open_text(p)), p) for p in args.references]
        count = 0
        for cand in cand_lines:
            refs = [next(lines, None) for lines in ref_lines]
            for path, ref in zip(args.references, refs):
                if ref is None:
                    raise InputError(f"{path} has {counted(count, 'line')} but {args.candidates} has more: "
                                     "give one reference per candidate line")
            yield cand, refs  # type: ignore[misc]
            count += 1
        for path, lines in zip(args.references, ref_lines):
            if next(lines, None) is not None:
                raise InputError(f"{path} has more lines than the {count} of {args.candidates}")


def _idf_from_references(scorer, args: argparse.Namespace):
    """idf over every reference of the input (each line of each file, or each reference cell),
    counted as the inputs stream by: the weights one `score()` call over everything would use."""

    def references() -> Iterator[str]:
        if args.input:
            for _, refs in _table_pairs(args):
                yield from refs
            return
        for path in args.references:
            with open_text(path) as handle:
                yield from decoded_lines(handle, path)

    stream = references()
    documents = (ids for chunk in iter(lambda: list(islice(stream, args.chunk_size)), [])
                 for ids in scorer.pipeline.document_ids(chunk))
    from ..scoring.idf import TokenWeights

    model = scorer.model
    # every reference of the input: the idf a single score() call over it all uses, so "idf" it is
    return TokenWeights.from_documents(documents, model.vocab_size, model.zero_weight_ids, label="idf")


def _check_inputs(args: argparse.Namespace) -> None:
    """Every input exists, is readable and UTF-8, and all files have as many lines (stdin: later)."""
    args.total_pairs = args.total_comparisons = None
    if args.input:
        if args.candidates or args.references:
            raise InputError("pass either --input TABLE or -c/-r files, not both")
        counts = [len(refs) for _, refs in _table_pairs(args)]  # reads it all once: every row checked
        args.total_pairs, args.total_comparisons = len(counts), sum(counts)
        if args.total_pairs == 0:
            raise InputError(f"{args.input} has no rows: nothing to score")
        return
    if args.input is None and (args.candidates is None or not args.references):
        raise InputError("pass -c CANDIDATES -r REFERENCES [REFERENCES ...], or --input TABLE")
    if args.candidate_column or args.reference_columns:
        raise InputError("--candidate-column and --reference-column go with --input")
    for path in args.references:
        open_text(path).close()
    if args.candidates == "-":
        return
    counts = {path: _count_lines(path) for path in [args.candidates, *args.references]}
    args.total_pairs = counts[args.candidates]
    args.total_comparisons = args.total_pairs * len(args.references)
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{p}: {counted(n, 'line')}" for p, n in counts.items())
        raise InputError(f"the input files differ in length ({detail}): give one reference per candidate line")
    if args.total_pairs == 0:
        raise InputError(f"{args.candidates} has no lines: nothing to score")


def run(args: argparse.Namespace) -> int:
    """Score the -c/-r files (or the --input table) pair by pair; the options are checked already."""
    if args.format == "parquet" and args.output is None:
        raise InputError("--format parquet writes a binary file: give --output FILE (or -o /dev/stdout to pipe it)")
    if args.resume and (args.output is None or args.format not in ("jsonl", "tsv", "parquet")):
        raise InputError("--resume needs --output FILE and --format jsonl, tsv or parquet (or -o FILE.jsonl, "
                         ".tsv, .parquet)")
    if args.resume and args.candidates == "-":
        raise InputError("--resume needs --candidates as a file: stdin cannot be checked for changes between runs")
    if "-" in args.references:
        raise InputError("references must be files ('-' is allowed for --candidates only)")
    if args.use_fast_tokenizer:
        logger.warning("--use_fast_tokenizer is accepted but changes nothing: the fast tokenizer is always used "
                       "(with this flag the official command uses the slow one)")
    _check_inputs(args)
    args.chunk_size = chunk_size(args)  # before the output's plan: a resumed file records its chunks' size
    if args.ci and args.total_pairs is not None and args.total_pairs < 2:
        raise InputError(_ci_needs_two(args, args.total_pairs))
    args.output_plan = plan_output(args)

    from .. import distributed

    sharded = distributed.is_distributed()  # launched by torchrun / accelerate with WORLD_SIZE > 1
    if sharded and args.candidates == "-":
        raise InputError("under torchrun every rank reads the inputs: pass --candidates as a file, not stdin")
    scorer = build_scorer(args, distributed.local_device(args.device) if sharded else args.device)
    # idf over the whole input, as one score() call over everything (the hash says "idf").
    weights = _idf_from_references(scorer, args) if args.idf else None
    if sharded:  # each chunk is sharded across ranks; rank 0 alone writes
        return distributed.run_cli(args, scorer, _write_results, _pairs, weights=weights)
    return _write_results(args, scorer, lambda c, r, notes, progress: scorer.score(
        c, r, notes=notes, weights=weights, progress=progress))


def _write_results(args: argparse.Namespace, scorer, score_fn, on_start=None) -> int:
    """Score the input chunk by chunk with `score_fn(cands, refs, notes, progress)` and write the rows.

    One progress bar for the run (`args.progress`), in candidate-reference pairs: `score_fn` may
    move it as it goes (per encoder batch); whatever it left, the bar is at the chunk's end after it.
    Chunks start at line 1 + k x --chunk-size in every run: a resumed run whose last kept row ends
    inside a chunk (a kill during its write) scores that chunk again whole and writes the rows after
    the kept ones, so every chunk meets the encoder as in an uninterrupted run (the same batches,
    the same numbers)."""
    summary = Summary(keep_values=args.ci)
    done = resumed_rows(args, scorer)
    for row in done:
        summary.add(row)
    start = len(done) - len(done) % args.chunk_size  # the first line of the chunk the kept rows end in, less 1
    if len(done) == args.total_pairs:  # a finished output: nothing to score again
        start = len(done)
    collected: list[Row] = list(done) if args.format == "json" else []
    with open_rows(args, scorer, appending=bool(done)) as (out, exact_values):
        if args.format == "tsv" and not done:
            out.write(TSV_HEADER)
        pairs = _pairs(args)
        skipped_refs = _skip_done(args, pairs, start)
        if on_start is not None:
            on_start(start)
        shown_notes: set[str] = set()
        progress = tqdm(total=args.total_comparisons, initial=sum(skipped_refs), disable=not args.progress,
                        desc="BERTScore", unit="pair")
        while chunk := list(islice(pairs, args.chunk_size)):
            cands = [c for c, _ in chunk]
            refs = [r for _, r in chunk]
            notes: list[str] = []
            chunk_end = progress.n + sum(len(r) for r in refs)
            precision, recall, f1 = score_fn(cands, refs, notes, progress)
            progress.update(chunk_end - progress.n)
            _show_notes(notes, start, args, shown_notes)
            rows = [row for row in (Row(start + i, p, r, f) for i, (p, r, f) in
                                    enumerate(zip(precision.tolist(), recall.tolist(), f1.tolist()), start=1))
                    if row.line > len(done)]  # a chunk scored again: only its rows after the kept ones
            start += len(chunk)
            for row in rows:
                summary.add(row)
            if args.format == "json":
                collected.extend(rows)
            elif rows:
                _write_chunk(args, out, exact_values, rows)
        progress.close()
        if start < len(done):
            raise InputError(f"{args.output} holds {len(done)} rows but the inputs only {start} pairs")
        if summary.count == 0:
            raise InputError(f"{input_paths(args)[0]} has no lines: nothing to score")
        _write_summary(args, scorer, summary, collected, out)
    return 0


def _skip_done(args: argparse.Namespace, pairs: Iterator[tuple[str, list[str]]], done: int) -> list[int]:
    """Read past the first `done` pairs (the whole chunks a resumed output holds); the number of
    references of each."""
    skipped_refs = [len(refs) for _, refs in islice(pairs, done)]
    if len(skipped_refs) < done:
        raise InputError(f"{args.output} holds {done} rows but the inputs only {len(skipped_refs)} pairs")
    return skipped_refs


def _show_notes(notes: list[str], rows_before: int, args: argparse.Namespace, shown: set[str]) -> None:
    """A chunk's notes on stderr, their places named as input lines: beside the rows, never inside
    them, and above the bar, never through it; a run is one call, so each note is said once."""
    for note in notes:
        line = f"bertscore: note: {name_lines(note, rows_before, args)}"
        if line not in shown:
            shown.add(line)
            tqdm.write(line, file=sys.stderr)


def _write_chunk(args: argparse.Namespace, out: Any, exact_values: Any, rows: list[Row]) -> None:
    """A chunk's rows into the output: a Parquet row group (or part), else lines flushed (and, for a
    resumable file, fsynced: rows must survive a kill). Rows for a terminal go above the progress
    bar (as `tqdm.write` does), so that a row never lands on the bar's line."""
    if args.format == "parquet":  # a row group per chunk
        out.write_rows(rows)
        return
    if exact_values is not None:  # first: a TSV row is kept on resume only with its exact values
        exact_values.write(exact_values_text(rows))
        exact_values.flush()
        os.fsync(exact_values.fileno())
    text = "".join(format_row(row, args.format) for row in rows)
    if args.progress and _terminal(out) and _terminal(sys.stderr):  # the bar's terminal: rows above the bar
        with tqdm.external_write_mode(file=sys.stdout):  # clears the bar, redraws it after the rows
            out.write(text)
            out.flush()
    else:
        out.write(text)
    out.flush()
    if args.output_plan.resume:
        os.fsync(out.fileno())


def _terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _write_summary(args: argparse.Namespace, scorer, summary: Summary, collected: list[Row], out: Any) -> None:
    """After the rows: `-f json`'s one object; the mean (and the intervals with --ci) and the hash,
    on stderr beside machine-readable rows, never inside them."""
    means = summary.means()
    intervals = summary.intervals(args) if args.ci else None
    if args.format == "json":
        payload = {
            "precision": [r.precision for r in collected], "recall": [r.recall for r in collected],
            "f1": [r.f1 for r in collected], "mean": means, "hashcode": scorer.hash,
        }
        if intervals is not None:
            payload["ci"] = intervals
        json.dump(payload, out)
        out.write("\n")
    report = sys.stderr if args.format in ("jsonl", "tsv", "json", "parquet") else out
    if args.format == "json" and args.output is None:
        return
    print(f"mean over {counted(summary.count, 'pair')}: P={means['precision']:.6f} R={means['recall']:.6f} "
          f"F1={means['f1']:.6f}", file=report)
    if intervals is not None:
        from ..stats import confidence_label

        level = confidence_label(args.confidence)
        print(f"{level} bootstrap intervals ({intervals['f1']['n_resamples']} resamples, seed {args.seed}): "
              + "  ".join(f"{name[0].upper() if name != 'f1' else 'F1'} [{ci['low']:.6f}, {ci['high']:.6f}]"
                          for name, ci in intervals.items()), file=report)
    print(f"hash: {scorer.hash}", file=report)


def _ci_needs_two(args: argparse.Namespace, pairs: int) -> str:
    source = input_paths(args)[0]
    return (f"--ci needs at least 2 pairs for a bootstrap interval; {'stdin' if source == '-' else source} has {pairs}: "
            "drop --ci or score more pairs")

