"""BERTScore as a `torchmetrics.Metric`: the door for PyTorch Lightning and DDP training loops.

    from bertscore.torchmetrics import BERTScore

    metric = BERTScore("sentence-transformers/all-MiniLM-L6-v2")
    metric.update(["the cat sat"], [["a cat sat", "the cat is sitting"]])  # one list of references a candidate
    metric.compute()  # {"precision": tensor([..]), "recall": tensor([..]), "f1": tensor([..])}

The numbers are `bertscore.score`'s (the official definition): the scorer comes from a shared
`ScorerPool`, so metrics on one model share its encoder and embedding cache, and every option is
checked exactly as `BERTScorer` checks it. The constructor takes torchmetrics' own argument names
where they mean the same (`model_name_or_path`, `num_layers`, `idf`, `lang`, ...), plus ours
(`long_texts`, `window_stride`, `dtype`, ...); torchmetrics' Metric keywords
(`dist_sync_on_step`, `sync_on_compute`, `process_group`, `compute_on_cpu`) pass through.

What is kept between `update()` and `compute()`, and how DDP ranks share it (torchmetrics' "cat"
states, gathered by its own sync on any backend; never an epoch of embeddings):
- token weights that do not depend on the data (no idf, fixed idf texts or a mapping): each
  `update()` scores its batch at once and keeps the per-candidate P, R, F (the multi-reference
  max and rescaling done); `compute()` concatenates every rank's;
- `idf=True` (idf over the references): the weights depend on every reference of every rank, so
  `update()` keeps the texts as UTF-8 bytes (they sync as uint8 tensors and decode to the same
  strings) and `compute()` scores them, idf over all references: synced across ranks, each rank
  scores a token-balanced shard (`bertscore.distributed.score_distributed`), then all gather.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

from .devices import resolve_device
from .distributed import local_device, score_distributed
from .inputs import InputError, check_text, normalize_group, normalize_inputs
from .notes import Spelling, spelled
from .pool import ScorerPool
from .scorer import BERTScorer
from .settings import check_size

OUTPUTS = ("precision", "recall", "f1")
TEXT_STATES = ("cand_bytes", "cand_sizes", "ref_bytes", "ref_sizes", "ref_counts")
TORCHMETRICS = Spelling("torchmetrics", candidates="preds", references="target")

# One pool for every metric in the process: metrics on one model (a train and a val metric, or a
# clone per dataloader) share its encoder and embedding cache.
_SHARED_POOL = ScorerPool(max_models=2)

# torchmetrics' BERTScore arguments that have no counterpart here, and what to use instead.
_NOT_HERE = {
    "model": "pass model_name_or_path= (a hub id or a local folder) instead of a loaded model",
    "user_tokenizer": "the model's own tokenizer is used (pass model_name_or_path= a folder holding both)",
    "user_forward_fn": "the encoder's hidden states are read as the official package reads them",
    "baseline_url": "download the file and pass baseline_path=",
    "truncation": "long texts are set by long_texts='truncate' (the default) or 'window'",
}


class BERTScore(Metric):
    """BERTScore precision, recall and F1 of each candidate against its reference(s).

    `model_name_or_path` (or `lang`, which picks the official default model) and `num_layers`
    choose the encoder and layer; `all_layers=True` scores every layer ([K, N] tensors). `idf`:
    False, True (idf over all references seen, on every rank), a list of texts or a token-id ->
    weight mapping. `rescale_with_baseline` / `baseline_path`: as `score`. `batch_size`: sentences
    per encoder batch. `max_length`: None (the model's limit) or that same limit; `long_texts` /
    `window_stride` decide what happens past it. `device`: where the encoder runs (None: where the
    metric is, so Lightning's `.to(device)` moves scoring along; "cuda" under a launch of several
    ranks means cuda:LOCAL_RANK). `dtype`, `max_tokens_per_batch`, `cache_bytes`: as `BERTScorer`.
    `return_hash`: `compute()` adds the reproducibility hash under "hash". `verbose`: progress bars.
    `num_threads` is kept for torchmetrics' signature and changes nothing.

    `update(preds, target)`: a candidate (str) or a list of them; per candidate a reference (str)
    or a list of references (the max is taken, per column). `compute()` returns the per-sample
    tensors in the order the data came (rank 0's first under DDP, as torchmetrics concatenates);
    log their `.mean()`. Notes (empty texts scored 0, truncated texts) are warnings at the line
    that called `update` (or `compute`, with idf=True), at every call.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(
        self,
        model_name_or_path: str | None = None,
        num_layers: int | None = None,
        all_layers: bool = False,
        verbose: bool = False,
        idf: Any = False,
        device: str | torch.device | None = None,
        max_length: int | None = None,
        batch_size: int | None = 64,
        num_threads: int | None = None,
        return_hash: bool = False,
        lang: str | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        *,
        dtype: str | torch.dtype | None = None,
        long_texts: str = "truncate",
        window_stride: int | None = None,
        max_tokens_per_batch: int | None = None,
        cache_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        for name, instead in _NOT_HERE.items():
            if name in kwargs:
                raise InputError(
                    f"BERTScore({name}=...) is an option of torchmetrics' own BERTScore, not of this one: {instead}"
                )
        super().__init__(**kwargs)
        if model_name_or_path is None and lang is None:
            raise InputError("pass model_name_or_path=... or lang=... (e.g. lang='en' -> roberta-large; offline, "
                             "model_name_or_path='sentence-transformers/all-MiniLM-L6-v2')")
        for name, value in (("verbose", verbose), ("return_hash", return_hash)):
            if not isinstance(value, bool):
                raise InputError(f"{name} must be True or False, got {value!r}")
        check_size(max_length, "max_length", "None: the model's own limit")
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, int)
                                        or num_threads < 0):
            raise InputError(f"num_threads must be a whole number >= 0 (it changes nothing here), got {num_threads!r}")
        self.embedding_device = device
        self.verbose, self.return_hash, self.num_threads = verbose, return_hash, num_threads
        self.settings = dict(
            model_type=model_name_or_path, num_layers=num_layers, all_layers=all_layers, lang=lang, idf=idf,
            batch_size=batch_size, rescale_with_baseline=rescale_with_baseline, baseline_path=baseline_path,
            dtype=dtype, long_texts=long_texts, window_stride=window_stride,
            max_tokens_per_batch=max_tokens_per_batch, cache_bytes=cache_bytes,
        )
        self._scorer: BERTScorer | None = None
        scorer = self.scorer  # load now: a bad model name or setting fails here, not at the first validation step
        if max_length is not None and max_length != scorer.model.max_length:
            raise InputError(
                f"max_length={max_length}, but {scorer.model_type} reads {scorer.model.max_length} tokens: texts are "
                "read up to the model's own limit and cut there (long_texts='truncate') or read whole through "
                "windows (long_texts='window'); pass max_length=None"
            )
        self.max_length = scorer.model.max_length
        self.deferred = scorer.idf_is_per_call  # idf over all references: texts kept, scored in compute()
        layers = (scorer.pipeline.settings.score_layers,) if scorer.all_layers else ()
        if self.deferred:
            kinds = {"cand_bytes": torch.uint8, "ref_bytes": torch.uint8}
            self._empty = {name: torch.zeros(0, dtype=kinds.get(name, torch.long)) for name in TEXT_STATES}
        else:
            self._empty = {name: torch.zeros((0,) + layers) for name in OUTPUTS}
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
            self._scorer = _SHARED_POOL.get(device=device, **self.settings)
        return self._scorer

    @property
    def hash(self) -> str:
        """The scorer's reproducibility hash (model, layer, idf, rescaling, versions)."""
        return self.scorer.hash

    # ----- torchmetrics' steps ----------------------------------------------------------------
    def update(self, preds: str | Sequence[str], target: str | Sequence[str] | Sequence[Sequence[str]]) -> None:
        """Add candidates and their references (scored now, or kept as text with idf=True)."""
        candidates, groups = batch_inputs(preds, target)
        if not candidates:
            return  # an empty batch (a rank's last one, say) adds nothing
        if self.deferred:
            self._keep_texts(candidates, groups)
            return
        for name, values in zip(OUTPUTS, self._score(candidates, groups, synced=False)):
            getattr(self, name).append(values.to(self.device))

    def compute(self) -> dict[str, Any]:
        """Per-sample `precision`, `recall`, `f1` ([N], or [K, N] with all_layers), and `hash` on request."""
        if self.deferred:
            candidates, groups = self._texts()
            shape = (len(candidates),) + tuple(self._empty_scores_shape())
            scores = self._score(candidates, groups, synced=self._is_synced) if candidates else [torch.zeros(shape)] * 3
            values = [v.to(self.device) for v in scores]
        else:
            values = [self._cat(name) for name in OUTPUTS]
        if self.scorer.all_layers:
            values = [v.transpose(0, 1).contiguous() if v.dim() == 2 else v for v in values]
        result: dict[str, Any] = dict(zip(OUTPUTS, values))
        if self.return_hash:
            result["hash"] = self.hash
        return result

    def _score(self, candidates: list[str], groups: list[list[str]], synced: bool) -> list[torch.Tensor]:
        """P, R, F [N] ([N, K] with all layers) of these candidates, as `score()` computes them."""
        scorer = self.scorer
        with spelled(TORCHMETRICS):
            if synced and self.process_group is None and _world_size() > 1:
                precision, recall, f1 = score_distributed(scorer, candidates, groups, verbose=self.verbose)
            else:
                precision, recall, f1 = scorer.score(candidates, groups, verbose=self.verbose)
        values = [precision, recall, f1]
        return [v.transpose(0, 1) for v in values] if scorer.all_layers else values

    def _empty_scores_shape(self) -> tuple[int, ...]:
        scorer = self.scorer
        return (scorer.pipeline.settings.score_layers,) if scorer.all_layers else ()

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

    def _texts(self) -> tuple[list[str], list[list[str]]]:
        candidates = decode_texts(self._cat("cand_bytes"), self._cat("cand_sizes"))
        references = decode_texts(self._cat("ref_bytes"), self._cat("ref_sizes"))
        groups, start = [], 0
        for count in self._cat("ref_counts").tolist():
            groups.append(references[start:start + count])
            start += count
        return candidates, groups

    def _sync_dist(self, dist_sync_fn: Any = gather_all_tensors, process_group: Any = None) -> None:
        """torchmetrics' sync, with an empty state of the right dtype and shape on a rank that saw no
        data (torchmetrics' own stand-in is a 1-D float tensor: the gather would mix dtypes)."""
        for name, empty in self._empty.items():
            if isinstance(getattr(self, name), list) and not getattr(self, name):
                setattr(self, name, [empty.to(self.device)])
        super()._sync_dist(dist_sync_fn, process_group)

    # ----- copies -----------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_scorer"] = None  # a copy (clone(), pickling) takes its scorer from its process's pool
        return state


def batch_inputs(preds: Any, target: Any) -> tuple[list[str], list[list[str]]]:
    """Candidates and reference groups of one `update()`, checked as `score()` checks them.

    A single candidate (str) takes a reference or a list of references; a list of candidates takes
    one reference, or one list of references, per candidate. Two empty lists are an empty batch.
    """
    if isinstance(preds, str):
        return [check_text(preds, "preds")], [normalize_group(target, "target")]
    if isinstance(preds, Sequence) and isinstance(target, Sequence) and len(preds) == 0 and len(target) == 0:
        return [], []
    return normalize_inputs(preds, target, "preds", "target")


def encode_texts(texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the texts' UTF-8 bytes end to end [uint8], each text's byte count [long])."""
    encoded = [text.encode("utf-8") for text in texts]
    joined = b"".join(encoded)
    data = torch.frombuffer(bytearray(joined), dtype=torch.uint8).clone() if joined else torch.zeros(0, dtype=torch.uint8)
    return data, torch.tensor([len(e) for e in encoded], dtype=torch.long)


def decode_texts(data: torch.Tensor, sizes: torch.Tensor) -> list[str]:
    """The texts `encode_texts` gave these tensors for."""
    raw = data.cpu().numpy().tobytes()
    texts, start = [], 0
    for size in sizes.tolist():
        texts.append(raw[start:start + size].decode("utf-8"))
        start += size
    return texts


def _world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
