"""A guest in the caller's process: precision (both torch APIs), default dtype and autocast in,
the clean-process numbers out, and every setting exactly as found (issue 19 points 1-2).

Each setting runs in a fresh interpreter (tests/guest_probe.py): the state under test is
process-wide. The probe snapshots every `fp32_precision` attribute under torch.backends (found
by walking it, not through bertscore), the legacy getters where the process is on the legacy API
(elsewhere torch raises on them by design), default dtype, autocast, grad modes, determinism and
anomaly detection; a forward hook records what the encoder ran under. Follow-up changes after
the call (a later `torch.backends.fp32_precision = ...`) are compared with the same changes in a
process the scorer never touched: they expose hidden state, such as a node turned from 'none'
(inherit) to 'ieee', which reads the same until its parent changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME

TESTS = Path(__file__).resolve().parent
PROBE = TESTS / "guest_probe.py"
LEGACY_MATMUL = ["torch.get_float32_matmul_precision()", "torch.backends.cuda.matmul.allow_tf32"]

# Later changes a training script makes; each is followed by a snapshot of the whole tree.
FOLLOW_UP = [
    "torch.backends.fp32_precision = 'tf32'",
    "torch.backends.fp32_precision = 'ieee'",
    "torch.backends.fp32_precision = 'none'",
    "torch.backends.cudnn.fp32_precision = 'tf32'",
    "torch.backends.mkldnn.matmul.fp32_precision = 'none'",
]

# name -> (setup code run after `import torch`, legacy getters legal to read there)
SETTINGS = {
    "untouched": ("", "all"),
    "legacy set_float32_matmul_precision('high')": ("torch.set_float32_matmul_precision('high')", "all"),
    "legacy set_float32_matmul_precision('medium')": ("torch.set_float32_matmul_precision('medium')", "all"),
    "legacy 'high' + cudnn.allow_tf32 = False": (
        "torch.set_float32_matmul_precision('high'); torch.backends.cudnn.allow_tf32 = False", "all"),
    "legacy cuda.matmul.allow_tf32 = True + cudnn.allow_tf32 = True": (
        "torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True", "all"),
    "new transformers enable_tf32(True)": (
        "from transformers.utils import enable_tf32; enable_tf32(True)", []),
    "new top-level fp32_precision = 'ieee'": ("torch.backends.fp32_precision = 'ieee'", LEGACY_MATMUL),
    "new per backend": (
        "torch.backends.cuda.matmul.fp32_precision = 'tf32'; torch.backends.mkldnn.matmul.fp32_precision = 'bf16';"
        " torch.backends.cudnn.conv.fp32_precision = 'ieee'; torch.backends.mkldnn.rnn.fp32_precision = 'bf16'", []),
    "new per backend 'all' nodes": (
        "torch.backends.cudnn.fp32_precision = 'tf32'; torch._C._set_fp32_precision_setter('mkldnn', 'all', 'bf16')", []),
    "mixed: legacy 'medium', then new top-level 'bf16'": (
        "torch.set_float32_matmul_precision('medium'); torch.backends.fp32_precision = 'bf16'", LEGACY_MATMUL),
}

# name -> (setup, the probe's wrap around the score call)
AMBIENT = {
    "default dtype float64": ("torch.set_default_dtype(torch.float64)", "none"),
    "autocast cpu bf16": ("", "autocast-cpu-bf16"),
    "inference_mode": ("", "inference_mode"),
    "no_grad": ("", "no_grad"),
    "use_deterministic_algorithms(True)": ("torch.use_deterministic_algorithms(True)", "none"),
    "set_detect_anomaly(True)": ("torch.autograd.set_detect_anomaly(True)", "none"),
}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONWARNINGS": "error::UserWarning"}


def _probe(*args: str) -> object:
    done = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _config(setup: str, legacy: object = "all", wrap: str = "none", score: bool = True) -> dict:
    return {"model": EMBEDDED_MODEL_NAME, "num_layers": 2, "setup": setup, "legacy": legacy, "wrap": wrap,
            "score": score, "follow_up": FOLLOW_UP, "idf": True, "rescale": True, "explain": True}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    """Every setting scored in its own process, forked from one that loaded the encoder but changed
    no setting (a fresh interpreter's state at the cost of a fork), and the same settings and
    follow-ups unscored in processes forked from one that only imported torch."""
    configs = {name: _config(setup, legacy) for name, (setup, legacy) in SETTINGS.items()}
    configs.update({name: _config(setup, wrap=wrap) for name, (setup, wrap) in AMBIENT.items()})
    with ThreadPoolExecutor(max_workers=2) as pool:
        scored, references = pool.map(lambda score: _probe("--forked", json.dumps(
            [{**c, "score": score} for c in configs.values()])), (True, False))
    return {name: {**run, "reference": reference} for name, run, reference in zip(configs, scored, references)}


@pytest.fixture(scope="module")
def clean_scores() -> dict:
    """The numbers (idf, rescaled, and explain_pair's) of a fresh interpreter that nothing else
    ran in (a plain subprocess)."""
    return _probe(json.dumps(_config("")))


def _close(got: object, expected: object, tolerance: float = 1e-6) -> bool:
    """Nested lists of the same shape, every number within `tolerance` (None only where None)."""
    if isinstance(expected, list):
        return isinstance(got, list) and len(got) == len(expected) and all(
            _close(g, e, tolerance) for g, e in zip(got, expected))
    if expected is None or got is None:
        return got is expected
    return abs(got - expected) <= tolerance


def _differences(before: dict, after: dict) -> dict:
    return {key: (before.get(key), after.get(key)) for key in before.keys() | after.keys() if before.get(key) != after.get(key)}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETTINGS) + list(AMBIENT))
def test_every_setting_is_left_as_found_and_the_numbers_are_the_clean_process_ones(runs, clean_scores, name):
    """Fails when scoring changes a caller's setting (or its hidden state), or a caller's setting
    reaches the encoder (its numbers then differ from a process that changed nothing)."""
    run, clean = runs[name], runs["untouched"]
    assert "error" not in run, run["error"]
    # every attribute (both APIs, where legal to read) as found, default dtype and modes included
    assert _differences(run["before"], run["after"]) == {}
    # and the hidden state too: later changes by the caller land as in a process we never touched
    assert run["follow_up"] == run["reference"]["follow_up"]
    assert run["before"] == run["reference"]["before"]
    # the same numbers as a process forked alike that changed nothing (exactly: the declared float32 at
    # full precision, on the same threads), explain_pair's matching and rescaling too ...
    assert run["dtypes"] == ["torch.float32"] * 3
    assert run["scores"] == clean["scores"] and run["explain"] == clean["explain"]
    # ... and as a fresh interpreter, within 1e-6: a forked child and a fresh process may run the
    # matmuls on different numbers of threads, which may round the last bits otherwise on some CPUs;
    # a setting that leaked into the encoder (bf16, tf32, float64) moves them by far more
    assert _close(run["scores"], clean_scores["scores"]) and _close(run["explain"], clean_scores["explain"])
    assert run["hash"] == clean["hash"]
    # inside the encoder: every precision node 'ieee', the legacy matmul flag "highest", no autocast
    for seen in run["inside"]:
        assert {k: v for k, v in seen.items() if k.endswith("fp32_precision") and v != "ieee"} == {}
        assert seen["legacy matmul"] == "highest" and seen["autocast"] == []


@pytest.mark.slow
def test_the_settings_under_test_really_differ_from_a_clean_process(runs):
    """Each setting must really be on in its process (else the tests above would pass vacuously)."""
    clean = runs["untouched"]["before"]
    for name in list(SETTINGS)[1:] + ["default dtype float64", "use_deterministic_algorithms(True)",
                                      "set_detect_anomaly(True)"]:
        assert _differences(clean, runs[name]["before"]), name
    assert runs["new transformers enable_tf32(True)"]["before"]["torch.backends.fp32_precision"] == "tf32"
    assert runs["autocast cpu bf16"]["in_wrap_after"]["torch.is_autocast_enabled('cpu')"] is True
    assert runs["autocast cpu bf16"]["in_wrap_after"]["torch.get_autocast_dtype('cpu')"] == "torch.bfloat16"
    assert runs["inference_mode"]["in_wrap_after"]["torch.is_inference_mode_enabled()"] is True
    assert runs["no_grad"]["in_wrap_after"]["torch.is_grad_enabled()"] is False


@pytest.mark.slow
def test_an_untouched_process_keeps_none_everywhere_it_had_it(runs):
    """The issue's case: one score call turned cuda.matmul and mkldnn.matmul from 'none' to 'ieee'."""
    after = runs["untouched"]["after"]
    assert after["torch.backends.cuda.matmul.fp32_precision"] == "none"
    assert after["torch.backends.mkldnn.matmul.fp32_precision"] == "none"
    assert after["torch.backends.fp32_precision"] == "none"
    # a later enable_tf32(True) still reaches every matmul
    assert runs["untouched"]["follow_up"][0]["torch.backends.cuda.matmul.fp32_precision"] == "tf32"
    assert runs["untouched"]["follow_up"][0]["torch.backends.mkldnn.matmul.fp32_precision"] == "tf32"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: CUDA autocast cannot be entered without one")
@pytest.mark.parametrize("wrap", ["autocast-cuda-fp16", "autocast-cuda-bf16"])
def test_cuda_autocast_leaves_the_numbers_alone(wrap):
    clean = _probe(json.dumps({**_config(""), "device": "cuda"}))
    run = _probe(json.dumps({**_config("", wrap=wrap), "device": "cuda"}))
    assert _differences(run["before"], run["after"]) == {}
    assert run["scores"] == clean["scores"]
    assert all(seen["autocast"] == [] for seen in run["inside"])


OVERLAP = """
import torch
from bertscore.models.devices import full_fp32_precision
from guest_probe import precision_tree
setup = {setup!r}
exec(setup)
found = precision_tree()
first, second = full_fp32_precision(), full_fp32_precision()
first.__enter__(); second.__enter__(); first.__exit__(None, None, None)
during = precision_tree()  # the second block is still scoring
legacy_during = torch.get_float32_matmul_precision()
second.__exit__(None, None, None)
assert set(during.values()) == {{"ieee"}}, during
assert legacy_during == "highest", legacy_during
assert precision_tree() == found, (found, precision_tree())
if {legacy!r}:
    assert torch.get_float32_matmul_precision() == "high" and torch.backends.cudnn.allow_tf32 is True
print("ok")
"""


@pytest.mark.parametrize("setup, legacy", [
    ("torch.set_float32_matmul_precision('high'); torch.backends.cudnn.allow_tf32 = True", True),
    ("torch.backends.fp32_precision = 'tf32'", False),
])
def test_overlapping_pins_keep_full_fp32_until_the_last_one_leaves(setup, legacy):
    """Two threads scoring at once overlap their pins out of order (A enters, B enters, A leaves,
    B leaves): B keeps full fp32 until it leaves, and the caller's settings come back afterwards,
    not the pinned ones B saw on entering (legacy and new API, each in a fresh interpreter)."""
    done = subprocess.run([sys.executable, "-c", OVERLAP.format(setup=setup, legacy=legacy)], capture_output=True, text=True,
                          env=_env(), timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


# ----- real training loops: the clean-process numbers, the settings as found ------------------
LOOPS = TESTS / "guest_loops.py"


def _loop(*args: str) -> object:
    done = subprocess.run([sys.executable, str(LOOPS), *args], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loops() -> dict[str, dict]:
    """Each loop in a fresh interpreter, then each loop's metric calls scored again, in order, in one
    more fresh interpreter that nothing else ran in, each loop's from a fresh metric and an empty
    pool (each call's "clean" entry)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(("trainer", "accelerate"), pool.map(_loop, ("trainer", "accelerate"))))
    clean = _loop("clean", json.dumps([[[c["predictions"], c["references"]] for c in run["calls"]]
                                       for run in runs.values()]))
    for run, expected_calls in zip(runs.values(), clean, strict=True):
        for call, expected in zip(run["calls"], expected_calls, strict=True):
            call["clean"] = expected
    return runs


def _assert_clean_numbers_and_state(calls: list[dict]) -> None:
    for call in calls:
        assert _differences(call["before"], call["after"]) == {}
        assert {k: call[k] for k in ("precision", "recall", "f1", "hashcode")} == call["clean"]


@pytest.mark.slow
def test_trainer_evaluate_after_enable_tf32_gives_the_clean_numbers(loops):
    """`transformers.utils.enable_tf32(True)` (TrainingArguments(tf32=True)) then a real
    Trainer.evaluate() whose compute_metrics calls the metric: it used to raise the mixed-API
    RuntimeError; now it logs the clean process's numbers and leaves TF32 on."""
    run = loops["trainer"]
    assert run["fp32_precision"] == "tf32"  # the caller's setting, still on after evaluate()
    assert len(run["calls"]) == 1 and run["calls"][0]["before"]["torch.backends.fp32_precision"] == "tf32"
    _assert_clean_numbers_and_state(run["calls"])
    assert run["logged"]["eval_bertscore_f1"] == pytest.approx(sum(run["calls"][0]["f1"]) / len(run["calls"][0]["f1"]))


@pytest.mark.slow
def test_accelerate_bf16_autocast_loop_gives_the_clean_numbers(loops):
    """A loop under Accelerator(mixed_precision="bf16", cpu=True) scores inside
    accelerator.autocast() (and inference_mode): the clean numbers, autocast still on after."""
    run = loops["accelerate"]
    assert run["autocast_dtypes"] == [["torch.bfloat16", True, "torch.bfloat16"]] * 2  # the loop really ran in bf16
    assert all(c["before"]["torch.is_autocast_enabled('cpu')"] for c in run["calls"])
    _assert_clean_numbers_and_state(run["calls"])
