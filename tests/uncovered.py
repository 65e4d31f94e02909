"""What this run did not cover, printed as its last lines (after pytest's own summary), one line each.

A plain `make test` leaves doors untested on a plain machine: the Ray Data door (`make test-ray` runs
it), the Space in a browser (skipped where there is no chromium, or on request), the CUDA paths (no GPU
here), and whatever else skipped for a reason of the environment. The lines come from this run's own
skips (and, for CUDA, from torch on this machine), so a door that ran is not named: with chromium
present, the browser line does not appear. CI runs every one of them (.ci/run).
"""

from __future__ import annotations

import sys
from collections import defaultdict

import pytest

_SKIPPED: list[tuple[str, str]] = []  # (node id, reason) of each skip this run reported

RAY_TESTS = "tests/test_ray_data.py"
BROWSER_TESTS = "tests/test_app_browser.py"


def _reason(report) -> str:
    longrepr = report.longrepr
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def pytest_runtest_logreport(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail") and report.when in ("setup", "call"):
        _SKIPPED.append((report.nodeid, _reason(report)))


def pytest_collectreport(report) -> None:
    if report.skipped:
        _SKIPPED.append((report.nodeid, _reason(report)))


def _tests(count: int) -> str:
    return f"{count} test{'s' if count != 1 else ''}"


def uncovered(skipped: list[tuple[str, str]], cuda: bool) -> list[str]:
    """One line per door or reason this run did not cover: `skipped` its (node id, reason) pairs,
    `cuda` whether a CUDA device was visible."""
    lines, rest = [], defaultdict(list)
    ray = [node for node, reason in skipped if node.startswith(RAY_TESTS) or "make test-ray" in reason]
    if ray:
        lines.append(f"not covered: the Ray Data door ({RAY_TESTS} and its doc block): run `make test-ray`")
    browser = [(node, reason) for node, reason in skipped if node.startswith(BROWSER_TESTS)]
    if browser:
        reasons = sorted({reason for _, reason in browser})
        lines.append(f"not covered: the Space in a browser ({BROWSER_TESTS}, {_tests(len(browser))}): "
                     + "; ".join(reasons))
    if not cuda:
        gpu = [node for node, reason in skipped if "cuda" in reason.lower() or "gpu" in reason.lower()]
        lines.append("not covered: the CUDA paths: no CUDA device here" + (
            f" ({_tests(len(gpu))} skipped for it)" if gpu else "") + "; a GPU machine runs them")
    for node, reason in skipped:
        if node not in ray and (node, reason) not in browser and "cuda" not in reason.lower() \
                and "gpu" not in reason.lower():
            rest[reason].append(node)
    for reason, nodes in sorted(rest.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"not covered: {_tests(len(nodes))} ({nodes[0].split('::')[0]}"
                     f"{', ...' if len({n.split('::')[0] for n in nodes}) > 1 else ''}): {reason}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config) -> None:
    """After pytest's summary (its last line): what this run did not cover. In the controller only
    (an xdist worker's reports reach the controller, which prints)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if hasattr(config, "workerinput") or reporter is None:
        return
    torch = sys.modules.get("torch")
    cuda = bool(torch is not None and torch.cuda.is_available())
    lines = uncovered(_SKIPPED, cuda)
    if lines:
        reporter.write_sep("-", "what this run did not cover")
        for line in lines:
            reporter.write_line(line)
