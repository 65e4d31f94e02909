"""All pairs: every candidate against every reference, each text embedded once.

`BERTScorer.score_matrix` lands here. The distinct texts of both sides are tokenized and
embedded once (through the scorer's embedder and cache, windows included), padded side by
side in length order, and matched block by block (`matching.all_pairs_match`): memory is the
H x R result plus one block of similarities, never H x R x L x L. Entry (i, j) is what
`score([cands[i]], [refs[j]])` gives, within float rounding (1e-6).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ..inputs import text_list
from ..models.devices import full_fp32_precision
from . import baseline_tables
from .idf import TokenWeights
from .matching import MATCH_TILE_BYTES, all_pairs_match, pad_sequences
from .pipeline import Pipeline, Scores
from .tokens import TokenStore


def score_matrix(
    pipeline: Pipeline,
    cands: Any,
    refs: Any,
    weights: TokenWeights | None = None,
    batch_size: int | None = None,
    notes: list[str] | None = None,
    max_bytes: int = MATCH_TILE_BYTES,
) -> tuple[Scores, TokenWeights]:
    """(P, R, F) of shape [H, R] ([K, H, R] with all layers) for H candidates x R references,
    and the token weights used. `weights`: this call's table; else the scorer's fixed weights,
    or (idf=True) idf over `refs` as given, each entry one document. A pair with an empty
    side scores 0 raw (then rescaled, as `score()` does)."""
    candidates, references = text_list(cands, "candidates"), text_list(refs, "references")
    settings = pipeline.settings
    token_ids = pipeline.tokenize(candidates + references)
    if weights is None:
        weights = pipeline.weights_for(references, token_ids)
    pipeline.note_inputs(candidates, [[r] for r in references], token_ids, weights, notes)
    cand_keys, ref_keys = [c.strip() for c in candidates], [r.strip() for r in references]
    keys = list(dict.fromkeys(cand_keys + ref_keys))
    with torch.inference_mode():
        embeddings = _embed(pipeline, keys, token_ids, batch_size)
        limit = pipeline.model.content_limit
        text_weights = dict(zip(keys, weights.many(
            [token_ids[k] if settings.is_windowed(token_ids, k) else token_ids.head(k, limit) for k in keys]
        )))
        with full_fp32_precision():
            raw = _match(cand_keys, ref_keys, embeddings, text_weights, max_bytes)  # [H, R, K, 3]
    raw = raw.clone()  # an ordinary tensor for the caller, not an inference one
    empty = settings.empty_texts(token_ids)
    raw[torch.tensor([k in empty for k in cand_keys])] = 0.0
    raw[:, torch.tensor([k in empty for k in ref_keys])] = 0.0
    if settings.baseline is not None:
        raw = baseline_tables.rescale(raw, settings.baseline)
    raw = raw.permute(2, 0, 1, 3) if settings.all_layers else raw[:, :, 0]  # [K, H, R, 3] or [H, R, 3]
    return (raw[..., 0].contiguous(), raw[..., 1].contiguous(), raw[..., 2].contiguous()), weights


def _embed(pipeline: Pipeline, keys: list[str], token_ids: TokenStore,
           batch_size: int | None) -> dict[str, torch.Tensor]:
    """Each distinct text's embedding [K, L, D] (a layer axis of 1 without all layers)."""
    limit = pipeline.model.content_limit
    embeddings = pipeline.embedder.embed(keys, [token_ids.head(k, limit) for k in keys], batch_size=batch_size)
    long_keys = [k for k in keys if pipeline.settings.is_windowed(token_ids, k)]
    if long_keys:
        embeddings.update(pipeline.embedder.embed_windows(
            long_keys, [token_ids[k] for k in long_keys], pipeline.settings.window, first_windows=embeddings,
            batch_size=batch_size,
        ))
    return {k: e if e.dim() == 3 else e[None] for k, e in embeddings.items()}


def _match(cand_keys: Sequence[str], ref_keys: Sequence[str], embeddings: dict[str, torch.Tensor],
           text_weights: dict[str, torch.Tensor], max_bytes: int) -> torch.Tensor:
    """Raw [H, R, K, 3] on the host: the distinct texts of each side in length order, padded in
    groups of at most PADDED_BYTES (a long text pads only its own group) and matched group against
    group by `all_pairs_match`, then spread back to the given positions (duplicates share).
    The lengths come from the embeddings' shapes (host metadata) and the blocks' scores stay on
    the device until the end: one copy back, no wait for the device between blocks."""
    sides = []
    for side in (cand_keys, ref_keys):
        distinct = sorted(dict.fromkeys(side), key=lambda k: embeddings[k].shape[1])
        position = {k: i for i, k in enumerate(distinct)}
        sides.append((_length_groups(distinct, embeddings), torch.tensor([position[k] for k in side])))
    (cand_groups, cand_at), (ref_groups, ref_at) = sides
    first = embeddings[cand_keys[0]]
    raw = first.new_zeros((sum(map(len, cand_groups)), sum(map(len, ref_groups)), first.shape[0], 3),
                          dtype=torch.float32)  # where the embeddings are

    def lengths(group: list[str]) -> list[int]:
        return [embeddings[k].shape[1] for k in group]

    c0 = 0
    for cand_group in cand_groups:
        cands = pad_sequences([embeddings[k] for k in cand_group], [text_weights[k] for k in cand_group])
        r0 = 0
        for ref_group in ref_groups:
            refs = pad_sequences([embeddings[k] for k in ref_group], [text_weights[k] for k in ref_group])
            raw[c0:c0 + len(cand_group), r0:r0 + len(ref_group)] = all_pairs_match(
                cands, refs, max_bytes, (lengths(cand_group), lengths(ref_group)))
            r0 += len(ref_group)
        c0 += len(cand_group)
    return raw[cand_at.to(raw.device)][:, ref_at.to(raw.device)].cpu()


PADDED_BYTES = 256 << 20  # padded embeddings of one group of texts (`_match`)


def _length_groups(keys: list[str], embeddings: dict[str, torch.Tensor]) -> list[list[str]]:
    """`keys` (sorted by length) cut into runs whose padded embeddings fit PADDED_BYTES (>= 1 text each)."""
    groups: list[list[str]] = [[]]
    for key in keys:
        padded = (len(groups[-1]) + 1) * embeddings[key].numel() * 4  # this text is the group's longest
        if groups[-1] and padded > PADDED_BYTES:
            groups.append([])
        groups[-1].append(key)
    return groups
