"""tests/oracle.py: the official package's answers are computed once, and again whenever anything
they depend on changes (model files, arguments, the function's source and what it names, versions);
the key is derived from the call, so an edit to the call changes it; a torn file is recomputed."""

from __future__ import annotations

import inspect
import sys

import oracle
import pytest
import torch

calls: list[tuple] = []
SCALE = 0.5


def helper(value: float) -> float:
    return value * SCALE


def answer(cands: list[str], model_type: str, **settings) -> tuple:
    """A stand-in for an official call: counts itself, returns what torch.save carries."""
    calls.append((tuple(cands), model_type, tuple(sorted(settings))))
    return (torch.tensor([helper(len(cands))]), [[1, 2]])


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(oracle, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    monkeypatch.delenv("BERTSCORE_ORACLE_CACHE", raising=False)
    oracle.folder_digest.cache_clear()
    calls.clear()
    model = tmp_path / "deep" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text('{"hidden_size": 8}')
    yield str(model)
    oracle.folder_digest.cache_clear()


def test_an_answer_is_computed_once_then_read_from_memory_and_files(store, monkeypatch) -> None:
    first = oracle.call(answer, ["a"], store, idf=False)
    again = oracle.call(answer, ["a"], store, idf=False)
    assert len(calls) == 1 and again is first
    monkeypatch.setattr(oracle, "_MEMORY", {})  # another process: the file answers
    read = oracle.call(answer, ["a"], store, idf=False)
    assert len(calls) == 1 and read[0].tolist() == [0.5] and read[1] == [[1, 2]]
    assert len(list(oracle.CACHE_DIR.glob("*.pt"))) == 1 and not list(oracle.CACHE_DIR.glob("*.tmp"))


def test_every_argument_of_the_call_is_part_of_the_key(store, monkeypatch) -> None:
    """Each call below differs from the first in one thing the answer depends on: each runs again."""
    oracle.call(answer, ["a"], store, idf=False)
    oracle.call(answer, ["b"], store, idf=False)  # an input
    oracle.call(answer, ["a"], store, idf=True)  # a setting's value
    oracle.call(answer, ["a"], store, idf=False, num_layers=5)  # a setting added (test_dropin once left these out)
    oracle.call(answer, ["a"], store, idf=False, weights=torch.tensor([1.0, 2.0]))
    oracle.call(answer, ["a"], store, idf=False, weights=torch.tensor([1.0, 3.0]))  # a tensor's values
    (oracle.Path(store) / "config.json").write_text('{"hidden_size": 9}')  # the model folder rebuilt otherwise
    oracle.folder_digest.cache_clear()
    oracle.call(answer, ["a"], store, idf=False)
    monkeypatch.setattr(oracle, "versions", lambda: "bert-score=0.0.0")
    oracle.call(answer, ["a"], store, idf=False)
    assert len(calls) == 8
    oracle.call(answer, ["a"], store, idf=False)  # nothing changed since: no new call
    assert len(calls) == 8


def test_a_baseline_file_counts_by_its_content(store, tmp_path) -> None:
    baseline = tmp_path / "deep" / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n1,0.1,0.2,0.3\n")
    oracle.call(answer, ["a"], store, baseline_path=str(baseline))
    oracle.call(answer, ["a"], store, baseline_path=str(baseline))
    baseline.write_text("LAYER,P,R,F\n1,0.1,0.2,0.4\n")
    oracle.call(answer, ["a"], store, baseline_path=str(baseline))
    assert len(calls) == 2


def test_the_function_s_source_and_what_it_names_are_part_of_the_key(store, monkeypatch) -> None:
    """An edit to the tests' own function, to a helper it calls, or to a constant it reads changes the key."""
    first = oracle.key_of(answer, (["a"], store), {})
    assert oracle.key_of(answer, (["a"], store), {}) == first
    real = inspect.getsource
    monkeypatch.setattr(inspect, "getsource", lambda f: "edited" if f is helper else real(f))
    assert oracle.key_of(answer, (["a"], store), {}) != first  # a helper it calls
    monkeypatch.undo()
    assert oracle.key_of(answer, (["a"], store), {}) == first
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 0.25)
    assert oracle.key_of(answer, (["a"], store), {}) != first  # a constant it reads
    import bert_score

    assert oracle.key_of(bert_score.score, (["a"],), {}) != oracle.key_of(bert_score.BERTScorer, (["a"],), {})


def test_a_function_that_closes_over_a_variable_is_refused(store) -> None:
    hidden = 12

    def closure(cands):
        return torch.tensor([len(cands) + hidden])

    with pytest.raises(TypeError, match="closes over hidden: pass them as arguments"):
        oracle.call(closure, ["a"])
    with pytest.raises(TypeError, match="cannot put model_type .*a object"):
        oracle.call(answer, ["a"], model_type=object())


def test_a_torn_file_is_recomputed_and_the_files_can_be_turned_off(store, monkeypatch) -> None:
    oracle.call(answer, ["a"], store)
    (path,) = oracle.CACHE_DIR.glob("*.pt")
    path.write_bytes(b"torn")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    assert oracle.call(answer, ["a"], store)[0].tolist() == [0.5] and len(calls) == 2
    assert torch.load(path, weights_only=True)[0].tolist() == [0.5]
    monkeypatch.setenv("BERTSCORE_ORACLE_CACHE", "off")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    oracle.call(answer, ["a", "b"], store)
    assert len(calls) == 3 and len(list(oracle.CACHE_DIR.glob("*.pt"))) == 1
