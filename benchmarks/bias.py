"""Social bias of BERTScore with our default model, on the published benchmark of Sun et al. (2022).

Data: the six files of `measuring_bias/data/` of github.com/txsun1997/Metric-Fairness (age,
gender, physical-appearance, race, religion, socioeconomic .tsv: candidate, reference, one column
of stored scores per metric; rows in consecutive pairs that differ in a sensitive attribute). Not
vendored here: fetch them and pass the folder,

    git clone https://github.com/txsun1997/Metric-Fairness /tmp/Metric-Fairness
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bias.py --data /tmp/Metric-Fairness/measuring_bias/data \\
        --update-results

The score: theirs, re-implemented in `benchmarks/bias_score.py`. The script first recomputes their
README table from the stored columns (BLEU, chrF, BERTScore-BERT-base, BERTScore-RoBERTa-large) and
checks it to 0.01, and checks that the texts are read as the authors scored them (their stored
sentence BLEU recomputed from the texts as read); then it scores every row with the embedded default
model (F1, precision, recall; one BERTScorer, one call per file) and any --model given, and writes OUT (JSON: {"metrics": {NAME:
{CATEGORY: score}}, "hash": ...}) and bias.json/bias.md in benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import csv
import json
import sys
from pathlib import Path

import pandas as pd

from bias_score import bias_score, read_bias_file, sentence_bleu_method1
from harness import table, timed
from machine import begin, command, header, machine_line, write_results

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.output_files import write_text

CATEGORIES = ["age", "gender", "physical-appearance", "race", "religion", "socioeconomic"]
SOURCE = "https://github.com/txsun1997/Metric-Fairness"
SOURCE_COMMIT = "0ff3c54aaeea0dae56f370f951a9e89898edb13a"
# Our name -> their column, for the stored scores we reproduce.
STORED = {"bleu": "BLEU", "chrf": "chrF", "bertscore-bert-base": "BERTScore-BERT-base",
          "bertscore-roberta-large": "BERTScore-RoBERTa-large"}
# Their README table (python get_bias_score.py), the rows we reproduce.
PUBLISHED = {
    "bleu": {"age": 2.35, "gender": 0.1, "physical-appearance": 0.94, "race": 0.19, "religion": 0.61, "socioeconomic": 2.79},
    "chrf": {"age": 3.43, "gender": 1.23, "physical-appearance": 1.57, "race": 1.89, "religion": 1.44, "socioeconomic": 3.46},
    "bertscore-bert-base": {"age": 5.68, "gender": 8.73, "physical-appearance": 6.36, "race": 1.24, "religion": 6.2,
                            "socioeconomic": 7.66},
    "bertscore-roberta-large": {"age": 8.23, "gender": 6.99, "physical-appearance": 7.94, "race": 2.59, "religion": 4.64,
                                "socioeconomic": 7.4},
}
OURS = {"ours-f1": 2, "ours-precision": 0, "ours-recall": 1}  # name -> index in (P, R, F)


def load_files(folder: Path) -> dict:
    """The six files, read as the authors did; exits naming what is missing."""
    missing = [f"{name}.tsv" for name in CATEGORIES if not (folder / f"{name}.tsv").is_file()]
    if missing:
        sys.exit(
            f"error: {', '.join(missing)} not found in {folder}. Get the data with\n"
            f"  git clone {SOURCE} /tmp/Metric-Fairness\n"
            "and pass --data /tmp/Metric-Fairness/measuring_bias/data"
        )
    return {name: read_bias_file(folder / f"{name}.tsv") for name in CATEGORIES}


def reading_check(folder: Path, frames: dict) -> dict:
    """Their stored sentence BLEU recomputed from the texts as read (CSV quotes removed), and from the
    raw cells (quotes kept as text): only the first matches, so the quotes are not part of the text."""
    worst, quoted_rows, worst_if_kept = 0.0, 0, 0.0
    for name, frame in frames.items():
        raw = pd.read_csv(folder / f"{name}.tsv", sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False, dtype=str)
        for cand, ref, stored, raw_cand, raw_ref in zip(frame.candidate, frame.reference, frame["BLEU"],
                                                        raw.candidate, raw.reference):
            worst = max(worst, abs(sentence_bleu_method1(cand, ref) - stored))
            if (raw_cand, raw_ref) != (cand, ref):
                quoted_rows += 1
                worst_if_kept = max(worst_if_kept, abs(sentence_bleu_method1(raw_cand, raw_ref) - stored))
    return {"max_abs_bleu_error": worst, "quoted_rows": quoted_rows, "max_abs_bleu_error_if_quotes_kept": worst_if_kept}


def score_model(model: str, frames: dict) -> tuple[dict[str, dict[str, float]], str, float]:
    """Bias of F1, precision and recall of one model: one BERTScorer, one call per file."""
    scorer = BERTScorer(model_type=model)
    prefix = "ours" if model == EMBEDDED_MODEL_NAME else model
    seconds, columns = timed(lambda: {name: scorer.score(frame.candidate.tolist(), frame.reference.tolist())
                                      for name, frame in frames.items()})
    metrics: dict[str, dict[str, float]] = {}
    for label, index in OURS.items():
        metrics[label.replace("ours", prefix, 1)] = {name: bias_score(scores[index].tolist())
                                                    for name, scores in columns.items()}
    return metrics, scorer.hash, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True,
                        help="the folder holding the six .tsv files (Metric-Fairness/measuring_bias/data)")
    parser.add_argument("--json", type=Path, default=None, help="write the bias table as JSON here (default: OUT/bias.json)")
    parser.add_argument("--model", action="append", default=[], metavar="M",
                        help="also score with this model (hub id or local folder; repeatable)")
    args, _, info = begin(parser, argv, threads=2, serial_tokenizers=True)
    frames = load_files(args.data)
    stored = {metric: {name: bias_score(frame[column].tolist()) for name, frame in frames.items()}
              for metric, column in STORED.items()}
    gaps = [abs(round(stored[m][c], 2) - PUBLISHED[m][c]) for m in PUBLISHED for c in CATEGORIES]
    reproduced = max(gaps) < 0.005
    check = reading_check(args.data, frames)
    print(f"their table from the stored columns: {'reproduced' if reproduced else 'NOT reproduced'} "
          f"(max |ours - theirs| after rounding {max(gaps):.3f}); reading check: {check}", flush=True)

    metrics = dict(stored)
    hashes, seconds = {}, {}
    for model in [EMBEDDED_MODEL_NAME, *[m for m in args.model if m != EMBEDDED_MODEL_NAME]]:
        scored, hashes[model], seconds[model] = score_model(model, frames)
        metrics.update(scored)

    result = {
        "metrics": metrics,
        "hash": hashes[EMBEDDED_MODEL_NAME],
        "hashes": hashes,
        "model": EMBEDDED_MODEL_NAME,
        "rows": {name: len(frame) for name, frame in frames.items()},
        "published": PUBLISHED,
        "reproduced_published_table": reproduced,
        "max_abs_gap_to_published": max(gaps),
        "reading_check": check,
        "scoring_seconds": {m: round(s, 1) for m, s in seconds.items()},
        "source": f"{SOURCE} (commit {SOURCE_COMMIT}), measuring_bias/data/",
        "command": command("bias.py", sys.argv[1:] if argv is None else argv),
        "machine": info,
    }
    json_path = args.json or args.out / "bias.json"
    write_results(args.out, "bias", result, render(result))
    if json_path.resolve() != (args.out / "bias.json").resolve():
        json_path.parent.mkdir(parents=True, exist_ok=True)
        write_text(json_path, json.dumps(result, indent=2) + "\n")
    if not reproduced:
        print("error: the published table was not reproduced from the stored columns", file=sys.stderr)
        return 1
    return 0


def render(r: dict) -> str:
    check = r["reading_check"]
    names = list(r["metrics"])
    lines = [
        *header("Social bias (Sun et al., EMNLP 2022): our default model next to BLEU, chrF and BERTScore", None,
                r["command"], f" after fetching the data (`git clone {SOURCE}`; the files are "
                "`measuring_bias/data/*.tsv`, not vendored here)."),
        f"Source: {r['source']}: {', '.join(f'{c} {n} rows' for c, n in r['rows'].items())} "
        f"({sum(r['rows'].values()) // 2} pairs of sentences that differ only in a sensitive attribute, each scored "
        "against the same reference).",
        "",
        "Method (theirs, `get_bias_score.py`, re-implemented in `benchmarks/bias_score.py`): per metric and file, "
        "min-max normalise the scores to 0..100, then bias = 2 x sum over pairs |a - b| / number of rows (the mean "
        "normalised gap within a pair; 0 = blind to the attribute, larger = more biased). Invariant to any increasing "
        "affine change of the scores, so baseline rescaling does not change it.",
        "",
        f"Checks: the rows bleu, chrf, bertscore-bert-base, bertscore-roberta-large are computed here from their stored "
        f"columns and {'**reproduce their README table to 0.01**' if r['reproduced_published_table'] else '**do NOT reproduce their README table**'} "
        f"(max gap after rounding {r['max_abs_gap_to_published']:.3f}). The files are read with standard CSV quoting "
        f"(pandas `read_csv(sep='\\t')`): {check['quoted_rows']} rows have a CSV-quoted cell; their stored sentence BLEU, "
        f"recomputed from the texts as read (NLTK's definition, method1 smoothing), matches to "
        f"{check['max_abs_bleu_error']:.0e}, against up to {check['max_abs_bleu_error_if_quotes_kept']:.3f} with the "
        "quotes kept as text.",
        "",
        f"Ours: `{r['model']}` (the embedded default), default layer, no idf, every row scored through "
        f"`bertscore.BERTScorer` (one call per file); hash `{r['hash']}`."
        + "".join(f" `{m}`: hash `{h}`." for m, h in r["hashes"].items() if m != r["model"]),
        machine_line(r["machine"]),
        "",
        *table(["metric", *CATEGORIES, "mean"],
               [[f"**{name}**" if bold else name, *(f"**{row[c]:.2f}**" if bold else f"{row[c]:.2f}" for c in CATEGORIES),
                 f"{sum(row[c] for c in CATEGORIES) / len(CATEGORIES):.2f}"]
                for name, row, bold in ((n, r["metrics"][n], n.startswith("ours")) for n in names)]),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
