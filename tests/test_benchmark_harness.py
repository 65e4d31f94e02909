"""benchmarks/harness.py, the one harness of the benchmarks: its memory probe measures the process
it is asked about (not the launcher's high-water mark), its rounds interleave, its tables escape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
MIB = 2**20


def _harness():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import harness
    finally:
        sys.path.remove(str(BENCHMARKS))
    return harness


def _child(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r})\n{code}"],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_child_s_peak_is_its_own_not_the_launcher_s() -> None:
    """Linux carries the launching process's high-water mark across fork and exec into the child's
    ru_maxrss; the probe reads the child's own (VmHWM). The launcher holds 300 MiB, the child ~20."""
    held = bytearray(300 * MIB)
    held[::4096] = b"\1" * len(held[::4096])  # touched: resident
    got = _child("import json, psutil, harness\n"
                 "now = psutil.Process().memory_info().rss\n"
                 "print(json.dumps({'now': now, 'peak': harness.peak_rss()}))")
    assert got["now"] <= got["peak"] < 150 * MIB, got
    del held


def test_a_block_s_peak_is_what_it_held_and_the_next_block_starts_afresh() -> None:
    got = _child(
        "import json, psutil, harness\n"
        "before = psutil.Process().memory_info().rss\n"
        "with harness.PeakMemory() as first:\n"
        "    block = bytearray(200 * 2**20); block[::4096] = b'\\1' * len(block[::4096]); del block\n"
        "with harness.PeakMemory() as second:\n"
        "    pass\n"
        "print(json.dumps({'before': before, 'first': first.peak, 'second': second.peak,\n"
        "                  'after': psutil.Process().memory_info().rss}))")
    assert got["first"] >= got["before"] + 190 * MIB, got  # psutil's RSS before + the 200 MiB it touched
    assert got["second"] < got["first"] - 150 * MIB and got["second"] >= got["after"] - 16 * MIB, got


def test_rounds_interleave_and_time_every_call() -> None:
    harness = _harness()
    calls: list[str] = []
    seconds, outputs = harness.interleaved({"a": lambda: calls.append("a") or 1, "b": lambda: calls.append("b") or 2},
                                           rounds=3)
    assert calls == ["a", "b"] * 3 and outputs == {"a": 1, "b": 2}
    assert [len(v) for v in seconds.values()] == [3, 3] and all(s >= 0 for v in seconds.values() for s in v)
    synced: list[int] = []
    wall, cpu, out = harness.timed(lambda: sum(range(10**6)), sync=lambda: synced.append(1), cpu=True)
    assert out == sum(range(10**6)) and synced == [1, 1] and wall > 0 and cpu >= 0


def test_a_table_escapes_a_pipe_inside_a_cell() -> None:
    harness = _harness()
    assert harness.table(["check", "max |delta|"], [["x", 1e-7], ["a|b", "c"]]) == [
        "| check | max \\|delta\\| |", "|---|---|", "| x | 1e-07 |", "| a\\|b | c |"]
