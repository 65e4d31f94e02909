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
import types
from typing import Any, Iterator

import torch

from ..inputs import InputError
from ..notes import advice

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float32"}
# CPU features that compute bf16 (fp16) matrix products natively.
NATIVE_CPU_FLAGS = {
    "bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
    "float16": ("avx512_fp16", "amx_fp16", "fphp", "asimdhp"),
}


def default_device_type() -> str:
    """Where work runs when no device is named: "cuda" when this torch sees a GPU, else "cpu"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The device to run on: CUDA when available unless told otherwise.

    A device this torch or this machine cannot run on (`"cuda"` on a CPU-only build,
    `"cuda:3"` with two GPUs, `"mps"` off Apple silicon, `"bogus"`) is a ValueError that
    names the devices available, raised here rather than as a torch assertion mid-run.
    """
    if device is None:
        return with_index(torch.device("cuda")) if default_device_type() == "cuda" else torch.device("cpu")
    accelerators = {"cuda": (torch.cuda.is_available, torch.cuda.device_count),
                    "mps": (torch.backends.mps.is_available, lambda: 1)}
    if getattr(torch, "xpu", None) is not None:
        accelerators["xpu"] = (torch.xpu.is_available, torch.xpu.device_count)

    def available() -> str:
        names = ["cpu"]
        for kind, (is_available, count) in accelerators.items():
            if is_available():
                names += [kind] + ([f"{kind}:{i}" for i in range(count())] if kind != "mps" else [])
        return ", ".join(names)

    try:
        resolved = torch.device(device.strip().lower() if isinstance(device, str) else device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"unknown device {device!r}; available: {available()}") from None
    kind = resolved.type
    if kind == "cpu":
        return resolved
    if kind not in accelerators:
        raise InputError(f"device {str(resolved)!r} cannot run the encoder here; available: {available()}")
    is_available, count = accelerators[kind]
    if not is_available():
        built_with_cuda = torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None
        if kind != "cuda":
            lacks = f"this torch or machine has no {kind.upper()}"
        elif built_with_cuda:
            lacks = "no CUDA device is visible (torch is built with CUDA; check the driver and CUDA_VISIBLE_DEVICES)"
        else:
            lacks = "this torch has no CUDA"
        raise InputError(f"{kind.upper()} requested but {lacks}; available: {available()}")
    if resolved.index is not None and resolved.index >= count():
        raise InputError(f"{resolved} requested but this machine has {count()} {kind.upper()} device(s); "
                         f"available: {available()}")
    return with_index(resolved)


def with_index(device: torch.device) -> torch.device:
    """`device` spelled as torch spells a tensor's device: an accelerator always with its index.

    torch.device("cuda") != torch.device("cuda:0"), and a tensor's `.device` is always the
    latter: without one spelling, a model "on cuda" looks moved when asked for "cuda:0" (a deep
    copy of the encoder on the GPU) and caches keyed by the name reload it. "cuda" and "xpu" mean
    the current device of their kind; "mps" is mps:0.
    """
    if device.type == "cpu" or device.index is not None:
        return device
    current = {"cuda": lambda: torch.cuda.current_device(), "mps": lambda: 0}
    if getattr(torch, "xpu", None) is not None:
        current["xpu"] = lambda: torch.xpu.current_device()
    if device.type not in current:
        return device
    return torch.device(device.type, current[device.type]())


def resolve_placement(
    device: str | torch.device | None, dtype: str | torch.dtype | None
) -> tuple[torch.device, str]:
    """(device, dtype name) for these options: the one resolver every door goes through, so a
    device is checked (and "auto" decided) the same way before any model loads."""
    resolved = resolve_device(device)
    return resolved, resolve_dtype(dtype, resolved)


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

    A layer of an encoder's shape ([2048, 384] x [384, 1536]: a batch's tokens) where the CPU
    advertises native `dtype` instructions, so that dtype="auto" decides on a batch's size; a
    quarter of the tokens where it does not, since emulated arithmetic is many times slower at any
    size (the ratio only feeds the note there: on one AVX2 core, 2048 rows took 1.7 s and measured
    bf16 at 9.0-9.6x, 512 rows 0.4 s and 8.6-8.9x). Best of 5 interleaved runs, once per process and dtype.
    """
    generator = torch.Generator().manual_seed(0)
    rows = 2048 if cpu_has_native(dtype) else 512
    inputs = torch.randn(rows, 384, generator=generator, dtype=torch.float32)
    weight = torch.randn(1536, 384, generator=generator, dtype=torch.float32)
    reduced = (inputs.to(DTYPES[dtype]), weight.to(DTYPES[dtype]))
    best = {"float32": float("inf"), dtype: float("inf")}
    with torch.inference_mode(), full_fp32_precision():  # float32 timed as float32, whatever the caller set
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


# ----- full fp32 inside our forward and matching, the caller's settings as found outside -----
# torch has two APIs for fp32 matmul/conv precision. The legacy one (set_float32_matmul_precision,
# cuda.matmul.allow_tf32, cudnn.allow_tf32) keeps its own flags; the new one (torch >= 2.9) is a
# tree of `fp32_precision` nodes: generic.all -> {cuda, mkldnn}.all -> {matmul, conv, rnn}, where
# 'none' inherits from the parent. torch's getters return a node's *effective* value, and its
# legacy getters raise when the legacy flags disagree with the tree (a process on the new API:
# `torch.backends.fp32_precision = "tf32"`, what transformers' enable_tf32 does, leaves the legacy
# matmul flag at "highest" while every matmul is tf32). So the pin works on the tree, changes only
# the nodes that are not 'ieee' already (parents first: a node still not 'ieee' once its parents
# are holds an explicit value, which is then exactly what to put back; 'none' and torch's
# unsettable initial "default" of cuda conv/rnn are never overwritten), and reads the legacy flag
# only once both matmul nodes are 'ieee', where torch's consistency check cannot fail.
_FP32_BACKENDS = ("generic", "cuda", "mkldnn")  # parents first
_FP32_OPS = ("all", "matmul", "conv", "rnn")


@functools.lru_cache(maxsize=1)
def fp32_precision_nodes() -> tuple[tuple[str, str], ...]:
    """Every (backend, op) node of torch's fp32_precision tree, parents before children.

    Backends and ops are those torch.backends exposes as `fp32_precision` objects plus the known
    ones, kept where torch accepts the pair; () on a torch without the tree (before 2.9).
    """
    getter = getattr(torch._C, "_get_fp32_precision_getter", None)
    if getter is None:
        return ()
    backends, ops = list(_FP32_BACKENDS), list(_FP32_OPS)
    node_type = getattr(torch.backends, "_FP32Precision", None)
    for name in dir(torch.backends):
        module = getattr(torch.backends, name, None)
        if node_type is None or not isinstance(module, types.ModuleType):
            continue
        for value in list(vars(type(module)).values()) + list(vars(getattr(module, "m", module)).values()):
            if isinstance(value, node_type):
                backends += [value.backend] if value.backend not in backends else []
                ops += [value.op] if value.op not in ops else []
    nodes = []
    for backend in backends:
        for op in ops:
            try:
                getter(backend, op)
            except (RuntimeError, ValueError):
                continue  # not a node of this torch's tree
            nodes.append((backend, op))
    nodes.sort(key=lambda node: (node[0] != "generic", node[1] != "all"))  # generic, then each "all", then leaves
    return tuple(nodes)


def _pin_fp32_tree() -> list[tuple[str, str, str]]:
    """Set each tree node that is not 'ieee' to 'ieee', parents first; returns what to put back."""
    changed = []
    for backend, op in fp32_precision_nodes():
        value = torch._C._get_fp32_precision_getter(backend, op)
        if value != "ieee":
            torch._C._set_fp32_precision_setter(backend, op, "ieee")
            changed.append((backend, op, value))
    return changed


def _pin_legacy_matmul(changed: list[tuple[str, str, str]]) -> str | None:
    """Turn the legacy matmul flag to "highest" where the process left it lower; returns its value.

    Only a process whose cuda.matmul node held an explicit 'tf32' can have a lower flag (every
    legacy setter that lowers it writes that node). With the tree pinned, reading the flag is
    legal (both matmul nodes are 'ieee'); it is changed only where it can be put back exactly.
    """
    explicit = {(backend, op) for backend, op, _ in changed}
    if ("cuda", "matmul") not in explicit or not hasattr(torch._C, "_set_cublas_allow_tf32"):
        return None
    legacy = torch.get_float32_matmul_precision()
    if legacy == "high" or (legacy == "medium" and ("mkldnn", "matmul") in explicit):
        torch._C._set_cublas_allow_tf32(False)  # legacy flag -> "highest"; the node is 'ieee' already
        return legacy
    return None


def _restore_legacy_matmul(legacy: str | None) -> None:
    if legacy == "high":
        torch._C._set_cublas_allow_tf32(True)
    elif legacy == "medium":
        torch.set_float32_matmul_precision("medium")
    # the matmul nodes these setters wrote are put back by _restore_fp32_tree


def _restore_fp32_tree(changed: list[tuple[str, str, str]]) -> None:
    for backend, op, value in reversed(changed):
        torch._C._set_fp32_precision_setter(backend, op, value)


def _pin_legacy_only() -> tuple[str, bool]:
    """Before the tree existed (torch < 2.9): the legacy flags are the whole state."""
    saved = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = False
    return saved


# torch's scaled-dot-product attention backends are process-wide flags too: a caller's
# `sdpa_kernel(...)`, `torch.backends.cuda.enable_*_sdp(False)` or priority order would pick another
# attention kernel inside our encoder (other numbers), or none at all ("No viable backend" when the
# caller kept only kernels our device lacks, e.g. EFFICIENT_ATTENTION on a CPU). Inside the pin:
# torch's defaults; after it: each flag as found.
_SDP_DEFAULT_FLAGS = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "overrideable": True,
                      "fa3": False}
_SDP_DEFAULT_PRIORITY = [1, 2, 0, 3, 4]  # SDPBackend FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE: torch's order


def _pin_sdp_defaults() -> list[tuple[Any, Any]]:
    """Set torch's attention-backend flags to their defaults; returns (setter, old value) to put back."""
    changed: list[tuple[Any, Any]] = []

    def pin(getter_name: str, setter_name: str, value: Any) -> None:
        getter, setter = getattr(torch._C, getter_name, None), getattr(torch._C, setter_name, None)
        if getter is None or setter is None:
            return  # not in this torch
        old = getter()
        if old != value:
            setter(value)
            changed.append((setter, old))

    for name, default in _SDP_DEFAULT_FLAGS.items():
        pin(f"_get_{name}_sdp_enabled", f"_set_sdp_use_{name}", default)
    pin("_get_math_sdp_allow_fp16_bf16_reduction", "_set_math_sdp_allow_fp16_bf16_reduction", False)
    order = getattr(torch._C, "_get_sdp_priority_order", lambda: None)()
    if order is not None and sorted(order) == sorted(_SDP_DEFAULT_PRIORITY):
        pin("_get_sdp_priority_order", "_set_sdp_priority_order", list(_SDP_DEFAULT_PRIORITY))
    return changed


def _restore_sdp(changed: list[tuple[Any, Any]]) -> None:
    for setter, old in reversed(changed):
        setter(old)


_PIN_LOCK = threading.Lock()
_pins: dict[str, Any] = {"depth": 0, "saved": None, "sdp": None}  # blocks inside the pin now, what to put back


@contextlib.contextmanager
def _shared_fp32_pin() -> Iterator[None]:
    """The process-wide half of `full_fp32_precision`: one pin shared by concurrent blocks.

    The first block to enter saves and pins, the last to leave restores (a thread leaving early
    would otherwise turn TF32 back on under another's forward, and the last one would restore
    the pinned values for good).
    """
    with _PIN_LOCK:
        if _pins["depth"] == 0:
            _pins["sdp"] = _pin_sdp_defaults()
            if fp32_precision_nodes():
                changed = _pin_fp32_tree()
                _pins["saved"] = ("tree", changed, _pin_legacy_matmul(changed))
            else:
                _pins["saved"] = ("legacy", _pin_legacy_only(), None)
        _pins["depth"] += 1
    try:
        yield
    finally:
        with _PIN_LOCK:
            _pins["depth"] -= 1
            if _pins["depth"] == 0:
                kind, saved, legacy = _pins["saved"]
                if kind == "tree":
                    _restore_legacy_matmul(legacy)
                    _restore_fp32_tree(saved)
                else:
                    torch.set_float32_matmul_precision(saved[0])
                    torch.backends.cudnn.allow_tf32 = saved[1]
                _restore_sdp(_pins["sdp"])
                _pins["saved"], _pins["sdp"] = None, None


def _autocast_device_types() -> list[str]:
    """Device types whose autocast is on in this thread (autocast state is per thread)."""
    candidates = ["cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", torch._C._get_privateuse1_backend_name()]
    active = []
    for device_type in dict.fromkeys(candidates):
        try:
            if torch.amp.is_autocast_available(device_type) and torch.is_autocast_enabled(device_type):
                active.append(device_type)
        except (RuntimeError, ValueError, TypeError):
            continue
    return active


@contextlib.contextmanager
def full_fp32_precision() -> Iterator[None]:
    """Our encoder forward and matching in the declared dtype at full precision, then as found.

    transformers' `TrainingArguments(tf32=True)` (`enable_tf32`), `set_float32_matmul_precision`
    and an autocast region (custom loops, accelerate's mixed precision) would move fp32 scores by
    up to ~1e-3 while the hash says float32. Inside the block: every fp32 matmul/conv/rnn
    precision node is 'ieee' (legacy flag "highest" too where the process lowered it), and
    autocast is off for every device type where this thread had it on, and the attention backends
    (`sdpa_kernel`'s flags and priority) are torch's defaults. After it: every setting
    holds its exact previous value, read and written through the API the process is on (see
    `_pin_fp32_tree`). The precision pin is process-wide and shared by concurrent blocks
    (`_shared_fp32_pin`); the autocast switch is per thread, as autocast itself.
    The legacy cuDNN flag (`torch.backends.cudnn.allow_tf32`) is never read or written: writing
    it replaces cuda conv/rnn's initial "default" state, which no setter can put back. So inside
    the block, as after `enable_tf32(False)`, torch's legacy getter of that flag reports its
    mixed-API error to whoever reads it; the legacy matmul getters read "highest"/False (unless
    the caller had already mixed the APIs into a state torch itself reports as mixed).
    """
    with contextlib.ExitStack() as stack:
        for device_type in _autocast_device_types():
            stack.enter_context(torch.autocast(device_type, enabled=False))
        stack.enter_context(_shared_fp32_pin())
        yield
