"""The mutation score of the core math: how many small bugs planted by mutmut the fast tests catch.

`make mutation` runs `mutmut run` (its settings: [tool.mutmut] in pyproject.toml: the modules it
mutates, the fast tests it runs, no model loaded), then this script, which reads mutmut's results
(mutants/**/*.py.meta) and writes per module: mutants in all, killed (a test failed, or the mutant
hung past mutmut's timeout), survived, argued equivalent (a survivor that no input can tell from
the original: its one-line argument is in benchmarks/results/mutation_equivalent.json, keyed by
mutant id, with the mutant's diff), no tests (no selected test reached the function) and not
checked (the run stopped early). score = killed / (all - argued equivalent).

    .venv/bin/python benchmarks/mutation.py [--update-results | --out FOLDER]

Writes mutation.md and mutation.json to benchmarks/scratch/ (git-ignored), or to
benchmarks/results/ with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import RESULTS, add_output_options, output_folder, write_results  # noqa: E402

MUTANTS = ROOT / "mutants"
EQUIVALENT = RESULTS / "mutation_equivalent.json"  # the arguments, kept with the figures
# mutmut's exit codes (mutmut.stats.status_by_exit_code), as the outcomes counted here
KILLED_CODES = {1, 3, 36, 37, -24, 24, 152, 255, -11, -9}  # failed, pytest error, timeout, type check, crash
SURVIVED_CODES = {0}
NO_TESTS_CODES = {5, 33}
OUTCOMES = ("killed", "survived", "equivalent", "no_tests", "not_checked")


def read_results(mutants: Path) -> dict[str, dict[str, int | None]]:
    """module (bertscore/x.py) -> {mutant id: mutmut's exit code (None: not checked)}."""
    results = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix()[: -len(".meta")]
        results[module] = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    return results


def outcome(code: int | None, mutant: str, equivalent: dict[str, Any]) -> str:
    if code in KILLED_CODES:
        return "killed"
    if code in SURVIVED_CODES:
        return "equivalent" if mutant in equivalent else "survived"
    if code in NO_TESTS_CODES:
        return "no_tests"
    return "not_checked"


def diff_of(mutant: str, module: str) -> str:
    """mutmut's diff of one mutant (the lines it changed), as `mutmut show` prints it."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    lines = get_diff_for_mutant(mutant, path=module).splitlines()
    return "\n".join(line for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---")))


def summarise(results: dict[str, dict[str, int | None]], equivalent: dict[str, Any],
              with_diffs: bool = True) -> dict[str, Any]:
    """Per module and in all: the counts of each outcome and the score; the ids (and diffs) left alive."""
    modules, alive = {}, {}
    for module, codes in results.items():
        counts = dict.fromkeys(OUTCOMES, 0)
        for mutant, code in codes.items():
            kind = outcome(code, mutant, equivalent)
            counts[kind] += 1
            if kind in ("survived", "no_tests"):
                alive[mutant] = {"outcome": kind, "diff": diff_of(mutant, module) if with_diffs else ""}
        modules[module] = {"total": len(codes), **counts, "score": score(len(codes), counts)}
    totals = {key: sum(m[key] for m in modules.values()) for key in ("total", *OUTCOMES)}
    totals["score"] = score(totals["total"], totals)
    return {"tool": tool_version(), "modules": modules, "all": totals, "alive": alive}


def score(total: int, counts: dict[str, int]) -> float:
    """killed / (all - argued equivalent), 0 where nothing is left to kill."""
    considered = total - counts["equivalent"]
    return round(counts["killed"] / considered, 4) if considered else 0.0


def tool_version() -> str:
    from importlib.metadata import version

    return f"mutmut {version('mutmut')}"


def markdown(summary: dict[str, Any]) -> str:
    rows = ["| module | mutants | killed | survived | argued equivalent | no tests | not checked | score |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, m in [*summary["modules"].items(), ("all", summary["all"])]:
        rows.append(f"| {name} | {m['total']} | {m['killed']} | {m['survived']} | {m['equivalent']} | "
                    f"{m['no_tests']} | {m['not_checked']} | {m['score']:.1%} |")
    return (
        "# Mutation score of the core math\n\n"
        f"{summary['tool']} on the modules of [tool.mutmut] in pyproject.toml, with its fast tests (`make mutation`).\n"
        "score = killed / (mutants - argued equivalent); a mutant that hangs past mutmut's timeout counts as killed.\n"
        "Each argued-equivalent mutant has its one-line argument in mutation_equivalent.json.\n\n"
        + "\n".join(rows) + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output_options(parser)
    parser.add_argument("--mutants", type=Path, default=MUTANTS, help="mutmut's folder (default: mutants/)")
    args = parser.parse_args()
    folder = output_folder(args)
    equivalent = json.loads(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.is_file() else {}
    summary = summarise(read_results(args.mutants), equivalent)
    write_results(folder, "mutation", summary, markdown(summary))


if __name__ == "__main__":
    main()
