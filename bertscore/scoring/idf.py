"""Inverse document frequency token weights (pure: token ids in, weights out).

idf(t) = log((M + 1) / (df(t) + 1)) over M reference documents, where df counts the
documents that contain t; unseen tokens get log(M + 1); the ids in `zero_weight_ids` (the
[CLS]/[SEP]-like tokens, as the official package) weigh 0.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

import numpy as np
import torch

logger = logging.getLogger(__name__)


class TokenWeights:
    """A dense token-id -> weight table, looked up per sequence."""

    def __init__(self, table: torch.Tensor, label: str | None = None, default: float | None = None):
        """`table`: one weight per token id, a tensor or anything `torch.as_tensor` reads as real numbers
        (a NumPy array, a list); its size and values are checked against a model by `check`."""
        try:
            tensor = table if isinstance(table, torch.Tensor) else torch.as_tensor(table)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"token weights must be a table of numbers (one per token id), got {type(table).__name__}") from error
        if tensor.is_complex():
            raise TypeError(f"token weights must be real numbers, got a {tensor.dtype} table")
        self.table = tensor.float()
        self.label = label  # how the hash names this table; None -> "idf-weights:<fingerprint>"
        # The weight of an id past the table (`idf_dict`'s default): log(M + 1) for idf over M
        # documents, as the official get_idf_dict; None when unknown (a table given as is).
        self.default = default

    def check(self, vocab_size: int, what: str = "token weights") -> "TokenWeights":
        """Itself, after checking it fits a vocabulary of `vocab_size` ids: one weight per id, each
        finite and >= 0. A ValueError says which (a shorter table would fail mid-run)."""
        table = self.table
        if table.dim() != 1 or table.numel() != vocab_size:
            size = "x".join(str(n) for n in table.shape) or "a scalar"
            raise ValueError(
                f"{what} have {size} entries, but the tokenizer's vocabulary has {vocab_size} token ids: "
                "pass a 1-D table with one weight per token id (e.g. TokenWeights.from_documents(..., vocab_size="
                f"{vocab_size}, ...)) made for this model's tokenizer"
            )
        bad = ~torch.isfinite(table) | (table < 0)
        if bool(bad.any()):
            ids = bad.nonzero().flatten()
            first = int(ids[0])
            raise ValueError(
                f"{what} must be finite and >= 0: token id {first} has {float(table[first])}"
                + (f" ({ids.numel()} ids in all)" if ids.numel() > 1 else "")
            )
        return self

    @classmethod
    def uniform(cls, vocab_size: int, zero_weight_ids: Iterable[int]) -> "TokenWeights":
        """Weight 1 for every token, 0 for the special tokens (idf off)."""
        table = torch.ones(vocab_size, dtype=torch.float32)
        for token_id in zero_weight_ids:
            if 0 <= token_id < vocab_size:
                table[token_id] = 0.0
        return cls(table, "no-idf", default=1.0)

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Sequence[int]],
        vocab_size: int,
        zero_weight_ids: Iterable[int],
        label: str | None = None,
    ) -> "TokenWeights":
        """idf weights from tokenised reference documents (each counted once per document).

        `documents` may be a generator, so a corpus can be counted as it streams by. `label`:
        None (default) names the table by its content in a hash (`idf-weights:<fingerprint>`);
        "idf" vouches that the documents are every reference of the run being scored, so an
        `idf=True` scorer's own "idf" hash holds (the CLI's idf over its whole input). Any other
        documents under "idf" would give other numbers under the same hash.
        """
        total = 0
        counts: Counter[int] = Counter()
        for ids in documents:
            counts.update(set(ids.tolist() if hasattr(ids, "tolist") else ids))
            total += 1
        return cls.from_counts(counts, total, vocab_size, zero_weight_ids, label)

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[int, int],
        total: int,
        vocab_size: int,
        zero_weight_ids: Iterable[int],
        label: str | None = None,
    ) -> "TokenWeights":
        """idf weights from document frequencies (`counts`: token id -> documents holding it) over
        `total` documents: what `from_documents` counts, kept up to date by a caller that sees the
        documents a batch at a time."""
        size = max([vocab_size] + [token_id + 1 for token_id in counts])
        table = torch.full((size,), math.log(total + 1), dtype=torch.float32)
        if counts:
            ids = torch.tensor(list(counts.keys()), dtype=torch.long)
            frequencies = torch.tensor(list(counts.values()), dtype=torch.float64)
            # A true division (a scalar over a tensor is a reciprocal-multiply in torch, 1 ulp below 1
            # when df = M: a weight of -1e-16, refused by check()), so every weight is >= 0.
            documents_plus_one = torch.full_like(frequencies, total + 1)
            table[ids] = torch.log(documents_plus_one / (frequencies + 1)).float()
        for token_id in zero_weight_ids:
            if 0 <= token_id < size:
                table[token_id] = 0.0
        return cls(table, label, default=math.log(total + 1))

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
        for key, value in mapping.items():  # ids as given: "5" or 5.7 are not token ids, "1.5" not a weight
            if isinstance(key, bool) or not isinstance(key, numbers.Integral):
                raise ValueError(
                    f"idf mapping key {key!r} ({type(key).__name__}) is not a token id: keys are the tokenizer's "
                    "integer ids (as the official get_idf_dict gives them)"
                    + ("; a mapping read from JSON has string keys: convert them with {int(k): w for k, w in ...}"
                       if isinstance(key, str) and key.strip().isdigit() else "")
                )
            if isinstance(value, (str, bytes)):
                raise ValueError(f"idf mapping weight of token id {key} is {value!r} ({type(value).__name__}), not a number")
        keys = [int(k) for k in mapping.keys()]
        outside = [k for k in keys if not 0 <= k < vocab_size]
        if outside:
            raise ValueError(
                f"idf mapping has token id {outside[0]}, outside the tokenizer's vocabulary of {vocab_size} ids "
                "(0..{}): a mapping made for another tokenizer?".format(vocab_size - 1)
            )
        table = torch.full((vocab_size,), default, dtype=torch.float32)
        if keys:
            table[torch.tensor(keys, dtype=torch.long)] = torch.tensor(
                [float(mapping[k]) for k in mapping.keys()], dtype=torch.float32
            )
        weights = cls(table, default=default)
        weights.label = f"idf-dict:{weights.fingerprint()}"
        return weights

    def __call__(self, ids: Sequence[int]) -> torch.Tensor:
        """Weights [L] of one token-id sequence."""
        return self.table[torch.as_tensor(ids, dtype=torch.long)]

    @torch.inference_mode()
    def many(self, sequences: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """Weights of many token-id sequences in one lookup (views into one host tensor).

        In inference mode: a view made outside it records autograd metadata, about 6 us each,
        which for 10,000 texts cost more than tokenizing them."""
        if not sequences:
            return []
        ids = np.concatenate([np.asarray(sequence, dtype=np.int64) for sequence in sequences])
        values = self.table[torch.from_numpy(ids)]
        return list(values.split([len(sequence) for sequence in sequences]))

    def as_dict(self) -> dict[int, float]:
        """The table as a plain dict (for inspection and hashing)."""
        return {i: float(w) for i, w in enumerate(self.table.tolist())}

    def __reduce__(self) -> tuple:
        """Pickled as the table's bytes, label and default: the same bytes for the same weights in any
        process (a datasets fingerprint of a map function holding them is stable)."""
        return _weights_from_bytes, (self.table.contiguous().numpy().tobytes(), self.label, self.default)

    def fingerprint(self) -> str:
        """A short content hash of the table."""
        import hashlib

        return hashlib.sha256(self.table.numpy().tobytes()).hexdigest()[:10]


def _weights_from_bytes(data: bytes, label: str | None, default: float | None) -> TokenWeights:
    """A `TokenWeights` unpickled (`TokenWeights.__reduce__`)."""
    return TokenWeights(torch.frombuffer(bytearray(data), dtype=torch.float32), label, default)
