"""Greedy matching: the pure tensor math of BERTScore (no model code).

Embeddings are L2-normalised token vectors. Each candidate token is matched to its most
similar reference token (precision) and each reference token to its most similar candidate
token (recall); token scores are averaged with normalised weights; F is their harmonic mean.
Padding is masked with -inf, so it can never win a max, whatever shares a batch.
`greedy_match` builds the whole similarity of a batch at once; `greedy_match_tiled` gives the
same numbers for pairs of any length, holding at most a byte budget of similarities at a time.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import torch
from torch.nn.utils.rnn import pad_sequence


def normalize(embeddings: torch.Tensor) -> torch.Tensor:
    """L2-normalise the last dimension in fp32 (a zero vector stays zero instead of NaN)."""
    return normalize_with_norms(embeddings)[0]


def normalize_with_norms(embeddings: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`normalize`, and the norms [..., 1] it divided by: a norm is inf or NaN exactly where its
    vector holds an inf or NaN (or overflows fp32 when squared), so they tell bad outputs apart
    without another pass over the states."""
    embeddings = embeddings.float()
    norms = embeddings.norm(dim=-1, keepdim=True)
    return embeddings / norms.clamp_min(torch.finfo(torch.float32).tiny), norms


def pad_sequences(
    sequences: Sequence[torch.Tensor], weights: Sequence[torch.Tensor] | torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Stack variable-length [L, D] (or [K, L, D]) embeddings and their [L] weights (or one [sum L]).

    Returns (embeddings [B, L, D] or [B, K, L, D], mask [B, L] bool, weights [B, L]), all on
    the embeddings' device, padding at 0. The embeddings are padded by one copy per text on a
    CPU (`pad_by_copies`), by a few copies per batch elsewhere (`pad_by_index`): the same tensor.
    Mask and weights are built on the host and moved in one copy each (the weights live on one
    device, the host in `score()`: no per-text transfers).
    """
    lengths = torch.tensor([s.shape[-2] for s in sequences], dtype=torch.long)
    device = sequences[0].device
    mask = torch.arange(int(lengths.max()), dtype=torch.long)[None, :] < lengths[:, None]
    padded = (pad_by_copies if device.type == "cpu" else pad_by_index)(sequences, mask)
    # The weights: scattered under the mask on the host from one concatenation, then one copy.
    padded_weights = torch.zeros(mask.shape, dtype=torch.float32)
    flat_weights = weights if isinstance(weights, torch.Tensor) else torch.cat(list(weights))
    padded_weights[mask] = flat_weights.to("cpu", torch.float32)
    return padded, pinned_to_device(mask, device), pinned_to_device(padded_weights, device)


def pad_by_copies(sequences: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """`pad_sequences`' embeddings by one copy per text (torch's pad_sequence): the fastest on a
    CPU, where a copy costs its bytes only. `mask` [B, L]: the texts' positions."""
    if sequences[0].dim() == 3:  # [K, L, D]: padded along L, laid out [B, L, K, D] and seen as [B, K, L, D]
        return pad_sequence([s.transpose(0, 1) for s in sequences], batch_first=True).permute(0, 2, 1, 3)
    return pad_sequence(list(sequences), batch_first=True)  # [B, L, D]


def pad_by_index(sequences: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """`pad_by_copies`' tensor, bit for bit and in the same layout, from one concatenation written
    under the mask's positions in one indexed copy: on an accelerator each copy is a kernel launch
    that the host pays for, so a few copies per batch beat one per text."""
    rows = pinned_to_device(mask.view(-1).nonzero().squeeze(1), sequences[0].device)  # [sum L] in [B * L]
    if sequences[0].dim() == 3:  # [K, L, D]
        flat = torch.cat([s.transpose(0, 1) for s in sequences])  # [sum L, K, D]
        stacked = flat.new_zeros((mask.numel(),) + flat.shape[1:]).index_copy_(0, rows, flat)
        return stacked.view(*mask.shape, *flat.shape[1:]).permute(0, 2, 1, 3)
    flat = torch.cat(list(sequences))  # [sum L, D]
    return flat.new_zeros((mask.numel(),) + flat.shape[1:]).index_copy_(0, rows, flat).view(*mask.shape, -1)


def pinned_to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on `device`; to CUDA through pinned memory, asynchronously: the host queues the
    copy and goes on instead of waiting for the device."""
    if device.type == "cuda":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


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
    best_for_cand, best_for_ref = _masked_maxima_(similarity, cand_mask, ref_mask)
    return _weighted_scores(best_for_cand, cand_mask, cand_weights, best_for_ref, ref_mask, ref_weights)


def _masked_maxima_(
    similarity: torch.Tensor, cand_mask: torch.Tensor | None, ref_mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Row maxima [..., Lc] and column maxima [..., Lr] of similarity [..., Lc, Lr], padding at -inf.

    In place on `similarity` (no masked copies): padded reference columns only feed column
    maxima that the caller zeroes, so masking them before the candidate rows changes nothing.
    A mask of None means every position is real (nothing to fill).
    """
    if ref_mask is not None:
        similarity.masked_fill_(~ref_mask[..., None, :], float("-inf"))
    best_for_cand = similarity.amax(dim=-1)
    if cand_mask is not None:
        similarity.masked_fill_(~cand_mask[..., :, None], float("-inf"))
    return best_for_cand, similarity.amax(dim=-2)


def _weighted_scores(
    best_for_cand: torch.Tensor,
    cand_mask: torch.Tensor | None,
    cand_weights: torch.Tensor,
    best_for_ref: torch.Tensor,
    ref_mask: torch.Tensor | None,
    ref_weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """P, R, F from the greedy maxima; weights broadcast against them.

    Padded positions hold a max over real tokens or -inf; they score 0, so that x 0 weight
    stays 0 rather than NaN. Maxima are clamped to [-1, 1], the range of a cosine: float32
    rounding of unit vectors can give 1.0000001, and identical texts then score exactly 1.
    """
    best_for_cand = best_for_cand.clamp(-1.0, 1.0)
    best_for_ref = best_for_ref.clamp(-1.0, 1.0)
    if cand_mask is not None:
        best_for_cand = best_for_cand.masked_fill(~cand_mask, 0.0)
    if ref_mask is not None:
        best_for_ref = best_for_ref.masked_fill(~ref_mask, 0.0)
    precision = _weighted_mean(best_for_cand, cand_weights.float())
    recall = _weighted_mean(best_for_ref, ref_weights.float())
    return precision, recall, harmonic_mean(precision, recall)


MATCH_TILE_BYTES = 64 << 20  # similarities held at once by the tiled matching


def _broadcast_to_leading(
    values: torch.Tensor | None, leading: torch.Size, length: int, name: str, device: torch.device
) -> torch.Tensor | None:
    """A mask or weights of shape [*P, L] as a view of shape [*leading, L] (P a prefix of leading).

    With embeddings [B, K, L, D] the masks are [B, L] (every layer shares them); with one pair
    [K, L, D] they are [L]. A ValueError says what did not fit.
    """
    if values is None:
        return None
    prefix = values.shape[:-1]
    if values.dim() < 1 or values.shape[-1] != length or leading[: len(prefix)] != prefix:
        raise ValueError(
            f"{name} has shape {tuple(values.shape)}, which does not fit embeddings with leading dims "
            f"{tuple(leading)} and length {length}: expected [*P, {length}] with P a prefix of {tuple(leading)}"
        )
    extra = len(leading) - len(prefix)
    values = values.to(device).reshape(*prefix, *([1] * extra), length)
    return values.expand(*leading, length)


def _tile_sizes(items: int, rows: int, columns: int, max_bytes: int) -> tuple[int, int, int]:
    """Items, rows and columns per tile, so that one fp32 tile holds at most max_bytes (>= 1 of each).

    Whole rows first (column maxima then need no second pass over the rows), then several rows,
    then several items.
    """
    budget = max(1, int(max_bytes) // 4)
    tile_columns = max(1, min(columns, budget))
    tile_rows = max(1, min(rows, budget // tile_columns))
    tile_items = max(1, min(items, budget // (tile_rows * tile_columns)))
    return tile_items, tile_rows, tile_columns


def tiled_maxima(
    cand_embeddings: torch.Tensor,
    ref_embeddings: torch.Tensor,
    cand_mask: torch.Tensor | None = None,
    ref_mask: torch.Tensor | None = None,
    max_bytes: int = MATCH_TILE_BYTES,
    with_indices: bool = False,
) -> tuple[torch.Tensor, ...]:
    """Greedy maxima of cand @ ref^T, computed over tiles of at most `max_bytes` of similarities.

    cand_embeddings [*N, Lc, D] and ref_embeddings [*N, Lr, D] (normalised; the same leading dims
    N: none for one pair, [K] for its layers, [B] or [B, K] for a padded batch). Masks are bool
    [*P, L] with P a prefix of N (e.g. [B, L] for [B, K, L, D]), None when every position is real.
    Returns best_for_cand [*N, Lc] (each candidate token's best similarity over real reference
    tokens) and best_for_ref [*N, Lr], fp32, equal to the untiled computation (padding masked with
    -inf); padded positions hold 0. With `with_indices`, also the argmax indices (int64, the first
    maximum on ties, -1 at padded positions): (best_for_cand, cand_best, best_for_ref, ref_best).
    Only one tile of similarities (plus its fp32 copies of the embedding tiles) is held at once.
    """
    _check_tiling_inputs(cand_embeddings, ref_embeddings, cand_mask, ref_mask)
    leading, device = cand_embeddings.shape[:-2], cand_embeddings.device
    rows, columns = cand_embeddings.shape[-2], ref_embeddings.shape[-2]
    cand_mask = _broadcast_to_leading(cand_mask, leading, rows, "cand_mask", device)
    ref_mask = _broadcast_to_leading(ref_mask, leading, columns, "ref_mask", device)
    # Work on [*M, L, D] with M non-empty (one pair gets a leading 1: views only).
    maxima = _start_maxima(leading or torch.Size([1]), rows, columns, device, with_indices)
    _fold_tiles_(maxima, _with_items(cand_embeddings, leading), _with_items(ref_embeddings, leading),
                 _padding_to_fill(cand_mask, leading), _padding_to_fill(ref_mask, leading), max_bytes)
    best_for_cand = _fill_padding_(maxima.best_for_cand.reshape(*leading, rows), cand_mask, 0.0)
    best_for_ref = _fill_padding_(maxima.best_for_ref.reshape(*leading, columns), ref_mask, 0.0)
    if maxima.cand_best is None or maxima.ref_best is None:
        return best_for_cand, best_for_ref
    cand_best = _fill_padding_(maxima.cand_best.reshape(*leading, rows), cand_mask, -1)
    ref_best = _fill_padding_(maxima.ref_best.reshape(*leading, columns), ref_mask, -1)
    return best_for_cand, cand_best, best_for_ref, ref_best


def _check_tiling_inputs(cand_embeddings: torch.Tensor, ref_embeddings: torch.Tensor,
                         cand_mask: torch.Tensor | None, ref_mask: torch.Tensor | None) -> None:
    """ValueError unless both are [*N, L, D] with the same N and D; TypeError for a non-bool mask."""
    if cand_embeddings.dim() < 2 or ref_embeddings.dim() != cand_embeddings.dim():
        raise ValueError(
            f"embeddings must be [*N, L, D] with the same leading dims, got {tuple(cand_embeddings.shape)} "
            f"and {tuple(ref_embeddings.shape)}"
        )
    if (ref_embeddings.shape[:-2] != cand_embeddings.shape[:-2]
            or ref_embeddings.shape[-1] != cand_embeddings.shape[-1]):
        raise ValueError(
            f"candidate {tuple(cand_embeddings.shape)} and reference {tuple(ref_embeddings.shape)} embeddings "
            "differ in leading dims or hidden size"
        )
    for name, mask in (("cand_mask", cand_mask), ("ref_mask", ref_mask)):
        if mask is not None and mask.dtype != torch.bool:
            raise TypeError(f"{name} must be a bool tensor (True = real token), got {mask.dtype}")


def _with_items(tensor: torch.Tensor, leading: torch.Size) -> torch.Tensor:
    """`tensor` with at least one leading dim: one pair [L, D] becomes the view [1, L, D]."""
    return tensor if leading else tensor[None]


def _padding_to_fill(mask: torch.Tensor | None, leading: torch.Size) -> torch.Tensor | None:
    """The mask [*M, L] whose padding the tiles fill with -inf; None when there is no padding.

    Masks with no padding need no -inf fill at all (one check here, not one per tile).
    """
    return None if mask is None or bool(mask.all()) else _with_items(mask, leading)


class _Maxima(NamedTuple):
    """Running maxima both ways over [*M, L] (M non-empty), and their argmax indices (or None)."""

    best_for_cand: torch.Tensor
    cand_best: torch.Tensor | None
    best_for_ref: torch.Tensor
    ref_best: torch.Tensor | None


def _start_maxima(items_shape: torch.Size, rows: int, columns: int, device: torch.device,
                  with_indices: bool) -> _Maxima:
    """Maxima at -inf (fp32) and indices at -1 (int64, only `with_indices`), before any tile."""
    def filled(length: int, value: float, dtype: torch.dtype) -> torch.Tensor:
        return torch.full((*items_shape, length), value, dtype=dtype, device=device)

    return _Maxima(
        filled(rows, float("-inf"), torch.float32), filled(rows, -1, torch.long) if with_indices else None,
        filled(columns, float("-inf"), torch.float32), filled(columns, -1, torch.long) if with_indices else None,
    )


def _fold_tiles_(maxima: _Maxima, cand: torch.Tensor, ref: torch.Tensor, cand_fill: torch.Tensor | None,
                 ref_fill: torch.Tensor | None, max_bytes: int) -> None:
    """Walk cand [*M, Lc, D] x ref [*M, Lr, D] in tiles of at most `max_bytes`, folding each into `maxima`.

    Tiles are views along the last leading dim; any dims before it are walked one by one, so
    strided inputs (e.g. pad_sequences' [B, K, L, D]) are never copied whole. Each candidate
    tile is cast to fp32 once for all the reference tiles it meets.
    """
    items_shape, rows, columns = cand.shape[:-2], cand.shape[-2], ref.shape[-2]
    tile_items, tile_rows, tile_columns = _tile_sizes(items_shape[-1], rows, columns, max_bytes)
    for outer in itertools.product(*(range(size) for size in items_shape[:-1])):
        for n0 in range(0, items_shape[-1], tile_items):
            items = (*outer, slice(n0, n0 + tile_items))
            for r0 in range(0, rows, tile_rows):
                row_span = slice(r0, r0 + tile_rows)
                cand_tile = cand[items][:, row_span].float()
                for c0 in range(0, columns, tile_columns):
                    column_span = slice(c0, c0 + tile_columns)
                    _fold_tile_(maxima, cand_tile, ref[items][:, column_span], items, row_span, column_span,
                                cand_fill, ref_fill)


def _fold_tile_(maxima: _Maxima, cand_tile: torch.Tensor, ref_tile: torch.Tensor, items: tuple,
                row_span: slice, column_span: slice, cand_fill: torch.Tensor | None,
                ref_fill: torch.Tensor | None) -> None:
    """One tile's similarities (padding at -inf) folded into the running maxima both ways.

    The tile is freed on return, before the next one is allocated: one tile at a time.
    """
    with_indices = maxima.cand_best is not None
    similarity = torch.matmul(cand_tile, ref_tile.float().transpose(-1, -2))
    if ref_fill is not None:
        similarity.masked_fill_(~ref_fill[items][:, None, column_span], float("-inf"))
    _fold_(similarity.max(dim=-1) if with_indices else similarity.amax(dim=-1), column_span.start,
           maxima.best_for_cand[items][:, row_span], _part(maxima.cand_best, items, row_span))
    if cand_fill is not None:
        similarity.masked_fill_(~cand_fill[items][:, row_span, None], float("-inf"))
    _fold_(similarity.max(dim=-2) if with_indices else similarity.amax(dim=-2), row_span.start,
           maxima.best_for_ref[items][:, column_span], _part(maxima.ref_best, items, column_span))


def _part(running: torch.Tensor | None, items: tuple, span: slice) -> torch.Tensor | None:
    """The view of a tile's items and span in running indices (None when indices are not kept)."""
    return None if running is None else running[items][:, span]


def _fill_padding_(values: torch.Tensor, mask: torch.Tensor | None, fill: float) -> torch.Tensor:
    """`values` with `fill` at the mask's padded positions, in place (no mask: unchanged)."""
    if mask is not None:
        values.masked_fill_(~mask, fill)
    return values


def _fold_(
    tile_best: torch.Tensor | tuple[torch.Tensor, torch.Tensor],
    offset: int,
    running: torch.Tensor,
    running_index: torch.Tensor | None,
) -> None:
    """Fold one tile's maxima (values, or (values, indices) from .max) into running maxima, in place.

    `running` and `running_index` are views into the result; `offset` is where the tile starts
    along the reduced side. A later tile wins only when strictly greater: ties keep the first.
    """
    if running_index is None:
        running.copy_(torch.maximum(running, tile_best))
        return
    values, indices = tile_best
    better = values > running
    running.copy_(torch.where(better, values, running))
    running_index.copy_(torch.where(better, indices + offset, running_index))


def greedy_match_tiled(
    cand_embeddings: torch.Tensor,
    cand_mask: torch.Tensor | None,
    cand_weights: torch.Tensor,
    ref_embeddings: torch.Tensor,
    ref_mask: torch.Tensor | None,
    ref_weights: torch.Tensor,
    max_bytes: int = MATCH_TILE_BYTES,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`greedy_match` without the whole Lc x Lr similarity: at most `max_bytes` of it at a time.

    The same arguments as `greedy_match` (a batch [B, L, D] / [B, K, L, D] with masks and weights
    [B, L]), or one pair: [L, D] / [K, L, D] with weights [L] and masks [L] or None (all real).
    Weights and masks are [*P, L] with P a prefix of the embeddings' leading dims. Returns P, R, F
    with the embeddings' leading dims ([B], [B, K], [] or [K]), equal to `greedy_match` to ~1e-7
    (the maxima are exact; only the matrix products' rounding may differ with the tile shape).
    As with `greedy_match`, every text needs at least one real position.
    """
    best_for_cand, best_for_ref = tiled_maxima(cand_embeddings, ref_embeddings, cand_mask, ref_mask, max_bytes)
    leading = cand_embeddings.shape[:-2]
    device = cand_embeddings.device
    cand_weights = _broadcast_to_leading(cand_weights, leading, cand_embeddings.shape[-2], "cand_weights", device)
    ref_weights = _broadcast_to_leading(ref_weights, leading, ref_embeddings.shape[-2], "ref_weights", device)
    # Padded positions already hold 0 (tiled_maxima), so no masks are needed here.
    return _weighted_scores(best_for_cand, None, cand_weights, best_for_ref, None, ref_weights)


def similarity_matrix(cand_embeddings: torch.Tensor, ref_embeddings: torch.Tensor) -> torch.Tensor:
    """Cosine similarity [Lc, Lr] of one normalised candidate and one normalised reference."""
    return cand_embeddings.float() @ ref_embeddings.float().T


PaddedTexts = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # embeddings, mask, weights (`pad_sequences`)


def all_pairs_match(cands: PaddedTexts, refs: PaddedTexts, max_bytes: int = MATCH_TILE_BYTES,
                    lengths: tuple[Sequence[int], Sequence[int]] | None = None) -> torch.Tensor:
    """Greedy-matching P, R, F of every candidate against every reference: [H, R, K, 3].

    `cands` as `pad_sequences` gives them: embeddings [H, K, Lc, D] (normalised; K layers, 1 for
    one layer), mask [H, Lc] bool, weights [H, Lc]; `refs` likewise with R texts. Blocks of candidates x
    references are matched by one batched product each, holding at most about `max_bytes` of
    similarities (at least one pair's), so memory is the result plus one block, whatever H x R is.
    Each block is cut to the longest text in it (sort the texts by length to pad little).
    Every text must have at least one real position. The numbers are `greedy_match`'s per pair.
    `lengths`: each side's text lengths, known on the host (else read from the masks: a wait for
    the device); nothing else is read back, the result stays on the device.
    """
    (cand_embeddings, cand_mask, cand_weights), (ref_embeddings, ref_mask, ref_weights) = cands, refs
    n_cands, layers, cand_length, dim = cand_embeddings.shape
    n_refs, ref_length = ref_embeddings.shape[0], ref_embeddings.shape[2]
    out = cand_embeddings.new_zeros((n_cands, n_refs, layers, 3), dtype=torch.float32)
    cand_lengths, ref_lengths = lengths or (cand_mask.sum(dim=1).tolist(), ref_mask.sum(dim=1).tolist())
    per_pair = max(1, layers * cand_length * ref_length * 4)
    ref_block = max(1, min(n_refs, int(max_bytes) // per_pair))
    cand_block = max(1, min(n_cands, int(max_bytes) // (per_pair * ref_block)))
    for r0 in range(0, n_refs, ref_block):
        r1 = min(n_refs, r0 + ref_block)
        lr = max(1, int(max(ref_lengths[r0:r1])))
        ref = ref_embeddings[r0:r1, :, :lr].float().permute(1, 3, 0, 2).reshape(layers, dim, (r1 - r0) * lr)
        ref_m, ref_w = ref_mask[r0:r1, None, :lr], ref_weights[r0:r1, None, :lr]  # [r, 1, Lr]: every layer
        for c0 in range(0, n_cands, cand_block):
            c1 = min(n_cands, c0 + cand_block)
            lc = max(1, int(max(cand_lengths[c0:c1])))
            cand = cand_embeddings[c0:c1, :, :lc].float().transpose(0, 1).reshape(layers, (c1 - c0) * lc, dim)
            # One product per layer: [K, h*Lc, r*Lr], viewed as [h, r, K, Lc, Lr] (no copy).
            similarity = torch.bmm(cand, ref).view(layers, c1 - c0, lc, r1 - r0, lr).permute(1, 3, 0, 2, 4)
            cand_m = cand_mask[c0:c1, None, None, :lc]
            best_for_cand, best_for_ref = _masked_maxima_(similarity, cand_m, ref_m)
            precision, recall, f1 = _weighted_scores(
                best_for_cand, cand_m, cand_weights[c0:c1, None, None, :lc], best_for_ref, ref_m, ref_w
            )
            out[c0:c1, r0:r1] = torch.stack((precision, recall, f1), dim=-1)
    return out
