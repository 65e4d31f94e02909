"""Progress bars: shown by default where stderr is a terminal, never into a pipe or with -q; the same
rule for `bertscore`, its subcommands and the drop-in's `bert-score` (tested on pseudo-terminals)."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
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
        monkeypatch.setattr(sys, "stderr", previous)
        terminal.close()  # flushed; its side closed, the terminal's end comes after its last byte
        shown.append(read_terminal(master).decode("utf-8", "replace"))
        os.close(master)


HANG_GUARD_S = 300  # only ends a hung command, saying so: the terminal is read to its end, never to a clock


def read_terminal(master: int, process: subprocess.Popen | None = None) -> bytes:
    """Every byte the terminal received, read as it comes (a full terminal would block the command)
    until its end: EIO (or no bytes) once every holder of its other side has closed it, which comes
    after the last byte written, however late it was written."""
    shown = b""
    while True:
        if not select.select([master], [], [], HANG_GUARD_S)[0]:
            if process is not None:
                process.kill()
            pytest.fail(f"the terminal got nothing for {HANG_GUARD_S} s and was not closed; so far:\n"
                        f"{shown.decode(errors='replace')}")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: no process holds the terminal any more: nothing more can come
            return shown
        if not chunk:
            return shown
        shown += chunk


@pytest.mark.slow
def test_the_bertscore_script_draws_a_bar_on_a_terminal_and_none_into_a_pipe(tmp_path) -> None:
    """The real process: its fd 2 a pseudo-terminal, then a pipe (the same command, one interpreter each)."""
    argv = [sys.executable, "-m", "bertscore", "-c", CANDS, "-r", REFS, REFS2, *MODEL]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    master, slave = open_terminal()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path) as process:
        os.close(slave)
        shown = read_terminal(master, process)
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


def _run_on_a_terminal(argv: list[str], cwd: Path, columns: int = 100) -> tuple[int, bytes]:
    """Run a command whose stdout and stderr are one pseudo-terminal (as in a terminal window); its exit
    code and every byte the terminal received."""
    master, slave = open_terminal()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env, cwd=cwd) as process:
        os.close(slave)
        shown = read_terminal(master, process)
    os.close(master)
    return process.returncode, shown


@pytest.mark.slow
@pytest.mark.parametrize("output", [[], ["-o", "/dev/stdout"]], ids=["stdout", "-o /dev/stdout"])
def test_rows_and_the_bar_never_share_a_line_of_the_terminal(tmp_path, output) -> None:
    """2,000 pairs in chunks of 500, rows and the bar on one terminal (stdout, or the terminal named
    as -o), replayed through a terminal emulator (pyte): every row on a line of its own, numbered
    1..2,000, and one bar, at 100%. Rows written through the bar's line (the bar not cleared first)
    put a row's first characters after the bar and the bar's redraw inside the rows; a bar redrawn
    after the last row shows twice."""
    pyte = pytest.importorskip("pyte")
    pairs = 2000
    words = "red blue green small big old new fast slow cat dog bird tree car house river".split()
    (tmp_path / "c.txt").write_text("".join(f"{words[i % 16]} {words[i * 7 % 16]} {i}\n" for i in range(pairs)))
    (tmp_path / "r.txt").write_text("".join(f"{words[i * 3 % 16]} {words[i % 16]} {i}\n" for i in range(pairs)))
    code, shown = _run_on_a_terminal([sys.executable, "-m", "bertscore", "-c", "c.txt", "-r", "r.txt",
                                      "--model", EMBEDDED_MODEL_NAME, "-l", "1", "--chunk-size", "500", *output], tmp_path)
    screen = pyte.Screen(100, pairs + 50)  # taller than the output: nothing scrolls away
    pyte.ByteStream(screen).feed(shown)
    lines = [line.rstrip() for line in screen.display]
    assert code == 0, "\n".join(lines)
    row = re.compile(r"^(\d+)\s+P=\d\.\d{6}\s+R=\d\.\d{6}\s+F1=\d\.\d{6}$")
    numbers = [int(match.group(1)) for match in map(row.match, lines) if match]
    assert numbers == list(range(1, pairs + 1))  # each row whole, on its own line, in order
    bars = [line for line in lines if "BERTScore" in line]
    assert len(bars) == 1 and "100%" in bars[0] and f"{pairs}/{pairs}" in bars[0], bars
    assert [line for line in lines if "P=" in line and not row.match(line)] == [
        line for line in lines if line.startswith("mean over")]  # nothing else carries a score
