"""Baseline files are checked on read, packaged or custom, at every door (API, evaluate, CLI,
Space): every value finite and below 1, LAYER labels equal to row positions from 0, enough rows
for the layer asked. A malformed file is an error naming the file, the line and the value
(exit code 2 at the CLI), never NaN or inf scores, never another layer's row.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import evaluate
import pytest

import app
from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, baselines
from bertscore.scoring import baseline_tables
from bertscore.cli import main as cli_main
from bertscore.space.messages import UserError
from conftest import REPO_ROOT

METRIC_PATH = str(REPO_ROOT / "bertscore_metric.py")
LAYER = 4  # the layer asked at every door; MiniLM has layers 0..6
GOOD_ROW = "0.8,0.81,0.82"


def _file(rows: list[str]) -> str:
    return "LAYER,P,R,F\n" + "".join(f"{row}\n" for row in rows)


def _rows(values: dict[int, str] | None = None, labels: list[str] | None = None, count: int = 7) -> list[str]:
    values = values or {}
    labels = labels or [str(i) for i in range(count)]
    return [f"{label},{values.get(i, GOOD_ROW)}" for i, label in enumerate(labels)]


# kind -> (file text, the words the error must hold besides the file name)
MALFORMED = {
    "nan": (_file(_rows({3: "nan,0.8,0.8"})), ["line 5", "P = 'nan'", "not finite"]),
    "inf": (_file(_rows({LAYER: "0.8,inf,0.8"})), ["line 6", "R = 'inf'", "not finite"]),
    "one": (_file(_rows({LAYER: "0.8,0.8,1.0"})), ["line 6", "F = '1.0'", "not below 1"]),
    "above_one": (_file(_rows({0: "1.5,0.8,0.8"})), ["line 2", "P = '1.5'", "not below 1"]),
    "labels_6_to_0": (_file(_rows(labels=[str(i) for i in range(6, -1, -1)])), ["line 2", "labelled '6'"]),
    "labels_0_to_5_and_7": (_file(_rows(labels=["0", "1", "2", "3", "4", "5", "7"])), ["line 8", "labelled '7'"]),
    "too_few_rows": (_file(_rows(count=3)), ["3 rows", f"not layer {LAYER}"]),
    "not_a_number": (_file(_rows({2: "0.8,abc,0.8"})), ["line 4", "R = 'abc'", "not a number"]),
    "label_not_a_number": (_file(_rows(labels=["0", "1", "x", "3", "4", "5", "6"])), ["line 4", "'x'"]),
    "three_fields": (_file(_rows()[:2] + ["2,0.8,0.8"] + _rows()[3:]), ["line 4", "4 fields, got 3"]),
    "no_rows": (_file([]), ["no rows"]),
    "bad_header": ("L,P,R,F\n" + "".join(f"{row}\n" for row in _rows()), ["line 1", "header"]),
    # below 1 as written, exactly 1 in float32 (the precision rescaling uses): a division by zero
    "one_in_float32": (_file(_rows({LAYER: "0.8,0.999999999,0.8"})), ["line 6", "R = '0.999999999'", "1 in float32"]),
    # finite as written, -inf in float32: (x + inf) / (1 + inf) is NaN
    "overflows_float32": (_file(_rows({LAYER: "-1e39,0.8,0.8"})), ["line 6", "P = '-1e39'", "not finite in float32"]),
    "underscore_in_value": (_file(_rows({1: "0.8_1,0.8,0.8"})), ["line 3", "P = '0.8_1'", "plain decimal"]),
    "arabic_digit_label": (_file(_rows(labels=["0", "1", "\u0662", "3", "4", "5", "6"])), ["line 4", "whole number"]),
}


@pytest.fixture(params=sorted(MALFORMED))
def malformed(request, tmp_path) -> tuple[Path, list[str]]:
    text, words = MALFORMED[request.param]
    path = tmp_path / f"{request.param}.tsv"
    path.write_text(text, encoding="utf-8")
    return path, words


def _assert_names(message: str, path: Path, words: list[str]) -> None:
    assert str(path) in message, message
    for word in words:
        assert word in message, (word, message)


def test_the_api_refuses_a_malformed_file(malformed) -> None:
    path, words = malformed
    with pytest.raises(ValueError) as raised:
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, rescale_with_baseline=True,
                   baseline_path=str(path), device="cpu")
    _assert_names(str(raised.value), path, words)


def test_load_baseline_refuses_it_without_a_model(malformed) -> None:
    path, words = malformed
    if path.stem == "too_few_rows":  # about the layer asked: the file itself is well formed
        table = baselines.load_baseline(path)
        with pytest.raises(ValueError) as raised:
            baselines.baseline_rows(table, LAYER, path)
    else:
        with pytest.raises(ValueError) as raised:
            baselines.load_baseline(path)
    _assert_names(str(raised.value), path, words)


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(METRIC_PATH)


def test_the_evaluate_module_refuses_a_malformed_file(metric, malformed) -> None:
    path, words = malformed
    with pytest.raises(ValueError) as raised:
        metric.compute(predictions=["a cat sat"], references=["the cat sat"], model_type=EMBEDDED_MODEL_NAME,
                       num_layers=LAYER, rescale_with_baseline=True, baseline_path=str(path), device="cpu")
    _assert_names(str(raised.value), path, words)


def _cli_args(path: Path, texts: Path) -> list[str]:
    return ["-c", str(texts), "-r", str(texts), "-m", EMBEDDED_MODEL_NAME, "-l", str(LAYER), "--rescale-with-baseline",
            "--baseline-path", str(path), "--device", "cpu"]


def test_the_cli_exits_2_naming_the_file(malformed, tmp_path, capsys) -> None:
    """The command's own `main` (in process: each malformed kind; the process itself is checked below)."""
    path, words = malformed
    texts = tmp_path / "texts.txt"
    texts.write_text("a cat sat\nthe dog ran\n", encoding="utf-8")
    assert cli_main(_cli_args(path, texts)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bertscore: error: "), err  # no traceback
    _assert_names(lines[0], path, words)


def test_the_cli_process_exits_2_with_the_one_line(tmp_path) -> None:
    """`python -m bertscore` as a process: exit code 2, nothing on stdout, the one line on stderr."""
    text, words = MALFORMED["nan"]
    path = tmp_path / "nan.tsv"
    path.write_text(text, encoding="utf-8")
    texts = tmp_path / "texts.txt"
    texts.write_text("a cat sat\nthe dog ran\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "bertscore", *_cli_args(path, texts)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bertscore: error: "), done.stderr  # no traceback
    _assert_names(lines[0], path, words)


def test_the_space_refuses_a_malformed_packaged_file(malformed, tmp_path, monkeypatch) -> None:
    """The Space uses packaged files only: a packaged file is checked like a custom one."""
    text = malformed[0].read_text(encoding="utf-8")
    words = malformed[1]
    root = tmp_path / "packaged"
    packaged = root / "en" / f"{EMBEDDED_MODEL_NAME}.tsv"
    packaged.parent.mkdir(parents=True)
    packaged.write_text(text, encoding="utf-8")
    monkeypatch.setattr(baseline_tables, "_baseline_dir", lambda: root)
    service = app.ScoringService(app.AppConfig.from_env({"BERTSCORE_APP_DEVICE": "cpu"}))
    with pytest.raises(UserError) as raised:
        service.scorer(EMBEDDED_MODEL_NAME, str(LAYER), False, True, "en")
    _assert_names(str(raised.value), packaged, words)


def test_every_packaged_file_passes_the_check() -> None:
    files = sorted(baseline_tables._baseline_dir().rglob("*.tsv"))
    assert len(files) == 73  # the 72 files of bert-score 0.3.13 and the embedded MiniLM's
    for path in files:
        table = baselines.load_baseline(path)
        assert table.shape[1] == 3 and table.shape[0] >= 2, path
        # An independent read: the numbers are the file's, in row order.
        body = path.read_text(encoding="utf-8").splitlines()[1:]
        assert [int(line.split(",")[0]) for line in body] == list(range(len(body))), path
        expected = [[float(x) for x in line.split(",")[1:]] for line in body]
        assert all(math.isfinite(v) and v < 1 for row in expected for v in row), path
        assert [v for row in table.tolist() for v in row] == pytest.approx([v for row in expected for v in row], rel=1e-6), path


def test_a_valid_custom_file_rescales_with_its_own_row(tmp_path) -> None:
    """Rows are taken by position and the labels agree: layer 4 gets the row labelled 4."""
    rows = [f"{i},0.{i}1,0.{i}2,0.{i}3" for i in range(7)]
    path = tmp_path / "good.tsv"
    path.write_text(_file(rows), encoding="utf-8")
    raw = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu")
    rescaled = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, rescale_with_baseline=True,
                          baseline_path=str(path), device="cpu")
    cands, refs = ["a cat sat on the mat", "it rained"], ["the cat sat on a mat", "the sun shone"]
    for got, plain, base in zip(rescaled.score(cands, refs), raw.score(cands, refs), (0.41, 0.42, 0.43)):
        expected = [(x - base) / (1 - base) for x in plain.tolist()]
        assert got.tolist() == pytest.approx(expected, abs=1e-6)


# Written by editors and spreadsheets, read by the official package (pandas) as the plain file.
HARMLESS = {
    "byte_order_mark": "\ufeff" + _file(_rows()),
    "crlf": _file(_rows()).replace("\n", "\r\n"),
    "trailing_blank_lines": _file(_rows()) + "\n\n",
    "crlf_bom_and_blank_lines": "\ufeff" + (_file(_rows()) + "\n").replace("\n", "\r\n"),
    "no_final_newline": _file(_rows()).rstrip("\n"),
}


@pytest.mark.parametrize("kind", sorted(HARMLESS))
def test_files_the_official_reader_accepts_read_as_the_plain_file(kind, tmp_path) -> None:
    import pandas as pd

    path = tmp_path / f"{kind}.tsv"
    path.write_bytes(HARMLESS[kind].encode("utf-8"))
    official = pd.read_csv(path).to_numpy()[:, 1:].astype(float).tolist()  # the official package's reader
    assert official == [[0.8, 0.81, 0.82]] * 7
    assert baselines.load_baseline(path).flatten().tolist() == pytest.approx(sum(official, []), rel=1e-7)


def test_the_cli_names_too_few_rows_before_any_model_loads(tmp_path, monkeypatch, capsys) -> None:
    """The layer asked (-l, or the model's known default) is checked against the file up front."""
    from bertscore.models import loading as models
    from bertscore.models import shared as shared_models
    from bertscore.cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the baseline file was checked")

    monkeypatch.setattr(models, "load_model", refuse)
    monkeypatch.setattr(shared_models.SharedModels, "get", refuse)  # loaded or reused: no encoder yet
    texts = tmp_path / "texts.txt"
    texts.write_text("a cat sat\nthe dog ran\n", encoding="utf-8")
    short = tmp_path / "short.tsv"
    short.write_text(_file(_rows(count=3)), encoding="utf-8")
    rescaled = ["-r", str(texts), "--rescale-with-baseline", "--baseline-path", str(short)]
    for argv, layer in ((["-c", str(texts), *rescaled, "-m", EMBEDDED_MODEL_NAME, "-l", str(LAYER)], LAYER),
                        (["-c", str(texts), *rescaled, "-m", "roberta-large"], 17),  # its official default layer
                        (["--systems", str(texts), str(texts), *rescaled, "-m", "roberta-large"], 17)):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertscore: error: ") and f"{short} has 3 rows" in err and f"not layer {layer}" in err, err
