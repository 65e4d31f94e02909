"""Explain one candidate's BERTScore: tokens, similarity matrices, greedy matches, weights.

`explain_pair(scorer, candidate, references)` recomputes, for one candidate and its
reference(s), exactly what `scorer.score([candidate], [references])` computes, and keeps the
intermediate pieces (token-to-token cosine similarity, the best match of every token in
both directions, the token weights) so that an app can draw them. Pure computation: no
plotting, no UI.

Numbers: per reference, precision/recall/F1 come from the same `greedy_match` on the same
embeddings and weights as `score()`; the candidate's scores (`precision`, `recall`, `f1`)
are the per-column maxima over its references, as `score()` returns them; `winner` is the
reference with the highest raw F1 (the first one on ties).

Long texts: in window mode the tokens and embeddings are the whole texts'. A pair whose
similarity matrix is larger than `score()` matches in one piece (`plan.needs_tiling`,
64 MB: e.g. beyond ~4,000 x 4,000 tokens) is matched over tiles, as `score()` does; its best
matches are still given for every token (`tiled_maxima` with indices), but the matrix itself
is not kept (`similarity` is None, with a note): it would not fit in memory, nor in a figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from .inputs import check_text, normalize_group
from .models.devices import full_fp32_precision
from .scoring.baseline_tables import rescale
from .scoring.matching import MATCH_TILE_BYTES, greedy_match, greedy_match_tiled, similarity_matrix, tiled_maxima
from .scoring.pipeline import HasPipeline, Pipeline


@dataclass
class ReferenceExplanation:
    """The matching of the candidate against one reference."""

    text: str
    tokens: list[str]
    weights: list[float]  # weight of each reference token as a recall query (0 for special tokens)
    similarity: torch.Tensor | None  # [Lc, Lr] cosine similarity (rows: candidate); None when too large to keep
    cand_best: list[int]  # for each candidate token: index of its best reference token (precision)
    ref_best: list[int]  # for each reference token: index of its best candidate token (recall)
    cand_best_sim: list[float]
    ref_best_sim: list[float]
    precision: float
    recall: float
    f1: float
    rescaled: tuple[float, float, float] | None = None  # (P, R, F) rescaled, when the scorer rescales
    empty: bool = False  # an empty side: the pair scores 0 and there is no matrix


@dataclass
class Explanation:
    """One candidate against its references; `precision/recall/f1` equal `scorer.score()`."""

    candidate: str
    tokens: list[str]
    weights: list[float]  # weight of each candidate token as a precision query
    references: list[ReferenceExplanation]
    winner: int  # index of the reference with the max raw F1
    precision: float  # raw, max over references (as score() before rescaling)
    recall: float
    f1: float
    rescaled: tuple[float, float, float] | None  # (P, R, F) as score() returns with rescaling
    idf: bool  # whether the weights are idf (else uniform, 0 for special tokens)
    hashcode: str
    notes: list[str] = field(default_factory=list)

    @property
    def best(self) -> ReferenceExplanation:
        return self.references[self.winner]

    @property
    def scores(self) -> tuple[float, float, float]:
        """(P, R, F) exactly as `scorer.score([candidate], [references])` returns them."""
        return self.rescaled if self.rescaled is not None else (self.precision, self.recall, self.f1)


def explain_pair(scorer: HasPipeline, candidate: str, references: str | Sequence[str]) -> Explanation:
    """Explain the score of `candidate` against one reference or a list of references."""
    candidate = check_text(candidate, "candidate")
    references = normalize_group(references, "references")
    pipeline = scorer.pipeline
    settings = pipeline.settings
    if settings.all_layers:
        raise ValueError("explain_pair needs a scorer on one layer (all_layers=False)")

    token_ids = pipeline.tokenize([candidate] + references)
    weights_table = pipeline.weights_for(references, token_ids)  # the weights score() uses for this call
    notes: list[str] = []
    pipeline.note_inputs([candidate], [references], token_ids, weights_table, notes)
    model = settings.model

    embeddings = pipeline.embed_texts(list(token_ids.index), token_ids)

    def encode(text: str) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        key = text.strip()
        ids = token_ids[key]
        tokens = model.tokenizer.convert_ids_to_tokens(ids.tolist())
        return tokens, embeddings[key].to(settings.device), weights_table(ids).to(settings.device)

    cand_tokens, cand_emb, cand_weights = encode(candidate)
    baseline = settings.baseline
    explained: list[ReferenceExplanation] = []
    for reference in references:
        ref_tokens, ref_emb, ref_weights = encode(reference)
        empty = settings.is_empty(token_ids, candidate.strip()) or settings.is_empty(token_ids, reference.strip())
        similarity, cand_best_sim, cand_best, ref_best_sim, ref_best, scores = _match_pair(
            pipeline, cand_emb, cand_weights, ref_emb, ref_weights, empty
        )
        if similarity is None:
            notes.append(
                f"the {cand_emb.shape[0]} x {ref_emb.shape[0]} similarity matrix against reference "
                f"{len(explained) + 1} is too large to keep: best matches and scores only (matched over tiles)"
            )
        p, r, f = scores
        rescaled = None
        if baseline is not None:
            rescaled = tuple(rescale(torch.tensor([p, r, f], dtype=torch.float32), baseline).tolist())
        explained.append(ReferenceExplanation(
            text=reference, tokens=ref_tokens, weights=ref_weights.cpu().tolist(), similarity=similarity,
            cand_best=cand_best.tolist(), ref_best=ref_best.tolist(),
            cand_best_sim=cand_best_sim.tolist(), ref_best_sim=ref_best_sim.tolist(),
            precision=p, recall=r, f1=f, rescaled=rescaled, empty=empty,
        ))

    raw = torch.tensor([[e.precision, e.recall, e.f1] for e in explained], dtype=torch.float32)
    best = raw.amax(dim=0)
    winner = int(raw[:, 2].argmax())
    rescaled_best = None
    if baseline is not None:
        rescaled_best = tuple(rescale(best, baseline).tolist())
    if len(references) > 1:
        notes.append("multi-reference: P, R and F1 are each the max over the references, as in the official package")
    return Explanation(
        candidate=candidate, tokens=cand_tokens, weights=cand_weights.cpu().tolist(), references=explained,
        winner=winner, precision=float(best[0]), recall=float(best[1]), f1=float(best[2]),
        rescaled=rescaled_best, idf=settings.idf_mode != "no-idf", hashcode=settings.hash, notes=notes,
    )


def _match_pair(
    pipeline: Pipeline,
    cand_emb: torch.Tensor,
    cand_weights: torch.Tensor,
    ref_emb: torch.Tensor,
    ref_weights: torch.Tensor,
    empty: bool,
) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, tuple[float, float, float]]:
    """(similarity or None, best value and index per candidate token, per reference token, (P, R, F)).

    The whole matrix and `greedy_match` when `score()` would match the pair in one piece; else
    `tiled_maxima` with indices and `greedy_match_tiled`, as `score()` does, keeping no matrix.
    """
    tiled = pipeline.needs_tiling(cand_emb.shape[0], ref_emb.shape[0])
    with full_fp32_precision():
        if tiled:
            similarity = None
            cand_best_sim, cand_best, ref_best_sim, ref_best = (
                x.cpu() for x in tiled_maxima(cand_emb, ref_emb, max_bytes=MATCH_TILE_BYTES, with_indices=True)
            )
            cand_best_sim, ref_best_sim = cand_best_sim.clamp(-1.0, 1.0), ref_best_sim.clamp(-1.0, 1.0)
        else:
            similarity = similarity_matrix(cand_emb, ref_emb).clamp(-1.0, 1.0).cpu()
            cand_best_sim, cand_best = similarity.max(dim=1)
            ref_best_sim, ref_best = similarity.max(dim=0)
        if empty:
            scores = (0.0, 0.0, 0.0)
        elif tiled:
            scores = tuple(float(x) for x in greedy_match_tiled(
                cand_emb, None, cand_weights, ref_emb, None, ref_weights, MATCH_TILE_BYTES
            ))
        else:
            ones_c = torch.ones(1, cand_emb.shape[0], dtype=torch.bool, device=cand_emb.device)
            ones_r = torch.ones(1, ref_emb.shape[0], dtype=torch.bool, device=ref_emb.device)
            pt, rt, ft = greedy_match(cand_emb[None], ones_c, cand_weights[None], ref_emb[None], ones_r, ref_weights[None])
            scores = (float(pt[0]), float(rt[0]), float(ft[0]))
    return similarity, cand_best_sim, cand_best, ref_best_sim, ref_best, scores


__all__ = ["Explanation", "ReferenceExplanation", "explain_pair"]
