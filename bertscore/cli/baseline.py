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
import logging
import math
import sys
from typing import Sequence

from ..inputs import InputError
from .corpus import check_baseline_output, open_corpus, read_corpus
from .io import CommandParser, as_program, run_subcommand, shows_progress

logger = logging.getLogger("bertscore")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="bertscore baseline", short_usage="--model MODEL --corpus FILE [FILE ...] -o BASELINE.tsv [options]",
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
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (shown by default when stderr is a terminal), no progress log")
    return parser


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
    from ..scoring.baseline_tables import write_baseline
    from ..output_files import written_in_place
    from ..calibrate import compute_baseline

    if args.model_type is None and args.lang is None:
        raise InputError("pass --model (offline: --model sentence-transformers/all-MiniLM-L6-v2) or --lang")
    for path in args.corpus:
        open_corpus(path).close()  # every file exists before any output folder is made
    output = check_baseline_output(args.output, args.corpus, args.sidecar)
    lines = read_corpus(args.corpus, args.pairs)
    table = compute_baseline(
        lines, model_type=args.model_type, num_pairs=args.pairs, seed=args.seed, lang=args.lang,
        verbose=shows_progress(args.quiet), batch_size=args.batch_size, max_tokens_per_batch=args.max_tokens_per_batch,
        device=args.device, dtype=args.dtype,
    )
    sidecar = write_baseline(table, output, sidecar=args.sidecar, inputs=args.corpus)
    report = sys.stderr if written_in_place(output) else sys.stdout  # e.g. -o /dev/stdout: the file alone there
    print(_summary(table, args.corpus), file=report)
    print(f"wrote {output} and {sidecar}", file=report)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_subcommand("bertscore baseline", build_parser(), argv, run, lambda args: f": {args.output} is left as it was")


if __name__ == "__main__":
    sys.exit(as_program(main))
