"""One loaded encoder per (model, weights, layer, device, dtype) in the process, whoever asks.

`BERTScorer(...)` (and so `score()`) asks here instead of loading: a scorer built while another
on the same settings is alive shares its encoder, and the `max_models` most recently used
encoders are kept after their scorers are gone, so a loop that builds a scorer or calls `score()`
once per pair loads the model once. Shared encoders are read-only (nothing moves or casts a
loaded model), so the numbers never depend on whether one was reused.

`release_models()` drops what is kept here; an encoder a live scorer still holds stays with that
scorer. Local model folders are keyed by their content (`sources.resolve_source`), so weights
rewritten in place load again.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

import torch

from ..sources import resolve_source
from .devices import with_index
from .loading import LoadedModel, load_model
from .tables import MODEL_TO_LAYERS

DEFAULT_KEPT_MODELS = 1  # encoders kept after their last scorer is gone (the most recently used)
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `size` values, the least recently used dropped first: the one bound on kept encoders
    (here and in `ScorerPool`). Not locked: its owner holds its own lock around every call."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value under `key` (now the most recently used), or None."""
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> list[tuple[K, V]]:
        """Keep `value` as the most recently used; returns what this dropped to stay within `size`."""
        self._items[key] = value
        self._items.move_to_end(key)
        dropped = []
        while len(self._items) > max(0, self.size):
            dropped.append(self._items.popitem(last=False))
        return dropped

    def keys(self) -> list[K]:
        """Least recently used first."""
        return list(self._items)

    def values(self) -> list[V]:
        return list(self._items.values())

    def clear(self) -> None:
        self._items.clear()


def encoder_key(model_type: str, num_layers: int | None, all_layers: bool, device: torch.device | str,
                dtype: str) -> tuple:
    """What tells two loaded encoders apart: the model and its weights (a local folder by its content:
    rewritten weights load again), the layer, all layers or one, the device and the dtype."""
    revision = resolve_source(model_type)[1]
    return (model_type, revision, num_layers, bool(all_layers), str(with_index(torch.device(device))), dtype)


class SharedModels:
    """Live encoders (weakly, while some scorer holds them) plus the `max_models` last used (strongly)."""

    def __init__(self, max_models: int = DEFAULT_KEPT_MODELS):
        self._live: weakref.WeakValueDictionary[Hashable, LoadedModel] = weakref.WeakValueDictionary()
        self._kept: LRU[Hashable, LoadedModel] = LRU(max_models)
        self._lock = threading.Lock()
        self.loads = 0

    @property
    def max_models(self) -> int:
        """How many encoders stay loaded after their last scorer is gone (settable)."""
        return self._kept.size

    @max_models.setter
    def max_models(self, value: int) -> None:
        self._kept.size = value

    def get(
        self, model_type: str, num_layers: int | None, all_layers: bool, device: torch.device, dtype: str,
        keep: bool = True,
    ) -> LoadedModel:
        """The encoder for these settings: a live or kept one, else loaded now (and kept).

        `keep=False` (a caller that holds and bounds its encoders itself, like `ScorerPool`) shares
        the encoder while that caller holds it, without keeping it here after.
        """
        if num_layers is None:  # the default layer as the table says now (it may be edited between calls)
            num_layers = MODEL_TO_LAYERS.get(model_type)
        key = encoder_key(model_type, num_layers, all_layers, device, dtype)
        with self._lock:
            model = self._live.get(key)
            if model is None:
                model = load_model(model_type, num_layers, all_layers, device=device, dtype=dtype)
                self.loads += 1
                self._live[key] = model
                if num_layers is None and not all_layers:  # a model without a default layer: its last one,
                    self._live[key[:2] + (model.num_layers,) + key[3:]] = model  # asked for by number too
            if keep:
                self._kept.put(key, model)
        return model

    @property
    def kept(self) -> list[Hashable]:
        """Keys of the encoders kept now, least recently used first."""
        with self._lock:
            return self._kept.keys()

    def release(self) -> None:
        """Drop the kept encoders (GPU memory included, once no scorer holds them)."""
        with self._lock:
            self._kept.clear()
        free_dropped_encoders()


def free_dropped_encoders() -> None:
    """Return the memory of encoders just let go now: a loaded transformers model holds reference
    cycles, which only a collection frees (not some later gc), and CUDA keeps freed blocks cached."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


SHARED_MODELS = SharedModels()


def release_models() -> None:
    """Free the encoders this process keeps for later `score()` calls and new scorers.

    Memory returns to what it was before they loaded, once no `BERTScorer` you hold uses them.
    """
    SHARED_MODELS.release()
