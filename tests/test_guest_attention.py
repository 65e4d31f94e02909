"""A caller's attention-backend choice (`sdpa_kernel`, `enable_*_sdp`) neither moves nor breaks scores.

torch's scaled-dot-product attention flags are process-wide, like the precision ones: a training
script that keeps only the kernels its GPU model wants, or forces the math kernel for
determinism, used to change our encoder's kernel (numbers off by ~1e-7 under a float32 hash) or
leave it none ("No viable backend" for EFFICIENT_ATTENTION alone on a CPU). Each case runs in a
fresh process (a fork of an interpreter that imported torch and transformers and set nothing:
tests/warm_python.py); the numbers are compared with the same process's scores before the caller's
settings, and every flag must read as the caller left it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME
from warm_python import PRELOADED, WarmPython

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import bertscore
from bertscore.explain import explain_pair
C = ["the cat sat on the mat with a long tail and " * 6, "a dog ran across the park in the rain"] * 3
R = ["a cat sat on a mat", "the dog runs in the park in the rain today"] * 3
scorer = bertscore.BERTScorer(model_type={model!r}, cache_bytes=0)
def numbers():
    return [torch.stack(scorer.score(C, R)).tolist(), list(explain_pair(scorer, C[0], R[0]).scores)]
def flags():
    names = ["flash", "mem_efficient", "math", "cudnn", "overrideable"]
    return {{n: getattr(torch._C, "_get_%s_sdp_enabled" % n)() for n in names}} | {{
        "priority": torch._C._get_sdp_priority_order(),
        "fp16_bf16_reduction": torch._C._get_math_sdp_allow_fp16_bf16_reduction()}}
clean = numbers()
with sdpa_kernel({backends}, set_priority=True):
    {extra}
    before = flags()
    try:
        seen, error = numbers(), None
    except Exception as exc:
        seen, error = None, repr(exc)
    after = flags()
print(json.dumps({{"clean": clean, "seen": seen, "error": error, "before": before, "after": after}}))
"""

CASES = {
    "math kernel only": ("[SDPBackend.MATH]", "pass"),
    "a GPU-only kernel only (on a CPU)": ("[SDPBackend.EFFICIENT_ATTENTION]", "pass"),
    "math first, reduced-precision math": ("[SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]",
                                           "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)"),
}


ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> WarmPython:
    server = WarmPython(ENV, tmp_path_factory.mktemp("warm"), preload=PRELOADED[:3])  # torch and transformers
    yield server
    server.close()


@pytest.mark.parametrize("name", list(CASES))
def test_attention_backends_as_found_and_numbers_as_a_clean_process(warm, tmp_path, name):
    backends, extra = CASES[name]
    script = SCRIPT.format(model=EMBEDDED_MODEL_NAME, backends=backends, extra=extra)
    done = warm.run(script, tmp_path, ENV, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is None
    assert result["seen"] == result["clean"]  # exactly: the same kernels as a process that set nothing
    assert result["after"] == result["before"]
    # the caller's setting was really on while we scored
    assert result["before"]["flash"] is False or result["before"]["priority"][0] == 0
