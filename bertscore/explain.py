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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from . import baselines
from .devices import full_fp32_precision
from .inputs import check_text, normalize_group
from .matching import greedy_match, similarity_matrix
from .scorer import BERTScorer


@dataclass
class ReferenceExplanation:
    """The matching of the candidate against one reference."""

    text: str
    tokens: list[str]
    weights: list[float]  # weight of each reference token as a recall query (0 for special tokens)
    similarity: torch.Tensor  # [Lc, Lr] cosine similarity, candidate rows x reference columns
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


def explain_pair(scorer: BERTScorer, candidate: str, references: str | Sequence[str]) -> Explanation:
    """Explain the score of `candidate` against one reference or a list of references."""
    candidate = check_text(candidate, "candidate")
    references = normalize_group(references, "references")
    if scorer.all_layers:
        raise ValueError("explain_pair needs a scorer on one layer (all_layers=False)")

    token_ids = scorer.tokenize([candidate] + references)
    weights_table = scorer.idf_weights_for(references, token_ids)  # the weights score() uses for this call
    notes: list[str] = []
    scorer.note_inputs([candidate], [references], token_ids, weights_table, notes)
    model = scorer.model

    def encode(text: str) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        key = text.strip()
        ids = token_ids[key]
        embedding = scorer.embedder.embed([key], [ids])[key].to(scorer.device)
        tokens = model.tokenizer.convert_ids_to_tokens(ids.tolist())
        return tokens, embedding, weights_table(ids).to(scorer.device)

    cand_tokens, cand_emb, cand_weights = encode(candidate)
    baseline = scorer.baseline
    explained: list[ReferenceExplanation] = []
    for reference in references:
        ref_tokens, ref_emb, ref_weights = encode(reference)
        with full_fp32_precision():
            similarity = similarity_matrix(cand_emb, ref_emb).clamp(-1.0, 1.0).cpu()
        if scorer.is_empty(token_ids, candidate.strip()) or scorer.is_empty(token_ids, reference.strip()):
            p = r = f = 0.0
            empty = True
        else:
            ones_c = torch.ones(1, cand_emb.shape[0], dtype=torch.bool, device=cand_emb.device)
            ones_r = torch.ones(1, ref_emb.shape[0], dtype=torch.bool, device=ref_emb.device)
            with full_fp32_precision():
                pt, rt, ft = greedy_match(
                    cand_emb[None], ones_c, cand_weights[None], ref_emb[None], ones_r, ref_weights[None]
                )
            p, r, f = float(pt[0]), float(rt[0]), float(ft[0])
            empty = False
        cand_best_sim, cand_best = similarity.max(dim=1)
        ref_best_sim, ref_best = similarity.max(dim=0)
        rescaled = None
        if baseline is not None:
            rescaled = tuple(baselines.rescale(torch.tensor([p, r, f]), baseline).tolist())
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
        rescaled_best = tuple(baselines.rescale(best, baseline).tolist())
    if len(references) > 1:
        notes.append("multi-reference: P, R and F are each the max over the references (as score())")
    return Explanation(
        candidate=candidate, tokens=cand_tokens, weights=cand_weights.cpu().tolist(), references=explained,
        winner=winner, precision=float(best[0]), recall=float(best[1]), f1=float(best[2]),
        rescaled=rescaled_best, idf=scorer.settings.idf != "no-idf", hashcode=scorer.hash, notes=notes,
    )


__all__ = ["Explanation", "ReferenceExplanation", "explain_pair"]
