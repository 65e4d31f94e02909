"""The Space's `/compute` endpoint: a request checked, scored in the queue that merges same-option
requests, and answered as JSON (an error is an answer too, never a crashed worker).

Returns {"precision": [...], "recall": [...], "f1": [...], "hashcode": str, "model": str,
"rescaled": bool, "notes": [...]} or {"error": message} ({"error": ..., "retry_after_s": n}
when the expected wait exceeds the app's limit).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, NamedTuple

from .messages import COMPUTE_SPELLING, UserError, shortened
from .service import ScoringService
from .serving import QueueFull
from .user_input import api_texts


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
        """BERTScore of predictions against references: the numbers of bertscore.score() and of this page
        for the same texts and settings. The defaults are the page's and score()'s: raw scores (no
        rescaling), the model's default layer, no idf.

        Args:
            predictions: The texts to score: a JSON list of strings, or one plain text.
            references: A JSON list with one reference (a string) or a list of references per
                prediction; for one plain-text prediction, plain text with one reference per line.
            model: A model of this app's list (blank: the app's default model).
            num_layers: The layer whose embeddings are matched, a whole number (blank: the model's
                default layer, as the page's Layer field).
            idf: Weigh tokens by idf computed over this call's references (false: every content
                token weighs 1). Over one distinct reference every reference token weighs 0, so R
                and F1 are 0 (with a note).
            rescale: False (the default, as the page's "Rescale with baseline" box and score()): raw
                scores. True: rescaled with the model's packaged baseline, (raw - b) / (1 - b), so
                an empty text (raw 0) scores below 0; a model without a baseline gives raw scores
                with a note.
            lang: The baseline's language when rescaling (blank: en where the model has it).
            long_texts: "truncate" (the default: texts past the model's limit are cut there, with a
                note) or "window" (whole texts through overlapping windows).
            window_stride: With "window", content tokens between window starts (blank: half a
                window).
        Returns:
            {"precision": [...], "recall": [...], "f1": [...], "hashcode": str, "model": str,
            "rescaled": bool, "notes": [...]}, notes naming texts as predictions[i] and
            references[i][j] (from 0); or {"error": str} ({"error": str, "retry_after_s": int}
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
        missing = [name for name, value in (("predictions", predictions), ("references", references)) if value is None]
        if missing:  # a plain HTTP request that sent fewer than 2 values (completed_values), or a JSON null
            raise UserError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing: {call_form()}")
        input_notes: list[str] = []
        cands, groups = api_texts(self.config, predictions, references, input_notes)
        scorer, notes = self.service.scorer(model, num_layers, idf, rescale, lang, long_texts, window_stride,
                                            spelling=COMPUTE_SPELLING)
        request = ApiRequest(scorer, cands, groups, input_notes + notes)
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


def _parameters() -> list[inspect.Parameter]:
    """/compute's parameters, in the order a request gives their values."""
    return list(inspect.signature(ComputeEndpoint.compute).parameters.values())[1:]


def call_form() -> str:
    """How a request gives /compute's values, named: the required ones, then the optional ones."""
    required = [p.name for p in _parameters() if p.default is inspect.Parameter.empty]
    optional = [p.name for p in _parameters() if p.default is not inspect.Parameter.empty]
    return (f"/compute takes {', '.join(required)} (required), then {', '.join(optional)} (optional, in this "
            f"order; a request may stop after any of them)")


def completed_values(values: list[Any]) -> list[Any]:
    """A request's values in /compute's order, completed as a client that stops early means them: each
    optional parameter it left out at its default, a required one as None (`compute` names it). Plain
    HTTP (`POST /gradio_api/call/compute` with `{"data": [...]}`) sends only the values it has, where
    gradio_client fills in the defaults; more values than parameters is a UserError naming the count."""
    parameters = _parameters()
    if len(values) > len(parameters):
        raise UserError(f"{len(values)} values for {len(parameters)} parameters: {call_form()}")
    return list(values) + [None if p.default is inspect.Parameter.empty else p.default
                           for p in parameters[len(values):]]


def compute_error(error: Exception) -> dict:
    """The API's answer to a failed request: the message; with the wait to try again after when busy."""
    if isinstance(error, QueueFull):
        return {"error": str(error), "retry_after_s": error.retry_after_s}
    if isinstance(error, UserError):
        return {"error": str(error)}
    return {"error": f"{type(error).__name__}: {shortened(str(error))}"}


def parameter_docs(function: Any) -> dict[str, str]:
    """Each parameter's description in `function`'s docstring ("Args:" section, continuation lines
    joined), the "Returns:" section under "return" and the text before "Args:" under "": what the
    API page shows beside each."""
    lines = inspect.getdoc(function).splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Args:") + 1
    docs = {"": " ".join(line.strip() for line in lines[: start - 1] if line.strip())}
    indent = len(lines[start]) - len(lines[start].lstrip())
    name = ""
    for line in lines[start:]:
        if not line.strip() or len(line) - len(line.lstrip()) < indent:
            break
        if len(line) - len(line.lstrip()) == indent:
            name, _, text = line.strip().partition(": ")
            docs[name] = text
        else:
            docs[name] += " " + line.strip()
    returns = next(i for i, line in enumerate(lines) if line.strip() == "Returns:") + 1
    docs["return"] = " ".join(line.strip() for line in lines[returns:] if line.strip())
    return docs
