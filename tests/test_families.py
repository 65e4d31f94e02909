"""Every architecture family of the official model table, on a tiny offline model of its kind.

For each family (tests/tiny_families.py builds them, once per session): our scores with our
default batching equal the official package's at batch_size=1 (where its padding cannot leak
into a max) within 1e-5, with and without idf and with all layers; our token ids are the
official `sent_encode`'s. Then what makes some families special: SqueezeBERT's blocks in
`encoder.layers`, ConvBERT's padding leak (the padding probe), BigBird's attention mode that
transformers switches by input length, and encoders with a norm after the stack.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
import torch

from bertscore import BERTScorer
from bertscore.models.tokenizer import prepared_backend
from bertscore.models.loading import load_model

bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

from tiny_families import (  # noqa: E402
    BIGBIRD_FULL_ATTENTION_UP_TO,
    FAMILIES,
    build_families,
    official_scores,
    official_token_ids,
)

# A few WMT17 texts pass the tiny models' 128 tokens: both packages truncate them (a note says so).
pytestmark = pytest.mark.filterwarnings("ignore::bertscore.notes.BERTScoreNote")

TOLERANCE = 1e-5  # against the official package
BATCHING_TOLERANCE = 1e-6  # ours against ours, batched otherwise
LAYER = 2  # of 3


@pytest.fixture(scope="session")
def family_models(tmp_path_factory):
    return build_families(tmp_path_factory.mktemp("families"))


@pytest.fixture(scope="session")
def pairs(wmt17_de_en):
    return wmt17_de_en[0][:40], wmt17_de_en[1][:40]


@pytest.fixture(scope="session")
def loaded(family_models):
    """Each family's model loaded once per (layer, all layers): {(name, all_layers): LoadedModel}."""
    cache = {}

    def get(name, all_layers=False):
        if (name, all_layers) not in cache:
            cache[name, all_layers] = load_model(str(family_models[name]), 3 if all_layers else LAYER, all_layers)
        return cache[name, all_layers]

    return get


def max_delta(ours, theirs):
    return max((a - b.to(a.dtype)).abs().max().item() for a, b in zip(ours, theirs))


def assert_close(ours, theirs, label, tolerance=TOLERANCE):
    for name, a, b in zip("PRF", ours, theirs):
        assert a.shape == b.shape, f"{label} {name}: shape {tuple(a.shape)} vs {tuple(b.shape)}"
        assert torch.isfinite(a).all(), f"{label} {name}: not finite"
        delta = (a - b.to(a.dtype)).abs().max().item()
        assert delta <= tolerance, f"{label} {name}: max |delta| {delta:.2e} > {tolerance:.0e}"


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("variant", ["no-idf", "idf", "all-layers"])
def test_family_equals_the_official_package(name, variant, family_models, pairs, loaded):
    cands, refs = pairs
    all_layers, idf = variant == "all-layers", variant == "idf"
    if variant != "no-idf":  # half the pairs keep the matrix's time in bounds (the official runs dominate it)
        cands, refs = cands[:20], refs[:20]
    model = loaded(name, all_layers)
    ours = BERTScorer(model_type=str(family_models[name]), loaded_model=model, all_layers=all_layers, idf=idf,
                      device="cpu").score(cands, refs)
    theirs = official_scores(name, family_models[name], cands, refs, model.num_layers, idf=idf, all_layers=all_layers)
    if all_layers:
        assert ours[0].shape == (4, 20)
    assert_close(ours, theirs, f"{name} {variant}")


@pytest.mark.parametrize("name", list(FAMILIES))
def test_token_ids_are_the_official_sent_encode(name, family_models, pairs, loaded):
    texts = pairs[0] + pairs[1]
    assert loaded(name).tokenize(texts) == official_token_ids(name, family_models[name], texts)


EDGE_TEXTS = ["", "  spaced out  ", "[SEP] [MASK] <s> </s> <mask> <pad>", "naïve café – Tōkyō 東京 🙂", "tab\there"]


def test_content_ids_are_the_tokenizers_own_after_a_call_that_left_it_truncating(family_models, pairs, loaded):
    """`content_ids` calls a fast tokenizer's backend directly (model_tokenizer.prepared_backend): its ids are
    the tokenizer's own call's, text by text, even when a user's call left the backend truncating
    and padding, as transformers leaves it."""
    texts = list(pairs[0][:20]) + EDGE_TEXTS + [" ".join(pairs[1][:12])]  # the last one past 128 tokens
    direct = set()
    for name in FAMILIES:
        model = loaded(name)
        tokenizer = model.tokenizer
        expected = [tokenizer(text.strip(), add_special_tokens=False, verbose=False)["input_ids"] for text in texts]
        tokenizer(["one two three four", "five"], truncation=True, max_length=3, padding="max_length")
        if getattr(tokenizer, "_tokenizer", None) is not None:
            assert tokenizer._tokenizer.truncation is not None, name  # left on: the case this test is about
        assert model.content_ids(texts) == expected, name
        if prepared_backend(tokenizer) is not None:
            direct.add(name)
    # The direct path ran for the common kinds (on transformers 4, the byte-level BPE classes override
    # the batch encoding, and their tokenizer is called instead).
    import transformers

    common = {"bert", "electra"} | ({"roberta", "xlmr"} if int(transformers.__version__.split(".")[0]) >= 5 else set())
    assert common <= direct, direct


def test_squeezebert_truncates_its_encoder_layers(loaded):
    """SqueezeBERT keeps its blocks in `encoder.layers` (the official package cannot cut them)."""
    model = loaded("squeezebert")
    assert len(model.encoder.encoder.layers) == LAYER and model.num_layers == LAYER


def test_the_probe_finds_padding_leaks_and_only_them(loaded, minilm_dir):
    """ConvBERT's convolution ignores the attention mask; every other encoder masks its padding
    and keeps length-grouped (padded) batches. Block-sparse BigBird never shares a padded batch."""
    unsafe = {name for name in FAMILIES if not loaded(name).is_padding_safe()}
    assert unsafe == {"convbert", "bigbird-sparse"}
    fresh = load_model(str(minilm_dir), 2)
    assert fresh.padding_safe is None  # not asked yet: no forward pass at load (see the test below)
    assert fresh.is_padding_safe() and fresh.padding_safe is True


# A process that loads a model and then forks (DataLoader workers, a server's preloaded app): had the
# load run a forward pass (the padding probe), the parent's OpenMP threads would be started and the
# child would hang in its first forward pass.
LOAD_THEN_FORK = '''
import os, signal, sys
from bertscore import BERTScorer
scorer = BERTScorer(model_type=sys.argv[1], num_layers=2, device="cpu")
pid = os.fork()
if pid == 0:
    signal.alarm(240)  # a hung child ends (SIGALRM) rather than outliving the test
    f1 = scorer.score(["a short one", "the cat sat on the mat today"], ["a short one", "a cat sat on a mat"])[2]
    os._exit(0 if f1.shape == (2,) else 3)
os._exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
'''


def test_a_process_that_loads_and_then_forks_scores_in_the_child(minilm_dir):
    result = subprocess.run([sys.executable, "-c", LOAD_THEN_FORK, str(minilm_dir)], capture_output=True, text=True,
                            timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr


def _batchings(model, cands, refs):
    """Our scores of one model batched four ways (cache off): default, one text a batch, reversed
    input (other batch neighbours and order), and inside a larger call."""
    def scorer():
        return BERTScorer(model_type=model.name, loaded_model=model, cache_bytes=0, device="cpu")

    default = scorer().score(cands, refs)
    one = scorer().score(cands, refs, batch_size=1)
    backwards = [t.flip(0) for t in scorer().score(cands[::-1], refs[::-1])]
    extra = ["Ein kurzer Satz.", "A much longer sentence " * 6, "and another one, of middling length."]
    inside = [t[: len(cands)] for t in scorer().score(cands + extra, refs + extra[::-1])]
    return {"default": default, "batch_size=1": one, "reversed": backwards, "inside a larger call": inside}


def test_convbert_is_independent_of_batching(loaded, pairs):
    """With the probe's answer (one length a batch), ConvBERT's numbers do not move with the
    batching; with padded batches they would, which is what the probe is for."""
    model = loaded("convbert")
    runs = _batchings(model, *pairs)
    for label, scores in runs.items():
        assert_close(scores, runs["batch_size=1"], f"convbert {label}", BATCHING_TOLERANCE)
    padded = dataclasses.replace(model, padding_safe=True)
    leaked = BERTScorer(model_type=model.name, loaded_model=padded, cache_bytes=0, device="cpu").score(*pairs)
    assert max_delta(leaked, runs["batch_size=1"]) > 1e-5


def test_bigbird_block_sparse_is_independent_of_batch_and_order(loaded, pairs):
    """Each text gets the attention its config names for its length, whatever ran before: a
    model that transformers has switched to full attention is switched back."""
    model = loaded("bigbird-sparse")
    cands, refs = pairs
    lengths = [len(ids) for ids in model.tokenize(cands + refs)]
    assert min(lengths) <= BIGBIRD_FULL_ATTENTION_UP_TO < max(lengths)  # both modes are in use
    first = BERTScorer(model_type=model.name, loaded_model=model, cache_bytes=0, device="cpu").score(cands, refs)
    with torch.inference_mode():  # what an earlier short text does to the model: full attention for good
        model.encoder(input_ids=torch.tensor([model.tokenize(["short"])[0]]))
    assert model.encoder.attention_type == "original_full"
    for label, scores in _batchings(model, cands, refs).items():
        assert_close(scores, first, f"bigbird-sparse {label}", BATCHING_TOLERANCE)


def test_official_bigbird_block_sparse_depends_on_call_order(family_models, pairs):
    """Why the official package is run with the attention reset (docs/exactness.md): unpatched,
    its second call scores texts over 28 tokens with full attention, unlike its first."""
    official = bert_score.BERTScorer(model_type=str(family_models["bigbird-sparse"]), num_layers=LAYER, device="cpu")
    first = official.score(*pairs, batch_size=1)
    second = official.score(*pairs, batch_size=1)
    assert max_delta(first, second) > 1e-4


@pytest.mark.parametrize("name", [name for name, family in FAMILIES.items() if family.final_norm] + ["bert"])
def test_all_layers_row_k_is_num_layers_k_only_without_a_final_norm(name, family_models, pairs, loaded):
    """num_layers=k runs the first k blocks and then the final norm; all_layers row k is the
    stack's k-th hidden state, before any final norm (the last row has it): they differ for
    encoders with a final norm, as in the official package (docs/parameters.md, Layer numbering)."""
    truncated = BERTScorer(model_type=str(family_models[name]), loaded_model=loaded(name), device="cpu").score(*pairs)
    rows = BERTScorer(model_type=str(family_models[name]), loaded_model=loaded(name, True), all_layers=True,
                      device="cpu").score(*pairs)
    delta = max_delta([row[LAYER] for row in rows], truncated)
    if FAMILIES[name].final_norm:
        assert delta > 1e-3, f"{name}: all_layers row {LAYER} equals num_layers={LAYER}"
    else:
        assert delta <= BATCHING_TOLERANCE


def test_the_docs_quote_the_benchmarked_family_table():
    """docs/exactness.md's family table is benchmarks/families.py's, from its committed results, and
    names every family built here (a new family needs a benchmark run: --update-results)."""
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("benchmarks_families", root / "benchmarks" / "families.py")
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    rows = json.loads((root / "benchmarks" / "results" / "families.json").read_text(encoding="utf-8"))["families"]
    assert [row["family"] for row in rows] == list(FAMILIES)
    assert all(max(r["no_idf"], r["idf"], r["all_layers"]) <= TOLERANCE and r["token_ids_equal"] for r in rows)
    assert benchmark.exactness_table(rows) in (root / "docs" / "exactness.md").read_text(encoding="utf-8")
