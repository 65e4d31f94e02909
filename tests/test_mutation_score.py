"""The committed mutation score of the core math (benchmarks/results/mutation.json, written by
`make mutation`): its counts add up, every argued-equivalent mutant carries its argument and diff,
and the score of each module the run finished meets the bar."""

from __future__ import annotations

import json

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
OUTCOMES = ("killed", "survived", "equivalent", "no_tests", "not_checked")
BAR = 0.90  # killed / (all - argued equivalent)


@pytest.fixture(scope="module")
def summary() -> dict:
    return json.loads((RESULTS / "mutation.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def equivalent() -> dict:
    return json.loads((RESULTS / "mutation_equivalent.json").read_text(encoding="utf-8"))


def test_the_mutated_modules_are_the_core_math_of_pyproject(summary) -> None:
    """The figure covers what [tool.mutmut] mutates, and at least the seven rooms of the core math:
    fails if the settings and the committed figure drift apart."""
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads pyproject.toml")
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    core = {f"bertscore/{name}.py" for name in ("scoring/matching", "scoring/idf", "models/padding", "scoring/windows",
                                                "scoring/tokens", "resampling", "stats")}
    assert core <= set(settings["only_mutate"])
    assert set(summary["modules"]) == set(settings["only_mutate"])


def test_counts_add_up_per_module_and_in_all(summary) -> None:
    """Every mutant has exactly one outcome, the modules sum to the total, each score is
    killed / (all - equivalent): fails if a hand-edited figure does not add up."""
    for name, module in [*summary["modules"].items(), ("all", summary["all"])]:
        assert sum(module[key] for key in OUTCOMES) == module["total"], name
        considered = module["total"] - module["equivalent"]
        assert module["score"] == pytest.approx(module["killed"] / considered if considered else 0.0, abs=1e-4), name
    for key in ("total", *OUTCOMES):
        assert summary["all"][key] == sum(m[key] for m in summary["modules"].values()), key
    alive = [mutant for mutant, entry in summary["alive"].items() if entry["outcome"] == "survived"]
    assert len(alive) == summary["all"]["survived"]


def test_every_argued_equivalent_mutant_has_its_argument(summary, equivalent) -> None:
    """One line of argument and the diff per equivalent mutant, of a module mutated here: fails on an
    entry without a reason, a multi-line essay, or a count that disagrees with the file."""
    for mutant, entry in equivalent.items():
        assert entry["why"].strip() and "\n" not in entry["why"], mutant
        assert entry["diff"].strip(), mutant
        module = "/".join(mutant.split(".")[:-1]) + ".py"  # bertscore.scoring.idf.x_f__mutmut_1
        assert module in summary["modules"], mutant
    assert summary["all"]["equivalent"] <= len(equivalent)


def test_every_mutant_was_checked_and_every_module_meets_the_bar(summary) -> None:
    """mutmut checked every mutant (an unchecked one counts against the figure, never for it), and the
    tests kill at least 90% of those not argued equivalent, per module and in all: fails when a change
    to the core math leaves planted bugs alive, or the committed figure comes from an unfinished run."""
    unchecked = {name: m["not_checked"] for name, m in summary["modules"].items() if m["not_checked"]}
    assert unchecked == {}
    below = {name: m["score"] for name, m in summary["modules"].items() if m["score"] < BAR}
    assert below == {}
    assert summary["all"]["score"] >= BAR
