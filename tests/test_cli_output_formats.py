"""`-o FILE` decides the format when -f is absent: .parquet, .jsonl, .json and .tsv write that format
(read back here with pyarrow, json and csv, the values compared with the Python API's); an -f that
contradicts the extension, or a format --systems cannot write, is refused before anything runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.cli import main
from conftest import SENTENCES

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4", "--device", "cpu"]
CANDS, REFS = SENTENCES[:4], SENTENCES[3:7]


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("pairs")
    (folder / "c.txt").write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    (folder / "r.txt").write_text("\n".join(REFS) + "\n", encoding="utf-8")
    return ["-c", str(folder / "c.txt"), "-r", str(folder / "r.txt")]


@pytest.fixture(scope="module")
def expected(minilm_scorer) -> dict[str, list[float]]:
    precision, recall, f1 = minilm_scorer.score(CANDS, REFS)
    return {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist()}


def _read_parquet(path: Path) -> dict[str, list]:
    return pq.read_table(path).to_pydict()


def _read_jsonl(path: Path) -> dict[str, list]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {key: [row[key] for row in rows] for key in ("line", "precision", "recall", "f1")}


def _read_json(path: Path) -> dict[str, list]:
    payload = json.loads(path.read_text(encoding="utf-8"))
    return {"line": list(range(1, len(payload["f1"]) + 1)), **{k: payload[k] for k in ("precision", "recall", "f1")}}


def _read_tsv(path: Path) -> dict[str, list]:
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return {key: [float(row[key]) if key != "line" else int(row[key]) for row in rows]
            for key in ("line", "precision", "recall", "f1")}


READERS = {".parquet": (_read_parquet, 1e-6), ".jsonl": (_read_jsonl, 1e-6), ".json": (_read_json, 1e-6),
           ".tsv": (_read_tsv, 1e-6 + 5e-7)}  # the TSV rounds to 6 decimals


@pytest.mark.parametrize("name", ["scores.parquet", "scores.jsonl", "scores.json", "scores.tsv", "SCORES.PARQUET"])
def test_the_extension_picks_the_format_without_f(name, pair_files, expected, tmp_path, capsys) -> None:
    out = tmp_path / name
    assert main([*pair_files, *MODEL, "-o", str(out)]) == 0, capsys.readouterr().err
    read, tolerance = READERS[out.suffix.lower()]
    table = read(out)
    assert table["line"] == list(range(1, len(CANDS) + 1))
    for key, values in expected.items():
        assert table[key] == pytest.approx(values, abs=tolerance), key


def test_f_agreeing_with_the_extension_or_an_unknown_extension_is_honoured(pair_files, expected, tmp_path) -> None:
    assert main([*pair_files, *MODEL, "-f", "parquet", "-o", str(tmp_path / "a.parquet")]) == 0
    assert _read_parquet(tmp_path / "a.parquet")["f1"] == pytest.approx(expected["f1"], abs=1e-6)
    assert main([*pair_files, *MODEL, "-f", "tsv", "-o", str(tmp_path / "a.txt")]) == 0
    assert _read_tsv(tmp_path / "a.txt")["f1"] == pytest.approx(expected["f1"], abs=1.5e-6)
    assert main([*pair_files, *MODEL, "-o", str(tmp_path / "plain.out")]) == 0  # no known extension: text
    lines = (tmp_path / "plain.out").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("1\tP=") and lines[-1].startswith("hash: ")


@pytest.mark.parametrize(("args", "message"), [
    (["-f", "tsv", "-o", "{tmp}/out.parquet"],
     "-f tsv contradicts -o {tmp}/out.parquet, whose extension says parquet: drop -f to write parquet, "
     "or name the file .tsv to write tsv"),
    (["-f", "text", "-o", "{tmp}/out.jsonl"],
     "-f text contradicts -o {tmp}/out.jsonl, whose extension says jsonl: drop -f to write jsonl, "
     "or give the file another extension to write text"),
    (["-f", "jsonl", "-o", "{tmp}/out.json", "--resume"], "-f jsonl contradicts -o {tmp}/out.json"),
])
def test_f_contradicting_the_extension_is_refused_before_anything(args, message, tmp_path, capsys) -> None:
    """Refused first: the missing input files are not even looked at, no output is created."""
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    assert main(["-c", str(tmp_path / "missing.txt"), "-r", str(tmp_path / "missing.txt"), *MODEL, *args]) == 2
    assert f"error: {message.replace('{tmp}', str(tmp_path))}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_systems_write_the_table_in_the_extensions_format(pair_files, tmp_path, capsys) -> None:
    systems = ["--systems", pair_files[1], pair_files[3], "-r", pair_files[3], "--n-resamples", "20"]
    assert main([*systems, *MODEL, "-o", str(tmp_path / "table.parquet")]) == 2
    err = capsys.readouterr().err
    assert f"error: --systems writes one table, not parquet as -o {tmp_path / 'table.parquet'} (a .parquet file) asks" in err
    assert main([*systems, *MODEL, "-o", str(tmp_path / "table.json")]) == 0
    report = json.loads((tmp_path / "table.json").read_text(encoding="utf-8"))
    assert [system["baseline"] for system in report["systems"]] == [True, False]
    assert main([*systems, *MODEL, "-f", "jsonl"]) == 2
    assert "error: --systems writes one table, not jsonl as -f jsonl asks" in capsys.readouterr().err


def test_baseline_and_layers_refuse_an_output_named_for_another_format(tmp_path, capsys) -> None:
    """The doors that write one kind of file (a LAYER,P,R,F baseline, a JSON report) refuse an
    output whose extension names another format, before any work (layers: before its --data is read)."""
    from bertscore.cli.baseline import main as baseline_main
    from bertscore.cli.layers import main as layers_main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one sentence\nanother sentence\na third one\n", encoding="utf-8")
    assert baseline_main(["--model", EMBEDDED_MODEL_NAME, "--corpus", str(corpus), "-o", str(tmp_path / "b.parquet")]) == 2
    assert (f"error: -o {tmp_path / 'b.parquet'}: its extension says parquet, but this writes a LAYER,P,R,F baseline "
            "table; name it .tsv") in capsys.readouterr().err
    missing = str(tmp_path / "judgements.tsv")
    assert layers_main(["--model", EMBEDDED_MODEL_NAME, "--data", missing, "--json", str(tmp_path / "r.jsonl")]) == 2
    assert f"error: --json {tmp_path / 'r.jsonl'}: its extension says jsonl, but this writes one JSON report" in \
        capsys.readouterr().err
    assert layers_main(["--model", EMBEDDED_MODEL_NAME, "--data", missing, "--baseline-corpus", str(corpus),
                        "--baseline-output", str(tmp_path / "b.json")]) == 2
    assert f"error: --baseline-output {tmp_path / 'b.json'}: its extension says json" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.txt"]
