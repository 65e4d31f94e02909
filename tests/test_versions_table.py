"""docs/versions.md's table of supported versions is what the tested matrix ran, and pyproject's floors too.

`make test-matrix` runs the core tests in one fresh venv per cell (floor, newest, rl) and records, per cell,
the versions it ran, the hash of a score of examples/ and its F1 in benchmarks/results/matrix/CELL.json
(.ci/matrix.py; suite.json is `make test`'s environment). These tests read the records directly and the
table as a reader sees it, so that the docs cannot claim a version no cell ran.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO_ROOT = Path(__file__).resolve().parents[1]
RECORDS = REPO_ROOT / "benchmarks" / "results" / "matrix"
CELLS = ("suite", "floor", "newest", "rl")
# README.md's first example (examples/, MiniLM): the F1 it prints, which every cell must reproduce.
README_F1 = (0.907127, 0.865227, 0.914363, 0.604720)


def records() -> dict[str, dict]:
    found = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in RECORDS.glob("*.json")}
    assert set(found) == set(CELLS), f"benchmarks/results/matrix/ must hold a record per cell {CELLS}: {sorted(found)}"
    return found


def table_rows() -> dict[str, dict[str, str]]:
    """docs/versions.md's matrix table, one dict per row keyed by the header's names."""
    text = (REPO_ROOT / "docs" / "versions.md").read_text(encoding="utf-8")
    block = text.split("<!-- matrix table: begin -->", 1)[1].split("<!-- matrix table: end -->", 1)[0]
    lines = [line for line in block.strip().splitlines() if line.startswith("|")]
    split = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    header, rows = split[0], split[2:]
    return {row[0]: dict(zip(header, row)) for row in rows}


def project() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_table_lists_exactly_what_each_cell_ran():
    """Fails when a cell's versions change (a pin raised, a record rewritten) and the table is not, or when
    the table names a cell that never ran."""
    rows, runs = table_rows(), records()
    assert list(rows) == list(CELLS)
    for cell, entry in runs.items():
        row, pkg = rows[cell], entry["packages"]
        assert row["Python"] == ".".join(entry["python"].split(".")[:2]), cell
        build = f"CUDA {entry['torch_cuda']} build" if entry["torch_cuda"] else "CPU build"
        assert row["torch"] == f"{Version(pkg['torch']).base_version} ({build})", cell
        for name in ("transformers", "tokenizers", "huggingface_hub", "numpy", "gradio"):
            assert row[name] == pkg[name], (cell, name)
        assert row["evaluate, datasets"] == f"{pkg['evaluate']}, {pkg['datasets']}", cell
        assert row["sentencepiece, protobuf, tqdm, pyarrow"] == ", ".join(
            pkg[name] for name in ("sentencepiece", "protobuf", "tqdm", "pyarrow")), cell


def test_the_cells_are_the_environments_promised():
    """floor: pyproject's lowest Python; newest: 3.13 on PyPI's CUDA build of torch; rl: torch 2.14.0 on 3.12."""
    runs = records()
    floor_python = re.fullmatch(r">=(3\.\d+)", project()["requires-python"]).group(1)
    assert runs["floor"]["python"].startswith(floor_python + ".")
    assert runs["newest"]["python"].startswith("3.13.") and runs["newest"]["torch_cuda"]
    assert runs["rl"]["python"].startswith("3.12.") and runs["rl"]["packages"]["torch"].split("+")[0] == "2.14.0"
    assert runs["suite"]["packages"]["torch"].split("+")[0] == next(
        line.split("==")[1] for line in (REPO_ROOT / "constraints.txt").read_text().splitlines()
        if line.startswith("torch=="))


@pytest.mark.parametrize("requirement", project()["dependencies"] + project()["optional-dependencies"]["app"])
def test_each_floor_of_pyproject_is_what_the_floor_cell_ran(requirement):
    """pyproject claims only what was tested: a floor raised or lowered without the floor cell running it fails."""
    parsed = Requirement(requirement)
    floors = [Version(spec.version) for spec in parsed.specifier if spec.operator == ">="]
    assert len(floors) == 1, f"{requirement!r} needs one floor (>=)"
    ran = records()["floor"]["packages"][parsed.name]
    assert ran is not None and Version(ran.split("+")[0]) == floors[0], (requirement, ran)


def test_every_cell_gives_the_readme_scores():
    """The numbers hold across the matrix: F1 of examples/ within 1e-5 of the README's in every cell."""
    for cell, entry in records().items():
        assert entry["examples_f1"] == pytest.approx(README_F1, abs=1e-5), cell


def test_each_cell_hash_names_its_versions():
    """A score's hash names the transformers, tokenizers and torch that computed it, so two cells' scores
    are never confused: fails if the hash named the wrong library's version or dropped one."""
    hashes = set()
    for cell, entry in records().items():
        pkg = entry["packages"]
        libraries = (f"(transformers={pkg['transformers']},tokenizers={pkg['tokenizers']},"
                     f"torch={Version(pkg['torch']).base_version})")
        assert entry["hashcode"].endswith(libraries), (cell, entry["hashcode"])
        hashes.add(entry["hashcode"])
    assert len(hashes) == len(CELLS)
