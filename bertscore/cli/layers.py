"""`bertscore layers`: which layer of a model agrees best with human judgements (`bertscore.layers`).

    bertscore layers --model M --data FILE [--human-column COL] [--idf] [--json OUT]
                     [--baseline-corpus FILE ... --baseline-output OUT]

FILE is a CSV, TSV, JSONL or JSON table: a candidate column, reference column(s) and a human score
column (default: the first of human_score, human, score, z_score, z, da, rating), or `better` and
`worse` columns (relative ranking) instead of the candidate and the score. Every input and output
is checked before any model loads. The table printed ends with the `num_layers` to pass; `--json`
writes the whole report; `--baseline-corpus` also writes the rescale baseline that layer needs.
Bad input exits with code 2 and says what and where; anything else is a bug (traceback, exit 1).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import Any, Sequence

from ..inputs import InputError
from ..judgements import HUMAN_COLUMNS
from .corpus import check_baseline_output, read_corpus
from .io import CommandParser, as_program, check_extension, run_subcommand, shows_progress

PROGRAM = "bertscore layers"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog=PROGRAM, short_usage="--model MODEL --data JUDGEMENTS [options]",
        description="Score human-judged outputs at every layer of a model and report which layer's BERTScore "
                    "agrees best with the humans (Pearson r, Kendall tau, bootstrap intervals, a test of the best "
                    "layer against the default). See docs/layers.md.",
    )
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder, or the embedded "
                        "'sentence-transformers/all-MiniLM-L6-v2'")
    parser.add_argument("--lang", help="language code choosing the default model (without --model)")
    parser.add_argument("-d", "--data", required=True, help="human judgements: a CSV, TSV, JSONL or JSON table")
    parser.add_argument("--human-column", help=f"the human score column (default: the first of {', '.join(HUMAN_COLUMNS)})")
    parser.add_argument("--better-column", help="relative ranking: the column of the output judged better (default: better)")
    parser.add_argument("--worse-column", help="relative ranking: the column of the output judged worse (default: worse)")
    parser.add_argument("--candidate-column", help="the candidate column (default: candidate, prediction, hypothesis, ...)")
    parser.add_argument("--reference-column", action="append", dest="reference_columns",
                        help="a reference column; repeat for several references (default: reference, references, "
                             "reference_1..n, ...)")
    parser.add_argument("--idf", action="store_true", help="weigh tokens by idf over the data's references")
    parser.add_argument("--json", dest="json_output", metavar="OUT", help="write the whole report as JSON here")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples of the intervals (default 1000)")
    parser.add_argument("--confidence", type=float, default=0.95, help="interval confidence (default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    baseline = parser.add_argument_group("the rescale baseline of the chosen layer (as `bertscore baseline`)")
    baseline.add_argument("--baseline-corpus", nargs="+", metavar="FILE",
                          help="monolingual text file(s), one sentence per line (.gz allowed)")
    baseline.add_argument("--baseline-output", metavar="OUT", help="the LAYER,P,R,F file to write (sidecar: OUT.json)")
    baseline.add_argument("--baseline-pairs", type=int, help="random pairs (default: half the distinct sentences)")
    baseline.add_argument("--baseline-seed", type=int, default=0, help="seed of the random pairing (default 0)")
    parser.add_argument("-b", "--batch-size", type=int, default=64, help="max sentences per encoder batch")
    parser.add_argument("--max-tokens-per-batch", type=int, help="token budget per encoder batch")
    parser.add_argument("--chunk-size", type=int, default=1024, help="rows read and scored at a time (default 1024)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), help="encoder precision")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (shown by default when stderr is a terminal), no progress log")
    return parser


def check_options(args: argparse.Namespace) -> None:
    """Option values that need no file or model, checked first."""
    if args.model_type is None and args.lang is None:
        raise InputError("pass --model (offline: --model sentence-transformers/all-MiniLM-L6-v2) or --lang")
    if args.n_resamples < 1:
        raise InputError(f"--n-resamples must be >= 1, got {args.n_resamples}")
    if not 0 < args.confidence < 1:
        raise InputError(f"--confidence must lie strictly between 0 and 1, got {args.confidence}")
    for flag, value in (("--seed", args.seed), ("--baseline-seed", args.baseline_seed)):
        if value < 0:
            raise InputError(f"{flag} must be >= 0, got {value}")
    if args.chunk_size < 1:
        raise InputError(f"--chunk-size must be >= 1, got {args.chunk_size}")
    if bool(args.baseline_corpus) != bool(args.baseline_output):
        raise InputError("--baseline-corpus and --baseline-output go together: the corpus to draw pairs from, "
                         "and the file to write")
    if args.baseline_pairs is not None and not args.baseline_corpus:
        raise InputError("--baseline-pairs needs --baseline-corpus and --baseline-output")


def run(args: argparse.Namespace) -> int:
    from ..judgements import read_judgements
    from ..layer_scores import score_layers
    from ..layers import agreement_report
    from ..output_files import check_output, write_text
    from ..scoring.settings import resolve_model_type

    check_options(args)
    inputs = [args.data, *(args.baseline_corpus or [])]
    if args.json_output:
        check_extension(args.json_output, "--json", "json", "one JSON report", "name it .json")
        check_output(args.json_output, inputs)
    lines = None
    if args.baseline_corpus:
        check_baseline_output(args.baseline_output, [*inputs, *([args.json_output] if args.json_output else [])],
                              option="--baseline-output")
        lines = read_corpus(args.baseline_corpus, args.baseline_pairs, "--baseline-pairs")
    judgements = read_judgements(args.data, human_column=args.human_column, better_column=args.better_column,
                                 worse_column=args.worse_column, candidate_column=args.candidate_column,
                                 reference_columns=args.reference_columns)
    model_type = resolve_model_type(args.model_type, args.lang)
    notes: list[str] = []
    measured = score_layers(
        judgements, model_type, idf=args.idf, lang=args.lang, device=args.device, dtype=args.dtype,
        batch_size=args.batch_size, max_tokens_per_batch=args.max_tokens_per_batch, chunk_size=args.chunk_size,
        verbose=shows_progress(args.quiet), notes=notes, keep_scorer=lines is not None,
        one_pass_only="--baseline-corpus" if lines is not None else None,
    )
    for note in notes:
        print(f"{PROGRAM}: note: {note}", file=sys.stderr)
    cautions: list[str] = []
    report = agreement_report(measured, judgements, n_resamples=args.n_resamples, confidence=args.confidence,
                              seed=args.seed, notes=cautions)
    for caution in cautions:
        print(f"{PROGRAM}: note: {caution}", file=sys.stderr)
    if args.json_output:
        write_text(args.json_output, json.dumps(report.to_dict(), indent=2) + "\n", inputs)
    text = render(report)
    if lines is not None:
        text += _write_baseline(measured, report.recommended_layer, lines, args)
    sys.stdout.write(text)
    if args.json_output:
        print(f"{PROGRAM}: wrote the report to {args.json_output}", file=sys.stderr)
    return 0


def _write_baseline(measured: Any, layer: int, lines: list[str], args: argparse.Namespace) -> str:
    from ..scoring.baseline_tables import write_baseline
    from ..calibrate import compute_baseline

    table = compute_baseline(lines, scorer=measured.all_layers_scorer, num_pairs=args.baseline_pairs,
                             seed=args.baseline_seed, lang=args.lang, verbose=shows_progress(args.quiet))
    sidecar = write_baseline(table, args.baseline_output, inputs=args.baseline_corpus)
    p, r, f = table.mean[layer].tolist()
    return (f"rescale baseline: {table.num_pairs} random pairs of {', '.join(args.baseline_corpus)}, layer {layer}: "
            f"P {p:.4f}, R {r:.4f}, F {f:.4f}; wrote {args.baseline_output} and {sidecar}\n"
            f"rescaled: --num-layers {layer} --rescale-with-baseline --baseline-path {args.baseline_output}\n")


def _cell(value: float | None, digits: int = 4, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else (f"{value:.4f}" if value >= 1e-4 else f"{value:.1e}")


def render(report: Any) -> str:
    """The report as a person reads it: one line per layer, the verdict, and the num_layers to pass."""
    from ..stats import confidence_label

    direct = report.kind == "direct"
    measure = "r" if direct else "tau"
    level = confidence_label(report.bootstrap["confidence"])
    out = io.StringIO()
    what = (f"{report.segments} human scores (column {report.columns.get('human')!r})" if direct
            else f"{report.segments} judged pairs (columns {report.columns.get('better')!r} > "
                 f"{report.columns.get('worse')!r})")
    out.write(f"{report.model}: agreement of each layer's BERTScore{' (idf)' if report.idf else ''} with {what} "
              f"in {report.data}\n")
    if direct:
        header = ["layer", "r (F1)", f"{level} interval", "tau (F1)", "r (P)", "r (R)", "r - default", "p", ""]
    else:
        header = ["layer", "tau (F1)", f"{level} interval", "tau (P)", "tau (R)", "tau - default", "p", ""]
    table = [header]
    for entry in report.layers:
        low, high = entry[f"{report.measure}_ci"]
        against = entry["vs_default"]
        row = [str(entry["layer"]), _cell(entry[report.measure]), f"[{_cell(low)}, {_cell(high)}]"]
        if direct:
            row.append(_cell(entry["kendall"]))
        row += [_cell(entry[column][report.measure]) for column in ("precision", "recall")]
        row += ["(default)", ""] if against is None else [_cell(against["difference"], signed=True), _p(against["p_value"])]
        table.append(row + ["best" if entry["layer"] == report.best_layer else ""])
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        out.write("  ".join(cell.rjust(width) if i else cell.ljust(width)
                            for i, (cell, width) in enumerate(zip(line, widths))).rstrip() + "\n")
    test = report.test
    best, default = report.best_layer, report.default_layer
    out.write(f"p: {test['name']}; intervals: {report.bootstrap['n_resamples']} bootstrap resamples, seed "
              f"{report.bootstrap['seed']}\n")
    out.write(f"default layer: {default} ({report.default_from}); ")
    if best == default:
        out.write(f"best layer: {best}, the default\n")
    else:
        out.write(f"best layer: {best} ({measure} {_cell(report.layers[best][report.measure])} vs "
                  f"{_cell(report.layers[default][report.measure])}), p = {_p(test['p_value'])}, "
                  f"{_p(test['p_value_adjusted'])} adjusted for the {test['comparisons']} layers it was picked from: "
                  + ("significant at " if report.significant else "not significant at ") + f"{test['level']}\n")
    scoring, probe = report.scoring, report.scoring["probe_layer"]
    if scoring["one_pass"]:
        out.write(f"every layer scored in one pass (its all-layers row {probe} equals num_layers={probe} on a probe)\n")
    else:
        out.write(f"each layer scored by its own encoder (its all-layers row {probe} differs from num_layers={probe} "
                  f"by {scoring['probe_difference']:.2g} on a probe: a final norm after the stack)\n")
    chosen = report.recommended_layer
    why = ("it beats the default significantly" if report.significant else
           "the default: no layer beats it significantly" if best != default else "the default, and the best here")
    out.write(f"use num_layers={chosen} (--num-layers {chosen}): {why}\n")
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    return run_subcommand(PROGRAM, build_parser(), argv, run,
                          lambda args: f": {args.json_output} is left as it was" if args.json_output else "")


if __name__ == "__main__":
    sys.exit(as_program(main))
