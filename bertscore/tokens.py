"""Compact token-id storage: every distinct text's ids in one flat int32 array.

Python lists of ints cost ~36 bytes a token; a corpus of 100k texts would hold hundreds of MB
of them until the end of a call. Here a token costs 4 bytes, so memory stays flat.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

TOKENIZE_BATCH = 4096


class TokenStore:
    """Token ids of distinct texts, looked up by text."""

    def __init__(self, texts: Sequence[str], tokenize: Callable[[Sequence[str]], list[list[int]]]):
        self.index = {text: i for i, text in enumerate(texts)}
        pieces: list[np.ndarray] = []
        lengths = np.zeros(len(texts), dtype=np.int64)
        for start in range(0, len(texts), TOKENIZE_BATCH):
            batch = tokenize(texts[start : start + TOKENIZE_BATCH])
            for offset, ids in enumerate(batch):
                lengths[start + offset] = len(ids)
            pieces.append(np.fromiter((t for ids in batch for t in ids), dtype=np.int32))
        self.flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)])

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, text: str) -> bool:
        return text in self.index

    def length(self, text: str) -> int:
        """Number of tokens of `text`, special tokens included."""
        i = self.index[text]
        return int(self.offsets[i + 1] - self.offsets[i])

    def ids(self, text: str) -> np.ndarray:
        """The token ids of `text` (a view into the store: do not modify)."""
        i = self.index[text]
        return self.flat[self.offsets[i] : self.offsets[i + 1]]

    def __getitem__(self, text: str) -> np.ndarray:
        return self.ids(text)

    def weight_totals(self, table: np.ndarray) -> np.ndarray:
        """Sum of `table[id]` over each text's ids, in store order (vectorised; exact 0 stays 0)."""
        values = np.asarray(table, dtype=np.float64)[self.flat]
        cumulative = np.concatenate([[0.0], np.cumsum(values)])
        return cumulative[self.offsets[1:]] - cumulative[self.offsets[:-1]]
