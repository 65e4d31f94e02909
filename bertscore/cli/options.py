"""The options of `bertscore` (scoring with -c/-r or --input, and --systems): the parser, the
checks made before any input is read or model loaded, and the scorer the options ask for.

`build_scorer` is the one place where the CLI turns its options into a `BERTScorer`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..inputs import InputError
from .io import EXTENSION_FORMATS, CommandParser, extension_format

FORMATS = ("text", "json", "jsonl", "tsv", "parquet")
SYSTEMS_FORMATS = ("text", "json", "tsv")  # --systems writes one table


# The subcommands `main` dispatches to before this parser runs, with the line `bertscore --help` gives each.
SUBCOMMANDS = {
    "layers": "measure which layer of a model agrees best with human judgements of your texts",
    "baseline": "compute a rescale baseline (LAYER,P,R,F) for any model from a monolingual corpus",
    "explain": "show why one pair scored as it did: each token's best match (table, or a heatmap with -o x.png)",
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of `bertscore` (the `baseline` and `layers` subcommands have their own)."""
    subcommands = "\n".join(f"  bertscore {name:<9} {line}" for name, line in SUBCOMMANDS.items())
    parser = CommandParser(
        prog="bertscore",
        short_usage="-c CANDIDATES -r REFERENCES [REFERENCES ...] --model MODEL [options]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="BERTScore of candidate texts against reference texts (one text per line).\n\n"
                    f"subcommands (each with its own --help):\n{subcommands}",
        epilog="The official bert-score command's flags work too: --cand, --ref, --num_layers, --batch_size,\n"
               "--rescale_with_baseline, --baseline_path, -s/--seg_level, --nthreads, --use_fast_tokenizer.",
    )
    _add_inputs(parser)
    _add_scoring(parser)
    _add_outputs(parser)
    _add_statistics(parser)
    official = parser.add_argument_group("accepted for the official bert-score command, changing nothing")
    official.add_argument("-s", "--seg_level", "--seg-level", action="store_true",
                          help="per-pair lines: the text output always has them")
    official.add_argument("--nthreads", type=int, help="idf counting needs no worker processes here")
    official.add_argument("--use_fast_tokenizer", "--use-fast-tokenizer", action="store_true",
                          help="the fast tokenizer is always used (the official flag selects the slow one)")
    return parser


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    """What is scored: -c/-r files, or one --input table and its columns."""
    parser.add_argument("-c", "--candidates", "--cand",
                        help="candidates file, one per line ('-' = stdin); always a file, never the text itself")
    parser.add_argument(
        "-r", "--references", "--ref", nargs="+", default=[],
        help="reference file(s), one per line, aligned with the candidates; several files = several references",
    )
    parser.add_argument("-i", "--input", help="instead of -c/-r: one CSV, TSV, JSONL, JSON, Parquet or Arrow table, "
                        "or a datasets save_to_disk folder, with a candidate column and one or more reference "
                        "columns (see --candidate-column, --reference-column)")
    parser.add_argument("--candidate-column", help="--input's candidate column (default: candidate, prediction, "
                        "hypothesis, ...)")
    parser.add_argument("--reference-column", action="append", dest="reference_columns",
                        help="--input's reference column; repeat for several references (default: reference, "
                             "references, reference_1..n, ...)")


def _add_scoring(parser: argparse.ArgumentParser) -> None:
    """The scorer's settings: model, layer, weights, baseline, batches, device, precision, cache, long texts."""
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


CHUNK_PAIRS = 2048  # --chunk-size's default: large chunks batch the encoder best
# ... and with --resume on a CPU, where 2,048 pairs of a large model take minutes: rows reach the file
# every 64 pairs (seconds), at some cost in speed (length-sorted batches drawn from fewer texts)
RESUME_CPU_CHUNK_PAIRS = 64


def chunk_size(args: argparse.Namespace) -> int:
    """--chunk-size as given, else its default for this run (see CHUNK_PAIRS)."""
    if args.chunk_size is not None:
        return args.chunk_size
    if getattr(args, "resume", False):
        from ..models.devices import resolve_device

        if resolve_device(args.device).type == "cpu":
            return RESUME_CPU_CHUNK_PAIRS
    return CHUNK_PAIRS


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    """Where the rows go and how: format, file, chunks, --resume, the progress bar."""
    parser.add_argument("-f", "--format", choices=FORMATS,
                        help="output format (default: the one -o's extension names, .parquet .jsonl .json .tsv; "
                             "otherwise text; parquet needs --output)")
    parser.add_argument("-o", "--output", help="write per-pair results here instead of stdout (in the format its "
                        "extension names, unless -f says another: then nothing runs)")
    parser.add_argument("--chunk-size", type=int,
                        help=f"pairs read, scored and written at a time (default {CHUNK_PAIRS}; with --resume on a "
                             f"CPU {RESUME_CPU_CHUNK_PAIRS}: each chunk's rows reach the file as it ends, so Ctrl-C "
                             "loses at most the chunk in progress)")
    parser.add_argument("--resume", action="store_true",
                        help="make an --output run resumable (jsonl/tsv/parquet): start it, or continue it after its last "
                             "complete row when settings and inputs are unchanged")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("-v", "--verbose", action="store_true",
                          help="progress bar even when stderr is not a terminal (a log file), and timing")
    progress.add_argument("-q", "--quiet", action="store_true",
                          help="no progress bar (shown by default when stderr is a terminal)")


def _add_statistics(parser: argparse.ArgumentParser) -> None:
    """Corpus statistics: --systems and its paired tests, --ci and the resampling's settings."""
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


def output_format(args: argparse.Namespace) -> str:
    """The format of the output: -f's; without -f, the one -o's extension names (.parquet, .jsonl,
    .json, .tsv), otherwise text. An -f that contradicts the extension is refused, as is a format
    the mode cannot write (--systems writes one table), before any input is read or model loaded."""
    named = extension_format(args.output) if args.output else None
    if args.format is not None and named is not None and args.format != named:
        others = [ext for ext, fmt in EXTENSION_FORMATS.items() if fmt == args.format]
        rename = f"name the file {others[0]}" if others else "give the file another extension"
        raise InputError(f"-f {args.format} contradicts -o {args.output}, whose extension says {named}: "
                         f"drop -f to write {named}, or {rename} to write {args.format}")
    chosen = args.format or named or "text"
    if args.systems and chosen not in SYSTEMS_FORMATS:
        how = f"-f {chosen}" if args.format else f"-o {args.output} (a .{chosen} file)"
        raise InputError(f"--systems writes one table, not {chosen} as {how} asks: use --format text, json or tsv "
                         "(-o .json or .tsv)")
    return chosen


def check_statistics_options(args: argparse.Namespace) -> None:
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
    elif args.paired_ar or args.paired_bs:
        raise InputError("--paired-ar/--paired-bs compare systems: pass --systems base.txt other.txt ...")


def check_baseline_file(args: argparse.Namespace) -> None:
    """A malformed --baseline-path file, or one without a row for the layer asked (--num-layers, or
    the model's known default), is named before any model loads."""
    from ..scoring.baseline_tables import baseline_rows, load_baseline
    from ..models.tables import MODEL_TO_LAYERS, default_model_for_lang

    table = load_baseline(args.baseline_path)
    model_type = args.model_type or default_model_for_lang(args.lang)
    layer = args.num_layers if args.num_layers is not None else MODEL_TO_LAYERS.get(model_type)
    if layer is not None and layer >= 0:  # a negative layer is the model loader's to refuse
        baseline_rows(table, layer, args.baseline_path)


def build_scorer(args: argparse.Namespace, device: str | None) -> Any:
    """The scorer the options ask for (the device is checked before the model loads)."""
    from ..scorer import BERTScorer

    if args.cache_bytes is not None and args.cache_bytes < 0:
        raise InputError(f"--cache-bytes must be >= 0, got {args.cache_bytes}")
    cache = {"cache_bytes": args.cache_bytes} if args.cache_bytes is not None else {}
    return BERTScorer(
        model_type=args.model_type or None, num_layers=args.num_layers, lang=args.lang, device=device,
        dtype=args.dtype, batch_size=args.batch_size, idf=args.idf, rescale_with_baseline=args.rescale_with_baseline,
        baseline_path=args.baseline_path, max_tokens_per_batch=args.max_tokens_per_batch, chunk_size=chunk_size(args),
        cache_device=args.cache_device, long_texts=args.long_texts, window_stride=args.window_stride, **cache,
    )
