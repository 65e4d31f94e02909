"""benchmarks/harness.py, the one harness of the benchmarks: its memory probe measures the process
it is asked about (not the launcher's high-water mark) and each kind of memory as what it is, a
child is timed and probed as itself, its rounds interleave, its tables escape."""

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


def test_a_polled_child_s_peak_is_its_own_and_its_cpu_time_is_counted() -> None:
    """run_child reads the child's VmHWM while it runs: the 200 MiB it touched, not the launcher's
    500 MiB; its CPU seconds come from wait4; a timeout kills it; check stops the run."""
    harness = _harness()
    held = bytearray(500 * MIB)
    held[::4096] = b"\1" * len(held[::4096])
    code = ("import time; block = bytearray(200 * 2**20); block[::4096] = b'\\1' * len(block[::4096]); "
            "start = time.process_time()\nwhile time.process_time() - start < 0.3: pass\nprint('done')")
    done = harness.run_child([sys.executable, "-c", code])
    del held
    assert done.returncode == 0 and done.stdout == "done\n" and done.cpu >= 0.3, done
    assert 200 * MIB <= done.peak < 350 * MIB, done
    killed = harness.run_child([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert killed.returncode == -9 and killed.wall < 30
    try:
        harness.run_child([sys.executable, "-c", "import sys; sys.exit('went wrong')"], check=True)
    except SystemExit as stop:
        assert "went wrong" in str(stop)
    else:
        raise AssertionError("check=True let a failed child pass")


def test_json_child_reads_the_last_json_line_and_raises_with_the_error_output() -> None:
    """json_child, the child runner of memory.py, all_pairs.py, long_texts.py and per_call.py (through
    run_child): the child finds the benchmarks on its path, gets its arguments, input and threads, and
    a failure or a timeout says so."""
    import pytest

    harness = _harness()
    code = ("import json, harness\nprint('{not this line}')\n"
            "print(json.dumps({'args': sys.argv[1:], 'threads': torch.get_num_threads(), 'stdin': sys.stdin.read()}))")
    got = harness.json_child(code, "a", "b c", threads=1, stdin="texts")
    assert got == {"args": ["a", "b c"], "threads": 1, "stdin": "texts"}
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        harness.json_child("1 / 0", threads=1)
    with pytest.raises(subprocess.TimeoutExpired):
        harness.json_child("import time\ntime.sleep(60)", threads=1, timeout=1)


def test_python_and_tensor_peaks_are_what_was_allocated_inside_the_block() -> None:
    """kind="python": tracemalloc's peak (a 50 MiB bytes object freed inside the block still counts);
    kind="tensors": the live CPU storages (two 4 MiB tensors alive at once), named where they were made."""
    import tracemalloc

    import torch

    harness = _harness()
    with harness.PeakMemory(kind="python") as python:
        block = bytearray(50 * MIB)
        del block
    assert 50 * MIB <= python.peak < 55 * MIB and not tracemalloc.is_tracing()
    with harness.PeakMemory(kind="tensors") as tensors:
        first = torch.ones(MIB)  # float32: 4 MiB
        second = torch.zeros(MIB)
        del first, second
        third = torch.ones(MIB // 2)
    assert tensors.peak == 8 * MIB and [entry[0] for entry in tensors.at_peak] == [4 * MIB, 4 * MIB], tensors.at_peak
    assert {entry[1].split(" ")[0] for entry in tensors.at_peak} == {"ones.default", "zeros.default"}
    del third


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
    walls, cpus, last = harness.repeated(lambda: calls.append("c") or len(calls), 4)
    assert calls[-4:] == ["c"] * 4 and last == len(calls) and len(walls) == len(cpus) == 4


def test_clocked_counts_the_time_inside_the_named_functions_and_puts_them_back() -> None:
    """clocked(owner, *names): every call of the named functions inside the block is timed (a class's own
    function and an instance attribute alike), and afterwards the owner is as before."""
    import time

    harness = _harness()

    class Owner:
        def slow(self) -> str:
            time.sleep(0.05)
            return "slow"

    plain = Owner.slow
    with harness.clocked(Owner, "slow") as spent:
        assert [Owner().slow(), Owner().slow()] == ["slow", "slow"]
    assert 0.1 <= spent["slow"] < 10 and Owner.slow is plain
    instance = Owner()  # `slow` comes from its class: wrapped on the instance, then removed from it
    with harness.clocked(instance, "slow") as inside:
        instance.slow()
    assert inside["slow"] >= 0.05 and "slow" not in vars(instance) and instance.slow() == "slow"


def test_a_table_escapes_a_pipe_inside_a_cell() -> None:
    harness = _harness()
    assert harness.table(["check", "max |delta|"], [["x", 1e-7], ["a|b", "c"]]) == [
        "| check | max \\|delta\\| |", "|---|---|", "| x | 1e-07 |", "| a\\|b | c |"]
