"""Reuse of loaded encoders and embedding caches across calls with changing settings.

The evaluate module and the app call `ScorerPool.get(**settings)` on every compute: the
encoder is loaded once per (model, layers, device, dtype), its embedding cache is shared by
every scorer on it, and a scorer is rebuilt whenever any setting that can change the numbers
changes (idf included, so idf weights are never stale).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Hashable

from .embed import DEFAULT_CACHE_BYTES, EmbeddingCache, resolve_device, resolve_dtype
from .models import default_model_for_lang, load_model
from .scorer import BERTScorer


def _freeze(value: Any) -> Hashable:
    """A hashable stand-in for a setting (mappings and text lists by content)."""
    if isinstance(value, Mapping):
        digest = hashlib.sha256(repr(sorted((int(k), float(v)) for k, v in value.items())).encode())
        default = getattr(value, "default_factory", None)
        return ("mapping", digest.hexdigest(), default() if default else None)
    if isinstance(value, (list, tuple)):
        return ("texts", hashlib.sha256("\0".join(map(str, value)).encode()).hexdigest())
    return value


class ScorerPool:
    """Keeps up to `max_models` encoders (LRU) and the scorers built on them."""

    def __init__(self, max_models: int = 1, cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.max_models = max_models
        self.cache_bytes = cache_bytes
        self._models: OrderedDict[Hashable, tuple[Any, EmbeddingCache]] = OrderedDict()
        self._scorers: dict[Hashable, BERTScorer] = {}
        self.loads = 0

    def get(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        lang: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        **settings: Any,
    ) -> BERTScorer:
        """A scorer for these settings (BERTScorer's keywords), reusing what is loaded."""
        if model_type is None:
            if lang is None:
                raise ValueError("pass model_type=... or lang=...")
            model_type = default_model_for_lang(lang)
        resolved_device = resolve_device(device)
        resolved_dtype = resolve_dtype(dtype)
        model_key = (model_type, num_layers, bool(all_layers), str(resolved_device), resolved_dtype)
        scorer_key = model_key + (lang,) + tuple(sorted((k, _freeze(v)) for k, v in settings.items()))
        scorer = self._scorers.get(scorer_key)
        if scorer is not None:
            self._models.move_to_end(model_key)
            return scorer
        if model_key not in self._models:
            self._models[model_key] = (load_model(model_type, num_layers, all_layers), EmbeddingCache(self.cache_bytes))
            self.loads += 1
            while len(self._models) > self.max_models:
                evicted, _ = self._models.popitem(last=False)
                self._scorers = {k: v for k, v in self._scorers.items() if k[: len(evicted)] != evicted}
        self._models.move_to_end(model_key)
        loaded, cache = self._models[model_key]
        scorer = BERTScorer(
            model_type=model_type, num_layers=num_layers, all_layers=all_layers, lang=lang,
            device=resolved_device, dtype=resolved_dtype, loaded_model=loaded, cache=cache, **settings,
        )
        self._scorers[scorer_key] = scorer
        return scorer
