"""What a short `bertscore` run costs with and without the frozen collector at its exit.

The `bertscore` script (its entry calls `gc.freeze()` before the interpreter's exit, docs/performance.md)
and the same `main` without the freeze (`python -c "...sys.exit(main())"`), alternating, --rounds times
each, on examples/ with the embedded model; both must print the same output.

    .venv/bin/python benchmarks/cli_exit.py [--rounds 5]  # cli_exit.md, .json
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

from harness import interleaved, run_child, table
from machine import ROOT, begin, header, write_results

from bertscore import EMBEDDED_MODEL_NAME

ARGS = ["-c", "examples/candidates.txt", "-r", "examples/references.txt", "--model", EMBEDDED_MODEL_NAME]
WAYS = {
    "program (gc.freeze() before the exit)": [str(Path(sys.executable).parent / "bertscore"), *ARGS],
    "main without the freeze": [sys.executable, "-c", "import sys; from bertscore.cli import main; sys.exit(main())",
                                *ARGS],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args, folder, info = begin(parser)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))
    cpus: dict[str, list[float]] = {way: [] for way in WAYS}
    outputs = set()

    def record(_: int, way: str, __: float, out) -> None:
        cpus[way].append(out.cpu)
        outputs.add(out.stdout)

    walls, _ = interleaved({way: lambda command=command: run_child(command, env, ROOT, timeout=600, check=True)
                            for way, command in WAYS.items()}, args.rounds, report=record)
    assert len(outputs) == 1, f"the two ways printed different output: {outputs}"
    frozen, plain = WAYS
    ratio = statistics.median(walls[plain]) / statistics.median(walls[frozen])
    result = {"command": f".venv/bin/python benchmarks/cli_exit.py --rounds {args.rounds}", "rounds": args.rounds,
              "wall_s": walls, "cpu_s": cpus, "median_wall_ratio": round(ratio, 3), "machine": info}
    markdown = [
        *header("A short `bertscore` run, with and without the frozen collector at its exit", info, result["command"]),
        f"One run scores examples/ (4 pairs) with the embedded model; {args.rounds} rounds, alternating; "
        "the same output both ways.", "",
        *table(["way", "median wall s", "best wall s", "median CPU s"],
               [[way, f"{statistics.median(walls[way]):.2f}", f"{min(walls[way]):.2f}",
                 f"{statistics.median(cpus[way]):.2f}"] for way in WAYS]),
        "", f"The frozen exit makes the run {ratio:.2f}x as fast (median wall)."]
    write_results(folder, "cli_exit", result, markdown)


if __name__ == "__main__":
    main()
