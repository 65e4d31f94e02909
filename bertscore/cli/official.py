"""The official commands, `bert-score` and `bert-score-show`, as the drop-in installs them.

Their flags and output are the official package's (`<hash> P: x R: y F1: z`, `-s` adds one line
per pair; `--use_fast_tokenizer` is a switch that turns the fast tokenizer off, as in the
official parser); the scores are `bertscore.dropin.score`'s. This package's own command is
`bertscore` (cli/main.py), with more options and formats. What the user got wrong (a file that is not
UTF-8, empty files, an unknown model, a bad option value) ends as the `bertscore` command's errors do
(`io.run_command`): one line naming the file, line or model, exit code 2, no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

from .. import dropin
from ..inputs import InputError
from ..notes import Spelling, spelled
from .io import CommandParser, decoded_lines, open_text, run_command, shows_progress


# The official command fails on an assertion here; this one says what to pass, in its own flags.
NO_MODEL = ("pass -m MODEL or --lang LANG (--lang en scores with roberta-large, from the Hugging Face Hub; offline: "
            "-m sentence-transformers/all-MiniLM-L6-v2)")


def _score_parser() -> argparse.ArgumentParser:
    parser = CommandParser("bert-score", description="Calculate BERTScore (the official command, on bertscore)",
                           short_usage="-c CANDIDATES -r REFERENCES [REFERENCES ...] (-m MODEL | --lang LANG) [options]")
    parser.add_argument("--lang", type=str, default=None,
                        help='two-letter abbreviation of the language (e.g., en) or "en-sci" for scientific text')
    parser.add_argument("-m", "--model", dest="model_type", default=None, help="model name or path to a model folder")
    parser.add_argument("-l", "--num_layers", type=int, default=None, help="use the first N layers")
    parser.add_argument("-b", "--batch_size", type=int, default=64, help="batch size (default: 64)")
    parser.add_argument("--nthreads", type=int, default=4, help="kept for compatibility")
    parser.add_argument("--idf", action="store_true", help="BERT Score with IDF scaling")
    parser.add_argument("--rescale_with_baseline", action="store_true",
                        help="Rescaling the numerical score with precomputed baselines")
    parser.add_argument("--baseline_path", default=None, type=str, help="path of custom baseline csv file")
    parser.add_argument("--use_fast_tokenizer", action="store_false",
                        help="as the official switch: given, the hash says no fast tokenizer")
    parser.add_argument("-s", "--seg_level", action="store_true", help="show individual score of each pair")
    parser.add_argument("-v", "--verbose", action="store_true", help="increase output verbosity")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (shown by default when stderr is a terminal)")
    parser.add_argument("-r", "--ref", type=str, nargs="+", required=True, help="reference file path(s) or a string")
    parser.add_argument("-c", "--cand", type=str, required=True, help="candidate (system outputs) file path or a string")
    return parser


def _lines(path: str) -> list[str]:
    """A file's lines, each stripped (as the official command reads them); a line that is not UTF-8,
    or a file without lines, is an `InputError` naming the file (and the line)."""
    with open_text(path) as handle:
        lines = [line.strip() for line in decoded_lines(handle, path)]
    if not lines:
        raise InputError(f"{path} has no lines: nothing to score (give one text per line)")
    return lines


def score_main(argv: Sequence[str] | None = None) -> int:
    """`bert-score -c CANDS -r REFS [REFS ...]`: files of one text per line, or one pair as strings."""
    parser = _score_parser()
    args = parser.parse_args(argv)
    return run_command("bert-score", lambda: _score(args, parser.spelling()))


def _score(args: argparse.Namespace, spelling: Spelling) -> int:
    if args.model_type is None and args.lang is None:  # in this command's words, before any text is read
        raise InputError(NO_MODEL)
    if os.path.isfile(args.cand):
        cands = _lines(args.cand)
        columns = []
        for ref_file in args.ref:
            if not os.path.exists(ref_file):
                raise InputError(f"reference file {ref_file} doesn't exist")
            column = _lines(ref_file)
            if len(column) != len(cands):
                raise InputError(f"# of sentences in {ref_file} ({len(column)}) doesn't match "
                                 f"the # of candidates in {args.cand} ({len(cands)})")
            columns.append(column)
        refs: list = [list(group) for group in zip(*columns)]
    elif os.path.isfile(args.ref[0]):
        raise InputError(f"candidate file {args.cand} doesn't exist")
    else:
        if args.idf:
            raise InputError("do not support idf mode for a single pair of sentences")
        cands, refs = [args.cand], [args.ref]
    with spelled(spelling):  # a model error names --model, as this command spells it
        (precision, recall, f1), hash_code = dropin.score(
            cands, refs, model_type=args.model_type, num_layers=args.num_layers, idf=args.idf,
            verbose=shows_progress(args.quiet, args.verbose),  # a bar on a terminal, as every command
            batch_size=args.batch_size, lang=args.lang, return_hash=True,
            rescale_with_baseline=args.rescale_with_baseline, baseline_path=args.baseline_path,
            use_fast_tokenizer=args.use_fast_tokenizer,
        )
    print(f"{hash_code} P: {precision.mean().item():.6f} R: {recall.mean().item():.6f} F1: {f1.mean().item():.6f}")
    if args.seg_level:
        for p, r, f in zip(precision.tolist(), recall.tolist(), f1.tolist()):
            print(f"{p:.6f}\t{r:.6f}\t{f:.6f}")
    return 0


def show_main(argv: Sequence[str] | None = None) -> int:
    """`bert-score-show -c CAND -r REF [-f FILE]`: one pair's token-similarity heatmap, saved to a file."""
    parser = CommandParser("bert-score-show", description="Visualize BERTScore (the official command)",
                           short_usage="-c CANDIDATE -r REFERENCE [-f FILE.png] [options]")
    parser.add_argument("--lang", type=str, default="en", help="two-letter abbreviation of the language (e.g., en)")
    parser.add_argument("-m", "--model", dest="model_type", default=None, help="model name or path to a model folder")
    parser.add_argument("-l", "--num_layers", type=int, default=None, help="use the first N layers")
    parser.add_argument("-v", "--verbose", action="store_true", help="increase output verbosity")
    parser.add_argument("-r", "--ref", type=str, required=True, help="reference sentence")
    parser.add_argument("-c", "--cand", type=str, required=True, help="candidate sentence")
    parser.add_argument("-f", "--file", type=str, default="visualize.png", help="name of file to save output matrix in")
    parser.add_argument("--rescale_with_baseline", action="store_true",
                        help="Rescaling the numerical score with precomputed baselines")
    parser.add_argument("--baseline_path", default=None, type=str, help="path of custom baseline csv file")
    args = parser.parse_args(argv)

    def draw() -> int:
        with spelled(parser.spelling()):
            dropin.plot_example(args.cand, args.ref, model_type=args.model_type, lang=args.lang, num_layers=args.num_layers,
                                fname=args.file, rescale_with_baseline=args.rescale_with_baseline,
                                baseline_path=args.baseline_path)
        print(f"Saved figure to file:  {args.file}")
        return 0

    return run_command("bert-score-show", draw)


def main() -> None:
    """The `bert-score` console script."""
    sys.exit(score_main())


def show() -> None:
    """The `bert-score-show` console script."""
    sys.exit(show_main())
