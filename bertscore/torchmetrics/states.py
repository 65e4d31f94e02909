"""What `bertscore.torchmetrics.BERTScore` keeps between `update()` and `compute()`, as plain tensors.

Pure helpers (no torchmetrics, no model): a batch's inputs checked as `score()` checks them,
texts as UTF-8 bytes (they gather across DDP ranks like any tensor), the examples' dataset
indices (each counted once when a sampler repeats examples), a digest per (candidate, references)
pair (to notice a repeat across ranks when no indices are given), and the running document
frequencies that give `forward()` idf over the references seen so far; and how notes name a pair
scored at `compute()` (its dataset index, else its place among its rank's pairs).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from ..digests import text_digest
from ..inputs import InputError, check_text, normalize_batch, normalize_group
from ..notes import Place, Spelling
from ..scoring.idf import TokenWeights

NO_INDEX = -1  # the index state of a pair given without `indexes`


def batch_inputs(preds: Any, target: Any) -> tuple[list[str], list[list[str]]]:
    """Candidates and reference groups of one `update()`, checked as `score()` checks them.

    A single candidate (str) takes a reference or a list of references; a list of candidates takes
    one reference, or one list of references, per candidate. Two empty lists are an empty batch.
    """
    if isinstance(preds, str):
        return [check_text(preds, "preds")], [normalize_group(target, "target")]
    return normalize_batch(preds, target, "preds", "target")


def batch_indexes(indexes: Any, count: int) -> torch.Tensor:
    """The dataset index of each of a batch's `count` pairs as a long tensor [count] (NO_INDEX when None).

    `indexes`: None, an int (one pair), or a sequence / 1-D tensor of whole numbers >= 0."""
    if indexes is None:
        return torch.full((count,), NO_INDEX, dtype=torch.long)
    if isinstance(indexes, int) and not isinstance(indexes, bool):
        indexes = [indexes]
    wrong = "indexes must be whole numbers, one per candidate (a list or a 1-D integer tensor), got"
    try:
        values = torch.as_tensor(indexes) if not isinstance(indexes, torch.Tensor) else indexes.detach()
    except (TypeError, ValueError, RuntimeError):  # strings, None, ragged lists: no tensor at all
        raise InputError(f"{wrong} {_shown(indexes)}") from None
    if values.dim() == 0:
        values = values.reshape(1)
    if values.dim() != 1 or values.dtype.is_floating_point or values.dtype.is_complex or values.dtype == torch.bool:
        raise InputError(f"{wrong} {values.dtype} of shape {list(values.shape)}")
    if values.numel() != count:
        raise InputError(f"got {count} preds but {values.numel()} indexes: pass one dataset index per candidate")
    if bool((values < 0).any()):
        raise InputError(f"indexes must be >= 0 (the examples' positions in the dataset), got {values.min().item()}")
    return values.to(device="cpu", dtype=torch.long)


def _shown(value: Any) -> str:
    """`value` as an error message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_indexing(indexed_before: bool | None, indexes: Any) -> bool:
    """Whether this update() gives indexes, refused when earlier updates since reset() did the other."""
    indexed = indexes is not None
    if indexed_before is not None and indexed != indexed_before:
        earlier, now = ("with", "without") if indexed_before else ("without", "with")
        raise InputError(f"indexes: earlier update() calls since reset() came {earlier} indexes and this one "
                         f"{now}: pass them at every call (or at none); this call added nothing")
    return indexed


def pair_labels(indexes: torch.Tensor, ranks: torch.Tensor, several_ranks: bool) -> list[str]:
    """How a note names each pair scored at compute(): `example <index>` (its dataset index), else
    `pair <k>` (the k-th pair given to update() since reset(), from 0), with its rank under DDP."""
    labels, given = [], Counter[int]()
    for index, rank in zip(indexes.tolist(), ranks.tolist()):
        if index != NO_INDEX:
            labels.append(f"example {index}")
            continue
        labels.append(f"pair {given[rank]}" + (f" on rank {rank}" if several_ranks else ""))
        given[rank] += 1
    return labels


def named_by_pairs(spelling: Spelling, labels: list[str]) -> Spelling:
    """`spelling` with each text a note names called by its pair's label (`pair_labels`):
    `preds of example 6`, `target of pair 3`, `target[1] of example 6` (its second reference)."""

    def place(where: Place) -> str:
        side = (spelling.candidates if where.side == "candidates" else spelling.references if where.reference is None
                else f"{spelling.references}[{where.reference}]")
        return f"{side} of {labels[where.row]}"

    return dataclasses.replace(spelling, place=place)


def pair_digests(candidates: Sequence[str], groups: Sequence[Sequence[str]]) -> torch.Tensor:
    """A 60-bit digest [N] (long) of each (candidate, references) pair: equal pairs, equal digests."""
    return torch.tensor([int(text_digest([c, *g])[:15], 16) for c, g in zip(candidates, groups)], dtype=torch.long)


def first_of_each_index(indexes: torch.Tensor) -> torch.Tensor:
    """Positions [U] of the first occurrence of each distinct index, in ascending index order."""
    distinct, inverse = torch.unique(indexes, return_inverse=True)
    positions = torch.arange(indexes.numel(), device=indexes.device)
    first = torch.full((distinct.numel(),), indexes.numel(), dtype=torch.long, device=indexes.device)
    return first.scatter_reduce(0, inverse, positions, reduce="amin")


def repeated_across_ranks(digests: torch.Tensor, ranks: torch.Tensor) -> int:
    """How many distinct pairs were given on more than one rank."""
    seen: dict[int, set[int]] = {}
    for digest, rank in zip(digests.tolist(), ranks.tolist()):
        seen.setdefault(digest, set()).add(rank)
    return sum(len(where) > 1 for where in seen.values())


def kept_pairs(indexes: torch.Tensor, digests: torch.Tensor, ranks: torch.Tensor) -> torch.Tensor | None:
    """Positions of the pairs to score: the first of each dataset index, in index order; None (all of
    them) when no indices were given, after a warning when a pair came on more than one rank."""
    missing = indexes == NO_INDEX
    if bool(missing.all()):
        repeats = repeated_across_ranks(digests, ranks)
        if repeats:
            warnings.warn(
                f"{repeats} (candidate, references) pair(s) came on more than one rank, so they count more than "
                "once in these scores: a DistributedSampler (Lightning's default) repeats examples so that every "
                "rank gets as many. Pass each example's dataset index, update(preds, target, indexes=...): "
                "each index then counts once across the ranks", stacklevel=5)
        return None
    if bool(missing.any()):
        raise InputError("indexes were given at some update() calls and not at others: pass them at every "
                         "call (or at none)")
    return first_of_each_index(indexes)


def encode_texts(texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the texts' UTF-8 bytes end to end [uint8], each text's byte count [long])."""
    encoded = [text.encode("utf-8") for text in texts]
    joined = b"".join(encoded)
    data = torch.frombuffer(bytearray(joined), dtype=torch.uint8).clone() if joined else torch.zeros(0, dtype=torch.uint8)
    return data, torch.tensor([len(e) for e in encoded], dtype=torch.long)


def decode_texts(data: torch.Tensor, sizes: torch.Tensor) -> list[str]:
    """The texts `encode_texts` gave these tensors for."""
    raw = data.cpu().numpy().tobytes()
    texts, start = [], 0
    for size in sizes.tolist():
        texts.append(raw[start:start + size].decode("utf-8"))
        start += size
    return texts


def split_groups(references: list[str], counts: Iterable[int]) -> list[list[str]]:
    """The flat references cut back into one group per candidate."""
    groups, start = [], 0
    for count in counts:
        groups.append(references[start:start + count])
        start += count
    return groups


class RunningIdf:
    """Document frequencies of the references seen so far (each document counted once), as idf weights."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.documents = 0

    def add(self, documents: Iterable[Sequence[int]]) -> None:
        for ids in documents:
            self.counts.update(set(ids))
            self.documents += 1

    def clear(self) -> None:
        self.counts.clear()
        self.documents = 0

    def weights(self, vocab_size: int, zero_weight_ids: Iterable[int]) -> TokenWeights:
        return TokenWeights.from_counts(self.counts, self.documents, vocab_size, zero_weight_ids)
