"""One writer for every output, at every door that writes (the scoring CLI's -o, `--systems -o`,
`bertscore baseline -o`, the benchmarks' write_results, the Space's download): a regular file is
replaced atomically, a device, FIFO or /dev/stdout is written in place and stays what it was, no
sidecar lands beside a non-regular output, a symlink writes its target, an input is never an
output, and files get the mode a plain open() gives without the umask ever being changed.

The devices are the machine's /dev/null and /dev/full, named through symlinks in a temporary folder
(no mknod: a normal user runs these tests), so "nothing lands beside the output" is checked in that
folder; a guard fails the test before anything would be created or replaced in /dev (a writer that
took a device for a regular file would otherwise replace /dev/null where /dev is writable, as root).
"""

from __future__ import annotations

import csv
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

import app
from bertscore import EMBEDDED_MODEL_NAME, baselines
from bertscore.cli.baseline import main as baseline_main
from bertscore.cli import main
from bertscore.output_files import UnsafeOutput, write_text
from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from machine import write_results  # noqa: E402

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4", "--device", "cpu"]
CORPUS = [f"sentence number {i} about {w}" for i, w in enumerate("cats dogs rain sun trees rivers cars books".split())]


DEV = Path("/dev")


class Devices(dict):
    """{name: symlink} of the devices this machine has; asking for one it lacks skips the test, saying so."""

    def __missing__(self, name: str) -> Path:
        pytest.skip(f"{DEV / name} does not exist on this machine (Linux has it; macOS, for one, has no /dev/full): "
                    f"this test writes to it")


def _device(folder: Path, name: str) -> Path | None:
    """A symlink in `folder` to the machine's /dev/`name` (a character device any user may write); None
    where the machine has no such device."""
    device = DEV / name
    if not device.exists():
        return None
    if not stat.S_ISCHR(os.stat(device).st_mode):
        pytest.fail(f"{device} is not a character device on this machine: these tests write to /dev/null and /dev/full")
    path = folder / name
    path.symlink_to(device)
    return path


def _in_dev(path: str | os.PathLike) -> bool:
    return Path(os.path.realpath(path)).parent == DEV


@pytest.fixture
def devices(tmp_path, monkeypatch) -> Devices:
    """/dev/null and /dev/full through symlinks in a folder of their own; creating or replacing a
    file in /dev (a temporary file beside the device, a rename over it) fails the test instead."""
    real_open, real_replace, real_rename = os.open, os.replace, os.rename

    def guarded_open(path, flags, *args, **kwargs):
        assert not (flags & os.O_CREAT and _in_dev(path)), f"the writer created {path} in /dev"
        return real_open(path, flags, *args, **kwargs)

    def guarded(real):
        def move(src, dst, *args, **kwargs):
            assert not _in_dev(dst), f"the writer replaced {dst} in /dev"
            return real(src, dst, *args, **kwargs)
        return move

    monkeypatch.setattr(os, "open", guarded_open)
    monkeypatch.setattr(os, "replace", guarded(real_replace))
    monkeypatch.setattr(os, "rename", guarded(real_rename))
    folder = tmp_path / "devices"
    folder.mkdir()
    linked = {name: _device(folder, name) for name in ("null", "full")}
    return Devices({name: path for name, path in linked.items() if path is not None})


def _is_device(path: Path) -> bool:
    """Still the fixture's symlink, still to a character device: neither replaced nor written over."""
    return path.is_symlink() and stat.S_ISCHR(os.stat(path).st_mode)


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


class FifoReader:
    """A FIFO in `folder` read to its end by a thread (the writer opens it, writes, closes it)."""

    def __init__(self, folder: Path, name: str = "pipe"):
        self.path = folder / name
        os.mkfifo(self.path)
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as handle:
            self.data = handle.read()

    def result(self) -> bytes:
        self.thread.join(timeout=120)  # a hang guard only: a writer that never comes fails, saying so
        assert not self.thread.is_alive(), "nothing opened the FIFO for writing and closed it in 120 s"
        return self.data


def _umask() -> int:
    """The process umask, read without changing it (Linux: /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    raise AssertionError("no Umask line in /proc/self/status")


@pytest.fixture
def pair_files(tmp_path) -> Path:
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "c.txt").write_text("the cat sat on the mat\nit rained all day\nhello there\n", encoding="utf-8")
    (folder / "r.txt").write_text("a cat sat on a mat\nthe rain fell all day\nhi there\n", encoding="utf-8")
    return folder


def _score_args(folder: Path) -> list[str]:
    return ["-c", str(folder / "c.txt"), "-r", str(folder / "r.txt"), *MODEL, "-f", "jsonl"]


# ----- the scoring CLI: -o ---------------------------------------------------------------------
def test_cli_writes_a_device_in_place(pair_files, devices, capsys) -> None:
    folder = devices["null"].parent
    assert main([*_score_args(pair_files), "-o", str(devices["null"])]) == 0
    assert _is_device(devices["null"])
    assert _names(folder) == set(devices)  # no meta, no temporary file, nothing replaced


def test_cli_on_a_full_device_exits_2_and_leaves_it_a_device(pair_files, devices, capsys) -> None:
    folder = devices["full"].parent
    assert main([*_score_args(pair_files), "-o", str(devices["full"])]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and "Traceback" not in err
    assert _is_device(devices["full"]) and _names(folder) == set(devices)


def test_cli_resume_refuses_a_device(pair_files, devices, capsys) -> None:
    assert main([*_score_args(pair_files), "-o", str(devices["null"]), "--resume"]) == 2
    assert "regular file" in capsys.readouterr().err
    assert _is_device(devices["null"]) and _names(devices["null"].parent) == set(devices)


def test_cli_writes_a_fifo_as_a_regular_run_writes_its_file(pair_files, tmp_path, capsys) -> None:
    regular = tmp_path / "scores.jsonl"
    assert main([*_score_args(pair_files), "-o", str(regular)]) == 0
    reader = FifoReader(tmp_path)
    assert main([*_score_args(pair_files), "-o", str(reader.path)]) == 0
    assert reader.result() == regular.read_bytes() and len(regular.read_bytes().splitlines()) == 3
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)
    assert not (tmp_path / "pipe.meta.json").exists()


def test_cli_writes_dev_stdout_in_place_keeping_the_shells_file(pair_files, tmp_path) -> None:
    """`-o /dev/stdout` with stdout appended to a file (`>> log`): the file keeps its first line,
    gets the rows after it, and is the same file (not replaced by a rename)."""
    log = tmp_path / "log.txt"
    log.write_text("kept line\n", encoding="utf-8")
    inode = os.stat(log).st_ino
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    with open(log, "ab") as stdout:
        done = subprocess.run([sys.executable, "-m", "bertscore", *_score_args(pair_files), "-o", "/dev/stdout"],
                              cwd=REPO_ROOT, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "kept line" and [json.loads(line)["line"] for line in lines[1:]] == [1, 2, 3]
    assert os.stat(log).st_ino == inode


def test_cli_refuses_an_output_that_is_an_input_through_a_symlink(pair_files, capsys) -> None:
    link = pair_files / "out.jsonl"
    link.symlink_to(pair_files / "r.txt")
    before = (pair_files / "r.txt").read_bytes()
    assert main([*_score_args(pair_files), "-o", str(link)]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert (pair_files / "r.txt").read_bytes() == before and link.is_symlink()


# ----- --systems -o ----------------------------------------------------------------------------
def _systems_args(folder: Path) -> list[str]:
    return ["-r", str(folder / "r.txt"), "--systems", str(folder / "c.txt"), str(folder / "r.txt"), *MODEL,
            "--format", "json", "--n-resamples", "50"]


def test_systems_table_to_a_device_a_full_device_a_symlink_and_a_fifo(pair_files, devices, tmp_path, capsys) -> None:
    regular = tmp_path / "table.json"
    assert main([*_systems_args(pair_files), "-o", str(regular)]) == 0
    expected = regular.read_bytes()
    assert json.loads(expected)["systems"][0]["name"] == "c.txt"

    assert main([*_systems_args(pair_files), "-o", str(devices["null"])]) == 0
    assert _is_device(devices["null"])
    capsys.readouterr()
    assert main([*_systems_args(pair_files), "-o", str(devices["full"])]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert _is_device(devices["full"]) and _names(devices["full"].parent) == set(devices)

    target, link = tmp_path / "elsewhere" / "table.json", tmp_path / "link.json"
    target.parent.mkdir()
    link.symlink_to(target)
    assert main([*_systems_args(pair_files), "-o", str(link)]) == 0
    assert link.is_symlink() and target.read_bytes() == expected

    reader = FifoReader(tmp_path)
    assert main([*_systems_args(pair_files), "-o", str(reader.path)]) == 0
    assert reader.result() == expected and stat.S_ISFIFO(os.lstat(reader.path).st_mode)


def test_systems_refuse_an_output_that_is_an_input(pair_files, capsys) -> None:
    before = (pair_files / "c.txt").read_bytes()
    os.link(pair_files / "c.txt", pair_files / "hardlink.txt")
    assert main([*_systems_args(pair_files), "-o", str(pair_files / "hardlink.txt")]) == 2
    assert "is the input file" in capsys.readouterr().err
    assert (pair_files / "c.txt").read_bytes() == before


# ----- bertscore baseline -o -------------------------------------------------------------------
@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    return path


def _baseline_args(corpus: Path, output: Path, *extra: str) -> list[str]:
    return ["--model", EMBEDDED_MODEL_NAME, "--corpus", str(corpus), "--pairs", "3", "--device", "cpu", "-q",
            "-o", str(output), *extra]


def test_baseline_to_a_device_needs_a_sidecar_elsewhere(corpus, devices, tmp_path, capsys) -> None:
    folder = devices["null"].parent
    assert baseline_main(_baseline_args(corpus, devices["null"])) == 2
    err = capsys.readouterr().err
    assert f"{devices['null']} is not a regular file" in err and f"{devices['null']}.json" in err
    assert _is_device(devices["null"]) and _names(folder) == set(devices)

    regular = tmp_path / "regular.tsv"
    assert baseline_main(_baseline_args(corpus, regular)) == 0
    sidecar = tmp_path / "provenance.json"
    assert baseline_main(_baseline_args(corpus, devices["null"], "--sidecar", str(sidecar))) == 0
    assert _is_device(devices["null"]) and _names(folder) == set(devices)
    assert sidecar.read_bytes() == (tmp_path / "regular.tsv.json").read_bytes()

    capsys.readouterr()
    assert baseline_main(_baseline_args(corpus, devices["full"], "--sidecar", str(tmp_path / "s2.json"))) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert _is_device(devices["full"]) and _names(folder) == set(devices)


def test_baseline_to_a_fifo_and_through_a_symlink(corpus, tmp_path, capsys) -> None:
    regular = tmp_path / "regular.tsv"
    assert baseline_main(_baseline_args(corpus, regular)) == 0
    reader = FifoReader(tmp_path)
    assert baseline_main(_baseline_args(corpus, reader.path, "--sidecar", str(tmp_path / "fifo.json"))) == 0
    assert reader.result() == regular.read_bytes()
    assert regular.read_text().startswith("LAYER,P,R,F\n0,")

    target, link = tmp_path / "elsewhere" / "b.tsv", tmp_path / "link.tsv"
    target.parent.mkdir()
    link.symlink_to(target)
    assert baseline_main(_baseline_args(corpus, link)) == 0
    assert link.is_symlink() and target.read_bytes() == regular.read_bytes()
    assert (tmp_path / "link.tsv.json").read_bytes() == (tmp_path / "regular.tsv.json").read_bytes()


def test_baseline_refuses_its_corpus_as_the_sidecar(corpus, tmp_path, capsys) -> None:
    before = corpus.read_bytes()
    assert baseline_main(_baseline_args(corpus, tmp_path / "b.tsv", "--sidecar", str(corpus))) == 2
    assert "is the input file" in capsys.readouterr().err
    assert corpus.read_bytes() == before and not (tmp_path / "b.tsv").exists()


def _table() -> baselines.BaselineTable:
    mean = torch.tensor([[0.5, 0.6, 0.7], [0.25, 0.125, 0.375]], dtype=torch.float64)
    return baselines.BaselineTable(mean=mean, standard_error=torch.zeros_like(mean), model="m", revision=None,
                                   lang="en", seed=0, num_pairs=2, num_sentences=4, corpus_sha256="0" * 64,
                                   scorer_hash="h", device="cpu")


def test_write_baseline_api_refuses_a_sidecar_beside_a_device(devices, tmp_path) -> None:
    with pytest.raises(UnsafeOutput, match="not a regular file"):
        baselines.write_baseline(_table(), devices["null"])
    assert _names(devices["null"].parent) == set(devices)
    sidecar = baselines.write_baseline(_table(), devices["null"], sidecar=tmp_path / "side.json")
    assert json.loads(sidecar.read_text())["mean"]["P"] == [0.5, 0.25] and _is_device(devices["null"])


# ----- the benchmarks' write_results -----------------------------------------------------------
def test_benchmark_results_to_a_device_and_through_a_symlink(devices, tmp_path) -> None:
    folder = devices["null"].parent
    os.rename(devices["null"], folder / "speed.json")  # the JSON goes to a device
    target = tmp_path / "report.md"
    (folder / "speed.md").symlink_to(target)
    write_results(folder, "speed", {"pairs_per_second": 12.5}, "# speed\n")
    assert _is_device(folder / "speed.json") and (folder / "speed.md").is_symlink()
    assert target.read_text() == "# speed\n"
    os.rename(devices["full"], folder / "full.json")
    with pytest.raises(OSError, match="No space left"):
        write_results(folder, "full", {"x": 1}, "# x\n")
    assert _is_device(folder / "full.json")
    plain = tmp_path / "plain"
    write_results(plain, "r", {"x": [1, 2]}, "# r\n")
    assert json.loads((plain / "r.json").read_text()) == {"x": [1, 2]} and (plain / "r.md").read_text() == "# r\n"
    assert stat.S_IMODE(os.stat(plain / "r.json").st_mode) == 0o666 & ~_umask()


def test_figures_go_through_the_writer(devices, tmp_path) -> None:
    from bertscore.plot import histogram_figure, save_figure

    figure = histogram_figure([0.2, 0.4, 0.5], "F1")
    save_figure(figure, devices["null"])
    assert _is_device(devices["null"]) and _names(devices["null"].parent) == set(devices)
    target, link = tmp_path / "real.png", tmp_path / "link.png"
    link.symlink_to(target)
    save_figure(figure, link)
    assert link.is_symlink() and target.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


# ----- the Space's download ----------------------------------------------------------------------
def test_space_download_is_a_whole_regular_file_with_open_modes(tmp_path) -> None:
    handlers = app.Handlers(app.ScoringService(app.AppConfig.from_env({"BERTSCORE_APP_DEVICE": "cpu"})))
    pasted = "candidate,reference\nthe cat sat,a cat sat\nhello world,goodbye moon\n"
    # upload, pasted, model, layer, rescale, baseline language, whole texts, system B, idf
    error, shown, _, _, download = handlers.batch(None, pasted, EMBEDDED_MODEL_NAME, "", False, "", False, None,
                                                  False, progress=lambda *a, **k: None)
    assert error == "" and download["visible"] and shown["visible"]
    path, shown = Path(download["value"]), shown["value"]
    assert stat.S_ISREG(os.lstat(path).st_mode)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_umask()  # what open() gives, not mkstemp's 0600
    assert _names(path.parent) == {"bertscore_results.csv"}  # no temporary file left
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "row,F1 (raw),P (raw),R (raw),candidate,references,hashcode"  # the page's columns, scores first
    rows = list(csv.DictReader(lines))
    assert [row["candidate"] for row in rows] == ["the cat sat", "hello world"]
    assert [f"{float(row['F1 (raw)']):.4f}" for row in rows] == shown["F1 (raw)"].tolist()  # full precision


# ----- the writer itself: inputs, modes, the umask ---------------------------------------------
def test_write_text_refuses_an_input_and_replaces_a_regular_file_whole(tmp_path) -> None:
    source = tmp_path / "input.txt"
    source.write_text("precious\n")
    with pytest.raises(UnsafeOutput, match="is the input file"):
        write_text(source, "overwritten\n", inputs=[source])
    assert source.read_text() == "precious\n"
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    os.chmod(out, 0o600)
    write_text(out, "new\n")
    assert out.read_text() == "new\n" and stat.S_IMODE(os.stat(out).st_mode) == 0o600  # permissions kept
    assert _names(tmp_path) == {"input.txt", "out.txt"}


UMASK_PROBE = r"""
import json, os, stat, sys
from pathlib import Path
os.umask(0o027)  # this fresh interpreter's own setting, made before any of our code runs

def status_umask():
    return [l.split()[1] for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("Umask:")][0]

calls = []
real_umask = os.umask
def spy(mask):
    calls.append(mask)
    return real_umask(mask)
os.umask = spy  # any call from our code is seen

import torch
from bertscore import baselines
from bertscore.output_files import write_text
folder = Path(sys.argv[1])
write_text(folder / "new.txt", "x\n")
open(folder / "plain.txt", "w").close()  # the independent route: what open() gives here
(folder / "kept.txt").write_text("old\n"); os.chmod(folder / "kept.txt", 0o604)
write_text(folder / "kept.txt", "new\n")
mean = torch.tensor([[0.5, 0.5, 0.5]], dtype=torch.float64)
table = baselines.BaselineTable(mean=mean, standard_error=mean, model="m", revision=None, lang=None, seed=0,
                                num_pairs=1, num_sentences=2, corpus_sha256="0", scorer_hash="h", device="cpu")
baselines.write_baseline(table, folder / "b.tsv")
modes = {p.name: oct(stat.S_IMODE(os.stat(p).st_mode)) for p in folder.iterdir()}
print(json.dumps({"calls": calls, "umask": status_umask(), "modes": modes}))
"""


def test_the_umask_is_never_touched_and_files_get_open_modes(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", UMASK_PROBE, str(tmp_path)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["calls"] == [] and report["umask"] == "0027"
    assert report["modes"] == {"new.txt": "0o640", "kept.txt": "0o604", "b.tsv": "0o640", "b.tsv.json": "0o640",
                               "plain.txt": "0o640"}


def test_no_module_sets_the_umask() -> None:
    sources = [*(REPO_ROOT / "bertscore").rglob("*.py"), REPO_ROOT / "app.py", REPO_ROOT / "bertscore_metric.py"]
    assert [str(p) for p in sources if "os.umask(" in p.read_text(encoding="utf-8")] == []


# ----- found in review: refused before any work, never one output over another ----------------
class _NoModel(Exception):
    """Raised by a patched model loader: the check under test must come before any model loads."""


@pytest.fixture
def no_model(monkeypatch):
    from bertscore.models import loading as models
    from bertscore.models import shared as shared_models

    def refuse(*args, **kwargs):
        raise _NoModel("a model was loaded before the output was checked")

    monkeypatch.setattr(models, "load_model", refuse)
    monkeypatch.setattr(shared_models.SharedModels, "get", refuse)  # loaded or reused: no encoder yet


def test_baseline_refuses_a_sidecar_that_is_the_output_itself(corpus, tmp_path, capsys, no_model) -> None:
    """`-o b.tsv --sidecar b.tsv` (or ./b.tsv, or a link to it) wrote the JSON over the baseline, exit 0."""
    output = tmp_path / "b.tsv"
    link = tmp_path / "link.json"
    link.symlink_to(output)
    for sidecar in (output, tmp_path / "." / "b.tsv", link):
        assert baseline_main(_baseline_args(corpus, output, "--sidecar", str(sidecar))) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertscore baseline: error: ") and str(output) in err and "Traceback" not in err
        assert not output.exists()
    with pytest.raises(UnsafeOutput, match="another output of this run"):
        baselines.write_baseline(_table(), output, sidecar=output)
    assert not output.exists()


def test_baseline_names_a_missing_corpus_before_making_output_folders(tmp_path, capsys) -> None:
    output = tmp_path / "new" / "b.tsv"
    missing = tmp_path / "missing.txt"
    assert baseline_main(_baseline_args(missing, output)) == 2
    assert f"corpus file not found: {missing}" in capsys.readouterr().err
    assert not output.parent.exists()


@pytest.mark.parametrize("kind", ["dangling link into a missing folder", "a folder that refuses files",
                                  "a closed descriptor"])
def test_unusable_outputs_are_refused_before_the_model_loads(kind, pair_files, corpus, tmp_path, capsys,
                                                             no_model) -> None:
    """They passed the up-front check and failed only after scoring (root passes os.access)."""
    if kind == "dangling link into a missing folder":
        output = tmp_path / "link.txt"  # an extension every mode writes (.jsonl: not --systems, refused first)
        output.symlink_to(tmp_path / "nowhere" / "x.txt")
        words = f"{tmp_path / 'nowhere'} does not exist"
    elif kind == "a folder that refuses files":
        output, words = Path("/proc/scores.txt"), "/proc"  # procfs never accepts a new file, even from root
    else:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.close(fd)  # a descriptor number this process no longer has
        output, words = Path(f"/dev/fd/{fd}"), f"/dev/fd/{fd}"
    for argv in (_score_args(pair_files) + ["-o", str(output)],
                 ["-r", str(pair_files / "r.txt"), "--systems", str(pair_files / "c.txt"), str(pair_files / "r.txt"),
                  *MODEL, "-o", str(output)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertscore: error: ") and words in err, err
    assert baseline_main(_baseline_args(corpus, output, "--sidecar", str(tmp_path / "s.json"))) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertscore baseline: error: ") and words in err, err


def test_benchmarks_write_results_through_the_one_writer() -> None:
    """Results written with Path.write_text were torn by an interrupted run and replaced no device
    atomically; only the benchmarks' own input files (texts, corpora, scripts) may be written so."""
    inputs = ("corpus_file.write_text(", "cands.write_text(", "refs.write_text(", "pair_file.write_text(",
              "script.write_text(", "baseline.write_text(", '(folder / "c.txt").write_text(',
              '(folder / "r.txt").write_text(', "text_file.write_text(")
    found = []
    for path in sorted((REPO_ROOT / "benchmarks").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if (".write_text(" in line or ".write_bytes(" in line or "os.replace(" in line) and not any(
                    allowed in line for allowed in inputs):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert found == []


def test_baseline_ctrl_c_exits_130_without_a_traceback_and_keeps_the_old_file(corpus, tmp_path, capsys,
                                                                               monkeypatch) -> None:
    from bertscore import calibrate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate, "compute_baseline", interrupted)
    output = tmp_path / "b.tsv"
    output.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n", encoding="utf-8")
    assert baseline_main(_baseline_args(corpus, output)) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip() == f"bertscore baseline: interrupted: {output} is left as it was"
    assert output.read_text(encoding="utf-8") == "LAYER,P,R,F\n0,0.5,0.5,0.5\n"


def test_the_baseline_file_is_never_the_output(pair_files, tmp_path, capsys, no_model) -> None:
    """`--baseline-path b.tsv -o b.tsv` replaced the user's baseline with scores (it was not an input)."""
    baseline = tmp_path / "b.tsv"
    text = "LAYER,P,R,F\n" + "".join(f"{i},0.5,0.5,0.5\n" for i in range(7))
    baseline.write_text(text, encoding="utf-8")
    rescaled = ["--rescale-with-baseline", "--baseline-path", str(baseline), "-o", str(baseline)]
    without_f = _score_args(pair_files)[:-2]  # -o b.tsv writes TSV (-f jsonl would be refused first)
    for argv in (without_f + rescaled,
                 ["-r", str(pair_files / "r.txt"), "--systems", str(pair_files / "c.txt"), str(pair_files / "r.txt"),
                  *MODEL, *rescaled]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("bertscore: error: ") and f"is the input file {baseline}" in err, err
    assert baseline.read_text(encoding="utf-8") == text


def test_a_device_the_machine_lacks_skips_the_test_that_writes_it_saying_so() -> None:
    """Where /dev/full does not exist (macOS), its tests skip with the reason; they do not fail."""
    with pytest.raises(pytest.skip.Exception, match=r"/dev/full does not exist on this machine"):
        Devices({})["full"]
