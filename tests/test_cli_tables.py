"""The CLI on columnar tables: Parquet, Arrow IPC and datasets save_to_disk folders in (written by
the real pyarrow and datasets libraries), `-f parquet` out; equal to `score()` to 1e-6; errors exit 2
naming file, row and column; the one writer never destroys an output.

Expected numbers come from `BERTScorer.score` on the same texts (the session's MiniLM), the texts
from the vendored WMT17 fixture; one subprocess runs the command as a user types it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.cli import main
from conftest import REPO_ROOT

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
datasets = pytest.importorskip("datasets")

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4"]
ROWS = 20


@pytest.fixture(scope="module")
def pairs(wmt17_de_en):
    """20 WMT17 candidates; every third row has a second reference (another row's)."""
    cands, refs = wmt17_de_en
    groups = [[refs[i]] + ([refs[i + 1]] if i % 3 == 0 else []) for i in range(ROWS)]
    return cands[:ROWS], groups


@pytest.fixture(scope="module")
def expected(pairs, minilm_scorer):
    return minilm_scorer.score(*pairs)


def _close(values, tensor) -> bool:
    return torch.allclose(torch.tensor(values, dtype=torch.float64), tensor.double(), atol=1e-6, rtol=0)


def test_parquet_in_parquet_out_as_a_user_runs_it(pairs, expected, minilm_scorer, tmp_path):
    """`bertscore --input pairs.parquet -f parquet -o scores.parquet` in its own process: a list<string>
    reference column written by datasets' to_parquet; a row group per chunk; the hash in the schema."""
    cands, groups = pairs
    datasets.Dataset.from_dict({"id": list(range(ROWS)), "prediction": cands, "references": groups}).to_parquet(
        str(tmp_path / "pairs.parquet"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "bertscore", "--input", "pairs.parquet", *MODEL, "-f", "parquet",
                          "-o", "scores.parquet", "--chunk-size", "8"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert f"mean over {ROWS} pairs" in run.stderr and run.stdout == ""
    out = pq.ParquetFile(tmp_path / "scores.parquet")
    assert out.metadata.num_row_groups == 3  # 8 + 8 + 4
    table = out.read()
    assert table.schema.metadata[b"bertscore.hashcode"].decode() == minilm_scorer.hash
    assert [str(t) for t in table.schema.types] == ["int64", "double", "double", "double"]
    assert table.column("line").to_pylist() == list(range(1, ROWS + 1))
    for name, values in zip(("precision", "recall", "f1"), expected):
        assert _close(table.column(name).to_pylist(), values), name
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary file left


def _write_arrow(path, table: "pa.Table", stream: bool) -> None:
    with pa.OSFile(str(path), "wb") as sink, (pa.ipc.new_stream if stream else pa.ipc.new_file)(
            sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=6)


def test_arrow_files_and_save_to_disk_folders_equal_score(pairs, expected, minilm_scorer, tmp_path, capsys):
    cands, groups = pairs
    table = pa.table({"candidate": cands, "references": groups})
    _write_arrow(tmp_path / "pairs.arrow", table, stream=False)
    _write_arrow(tmp_path / "pairs.arrows", table, stream=True)
    datasets.Dataset.from_dict({"candidate": cands, "references": groups}).save_to_disk(
        str(tmp_path / "saved"), num_shards=3)
    for source in ("pairs.arrow", "pairs.arrows", "saved"):
        assert main(["--input", str(tmp_path / source), *MODEL, "-f", "json", "--chunk-size", "8"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert all(_close(out[n], v) for n, v in zip(("precision", "recall", "f1"), expected)), source
    # idf from the reference column, as one score() call over everything
    idf = BERTScorer(loaded_model=minilm_scorer.model, idf=True).score(cands, groups)
    assert main(["--input", str(tmp_path / "saved"), *MODEL, "--idf", "-f", "parquet", "-o",
                 str(tmp_path / "idf.parquet"), "--chunk-size", "8"]) == 0
    assert "_idf_" in capsys.readouterr().err
    assert _close(pq.read_table(tmp_path / "idf.parquet").column("f1").to_pylist(), idf[2])


def test_resume_reads_a_save_to_disk_folder_and_notices_it_changed(pairs, tmp_path, capsys):
    cands, groups = pairs
    folder, out = tmp_path / "saved", tmp_path / "scores.jsonl"
    datasets.Dataset.from_dict({"candidate": cands[:5], "references": groups[:5]}).save_to_disk(str(folder))
    assert main(["--input", str(folder), *MODEL, "-f", "jsonl", "-o", str(out), "--resume"]) == 0
    assert len(out.read_text().splitlines()) == 5
    assert main(["--input", str(folder), *MODEL, "-f", "jsonl", "-o", str(out), "--resume"]) == 0  # nothing left
    datasets.Dataset.from_dict({"candidate": cands[1:6], "references": groups[1:6]}).save_to_disk(str(tmp_path / "x"))
    for name in ("data-00000-of-00001.arrow",):
        os.replace(tmp_path / "x" / name, folder / name)
    capsys.readouterr()
    assert main(["--input", str(folder), *MODEL, "-f", "jsonl", "-o", str(out), "--resume"]) == 2
    assert f"{folder} changed since {out} was started" in capsys.readouterr().err


def test_bad_tables_and_options_exit_2_and_leave_the_output(tmp_path, capsys):
    out = tmp_path / "scores.parquet"
    out.write_bytes(b"the user's file")
    pq.write_table(pa.table({"candidate": ["a", "b", None], "reference": ["x", "y", "z"]}), tmp_path / "null.parquet")
    pq.write_table(pa.table({"candidate": ["a"], "reference": [3]}), tmp_path / "int.parquet")
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"candidate": ["a"], "reference": ["b"]})}).save_to_disk(
        str(tmp_path / "dd"))
    cases = [
        (["--input", "null.parquet", "-f", "parquet", "-o", "scores.parquet"],
         "null.parquet, row 3, column 'candidate': is null; write \"\" for an empty text"),
        (["--input", "int.parquet", "-f", "parquet", "-o", "scores.parquet"],
         "int.parquet, column 'reference': is of Arrow type int64, not text (string) or a list of texts"),
        (["--input", "dd"], "dd: is a DatasetDict folder (splits: train): give one split's folder, e.g. dd/train"),
        (["-c", "c.txt", "-r", "c.txt", "-f", "parquet"], "--format parquet writes a binary file: give --output"),
        (["--input", "int.parquet", "-f", "parquet", "-o", "scores.parquet", "--resume"],
         "int.parquet, column 'reference': is of Arrow type int64"),
        (["--systems", "c.txt", "c.txt", "-r", "c.txt", "-f", "parquet"], "--systems writes one table"),
    ]
    (tmp_path / "c.txt").write_text("a\nb\n")
    for args, message in cases:
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(tmp_path)
            assert main([*args, *MODEL]) == 2, args
        assert f"error: {message}" in capsys.readouterr().err, args
    assert out.read_bytes() == b"the user's file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "dd", "int.parquet", "null.parquet",
                                                          "scores.parquet"]
