"""The Space's `/compute` endpoint: a request checked, scored in the queue that merges same-option
requests, and answered as JSON (an error is an answer too, never a crashed worker).

Returns {"precision": [...], "recall": [...], "f1": [...], "hashcode": str, "model": str,
"rescaled": bool, "notes": [...]} or {"error": message} ({"error": ..., "retry_after_s": n}
when the expected wait exceeds the app's limit).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, NamedTuple

from ..serving import QueueFull
from .messages import COMPUTE_SPELLING, UserError, shortened
from .user_input import api_texts
from .service import ScoringService


class ApiRequest(NamedTuple):
    """A checked /compute request: its scorer, texts and the notes gathered so far."""

    scorer: Any
    predictions: list[str]
    groups: list[list[str]]
    notes: list[str]


class ComputeEndpoint:
    """`/compute` over a ScoringService: `compute` for direct calls, `compute_async` for the server."""

    def __init__(self, service: ScoringService):
        self.service = service
        self.config = service.config

    def compute(self, predictions: str, references: str, model: str = "", num_layers: str = "",
                idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
                window_stride: str = "") -> dict:
        """BERTScore of predictions against references.

        Args:
            predictions: a JSON list of strings, or one plain text.
            references: a JSON list with one string or one list of strings per prediction; for
                one plain-text prediction, plain text with one reference per line.
            model: a model of the app's allow-list (blank: the default).
            num_layers: the layer (blank: the model's default).
            idf: weigh tokens by idf over the references.
            rescale: rescale with the packaged baseline (when the model has one).
            lang: the baseline language when the model has several (blank: en).
            long_texts: "truncate" (default: texts past the model's limit are cut, with a note) or
                "window" (whole texts through overlapping windows).
            window_stride: with "window", content tokens between window starts (blank: half a window).
        Returns:
            {"precision": [...], "recall": [...], "f1": [...], "hashcode": str, "model": str,
            "rescaled": bool, "notes": [...]} or {"error": str} ({"error": str, "retry_after_s": int}
            when the server is too busy: the message names the expected wait).
        """
        try:
            request = self._request(predictions, references, model, num_layers, idf, rescale, lang,
                                    long_texts, window_stride)
            if isinstance(request, dict):
                return request
            return self._result(request, self._submit(request).result())
        except Exception as error:  # never let a request take the server down
            return compute_error(error)

    @functools.wraps(compute)
    async def compute_async(self, *args: Any, **kwargs: Any) -> dict:
        # The endpoint's form of `compute` (same signature and docs): checks and model loading in a
        # worker thread, then waiting in the merged-request queue without holding a thread.
        try:
            request = await asyncio.to_thread(self._request, *args, **kwargs)
            if isinstance(request, dict):
                return request
            return self._result(request, await asyncio.wrap_future(self._submit(request)))
        except Exception as error:  # never let a request take the server down
            return compute_error(error)

    def _request(self, predictions: str, references: str, model: str = "", num_layers: str = "",
                 idf: bool = False, rescale: bool = False, lang: str = "", long_texts: str = "truncate",
                 window_stride: str = "") -> ApiRequest | dict:
        """A checked request with its scorer, or its answer when it has no predictions."""
        cands, groups = api_texts(self.config, predictions, references)
        scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, long_texts, window_stride)
        request = ApiRequest(scorer, cands, groups, notes)
        return request if cands else self._result(request, ([], [], []))

    def _submit(self, request: ApiRequest) -> Any:
        """The future of the request's scores from the merging queue (QueueFull at once when too busy)."""
        return self.service.requests.submit(request.scorer, request.predictions, request.groups, notes=request.notes)

    @staticmethod
    def _result(request: ApiRequest, scores: Any) -> dict:
        p, r, f = scores
        scorer = request.scorer
        return {
            "precision": [float(x) for x in p], "recall": [float(x) for x in r], "f1": [float(x) for x in f],
            "hashcode": scorer.hash, "model": scorer.model_type, "rescaled": bool(scorer.rescale_with_baseline),
            "notes": [COMPUTE_SPELLING.places(note) for note in request.notes],
        }


def compute_error(error: Exception) -> dict:
    """The API's answer to a failed request: the message; with the wait to try again after when busy."""
    if isinstance(error, QueueFull):
        return {"error": str(error), "retry_after_s": error.retry_after_s}
    if isinstance(error, UserError):
        return {"error": str(error)}
    return {"error": f"{type(error).__name__}: {shortened(str(error))}"}
