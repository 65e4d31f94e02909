"""Segment-level correlation with WMT17 human judgements (to-English, 560 rows per pair).

Pearson r of BERTScore F1 (embedded MiniLM, default layer; idf off and on) against the
Direct Assessment `human_score`, per language pair and averaged over the 7 pairs, next to
sentence-BLEU and chrF (sacrebleu) on the same rows and the official WMT17 sentBLEU column
where it covers the rows (a sanity check of the protocol).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/correlation.py [--data ../shared/data]

Writes correlation.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import json
import sys
import time

import numpy as np
from scipy.stats import pearsonr

from harness import WMT17_TO_ENGLISH, sentence_metrics, table, wmt17_segments
from machine import begin, header, write_results

from bertscore import BERTScorer
from bertscore.sources import EMBEDDED_MODEL_NAME

PAIRS = [lp.split("-")[0] for lp in WMT17_TO_ENGLISH]
# Published official sentBLEU r on this data (data README) for the sanity check.
PUBLISHED_SENTBLEU = {"cs": 0.435, "de": 0.432, "fi": 0.571, "ru": 0.484, "tr": 0.538, "zh": 0.512}


def pearson(x, y) -> float:
    return float(pearsonr(np.asarray(x, dtype=float), np.asarray(y, dtype=float))[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    args, _, info = begin(parser, argv, threads=2, data=True)
    frames = {lp: wmt17_segments(args.data, f"{lp}-en") for lp in PAIRS}
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
        sentence = sentence_metrics(cands, refs)
        row["sentbleu_sacrebleu"] = pearson(sentence["bleu"], human)
        row["chrf_sacrebleu"] = pearson(sentence["chrf"], human)
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
    import sacrebleu

    result = {
        "command": command,
        "model": EMBEDDED_MODEL_NAME,
        "layer": scorers["bertscore_f1"].num_layers,
        "protocol": "Pearson r of metric vs human_score per language pair (560 rows), then the mean over 7 pairs",
        "rows": rows,
        "mean": mean,
        "seconds": round(time.perf_counter() - started, 1),
        "versions": {"torch": info["torch"], "transformers": info["transformers"], "sacrebleu": sacrebleu.__version__},
        "machine": info,
        "hash": {k: s.hash for k, s in scorers.items()},
    }
    def fmt(value) -> str:
        return "-" if value is None else f"{value:.3f}"

    lines = [
        *header("WMT17 segment-level correlation (to-English, Pearson r vs DA human_score)", info, command,
                f" (data: ../shared/data/wmt17, read-only; {result['seconds']} s on CPU)."),
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
"", f"Scorer hashes: idf off `{result['hash']['bertscore_f1']}`, idf on `{result['hash']['bertscore_f1_idf']}`."]
    write_results(args.out, "correlation", result, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
