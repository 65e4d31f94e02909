"""Segment-level correlation with WMT17 human judgements (to-English, 560 rows per pair).

Pearson r of BERTScore F1 (embedded MiniLM, default layer; idf off and on) against the
Direct Assessment `human_score`, per language pair and averaged over the 7 pairs, next to
sentence-BLEU and chrF (sacrebleu) on the same rows and the official WMT17 sentBLEU column
where it covers the rows (a sanity check of the protocol).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/correlation.py [--data ../shared/data]

Writes correlation.md and correlation.json to benchmarks/scratch/ (git-ignored), or
to benchmarks/results/ with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from scipy.stats import pearsonr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bertscore import BERTScorer  # noqa: E402
from bertscore.sources import EMBEDDED_MODEL_NAME  # noqa: E402
from harness import table, wmt17_segments  # noqa: E402
from machine import add_output_options, machine_info, machine_line, output_folder, write_results  # noqa: E402
from shared_data import DEFAULT_DATA  # noqa: E402

PAIRS = ["cs", "de", "fi", "lv", "ru", "tr", "zh"]
# Published official sentBLEU r on this data (data README) for the sanity check.
PUBLISHED_SENTBLEU = {"cs": 0.435, "de": 0.432, "fi": 0.571, "ru": 0.484, "tr": 0.538, "zh": 0.512}


def pearson(x, y) -> float:
    return float(pearsonr(np.asarray(x, dtype=float), np.asarray(y, dtype=float))[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (holds wmt17/)")
    parser.add_argument("--threads", type=int, default=2)
    add_output_options(parser)
    args = parser.parse_args(argv)
    args.out = output_folder(args)

    frames = {lp: wmt17_segments(args.data, f"{lp}-en") for lp in PAIRS}

    import sacrebleu

    torch.set_num_threads(args.threads)
    print(machine_line(machine_info()), flush=True)
    scorers = {
        "bertscore_f1": BERTScorer(model_type=EMBEDDED_MODEL_NAME, idf=False),
        "bertscore_f1_idf": BERTScorer(model_type=EMBEDDED_MODEL_NAME, idf=True),
    }
    official_path = args.data / "wmt17" / "wmt17_sentbleu_official_subset.tsv"
    official = wmt17_segments(args.data, "sentbleu_official_subset") if official_path.is_file() else None

    rows = []
    started = time.perf_counter()
    for lp, frame in frames.items():
        cands, refs = frame["candidate"].tolist(), frame["reference"].tolist()
        human = frame["human_score"].astype(float).to_numpy()
        row: dict[str, object] = {"lp": f"{lp}-en", "n": len(frame)}
        for name, scorer in scorers.items():
            # idf=True: idf over this pair's 560 references (the official package's protocol).
            _, _, f1 = scorer.score(cands, refs)
            row[name] = pearson(f1.numpy(), human)
        bleu = [sacrebleu.sentence_bleu(c, [r]).score for c, r in zip(cands, refs)]
        chrf = [sacrebleu.sentence_chrf(c, [r]).score for c, r in zip(cands, refs)]
        row["sentbleu_sacrebleu"] = pearson(bleu, human)
        row["chrf_sacrebleu"] = pearson(chrf, human)
        if official is not None:
            joined = frame.assign(sid=frame["sid"].astype(str)).merge(
                official.assign(sid=official["sid"].astype(str)), on=["lp", "sys", "sid"], how="inner"
            )
            row["official_sentbleu_rows"] = len(joined)
            row["official_sentbleu"] = pearson(joined["sentbleu"], joined["human_score"]) if len(joined) > 2 else None
        row["published_sentbleu"] = PUBLISHED_SENTBLEU.get(lp)
        rows.append(row)
        print(json.dumps(row), flush=True)

    metrics = ["bertscore_f1", "bertscore_f1_idf", "sentbleu_sacrebleu", "chrf_sacrebleu", "official_sentbleu"]
    mean = {m: float(np.mean([r[m] for r in rows if r.get(m) is not None])) for m in metrics if any(r.get(m) is not None for r in rows)}
    command = "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/correlation.py"
    import sacrebleu as _sb
    import transformers

    result = {
        "command": command,
        "model": EMBEDDED_MODEL_NAME,
        "layer": scorers["bertscore_f1"].num_layers,
        "protocol": "Pearson r of metric vs human_score per language pair (560 rows), then the mean over 7 pairs",
        "rows": rows,
        "mean": mean,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "sacrebleu": _sb.__version__},
        "machine": machine_info(),
        "hash": {k: s.hash for k, s in scorers.items()},
    }
    def fmt(value) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines = [
        "# WMT17 segment-level correlation (to-English, Pearson r vs DA human_score)",
        "",
        f"Reproduce: `{command}` (data: ../shared/data/wmt17, read-only; {result['seconds']} s on CPU).",
        "",
        machine_line(result["machine"]),
        "",
        f"BERTScore: `{EMBEDDED_MODEL_NAME}` (embedded), layer {result['layer']}, F1, no baseline rescaling; "
        "idf variant = idf over each pair's 560 references. sentBLEU / chrF: sacrebleu "
        "`sentence_bleu` / `sentence_chrf` defaults on the same (lowercased, tokenised) rows. "
        "Official sentBLEU: the WMT17 column, on the rows it covers (n shown).",
        "",
        *table(["pair", "BERTScore F1", "BERTScore F1 (idf)", "sentBLEU (sacrebleu)", "chrF (sacrebleu)",
                "official sentBLEU (n)", "published sentBLEU"],
               [[r["lp"], fmt(r["bertscore_f1"]), fmt(r["bertscore_f1_idf"]), fmt(r["sentbleu_sacrebleu"]),
                 fmt(r["chrf_sacrebleu"]), f"{fmt(r.get('official_sentbleu'))} ({r.get('official_sentbleu_rows', 0)})",
                 fmt(r["published_sentbleu"])] for r in rows]
               + [["**mean**", f"**{fmt(mean['bertscore_f1'])}**", f"**{fmt(mean['bertscore_f1_idf'])}**",
                   fmt(mean["sentbleu_sacrebleu"]), fmt(mean["chrf_sacrebleu"]), fmt(mean.get("official_sentbleu")), ""]]),
"", f"Scorer hashes: idf off `{result['hash']['bertscore_f1']}`, idf on `{result['hash']['bertscore_f1_idf']}`.", ""]
    write_results(args.out, "correlation", result, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
