"""Scoring a transformers generation pipeline over a `datasets.Dataset` on transformers 5 (the recipe
of docs/evaluate.md), and what evaluate's evaluator does there today.

transformers 5 removed the `summarization`, `translation` and `text2text-generation` pipeline tasks
(`text-generation` is its one text generation task), and its `TFPreTrainedModel`: evaluate 0.4.6's
`evaluator("summarization" | "translation")` raises a KeyError from transformers, and its
evaluators given a pipeline raise an AttributeError. The recipe needs neither: generate with a
`text-generation` pipeline in a batched `map`, then score the column. A tiny random GPT-2 built
offline (tests/tiny_models.py) stands in for a real model.
"""

from __future__ import annotations

import pytest
import torch

datasets = pytest.importorskip("datasets")
evaluate = pytest.importorskip("evaluate")
transformers = pytest.importorskip("transformers")

from bertscore import BERTScorer, EMBEDDED_MODEL_NAME, score  # noqa: E402
from bertscore.dataset_map import score_columns  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

PROMPTS = ["the cat sat on", "a dog barked", "it rained all", "the match was"]
REFERENCES = ["the mat all day", "at night loudly", "day in Berlin", "postponed because of rain"]
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5


@pytest.fixture(scope="module")
def generator(tmp_path_factory):
    from tiny_models import build_causal_lm

    folder = build_causal_lm(tmp_path_factory.mktemp("models") / "tiny-gpt2")
    return transformers.pipeline("text-generation", model=str(folder), device="cpu")


def generate(generator, batch):
    outputs = generator(batch["prompt"], max_new_tokens=8, do_sample=False, return_full_text=False)
    return {"prediction": [output[0]["generated_text"] for output in outputs]}


def test_generation_pipeline_over_a_dataset_scored(generator, minilm_scorer) -> None:
    dataset = datasets.Dataset.from_dict({"prompt": PROMPTS, "reference": REFERENCES})
    generated = dataset.map(lambda batch: generate(generator, batch), batched=True, batch_size=2)
    one_by_one = [generator(prompt, max_new_tokens=8, do_sample=False, return_full_text=False)[0]["generated_text"]
                  for prompt in PROMPTS]
    assert generated["prediction"] == one_by_one and all(one_by_one)

    scored = generated.map(score_columns(minilm_scorer), batched=True)
    precision, recall, f1 = score(one_by_one, REFERENCES, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert torch.allclose(torch.tensor(scored["bertscore_f1"]), f1, atol=1e-6) and bool((f1 > 0).any())

    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"), model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    results = metric.compute(predictions=generated["prediction"], references=generated["reference"])
    assert torch.allclose(torch.tensor(results["f1"]), f1, atol=1e-6)


@pytest.mark.skipif(not TRANSFORMERS_5, reason="the evaluator's failure is transformers 5's")
def test_what_evaluates_evaluator_does_on_transformers_5(generator, minilm_scorer) -> None:
    for task in ("summarization", "translation"):
        with pytest.raises(KeyError, match=f"The task {task} has been removed from transformers"):
            evaluate.evaluator(task)
    from evaluate.evaluator import SummarizationEvaluator, TranslationEvaluator

    dataset = datasets.Dataset.from_dict({"prompt": PROMPTS, "reference": REFERENCES})
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"), model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    for evaluator in (SummarizationEvaluator(), TranslationEvaluator()):
        with pytest.raises(AttributeError, match="TFPreTrainedModel"):
            evaluator.compute(model_or_pipeline=generator, data=dataset, metric=metric, input_column="prompt",
                              label_column="reference")
