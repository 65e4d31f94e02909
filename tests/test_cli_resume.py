"""CLI --resume after a SIGKILL: the final output equals an uninterrupted run's, byte for byte.

Texts are unique, so the embedding cache cannot make an uninterrupted run differ from a
resumed one; chunks restart on the same boundaries (a chunk is written and flushed at once),
so the encoder batches are the same and the numbers identical.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bertscore.cli import TSV_HEADER, Row, format_row

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


def _run_killed(command: list[str], output: Path, min_rows: int) -> None:
    """Start the CLI and SIGKILL it once the output holds at least `min_rows` lines."""
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while _rows(output) < min_rows:
        assert process.poll() is None, f"the run ended before it could be killed: {process.stderr.read()!r}"
        assert time.monotonic() < deadline, "no output rows appeared"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def uninterrupted(inputs, tmp_path_factory) -> list[dict]:
    output = tmp_path_factory.mktemp("full") / "full.jsonl"
    done = subprocess.run(_command(inputs, output, "jsonl"), cwd=ROOT, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return output.read_text(encoding="utf-8")


def test_jsonl_resume_after_sigkill(inputs, uninterrupted, tmp_path) -> None:
    output = tmp_path / "out.jsonl"
    _run_killed(_command(inputs, output, "jsonl"), output, min_rows=5 * CHUNK)
    partial = _rows(output)
    assert 0 < partial < LINES

    # Resuming with other settings is refused (exit 2) and leaves the file as it was.
    before = output.read_bytes()
    refused = subprocess.run(_command(inputs, output, "jsonl", "--resume", "--idf"), cwd=ROOT, env=_env(),
                             capture_output=True, text=True)
    assert refused.returncode == 2
    assert "other settings" in refused.stderr
    assert output.read_bytes() == before

    resumed = subprocess.run(_command(inputs, output, "jsonl", "--resume"), cwd=ROOT, env=_env(),
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    text = output.read_text(encoding="utf-8")
    assert [json.loads(line)["index"] for line in text.splitlines()] == list(range(LINES))
    assert text == uninterrupted


def test_tsv_resume_after_sigkill(inputs, uninterrupted, tmp_path) -> None:
    output = tmp_path / "out.tsv"
    _run_killed(_command(inputs, output, "tsv"), output, min_rows=1 + 5 * CHUNK)
    assert 1 < _rows(output) < LINES + 1
    # A torn last line (as a kill inside a write leaves) is cut off and rewritten.
    with open(output, "ab") as handle:
        handle.write(b"999\t0.12")
    resumed = subprocess.run(_command(inputs, output, "tsv", "--resume"), cwd=ROOT, env=_env(),
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    # The uninterrupted TSV: the same rows as the uninterrupted JSONL, in the CLI's TSV format.
    rows = [json.loads(line) for line in uninterrupted.splitlines()]
    expected = TSV_HEADER + "".join(format_row(Row(r["index"], r["precision"], r["recall"], r["f1"]), "tsv") for r in rows)
    assert output.read_text(encoding="utf-8") == expected
