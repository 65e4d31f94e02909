"""A metric shaped like evaluate's canonical `bertscore` module, for tests/test_dropin.py.

Written for the tests (not a copy): it reads the official package's surface the way that module
does — `import bert_score`, the `__version__ >= 0.3.10` check, `utils.get_hash`,
`utils.lang2model[lang]`, `utils.model2layers[model]` — and keeps one `bert_score.BERTScorer`
for as long as its `hash` equals the hash of the settings asked for.
"""

import functools

import bert_score
import datasets
import evaluate
from packaging import version


class OfficialShapedBERTScore(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="BERTScore through `import bert_score`, shaped like evaluate's canonical module",
            citation="",
            inputs_description="predictions, references and the official bert_score keywords",
            features=[
                datasets.Features({"predictions": datasets.Value("string", id="sequence"),
                                   "references": datasets.Sequence(datasets.Value("string", id="sequence"))}),
                datasets.Features({"predictions": datasets.Value("string", id="sequence"),
                                   "references": datasets.Value("string", id="sequence")}),
            ],
        )

    def _compute(self, predictions, references, lang=None, model_type=None, num_layers=None, verbose=False,
                 idf=False, device=None, batch_size=64, nthreads=4, all_layers=False,
                 rescale_with_baseline=False, baseline_path=None, use_fast_tokenizer=False):
        if isinstance(references[0], str):
            references = [[reference] for reference in references]
        idf_sents = [text for group in references for text in group] if idf else None
        make_hash, make_scorer = bert_score.utils.get_hash, bert_score.BERTScorer
        if version.parse(bert_score.__version__) >= version.parse("0.3.10"):
            make_hash = functools.partial(make_hash, use_fast_tokenizer=use_fast_tokenizer)
            make_scorer = functools.partial(make_scorer, use_fast_tokenizer=use_fast_tokenizer)
        if model_type is None:
            model_type = bert_score.utils.lang2model[lang.lower()]
        if num_layers is None:
            num_layers = bert_score.utils.model2layers[model_type]
        hashcode = make_hash(model=model_type, num_layers=num_layers, idf=idf,
                             rescale_with_baseline=rescale_with_baseline, use_custom_baseline=baseline_path is not None)
        if not hasattr(self, "kept_scorer") or self.kept_scorer.hash != hashcode:
            self.kept_scorer = make_scorer(
                model_type=model_type, num_layers=num_layers, batch_size=batch_size, nthreads=nthreads,
                all_layers=all_layers, idf=idf, idf_sents=idf_sents, device=device, lang=lang,
                rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path)
        P, R, F = self.kept_scorer.score(cands=predictions, refs=references, verbose=verbose, batch_size=batch_size)
        return {"precision": P.tolist(), "recall": R.tolist(), "f1": F.tolist(), "hashcode": hashcode,
                "scorer_id": id(self.kept_scorer)}
