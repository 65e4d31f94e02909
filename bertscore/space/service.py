"""The Space's scorers: settings checked and resolved to a scorer of the shared pool, and the queue
that merges waiting API requests.

Requests keep their notes apart: each passes its own list to the scorer (no global warning
state), so concurrent requests never see each other's notes.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from ..inputs import InputError
from ..models.families import count_layers
from ..models.tables import MODEL_TO_LAYERS
from ..notes import Spelling
from ..pool import ScorerPool
from ..scoring.baseline_tables import packaged_languages
from ..sources import hub_kwargs, load_config, resolve_source
from .config import AppConfig
from .messages import PAIR_SPELLING, UserError, load_failure
from .serving import RequestQueue
from .user_input import parse_layer

logger = logging.getLogger(__name__)


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
               long_texts: str = "truncate", window_stride: Any = None,
               spelling: Spelling = PAIR_SPELLING) -> tuple[Any, list[str]]:
        """A scorer for these settings and notes for the page; UserError on bad settings, naming them
        as the door does (`spelling`: the page's labels, or /compute's parameters)."""
        notes: list[str] = []
        model = (model or "").strip() or self.config.default_model
        if model not in self.config.models:
            raise UserError(f"model {model!r} is not in this app's allow-list: {', '.join(self.config.models)}")
        layers = parse_layer(num_layers, spelling.name("num_layers"))
        stride = parse_layer(window_stride, spelling.name("window_stride"), "half a window")
        if layers is not None:
            self._check_layer(model, layers, spelling)
        lang = (lang or "").strip().lower() or None
        languages = packaged_languages(model)
        if rescale and not languages:
            notes.append(f"no packaged rescale baseline for {model}: raw scores only")
            rescale = False
        if rescale:
            if lang is None:
                lang = languages[0] if len(languages) == 1 else ("en" if "en" in languages else languages[0])
            elif lang not in languages:
                raise UserError(f"{spelling.named('lang', lang)}: {model} has no packaged rescale baseline in that "
                                f"language; it has {', '.join(languages)} (blank: {'en' if 'en' in languages else languages[0]})")
            notes.append(f"rescaled with the packaged {lang} baseline")
        try:
            scorer = self.pool.get(
                model_type=model, num_layers=layers, device=self.config.device, idf=bool(idf),
                rescale_with_baseline=bool(rescale), lang=lang if rescale else None,
                long_texts=(long_texts or "").strip() or "truncate", window_stride=stride,
            )
        except InputError as error:  # a setting or a baseline file (WindowSettingError is one): as it says
            raise UserError(str(error)) from None
        except Exception as error:  # loading: hub unreachable, unknown architecture...
            logger.warning("could not load model %r: %s", model, error)
            offline = bool(hub_kwargs(resolve_source(model)[0]))
            fallback = (f"{self.config.default_model} (this server's default)" if model != self.config.default_model
                        else "another model of the list")
            raise UserError(load_failure(model, error, offline, fallback)) from error
        return scorer, notes

    def _check_layer(self, model: str, layer: int, spelling: Spelling) -> None:
        """A layer past the model's last: a message in the door's terms before anything loads (when
        the model's config can be read here; otherwise loading says what is wrong)."""
        total = _layer_count(model)
        if total is not None and layer > total:
            default = MODEL_TO_LAYERS.get(model, total)
            raise UserError(f"{spelling.named('num_layers', layer)} is out of range: {model} has layers 0 to {total} "
                            f"(blank: its default, {default})")

    def warm_up(self, pairs: int = 256) -> float:
        """Load the default model and measure its speed (pairs/s) on `pairs` made-up pairs of 24 words,
        so that the first requests neither wait for loading nor are admitted on a guessed speed."""
        scorer, _ = self.scorer(self.config.default_model, "", False, False, "")
        words = "the of and to in is was for on that with as by at from his her an be this which it not are".split()
        texts = [f"sample {i}: " + " ".join(words[(7 * i + 3 * j) % len(words)] for j in range(24))
                 for i in range(2 * pairs)]
        self.requests.score(scorer, texts[:pairs], texts[pairs:], notes=[])
        return self.requests.pairs_per_s(scorer.model_type)


_LAYER_COUNTS: dict[tuple[str, str | None], int] = {}


def _layer_count(model: str) -> int | None:
    """The number of layers of `model` from its config (remembered per source and revision), or None
    when its config cannot be read here (then loading the model says why)."""
    source = resolve_source(model)
    if source not in _LAYER_COUNTS:
        try:
            _LAYER_COUNTS[source] = count_layers(load_config(source[0]))
        except Exception:  # noqa: BLE001 - unreadable here: loading the model will say why
            return None
    return _LAYER_COUNTS[source]
