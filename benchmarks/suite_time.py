"""The test suite's time on this machine: `make test`'s command, run N times in a row, by file.

Runs `python -m pytest -q -n auto -p no:cacheprovider` (what `make test` runs, on every core) in
this checkout with tests/cpu_profile.py on, and writes the wall time of each run, its pass/skip/
fail counts, and the CPU seconds of each test file (its subprocesses included) from the first run.

Reproduce docs/testing.md's table:
  HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/suite_time.py --runs 3 --busy-core-run 3 --update-results
"""

import argparse
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import run_child, table  # noqa: E402
from machine import ROOT, begin, command, header, write_results  # noqa: E402

OURS = "python -m pytest -q -n auto -p no:cacheprovider"
SUMMARY = re.compile(r"=* ?(.*\b(?:passed|failed|error)\b.*) in ([0-9.]+)s")


def run_suite(folder: Path, command: str, profile: Path | None, busy: bool, warm_oracles: bool = False) -> dict:
    """One run of `command` (its `python` is this interpreter) in `folder`: wall, CPU, counts."""
    if not warm_oracles:
        shutil.rmtree(folder / "tests" / ".oracle-cache", ignore_errors=True)  # as in a clean clone
    argv = shlex.split(command)
    argv[0] = sys.executable if argv[0] == "python" else argv[0]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(folder),
               **({"BERTSCORE_CPU_PROFILE": str(profile)} if profile is not None else {}))
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None  # another user of a core
    try:
        done = run_child(argv, env, folder)
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()
    # pytest's summary line: the last one that says it (tests/uncovered.py prints what was not covered after it)
    tail = next((line for line in reversed(done.stdout.strip().splitlines()) if SUMMARY.search(line)),
                done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:])
    summary = SUMMARY.search(tail)
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", tail)}
    failures = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    cpu = None if loop is not None else done.cpu  # a run beside the busy loop records none
    return {"command": command, "exit_code": done.returncode, "wall_s": round(done.wall, 1),
            "pytest_s": float(summary.group(2)) if summary else None, "counts": counts,
            "cpu_s": None if cpu is None else round(cpu, 1), "busy_core": busy, "oracles": "warm" if warm_oracles else "cold",
            "summary": tail, "failures": failures}


def by_file(profile: Path) -> list[dict]:
    """CPU and wall seconds per test file from tests/cpu_profile.py's lines, costliest first."""
    files: dict[str, dict] = collections.defaultdict(lambda: {"tests": 0, "cpu_s": 0.0, "wall_s": 0.0})
    for line in profile.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        entry = files[record["test"].split("::", 1)[0]]
        entry["tests"] += 1
        entry["cpu_s"] += record["cpu_s"] + record["children_cpu_s"]
        entry["wall_s"] += record["wall_s"]
    rows = [{"file": name, "tests": e["tests"], "cpu_s": round(e["cpu_s"], 1), "wall_s": round(e["wall_s"], 1)}
            for name, e in files.items()]
    return sorted(rows, key=lambda row: -row["cpu_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (the suite must pass each: no reruns)")
    parser.add_argument("--busy-core-run", type=int, default=0,
                        help="which run (1-based) has a busy loop on one core (another user of the machine)")
    parser.add_argument("--warm-oracles", action="store_true",
                        help="keep tests/.oracle-cache between runs (by default each starts without, as a clean clone)")
    args, _, info = begin(parser, argv)

    runs = []
    with tempfile.TemporaryDirectory(prefix="suite-time-") as tmp:
        profile = Path(tmp) / "cpu.jsonl"
        for number in range(1, args.runs + 1):
            runs.append({**run_suite(ROOT, OURS, profile if number == 1 else None, busy=number == args.busy_core_run,
                                     warm_oracles=args.warm_oracles), "run": number})
            print(json.dumps(runs[-1]), flush=True)
        files = by_file(profile) if profile.is_file() else []

    flags = [f"--runs {args.runs}"] + ([f"--busy-core-run {args.busy_core_run}"] if args.busy_core_run else []) + (
        ["--warm-oracles"] if args.warm_oracles else [])
    result = {"command": command("suite_time.py", flags), "runs": runs, "by_file": files,
              "machine": {**info, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}}
    write_results(args.out, "suite_time", result, render(result))
    return 0 if all(run["exit_code"] == 0 for run in runs) else 1


def render(result: dict) -> str:
    lines = [*header("The test suite's time", result["machine"], result["command"]),
             *table(["run", "command", "pytest s", "wall s", "CPU s", "passed", "skipped", "failed",
                     "busy loop on a core", "oracle cache"],
                    [[run["run"], f"`{run['command']}`", run["pytest_s"], run["wall_s"],
                      "-" if run["cpu_s"] is None else run["cpu_s"], c.get("passed", 0), c.get("skipped", 0),
                      c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0), "yes" if run["busy_core"] else "no",
                      run.get("oracles", "-")] for run, c in ((run, run["counts"]) for run in result["runs"])])]
    if result["by_file"]:
        total = sum(row["cpu_s"] for row in result["by_file"])
        lines += ["", f"CPU seconds by file in run 1 (the tests' own and their subprocesses'; {total:.0f} in all), "
                  "costliest first:", "", *table(["file", "tests", "CPU s", "wall s (on its worker)"],
                                                 [[row["file"], row["tests"], row["cpu_s"], row["wall_s"]]
                                                  for row in result["by_file"]])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
