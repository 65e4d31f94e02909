"""Benchmarks write to the git-ignored benchmarks/scratch/ unless asked (--update-results) to rewrite
the tracked figures in benchmarks/results/: one switch, in benchmarks/machine.py, used by every script."""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _machine():
    spec = importlib.util.spec_from_file_location("benchmarks_machine", BENCHMARKS / "machine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _folder(machine, argv: list[str], capsys) -> tuple[Path, str]:
    parser = argparse.ArgumentParser()
    machine.add_output_options(parser)
    folder = machine.output_folder(parser.parse_args(argv))
    return folder, capsys.readouterr().out


def test_the_switch_chooses_the_folder_and_says_which(tmp_path, capsys) -> None:
    machine = _machine()
    folder, said = _folder(machine, [], capsys)
    assert folder == ROOT / "benchmarks" / "scratch" and f"results go to {folder}" in said and "--update-results" in said
    folder, said = _folder(machine, ["--update-results"], capsys)
    assert folder == ROOT / "benchmarks" / "results" and f"results go to {folder}" in said
    folder, said = _folder(machine, ["--out", str(tmp_path)], capsys)
    assert folder == tmp_path and str(tmp_path) in said
    with pytest.raises(SystemExit):
        _folder(machine, ["--out", str(tmp_path), "--update-results"], capsys)


def test_scratch_is_ignored_by_git() -> None:
    done = subprocess.run(["git", "check-ignore", "-q", "benchmarks/scratch/speed_cpu.md"], cwd=ROOT)
    assert done.returncode == 0, "benchmarks/scratch/ must be git-ignored"


def test_begin_takes_the_switch_and_says_where_results_go(tmp_path, capsys) -> None:
    """machine.begin, every benchmark's opening, adds the same switch and sets args.out to its folder."""
    machine = _machine()
    args, folder, info = machine.begin(argparse.ArgumentParser(), ["--out", str(tmp_path)], threads=1, data=True,
                                       threads_elsewhere=True)  # recorded, not set: this process keeps its threads
    said = capsys.readouterr().out
    assert folder == args.out == tmp_path and f"results go to {tmp_path}" in said and info["cpu_model"] in said
    assert args.threads == 1 and info["torch_threads"] == 1 and args.data.name == "data"
    args, folder, _ = machine.begin(argparse.ArgumentParser(), ["--update-results"])
    assert folder == ROOT / "benchmarks" / "results"


def test_every_benchmark_that_writes_results_takes_the_one_switch() -> None:
    """A script with its own default folder would rewrite tracked results again when merely tried."""
    missing, own_folder = [], []
    for path in sorted(BENCHMARKS.glob("*.py")):
        if path.name == "machine.py":
            continue
        text = path.read_text(encoding="utf-8")
        if "write_results(" in text or "write_text(" in text:
            if "begin(parser" not in text and ("add_output_options(parser)" not in text
                                               or "output_folder(args)" not in text):
                missing.append(path.name)
        if '"benchmarks" / "results"' in text:
            own_folder.append(path.name)
    assert missing == [] and own_folder == []
