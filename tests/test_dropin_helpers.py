"""The official helpers of the drop-in (bertscore/dropin/helpers.py) against the official package's own.

Each is called beside the official one on the same inputs (the official model and tokenizer of the
embedded MiniLM, loaded once), and the matching against a plain loop over real tokens where the
official is wrong (a padded 0 that wins a max when every real similarity is negative).
"""

from __future__ import annotations

import copy
import importlib.util
from collections import defaultdict

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore import dropin
from conftest import REPO_ROOT
from test_parity import TOLERANCE, official

bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

LAYER = 4


@pytest.fixture(scope="module")
def theirs(minilm_dir):
    """The official model (cut at LAYER) and tokenizer, and the official idf_dict without idf."""
    tokenizer = bert_score.utils.get_tokenizer(str(minilm_dir))
    plain = defaultdict(lambda: 1.0, {tokenizer.sep_token_id: 0.0, tokenizer.cls_token_id: 0.0})
    return bert_score.utils.get_model(str(minilm_dir), LAYER), tokenizer, plain


@pytest.fixture(scope="module")
def pairs(wmt17_de_en):
    cands, refs = wmt17_de_en
    # The last pair: a reference token whose every similarity to "ok" is negative at LAYER.
    return list(cands[:10]) + ["ok"], list(refs[:10]) + [refs[27]]


def plain_loop(hyp, hyp_mask, hyp_idf, ref, ref_mask, ref_idf):
    """P, R, F of each pair by loops over real tokens only (cosines of unit vectors, weights normalised)."""
    out = []
    for b in range(hyp.shape[0]):
        h, r = hyp[b][hyp_mask[b].bool()].double(), ref[b][ref_mask[b].bool()].double()
        h, r = h / h.norm(dim=-1, keepdim=True), r / r.norm(dim=-1, keepdim=True)
        sim = h @ r.T
        wh, wr = hyp_idf[b][hyp_mask[b].bool()].double(), ref_idf[b][ref_mask[b].bool()].double()
        p = float((sim.max(dim=1).values * wh).sum() / wh.sum())
        rec = float((sim.max(dim=0).values * wr).sum() / wr.sum())
        out.append((p, rec, 2 * p * rec / (p + rec)))
    return torch.tensor(out).T


def test_embedding_steps_equal_the_official_ones(theirs, pairs):
    model, tokenizer, plain = theirs
    texts = pairs[1][:5]
    assert dropin.get_idf_dict(texts, tokenizer)[tokenizer.cls_token_id] == 0.0
    for ours, official_one in zip(dropin.collate_idf(texts, tokenizer, plain),
                                  bert_score.utils.collate_idf(texts, tokenizer, plain, device="cpu")):
        assert torch.equal(ours, official_one)
    ours = dropin.get_bert_embedding(texts, model, tokenizer, plain, batch_size=2)
    official_one = bert_score.utils.get_bert_embedding(texts, model, tokenizer, plain, batch_size=2, device="cpu")
    assert (ours[0] - official_one[0]).abs().max() <= 1e-6
    assert torch.equal(ours[1], official_one[1]) and torch.equal(ours[2], official_one[2])


def test_greedy_cos_idf_equals_the_official_and_the_loop_where_padding_wins_officially(theirs, pairs):
    model, tokenizer, plain = theirs
    cands, refs = pairs
    ref = bert_score.utils.get_bert_embedding(refs, model, tokenizer, plain, device="cpu")
    hyp = bert_score.utils.get_bert_embedding(cands, model, tokenizer, plain, device="cpu")
    kept = [t.clone() for t in (*ref, *hyp)]
    ours = torch.stack(dropin.greedy_cos_idf(*ref, *hyp))
    assert all(torch.equal(a, b) for a, b in zip(kept, (*ref, *hyp)))  # the arguments are left as they were
    official_one = torch.stack(bert_score.utils.greedy_cos_idf(*[t.clone() for t in (*ref, *hyp)]))
    loop = plain_loop(hyp[0], hyp[1], hyp[2], ref[0], ref[1], ref[2])
    assert (ours.double() - loop).abs().max() <= 1e-6
    # The last pair ("ok"): a reference token whose every real similarity is
    # negative gets the padding's 0 officially; the others equal the official helper's numbers.
    assert (ours[:, :-1] - official_one[:, :-1]).abs().max() <= 1e-6
    assert official_one[1, -1] - ours[1, -1] > 1e-4


def test_all_layers_greedy_cos_idf_takes_the_official_layout(minilm_dir, theirs, pairs):
    _, tokenizer, plain = theirs
    model = bert_score.utils.get_model(str(minilm_dir), 6, all_layers=True)
    cands, refs = pairs[0][:4], pairs[1][:4]
    ref = bert_score.utils.get_bert_embedding(refs, model, tokenizer, plain, device="cpu", all_layers=True)
    hyp = bert_score.utils.get_bert_embedding(cands, model, tokenizer, plain, device="cpu", all_layers=True)
    ours = torch.stack(dropin.greedy_cos_idf(*ref, *hyp, all_layers=True))  # [3, K, B]
    assert ours.shape == (3, 7, 4)
    for layer in range(7):
        loop = plain_loop(hyp[0][:, :, layer], hyp[1], hyp[2], ref[0][:, :, layer], ref[1], ref[2])
        assert (ours[:, layer].double() - loop).abs().max() <= 1e-6


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.tuples(st.integers(3, 7), st.integers(3, 7)), min_size=1, max_size=4),
       seed=st.integers(0, 2**16), pad_weight=st.sampled_from([0.0, float(torch.finfo(torch.float32).eps)]))
def test_greedy_cos_idf_is_the_plain_loop_whatever_the_padding_holds(lengths, seed, pad_weight):
    """mbrs pads embeddings and idf with eps, the official route with 2.0 and 0: nothing padded counts."""
    generator = torch.Generator().manual_seed(seed)
    width = 8

    def side(index):
        emb = torch.randn(len(lengths), width, 5, generator=generator)
        mask = torch.zeros(len(lengths), width, dtype=torch.bool)
        idf = torch.full((len(lengths), width), pad_weight)
        for b, pair in enumerate(lengths):
            mask[b, : pair[index]] = True
            idf[b, : pair[index]] = torch.rand(pair[index], generator=generator) + 0.1
            emb[b, pair[index]:] = 2.0
        return emb, mask, idf

    hyp, ref = side(0), side(1)
    ours = torch.stack(dropin.greedy_cos_idf(*ref, *hyp))
    assert (ours.double() - plain_loop(*hyp, *ref)).abs().max() <= 1e-5


def test_a_text_of_special_tokens_only_scores_zero_as_officially():
    emb = torch.randn(2, 4, 5)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    idf = torch.tensor([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    precision, recall, f1 = dropin.greedy_cos_idf(emb, mask, idf, emb.clone(), mask, idf)
    assert precision[1] == recall[1] == f1[1] == 0 and f1[0] > 0.99


@pytest.mark.slow
def test_bert_cos_score_idf_gives_the_official_scores(minilm_dir, theirs, pairs):
    model, tokenizer, plain = theirs
    cands, refs = pairs[0][:8], pairs[1][:8]
    theirs_scores = torch.stack(official(cands, refs, minilm_dir, LAYER), dim=-1)
    ours = dropin.bert_cos_score_idf(model, refs, cands, tokenizer, plain, batch_size=3)
    assert ours.shape == (8, 3) and (ours - theirs_scores).abs().max() <= TOLERANCE
    idf = dropin.get_idf_dict(refs, tokenizer)
    weighted = dropin.bert_cos_score_idf(model, refs, cands, tokenizer, idf, batch_size=3, device="cpu")
    assert (weighted - torch.stack(official(cands, refs, minilm_dir, LAYER, idf=True), dim=-1)).abs().max() <= TOLERANCE


def test_the_scorers_privates_are_its_shared_encoder_and_tokenizer(minilm_dir, pairs):
    scorer = dropin.BERTScorer(model_type=str(minilm_dir), num_layers=LAYER)
    other = dropin.BERTScorer(model_type=str(minilm_dir), num_layers=LAYER, idf=True, idf_sents=pairs[1])
    assert scorer._model is scorer.model.encoder is other._model and scorer._tokenizer is scorer.model.tokenizer
    assert scorer._idf_dict is None and other._idf_dict[scorer._tokenizer.cls_token_id] == pytest.approx(0.0)
    official_idf = bert_score.utils.get_idf_dict(pairs[1], bert_score.utils.get_tokenizer(str(minilm_dir)), nthreads=0)
    assert all(other._idf_dict[k] == pytest.approx(v, abs=1e-6) for k, v in official_idf.items())
    # Scoring through the privates and the helpers gives score()'s numbers.
    cands, refs = pairs[0][:6], pairs[1][:6]
    helpers = dropin.bert_cos_score_idf(scorer._model, refs, cands, scorer._tokenizer,
                                        defaultdict(lambda: 1.0, {101: 0.0, 102: 0.0}), batch_size=3)
    assert (helpers - torch.stack(scorer.score(cands, refs), dim=-1)).abs().max() <= TOLERANCE


def test_the_dropin_modules_reexport_the_helpers_and_refuse_scibert():
    """bert_score_dropin/bert_score/{utils,scorer}.py, loaded by path (`bert_score` is the official package here)."""
    modules = {}
    for name in ("utils", "scorer"):
        spec = importlib.util.spec_from_file_location(f"dropin_{name}", REPO_ROOT / "bert_score_dropin" / "bert_score"
                                                      / f"{name}.py")
        modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(modules[name])
    utils, scorer = modules["utils"], modules["scorer"]
    from bert_score.utils import get_bert_embedding as _  # noqa: F401 - the official name exists officially too

    assert utils.get_bert_embedding is dropin.get_bert_embedding and utils.greedy_cos_idf is dropin.greedy_cos_idf
    assert scorer.get_model is dropin.get_model and scorer.bert_cos_score_idf is dropin.bert_cos_score_idf
    assert scorer.BERTScorer.helpers_module == "dropin_scorer" and issubclass(scorer.BERTScorer, dropin.BERTScorer)
    official_scorer_names = {name for name in vars(bert_score.scorer) if not name.startswith("_")}
    assert {name for name in vars(scorer) if not name.startswith("_")} - {"internal_missing"} <= official_scorer_names
    with pytest.raises(AttributeError, match="cache_scibert is an internal helper of the official"):
        utils.cache_scibert
    assert copy.copy(utils.lang2model)["en"] == "roberta-large"


@pytest.mark.slow
def test_a_patched_get_model_gives_the_scorer_its_encoder(minilm_dir, pairs, monkeypatch):
    """The scorer reads `get_model` from its helpers module when built (`bert_score.scorer` for the drop-in):
    a caller's model is scored through `bert_cos_score_idf`, with the official numbers; nothing is shared."""
    from bertscore.models.shared import SHARED_MODELS

    calls = []

    def their_get_model(model_type, num_layers, all_layers=None):
        calls.append((model_type, num_layers, all_layers))
        return bert_score.utils.get_model(model_type, num_layers, all_layers)

    monkeypatch.setattr(dropin, "get_model", their_get_model)
    loads = SHARED_MODELS.loads
    scorer = dropin.BERTScorer(model_type=str(minilm_dir), num_layers=LAYER)
    assert calls == [(str(minilm_dir), LAYER, False)] and SHARED_MODELS.loads == loads
    cands, refs = pairs[0][:8], pairs[1][:8]
    theirs_scores = torch.stack(official(cands, refs, minilm_dir, LAYER), dim=-1)
    assert (torch.stack(scorer.score(cands, refs), dim=-1) - theirs_scores).abs().max() <= TOLERANCE
