"""The evaluate module through evaluate.load, offline."""

from __future__ import annotations

import math
from pathlib import Path

import numpy
import pytest
import torch

evaluate = pytest.importorskip("evaluate")
bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

import oracle  # noqa: E402
from bertscore import EMBEDDED_MODEL_NAME  # noqa: E402
from conftest import REPO_ROOT, SENTENCES  # noqa: E402

METRIC_PATH = str(REPO_ROOT / "bertscore_metric.py")
TOLERANCE = 1e-5  # against the official package at batch_size=1 (DEVELOPERS.md)


def official(cands, refs, minilm_dir, num_layers=4, **settings) -> dict[str, list[float]]:
    """The official bert-score 0.3.13's P, R, F1 at batch_size=1 (tests/oracle.py keeps the answer)."""
    p, r, f = oracle.call(bert_score.score, cands, refs, model_type=str(minilm_dir), num_layers=num_layers,
                          batch_size=1, **settings)
    return {"precision": p.tolist(), "recall": r.tolist(), "f1": f.tolist()}


def assert_official(out: dict, expected: dict[str, list]) -> None:
    for name in ("precision", "recall", "f1"):
        assert out[name] == pytest.approx(expected[name], abs=TOLERANCE), name


def plain_bootstrap(values: list[float], n_resamples: int, confidence: float, seed: int) -> tuple[float, float, float]:
    """The mean and percentile interval as bertscore.stats.bootstrap_ci documents them, by a plain loop:
    resample i is row i of numpy.random.default_rng(seed).choice(n, size=(n_resamples, n)); the interval's
    ends are the (1 -+ confidence) / 2 quantiles of the resampled means, linear between order statistics."""
    n = len(values)
    rows = numpy.random.default_rng(seed).choice(n, size=(n_resamples, n)).tolist()
    means = sorted(sum(values[i] for i in row) / n for row in rows)

    def quantile(q: float) -> float:
        position = q * (n_resamples - 1)
        below = math.floor(position)
        above = min(below + 1, n_resamples - 1)
        return means[below] + (means[above] - means[below]) * (position - below)

    return sum(values) / n, quantile((1 - confidence) / 2), quantile((1 + confidence) / 2)


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(METRIC_PATH)


def test_add_batch_streaming_with_bare_string_references(metric, minilm_dir):
    """Every column against the official package: fails on a batch or an `add` lost, reordered or scored
    against another row's reference, or on P and R swapped."""
    cands, refs = SENTENCES[:6], SENTENCES[1:7]
    metric.add_batch(predictions=cands[:3], references=refs[:3])
    metric.add_batch(predictions=cands[3:5], references=[[r] for r in refs[3:5]])
    metric.add(prediction=cands[5], reference=refs[5])
    out = metric.compute(model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert_official(out, official(cands, refs, minilm_dir))
    assert set(out) == {"precision", "recall", "f1", "hashcode"}
    assert out["hashcode"].startswith(EMBEDDED_MODEL_NAME)


def test_multi_reference(metric, minilm_dir):
    """The official package's multi-reference rule (each column of the reference with the best F1)."""
    out = metric.compute(predictions=SENTENCES[:2], references=[SENTENCES[2:4], [SENTENCES[4]]],
                         model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert_official(out, official(SENTENCES[:2], [SENTENCES[2:4], [SENTENCES[4]]], minilm_dir))


def test_idf_weights_are_never_stale(metric, minilm_dir):
    """evaluate's own wrapper reuses idf weights across calls; ours recomputes them per call (the
    official package's idf over this call's references)."""
    cands = SENTENCES[:4]
    first = metric.compute(predictions=cands, references=SENTENCES[4:8], model_type=EMBEDDED_MODEL_NAME,
                           num_layers=4, idf=True)
    second = metric.compute(predictions=cands, references=SENTENCES[5:9], model_type=EMBEDDED_MODEL_NAME,
                            num_layers=4, idf=True)
    assert_official(first, official(cands, SENTENCES[4:8], minilm_dir, idf=True))
    assert_official(second, official(cands, SENTENCES[5:9], minilm_dir, idf=True))
    assert first["hashcode"] == second["hashcode"]
    no_idf = metric.compute(predictions=cands, references=SENTENCES[5:9], model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert no_idf["hashcode"] != second["hashcode"]


def _pool_of(metric):
    """The pool of the module evaluate actually loaded (a copy of bertscore_metric.py, not the repo's)."""
    import sys

    module = sys.modules[type(metric).__module__]
    assert module.__file__ != str(REPO_ROOT / "bertscore_metric.py")  # evaluate runs its own copy
    return module._SCORER_POOL


def test_scorer_is_reused_between_computes(metric):
    pool = _pool_of(metric)
    metric.compute(predictions=["a b"], references=["a c"], model_type=EMBEDDED_MODEL_NAME, num_layers=3)
    loads = pool.loads
    assert loads >= 1
    metric.compute(predictions=["a b"], references=["a c"], model_type=EMBEDDED_MODEL_NAME, num_layers=3)
    metric.compute(predictions=["a b"], references=["a c"], model_type=EMBEDDED_MODEL_NAME, num_layers=3, idf=True)
    assert pool.loads == loads
    metric.compute(predictions=["a b"], references=["a c"], model_type=EMBEDDED_MODEL_NAME, num_layers=2)
    assert pool.loads == loads + 1  # another layer is another encoder


def test_cache_settings_and_release(metric):
    pool = _pool_of(metric)
    args = dict(predictions=["a b"], references=["a c"], model_type=EMBEDDED_MODEL_NAME, num_layers=3)
    metric.compute(**args, cache_bytes=0)
    scorer = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=3, cache_bytes=0, idf=False, batch_size=64,
                      rescale_with_baseline=False, baseline_path=None, max_tokens_per_batch=None,
                      use_fast_tokenizer=False, nthreads=4)
    assert scorer.cache.max_bytes == 0 and len(scorer.cache) == 0
    metric.compute(**args, cache_bytes=1 << 20, cache_device="cpu")
    assert [cache.max_bytes for _, cache in pool._models.values()] == [1 << 20]
    loads = pool.loads
    import sys

    sys.modules[type(metric).__module__].release()
    assert pool.models == []
    metric.compute(**args)
    assert pool.loads == loads + 1


def test_a_failed_compute_frees_its_cache_file_and_lock(tmp_path, minilm_dir):
    """evaluate leaves a compute's cache file and its lock held when `_compute` raises: the next
    compute then waited a second for the lock and wrote to a new file, leaving the old one.
    (In a cache folder of its own: no other compute, in this process or another, touches its files.)"""
    from filelock import FileLock

    metric = evaluate.load(METRIC_PATH, cache_dir=str(tmp_path / "metric-cache"))
    bad_baseline = tmp_path / "bad.tsv"
    bad_baseline.write_text("not a baseline\n", encoding="utf-8")
    args = dict(predictions=["a cat sat"], references=["the cat sat"], model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    for _ in range(2):
        with pytest.raises(ValueError, match="bad.tsv"):
            metric.compute(**args, rescale_with_baseline=True, baseline_path=str(bad_baseline))
        cache_file = metric.file_paths[0]
        assert Path(cache_file).is_relative_to(tmp_path / "metric-cache")
        assert not Path(cache_file).exists()
        probe = FileLock(cache_file + ".lock")
        probe.acquire(timeout=0)  # raises filelock.Timeout while the failed call still holds it
        probe.release()
    out = metric.compute(**args)
    assert metric.file_paths == [cache_file]  # the same file again, not a fresh name after a timeout
    assert_official(out, official(args["predictions"], args["references"], minilm_dir))


def test_empty_prediction_scores_zero(metric):
    with pytest.warns(UserWarning, match="empty"):
        out = metric.compute(predictions=["", "a cat"], references=["a dog", "a cat"], model_type=EMBEDDED_MODEL_NAME,
                             num_layers=4)
    assert out["f1"][0] == 0.0 and out["f1"][1] == pytest.approx(1.0, abs=1e-5)


def test_confidence_level_adds_means_and_intervals(metric, minilm_dir):
    """The scores against the official package (every layer's, each scored alone with num_layers=k, under
    all_layers), the means and intervals against a plain loop over the documented resampling: fails on a
    column's interval computed from another column or layer, the seed or confidence dropped, or a layer
    shifted."""
    cands, refs = SENTENCES[:8], SENTENCES[2:]
    plain = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert set(plain) == {"precision", "recall", "f1", "hashcode"}  # default output unchanged
    assert_official(plain, official(cands, refs, minilm_dir))
    out = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4,
                         confidence_level=0.9, seed=7)
    assert out["f1"] == plain["f1"]
    for name in ("precision", "recall", "f1"):
        mean, low, high = plain_bootstrap(plain[name], 1000, 0.9, 7)
        assert out[f"{name}_mean"] == pytest.approx(mean, abs=1e-12)
        assert out[f"{name}_ci"] == pytest.approx([low, high], abs=1e-12)
    layered = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, all_layers=True,
                             num_layers=6, confidence_level=0.95)
    every_layer = oracle.call(oracle.score_layers, cands, refs, str(minilm_dir), 6, batch_size=1)
    for name, expected in zip(("precision", "recall", "f1"), every_layer):
        assert len(layered[name]) == 7 and len(layered[f"{name}_ci"]) == 7 and len(layered[f"{name}_mean"]) == 7
        assert torch.tensor(layered[name]).sub(expected).abs().max() <= TOLERANCE, name
        for k, values in enumerate(layered[name]):
            mean, low, high = plain_bootstrap(values, 1000, 0.95, 0)  # the default seed
            assert layered[f"{name}_mean"][k] == pytest.approx(mean, abs=1e-12)
            assert layered[f"{name}_ci"][k] == pytest.approx([low, high], abs=1e-12)
    with pytest.raises(ValueError, match="confidence_level must be between 0 and 1"):
        metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, confidence_level=95)
    with pytest.raises(ValueError, match="confidence_level needs at least 2 predictions for a bootstrap interval; got 1"):
        metric.compute(predictions=cands[:1], references=refs[:1], model_type=EMBEDDED_MODEL_NAME, confidence_level=0.9)
