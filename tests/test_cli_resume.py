"""CLI --resume: after a SIGKILL the final output equals an uninterrupted run's, byte for byte;
a file the CLI did not start, or whose inputs, format or settings changed, is never cut.

Texts are unique, so the embedding cache cannot make an uninterrupted run differ from a
resumed one; chunks restart on the same boundaries (a chunk is written and flushed at once),
so the encoder batches are the same and the numbers identical. Only the killed runs need a process
of their own; the uninterrupted and the resumed runs call the CLI's `main` in this one.
"""

from __future__ import annotations

import io
import json
import logging
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from bertscore.cli import TSV_HEADER, Row, format_row, main

ROOT = Path(__file__).resolve().parents[1]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LINES = 300
CHUNK = 10
WORDS = "red blue green small big old new fast slow cat dog bird tree car house river sun moon".split()


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    rng = random.Random(1)
    folder = tmp_path_factory.mktemp("resume")
    cands, refs = folder / "c.txt", folder / "r.txt"
    cands.write_text("".join(f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}\n" for i in range(LINES)), encoding="utf-8")
    refs.write_text("".join(f"{rng.choice(WORDS)} {rng.choice(WORDS)} {7 * i}\n" for i in range(LINES)), encoding="utf-8")
    return cands, refs


def _command(inputs: tuple[Path, Path], output: Path, fmt: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "bertscore", "-c", str(inputs[0]), "-r", str(inputs[1]), "-m", MODEL,
            "-f", fmt, "-o", str(output), "--chunk-size", str(CHUNK), *extra]


def _rows(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _run_killed(command: list[str], rows: Callable[[], int], min_rows: int) -> None:
    """Start the CLI and SIGKILL it once `rows()` (lines written so far) reaches `min_rows`."""
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240  # a hang guard only: the assertion says what never happened
    while rows() < min_rows:
        assert process.poll() is None, f"the run ended before it could be killed: {process.stderr.read()!r}"
        assert time.monotonic() < deadline, f"{min_rows} output rows never appeared (240 s)"
        time.sleep(0.02)  # the polling interval: the outcome does not depend on it
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def uninterrupted(inputs, tmp_path_factory) -> list[dict]:
    """In this process: only the killed runs need a process of their own."""
    output = tmp_path_factory.mktemp("full") / "full.jsonl"
    assert main(_command(inputs, output, "jsonl")[3:]) == 0
    return output.read_text(encoding="utf-8")


def test_jsonl_resume_after_sigkill(inputs, uninterrupted, tmp_path, capsys) -> None:
    output = tmp_path / "out.jsonl"
    _run_killed(_command(inputs, output, "jsonl", "--resume"), lambda: _rows(output), min_rows=5 * CHUNK)
    partial = _rows(output)
    assert 0 < partial < LINES

    # Resuming with other settings is refused (exit 2) and leaves the file as it was (in this
    # process: the refusal comes before any scoring).
    before = output.read_bytes()
    assert main(_command(inputs, output, "jsonl", "--resume", "--idf")[3:]) == 2
    assert "other settings" in capsys.readouterr().err
    assert output.read_bytes() == before

    assert main(_command(inputs, output, "jsonl", "--resume")[3:]) == 0  # the resumed run, in this process too
    text = output.read_text(encoding="utf-8")
    assert [json.loads(line)["line"] for line in text.splitlines()] == list(range(1, LINES + 1))
    assert text == uninterrupted


def test_tsv_resume_after_sigkill(inputs, uninterrupted, tmp_path) -> None:
    output = tmp_path / "out.tsv"
    _run_killed(_command(inputs, output, "tsv", "--resume"), lambda: _rows(output), min_rows=1 + 5 * CHUNK)
    assert 1 < _rows(output) < LINES + 1
    # A torn last line (as a kill inside a write leaves) is cut off and rewritten.
    with open(output, "ab") as handle:
        handle.write(b"999\t0.12")
    assert main(_command(inputs, output, "tsv", "--resume")[3:]) == 0
    # The uninterrupted TSV: the same rows as the uninterrupted JSONL, in the CLI's TSV format.
    rows = [json.loads(line) for line in uninterrupted.splitlines()]
    expected = TSV_HEADER + "".join(format_row(Row(r["line"], r["precision"], r["recall"], r["f1"]), "tsv") for r in rows)
    assert output.read_text(encoding="utf-8") == expected



def test_parquet_resume_after_sigkill(inputs, uninterrupted, tmp_path, capsys, caplog) -> None:
    """A resumable Parquet run keeps each chunk as a whole Parquet file in OUTPUT.parts/: killed, it
    resumes after its last complete part (a stray temporary file and a part that does not continue
    the rows are dropped) and ends as one file equal to the uninterrupted run, a row group a chunk."""
    pq = pytest.importorskip("pyarrow.parquet")
    output = tmp_path / "out.parquet"
    parts = tmp_path / "out.parquet.parts"
    _run_killed(_command(inputs, output, "parquet", "--resume"), lambda: len(list(parts.glob("part-*.parquet"))),
                min_rows=5)
    assert not output.exists() and (tmp_path / "out.parquet.meta.json").is_file()
    written = sorted(parts.glob("part-*.parquet"))
    assert 5 <= len(written) < LINES // CHUNK
    (parts / ".part-999999999999.parquet.1234.partial").write_bytes(b"PAR1 torn")
    (parts / "part-999999999990.parquet").write_bytes(b"PAR1 not a continuation")
    # In this process the log line goes to pytest's handler (the CLI's -v sets up stderr logging only
    # in a process whose logging is not configured, and here it is: as a host would, we ask for INFO).
    with caplog.at_level(logging.INFO, logger="bertscore"):
        assert main(_command(inputs, output, "parquet", "--resume")[3:]) == 0
    assert f"resuming after {len(written) * CHUNK} complete rows" in caplog.text
    assert not parts.exists()
    expected = [json.loads(line) for line in uninterrupted.splitlines()]
    table = pq.ParquetFile(output)
    assert table.metadata.num_row_groups == LINES // CHUNK
    assert table.read().to_pylist() == expected  # full precision: JSON floats round-trip exactly
    # A finished output resumes as done: nothing scored again, the same rows.
    assert main(_command(inputs, output, "parquet", "--resume")[3:]) == 0
    assert f"mean over {LINES} pairs" in capsys.readouterr().err
    assert pq.read_table(output).to_pylist() == expected and not parts.exists()


def _partial_rows(folder: Path) -> int:
    """Lines in the temporary files of a fresh run (`.NAME.*.partial`) in `folder`."""
    return sum(_rows(path) for path in folder.glob(".*.partial"))


def test_a_killed_fresh_run_leaves_the_old_output(inputs, tmp_path, capsys) -> None:
    """Without --resume the rows go to a temporary file: a SIGKILL leaves the old output whole,
    and the next run replaces it completely."""
    output = tmp_path / "out.jsonl"
    output.write_bytes(b"results of last week\n")
    _run_killed(_command(inputs, output, "jsonl"), lambda: _partial_rows(tmp_path), min_rows=5 * CHUNK)
    assert output.read_bytes() == b"results of last week\n"
    assert not (tmp_path / "out.jsonl.meta.json").exists()
    # Not started with --resume, so not resumable: refused rather than cut.
    assert main(_command(inputs, output, "jsonl", "--resume")[3:]) == 2
    assert "has no out.jsonl.meta.json" in capsys.readouterr().err
    assert output.read_bytes() == b"results of last week\n"



# ----- what --resume refuses (in process, on the 4-line examples) -------------------------------
EXAMPLES = ROOT / "examples"


@pytest.fixture
def small(tmp_path) -> dict[str, Path]:
    """Copies of the example files, and the complete JSONL of a resumable run over them."""
    files = {name: tmp_path / f"{name}.txt" for name in ("candidates", "references", "references2")}
    for name, path in files.items():
        path.write_bytes((EXAMPLES / f"{name}.txt").read_bytes())
    files["output"] = tmp_path / "scores.jsonl"
    assert main(_small_args(files)) == 0
    files["complete"] = files["output"].read_bytes()
    return files


def _small_args(files: dict[str, Path], *extra: str, fmt: str = "jsonl") -> list[str]:
    return ["-c", str(files["candidates"]), "-r", str(files["references"]), "-m", MODEL, "-f", fmt,
            "-o", str(files["output"]), "--chunk-size", "2", "--resume", *extra]


def _cut_last_chunk(path: Path) -> bytes:
    """Drop the output's last chunk of 2 rows, as a run killed between chunks leaves it; the bytes
    left. (On a chunk boundary the resumed run batches as the uninterrupted one did.)"""
    kept = b"".join(path.read_bytes().splitlines(keepends=True)[:-2])
    path.write_bytes(kept)
    return kept


def test_resume_continues_a_cut_file_byte_for_byte(small) -> None:
    _cut_last_chunk(small["output"])
    assert main(_small_args(small)) == 0
    assert small["output"].read_bytes() == small["complete"]


def test_resume_refuses_a_file_it_did_not_start(small, capsys) -> None:
    small["output"].with_name("scores.jsonl.meta.json").unlink()
    small["output"].write_bytes(b"notes I keep here\n")
    assert main(_small_args(small)) == 2
    assert "has no scores.jsonl.meta.json" in capsys.readouterr().err
    assert small["output"].read_bytes() == b"notes I keep here\n"


@pytest.mark.parametrize("change", ["same size", "appended", "other file"])
def test_resume_refuses_changed_inputs(small, capsys, change) -> None:
    kept = _cut_last_chunk(small["output"])
    references = small["references"]
    if change == "same size":  # only the sha256 can tell
        text = references.read_bytes()
        references.write_bytes(text.replace(b"a", b"o", 1))
        assert len(references.read_bytes()) == len(text) and references.read_bytes() != text
    elif change == "appended":
        with open(small["candidates"], "ab") as handle:
            handle.write(b"one more\n")
        with open(references, "ab") as handle:
            handle.write(b"one more\n")
    else:
        small["references"] = small["references2"]
    meta = small["output"].with_name("scores.jsonl.meta.json").read_bytes()
    assert main(_small_args(small)) == 2
    err = capsys.readouterr().err
    changed = small["candidates"] if change == "appended" else small["references"]
    assert f"{changed}" in err and "changed since" in err
    assert small["output"].read_bytes() == kept
    assert small["output"].with_name("scores.jsonl.meta.json").read_bytes() == meta


def test_resume_accepts_inputs_that_were_only_touched(small) -> None:
    kept = _cut_last_chunk(small["output"])
    os.utime(small["references"], ns=(1_000_000_000, 1_000_000_000))
    assert small["output"].read_bytes() == kept
    assert main(_small_args(small)) == 0
    assert small["output"].read_bytes() == small["complete"]


@pytest.mark.parametrize("case", ["format", "extension", "settings", "reference count", "old meta", "torn meta",
                                  "stdin"])
def test_resume_refusals_leave_the_file_as_it_was(small, capsys, case) -> None:
    kept = _cut_last_chunk(small["output"])
    meta_path = small["output"].with_name("scores.jsonl.meta.json")
    args, message = _small_args(small), None
    if case == "format":  # a name that says no format: the run's own record refuses another -f
        renamed = small["output"].with_name("scores.rows")
        small["output"].rename(renamed)
        meta_path.rename(renamed.with_name("scores.rows.meta.json"))
        small["output"] = renamed
        args, message = _small_args(small, fmt="tsv"), "holds jsonl rows, not tsv"
    elif case == "extension":  # scores.jsonl says jsonl: -f tsv contradicts it, refused first
        args, message = _small_args(small, fmt="tsv"), "-f tsv contradicts -o"
    elif case == "settings":
        args, message = _small_args(small, "--idf"), "other settings"
    elif case == "reference count":
        args, message = [*_small_args(small), "-r", str(small["references"]), str(small["references2"])], \
            "started with 1 reference file(s), now 2"
    elif case == "old meta":  # what the CLI wrote before input fingerprints existed
        meta_path.write_text(json.dumps({"hashcode": json.loads(meta_path.read_text())["hashcode"]}))
        message = "not written by this version"
    elif case == "torn meta":
        meta_path.write_text('{"written_by": "bertsc')
        message = "cannot be read"
    else:
        args[1], message = "-", "stdin cannot be checked"
    assert main(args) == 2
    assert message in capsys.readouterr().err
    assert small["output"].read_bytes() == kept


def test_a_folder_refusing_new_files_is_named_not_the_meta_file(small, capsys, monkeypatch) -> None:
    """Where the permission check passes but no file can be created (root on a read-only mount,
    /proc, a full disk), a resumable run names the output folder, as a fresh run does."""
    import bertscore.output_files as output_files

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(output_files, "_new_file", refuse)
    small["output"].unlink()
    small["output"].with_name("scores.jsonl.meta.json").unlink()
    assert main(_small_args(small)) == 2
    err = capsys.readouterr().err
    assert f"output folder {small['output'].parent}" in err and "meta.json" not in err
    assert not small["output"].exists()


@pytest.mark.parametrize("fmt", ["tsv", "jsonl"])
def test_resumed_means_and_intervals_equal_an_uninterrupted_run(inputs, tmp_path, monkeypatch, capsys, fmt) -> None:
    """A TSV shows 6 decimals; the means and --ci intervals of a resumed run still come from the
    exact scores (kept in OUTPUT.meta.values), so they equal an uninterrupted run's exactly."""
    from bertscore import cli

    seen: list[tuple[str, object]] = []
    real_means, real_intervals = cli.Summary.means, cli.Summary.intervals

    def means(self):
        seen.append(("means", real_means(self)))
        return seen[-1][1]

    def intervals(self, args):
        seen.append(("intervals", real_intervals(self, args)))
        return seen[-1][1]

    monkeypatch.setattr(cli.Summary, "means", means)
    monkeypatch.setattr(cli.Summary, "intervals", intervals)

    lines_used = 6 * CHUNK  # a few chunks are enough (and keep the test fast)
    small = []
    for source in inputs:
        path = tmp_path / source.name
        path.write_text("".join(source.read_text(encoding="utf-8").splitlines(keepends=True)[:lines_used]),
                        encoding="utf-8")
        small.append(path)

    def run(output: Path) -> list[tuple[str, object]]:
        seen.clear()
        assert main(["-c", str(small[0]), "-r", str(small[1]), "-m", MODEL, "-f", fmt, "-o", str(output),
                     "--chunk-size", str(CHUNK), "--resume", "--ci"]) == 0, capsys.readouterr().err
        return list(seen)

    full = tmp_path / f"full.{fmt}"
    uninterrupted = run(full)
    # What a kill in the middle of chunk 3 leaves: 2 complete chunks and a torn row in each file.
    part = tmp_path / f"part.{fmt}"
    lines = full.read_text(encoding="utf-8").splitlines(keepends=True)
    head = 1 if fmt == "tsv" else 0
    part.write_text("".join(lines[:head + 2 * CHUNK]) + lines[head + 2 * CHUNK][:7], encoding="utf-8")
    Path(f"{part}.meta.json").write_text(Path(f"{full}.meta.json").read_text(encoding="utf-8"), encoding="utf-8")
    if fmt == "tsv":
        values = Path(f"{full}.meta.values").read_text(encoding="utf-8").splitlines(keepends=True)
        assert len(values) == lines_used and float(values[0].split("\t")[3]) == pytest.approx(float(lines[1].split("\t")[3]), abs=5e-7)
        Path(f"{part}.meta.values").write_text("".join(values[:2 * CHUNK + 1]) + values[2 * CHUNK + 1][:9],
                                               encoding="utf-8")
    resumed = run(part)
    assert [name for name, _ in resumed] == ["means", "intervals"]
    assert resumed == uninterrupted  # exactly: every float of the means and of the intervals
    assert part.read_bytes() == full.read_bytes()
    if fmt == "tsv":
        assert Path(f"{part}.meta.values").read_bytes() == Path(f"{full}.meta.values").read_bytes()


# ----- files that earlier versions started: rows `index`ed from 0 ------------------------------------
def _as_written_before(output: Path, fmt: str, rows: int) -> None:
    """Rewrite a resumable output of this version as the versions before rows counted from 1 wrote its
    first `rows` rows (as a kill between chunks leaves them): an `index` column counted from 0 (the
    TSV's header, its values file, Parquet's column and part names too) and a meta file without the
    numbering."""
    meta = Path(f"{output}.meta.json")
    recorded = json.loads(meta.read_text(encoding="utf-8"))
    assert recorded.pop("rows") == "line, from 1"
    meta.write_text(json.dumps(recorded, indent=1), encoding="utf-8")
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(output)
        old = table.rename_columns(["index", *table.column_names[1:]])
        old = old.set_column(0, "index", pa.array([n - 1 for n in table.column("line").to_pylist()], pa.int64()))
        parts = Path(f"{output}.parts")
        parts.mkdir()
        pq.write_table(old.slice(0, rows).replace_schema_metadata(table.schema.metadata),
                       parts / "part-000000000000.parquet")
        output.unlink()
        return
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    if fmt == "jsonl":
        olds = [json.dumps({"index": r.pop("line") - 1, **r}) + "\n" for r in map(json.loads, lines)]
        output.write_text("".join(olds[:rows]), encoding="utf-8")
        return
    numbered = [f"{int(n) - 1}\t{rest}" for n, rest in (line.split("\t", 1) for line in lines[1:])]
    output.write_text("index\tprecision\trecall\tf1\n" + "".join(numbered[:rows]), encoding="utf-8")
    values = Path(f"{output}.meta.values")
    exact = [f"{int(n) - 1}\t{rest}" for n, rest in (line.split("\t", 1) for line in values.read_text().splitlines(True))]
    values.write_text("".join(exact[:rows]), encoding="utf-8")


@pytest.mark.parametrize("fmt", ["jsonl", "tsv", "parquet"])
def test_resume_renumbers_a_file_an_earlier_version_started(small, fmt, caplog) -> None:
    """A run killed under an earlier version (rows `index`ed 0, 1, ...) resumed by this one ends as this
    version's uninterrupted output: its rows renumbered from 1 and the rest appended. A resume that
    read the old rows with the new numbering (or not at all) starts afresh, mixes `index` and `line`
    rows, or numbers the appended rows wrong: each gives other bytes."""
    small["output"] = small["output"].with_suffix(f".{fmt}")
    assert main(_small_args(small, fmt=fmt)) == 0
    complete = small["output"].read_bytes()
    values = Path(f"{small['output']}.meta.values").read_bytes() if fmt == "tsv" else None
    _as_written_before(small["output"], fmt, rows=2)
    with caplog.at_level(logging.INFO, logger="bertscore"):
        assert main(_small_args(small, fmt=fmt)) == 0
    assert "counted rows from 0: its 2 rows now count from 1" in caplog.text
    assert "resuming after 2 complete rows" in caplog.text
    if fmt == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
        assert pq.read_table(small["output"]).to_pylist() == pq.read_table(io.BytesIO(complete)).to_pylist()
        assert pq.ParquetFile(small["output"]).metadata.num_row_groups == 2  # the renumbered part, one chunk
    else:
        assert small["output"].read_bytes() == complete
    if values is not None:
        assert Path(f"{small['output']}.meta.values").read_bytes() == values
    assert json.loads(Path(f"{small['output']}.meta.json").read_text())["rows"] == "line, from 1"


# ----- Ctrl-C on a long run: the rows scored so far are kept, and said ---------------------------------
LONG_RUN = 3000  # lines: more than a whole 2,048-pair chunk


def _takes_ctrl_c() -> None:
    """In the child: SIGINT at its default, so that Python installs its KeyboardInterrupt handler (a shell
    without job control starts background commands with SIGINT ignored, and the child would inherit it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _complete_lines(path: Path) -> list[int]:
    """The `line` of each complete row of a JSONL output, in file order (a torn last line is not a row)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [json.loads(line)["line"] for line in text.splitlines(keepends=True) if line.endswith("\n")]


@pytest.mark.slow
def test_ctrl_c_on_a_long_run_keeps_its_rows_says_how_many_and_resumes_exactly(tmp_path) -> None:
    """A 3,000-line run with --resume on a CPU and the default chunks: rows reach the file long before a
    2,048-pair chunk is scored (a reader polling it first sees fewer); SIGINT keeps them, the message's
    count equals the file's rows, and --resume then ends with the file an uninterrupted run writes.
    Fails when rows wait for a 2,048-pair chunk, when the message does not count the rows kept (or
    counts others), and when the resume loses, repeats or re-batches a row."""
    rng = random.Random(3)
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("".join(f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}\n" for i in range(LONG_RUN)),
                     encoding="utf-8")
    refs.write_text("".join(f"{rng.choice(WORDS)} {rng.choice(WORDS)} {3 * i}\n" for i in range(LONG_RUN)),
                    encoding="utf-8")
    output = tmp_path / "part.jsonl"
    argv = ["-c", str(cands), "-r", str(refs), "-m", MODEL, "--device", "cpu", "-f", "jsonl", "-o", str(output),
            "--resume"]
    process = subprocess.Popen([sys.executable, "-m", "bertscore", *argv], cwd=ROOT, env=_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=_takes_ctrl_c)
    deadline = time.monotonic() + 600  # a guard against a hang only: the loop waits on the file growing
    while not _complete_lines(output):
        assert process.poll() is None, f"the run ended before any row was seen: {process.stderr.read()}"
        assert time.monotonic() < deadline, "no row reached the output"
        time.sleep(0.01)
    first_seen = len(_complete_lines(output))
    process.send_signal(signal.SIGINT)
    err = process.communicate(timeout=600)[1]
    assert process.returncode == 130, err
    kept = _complete_lines(output)
    print(f"first seen: {first_seen} rows; kept after SIGINT: {len(kept)} rows")
    assert 0 < first_seen < 2048
    assert 0 < len(kept) < LONG_RUN and kept == list(range(1, len(kept) + 1))
    said = re.search(r"bertscore: interrupted: (\d+) rows? kept in (.+) \(lines 1 to (\d+)\); run the same command "
                     r"again \(with --resume\) to continue after them", err)
    assert said, err
    assert int(said.group(1)) == int(said.group(3)) == len(kept) and said.group(2) == str(output)

    assert main(argv) == 0  # the resumed run (in this process, as the uninterrupted one)
    full = tmp_path / "full.jsonl"
    assert main([*argv[:-3], "-o", str(full), "--resume"]) == 0
    assert _complete_lines(output) == list(range(1, LONG_RUN + 1))
    assert output.read_bytes() == full.read_bytes()


def test_an_interrupt_before_any_row_says_none_is_kept(small, capsys, monkeypatch) -> None:
    """Ctrl-C before the first chunk is written: the message says no row is kept (not "the rows so
    far"); the next run starts the file afresh and ends equal to an uninterrupted run."""
    import bertscore.cli.score as score

    small["output"].unlink()
    small["output"].with_name("scores.jsonl.meta.json").unlink()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(score, "_write_chunk", interrupted)
    assert main(_small_args(small)) == 130
    err = capsys.readouterr().err
    assert f"interrupted: no row was written yet, so {small['output']} keeps none; run the same command again" in err
    monkeypatch.undo()
    assert main(_small_args(small)) == 0
    assert small["output"].read_bytes() == small["complete"]


def test_resume_scores_a_torn_chunk_again_whole(small, caplog, monkeypatch) -> None:
    """A kill inside a chunk's write leaves part of it: the resumed run scores that chunk again whole
    (its rows meet the encoder in the same batch as before) and writes only the rows after the kept
    ones. Fails when it starts a chunk at the first missing row (another batch: the calls show it;
    the numbers may differ in their last bits only) or writes a row twice."""
    from bertscore import BERTScorer

    calls: list[list[str]] = []
    real_score = BERTScorer.score

    def score(self, cands, refs, **kwargs):
        calls.append(list(cands))
        return real_score(self, cands, refs, **kwargs)

    monkeypatch.setattr(BERTScorer, "score", score)
    lines = small["complete"].splitlines(keepends=True)
    small["output"].write_bytes(b"".join(lines[:3]))  # chunks of 2: chunk 2 half written
    with caplog.at_level(logging.INFO, logger="bertscore"):
        assert main(_small_args(small)) == 0
    assert "resuming after 3 complete rows" in caplog.text
    candidates = small["candidates"].read_text(encoding="utf-8").splitlines()
    assert calls == [candidates[2:4]]  # chunk 2 (lines 3 and 4) whole, once
    assert small["output"].read_bytes() == small["complete"]


def test_resume_refuses_another_chunk_size(small, capsys) -> None:
    """Chunks restart on the boundaries the file was started with: another --chunk-size is refused
    (other chunks batch the encoder otherwise: other last digits), the file left as it was."""
    kept = _cut_last_chunk(small["output"])
    args = _small_args(small)
    args[args.index("--chunk-size") + 1] = "3"
    assert main(args) == 2
    assert "was started with --chunk-size 2, now 3: continue it with --chunk-size 2" in capsys.readouterr().err
    assert small["output"].read_bytes() == kept


@pytest.mark.parametrize("fmt", ["jsonl", "tsv"])
def test_a_resume_with_idf_and_rescaling_equals_an_uninterrupted_run(small, fmt) -> None:
    """idf is counted over every reference line before the first chunk, and rescaling is per row: a run
    cut inside its second chunk and resumed ends byte for byte as the uninterrupted run. Fails when a
    resume counts idf over the remaining lines only, or rescales twice, or re-batches the torn chunk."""
    extra = ("--idf", "--rescale-with-baseline", "--lang", "en")
    small["output"] = small["output"].with_name(f"idf.{fmt}")  # a file of its own: these are other settings
    assert main(_small_args(small, *extra, fmt=fmt)) == 0
    complete = small["output"].read_bytes()
    lines = complete.splitlines(keepends=True)
    head = 1 if fmt == "tsv" else 0
    small["output"].write_bytes(b"".join(lines[:head + 3]) + lines[head + 3][:5])  # 3 rows and a torn one
    assert main(_small_args(small, *extra, fmt=fmt)) == 0
    assert small["output"].read_bytes() == complete
    plain = json.loads(small["complete"].splitlines()[0])["f1"]
    assert (float(lines[head].split(b"\t")[3]) if fmt == "tsv" else json.loads(lines[0])["f1"]) != pytest.approx(plain)
