"""Command line: `bertscore -c cands.txt -r refs.txt [refs2.txt ...]` (also `python -m bertscore`).

`main` dispatches (`program` is the same, for a process that ends with it): `bertscore baseline ...`
to `baseline.py`, `bertscore layers ...` to `layers.py`, `bertscore explain ...` to `explain.py`; otherwise the options are parsed and
checked here, then `--systems` goes to `compare.py` and everything else to `score.py`. Bad input
(an `InputError`, or a file that cannot be read or written) exits with code 2 and says what and
where; anything else is a bug: its traceback is shown and the exit code is 1. The official
`bert-score` command's flags are accepted as aliases (see docs/cli.md).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from ..inputs import InputError
from ..notes import spelled
from .io import as_program, cli_logging, run_command, shows_progress
from .options import build_parser, check_baseline_file, check_statistics_options, output_format


# Each command is imported when it runs: a scoring run does not import the other commands' modules
# (statistics, judgement tables, corpora), part of every call's start-up (benchmarks/cli_startup.py).
def _layers(argv: Sequence[str]) -> int:
    from .layers import main as layers_main

    return layers_main(argv)


def _baseline(argv: Sequence[str]) -> int:
    from .baseline import main as baseline_main

    return baseline_main(argv)


def _explain(argv: Sequence[str]) -> int:
    from .explain import main as explain_main

    return explain_main(argv)


# `bertscore NAME ...` runs NAME's own command (its line in `bertscore --help`: options.SUBCOMMANDS)
SUBCOMMAND_MAINS = {"layers": _layers, "baseline": _baseline, "explain": _explain}


def run(args: argparse.Namespace) -> int:
    """Check what every mode of `bertscore` shares, then run `--systems` or the scoring of pairs."""
    args.format = output_format(args)  # -f, or -o's extension: settled before anything else
    if args.model_type is None and args.lang is None:
        raise InputError("pass --model or --lang (offline: --model sentence-transformers/all-MiniLM-L6-v2)")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise InputError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    check_statistics_options(args)
    args.progress = shows_progress(args.quiet, args.verbose)
    if args.rescale_with_baseline and args.baseline_path is not None:
        check_baseline_file(args)
    if args.systems:
        from .compare import run_systems

        return run_systems(args)
    from .score import run as score_pairs

    return score_pairs(args)


def main(argv: Sequence[str] | None = None) -> int:
    """The `bertscore` command (its exit code): 0 done, 2 bad input, 1 a bug, 130 interrupted."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMAND_MAINS:
        return SUBCOMMAND_MAINS[argv[0]](argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)

    def logged() -> int:  # notes name options as this program spells them (--long-texts window)
        with cli_logging(logging.INFO if args.verbose else logging.WARNING), spelled(parser.spelling()):
            return run(args)

    def kept() -> str:
        if args.resume and args.output:
            from .rows import interrupted_message

            return interrupted_message(args)
        return f": {args.output} is left as it was" if args.output else ""

    return run_command("bertscore", logged, kept)


def program() -> int:
    """The `bertscore` script's and `python -m bertscore`'s entry: `main` for a process that ends
    with it (io.as_program)."""
    return as_program(main)
