"""One input contract for every door, the official notion of an empty text, the official extras.

The same input gets the same numbers or the same error from the Python API, the evaluate
module, the CLI and the Space's /compute handler (issue 12).
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, score
from bertscore.inputs import normalize_inputs
from conftest import REPO_ROOT, SENTENCES

evaluate = pytest.importorskip("evaluate")
MODEL = {"model_type": EMBEDDED_MODEL_NAME, "num_layers": 4}


@pytest.fixture(scope="module")
def metric():
    return evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))


@pytest.fixture(scope="module")
def handlers():
    pytest.importorskip("gradio")
    import app

    config = app.AppConfig.from_env({"BERTSCORE_APP_MODELS": EMBEDDED_MODEL_NAME})
    return app.Handlers(app.ScoringService(config))


# ----- one contract: what each door accepts or refuses ----------------------------------------
BAD_PREDICTIONS = [
    (["b", float("nan")], TypeError, r"predictions\[1\] is a float"),
    (["a", 3], TypeError, r"predictions\[1\] is an int"),
    ([True], TypeError, r"predictions\[0\] is a bool"),
    ([{"text": "a"}], TypeError, r"predictions\[0\] is a dict"),
    (["abc\ud800def"], ValueError, r"predictions\[0\] contains a lone surrogate"),
]


@pytest.mark.parametrize("predictions, error, message", BAD_PREDICTIONS)
def test_bad_texts_are_the_same_error_at_every_door(minilm_scorer, metric, handlers, predictions, error, message):
    references = ["a reference"] * len(predictions)
    with pytest.raises(error, match=message.replace("predictions", "candidates")):
        minilm_scorer.score(predictions, references)
    with pytest.raises(error, match=message):
        metric.compute(predictions=predictions, references=references, **MODEL)
    with pytest.raises(error, match=message):
        metric.add_batch(predictions=predictions, references=references)
    if not any(isinstance(p, float) and p != p for p in predictions):  # JSON has no NaN
        out = handlers.compute(json.dumps(predictions), json.dumps(references))
        assert "error" in out and __import__("re").search(message, out["error"]), out


# A candidate's references, wrong in each way the one normaliser (`inputs.normalize_group`) names.
BAD_REFERENCE_GROUPS = [
    ([[]], "REFS[0] is an empty list: give each candidate at least one reference"),
    ([None], "REFS[0] is None; pass a string or a list of strings"),
    ([3], "REFS[0] is an int, not a string or a list of strings: 3"),
    ([["a", 3]], "REFS[0][1] is an int, not a string: 3"),
    ([("a", None)], "REFS[0][1] is None; pass a string (an empty string scores 0)"),
    ([["a", "b\ud800"]], "REFS[0][1] contains a lone surrogate (U+D800 at character 1): it is not valid Unicode text; "
                          "decode your input with errors='replace' or fix it"),
]


def door_errors(minilm_scorer, metric, refs) -> dict[str, tuple[type, str]]:
    """The error each door raises for `refs` (one candidate, "a"), its own name for the references
    written as REFS: the Python API, the evaluate module, the torchmetrics metric, the RL reward, a
    datasets map function and its idf texts (where Arrow can hold the column), the drop-in's `bert_score.score`.
    (The CLI and the Space read files and forms: their errors name rows and lines, tests/test_tables.py.)"""
    import datasets

    from bertscore.dataset_map import column_texts, score_columns
    from bertscore.dropin import score as dropin_score
    from bertscore.pool import ScorerPool
    from bertscore.reward import BERTScoreReward
    from bertscore.torchmetrics import BERTScore

    doors = {
        "score()": (lambda: minilm_scorer.score(["a"], refs), "references"),
        "evaluate": (lambda: metric.compute(predictions=["a"], references=refs, **MODEL), "references"),
        "torchmetrics": (lambda: BERTScore(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu").update(["a"], refs), "target"),
        "datasets map": (lambda: score_columns(minilm_scorer)({"prediction": ["a"], "reference": refs}), "references"),
        "bert_score.score": (lambda: dropin_score(["a"], refs, **MODEL), "references"),
        "reward": (lambda: BERTScoreReward(pool=ScorerPool(), reference_column="answer", **MODEL)(["a"], answer=refs),
                   "answer"),
    }
    try:  # a column Arrow can hold (not a list mixing texts and numbers)
        column = datasets.Dataset.from_dict({"reference": refs})
    except (TypeError, ValueError, ArithmeticError, ImportError, RuntimeError, Exception):  # noqa: BLE001 - pyarrow's own
        column = None
    if column is not None:
        doors["column_texts"] = (lambda: column_texts(column, "reference"), "column 'reference'")
    found = {}
    for door, (call, name) in doors.items():
        try:
            call()
        except Exception as error:  # noqa: BLE001 - the error is what is compared
            found[door] = (type(error), str(error).replace(name, "REFS"))
        else:
            found[door] = (type(None), "no error")
    return found


@pytest.mark.parametrize("refs, message", BAD_REFERENCE_GROUPS)
def test_a_bad_reference_group_is_the_same_error_at_every_door(minilm_scorer, metric, refs, message):
    """One normaliser, one error type: fails if a door checks references its own way (a KeyError or a
    plain TypeError, another message) or lets one through."""
    from bertscore.inputs import InputError

    found = door_errors(minilm_scorer, metric, refs)
    assert {door: text for door, (_, text) in found.items()} == {door: message for door in found}
    kinds = {kind for kind, _ in found.values()}
    assert len(kinds) == 1 and issubclass(kinds.pop(), InputError), found


def test_a_reference_nested_one_level_too_deep_is_an_error(metric, minilm_scorer):
    with pytest.raises(TypeError, match=r"references\[0\]\[0\] is a list"):
        metric.compute(predictions=["a"], references=[[["a"]]], **MODEL)
    with pytest.raises(TypeError, match=r"references\[0\]\[0\] is a list"):
        minilm_scorer.score(["a"], [[["a"]]])


def test_bare_strings_are_refused_where_a_list_is_meant(metric):
    with pytest.raises(TypeError, match="predictions must be a list of strings, got one str"):
        metric.compute(predictions="hello world", references="hello there", **MODEL)
    with pytest.raises(TypeError, match=r"references must be a list .* got str"):
        metric.compute(predictions=["hello world"], references="hello there", **MODEL)
    with pytest.raises(TypeError, match=r"wrap a single text in a list"):
        score("hello world", ["hello there"], **MODEL)


def test_add_takes_one_example_as_bare_strings(metric):
    metric.add(prediction="a cat sat", reference="a cat sat")
    metric.add(prediction="a dog", reference=["a dog barked", "the dog"])
    out = metric.compute(**MODEL)
    expected = score(["a cat sat", "a dog"], [["a cat sat"], ["a dog barked", "the dog"]], **MODEL)
    assert torch.allclose(torch.tensor(out["f1"]), expected[2], atol=1e-6)
    with pytest.raises(TypeError, match=r"prediction is an int"):
        metric.add(prediction=3, reference="a")


def test_arrays_series_and_tuples_are_collections_of_texts(minilm_scorer, metric):
    cands, refs = SENTENCES[:4], SENTENCES[4:8]
    expected = torch.stack(minilm_scorer.score(cands, refs))
    frame = pd.DataFrame({"prediction": cands, "reference": refs})
    for c, r in [(np.array(cands), np.array(refs)), (frame["prediction"], frame["reference"]), (tuple(cands), tuple(refs)),
                 (np.array(cands, dtype=object), [np.array([x]) for x in refs])]:
        assert torch.equal(torch.stack(minilm_scorer.score(c, r)), expected)
    out = metric.compute(predictions=frame["prediction"], references=frame["reference"], **MODEL)
    assert torch.allclose(torch.tensor(out["f1"]), expected[2], atol=1e-6)
    with pytest.raises(TypeError, match="one-dimensional"):
        normalize_inputs(np.array([cands, cands]), [refs, refs])
    with pytest.raises(TypeError, match=r"candidates\[1\] is a float"):
        minilm_scorer.score(pd.Series(["a", None], dtype=object).fillna(np.nan), ["a", "b"])


def test_idf_texts_follow_the_same_contract(minilm_scorer, metric):
    """idf texts are texts too: an array or Series of them is the list, a bare string is not a
    list of one-character documents, and a bad text is an error naming its index."""
    texts, cands, refs = SENTENCES[:4], SENTENCES[4:7], SENTENCES[7:10]

    def make(idf):
        return BERTScorer(loaded_model=minilm_scorer.model, idf=idf)

    from_list = make(list(texts))
    expected = torch.stack(from_list.score(cands, refs))
    for idf in (np.array(texts), pd.Series(texts), tuple(texts)):
        scorer = make(idf)
        assert scorer.hash == from_list.hash
        assert torch.equal(torch.stack(scorer.score(cands, refs)), expected)
    out = metric.compute(predictions=cands, references=refs, idf=pd.Series(texts), **MODEL)
    assert out["hashcode"] == from_list.hash
    assert torch.allclose(torch.tensor(out["f1"]), expected[2], atol=1e-6)
    for door in (make, lambda idf: metric.compute(predictions=cands, references=refs, idf=idf, **MODEL)):
        with pytest.raises(TypeError, match="wrap a single text in a list"):
            door("the cat sat")
        with pytest.raises(ValueError, match=r"idf\[1\] contains a lone surrogate"):
            door(["fine", "abc\ud800def"])
        with pytest.raises(TypeError, match=r"idf\[1\] is a float"):
            door(np.array(["fine", np.nan], dtype=object))
        with pytest.raises(ValueError, match="idf is empty"):
            door([])  # not idf weights that are all 0
        with pytest.raises(TypeError, match="got a set"):
            door(set(texts))  # not per-call idf, ignoring the texts
    for off in (None, False, np.False_):
        assert make(off).hash == minilm_scorer.hash
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        make(False).compute_idf("the cat sat")


def test_a_lone_surrogate_in_a_cli_file_is_an_error_naming_the_line(tmp_path, capsys):
    from bertscore.cli import main

    cands = tmp_path / "c.txt"
    cands.write_bytes(b"fine\nabc\xed\xa0\x80def\n")  # a UTF-8-encoded surrogate is not valid UTF-8
    refs = tmp_path / "r.txt"
    refs.write_text("a\nb\n")
    assert main(["-c", str(cands), "-r", str(refs), "--model", EMBEDDED_MODEL_NAME]) == 2
    assert "line 2: not valid UTF-8" in capsys.readouterr().err


# ----- empty means no content tokens -------------------------------------------------------------
INVISIBLE = ["\u200b", "\ufeff", "\x00", "\u0301", "  \u200b  "]


def test_texts_without_content_tokens_score_zero_with_a_note(minilm_scorer):
    cands = INVISIBLE + ["a real sentence"]
    refs = ["a real sentence"] * len(INVISIBLE) + ["\u200b"]
    for text in INVISIBLE:  # the premise: the tokenizer keeps no content token of these
        assert minilm_scorer.model.tokenize([text])[0] == minilm_scorer.model.tokenize([""])[0]
    notes: list[str] = []
    p, r, f = minilm_scorer.score(cands, refs, notes=notes)
    assert torch.equal(torch.stack([p, r, f]), torch.zeros(3, len(cands)))
    assert len(notes) == 1 and "raw scores are 0" in notes[0]
    assert all(f"candidates[{i}]" in notes[0] for i in range(len(INVISIBLE))) and f"references[{len(INVISIBLE)}]" in notes[0]


def test_multi_reference_max_and_rescaling_see_the_empty_reference_as_zero(minilm_scorer, tmp_path):
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.8,0.7,0.75\n" for k in range(7)))
    scorer = BERTScorer(loaded_model=minilm_scorer.model, rescale_with_baseline=True, baseline_path=str(baseline))
    with pytest.warns(UserWarning, match="raw scores are 0"):
        p, r, f = scorer.score(["completely unrelated words"], [["\ufeff", "\u200b"]])
    assert torch.allclose(torch.stack([p, r, f]).flatten(), torch.tensor([-0.8 / 0.2, -0.7 / 0.3, -0.75 / 0.25]))


def test_idf_over_one_reference_says_why_every_score_is_zero(minilm_scorer):
    notes: list[str] = []
    p, r, f = BERTScorer(loaded_model=minilm_scorer.model, idf=True).score(
        ["the cat sat", "a cat sat"], ["the cat sat", "the cat sat"], notes=notes
    )
    assert r.tolist() == [0.0, 0.0] and f.tolist() == [0.0, 0.0]
    assert any("idf over 1 distinct reference gives every token in it weight 0" in n for n in notes), notes


# ----- the official BERTScorer's extras -----------------------------------------------------------
def test_compute_idf_fixes_weights_and_changes_the_hash(minilm_scorer):
    scorer = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0)
    plain = scorer.hash
    scorer.compute_idf(SENTENCES)
    assert scorer.hash != plain and "idf-sents:" in scorer.hash and not scorer.idf_is_per_call
    fixed = BERTScorer(loaded_model=minilm_scorer.model, idf=list(SENTENCES), cache_bytes=0)
    assert torch.equal(torch.stack(scorer.score(SENTENCES[:3], SENTENCES[3:6])),
                       torch.stack(fixed.score(SENTENCES[:3], SENTENCES[3:6])))


def test_idf_dict_equals_the_official_get_idf_dict(minilm_scorer):
    bert_score = pytest.importorskip("bert_score")
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=list(SENTENCES))
    theirs = bert_score.utils.get_idf_dict(SENTENCES, minilm_scorer.model.tokenizer, nthreads=1)
    ours = scorer.idf_dict
    assert isinstance(ours, defaultdict)
    for token_id in list(theirs)[:500] + [101, 102, 999]:
        assert ours[token_id] == pytest.approx(theirs[token_id], abs=1e-6), token_id
    assert BERTScorer(loaded_model=minilm_scorer.model, idf=True).idf_dict is None


def test_official_attributes(minilm_scorer, tmp_path):
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.{k},0.5,0.6\n" for k in range(7)))
    scorer = BERTScorer(loaded_model=minilm_scorer.model, rescale_with_baseline=True, baseline_path=str(baseline),
                        nthreads=2, use_fast_tokenizer=True, lang="EN")
    assert torch.allclose(scorer.baseline_vals, torch.tensor([0.4, 0.5, 0.6]))
    assert (scorer.nthreads, scorer.use_fast_tokenizer, scorer.lang) == (2, True, "en")


@pytest.mark.parametrize("idf, rescale, custom, fast", [(False, False, False, False), (True, True, False, True),
                                                        (True, True, True, False)])
def test_official_hash_is_what_the_official_package_prints(minilm_scorer, tmp_path, idf, rescale, custom, fast):
    bert_score = pytest.importorskip("bert_score")
    baseline = tmp_path / "b.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{k},0.5,0.5,0.5\n" for k in range(7)))
    scorer = BERTScorer(loaded_model=minilm_scorer.model, idf=idf, rescale_with_baseline=rescale and custom,
                        baseline_path=str(baseline) if custom else None, use_fast_tokenizer=fast)
    if rescale and not custom:  # the packaged path: only the flag matters for the official string
        scorer.rescale_with_baseline = True
    from bertscore.official import IMPLEMENTATION_VERSION

    expected = bert_score.utils.get_hash(EMBEDDED_MODEL_NAME, 4, idf, rescale, custom, fast)
    # The official format, its version field naming this implementation (the official writes its own).
    assert f"_version={bert_score.__version__}(" in expected
    assert scorer.official_hash() == expected.replace(f"_version={bert_score.__version__}(",
                                                      f"_version={IMPLEMENTATION_VERSION}(")


def test_identical_texts_score_one_and_never_above(minilm_scorer):
    from bertscore.scoring.matching import greedy_match, normalize, pad_sequences

    p, r, f = BERTScorer(loaded_model=minilm_scorer.model, cache_bytes=0).score(SENTENCES, SENTENCES)
    scores = torch.stack([p, r, f])
    assert (scores <= 1).all() and (scores >= 1 - 1e-6).all()
    # float32 self-similarities of unit vectors often round to 1.0000001: never reported above 1
    generator = torch.Generator().manual_seed(0)
    above = 0
    for _ in range(50):
        emb = normalize(torch.randn(1, 7, 384, generator=generator))
        above += int((emb[0] @ emb[0].T).diagonal().gt(1).any())
        padded = pad_sequences([emb[0]], [torch.ones(7)])
        assert all((x <= 1).all() for x in greedy_match(*padded, *padded))
    assert above > 0  # the premise: without the clamp some of these would exceed 1


def test_an_unreachable_hub_fails_in_seconds(monkeypatch, tmp_path):
    """Fails when a hub id is fetched from an unreachable Hub with retries (huggingface_hub backs off
    1, 2, 4, 8 ... s between tries: about 25 s) instead of the probe's one refused connection. Counted
    as the seconds of sleep asked for, which are the same on any machine, not by a wall clock."""
    import socket
    import time

    from bertscore import sources
    from bertscore.models import loading as models

    with socket.socket() as sock:  # a local port with nothing listening: connection refused at once
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    monkeypatch.setattr(sources, "_HUB_REACHABLE", {})
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # a back-off's waits, recorded and skipped
    with pytest.raises(OSError, match="Hugging Face Hub is not reachable from here"):
        models.load_model("someone/not-a-local-model")
    assert sum(slept) < 1, f"waited {slept} s between tries"


def test_lang_is_case_insensitive():
    from bertscore.models.tables import default_model_for_lang

    assert default_model_for_lang("EN") == "roberta-large" and default_model_for_lang("Zh") == "bert-base-chinese"


def test_baseline_errors_name_every_door_and_lang_is_case_insensitive(tiny_models, capsys):
    from bertscore import baselines
    from bertscore.cli import main

    assert baselines.packaged_baseline_path("roberta-large", "EN") == baselines.packaged_baseline_path("roberta-large", "en")
    with pytest.raises(ValueError, match="--baseline-path on the command line"):
        baselines.packaged_baseline_path(str(tiny_models["electra"]), None)
    refs = str(REPO_ROOT / "examples" / "references.txt")
    assert main(["-c", refs, "-r", refs, "-m", str(tiny_models["electra"]), "-l", "1", "--rescale-with-baseline"]) == 2
    assert "--baseline-path" in capsys.readouterr().err
