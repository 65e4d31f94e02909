"""The command line: formats, multi-reference files, errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.cli import main
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
CANDS, REFS, REFS2 = (str(EXAMPLES / n) for n in ("candidates.txt", "references.txt", "references2.txt"))
MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4"]


def _lines(path: str) -> list[str]:
    return open(path, encoding="utf-8").read().splitlines()


def test_json_equals_the_python_api(minilm_scorer, capsys):
    assert main(["-c", CANDS, "-r", REFS, REFS2, *MODEL, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    refs = [[a, b] for a, b in zip(_lines(REFS), _lines(REFS2))]
    p, r, f = minilm_scorer.score(_lines(CANDS), refs)
    assert torch.allclose(torch.tensor(out["f1"]), f, atol=1e-6)
    assert torch.allclose(torch.tensor(out["precision"]), p, atol=1e-6)
    assert out["hashcode"] == minilm_scorer.hash
    assert out["mean"]["f1"] == pytest.approx(f.mean().item(), abs=1e-6)


def test_jsonl_tsv_and_text_formats(tmp_path, capsys):
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--format", "jsonl", "--idf"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2, 3]
    assert "_idf_" in captured.err and "mean over 4 pairs" in captured.err
    out = tmp_path / "scores.tsv"
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--format", "tsv", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "index\tprecision\trecall\tf1" and len(lines) == 5
    assert main(["-c", CANDS, "-r", REFS, *MODEL]) == 0
    text = capsys.readouterr().out
    assert "F1=" in text and "hash: " in text


def test_stdin_candidates():
    result = subprocess.run(
        [sys.executable, "-m", "bertscore", "-c", "-", "-r", REFS, *MODEL, "--format", "tsv"],
        input=open(CANDS, encoding="utf-8").read(), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 5


@pytest.mark.parametrize(
    "make_args, message",
    [
        (lambda t: ["-c", str(t / "missing.txt"), "-r", REFS], "file not found"),
        (lambda t: ["-c", str(t / "short.txt"), "-r", REFS], "differ in length"),
        (lambda t: ["-c", str(t / "latin1.txt"), "-r", str(t / "latin1.txt")], "line 2: not valid UTF-8"),
        (lambda t: ["-c", CANDS, "-r", REFS, "--resume"], "--resume needs --output"),
        (lambda t: ["-c", str(t / "empty.txt"), "-r", str(t / "empty.txt")], "has no lines"),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path, capsys, make_args, message):
    (tmp_path / "short.txt").write_text("only one line\n", encoding="utf-8")
    (tmp_path / "latin1.txt").write_bytes("caf\n caf\xe9\n".encode("latin-1"))
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    assert main([*make_args(tmp_path), *MODEL]) == 2
    assert message in capsys.readouterr().err


def test_missing_model_and_lang_exits_2(capsys):
    assert main(["-c", CANDS, "-r", REFS]) == 2
    assert "--model or --lang" in capsys.readouterr().err


def test_rescale_without_baseline_exits_2(capsys):
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--rescale-with-baseline"]) == 2
    assert "no packaged rescale baseline" in capsys.readouterr().err
