"""Sweep of the CPU token budget per encoder batch (embed.default_tokens_per_batch).

The encoder forward alone (the floor of speed.py) over the unique texts of N seeded WMT17
pairs, for several budgets, interleaved over --reps repetitions (best time kept), fp32 and bf16.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/token_budget.py [--pairs 300] [--reps 3]

Writes token_budget_cpu.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import os
import sys

import torch

from harness import interleaved, table
from machine import begin, command, header, write_results
from speed import load_pairs, make_floor

from bertscore.models.loading import load_model
from bertscore.scoring.embed import default_tokens_per_batch
from bertscore.sources import EMBEDDED_MODEL_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--budgets", default="1024,2048,4096,8192,16384")
    args, _, machine = begin(parser, argv, threads=2, data=True)
    cands, refs, _ = load_pairs(args.data, args.pairs)
    budgets = [int(b) for b in args.budgets.split(",")]
    models = {"fp32": load_model(EMBEDDED_MODEL_NAME), "bf16": load_model(EMBEDDED_MODEL_NAME)}
    models["bf16"].encoder.to(torch.bfloat16)
    runs = {(p, b): make_floor(models[p], cands + refs, b)[0] for p in models for b in budgets}
    for fn in runs.values():  # warm-up
        fn()
    seconds, _ = interleaved(runs, args.reps, report=lambda rep, key, took, _: print(
        rep, key, f"{took:.2f} s, load {os.getloadavg()[0]:.1f}", flush=True))
    best = {key: min(values) for key, values in seconds.items()}
    reproduce = command("token_budget.py", ["--pairs", args.pairs, "--reps", args.reps])
    default = default_tokens_per_batch(torch.device("cpu"))
    result = {"command": reproduce, "pairs": args.pairs, "default_cpu_budget": default,
              "best_seconds": {f"{p}/{b}": s for (p, b), s in best.items()}, "machine": machine}
    lines = [*header("CPU token budget sweep (encoder forward only, best of reps)", machine, reproduce),
             f"Current default on CPU: {default} tokens per batch. Times relative to the best budget per precision.", ""]
    low = {p: min(best[(p, b)] for b in budgets) for p in models}
    lines += [*table(["budget", "fp32 s", "fp32 rel", "bf16 s", "bf16 rel"],
                     [[b, f"{best[('fp32', b)]:.2f}", f"{best[('fp32', b)] / low['fp32']:.2f}", f"{best[('bf16', b)]:.2f}",
                       f"{best[('bf16', b)] / low['bf16']:.2f}"] for b in budgets])]
    write_results(args.out, "token_budget_cpu", result, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
