"""The suite's own machinery: file-whole scheduling on xdist workers (tests/parallel.py), the CPU
profile per test (tests/cpu_profile.py) and the summary benchmarks/suite_time.py draws from it.

Each runs a small pytest of made-up test files in a fresh interpreter (no torch there), so that
what is checked is the plugin as pytest and xdist really drive it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parallel import LONGEST_FILES, SPREAD_FILES, spread_rank, start_rank, work_unit

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"


def _pytest(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHONPATH=str(TESTS), **env)
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_ADDOPTS", "BERTSCORE_CPU_PROFILE"):
        if name not in env:
            environment.pop(name, None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
                          cwd=folder, env=environment, capture_output=True, text=True, timeout=300)


def test_work_units_are_files_except_in_spread_files() -> None:
    assert work_unit("tests/test_cli.py::test_a[x::y]") == "tests/test_cli.py"
    spread = f"tests/{SPREAD_FILES[0]}::test_block_runs_as_pasted[README.md:59]"
    assert work_unit(spread) == spread
    assert start_rank(LONGEST_FILES[0]) == 0 < start_rank(LONGEST_FILES[1])
    assert start_rank("test_quick.py") == len(LONGEST_FILES) < start_rank(SPREAD_FILES[0])


def test_the_long_doc_blocks_go_out_first_among_the_spread_ones() -> None:
    from types import SimpleNamespace

    def item(text: str | None) -> SimpleNamespace:
        return SimpleNamespace(callspec=SimpleNamespace(params={"block": SimpleNamespace(text=text)})) if text else SimpleNamespace()

    assert spread_rank(item("import subprocess\nserver = subprocess.Popen([...])\n")) == 0
    assert spread_rank(item("OMP_NUM_THREADS=1 torchrun --nproc_per_node=2 -m bertscore -c a -r b\n")) == 0
    assert spread_rank(item("bertscore layers --model m --data d.tsv -q\n")) == 0
    assert spread_rank(item("bertscore -c a.txt -r b.txt --model m\n")) == 1
    assert spread_rank(item(None)) == 1  # a test of the spread file that is not a block


def test_each_file_runs_whole_on_one_worker_longest_first(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["parallel"]\n')
    names = ["test_quick_a.py", "test_quick_b.py", "test_quick_c.py", LONGEST_FILES[1], LONGEST_FILES[0]]
    for name in names:
        (tmp_path / name).write_text("".join(f"def test_{i}():\n    pass\n" for i in range(6)))
    done = _pytest(tmp_path, "-n", "2", "-v")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "scheduling tests via FileScheduling" in done.stdout
    workers: dict[str, set[str]] = {}
    for worker, name in re.findall(r"\[(gw\d)\] \[ *\d+%\] PASSED (\S+?)::", done.stdout):
        workers.setdefault(name, set()).add(worker)
    assert sorted(workers) == sorted(names) and all(len(found) == 1 for found in workers.values()), workers
    # -m "not slow" leaves out the longest files: they carry the mark
    quick = _pytest(tmp_path, "-q", "-m", "not slow")
    assert quick.returncode == 0 and "18 passed, 12 deselected" in quick.stdout, quick.stdout[-2000:]


def test_the_profile_has_a_line_per_test_with_its_subprocesses_cpu(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["cpu_profile"]\n')
    (tmp_path / "test_made_up.py").write_text(
        "import subprocess, sys\n"
        "def test_spins_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(30_000_000))'], check=True)\n"
        "def test_quick():\n"
        "    pass\n")
    profile = tmp_path / "cpu.jsonl"
    done = _pytest(tmp_path, "-q", BERTSCORE_CPU_PROFILE=str(profile))
    assert done.returncode == 0, done.stdout[-2000:]
    records = {r["test"]: r for r in map(json.loads, profile.read_text().splitlines())}
    assert set(records) == {"test_made_up.py::test_spins_a_child", "test_made_up.py::test_quick"}
    spinner, quick = records["test_made_up.py::test_spins_a_child"], records["test_made_up.py::test_quick"]
    assert spinner["children_cpu_s"] > 0.2 and quick["children_cpu_s"] == 0
    assert spinner["wall_s"] >= spinner["children_cpu_s"] * 0.5 and quick["worker"] == "main"
    assert not _pytest(tmp_path, "-q").returncode and profile.read_text().count("\n") == 2  # off: nothing added


@pytest.fixture(scope="module")
def suite_time():
    spec = importlib.util.spec_from_file_location("suite_time", ROOT / "benchmarks" / "suite_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suite_time_sums_the_profile_by_file(suite_time, tmp_path: Path) -> None:
    lines = [{"test": "tests/test_a.py::t1", "worker": "gw0", "wall_s": 1.0, "cpu_s": 0.5, "children_cpu_s": 2.0},
             {"test": "tests/test_b.py::t1[x::y]", "worker": "gw1", "wall_s": 0.2, "cpu_s": 0.1, "children_cpu_s": 0},
             {"test": "tests/test_a.py::t2", "worker": "gw0", "wall_s": 3.0, "cpu_s": 1.0, "children_cpu_s": 0.25}]
    profile = tmp_path / "cpu.jsonl"
    profile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert suite_time.by_file(profile) == [
        {"file": "tests/test_a.py", "tests": 2, "cpu_s": 3.8, "wall_s": 4.0},
        {"file": "tests/test_b.py", "tests": 1, "cpu_s": 0.1, "wall_s": 0.2}]


def test_suite_time_reads_pytests_summary(suite_time, tmp_path: Path) -> None:
    (tmp_path / "test_made_up.py").write_text(
        "import pytest\ndef test_ok():\n    pass\ndef test_bad():\n    assert 0\n"
        "def test_skipped():\n    pytest.skip('no')\n")
    run = suite_time.run_suite(tmp_path, "python -m pytest -q -p no:cacheprovider", None, busy=False)
    assert run["exit_code"] == 1 and run["counts"] == {"passed": 1, "failed": 1, "skipped": 1}
    assert run["pytest_s"] is not None and run["pytest_s"] <= run["wall_s"] and run["cpu_s"] > 0
