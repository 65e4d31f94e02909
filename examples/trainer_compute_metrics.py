"""BERTScore inside a Hugging Face `Seq2SeqTrainer` evaluation (recipe).

Two ways to hook the metric into `compute_metrics` (both load the encoder once per process:
the metric module keeps its scorers in a pool that lives as long as the process):

1. Classic: the Trainer collects every generated sequence and label of the eval set, then
   calls `compute_metrics(eval_pred)` once.

       metric = evaluate.load(bertscore.metric_path())  # the module installed with the package
       args = Seq2SeqTrainingArguments(..., predict_with_generate=True, eval_strategy="steps")
       trainer = Seq2SeqTrainer(model=model, args=args, processing_class=tokenizer,
                                compute_metrics=make_compute_metrics(tokenizer, metric,
                                    model_type="roberta-large"),  # or lang="en"
                                ...)

2. Streaming (`batch_eval_metrics=True`): the Trainer calls
   `compute_metrics(eval_pred, compute_result=...)` after every eval batch; we decode the
   batch and `add_batch` it, and score everything when `compute_result` is True (the last
   batch). The Trainer then does not keep all predictions in memory.

       args = Seq2SeqTrainingArguments(..., predict_with_generate=True, batch_eval_metrics=True)
       trainer = Seq2SeqTrainer(..., compute_metrics=make_batched_compute_metrics(tokenizer, metric, ...))

Both return the means `bertscore_precision`, `bertscore_recall`, `bertscore_f1` (logged as
`eval_bertscore_f1`, ...). Decoding: generated ids and labels are padded with -100 by the
Trainer; -100 is replaced by the pad id before `batch_decode(skip_special_tokens=True)`.
An untrained model often generates nothing: an empty prediction scores 0 (with a warning),
it does not crash.

Multi-GPU Trainer (torchrun / accelerate): the Trainer already gathers predictions from
all ranks before `compute_metrics`, so load the metric normally, *without* `num_process`.

Run this file for a tiny offline demo (a 1-layer T5 from config, MiniLM tokenizer and
the embedded MiniLM scorer): `HF_HUB_OFFLINE=1 python examples/trainer_compute_metrics.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

REPO = Path(__file__).resolve().parents[1]
METRIC_PATH = str(REPO / "bertscore_metric.py")
EMBEDDED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def _to_numpy(values: Any) -> np.ndarray:
    if isinstance(values, tuple):  # some models return (generated ids, ...)
        values = values[0]
    if hasattr(values, "detach"):  # batch_eval_metrics passes tensors (maybe on GPU)
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def decode(tokenizer: Any, ids: Any) -> list[str]:
    """Token ids (padded with -100 anywhere) -> stripped texts, special tokens dropped."""
    array = _to_numpy(ids)
    array = np.where(array != -100, array, tokenizer.pad_token_id)
    return [text.strip() for text in tokenizer.batch_decode(array, skip_special_tokens=True)]


def _means(result: dict[str, Any], prefix: str) -> dict[str, float]:
    return {f"{prefix}_{key}": float(np.mean(result[key])) if result[key] else 0.0
            for key in ("precision", "recall", "f1")}


def make_compute_metrics(tokenizer: Any, metric: Any, prefix: str = "bertscore", **metric_kwargs: Any) -> Callable:
    """`compute_metrics(eval_pred)` for `Seq2SeqTrainer(predict_with_generate=True)`.

    `metric_kwargs` go to `metric.compute` (model_type=..., lang=..., idf=..., ...). The
    decoded texts of the last call are kept in `compute_metrics.last_texts`.
    """

    def compute_metrics(eval_pred: Any) -> dict[str, float]:
        predictions = decode(tokenizer, eval_pred.predictions)
        references = decode(tokenizer, eval_pred.label_ids)
        compute_metrics.last_texts = (predictions, references)
        result = metric.compute(predictions=predictions, references=references, **metric_kwargs)
        return _means(result, prefix)

    compute_metrics.last_texts = None
    return compute_metrics


def make_batched_compute_metrics(
    tokenizer: Any, metric: Any, prefix: str = "bertscore", **metric_kwargs: Any
) -> Callable:
    """`compute_metrics(eval_pred, compute_result)` for `batch_eval_metrics=True`.

    Each call adds the batch's decoded texts with `metric.add_batch`; the call with
    `compute_result=True` (the last batch) scores all of them and returns the means.
    """

    def compute_metrics(eval_pred: Any, compute_result: bool = True) -> dict[str, float]:
        predictions = decode(tokenizer, eval_pred.predictions)
        references = decode(tokenizer, eval_pred.label_ids)
        compute_metrics.texts[0].extend(predictions)
        compute_metrics.texts[1].extend(references)
        metric.add_batch(predictions=predictions, references=references)
        if not compute_result:
            return {}
        compute_metrics.last_texts, compute_metrics.texts = compute_metrics.texts, ([], [])
        return _means(metric.compute(**metric_kwargs), prefix)

    compute_metrics.texts = ([], [])
    compute_metrics.last_texts = None
    return compute_metrics


# ----- a tiny offline demo (also used by tests/test_trainer.py) ----------------------------
PAIRS = [
    ("translate: the cat sat on the mat", "the cat sat on the mat"),
    ("translate: a dog runs in the park", "a dog runs in the park"),
    ("translate: it is raining today", "it is raining today"),
    ("translate: she bought three apples", "she bought three apples"),
    ("translate: the meeting was postponed", "the meeting was postponed"),
    ("translate: he plays the guitar", "he plays the guitar"),
    ("translate: prices fell on monday", "prices fell on monday"),
    ("translate: our flight was delayed", "our flight was delayed"),
]


def tiny_setup(output_dir: str, batch_eval_metrics: bool = False, max_steps: int = 4, eval_steps: int = 2) -> tuple:
    """(trainer, tokenizer, metric, compute_metrics) for a 1-layer T5 built from config."""
    import datasets
    import evaluate
    import torch
    from transformers import (AutoTokenizer, DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments,
                              T5Config, T5ForConditionalGeneration)

    import bertscore
    from bertscore.sources import embedded_model_dir

    tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_dir()))  # MiniLM's WordPiece vocab
    torch.manual_seed(0)
    config = T5Config(
        vocab_size=len(tokenizer), d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=2,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    model = T5ForConditionalGeneration(config)
    model.generation_config.max_new_tokens = 8
    model.generation_config.eos_token_id = tokenizer.sep_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.decoder_start_token_id = tokenizer.pad_token_id

    def encode(batch: dict) -> dict:
        features = tokenizer(batch["source"], truncation=True, max_length=32)
        features["labels"] = tokenizer(text_target=batch["target"], truncation=True, max_length=32)["input_ids"]
        return features

    data = datasets.Dataset.from_dict({"source": [s for s, _ in PAIRS], "target": [t for _, t in PAIRS]})
    data = data.map(encode, batched=True, remove_columns=["source", "target"])
    metric = evaluate.load(bertscore.metric_path())
    maker = make_batched_compute_metrics if batch_eval_metrics else make_compute_metrics
    compute_metrics = maker(tokenizer, metric, model_type=EMBEDDED_MODEL)
    args = Seq2SeqTrainingArguments(
        output_dir=output_dir, eval_strategy="steps", eval_steps=eval_steps, max_steps=max_steps,
        per_device_train_batch_size=4, per_device_eval_batch_size=3, learning_rate=1e-2,
        predict_with_generate=True, batch_eval_metrics=batch_eval_metrics,
        use_cpu=True, report_to=[], save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0,
    )
    trainer = Seq2SeqTrainer(
        model=model, args=args, train_dataset=data, eval_dataset=data, processing_class=tokenizer,
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model), compute_metrics=compute_metrics,
    )
    return trainer, tokenizer, metric, compute_metrics


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        trainer, _, _, compute_metrics = tiny_setup(folder)
        trainer.train()
        for entry in trainer.state.log_history:
            if "eval_bertscore_f1" in entry:
                print({k: v for k, v in entry.items() if k.startswith("eval_bertscore") or k == "step"})
        print("last decoded predictions:", compute_metrics.last_texts[0][:3])
