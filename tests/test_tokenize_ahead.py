"""tokenize_ahead.py: blocks tokenized one ahead on one background thread, the environment as found.

The pipeline's numbers and notes with and without the thread are in tests/test_pipeline.py.
"""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
import torch

from bertscore import tokenize_ahead

CANDS = [f"candidate {i}" for i in range(10)]
REFS = [f"reference {i}" for i in range(10)]
BLOCKS = [range(0, 3), range(3, 7), range(7, 10)]
HANG_GUARD_S = 120  # a wait that only ends a hung test, saying what it waited for (never a timing bet)


class Recorder:
    """A tokenize stand-in: records the texts, the thread and TOKENIZERS_PARALLELISM of each call."""

    def __init__(self):
        self.calls: list[tuple[list[str], str, str | None]] = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, texts: list[str]) -> list[str]:
        if threading.current_thread() is not threading.main_thread():
            if not self.release.wait(HANG_GUARD_S):  # the background thread's blocks wait for the test's word
                raise RuntimeError(f"block {texts[0]!r}... waited {HANG_GUARD_S} s for the test to release it")
        self.calls.append((texts, threading.current_thread().name, os.environ.get("TOKENIZERS_PARALLELISM")))
        return [text.upper() for text in texts]


@pytest.fixture
def parallelism(monkeypatch, request):
    """TOKENIZERS_PARALLELISM set to request.param (None: unset) for the test, as a user would have it."""
    if request.param is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", request.param)
    return request.param


def expected_texts(block: range) -> list[str]:
    return [CANDS[i] for i in block] + [REFS[i] for i in block]


@pytest.mark.parametrize("parallelism", [None, "true", "false"], indirect=True)
def test_ahead_tokenizes_the_next_block_on_one_thread_serially_and_restores_the_variable(parallelism):
    tokenize = Recorder()
    seen = []
    for block, store in tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True):
        seen.append(block)
        assert store == [text.upper() for text in expected_texts(block)]
        # while block k is worked on, block k + 1 has been handed to the thread (at most one ahead)
        assert len(tokenize.calls) <= BLOCKS.index(block) + 2
    assert seen == BLOCKS
    assert [texts for texts, _, _ in tokenize.calls] == [expected_texts(block) for block in BLOCKS]
    first, *rest = tokenize.calls
    assert first[1] == threading.current_thread().name and first[2] == parallelism  # the caller's own setting
    assert {name for _, name, _ in rest} == {rest[0][1]} and rest[0][1].startswith("bertscore-tokenize")
    assert {value for _, _, value in rest} == {"false"}  # the library's pool would take the encoder's core
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism
    assert not [t for t in threading.enumerate() if t.name.startswith("bertscore-tokenize")]


@pytest.mark.parametrize("parallelism", [None, "true", "false"], indirect=True)
def test_for_an_accelerator_the_thread_tokenizes_as_the_user_set_it(parallelism):
    """serial=False (the encoder is not on the CPU: its cores are idle): the tokenizers library's
    parallelism is the user's, in the thread too, and the variable is never written."""
    tokenize = Recorder()
    blocks = list(tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True, serial=False))
    assert [block for block, _ in blocks] == BLOCKS
    first, *rest = tokenize.calls
    assert rest and {name for _, name, _ in rest} == {rest[0][1]} and rest[0][1].startswith("bertscore-tokenize")
    assert {value for _, _, value in tokenize.calls} == {parallelism}
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism


@pytest.mark.parametrize("parallelism", [None, "true"], indirect=True)
def test_without_ahead_every_block_is_tokenized_by_the_caller_as_the_user_set_it(parallelism):
    tokenize = Recorder()
    assert [block for block, _ in tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=False)] == BLOCKS
    assert {(name, value) for _, name, value in tokenize.calls} == {(threading.current_thread().name, parallelism)}


@pytest.mark.parametrize("parallelism", [None, "true"], indirect=True)
def test_leaving_early_waits_for_the_block_in_flight_then_restores_the_variable(parallelism, monkeypatch):
    tokenize = Recorder()
    tokenize.release.clear()  # block 1 stays in flight until the caller, leaving early, shuts the pool down

    class ReleasedOnShutdown(tokenize_ahead.ThreadPoolExecutor):
        def shutdown(self, *args, **kwargs):
            tokenize.release.set()  # from here on, only a shutdown that waits sees block 1 done
            return super().shutdown(*args, **kwargs)

    monkeypatch.setattr(tokenize_ahead, "ThreadPoolExecutor", ReleasedOnShutdown)
    blocks = tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True)
    with pytest.raises(KeyError), contextlib.closing(blocks):
        for _block, _store in blocks:
            assert len(tokenize.calls) == 1  # block 0 only: block 1 is held
            raise KeyError("the caller's scoring failed")
    assert len(tokenize.calls) == 2  # closing waited for block 1 before the environment came back
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism
    assert not [t for t in threading.enumerate() if t.name.startswith("bertscore-tokenize")]


def test_an_error_in_the_thread_reaches_the_caller_and_nothing_is_left_behind(monkeypatch):
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)

    def tokenize(texts: list[str]) -> list[str]:
        if texts == expected_texts(BLOCKS[1]):
            raise ValueError("bad text in block 1")
        return texts

    with pytest.raises(ValueError, match="bad text in block 1"):
        list(tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True))
    assert "TOKENIZERS_PARALLELISM" not in os.environ


@pytest.mark.parametrize(("device", "threads", "cpus", "free"), [
    ("cpu", 2, 2, False), ("cpu", 1, 2, True), ("cpu", 4, 2, False), ("cuda", 2, 2, True), ("cuda:1", 16, 16, True),
])
def test_a_core_is_free_on_an_accelerator_or_where_torch_leaves_one(monkeypatch, device, threads, cpus, free):
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    assert tokenize_ahead.core_is_free(torch.device(device)) is free


@pytest.mark.parametrize(("device", "serial"), [("cpu", True), ("cuda", False)])
def test_the_pipeline_tokenizes_ahead_serially_only_for_an_encoder_on_the_cpu(monkeypatch, device, serial):
    """score_in_blocks asks for one serial thread where the encoder shares the CPU, and for the
    user's setting where it runs on an accelerator (a stand-in pipeline: no device is touched)."""
    from types import SimpleNamespace

    from bertscore import pipeline as pipeline_module

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    asked: list[bool] = []
    real = tokenize_ahead.tokenized_blocks

    def spy(*args, **kwargs):
        asked.append(kwargs["serial"])
        return real(*args, **kwargs)

    monkeypatch.setattr(tokenize_ahead, "tokenized_blocks", spy)
    stand_in = SimpleNamespace(
        settings=SimpleNamespace(all_layers=False, score_layers=1, chunk_size=4),
        model=SimpleNamespace(device=torch.device(device), tokenizes_without_gil=True),
        tokenize=lambda texts: set(texts),
        score_pairs=lambda cands, refs, store, weights, batch_size=None, progress=None, reuse=None: torch.ones(
            len(cands), 3),
    )
    scores = pipeline_module.score_in_blocks(stand_in, CANDS, REFS, None, None, False, None, lambda *_: None)
    assert asked == [serial] and scores.shape == (len(CANDS), 3) and bool((scores == 1).all())
