"""Precision choices per device: dtype names, `dtype="auto"`, and whether reduced precision pays.

bfloat16/float16 only pay where the hardware computes them natively: a GPU, or a CPU with
AVX512-BF16 / AMX (x86) or BF16 (Arm). Elsewhere PyTorch emulates them and the encoder runs
several times slower than in float32 (6x was measured on an AVX2-only EPYC), so asking for
them there earns a warning with the measured ratio, and `"auto"` picks float32.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import platform
import threading
import time

import torch

from .inputs import InputError
from .notes import advice

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float32"}
# CPU features that compute bf16 (fp16) matrix products natively.
NATIVE_CPU_FLAGS = {
    "bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
    "float16": ("avx512_fp16", "amx_fp16", "fphp", "asimdhp"),
}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device | str | None = None) -> str:
    """Canonical dtype name. None -> float32 on every device (the exact numbers);
    "auto" -> bfloat16 on a bf16-capable GPU or CPU, else float32 (the hash records the result).
    """
    if dtype is None:
        return "float32"
    if isinstance(dtype, torch.dtype):
        names = {v: k for k, v in DTYPES.items()}
        if dtype not in names:
            raise InputError(f"dtype {dtype} is not supported; use one of {sorted(DTYPES)} or 'auto'")
        return names[dtype]
    name = _ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if name == "auto":
        return auto_dtype(torch.device(device) if device is not None else torch.device("cpu"))
    if name not in DTYPES:
        raise InputError(f"dtype {dtype!r} is not supported; use one of {sorted(DTYPES)} or 'auto'")
    return name


AUTO_SPEEDUP_RATIO = 0.8  # "auto" takes bf16 on a CPU only where it measured at most 0.8x fp32's time


def auto_dtype(device: torch.device) -> str:
    """bfloat16 where it is computed natively and pays (a CUDA GPU with bf16; a CPU with bf16
    instructions where a calibration matmul ran faster than in float32), else float32."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        major, _ = torch.cuda.get_device_capability(index)
        return "bfloat16" if major >= 8 else "float32"
    if device.type == "cpu" and cpu_has_native("bfloat16") and cpu_slowdown("bfloat16") < AUTO_SPEEDUP_RATIO:
        return "bfloat16"
    return "float32"


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (x86 `flags`, Arm `Features`) from /proc/cpuinfo; empty where unknown."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip().lower() in ("flags", "features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def cpu_model() -> str:
    """The CPU's model name (for benchmark reports)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip().lower() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_has_native(dtype: str) -> bool:
    """Whether this CPU advertises native matrix instructions for `dtype`."""
    return bool(cpu_flags() & set(NATIVE_CPU_FLAGS.get(dtype, ())))


@functools.lru_cache(maxsize=8)
def cpu_slowdown(dtype: str) -> float:
    """Measured time of a linear layer in `dtype` over the same in float32, on this CPU (cached).

    A layer of an encoder's shape ([2048, 384] x [384, 1536]), best of 5 interleaved runs: about
    0.1 s, once per process and dtype.
    """
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(2048, 384, generator=generator)
    weight = torch.randn(1536, 384, generator=generator)
    reduced = (inputs.to(DTYPES[dtype]), weight.to(DTYPES[dtype]))
    best = {"float32": float("inf"), dtype: float("inf")}
    with torch.inference_mode():
        for _ in range(5):
            for name, (x, w) in (("float32", (inputs, weight)), (dtype, reduced)):
                start = time.perf_counter()
                torch.nn.functional.linear(x, w)
                best[name] = min(best[name], time.perf_counter() - start)
    return best[dtype] / max(best["float32"], 1e-9)


def reduced_precision_note(dtype: str, device: torch.device) -> str | None:
    """A note when `dtype` on this CPU is slower than float32 (None otherwise).

    Only reduced precision on a CPU is measured (GPUs compute bf16/fp16 natively); the ratio is
    measured once per process, and the scorer reports the note with every call it slows down.
    """
    if dtype == "float32" or device.type != "cpu":
        return None
    ratio = cpu_slowdown(dtype)
    logger.info("%s on this CPU: %.2fx the time of float32", dtype, ratio)
    if ratio <= 1.0:
        return None
    flags = "/".join(NATIVE_CPU_FLAGS[dtype])
    why = (
        f"it advertises {flags}, but {dtype} measured slower here" if cpu_has_native(dtype)
        else f"it lacks {flags} instructions, so {dtype} is emulated"
    )
    return (
        f"dtype={dtype} measured {ratio:.1f}x the time of float32 on this CPU ({cpu_model()}; {why}): "
        f"{advice('dtype', 'float32')} (exact) or {advice('dtype', 'auto')}, which picks float32 here"
    )


_PIN_LOCK = threading.Lock()
_pins = {"depth": 0, "saved": None}  # blocks inside full_fp32_precision now, and the user's setting


@contextlib.contextmanager
def full_fp32_precision():
    """Pin float32 matrix products to full IEEE precision inside the block, then restore.

    transformers' `TrainingArguments(tf32=True)` (and bf16/torch_compile set-ups) turn TF32 on
    process-wide, which moves fp32 scores by ~1e-3 on Ampere+ GPUs; our numbers must not
    depend on it, so the encoder forward and the matching run at "highest" precision.
    The setting is process-wide, so blocks in concurrent threads share one pin: the first to
    enter saves the user's setting and the last to leave restores it (a thread leaving early
    would otherwise turn TF32 back on under another's forward, and the last one would restore
    "highest" for good).
    """
    with _PIN_LOCK:
        if _pins["depth"] == 0:
            _pins["saved"] = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
            torch.set_float32_matmul_precision("highest")
            torch.backends.cudnn.allow_tf32 = False
        _pins["depth"] += 1
    try:
        yield
    finally:
        with _PIN_LOCK:
            _pins["depth"] -= 1
            if _pins["depth"] == 0:
                precision, cudnn_tf32 = _pins["saved"]
                torch.set_float32_matmul_precision(precision)
                torch.backends.cudnn.allow_tf32 = cudnn_tf32
