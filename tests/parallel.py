"""How the suite runs on every core (pytest-xdist, `make test`'s `-n auto`), as a pytest plugin.

- Each test file runs whole on one worker, so that its module fixtures (a server, a browser, a
  model, an oracle, a subprocess run that several tests read) are built once. The files in
  SPREAD_FILES are spread one test at a time: their tests share nothing costly.
- The longest files start first and the spread ones come last, so that the workers finish together.
- Each worker, and each interpreter its tests start, computes on one thread (unless a test sets
  its own count): two workers of two threads each on two cores would fight over them.

(xdist's own `--dist loadgroup` cannot group here: it renames `item._nodeid`, which pytest 9.2 no
longer reads.)
"""

from __future__ import annotations

import os

import pytest

SPREAD_FILES = ("test_docs.py",)
# By CPU seconds on two cores, their subprocesses included (docs/testing.md has the table).
LONGEST_FILES = ("test_gpu_check.py", "test_distributed.py", "test_guest_precision.py", "test_cli_resume.py",
                 "test_cli.py", "test_baseline_files.py", "test_parity.py", "test_torchmetrics.py",
                 "test_long_texts.py", "test_metric_hub.py", "test_evaluate_distributed.py", "test_families.py",
                 "test_app_browser.py")

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def start_rank(file_name: str) -> int:
    """Where a file's tests go in the run: the longest first, the spread ones last."""
    if file_name in LONGEST_FILES:
        return LONGEST_FILES.index(file_name)
    return len(LONGEST_FILES) + (1 if file_name in SPREAD_FILES else 0)


def work_unit(nodeid: str) -> str:
    """The unit one worker runs whole: the test's file, or the test itself in a spread file."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path.rsplit("/", 1)[-1] in SPREAD_FILES else path


def pytest_collection_modifyitems(config, items) -> None:
    items.sort(key=lambda item: start_rank(item.path.name))  # stable: each file keeps its own order


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
