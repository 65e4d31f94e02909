"""BERTScorer and score(): the front of the core, a thin facade over its rooms.

Options are checked and resolved into frozen settings (`settings.py`); the scoring steps live
in `pipeline.py`; the official package's attribute and method names in `official.py`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any, Sequence

import torch

from .inputs import check_whole_number, normalize_inputs
from .models.devices import resolve_placement
from .models.fork_safety import fork_safe
from .models.loading import LoadedModel
from .models.shared import SHARED_MODELS
from .official import OfficialSurface
from .scoring import all_pairs
from .scoring.embed import DEFAULT_CACHE_BYTES, Embedder, EmbeddingCache
from .scoring.hashcode import ScoreSettings
from .scoring.idf import TokenWeights
from .scoring.pipeline import Pipeline, Scores
from .scoring.plan import DEFAULT_CHUNK_PAIRS
from .scoring.settings import (
    check_loaded_model, check_long_texts, lang_default_failure, resolve_model_type, resolve_settings,
)

logger = logging.getLogger(__name__)


class BERTScorer(OfficialSurface):
    """A loaded model plus scoring settings; `score()` can be called many times.

    Drop-in for the official `bert_score.BERTScorer`, with: `idf=True` alone computes idf from
    each call's references; `idf` may also be a token-id -> weight mapping, a list of texts or
    a `TokenWeights` table; `batch_size` caps sentences per encoder batch next to the token
    budget `max_tokens_per_batch`; `dtype` sets the encoder precision ("auto": bf16 where the
    hardware computes it natively, else fp32); embeddings are cached (`cache_bytes`, 0 turns
    the cache off; `cache_device="cpu"` keeps GPU embeddings in host memory); work runs in
    chunks of `chunk_size` pairs. `long_texts="window"` scores texts longer than the encoder's
    limit whole, through overlapping windows every `window_stride` content tokens (default half
    the window; see bertscore/scoring/windows.py); the default `"truncate"` cuts them at the limit as the
    official package does, with a note naming them. A scorer built without `loaded_model` takes the encoder
    this process already loaded for the same model, layer, device and dtype (`bertscore.models.shared`;
    `bertscore.release_models()` frees the kept ones). `loaded_model` and `cache` let several scorers share one
    encoder and one cache (see `bertscore.pool`); a shared encoder is never moved or cast.
    `nthreads` and `use_fast_tokenizer` are kept for compatibility (and for `official_hash`)
    and change nothing: the fast tokenizer is always used (on transformers 5 it is the only
    one) and idf counting needs no process pool.
    """

    @fork_safe
    def __init__(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        batch_size: int | None = 64,
        nthreads: int = 4,
        all_layers: bool = False,
        idf: bool | Mapping[int, float] | Sequence[str] | TokenWeights = False,
        idf_sents: Sequence[str] | None = None,
        device: str | torch.device | None = None,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        use_fast_tokenizer: bool = False,
        dtype: str | torch.dtype | None = None,
        max_tokens_per_batch: int | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        chunk_size: int = DEFAULT_CHUNK_PAIRS,
        loaded_model: LoadedModel | None = None,
        cache: EmbeddingCache | None = None,
        cache_device: str | torch.device | None = None,
        long_texts: str = "truncate",
        window_stride: int | None = None,
    ):
        lang = lang.lower() if isinstance(lang, str) else lang
        check_long_texts(long_texts, window_stride)
        chosen_by_lang = model_type is None and loaded_model is None and lang is not None
        model_type = resolve_model_type(model_type, lang, loaded_model)
        # Sizes are whole numbers >= 1: 2.5 or True were used as sizes, and max_tokens_per_batch=0 was
        # read as the default, silently; a string was a bare TypeError from a comparison.
        check_whole_number(batch_size, "batch_size", 1, "None: no sentence cap")
        check_whole_number(chunk_size, "chunk_size")
        check_whole_number(max_tokens_per_batch, "max_tokens_per_batch", 1, "None: the device's default")
        if loaded_model is not None:
            check_loaded_model(loaded_model, model_type, num_layers, all_layers)
        self.model_type, self.lang, self.long_texts = model_type, lang, long_texts
        self.batch_size, self.chunk_size, self.nthreads = batch_size, chunk_size, nthreads
        self.use_fast_tokenizer = use_fast_tokenizer
        self.rescale_with_baseline, self.baseline_path = rescale_with_baseline, baseline_path
        self.device, self.dtype = resolve_placement(device, dtype)
        if loaded_model is not None:
            self.model = loaded_model.with_placement(self.device, self.dtype)
        else:
            # The encoder already loaded in this process for these settings, if any (models/shared.py).
            try:
                self.model = SHARED_MODELS.get(model_type, num_layers, all_layers, self.device, self.dtype)
            except OSError as error:
                if not chosen_by_lang:
                    raise
                raise lang_default_failure(lang, model_type, error) from error
        self.num_layers, self.all_layers = self.model.num_layers, self.model.all_layers
        settings = resolve_settings(
            self.model, model_type, lang, self.device, self.dtype, long_texts, window_stride, idf, idf_sents,
            rescale_with_baseline, baseline_path, chunk_size,
        )
        self.cache = cache if cache is not None else EmbeddingCache(cache_bytes, cache_device)
        # The cache key carries every embedding setting (idf and rescaling do not change embeddings).
        embedding_key = (model_type, self.model.revision, self.num_layers, self.all_layers,
                         self.model.max_length, self.model.add_prefix_space, self.dtype, self.device.type)
        self.embedder = Embedder(self.model, max_tokens_per_batch, batch_size, self.cache, embedding_key)
        self.pipeline = Pipeline(settings, self.embedder)
        # What a copy is built from (`__reduce__`): the options as resolved, so that two scorers built
        # alike (num_layers=None or the default layer, a shared encoder or not) describe themselves alike.
        self._options: dict[str, Any] = dict(
            model_type=model_type, num_layers=num_layers if self.all_layers else self.num_layers,
            batch_size=batch_size, nthreads=nthreads, all_layers=self.all_layers, device=str(self.device), lang=lang,
            rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path,
            use_fast_tokenizer=use_fast_tokenizer, dtype=self.dtype,
            max_tokens_per_batch=self.embedder.max_tokens_per_batch, cache_bytes=self.cache.max_bytes,
            chunk_size=chunk_size, cache_device=None if self.cache.device is None else str(self.cache.device),
            long_texts=long_texts, window_stride=self.window_stride,
        )

    def __reduce__(self) -> tuple:
        """A scorer pickles (and hashes, for datasets' map fingerprint) as its settings: never its
        weights or its embedding cache. Unpickling (a `num_proc` worker, `copy.deepcopy`) loads the
        model again from the same options; idf weights travel as their table (see `rebuilt_scorer`)."""
        settings = self.pipeline.settings
        weights = None if settings.idf_mode in ("no-idf", "idf") else settings.idf_weights
        return rebuilt_scorer, (self._options, settings.idf_mode, weights, self.hash, type(self))

    @property
    def settings(self) -> ScoreSettings:
        """Everything besides the texts that enters a score (the hash is made from it)."""
        return self.pipeline.settings.signature()

    @property
    def hash(self) -> str:
        """The reproducibility hash of this scorer's settings."""
        return self.pipeline.settings.hash

    def hash_for(self, weights: TokenWeights | None = None) -> str:
        """The hash of a call given `weights=` (see `Settings.hash_for`)."""
        return self.pipeline.settings.hash_for(weights)

    @property
    def baseline(self) -> torch.Tensor | None:
        """The rescale baseline in use: [3] (P, R, F of the layer), [K, 3] with all layers, or None."""
        return self.pipeline.settings.baseline

    @property
    def window_stride(self) -> int | None:
        """The window stride in use (content tokens), or None when long texts are truncated."""
        window = self.pipeline.settings.window
        return None if window is None else window[1]

    @property
    def idf_is_per_call(self) -> bool:
        """True when idf weights come from each call's references (idf=True, no fixed texts)."""
        return self.pipeline.settings.idf_is_per_call

    def idf_weights_for(self, references: Sequence[str]) -> TokenWeights:
        """The token weights a `score()` call with these references uses."""
        return self.pipeline.weights_for(references)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(hash={self.hash!r}, device={self.device})"

    @fork_safe
    def score(
        self,
        cands: Sequence[str],
        refs: Sequence[str] | Sequence[Sequence[str]],
        verbose: bool = False,
        batch_size: int | None = None,
        return_hash: bool = False,
        notes: list[str] | None = None,
        weights: TokenWeights | None = None,
        progress: Any = None,
    ) -> Scores | tuple[Scores, str]:
        """P, R, F of each candidate against its reference(s): tensors [N] ([K, N] for all layers).

        Multi-reference: the max over a candidate's references, per column. A text with no
        content tokens scores 0 (raw), as in the official package, with one note naming it.
        `batch_size` applies to this call only. Notes (empty texts, idf weights that are all 0)
        go to `notes` when a list is given, else they are warnings (`BERTScoreNote`). `weights`
        overrides the token weights for this call: idf over a whole corpus that this call scores
        a chunk of (the CLI streams files this way). The returned hash names them (`hash_for`).
        `progress`: a tqdm bar of the caller's to advance by one per candidate-reference pair (the
        CLI's one bar over a run of many calls), instead of the call's own bar that `verbose` shows.
        """
        weights = self.pipeline.check_weights(weights)
        candidates, groups = normalize_inputs(cands, refs)
        out, used = self.pipeline.score_groups(candidates, groups, weights, verbose, batch_size, notes, progress)
        return (out, self.hash_for(used)) if return_hash else out

    @fork_safe
    def score_pairs(
        self,
        cands: Sequence[str],
        refs: Sequence[str],
        verbose: bool = False,
        warn_empty: bool = True,
        weights: TokenWeights | None = None,
        batch_size: int | None = None,
        notes: list[str] | None = None,
    ) -> torch.Tensor:
        """Raw (not rescaled) scores [n, 3] (or [n, K, 3]) of aligned candidate/reference pairs.

        A pair with an empty side (no content tokens) scores 0, with one note naming the pairs.
        `weights` overrides the scorer's token weights (e.g. idf over a corpus this call sees a
        shard of).
        """
        weights = self.pipeline.check_weights(weights)
        return self.pipeline.score_aligned(cands, refs, weights, verbose, batch_size, warn_empty, notes)


    @fork_safe
    def score_matrix(
        self,
        cands: Sequence[str],
        refs: Sequence[str],
        batch_size: int | None = None,
        return_hash: bool = False,
        notes: list[str] | None = None,
        weights: TokenWeights | None = None,
    ) -> Scores | tuple[Scores, str]:
        """P, R, F of every candidate against every reference: tensors [len(cands), len(refs)]
        ([K, len(cands), len(refs)] with all layers); entry (i, j) is `score([cands[i]], [refs[j]])`.

        For MBR decoding, reranking and group rewards (see `bertscore.mbr`). Each distinct text is
        embedded once and pairs are matched in blocks of bounded size (`bertscore/scoring/all_pairs.py`).
        `idf=True` means idf over `refs` as given (each entry one document), where `score()` would
        count each reference once per pair; fixed weights (texts, a mapping, a `TokenWeights`, or
        `weights=` for this call) apply as in `score()`. Rescaling and windows apply as in `score()`.
        """
        weights = self.pipeline.check_weights(weights)
        out, used = all_pairs.score_matrix(self.pipeline, cands, refs, weights, batch_size, notes)
        return (out, self.hash_for(used)) if return_hash else out


def rebuilt_scorer(
    options: dict[str, Any], idf_mode: str, weights: TokenWeights | None, expected_hash: str,
    kind: type[BERTScorer] | None = None,
) -> BERTScorer:
    """The scorer that `BERTScorer.__reduce__` describes: built from `options`, with the token
    weights (and the label the hash gives them) of the original. A copy whose hash differs (another
    transformers or tokenizers version in this process, say) is logged: its numbers carry its own hash."""
    scorer = (kind or BERTScorer)(**options, idf=idf_mode == "idf")  # a subclass (the drop-in's) stays one
    if weights is not None:
        settings = scorer.pipeline.settings
        weights.check(settings.model.vocab_size, "idf token weights")
        scorer.pipeline.settings = dataclasses.replace(settings, idf_mode=idf_mode, idf_weights=weights)
    if scorer.hash != expected_hash:
        logger.warning("a copy of the scorer %s was rebuilt here as %s: its scores carry the new hash",
                       expected_hash, scorer.hash)
    return scorer


def score(
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    model_type: str | None = None,
    num_layers: int | None = None,
    verbose: bool = False,
    idf: bool | Mapping[int, float] | Sequence[str] = False,
    device: str | torch.device | None = None,
    batch_size: int | None = 64,
    nthreads: int = 4,
    all_layers: bool = False,
    lang: str | None = None,
    return_hash: bool = False,
    rescale_with_baseline: bool = False,
    baseline_path: str | None = None,
    use_fast_tokenizer: bool = False,
    dtype: str | torch.dtype | None = None,
    max_tokens_per_batch: int | None = None,
    notes: list[str] | None = None,
    long_texts: str = "truncate",
    window_stride: int | None = None,
) -> Scores | tuple[Scores, str]:
    """BERTScore P, R, F of candidates against references (drop-in for `bert_score.score`).

    `idf=True` weighs tokens by idf over the references (multi-references flattened); a mapping
    token-id -> weight or a list of texts may be given instead. Returns tensors of shape [N]
    ([K, N] with `all_layers`), and the hash as `((P, R, F), hash)` when `return_hash`.
    `notes`: a list that receives the call's notes instead of UserWarnings. `long_texts`:
    "truncate" (default, as the official package: texts past the model's limit are cut, with a
    note naming them) or "window" (whole texts through overlapping windows every
    `window_stride` content tokens, default half a window).
    """
    scorer = BERTScorer(
        model_type=model_type, num_layers=num_layers, batch_size=batch_size, nthreads=nthreads,
        all_layers=all_layers, idf=idf, device=device, lang=lang, rescale_with_baseline=rescale_with_baseline,
        baseline_path=baseline_path, use_fast_tokenizer=use_fast_tokenizer, dtype=dtype,
        max_tokens_per_batch=max_tokens_per_batch, cache_bytes=0, long_texts=long_texts, window_stride=window_stride,
    )
    return scorer.score(cands, refs, verbose=verbose, return_hash=return_hash, notes=notes)
