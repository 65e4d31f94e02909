"""Command line: `bertscore -c cands.txt -r refs.txt [refs2.txt ...]` (also `python -m bertscore`).

Input files are streamed (one text per line) and scored chunk by chunk; JSONL/TSV output is
written and flushed per chunk, and `--resume` continues an interrupted run after its last
complete row. Bad input exits with code 2 and says what and where.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import sys
import warnings
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import IO, Iterator, Sequence

from tqdm.auto import tqdm

logger = logging.getLogger("bertscore")

FORMATS = ("text", "json", "jsonl", "tsv")
TSV_HEADER = "index\tprecision\trecall\tf1\n"


class InputError(Exception):
    """Bad command-line input: reported with exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bertscore",
        description="BERTScore of candidate texts against reference texts (one text per line).",
    )
    parser.add_argument("-c", "--candidates", required=True, help="candidates file, one per line ('-' = stdin)")
    parser.add_argument(
        "-r", "--references", required=True, nargs="+",
        help="reference file(s), one per line, aligned with the candidates; several files = several references",
    )
    parser.add_argument("--lang", help="language code choosing the default model (en, zh, de, ...)")
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder, or the embedded "
                        "'sentence-transformers/all-MiniLM-L6-v2'")
    parser.add_argument("-l", "--num-layers", type=int, help="layer to use (default: the model's official layer)")
    parser.add_argument("--idf", action="store_true", help="weigh tokens by idf over the references")
    parser.add_argument("--rescale-with-baseline", action="store_true", help="rescale with the baseline")
    parser.add_argument("--baseline-path", help="custom LAYER,P,R,F baseline file")
    parser.add_argument("-b", "--batch-size", type=int, default=64, help="max sentences per encoder batch")
    parser.add_argument("--max-tokens-per-batch", type=int, help="token budget per encoder batch")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), help="encoder precision")
    parser.add_argument("-f", "--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument("-o", "--output", help="write per-pair results here instead of stdout")
    parser.add_argument("--chunk-size", type=int, default=2048, help="pairs read, scored and written per chunk")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted --output run (jsonl/tsv)")
    parser.add_argument("-v", "--verbose", action="store_true", help="progress bar and timing")
    return parser


def _open_text(path: str) -> IO[bytes]:
    """The file (or stdin for '-') as bytes: lines are decoded one by one to name a bad line."""
    if path == "-":
        return open(sys.stdin.fileno(), "rb", closefd=False)
    if not os.path.isfile(path):
        raise InputError(f"file not found: {path}")
    return open(path, "rb")


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


def _recover(path: Path, fmt: str) -> list[Row]:
    """Rows of an interrupted output file; cut the file after its last complete row."""
    rows: list[Row] = []
    keep = 0
    with open(path, "r", encoding="utf-8", newline="") as handle:
        offset = 0
        for line in handle:
            offset += len(line.encode("utf-8"))
            row = parse_row(line, fmt)
            if row is not None and row.index == len(rows):
                rows.append(row)
                keep = offset
            elif line == TSV_HEADER and not rows:
                keep = offset
            else:
                break
    with open(path, "r+b") as handle:
        handle.truncate(keep)
    return rows


def _meta_path(output: Path) -> Path:
    return output.with_name(output.name + ".meta.json")


class Summary:
    """Running means of P, R, F over the rows."""

    def __init__(self) -> None:
        self.count = 0
        self.sums = [0.0, 0.0, 0.0]

    def add(self, row: Row) -> None:
        self.count += 1
        for i, value in enumerate((row.precision, row.recall, row.f1)):
            self.sums[i] += value

    def means(self) -> dict[str, float]:
        if self.count == 0:
            return {"precision": math.nan, "recall": math.nan, "f1": math.nan}
        return dict(zip(("precision", "recall", "f1"), (s / self.count for s in self.sums)))


def _pairs(args: argparse.Namespace) -> Iterator[tuple[str, list[str]]]:
    """Stream (candidate, references) pairs, checking that all files have the same length."""
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


def _idf_from_references(model, paths: Sequence[str], chunk_size: int):
    """idf over every reference line of every file, counted as the files stream by."""
    from .idf import TokenWeights

    def documents() -> Iterator[list[int]]:
        for path in paths:
            with _open_text(path) as handle:
                lines = _lines(handle, path)
                while chunk := list(islice(lines, chunk_size)):
                    yield from model.tokenize(chunk)

    return TokenWeights.from_documents(documents(), model.vocab_size, model.zero_weight_ids)


def run(args: argparse.Namespace) -> int:
    from .models import default_model_for_lang, load_model
    from .scorer import BERTScorer

    if args.model_type is None and args.lang is None:
        raise InputError("pass --model or --lang (offline: --model sentence-transformers/all-MiniLM-L6-v2)")
    if args.chunk_size < 1:
        raise InputError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    if args.resume and (args.output is None or args.format not in ("jsonl", "tsv")):
        raise InputError("--resume needs --output FILE and --format jsonl or tsv")
    if "-" in args.references:
        raise InputError("references must be files ('-' is allowed for --candidates only)")
    for path in [args.candidates, *args.references]:
        if path != "-" and not os.path.isfile(path):
            raise InputError(f"file not found: {path}")
    args.total_pairs = None
    if args.candidates != "-":
        counts = {path: _count_lines(path) for path in [args.candidates, *args.references]}
        args.total_pairs = counts[args.candidates]
        if len(set(counts.values())) > 1:
            detail = ", ".join(f"{p}: {n} lines" for p, n in counts.items())
            raise InputError(f"the input files differ in length ({detail}): give one reference per candidate line")

    from . import distributed

    sharded = distributed.is_distributed()  # launched by torchrun / accelerate with WORLD_SIZE > 1
    if sharded and args.candidates == "-":
        raise InputError("under torchrun every rank reads the inputs: pass --candidates as a file, not stdin")
    device = distributed.local_device(args.device) if sharded else args.device
    model_type = args.model_type or default_model_for_lang(args.lang)
    model = load_model(model_type, args.num_layers)
    idf = _idf_from_references(model, args.references, args.chunk_size) if args.idf else False
    scorer = BERTScorer(
        model_type=model_type, batch_size=args.batch_size, lang=args.lang, idf=idf,
        rescale_with_baseline=args.rescale_with_baseline, baseline_path=args.baseline_path,
        device=device, dtype=args.dtype, max_tokens_per_batch=args.max_tokens_per_batch,
        chunk_size=args.chunk_size, loaded_model=model,
    )
    if sharded:  # each chunk is sharded across ranks; rank 0 alone writes
        return distributed.run_cli(args, scorer, _write_results, _pairs)
    return _write_results(args, scorer)


def _write_results(args: argparse.Namespace, scorer, score_fn=None, on_start=None) -> int:
    summary = Summary()
    done: list[Row] = []
    output_path = Path(args.output) if args.output else None
    if output_path is not None and args.resume and output_path.exists():
        meta_path = _meta_path(output_path)
        if meta_path.exists():
            previous = json.loads(meta_path.read_text(encoding="utf-8")).get("hashcode")
            if previous != scorer.hash:
                raise InputError(
                    f"{output_path} was written with other settings ({previous}); now {scorer.hash}. "
                    "Use the same options, or a new --output"
                )
        done = _recover(output_path, args.format)
        for row in done:
            summary.add(row)
        logger.info("resuming after %d complete rows of %s", len(done), output_path)
    collected: list[Row] = list(done) if args.format == "json" else []
    if output_path is not None:
        _meta_path(output_path).write_text(json.dumps({"hashcode": scorer.hash}), encoding="utf-8")
        out = open(output_path, "a" if done else "w", encoding="utf-8", newline="\n")
    else:
        out = sys.stdout
    try:
        if args.format == "tsv" and not done:
            out.write(TSV_HEADER)
        pairs = _pairs(args)
        skipped = sum(1 for _ in islice(pairs, len(done)))
        if skipped < len(done):
            raise InputError(f"{output_path} holds {len(done)} rows but the inputs only {skipped} pairs")
        if on_start is not None:
            on_start(len(done))
        index = len(done)
        progress = tqdm(total=args.total_pairs, initial=index, disable=not args.verbose, desc="BERTScore", unit="pair")
        while chunk := list(islice(pairs, args.chunk_size)):
            cands = [c for c, _ in chunk]
            refs = [r for _, r in chunk]
            empty = [str(index + i + 1) for i, (c, r) in enumerate(chunk) if not c.strip() or not all(x.strip() for x in r)]
            if empty:
                logger.warning("empty text on line %s: scored 0", ", ".join(empty))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                precision, recall, f1 = (score_fn or scorer.score)(cands, refs)
            progress.update(len(chunk))
            rows = [Row(index + i, p, r, f) for i, (p, r, f) in
                    enumerate(zip(precision.tolist(), recall.tolist(), f1.tolist()))]
            index += len(rows)
            for row in rows:
                summary.add(row)
            if args.format == "json":
                collected.extend(rows)
                continue
            out.write("".join(format_row(row, args.format) for row in rows))
            out.flush()
            if output_path is not None:
                os.fsync(out.fileno())
        progress.close()
        if summary.count == 0:
            raise InputError(f"{args.candidates} has no lines: nothing to score")
        means = summary.means()
        if args.format == "json":
            json.dump({
                "precision": [r.precision for r in collected], "recall": [r.recall for r in collected],
                "f1": [r.f1 for r in collected], "mean": means, "hashcode": scorer.hash,
            }, out)
            out.write("\n")
        # The summary goes beside machine-readable rows (stderr), never inside them.
        report = sys.stderr if args.format in ("jsonl", "tsv", "json") else out
        if args.format != "json" or output_path is not None:
            print(
                f"mean over {summary.count} pairs: P={means['precision']:.6f} R={means['recall']:.6f} "
                f"F1={means['f1']:.6f}\nhash: {scorer.hash}",
                file=report,
            )
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="bertscore: %(message)s")
    try:
        return run(args)
    except InputError as error:
        print(f"bertscore: error: {error}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, OSError) as error:
        print(f"bertscore: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
