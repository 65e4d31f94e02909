"""A device this torch or machine cannot use is one clear ValueError (exit 2 on the command line),
from every door, before any model loads: never a raw torch assertion mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, score
from bertscore.models.devices import resolve_device
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
CPU_BUILD_NO_CUDA = "CUDA requested but this torch has no CUDA; available: cpu"
CUDA_BUILD_NO_DEVICE = ("CUDA requested but no CUDA device is visible (torch is built with CUDA; check the driver and "
                        "CUDA_VISIBLE_DEVICES); available: cpu")
# What `cuda` says here without a GPU: PyPI's Linux torch is the CUDA build, so a machine without a GPU
# can have either build (torch.backends.cuda.is_built() tells which, independently of torch.version).
NO_CUDA = CUDA_BUILD_NO_DEVICE if torch.backends.cuda.is_built() else CPU_BUILD_NO_CUDA
cpu_only_build = pytest.mark.skipif(torch.version.cuda is not None or torch.cuda.is_available(),
                                    reason="this torch is built with CUDA")


def _unavailable_devices() -> list[tuple[str, str]]:
    """(device, expected message part) pairs that cannot run here, whatever the machine."""
    cases = [("bogus", "unknown device 'bogus'"), ("cuda:x", "unknown device 'cuda:x'"),
             ("meta", "device 'meta' cannot run the encoder here")]
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        cases.append((f"cuda:{count}", f"cuda:{count} requested but this machine has {count} CUDA device(s)"))
    else:
        cases += [("cuda", "CUDA requested but"), ("cuda:0", "CUDA requested but"), ("cuda:7", "CUDA requested but")]
    if not torch.backends.mps.is_available():
        cases.append(("mps", "MPS requested but this torch or machine has no MPS"))
    return cases


@pytest.mark.parametrize("device, message", _unavailable_devices())
def test_resolve_device_refuses_what_cannot_run(device, message):
    with pytest.raises(ValueError, match="available: cpu") as error:
        resolve_device(device)
    assert message in str(error.value)


@pytest.mark.parametrize("device", ["cpu", "CPU", " cpu ", torch.device("cpu"), None])
def test_resolve_device_accepts_the_cpu_and_a_default(device):
    expected = "cuda" if device is None and torch.cuda.is_available() else "cpu"
    assert resolve_device(device).type == expected


def test_cuda_index_out_of_range_with_two_gpus(monkeypatch):
    """The index check, on any machine: pretend torch sees two GPUs."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    assert resolve_device("cuda") == torch.device("cuda:0")
    with pytest.raises(ValueError) as error:
        resolve_device("cuda:2")
    assert str(error.value).startswith("cuda:2 requested but this machine has 2 CUDA device(s); "
                                       "available: cpu, cuda, cuda:0, cuda:1")


@cpu_only_build
def test_the_exact_message_on_a_cpu_build():
    with pytest.raises(ValueError) as error:
        resolve_device("cuda")
    assert str(error.value) == NO_CUDA


@pytest.mark.skipif(torch.cuda.is_available(), reason="a visible CUDA device takes 'cuda'")
@pytest.mark.parametrize("cuda_version, message", [(None, CPU_BUILD_NO_CUDA), ("13.0", CUDA_BUILD_NO_DEVICE)])
def test_each_build_says_why_cuda_cannot_run(cuda_version, message, monkeypatch):
    """A CPU build says to get a CUDA build; a CUDA build without a device points at the driver. Fails if
    either build gets the other's advice (a user reinstalling torch for a missing driver, or the reverse)."""
    monkeypatch.setattr(torch.version, "cuda", cuda_version)
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    with pytest.raises(ValueError) as error:
        resolve_device("cuda")
    assert str(error.value) == message


@pytest.mark.parametrize("device, message", [case for case in _unavailable_devices() if case[0] in ("bogus", "mps", "cuda")])
def test_api_raises_before_loading_a_model(device, message, monkeypatch):
    import bertscore.models.shared as shared_models

    def no_loading(*args, **kwargs):
        raise AssertionError("the model was loaded before the device was checked")

    monkeypatch.setattr(shared_models, "load_model", no_loading)  # where a scorer's encoder is loaded
    with pytest.raises(ValueError, match="available: cpu") as error:
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, device=device)
    assert message in str(error.value)
    with pytest.raises(ValueError, match="available: cpu"):
        score(["a"], ["a"], model_type=EMBEDDED_MODEL_NAME, device=device)


@cpu_only_build
def test_api_cuda_on_a_cpu_build():
    with pytest.raises(ValueError) as error:
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cuda")
    assert str(error.value) == NO_CUDA


def _cli(*device: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "bertscore", "-c", str(EXAMPLES / "candidates.txt"), "-r",
         str(EXAMPLES / "references.txt"), "-m", EMBEDDED_MODEL_NAME, "--device", *device],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


def _available() -> str:
    return ", ".join(["cpu"] + (["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
                                if torch.cuda.is_available() else []))


@pytest.mark.slow
def test_cli_exits_2_with_one_line():
    if torch.cuda.is_available():
        device, message = _unavailable_devices()[3]  # cuda:N, one past the last GPU
    else:
        device, message = "cuda", NO_CUDA
    done = _cli(device)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("bertscore: error: ") and message in lines[0]
    bogus = _cli("bogus")
    assert bogus.returncode == 2
    assert bogus.stderr == f"bertscore: error: unknown device 'bogus'; available: {_available()}\n"


def test_evaluate_module_raises_the_same_value_error():
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    device, message = _unavailable_devices()[0]
    with pytest.raises(ValueError, match="available: cpu") as error:
        metric.compute(predictions=["a cat"], references=["a cat"], model_type=EMBEDDED_MODEL_NAME, device=device)
    assert message in str(error.value)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError) as error:
            metric.compute(predictions=["a cat"], references=["a cat"], model_type=EMBEDDED_MODEL_NAME, device="cuda")
        assert str(error.value) == NO_CUDA


def test_the_precision_pin_knows_every_node_torch_exposes_parents_first():
    """Every `fp32_precision` object under torch.backends is a node the pin visits (read only:
    nothing is changed in this process), and a node's parents come before it."""
    from bertscore.models.devices import fp32_precision_nodes

    nodes = fp32_precision_nodes()
    exposed = {(value.backend, value.op) for name in dir(torch.backends)
               for value in vars(type(getattr(torch.backends, name))).values()
               if isinstance(value, torch.backends._FP32Precision)}
    assert exposed and exposed <= set(nodes)
    assert {("generic", "all"), ("cuda", "all"), ("mkldnn", "all"), ("cuda", "matmul"), ("mkldnn", "matmul")} <= set(nodes)
    for backend, op in nodes:
        parents = [("generic", "all")] + ([(backend, "all")] if op != "all" else [])
        assert all(nodes.index(parent) <= nodes.index((backend, op)) for parent in parents)


def _pretend_two_gpus(monkeypatch, current: int = 0) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current)


def test_cuda_is_spelled_with_its_index(monkeypatch):
    """torch.device("cuda") != torch.device("cuda:0"): the resolver names the current GPU's index,
    as a tensor's `.device` does, so every spelling of one GPU is one key."""
    from bertscore.models.devices import resolve_placement

    _pretend_two_gpus(monkeypatch, current=1)
    assert resolve_device("cuda") == resolve_device(" CUDA ") == resolve_device(torch.device("cuda")) == torch.device("cuda:1")
    assert resolve_device(None) == torch.device("cuda:1")
    assert resolve_device("cuda:0") == torch.device("cuda:0")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    # the scorer pool keys its models by str(device): one key, no reload
    assert str(resolve_placement("cuda", None)[0]) == str(resolve_placement("cuda:0", None)[0]) == "cuda:0"


def test_a_model_on_cuda_0_asked_for_cuda_is_not_copied(minilm_scorer, monkeypatch):
    """`with_placement` gets the resolver's spelling: a model loaded on cuda:0 asked for "cuda" is
    itself, not a deep copy of the encoder on the GPU."""
    import copy
    import dataclasses

    _pretend_two_gpus(monkeypatch)
    on_gpu = dataclasses.replace(minilm_scorer.model, device=torch.device("cuda:0"))  # a label: nothing moves
    copies: list[object] = []
    monkeypatch.setattr(copy, "deepcopy", lambda *args, **kwargs: copies.append(args) or pytest.fail("deep copy"))
    assert on_gpu.with_placement(resolve_device("cuda"), on_gpu.dtype) is on_gpu
    assert on_gpu.with_placement(torch.device("cuda"), on_gpu.dtype) is on_gpu
    assert not copies


def test_cuda_convolutions_are_exact_fp32_inside_the_pin_and_as_found_after():
    """docs/exactness.md's decision: torch's CUDA convolutions default to TF32 (the official
    package runs them so); ours run at IEEE fp32 like every other fp32 operation, and the caller's
    setting is put back. The tree's getters work on a CPU build too."""
    from bertscore.models.devices import fp32_precision_nodes, full_fp32_precision

    if ("cuda", "conv") not in fp32_precision_nodes():
        pytest.skip("this torch has no fp32_precision tree (before 2.9): the legacy cudnn flag is pinned instead")
    getter = torch._C._get_fp32_precision_getter
    before = getter("cuda", "conv")
    with full_fp32_precision():
        assert getter("cuda", "conv") == "ieee" and getter("cuda", "all") == "ieee"
    assert getter("cuda", "conv") == before


@pytest.mark.parametrize("native, rows", [(True, 2048), (False, 512)])
def test_the_reduced_precision_calibration_is_a_batch_where_native_and_a_quarter_where_emulated(monkeypatch, native,
                                                                                                 rows):
    """dtype="auto" decides on a batch-sized layer where the CPU has the instructions; where it emulates
    them, the ratio only feeds the note, and a quarter of the rows costs a quarter of the time.

    The clock is a fake one that each linear advances by a set time (float32 5, 2, 4, 3, 6; bfloat16
    9, 7, 8, 12, 10), so the ratio is known whatever the machine: best of 5 over best of 5 = 7 / 2.
    Fails if the ratio is inverted (float32 over bfloat16), takes the mean or the worst run, or times
    only the first run."""
    from bertscore.models import devices

    shapes = []
    real_linear = torch.nn.functional.linear
    durations = {torch.float32: [5.0, 2.0, 4.0, 3.0, 6.0], torch.bfloat16: [9.0, 7.0, 8.0, 12.0, 10.0]}
    clock = [0.0]

    def recording_linear(x, w):
        shapes.append((tuple(x.shape), tuple(w.shape), x.dtype))
        clock[0] += durations[x.dtype].pop(0)
        return real_linear(x, w)

    monkeypatch.setattr(devices, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(devices, "cpu_has_native", lambda dtype: native)
    monkeypatch.setattr(torch.nn.functional, "linear", recording_linear)
    devices.cpu_slowdown.cache_clear()
    try:
        ratio = devices.cpu_slowdown("bfloat16")
    finally:
        devices.cpu_slowdown.cache_clear()  # the next caller measures the real CPU again
    assert ratio == 7.0 / 2.0
    assert sorted(set(shapes), key=str) == sorted({((rows, 384), (1536, 384), torch.float32),
                                                   ((rows, 384), (1536, 384), torch.bfloat16)}, key=str)
    assert len(shapes) == 10  # best of 5, interleaved
