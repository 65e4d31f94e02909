"""The machine a benchmark ran on: CPU model, the CPU flags that decide reduced-precision speed,
torch threads and versions, recorded next to every figure (json) and printed as one line (markdown).

bf16/fp16 pay on a CPU only with native instructions (AVX512-BF16 / AMX on x86, BF16 on Arm);
elsewhere they are emulated and several times slower than fp32, so a timing means little
without these flags. Used by every script in benchmarks/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bertscore.models.devices import cpu_flags, cpu_has_native, cpu_model  # noqa: E402
from bertscore.output_files import write_text  # noqa: E402  (the one writer: atomic, devices in place)

# The figures the docs quote (tracked); a run rewrites them only when asked (--update-results).
RESULTS = ROOT / "benchmarks" / "results"
# Where a run writes otherwise (git-ignored), so that trying a benchmark never rewrites tracked files.
SCRATCH = ROOT / "benchmarks" / "scratch"

# Vector/matrix features that set CPU matmul speed per precision (x86, then Arm names).
SPEED_FLAGS = (
    "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
    "amx_fp16", "amx_int8", "asimd", "sve", "sve2", "bf16", "fphp", "asimdhp", "i8mm",
)


def machine_info(torch_threads: int | None = None) -> dict[str, Any]:
    """CPU model, its speed-relevant flags, torch threads (`torch_threads` when the measured
    work runs elsewhere, e.g. in child processes), and the library versions."""
    import torch
    import transformers

    flags = cpu_flags()
    return {
        "cpu_model": cpu_model(),
        "cpu_flags": [flag for flag in SPEED_FLAGS if flag in flags],
        "bf16_native": cpu_has_native("bfloat16"),
        "fp16_native": cpu_has_native("float16"),
        "logical_cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads() if torch_threads is None else torch_threads,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }


def machine_line(info: dict[str, Any]) -> str:
    """One markdown line naming the CPU, its flags and the torch threads (for results files)."""
    flags = ", ".join(info["cpu_flags"]) or "none of " + ", ".join(SPEED_FLAGS[:6])
    precision = "; ".join(
        f"{name} {'native' if info[key] else 'emulated (slower than fp32)'}"
        for name, key in (("bf16", "bf16_native"), ("fp16", "fp16_native"))
    )
    return (
        f"CPU: {info['cpu_model']}, {info['logical_cpus']} logical CPUs, torch threads {info['torch_threads']}, "
        f"torch CPU capability {info['cpu_capability']}; flags: {flags}; {precision}; "
        f"torch {info['torch']}, transformers {info['transformers']}, Python {info['python']}."
    )


def write_results(folder: Path, stem: str, result: dict[str, Any], markdown: str) -> None:
    """Save a benchmark's figures as `<stem>.json` (every number) and `<stem>.md` (the report), and
    print the report."""
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / f"{stem}.json", json.dumps(result, indent=2) + "\n")
    write_text(folder / f"{stem}.md", markdown)
    print(markdown)
    print(f"wrote {folder / stem}.json and .md", flush=True)


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """The one output switch of every benchmark: `--out FOLDER`, or `--update-results` to rewrite the
    tracked benchmarks/results/; by default a run writes to the git-ignored benchmarks/scratch/."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--out", type=Path, default=None,
                       help="folder for the result files (default: benchmarks/scratch/, git-ignored)")
    group.add_argument("--update-results", action="store_true",
                       help="rewrite the tracked files in benchmarks/results/ (the figures the docs quote)")


def output_folder(args: argparse.Namespace) -> Path:
    """The folder `add_output_options` chose, said aloud so that a run tells where its files went."""
    folder = args.out if args.out is not None else RESULTS if args.update_results else SCRATCH
    hint = "" if args.out is not None or args.update_results else " (--update-results rewrites benchmarks/results/)"
    print(f"results go to {folder}{hint}", flush=True)
    return folder
