"""`bertscore baseline`: compute a rescale baseline file for any model from a monolingual corpus.

    bertscore baseline --model M --corpus FILE [FILE ...] [--lang xx] [--pairs N] [--seed S] -o out.tsv

Corpus files hold one sentence per line (UTF-8; `.gz` is read compressed). Empty lines and
duplicates are dropped, the rest paired at random (see `bertscore.calibrate`). Writes the official
`LAYER,P,R,F` file and its JSON sidecar (`out.tsv.json`, or `--sidecar PATH`), and prints the
per-layer means with their standard errors. An output that is not a regular file (a device, a
pipe, /dev/stdout) is written in place and needs `--sidecar` elsewhere: no file is created beside
it. Bad input exits with code 2 and names the file; anything else is a bug (traceback, exit 1).
"""

from __future__ import annotations

import argparse
import gzip
import logging
import math
import os
import sys
from pathlib import Path
from typing import IO, Iterator, Sequence

from ..inputs import InputError
from .io import cli_logging, ctrl_c_stops, decoded_lines, internal_error

logger = logging.getLogger("bertscore")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bertscore baseline",
        description="Compute a rescale baseline (LAYER,P,R,F per layer) of a model: mean BERTScore of random "
                    "sentence pairs from a monolingual corpus, every layer, no idf (the official procedure).",
    )
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder, or the embedded "
                        "'sentence-transformers/all-MiniLM-L6-v2'")
    parser.add_argument("--lang", help="language of the corpus (recorded; picks the default model without --model)")
    parser.add_argument("--corpus", required=True, nargs="+", help="text file(s), one sentence per line (.gz allowed)")
    parser.add_argument("--pairs", type=int, help="random pairs to score (default: half the distinct sentences)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random pairing (default: 0)")
    parser.add_argument("-o", "--output", required=True, help="baseline file to write (its sidecar: OUTPUT.json)")
    parser.add_argument("--sidecar", help="where the JSON provenance goes (default: OUTPUT.json beside the output; "
                        "required when OUTPUT is a device, pipe or /dev/stdout)")
    parser.add_argument("-b", "--batch-size", type=int, default=64, help="max sentences per encoder batch")
    parser.add_argument("--max-tokens-per-batch", type=int, help="token budget per encoder batch")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), help="encoder precision")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no progress log")
    return parser


def _open_lines(path: str) -> IO[bytes]:
    if not os.path.exists(path):
        raise InputError(f"corpus file not found: {path}")
    if not os.path.isfile(path):
        raise InputError(f"corpus {path} is not a file")
    return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")


def read_lines(path: str) -> Iterator[str]:
    """The lines of one corpus file, decoded; a bad byte names the file and line."""
    with _open_lines(path) as handle:
        try:
            yield from decoded_lines(handle, path)
        except (OSError, EOFError) as error:  # e.g. a damaged .gz
            raise InputError(f"{path}: cannot be read ({error})") from error


def check_output(output: str, corpus: Sequence[str], sidecar: str | None = None) -> Path:
    """The output path, checked before any work: it and its sidecar are not corpus files, their
    folders exist (created) and are usable, and no sidecar lands beside an output that is not a
    regular file."""
    from ..baseline_tables import sidecar_path
    from ..output_files import check_output as check_target, written_in_place

    path = Path(output)
    meta = sidecar_path(path) if sidecar is None else Path(sidecar)
    for target in (path, meta):  # as write_baseline does: a missing output folder is created
        if not written_in_place(target) and not target.parent.exists():
            target.parent.mkdir(parents=True)
    check_target(path, corpus, sidecars=[meta] if sidecar is None else ())
    check_target(meta, [*corpus, path])
    return path


def _summary(table, corpus: Sequence[str]) -> str:
    def cell(mean: float, error: float) -> str:
        return f"{mean:.6f} ± {error:.6f}" if not math.isnan(error) else f"{mean:.6f} ± n/a"

    lines = [
        f"{table.num_pairs} pairs of {table.num_sentences} distinct sentences from {', '.join(corpus)} "
        f"(seed {table.seed}); model {table.model}",
        "layer\tP ± standard error\tR ± standard error\tF ± standard error",
    ]
    for layer, (means, errors) in enumerate(zip(table.mean.tolist(), table.standard_error.tolist())):
        lines.append(f"{layer}\t" + "\t".join(cell(m, e) for m, e in zip(means, errors)))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from ..baseline_tables import write_baseline
    from ..output_files import written_in_place
    from ..calibrate import compute_baseline, max_pairs, prepare_corpus

    if args.model_type is None and args.lang is None:
        raise InputError("pass --model (offline: --model sentence-transformers/all-MiniLM-L6-v2) or --lang")
    for path in args.corpus:
        _open_lines(path).close()  # every file exists before any is read (or any output folder made)
    output = check_output(args.output, args.corpus, args.sidecar)
    lines = [line for path in args.corpus for line in read_lines(path)]
    corpus = prepare_corpus(lines)  # checked here to name the files; compute_baseline prepares the lines again
    names = ", ".join(args.corpus)
    usable = len(corpus.sentences)
    if usable < 2:
        raise InputError(
            f"{names}: {usable} usable line(s) after dropping {corpus.empty} empty and {corpus.duplicates} duplicate "
            "lines; a baseline needs at least 2 distinct sentences (thousands for a stable one)"
        )
    if args.pairs is not None and not 1 <= args.pairs <= max_pairs(usable):
        raise InputError(
            f"--pairs {args.pairs}: {names} has {usable} distinct non-empty lines, which allow 1..{max_pairs(usable)} "
            "pairs (each sentence is used at most once)"
        )
    table = compute_baseline(
        lines, model_type=args.model_type, num_pairs=args.pairs, seed=args.seed, lang=args.lang,
        verbose=not args.quiet, batch_size=args.batch_size, max_tokens_per_batch=args.max_tokens_per_batch,
        device=args.device, dtype=args.dtype,
    )
    sidecar = write_baseline(table, output, sidecar=args.sidecar, inputs=args.corpus)
    report = sys.stderr if written_in_place(output) else sys.stdout  # e.g. -o /dev/stdout: the file alone there
    print(_summary(table, args.corpus), file=report)
    print(f"wrote {output} and {sidecar}", file=report)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with cli_logging(logging.WARNING, package_level=logging.WARNING if args.quiet else logging.INFO), ctrl_c_stops():
            return run(args)
    except (InputError, OSError) as error:  # what the user passed: an input, an option, a file
        print(f"bertscore baseline: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: no traceback; the writer left any old output as it was
        print(f"bertscore baseline: interrupted: {args.output} is left as it was", file=sys.stderr)
        return 130
    except Exception:  # not the input: a bug, shown with its traceback
        return internal_error("bertscore baseline")


if __name__ == "__main__":
    sys.exit(main())
