"""Harness-shaped callers of `import bert_score`, run where it resolves to the drop-in (tests/test_dropin.py).

Run as `python dropin_harness.py CONFIG.json` with PYTHONPATH=<repo>/bert_score_dropin:<repo>, in a
working folder (the model folder is named there as harness code names a model: "distilbert-base-uncased").
Prints one JSON line: each caller's numbers and hashes, the scorer ids evaluate's module kept, how
many encoders were loaded, and the process memory around `release_models()`. Every caller here
is written for the tests, shaped like the public code it stands for (none of it is copied):
lm-evaluation-harness's per-document `process_results`, SummEval's metric class, evaluate's
canonical module (tests/data/official_shaped_bertscore), the `bert-score` command.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import runpy
import sys
import weakref
from pathlib import Path

import psutil
import torch

MODEL = "distilbert-base-uncased"  # a folder in the working directory (the official table's layer: 5)


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def memory_round_trip(texts: tuple[list[str], list[str]]) -> dict:
    """RSS with everything else released (imports, thread pools and allocator already warm from the
    callers above), with a model loaded by `score()` (at another layer: surely a load of its own), and
    after `release_models()`."""
    import bert_score
    from bertscore.shared_models import SHARED_MODELS

    bert_score.release_models()
    before = rss_mib()
    loads = SHARED_MODELS.loads
    bert_score.score(*texts, model_type=MODEL, num_layers=4)
    gc.collect()
    loaded = rss_mib()
    encoder = weakref.ref(SHARED_MODELS._kept[SHARED_MODELS.kept[-1]].encoder)
    bert_score.release_models()
    return {"before": before, "loaded": loaded, "released": rss_mib(), "encoder_freed": encoder() is None,
            "loads": SHARED_MODELS.loads - loads}


def lm_eval_process_results(doc: dict, results: list[str]) -> dict:
    """One document, one `bert_score.score` call, as an lm-eval task's `process_results` does."""
    from bert_score import score as bert_score

    P, R, F1 = bert_score([results[0]], [doc["highlights"]], lang="en", model_type=MODEL, verbose=False)
    return {"bertscore_precision": P[0].item(), "bertscore_recall": R[0].item(), "bertscore_f1": F1[0].item()}


class SummEvalShapedMetric:
    """A metric class as SummEval writes one: settings at construction, one `score` call per example."""

    def __init__(self, lang="en", model_type=MODEL, num_layers=5, idf=False, nthreads=4, batch_size=64):
        self.lang, self.model_type, self.num_layers = lang, model_type, num_layers
        self.idf, self.nthreads, self.batch_size = idf, nthreads, batch_size

    def evaluate_example(self, summary: str, reference: str) -> tuple[dict, str]:
        (P, R, F), hash_code = bert_score_module().score(
            [summary], [reference], model_type=self.model_type, num_layers=self.num_layers, verbose=False,
            idf=self.idf, batch_size=self.batch_size, nthreads=self.nthreads, lang=self.lang, return_hash=True)
        return {"bert_score_precision": P.item(), "bert_score_recall": R.item(), "bert_score_f1": F.item()}, hash_code

    def evaluate_batch(self, summaries: list[str], references: list) -> tuple[list[dict], str]:
        all_preds, hash_code = bert_score_module().score(
            summaries, references, model_type=self.model_type, num_layers=self.num_layers, verbose=False,
            idf=self.idf, batch_size=self.batch_size, nthreads=self.nthreads, lang=self.lang, return_hash=True)
        return [{"bert_score_precision": p.item(), "bert_score_recall": r.item(), "bert_score_f1": f.item()}
                for p, r, f in zip(*all_preds)], hash_code


def bert_score_module():
    import bert_score

    return bert_score


def command(argv: list[str]) -> str:
    """The `bert-score` command's module run as `python -m bert_score_cli.score ARGS` runs it."""
    out = io.StringIO()
    saved = sys.argv
    sys.argv = ["bert-score", *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            runpy.run_module("bert_score_cli.score", run_name="__main__", alter_sys=False)
    finally:
        sys.argv = saved
    return out.getvalue()


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    torch.set_num_threads(1)
    import bert_score
    from bertscore.shared_models import SHARED_MODELS

    cands, refs, more_refs = config["cands"], config["refs"], config["more_refs"]
    answer: dict = {"file": bert_score.__file__, "version": bert_score.__version__}

    docs = [{"highlights": ref} for ref in refs]
    answer["lm_eval"] = [lm_eval_process_results(doc, [cand]) for doc, cand in zip(docs, cands)]

    metric = SummEvalShapedMetric()
    examples = [metric.evaluate_example(cand, ref) for cand, ref in zip(cands, refs)]
    answer["summeval_example"] = [scores for scores, _ in examples]
    answer["summeval_example_hash"] = examples[0][1]
    answer["summeval_batch"], _ = metric.evaluate_batch(cands, [[a, b] for a, b in zip(refs, more_refs)])

    import evaluate

    module = evaluate.load(config["metric_dir"])
    half = len(cands) // 2
    computes = [module.compute(predictions=cands[:half], references=refs[:half], lang="en", model_type=MODEL),
                module.compute(predictions=cands[half:], references=refs[half:], lang="en", model_type=MODEL),
                module.compute(predictions=cands, references=refs, lang="en", model_type=MODEL, idf=True)]
    answer["evaluate"] = computes
    answer["evaluate_hash_check"] = module.kept_scorer.hash == bert_score.utils.get_hash(MODEL, 5, True, False, False, False)

    answer["command"] = command(["-c", config["cands_file"], "-r", config["refs_file"], "-m", MODEL, "-s"])
    answer["loads"] = SHARED_MODELS.loads
    del module, metric
    answer["memory"] = memory_round_trip((cands[:1], refs[:1]))
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
