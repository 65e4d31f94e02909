"""`bertscore explain`: why one pair scored as it did, on the terminal (and as the Space's heatmap).

    bertscore explain "CANDIDATE" "REFERENCE" [REFERENCE ...] --model M [-o heatmap.png]
    bertscore explain -c cands.txt -r refs.txt [refs2.txt ...] --line N --model M

Prints the pair's P, R and F1 (those `score()` gives it), then each candidate token's most similar
reference token (what precision averages) and each reference token's most similar candidate token
(what recall averages), with their cosine similarities and weights. `-o FILE` also draws the
heatmap the Space draws (`bertscore.plot`; needs matplotlib). The numbers are `explain_pair`'s,
which recomputes what `score()` does; nothing here computes a score.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from ..inputs import InputError
from .io import CommandParser, cli_logging, decoded_lines, open_text, run_command
from .options import build_scorer, check_baseline_file

# The figure formats matplotlib writes (from the -o file's extension), checked before any model loads.
FIGURE_FORMATS = ("png", "pdf", "svg", "jpg", "jpeg", "webp", "tif", "tiff", "eps", "ps")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="bertscore explain", short_usage='"CANDIDATE" "REFERENCE" [REFERENCE ...] --model MODEL [options]',
        description="Why one pair scored as it did: its P, R and F1 as score() gives them, each token's most "
                    "similar token on the other side (the matches that precision and recall average), and with "
                    "-o the token-similarity heatmap the Space draws.",
    )
    parser.add_argument("texts", nargs="*", metavar="TEXT",
                        help="the candidate, then its reference(s), as texts (or use -c/-r with --line)")
    parser.add_argument("-c", "--candidates", help="candidates file, one per line (with --line)")
    parser.add_argument("-r", "--references", nargs="+", default=[],
                        help="reference file(s), one per line, aligned with the candidates (with --line)")
    parser.add_argument("--line", type=int, help="with -c/-r: the line (counted from 1) whose pair to explain")
    parser.add_argument("--lang", help="language code choosing the default model (en, zh, de, ...)")
    parser.add_argument("-m", "--model", dest="model_type", help="model name, local folder, or the embedded "
                        "'sentence-transformers/all-MiniLM-L6-v2'")
    parser.add_argument("-l", "--num-layers", type=int, help="layer to use (default: the model's official layer)")
    parser.add_argument("--rescale-with-baseline", action="store_true", help="also show the rescaled scores")
    parser.add_argument("--baseline-path", help="custom LAYER,P,R,F baseline file")
    parser.add_argument("--long-texts", choices=("truncate", "window"), default="truncate",
                        help="texts past the model's limit: truncate (default) or window (whole texts)")
    parser.add_argument("--device", help="cpu, cuda, cuda:1, ... (default: CUDA when available)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "float16", "auto"),
                        help="encoder precision (default float32)")
    parser.add_argument("-o", "--output", help="also draw the heatmap into this image file (.png, .svg, .pdf, ...; "
                        "needs matplotlib)")
    # what build_scorer reads that this command does not offer: the scorer's defaults
    parser.set_defaults(idf=False, batch_size=64, max_tokens_per_batch=None, chunk_size=2048, cache_bytes=None,
                        cache_device=None, window_stride=None)
    return parser


def _file_line(path: str, line: int) -> str:
    """Line `line` (from 1) of a text file, named in the error when the file is shorter."""
    count = 0
    with open_text(path) as handle:
        for count, text in enumerate(decoded_lines(handle, path), start=1):
            if count == line:
                return text
    raise InputError(f"--line {line}: {path} has only {count} lines")


def pair_texts(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The candidate and its references: the TEXT arguments, or line --line of the -c/-r files."""
    files = args.candidates is not None or bool(args.references)
    if files:
        if args.texts:
            raise InputError("give the pair either as texts or as -c/-r files with --line, not both")
        if args.candidates is None or not args.references or args.line is None:
            raise InputError("with files, pass -c CANDIDATES -r REFERENCES [REFERENCES ...] --line N")
        if args.line < 1:
            raise InputError(f"--line counts from 1, got {args.line}")
        return _file_line(args.candidates, args.line), [_file_line(path, args.line) for path in args.references]
    if args.line is not None:
        raise InputError("--line picks a line of -c/-r files: pass them too, or give the texts themselves")
    if len(args.texts) < 2:
        raise InputError("pass the candidate and at least one reference: bertscore explain \"CANDIDATE\" "
                         "\"REFERENCE\" --model MODEL (or -c/-r files with --line N)")
    return args.texts[0], list(args.texts[1:])


def check_figure_output(args: argparse.Namespace) -> None:
    """-o: a figure format matplotlib writes, matplotlib installed, never an input, a usable folder;
    all before any model loads."""
    from ..output_files import check_output

    suffix = Path(args.output).suffix.lower().lstrip(".")
    if suffix not in FIGURE_FORMATS:
        raise InputError(f"-o {args.output}: the heatmap is an image; name the file .png, .svg or .pdf "
                         f"(formats: {', '.join(FIGURE_FORMATS)})")
    if importlib.util.find_spec("matplotlib") is None:
        raise InputError("-o draws the heatmap with matplotlib, which is not installed: pip install matplotlib "
                         "(or drop -o for the table alone)")
    check_output(args.output, [p for p in [args.candidates, *args.references, args.baseline_path] if p])


def _shown(token: str) -> str:
    """A token as one table cell: a space as ␣, control characters escaped (never a broken row)."""
    cells = ["\u2423" if ch == " " else ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
             for ch in token]
    return "".join(cells) or "''"


def _scores(label: str, values: Sequence[float]) -> str:
    return f"{label}P={values[0]:.6f} R={values[1]:.6f} F1={values[2]:.6f}"


def _matches(title: str, header: tuple[str, str], tokens: Sequence[str], weights: Sequence[float],
             others: Sequence[str], best: Sequence[int], cosines: Sequence[float]) -> list[str]:
    """One direction's table: each token, its weight, its most similar token on the other side, their cosine."""
    rows = [(str(i), _shown(t), f"{w:.4f}", _shown(others[j]), f"{c:.4f}")
            for i, (t, w, j, c) in enumerate(zip(tokens, weights, best, cosines))]
    head = ("#", header[0], "weight", header[1], "cosine")
    widths = [max(len(cell) for cell in column) for column in zip(head, *rows)]
    lines = [title]
    for row in [head, *rows]:
        lines.append("  " + "  ".join(cell.rjust(w) if k in (0, 2, 4) else cell.ljust(w)
                                      for k, (cell, w) in enumerate(zip(row, widths))).rstrip())
    return lines


def explanation_table(explanation: Any) -> str:
    """The terminal's view of an `Explanation`: the pair's scores (as `score()` gives them), then per
    reference its own raw scores and both directions' best matches. Weight 0 (special tokens) does
    not count in P or R."""
    lines = [f"candidate: {explanation.candidate}"]
    kind = "rescaled" if explanation.rescaled is not None else "raw"
    lines.append(_scores("scores:   ", explanation.scores) + f"  ({kind}, as score() and bertscore -c/-r give them)")
    if explanation.rescaled is not None:
        lines.append(_scores("raw:      ", (explanation.precision, explanation.recall, explanation.f1)))
    lines.append(f"hash: {explanation.hashcode}")
    several = len(explanation.references) > 1
    for k, ref in enumerate(explanation.references):
        best = "  (highest F1)" if several and k == explanation.winner else ""
        own = _scores("raw:      ", (ref.precision, ref.recall, ref.f1))
        lines += ["", f"reference {k + 1}: {ref.text}", own + best]
        if ref.empty:
            lines.append("  a side has no content tokens: the pair scores 0")
            continue
        lines += _matches("precision: each candidate token's most similar reference token",
                          ("candidate token", "reference token"), explanation.tokens, explanation.weights,
                          ref.tokens, ref.cand_best, ref.cand_best_sim)
        lines += _matches("recall: each reference token's most similar candidate token",
                          ("reference token", "candidate token"), ref.tokens, ref.weights,
                          explanation.tokens, ref.ref_best, ref.ref_best_sim)
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Explain the pair: checks first (the texts, then the model and options, -o), then the model, then
    the table and figure."""
    candidate, references = pair_texts(args)
    if args.model_type is None and args.lang is None:
        raise InputError("pass --model or --lang (offline: --model sentence-transformers/all-MiniLM-L6-v2)")
    if args.rescale_with_baseline and args.baseline_path is not None:
        check_baseline_file(args)
    if args.output:
        check_figure_output(args)
    from ..explain import explain_pair

    scorer = build_scorer(args, args.device)
    explanation = explain_pair(scorer, candidate, references)
    for note in explanation.notes:
        print(f"bertscore: note: {note}", file=sys.stderr)
    sys.stdout.write(explanation_table(explanation))
    if args.output:
        from ..plot import heatmap_figure, save_figure

        try:
            figure = heatmap_figure(explanation)
        except ValueError as error:  # a long pair matched over tiles: no matrix kept to draw
            raise InputError(f"-o {args.output}: {error}") from None
        save_figure(figure, args.output)
        print(f"bertscore: heatmap written to {args.output}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The `bertscore explain` command (its exit code): 0 done, 2 bad input, 1 a bug."""
    args = build_parser().parse_args(sys.argv[1:] if argv is None else list(argv))

    def logged() -> int:
        with cli_logging(logging.WARNING):
            return run(args)

    return run_command("bertscore explain", logged)

