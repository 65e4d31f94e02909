"""benchmarks/gpu_check.py --dry-run in a real subprocess, so the GPU check cannot rot between the
rare sessions that have a GPU: every section must run (or say why it is skipped) and write both files."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bertscore import BERTScorer

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
SECTIONS = ("environment", "setup", "parity", "precision", "throughput", "long_texts", "torchrun", "evaluate")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, str]:
    out = tmp_path_factory.mktemp("gpu_check")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.pop("OUT", None)
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    report = json.loads((out / "gpu_check.json").read_text(encoding="utf-8"))
    return done, report, (out / "gpu_check.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_dry_run_passes_and_writes_every_section(dry_run) -> None:
    done, report, markdown = dry_run
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert list(report["sections"]) == list(SECTIONS)
    for name, entry in report["sections"].items():
        assert entry["status"] in ("ok", "skipped"), (name, entry.get("error"))
        assert f"## {entry['title']} ({entry['status']})" in markdown
    # Only long_texts may be skipped, and only where this build lacks the option.
    has_long_texts = "long_texts" in inspect.signature(BERTScorer.__init__).parameters
    skipped = {name for name, entry in report["sections"].items() if entry["status"] == "skipped"}
    assert skipped == (set() if has_long_texts else {"long_texts"})
    if not has_long_texts:
        assert "skipped: this build has no long_texts" in markdown


@pytest.mark.slow
def test_dry_run_checks_are_real_and_cuda_parts_say_skipped(dry_run) -> None:
    _, report, markdown = dry_run
    sections = report["sections"]
    parity = sections["parity"]["checks"]
    # 4 families x (3 modes + 2 batch-invariance runs), each a measured delta that passed.
    assert len(parity) == 20 and all(c["passed"] is True for c in parity)
    assert all(isinstance(c["measured"], float) and c["measured"] <= 1e-5 for c in parity)
    # Speed targets are computed on the CPU but not judged; the official package's numbers are.
    throughput = {c["check"]: c for c in sections["throughput"]["checks"]}
    assert throughput["ours_fp32 throughput / official fp32"]["result"] == "not judged (dry run)"
    official = [c for name, c in throughput.items() if name.startswith("ours fp32 vs official fp32")]
    assert official and official[0]["passed"] is True
    assert {"official_fp32", "ours_fp32", "ours_bf16", "floor_bf16"} <= set(sections["throughput"]["data"]["methods"])
    # The torchrun runs really ran the CLI (their scores were compared with the in-process ones).
    assert [c["passed"] for c in sections["torchrun"]["checks"]] == [True, True]
    if "skipped (no CUDA)" not in markdown:
        pytest.skip("CUDA is available here: nothing is skipped for the lack of it")
    assert "nccl: skipped (no CUDA)" in markdown and "GPU: skipped (no CUDA)" in markdown
    assert report["meta"]["machine"]["cpu_model"] and "cpu_flags" in report["meta"]["machine"]
