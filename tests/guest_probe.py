"""One caller's process, run in a fresh interpreter by tests/test_guest_precision.py.

    python tests/guest_probe.py '<json config>'

applies the caller's settings (`setup`, Python run right after `import torch`, before the
scorer is built, as a training script sets them), snapshots every precision attribute and the
default dtype, optionally scores inside a caller's context (`wrap`), snapshots again, then runs
each `follow_up` (later changes the caller makes, which show hidden state: a node turned from
'none' to 'ieee' reads the same until its parent changes) and snapshots the tree after each.
Prints one JSON line: the snapshots, the scores, and what a forward hook saw inside the encoder.
`--forked '<json list>'` runs several configs, each in a child forked from a process that has
changed no setting (see `run_forked`).

The snapshots walk torch.backends for every `fp32_precision` attribute (the new API) on their
own, without bertscore's code. Legacy getters are read only where `legacy` names them ("all": a process
on the legacy API, or untouched): elsewhere torch raises on them, by design.
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
import types

import torch

SENTENCES = [
    "the cat sat on the mat",
    "a dog ran across the park in the rain",
    "28-year-old chef found dead at San Francisco mall",
    "the quick brown fox jumps over the lazy dog",
    "it was raining all day, so we stayed home and read",
    "a",
]
REFERENCES = SENTENCES[2:] + SENTENCES[:2]


def precision_tree() -> dict[str, str]:
    """Every `fp32_precision` attribute under torch.backends (module, then matmul/conv/rnn objects)."""
    found = {"torch.backends.fp32_precision": torch.backends.fp32_precision}
    for name in sorted(dir(torch.backends)):
        module = getattr(torch.backends, name, None)
        if not isinstance(module, types.ModuleType):
            continue
        for path, obj in [(name, module)] + [(f"{name}.{op}", getattr(module, op, None)) for op in ("matmul", "conv", "rnn")]:
            try:
                found[f"torch.backends.{path}.fp32_precision"] = obj.fp32_precision
            except AttributeError:
                continue
    return found


LEGACY_GETTERS = {
    "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision,
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.mkldnn.allow_tf32": lambda: torch.backends.mkldnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
        lambda: torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
}


def snapshot(legacy: list[str]) -> dict[str, object]:
    """The new-API tree, the legacy getters named in `legacy`, and the other ambient settings."""
    state: dict[str, object] = dict(precision_tree())
    state.update({name: LEGACY_GETTERS[name]() for name in legacy})
    state["torch.get_default_dtype()"] = str(torch.get_default_dtype())
    state["torch.is_autocast_enabled('cpu')"] = torch.is_autocast_enabled("cpu")
    state["torch.get_autocast_dtype('cpu')"] = str(torch.get_autocast_dtype("cpu"))
    state["torch.are_deterministic_algorithms_enabled()"] = torch.are_deterministic_algorithms_enabled()
    state["torch.is_anomaly_enabled()"] = torch.is_anomaly_enabled()
    state["torch.is_grad_enabled()"] = torch.is_grad_enabled()
    state["torch.is_inference_mode_enabled()"] = torch.is_inference_mode_enabled()
    return state


WRAPS = {
    "none": contextlib.nullcontext,
    "autocast-cpu-bf16": lambda: torch.autocast("cpu", dtype=torch.bfloat16),
    "autocast-cpu-fp16": lambda: torch.autocast("cpu", dtype=torch.float16),
    "autocast-cuda-fp16": lambda: torch.autocast("cuda", dtype=torch.float16),
    "autocast-cuda-bf16": lambda: torch.autocast("cuda", dtype=torch.bfloat16),
    "inference_mode": torch.inference_mode,
    "no_grad": torch.no_grad,
}


def run(config: dict) -> dict[str, object]:
    """Apply `config`'s settings, score (unless score is false), and snapshot around it."""
    exec(config.get("setup", ""), {"torch": torch})  # noqa: S102 - the test's own settings code
    legacy = config.get("legacy", "all")
    legacy_names = list(LEGACY_GETTERS) if legacy == "all" else list(legacy or [])
    result: dict[str, object] = {"before": snapshot(legacy_names)}
    if config.get("score", True):
        from bertscore import BERTScorer

        scorer = BERTScorer(model_type=config["model"], num_layers=config.get("num_layers", 2),
                            device=config.get("device", "cpu"), cache_bytes=0, idf=config.get("idf", False),
                            rescale_with_baseline=config.get("rescale", False),
                            loaded_model=_PRELOADED.get((config["model"], config.get("num_layers", 2))))
        inside: list[dict[str, object]] = []

        def hook(*_):
            seen: dict[str, object] = dict(precision_tree())
            matmul_nodes = {seen["torch.backends.cuda.matmul.fp32_precision"], seen["torch.backends.mkldnn.matmul.fp32_precision"]}
            # legal only where both matmul nodes are 'ieee' (what the pin promises; else not read)
            seen["legacy matmul"] = torch.get_float32_matmul_precision() if matmul_nodes == {"ieee"} else None
            seen["autocast"] = [t for t in ("cpu", "cuda") if torch.is_autocast_enabled(t)]
            inside.append(seen)

        scorer.model.encoder.register_forward_hook(hook)
        with WRAPS[config.get("wrap", "none")]():
            precision, recall, f1 = scorer.score(list(SENTENCES), list(REFERENCES))
            if config.get("explain", False):
                from bertscore.explain import explain_pair

                explained = explain_pair(scorer, SENTENCES[1], [REFERENCES[1], SENTENCES[0]])
                result["explain"] = [[r.precision, r.recall, r.f1, r.rescaled] for r in explained.references]
            result["in_wrap_after"] = snapshot([])  # the caller's context still on after the call
        result["scores"] = [precision.tolist(), recall.tolist(), f1.tolist()]
        result["dtypes"] = [str(t.dtype) for t in (precision, recall, f1)]
        result["inside"] = inside
        result["hash"] = scorer.hash
    result["after"] = snapshot(legacy_names)
    follow_ups = []
    for code in config.get("follow_up", []):
        exec(code, {"torch": torch})  # noqa: S102
        follow_ups.append(precision_tree())
    result["follow_up"] = follow_ups
    return result


_PRELOADED: dict[tuple[str, int], object] = {}


def run_forked(configs: list[dict]) -> list[dict]:
    """`run` each config in a child forked from this process, which has changed no setting and
    run no forward: each child starts from the state of a fresh interpreter (the test checks its
    "before" snapshot against a process that only imported torch). The encoders the configs
    score with are loaded here once, so that a child costs a fork and a score call."""
    import os

    for config in configs:
        key = (config.get("model"), config.get("num_layers", 2))
        if config.get("score", True) and key not in _PRELOADED:
            from bertscore.models.loading import load_model

            _PRELOADED[key] = load_model(key[0], key[1], device=config.get("device", "cpu"))
    results = []
    for config in configs:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(read_end)
            try:
                outcome = run(config)
            except BaseException:  # noqa: BLE001 - reported to the test, per config
                outcome = {"error": traceback.format_exc()}
            with os.fdopen(write_end, "w") as out:
                out.write(json.dumps(outcome))
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as source:
            results.append(json.loads(source.read()))
        os.waitpid(pid, 0)
    return results


def main() -> None:
    if sys.argv[1] == "--forked":
        print(json.dumps(run_forked(json.loads(sys.argv[2]))))
    else:
        print(json.dumps(run(json.loads(sys.argv[1]))))


if __name__ == "__main__":
    main()
