"""Compact token-id storage: every distinct text's ids in one flat int32 array.

Python lists of ints cost ~36 bytes a token; a corpus of 100k texts would hold hundreds of MB
of them until the end of a call. Here a token costs 4 bytes, so memory stays flat.

Each text is stored as ``lead + content[:limit] + trail`` (its special ids around its content
ids, the content cut at `limit`, or whole when `limit` is None), and its full content length is
kept beside it: a truncated text still knows how long it was.
"""

from __future__ import annotations

from itertools import chain
from typing import Callable, Sequence

import numpy as np

TOKENIZE_BATCH = 4096


class TokenStore:
    """Token ids of distinct texts, looked up by text."""

    def __init__(
        self,
        texts: Sequence[str],
        content_ids: Callable[[Sequence[str]], list[list[int]]],
        lead: Sequence[int] = (),
        trail: Sequence[int] = (),
        limit: int | None = None,
    ):
        """`content_ids(texts)` gives each text's content ids (no special tokens, no truncation)."""
        self.index = {text: i for i, text in enumerate(texts)}
        self.num_lead, self.num_trail, self.limit = len(lead), len(trail), limit
        pieces: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        content_lengths: list[np.ndarray] = []
        for start in range(0, len(texts), TOKENIZE_BATCH):
            batch = content_ids(texts[start : start + TOKENIZE_BATCH])
            counts = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
            content = np.fromiter(chain.from_iterable(batch), dtype=np.int32, count=int(counts.sum()))
            stored, stored_lengths = _with_specials(content, counts, lead, trail, limit)
            pieces.append(stored)
            lengths.append(stored_lengths)
            content_lengths.append(counts)
        self.flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int32)
        self.content_lengths = np.concatenate(content_lengths) if pieces else np.zeros(0, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(np.concatenate(lengths) if pieces else [])]).astype(np.int64)
        self._lengths = np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, text: str) -> bool:
        return text in self.index

    def length(self, text: str) -> int:
        """Number of stored tokens of `text`, special tokens included."""
        i = self.index[text]
        return int(self.offsets[i + 1] - self.offsets[i])

    def content_length(self, text: str) -> int:
        """Number of content tokens of the whole `text`, before any cut."""
        return int(self.content_lengths[self.index[text]])

    def ids(self, text: str) -> np.ndarray:
        """The stored token ids of `text` (a view into the store: do not modify)."""
        i = self.index[text]
        return self.flat[self.offsets[i] : self.offsets[i + 1]]

    def __getitem__(self, text: str) -> np.ndarray:
        return self.ids(text)

    def head_length(self, text: str, limit: int) -> int:
        """len(head(text, limit)), without building it."""
        return min(self.length(text), self.num_lead + limit + self.num_trail)

    @property
    def lengths(self) -> np.ndarray:
        """`length(text)` of every stored text, in store order (the order of `index`)."""
        return self._lengths

    def head_lengths(self, limit: int) -> dict[str, int]:
        """`head_length(text, limit)` of every stored text at once (vectorised)."""
        cut = np.minimum(self.lengths, self.num_lead + limit + self.num_trail)
        return dict(zip(self.index, cut.tolist()))

    def head(self, text: str, limit: int) -> np.ndarray:
        """``lead + content[:limit] + trail`` of `text`: its ids as a cut at `limit` would store them.

        A view when the text is not longer than that (no copy), else a new array.
        """
        ids = self.ids(text)
        if len(ids) - self.num_lead - self.num_trail <= limit:
            return ids
        return np.concatenate([ids[: self.num_lead + limit], ids[len(ids) - self.num_trail :]])

    def heads(self, texts: Sequence[str], limit: int) -> list[np.ndarray]:
        """`head(text, limit)` of each of `texts`, found together (one vectorised lookup of the
        bounds; a copy only for a text longer than the limit)."""
        rows = np.fromiter(map(self.index.__getitem__, texts), dtype=np.int64, count=len(texts))
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        flat = self.flat
        heads = [flat[start:end] for start, end in zip(starts.tolist(), ends.tolist())]
        for i in np.flatnonzero(ends - starts - self.num_lead - self.num_trail > limit).tolist():
            heads[i] = self.head(texts[i], limit)
        return heads

    def counts_of(self, token: int) -> np.ndarray:
        """How often `token` occurs in each stored text, in store order (vectorised)."""
        where = np.flatnonzero(self.flat == token)
        texts = np.searchsorted(self.offsets, where, side="right") - 1
        return np.bincount(texts, minlength=len(self.index))

    def weight_totals(self, table: np.ndarray) -> np.ndarray:
        """Sum of `table[id]` over each text's ids, in store order (vectorised; exact 0 stays 0)."""
        values = np.asarray(table)[self.flat].astype(np.float64)  # only the stored tokens' entries
        cumulative = np.concatenate([[0.0], np.cumsum(values)])
        return cumulative[self.offsets[1:]] - cumulative[self.offsets[:-1]]


def _with_specials(
    content: np.ndarray, counts: np.ndarray, lead: Sequence[int], trail: Sequence[int], limit: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """`lead + content[:limit] + trail` of each text, vectorised: (flat ids, each text's length).

    `content` is the texts' content ids end to end, `counts[i]` how many are text i's.
    """
    kept = counts if limit is None else np.minimum(counts, limit)
    lengths = len(lead) + kept + len(trail)
    starts = np.cumsum(lengths) - lengths  # where each text begins in the result
    sources = np.cumsum(counts) - counts  # where each text begins in `content`
    within = np.arange(int(kept.sum()), dtype=np.int64) - np.repeat(np.cumsum(kept) - kept, kept)
    flat = np.empty(int(lengths.sum()), dtype=np.int32)
    flat[np.repeat(starts + len(lead), kept) + within] = content[np.repeat(sources, kept) + within]
    for position, token in enumerate(lead):
        flat[starts + position] = token
    for position, token in enumerate(trail):
        flat[starts + len(lead) + kept + position] = token
    return flat, lengths
