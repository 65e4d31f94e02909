"""How the suite runs on every core (pytest-xdist, `make test`'s `-n auto`), as a pytest plugin.

- Each test file runs whole on one worker, so that its module fixtures (a server, a browser, a
  model, an oracle, a subprocess run that several tests read) are built once. The files in
  SPREAD_FILES are spread one test at a time: their tests share nothing costly.
- The longest files start first and the spread ones come last, the long doc blocks among them first
  (LONG_BLOCK_WORDS), so that the workers finish together.
- The tests of those longest files and the doc blocks carry the `slow` mark (the end-to-end
  groups: interpreters, servers, the official package on real sentences), so that
  `pytest -n auto -m "not slow"` runs the quick rest while iterating.
- Each worker, and each interpreter its tests start, computes on one thread (unless a test sets
  its own count): two workers of two threads each on two cores would fight over them.

(xdist's own `--dist loadgroup` cannot group here: it renames `item._nodeid`, which pytest 9.2 no
longer reads.)
"""

from __future__ import annotations

import os
import sys

import pytest

SPREAD_FILES = ("test_docs.py",)
SPREAD_SLOW_TESTS = ("test_block_runs_as_pasted",)  # a test of a spread file that is slow: an interpreter each
# The files that take about 6 seconds or more on their worker (wall, on two cores), longest first
# (docs/testing.md has the table and how it was measured).
LONGEST_FILES = ("test_gpu_check.py", "test_distributed.py", "test_families.py", "test_parity.py",
                 "test_metric_hub.py", "test_guest_precision.py", "test_cli.py", "test_app_browser.py",
                 "test_cli_resume.py", "test_own_caches.py", "test_torchmetrics.py", "test_dropin.py",
                 "test_dropin_helpers.py", "test_long_texts.py", "test_notes.py", "test_layers.py",
                 "test_stats_doors.py", "test_reward.py", "test_cli_layers.py", "test_app_api.py",
                 "test_plot.py", "test_warm_python.py", "test_evaluate_distributed.py", "test_cli_guest.py",
                 "test_cli_progress.py", "test_output_files.py", "test_cli_tables.py",
                 "test_guest_attention.py", "test_baseline_files.py")

if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"  # read by torch when it loads, and by every interpreter a test starts
    if "torch" in sys.modules:  # loaded already (by another plugin): set its count directly
        sys.modules["torch"].set_num_threads(1)


def start_rank(file_name: str) -> int:
    """Where a file's tests go in the run: the longest first, the spread ones last."""
    if file_name in LONGEST_FILES:
        return LONGEST_FILES.index(file_name)
    return len(LONGEST_FILES) + (1 if file_name in SPREAD_FILES else 0)


def work_unit(nodeid: str) -> str:
    """The unit one worker runs whole: the test's file, or the test itself in a spread file."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path.rsplit("/", 1)[-1] in SPREAD_FILES else path


# Words of a doc block that starts programs of its own (a server, ranks, a test run) or computes at
# length: such blocks are sent out first among the spread ones, so that none is the last to finish.
LONG_BLOCK_WORDS = ("subprocess", "torchrun", "pytest", "benchmarks/", "bertscore layers")


def spread_rank(item) -> int:
    """Within the spread files: the long doc blocks first (0), the rest after (1)."""
    block = getattr(getattr(item, "callspec", None), "params", {}).get("block")
    text = getattr(block, "text", "")
    return 0 if any(word in text for word in LONG_BLOCK_WORDS) else 1


def pytest_collection_modifyitems(config, items) -> None:
    # stable: each file keeps its own order, but for the long doc blocks ahead of the others
    items.sort(key=lambda item: (start_rank(item.path.name), spread_rank(item) if item.path.name in SPREAD_FILES else 0))
    for item in items:
        if item.path.name in LONGEST_FILES or getattr(item, "originalname", item.name) in SPREAD_SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With plain `-n N` (xdist's "load"), schedule by work_unit, in the order of the collection."""
    if config.getvalue("dist") != "load":
        return None  # an explicit --dist is the caller's choice
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    config.option.loadscopereorder = False  # keep start_rank's order (xdist would sort by test count)
    return FileScheduling(config, log)
