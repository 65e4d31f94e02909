"""Embeddings one call needs again later: kept from one chunk to the next, dropped after their last use.

A call is scored chunk by chunk so that memory follows the chunk budgets, not the corpus
(`plan.chunks`). A text that returns in a later chunk (an all-pairs grid flattened into one
call, a reference shared by many candidates) would be embedded again there whenever the
scorer's cache is off, as in module-level `score()`: a 256 x 256 grid would embed each
candidate once per chunk. `CallReuse` counts each text's uses over the whole call and keeps an
embedding only while uses remain, within `max_bytes`: a text is embedded once per call, and a
call whose texts do not return holds nothing extra.

Why not a per-call `EmbeddingCache` instead: an LRU cache does not know which texts return, so it
holds texts that never do (up to its budget) and, on a grid larger than its budget, evicts the
ones that do; and the scorer's `Embedder` (and its cache) is shared by every thread scoring
through the scorer, while this object belongs to one call.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

import torch

CALL_REUSE_BYTES = 256 << 20  # embeddings held for later chunks of one call (a chunk's own budget)


class CallReuse:
    """Which texts a call still needs, and the embeddings kept for them."""

    def __init__(self, cand_keys: Sequence[str], ref_keys: Sequence[str], max_bytes: int = CALL_REUSE_BYTES):
        self.uses = Counter(_keys_of(cand_keys, ref_keys, range(len(cand_keys))))
        self.max_bytes = max_bytes
        self.kept: dict[str, torch.Tensor] = {}
        self.kept_bytes = 0

    def held(self, keys: Iterable[str]) -> dict[str, torch.Tensor]:
        """The kept embeddings among `keys`."""
        if not self.kept:
            return {}
        return {k: self.kept[k] for k in keys if k in self.kept}

    def done(self, cand_keys: Sequence[str], ref_keys: Sequence[str], pairs: Iterable[int],
             embeddings: Mapping[str, torch.Tensor] | None = None) -> None:
        """`pairs` are scored: their uses end. A text of `embeddings` with uses left is kept
        (while the budget allows); a kept text with none left is dropped."""
        used = Counter(_keys_of(cand_keys, ref_keys, pairs))
        self.uses.subtract(used)
        for key in used:
            if self.uses[key] > 0:
                if embeddings is not None and key not in self.kept and key in embeddings:
                    self._keep(key, embeddings[key])
            else:
                del self.uses[key]
                dropped = self.kept.pop(key, None)
                if dropped is not None:
                    self.kept_bytes -= _size(dropped)

    def _keep(self, key: str, embedding: torch.Tensor) -> None:
        size = _size(embedding)
        if self.kept_bytes + size <= self.max_bytes:
            # A compact copy: the encoder's output is a view that would pin its whole batch.
            self.kept[key] = embedding.clone() if embedding._base is not None else embedding
            self.kept_bytes += size


def _keys_of(cand_keys: Sequence[str], ref_keys: Sequence[str], pairs: Iterable[int]) -> Iterable[str]:
    """Each text of each pair once (a pair of one text with itself uses it once)."""
    for i in pairs:
        yield cand_keys[i]
        if ref_keys[i] != cand_keys[i]:
            yield ref_keys[i]


def _size(tensor: torch.Tensor) -> int:
    return tensor.numel() * tensor.element_size()
