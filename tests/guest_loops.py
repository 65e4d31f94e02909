"""Real training loops that score with BERTScore, each run in a fresh interpreter by
tests/test_guest_precision.py; prints one JSON line.

    python tests/guest_loops.py trainer      # Trainer.evaluate() after enable_tf32(True)
    python tests/guest_loops.py accelerate   # Accelerator(mixed_precision="bf16", cpu=True) loop
    python tests/guest_loops.py clean '<json [[[predictions, references], ...], ...]>'  # nothing set

The loops snapshot the process state right before and right after each metric call (the
caller's settings as the metric found them) with guest_probe's walk of torch.backends.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "examples")]

import torch  # noqa: E402

from guest_probe import snapshot  # noqa: E402

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class SnapshottingMetric:
    """The evaluate metric, with the process state recorded around every compute()."""

    def __init__(self, metric):
        self.metric, self.calls = metric, []

    def compute(self, **kwargs):
        before = snapshot([])
        result = self.metric.compute(**kwargs)
        self.calls.append({"before": before, "after": snapshot([]), "predictions": kwargs["predictions"],
                           "references": kwargs["references"], "f1": result["f1"],
                           "precision": result["precision"], "recall": result["recall"], "hashcode": result["hashcode"]})
        return result


def trainer() -> dict:
    import tempfile

    from transformers.utils import enable_tf32

    import trainer_compute_metrics as recipe

    enable_tf32(True)  # what TrainingArguments(tf32=True) does on torch >= 2.9
    with tempfile.TemporaryDirectory() as folder:
        trainer_, tokenizer, metric, _ = recipe.tiny_setup(folder)
        wrapped = SnapshottingMetric(metric)
        trainer_.compute_metrics = recipe.make_compute_metrics(tokenizer, wrapped, model_type=MODEL)
        logged = trainer_.evaluate()
    return {"calls": wrapped.calls, "logged": {k: v for k, v in logged.items() if "bertscore" in k},
            "fp32_precision": torch.backends.fp32_precision}


def accelerate() -> dict:
    import evaluate
    from accelerate import Accelerator

    accelerator = Accelerator(mixed_precision="bf16", cpu=True)
    torch.manual_seed(0)
    model = accelerator.prepare(torch.nn.Linear(8, 8))
    metric = SnapshottingMetric(evaluate.load(str(HERE.parent / "bertscore_metric.py")))
    batches = [(["the cat sat on the mat", "a dog ran in the park"], ["a cat sat on a mat", "the dog runs in a park"]),
               (["prices fell on monday", "it is raining today"], ["on monday prices fell", "today it rains"])]
    autocast_dtypes = []
    with torch.inference_mode():
        for predictions, references in batches:
            with accelerator.autocast():
                model(torch.randn(2, 8))  # the loop's own forward (accelerate returns it in fp32)
                metric.compute(predictions=predictions, references=references, model_type=MODEL)
                product = torch.mm(torch.randn(2, 8), torch.randn(8, 8))  # autocast still on after the call
                autocast_dtypes.append([str(product.dtype), torch.is_autocast_enabled("cpu"),
                                        str(torch.get_autocast_dtype("cpu"))])
    return {"calls": metric.calls, "autocast_dtypes": autocast_dtypes}


def clean(sequences: str) -> list[list[dict]]:
    """Each sequence of [predictions, references] calls scored by the metric in this process, which
    nothing else touched: each from a fresh start (a new metric, the module's encoders and cached
    embeddings released), as a loop's own process scored them. A text's numbers depend on the batch
    it was embedded in, at the 1e-7 level, so a call must find the cache its loop's call found."""
    import evaluate

    results = []
    for calls in json.loads(sequences):
        metric = evaluate.load(str(HERE.parent / "bertscore_metric.py"))
        sys.modules[type(metric).__module__].release()
        results.append([])
        for predictions, references in calls:
            result = metric.compute(predictions=predictions, references=references, model_type=MODEL)
            results[-1].append({key: result[key] for key in ("precision", "recall", "f1", "hashcode")})
    return results


if __name__ == "__main__":
    mode = sys.argv[1]
    output = {"trainer": trainer, "accelerate": accelerate}[mode]() if mode != "clean" else clean(sys.argv[2])
    print(json.dumps(output))
