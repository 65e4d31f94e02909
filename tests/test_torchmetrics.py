"""bertscore.torchmetrics through real torchmetrics and Lightning: the numbers of the official package at
batch_size=1 (and of score()) over update loops, multi-reference, 700-token texts, idf, forward and reset;
torchmetrics' signature, shapes, plot and dtype moves; the scalar forms and dataset indexes; one ddp_spawn
Lightning run on 2 CPU ranks (the default sampler's repeat counted once) that also runs the DDP cases."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import os
import subprocess
import sys
import warnings
from pathlib import Path
from unittest import mock

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("torchmetrics")
bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

from conftest import free_port  # noqa: E402

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer  # noqa: E402
from bertscore.inputs import InputError  # noqa: E402
from bertscore.torchmetrics.states import decode_texts, encode_texts, kept_pairs  # noqa: E402
from bertscore.torchmetrics import BERTScore, BERTScoreF1, BERTScorePrecision, BERTScoreRecall  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LAYER = 4
TOLERANCE = 1e-5
OUTPUTS = ("precision", "recall", "f1")


def metric(**settings) -> BERTScore:
    """A metric on the embedded MiniLM (every one shares the module's pool: one encoder load)."""
    return BERTScore(EMBEDDED_MODEL_NAME, **{"num_layers": LAYER, "device": "cpu", **settings})


def feed(m: BERTScore, cands: list, refs: list, size: int) -> None:
    for start in range(0, len(cands), size):
        m.update(cands[start:start + size], refs[start:start + size])


FEED_LINE = feed.__code__.co_firstlineno + 2  # feed's update() line


def assert_same(result: dict, expected, tolerance: float = TOLERANCE) -> None:
    for name, theirs in zip(OUTPUTS, expected):
        ours = result[name]
        assert ours.shape == theirs.shape, name
        assert torch.isfinite(ours).all(), name
        assert (ours - theirs.to(ours.dtype)).abs().max().item() <= tolerance, name


def long_text(words: list[str], tokens: int, scorer: BERTScorer) -> str:
    """WMT17 sentences joined until the text has about `tokens` tokens."""
    text = ""
    for sentence in words * 20:
        text = f"{text} {sentence}".strip()
        if len(scorer.model.tokenize([text], whole=True)[0]) >= tokens:
            return text
    raise AssertionError("not enough text")


@pytest.fixture(scope="module")
def data(wmt17_de_en, minilm_scorer) -> dict:
    """40 WMT17 pairs (one empty candidate), 12 of them with 2-3 references, 2 texts of ~700 tokens."""
    cands, refs = list(wmt17_de_en[0][:40]), list(wmt17_de_en[1][:40])
    cands[5] = ""
    groups = [[refs[i], cands[i + 20], refs[i + 2]][: 2 + i % 2] for i in range(12)]
    long_a = long_text(wmt17_de_en[1][40:], 700, minilm_scorer)
    long_b = long_text(wmt17_de_en[0][60:], 702, minilm_scorer)
    return {"cands": cands, "refs": refs, "groups": groups, "long": ([long_a, cands[0], long_b], [refs[0], long_b, long_a])}


def with_empty_rows(score, cands: list[str], refs: list) -> tuple[torch.Tensor, ...]:
    """The official scores, 0 where a candidate is empty (as the official package gives on transformers 4;
    on 5 it crashes on an empty text: tests/tiny_models.py's notes)."""
    rows = [i for i, c in enumerate(cands) if c.strip()]
    scores = score([cands[i] for i in rows], [refs[i] for i in rows])
    full = [torch.zeros(len(cands)) for _ in scores]
    for column, values in zip(full, scores):
        column[rows] = values
    return tuple(full)


@pytest.fixture(scope="module")
def official(data, minilm_dir) -> dict:
    """The official package at batch_size=1: one load without idf, one with idf over the references."""
    scorer = bert_score.BERTScorer(model_type=str(minilm_dir), num_layers=LAYER, batch_size=1, device="cpu")
    with_idf = bert_score.BERTScorer(model_type=str(minilm_dir), num_layers=LAYER, batch_size=1, device="cpu",
                                     idf=True, idf_sents=data["refs"])  # idf over every reference, as the metric's
    return {
        "pairs": with_empty_rows(scorer.score, data["cands"], data["refs"]),
        "groups": with_empty_rows(scorer.score, data["cands"][:12], data["groups"]),
        "long": scorer.score(*data["long"]),
        "idf": with_empty_rows(with_idf.score, data["cands"], data["refs"]),
    }


# ----- the metric alone ------------------------------------------------------------------------
def test_an_update_loop_gives_the_official_numbers_and_score_s(data, official, minilm_scorer) -> None:
    m = metric(return_hash=True)
    with pytest.warns(UserWarning, match=r"no content tokens .* in preds\[5\]") as notes:
        feed(m, data["cands"], data["refs"], 7)  # the empty candidate: row 5 of the first batch
    result = m.compute()
    assert_same(result, official["pairs"])
    assert_same(result, minilm_scorer.score(data["cands"], data["refs"]), 1e-6)
    assert result["f1"][5] == 0 and result["hash"] == minilm_scorer.hash
    assert all(note.filename == __file__ for note in notes)  # at the line that called update, not in torchmetrics


def test_notes_come_at_every_call_at_the_line_that_called_update_or_forward() -> None:
    m = metric()
    with pytest.warns(UserWarning) as notes:
        m(["", "a cat"], ["x", "a cat sat"])  # forward: through nn.Module's __call__ and torchmetrics
        m.update([""], ["x"])
        m.update([""], ["x"])  # the same line again: noted again
    assert [note.filename for note in notes] == [__file__] * 3
    assert all("preds[0]" in str(note.message) for note in notes)
    synced = metric(dist_sync_on_step=True)  # one process: nothing to sync, and still one update() a step
    with pytest.warns(UserWarning) as notes:
        assert synced(["", "a cat"], ["x", "a cat sat"])["f1"].shape == (2,)
    assert len(notes) == 1 and synced.compute()["f1"].shape == (2,)  # once per cause per call


def test_several_references_per_candidate_take_the_max(data, official) -> None:
    m = metric()
    feed(m, data["cands"][:12], data["groups"], 5)
    assert_same(m.compute(), official["groups"])
    single = metric()
    for cand, group in zip(data["cands"][:12], data["groups"]):
        single.update(cand, group)  # one candidate (a str) and its list of references
    assert_same(single.compute(), official["groups"])


def test_700_token_texts_are_truncated_as_the_official_package_or_read_whole(data, official) -> None:
    cands, refs = data["long"]
    cut = metric()
    with pytest.warns(UserWarning, match=r"truncated .* preds\[0\]"):
        cut.update(cands, refs)
    assert_same(cut.compute(), official["long"])
    windowed = metric(long_texts="window")
    windowed.update(cands, refs)
    expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", long_texts="window",
                          loaded_model=windowed.scorer.model).score(cands, refs)
    result = windowed.compute()
    assert_same(result, expected, 1e-6)
    assert (result["f1"] - official["long"][2]).abs().max() > 1e-3  # whole texts: other numbers than cut ones


def test_idf_comes_from_every_reference_of_every_update(data, official) -> None:
    m = metric(idf=True)
    with pytest.warns(UserWarning, match=r"in preds of pair 5:") as notes:  # at compute(): the 6th pair given
        feed(m, data["cands"], data["refs"], 9)
        result = m.compute()
    assert [(n.filename, n.lineno) for n in notes] == [(__file__, FEED_LINE)]  # the line that gave it to update()
    assert_same(result, official["idf"])
    fixed = metric(idf=data["refs"])  # fixed idf texts: scored at each update, same numbers
    feed(fixed, data["cands"], data["refs"], 9)
    assert_same(fixed.compute(), official["idf"])


def test_idf_notes_point_at_the_update_line_and_name_each_example_once_per_cause(data) -> None:
    """With idf=True the texts are scored at compute(), which Lightning calls from its own code (here a
    frame of another file): the notes point at the line that called update(), name each text by its
    example's dataset index (the pairs come back in index order), and come once per cause."""
    long_a, short, long_b = data["long"][0]
    batches = [([long_a, short], [short, long_b], [7, 3]), ([long_b, ""], [long_a, "x"], [12, 5])]
    m = metric(idf=True)
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        for preds, target, indexes in batches:
            m.update(preds, target, indexes=indexes); line = sys._getframe().f_lineno  # noqa: E702
        assert not notes  # nothing is scored (nor noted) before compute()
        eval(compile("m.compute()", "lightning_logger_connector.py", "eval"), {"m": m})
    assert [(n.filename, n.lineno) for n in notes] == [(__file__, line)] * 2
    cut, empty = sorted(str(n.message) for n in notes)
    assert empty.startswith("no content tokens") and "in preds of example 5:" in empty
    assert "preds of example 7, preds of example 12, target of example 3, target of example 12;" in cut


def test_forward_returns_the_batch_values_and_accumulates(data, minilm_scorer) -> None:
    cands, refs = data["cands"][10:22], data["refs"][10:22]
    for settings in ({}, {"idf": True}):
        m = metric(**settings)
        reference = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu",
                               loaded_model=minilm_scorer.model, **settings)
        first, second = m(cands[:5], refs[:5]), m(cands[5:], refs[5:])
        assert_same(first, reference.score(cands[:5], refs[:5]), 1e-6)
        assert_same(m.compute(), reference.score(cands, refs), 1e-6)  # with idf: over all of them
        if settings:  # idf over the references seen so far: this batch's and the first one's
            reference = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=refs,
                                   loaded_model=minilm_scorer.model)
        assert_same(second, reference.score(cands[5:], refs[5:]), 1e-6)


def test_forward_with_idf_weighs_by_every_reference_seen_so_far_not_one_pair(data, minilm_scorer) -> None:
    """One pair a step: idf over that pair alone weighs every token 0 (F1 0); over the references seen
    so far it is a real score from the second step on, and reset() starts the count again."""
    cands, refs = data["cands"][10:14], data["refs"][10:14]
    m = metric(idf=True)
    with pytest.warns(UserWarning, match="token weights are all 0"):
        assert m(cands[0], refs[0])["f1"].tolist() == [0.0]  # one reference seen: every token in it has idf 0
    for step in range(1, 4):
        expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=refs[:step + 1],
                              loaded_model=minilm_scorer.model).score([cands[step]], [refs[step]])
        assert_same(m(cands[step], refs[step]), expected, 1e-6)
        assert m.compute()["f1"].shape == (step + 1,)
    m.reset()
    with pytest.warns(UserWarning, match="token weights are all 0"):
        m(cands[3], refs[3])


def test_reset_empties_and_a_metric_with_no_data_computes_empty_tensors(data, minilm_scorer) -> None:
    for settings in ({}, {"idf": True}, {"all_layers": True}):
        m = metric(**settings)
        m.update(data["cands"][:4], data["refs"][:4])
        m.reset()
        with pytest.warns(UserWarning, match="before the ``update``"):
            empty = m.compute()
        width = (7,) if settings.get("all_layers") else ()
        assert all(empty[k].shape == width + (0,) for k in OUTPUTS)
        m.update(data["cands"][20:24], data["refs"][20:24])
        m.update([], [])  # an empty batch adds nothing
        assert m.compute()["f1"].shape[-1] == 4
    for means in (BERTScoreF1(EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu"), metric(reduction="mean", idf=True)):
        with pytest.warns(UserWarning, match="before the ``update``"):  # no pairs: nan, as torchmetrics' MeanMetric
            value = means.compute()
        assert all(math.isnan(v.item()) for v in (value.values() if isinstance(value, dict) else [value]))
        means.update([], [])  # updated, with no pair
        again = means.compute()
        assert all(math.isnan(v.item()) for v in (again.values() if isinstance(again, dict) else [again]))
    with pytest.warns(UserWarning, match="before the ``update``"):
        layers = metric(reduction="mean", all_layers=True).compute()["bertscore_f1"]
    assert layers.shape == (7,) and bool(layers.isnan().all())


def test_all_layers_give_k_by_n_tensors_as_score(data, minilm_scorer) -> None:
    m = metric(all_layers=True)
    feed(m, data["cands"][:6], data["refs"][:6], 4)
    expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", all_layers=True,
                          loaded_model=m.scorer.model).score(data["cands"][:6], data["refs"][:6])
    assert_same(m.compute(), expected, 1e-6)


def test_rescaling_with_a_baseline_file_as_score(tmp_path, data, minilm_scorer) -> None:
    path = tmp_path / "baseline.tsv"
    path.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.3,0.35,0.32\n" for k in range(7)), encoding="utf-8")
    m = metric(rescale_with_baseline=True, baseline_path=str(path))
    feed(m, data["cands"][:8], data["refs"][:8], 3)
    expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", rescale_with_baseline=True,
                          baseline_path=str(path), loaded_model=minilm_scorer.model).score(data["cands"][:8], data["refs"][:8])
    assert_same(m.compute(), expected, 1e-6)


@pytest.mark.parametrize("settings", [
    dict(batch_size=0), dict(long_texts="windows"), dict(window_stride=100), dict(dtype="float8"),
    dict(idf="the"), dict(num_layers=99), dict(device="tpu"),
])
def test_options_are_checked_as_bertscorer_checks_them(settings) -> None:
    with pytest.raises(Exception) as theirs:
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, **{"num_layers": LAYER, "device": "cpu", **settings})
    with pytest.raises(type(theirs.value)) as ours:
        metric(**settings)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("settings, message", [
    (dict(max_length=2), "max_length=2 leaves no room for a text: sentence-transformers/all-MiniLM-L6-v2 adds 2"),
    (dict(max_length=64, long_texts="window"), "max_length=64 cuts texts, long_texts='window' reads them whole"),
    (dict(truncation=True, long_texts="window"), "truncation=True cuts texts at max_length"),
    (dict(model=torch.nn.Linear(1, 1)), "model=...) is an option of torchmetrics' own BERTScore, not of this one: pass "
                                        "model_name_or_path="),
    (dict(user_tokenizer=object()), "the model's own tokenizer is used"),
    (dict(user_forward_fn=len), "hidden states are read as the official package reads them"),
    (dict(baseline_url="https://example.org/b.tsv"), "download the file and pass baseline_path="),
    (dict(return_hash="yes"), "return_hash must be True or False"),
    (dict(reduction="sum"), "reduction must be one of ('none', 'mean')"),
    (dict(reduction="mean", return_hash=True), "read the hash from metric.hash"),
])
def test_torchmetrics_options_this_metric_does_not_have_are_named(settings, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        metric(**settings)


def test_the_signature_is_torchmetrics_own_in_its_order_and_defaults() -> None:
    import inspect

    from torchmetrics.text import BERTScore as Theirs

    theirs = list(inspect.signature(Theirs.__init__).parameters.values())[1:-1]  # self ... **kwargs
    ours = list(inspect.signature(BERTScore.__init__).parameters.values())[1:len(theirs) + 1]
    assert [p.name for p in ours] == [p.name for p in theirs]
    assert all(p.kind == p.POSITIONAL_OR_KEYWORD for p in ours)
    differ = {p.name: (p.default, q.default) for p, q in zip(ours, theirs) if p.default != q.default}
    # None where theirs is 512 (the model's own limit: 512 for theirs), None where False (truncation is always done)
    assert differ == {"max_length": (None, 512), "truncation": (None, False)}
    positional = BERTScore(EMBEDDED_MODEL_NAME, LAYER, False, None, None, None, False, False, "cpu", 512, 8, 0, True)
    assert positional.return_hash and positional.scorer.num_layers == LAYER and positional.scorer.batch_size == 8


def test_with_no_model_lang_en_picks_roberta_large_and_offline_the_error_names_the_embedded_model() -> None:
    import bertscore

    with pytest.raises(OSError, match="roberta-large") as error:
        BERTScore()
    assert "BERTScore(bertscore.EMBEDDED_MODEL_NAME)" in str(error.value) and bertscore.EMBEDDED_MODEL_NAME in str(error.value)


def test_max_length_cuts_texts_there_as_the_official_package_would_at_that_limit(data, minilm_dir) -> None:
    """max_length=12: the official package with its tokenizer's limit set to 12 (where it cuts), as the oracle."""
    import oracle

    cands, refs = data["cands"][6:12], data["refs"][6:12]  # no empty text: the official package crashes on one here

    expected = oracle.call(_official_cut_at, cands, refs, 12, model_type=str(minilm_dir), num_layers=LAYER,
                           batch_size=1, device="cpu")
    m = metric(max_length=12, truncation=True)
    with pytest.warns(UserWarning, match=r"max_length=12 with its special tokens\) were truncated"):
        m.update(cands, refs)
    assert_same(m.compute(), expected)
    assert m.max_length == 12 and "maxlen=12" in m.hash
    with pytest.warns(UserWarning, match="max_length=2048 is past .* limit of 512 tokens"):
        assert metric(max_length=2048).max_length == 512
    assert metric(max_length=512).hash == metric().hash


def _official_cut_at(cands: list[str], refs: list[str], max_length: int, **scorer_kwargs) -> tuple[torch.Tensor, ...]:
    """The official BERTScorer with its tokenizer's limit set to `max_length` (sent_encode truncates there)."""
    scorer = bert_score.BERTScorer(**scorer_kwargs)
    scorer._tokenizer.model_max_length = max_length
    return tuple(scorer.score(cands, refs))


def test_one_pair_gives_n_shaped_outputs_and_the_scalar_forms_give_scalars(data, minilm_scorer) -> None:
    cands, refs = data["cands"][:3], data["refs"][:3]
    expected = minilm_scorer.score(cands, refs)
    m = metric()
    assert all(v.shape == (1,) for v in m(cands[0], refs[0]).values())  # torchmetrics squeezes one element to 0-d
    assert all(m.compute()[k].shape == (1,) for k in OUTPUTS)
    layers = metric(all_layers=True)
    assert all(v.shape == (7, 1) for v in layers(cands[0], refs[0]).values())
    means = metric(reduction="mean")
    step = means(cands[:2], refs[:2])
    assert list(step) == ["bertscore_precision", "bertscore_recall", "bertscore_f1"]
    means.update(cands[2:], refs[2:])
    for name, values in zip(OUTPUTS, expected):
        assert step[f"bertscore_{name}"].item() == pytest.approx(values[:2].mean().item(), abs=1e-6)
        assert means.compute()[f"bertscore_{name}"].item() == pytest.approx(values.mean().item(), abs=1e-6)
    for cls, values in zip((BERTScorePrecision, BERTScoreRecall, BERTScoreF1), expected):
        one = cls(EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu")
        assert one(cands[0], refs[0]).shape == () and one(cands[0], refs[0]).item() == pytest.approx(values[0].item(), abs=1e-6)
        one.update(cands[1:], refs[1:], indexes=None)
        assert one.compute().item() == pytest.approx((values[0] * 2 + values[1:].sum()).item() / 4, abs=1e-6)
    with pytest.raises(ValueError, match="per-sample scores use BERTScore"):
        BERTScoreF1(EMBEDDED_MODEL_NAME, reduction="none")


def test_dataset_indexes_count_each_example_once_in_index_order(data, minilm_scorer) -> None:
    cands, refs = data["cands"][:5], data["refs"][:5]
    expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=True,
                          loaded_model=minilm_scorer.model).score(cands, refs)
    for settings in ({}, {"idf": True}):
        m = metric(**settings)
        m.update([cands[i] for i in (3, 1, 4)], [refs[i] for i in (3, 1, 4)], indexes=torch.tensor([3, 1, 4]))
        m.update([cands[i] for i in (0, 2, 3)], [refs[i] for i in (0, 2, 3)], indexes=[0, 2, 3])  # 3 again: a padding repeat
        result = m.compute()
        assert result["indexes"].tolist() == [0, 1, 2, 3, 4]
        assert_same(result, expected if settings else minilm_scorer.score(cands, refs), 1e-6)
        f1 = BERTScoreF1(EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", **settings)
        f1.update(cands + cands[:1], refs + refs[:1], indexes=list(range(5)) + [0])
        assert f1.compute().item() == pytest.approx(result["f1"].mean().item(), abs=1e-6)
    for first, then in (([0, 1], None), (None, [2, 3])):  # a mix is refused where it happens, the state untouched
        for settings in ({}, {"idf": True}):
            mixed = metric(**settings)
            mixed.update(cands[:2], refs[:2], indexes=first)
            before = mixed.compute()
            for call in (mixed.update, mixed):  # update() and forward()
                with pytest.raises(ValueError, match="earlier update.. calls since reset.. came with"):
                    call(cands[2:4], refs[2:4], indexes=then)
                after = mixed.compute()
                assert after.keys() == before.keys() and all(torch.equal(after[k], before[k]) for k in after)
            assert mixed._update_count == 1
            mixed.reset()
            mixed.update(cands[2:4], refs[2:4], indexes=then)  # after reset() either way is fine


@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), min_size=1, max_size=30))
def test_each_index_counts_once_and_a_repeat_across_ranks_is_counted(rows) -> None:
    """kept_pairs against a plain loop: the first position of each index, in index order; without
    indexes, the pairs (digests) seen on more than one rank."""
    indexes = torch.tensor([i for i, _ in rows], dtype=torch.long)
    ranks = torch.tensor([r for _, r in rows], dtype=torch.long)
    first: dict[int, int] = {}
    for position, (index, _) in enumerate(rows):
        first.setdefault(index, position)
    assert kept_pairs(indexes, indexes, ranks).tolist() == [first[i] for i in sorted(first)]
    where: dict[int, set] = {}
    for index, rank in rows:
        where.setdefault(index, set()).add(rank)
    repeats = sum(len(r) > 1 for r in where.values())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert kept_pairs(torch.full_like(indexes, -1), indexes, ranks) is None  # the digests stand for the pairs
    assert [str(w.message).split(" ")[0] for w in caught] == ([str(repeats)] if repeats else [])


@pytest.mark.parametrize("indexes, message", [
    ([0.5, 1.0], "indexes must be whole numbers"), ([0], "got 2 preds but 1 indexes"), ([0, -1], "must be >= 0"),
    (["x", "y"], r"whole numbers, one per candidate .*, got \['x', 'y'\]"), ([None, 1], "got \\[None, 1\\]"),
    ([[0], [1, 2]], "indexes must be whole numbers"),
])
def test_bad_indexes_are_named(indexes, message) -> None:
    with pytest.raises(InputError, match=message):
        metric().update(["a", "b"], ["a", "b"], indexes=indexes)


@pytest.fixture
def pyplot_figures_closed():
    """torchmetrics' plots are pyplot figures (its convention): closed after the test, so that no other
    test in this process (tests/test_plot.py counts pyplot's figures) sees them."""
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_plot_draws_the_means_as_torchmetrics_plots(data, official, pyplot_figures_closed) -> None:
    """The plotted points are the means of the official package's scores (of all six texts, of each step,
    of the scalar F1's two): fails if plot() draws per-sample values, another output's numbers, the
    steps out of order, or the last step's means in place of compute()'s."""
    expected = {name: column[:6] for name, column in zip(OUTPUTS, official["pairs"])}

    def mean(name: str, start: int, stop: int) -> float:
        values = expected[name][start:stop].tolist()
        return sum(values) / len(values)

    m = metric()
    steps = [m(data["cands"][i:i + 2], data["refs"][i:i + 2]) for i in range(0, 6, 2)]
    fig, ax = m.plot()  # compute()'s means: one point per output
    assert fig is ax.figure and len(ax.lines) == 3
    for line in ax.lines:
        assert list(line.get_ydata()) == pytest.approx([mean(line.get_label(), 0, 6)], abs=TOLERANCE)
    assert sorted(line.get_label() for line in ax.lines) == sorted(OUTPUTS)
    _, ax = m.plot(steps)  # a line per output over the steps
    assert len(ax.lines) == 3 and sorted(line.get_label() for line in ax.lines) == sorted(OUTPUTS)
    for line in ax.lines:
        steps_means = [mean(line.get_label(), i, i + 2) for i in range(0, 6, 2)]
        assert list(line.get_ydata()) == pytest.approx(steps_means, abs=TOLERANCE)
    f1 = BERTScoreF1(EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu")
    f1.update(data["cands"][:2], data["refs"][:2])
    _, ax = f1.plot()
    assert len(ax.lines) == 1
    assert [float(y) for y in ax.lines[0].get_ydata()] == pytest.approx([mean("f1", 0, 2)], abs=TOLERANCE)


@pytest.mark.parametrize("settings", [{}, {"idf": True}])
def test_dtype_moves_are_refused_with_the_setting_to_use_and_a_parent_s_leave_the_scores(data, minilm_dir,
                                                                                         settings) -> None:
    """A parent's .half() / .to(dtype) must leave the metric's states and numbers as they were: fails if
    the move casts the states (the idf's counts or the kept scores to half precision, the scores then off
    the official package's by more than 1e-5), or if the idf of the second compute is not taken over all
    four references (its first two rows then keep their idf over two)."""
    m = metric(**settings)
    for move in (m.half, m.bfloat16, m.double, lambda: m.set_dtype(torch.float16), lambda: m.type(torch.float64),
                 lambda: m.to(torch.float64), lambda: m.to("cpu", torch.float16), lambda: m.to(dtype=torch.bfloat16),
                 lambda: m.to(torch.zeros(1, dtype=torch.float64))):
        with pytest.raises(ValueError, match=r"pass dtype= at construction: BERTScore\(\.\.\., dtype="):
            move()
    assert m.float() is m and m.set_dtype(torch.float32) is m and m.to(torch.float32) is m and m.to("cpu") is m
    parent = torch.nn.Module()
    parent.metric = metric(**settings)
    parent.metric.update(data["cands"][:2], data["refs"][:2])
    before = parent.metric.compute()["f1"]
    for move in (parent.half, lambda: parent.to(torch.float64), lambda: parent.to("cpu", torch.bfloat16)):
        move()  # a LightningModule's .half() or .to(dtype): the scores stay float32, as torchmetrics keeps states
        assert all(t.dtype in (torch.float32, torch.uint8, torch.long) for v in parent.metric.metric_state.values()
                   for t in (v if isinstance(v, list) else [v]))
    parent.metric.update(data["cands"][2:4], data["refs"][2:4])
    after = parent.metric.compute()["f1"]
    assert after.dtype == torch.float32 and parent.metric.dtype == torch.float32
    idf = bool(settings)
    first, both = (official_scores(minilm_dir, data["cands"][:n], data["refs"][:n], idf)[2] for n in (2, 4))
    assert (before - first).abs().max().item() <= TOLERANCE
    assert (after - both).abs().max().item() <= TOLERANCE
    if idf:  # the first two are scored again with idf over the 4 references: other numbers
        assert (after[:2] - before).abs().max().item() > 10 * TOLERANCE
    else:
        assert torch.equal(after[:2], before)


@pytest.mark.parametrize("preds, target, message", [
    (["a", None], ["a", "b"], r"preds\[1\] is None"),
    (["a", "b"], ["a"], "got 2 preds but 1 target"),
    (["a"], [["x", 3]], r"target\[0\]\[1\] is an int"),
    ("a", [], r"target is an empty list"),
    (["a"], "b", "target must be a list"),
])
def test_bad_inputs_are_named_as_update_calls_them(preds, target, message) -> None:
    with pytest.raises(ValueError, match=message):
        metric().update(preds, target)


def test_clones_and_pickles_hold_no_encoder(data) -> None:
    import pickle

    m = metric()
    m.update(data["cands"][:3], data["refs"][:3])
    copy = pickle.loads(pickle.dumps(m))
    assert copy._scorer is None and len(pickle.dumps(m)) < 100_000
    assert torch.equal(copy.compute()["f1"], m.clone().compute()["f1"])


def test_texts_travel_as_utf8_bytes_unchanged() -> None:
    texts = ["", "Ünïcödé — “quotes” 🙂", "  spaces  ", "plain"]
    assert decode_texts(*encode_texts(texts)) == texts


def test_without_torchmetrics_the_error_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "torchmetrics", None)
    for name in [n for n in sys.modules if n == "bertscore.torchmetrics" or n.startswith("bertscore.torchmetrics.")]:
        monkeypatch.delitem(sys.modules, name)  # imported afresh below; monkeypatch puts them back
    with pytest.raises(ModuleNotFoundError, match=r'pip install "\.\[torchmetrics\]"'):
        importlib.import_module("bertscore.torchmetrics")
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(dep.startswith("torchmetrics>=") for dep in extras["torchmetrics"])  # the extra the error names
    assert {"torchmetrics", "lightning"} <= {dep.split(">")[0] for dep in extras["test"]}


GUEST = r"""
import json, sys, torch
from bertscore.torchmetrics import BERTScore
def state():
    return [str(torch.get_default_dtype()), torch.get_float32_matmul_precision(), torch.is_grad_enabled(),
            torch.get_num_threads(), torch.backends.fp32_precision, torch.get_rng_state().sum().item()]
m = BERTScore("sentence-transformers/all-MiniLM-L6-v2", num_layers=4, device="cpu", dtype="bfloat16")
before = state()
m.update(["A cat.", ""], ["A cat sat.", "x"]); m(["Rain."], ["It rains."]); out = m.compute()
json.dump({"before": before, "after": state(), "f1": out["f1"].tolist()}, sys.stdout)
"""


def test_the_process_is_left_as_found() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", GUEST], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(done.stdout)
    assert run["after"] == run["before"]
    assert run["f1"][1] == 0 and all(math.isfinite(v) for v in run["f1"])


# ----- two processes: Lightning's ddp_spawn, then the metric's own DDP cases ---------------------
def official_scores(minilm_dir, cands: list[str], refs: list, idf: bool) -> tuple[torch.Tensor, ...]:
    """The official package at batch_size=1 (idf over every reference given), from the oracle cache."""
    import oracle

    groups = [[group] if isinstance(group, str) else group for group in refs]
    flat = [r for group in groups for r in group]
    return oracle.call(oracle.scorer_score, cands, groups, model_type=str(minilm_dir), num_layers=LAYER, batch_size=1,
                       device="cpu", idf=idf, idf_sents=flat if idf else None)


@pytest.mark.slow
def test_a_lightning_module_under_ddp_spawn_logs_the_official_means(tmp_path, data, minilm_dir, minilm_scorer) -> None:
    """7 examples on 2 ranks, Lightning's default sampler (it repeats example 0 on rank 1): the logged means
    are the official package's over the 7, idf included, through self.log(name, metric) and log_dict of a
    MetricCollection with chrF; the per-sample form comes in index order; without indexes, a warning."""
    pytest.importorskip("lightning")
    cands, refs = data["cands"][30:37], data["refs"][30:37]
    refs[3] = [refs[3], data["cands"][3]]  # one candidate with two references
    pairs = list(zip(data["cands"][:12] + data["cands"][20:30], data["groups"] + data["refs"][20:30]))
    spec = {"examples": [[c, r, i] for i, (c, r) in enumerate(zip(cands, refs))], "pairs": pairs}
    import torchmetrics_ranks  # from tests/ (on sys.path, as conftest is): the spawned workers import it too

    with mock.patch.dict(os.environ, {"MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": "1"}):  # restored after
        for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
            os.environ.pop(name, None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Lightning's advice on workers and on validating with a sampler
            logged = torchmetrics_ranks.validate(spec, tmp_path)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text(encoding="utf-8")) for r in range(2)]
    assert sorted(ranks[0]["indexes"] + ranks[1]["indexes"]) == [0, 0, 1, 2, 3, 4, 5, 6]  # the sampler's repeat
    plain, idf = official_scores(minilm_dir, cands, refs, False), official_scores(minilm_dir, cands, refs, True)
    expected = {"val_bertscore_f1": plain[2].mean(), "val_bertscore_idf_f1": idf[2].mean(),
                "val_bertscore_precision": plain[0].mean(), "val_bertscore_recall": plain[1].mean()}
    for name, value in expected.items():
        assert abs(logged[name] - value.item()) <= TOLERANCE, name
    assert 0 < logged["val_chrf"] < 1
    rank0 = ranks[0]["indexes"]  # log_dict(metric(preds, target)): batch means, averaged by Lightning over the steps
    assert logged["bertscore_f1"] == pytest.approx(plain[2][rank0].mean().item(), abs=TOLERANCE)
    for rank in ranks:
        assert rank["per_sample"]["indexes"] == list(range(7))
        assert_same({k: torch.tensor(rank["per_sample"][k]) for k in OUTPUTS}, idf)
        repeated = torch.cat([plain[2], plain[2][:1]]).mean().item()  # without indexes example 0 counts twice
        assert rank["unindexed_f1"] == pytest.approx(repeated, abs=TOLERANCE)
        assert len(rank["warnings"]) == 1 and "indexes=" in rank["warnings"][0] and "DistributedSampler" in rank["warnings"][0]
    one_process = {
        "no-idf": minilm_scorer.score(*map(list, zip(*pairs))),
        "idf": BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=True,
                          loaded_model=minilm_scorer.model).score(*map(list, zip(*pairs))),
    }
    for case in ("no-idf", "idf", "no-idf, rank 1 idle", "idf, rank 1 idle"):
        for rank in ranks:
            assert_same({k: torch.tensor(rank[case][k]) for k in OUTPUTS}, one_process[case.split(",")[0]], 1e-6)
        assert ranks[0][case]["hash"] == ranks[1][case]["hash"]
    for rank in ranks:  # idf=True: every rank's compute() scored the synced texts in shards, not all of them alone
        assert rank["sharded"] == [len(pairs), len(pairs), 8]  # the last: the synced steps' compute(), 8 pairs once
    # idf with dist_sync_on_step: each step's values are every rank's batch scored with idf over all references
    # the ranks' steps gave so far (the same on each rank); compute() counts each pair once.
    first, second = [0, 1, 4, 5], [2, 3, 6, 7]  # the pairs of each step: rank 0's two, then rank 1's
    idf_over = [[r for i in seen for r in ([pairs[i][1]] if isinstance(pairs[i][1], str) else pairs[i][1])]
                for seen in (first, first + second)]
    for step, (chosen, documents) in enumerate(zip((first, second), idf_over)):
        expected = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=documents,
                              loaded_model=minilm_scorer.model).score([pairs[i][0] for i in chosen],
                                                                      [pairs[i][1] for i in chosen])
        for rank in ranks:
            assert (torch.tensor(rank["synced steps"]["steps"][step]) - expected[2]).abs().max() <= 1e-6, step
    all_eight = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=LAYER, device="cpu", idf=True,
                           loaded_model=minilm_scorer.model).score(*map(list, zip(*pairs[:8])))
    for rank in ranks:
        assert (torch.tensor(rank["synced steps"]["epoch"]) - all_eight[2]).abs().max() <= 1e-6
        assert any("preds of pair 1 on rank 1" in note for note in rank["synced steps"]["notes"])  # pairs[5] is ""
