"""The Space's scorers: settings checked and resolved to a scorer of the shared pool, and the queue
that merges waiting API requests.

Requests keep their notes apart: each passes its own list to the scorer (no global warning
state), so concurrent requests never see each other's notes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..baseline_tables import packaged_languages
from ..inputs import InputError
from ..models import EMBEDDED_MODEL_NAME
from ..pool import ScorerPool
from ..serving import RequestQueue
from .config import AppConfig
from .messages import UserError, shortened
from .user_input import parse_layer


class ScorerSettings(NamedTuple):
    """A request's scorer settings as its controls or parameters give them (`ScoringService.scorer` checks them)."""

    model: str
    num_layers: Any
    idf: bool
    rescale: bool
    lang: str | None
    long_texts: str = "truncate"
    window_stride: Any = None


class ScoringService:
    """Settings validation + a thread-safe ScorerPool shared by every request, and the queue
    that merges waiting API requests (`requests`)."""

    def __init__(self, config: AppConfig):
        self.config = config
        self.pool = ScorerPool(max_models=config.max_models)
        self.requests = RequestQueue(config.max_wait_s, config.pairs_per_s, config.max_batch_pairs, config.concurrency)

    def scorer(self, model: str, num_layers: Any, idf: bool, rescale: bool, lang: str | None,
               long_texts: str = "truncate", window_stride: Any = None) -> tuple[Any, list[str]]:
        """A scorer for these settings and notes for the page; UserError on bad settings."""
        notes: list[str] = []
        model = (model or "").strip() or self.config.default_model
        if model not in self.config.models:
            raise UserError(f"model {model!r} is not in this app's allow-list: {', '.join(self.config.models)}")
        layers = parse_layer(num_layers)
        stride = parse_layer(window_stride, "window stride")
        lang = (lang or "").strip().lower() or None
        languages = packaged_languages(model)
        if rescale and not languages:
            notes.append(f"no packaged rescale baseline for {model}: raw scores only")
            rescale = False
        if rescale:
            if lang is None:
                lang = languages[0] if len(languages) == 1 else ("en" if "en" in languages else languages[0])
            elif lang not in languages:
                raise UserError(f"no rescale baseline for {model} in language {lang!r}; available: {', '.join(languages)}")
            notes.append(f"rescaled with the packaged {lang} baseline")
        try:
            scorer = self.pool.get(
                model_type=model, num_layers=layers, device=self.config.device, idf=bool(idf),
                rescale_with_baseline=bool(rescale), lang=lang if rescale else None,
                long_texts=(long_texts or "").strip() or "truncate", window_stride=stride,
            )
        except InputError as error:  # a setting or a baseline file (WindowSettingError is one): as it says
            raise UserError(str(error)) from None
        except Exception as error:  # loading: hub unreachable, bad layer, unknown architecture...
            raise UserError(
                f"could not load model {model!r}"
                + (f" at layer {layers}" if layers is not None else "")
                + f": {type(error).__name__}: {shortened(str(error))}"
                + ("" if model == EMBEDDED_MODEL_NAME else f". Models other than the embedded {EMBEDDED_MODEL_NAME} "
                   "need the Hugging Face Hub (or a local cache) to be reachable from this server.")
            ) from error
        return scorer, notes

    def warm_up(self, pairs: int = 256) -> float:
        """Load the default model and measure its speed (pairs/s) on `pairs` made-up pairs of 24 words,
        so that the first requests neither wait for loading nor are admitted on a guessed speed."""
        scorer, _ = self.scorer(self.config.default_model, "", False, False, "")
        words = "the of and to in is was for on that with as by at from his her an be this which it not are".split()
        texts = [f"sample {i}: " + " ".join(words[(7 * i + 3 * j) % len(words)] for j in range(24))
                 for i in range(2 * pairs)]
        self.requests.score(scorer, texts[:pairs], texts[pairs:], notes=[])
        return self.requests.pairs_per_s(scorer.model_type)
