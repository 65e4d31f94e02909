"""Speed and memory of bertscore.stats at corpus scale (pure numpy, no model).

Each function runs on --segments per-segment scores (real WMT17 F1 values of tests/data plus noise: the
values do not change the cost), best of --rounds, then once more for its peak allocation
(harness.PeakMemory(kind="python")), next to what the one-shot way (as sacrebleu does) would hold.
docs/statistics.md quotes the report, which says how each figure is counted.

    .venv/bin/python benchmarks/stats_speed.py [--segments 100000] [--rounds 3]  # stats_speed.md, .json
"""

import argparse
import json
import os
import sys

import numpy as np

from harness import PeakMemory, repeated, table
from machine import ROOT, begin, header, machine_line, write_results

from bertscore import resampling, stats

FIXTURE = ROOT / "tests" / "data" / "wmt17_de-en_f1.tsv"
TARGET_SECONDS = 3.0


def synthetic_scores(segments: int, systems: int, seed: int = 0) -> np.ndarray:
    """[systems, segments]: real F1 values resampled as segment difficulty, plus system noise."""
    columns = np.loadtxt(FIXTURE, delimiter="\t", skiprows=1)[:, 1:]
    rng = np.random.default_rng(seed)
    difficulty = rng.choice(columns.ravel(), size=segments)
    noise = rng.normal(0.0, 0.03, size=(systems, segments)) + np.linspace(0, 0.002, systems)[:, None]
    return np.clip(difficulty + noise, 0.0, 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--segments", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args, _, info = begin(parser, argv)

    scores = synthetic_scores(args.segments, 5)
    a, b = scores[0], scores[1]
    systems = {f"system{i}": row for i, row in enumerate(scores)}
    r, n = args.resamples, args.segments
    indices = gathered = 8 * r * n  # one-shot int64 indices; one gathered float64 copy per system
    selectors = 2 * 10000 * n  # sacrebleu's pos_sel and neg_sel booleans for 10,000 randomizations
    cases = [
        ("bootstrap_ci", f"bootstrap_ci(scores, n_resamples={r})", lambda: stats.bootstrap_ci(a, r),
         indices + gathered, True),
        ("paired_bootstrap", f"paired_bootstrap(a, b, n_resamples={r})", lambda: stats.paired_bootstrap(a, b, r),
         indices + 2 * gathered, True),
        ("paired_permutation", f"paired_permutation(a, b, n_resamples={r})",
         lambda: stats.paired_permutation(a, b, r), 2 * r * n, False),
        ("paired_permutation_default", "paired_permutation(a, b) (10,000 randomizations)",
         lambda: stats.paired_permutation(a, b), selectors, False),
        ("compare_systems_bootstrap", f"compare_systems(5 systems, method='bootstrap', n_resamples={r})",
         lambda: stats.compare_systems(systems, method="bootstrap", n_resamples=r), indices + 5 * gathered, False),
        ("compare_systems_permutation", f"compare_systems(5 systems) (permutation 10,000 + intervals {r})",
         lambda: stats.compare_systems(systems, ci_resamples=r), selectors + indices + 5 * gathered, False),
    ]
    rows = []
    for key, label, call, one_shot_bytes, targeted in cases:
        walls, cpus, _ = repeated(call, args.rounds)
        with PeakMemory(kind="python") as memory:  # tracemalloc's peak during one more call
            call()
        best = min(walls)
        rows.append({"case": key, "call": label, "seconds_best": round(best, 3),
                     "seconds_rounds": [round(w, 3) for w in walls],
                     "cpu_seconds_best_round": round(cpus[walls.index(best)], 3),
                     "peak_mib": round(memory.peak / 2**20, 1), "one_shot_mib": round(one_shot_bytes / 2**20, 1),
                     "target_seconds": TARGET_SECONDS if targeted else None})
        print(json.dumps(rows[-1]), flush=True)

    result = {"command": f".venv/bin/python benchmarks/stats_speed.py --segments {args.segments} --resamples {r} "
                         f"--rounds {args.rounds}", "segments": args.segments, "resamples": r, "rounds": args.rounds,
              "block_elements": resampling.BLOCK_ELEMENTS, "rows": rows,
              "machine": {**info, "numpy": np.__version__,
                          "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}}
    write_results(args.out, "stats_speed", result, render(result))
    return 0


def render(result: dict) -> str:
    m = result["machine"]
    lines = [
        *header("bertscore.stats: speed and memory at corpus scale", None, result["command"]),
        f"{result['segments']:,} segments per system, {result['resamples']:,} resamples unless stated; best of "
        f"{result['rounds']} rounds (all rounds listed); random draws in blocks of about "
        f"{result['block_elements']:,} numbers.",
        machine_line(m) + f" numpy {m['numpy']}; the 2 cores are shared with other work (load average at the "
        f"end {tuple(m['load_average_at_end'])}).",
        "",
        *table(["call", "seconds (best)", "CPU s", "all rounds (s)", "peak allocated (MiB)",
                "one-shot arrays would need (MiB)", "target"],
               [[f"`{row['call']}`", f"{row['seconds_best']:.2f}", f"{row['cpu_seconds_best_round']:.2f}",
                 ", ".join(f"{w:.2f}" for w in row["seconds_rounds"]), f"{row['peak_mib']:.1f}",
                 f"{row['one_shot_mib']:,.0f}", "-" if row["target_seconds"] is None else
                 f"< {row['target_seconds']:g} s: {'met' if row['seconds_best'] < row['target_seconds'] else 'NOT met'}"]
                for row in result["rows"]]),
        "",
        "Peak allocated: tracemalloc's peak during one call (numpy buffers included), inputs excluded. "
        "One-shot: what drawing everything at once (as sacrebleu does) holds: the [resamples, segments] int64 "
        "indices plus one gathered float64 copy per resampled system; for the permutation test its two "
        "[randomizations, segments] boolean selector arrays (a lower bound: its matrix products convert them "
        "to floats). CPU s: this process's own time (the wall time includes waiting for the shared cores).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
