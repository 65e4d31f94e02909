"""The machine a benchmark ran on (CPU model, the flags that decide reduced-precision speed: bf16/fp16
pay on a CPU only with native instructions, AVX512-BF16 / AMX or Arm's BF16, torch threads and versions),
recorded next to every figure (json) and printed as one line (markdown); and a run's report plumbing:
`begin` (the output switch, torch's threads, the machine line), `header` (title, the command that
reproduces it, the machine), `write_results` (md + json). Used by every script in benchmarks/.
"""

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
if str(ROOT / "benchmarks") not in sys.path:  # harness and shared_data, for a script loaded from elsewhere
    sys.path.append(str(ROOT / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every benchmark runs offline (before transformers is imported)
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from shared_data import DEFAULT_DATA  # noqa: E402  (also the scripts' --data default)
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
    return {"cpu_model": cpu_model(), "cpu_flags": [flag for flag in SPEED_FLAGS if flag in flags],
            "bf16_native": cpu_has_native("bfloat16"), "fp16_native": cpu_has_native("float16"),
            "logical_cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads() if torch_threads is None else torch_threads,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
            "transformers": transformers.__version__, "python": platform.python_version()}


def machine_line(info: dict[str, Any]) -> str:
    """One markdown line naming the CPU, its flags and the torch threads (for results files)."""
    flags = ", ".join(info["cpu_flags"]) or "none of " + ", ".join(SPEED_FLAGS[:6])
    precision = "; ".join(f"{name} {'native' if info[key] else 'emulated (slower than fp32)'}"
                          for name, key in (("bf16", "bf16_native"), ("fp16", "fp16_native")))
    return (
        f"CPU: {info['cpu_model']}, {info['logical_cpus']} logical CPUs, torch threads {info['torch_threads']}, "
        f"torch CPU capability {info['cpu_capability']}; flags: {flags}; {precision}; "
        f"torch {info['torch']}, transformers {info['transformers']}, Python {info['python']}."
    )


def write_results(folder: Path, stem: str, result: dict[str, Any], markdown: str | list[str]) -> None:
    """Save a benchmark's figures as `<stem>.json` (every number) and `<stem>.md` (the report: text, or
    its lines), and print the report."""
    if not isinstance(markdown, str):
        markdown = "\n".join(markdown) + "\n"
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


def begin(parser: argparse.ArgumentParser, argv: list[str] | None = None, threads: int | None = None,
          data: bool = False, threads_elsewhere: bool = False,
          serial_tokenizers: bool = False) -> tuple[argparse.Namespace, Path, dict[str, Any]]:
    """A benchmark's opening: the output switch added and read (`args.out` becomes the folder), with
    `threads` an option `--threads` (that default) and with `data` an option `--data`; torch set to
    `--threads` threads where the script has that option (with `threads_elsewhere`, the threads of the
    processes it starts: recorded, not set); with `serial_tokenizers`, TOKENIZERS_PARALLELISM=false
    unless the user set it (this process and its children); the machine recorded and printed.
    Returns (args, the output folder, machine_info)."""
    if serial_tokenizers:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if threads is not None:
        parser.add_argument("--threads", type=int, default=threads, help=f"torch threads (default {threads})")
    if data:
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (wmt17/, tatoeba/)")
    add_output_options(parser)
    args = parser.parse_args(argv)
    args.out = output_folder(args)
    threads = getattr(args, "threads", None)
    if threads and not threads_elsewhere:
        import torch

        torch.set_num_threads(threads)
    info = machine_info(threads if threads_elsewhere else None)
    print(machine_line(info), flush=True)
    return args, args.out, info


def command(script: str, argv: list[str]) -> str:
    """The command line that reproduces a run: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/<script> ...`."""
    return " ".join(["HF_HUB_OFFLINE=1 .venv/bin/python", f"benchmarks/{script}", *map(str, argv)])


def header(title: str, info: dict[str, Any] | None, reproduce: str | None = None, after: str = "") -> list[str]:
    """A report's first lines: its title, the command that reproduces it (`after` follows it on its
    line), the machine line."""
    lines = [f"# {title}", ""]
    if reproduce is not None:
        lines += [f"Reproduce: `{reproduce}`{after}", ""]
    return lines + ([machine_line(info), ""] if info is not None else [])
