"""One loaded encoder per settings in the process (bertscore/models/shared.py): `score()` and new scorers
reuse it, the number kept is bounded, `release_models()` frees them, rewritten weights load again,
and the numbers never depend on whether an encoder was reused.

Each test swaps in a fresh `SharedModels` (so what the session's other tests loaded does not count).
Process memory around `release_models()` is measured in a fresh interpreter: tests/test_dropin.py.
"""

from __future__ import annotations

import gc
import os
import shutil
import weakref

import pytest
import torch

import bertscore.pool
import bertscore.scorer
from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, release_models, score, sources
from bertscore.models import shared as shared_models
from bertscore.models.loading import load_model
from conftest import SENTENCES

CANDS, REFS = SENTENCES[:4], SENTENCES[4:8]


@pytest.fixture
def shared(monkeypatch) -> shared_models.SharedModels:
    fresh = shared_models.SharedModels(max_models=1)
    monkeypatch.setattr(shared_models, "SHARED_MODELS", fresh)
    monkeypatch.setattr(bertscore.scorer, "SHARED_MODELS", fresh)
    monkeypatch.setattr(bertscore.pool, "SHARED_MODELS", fresh)
    return fresh


def test_score_and_new_scorers_load_the_encoder_once_and_score_as_a_fresh_load(shared):
    per_call = [torch.stack(score([c], [r], model_type=EMBEDDED_MODEL_NAME, num_layers=3)) for c, r in zip(CANDS, REFS)]
    scorers = [BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=3, idf=i % 2 == 1) for i in range(3)]
    assert shared.loads == 1 and scorers[0].model is scorers[2].model
    # "cpu" and torch.device("cpu") are one encoder; the key names the weights, layer, device and dtype.
    BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=3, device=torch.device("cpu"))
    assert shared.loads == 1 and shared.kept[-1][1:] == (scorers[0].model.revision, 3, False, "cpu", "float32")
    fresh = BERTScorer(loaded_model=load_model(EMBEDDED_MODEL_NAME, 3), cache_bytes=0)  # not shared: loaded here
    for (cand, ref), reused in zip(zip(CANDS, REFS), per_call):  # reuse changes no number, not one bit
        assert torch.equal(reused, torch.stack(fresh.score([cand], [ref])))


def test_the_evaluate_modules_pool_and_score_share_one_encoder_which_the_pool_release_frees(shared):
    """The evaluate module and the Space score through a ScorerPool; `score()` in the same process
    takes the encoder that pool holds, and the pool's release frees it (it is not kept here after)."""
    pool = bertscore.pool.ScorerPool(max_models=1)
    pooled = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=3)
    direct = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=3)
    assert shared.loads == 1 and direct.model is pooled.model
    encoder = weakref.ref(pooled.model.encoder)
    del pooled, direct
    release_models()  # what score() keeps; the pool's encoder stays while the pool holds it
    gc.collect()
    assert encoder() is not None
    pool.release()  # frees it now: no gc.collect() of the caller's is needed
    assert encoder() is None and shared.kept == []


def test_the_default_layer_follows_the_table_when_it_is_edited(shared, monkeypatch, minilm_dir):
    folder = str(minilm_dir)
    last = BERTScorer(model_type=folder)  # not in the table: its last layer, also asked for by number
    assert last.num_layers == 6 and BERTScorer(model_type=folder, num_layers=6).model is last.model
    monkeypatch.setitem(shared_models.MODEL_TO_LAYERS, folder, 2)
    assert BERTScorer(model_type=folder).num_layers == 2 and shared.loads == 2


def test_kept_models_are_bounded_and_release_frees_them(shared, tiny_models):
    first = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=2)
    encoder = weakref.ref(first.model.encoder)
    del first
    gc.collect()
    assert encoder() is not None  # kept for the next call, though no scorer holds it
    BERTScorer(model_type=str(tiny_models["electra"]), num_layers=1)  # max_models=1: MiniLM is no longer kept
    gc.collect()
    assert encoder() is None and [key[0] for key in shared.kept] == [str(tiny_models["electra"])]
    held = BERTScorer(model_type=str(tiny_models["electra"]), num_layers=1)
    release_models()
    assert shared.kept == [] and held.score(["a b"], ["a c"])[2].item() > 0  # a live scorer keeps its encoder
    assert BERTScorer(model_type=str(tiny_models["electra"]), num_layers=1).model is held.model and shared.loads == 2


def test_weights_rewritten_in_place_load_again_and_unchanged_folders_are_not_hashed_again(shared, tiny_models,
                                                                                           tmp_path, monkeypatch):
    from transformers import AutoModel

    folder = tmp_path / "electra"
    shutil.copytree(tiny_models["electra"], folder)
    before = BERTScorer(model_type=str(folder), num_layers=2)
    hashed = []
    original = sources._content_fingerprint
    monkeypatch.setattr(sources, "_content_fingerprint", lambda path: hashed.append(path) or original(path))
    assert BERTScorer(model_type=str(folder), num_layers=2).model is before.model and hashed == []
    model = AutoModel.from_pretrained(folder)
    with torch.no_grad():
        model.encoder.layer[0].output.dense.weight.mul_(1.5)
    model.save_pretrained(folder)
    weights = next(folder.glob("*.safetensors"))
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns - 10**9))  # an old mtime: the change is still seen
    after = BERTScorer(model_type=str(folder), num_layers=2)
    assert len(hashed) == 1 and after.model is not before.model and shared.loads == 2 and after.hash != before.hash
    assert not torch.allclose(torch.stack(after.score(CANDS, REFS)), torch.stack(before.score(CANDS, REFS)), atol=1e-4)
