"""Harness-shaped callers of `import bert_score`, run where it resolves to the drop-in (tests/test_dropin.py).

Run as `python dropin_harness.py CONFIG.json` with PYTHONPATH=<repo>/bert_score_dropin:<repo>, in a
working folder (the model folder is named there as harness code names a model: "distilbert-base-uncased").
Prints one JSON line: each caller's numbers and hashes, the scorer ids evaluate's module kept, how
many encoders were loaded, and the process memory around `release_models()`. Every caller here
is written for the tests, shaped like the public code it stands for (none of it is copied):
lm-evaluation-harness's per-document `process_results`, SummEval's metric class, evaluate's
canonical module (tests/data/official_shaped_bertscore) as used and as evaluate's own tests patch it,
mbrs's MBR metric (a scorer's privates and `greedy_cos_idf`), a script on the re-exported helpers,
the `bert-score` command.
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
    """A model loaded by `score()` (at another layer: surely a load of its own), then `release_models()`:
    whether the encoder and every storage of its tensors were freed (weak references: what the code
    controls; what the C allocator then gives back to the OS differs between machines), the bytes of
    those storages, and the RSS around it (reported, not asserted)."""
    import bert_score
    from torch.multiprocessing.reductions import StorageWeakRef

    from bertscore.models.shared import SHARED_MODELS

    bert_score.release_models()
    before = rss_mib()
    loads = SHARED_MODELS.loads
    bert_score.score(*texts, model_type=MODEL, num_layers=4)
    gc.collect()
    loaded = rss_mib()
    model = SHARED_MODELS._kept.get(SHARED_MODELS.kept[-1]).encoder
    encoder = weakref.ref(model)
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in [*model.parameters(), *model.buffers()]}
    storage_refs = [StorageWeakRef(storage) for storage in storages.values()]
    storage_mib = sum(storage.nbytes() for storage in storages.values()) / 2**20
    del model, storages
    bert_score.release_models()
    gc.collect()
    return {"before": before, "loaded": loaded, "released": rss_mib(), "encoder_freed": encoder() is None,
            "storages": len(storage_refs), "storage_mib": storage_mib,
            "storages_freed": sum(ref.expired() for ref in storage_refs), "loads": SHARED_MODELS.loads - loads}


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


class MbrsShapedMetric:
    """An MBR metric as mbrs writes its BERTScore one (read from mbrs/metrics/bertscore.py, not copied):
    a `BERTScorer` for its privates (`_model`, `_tokenizer`, `_idf_dict`), its own tokenizing and padded
    encoder batches, each text embedded once, and `bert_score.utils.greedy_cos_idf` on batches whose
    padding holds eps (embeddings and idf) and False (masks)."""

    def __init__(self, idf: bool = False, idf_sents: list[str] | None = None, batch_size: int = 4):
        from collections import defaultdict

        from bert_score import BERTScorer

        self.batch_size = batch_size
        self.scorer = BERTScorer(model_type=MODEL, num_layers=5, batch_size=batch_size, nthreads=4, all_layers=False,
                                 idf=idf, idf_sents=idf_sents, device="cpu", lang="en")
        self.tokenizer, self.model = self.scorer._tokenizer, self.scorer._model
        self.model.eval()
        for parameter in self.model.parameters():
            parameter.requires_grad = False
        if idf and self.scorer._idf_dict is not None:
            self.idf_dict = self.scorer._idf_dict
        else:
            self.idf_dict = defaultdict(lambda: 1.0)
            for special in (self.tokenizer.sep_token_id, self.tokenizer.cls_token_id):
                self.idf_dict[special] = 0.0

    def encode(self, sentences: list[str]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        ids = [self.tokenizer.encode(text, add_special_tokens=True, max_length=self.tokenizer.model_max_length,
                                     truncation=True) for text in sentences]
        states = []
        for start in range(0, len(ids), self.batch_size):
            batch = self.tokenizer.pad({"input_ids": ids[start:start + self.batch_size]}, padding=True,
                                       return_tensors="pt")
            with torch.no_grad():
                out = self.model(**batch)[0]
            states += [out[row, batch["attention_mask"][row].bool()] for row in range(len(out))]
        return states, [torch.tensor([self.idf_dict.get(token, 1.0) for token in row]) for row in ids]

    @staticmethod
    def pad(tensors: list[torch.Tensor]) -> torch.Tensor:
        fill = False if tensors[0].dtype == torch.bool else torch.finfo(torch.float32).eps
        return torch.nn.utils.rnn.pad_sequence(tensors, batch_first=True, padding_value=fill)

    def pairwise_f1(self, hypotheses: list[str], references: list[str]) -> list[list[float]]:
        import bert_score.utils

        hyp_states, hyp_idf = self.encode(hypotheses)
        ref_states, ref_idf = self.encode(references)
        rows = []
        for h in range(len(hypotheses)):  # one row: this hypothesis against every reference, one batch
            count = len(references)
            _, _, f1 = bert_score.utils.greedy_cos_idf(
                self.pad(ref_states), self.pad([torch.ones(len(s), dtype=torch.bool) for s in ref_states]),
                self.pad(ref_idf), self.pad([hyp_states[h]] * count),
                self.pad([torch.ones(len(hyp_states[h]), dtype=torch.bool)] * count), self.pad([hyp_idf[h]] * count),
                all_layers=False)
            rows.append(f1.tolist())
        return rows


def mbrs_callers(cands: list[str], refs: list[str]) -> dict:
    """mbrs's metric without and with idf (idf over `refs`), and what its privates are."""
    plain, weighted = MbrsShapedMetric(), MbrsShapedMetric(idf=True, idf_sents=refs)
    return {"f1": plain.pairwise_f1(cands, refs), "f1_idf": weighted.pairwise_f1(cands, refs),
            "model_class": type(plain.model).__name__, "shared_encoder": plain.model is weighted.model,
            "plain_idf_dict": plain.scorer._idf_dict}


def script_helpers(cands: list[str], refs: list[str]) -> dict:
    """A script on the helpers `bert_score` re-exports (`from bert_score import *`, as the official
    scorer.py has no __all__): its own model and tokenizer, idf from `get_idf_dict`."""
    from collections import defaultdict

    names: dict = {}
    exec("from bert_score import *", names)  # noqa: S102 - the star import is the point
    model, tokenizer = names["get_model"](MODEL, 5), names["get_tokenizer"](MODEL)
    plain = defaultdict(lambda: 1.0, {tokenizer.sep_token_id: 0.0, tokenizer.cls_token_id: 0.0})
    out = {"plain": names["bert_cos_score_idf"](model, refs, cands, tokenizer, plain, batch_size=3).tolist(),
           "idf": names["bert_cos_score_idf"](model, refs, cands, tokenizer, names["get_idf_dict"](refs, tokenizer),
                                              batch_size=3, device="cpu").tolist()}
    embeddings, mask, weights = names["get_bert_embedding"](refs[:3], model, tokenizer, plain)
    out["embedding_shapes"] = [list(embeddings.shape), list(mask.shape), list(weights.shape)]
    out["sent_encode"] = names["sent_encode"](tokenizer, refs[0]) == tokenizer.encode(refs[0])
    return out


def evaluate_patched(metric_dir: str) -> dict:
    """evaluate's own metric tests (`patch_bertscore` in tests/test_metric_common.py): the module run with
    `bert_score.scorer.get_model` and `bert_score.scorer.bert_cos_score_idf` patched; no model loads."""
    from unittest.mock import patch

    import evaluate
    from bertscore.models.shared import SHARED_MODELS

    def bert_cos_score_idf(model, refs, *args, **kwargs):
        return torch.tensor([[1.0, 1.0, 1.0]] * len(refs))

    loads = SHARED_MODELS.loads
    module = evaluate.load(metric_dir)
    with patch("bert_score.scorer.get_model") as get_model, patch("bert_score.scorer.bert_cos_score_idf") as cos:
        cos.side_effect = bert_cos_score_idf
        result = module.compute(predictions=["hello there", "general kenobi"],
                                references=["hello there", "general kenobi"], lang="en", model_type=MODEL)
    return {"result": result, "get_model_calls": [list(call.args) for call in get_model.call_args_list],
            "cos_calls": cos.call_count, "loads": SHARED_MODELS.loads - loads}


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
    from bertscore.models.shared import SHARED_MODELS

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
    # before the callers that build encoders at other layers: memory they free stays in the allocator
    answer["memory"] = memory_round_trip((cands[:1], refs[:1]))

    answer["mbrs"] = mbrs_callers(cands[:4], refs[:3])
    answer["script"] = script_helpers(cands, refs)
    answer["evaluate_patched"] = evaluate_patched(config["metric_dir"])
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
