"""The evaluate module through evaluate.load, offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

evaluate = pytest.importorskip("evaluate")

from bertscore import EMBEDDED_MODEL_NAME, score  # noqa: E402
from conftest import REPO_ROOT, SENTENCES  # noqa: E402

METRIC_PATH = str(REPO_ROOT / "bertscore_metric.py")


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(METRIC_PATH)


def test_add_batch_streaming_with_bare_string_references(metric):
    cands, refs = SENTENCES[:6], SENTENCES[1:7]
    metric.add_batch(predictions=cands[:3], references=refs[:3])
    metric.add_batch(predictions=cands[3:5], references=[[r] for r in refs[3:5]])
    metric.add(prediction=cands[5], reference=refs[5])
    out = metric.compute(model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    p, r, f = score(cands, refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert torch.allclose(torch.tensor(out["f1"]), f, atol=1e-6)
    assert torch.allclose(torch.tensor(out["recall"]), r, atol=1e-6)
    assert set(out) == {"precision", "recall", "f1", "hashcode"}
    assert out["hashcode"].startswith(EMBEDDED_MODEL_NAME)


def test_multi_reference(metric):
    out = metric.compute(predictions=SENTENCES[:2], references=[SENTENCES[2:4], [SENTENCES[4]]],
                         model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    p, r, f = score(SENTENCES[:2], [SENTENCES[2:4], [SENTENCES[4]]], model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert torch.allclose(torch.tensor(out["f1"]), f, atol=1e-6)


def test_idf_weights_are_never_stale(metric):
    """evaluate's own wrapper reuses idf weights across calls; ours recomputes them per call."""
    cands = SENTENCES[:4]
    first = metric.compute(predictions=cands, references=SENTENCES[4:8], model_type=EMBEDDED_MODEL_NAME,
                           num_layers=4, idf=True)
    second = metric.compute(predictions=cands, references=SENTENCES[5:9], model_type=EMBEDDED_MODEL_NAME,
                            num_layers=4, idf=True)
    expected = score(cands, SENTENCES[5:9], model_type=EMBEDDED_MODEL_NAME, num_layers=4, idf=True)
    assert torch.allclose(torch.tensor(second["f1"]), expected[2], atol=1e-6)
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


def test_a_failed_compute_frees_its_cache_file_and_lock(tmp_path):
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
    assert out["f1"][0] == pytest.approx(float(score(args["predictions"], args["references"],
                                                     model_type=EMBEDDED_MODEL_NAME, num_layers=4)[2][0]), abs=1e-6)


def test_empty_prediction_scores_zero(metric):
    with pytest.warns(UserWarning, match="empty"):
        out = metric.compute(predictions=["", "a cat"], references=["a dog", "a cat"], model_type=EMBEDDED_MODEL_NAME,
                             num_layers=4)
    assert out["f1"][0] == 0.0 and out["f1"][1] == pytest.approx(1.0, abs=1e-5)


def test_confidence_level_adds_means_and_intervals(metric):
    from bertscore import stats

    cands, refs = SENTENCES[:8], SENTENCES[2:]
    plain = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert set(plain) == {"precision", "recall", "f1", "hashcode"}  # default output unchanged
    out = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, num_layers=4,
                         confidence_level=0.9, seed=7)
    assert out["f1"] == plain["f1"]
    for name in ("precision", "recall", "f1"):
        expected = stats.bootstrap_ci(plain[name], n_resamples=1000, confidence=0.9, seed=7)
        assert out[f"{name}_mean"] == pytest.approx(sum(plain[name]) / len(plain[name]))
        assert out[f"{name}_ci"] == pytest.approx([expected.low, expected.high])
    layered = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, all_layers=True,
                             num_layers=6, confidence_level=0.95)
    assert len(layered["f1_mean"]) == 7 and len(layered["f1_ci"]) == 7
    with pytest.raises(ValueError, match="confidence_level must be between 0 and 1"):
        metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME, confidence_level=95)
    with pytest.raises(ValueError, match="confidence_level needs at least 2 predictions for a bootstrap interval; got 1"):
        metric.compute(predictions=cands[:1], references=refs[:1], model_type=EMBEDDED_MODEL_NAME, confidence_level=0.9)
