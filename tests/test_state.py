"""No silent state: shared encoders stay as loaded, the hash names every input, nothing NaN.

Each test here failed on the code before these guarantees existed (see issue 13).
"""

from __future__ import annotations

import threading

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, TokenWeights
from bertscore.scoring.embed import Embedder, EmbeddingCache, NonFiniteEmbeddingError
from bertscore.models.loading import load_model
from bertscore.sources import folder_fingerprint
from bertscore.pool import ScorerPool
from conftest import SENTENCES

CANDS, REFS = SENTENCES, SENTENCES[3:] + SENTENCES[:3]


def _scores(scorer: BERTScorer, cands=CANDS, refs=REFS) -> torch.Tensor:
    return torch.stack(scorer.score(cands, refs))


# ----- a shared encoder is never changed behind a scorer's back ------------------------------
@pytest.mark.filterwarnings("ignore:dtype=bfloat16")
def test_a_bf16_scorer_on_a_shared_model_leaves_the_fp32_scorer_alone(minilm_scorer):
    shared = minilm_scorer.model
    fp32 = BERTScorer(loaded_model=shared, cache_bytes=0)
    before = _scores(fp32)
    bf16 = BERTScorer(loaded_model=shared, dtype="bfloat16", cache_bytes=0)
    assert bf16.model is not shared and bf16.model.dtype == "bfloat16"
    assert {p.dtype for p in shared.encoder.parameters()} == {torch.float32}
    assert torch.equal(_scores(fp32), before)  # bit for bit: the fp32 weights were not rounded
    assert not torch.equal(_scores(bf16), before)  # and the bf16 scorer really ran in bf16
    assert "float32" in fp32.hash and "bfloat16" in bf16.hash


def test_a_device_change_copies_the_encoder(minilm_scorer):
    shared = minilm_scorer.model
    moved = shared.with_placement(torch.device("meta"), shared.dtype)
    assert moved is not shared and moved.device == torch.device("meta")
    assert next(moved.encoder.parameters()).device.type == "meta"
    assert {p.device.type for p in shared.encoder.parameters()} == {"cpu"}
    assert shared.with_placement(torch.device("cpu"), "float32") is shared


@pytest.mark.parametrize(
    "settings, message",
    [({"model_type": "roberta-large"}, "model_type='roberta-large' but loaded_model"),
     ({"num_layers": 2}, "num_layers=2 but loaded_model is truncated at layer 4"),
     ({"all_layers": True}, "all_layers=True but loaded_model")],
)
def test_settings_that_disagree_with_the_loaded_model_are_errors(minilm_scorer, settings, message):
    with pytest.raises(ValueError, match=message):
        BERTScorer(loaded_model=minilm_scorer.model, **settings)


def test_batch_size_of_a_call_applies_to_that_call_only(minilm_scorer, monkeypatch):
    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    sizes: list[int] = []
    original = Embedder._forward

    def recording(self, batch_ids):
        sizes.append(len(batch_ids))
        return original(self, batch_ids)

    monkeypatch.setattr(Embedder, "_forward", recording)
    scorer.score(CANDS, REFS, batch_size=2)
    assert sizes and max(sizes) <= 2
    sizes.clear()
    scorer.score(CANDS, REFS)
    assert max(sizes) > 2 and scorer.embedder.batch_size == 64


# ----- the hash names everything that changes the numbers ------------------------------------
def test_token_weight_tables_are_hashed_by_content(minilm_scorer):
    model = minilm_scorer.model
    a = TokenWeights.from_documents(model.tokenize(SENTENCES[:3]), model.vocab_size, model.zero_weight_ids)
    b = TokenWeights.from_documents(model.tokenize(SENTENCES[3:]), model.vocab_size, model.zero_weight_ids)
    assert a.label == b.label  # the labels alone cannot tell them apart
    hashes = {BERTScorer(loaded_model=model, idf=weights).hash for weights in (a, b)}
    hashes.add(BERTScorer(loaded_model=model, idf=True).hash)
    assert len(hashes) == 3
    # and a table scores as the texts it came from
    from_table = _scores(BERTScorer(loaded_model=model, idf=a, cache_bytes=0))
    from_texts = _scores(BERTScorer(loaded_model=model, idf=list(SENTENCES[:3]), cache_bytes=0))
    assert torch.equal(from_table, from_texts)


def test_weights_rewritten_in_place_with_the_same_size_change_the_fingerprint(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    weights = folder / "model.safetensors"
    data = bytearray(torch.randn(5 << 18).numpy().tobytes())  # 5 MiB: more than the first and last MiB
    weights.write_bytes(bytes(data))
    (folder / "config.json").write_text("{}")
    before = folder_fingerprint(folder)
    data[len(data) // 2] ^= 0xFF  # one byte in the middle, same size
    weights.write_bytes(bytes(data))
    assert weights.stat().st_size == len(data)
    assert folder_fingerprint(folder) != before


def test_the_device_type_is_in_the_hash(minilm_scorer):
    assert "_float32_cpu_version=" in minilm_scorer.hash


# ----- never NaN, under any precision ----------------------------------------------------------
def test_float16_scores_stay_close_to_float32(minilm_scorer, recwarn):
    fp16 = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, dtype="float16", cache_bytes=0, device="cpu")
    assert {p.dtype for p in fp16.model.encoder.parameters()} == {torch.float16}
    reference = _scores(BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0))
    scores = _scores(fp16)
    assert torch.isfinite(scores).all()
    assert 0 < (scores - reference).abs().max().item() <= 5e-3


def test_reduced_precision_keeps_transformers_fp32_modules(tiny_t5):
    """T5's `wo` stays float32 in a float16 load (its `_keep_in_fp32_modules`), as transformers loads it."""
    model = load_model(str(tiny_t5), 2, dtype="float16")
    block = model.encoder.encoder.block[0]
    assert block.layer[1].DenseReluDense.wo.weight.dtype == torch.float32
    assert block.layer[0].SelfAttention.q.weight.dtype == torch.float16


def test_encoder_overflow_is_an_error_naming_the_text_not_nan(tiny_models, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(tiny_models["electra"])
    with torch.no_grad():
        model.embeddings.word_embeddings.weight.mul_(1e9)  # finite in fp32, inf in fp16 (max 65504)
    model.save_pretrained(tmp_path / "huge")
    AutoTokenizer.from_pretrained(tiny_models["electra"]).save_pretrained(tmp_path / "huge")
    fp32 = BERTScorer(model_type=str(tmp_path / "huge"), num_layers=2, cache_bytes=0)
    assert torch.isfinite(_scores(fp32, ["the cat sat on the mat"], ["a dog"])).all()
    fp16 = BERTScorer(model_type=str(tmp_path / "huge"), num_layers=2, dtype="float16")
    with pytest.raises(NonFiniteEmbeddingError, match=r"inf/NaN in float16 .*'(the cat sat on the mat|a dog)'"):
        fp16.score(["the cat sat on the mat"], ["a dog"])
    assert len(fp16.cache) == 0  # the check (once per call, no sync per batch) runs before anything is cached


# ----- concurrent use -----------------------------------------------------------------------------
def test_embedding_cache_under_threads_keeps_its_bound():
    cache = EmbeddingCache(max_bytes=50 * 4 * 8)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(300):
                cache.put((worker, i), torch.full((8,), float(i)))
                value = cache.get((worker, i - 1))
                assert value is None or value[0].item() == i - 1
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert cache.bytes == sum(v.numel() * v.element_size() for v in cache._items.values()) <= cache.max_bytes


def test_pool_shared_by_threads_loads_once_and_scores_alike():
    pool = ScorerPool(max_models=1)
    results: dict[int, torch.Tensor] = {}

    def work(index: int) -> None:
        scorer = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=3, idf=index % 2 == 0)
        results[index] = torch.stack(scorer.score(CANDS, REFS))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert pool.loads == 1 and len(results) == 4
    assert torch.allclose(results[0], results[2], atol=1e-6) and torch.allclose(results[1], results[3], atol=1e-6)
    assert not torch.allclose(results[0], results[1], atol=1e-4)  # idf on vs off really differ


def test_pool_evicts_the_least_recent_model_and_releases_everything(tiny_models):
    pool = ScorerPool(max_models=1)
    first = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=2)
    pool.get(model_type=str(tiny_models["electra"]), num_layers=1)
    assert pool.loads == 2 and [key[0] for key in pool.models] == [str(tiny_models["electra"])]
    again = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=2)
    assert pool.loads == 3 and again is not first
    pool.release()
    assert pool.models == [] and len(again.cache) == 0


def test_pool_sees_a_baseline_file_rewritten_in_place(tmp_path):
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(7)))
    pool = ScorerPool()
    first = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=3, rescale_with_baseline=True, baseline_path=str(baseline))
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.6,0.6,0.6\n" for k in range(7)))
    second = pool.get(model_type=EMBEDDED_MODEL_NAME, num_layers=3, rescale_with_baseline=True, baseline_path=str(baseline))
    assert second is not first and second.hash != first.hash
    assert torch.allclose(second.baseline, torch.full((3,), 0.6))
    assert pool.loads == 1  # a new scorer, not a new encoder


def test_pool_sees_a_local_model_rewritten_in_place(tiny_models, tmp_path):
    import shutil

    from transformers import AutoModel

    folder = tmp_path / "electra"
    shutil.copytree(tiny_models["electra"], folder)
    pool = ScorerPool()
    first = pool.get(model_type=str(folder), num_layers=2)
    before = torch.stack(first.score(CANDS, REFS))
    model = AutoModel.from_pretrained(folder)
    with torch.no_grad():
        model.encoder.layer[0].output.dense.weight.mul_(1.5)
    model.save_pretrained(folder)
    second = pool.get(model_type=str(folder), num_layers=2)
    assert second.hash != first.hash and pool.loads == 2
    assert not torch.allclose(torch.stack(second.score(CANDS, REFS)), before, atol=1e-4)
