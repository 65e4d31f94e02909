"""Greedy matching: the pure tensor math of BERTScore (no model code).

Embeddings are L2-normalised token vectors. Each candidate token is matched to its most
similar reference token (precision) and each reference token to its most similar candidate
token (recall); token scores are averaged with normalised weights; F is their harmonic mean.
Padding is masked with -inf, so it can never win a max, whatever shares a batch.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence


def normalize(embeddings: torch.Tensor) -> torch.Tensor:
    """L2-normalise the last dimension in fp32 (a zero vector stays zero instead of NaN)."""
    embeddings = embeddings.float()
    norms = embeddings.norm(dim=-1, keepdim=True)
    return embeddings / norms.clamp_min(torch.finfo(torch.float32).tiny)


def pad_sequences(
    sequences: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack variable-length [L, D] (or [K, L, D]) embeddings and their [L] weights.

    Returns (embeddings [B, L, D] or [B, K, L, D], mask [B, L] bool, weights [B, L]), all on
    the embeddings' device. Mask and weights are built on the host and moved in one copy each
    (weights may live on the host: no per-text transfers).
    """
    lengths = torch.tensor([w.shape[0] for w in weights])
    device = sequences[0].device
    if sequences[0].dim() == 3:  # [K, L, D]: pad along L
        stacked = pad_sequence([s.transpose(0, 1) for s in sequences], batch_first=True)  # [B, L, K, D]
        padded = stacked.permute(0, 2, 1, 3)
    else:
        padded = pad_sequence(list(sequences), batch_first=True)  # [B, L, D]
    mask = torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
    padded_weights = pad_sequence([w.float().cpu() for w in weights], batch_first=True)
    non_blocking = device.type == "cuda"
    return padded, mask.to(device, non_blocking=non_blocking), padded_weights.to(device, non_blocking=non_blocking)


def _weighted_mean(token_scores: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Sum of scores x normalised weights over the last dim; 0 (not NaN) when all weights are 0."""
    total = weights.sum(dim=-1)
    summed = (token_scores * weights).sum(dim=-1)
    return torch.where(total > 0, summed / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(summed))


def harmonic_mean(precision: torch.Tensor, recall: torch.Tensor) -> torch.Tensor:
    """F1 = 2PR / (P + R), 0 where P + R == 0."""
    denominator = precision + recall
    safe = torch.where(denominator == 0, torch.ones_like(denominator), denominator)
    return torch.where(denominator == 0, torch.zeros_like(denominator), 2 * precision * recall / safe)


def greedy_match(
    cand_embeddings: torch.Tensor,
    cand_mask: torch.Tensor,
    cand_weights: torch.Tensor,
    ref_embeddings: torch.Tensor,
    ref_mask: torch.Tensor,
    ref_weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Greedy-matching precision, recall and F1 of B candidate/reference pairs.

    cand_embeddings: [B, Lc, D] or [B, K, Lc, D] (K layers), normalised; cand_mask [B, Lc] bool;
    cand_weights [B, Lc] (idf, 0 for special tokens and padding). Same for the references.
    Every text must have at least one real position. Returns P, R, F of shape [B] or [B, K].
    One batched matrix product per call: the whole batch is matched at once.
    """
    if cand_embeddings.dim() == 4:
        layers = cand_embeddings.shape[1]
        batch = cand_embeddings.shape[0]

        def flat(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(batch * layers, *x.shape[2:])

        def repeat(x: torch.Tensor) -> torch.Tensor:
            return x.repeat_interleave(layers, dim=0)

        p, r, f = greedy_match(
            flat(cand_embeddings), repeat(cand_mask), repeat(cand_weights),
            flat(ref_embeddings), repeat(ref_mask), repeat(ref_weights),
        )
        return p.view(batch, layers), r.view(batch, layers), f.view(batch, layers)

    similarity = torch.bmm(cand_embeddings.float(), ref_embeddings.float().transpose(1, 2))
    # In place on the one similarity tensor (no masked copies): padded reference columns only
    # feed best_for_ref entries that are zeroed below, so masking them first changes nothing.
    best_for_cand = similarity.masked_fill_(~ref_mask[:, None, :], float("-inf")).amax(dim=2)
    best_for_ref = similarity.masked_fill_(~cand_mask[:, :, None], float("-inf")).amax(dim=1)
    # Padded rows still hold a finite max over real tokens; their weight is 0.
    best_for_cand = best_for_cand.masked_fill(~cand_mask, 0.0)
    best_for_ref = best_for_ref.masked_fill(~ref_mask, 0.0)
    precision = _weighted_mean(best_for_cand, cand_weights.float())
    recall = _weighted_mean(best_for_ref, ref_weights.float())
    return precision, recall, harmonic_mean(precision, recall)


def similarity_matrix(cand_embeddings: torch.Tensor, ref_embeddings: torch.Tensor) -> torch.Tensor:
    """Cosine similarity [Lc, Lr] of one normalised candidate and one normalised reference."""
    return cand_embeddings.float() @ ref_embeddings.float().T
