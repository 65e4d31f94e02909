"""`bertscore layers` at WMT17 scale: every layer's agreement with human judgements, against the
official package's all-layer scores and scipy, side by side in one run.

For each to-English pair of WMT17 (560 Direct Assessment segments each, 3,920 in all), the
embedded MiniLM is scored at every layer twice: by `bertscore.layers.choose_layer` (its probe,
then one all-layers pass) and by `bert_score.score(all_layers=True)` + `scipy.stats.pearsonr` /
`kendalltau` (the manual route). Reports per layer the mean Pearson r over the 7 pairs (the WMT17
protocol: r per pair, then the mean), the largest difference between the two routes, the best
layer per pair, and the time of each route, with the run's peak memory (RSS).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/layers.py [--data ../shared/data] [--pairs de zh]

Writes layers.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import sys

import numpy as np
from scipy.stats import kendalltau, pearsonr

from harness import WMT17_TO_ENGLISH, PeakMemory, official_score, table, timed, wmt17_segments
from machine import begin, header, write_results

from bertscore.layers import choose_layer
from bertscore.sources import EMBEDDED_MODEL_NAME, embedded_model_dir

PAIRS = [lp.split("-")[0] for lp in WMT17_TO_ENGLISH]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", nargs="+", default=PAIRS, choices=PAIRS)
    args, _, info = begin(parser, argv, threads=2, data=True)
    frames = {lp: wmt17_segments(args.data, f"{lp}-en") for lp in args.pairs}
    per_pair, ours_s, theirs_s = {}, 0.0, 0.0
    with PeakMemory() as memory:
        for lp, frame in frames.items():
            path = args.data / "wmt17" / f"wmt17_{lp}-en.tsv"
            human = frame["human_score"].astype(float).to_numpy()
            ours, report = timed(lambda: choose_layer(path, EMBEDDED_MODEL_NAME, device="cpu"))
            theirs, official = timed(lambda: official_score(
                frame["candidate"].tolist(), frame["reference"].tolist(), embedded_model_dir(), 6, device=None,
                all_layers=True, batch_size=64))
            official = official[2].double().numpy()
            ours_s, theirs_s = ours_s + ours, theirs_s + theirs
            independent_r = [float(pearsonr(row, human)[0]) for row in official]
            independent_tau = [float(kendalltau(row, human)[0]) for row in official]
            per_pair[lp] = {
                "segments": report.segments, "pearson": [e["pearson"] for e in report.layers],
                "pearson_ci": [e["pearson_ci"] for e in report.layers], "kendall": [e["kendall"] for e in report.layers],
                "independent_pearson": independent_r, "independent_kendall": independent_tau,
                "best_layer": report.best_layer, "independent_best": int(np.argmax(independent_r)),
                "recommended_layer": report.recommended_layer, "p_value_adjusted": report.test["p_value_adjusted"],
                "one_pass": report.scoring["one_pass"], "ours_s": ours, "official_s": theirs,
            }
            print(f"{lp}-en: best {report.best_layer}, r {[round(r, 3) for r in per_pair[lp]['pearson']]}, "
                  f"ours {ours:.1f} s, official + scipy {theirs:.1f} s", flush=True)
    layers = len(next(iter(per_pair.values()))["pearson"])
    mean_r = [float(np.mean([p["pearson"][k] for p in per_pair.values()])) for k in range(layers)]
    mean_tau = [float(np.mean([p["kendall"][k] for p in per_pair.values()])) for k in range(layers)]
    gap_r = max(abs(a - b) for p in per_pair.values() for a, b in zip(p["pearson"], p["independent_pearson"]))
    gap_tau = max(abs(a - b) for p in per_pair.values() for a, b in zip(p["kendall"], p["independent_kendall"]))
    same_best = all(p["best_layer"] == p["independent_best"] for p in per_pair.values())
    result = {"machine": info, "model": EMBEDDED_MODEL_NAME, "pairs": per_pair, "mean_pearson": mean_r,
              "mean_kendall": mean_tau, "max_pearson_difference": gap_r, "max_kendall_difference": gap_tau,
              "same_best_layer": same_best, "ours_s": ours_s, "official_s": theirs_s, "peak_rss_mb": memory.peak / 2**20}
    segments = sum(p["segments"] for p in per_pair.values())
    lines = [
        *header("Choosing MiniLM's layer on WMT17 (`bertscore layers` vs the official all-layer scores + scipy)", info,
                "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/layers.py", " (data: ../shared/data/wmt17, read-only)."),
        f"{EMBEDDED_MODEL_NAME}, F1, no idf; {len(per_pair)} to-English pairs, {segments} segments; r and tau per pair, "
        "then the mean over pairs (the WMT17 protocol).", "",
        *table(["layer", "mean r", "mean Kendall tau", *(f"r {lp}-en" for lp in per_pair)],
               [[k, f"{mean_r[k]:.3f}", f"{mean_tau[k]:.3f}", *(f"{p['pearson'][k]:.3f}" for p in per_pair.values())]
                for k in range(layers)]), "",
        *table(["pair", "best layer (ours / independent)", "recommended", "adjusted p (best vs default)"],
               [[f"{lp}-en", f"{p['best_layer']} / {p['independent_best']}", p["recommended_layer"],
                 "-" if p["p_value_adjusted"] is None else format(p["p_value_adjusted"], ".3g")]
                for lp, p in per_pair.items()]),
        "", f"Largest difference to the independent route: Pearson {gap_r:.1e}, Kendall {gap_tau:.1e}; "
            f"best layer the same in every pair: {same_best}.",
        f"Time, same run: `choose_layer` (probe + one all-layers pass + statistics) {ours_s:.1f} s; official "
        f"`bert_score.score(all_layers=True)` + scipy {theirs_s:.1f} s (ratio {theirs_s / ours_s:.2f}). "
        f"Peak RSS of the run {memory.peak / 2**20:.0f} MiB.",
    ]
    write_results(args.out, "layers", result, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
