"""The committed mutation score of the core math (benchmarks/results/mutation.json, written by
`make mutation`): it describes the code as it is (each function's recorded source digest), its counts
add up from the per-function verdicts, every argued-equivalent mutant carries its argument and diff
for the code it was argued on, and the score of each module meets the bar."""

from __future__ import annotations

import ast
import hashlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUTCOMES = ("killed", "survived", "equivalent", "no_tests", "not_checked")
BAR = 0.90  # killed / (all - argued equivalent)


def mutmut_settings() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli", reason="Python 3.10 reads pyproject.toml with tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]


def functions_in_code() -> dict[tuple[str, str], str]:
    """(qualified name, sha256 of its syntax tree) -> module stem, for every function and method of the
    files [tool.mutmut] mutates, wherever they sit (a module moved to a sub-folder changes nothing)."""
    found = {}
    for path in mutmut_settings()["only_mutate"]:
        def visit(statements, prefix, stem=Path(path).stem):
            for node in statements:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    digest = hashlib.sha256(ast.dump(node, annotate_fields=False).encode()).hexdigest()
                    found[(prefix + node.name, digest)] = stem
                elif isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")

        visit(ast.parse((ROOT / path).read_text(encoding="utf-8")).body, "")
    return found


@pytest.fixture(scope="module")
def summary() -> dict:
    return json.loads((RESULTS / "mutation.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def equivalent() -> dict:
    return json.loads((RESULTS / "mutation_equivalent.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def survivors() -> dict:
    return json.loads((RESULTS / "mutation_survivors.json").read_text(encoding="utf-8"))


def test_the_record_describes_the_code_on_this_branch(summary) -> None:
    """Every function of the mutated modules has verdicts recorded for its present source (matched by
    name and digest, not path), and every record is of a function still in the code: fails after an
    edit to a mutated function that mutmut has not rerun, naming the functions to rerun."""
    code = functions_in_code()
    recorded = {(f["function"], f["source_sha256"]) for f in summary["functions"]}
    stale = sorted(f"{stem}.{name}" for (name, digest), stem in code.items() if (name, digest) not in recorded)
    gone = sorted({f"{f['module']}.{f['function']}" for f in summary["functions"]
                   if (f["function"], f["source_sha256"]) not in code} - set(stale))
    assert not stale and not gone, (
        f"the mutation record (benchmarks/results/mutation.json) does not describe the code: "
        f"functions to rerun: {', '.join(stale) or 'none'}; recorded functions no longer in the code: "
        f"{', '.join(gone) or 'none'}. Run `make mutation` (it reruns these alone) and commit its results.")


def test_the_mutated_modules_are_the_core_math_of_pyproject(summary) -> None:
    """The figure covers what [tool.mutmut] mutates (per module by file name, so a move to a sub-folder
    keeps it), and at least the seven rooms of the core math: fails if the settings and the committed
    figure drift apart."""
    stems = [Path(path).stem for path in mutmut_settings()["only_mutate"]]
    assert len(stems) == len(set(stems)), "two mutated modules share a file name: the figures are keyed by it"
    assert {"matching", "idf", "padding", "windows", "tokens", "resampling", "stats"} <= set(stems)
    assert set(summary["modules"]) == set(stems)
    names = [name for name, _ in functions_in_code()]
    assert len(names) == len(set(names)), "two mutated functions share a name: the mutant ids are keyed by it"


def test_counts_add_up_per_module_and_in_all(summary, equivalent) -> None:
    """Every mutant has exactly one outcome, the modules' counts are those of their functions' recorded
    verdicts (a survivor argued equivalent for that very source counts as equivalent), the modules sum
    to the total, each score is killed / (all - equivalent): fails if a figure does not add up."""
    counted: dict = {}
    for f in summary["functions"]:
        counts = counted.setdefault(f["module"], dict.fromkeys(("total", *OUTCOMES), 0))
        for kind in ("killed", "survived", "no_tests", "not_checked"):
            for number in f[kind]:
                argued = equivalent.get(f"{f['function']}__mutmut_{number}", {})
                as_equivalent = kind == "survived" and argued.get("function_sha256") == f["source_sha256"]
                counts["equivalent" if as_equivalent else kind] += 1
                counts["total"] += 1
    assert counted == {name: {k: v for k, v in m.items() if k != "score"} for name, m in summary["modules"].items()}
    for name, module in [*summary["modules"].items(), ("all", summary["all"])]:
        assert sum(module[key] for key in OUTCOMES) == module["total"], name
        considered = module["total"] - module["equivalent"]
        assert module["score"] == pytest.approx(module["killed"] / considered if considered else 0.0, abs=1e-4), name
    for key in ("total", *OUTCOMES):
        assert summary["all"][key] == sum(m[key] for m in summary["modules"].values()), key
    alive = [mutant for mutant, entry in summary["alive"].items() if entry["outcome"] == "survived"]
    assert len(alive) == summary["all"]["survived"]


def test_every_argument_is_one_line_for_the_code_it_was_made_on(summary, equivalent, survivors) -> None:
    """One line of argument and the diff per equivalent mutant (and per survivor left alive), made on
    the function's present source: fails on an entry without a reason, a multi-line essay, an argument
    about code that has since changed, or a count that disagrees with the file."""
    recorded = {(f["function"], f["source_sha256"]): f for f in summary["functions"]}
    for mutant, entry in {**equivalent, **survivors}.items():
        assert entry["why"].strip() and "\n" not in entry["why"], mutant
        assert entry["diff"].strip(), mutant
        function, number = mutant.rsplit("__mutmut_", 1)
        record = recorded.get((function, entry["function_sha256"]))
        assert record is not None, f"{mutant}: argued on a source of {function} the record no longer holds"
        assert int(number) in record["survived"] + record["no_tests"], f"{mutant} is not a survivor"
    assert summary["all"]["equivalent"] == len(equivalent)
    assert not set(equivalent) & set(survivors)


def test_every_mutant_was_checked_and_every_module_meets_the_bar(summary) -> None:
    """mutmut checked every mutant (an unchecked one counts against the figure, never for it), and the
    tests kill at least 90% of those not argued equivalent, per module and in all: fails when a change
    to the core math leaves planted bugs alive, or the committed figure comes from an unfinished run."""
    unchecked = {name: m["not_checked"] for name, m in summary["modules"].items() if m["not_checked"]}
    assert unchecked == {}
    below = {name: m["score"] for name, m in summary["modules"].items() if m["score"] < BAR}
    assert below == {}
    assert summary["all"]["score"] >= BAR
