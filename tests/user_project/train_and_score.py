"""A user's training project, written from the docs, run from its own folder outside the clone
(.ci/user_project.py copies it there, into an environment that had torch, transformers, datasets,
evaluate and accelerate before the README's install).

    python train_and_score.py OFFICIAL_DIR

- a `Seq2SeqTrainer` (a 1-layer T5 built from a config) whose `compute_metrics` loads the metric as
  docs/evaluate.md says (`evaluate.load(bertscore.metric_path(), ...)`), evaluated twice: each
  evaluation's scores equal the official bert-score 0.3.13 at batch_size=1 within 1e-5, and the second
  evaluation's metric time is below the first's (the encoder and the references' embeddings are kept);
- code written for the official package, through the drop-in: `import bert_score`, `bert_score.score`;
- evaluate's canonical `bertscore` module from a local copy (a folder here; the one
  tests/data/official_shaped_bertscore is shaped like, as tests/test_dropin.py uses it): the same numbers.

OFFICIAL_DIR holds the official bert-score 0.3.13 (`pip install --no-deps --target`), imported in a
subprocess of its own (the drop-in holds the name `bert_score` in this environment). Exits non-zero,
naming what differs, on any failure; prints one JSON line of what it measured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
LAYER = 6  # the model table's layer for MiniLM (the hash's L6)
TOLERANCE = 1e-5
PAIRS = [("translate: the cat sat on the mat", "the cat sat on the mat"),
         ("translate: it is raining in Berlin", "it is raining in Berlin"),
         ("translate: the meeting was postponed", "the meeting was postponed"),
         ("translate: he plays the guitar", "he plays the guitar"),
         ("translate: prices fell on monday", "prices fell on monday"),
         ("translate: our flight was delayed", "our flight was delayed")]


def official_scores(official_dir: str, cands: list[str], refs: list[str], model_dir: str) -> list[list[float]]:
    """P, R, F1 of the official package at batch_size=1, in a process where `bert_score` is the official one."""
    code = ("import json, sys\nimport bert_score\n"
            "assert '+bertscore' not in bert_score.__version__, bert_score.__version__\n"
            "cands, refs, model, layer = json.load(sys.stdin)\n"
            "P, R, F = bert_score.score(cands, refs, model_type=model, num_layers=layer, batch_size=1)\n"
            "print(json.dumps([P.tolist(), R.tolist(), F.tolist()]))")
    env = dict(os.environ, PYTHONPATH=official_dir)
    done = subprocess.run([sys.executable, "-c", code], input=json.dumps([cands, refs, model_dir, LAYER]),
                          capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        sys.exit(f"the official bert-score failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def check_equal(label: str, ours: list[list[float]], theirs: list[list[float]], keep: list[int]) -> float:
    """The largest |difference| over P, R, F1 of the pairs `keep`; exits when past TOLERANCE."""
    worst = max(abs(ours[k][i] - theirs[k][i]) for k in range(3) for i in keep)
    if worst > TOLERANCE:
        sys.exit(f"{label}: differs from the official bert-score by {worst:.2e} (> {TOLERANCE})")
    return worst


def build_trainer(output_dir: str, tokenizer, compute_metrics):
    import datasets
    import torch
    from transformers import (DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments, T5Config,
                              T5ForConditionalGeneration)

    torch.manual_seed(0)
    config = T5Config(vocab_size=tokenizer.vocab_size, d_model=32, d_ff=64, d_kv=8, num_layers=1,
                      num_decoder_layers=1, num_heads=2, pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.sep_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    model = T5ForConditionalGeneration(config)
    model.generation_config.eos_token_id = tokenizer.sep_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.decoder_start_token_id = tokenizer.pad_token_id

    def encode(batch: dict) -> dict:
        features = tokenizer(batch["source"], truncation=True, max_length=32)
        features["labels"] = tokenizer(text_target=batch["target"], truncation=True, max_length=32)["input_ids"]
        return features

    data = datasets.Dataset.from_dict({"source": [s for s, _ in PAIRS], "target": [t for _, t in PAIRS]})
    data = data.map(encode, batched=True, remove_columns=["source", "target"])
    args = Seq2SeqTrainingArguments(output_dir=output_dir, eval_strategy="steps", eval_steps=2, max_steps=4,
                                    per_device_train_batch_size=3, per_device_eval_batch_size=3, learning_rate=1e-2,
                                    predict_with_generate=True, generation_max_length=8, use_cpu=True, report_to=[], save_strategy="no",
                                    disable_tqdm=True, seed=0)
    return Seq2SeqTrainer(model=model, args=args, train_dataset=data, eval_dataset=data, processing_class=tokenizer,
                          data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
                          compute_metrics=compute_metrics)


def main(official_dir: str) -> dict:
    import evaluate
    from transformers import AutoTokenizer

    import bertscore
    from bertscore.sources import embedded_model_dir

    model_dir = str(embedded_model_dir())
    tokenizer = AutoTokenizer.from_pretrained(model_dir)  # your model's tokenizer
    metric = evaluate.load(bertscore.metric_path(), model_type=MODEL)  # docs/evaluate.md: from any folder
    evaluations = []

    def compute_metrics(eval_pred):
        predictions, labels = eval_pred
        predictions = np.where(predictions != -100, predictions, tokenizer.pad_token_id)
        labels = np.where(labels != -100, labels, tokenizer.pad_token_id)
        cands = tokenizer.batch_decode(predictions, skip_special_tokens=True)
        refs = tokenizer.batch_decode(labels, skip_special_tokens=True)
        start = time.perf_counter()
        result = metric.compute(predictions=cands, references=refs)
        evaluations.append({"seconds": time.perf_counter() - start, "cands": cands, "refs": refs,
                            "scores": [result["precision"], result["recall"], result["f1"]],
                            "hashcode": result["hashcode"]})
        return {"bertscore_f1": float(np.mean(result["f1"]))}

    output = Path.cwd() / "trainer_output"
    trainer = build_trainer(str(output), tokenizer, compute_metrics)
    trainer.train()
    if len(evaluations) != 2:
        sys.exit(f"expected 2 evaluations, the Trainer ran {len(evaluations)}")
    report = {"hashcode": evaluations[0]["hashcode"], "metric_seconds": [e["seconds"] for e in evaluations]}
    for number, evaluation in enumerate(evaluations, 1):
        keep = [i for i, cand in enumerate(evaluation["cands"]) if cand.strip()]  # empty: 0 with a note, by design
        if not keep:
            sys.exit(f"evaluation {number}: every generation is empty; nothing to compare")
        theirs = official_scores(official_dir, evaluation["cands"], evaluation["refs"], model_dir)
        report[f"evaluation_{number}_max_delta"] = check_equal(f"evaluation {number}", evaluation["scores"], theirs,
                                                               keep)
        report[f"evaluation_{number}_pairs"] = len(keep)
    if not evaluations[1]["seconds"] < evaluations[0]["seconds"]:
        sys.exit(f"the second evaluation's metric took {evaluations[1]['seconds']:.2f} s, not less than the first's "
                 f"{evaluations[0]['seconds']:.2f} s")

    # Fixed sentences for the other two doors: the official package's numbers on them.
    cands = ["the cat sat on the mat", "it is raining heavily in Berlin"]
    refs = ["a cat was sitting on the mat", "there is heavy rain in Berlin today"]
    theirs = official_scores(official_dir, cands, refs, model_dir)

    import bert_score  # the drop-in: code written for the official package

    if "+bertscore" not in bert_score.__version__:
        sys.exit(f"import bert_score is not the drop-in here: {bert_score.__version__} at {bert_score.__file__}")
    P, R, F = bert_score.score(cands, refs, model_type=MODEL, num_layers=LAYER)
    report["dropin_max_delta"] = check_equal("bert_score.score (the drop-in)", [P.tolist(), R.tolist(), F.tolist()],
                                             theirs, [0, 1])

    # evaluate's canonical module as a local copy (a folder here): the tests' module shaped like it
    canonical = evaluate.load(str(Path.cwd() / "official_shaped_bertscore"))
    result = canonical.compute(predictions=cands, references=refs, model_type=MODEL, num_layers=LAYER)
    report["canonical_max_delta"] = check_equal("the canonical bertscore module",
                                                [result["precision"], result["recall"], result["f1"]], theirs, [0, 1])
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
