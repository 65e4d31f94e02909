"""The command line: formats, multi-reference files, errors with exit code 2."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
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


def official_example_scores(minilm_dir, idf: bool) -> list[tuple[float, float, float]]:
    """(P, R, F1) per line of examples/ by the official package at batch_size=1 (idf over the references)."""
    bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")
    import oracle

    cands, refs = _lines(CANDS), _lines(REFS)
    p, r, f = oracle.call(oracle.scorer_score, cands, refs, model_type=str(minilm_dir), num_layers=4, batch_size=1,
                          device="cpu", idf=idf, idf_sents=refs if idf else None)
    return list(zip(p.tolist(), r.tolist(), f.tolist()))


def test_jsonl_tsv_and_text_formats(tmp_path, capsys, minilm_dir):
    """Every format carries the official package's numbers for its row (jsonl with idf over the
    references, tsv and text without), and the text's mean line their plain mean: fails if a format
    writes rows out of order, a column under another's name (P and R swapped), the idf setting dropped,
    or a mean of something else (the last batch, the F1 column as P)."""
    plain, with_idf = official_example_scores(minilm_dir, False), official_example_scores(minilm_dir, True)
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--format", "jsonl", "--idf"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 3, 4]
    for row, expected in zip(rows, with_idf):
        assert [row["precision"], row["recall"], row["f1"]] == pytest.approx(expected, abs=1e-5)
    assert "_idf_" in captured.err and "mean over 4 pairs" in captured.err
    out = tmp_path / "scores.tsv"
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--format", "tsv", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "line\tprecision\trecall\tf1" and len(lines) == 5
    for i, (line, expected) in enumerate(zip(lines[1:], plain), start=1):
        line_number, *values = line.split("\t")
        assert int(line_number) == i and [float(v) for v in values] == pytest.approx(expected, abs=1e-5)
    assert main(["-c", CANDS, "-r", REFS, *MODEL]) == 0
    text = capsys.readouterr().out.splitlines()
    number = r"(-?\d+\.\d{6})"
    for i, expected in enumerate(plain, start=1):  # six decimals: 5e-7 of rounding beside the 1e-5 of parity
        match = re.fullmatch(rf"{i}\tP={number}\tR={number}\tF1={number}", text[i - 1])
        assert match, text[i - 1]
        assert [float(v) for v in match.groups()] == pytest.approx(expected, abs=1e-5)
    match = re.fullmatch(rf"mean over 4 pairs: P={number} R={number} F1={number}", text[4])
    assert match, text[4]
    means = [sum(column) / len(plain) for column in zip(*plain)]
    assert [float(v) for v in match.groups()] == pytest.approx(means, abs=1e-5)
    assert text[5].startswith("hash: ")


def test_counts_are_singular_for_one(tmp_path, capsys):
    (tmp_path / "c.txt").write_text("the cat sat\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("a cat sat\nthe rain\n", encoding="utf-8")
    one = ["-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "c.txt")]
    assert main([*one, *MODEL]) == 0
    assert "mean over 1 pair: P=1.000000" in capsys.readouterr().out
    assert main(["-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), *MODEL]) == 2
    assert f"{tmp_path / 'c.txt'}: 1 line, {tmp_path / 'r.txt'}: 2 lines" in capsys.readouterr().err


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


def test_rescale_without_baseline_exits_2(capsys, tiny_models):
    assert main(["-c", CANDS, "-r", REFS, "--model", str(tiny_models["electra"]), "--rescale-with-baseline"]) == 2
    assert "no packaged rescale baseline" in capsys.readouterr().err


# ----- nothing destroyed ----------------------------------------------------------------------
def _folder_snapshot(folder) -> dict[str, bytes]:
    """Every file of a folder (hidden ones too) with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def pair_files(tmp_path):
    """Candidates and two reference files (copies of the examples) in a folder of their own."""
    names = {"c.txt": CANDS, "r.txt": REFS, "r2.txt": REFS2}
    for name, source in names.items():
        (tmp_path / name).write_bytes(open(source, "rb").read())
    return tmp_path


@pytest.mark.parametrize("target", ["c.txt", "r.txt", "r2.txt", "./sub/../c.txt", "link-to-c.txt", "hard-to-r2.txt",
                                    "r.txt.meta.json"])
def test_output_that_is_an_input_is_refused(pair_files, capsys, target, monkeypatch):
    (pair_files / "sub").mkdir()
    (pair_files / "link-to-c.txt").symlink_to(pair_files / "c.txt")
    os.link(pair_files / "r2.txt", pair_files / "hard-to-r2.txt")
    (pair_files / "r.txt.meta.json").write_bytes((pair_files / "r.txt").read_bytes())
    before = _folder_snapshot(pair_files)
    refs = ["r.txt.meta.json", "r2.txt"] if target == "r.txt.meta.json" else ["r.txt", "r2.txt"]
    output = "r.txt" if target == "r.txt.meta.json" else target
    monkeypatch.chdir(pair_files)  # contextlib.chdir is Python 3.11's; pyproject allows 3.10
    code = main(["-c", "c.txt", "-r", *refs, *MODEL, "-f", "jsonl", "-o", output])
    assert code == 2
    assert "is the input file" in capsys.readouterr().err
    assert _folder_snapshot(pair_files) == before


@pytest.mark.parametrize("dangling", [False, True], ids=["existing-target", "dangling"])
def test_an_output_symlink_is_written_through(pair_files, capsys, dangling):
    """`-o link` writes the file the link points to, as any open() would: replacing the link
    by a new file would leave the target stale (or, for a dangling link, never created)."""
    args = ["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL, "-f", "jsonl"]
    assert main([*args, "-o", str(pair_files / "plain.jsonl")]) == 0
    (pair_files / "runs").mkdir()
    target = pair_files / "runs" / "scores.jsonl"
    if not dangling:
        target.write_text("old rows\n")
    link = pair_files / "latest.jsonl"
    link.symlink_to(target)
    assert main([*args, "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == (pair_files / "plain.jsonl").read_text()
    assert sorted(p.name for p in (pair_files / "runs").iterdir()) == ["scores.jsonl"]  # no temporary left


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resume"])
@pytest.mark.parametrize(
    "bad, message",
    [
        ("empty", "has no lines"),
        ("short", "differ in length"),
        ("latin1", "line 4: not valid UTF-8"),
        ("missing", "file not found"),
    ],
)
def test_bad_inputs_leave_an_existing_output_untouched(pair_files, capsys, bad, message, resume):
    output = pair_files / "scores.jsonl"
    output.write_bytes(b'{"my": "earlier results"}\n')
    cands, refs = pair_files / "c.txt", pair_files / "r.txt"
    if bad == "empty":
        cands.write_bytes(b"")
        refs.write_bytes(b"")
    elif bad == "short":
        refs.write_bytes(b"one line\n")
    elif bad == "latin1":
        refs.write_bytes(refs.read_bytes().rsplit(b"\n", 2)[0] + "\ncaf\xe9\n".encode("latin-1"))
    else:
        refs.unlink()
    before = _folder_snapshot(pair_files)
    extra = ["--resume"] if resume else []
    assert main(["-c", str(cands), "-r", str(refs), *MODEL, "-f", "jsonl", "-o", str(output), *extra]) == 2
    assert message in capsys.readouterr().err
    assert _folder_snapshot(pair_files) == before  # no temporary file, no meta file left either


def test_empty_stdin_leaves_an_existing_output_untouched(pair_files, monkeypatch, capsys):
    """stdin cannot be checked beforehand: the run finds it empty only after it started writing."""
    output = pair_files / "scores.tsv"
    output.write_bytes(b"keep me\n")
    (pair_files / "empty.txt").write_bytes(b"")
    before = _folder_snapshot(pair_files)
    with open(pair_files / "empty.txt", encoding="utf-8") as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        assert main(["-c", "-", "-r", str(pair_files / "empty.txt"), *MODEL, "-f", "tsv", "-o", str(output)]) == 2
    assert "has no lines" in capsys.readouterr().err
    assert _folder_snapshot(pair_files) == before


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError], ids=["ctrl-c", "error"])
def test_a_failing_run_leaves_the_old_output_and_no_temporary_file(pair_files, monkeypatch, failure):
    from bertscore.scorer import BERTScorer

    original = BERTScorer.score
    calls = []

    def fail_on_second_chunk(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise failure("stop")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BERTScorer, "score", fail_on_second_chunk)
    output = pair_files / "scores.jsonl"
    output.write_bytes(b"old results\n")
    before = _folder_snapshot(pair_files)
    argv = ["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL, "-f", "jsonl",
            "-o", str(output), "--chunk-size", "2"]
    if failure is KeyboardInterrupt:
        assert main(argv) == 130
    else:  # not an input error: a bug, exit 1 with its traceback
        assert main(argv) == 1
    assert len(calls) == 2
    assert _folder_snapshot(pair_files) == before


def _takes_ctrl_c() -> None:
    """In the child, before Python starts: SIGINT back to its default, so that Python installs its
    KeyboardInterrupt handler. A shell without job control starts background commands with SIGINT
    ignored (`make test &`), the child inherits that, and a process that ignores SIGINT rightly
    ignores it: the test would then measure how it was launched, not the command."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_a_real_process_keeps_the_old_output(pair_files):
    """SIGINT while the temporary file is half written: exit 130, old output intact, temp removed."""
    refs = pair_files / "many.txt"
    refs.write_text("".join(f"reference number {i}\n" for i in range(200)), encoding="utf-8")
    output = pair_files / "scores.jsonl"
    output.write_bytes(b"old results\n")
    before = _folder_snapshot(pair_files)
    process = subprocess.Popen(
        [sys.executable, "-m", "bertscore", "-c", "-", "-r", str(refs), *MODEL, "-f", "jsonl", "-o", str(output),
         "--chunk-size", "1"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_takes_ctrl_c,
    )
    process.stdin.write("".join(f"candidate {i}\n" for i in range(3)))
    process.stdin.flush()  # stdin stays open: the run waits for more candidates
    deadline = time.monotonic() + 240  # a hang guard only: the assertion says what never happened
    while not any(p.name.endswith(".partial") and p.stat().st_size > 0 for p in pair_files.iterdir()):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the temporary output never filled (240 s)"
        time.sleep(0.05)  # the polling interval: the outcome does not depend on it
    assert output.read_bytes() == b"old results\n"  # the target is not written during the run
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)  # (a hang guard) not communicate(): it closes stdin, and an end of input racing the
    err = process.stderr.read()  # signal made the run stop on '3 candidates but more references'
    process.stdin.close()
    assert process.returncode == 130, err
    assert "interrupted" in err and "left as it was" in err
    assert _folder_snapshot(pair_files) == before


# Runs the command with a finalizer after each scoring call that takes a SIGINT while it runs: Python
# drops the KeyboardInterrupt raised there ("Exception ignored in ..."), as it did in tqdm.__del__
# when the test above timed out under load (benchmarks/ctrl_c.py measures how often).
CTRL_C_IN_A_FINALIZER = """
import os, signal, sys
from bertscore.cli import main
from bertscore.scorer import BERTScorer

class TakesTheSignal:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs here, inside the finalizer
            pass

score = BERTScorer.score
def score_then_finalize(self, *args, **kwargs):
    scores = score(self, *args, **kwargs)
    TakesTheSignal()  # finalized at once
    return scores
BERTScorer.score = score_then_finalize
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_ctrl_c_that_python_drops_in_a_finalizer_still_stops_the_run(pair_files):
    """The KeyboardInterrupt lost in a finalizer is raised again: exit 130, not a wait for stdin for ever."""
    output = pair_files / "scores.jsonl"
    output.write_bytes(b"old results\n")
    before = _folder_snapshot(pair_files)
    process = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_IN_A_FINALIZER, "-c", "-", "-r", str(pair_files / "r.txt"), *MODEL,
         "-f", "jsonl", "-o", str(output), "--chunk-size", "1"],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, preexec_fn=_takes_ctrl_c,
    )
    process.stdin.write("candidate 0\n")
    process.stdin.flush()  # stdin stays open: a run that missed the interrupt waits here for ever
    try:
        process.wait(timeout=300)  # a hang guard: the bug is a wait for ever, and the failure says so
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"the interrupt was lost: the run waited for more stdin\n{process.communicate()[1]}")
    err = process.stderr.read()
    process.stdin.close()
    assert process.returncode == 130, err
    assert "interrupted" in err and "left as it was" in err
    assert "Exception ignored" not in err, err
    assert _folder_snapshot(pair_files) == before


def test_the_ctrl_c_guard_leaves_the_process_hook_as_found(pair_files, capsys):
    """`main()` also runs inside other processes: their sys.unraisablehook is theirs again after it."""
    def theirs(unraisable):
        return None

    saved, sys.unraisablehook = sys.unraisablehook, theirs
    try:
        assert main(["-c", str(pair_files / "missing.txt"), "-r", str(pair_files / "r.txt"), *MODEL]) == 2
        assert sys.unraisablehook is theirs
    finally:
        sys.unraisablehook = saved
    assert "file not found" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["jsonl", "tsv", "json", "text"])
def test_fresh_output_replaces_the_target_and_its_stale_meta(pair_files, capsys, fmt):
    """The file equals stdout's bytes (plus the text summary), and a meta describing an older
    resumable file beside it is removed: it does not describe the new file."""
    output = pair_files / "scores.out"
    output.write_bytes(b"old\n" * 1000)
    (pair_files / "scores.out.meta.json").write_text("{}")
    args = ["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL, "-f", fmt]
    assert main(args) == 0
    expected = capsys.readouterr().out
    assert main([*args, "-o", str(output)]) == 0
    assert sorted(p.name for p in pair_files.iterdir()) == ["c.txt", "r.txt", "r2.txt", "scores.out"]
    assert output.read_text(encoding="utf-8") == expected
    assert oct(output.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    """The process umask, read without setting it (Linux: /proc/self/status)."""
    line = next(l for l in open("/proc/self/status").read().splitlines() if l.startswith("Umask:"))
    return int(line.split()[1], 8)


@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_unusable_output_folder_is_named(pair_files, capsys, where):
    folder = pair_files / ("no-such-folder" if where == "missing" else "c.txt")
    before = _folder_snapshot(pair_files)
    assert main(["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL,
                 "-o", str(folder / "out.jsonl"), "-f", "jsonl"]) == 2
    err = capsys.readouterr().err
    assert f"output folder {folder} " in err and "meta.json" not in err
    assert _folder_snapshot(pair_files) == before


def test_read_only_output_folder_is_named(pair_files, capsys):
    """Fails when an unwritable output folder is found out only after scoring, or not named. Runs
    wherever the folder really refuses files: a normal user, or root without CAP_DAC_OVERRIDE."""
    folder = pair_files / "locked"
    folder.mkdir(mode=0o555)
    if os.access(folder, os.W_OK):
        pytest.skip("this user writes into read-only folders (root's CAP_DAC_OVERRIDE)")
    assert main(["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL,
                 "-o", str(folder / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"output folder {folder} is not writable" in err and "meta.json" not in err


def test_output_that_is_a_folder_is_refused(pair_files, capsys):
    assert main(["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL, "-o", str(pair_files)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_output_to_a_device_is_written_in_place(pair_files, capsys):
    assert main(["-c", str(pair_files / "c.txt"), "-r", str(pair_files / "r.txt"), *MODEL, "-o", os.devnull]) == 0
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    assert not os.path.exists(os.devnull + ".meta.json")


# ----- the official command's flags -----------------------------------------------------------
OFFICIAL_CLI = [sys.executable, "-m", "bert_score_cli.score"]


def _scores_from_text(text: str) -> list[tuple[float, float, float]]:
    """Per-pair (P, R, F) from either CLI's text output: ours `i<TAB>P=..<TAB>R=..<TAB>F1=..`,
    the official `-s` lines `p<TAB>r<TAB>f`."""
    rows = []
    for line in text.splitlines():
        numbers = re.findall(r"(?:^|\t|=)(-?\d+\.\d{6})(?=\t|$)", line)
        if len(numbers) == 3 and "mean over" not in line and " P: " not in line:
            rows.append(tuple(float(n) for n in numbers))
    return rows


@pytest.mark.slow
def test_official_command_line_gives_the_official_numbers(minilm_dir, tmp_path, capsys):
    """The same argv, with the official flags, run by the official CLI (a process) and by ours (its
    `main`, in this process)."""
    pytest.importorskip("bert_score_cli")
    baseline = tmp_path / "baseline.csv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},{0.3 + 0.05 * k:.2f},{0.32 + 0.05 * k:.2f},"
                                                   f"{0.31 + 0.05 * k:.2f}\n" for k in range(7)))
    argv = ["--cand", CANDS, "--ref", REFS, REFS2, "--model", str(minilm_dir), "--num_layers", "3", "--batch_size", "1",
            "--idf", "--rescale_with_baseline", "--baseline_path", str(baseline), "--lang", "en", "-s", "--nthreads", "2"]
    theirs = subprocess.run([*OFFICIAL_CLI, *argv], capture_output=True, text=True, timeout=300)
    assert theirs.returncode == 0, theirs.stderr
    capsys.readouterr()
    assert main(argv) == 0
    ours = capsys.readouterr().out
    expected, got = _scores_from_text(theirs.stdout), _scores_from_text(ours)
    assert len(expected) == len(_lines(CANDS)) == len(got)
    assert max(abs(a - b) for x, y in zip(expected, got) for a, b in zip(x, y)) <= 2e-6
    assert "_idf_" in ours and "rescaled" in ours


def test_official_flags_parse_like_ours():
    from bertscore.cli import build_parser

    parser = build_parser()
    official = parser.parse_args(["--cand", "c", "--ref", "r1", "r2", "--model", "m", "--num_layers", "3",
                                  "--batch_size", "5", "--rescale_with_baseline", "--baseline_path", "b.csv",
                                  "--idf", "--lang", "EN", "-v"])
    ours = parser.parse_args(["-c", "c", "-r", "r1", "r2", "-m", "m", "-l", "3", "-b", "5", "--rescale-with-baseline",
                              "--baseline-path", "b.csv", "--idf", "--lang", "EN", "--verbose"])
    assert vars(official) == vars(ours)
    assert vars(parser.parse_args(["-c", "c", "-r", "r", "-s"]))["seg_level"] is True


def test_text_arguments_are_files_not_texts(capsys):
    """The official command scores `-c "a text" -r "a text"` as texts; here they stay file names."""
    assert main(["-c", "the cat sat", "-r", "the cat sat", *MODEL]) == 2
    err = capsys.readouterr().err
    assert "file not found: the cat sat" in err and "not supported" in err
    assert len(err.strip().splitlines()) == 1


def test_input_table_equals_the_files(tmp_path, capsys):
    import csv as csv_module

    cands, refs, refs2 = _lines(CANDS), _lines(REFS), _lines(REFS2)
    table = tmp_path / "data.csv"
    with table.open("w", encoding="utf-8", newline="") as handle:
        writer = csv_module.writer(handle)
        writer.writerow(["id", "hyp", "gold_a", "gold_b"])
        writer.writerows([i, c, a, b] for i, (c, a, b) in enumerate(zip(cands, refs, refs2)))
    assert main(["-c", CANDS, "-r", REFS, REFS2, *MODEL, "--format", "json", "--idf"]) == 0
    from_files = json.loads(capsys.readouterr().out)
    assert main(["--input", str(table), "--candidate-column", "hyp", "--reference-column", "gold_a",
                 "--reference-column", "gold_b", *MODEL, "--format", "json", "--idf"]) == 0
    from_table = json.loads(capsys.readouterr().out)
    assert from_table["f1"] == pytest.approx(from_files["f1"], abs=1e-7)
    assert from_table["hashcode"] == from_files["hashcode"] and "_idf_" in from_table["hashcode"]
    assert main(["--input", str(table), *MODEL]) == 2  # no recognised candidate column
    assert "data.csv" in capsys.readouterr().err
    assert main(["--input", str(table), "-c", CANDS, *MODEL]) == 2
    assert "not both" in capsys.readouterr().err


def test_cli_idf_equals_one_call_over_the_whole_input(minilm_scorer, capsys):
    """Chunked streaming keeps idf over every reference line (not per chunk), as one score() call."""
    refs = [[a, b] for a, b in zip(_lines(REFS), _lines(REFS2))]
    expected = BERTScorer(loaded_model=minilm_scorer.model, idf=True).score(_lines(CANDS), refs)
    assert main(["-c", CANDS, "-r", REFS, REFS2, *MODEL, "--format", "json", "--idf", "--chunk-size", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert torch.allclose(torch.tensor(out["f1"]), expected[2], atol=1e-6)


def test_notes_name_input_lines(tmp_path, capsys):
    cands = tmp_path / "c.txt"
    cands.write_text("a cat sat\nfine text\n\u200b\nmore text\n", encoding="utf-8")
    refs = tmp_path / "r.txt"
    refs.write_text("a cat sat\n\nthe end\nmore text\n", encoding="utf-8")
    assert main(["-c", str(cands), "-r", str(refs), *MODEL, "--chunk-size", "2", "--format", "tsv"]) == 0
    err = capsys.readouterr().err
    assert f"line 2 of {refs}" in err and f"line 3 of {cands}" in err


def test_cache_flags_and_auto_dtype(capsys):
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--cache-bytes", "0", "--cache-device", "cpu",
                 "--dtype", "auto", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    from bertscore.models.devices import resolve_dtype

    assert f"_{resolve_dtype('auto', 'cpu')}_cpu_" in out["hashcode"]
    assert main(["-c", CANDS, "-r", REFS, *MODEL, "--cache-bytes", "-1"]) == 2
    assert "--cache-bytes must be >= 0" in capsys.readouterr().err


@pytest.fixture(scope="module")
def systems(tmp_path_factory):
    """Three systems on 30 real WMT17 segments: the MT output, a near-copy of the reference, and
    the MT output again under another name (its difference to the first is exactly 0)."""
    from conftest import WMT17_DE_EN_FIXTURE, read_pairs_tsv

    cands, refs = read_pairs_tsv(WMT17_DE_EN_FIXTURE, 30)
    folder = tmp_path_factory.mktemp("systems")
    files = {"refs.txt": refs, "base.txt": cands, "good.txt": [r.replace(" the ", " a ", 1) for r in refs],
             "same.txt": cands}
    for name, lines in files.items():
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder, cands, refs, files["good.txt"]


def test_systems_table_equals_scores_and_the_paired_test(systems, minilm_scorer, capsys):
    from bertscore import stats

    folder, cands, refs, good = systems
    args = ["-r", str(folder / "refs.txt"), "--systems", *(str(folder / n) for n in ("base.txt", "good.txt")), *MODEL]
    assert main([*args, "--format", "json", "--n-resamples", "2000", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    base_f = minilm_scorer.score(cands, refs)[2]
    good_f = minilm_scorer.score(good, refs)[2]
    rows = report["systems"]
    assert [r["name"] for r in rows] == ["base.txt", "good.txt"] and report["segments"] == 30
    assert rows[0]["f1"]["mean"] == pytest.approx(base_f.mean().item(), abs=1e-6)
    assert rows[1]["f1_difference"]["difference"] == pytest.approx((good_f - base_f).mean().item(), abs=1e-6)
    expected = stats.paired_permutation(base_f.numpy(), good_f.numpy(), n_resamples=2000, seed=3)
    assert rows[1]["f1_difference"]["p_value"] == pytest.approx(expected.p_value)
    assert rows[1]["f1_difference"]["significant"] and report["test"]["method"] == "permutation"
    assert rows[0]["f1"]["low"] < rows[0]["f1"]["mean"] < rows[0]["f1"]["high"]
    assert report["hashcode"] == minilm_scorer.hash
    assert main([*args, "--paired-bs"]) == 0
    text = capsys.readouterr().out
    assert "(baseline)" in text and " *" in text and "paired bootstrap resampling, 1000 resamples" in text


def test_identical_systems_are_never_marked_significant(systems, capsys):
    """sacrebleu's rule gives an exact copy p = 1/(R+1); the table shows that p but no marker."""
    folder = systems[0]
    args = ["-r", str(folder / "refs.txt"), "--systems", *(str(folder / n) for n in ("base.txt", "same.txt", "good.txt")),
            *MODEL, "--n-resamples", "999"]
    assert main([*args, "--format", "json"]) == 0
    same, good = json.loads(capsys.readouterr().out)["systems"][1:]
    assert same["f1_difference"]["difference"] == 0.0 and same["f1_difference"]["p_value"] == pytest.approx(1 / 1000)
    assert same["f1_difference"]["identical"] is True and same["f1_difference"]["significant"] is False
    assert good["f1_difference"]["identical"] is False and good["f1_difference"]["significant"] is True
    assert main(args) == 0
    same_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("same.txt"))
    assert same_line.endswith("0.0010 (identical scores)") and " *" not in same_line


def test_systems_errors_exit_2(systems, tmp_path, capsys):
    folder = systems[0]
    short = tmp_path / "short.txt"
    short.write_text("one line\ntwo lines\n", encoding="utf-8")
    refs = ["-r", str(folder / "refs.txt")]
    cases = [
        ([*refs, "--systems", str(folder / "base.txt"), str(short)], "differ in length"),
        ([*refs, "--systems", str(folder / "base.txt"), "-c", str(folder / "base.txt")], "replaces -c"),
        ([*refs, "--systems", str(folder / "base.txt"), "--format", "jsonl"], "one table"),
        (["-c", str(folder / "base.txt"), *refs, "--paired-ar"], "compare systems"),
        ([*refs, "--systems", str(folder / "base.txt"), "--confidence", "1.5"], "strictly between 0 and 1"),
        ([*refs, "--systems", str(folder / "base.txt"), "-o", str(folder / "base.txt")], "input"),
        ([*refs, "--systems", str(folder / "base.txt"), str(folder / "base.txt")], "more than once"),
    ]
    for argv, message in cases:
        assert main([*argv, *MODEL]) == 2, argv
        assert message in capsys.readouterr().err, argv


def test_ci_of_a_single_run(systems, minilm_scorer, capsys):
    from bertscore import stats

    folder, cands, refs, _ = systems
    assert main(["-c", str(folder / "base.txt"), "-r", str(folder / "refs.txt"), *MODEL, "--ci", "--format", "json",
                 "--seed", "5", "--confidence", "0.9"]) == 0
    out = json.loads(capsys.readouterr().out)
    f1 = minilm_scorer.score(cands, refs)[2].numpy()
    expected = stats.bootstrap_ci(f1, n_resamples=1000, confidence=0.9, seed=5)
    assert out["ci"]["f1"]["low"] == pytest.approx(expected.low, abs=1e-6)
    assert out["ci"]["f1"]["high"] == pytest.approx(expected.high, abs=1e-6)


def test_systems_notes_name_input_lines(tmp_path, capsys):
    """--systems notes name a system's lines as the single-run notes do, not Python indices."""
    base, other, refs = tmp_path / "base.txt", tmp_path / "other.txt", tmp_path / "refs.txt"
    base.write_text("a cat sat\n\u200b\nmore text\n", encoding="utf-8")  # line 2: no content tokens
    other.write_text("a cat sat\nfine text\nmore text\n", encoding="utf-8")
    refs.write_text("a cat sat\nthe end\n\n", encoding="utf-8")  # line 3: empty
    assert main(["-r", str(refs), "--systems", str(base), str(other), *MODEL]) == 0
    err = capsys.readouterr().err
    assert f"line 2 of {base}" in err and f"line 3 of {refs}" in err
    assert "candidates[" not in err and "references[" not in err


def test_ci_of_a_single_pair_is_refused_naming_the_file(tmp_path, capsys):
    """An interval needs 2 pairs: the message names --ci and the file (not "scores has 1 segment(s)")."""
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("a cat sat\n", encoding="utf-8")
    refs.write_text("the cat sat\n", encoding="utf-8")
    out = tmp_path / "out.tsv"
    assert main(["-c", str(cands), "-r", str(refs), *MODEL, "--ci", "-o", str(out), "--format", "tsv"]) == 2
    assert f"--ci needs at least 2 pairs for a bootstrap interval; {cands} has 1" in capsys.readouterr().err
    assert not out.exists()
