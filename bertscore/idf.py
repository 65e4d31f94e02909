"""Inverse document frequency token weights (pure: token ids in, weights out).

idf(t) = log((M + 1) / (df(t) + 1)) over M reference documents, where df counts the
documents that contain t; unseen tokens get log(M + 1); the ids in `zero_weight_ids` (the
[CLS]/[SEP]-like tokens, as the official package) weigh 0.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

import torch

logger = logging.getLogger(__name__)


class TokenWeights:
    """A dense token-id -> weight table, looked up per sequence."""

    def __init__(self, table: torch.Tensor, label: str | None = None):
        self.table = table.float()
        self.label = label  # how the hash names this table; None -> "idf-weights:<fingerprint>"

    @classmethod
    def uniform(cls, vocab_size: int, zero_weight_ids: Iterable[int]) -> "TokenWeights":
        """Weight 1 for every token, 0 for the special tokens (idf off)."""
        table = torch.ones(vocab_size, dtype=torch.float32)
        for token_id in zero_weight_ids:
            if 0 <= token_id < vocab_size:
                table[token_id] = 0.0
        return cls(table, "no-idf")

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Sequence[int]],
        vocab_size: int,
        zero_weight_ids: Iterable[int],
        label: str | None = "idf",
    ) -> "TokenWeights":
        """idf weights from tokenised reference documents (each counted once per document).

        `documents` may be a generator, so a corpus can be counted as it streams by.
        """
        total = 0
        counts: Counter[int] = Counter()
        for ids in documents:
            counts.update(set(ids.tolist() if hasattr(ids, "tolist") else ids))
            total += 1
        size = max([vocab_size] + [token_id + 1 for token_id in counts])
        table = torch.full((size,), math.log(total + 1), dtype=torch.float32)
        if counts:
            ids = torch.tensor(list(counts.keys()), dtype=torch.long)
            frequencies = torch.tensor(list(counts.values()), dtype=torch.float64)
            table[ids] = torch.log((total + 1) / (frequencies + 1)).float()
        for token_id in zero_weight_ids:
            if 0 <= token_id < size:
                table[token_id] = 0.0
        return cls(table, label)

    @classmethod
    def from_mapping(cls, mapping: Mapping[int, float], vocab_size: int) -> "TokenWeights":
        """A user's precomputed token-id -> weight mapping, used as given.

        Ids it lacks take its default when it is a `defaultdict`, else 0 (with a warning).
        """
        if isinstance(mapping, defaultdict) and mapping.default_factory is not None:
            default = float(mapping.default_factory())
        else:
            default = 0.0
            logger.warning("idf mapping is not a defaultdict: token ids it lacks weigh 0")
        keys = [int(k) for k in mapping.keys()]
        size = max([vocab_size] + [k + 1 for k in keys])
        table = torch.full((size,), default, dtype=torch.float32)
        if keys:
            table[torch.tensor(keys, dtype=torch.long)] = torch.tensor(
                [float(mapping[k]) for k in mapping.keys()], dtype=torch.float32
            )
        weights = cls(table)
        weights.label = f"idf-dict:{weights.fingerprint()}"
        return weights

    def __call__(self, ids: Sequence[int]) -> torch.Tensor:
        """Weights [L] of one token-id sequence."""
        return self.table[torch.as_tensor(ids, dtype=torch.long)]

    def as_dict(self) -> dict[int, float]:
        """The table as a plain dict (for inspection and hashing)."""
        return {i: float(w) for i, w in enumerate(self.table.tolist())}

    def fingerprint(self) -> str:
        """A short content hash of the table."""
        import hashlib

        return hashlib.sha256(self.table.numpy().tobytes()).hexdigest()[:10]
