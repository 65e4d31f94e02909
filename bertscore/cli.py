"""Command line: `bertscore -c cands.txt -r refs.txt [refs2.txt ...]` (also `python -m bertscore`).

Input files are streamed (one text per line) and scored chunk by chunk. Every input is checked
(exists, UTF-8, equal lengths) before any output is touched; `-o` is written to a temporary file
that replaces the target only when the run succeeds. `--resume` (JSONL/TSV) writes and flushes
per chunk and continues an interrupted run after its last complete row, if its settings and
input files are unchanged (a TSV keeps every score's full precision in `OUTPUT.meta.values`,
so means and intervals equal an uninterrupted run's). Bad input (an `InputError`, or a file that
cannot be read or written) exits with code 2 and says what and where; anything else is a bug:
its traceback is shown and the exit code is 1. The official `bert-score` command's flags are
accepted as aliases (see the README).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import re
import sys
import traceback
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import IO, Any, Iterator, Sequence

from tqdm.auto import tqdm

from .inputs import InputError
from .notes import CLI, spelled
from .output_files import (
    changed_inputs, check_not_an_input, check_output, fingerprint, meta_path, open_output, read_meta, values_path,
    write_meta,
)

logger = logging.getLogger("bertscore")

FORMATS = ("text", "json", "jsonl", "tsv")
TSV_HEADER = "index\tprecision\trecall\tf1\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bertscore",
        description="BERTScore of candidate texts against reference texts (one text per line).",
        epilog="The official bert-score command's flags work too: --cand, --ref, --num_layers, --batch_size, "
               "--rescale_with_baseline, --baseline_path, -s/--seg_level, --nthreads, --use_fast_tokenizer.",
    )
    parser.add_argument("-c", "--candidates", "--cand",
                        help="candidates file, one per line ('-' = stdin); always a file, never the text itself")
    parser.add_argument(
        "-r", "--references", "--ref", nargs="+", default=[],
        help="reference file(s), one per line, aligned with the candidates; several files = several references",
    )
    parser.add_argument("-i", "--input", help="instead of -c/-r: one CSV, TSV, JSONL or JSON table with a candidate "
                        "column and one or more reference columns (see --candidate-column, --reference-column)")
    parser.add_argument("--candidate-column", help="--input's candidate column (default: candidate, prediction, "
                        "hypothesis, ...)")
    parser.add_argument("--reference-column", action="append", dest="reference_columns",
                        help="--input's reference column; repeat for several references (default: reference, "
                             "references, reference_1..n, ...)")
    parser.add_argument("--lang", help="language code choosing the default model (en, zh, de, ...)")
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder, or the embedded "
                        "'sentence-transformers/all-MiniLM-L6-v2'")
    parser.add_argument("-l", "--num-layers", "--num_layers", type=int,
                        help="layer to use (default: the model's official layer)")
    parser.add_argument("--idf", action="store_true", help="weigh tokens by idf over the references")
    parser.add_argument("--rescale-with-baseline", "--rescale_with_baseline", action="store_true",
                        help="rescale with the baseline")
    parser.add_argument("--baseline-path", "--baseline_path", help="custom LAYER,P,R,F baseline file")
    parser.add_argument("-b", "--batch-size", "--batch_size", type=int, default=64,
                        help="max sentences per encoder batch")
    parser.add_argument("--max-tokens-per-batch", type=int, help="token budget per encoder batch")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16", "auto"),
                        help="encoder precision (default float32, exact; auto: bfloat16 where it is native and faster)")
    parser.add_argument("--cache-bytes", type=int, default=None,
                        help="embedding cache size in bytes (default 512 MiB; 0 turns it off)")
    parser.add_argument("--cache-device", help="where cached embeddings live, e.g. cpu (default: the scoring device)")
    parser.add_argument("--long-texts", choices=("truncate", "window"), default="truncate",
                        help="texts past the model's limit: truncate (default, as the official package; noted) "
                             "or window (whole texts through overlapping windows)")
    parser.add_argument("--window-stride", type=int,
                        help="with --long-texts window: content tokens between window starts (default: half a window)")
    parser.add_argument("-f", "--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument("-o", "--output", help="write per-pair results here instead of stdout")
    parser.add_argument("--chunk-size", type=int, default=2048, help="pairs read, scored and written per chunk")
    parser.add_argument("--resume", action="store_true",
                        help="make an --output run resumable (jsonl/tsv): start it, or continue it after its last "
                             "complete row when settings and inputs are unchanged")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress bar and timing")
    statistics = parser.add_argument_group("corpus statistics (bootstrap intervals, paired significance tests)")
    statistics.add_argument("--systems", nargs="+", metavar="FILE",
                            help="instead of -c: several systems' outputs (one line per reference line), scored "
                                 "against the same -r references and compared with the first")
    test = statistics.add_mutually_exclusive_group()
    test.add_argument("--paired-ar", action="store_true",
                      help="paired approximate randomization test (the default: calibrated p-values)")
    test.add_argument("--paired-bs", action="store_true",
                      help="paired bootstrap resampling test, as sacrebleu --paired-bs (its p behaves one-sided)")
    statistics.add_argument("--ci", action="store_true", help="with -c/--input: the interval of each mean")
    statistics.add_argument("--confidence", type=float, default=0.95, help="interval confidence (default 0.95)")
    statistics.add_argument("--n-resamples", type=int,
                            help="resamples of the test (default: 10000 for --paired-ar, 1000 for --paired-bs); "
                                 "intervals use 1000 bootstrap resamples (the test's own with --paired-bs)")
    statistics.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    official = parser.add_argument_group("accepted for the official bert-score command, changing nothing")
    official.add_argument("-s", "--seg_level", "--seg-level", action="store_true",
                          help="per-pair lines: the text output always has them")
    official.add_argument("--nthreads", type=int, help="idf counting needs no worker processes here")
    official.add_argument("--use_fast_tokenizer", "--use-fast-tokenizer", action="store_true",
                          help="the fast tokenizer is always used (the official flag selects the slow one)")
    return parser


STRING_MODE_HINT = (
    "-c and -r take files, one text per line; the official bert-score command's mode that scores an argument "
    "that is not a file as the text itself is not supported, because a mistyped path would be scored as text"
)


def _open_text(path: str) -> IO[bytes]:
    """The file (or stdin for '-') as bytes: lines are decoded one by one to name a bad line."""
    if path == "-":
        return open(sys.stdin.fileno(), "rb", closefd=False)
    if os.path.isdir(path):
        raise InputError(f"{path} is a folder: give a file with one text per line")
    if not os.path.isfile(path):
        raise InputError(f"file not found: {path} ({STRING_MODE_HINT})")
    try:
        return open(path, "rb")
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None


def _lines(handle: IO[bytes], path: str) -> Iterator[str]:
    """Lines without their newline; a decoding error names the file and line."""
    for number, raw in enumerate(handle, start=1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")  # a leading BOM is not text
        except UnicodeDecodeError as error:
            raise InputError(f"{path}, line {number}: not valid UTF-8 ({error.reason}); re-encode it as UTF-8")
        yield line.rstrip("\n").rstrip("\r")


def _count_lines(path: str) -> int:
    with _open_text(path) as handle:
        return sum(1 for _ in _lines(handle, path))


@dataclass
class Row:
    index: int
    precision: float
    recall: float
    f1: float


def format_row(row: Row, fmt: str) -> str:
    if fmt == "jsonl":
        return json.dumps({"index": row.index, "precision": row.precision, "recall": row.recall, "f1": row.f1}) + "\n"
    if fmt == "tsv":
        return f"{row.index}\t{row.precision:.6f}\t{row.recall:.6f}\t{row.f1:.6f}\n"
    return f"{row.index}\tP={row.precision:.6f}\tR={row.recall:.6f}\tF1={row.f1:.6f}\n"


def parse_row(line: str, fmt: str) -> Row | None:
    """A complete output row, or None for a header or a damaged (partly written) line."""
    if not line.endswith("\n"):
        return None
    try:
        if fmt == "jsonl":
            data = json.loads(line)
            return Row(int(data["index"]), float(data["precision"]), float(data["recall"]), float(data["f1"]))
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 4 or fields[0] == "index":
            return None
        return Row(int(fields[0]), float(fields[1]), float(fields[2]), float(fields[3]))
    except (ValueError, KeyError, TypeError):
        return None


def _complete_rows(path: Path, fmt: str, header: str | None) -> tuple[list[Row], list[int]]:
    """The complete rows 0, 1, 2, ... at the start of `path`, and the byte offset after the header
    (or 0) followed by the offset after each row; a damaged or out-of-order line ends them."""
    rows: list[Row] = []
    offsets = [0]
    with open(path, "r", encoding="utf-8", newline="") as handle:
        offset = 0
        for line in handle:
            offset += len(line.encode("utf-8"))
            row = parse_row(line, fmt)
            if row is not None and row.index == len(rows):
                rows.append(row)
                offsets.append(offset)
            elif line == header and not rows:
                offsets[0] = offset
            else:
                break
    return rows, offsets


def _recover(path: Path, fmt: str) -> list[Row]:
    """Rows of an interrupted output file, at full precision; cut the file after its last complete
    row. A TSV shows 6 decimals: its exact values come from the values file beside it (written
    before each chunk's rows), and only rows present, and equal, in both are kept."""
    rows, offsets = _complete_rows(path, fmt, TSV_HEADER)
    if fmt == "tsv":
        values_file = values_path(path)
        exact, value_offsets = _complete_rows(values_file, "tsv", None) if values_file.exists() else ([], [0])
        kept = 0
        while kept < min(len(rows), len(exact)) and format_row(exact[kept], fmt) == format_row(rows[kept], fmt):
            kept += 1
        rows = exact[:kept]
        with open(values_file, "ab") as handle:
            handle.truncate(value_offsets[kept])
    with open(path, "r+b") as handle:
        handle.truncate(offsets[len(rows)] if rows else 0)  # no row: start afresh (the header is written again)
    return rows


@dataclass
class OutputPlan:
    """Where and how the results go, decided (and checked) before the model loads."""

    path: Path | None = None  # None: stdout
    in_place: bool = False  # a device or pipe (e.g. /dev/null): written directly, no meta
    resume: bool = False  # a resumable file: appended to, with a meta file beside it
    fingerprints: dict[str, Any] | None = None  # of the inputs (resumable runs)


def _input_paths(args: argparse.Namespace) -> list[str]:
    """Every input file: the --input table, or the candidates file and the reference files."""
    return [args.input] if args.input else [args.candidates, *args.references]


def read_files(args: argparse.Namespace, texts: Sequence[str]) -> list[str]:
    """The user's files, never to be an output: the text files and the --baseline-path file."""
    return [*texts, *([args.baseline_path] if args.baseline_path else [])]


def _input_fingerprints(args: argparse.Namespace) -> dict[str, Any]:
    first, *references = _input_paths(args)
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
    changed = changed_inputs(
        [recorded["candidates"], *recorded["references"]],
        [fingerprints["candidates"], *fingerprints["references"]],
        _input_paths(args),
    )
    if changed:
        raise InputError(f"{', '.join(changed)} changed since {output} was started (size or sha256 differ from "
                         f"{meta_path(output).name}): resuming would mix scores of different inputs; "
                         "restore the file, or run without --resume to start afresh")


def _plan_output(args: argparse.Namespace) -> OutputPlan:
    """Check the output before anything is loaded or written: never an input, a usable folder,
    and for --resume a file our CLI started on the same inputs (or none yet)."""
    if args.output is None:
        return OutputPlan()
    output = Path(args.output)
    inputs = read_files(args, _input_paths(args))
    check_not_an_input(output, inputs, [meta_path(output), values_path(output)])  # both are removed or written
    if check_output(output, inputs):
        if args.resume:
            raise InputError(f"--resume needs a regular file as --output, not {output}: its meta file would go "
                             f"beside it in {output.parent}")
        return OutputPlan(output, in_place=True)
    if not args.resume:
        return OutputPlan(output)
    fingerprints = _input_fingerprints(args)
    if output.exists():
        _check_resumable(output, args, fingerprints)
    return OutputPlan(output, resume=True, fingerprints=fingerprints)


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
        from .stats import bootstrap_ci

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
    from .tables import TableError, open_table

    if not os.path.isfile(args.input):
        raise InputError(f"file not found: {args.input}")
    try:
        return open_table(args.input, candidate_column=args.candidate_column, reference_columns=args.reference_columns)
    except TableError as error:
        raise InputError(str(error)) from None


def _table_pairs(args: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    from .tables import TableError

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
        cand_lines = _lines(stack.enter_context(_open_text(args.candidates)), args.candidates)
        ref_lines = [_lines(stack.enter_context(_open_text(p)), p) for p in args.references]
        count = 0
        for cand in cand_lines:
            refs = [next(lines, None) for lines in ref_lines]
            for path, ref in zip(args.references, refs):
                if ref is None:
                    raise InputError(f"{path} has {count} lines but {args.candidates} has more: "
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
            with _open_text(path) as handle:
                yield from _lines(handle, path)

    stream = references()
    documents = (ids for chunk in iter(lambda: list(islice(stream, args.chunk_size)), [])
                 for ids in scorer.pipeline.document_ids(chunk))
    from .idf import TokenWeights

    model = scorer.model
    # every reference of the input: the idf a single score() call over it all uses, so "idf" it is
    return TokenWeights.from_documents(documents, model.vocab_size, model.zero_weight_ids, label="idf")


def _check_inputs(args: argparse.Namespace) -> None:
    """Every input exists, is readable and UTF-8, and all files have as many lines (stdin: later)."""
    args.total_pairs = None
    if args.input:
        if args.candidates or args.references:
            raise InputError("pass either --input TABLE or -c/-r files, not both")
        args.total_pairs = sum(1 for _ in _table_pairs(args))  # reads it all once: every row checked
        if args.total_pairs == 0:
            raise InputError(f"{args.input} has no rows: nothing to score")
        return
    if args.input is None and (args.candidates is None or not args.references):
        raise InputError("pass -c CANDIDATES -r REFERENCES [REFERENCES ...], or --input TABLE")
    if args.candidate_column or args.reference_columns:
        raise InputError("--candidate-column and --reference-column go with --input")
    for path in args.references:
        _open_text(path).close()
    if args.candidates == "-":
        return
    counts = {path: _count_lines(path) for path in [args.candidates, *args.references]}
    args.total_pairs = counts[args.candidates]
    if len(set(counts.values())) > 1:
        detail = ", ".join(f"{p}: {n} lines" for p, n in counts.items())
        raise InputError(f"the input files differ in length ({detail}): give one reference per candidate line")
    if args.total_pairs == 0:
        raise InputError(f"{args.candidates} has no lines: nothing to score")


def run(args: argparse.Namespace) -> int:
    if args.model_type is None and args.lang is None:
        raise InputError("pass --model or --lang (offline: --model sentence-transformers/all-MiniLM-L6-v2)")
    if args.chunk_size < 1:
        raise InputError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    _check_statistics_options(args)
    if args.rescale_with_baseline and args.baseline_path is not None:
        _check_baseline_file(args)
    if args.systems:
        from .compare_cli import run_systems

        return run_systems(args)
    if args.resume and (args.output is None or args.format not in ("jsonl", "tsv")):
        raise InputError("--resume needs --output FILE and --format jsonl or tsv")
    if args.resume and args.candidates == "-":
        raise InputError("--resume needs --candidates as a file: stdin cannot be checked for changes between runs")
    if "-" in args.references:
        raise InputError("references must be files ('-' is allowed for --candidates only)")
    if args.use_fast_tokenizer:
        logger.warning("--use_fast_tokenizer is accepted but changes nothing: the fast tokenizer is always used "
                       "(with this flag the official command uses the slow one)")
    _check_inputs(args)
    if args.ci and args.total_pairs is not None and args.total_pairs < 2:
        raise InputError(_ci_needs_two(args, args.total_pairs))
    args.output_plan = _plan_output(args)

    from . import distributed

    sharded = distributed.is_distributed()  # launched by torchrun / accelerate with WORLD_SIZE > 1
    if sharded and args.candidates == "-":
        raise InputError("under torchrun every rank reads the inputs: pass --candidates as a file, not stdin")
    scorer = build_scorer(args, distributed.local_device(args.device) if sharded else args.device)
    # idf over the whole input, as one score() call over everything (the hash says "idf").
    weights = _idf_from_references(scorer, args) if args.idf else None
    if sharded:  # each chunk is sharded across ranks; rank 0 alone writes
        return distributed.run_cli(args, scorer, _write_results, _pairs, weights=weights)
    return _write_results(args, scorer, lambda c, r, notes: scorer.score(c, r, notes=notes, weights=weights))


def _check_baseline_file(args: argparse.Namespace) -> None:
    """A malformed --baseline-path file, or one without a row for the layer asked (--num-layers, or
    the model's known default), is named before any model loads."""
    from .baselines import baseline_rows, load_baseline
    from .models import MODEL_TO_LAYERS, default_model_for_lang

    table = load_baseline(args.baseline_path)
    model_type = args.model_type or default_model_for_lang(args.lang)
    layer = args.num_layers if args.num_layers is not None else MODEL_TO_LAYERS.get(model_type)
    if layer is not None and layer >= 0:  # a negative layer is the model loader's to refuse
        baseline_rows(table, layer, args.baseline_path)


def build_scorer(args: argparse.Namespace, device: str | None) -> Any:
    """The scorer the options ask for (the device is checked before the model loads)."""
    from .devices import resolve_dtype
    from .embed import resolve_device
    from .models import default_model_for_lang
    from .scorer import BERTScorer

    if args.cache_bytes is not None and args.cache_bytes < 0:
        raise InputError(f"--cache-bytes must be >= 0, got {args.cache_bytes}")
    resolved = resolve_device(device)
    cache = {"cache_bytes": args.cache_bytes} if args.cache_bytes is not None else {}
    return BERTScorer(
        model_type=args.model_type or default_model_for_lang(args.lang), num_layers=args.num_layers,
        batch_size=args.batch_size, lang=args.lang, idf=args.idf, rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path, device=resolved, dtype=resolve_dtype(args.dtype, resolved),
        max_tokens_per_batch=args.max_tokens_per_batch, chunk_size=args.chunk_size,
        cache_device=args.cache_device, long_texts=args.long_texts, window_stride=args.window_stride, **cache,
    )


def _resumed_rows(args: argparse.Namespace, scorer) -> list[Row]:
    """The complete rows of the resumable output being continued (none for a new one)."""
    plan: OutputPlan = args.output_plan
    if not plan.resume or not plan.path.exists():
        return []
    previous = read_meta(plan.path).get("hashcode")
    if previous != scorer.hash:
        raise InputError(
            f"{plan.path} was written with other settings ({previous}); now {scorer.hash}. "
            "Use the same options, or a new --output"
        )
    done = _recover(plan.path, args.format)
    logger.info("resuming after %d complete rows of %s", len(done), plan.path)
    return done


@contextlib.contextmanager
def _open_output(args: argparse.Namespace, scorer, appending: bool) -> Iterator[tuple[IO[str], IO[str] | None]]:
    """The rows' file and, for a resumable TSV, its full-precision values file: stdout; a
    resumable file appended to (its meta first); otherwise the one writer (a device in place, a
    regular file through a temporary file that replaces it only if the run succeeds)."""
    plan: OutputPlan = args.output_plan
    if plan.path is None:
        yield sys.stdout, None
    elif plan.resume:
        if not appending:
            write_meta(plan.path, {"hashcode": scorer.hash, "format": args.format, "inputs": plan.fingerprints})
        mode = "a" if appending else "w"
        with contextlib.ExitStack() as stack:
            values = (stack.enter_context(open(values_path(plan.path), mode, encoding="utf-8", newline="\n"))
                      if args.format == "tsv" else None)
            yield stack.enter_context(open(plan.path, mode, encoding="utf-8", newline="\n")), values
    else:
        with open_output(plan.path) as handle:
            yield handle, None


def _write_results(args: argparse.Namespace, scorer, score_fn, on_start=None) -> int:
    """Score the input chunk by chunk with `score_fn(cands, refs, notes)` and write the rows."""
    summary = Summary(keep_values=args.ci)
    done = _resumed_rows(args, scorer)
    for row in done:
        summary.add(row)
    collected: list[Row] = list(done) if args.format == "json" else []
    durable = args.output_plan.resume  # rows must survive a kill: fsync per chunk
    with _open_output(args, scorer, appending=bool(done)) as (out, exact_values):
        if args.format == "tsv" and not done:
            out.write(TSV_HEADER)
        pairs = _pairs(args)
        skipped = sum(1 for _ in islice(pairs, len(done)))
        if skipped < len(done):
            raise InputError(f"{args.output} holds {len(done)} rows but the inputs only {skipped} pairs")
        if on_start is not None:
            on_start(len(done))
        index = len(done)
        shown_notes: set[str] = set()
        progress = tqdm(total=args.total_pairs, initial=index, disable=not args.verbose, desc="BERTScore", unit="pair")
        while chunk := list(islice(pairs, args.chunk_size)):
            cands = [c for c, _ in chunk]
            refs = [r for _, r in chunk]
            notes: list[str] = []
            precision, recall, f1 = score_fn(cands, refs, notes)
            for note in notes:  # beside the rows, never inside them; a run is one call: each note once
                line = f"bertscore: note: {_name_lines(note, index, args)}"
                if line not in shown_notes:
                    shown_notes.add(line)
                    print(line, file=sys.stderr)
            progress.update(len(chunk))
            rows = [Row(index + i, p, r, f) for i, (p, r, f) in
                    enumerate(zip(precision.tolist(), recall.tolist(), f1.tolist()))]
            index += len(rows)
            for row in rows:
                summary.add(row)
            if args.format == "json":
                collected.extend(rows)
                continue
            if exact_values is not None:  # first: a TSV row is kept on resume only with its exact values
                exact_values.write("".join(f"{r.index}\t{r.precision!r}\t{r.recall!r}\t{r.f1!r}\n" for r in rows))
                exact_values.flush()
                os.fsync(exact_values.fileno())
            out.write("".join(format_row(row, args.format) for row in rows))
            out.flush()
            if durable:
                os.fsync(out.fileno())
        progress.close()
        if summary.count == 0:
            raise InputError(f"{_input_paths(args)[0]} has no lines: nothing to score")
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
        # The summary goes beside machine-readable rows (stderr), never inside them.
        report = sys.stderr if args.format in ("jsonl", "tsv", "json") else out
        if args.format != "json" or args.output is not None:
            print(f"mean over {summary.count} pairs: P={means['precision']:.6f} R={means['recall']:.6f} "
                  f"F1={means['f1']:.6f}", file=report)
            if intervals is not None:
                from .stats import confidence_label

                level = confidence_label(args.confidence)
                print(f"{level} bootstrap intervals ({intervals['f1']['n_resamples']} resamples, seed {args.seed}): "
                      + "  ".join(f"{name[0].upper() if name != 'f1' else 'F1'} [{ci['low']:.6f}, {ci['high']:.6f}]"
                                  for name, ci in intervals.items()), file=report)
            print(f"hash: {scorer.hash}", file=report)
    return 0


def _ci_needs_two(args: argparse.Namespace, pairs: int) -> str:
    source = _input_paths(args)[0]
    return (f"--ci needs at least 2 pairs for a bootstrap interval; {'stdin' if source == '-' else source} has {pairs}: "
            "drop --ci or score more pairs")


def _check_statistics_options(args: argparse.Namespace) -> None:
    """Statistics options make sense only in their modes; their values are checked up front,
    before any input is read or model loaded (so a bad --seed never waits for scoring)."""
    if not 0 < args.confidence < 1:
        raise InputError(f"--confidence must lie strictly between 0 and 1, got {args.confidence}")
    if args.n_resamples is not None and args.n_resamples < 1:
        raise InputError(f"--n-resamples must be >= 1, got {args.n_resamples}")
    if args.seed < 0:
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    if args.systems:
        if args.candidates or args.input:
            raise InputError("--systems replaces -c/--input: pass the candidates of every system to --systems")
        if args.ci:
            raise InputError("--ci is for a single -c run; --systems always prints intervals")
        if args.resume:
            raise InputError("--resume is for a single -c run, not --systems")
        if args.format == "jsonl":
            raise InputError("--systems writes one table: use --format text, json or tsv")
    elif args.paired_ar or args.paired_bs:
        raise InputError("--paired-ar/--paired-bs compare systems: pass --systems base.txt other.txt ...")


_PLACE = re.compile(r"(candidates|references)\[(\d+)\](?:\[(\d+)\])?")


def _name_lines(note: str, first_index: int, args: argparse.Namespace) -> str:
    """A scorer note about one chunk, with its places named as input lines: `candidates[3]` of a
    chunk starting at row 2048 becomes `line 2052 of cands.txt`."""

    def line(match: re.Match[str]) -> str:
        row = first_index + int(match.group(2)) + 1
        if args.input:
            return f"row {row} of {args.input}" + (f" (reference {int(match.group(3)) + 1})"
                                                   if match.group(1) == "references" and match.group(3) else "")
        if match.group(1) == "candidates":
            return f"line {row} of {args.candidates}"
        return f"line {row} of {args.references[int(match.group(3) or 0)]}"

    return _PLACE.sub(line, note)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "baseline":
        from .baseline_cli import main as baseline_main

        return baseline_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with cli_logging(logging.INFO if args.verbose else logging.WARNING), spelled(CLI):
            return run(args)  # notes name options as this program spells them (--long-texts window)
    except (InputError, OSError) as error:  # what the user passed: an input, an option, a file
        print(f"bertscore: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.resume:
            kept = ": the rows written so far are kept; rerun with --resume to continue"
        else:
            kept = f": {args.output} is left as it was" if args.output else ""
        print(f"bertscore: interrupted{kept}", file=sys.stderr)
        return 130
    except Exception:  # not the input: a bug, shown with its traceback
        return internal_error("bertscore")


@contextlib.contextmanager
def cli_logging(level: int, package_level: int | None = None) -> Iterator[None]:
    """Log lines as "bertscore: ..." on stderr for one command, then the logging setup as found.

    As `logging.basicConfig(level=level)` where the process has not configured logging (a root
    logger without handlers), else its own setup serves; `package_level` sets the "bertscore"
    logger's level too. Everything is put back afterwards: `main()` also runs inside other
    processes (a notebook, a test, a script calling `bertscore.cli.main([...])`), whose root
    handlers and levels are theirs.
    """
    root, package = logging.getLogger(), logging.getLogger("bertscore")
    saved_root_level, saved_package_level = root.level, package.level
    handler = None
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("bertscore: %(message)s"))
        root.addHandler(handler)
        root.setLevel(level)
    if package_level is not None:
        package.setLevel(package_level)
    try:
        yield
    finally:
        package.setLevel(saved_package_level)
        if handler is not None:
            root.removeHandler(handler)
            root.setLevel(saved_root_level)


def internal_error(program: str) -> int:
    """Print the traceback of the exception being handled and say it is a bug: exit code 1."""
    traceback.print_exc()
    print(f"{program}: internal error (not a problem with your input): please report it with the traceback above",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
