"""benchmarks/gpu_check.py --dry-run in a real subprocess, so the GPU check cannot rot between the
rare sessions that have a GPU: every section must run (or say why it is skipped) and write both files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.py"
SECTIONS = ("environment", "setup", "parity", "probe", "official", "options", "torchrun", "evaluate", "precision",
            "long_texts", "all_pairs", "per_call", "memory", "throughput")


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, str]:
    out = tmp_path_factory.mktemp("gpu_check")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
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
    # The dry run has no time budget and this tree every option: no section is skipped.
    assert [name for name, entry in report["sections"].items() if entry["status"] == "skipped"] == []


@pytest.mark.slow
def test_dry_run_checks_are_real_and_cuda_parts_say_skipped(dry_run) -> None:
    _, report, markdown = dry_run
    sections = report["sections"]
    parity = sections["parity"]["checks"]
    # 8 families (MiniLM, the large BERT, 3 tokenizer kinds, 3 convolution families) x (3 modes +
    # 2 batch-invariance runs), each a measured delta that passed.
    assert len(parity) == 40 and all(c["passed"] is True for c in parity)
    assert all(isinstance(c["measured"], float) and c["measured"] <= 1e-5 for c in parity)
    # Speed targets are computed on the CPU but not judged; the official package's numbers are.
    throughput = {c["check"]: c for c in sections["throughput"]["checks"]}
    fp32 = throughput["ours_fp32 throughput / official fp32 (the same fp32 matmuls)"]
    assert fp32["result"] == "not judged (dry run)" and fp32["target"] == ">= 0.95"
    assert {"ours_fp32", "ours_bf16", "ours_bf16_budget"} == set(sections["throughput"]["data"]["phases"])
    for phases in sections["throughput"]["data"]["phases"].values():
        assert set(phases) == {"tokenize", "tokenize_ahead", "tokenize_wait", "encode", "match", "other", "total"} and phases["encode"] > 0
    assert {"official_fp32", "ours_fp32", "ours_bf16", "floor_fp32", "floor_bf16"} <= set(
        sections["throughput"]["data"]["methods"])
    assert {"official_fp32", "ours_fp32", "ours_bf16_budget"} == set(sections["per_call"]["data"]["seconds"])
    assert sections["all_pairs"]["data"]["all_pairs_phases"]["matmul_flops_per_s"] > 0
    # The torchrun runs really ran the CLI (their scores were compared with the in-process ones),
    # two ranks among them.
    assert [c["passed"] for c in sections["torchrun"]["checks"]] == [True, True, True]
    assert any("2 ranks over gloo" in c["check"] for c in sections["torchrun"]["checks"])
    if "skipped (no CUDA)" not in markdown:
        pytest.skip("CUDA is available here: nothing is skipped for the lack of it")
    assert "nccl: skipped (no CUDA)" in markdown and "GPU: skipped (no CUDA)" in markdown
    assert report["meta"]["machine"]["cpu_model"] and "cpu_flags" in report["meta"]["machine"]


@pytest.mark.slow
def test_dry_run_covers_the_new_sections(dry_run) -> None:
    """The official package at batch_size=1 with convolutions in fp32 (and its TF32 default as a
    figure), the probe's verdicts, the options, memory at two sizes with the same longest texts: each ran and passed."""
    _, report, _ = dry_run
    sections = report["sections"]
    official = {c["check"]: c for c in sections["official"]["checks"]}
    for family in ("minilm", "bert", "squeezebert", "convbert", "deberta-v2-conv"):
        assert official[f"{family}: ours vs official, convolutions fp32 on both sides"]["passed"] is True
    figures = [c for c in official.values() if "torch's default" in c["check"]]
    assert len(figures) == 3 and all(c["passed"] is None for c in figures)
    probe = sections["probe"]["checks"]
    assert len(probe) == 8 and all(c["passed"] is True for c in probe)
    assert {c["measured"] for c in probe if c["check"].startswith("convbert")} == {"one length"}
    options = [c["check"] for c in sections["options"]["checks"] if c["passed"] is True]
    for part in ("all_layers: ours vs official", "dtype='auto' picks", "cache_device='cpu'", "read by a CPU scorer",
                 "explain_pair", "caller's TF32", "caller's matmul precision after"):
        assert any(check.startswith(part) or part in check for check in options), part
    rows = sections["memory"]["tables"][0]["rows"]
    assert [row[1] for row in rows] == [12, 12, 48]
    # The judged small set holds the large set's longest texts: only the corpus size differs.
    assert rows[1][2] == rows[2][2] > rows[0][2]


def test_the_run_is_planned_within_eight_minutes() -> None:
    """Every section has a planned time, and the plan (setup included) fits the 8 minutes of one run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.pop(0)
    assert set(gpu_check.PLANNED_S) == set(gpu_check.SECTIONS) == set(SECTIONS[2:])
    assert gpu_check.SETUP_PLANNED_S + sum(gpu_check.PLANNED_S.values()) <= gpu_check.PLAN_LIMIT_S == 480
    assert list(gpu_check.SECTIONS)[-2:] == ["memory", "throughput"]  # the costly ones last


def test_the_models_folder_never_has_t5_in_its_path(monkeypatch, tmp_path_factory) -> None:
    """The official package loads any model path containing "t5" as a T5 encoder: a random temporary
    name such as gpu-check-ab_t5xyz made the dry run's official BERT a T5 (a failure 1 run in ~200)."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("gpu_check_under_test", SCRIPT)
    gpu_check = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, gpu_check)  # its dataclasses look their module up
    spec.loader.exec_module(gpu_check)
    tmp_path = tmp_path_factory.mktemp("scratch")  # tmp_path would name this test, "t5" and all
    names = iter([tmp_path / "gpu-check-ab_t5xyz", tmp_path / "gpu-check-plain"])

    def made(prefix: str = "") -> str:
        path = next(names)
        path.mkdir()
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", made)
    assert gpu_check.model_scratch_folder() == tmp_path / "gpu-check-plain"
    assert not (tmp_path / "gpu-check-ab_t5xyz").exists()  # the rejected one is not left behind
