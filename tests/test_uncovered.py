"""tests/uncovered.py: a run ends with what it did not cover, one line each, from that run's own skips."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from conftest import REPO_ROOT
from uncovered import uncovered

SEPARATOR = "what this run did not cover"


def test_each_door_left_out_is_one_line_and_a_door_that_ran_is_not_named() -> None:
    skipped = [("tests/test_ray_data.py", "the Ray Data door's tests run in make test-ray (BERTSCORE_RAY_TESTS=1)"),
               ("tests/test_docs.py::test_block[scaling-out.md:3]", "needs the ray extra: make test-ray runs it"),
               ("tests/test_app_browser.py", "no browser: looked for chromium"),
               ("tests/test_guest_precision.py::test_autocast", "needs a CUDA GPU: CUDA autocast cannot be entered"),
               ("tests/test_a.py::t1", "real WMT17 data not found at /x"),
               ("tests/test_b.py::t2", "real WMT17 data not found at /x")]
    lines = uncovered(skipped, cuda=False)
    assert lines == [
        "not covered: the Ray Data door (tests/test_ray_data.py and its doc block): run `make test-ray`",
        "not covered: the Space in a browser (tests/test_app_browser.py, 1 test): no browser: looked for chromium",
        "not covered: the CUDA paths: no CUDA device here (1 test skipped for it); a GPU machine runs them",
        "not covered: 2 tests (tests/test_a.py, ...): real WMT17 data not found at /x"]
    ran_everywhere = uncovered([s for s in skipped if "browser" not in s[0] and "CUDA" not in s[1]], cuda=True)
    assert not any("browser" in line or "CUDA" in line for line in ran_everywhere) and len(ran_everywhere) == 2
    assert uncovered([], cuda=True) == []


def _last_lines(args: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=600)  # a hang guard only
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]  # 5: every test skipped
    lines = done.stdout.strip().splitlines()
    assert any(SEPARATOR in line for line in lines), lines[-10:]
    return lines[[k for k, line in enumerate(lines) if SEPARATOR in line][-1] + 1:]


@pytest.mark.slow
def test_a_real_run_ends_with_what_it_skipped_and_nothing_it_ran() -> None:
    """pytest on two files that skip here (under xdist, as make test runs it): the Ray line, the browser
    line with its reason, after pytest's own summary; a run of the Ray file alone names no browser."""
    env = {key: value for key, value in os.environ.items() if key not in ("BERTSCORE_RAY_TESTS", "PYTEST_XDIST_WORKER")}
    env.update(BERTSCORE_SKIP_BROWSER="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    cuda = ["not covered: the CUDA paths: no CUDA device here; a GPU machine runs them"] * (not torch.cuda.is_available())
    both = _last_lines(["-n", "2", "tests/test_ray_data.py", "tests/test_app_browser.py"], env)
    assert both == ["not covered: the Ray Data door (tests/test_ray_data.py and its doc block): run `make test-ray`",
                    "not covered: the Space in a browser (tests/test_app_browser.py, 1 test): BERTSCORE_SKIP_BROWSER=1: "
                    "browser tests skipped on request (unset it, and have Debian's chromium, to run them)", *cuda]
    alone = _last_lines(["tests/test_ray_data.py"], env)
    assert alone == [both[0], *cuda]
