"""Progress bars: shown by default where stderr is a terminal, never into a pipe or with -q; the same
rule for `bertscore`, its subcommands and the drop-in's `bert-score` (tested on pseudo-terminals)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from typing import Iterator

import pytest

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.cli import main
from bertscore.cli.io import shows_progress
from bertscore.cli.official import score_main
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
CANDS, REFS, REFS2 = (str(EXAMPLES / n) for n in ("candidates.txt", "references.txt", "references2.txt"))
MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4"]  # the session's minilm_scorer: loaded once
BAR = "BERTScore: 100%"


def open_terminal() -> tuple[int, int]:
    """A pseudo-terminal (master, slave) of 24 x 100 characters: a fresh one has 0 columns, where tqdm
    draws an empty bar."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    return master, slave


def _drain(master: int) -> bytes:
    """What the terminal has received so far."""
    chunks = []
    while select.select([master], [], [], 0)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def stderr_on_a_terminal(monkeypatch) -> Iterator[list[str]]:
    """sys.stderr on a fresh pseudo-terminal; the list receives what the terminal showed."""
    master, slave = open_terminal()
    shown: list[str] = []
    terminal = os.fdopen(slave, "w", encoding="utf-8", errors="replace")
    previous = sys.stderr
    monkeypatch.setattr(sys, "stderr", terminal)
    try:
        yield shown
    finally:
        terminal.flush()
        shown.append(_drain(master).decode("utf-8", "replace"))
        monkeypatch.setattr(sys, "stderr", previous)
        terminal.close()
        os.close(master)


@pytest.mark.slow
def test_the_bertscore_script_draws_a_bar_on_a_terminal_and_none_into_a_pipe(tmp_path) -> None:
    """The real process: its fd 2 a pseudo-terminal, then a pipe (the same command, one interpreter each)."""
    argv = [sys.executable, "-m", "bertscore", "-c", CANDS, "-r", REFS, REFS2, *MODEL]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    master, slave = open_terminal()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path) as process:
        os.close(slave)
        shown = b""
        while True:  # read as it comes, so that the child never waits on a full terminal
            if select.select([master], [], [], 1)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                shown += chunk
            elif process.poll() is not None:
                break
        out = process.stdout.read().decode()
    os.close(master)
    assert process.returncode == 0, shown
    terminal = shown.decode("utf-8", "replace")
    assert "BERTScore: 100%" in terminal and "8/8" in terminal, terminal  # 4 candidates x 2 references
    assert "mean over 4 pairs" in out and "BERTScore" not in out
    piped = subprocess.run([*argv, "-f", "jsonl"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert piped.returncode == 0 and piped.stderr.startswith("mean over 4 pairs"), piped.stderr
    assert "BERTScore" not in piped.stderr and "\r" not in piped.stderr


def test_one_bar_for_a_run_of_many_chunks(minilm_scorer, monkeypatch, capsys) -> None:
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert main(["-c", CANDS, "-r", REFS, *MODEL, "--chunk-size", "1"]) == 0
    bar = shown[0]
    assert bar.count("| 0/") == 1 and "| 4/4 [" in bar and "/1 [" not in bar, bar  # one bar over all 4 chunks
    assert "mean over 4 pairs" in capsys.readouterr().out


def test_quiet_and_piped_runs_draw_no_bar_and_verbose_draws_one_into_a_pipe(minilm_scorer, monkeypatch, capsys):
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert main(["-c", CANDS, "-r", REFS, *MODEL, "-q"]) == 0
    assert "BERTScore" not in shown[0]
    capsys.readouterr()
    assert main(["-c", CANDS, "-r", REFS, *MODEL]) == 0  # stderr is pytest's capture: not a terminal
    assert "BERTScore" not in capsys.readouterr().err
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "-v"]) == 0  # -v: the bar into a file too
    assert BAR in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # one or the other
        main(["-c", CANDS, "-r", REFS, *MODEL, "-v", "-q"])
    assert refused.value.code == 2


def test_the_dropins_bert_score_follows_the_same_rule(minilm_dir, monkeypatch, capsys) -> None:
    argv = ["-c", CANDS, "-r", REFS, "-m", EMBEDDED_MODEL_NAME, "-l", "4"]
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert score_main(argv) == 0
    assert "BERTScore: 100%" in shown[0]
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert score_main([*argv, "-q"]) == 0
    assert "BERTScore" not in shown[0]
    capsys.readouterr()
    assert score_main(argv) == 0
    assert "BERTScore" not in capsys.readouterr().err
    assert score_main([*argv, "-v"]) == 0  # the official -v: progress, wherever stderr goes
    assert BAR in capsys.readouterr().err


def test_the_rule(monkeypatch) -> None:
    """Every command asks shows_progress: -q never, -v always, else whether stderr is a terminal."""
    with stderr_on_a_terminal(monkeypatch):
        assert shows_progress() and not shows_progress(quiet=True)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not shows_progress() and shows_progress(verbose=True) and not shows_progress(quiet=True, verbose=True)
    monkeypatch.setattr(sys, "stderr", None)  # pythonw: no stderr at all
    assert not shows_progress()
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    assert not shows_progress()


def test_bertscore_baseline_follows_the_same_rule(tiny_models, tmp_path, monkeypatch, capsys) -> None:
    from bertscore.cli.baseline import main as baseline_main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} of the corpus\n" for i in range(12)), encoding="utf-8")
    argv = ["--model", str(tiny_models["electra"]), "--corpus", str(corpus), "--pairs", "4"]
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert baseline_main([*argv, "-o", str(tmp_path / "a.tsv")]) == 0
    assert "100%" in shown[0], shown
    with stderr_on_a_terminal(monkeypatch) as shown:
        assert baseline_main([*argv, "-o", str(tmp_path / "b.tsv"), "-q"]) == 0
    assert "100%" not in shown[0]
    capsys.readouterr()
    assert baseline_main([*argv, "-o", str(tmp_path / "c.tsv")]) == 0
    assert "100%" not in capsys.readouterr().err
