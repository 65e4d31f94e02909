"""BERTScore in a Seq2SeqTrainer: logged as eval_bertscore_*, equal to a direct compute(),
the encoder loaded once across evaluations, empty generations scored 0 (recipe in
examples/trainer_compute_metrics.py)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import trainer_compute_metrics as recipe  # noqa: E402

from bertscore.pool import ScorerPool  # noqa: E402


def _eval_logs(trainer) -> list[dict]:
    return [entry for entry in trainer.state.log_history if "eval_bertscore_f1" in entry]


def _direct_means(metric, texts) -> dict[str, float]:
    predictions, references = texts
    result = metric.compute(predictions=predictions, references=references, model_type=recipe.EMBEDDED_MODEL)
    return {f"eval_bertscore_{k}": float(np.mean(result[k])) for k in ("precision", "recall", "f1")}


@pytest.fixture
def counted_loads(monkeypatch):
    """A fresh scorer pool in the metric module and a counter of encoder loads."""
    import evaluate

    import bertscore.pool
    from bertscore.models import shared as shared_models

    module = sys.modules[type(evaluate.load(recipe.METRIC_PATH)).__module__]
    pool = ScorerPool(max_models=1)
    monkeypatch.setattr(module, "_SCORER_POOL", pool)
    calls = []
    # Encoders load in shared_models (the pool asks there); a fresh one, so that what this process
    # loaded before does not count.
    fresh = shared_models.SharedModels()
    monkeypatch.setattr(shared_models, "SHARED_MODELS", fresh)
    monkeypatch.setattr(bertscore.pool, "SHARED_MODELS", fresh)
    original = shared_models.load_model
    monkeypatch.setattr(shared_models, "load_model", lambda *a, **k: calls.append(a) or original(*a, **k))
    return pool, calls


def test_trainer_logs_bertscore_and_loads_encoder_once(tmp_path, counted_loads) -> None:
    pool, calls = counted_loads
    start = time.perf_counter()
    trainer, tokenizer, metric, compute_metrics = recipe.tiny_setup(str(tmp_path / "a"))
    trainer.train()  # evaluates at steps 2 and 4
    logs = _eval_logs(trainer)
    assert [entry["step"] for entry in logs] == [2, 4]
    for entry in logs:
        assert 0.0 <= entry["eval_bertscore_f1"] <= 1.0
        assert {"eval_bertscore_precision", "eval_bertscore_recall"} <= entry.keys()
    predictions, references = compute_metrics.last_texts
    assert len(predictions) == len(recipe.PAIRS)
    assert references[0] == "the cat sat on the mat"  # -100 replaced by pad, specials dropped
    direct = _direct_means(metric, compute_metrics.last_texts)
    for key, value in direct.items():
        assert logs[-1][key] == pytest.approx(value, abs=1e-7)

    # batch_eval_metrics=True: add_batch per eval batch, compute on the last one.
    trainer_b, _, metric_b, batched = recipe.tiny_setup(str(tmp_path / "b"), batch_eval_metrics=True)
    assert type(metric_b).__module__ == type(metric).__module__  # the same pool serves both
    result = trainer_b.evaluate()
    assert "eval_bertscore_f1" in result
    direct_b = _direct_means(metric_b, batched.last_texts)
    for key, value in direct_b.items():
        assert result[key] == pytest.approx(value, abs=1e-7)
    assert len(batched.last_texts[0]) == len(recipe.PAIRS)

    assert len(calls) == 1 and pool.loads == 1  # one encoder load for three evaluations
    seconds = time.perf_counter() - start  # printed for a reader, never compared
    print(f"\ntrainer test: {seconds:.1f}s; eval logs {logs}; batched {result}")


def test_empty_generations_score_zero(counted_loads) -> None:
    import evaluate
    from transformers import AutoTokenizer, EvalPrediction

    from bertscore.sources import embedded_model_dir

    tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_dir()))
    metric = evaluate.load(recipe.METRIC_PATH)
    compute_metrics = recipe.make_compute_metrics(tokenizer, metric, model_type=recipe.EMBEDDED_MODEL)
    labels = np.array([tokenizer("a cat")["input_ids"] + [-100], tokenizer("the dog ran")["input_ids"]])
    predictions = np.array([[tokenizer.pad_token_id, tokenizer.sep_token_id, -100]] * 2)  # decodes to ""
    with pytest.warns(UserWarning, match="empty"):
        result = compute_metrics(EvalPrediction(predictions=predictions, label_ids=labels))
    assert result == {"bertscore_precision": 0.0, "bertscore_recall": 0.0, "bertscore_f1": 0.0}
    assert compute_metrics.last_texts == (["", ""], ["a cat", "the dog ran"])
