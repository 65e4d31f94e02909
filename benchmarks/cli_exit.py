"""What a short `bertscore` run costs with and without the frozen collector at its exit.

A `bertscore` process ends by running the interpreter's exit, whose garbage collections walk every
object torch and transformers created. The command's entry (`bertscore.cli.program`, through
`io.as_program`) calls `gc.freeze()` first, so they are skipped. This runs the same command both
ways, alternating, --rounds times each: the `bertscore` script, and the same `main` without the
freeze (`python -c "...sys.exit(main())"`), on examples/ with the embedded model, and checks that
both print the same output.

    .venv/bin/python benchmarks/cli_exit.py [--rounds 5]

Writes cli_exit.md and cli_exit.json to benchmarks/scratch/ (git-ignored), or to
benchmarks/results/ with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bertscore import EMBEDDED_MODEL_NAME  # noqa: E402
from harness import interleaved, table  # noqa: E402
from machine import add_output_options, machine_info, machine_line, output_folder, write_results  # noqa: E402

ARGS = ["-c", "examples/candidates.txt", "-r", "examples/references.txt", "--model", EMBEDDED_MODEL_NAME]
WAYS = {
    "program (gc.freeze() before the exit)": [str(Path(sys.executable).parent / "bertscore"), *ARGS],
    "main without the freeze": [sys.executable, "-c", "import sys; from bertscore.cli import main; sys.exit(main())",
                                *ARGS],
}


def run(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """One run of the command: its CPU seconds and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    add_output_options(parser)
    args = parser.parse_args()
    folder = output_folder(args)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT))
    cpus: dict[str, list[float]] = {way: [] for way in WAYS}
    outputs = set()

    def record(_: int, way: str, __: float, out: tuple[float, str]) -> None:
        cpus[way].append(out[0])
        outputs.add(out[1])

    walls, _ = interleaved({way: lambda command=command: run(command, env) for way, command in WAYS.items()},
                           args.rounds, report=record)
    assert len(outputs) == 1, f"the two ways printed different output: {outputs}"
    frozen, plain = WAYS
    ratio = statistics.median(walls[plain]) / statistics.median(walls[frozen])
    info = machine_info(torch_threads=None)
    result = {"command": f".venv/bin/python benchmarks/cli_exit.py --rounds {args.rounds}", "rounds": args.rounds,
              "wall_s": walls, "cpu_s": cpus, "median_wall_ratio": round(ratio, 3), "machine": info}
    rows = "\n".join(table(["way", "median wall s", "best wall s", "median CPU s"],
                           [[way, f"{statistics.median(walls[way]):.2f}", f"{min(walls[way]):.2f}",
                             f"{statistics.median(cpus[way]):.2f}"] for way in WAYS]))
    markdown = (
        "# A short `bertscore` run, with and without the frozen collector at its exit\n\n"
        f"Reproduce: `{result['command']}`\n\n{machine_line(info)}\n\n"
        f"One run scores examples/ (4 pairs) with the embedded model; {args.rounds} rounds, alternating; "
        "the same output both ways.\n\n"
        f"{rows}\n\nThe frozen exit makes the run {ratio:.2f}x as fast (median wall).\n")
    write_results(folder, "cli_exit", result, markdown)


if __name__ == "__main__":
    main()
