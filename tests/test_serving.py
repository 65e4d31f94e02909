"""bertscore.space.serving.RequestQueue: merged calls give each request its own numbers and notes; admission
by expected wait refuses at once, naming the wait. Expected values: a BERTScorer of its own (no
embedding cache, no queue) scoring each request alone."""

from __future__ import annotations

import contextlib
import math
import threading
import time

import pytest

import bertscore
from bertscore.pool import ScorerPool
from bertscore.space.serving import QueueFull, RequestQueue

MODEL = bertscore.EMBEDDED_MODEL_NAME
HANG_GUARD_S = 300  # the waits below only end a hung test, saying what they waited for: none is a timing bet


@pytest.fixture(scope="module")
def pool() -> ScorerPool:
    return ScorerPool()


def _requests(wmt17_de_en) -> list[tuple[list[str], list[list[str]]]]:
    cands, refs = wmt17_de_en
    out = []
    for i in range(6):  # different sizes, one and two references per candidate
        size = 2 + i % 3
        c = cands[10 * i: 10 * i + size]
        r = [[refs[10 * i + j]] if j % 2 else [refs[10 * i + j], refs[10 * i + j + 1]] for j in range(size)]
        out.append((c, r))
    return out


_SOLO: dict[tuple, bertscore.BERTScorer] = {}


def _assert_alone(result, cands, groups, **options) -> None:
    key = tuple(sorted(options.items()))
    if key not in _SOLO:
        loaded = next(iter(_SOLO.values())).model if _SOLO else None  # one encoder load for every solo scorer
        _SOLO[key] = bertscore.BERTScorer(model_type=MODEL, cache_bytes=0, loaded_model=loaded, **options)
    expected = _SOLO[key].score(cands, groups)
    for got, want in zip(result, expected):
        assert got.shape == want.shape
        assert got.tolist() == pytest.approx(want.tolist(), abs=1e-6)


def test_waiting_requests_merge_and_each_gets_its_own_scores(pool, wmt17_de_en) -> None:
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=600, pairs_per_s=100)
    requests = _requests(wmt17_de_en)
    with gated(scorer):  # the worker holds at most the first until all are queued: the other five meet there
        futures = [queue.submit(scorer, c, g, notes=[]) for c, g in requests]
    results = [future.result(timeout=HANG_GUARD_S) for future in futures]
    assert queue.merged_calls >= 1
    for result, (c, g) in zip(results, requests):
        _assert_alone(result, c, g)


def test_rescaled_and_per_call_idf_requests_equal_their_solo_results(pool, wmt17_de_en) -> None:
    """idf over a call's references: never merged, so each request's idf is over its own references."""
    idf_scorer = pool.get(model_type=MODEL, idf=True)
    rescaled = pool.get(model_type=MODEL, rescale_with_baseline=True, lang="en")
    queue = RequestQueue(max_wait_s=600, pairs_per_s=100)
    requests = _requests(wmt17_de_en)[:3]
    futures = [(queue.submit(idf_scorer, c, g, notes=[]), queue.submit(rescaled, c, g, notes=[])) for c, g in requests]
    for (idf_future, rescaled_future), (c, g) in zip(futures, requests):
        _assert_alone(idf_future.result(timeout=HANG_GUARD_S), c, g, idf=True)
        _assert_alone(rescaled_future.result(timeout=HANG_GUARD_S), c, g, rescale_with_baseline=True, lang="en")


def test_merged_requests_keep_their_own_notes(pool) -> None:
    """A note names indices within a call: each request gets the notes it gets alone, no other's."""
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=600, pairs_per_s=100)
    blocker = queue.submit(scorer, ["a long first request"] * 40, [["keeps the worker busy"]] * 40, notes=[])
    notes = [[] for _ in range(4)]
    inputs = [(["the cat sat", "a dog ran"], [["a cat sat"], ["the dog ran"]]),
              (["a dog ran", ""], [["the dog ran"], ["something"]]),
              (["the cat sat"], [["a cat sat"]]),
              (["  ", "x"], [["y"], ["z"]])]
    futures = [queue.submit(scorer, c, g, notes=n) for (c, g), n in zip(inputs, notes)]
    blocker.result(timeout=HANG_GUARD_S)
    for future, (c, g), own in zip(futures, inputs, notes):
        _assert_alone(future.result(timeout=HANG_GUARD_S), c, g)
        alone: list[str] = []
        scorer.score(c, g, notes=alone)
        assert own == alone
    assert notes[0] == [] and notes[2] == [] and "candidates[1]" in notes[1][0] and "candidates[0]" in notes[3][0]


def test_a_request_that_would_wait_too_long_is_refused_at_once_with_the_wait(pool, wmt17_de_en) -> None:
    """Fails when `submit` waits for the queue before refusing, or misstates the wait. "At once" is
    "while the first request is still held at the gate", not a wall-clock bound (the machine's speed
    would decide that); a submit that waited would get past the gate only when the block ends. The
    assumed speed is so low (20 pairs: 10,000 s) that no machine's pace changes the verdict, and the
    wait is checked against the seconds that really passed (the clock read, not bet on)."""
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=5000, pairs_per_s=0.002)  # 0.002 pairs/s assumed: 20 pairs take 10,000 s
    cands, refs = wmt17_de_en
    with gated(scorer) as entered:
        started = time.monotonic()
        first = queue.submit(scorer, cands[:20], [[r] for r in refs[:20]], notes=[])
        assert entered.wait(HANG_GUARD_S), f"the first request did not reach the scorer in {HANG_GUARD_S} s"
        assert first.running()
        with pytest.raises(QueueFull) as refused:
            queue.submit(scorer, cands[20:40], [[r] for r in refs[20:40]], notes=[])
        passed = time.monotonic() - started
        assert not first.done()  # refused at once: the first request is still held
    error = refused.value
    # 20 pairs ahead (less what the seconds that passed did of them) + its own 20, at 0.002 pairs/s
    assert 20000 - passed <= error.expected_wait_s <= 20000
    assert error.retry_after_s == math.ceil(error.expected_wait_s - 5000)
    message = str(error)
    assert f"would be answered in about {math.ceil(error.expected_wait_s)} s" in message
    assert "limit of 5000 s" in message and f"try again in about {error.retry_after_s} s" in message
    _assert_alone(first.result(timeout=HANG_GUARD_S), cands[:20], [[r] for r in refs[:20]])
    # idle again: any request is taken, even one longer than the limit at the assumed speed
    _assert_alone(queue.score(scorer, cands[:30], [[r] for r in refs[:30]], notes=[]), cands[:30], refs[:30])


def test_measured_speed_replaces_the_estimate(pool, wmt17_de_en) -> None:
    """Calls of 64 pairs or more are measured (per model); smaller ones say little about merged calls."""
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=60, pairs_per_s=1e-3)
    cands, refs = wmt17_de_en
    queue.score(scorer, cands[:10], refs[:10], notes=[])
    assert queue.pairs_per_s(MODEL) == 1e-3
    started = time.monotonic()
    queue.score(scorer, cands[100:180], refs[100:180], notes=[])
    elapsed = time.monotonic() - started  # contains the call the queue timed: no bound, an inequality that always holds
    assert queue.pairs_per_s(MODEL) >= 80 / elapsed and queue.pairs_per_s("other-model") == 1e-3


@contextlib.contextmanager
def gated(scorer):
    """The scorer's calls wait until the block ends (then score for real): the worker is busy meanwhile.
    Yields an event set once a call has entered the gate (a worker holds it)."""
    gate, entered, original = threading.Event(), threading.Event(), scorer.score

    def score(*args, **kwargs):
        entered.set()
        if not gate.wait(HANG_GUARD_S):  # the block ends in a finally, whatever happens: a hang guard only
            raise RuntimeError(f"a scoring call waited {HANG_GUARD_S} s at the gate for the test's block to end")
        return original(*args, **kwargs)

    scorer.score = score
    try:
        yield entered
    finally:
        gate.set()
        del scorer.score


def test_a_cancelled_waiting_request_is_never_scored(pool) -> None:
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=600, pairs_per_s=100)
    notes: list[str] = []
    with gated(scorer) as entered:
        first = queue.submit(scorer, ["busy"] * 30, [["worker"]] * 30, notes=[])
        assert entered.wait(HANG_GUARD_S), f"the first request did not reach the scorer in {HANG_GUARD_S} s"
        assert first.running()
        dropped = queue.submit(scorer, [""], [["x"]], notes=notes)  # would get a note if it were scored
        assert dropped.cancel()
    first.result(timeout=HANG_GUARD_S)
    queue.score(scorer, ["a"], [["b"]], notes=[])  # the worker has passed the dropped one
    assert dropped.cancelled() and notes == []


def test_worker_threads_end_when_the_queue_is_empty(pool) -> None:
    scorer = pool.get(model_type=MODEL)
    queue = RequestQueue(max_wait_s=600, pairs_per_s=100, workers=2)
    before = {t.ident for t in threading.enumerate() if t.name == "bertscore-request-queue"}
    for future in [queue.submit(scorer, ["a b c"], [["a b"]], notes=[]) for _ in range(5)]:
        future.result(timeout=HANG_GUARD_S)
    for thread in [t for t in threading.enumerate() if t.name == "bertscore-request-queue" and t.ident not in before]:
        thread.join(timeout=HANG_GUARD_S)  # a worker with nothing left to do returns (a hang guard: the assert says)
    assert not {t.ident for t in threading.enumerate() if t.name == "bertscore-request-queue"} - before


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_wait_s > 0"):
        RequestQueue(max_wait_s=0, pairs_per_s=1)
