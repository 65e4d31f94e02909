"""tests/oracle.py: the official package's answers are computed once, and again whenever anything
they depend on changes (model files, inputs, recipe, versions); a torn file is recomputed."""

from __future__ import annotations

import oracle
import pytest
import torch


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(oracle, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    monkeypatch.delenv("BERTSCORE_ORACLE_CACHE", raising=False)
    oracle.folder_digest.cache_clear()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 8}')
    yield model
    oracle.folder_digest.cache_clear()


def counted(calls: list[int], value: float):
    def compute():
        calls.append(1)
        return (torch.tensor([value]), [[1, 2]])
    return compute


def test_an_answer_is_computed_once_then_read_from_memory_and_files(store, monkeypatch) -> None:
    calls: list[int] = []
    first = oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 0.5))
    again = oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 9.0))
    assert calls == [1] and again is first
    monkeypatch.setattr(oracle, "_MEMORY", {})  # another process: the file answers
    read = oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 9.0))
    assert calls == [1] and read[0].tolist() == [0.5] and read[1] == [[1, 2]]
    assert len(list(oracle.CACHE_DIR.glob("*.pt"))) == 1 and not list(oracle.CACHE_DIR.glob("*.tmp"))


def test_every_part_of_the_key_counts(store, monkeypatch) -> None:
    calls: list[int] = []
    oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 0.5))
    oracle.cached("recipe", store, {"cands": ["b"]}, counted(calls, 0.5))
    oracle.cached("another recipe", store, {"cands": ["a"]}, counted(calls, 0.5))
    (store / "config.json").write_text('{"hidden_size": 9}')  # a model rebuilt otherwise
    oracle.folder_digest.cache_clear()
    oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 0.5))
    monkeypatch.setattr(oracle, "versions", lambda: "bert-score=0.0.0")
    oracle.cached("recipe", store, {"cands": ["a"]}, counted(calls, 0.5))
    assert len(calls) == 5


def test_a_torn_file_is_recomputed_and_the_files_can_be_turned_off(store, monkeypatch) -> None:
    calls: list[int] = []
    oracle.cached("recipe", store, [1], counted(calls, 0.5))
    (path,) = oracle.CACHE_DIR.glob("*.pt")
    path.write_bytes(b"torn")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    assert oracle.cached("recipe", store, [1], counted(calls, 0.25))[0].tolist() == [0.25] and len(calls) == 2
    assert torch.load(path, weights_only=True)[0].tolist() == [0.25]
    monkeypatch.setenv("BERTSCORE_ORACLE_CACHE", "off")
    monkeypatch.setattr(oracle, "_MEMORY", {})
    oracle.cached("recipe", store, [2], counted(calls, 0.5))
    assert len(calls) == 3 and len(list(oracle.CACHE_DIR.glob("*.pt"))) == 1
