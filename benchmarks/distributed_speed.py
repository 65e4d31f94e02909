"""1 process vs N torchrun ranks on CPU: agreement (max |delta|) and speed of sharded scoring.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/distributed_speed.py [--pairs 600] [--ranks 2]

Scores the same synthetic pairs (embedded MiniLM) with `examples/score_distributed.py` as one process
and under `torchrun --nproc_per_node=N` (--threads split between ranks): "scoring s" is the time inside
`score_distributed` (model load excluded). Writes distributed_cpu.md and .json.
"""

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

from harness import run_child, table
from machine import ROOT, begin, command, header, machine_line, write_results

WORDS = ("the a cat dog market river city council report weather engineer music team plan price school "
         "train station morning evening quickly slowly announced reported found built opened closed new old "
         "large small first last local national").split()


def _sentences(count: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + "." for _ in range(count)]


def _run(argv: list[str], env: dict[str, str]) -> tuple[dict, float]:
    done = run_child(argv, env, ROOT, check=True)
    return json.loads(Path(argv[argv.index("--out") + 1]).read_text()), done.wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args, _, machine = begin(parser, threads_elsewhere=True)  # threads per process: see the table

    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as folder:
        cands, refs = Path(folder) / "c.txt", Path(folder) / "r.txt"
        for text_file in (cands, refs):
            text_file.write_text("\n".join(_sentences(args.pairs, rng)) + "\n", encoding="utf-8")
        script = [str(ROOT / "examples" / "score_distributed.py"), str(cands), str(refs)]
        base = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
        base.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
        load_before, per_rank = os.getloadavg()[0], str(max(1, args.threads // args.ranks))
        one, one_wall = _run([sys.executable, *script, "--out", f"{folder}/one.json"],
                             dict(base, OMP_NUM_THREADS=str(args.threads)))
        one_thin, one_thin_wall = _run([sys.executable, *script, "--out", f"{folder}/one_thin.json"],
                                       dict(base, OMP_NUM_THREADS=per_rank))
        many, many_wall = _run([sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={args.ranks}",
                                *script, "--out", f"{folder}/many.json"], dict(base, OMP_NUM_THREADS=per_rank))
        load_after = os.getloadavg()[0]
    delta = max(abs(a - b) for single in (one, one_thin) for key in ("precision", "recall", "f1")
                for a, b in zip(single[key], many[key]))
    speedup, best_one = one["seconds"] / many["seconds"], min(one["seconds"], one_thin["seconds"])
    lines = [
        *header("Sharded scoring on CPU: 1 process vs torchrun ranks", None,
                command("distributed_speed.py", ["--pairs", args.pairs, "--ranks", args.ranks])),
        f"{args.pairs} synthetic pairs (5-30 words each), embedded MiniLM (`sentence-transformers/all-MiniLM-L6-v2`), "
        f"fp32, idf off, {os.cpu_count()} CPU cores, gloo. Machine shared with other jobs "
        f"(1-min load average {load_before:.1f} before, {load_after:.1f} after), so timings are noisy.", "",
        machine_line(machine) + f" ({args.threads} torch threads in all, split between processes as the table shows.)",
        "",
        *table(["run", "torch threads per process", "scoring s", "wall s (incl. start-up, model load)"],
               [["1 process", args.threads, f"{one['seconds']:.2f}", f"{one_wall:.1f}"],
                ["1 process", per_rank, f"{one_thin['seconds']:.2f}", f"{one_thin_wall:.1f}"],
                [f"torchrun {args.ranks} ranks", per_rank, f"{many['seconds']:.2f}", f"{many_wall:.1f}"]]),
        "",
        f"- speedup of {args.ranks} ranks over 1 process with all threads (scoring): **{speedup:.2f}x**; "
        f"over the faster 1-process run: **{best_one / many['seconds']:.2f}x** (on a loaded machine, "
        "fewer threads per process thrash less; on an idle machine expect at most ~the core count)",
        f"- max |delta| of P, R, F1 between the 1-process and the sharded runs: **{delta:.2e}** (same hash: {one['hashcode'] == many['hashcode']})",
    ]
    figures = {"pairs": args.pairs, "ranks": args.ranks, "threads": args.threads, "max_abs_delta": delta,
               "seconds": {"one_process": one["seconds"], "one_process_thin": one_thin["seconds"], "torchrun": many["seconds"]},
               "wall_s": {"one_process": one_wall, "one_process_thin": one_thin_wall, "torchrun": many_wall},
               "machine": machine}
    write_results(args.out, "distributed_cpu", figures, lines)


if __name__ == "__main__":
    main()
