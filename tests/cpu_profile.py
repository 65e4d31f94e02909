"""An opt-in pytest plugin: the CPU seconds each test costs, its subprocesses included.

`BERTSCORE_CPU_PROFILE=cpu.jsonl make test` appends one JSON line per test (setup, call and
teardown together): wall seconds, this process's CPU seconds and its waited-for children's. On two
cores the suite's time is its CPU: this says where that goes (docs/testing.md).
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

PROFILE_PATH = os.environ.get("BERTSCORE_CPU_PROFILE")


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not PROFILE_PATH:
        yield
        return
    wall, own, children = time.perf_counter(), _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
    yield
    record = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
              "wall_s": round(time.perf_counter() - wall, 3),
              "cpu_s": round(_cpu_seconds(resource.RUSAGE_SELF) - own, 3),
              "children_cpu_s": round(_cpu_seconds(resource.RUSAGE_CHILDREN) - children, 3)}
    with open(PROFILE_PATH, "a", encoding="utf-8") as handle:  # one short line per write: safe to share
        handle.write(json.dumps(record) + "\n")
