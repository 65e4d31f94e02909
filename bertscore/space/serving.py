"""Many scoring requests at once (a server's API): merged score calls, admission by expected wait.

A server such as the Space's `/compute` gets requests from many clients at the same time.
Scoring each alone repeats the per-call work and runs the encoder on small, half-empty
batches; one call over many requests packs full batches. `RequestQueue.submit(scorer, ...)`
returns a future of that request's scores (`score(...)` waits for it): a worker thread takes the oldest waiting request
and every other waiting request for the same scorer (same model and options), up to
`max_batch_pairs` pairs, scores them in one call and hands each request its own slice.

Each request gets the numbers it would get alone (the library's scores do not depend on
batching, to 1e-6; see docs/exactness.md), with two things that do depend on the call
kept apart: idf weights computed over a call's references (a scorer with per-call idf is never
merged) and notes, which name indices within a call (when a merged call has notes, its
requests are scored again one by one, each with its own notes).

Admission: a request is refused at once with `QueueFull` when the scoring ahead of it plus its
own would take longer than `max_wait_s` at the measured speed (pairs per second per model, a
running average over finished calls of at least MIN_MEASURED_PAIRS pairs; the configured
estimate `pairs_per_s` until then).
The refusal says how long that wait would be and when to try again. A request arriving at an
idle queue is always taken, whatever its size (the caller bounds sizes).
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..inputs import normalize_inputs

if TYPE_CHECKING:
    from ..scorer import BERTScorer, Scores

SPEED_SMOOTHING = 0.3  # weight of the latest call in the running average of pairs per second
MIN_MEASURED_PAIRS = 64  # smaller calls (an idle queue) say little about the speed of merged calls


class QueueFull(Exception):
    """The wait for this request would exceed the queue's limit; the message says how long to wait."""

    def __init__(self, expected_wait_s: float, max_wait_s: float, ahead_pairs: int, pairs: int):
        self.expected_wait_s = expected_wait_s
        self.max_wait_s = max_wait_s
        self.retry_after_s = max(1, math.ceil(expected_wait_s - max_wait_s))
        super().__init__(
            f"the server is busy: this request ({pairs} pairs, after {ahead_pairs} pairs waiting or being scored) "
            f"would be answered in about {math.ceil(expected_wait_s)} s, more than this server's limit of "
            f"{max_wait_s:g} s; try again in about {self.retry_after_s} s, or send fewer pairs per call"
        )


@dataclass(eq=False)
class _Request:
    scorer: "BERTScorer"
    candidates: list[str]
    groups: list[list[str]]
    notes: list[str] | None
    pairs: int
    key: Any
    future: Future = field(default_factory=Future)


@dataclass(eq=False)
class _Call:
    model: str
    pairs: int
    started: float


class RequestQueue:
    """Score requests in merged calls, refusing those that would wait more than `max_wait_s`.

    `workers` calls run at a time (one suits a CPU: a second call only shares the cores).
    Thread-safe; worker threads start with the first request and end when the queue is empty.
    """

    def __init__(self, max_wait_s: float, pairs_per_s: float, max_batch_pairs: int = 512, workers: int = 1):
        if not (max_wait_s > 0 and pairs_per_s > 0 and max_batch_pairs >= 1 and workers >= 1):
            raise ValueError(
                f"RequestQueue needs max_wait_s > 0, pairs_per_s > 0, max_batch_pairs >= 1 and workers >= 1; got "
                f"{max_wait_s}, {pairs_per_s}, {max_batch_pairs}, {workers}"
            )
        self.max_wait_s = float(max_wait_s)
        self.default_pairs_per_s = float(pairs_per_s)
        self.max_batch_pairs = int(max_batch_pairs)
        self.workers = int(workers)
        self.merged_calls = 0  # calls that served more than one request (for tests and benchmarks)
        self._speed: dict[str, float] = {}
        self._waiting: list[_Request] = []
        self._waiting_pairs: dict[str, int] = {}  # per model, so that admission costs O(models)
        self._running: list[_Call] = []
        self._active_workers = 0
        self._lock = threading.Lock()

    # -- admission -------------------------------------------------------------------------------
    def pairs_per_s(self, model: str) -> float:
        """Measured pairs per second of `model` (the configured estimate before its first call)."""
        return self._speed.get(model, self.default_pairs_per_s)

    def expected_wait(self, pairs: int, model: str) -> float:
        """Seconds until a new request of `pairs` pairs for `model` would be answered."""
        with self._lock:
            return self._expected_wait(pairs, model, time.monotonic())

    def _expected_wait(self, pairs: int, model: str, now: float) -> float:
        ahead = sum(max(0.0, c.pairs / self.pairs_per_s(c.model) - (now - c.started)) for c in self._running)
        ahead += sum(waiting / self.pairs_per_s(name) for name, waiting in self._waiting_pairs.items())
        return ahead / self.workers + pairs / self.pairs_per_s(model)

    @property
    def pending_pairs(self) -> int:
        """Pairs waiting or being scored now."""
        with self._lock:
            return sum(c.pairs for c in self._running) + sum(self._waiting_pairs.values())

    # -- requests --------------------------------------------------------------------------------
    def submit(
        self,
        scorer: "BERTScorer",
        candidates: Sequence[str],
        references: Sequence[str] | Sequence[Sequence[str]],
        notes: list[str] | None = None,
    ) -> "Future[Scores]":
        """A future of `scorer.score(candidates, references, notes=notes)`, maybe merged with others.

        `references` as for `score()`: one text or one list of texts per candidate (checked here,
        with score()'s errors). Raises QueueFull at once when the wait would exceed `max_wait_s`.
        Cancelling the future before its call starts drops the request (an async server awaiting
        `asyncio.wrap_future(future)` does so when its client leaves).
        """
        candidate_list, groups = normalize_inputs(candidates, references)
        pairs = sum(len(group) for group in groups)
        key = id(scorer) if not scorer.idf_is_per_call else object()  # per-call idf: never merged
        request = _Request(scorer, candidate_list, groups, notes, pairs, key)
        with self._lock:
            if self._waiting or self._running:
                wait = self._expected_wait(pairs, scorer.model_type, time.monotonic())
                if wait > self.max_wait_s:
                    ahead = sum(c.pairs for c in self._running) + sum(self._waiting_pairs.values())
                    raise QueueFull(wait, self.max_wait_s, ahead, pairs)
            self._waiting.append(request)
            self._count_waiting(request, +1)
            if self._active_workers < self.workers:
                self._active_workers += 1
                threading.Thread(target=self._work, name="bertscore-request-queue", daemon=True).start()
        return request.future

    def score(
        self,
        scorer: "BERTScorer",
        candidates: Sequence[str],
        references: Sequence[str] | Sequence[Sequence[str]],
        notes: list[str] | None = None,
    ) -> "Scores":
        """`submit(...)` and wait for its scores (QueueFull at once when the wait would be too long)."""
        return self.submit(scorer, candidates, references, notes).result()

    def _take(self) -> list[_Request]:
        """The oldest waiting request and the next ones for the same scorer, up to max_batch_pairs pairs.

        Requests cancelled while waiting are dropped here.
        """
        for request in [r for r in self._waiting if r.future.cancelled()]:
            self._waiting.remove(request)
            self._count_waiting(request, -1)
        if not self._waiting:
            return []
        first = self._waiting[0]
        batch, pairs = [first], first.pairs
        for request in self._waiting[1:]:
            if request.key == first.key and pairs + request.pairs <= self.max_batch_pairs:
                batch.append(request)
                pairs += request.pairs
        chosen = {id(request) for request in batch}
        self._waiting = [r for r in self._waiting if id(r) not in chosen]
        for request in batch:
            self._count_waiting(request, -1)
        return [r for r in batch if r.future.set_running_or_notify_cancel()]

    def _count_waiting(self, request: _Request, sign: int) -> None:
        model = request.scorer.model_type
        self._waiting_pairs[model] = self._waiting_pairs.get(model, 0) + sign * request.pairs
        if not self._waiting_pairs[model]:
            del self._waiting_pairs[model]

    def _work(self) -> None:
        while True:
            with self._lock:
                batch = self._take() if self._waiting else []
                if not batch:
                    if not self._waiting:
                        self._active_workers -= 1
                        return
                    continue
                call = _Call(batch[0].scorer.model_type, sum(r.pairs for r in batch), time.monotonic())
                self._running.append(call)
            try:
                results = self._run(batch)
            except BaseException as error:  # noqa: BLE001 - the worker lives on; every caller hears of it
                results = [error] * len(batch)
            elapsed = time.monotonic() - call.started
            with self._lock:
                self._running.remove(call)
                if call.pairs >= MIN_MEASURED_PAIRS and not any(isinstance(x, BaseException) for x in results):
                    measured = call.pairs / max(elapsed, 1e-9)
                    old = self._speed.get(call.model)
                    self._speed[call.model] = measured if old is None else (
                        SPEED_SMOOTHING * measured + (1 - SPEED_SMOOTHING) * old)
            for request, result in zip(batch, results):
                if isinstance(result, BaseException):
                    request.future.set_exception(result)
                else:
                    request.future.set_result(result)

    def _run(self, batch: list[_Request]) -> list[Any]:
        """Each request's scores (or exception): one merged call when that gives each its own result."""
        if len(batch) > 1:
            scorer, notes = batch[0].scorer, []
            try:
                merged = scorer.score([c for q in batch for c in q.candidates], [g for q in batch for g in q.groups],
                                      notes=notes)
            except Exception:  # noqa: BLE001 - a failure belongs to one request: each is scored alone below
                merged = None
            if merged is not None and not notes:
                results, start = [], 0
                for request in batch:
                    end = start + len(request.candidates)
                    results.append(tuple(column[..., start:end].clone() for column in merged))
                    start = end
                with self._lock:
                    self.merged_calls += 1
                return results
        results = []
        for request in batch:
            try:
                results.append(request.scorer.score(request.candidates, request.groups, notes=request.notes))
            except Exception as error:  # noqa: BLE001 - handed to the waiting caller
                results.append(error)
        return results
