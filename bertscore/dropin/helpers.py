"""The official package's helpers (`bert_score.utils`, re-exported from `bert_score`) over this package.

Code written against the official internals runs on them unedited: mbrs encodes its own batches
with a scorer's `_model` and `_tokenizer` and matches them with `greedy_cos_idf`; scripts build a
model with `get_model` and score with `bert_cos_score_idf`; evaluate's tests patch those two names
in `bert_score.scorer`. Each keeps its official name, arguments and result layout; the models and
tokenizers are this package's (`models/loading.py`, `models/tokenizer.py`), the matching is `scoring/matching.py`'s.
Where the official numbers are wrong (a padded position's similarity of 0 wins a max when every
real similarity is negative) these return the real maximum; docs/existing-code.md lists the rest.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any, Callable, Mapping, Sequence

import torch
from tqdm.auto import tqdm

from ..inputs import normalize_inputs
from ..models.devices import full_fp32_precision
from ..models.loading import load_model
from ..models.tokenizer import load_tokenizer, special_layout
from ..official import weights_as_dict
from ..scoring.idf import TokenWeights
from ..scoring.matching import greedy_match, harmonic_mean, normalize, pad_sequences
from ..sources import resolve_source

logger = logging.getLogger(__name__)

IdfDict = Mapping[int, float]


def get_tokenizer(model_type: str, use_fast: bool = False) -> Any:
    """The tokenizer the scorer uses for `model_type` (a fast one; with a prefix space where the
    official package adds one per call). `use_fast` is kept for compatibility."""
    return load_tokenizer(resolve_source(model_type)[0])[0]


def get_model(model_type: str, num_layers: int, all_layers: bool | None = None) -> torch.nn.Module:
    """The encoder of `model_type` cut after `num_layers` layers (every layer with `all_layers`), on the
    CPU in eval mode: its forward's first output is that layer's states. transformers' own class, as the
    official one; a fresh copy the caller owns (never the scorers' shared one: a scorer's own is its `_model`)."""
    return load_model(model_type, num_layers, bool(all_layers), transformers_class=True).encoder


def sent_encode(tokenizer: Any, sent: str) -> list[int]:
    """One text's token ids with the special tokens, cut at the tokenizer's max length (official)."""
    sent = sent.strip()
    if not sent:
        lead, trail = special_layout(tokenizer)
        return [*lead, *trail]
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and limit < 1_000_000:  # not transformers' "no limit" sentinel
        return list(tokenizer.encode(sent, add_special_tokens=True, max_length=limit, truncation=True))
    return list(tokenizer.encode(sent, add_special_tokens=True))


def get_idf_dict(arr: Sequence[str], tokenizer: Any, nthreads: int = 4) -> defaultdict[int, float]:
    """Token id -> idf over the texts `arr`: log((M + 1) / (df + 1)), unseen ids log(M + 1) (official).
    `nthreads` is kept for compatibility: counting needs no process pool."""
    documents = [sent_encode(tokenizer, text) for text in arr]
    weights = TokenWeights.from_documents(documents, vocab_size=0, zero_weight_ids=())
    unseen = float(weights.default)
    seen = {token_id for document in documents for token_id in document}
    return defaultdict(lambda: unseen, {token_id: float(weights.table[token_id]) for token_id in seen})


def padding(
    arr: Sequence[Sequence[float]], pad_token: float, dtype: torch.dtype = torch.long
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of different lengths as (padded [B, L] at `pad_token`, lengths [B], mask [B, L] of 0/1 longs)."""
    lens = torch.tensor([len(row) for row in arr], dtype=torch.long)
    width = int(lens.max()) if len(arr) else 0
    padded = torch.full((len(arr), width), pad_token, dtype=dtype)
    for index, row in enumerate(arr):
        padded[index, : len(row)] = torch.tensor(list(row), dtype=dtype)
    mask = (torch.arange(width)[None, :] < lens[:, None]).long()
    return padded, lens, mask


def bert_encode(
    model: torch.nn.Module, x: torch.Tensor, attention_mask: torch.Tensor, all_layers: bool = False
) -> torch.Tensor:
    """One padded batch through `model`: its first output [B, L, D], or every hidden state [B, L, K, D]."""
    model.eval()
    with torch.no_grad():
        out = model(x, attention_mask=attention_mask, output_hidden_states=all_layers)
    return torch.stack(out[-1], dim=2) if all_layers else out[0]


def _model_device(model: torch.nn.Module) -> torch.device:
    parameter = next(iter(model.parameters()), None)
    return torch.device("cpu") if parameter is None else parameter.device


def collate_idf(
    arr: Sequence[str], tokenizer: Any, idf_dict: IdfDict, device: str | torch.device = "cpu"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Texts as (ids [B, L] padded with the pad id, idf weights [B, L] padded with 0, lengths, mask)."""
    ids = [sent_encode(tokenizer, text) for text in arr]
    weights = [[idf_dict[token_id] for token_id in row] for row in ids]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    padded, lens, mask = padding(ids, pad_id, dtype=torch.long)
    padded_idf, _, _ = padding(weights, 0, dtype=torch.float)
    return padded.to(device), padded_idf, lens.to(device), mask.to(device)


def get_bert_embedding(
    all_sens: Sequence[str],
    model: torch.nn.Module,
    tokenizer: Any,
    idf_dict: IdfDict,
    batch_size: int = -1,
    device: str | torch.device | None = None,
    all_layers: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(embeddings [B, L, D] or [B, L, K, D], mask [B, L], idf weights [B, L] on the CPU) of the texts,
    encoded `batch_size` at a time (-1: all at once). `device=None` (the official default is
    "cuda:0"): the model's device."""
    device = _model_device(model) if device is None else device
    padded, padded_idf, _, mask = collate_idf(all_sens, tokenizer, idf_dict, device=device)
    step = len(all_sens) if batch_size == -1 else batch_size
    embeddings = [
        bert_encode(model, padded[start : start + step], attention_mask=mask[start : start + step],
                    all_layers=all_layers)
        for start in range(0, len(all_sens), max(step, 1))
    ]
    return torch.cat(embeddings, dim=0), mask, padded_idf


def _match(
    hyp: torch.Tensor, hyp_mask: torch.Tensor, hyp_idf: torch.Tensor,
    ref: torch.Tensor, ref_mask: torch.Tensor, ref_idf: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """P, R, F [B] (or [B, K]) of padded [B, L, D] (or [B, K, L, D]) embeddings, as given (normalised
    here); a text whose mask holds only its 2 special tokens scores P = R = F = 0, as officially."""
    device = hyp.device
    hyp_mask, ref_mask = hyp_mask.to(device).bool(), ref_mask.to(device).bool()
    with torch.no_grad(), full_fp32_precision():
        precision, recall, _ = greedy_match(normalize(hyp), hyp_mask, hyp_idf.to(device).float(),
                                            normalize(ref.to(device)), ref_mask, ref_idf.to(device).float())
    empty = hyp_mask.sum(dim=1).eq(2) | ref_mask.sum(dim=1).eq(2)
    if empty.any():
        logger.warning("empty candidate or reference (special tokens only): its raw BERTScores are 0")
        shape = (-1,) + (1,) * (precision.dim() - 1)
        precision = precision.masked_fill(empty.view(shape), 0.0)
        recall = recall.masked_fill(empty.view(shape), 0.0)
    return precision, recall, harmonic_mean(precision, recall)


def greedy_cos_idf(
    ref_embedding: torch.Tensor,
    ref_masks: torch.Tensor,
    ref_idf: torch.Tensor,
    hyp_embedding: torch.Tensor,
    hyp_masks: torch.Tensor,
    hyp_idf: torch.Tensor,
    all_layers: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """P, R, F [B] (with `all_layers`: [K, B]) of B padded pairs, the official helper's tensors:
    embeddings [B, L, D] (or [B, L, K, D]), masks [B, L] (0/1 or bool), idf weights [B, L] as
    given (normalised per text here). Padding never wins a max (the official lets a padded 0 win
    when every real similarity is negative); the arguments are left as they were (the official
    normalises them in place)."""
    if all_layers:  # [B, L, K, D] -> [B, K, L, D]; P, R, F [B, K] -> [K, B]
        outputs = _match(hyp_embedding.transpose(1, 2), hyp_masks, hyp_idf,
                         ref_embedding.transpose(1, 2), ref_masks, ref_idf)
        return tuple(value.transpose(0, 1) for value in outputs)  # type: ignore[return-value]
    return _match(hyp_embedding, hyp_masks, hyp_idf, ref_embedding, ref_masks, ref_idf)


def bert_cos_score_idf(
    model: torch.nn.Module,
    refs: Sequence[str],
    hyps: Sequence[str],
    tokenizer: Any,
    idf_dict: IdfDict,
    verbose: bool = False,
    batch_size: int = 64,
    device: str | torch.device | None = None,
    all_layers: bool = False,
) -> torch.Tensor:
    """Raw P, R, F of aligned pairs as [N, 3] ([K, N, 3] with `all_layers`) on the CPU: each distinct
    text embedded once (`get_bert_embedding`, `batch_size` texts at a time, longest first), pairs
    matched `batch_size` at a time. `device=None`: the model's device."""
    texts = sorted(set(refs) | set(hyps), key=lambda text: len(text.split(" ")), reverse=True)
    stats: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for start in tqdm(range(0, len(texts), batch_size), disable=not verbose, desc="embedding"):
        batch = texts[start : start + batch_size]
        embeddings, mask, weights = get_bert_embedding(batch, model, tokenizer, idf_dict, device=device,
                                                       all_layers=all_layers)
        for index, text in enumerate(batch):
            length = int(mask[index].sum())
            state = embeddings[index, :length]  # [L, D] or [L, K, D]
            stats[text] = (state.transpose(0, 1) if all_layers else state, weights[index, :length])
    preds = []
    for start in tqdm(range(0, len(refs), batch_size), disable=not verbose, desc="matching"):
        ref_batch = [stats[text] for text in refs[start : start + batch_size]]
        hyp_batch = [stats[text] for text in hyps[start : start + batch_size]]
        hyp = pad_sequences([e for e, _ in hyp_batch], [w.to(e.device) for e, w in hyp_batch])
        ref = pad_sequences([e for e, _ in ref_batch], [w.to(e.device) for e, w in ref_batch])
        precision, recall, f1 = _match(*hyp, *ref)
        preds.append(torch.stack((precision, recall, f1), dim=-1).cpu())  # [B, 3] or [B, K, 3]
    out = torch.cat(preds, dim=0) if preds else torch.zeros(0, 3)
    return out.transpose(0, 1).contiguous() if all_layers else out


def official_idf_dict(scorer: Any, references: Sequence[str]) -> defaultdict[int, float]:
    """The idf_dict the official scorer hands `bert_cos_score_idf`: 1 for every id and 0 for [SEP]
    and [CLS] without idf, else the scorer's weights (over `references` when idf is per call)."""
    if not scorer.idf:
        weights = defaultdict(lambda: 1.0)
        for special in (scorer._tokenizer.sep_token_id, scorer._tokenizer.cls_token_id):
            weights[special] = 0.0
        return weights
    return weights_as_dict(scorer.idf_weights_for(list(references)))


def score_with_helpers(
    scorer: Any, bert_cos_score_idf: Callable[..., torch.Tensor], cands: Any, refs: Any, verbose: bool,
    batch_size: int | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The official `BERTScorer.score` steps: `bert_cos_score_idf` (as the caller's module names it now:
    a patched one counts) on the scorer's `_model` and `_tokenizer`, then the pipeline's `finish`: the
    best of each candidate's references, the rescale baseline."""
    candidates, groups = normalize_inputs(cands, refs)
    flat_refs = [reference for group in groups for reference in group]
    flat_cands = [candidate for candidate, group in zip(candidates, groups) for _ in group]
    preds = bert_cos_score_idf(
        scorer._model, flat_refs, flat_cands, scorer._tokenizer, official_idf_dict(scorer, flat_refs),
        verbose=verbose, device=scorer.device, batch_size=batch_size or 64, all_layers=scorer.all_layers,
    ).cpu()
    # the pipeline's own last steps: the best of each candidate's references, the rescale, the layout
    owners = torch.repeat_interleave(torch.arange(len(groups)), torch.tensor([len(group) for group in groups]))
    pair_scores = preds.transpose(0, 1) if preds.dim() == 3 else preds  # [n, 3] or [n, K, 3]
    return scorer.pipeline.finish(pair_scores.float(), owners, len(candidates))
