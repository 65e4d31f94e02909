"""The scoring steps: tokenize -> notes -> embed -> weights -> match -> multi-reference max -> rescale.

A `Pipeline` is the settings (frozen, see `settings.py`) plus an `Embedder`. Its public steps
serve `BERTScorer.score`, `explain_pair` and the distributed path alike, so that each of them
computes what `score()` computes.

The schedule: one call's pairs are grouped four levels deep, each level bounding one thing.

A call's pairs are sorted once, by reference length, reference, then candidate length (a shared
reference sits in one chunk, pairs of similar lengths are padded together): in tokens when the
call is one block (`Pipeline.score_pairs`: its tokens are known before the first chunk), in
characters when it streams (`plan.stream_order`: the tokens are not known yet).

1. Stream blocks (`score_in_blocks`, `plan.stream_blocks`): a call longer than a chunk is taken
   in `plan.stream_order` and cut into blocks growing from FIRST_STREAM_BLOCK pairs; block k + 1
   is tokenized while block k is scored (`tokenize_ahead`). They bound the tokens held and let
   tokenizing overlap scoring.
2. Chunks (`Pipeline.score_pairs`, `plan.chunks`): a block's pairs in that order, taken up to
   `chunk_size` pairs and CHUNK_EMBEDDING_BYTES of embeddings; a chunk's texts are embedded
   together (token-budget batches, `embed.py`), matched, and released. They bound peak memory.
3. Match batches (`match_pairs`, `plan.match_batches`): a chunk's pairs padded together up to
   MATCH_BATCH_BYTES of embeddings and similarities. They bound one matching step.
4. Tiles (`matching.greedy_match_tiled`): a pair too large for a match batch alone
   (`plan.needs_tiling`) is matched over tiles of its similarity matrix.

Embeddings are kept in two places: the scorer's `EmbeddingCache` (across calls, bounded, off in
module-level `score()`) and the call's `CallReuse` (`reuse.py`: a text that returns in a later
chunk of the same call is kept until its last use, so it is embedded once per call even with the
cache off). Encoders are kept apart from embeddings: `models/shared.py` (one per settings in the
process) and `pool.py` (scorers for changing settings).
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Protocol, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from ..models.devices import full_fp32_precision
from ..models.loading import LoadedModel
from ..notes import name_some, report
from . import baseline_tables, input_notes, plan, tokenize_ahead
from .embed import Embedder, Fetch
from .idf import TokenWeights
from .matching import MATCH_TILE_BYTES, greedy_match, greedy_match_tiled, pad_sequences
from .reuse import CallReuse
from .settings import Settings
from .tokens import TokenStore

Scores = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class Pipeline:
    """The scoring steps of one model and settings; `settings` may be replaced (`compute_idf`)."""

    def __init__(self, settings: Settings, embedder: Embedder):
        self.settings = settings
        self.embedder = embedder

    @property
    def model(self) -> LoadedModel:
        """The encoder, tokenizer and limits these steps run with."""
        return self.settings.model

    @property
    def floats_per_token(self) -> int:
        """Floats in one token's embedding (hidden size x layers kept)."""
        config = self.model.encoder.config
        hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", None) or 1024
        return int(hidden) * self.settings.score_layers

    def needs_tiling(self, cand_length: int, ref_length: int) -> bool:
        """Whether a pair of these lengths is matched over tiles (`plan.needs_tiling`)."""
        return plan.needs_tiling(cand_length, ref_length, self.settings.score_layers)

    # ----- texts -> tokens, weights, notes --------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> TokenStore:
        """Token ids of the distinct stripped texts (an empty text has its special tokens only).

        Cut at the model's content limit (truncate mode) or whole (window mode); either way the
        store knows each text's whole content length.
        """
        model = self.model
        limit = None if self.settings.window is not None else model.content_limit
        distinct = list(dict.fromkeys(t.strip() for t in texts))
        return TokenStore(distinct, model.content_ids, model.lead_ids, model.trail_ids, limit)

    def document_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text as idf counts them: whole texts when windowed, else as truncated."""
        return self.model.tokenize(texts, whole=self.settings.window is not None)

    def weights_for(self, references: Sequence[str], token_ids: TokenStore | None = None) -> TokenWeights:
        """The token weights a call with these references uses: the fixed table, or idf over them
        (each reference a document, empty ones included)."""
        if self.settings.idf_weights is not None:
            return self.settings.idf_weights
        token_ids = token_ids if token_ids is not None else self.tokenize(references)
        documents = (token_ids[r.strip()] for r in references)
        return TokenWeights.from_documents(documents, self.model.vocab_size, self.model.zero_weight_ids, label="idf")

    def check_weights(self, weights: TokenWeights | None) -> TokenWeights | None:
        """A call's `weights=` table, checked against the vocabulary (None: the settings' own)."""
        return None if weights is None else weights.check(self.model.vocab_size, "weights")

    def note_inputs(self, candidates: Sequence[str], groups: Sequence[Sequence[str]], token_ids: TokenStore,
                    weights: TokenWeights, notes: list[str] | None = None) -> None:
        """The call's notes on its inputs (`input_notes.note_inputs`)."""
        input_notes.note_inputs(self.settings, candidates, groups, token_ids, weights, notes)

    # ----- whole calls ----------------------------------------------------------------------------
    def score_groups(
        self,
        candidates: list[str],
        groups: list[list[str]],
        weights: TokenWeights | None,
        verbose: bool,
        batch_size: int | None,
        notes: list[str] | None, progress: Any = None,
    ) -> tuple[Scores, TokenWeights]:
        """(P, R, F) of checked candidates against their reference groups, and the weights used."""
        flat_refs = [ref for group in groups for ref in group]
        owners = torch.tensor([i for i, group in enumerate(groups) for _ in group], dtype=torch.long)
        cand_keys = [candidates[i].strip() for i in owners.tolist()]
        ref_keys = [r.strip() for r in flat_refs]
        whole = None
        if weights is None and self.settings.idf_is_per_call:  # idf needs every reference before a match
            whole = self.tokenize(candidates + flat_refs)
            weights = self.weights_for(flat_refs, whole)
        weights = weights if weights is not None else self.settings.idf_weights
        input_notes.note_call(self.settings, weights, notes)
        findings = input_notes.TextFindings()
        pair_scores = score_in_blocks(self, cand_keys, ref_keys, whole, weights, verbose, batch_size,
                                      lambda _, token_ids: findings.add(self.settings, token_ids, weights), progress)
        input_notes.note_texts(self.settings, candidates, groups, findings, notes)
        return self.finish(pair_scores, owners, len(candidates)), weights

    def score_aligned(
        self,
        cands: Sequence[str],
        refs: Sequence[str],
        weights: TokenWeights | None,
        verbose: bool,
        batch_size: int | None,
        warn_empty: bool,
        notes: list[str] | None,
    ) -> torch.Tensor:
        """Raw scores [n, 3] (or [n, K, 3]) of aligned pairs; pairs with an empty side get one note."""
        cand_keys = [c.strip() for c in cands]
        ref_keys = [r.strip() for r in refs]
        whole = None
        if weights is None and self.settings.idf_is_per_call:
            whole = self.tokenize(list(cands) + list(refs))
            weights = self.weights_for(ref_keys, whole)
        weights = weights if weights is not None else self.settings.idf_weights
        empty: list[int] = []

        def find_empty(positions: list[int], token_ids: TokenStore) -> None:
            is_empty = self.settings.is_empty
            empty.extend(i for i in positions
                         if is_empty(token_ids, cand_keys[i]) or is_empty(token_ids, ref_keys[i]))

        scores = score_in_blocks(self, cand_keys, ref_keys, whole, weights, verbose, batch_size, find_empty)
        if warn_empty and empty:
            report(f"no content tokens in pair {name_some([str(i) for i in sorted(empty)])}: "
                   "their raw scores are 0", notes)
        return scores

    def finish(self, pair_scores: torch.Tensor, owners: torch.Tensor, num_candidates: int) -> Scores:
        """P, R, F from raw pair scores [n, 3] ([n, K, 3]), owners[i] = the candidate of pair i.

        The max over each candidate's references per column, then rescaling, then the
        official layout ([K, N] per column with all layers).
        """
        shape = (num_candidates,) + tuple(pair_scores.shape[1:])
        best = torch.full(shape, float("-inf"), dtype=torch.float32).scatter_reduce(
            0, owners.view(-1, *([1] * (pair_scores.dim() - 1))).expand_as(pair_scores), pair_scores, "amax"
        )
        if self.settings.baseline is not None:
            best = baseline_tables.rescale(best, self.settings.baseline)
        if self.settings.all_layers:
            best = best.transpose(0, 1)  # [K, N, 3], as the official package
        return best[..., 0].contiguous(), best[..., 1].contiguous(), best[..., 2].contiguous()

    # ----- pairs -> raw scores, chunk by chunk ----------------------------------------------------
    def score_pairs(
        self,
        cand_keys: list[str],
        ref_keys: list[str],
        token_ids: TokenStore,
        weights: TokenWeights,
        verbose: bool = False,
        batch_size: int | None = None,
        progress: Any = None,
        reuse: CallReuse | None = None,
        in_order: bool = False,
    ) -> torch.Tensor:
        """Raw scores of aligned pairs of stripped texts, chunk by chunk (`progress`, `reuse`: the call's, else own;
        `in_order`: a streamed block, already in `plan.stream_order`, is not sorted again).

        Every chunk is first scored exactly as in truncate mode: the texts cut at the content
        limit (`TokenStore.head`), embedded and matched in the same batches. In window mode,
        the pairs with a long side are then scored again from whole-text embeddings, in
        sub-chunks bounded by their size. Texts within the limit thus meet the encoder and the
        matching in the same batches in both modes: bit-identical numbers (batch composition
        changes float rounding at the 1e-7 level). Window 0 of a long text is its truncated
        text, so its pass-1 states are reused, not encoded again.
        """
        settings = self.settings
        layers = (settings.score_layers,) if settings.all_layers else ()
        scores = torch.zeros((len(cand_keys),) + layers + (3,), dtype=torch.float32)
        empty_keys = settings.empty_texts(token_ids)
        empty = {i for i, (c, r) in enumerate(zip(cand_keys, ref_keys))
                 if c in empty_keys or r in empty_keys} if empty_keys else set()
        limit = self.model.content_limit
        head_length = token_ids.head_lengths(limit).__getitem__

        order = plan.chunk_order(cand_keys, ref_keys, head_length, empty, presorted=in_order)
        own_bar = progress is None
        progress = tqdm(total=len(cand_keys), disable=not verbose, desc="BERTScore", unit="pair") if own_bar else progress
        progress.update(len(empty))
        reuse = reuse if reuse is not None else CallReuse(cand_keys, ref_keys)
        reuse.done(cand_keys, ref_keys, empty)
        for chunk in plan.chunks(order, cand_keys, ref_keys, head_length, settings.chunk_size, self.floats_per_token):
            needed = list(dict.fromkeys([cand_keys[i] for i in chunk] + [ref_keys[i] for i in chunk]))
            long_pairs = [] if settings.window is None else [
                i for i in chunk
                if settings.is_windowed(token_ids, cand_keys[i]) or settings.is_windowed(token_ids, ref_keys[i])]
            heads = dict(zip(needed, token_ids.heads(needed, limit)))
            advance = _advancer(progress, len(chunk) - len(long_pairs), len(needed))
            held = reuse.held(needed)
            todo = [k for k in needed if k not in held] if held else needed

            def match(embeddings: dict[str, torch.Tensor]) -> Fetch | None:  # queued while the device still encodes
                embeddings.update(held)
                matched = match_pairs(chunk, cand_keys, ref_keys, embeddings, heads, weights, head_length,
                                      self.floats_per_token, settings.score_layers)
                return None if matched is None else Fetch(matched.values, partial(matched.write, scores))

            # One wait for the device per chunk: the scores come back with the overflow flags.
            embeddings = self.embedder.embed(todo, [heads[k] for k in todo], advance, batch_size, before_check=match)
            advance(len(needed))
            del heads
            if long_pairs:
                self._score_long_pairs(long_pairs, cand_keys, ref_keys, token_ids, weights, embeddings,
                                       scores, progress, batch_size)
            reuse.done(cand_keys, ref_keys, chunk, embeddings)
            del embeddings, held
        if own_bar:
            progress.close()
        return scores

    def _score_long_pairs(
        self,
        pairs: list[int],
        cand_keys: list[str],
        ref_keys: list[str],
        token_ids: TokenStore,
        weights: TokenWeights,
        first_windows: dict[str, torch.Tensor],
        scores: torch.Tensor,
        progress: Any,
        batch_size: int | None,
    ) -> None:
        """Score pairs with a windowed side from whole-text embeddings (window mode).

        Sub-chunks hold about CHUNK_EMBEDDING_BYTES of whole-text embeddings; the texts within
        the limit are already embedded (`first_windows` holds the chunk's pass-1 embeddings).
        """
        is_windowed = self.settings.is_windowed

        def whole_length(key: str) -> int:
            return token_ids.length(key) if is_windowed(token_ids, key) else 0

        for sub in plan.chunks(pairs, cand_keys, ref_keys, whole_length, self.settings.chunk_size,
                               self.floats_per_token):
            texts = list(dict.fromkeys([cand_keys[i] for i in sub] + [ref_keys[i] for i in sub]))
            long_keys = [k for k in texts if is_windowed(token_ids, k)]
            advance = _advancer(progress, len(sub), len(long_keys))
            embeddings = dict(first_windows)
            embeddings.update(self.embedder.embed_windows(
                long_keys, [token_ids[k] for k in long_keys], self.settings.window, first_windows=first_windows,
                on_progress=advance, batch_size=batch_size,
            ))
            matched = match_pairs(sub, cand_keys, ref_keys, embeddings, {k: token_ids[k] for k in texts}, weights,
                                  token_ids.length, self.floats_per_token, self.settings.score_layers)
            if matched is not None:
                matched.write(scores, matched.values.cpu())
            advance(len(long_keys))
            del embeddings

    # ----- inspection -----------------------------------------------------------------------------
    def embed_texts(self, keys: Sequence[str], token_ids: TokenStore) -> dict[str, torch.Tensor]:
        """Embeddings of distinct stripped texts as `score()` matches them: cut at the limit, or
        whole (through windows) in window mode. One pass, no chunking: for inspecting a few texts."""
        limit = self.model.content_limit
        embeddings = self.embedder.embed(keys, [token_ids.head(k, limit) for k in keys])
        long_keys = [k for k in keys if self.settings.is_windowed(token_ids, k)]
        if long_keys:
            embeddings.update(self.embedder.embed_windows(
                long_keys, [token_ids[k] for k in long_keys], self.settings.window, first_windows=embeddings
            ))
        return embeddings


def score_in_blocks(
    pipeline: Pipeline,
    cand_keys: list[str],
    ref_keys: list[str],
    token_ids: TokenStore | None,
    weights: TokenWeights,
    verbose: bool,
    batch_size: int | None,
    on_block: Callable[[list[int], TokenStore], None],
    progress: Any = None,
) -> torch.Tensor:
    """Raw scores of aligned pairs of stripped texts, block by block (`plan.stream_blocks`): the
    schedule of `Pipeline.score_groups` and `score_aligned` around `Pipeline.score_pairs`.

    With `token_ids` (every text already tokenized: per-call idf), the call is one block.
    Otherwise a call longer than a chunk is taken in `plan.stream_order`, in blocks; each
    block is tokenized while the one before it is scored (`tokenize_ahead`) where a core is
    free for it (on one thread where the encoder runs on the CPU, as the user set the tokenizers
    library's parallelism on an accelerator). The blocks are the same either way, and so are the numbers.
    `on_block(positions, tokens)` sees each block's tokens before it is scored. `progress`: a bar
    to move (the caller's, left open), else one of its own when `verbose`.
    """
    layers = (pipeline.settings.score_layers,) if pipeline.settings.all_layers else ()
    scores = torch.zeros((len(cand_keys),) + layers + (3,), dtype=torch.float32)
    own_bar = progress is None
    if own_bar:
        progress = tqdm(total=len(cand_keys), disable=not verbose, desc="BERTScore", unit="pair")
    chunk_size = pipeline.settings.chunk_size
    streamed = token_ids is None and len(cand_keys) > chunk_size  # sorted here, so not again per block
    if not streamed:
        block_ranges, order = [range(len(cand_keys))], list(range(len(cand_keys)))
    else:
        order = plan.stream_order(cand_keys, ref_keys)
        block_ranges = plan.stream_blocks([plan.pair_cost(cand_keys[i], ref_keys[i]) for i in order], chunk_size)
    cand_keys, ref_keys = [cand_keys[i] for i in order], [ref_keys[i] for i in order]
    reuse = CallReuse(cand_keys, ref_keys)  # a text in several blocks is embedded once
    if token_ids is not None:
        blocks: Iterator[tuple[range, TokenStore]] = (block for block in [(block_ranges[0], token_ids)])
    else:
        device = pipeline.model.device
        ahead = pipeline.model.tokenizes_without_gil and tokenize_ahead.core_is_free(device)
        blocks = tokenize_ahead.tokenized_blocks(pipeline.tokenize, cand_keys, ref_keys, block_ranges, ahead)
    with contextlib.closing(blocks):  # leaving early: the block in flight is waited for
        for block, block_ids in blocks:
            positions = order[block.start:block.stop]
            on_block(positions, block_ids)
            scores[positions] = pipeline.score_pairs(
                cand_keys[block.start:block.stop], ref_keys[block.start:block.stop], block_ids, weights,
                batch_size=batch_size, progress=progress, reuse=reuse, in_order=streamed,
            )
    if own_bar:
        progress.close()
    return scores


class HasPipeline(Protocol):
    """What scores through a `Pipeline` (a `BERTScorer`): all that `explain_pair` and `plot` need."""

    pipeline: Pipeline


class MatchedScores(NamedTuple):
    """Scores of pairs still on the device (`match_pairs`): read them once, when the host needs them."""

    positions: list[int]  # the pair of each row of `values`
    values: torch.Tensor  # [n, 3] or [n, K, 3], float32, on the device

    def write(self, scores: torch.Tensor, host_values: torch.Tensor) -> None:
        """`host_values` (the host copy of `values`) into `scores` at the pairs' positions."""
        scores[torch.tensor(self.positions)] = host_values


@torch.inference_mode()
def match_pairs(
    pairs: list[int],
    cand_keys: list[str],
    ref_keys: list[str],
    embeddings: Mapping[str, torch.Tensor],
    text_ids: Mapping[str, np.ndarray],
    weights: TokenWeights,
    length: Callable[[str], int],
    floats_per_token: int,
    layers: int,
) -> MatchedScores | None:
    """Greedy matching of `pairs`: padded batches through `greedy_match`, and a pair whose
    similarity alone exceeds the batch budget through `greedy_match_tiled` (`plan.match_batches`
    groups them; `length(key)` is a text's embedding rows, `text_ids[key]` its ids as embedded,
    whose `weights` each batch looks up at once). Nothing is read back here: the scores stay on
    the device (None for no pairs), so the host queues batch after batch while the device computes,
    and the caller reads them in one copy when it needs them."""
    positions: list[int] = []
    results: list[torch.Tensor] = []
    with full_fp32_precision():
        for batch, tiled in plan.match_batches(pairs, cand_keys, ref_keys, length, floats_per_token, layers):
            cands, refs = _gather(cand_keys, batch), _gather(ref_keys, batch)
            if tiled:
                cand_emb, ref_emb = embeddings[cands[0]], embeddings[refs[0]]
                device = cand_emb.device
                precision, recall, f1 = greedy_match_tiled(
                    cand_emb, None, _weights_of(weights, text_ids, cands).to(device),
                    ref_emb, None, _weights_of(weights, text_ids, refs).to(device), MATCH_TILE_BYTES
                )
                precision, recall, f1 = precision[None], recall[None], f1[None]
            else:
                precision, recall, f1 = greedy_match(
                    *pad_sequences(_gather(embeddings, cands), _weights_of(weights, text_ids, cands)),
                    *pad_sequences(_gather(embeddings, refs), _weights_of(weights, text_ids, refs)),
                )
            positions += batch
            results.append(torch.stack((precision, recall, f1), dim=-1))
    return MatchedScores(positions, torch.cat(results)) if results else None


def _gather(values: Sequence | Mapping, keys: Sequence) -> list:
    """values[k] for each k of keys (one C-level pass)."""
    return list(map(values.__getitem__, keys))


def _weights_of(weights: TokenWeights, text_ids: Mapping[str, np.ndarray], keys: Sequence[str]) -> torch.Tensor:
    """The token weights of `keys`' texts end to end, [sum L], in one lookup on the host."""
    return weights.table[torch.from_numpy(np.concatenate(_gather(text_ids, keys)).astype(np.int64))]


def _advancer(progress: Any, pairs: int, texts: int) -> Callable[[int], None]:
    """on_progress for an embedding step: moves the bar (in pairs) by `pairs` as `texts` texts embed."""
    shown = [0]

    def advance(texts_done: int) -> None:
        target = pairs * min(texts_done, texts) // max(texts, 1)
        progress.update(target - shown[0])
        shown[0] = target

    return advance
