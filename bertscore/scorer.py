"""BERTScorer and score(): orchestrate tokenising, embedding, matching, idf and rescaling.

The work runs in chunks of pairs (embed, match, release), so peak memory depends on the
chunk and batch sizes, not on the corpus; embeddings are reused through a bounded cache.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from . import baselines
from .devices import full_fp32_precision, reduced_precision_note, resolve_dtype
from .embed import DEFAULT_CACHE_BYTES, Embedder, EmbeddingCache, resolve_device
from .hashcode import ScoreSettings
from .idf import TokenWeights
from .inputs import InputError, InputTypeError, as_list, check_text, normalize_inputs
from .matching import MATCH_TILE_BYTES, greedy_match, greedy_match_tiled, pad_sequences
from .models import LoadedModel, default_model_for_lang, load_model, tokenizer_library_versions
from .notes import advice, name_some, report, setting
from .tokens import TokenStore
from .version import __version__
from .windows import WindowSettingError, resolve_stride

logger = logging.getLogger(__name__)

DEFAULT_CHUNK_PAIRS = 2048
CHUNK_EMBEDDING_BYTES = 256 << 20  # embeddings held at once per chunk (tokens x layers x hidden x 4 B)
MATCH_BATCH_BYTES = 64 << 20  # padded embeddings + similarities of one matching batch
MAX_PAIRS_PER_MATCH = 1024
LONG_TEXT_MODES = ("truncate", "window")

Scores = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
OFFICIAL_VERSION = "0.3.12"  # what bert-score 0.3.13, the release we reproduce, writes into its hash


def _check_loaded_model(
    loaded: LoadedModel, model_type: str, num_layers: int | None, all_layers: bool
) -> None:
    """A shared `loaded_model` must be the model these settings ask for: never silently another."""
    if model_type != loaded.name:
        raise InputError(
            f"model_type={model_type!r} but loaded_model is {loaded.name!r}: pass the loaded model's "
            "name (or model_type=None), or load the model you mean"
        )
    if num_layers is not None and num_layers != loaded.num_layers:
        raise InputError(
            f"num_layers={num_layers} but loaded_model is truncated at layer {loaded.num_layers}: "
            "load the model at the layer you mean (or pass num_layers=None)"
        )
    if bool(all_layers) != loaded.all_layers:
        raise InputError(
            f"all_layers={bool(all_layers)} but loaded_model was loaded with all_layers={loaded.all_layers}: "
            "load it with the same all_layers"
        )


def _check_size(value: Any, name: str, none_means: str | None = None) -> None:
    """InputError unless `value` is a whole number >= 1 (or None where `none_means` says what None does)."""
    if value is None and none_means is not None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        alternative = f" (or {none_means})" if none_means else ""
        raise InputError(f"{name} must be a whole number >= 1{alternative}, got {value!r}")


def _check_long_texts(long_texts: object, window_stride: object) -> None:
    """A ValueError naming a long-text setting that is not one (the stride's range is checked
    against the model's window later, in `resolve_stride`)."""
    if not isinstance(long_texts, str) or long_texts not in LONG_TEXT_MODES:
        raise WindowSettingError(
            f"long_texts={long_texts!r} is not a mode: use 'truncate' (the default: cut at the model's limit, "
            "as the official package) or 'window' (whole texts through overlapping windows)"
        )
    if window_stride is not None and long_texts != "window":
        raise WindowSettingError(
            f"window_stride={window_stride!r} applies to long_texts='window' only (long_texts={long_texts!r})"
        )


def _text_fingerprint(texts: Sequence[str]) -> str:
    import hashlib

    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()[:10]


class BERTScorer:
    """A loaded model plus scoring settings; `score()` can be called many times.

    Drop-in for the official `bert_score.BERTScorer`, with: `idf=True` alone computes idf from
    each call's references; `idf` may also be a token-id -> weight mapping, a list of texts or
    a `TokenWeights` table; `batch_size` caps sentences per encoder batch next to the token
    budget `max_tokens_per_batch`; `dtype` sets the encoder precision ("auto": bf16 where the
    hardware computes it natively, else fp32); embeddings are cached (`cache_bytes`, 0 turns
    the cache off; `cache_device="cpu"` keeps GPU embeddings in host memory); work runs in
    chunks of `chunk_size` pairs. `long_texts="window"` scores texts longer than the encoder's
    limit whole, through overlapping windows every `window_stride` content tokens (default half
    the window; see bertscore/windows.py); the default `"truncate"` cuts them at the limit as the
    official package does, with a note naming them. `loaded_model` and `cache` let several scorers share one
    encoder and one cache (see `bertscore.pool`); a shared encoder is never moved or cast.
    `nthreads` and `use_fast_tokenizer` are kept for compatibility (and for `official_hash`)
    and change nothing: the fast tokenizer is always used (on transformers 5 it is the only
    one) and idf counting needs no process pool.
    """

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
        _check_long_texts(long_texts, window_stride)
        if model_type is None and loaded_model is not None:
            model_type = loaded_model.name
        if model_type is None:
            if lang is None:
                raise InputError(
                    "pass model_type=... or lang=... (e.g. lang='en' -> roberta-large; offline, "
                    "model_type='sentence-transformers/all-MiniLM-L6-v2')"
                )
            model_type = default_model_for_lang(lang)
        # Sizes are whole numbers >= 1: 2.5 or True were used as sizes, and max_tokens_per_batch=0 was
        # read as the default, silently; a string was a bare TypeError from a comparison.
        _check_size(batch_size, "batch_size", "None: no sentence cap")
        _check_size(chunk_size, "chunk_size")
        _check_size(max_tokens_per_batch, "max_tokens_per_batch", "None: the device's default")
        if loaded_model is not None:
            _check_loaded_model(loaded_model, model_type, num_layers, all_layers)
        self.model_type = model_type
        self.lang = lang
        self.batch_size = batch_size
        self.nthreads = nthreads
        self.use_fast_tokenizer = use_fast_tokenizer
        self.chunk_size = chunk_size
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        if loaded_model is not None:
            self.model = loaded_model.with_placement(self.device, self.dtype)
        else:
            self.model = load_model(model_type, num_layers, all_layers, device=self.device, dtype=self.dtype)
        self.num_layers = self.model.num_layers
        self.all_layers = self.model.all_layers
        self.long_texts = long_texts
        self._window = self._resolve_window(long_texts, window_stride)
        self._idf_mode, self._idf_weights = self._resolve_idf(idf, idf_sents)
        self.rescale_with_baseline = rescale_with_baseline
        self.baseline_path = baseline_path
        self._baseline, rescale_tag = self._resolve_baseline(rescale_with_baseline, baseline_path, lang)
        self._rescale_tag = rescale_tag
        self.cache = cache if cache is not None else EmbeddingCache(cache_bytes, cache_device)
        # The cache key carries every embedding setting (idf and rescaling do not change embeddings).
        embedding_key = (model_type, self.model.revision, self.num_layers, self.all_layers,
                         self.model.max_length, self.model.add_prefix_space, self.dtype, self.device.type)
        self.embedder = Embedder(self.model, max_tokens_per_batch, batch_size, self.cache, embedding_key)

    @property
    def settings(self) -> ScoreSettings:
        """Everything besides the texts that enters a score (the hash is made from it)."""
        import transformers

        tokenizers_version, sentencepiece_version = tokenizer_library_versions(self.model.tokenizer)
        return ScoreSettings(
            model=self.model_type,
            revision=self.model.revision,
            num_layers=self.num_layers,
            all_layers=self.all_layers,
            idf=self._idf_mode,
            rescale=self._rescale_tag,
            max_length=self.model.max_length,
            long_texts="truncate" if self._window is None else "window={}/{}".format(*self._window),
            prefix_space=self.model.add_prefix_space,
            dtype=self.dtype,
            device=self.device.type,
            version=__version__,
            transformers_version=transformers.__version__,
            torch_version=torch.__version__.split("+")[0],
            tokenizers_version=tokenizers_version,
            sentencepiece_version=sentencepiece_version,
        )

    # ----- settings -------------------------------------------------------------------------
    def _resolve_window(self, long_texts: str, window_stride: int | None) -> tuple[int, int] | None:
        """(W, S) when long texts are windowed; None when they are truncated.

        W is the model's content limit (max length minus its special tokens). A model with no
        fixed position limit (T5, XLNet) keeps truncating at max_length: windows would not
        change what it can read.
        """
        if long_texts != "window":
            return None
        window = resolve_stride(self.model.content_limit, window_stride)
        if not self.model.position_limit:
            logger.warning(
                "%s has no fixed position limit: %s does not apply to it, and texts longer than max_length=%d "
                "are truncated as before", self.model_type, setting("long_texts", "window"), self.model.max_length,
            )
            return None
        return window

    @property
    def window_stride(self) -> int | None:
        """The window stride in use (content tokens), or None when long texts are truncated."""
        return None if self._window is None else self._window[1]

    def _resolve_idf(
        self, idf: Any, idf_sents: Sequence[str] | None
    ) -> tuple[str, TokenWeights | None]:
        vocab, special = self.model.vocab_size, self.model.zero_weight_ids
        if isinstance(idf, TokenWeights):
            # By content, whatever its label says: two tables never share a hash. A copy: the
            # caller editing its tensor later must not change the numbers under this hash.
            idf.check(vocab, "idf token weights")
            return f"idf-weights:{idf.fingerprint()}", TokenWeights(idf.table.clone(), idf.label, idf.default)
        if isinstance(idf, Mapping):
            weights = TokenWeights.from_mapping(idf, vocab).check(vocab, "idf mapping weights")
            return str(weights.label), weights
        forms = "idf must be True/False, a list of texts, a token-id -> weight mapping or TokenWeights"
        if isinstance(idf, str):
            raise InputTypeError(f"{forms}, got one str (wrap a single text in a list: [text])")
        texts_name = "idf_sents"
        if getattr(idf, "ndim", 1) == 1 and (texts := as_list(idf, "idf")) is not None:
            idf_sents, idf, texts_name = texts, True, "idf"  # a list, tuple, array or Series of texts
        if idf is not None and not isinstance(idf, (bool, int)) and getattr(idf, "ndim", None) != 0:  # bool_ is fine
            raise InputTypeError(f"{forms}, got a {type(idf).__name__}")
        if not idf:
            return "no-idf", TokenWeights.uniform(vocab, special)
        if idf_sents is not None:
            texts = as_list(idf_sents, texts_name)
            if texts is None:
                hint = " (wrap a single text in a list: [text])" if isinstance(idf_sents, str) else ""
                raise InputTypeError(f"{texts_name} must be a list of strings, got {type(idf_sents).__name__}{hint}")
            texts = [check_text(text, f"{texts_name}[{index}]") for index, text in enumerate(texts)]
            if not texts:
                raise InputError(f"{texts_name} is empty: pass the texts to compute idf from, or idf=False")
            label = f"idf-sents:{_text_fingerprint(texts)}"
            return label, TokenWeights.from_documents(self.document_ids(texts), vocab, special, label)
        return "idf", None  # computed from each call's references

    def _resolve_baseline(
        self, rescale: bool, baseline_path: str | None, lang: str | None
    ) -> tuple[torch.Tensor | None, str]:
        if not rescale:
            return None, ""
        if baseline_path is not None:
            path, tag = baseline_path, f"rescaled-custom:{baselines.file_fingerprint(baseline_path)}"
        else:
            path = baselines.packaged_baseline_path(self.model_type, lang)
            tag = f"rescaled-{baselines.packaged_language(path)}"
        table = baselines.load_baseline(path)
        total = self.model.total_layers if self.all_layers else None
        return baselines.baseline_rows(table, None if self.all_layers else self.num_layers, path, total), tag

    @property
    def baseline(self) -> torch.Tensor | None:
        """The rescale baseline in use: [3] (P, R, F of the layer), [K, 3] with all layers, or None."""
        return self._baseline

    @property
    def hash(self) -> str:
        """The reproducibility hash of this scorer's settings."""
        return self.settings.hashcode()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(hash={self.hash!r}, device={self.device})"

    # ----- official attributes ----------------------------------------------------------------
    @property
    def baseline_vals(self) -> torch.Tensor | None:
        """The official attribute name of `baseline`."""
        return self._baseline

    @property
    def idf_dict(self) -> dict[int, float] | None:
        """Token id -> weight, as the official attribute (a defaultdict); None when idf is per call."""
        if self._idf_weights is None:
            return None
        weights = self._idf_weights
        # Ids past the table weigh what the official get_idf_dict gives them: log((M + 1) / 1).
        default = 0.0 if weights.default is None else float(weights.default)
        return defaultdict(lambda: default, {i: float(w) for i, w in enumerate(weights.table.tolist())})

    def compute_idf(self, sents: Sequence[str]) -> None:
        """Fix idf weights from `sents` for every later call (the official method); the hash follows."""
        self._idf_mode, self._idf_weights = self._resolve_idf(True, sents)

    def official_hash(self) -> str:
        """The official package's hash format for these settings, for tools that parse it:
        `{model}_L{k}_{idf|no-idf}_version={v}(hug_trans={t})[-rescaled|-custom-rescaled][_fast-tokenizer]`.

        `version` is what the official release whose numbers we reproduce (bert-score 0.3.13)
        writes there. It names less than `hash` (no revision, dtype, baseline or idf source):
        prefer `hash`.
        """
        import transformers

        code = "{}_L{}{}_version={}(hug_trans={})".format(
            self.model_type, self.num_layers, "_no-idf" if self._idf_mode == "no-idf" else "_idf",
            OFFICIAL_VERSION, transformers.__version__,
        )
        if self.rescale_with_baseline:
            code += "-custom-rescaled" if self.baseline_path is not None else "-rescaled"
        if self.use_fast_tokenizer:
            code += "_fast-tokenizer"
        return code

    def plot_example(self, candidate: str, reference: str, fname: str = "") -> Any:
        """Heatmap of one pair's token similarities (the official method); saved when `fname` is given."""
        from .plot import plot_example  # lazy: plot/explain import this module

        return plot_example(self, candidate, reference, fname=fname)

    # ----- scoring --------------------------------------------------------------------------
    def score(
        self,
        cands: Sequence[str],
        refs: Sequence[str] | Sequence[Sequence[str]],
        verbose: bool = False,
        batch_size: int | None = None,
        return_hash: bool = False,
        notes: list[str] | None = None,
        weights: TokenWeights | None = None,
    ) -> Scores | tuple[Scores, str]:
        """P, R, F of each candidate against its reference(s): tensors [N] ([K, N] for all layers).

        Multi-reference: the max over a candidate's references, per column. A text with no
        content tokens scores 0 (raw), as in the official package, with one note naming it.
        `batch_size` applies to this call only. Notes (empty texts, idf weights that are all 0)
        go to `notes` when a list is given, else they are warnings (`BERTScoreNote`). `weights`
        overrides the token weights for this call: idf over a whole corpus that this call scores
        a chunk of (the CLI streams files this way). The returned hash names them (`hash_for`).
        """
        weights = self._checked(weights)
        candidates, groups = normalize_inputs(cands, refs)
        flat_refs = [ref for group in groups for ref in group]
        owners = torch.tensor([i for i, group in enumerate(groups) for _ in group], dtype=torch.long)
        token_ids = self.tokenize(candidates + flat_refs)
        if weights is None:
            weights = self.idf_weights_for(flat_refs, token_ids)
        self.note_inputs(candidates, groups, token_ids, weights, notes)
        pair_scores = self._score_pairs(
            [candidates[i].strip() for i in owners.tolist()], [r.strip() for r in flat_refs],
            token_ids, weights, verbose, batch_size,
        )
        out = self.finish_scores(pair_scores, owners, len(candidates))
        return (out, self.hash_for(weights)) if return_hash else out

    def _checked(self, weights: TokenWeights | None) -> TokenWeights | None:
        """A call's `weights=` table, checked against the vocabulary (None: the scorer's own)."""
        return None if weights is None else weights.check(self.model.vocab_size, "weights")

    def hash_for(self, weights: TokenWeights | None = None) -> str:
        """The hash of a call given `weights=`: the scorer's hash when they are its own table, or,
        on an idf=True scorer, idf counted over references (labelled "idf", e.g. the CLI's idf over
        its whole input); otherwise the hash names the table (`idf-weights:<fingerprint>`)."""
        if weights is None:
            return self.hash
        own = self._idf_weights
        if own is None and weights.label == "idf":
            return self.hash
        if own is not None and (weights is own or weights.fingerprint() == own.fingerprint()):
            return self.hash
        return dataclasses.replace(self.settings, idf=f"idf-weights:{weights.fingerprint()}").hashcode()

    def finish_scores(self, pair_scores: torch.Tensor, owners: torch.Tensor, num_candidates: int) -> Scores:
        """P, R, F from raw pair scores [n, 3] ([n, K, 3]), owners[i] = the candidate of pair i.

        The max over each candidate's references per column, then rescaling, then the
        official layout ([K, N] per column with all layers).
        """
        shape = (num_candidates,) + tuple(pair_scores.shape[1:])
        best = torch.full(shape, float("-inf"), dtype=torch.float32).scatter_reduce(
            0, owners.view(-1, *([1] * (pair_scores.dim() - 1))).expand_as(pair_scores), pair_scores, "amax"
        )
        if self.baseline is not None:
            best = baselines.rescale(best, self.baseline)
        if self.all_layers:
            best = best.transpose(0, 1)  # [K, N, 3], as the official package
        return best[..., 0].contiguous(), best[..., 1].contiguous(), best[..., 2].contiguous()

    @property
    def idf_is_per_call(self) -> bool:
        """True when idf weights come from each call's references (idf=True, no fixed texts)."""
        return self._idf_weights is None

    def tokenize(self, texts: Sequence[str]) -> TokenStore:
        """Token ids of the distinct stripped texts (an empty text has its special tokens only).

        Cut at the model's content limit (truncate mode) or whole (window mode); either way the
        store knows each text's whole content length.
        """
        model = self.model
        limit = None if self._window is not None else model.content_limit
        distinct = list(dict.fromkeys(t.strip() for t in texts))
        return TokenStore(distinct, model.content_ids, model.lead_ids, model.trail_ids, limit)

    def document_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text as idf counts them: whole texts when windowed, else as truncated."""
        return self.model.tokenize(texts, whole=self._window is not None)

    def is_empty(self, token_ids: TokenStore, key: str) -> bool:
        """No content tokens besides the special ones (the official notion of an empty text)."""
        return token_ids.length(key) <= self.model.num_special_tokens

    def is_windowed(self, token_ids: TokenStore, key: str) -> bool:
        """Whether `key` is scored through windows: window mode, and longer than the content limit."""
        return self._window is not None and token_ids.content_length(key) > self.model.content_limit

    def _weights_from(self, references: Sequence[str], token_ids: TokenStore) -> TokenWeights:
        """Per-call idf over these references (each one a document, empty ones included)."""
        documents = (token_ids[r.strip()] for r in references)
        return TokenWeights.from_documents(documents, self.model.vocab_size, self.model.zero_weight_ids, label="idf")

    def note_inputs(
        self,
        candidates: Sequence[str],
        groups: Sequence[Sequence[str]],
        token_ids: TokenStore,
        weights: TokenWeights,
        notes: list[str] | None = None,
    ) -> None:
        """Notes naming every empty text, texts whose token weights are all 0, truncated texts and
        texts that are mostly the unknown token; and reduced precision slower than float32."""
        weights.check(self.model.vocab_size, "weights")  # before any lookup: a short table is a clear error
        precision_note = reduced_precision_note(self.dtype, self.device)
        if precision_note:
            report(precision_note, notes)

        def places(selected: set[str]) -> list[str]:
            found = [f"candidates[{i}]" for i, c in enumerate(candidates) if c.strip() in selected]
            found += [
                f"references[{i}][{j}]" if len(group) > 1 else f"references[{i}]"
                for i, group in enumerate(groups) for j, r in enumerate(group) if r.strip() in selected
            ]
            return found

        keys = list(token_ids.index)
        empty = {k for k in keys if self.is_empty(token_ids, k)}
        if empty:
            report(
                f"no content tokens (empty, whitespace or characters the tokenizer drops) in "
                f"{name_some(places(empty))}: their raw scores are 0, as in the official package",
                notes,
            )
        if self._window is None:
            limit = self.model.content_limit
            cut = {k for k in keys if token_ids.content_length(k) > limit}
            if cut:
                report(self._truncation_note(places(cut)), notes)
        unknown = self._mostly_unknown(token_ids, keys, empty)
        if unknown:
            report(
                f"mostly unknown tokens (more than half of the content tokens are the tokenizer's unknown token "
                f"{self.model.tokenizer.unk_token!r}: a script it cannot read, or a word too long for it) in "
                f"{name_some(places(unknown))}: each unknown token is the same token whatever it stood for, so "
                "these texts score as if their content were mostly one token",
                notes,
            )
        totals = token_ids.weight_totals(weights.table.numpy())
        unweighted = {k for k, total in zip(keys, totals) if total == 0 and k not in empty}
        if unweighted:
            distinct = len({r.strip() for group in groups for r in group})
            cause = (
                "idf over 1 distinct reference gives every token in it weight 0"
                if self.idf_is_per_call and distinct == 1
                else "every one of their tokens weighs 0 (under idf: it occurs in every reference)"
            )
            report(
                f"token weights are all 0 in {name_some(places(unweighted))} ({cause}): their raw "
                "precision (candidates) or recall (references) is 0, and so is F1",
                notes,
            )

    def _mostly_unknown(self, token_ids: TokenStore, keys: list[str], empty: set[str]) -> set[str]:
        """Texts more than half of whose (scored) content tokens are the unknown token."""
        unk = self.model.tokenizer.unk_token_id
        if unk is None or not 0 <= int(unk) < self.model.vocab_size:
            return set()
        indicator = np.zeros(self.model.vocab_size)
        indicator[int(unk)] = 1.0
        counts = token_ids.weight_totals(indicator)
        special = self.model.num_special_tokens
        return {k for k, count in zip(keys, counts)
                if k not in empty and 2 * count > token_ids.length(k) - special}

    def _truncation_note(self, where: list[str]) -> str:
        model = self.model
        if model.position_limit:
            hint = f"{advice('long_texts', 'window')} to score them whole (overlapping windows)"
        else:
            hint = (f"{self.model_type} has no fixed position limit, so {setting('long_texts', 'window')} does not "
                    "apply to it (texts are truncated as before)")
        return (
            f"{len(where)} text(s) longer than the model's limit of {model.content_limit} content tokens "
            f"(max_length={model.max_length} with its special tokens) were truncated there, as in the official "
            f"package: {name_some(where)}; {hint}"
        )

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
        weights = self._checked(weights)
        token_ids = self.tokenize(list(cands) + list(refs))
        cand_keys = [c.strip() for c in cands]
        ref_keys = [r.strip() for r in refs]
        if weights is None:
            weights = self.idf_weights_for(ref_keys, token_ids)
        if warn_empty:
            empty = [i for i, (c, r) in enumerate(zip(cand_keys, ref_keys))
                     if self.is_empty(token_ids, c) or self.is_empty(token_ids, r)]
            if empty:
                report(f"no content tokens in pair {name_some([str(i) for i in empty])}: "
                       "their raw scores are 0", notes)
        return self._score_pairs(cand_keys, ref_keys, token_ids, weights, verbose, batch_size)

    def _score_pairs(
        self,
        cand_keys: list[str],
        ref_keys: list[str],
        token_ids: TokenStore,
        weights: TokenWeights,
        verbose: bool,
        batch_size: int | None,
    ) -> torch.Tensor:
        """Raw scores of aligned pairs of stripped texts, chunk by chunk.

        Every chunk is first scored exactly as in truncate mode: the texts cut at the content
        limit (`TokenStore.head`), embedded and matched in the same batches. In window mode,
        the pairs with a long side are then scored again from whole-text embeddings, in
        sub-chunks bounded by their size. Texts within the limit thus meet the encoder and the
        matching in the same batches in both modes: bit-identical numbers (batch composition
        changes float rounding at the 1e-7 level). Window 0 of a long text is its truncated
        text, so its pass-1 states are reused, not encoded again.
        """
        scores = torch.zeros((len(cand_keys),) + ((self.score_layers,) if self.all_layers else ()) + (3,), dtype=torch.float32)
        empty = {i for i, (c, r) in enumerate(zip(cand_keys, ref_keys))
                 if self.is_empty(token_ids, c) or self.is_empty(token_ids, r)}
        limit = self.model.content_limit

        def head_length(key: str) -> int:
            return token_ids.head_length(key, limit)

        # Pairs sharing a reference sit together, so a reference is embedded once per chunk.
        order = sorted(
            (i for i in range(len(cand_keys)) if i not in empty),
            key=lambda i: (head_length(ref_keys[i]), ref_keys[i], head_length(cand_keys[i])),
        )
        progress = tqdm(total=len(cand_keys), disable=not verbose, desc="BERTScore", unit="pair")
        progress.update(len(empty))
        for chunk in self._chunks(order, cand_keys, ref_keys, head_length):
            needed = list(dict.fromkeys([cand_keys[i] for i in chunk] + [ref_keys[i] for i in chunk]))
            long_pairs = [i for i in chunk
                          if self.is_windowed(token_ids, cand_keys[i]) or self.is_windowed(token_ids, ref_keys[i])]
            heads = {k: token_ids.head(k, limit) for k in needed}
            advance = _advancer(progress, len(chunk) - len(long_pairs), len(needed))
            embeddings = self.embedder.embed(
                needed, [heads[k] for k in needed], on_progress=advance, batch_size=batch_size
            )
            text_weights = {k: weights(heads[k]) for k in needed}  # host tensors, moved per batch
            self._match(chunk, cand_keys, ref_keys, embeddings, text_weights, head_length, scores)
            advance(len(needed))
            del heads, text_weights
            if long_pairs:
                self._score_long_pairs(long_pairs, cand_keys, ref_keys, token_ids, weights, embeddings,
                                       scores, progress, batch_size)
            del embeddings
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

        def whole_length(key: str) -> int:
            return token_ids.length(key) if self.is_windowed(token_ids, key) else 0

        for sub in self._chunks(pairs, cand_keys, ref_keys, whole_length):
            long_keys = [k for k in dict.fromkeys([cand_keys[i] for i in sub] + [ref_keys[i] for i in sub])
                         if self.is_windowed(token_ids, k)]
            advance = _advancer(progress, len(sub), len(long_keys))
            embeddings = dict(first_windows)
            embeddings.update(self.embedder.embed_windows(
                long_keys, [token_ids[k] for k in long_keys], self._window, first_windows=first_windows,
                on_progress=advance, batch_size=batch_size,
            ))
            text_weights = {k: weights(token_ids[k]) for k in dict.fromkeys(
                [cand_keys[i] for i in sub] + [ref_keys[i] for i in sub])}
            self._match(sub, cand_keys, ref_keys, embeddings, text_weights, token_ids.length, scores)
            advance(len(long_keys))
            del embeddings, text_weights

    def _match(
        self,
        pairs: list[int],
        cand_keys: list[str],
        ref_keys: list[str],
        embeddings: Mapping[str, torch.Tensor],
        text_weights: Mapping[str, torch.Tensor],
        length: Any,
        scores: torch.Tensor,
    ) -> None:
        """Greedy matching of `pairs` into `scores`: padded batches through `greedy_match`, and a
        pair whose similarity alone exceeds the batch budget through `greedy_match_tiled`."""
        with full_fp32_precision():
            for batch, tiled in self._match_batches(pairs, cand_keys, ref_keys, length):
                cand = [(embeddings[cand_keys[i]], text_weights[cand_keys[i]]) for i in batch]
                ref = [(embeddings[ref_keys[i]], text_weights[ref_keys[i]]) for i in batch]
                if tiled:
                    (cand_emb, cand_w), (ref_emb, ref_w) = cand[0], ref[0]
                    device = cand_emb.device
                    precision, recall, f1 = greedy_match_tiled(
                        cand_emb, None, cand_w.to(device), ref_emb, None, ref_w.to(device), MATCH_TILE_BYTES
                    )
                    precision, recall, f1 = precision[None], recall[None], f1[None]
                else:
                    precision, recall, f1 = greedy_match(
                        *pad_sequences([e for e, _ in cand], [w for _, w in cand]),
                        *pad_sequences([e for e, _ in ref], [w for _, w in ref]),
                    )
                scores[torch.tensor(batch)] = torch.stack((precision, recall, f1), dim=-1).cpu()

    def _chunks(self, order: list[int], cand_keys: list[str], ref_keys: list[str], length: Any) -> Any:
        """Consecutive pairs: at most chunk_size of them, and about CHUNK_EMBEDDING_BYTES of embeddings.

        `length(key)` is a text's embedding rows (0 for one already held). Bounding pairs alone
        lets a chunk of long texts (the last ones: pairs are sorted by length) hold far more
        embeddings than a chunk of short ones, so peak memory grew with the corpus.
        """
        budget = max(1, CHUNK_EMBEDDING_BYTES // (4 * self._floats_per_token()))  # tokens
        chunk: list[int] = []
        seen: set[str] = set()
        tokens = 0
        for index in order:
            texts = {cand_keys[index], ref_keys[index]}
            cost = sum(length(k) for k in texts - seen)
            if chunk and (len(chunk) >= self.chunk_size or tokens + cost > budget):
                yield chunk
                chunk, seen, tokens = [], set(), 0
                cost = sum(length(k) for k in texts)
            chunk.append(index)
            seen |= texts
            tokens += cost
        if chunk:
            yield chunk

    @property
    def score_layers(self) -> int:
        """Layers scored per pair: every hidden state with all_layers, else 1."""
        return self.model.total_layers + 1 if self.all_layers else 1

    def _floats_per_token(self) -> int:
        """Floats in one token's embedding (hidden size x layers kept)."""
        config = self.model.encoder.config
        hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", None) or 1024
        return int(hidden) * self.score_layers

    def needs_tiling(self, cand_length: int, ref_length: int) -> bool:
        """Whether one pair's similarity ([layers,] Lc x Lr fp32) alone exceeds MATCH_BATCH_BYTES:
        such a pair is matched by `greedy_match_tiled` (never within the limit of any encoder)."""
        return cand_length * ref_length * self.score_layers * 4 > MATCH_BATCH_BYTES

    def _match_batches(self, pairs: list[int], cand_keys: list[str], ref_keys: list[str], length: Any) -> Any:
        """(batch, tiled): pairs grouped so that a batch's padded embeddings and similarities stay
        under MATCH_BATCH_BYTES; a pair too large for that alone comes as ([pair], True)."""
        width, layers = self._floats_per_token(), self.score_layers
        budget = MATCH_BATCH_BYTES // 4  # floats
        batch: list[int] = []
        longest_cand = longest_ref = 0
        for index in pairs:
            lc, lr = length(cand_keys[index]), length(ref_keys[index])
            if self.needs_tiling(lc, lr):
                yield [index], True
                continue
            new_cand, new_ref = max(longest_cand, lc), max(longest_ref, lr)
            floats = (len(batch) + 1) * (new_cand * new_ref * layers + (new_cand + new_ref) * width)
            if batch and (len(batch) >= MAX_PAIRS_PER_MATCH or floats > budget):
                yield batch, False
                batch, new_cand, new_ref = [], lc, lr
            batch.append(index)
            longest_cand, longest_ref = new_cand, new_ref
        if batch:
            yield batch, False

    # ----- inspection -----------------------------------------------------------------------
    def embed_texts(self, keys: Sequence[str], token_ids: TokenStore) -> dict[str, torch.Tensor]:
        """Embeddings of distinct stripped texts as `score()` matches them: cut at the limit, or
        whole (through windows) in window mode. One pass, no chunking: for inspecting a few texts."""
        limit = self.model.content_limit
        embeddings = self.embedder.embed(keys, [token_ids.head(k, limit) for k in keys])
        long_keys = [k for k in keys if self.is_windowed(token_ids, k)]
        if long_keys:
            embeddings.update(self.embedder.embed_windows(
                long_keys, [token_ids[k] for k in long_keys], self._window, first_windows=embeddings
            ))
        return embeddings

    def idf_weights_for(self, references: Sequence[str], token_ids: TokenStore | None = None) -> TokenWeights:
        """The token weights a `score()` call with these references uses."""
        if self._idf_weights is not None:
            return self._idf_weights
        return self._weights_from(references, token_ids if token_ids is not None else self.tokenize(references))


def _advancer(progress: Any, pairs: int, texts: int) -> Any:
    """on_progress for an embedding step: moves the bar (in pairs) by `pairs` as `texts` texts embed."""
    shown = [0]

    def advance(texts_done: int) -> None:
        target = pairs * min(texts_done, texts) // max(texts, 1)
        progress.update(target - shown[0])
        shown[0] = target

    return advance


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
