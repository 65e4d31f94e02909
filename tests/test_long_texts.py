"""Long texts: truncation is never silent, and long_texts="window" scores whole texts (issue 8).

Expected values come from independent routes written here: the tokenizer's own truncation,
a plain per-window loop over a transformers model with the max-context rule, greedy matching
as a plain loop, and the default mode for texts within the limit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, score
from bertscore.scoring import pipeline as pipeline_module
from bertscore.scoring import plan as plan_module
from bertscore.cli import main as cli_main
from bertscore.explain import explain_pair
from bertscore.models.families import has_position_limit
from bertscore.models.loading import load_model
from conftest import REPO_ROOT, SENTENCES
from tiny_models import training_corpus

TINY_LAYERS = 2
TINY_POSITIONS = 2048


def long_text(words: int, seed: int = 0) -> str:
    """A text of about `words` words of real-looking English (varied, so tokens differ by place)."""
    corpus = training_corpus()
    rng = np.random.default_rng(seed)
    picked, count = [], 0
    while count < words:
        sentence = corpus[int(rng.integers(len(corpus)))]
        picked.append(sentence)
        count += len(sentence.split())
    return " ".join(picked)


# ----- models ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm():
    return load_model(EMBEDDED_MODEL_NAME, num_layers=2)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, minilm_dir):
    """A random 2-layer BERT with 2048 positions and the MiniLM tokenizer: model_max_length 2048
    ("wide") and the same weights with model_max_length 34 ("narrow": windows of W = 32)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=TINY_LAYERS, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=TINY_POSITIONS, pad_token_id=tokenizer.pad_token_id,
    )
    model = BertModel(config).eval()
    folders = {}
    for name, max_length in (("wide", TINY_POSITIONS), ("narrow", 34)):
        folder = tmp_path_factory.mktemp(f"tiny_bert_{name}")
        model.save_pretrained(folder)
        tokenizer.model_max_length = max_length
        tokenizer.save_pretrained(folder)
        folders[name] = folder
    return folders


def tiny_scorer(folder: Path, **kw) -> BERTScorer:
    return BERTScorer(model_type=str(folder), num_layers=TINY_LAYERS, device="cpu", cache_bytes=0, **kw)


# ----- 1. truncation: our cut equals the tokenizer's, and it is never silent --------------------
def test_our_cut_equals_the_tokenizers_own_truncation(tiny_models, minilm):
    models = {name: load_model(str(path), num_layers=1) for name, path in tiny_models.items()}
    models["minilm"] = minilm
    for name, model in models.items():
        limit = model.max_length
        texts = SENTENCES + [long_text(limit), "  " + long_text(2 * limit, seed=1) + "  ", ""]
        assert any(len(ids) > limit for ids in model.content_ids(texts)), name  # some texts are cut
        theirs = [model.tokenizer(t.strip(), truncation=True, max_length=limit)["input_ids"] for t in texts]
        assert model.tokenize(texts) == theirs, name
        lead, trail = list(model.lead_ids), list(model.trail_ids)
        whole = [model.tokenizer(t.strip(), add_special_tokens=False, verbose=False)["input_ids"] for t in texts]
        assert model.tokenize(texts, whole=True) == [lead + ids + trail for ids in whole], name


def test_tokenizing_long_texts_does_not_log_the_transformers_warning(minilm_dir):
    model = load_model(str(minilm_dir), num_layers=1)  # a fresh tokenizer: it would warn once
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    transformers_logger = logging.getLogger("transformers")
    transformers_logger.addHandler(handler)
    try:
        model.content_ids([long_text(800)])
        model.tokenize([long_text(800)])
        model.tokenizer([long_text(800)])  # the control: the tokenizer alone does warn
    finally:
        transformers_logger.removeHandler(handler)
    messages = [r.getMessage() for r in records]
    assert len([m for m in messages if "longer than the specified maximum" in m]) == 1


def test_token_store_keeps_int32_truncated_ids_and_the_whole_length(minilm):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu")
    text = long_text(900)
    store = scorer.pipeline.tokenize([text, "short one"])
    n = len(minilm.content_ids([text])[0])
    assert store.flat.dtype == np.int32
    assert store.length(text) == 512 and store.content_length(text) == n > 510
    assert store[text].tolist() == minilm.tokenize([text])[0]
    windowed = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu", long_texts="window")
    whole = windowed.pipeline.tokenize([text])
    assert whole.length(text) == n + 2 and whole.head(text, 510).tolist() == store[text].tolist()


def test_truncation_note_names_the_places_and_the_limit(minilm):
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu")
    long_a, long_b = long_text(700), long_text(800, seed=2)
    cands = ["short", long_a, "also short", "x"]
    refs = [["a"], ["b", "c"], ["d", long_b], [long_a]]
    notes: list[str] = []
    before = scorer.score(cands, refs, notes=notes)
    cut = [n for n in notes if "truncated" in n]
    assert len(cut) == 1
    assert cut[0].startswith("3 texts longer than the model's limit of 510 content tokens (max_length=512 with "
                             "its special tokens) were truncated there")
    assert "candidates[1], references[2][1], references[3];" in cut[0] and "long_texts='window'" in cut[0]
    with pytest.warns(UserWarning, match=r"truncated .* candidates\[1\]"):  # no list: a warning
        again = scorer.score(cands, refs)
    for x, y in zip(before, again):  # the numbers are the official ones, unchanged
        assert torch.equal(x, y)
    quiet: list[str] = []
    scorer.score(["short"], ["a"], notes=quiet)
    assert not quiet


# ----- 2. settings -----------------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    (dict(long_texts="windows"), "long_texts='windows'"),
    (dict(long_texts=None), "long_texts=None"),
    (dict(long_texts="window", window_stride=0), "window_stride=0"),
    (dict(long_texts="window", window_stride=511), "window_stride=511"),
    (dict(long_texts="window", window_stride=-3), "window_stride=-3"),
    (dict(window_stride=100), "window_stride=100 applies to long_texts='window' only"),
])
def test_bad_settings_are_value_errors_naming_the_value(minilm, kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu", **kw)


def test_a_stride_that_is_not_an_integer_is_a_type_error(minilm):
    with pytest.raises(TypeError, match="window_stride"):
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, long_texts="window", window_stride=2.5)


def test_hash_records_mode_and_window(minilm):
    def make(**kw):
        return BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu", **kw)

    truncate, window, strided = make(), make(long_texts="window"), make(long_texts="window", window_stride=100)
    assert "window" not in truncate.hash
    assert "_maxlen=512_window=510/255_" in window.hash and "_window=510/100_" in strided.hash
    assert window.window_stride == 255 and truncate.window_stride is None


def test_models_without_a_position_limit_keep_truncating(minilm, caplog):
    from types import SimpleNamespace

    assert has_position_limit(SimpleNamespace(max_position_embeddings=512))
    assert not has_position_limit(SimpleNamespace(model_type="t5")) and not has_position_limit(SimpleNamespace())
    unlimited = dataclasses.replace(minilm, position_limit=False)
    with caplog.at_level(logging.WARNING):
        scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=unlimited, device="cpu", long_texts="window")
    assert "does not apply" in caplog.text and "window" not in scorer.hash
    notes: list[str] = []
    text = long_text(700)
    got = scorer.score([text], [text + " more"], notes=notes)
    assert any("no fixed position limit" in n and "candidates[0]" in n for n in notes)
    plain = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu")
    with pytest.warns(UserWarning):
        expected = plain.score([text], [text + " more"])
    assert all(torch.equal(x, y) for x, y in zip(got, expected))


# ----- 3. within the limit: bit-identical to the default ------------------------------------------
@pytest.mark.parametrize("idf", [False, True])
def test_texts_within_the_limit_are_bit_identical_mixed_with_long_ones(minilm, idf):
    long_a, long_b = long_text(700), long_text(1500, seed=3)
    cands = SENTENCES + [long_a, SENTENCES[1], long_b]
    if idf:  # idf from the references: long references would (rightly) change it, so keep them short here
        refs = [[s] for s in reversed(SENTENCES)] + [[SENTENCES[2], "the end"], [SENTENCES[3]], [SENTENCES[4]]]
    else:
        refs = [[s] for s in reversed(SENTENCES)] + [[long_b, "the end"], [long_a], [SENTENCES[4], long_a]]
    short = [i for i, (c, group) in enumerate(zip(cands, refs)) if c not in (long_a, long_b)
             and not {long_a, long_b} & set(group)]

    def run(**kw):
        scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu", cache_bytes=0,
                            idf=idf, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return torch.stack(scorer.score(cands, refs))

    truncated, windowed = run(), run(long_texts="window", window_stride=100)
    assert torch.equal(truncated[:, short], windowed[:, short])
    long_pairs = [i for i in range(len(cands)) if i not in short]
    assert not torch.equal(truncated[:, long_pairs], windowed[:, long_pairs])  # the long ones did change
    if idf:
        return  # per-call idf depends on every reference of the call: no "alone" comparison
    alone = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=minilm, device="cpu", cache_bytes=0, idf=idf,
                       long_texts="window", window_stride=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert torch.allclose(torch.stack(alone.score([cands[i] for i in short], [refs[i] for i in short])),
                              windowed[:, short], atol=1e-6, rtol=0)


# ----- 4. the window rule on a tiny BERT with 2048 positions ---------------------------------------
def plain_embedding(model, ids: list[int]) -> torch.Tensor:
    """The encoder's last layer over one sequence, normalised (no batching, no padding)."""
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([ids]))[0][0]
    return hidden / hidden.norm(dim=-1, keepdim=True)


def windowed_by_loop(model, tokenizer, text: str, w: int, s: int) -> torch.Tensor:
    """The issue's rule, written as plainly as possible: windows 0, S, 2S, ... up to the first whose
    end reaches n; each content token from the window where it has most context (ties: earlier);
    the leading special from window 0, the trailing one from the last window."""
    content = tokenizer(text.strip(), add_special_tokens=False, verbose=False)["input_ids"]
    n = len(content)
    starts = [0]
    while starts[-1] + w < n:
        starts.append(starts[-1] + s)
    states = [plain_embedding(model, [tokenizer.cls_token_id] + content[a:a + w] + [tokenizer.sep_token_id])
              for a in starts]
    rows = [states[0][0]]
    for i in range(n):
        best, best_context = None, -1
        for k, a in enumerate(starts):
            end = min(a + w, n)
            if a <= i < end and min(i - a, end - 1 - i) > best_context:
                best, best_context = k, min(i - a, end - 1 - i)
        rows.append(states[best][1 + i - starts[best]])
    last = states[-1]
    rows.append(last[1 + n - starts[-1]])
    assert len(last) == 2 + n - starts[-1]
    return torch.stack(rows)


def greedy_by_loop(cand: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float]:
    """Plain greedy matching: every token may be a match, content tokens weigh 1, specials 0."""
    sim = (cand @ ref.T).double()
    p = sim[1:-1].max(dim=1).values.clamp(max=1).mean().item()
    r = sim[:, 1:-1].max(dim=0).values.clamp(max=1).mean().item()
    return p, r, 2 * p * r / (p + r)


@pytest.fixture(scope="module")
def tiny_reference_model(tiny_bert):
    from transformers import AutoModel, AutoTokenizer

    return AutoModel.from_pretrained(str(tiny_bert["wide"])).eval(), AutoTokenizer.from_pretrained(str(tiny_bert["wide"]))


def test_window_at_least_the_text_equals_the_unwindowed_encoding(tiny_bert, tiny_reference_model):
    model, tokenizer = tiny_reference_model
    cands = [long_text(900), long_text(300, seed=4), "a short one"]
    refs = [long_text(1200, seed=5), long_text(300, seed=6), "short"]
    window = tiny_scorer(tiny_bert["wide"], long_texts="window")
    truncate = tiny_scorer(tiny_bert["wide"])
    assert window.model.content_limit == TINY_POSITIONS - 2
    got = torch.stack(window.score(cands, refs))
    assert torch.equal(got, torch.stack(truncate.score(cands, refs)))
    for i, (c, r) in enumerate(zip(cands, refs)):
        whole = [plain_embedding(model, tokenizer(t)["input_ids"]) for t in (c, r)]
        assert got[:, i].tolist() == pytest.approx(greedy_by_loop(*whole), abs=1e-6)


@pytest.mark.parametrize("stride", [7, 16, 32])
def test_short_windows_equal_a_plain_per_window_loop(tiny_bert, tiny_reference_model, stride):
    model, tokenizer = tiny_reference_model
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window", window_stride=stride)
    w = scorer.model.content_limit
    assert w == 32 and "window=32/{}".format(stride) in scorer.hash
    texts = [long_text(150, seed=7), long_text(60, seed=8), "short text here", long_text(33, seed=9)]
    store = scorer.pipeline.tokenize(texts)
    keys = [t.strip() for t in texts]
    assert [store.content_length(k) > w for k in keys] == [True, True, False, True]
    embedded = scorer.pipeline.embed_texts(keys, store)
    expected = {k: windowed_by_loop(model, tokenizer, k, w, stride) for k in keys}
    for k in keys:
        assert embedded[k].shape == expected[k].shape
        torch.testing.assert_close(embedded[k], expected[k], atol=1e-6, rtol=0)
    p, r, f = scorer.score(texts[:2], texts[2:])
    for i, (c, ref) in enumerate(zip(keys[:2], keys[2:])):
        assert (p[i].item(), r[i].item(), f[i].item()) == pytest.approx(
            greedy_by_loop(expected[c], expected[ref]), abs=1e-6)


def test_a_long_text_against_itself_scores_one(tiny_bert):
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window")
    text = long_text(400, seed=10)
    p, r, f = scorer.score([text], [text])
    assert (p.item(), r.item(), f.item()) == pytest.approx((1.0, 1.0, 1.0), abs=1e-6)


def test_all_layers_windows_equal_each_layer(tiny_bert):
    texts, refs = [long_text(120, seed=11), "short"], [long_text(90, seed=12), long_text(50, seed=13)]
    every = tiny_scorer(tiny_bert["narrow"], long_texts="window", all_layers=True)
    p_all, r_all, f_all = every.score(texts, refs)
    assert f_all.shape == (TINY_LAYERS + 1, 2)
    for layer in (1, TINY_LAYERS):
        one = BERTScorer(model_type=str(tiny_bert["narrow"]), num_layers=layer, device="cpu", cache_bytes=0,
                         long_texts="window")
        p, r, f = one.score(texts, refs)
        torch.testing.assert_close(torch.stack((p_all[layer], r_all[layer], f_all[layer])), torch.stack((p, r, f)),
                                   atol=1e-6, rtol=0)


def test_tiled_matching_of_huge_pairs_equals_the_batched_path(tiny_bert, monkeypatch):
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window")
    cands = [long_text(200, seed=14), "tiny", long_text(150, seed=15)]
    refs = [long_text(250, seed=16), long_text(100, seed=17), long_text(120, seed=18)]
    batched = torch.stack(scorer.score(cands, refs))
    calls = []
    original = pipeline_module.greedy_match_tiled

    def spy(*args, **kwargs):
        calls.append(args[0].shape)
        return original(*args, **kwargs)

    monkeypatch.setattr(pipeline_module, "greedy_match_tiled", spy)
    monkeypatch.setattr(plan_module, "MATCH_BATCH_BYTES", 60 * 60 * 4)  # pairs past 60 x 60 tokens tile
    tiled = torch.stack(scorer.score(cands, refs))
    assert len(calls) == 2  # the pairs past 60 x 60 tokens; "tiny" x 100 words is matched as usual
    torch.testing.assert_close(tiled, batched, atol=1e-6, rtol=0)


def test_sub_chunks_bound_the_whole_text_embeddings(tiny_bert, monkeypatch):
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window", window_stride=8)
    cands = [long_text(100 + 20 * i, seed=20 + i) for i in range(6)]
    refs = [long_text(80 + 10 * i, seed=40 + i) for i in range(6)]
    expected = torch.stack(scorer.score(cands, refs))
    budget_tokens = 400
    monkeypatch.setattr(plan_module, "CHUNK_EMBEDDING_BYTES", budget_tokens * 4 * scorer.pipeline.floats_per_token)
    held = []
    original = scorer.embedder.embed_windows

    def spy(keys, ids, *args, **kwargs):
        held.append([len(x) for x in ids])
        return original(keys, ids, *args, **kwargs)

    monkeypatch.setattr(scorer.embedder, "embed_windows", spy)
    got = torch.stack(scorer.score(cands, refs))
    assert len(held) > 2
    assert all(sum(rows) <= budget_tokens or len(rows) <= 2 for rows in held)  # over budget: one pair alone
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=0)


def test_cache_keys_name_the_window(tiny_bert):
    from bertscore.scoring.embed import EmbeddingCache

    cache = EmbeddingCache()
    text, ref = long_text(150, seed=30), long_text(140, seed=31)
    fresh = {s: torch.stack(tiny_scorer(tiny_bert["narrow"], long_texts="window", window_stride=s).score([text], [ref]))
             for s in (8, 16)}
    truncated = torch.stack(tiny_scorer(tiny_bert["narrow"]).score([text], [ref]))
    for _ in range(2):  # the second round is served from the shared cache
        for stride in (8, 16):
            shared = BERTScorer(model_type=str(tiny_bert["narrow"]), num_layers=TINY_LAYERS, device="cpu",
                                cache=cache, long_texts="window", window_stride=stride)
            torch.testing.assert_close(torch.stack(shared.score([text], [ref])), fresh[stride], atol=1e-6, rtol=0)
        plain = BERTScorer(model_type=str(tiny_bert["narrow"]), num_layers=TINY_LAYERS, device="cpu", cache=cache)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            torch.testing.assert_close(torch.stack(plain.score([text], [ref])), truncated, atol=1e-6, rtol=0)
    assert cache.hits > 0
    assert not torch.allclose(fresh[8], fresh[16])


def test_window_mode_idf_counts_whole_references(tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert["narrow"]))
    refs = [long_text(120, seed=50), long_text(100, seed=51), "the cat sat on the mat"]
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window", idf=True)
    weights = scorer.idf_weights_for(refs)
    documents = [set(tokenizer(r, verbose=False)["input_ids"]) for r in refs]  # whole texts, as a plain loop
    for token in {t for d in documents for t in d} - {tokenizer.cls_token_id, tokenizer.sep_token_id}:
        df = sum(token in d for d in documents)
        assert float(weights.table[token]) == pytest.approx(math.log((len(refs) + 1) / (df + 1)), abs=1e-6)


# ----- explain ---------------------------------------------------------------------------------
def test_explain_long_texts_equals_score_and_tiles_large_matrices(tiny_bert, monkeypatch):
    scorer = tiny_scorer(tiny_bert["narrow"], long_texts="window")
    cand, refs = long_text(120, seed=60), [long_text(110, seed=61), "short"]
    p, r, f = scorer.score([cand], [refs])
    whole = explain_pair(scorer, cand, refs)
    assert whole.scores == pytest.approx((p.item(), r.item(), f.item()), abs=1e-6)
    assert whole.best.similarity.shape == (len(whole.tokens), len(whole.best.tokens))
    assert len(whole.tokens) == scorer.pipeline.tokenize([cand]).length(cand.strip()) > 34  # whole, not cut
    monkeypatch.setattr(plan_module, "MATCH_BATCH_BYTES", 50 * 50 * 4)
    tiled = explain_pair(scorer, cand, refs)
    assert tiled.scores == pytest.approx(whole.scores, abs=1e-6)
    big = tiled.references[0]
    assert big.similarity is None and any("too large to keep" in n for n in tiled.notes)
    full = whole.references[0]
    assert big.cand_best == full.cand_best and big.ref_best == full.ref_best
    assert big.cand_best_sim == pytest.approx(full.cand_best_sim, abs=1e-6)
    assert tiled.references[1].similarity is not None  # small pairs keep their matrix
    from bertscore.plot import heatmap_figure

    if tiled.winner == 0:
        with pytest.raises(ValueError, match="too large"):
            heatmap_figure(tiled)


# ----- the doors: evaluate, CLI, Space --------------------------------------------------------------
LONG = long_text(700, seed=70)


def test_evaluate_module_warns_and_windows():
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    cands, refs = ["short", LONG], ["a short one", LONG + " and more"]
    with pytest.warns(UserWarning, match=r"2 texts longer than the model.s limit .* were truncated") as caught:
        truncated = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME)
    assert any("predictions[1]" in str(w.message) and "510" in str(w.message) for w in caught)  # compute()'s name
    windowed = metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME,
                              long_texts="window", window_stride=200)
    (p, r, f), code = score(cands, refs, model_type=EMBEDDED_MODEL_NAME, long_texts="window", window_stride=200,
                            return_hash=True)
    assert windowed["f1"] == pytest.approx(f.tolist(), abs=1e-6) and windowed["hashcode"] == code
    assert "window=510/200" in code and windowed["f1"][0] == truncated["f1"][0]
    with pytest.raises(ValueError, match="window_stride=0"):
        metric.compute(predictions=cands, references=refs, model_type=EMBEDDED_MODEL_NAME,
                       long_texts="window", window_stride=0)


def test_cli_notes_truncation_on_stderr_and_windows(tmp_path, capsys):
    """A real process scores (the notes a process writes on stderr); the windowed run and the
    refusals (exit code 2 before any scoring) go through the command's own `main` in this process."""
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("short\n" + LONG + "\n", encoding="utf-8")
    refs.write_text(LONG + " more\nshort too\n", encoding="utf-8")
    base = [sys.executable, "-m", "bertscore", "-c", str(cands), "-r", str(refs), "--model", EMBEDDED_MODEL_NAME,
            "--format", "json"]
    truncated = subprocess.run(base, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert truncated.returncode == 0, truncated.stderr
    assert "truncated" in truncated.stderr and f"line 2 of {cands}" in truncated.stderr
    assert f"line 1 of {refs}" in truncated.stderr and "510 content tokens" in truncated.stderr
    capsys.readouterr()
    assert cli_main(base[3:] + ["--long-texts", "window", "--window-stride", "200"]) == 0
    windowed = capsys.readouterr()
    assert "truncated" not in windowed.err
    result = json.loads(windowed.out)
    (p, r, f), code = score(["short", LONG], [LONG + " more", "short too"], model_type=EMBEDDED_MODEL_NAME,
                            long_texts="window", window_stride=200, return_hash=True)
    assert result["f1"] == pytest.approx(f.tolist(), abs=1e-6) and result["hashcode"] == code
    capsys.readouterr()
    assert cli_main(base[3:] + ["--long-texts", "window", "--window-stride", "0"]) == 2
    assert "window_stride=0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as unknown:  # argparse's refusal of a choice
        cli_main(base[3:] + ["--long-texts", "all"])
    assert unknown.value.code == 2 and "'all'" in capsys.readouterr().err


def test_space_api_notes_truncation_and_takes_the_window_settings():
    pytest.importorskip("gradio")
    sys.path.insert(0, str(REPO_ROOT))
    import app

    handlers = app.Handlers(app.ScoringService(app.AppConfig.from_env({"BERTSCORE_APP_MAX_CHARS": "20000"})))
    cands, refs = json.dumps(["short", LONG]), json.dumps([["a short one"], [LONG + " more"]])
    old_client = handlers.compute(cands, refs, EMBEDDED_MODEL_NAME, "", False, False, "")  # no new arguments
    assert "error" not in old_client, old_client
    assert any("truncated" in n and "predictions[1]" in n and "references[1]" in n for n in old_client["notes"])
    windowed = handlers.compute(cands, refs, EMBEDDED_MODEL_NAME, "", False, False, "", "window", "100")
    (p, r, f), code = score(["short", LONG], [["a short one"], [LONG + " more"]], model_type=EMBEDDED_MODEL_NAME,
                            long_texts="window", window_stride=100, return_hash=True)
    assert windowed["f1"] == pytest.approx(f.tolist(), abs=1e-6) and windowed["hashcode"] == code
    assert not any("truncated" in n for n in windowed["notes"])
    assert "window_stride=0" in handlers.compute(cands, refs, EMBEDDED_MODEL_NAME, "", False, False, "", "window",
                                                 "0")["error"]
    assert "long_texts='all'" in handlers.compute(cands, refs, EMBEDDED_MODEL_NAME, "", False, False, "", "all")["error"]
