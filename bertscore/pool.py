"""Reuse of loaded encoders and embedding caches across calls with changing settings.

The evaluate module and the app call `ScorerPool.get(**settings)` on every compute: the
encoder is loaded once per (model, weights, layers, device, dtype), its embedding cache is
shared by every scorer on it, and a scorer is rebuilt whenever any setting that can change the
numbers changes (idf included, so idf weights are never stale). Local files are keyed by their
content: a model folder or baseline file rewritten in place gives a fresh scorer and hash.
Thread-safe: concurrent `compute()` calls may share a pool.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Hashable

from .digests import text_digest
from .models.devices import resolve_device, resolve_placement
from .models.shared import LRU, SHARED_MODELS, encoder_key, free_dropped_encoders
from .scorer import BERTScorer
from .scoring import baseline_tables
from .scoring.embed import DEFAULT_CACHE_BYTES, EmbeddingCache
from .scoring.settings import resolve_model_type


def _freeze(value: Any) -> Hashable:
    """A hashable stand-in for a setting (mappings and text lists by content)."""
    if isinstance(value, Mapping):
        digest = text_digest([repr(sorted((int(k), float(v)) for k, v in value.items()))])
        default = getattr(value, "default_factory", None)
        return ("mapping", digest, default() if default else None)
    if getattr(value, "ndim", 0) == 1 and hasattr(value, "tolist"):  # an array or Series of idf texts
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return ("texts", text_digest(repr(item) for item in value))
    if hasattr(value, "fingerprint"):  # TokenWeights
        return ("weights", value.fingerprint())
    try:
        hash(value)
    except TypeError:  # not a setting BERTScorer takes (e.g. a set): let it say so, with its own error
        return ("unhashable", id(value))
    return value


class ScorerPool:
    """Keeps up to `max_models` encoders (LRU) and the scorers built on them."""

    def __init__(
        self, max_models: int = 1, cache_bytes: int = DEFAULT_CACHE_BYTES, cache_device: str | None = None
    ):
        self.cache_bytes = cache_bytes
        self.cache_device = cache_device
        self._models: LRU[Hashable, tuple[Any, EmbeddingCache]] = LRU(max_models)
        self._scorers: dict[Hashable, BERTScorer] = {}
        self._lock = threading.RLock()
        self.loads = 0

    @property
    def max_models(self) -> int:
        """How many encoders this pool holds at most (settable)."""
        return self._models.size

    @max_models.setter
    def max_models(self, value: int) -> None:
        self._models.size = value

    def get(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        lang: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        cache_bytes: int | None = None,
        cache_device: str | None = None,
        **settings: Any,
    ) -> BERTScorer:
        """A scorer for these settings (BERTScorer's keywords), reusing what is loaded.

        `cache_bytes` / `cache_device` resize or move the model's embedding cache (the pool's
        defaults when None); they change no number, so they never reload the model.
        """
        lang = lang.lower() if isinstance(lang, str) else lang
        model_type = resolve_model_type(model_type, lang)
        resolved_device, resolved_dtype = resolve_placement(device, dtype)
        model_key = encoder_key(model_type, num_layers, all_layers, resolved_device, resolved_dtype)
        baseline_path = settings.get("baseline_path")
        baseline_key = baseline_tables.file_fingerprint(baseline_path) if baseline_path and Path(baseline_path).is_file() else None
        scorer_key = model_key + (lang, baseline_key) + tuple(sorted((k, _freeze(v)) for k, v in settings.items()))
        wanted_cache = (self.cache_bytes if cache_bytes is None else int(cache_bytes),
                        self.cache_device if cache_device is None else cache_device)
        with self._lock:
            entry = self._models.get(model_key)
            if entry is not None and (entry[1].max_bytes, _device_name(entry[1].device)) != (
                wanted_cache[0], _device_name(wanted_cache[1])
            ):
                entry = (entry[0], EmbeddingCache(*wanted_cache))  # scorers on the old cache are dropped
                self._models.put(model_key, entry)
                self._drop_scorers(model_key)
            scorer = self._scorers.get(scorer_key)
            if scorer is not None:
                return scorer
            if entry is None:
                # The encoder a scorer elsewhere in the process holds for these settings, if any; held
                # (and bounded) here, not kept by SHARED_MODELS after this pool lets it go.
                loaded = SHARED_MODELS.get(model_type, num_layers, all_layers, resolved_device, resolved_dtype, keep=False)
                entry = (loaded, EmbeddingCache(*wanted_cache))
                self.loads += 1
                for evicted, _ in self._models.put(model_key, entry):
                    self._drop_scorers(evicted)
            loaded, cache = entry
            scorer = BERTScorer(
                model_type=model_type, num_layers=num_layers, all_layers=all_layers, lang=lang,
                device=resolved_device, dtype=resolved_dtype, loaded_model=loaded, cache=cache, **settings,
            )
            self._scorers[scorer_key] = scorer
            return scorer

    def _drop_scorers(self, model_key: Hashable) -> None:
        self._scorers = {k: v for k, v in self._scorers.items() if k[: len(model_key)] != model_key}

    @property
    def models(self) -> list[Hashable]:
        """Keys of the encoders held now, least recently used first."""
        with self._lock:
            return self._models.keys()

    def release(self) -> None:
        """Drop every encoder, scorer and cached embedding (GPU memory included)."""
        with self._lock:
            for _, cache in self._models.values():
                cache.clear()
            self._models.clear()
            self._scorers.clear()
        free_dropped_encoders()


def _device_name(device: Any) -> str | None:
    """The resolved device's name ("CPU" is "cpu"); an unknown device is the caller's InputError."""
    return None if device is None else str(resolve_device(device))
