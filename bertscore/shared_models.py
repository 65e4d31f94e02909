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
from typing import Hashable

import torch

from .devices import with_index
from .model_tables import MODEL_TO_LAYERS
from .models import LoadedModel, load_model
from .sources import resolve_source

DEFAULT_KEPT_MODELS = 1  # encoders kept after their last scorer is gone (the most recently used)


class SharedModels:
    """Live encoders (weakly, while some scorer holds them) plus the `max_models` last used (strongly)."""

    def __init__(self, max_models: int = DEFAULT_KEPT_MODELS):
        self.max_models = max_models
        self._live: weakref.WeakValueDictionary[Hashable, LoadedModel] = weakref.WeakValueDictionary()
        self._kept: OrderedDict[Hashable, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0

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
        revision = resolve_source(model_type)[1]  # a local folder's content: rewritten weights load again
        key = (model_type, revision, num_layers, bool(all_layers), str(with_index(torch.device(device))), dtype)
        with self._lock:
            model = self._live.get(key)
            if model is None:
                model = load_model(model_type, num_layers, all_layers, device=device, dtype=dtype)
                self.loads += 1
                self._live[key] = model
                if num_layers is None and not all_layers:  # a model without a default layer: its last one,
                    self._live[key[:2] + (model.num_layers,) + key[3:]] = model  # asked for by number too
            if not keep:
                return model
            self._kept[key] = model
            self._kept.move_to_end(key)
            while len(self._kept) > max(0, self.max_models):
                self._kept.popitem(last=False)
        return model

    @property
    def kept(self) -> list[Hashable]:
        """Keys of the encoders kept now, least recently used first."""
        with self._lock:
            return list(self._kept)

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
