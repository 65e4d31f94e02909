"""BERTScore as a `torchmetrics.Metric`: the door for PyTorch Lightning and DDP training loops.

    from bertscore.torchmetrics import BERTScore, BERTScoreF1

    metric = BERTScore("sentence-transformers/all-MiniLM-L6-v2")
    metric.update(["the cat sat"], [["a cat sat", "the cat is sitting"]])  # one list of references a candidate
    metric.compute()  # {"precision": tensor([..]), "recall": tensor([..]), "f1": tensor([..])}
    BERTScoreF1("sentence-transformers/all-MiniLM-L6-v2")  # one scalar (the corpus mean): self.log(name, metric)

The numbers are `bertscore.score`'s (the official definition): the scorer comes from a shared
`ScorerPool`, so metrics on one model share its encoder and embedding cache, and every option is
checked exactly as `BERTScorer` checks it. The constructor has torchmetrics' BERTScore signature
(its positional order and defaults), plus ours as keywords (`reduction`, `long_texts`, `dtype`, ...);
`bertscore.torchmetrics.arguments` reads them.

What is kept between `update()` and `compute()` (torchmetrics' "cat" states, gathered by its own
sync on any backend; never an epoch of embeddings; helpers in `bertscore.torchmetrics.states`):
- token weights that do not depend on the data (no idf, fixed idf texts or a mapping): each
  `update()` scores its batch at once and keeps the per-candidate P, R, F;
- `idf=True` (idf over the references): `update()` keeps the texts as UTF-8 bytes and `compute()`
  scores them, idf over all references of all ranks, each rank a token-balanced shard
  (`bertscore.distributed.score_distributed`);
- always: each pair's dataset index (`update(..., indexes=)`, counted once across ranks: the
  repeats of a padding sampler drop out), a digest of each pair and the rank that gave it (a
  pair repeated across ranks without indices is a warning).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

import torch

try:
    from torchmetrics import Metric
    from torchmetrics.utilities.data import dim_zero_cat
    from torchmetrics.utilities.distributed import gather_all_tensors
except ModuleNotFoundError as missing:  # pragma: no cover - tested in a fresh interpreter
    if not (missing.name or "").startswith("torchmetrics"):
        raise
    raise ModuleNotFoundError(
        "bertscore.torchmetrics needs the torchmetrics package, which is not installed: from a clone of this "
        'project run  pip install ".[torchmetrics]"  (or pip install "torchmetrics>=1.3")', name="torchmetrics",
    ) from None

from ..distributed import local_device, rank, score_distributed, world_size
from ..inputs import InputError
from ..models.devices import resolve_device
from ..notes import Site, Spelling, caller_site, noted_at, spelled
from ..pool import ScorerPool
from ..scorer import BERTScorer
from ..scoring.settings import resolve_model_type
from ..sources import embedded_model_hint
from .arguments import check_arguments, shortened
from .dtypes import FloatScores
from .states import (RunningIdf, batch_indexes, batch_inputs, check_indexing, decode_texts, encode_texts,
                            kept_pairs, named_by_pairs, pair_digests, pair_labels, split_groups)

OUTPUTS = ("precision", "recall", "f1")
TEXT_STATES = ("cand_bytes", "cand_sizes", "ref_bytes", "ref_sizes", "ref_counts")
PAIR_STATES = ("indexes", "pair_digests", "pair_ranks")
TORCHMETRICS = Spelling("torchmetrics", candidates="preds", references="target")

# One pool for every metric in the process: metrics on one model (a train and a val metric, or a
# clone per dataloader) share its encoder and embedding cache.
_SHARED_POOL = ScorerPool(max_models=2)


class _Machinery:
    """How BERTScore rides torchmetrics' machinery: forward() with one update() a step (synced on step
    too), a refused update() that leaves the metric as it was, typed empty states for the gather, and
    per-sample outputs kept [N]. A mixin of BERTScore (its attributes), before torchmetrics' Metric."""

    _in_forward: bool
    _empty: dict[str, torch.Tensor]
    _layers: tuple[int, ...]
    reduction: str

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """This batch's values (also accumulated). With idf=True, idf over every reference this rank's
        forward() and update() calls gave since the last reset() (every rank's steps with
        dist_sync_on_step=True), this batch's included (one pair alone would weigh all 0)."""
        if self._is_synced:
            return super().forward(*args, **kwargs)  # torchmetrics' own error
        self._checked(*args, **kwargs)  # before torchmetrics sets the accumulated states aside
        self._in_forward = True
        try:  # one update() a step, also when synced on step: the states are a plain concatenation
            self._forward_cache = self._forward_reduce_state_update(*args, **kwargs)
            return self._forward_cache
        finally:
            self._in_forward = False

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Any = None) -> None:
        """torchmetrics' sync, with an empty state of the right dtype and shape on a rank that saw no
        data (torchmetrics' own stand-in is a 1-D float tensor: the gather would mix dtypes)."""
        for name, empty in self._empty.items():
            if isinstance(getattr(self, name), list) and not getattr(self, name):
                setattr(self, name, [empty.to(self.device)])
        super()._sync_dist(dist_sync_fn, process_group)

    def _wrap_update(self, update: Callable) -> Callable:
        """torchmetrics' update; a refused batch leaves the metric as it was (its update count too)."""
        wrapped = super()._wrap_update(update)

        @functools.wraps(wrapped)
        def checked(*args: Any, **kwargs: Any) -> None:
            count, computed = self._update_count, self._computed
            try:
                wrapped(*args, **kwargs)
            except InputError:
                self._update_count, self._computed = count, computed
                raise

        return checked

    def _wrap_compute(self, compute: Callable) -> Callable:
        """torchmetrics' compute, per-sample outputs kept [N] ([K, N]) for N = 1 too (it squeezes them to 0-d);
        in forward() with dist_sync_on_step the step's gathered states go back to this rank's batch after it
        (torchmetrics would keep them, and add every rank's batch to each rank's states)."""
        wrapped = super()._wrap_compute(compute)

        @functools.wraps(wrapped)
        def shaped(*args: Any, **kwargs: Any) -> Any:
            if self._in_forward:
                self._should_unsync = True
            value = wrapped(*args, **kwargs)
            if isinstance(value, dict) and self.reduction == "none":
                value = {k: v.reshape(*self._layers, -1) if k in OUTPUTS else v.reshape(-1) if k == "indexes" else v
                         for k, v in value.items()}
            return value

        return shaped


class BERTScore(FloatScores, _Machinery, Metric):
    """BERTScore precision, recall and F1 of each candidate against its reference(s).

    torchmetrics' BERTScore arguments in its order and with its defaults (`lang="en"` without a model:
    roberta-large), each with its meaning or refused naming what to pass instead; `max_length` under
    the model's limit cuts texts there (with a note). Ours, as keywords: `reduction` ("none": per-sample
    tensors; "mean": `bertscore_precision`, ... means for `log_dict`), `dtype` (the encoder's),
    `long_texts`, `window_stride`, `max_tokens_per_batch`, `cache_bytes`: as `BERTScorer`.
    `update(preds, target, indexes=None)`: `indexes`, each pair's dataset index, counts a pair that a
    padding sampler repeats once. `compute()`: tensors [N] ([K, N] with all_layers) in the order the
    data came (rank 0's first), or in index order with `indexes` (returned too). docs/lightning.md.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    plot_lower_bound = 0.0
    plot_upper_bound = 1.0

    def __init__(
        self,
        model_name_or_path: str | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        model: Any = None,
        user_tokenizer: Any = None,
        user_forward_fn: Callable | None = None,
        verbose: bool = False,
        idf: Any = False,
        device: str | torch.device | None = None,
        max_length: int | None = None,
        batch_size: int | None = 64,
        num_threads: int | None = 0,
        return_hash: bool = False,
        lang: str | None = "en",
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        baseline_url: str | None = None,
        truncation: bool | None = None,
        *,
        reduction: str = "none",
        dtype: str | torch.dtype | None = None,
        long_texts: str = "truncate",
        window_stride: int | None = None,
        max_tokens_per_batch: int | None = None,
        cache_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        check_arguments(dict(model=model, user_tokenizer=user_tokenizer, user_forward_fn=user_forward_fn,
                             baseline_url=baseline_url), verbose, return_hash, reduction, truncation, long_texts,
                        max_length, num_threads)
        super().__init__(**kwargs)
        self.embedding_device, self.reduction = device, reduction
        self.verbose, self.return_hash, self.num_threads, self.truncation = verbose, return_hash, num_threads, truncation
        self.settings = dict(
            model_type=model_name_or_path, num_layers=num_layers, all_layers=all_layers, lang=lang, idf=idf,
            batch_size=batch_size, rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path,
            dtype=dtype, long_texts=long_texts, window_stride=window_stride,
            max_tokens_per_batch=max_tokens_per_batch, cache_bytes=cache_bytes,
        )
        self.max_length = max_length
        self._scorer: BERTScorer | None = None
        try:
            scorer = self.scorer  # load now: a bad model name or setting fails here, not at the first validation step
        except OSError as error:
            if model_name_or_path is not None:
                raise
            raise OSError(
                f"BERTScore() with no model_name_or_path scores with lang={lang!r}'s official default model, "
                f"{resolve_model_type(None, lang)}, which could not be loaded ({error}). Offline, pass the model that "
                "comes with this package: BERTScore(bertscore.EMBEDDED_MODEL_NAME) "
                f"(sentence-transformers/all-MiniLM-L6-v2, {embedded_model_hint()}), or a local model folder"
            ) from error
        self.deferred = scorer.idf_is_per_call  # idf over all references: texts kept, scored in compute()
        self._layers = (scorer.pipeline.settings.score_layers,) if scorer.all_layers else ()
        self._running_idf, self._in_forward = RunningIdf(), False
        self._indexed: bool | None = None  # whether the updates since reset() gave indexes
        self._update_site: Site | None = None  # the user's line that last called update(): compute()'s notes go there
        if self.deferred:
            self._empty = {name: torch.zeros(0, dtype=torch.uint8 if name.endswith("bytes") else torch.long)
                           for name in TEXT_STATES}
        else:
            self._empty = {name: torch.zeros((0,) + self._layers) for name in OUTPUTS}
        self._empty.update({name: torch.zeros(0, dtype=torch.long) for name in PAIR_STATES})
        for name in self._empty:
            self.add_state(name, default=[], dist_reduce_fx="cat")

    # ----- the scorer -------------------------------------------------------------------------
    @property
    def scorer(self) -> BERTScorer:
        """The `BERTScorer` this metric scores with: on `device`, or where the metric is."""
        device: Any = self.device
        if self.embedding_device is not None:
            device = resolve_device(self.embedding_device)  # an unknown device: the error every door gives
            device = local_device(str(device)) if device.type == "cuda" else device  # under DDP: cuda:LOCAL_RANK
        if self._scorer is None or self._scorer.device != torch.device(device):
            self._scorer = shortened(_SHARED_POOL.get(device=device, **self.settings), self.max_length, self.settings)
            self.max_length = self._scorer.model.max_length
        return self._scorer

    @property
    def hash(self) -> str:
        """The scorer's reproducibility hash (model, layer, idf, rescaling, versions)."""
        return self.scorer.hash

    # ----- torchmetrics' steps ----------------------------------------------------------------
    def update(self, preds: str | Sequence[str], target: str | Sequence[str] | Sequence[Sequence[str]],
               indexes: Any = None) -> None:
        """Add candidates, their references and (optionally) their dataset indices."""
        candidates, groups, index_values = self._checked(preds, target, indexes)
        if not candidates:
            return  # an empty batch (a rank's last one, say) adds nothing
        self._indexed, self._update_site = indexes is not None, caller_site()
        for name, values in zip(PAIR_STATES, (index_values, pair_digests(candidates, groups),
                                              torch.full((len(candidates),), rank(), dtype=torch.long))):
            getattr(self, name).append(values.to(self.device))
        if self.deferred:
            self._keep_texts(candidates, groups)
            return
        for name, values in zip(OUTPUTS, self._score(candidates, groups, synced=False)):
            getattr(self, name).append(values.to(self.device))

    def _checked(self, preds: Any, target: Any, indexes: Any = None) -> tuple[list[str], list[list[str]], torch.Tensor]:
        """A batch's candidates, reference groups and indexes, checked (a mixed use of indexes refused)."""
        candidates, groups = batch_inputs(preds, target)
        index_values = batch_indexes(indexes, len(candidates))
        if candidates:
            check_indexing(self._indexed, indexes)
        return candidates, groups, index_values

    def reset(self) -> None:
        if not self._in_forward:  # forward() resets around its batch: the references seen so far stay
            self._running_idf.clear()
            self._indexed = None
        super().reset()

    def compute(self) -> dict[str, Any]:
        """Per-sample `precision`, `recall`, `f1` ([N], or [K, N] with all_layers), `indexes` when
        given and `hash` on request; with reduction="mean", their means as `bertscore_<output>`."""
        kept = self._kept_pairs()
        if self.deferred:
            candidates, groups = self._texts()
            labels = pair_labels(self._cat("indexes"), self._cat("pair_ranks"), world_size() > 1)
            if kept is not None:
                candidates, groups = [candidates[i] for i in kept.tolist()], [groups[i] for i in kept.tolist()]
                labels = [labels[i] for i in kept.tolist()]
            own_batch = self._in_forward and not self._is_synced and kept is None  # notes name its preds[i]
            with noted_at(None if own_batch else self._update_site):
                scores = (self._score(candidates, groups, self._is_synced, None if own_batch else labels)
                          if candidates else [torch.zeros((0,) + self._layers)] * 3)
            values = [v.to(self.device) for v in scores]
        else:
            values = [self._cat(name) if kept is None else self._cat(name)[kept] for name in OUTPUTS]
        values = [v.transpose(0, 1).contiguous() if v.dim() == 2 else v for v in values]
        if self.reduction == "mean":  # no pairs: nan, as torchmetrics' means give
            return {f"bertscore_{name}": v.mean(-1) for name, v in zip(OUTPUTS, values)}
        result: dict[str, Any] = dict(zip(OUTPUTS, values))
        if kept is not None:
            result["indexes"] = self._cat("indexes")[kept]
        if self.return_hash:
            result["hash"] = self.hash
        return result

    def _kept_pairs(self) -> torch.Tensor | None:
        """Positions of the pairs to score (`states.kept_pairs`)."""
        return kept_pairs(*(self._cat(name) for name in PAIR_STATES))

    def _score(self, candidates: list[str], groups: list[list[str]], synced: bool,
               labels: list[str] | None = None) -> list[torch.Tensor]:
        """P, R, F [N] ([N, K] with all layers) of these candidates, as `score()` computes them; notes
        name the texts as `preds[i]` of the call, or by their pairs' `labels` (`pair_labels`)."""
        scorer = self.scorer
        with spelled(TORCHMETRICS if labels is None else named_by_pairs(TORCHMETRICS, labels)):
            if self._in_forward and self.deferred:  # idf over the references seen so far (this step's: all ranks')
                self._running_idf.add(scorer.pipeline.document_ids([ref for group in groups for ref in group]))
                weights = self._running_idf.weights(scorer.model.vocab_size, scorer.model.zero_weight_ids)
                precision, recall, f1 = scorer.score(candidates, groups, verbose=self.verbose, weights=weights)
            elif synced and self.process_group is None and world_size() > 1:
                precision, recall, f1 = score_distributed(scorer, candidates, groups, verbose=self.verbose)
            else:
                precision, recall, f1 = scorer.score(candidates, groups, verbose=self.verbose)
        values = [precision, recall, f1]
        return [v.transpose(0, 1) for v in values] if scorer.all_layers else values

    def _cat(self, name: str) -> torch.Tensor:
        state = getattr(self, name)
        if isinstance(state, list) and not state:
            return self._empty[name].to(self.device)
        return dim_zero_cat(state)

    # ----- texts as tensors (idf=True) --------------------------------------------------------
    def _keep_texts(self, candidates: list[str], groups: list[list[str]]) -> None:
        references = [ref for group in groups for ref in group]
        for bytes_name, sizes_name, texts in (("cand_bytes", "cand_sizes", candidates),
                                              ("ref_bytes", "ref_sizes", references)):
            data, sizes = encode_texts(texts)
            getattr(self, bytes_name).append(data.to(self.device))
            getattr(self, sizes_name).append(sizes.to(self.device))
        self.ref_counts.append(torch.tensor([len(group) for group in groups], dtype=torch.long, device=self.device))
        if not self._in_forward:  # forward() counts the step's references once scored (synced on step: all ranks')
            self._running_idf.add(self.scorer.pipeline.document_ids(references))

    def _texts(self) -> tuple[list[str], list[list[str]]]:
        candidates = decode_texts(self._cat("cand_bytes"), self._cat("cand_sizes"))
        references = decode_texts(self._cat("ref_bytes"), self._cat("ref_sizes"))
        return candidates, split_groups(references, self._cat("ref_counts").tolist())

    # ----- plotting, copies -----------------------------------------------------------
    def plot(self, val: Any = None, ax: Any = None) -> Any:
        """torchmetrics' plot: the means of `compute()` (val=None), of a result, or of a list of results
        (a line per output over the steps). Returns (figure, axes)."""
        val = self.compute() if val is None else val
        means = [_means(v) for v in val] if isinstance(val, (list, tuple)) else _means(val)
        return self._plot(means, ax)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_scorer"] = None  # a copy (clone(), pickling) takes its scorer from its process's pool
        return state


class _OneOutput(BERTScore):
    """One of BERTScore's outputs as one scalar, the corpus mean ([K] with all_layers): what Lightning's
    `self.log(name, metric)` and `log_dict(MetricCollection(...))` log. Same arguments as BERTScore."""

    output = "f1"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("reduction", "mean") != "mean":
            raise InputError(f"{type(self).__name__} is the corpus mean; for per-sample scores use BERTScore")
        super().__init__(*args, **{**kwargs, "reduction": "mean"})

    def compute(self) -> torch.Tensor:  # type: ignore[override]
        return super().compute()[f"bertscore_{self.output}"]


class BERTScorePrecision(_OneOutput):
    """BERTScore precision, the corpus mean (a scalar): `self.log("val_bertscore_precision", metric)`."""

    output = "precision"


class BERTScoreRecall(_OneOutput):
    """BERTScore recall, the corpus mean (a scalar): `self.log("val_bertscore_recall", metric)`."""

    output = "recall"


class BERTScoreF1(_OneOutput):
    """BERTScore F1, the corpus mean (a scalar): `self.log("val_bertscore_f1", metric)`."""

    output = "f1"


def _means(value: Any) -> Any:
    """A result as plottable means: per-sample tensors averaged, the hash and indexes left out."""
    if isinstance(value, dict):
        return {k: _means(v) for k, v in value.items() if k not in ("hash", "indexes")}
    return value.float().mean(-1) if isinstance(value, torch.Tensor) and value.dim() else value
