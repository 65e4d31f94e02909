"""Batched embedding: token-budget batches, a byte-bounded LRU cache, dtype and device.

Texts arrive already tokenised (ids). They are sorted by token count and packed into batches
whose padded size stays under a token budget; the encoder runs once per batch; each text's
normalised fp32 embedding [L, D] (or [K, L, D] for all layers) is returned and cached.
Texts longer than the encoder's limit (long_texts="window") are encoded as windows
(bertscore/scoring/windows.py): the windows go through the same token-budget batching, and each text's
embedding is assembled from them and cached under a key that names the window.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Callable, Hashable, Iterator, Mapping, NamedTuple, Sequence

import numpy as np
import torch

from ..inputs import InputError
from ..models.devices import full_fp32_precision, resolve_device
from ..models.loading import LoadedModel
from .matching import normalize_with_norms, pinned_to_device
from .windows import WindowAssembly, plan_windows

logger = logging.getLogger(__name__)

DEFAULT_CACHE_BYTES = 512 << 20


def default_tokens_per_batch(device: torch.device) -> int:
    """A token budget per encoder batch that suits the device.

    CPU: 2048, the fastest in benchmarks/results/token_budget_cpu.md (1024-2048 tie; 4096 is
    ~15% slower, 16384 ~75%: large batches fall out of the caches). CUDA: 65536, enough
    tokens to fill a large GPU.
    """
    return 65536 if device.type == "cuda" else 2048


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device`; asynchronous only where that is safe: host to accelerator.

    A host-to-device copy is queued on the device's stream, before any kernel that reads it. A
    copy towards the host with non_blocking=True returns before the data has arrived: the CPU
    would then read a buffer the GPU has not filled yet (a cache on CUDA, scoring on the CPU).
    """
    asynchronous = tensor.device.type == "cpu" and device.type != "cpu"
    return tensor.to(device, non_blocking=asynchronous)


def move_all(tensors: Sequence[torch.Tensor], device: torch.device) -> list[torch.Tensor]:
    """`tensors` on `device`, moved in one copy per source device instead of one per tensor.

    Those already there are returned as they are; the others are concatenated where they live,
    copied once (`to_device`) and split again (views into that one copy: a call's working set).
    """
    moved = list(tensors)
    by_source: dict[torch.device, list[int]] = {}
    for index, tensor in enumerate(moved):
        if tensor.device != device:
            by_source.setdefault(tensor.device, []).append(index)
    for indices in by_source.values():
        parts = [moved[i] for i in indices]
        flat = to_device(torch.cat([part.reshape(-1) for part in parts]), device)
        for i, piece, part in zip(indices, flat.split([part.numel() for part in parts]), parts):
            moved[i] = piece.view(part.shape)
    return moved


class EmbeddingCache:
    """An LRU map (settings, text) -> embedding tensor, bounded in bytes (0 disables it).

    Thread-safe. `device` keeps the cached copies there (e.g. "cpu" to hold GPU embeddings in
    host memory); None keeps them where they were computed.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES, device: str | torch.device | None = None):
        if int(max_bytes) < 0:
            raise InputError(f"cache_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        # The same check as the scoring device: "bogus" or an absent "cuda:7" is the caller's input,
        # named here rather than as a torch error mid-run.
        self.device = resolve_device(device) if device is not None else None
        self._items: OrderedDict[Hashable, torch.Tensor] = OrderedDict()
        self._lock = threading.RLock()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> torch.Tensor | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: Hashable, value: torch.Tensor) -> None:
        """Keep `value` (a compact copy, so a view does not pin its whole batch) unless too big."""
        self.put_many([(key, value)])

    def put_many(self, items: Sequence[tuple[Hashable, torch.Tensor]]) -> None:
        """`put` for many values at once: values computed elsewhere than the cache's device come
        over in one copy per call (then one compact copy each there), not one transfer per text."""
        if self.max_bytes == 0:
            return
        fitting = [(key, value) for key, value in items if value.numel() * value.element_size() <= self.max_bytes]
        if self.device is not None and any(value.device != self.device for _, value in fitting):
            copies = [value.clone() for value in move_all([value for _, value in fitting], self.device)]
        else:
            copies = [value.clone() for _, value in fitting]
        with self._lock:
            for (key, _), copy in zip(fitting, copies):
                if key in self._items:
                    continue
                self._items[key] = copy
                self.bytes += copy.numel() * copy.element_size()
            while self.bytes > self.max_bytes:
                _, evicted = self._items.popitem(last=False)
                self.bytes -= evicted.numel() * evicted.element_size()

    def clear(self) -> None:
        """Drop every cached embedding (frees their memory, on a GPU too)."""
        with self._lock:
            self._items.clear()
            self.bytes = 0


ATTENTION_LENGTH = 128  # attention memory per batch is capped at that of max_tokens at this length


def token_budget_batches(
    lengths: Sequence[int], max_tokens: int, max_sentences: int | None = None, one_length: bool = False
) -> Iterator[list[int]]:
    """Indices grouped longest-first so that (longest in batch) x (batch size) <= max_tokens.

    Attention scores grow as (batch size) x longest^2, so batches of long texts are also capped
    at max_tokens x ATTENTION_LENGTH there: the attention's memory then stays within what a full
    batch of max_tokens at that length takes, however long the corpus's longest texts are. The
    rest of a batch's activations grow with (batch size) x longest up to max_tokens: with a
    sentence cap (`max_sentences`), a corpus of short texts stays well below that bound, and its
    longest texts, not its size, set the peak. `one_length`: a batch holds texts of one length only
    (no padding), for encoders whose states depend on padding (`LoadedModel.is_padding_safe`).
    Texts come longest first, so a batch's first text is its longest and a batch's size follows
    from that length alone: one step per batch, not per text.
    """
    max_attention = max_tokens * ATTENTION_LENGTH
    sizes = np.fromiter(lengths, dtype=np.int64, count=len(lengths))
    order = np.argsort(-sizes, kind="stable")
    ordered = sizes[order]
    order_list = order.tolist()
    run_ends = _run_ends(ordered) if one_length else None
    start, total = 0, len(order_list)
    while start < total:
        longest = int(ordered[start])
        fit = total if longest == 0 else max(1, min(max_tokens // longest, max_attention // (longest * longest)))
        if max_sentences is not None:
            fit = min(fit, max_sentences)
        stop = min(total, start + fit)
        if run_ends is not None:
            stop = min(stop, int(run_ends[start]))
        yield order_list[start:stop]
        start = stop


def _run_ends(values: np.ndarray) -> np.ndarray:
    """For each position of `values`, where its run of equal values ends (exclusive)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    boundaries = np.flatnonzero(np.diff(values) != 0) + 1  # where a new run starts
    ends = np.append(boundaries, len(values))
    return ends[np.searchsorted(boundaries, np.arange(len(values)), side="right")]


def _rows(hidden: torch.Tensor, lengths: list[int]) -> list[torch.Tensor]:
    """Each row of a padded batch [B, L, D] ([B, K, L, D]) cut to its length: views, made by one
    split of the batch seen flat where it can be (one call instead of two per text)."""
    width = hidden.shape[-2]
    if hidden.dim() == 3 and hidden.is_contiguous():
        sizes = [size for length in lengths for size in (length, width - length)]
        return list(hidden.view(-1, hidden.shape[-1]).split(sizes)[::2])
    return [state[:, :length] for state, length in zip(hidden.unbind(0), lengths)]  # [B, K, L, D]


class NonFiniteEmbeddingError(FloatingPointError):
    """The encoder returned inf or NaN (e.g. float16 overflow): never turned into a score."""


class Embedder:
    """Runs a placed encoder over token-id sequences in token-budget batches.

    The encoder is used as loaded (device and dtype are the LoadedModel's): an Embedder never
    moves or casts it, so scorers sharing a model cannot change each other's numbers.
    """

    def __init__(
        self,
        model: LoadedModel,
        max_tokens_per_batch: int | None = None,
        batch_size: int | None = None,
        cache: EmbeddingCache | None = None,
        cache_namespace: Hashable = "",
    ):
        self.model = model
        self.device = model.device
        self.dtype = model.dtype
        self.max_tokens_per_batch = max_tokens_per_batch or default_tokens_per_batch(self.device)
        self.batch_size = batch_size
        self.cache = cache if cache is not None else EmbeddingCache(0)
        self.cache_namespace = cache_namespace

    @torch.inference_mode()
    def _forward(self, batch_ids: list[Sequence[int]]) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Normalised embeddings of one batch, and which rows' encoder output was not finite.

        The second is a [B] bool tensor on the device, not read here: reading it would make the
        host wait for the device at every batch (`OverflowCheck` reads all of a call's at once).
        The padded ids are built in one vectorised step, not row by row.
        """
        lengths = np.fromiter(map(len, batch_ids), dtype=np.int64, count=len(batch_ids))
        mask = np.arange(int(lengths.max()), dtype=np.int64)[None, :] < lengths[:, None]
        padded = np.full(mask.shape, self.model.pad_token_id, dtype=np.int64)
        padded[mask] = np.concatenate(batch_ids)
        input_ids, attention = torch.from_numpy(padded), torch.from_numpy(mask.astype(np.int64))
        input_ids, attention = pinned_to_device(input_ids, self.device), pinned_to_device(attention, self.device)
        with full_fp32_precision():  # the declared dtype at full precision, whatever the caller set
            hidden = self.model.encode(input_ids, attention)  # [B, L, D] or [B, K, L, D]
            hidden, norms = normalize_with_norms(hidden)
            # A norm is inf/NaN where its vector holds one; only real positions count.
            per_position = ~torch.isfinite(norms.squeeze(-1))  # [B, L] or [B, K, L]
            if per_position.dim() == 3:
                per_position = per_position.any(dim=1)
            bad = (per_position & attention.bool()).any(dim=1)
        # Views into one batch tensor: one large allocation per batch instead of one small one per
        # text, which fragments the heap so that RSS keeps growing with the corpus.
        return _rows(hidden, lengths.tolist()), bad

    def _batches(self, lengths: Sequence[int], batch_size: int | None) -> Iterator[list[int]]:
        sentences = batch_size if batch_size is not None else self.batch_size
        one_length = len(set(lengths)) > 1 and not self.model.is_padding_safe()  # one length: nothing to ask
        return token_budget_batches(lengths, self.max_tokens_per_batch, sentences, one_length)

    def embed(
        self,
        keys: Sequence[str],
        ids: Sequence[Sequence[int]],
        on_progress: Callable[[int], None] | None = None,
        batch_size: int | None = None,
        before_check: Callable[[dict[str, torch.Tensor]], Fetch | None] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Normalised fp32 embeddings of distinct texts `keys` with token ids `ids`, via the cache.

        `on_progress(n)` is called after each encoder batch with the number of texts done so far;
        `batch_size` caps sentences per encoder batch for this call only. `before_check(result)`
        runs once every batch is queued, before the overflow check waits for the device: the
        caller's next step (the matching) is then queued on the host while the device still
        encodes, instead of after it. It may return a `Fetch`: device values that come back to the
        host in the same copy as the overflow flags (one wait for the device per call), handed to
        the fetch's `receive` once the check has passed. Raises NonFiniteEmbeddingError naming the
        texts when the encoder returns inf/NaN (after `before_check`, before anything is cached,
        received or returned).
        """
        result: dict[str, torch.Tensor] = {}
        todo: list[int] = []
        hits: dict[str, torch.Tensor] = {}
        if self.cache.max_bytes == 0:  # nothing is ever cached: no lookups
            todo = list(range(len(keys)))
        else:
            for index, key in enumerate(keys):
                cached = self.cache.get((self.cache_namespace, key))
                if cached is None:
                    todo.append(index)
                else:
                    hits[key] = cached
        result.update(zip(hits, move_all(list(hits.values()), self.device)))
        overflow = OverflowCheck(self)
        computed: list[tuple[Hashable, torch.Tensor]] = []
        lengths = [len(ids[i]) for i in todo]
        for batch in self._batches(lengths, batch_size):
            members = [todo[i] for i in batch]
            embeddings, bad = self._forward([ids[i] for i in members])
            names = [keys[i] for i in members]
            overflow.add(bad, names)
            result.update(zip(names, embeddings))
            computed += zip([(self.cache_namespace, name) for name in names], embeddings)
            if on_progress is not None:
                on_progress(len(result))
        fetch = before_check(result) if before_check is not None else None
        fetched = overflow.check(fetch.values if fetch is not None else None)  # before anything is cached
        self.cache.put_many(computed)
        if fetch is not None:
            fetch.receive(fetched)
        return result

    def window_key(self, key: str, window: tuple[int, int]) -> Hashable:
        """The cache key of a text's whole (windowed) embedding: the window size and stride in it."""
        return (self.cache_namespace, ("window", *window), key)

    def embed_windows(
        self,
        keys: Sequence[str],
        ids: Sequence[np.ndarray],
        window: tuple[int, int],
        first_windows: Mapping[str, torch.Tensor] | None = None,
        on_progress: Callable[[int], None] | None = None,
        batch_size: int | None = None,
    ) -> dict[str, torch.Tensor]:
        """Whole-text embeddings of texts longer than the encoder's limit, encoded in windows.

        `ids[i]` is the whole text: lead + content + trail. `window` is (W, S): W content tokens
        per window, one every S (bertscore/scoring/windows.py has the rule). Every window goes through
        the token-budget batches; each text's embedding [lead + n + trail, D] is filled in as its
        windows come back (`WindowAssembly`: one copy held, not every window) and cached under
        `window_key`. `first_windows[key]`, when given, is window 0's states already computed
        (window 0 is the truncated text: lead + content[:W] + trail), so it is not encoded again.
        `on_progress(n)` is called after each encoder batch with the number of texts done so far.
        """
        first_windows = first_windows or {}
        result: dict[str, torch.Tensor] = {}
        assemblies: dict[int, WindowAssembly] = {}
        sequences: list[tuple[int, int]] = []  # (text index, window k) still to encode
        num_lead, num_trail = len(self.model.lead_ids), len(self.model.trail_ids)
        for index, key in enumerate(keys):
            cached = self.cache.get(self.window_key(key, window))
            if cached is not None:
                result[key] = to_device(cached, self.device)  # long texts: a few, each large
                continue
            plan = plan_windows(num_lead, len(ids[index]) - num_lead - num_trail, num_trail, *window)
            assemblies[index] = WindowAssembly(plan)
            first = first_windows.get(key)
            if first is not None:
                assemblies[index].add(0, first)
            sequences += [(index, k) for k in range(0 if first is None else 1, plan.num_windows)]

        def window_ids(index: int, k: int) -> np.ndarray:
            plan, text = assemblies[index].plan, ids[index]
            start, end = num_lead + int(plan.starts[k]), num_lead + int(plan.ends[k])
            return np.concatenate([text[:num_lead], text[start:end], text[len(text) - num_trail:]])

        computed: list[tuple[Hashable, torch.Tensor]] = []

        def finish(index: int) -> None:
            embedding = assemblies.pop(index).result()
            result[keys[index]] = embedding
            computed.append((self.window_key(keys[index], window), embedding))

        for index in [i for i, assembly in assemblies.items() if assembly.complete]:
            finish(index)  # texts whose only window was given
        lengths = [assemblies[i].plan.window_lengths[k] for i, k in sequences]
        overflow = OverflowCheck(self)
        for batch in self._batches(lengths, batch_size):
            members = [sequences[s] for s in batch]
            states_of, bad = self._forward([window_ids(i, k) for i, k in members])
            overflow.add(bad, [keys[i] for i, _ in members])
            for (index, k), states in zip(members, states_of):
                assemblies[index].add(k, states)
                if assemblies[index].complete:
                    finish(index)
            if on_progress is not None:
                on_progress(len(result))
        overflow.check()  # before anything is cached
        self.cache.put_many(computed)
        return result


class Fetch(NamedTuple):
    """Device values a caller brings back with an embedding call's overflow flags (`Embedder.embed`):
    `values` on the device, `receive(host_copy)` once the check has passed."""

    values: torch.Tensor
    receive: Callable[[torch.Tensor], None]


class OverflowCheck:
    """The encoder batches' not-finite flags of one call, read once at its end (one device sync)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.flags: list[torch.Tensor] = []
        self.names: list[str] = []

    def add(self, bad: torch.Tensor, names: Sequence[str]) -> None:
        """`bad[row]`: whether the text `names[row]` of a batch overflowed."""
        self.flags.append(bad)
        self.names += names

    def check(self, values: torch.Tensor | None = None) -> torch.Tensor | None:
        """Raise NonFiniteEmbeddingError naming the texts that overflowed, if any did; else the host
        copy of `values` (float32, any shape), brought back in the one copy that reads the flags."""
        if not self.flags:
            return None if values is None else values.cpu()
        flags = torch.cat(self.flags)
        if values is None:
            host_flags, host_values = flags.cpu(), None
        else:  # one copy for both: the host waits for the device once
            packed = torch.cat((flags.to(values.dtype), values.reshape(-1))).cpu()
            host_flags, host_values = packed[: len(flags)] != 0, packed[len(flags):].view(values.shape)
        if host_flags.any():
            self._raise(torch.nonzero(host_flags).flatten().tolist())
        return host_values

    def _raise(self, bad: list[int]) -> None:
        texts = list(dict.fromkeys(self.names[row] for row in bad))
        model, dtype = self.embedder.model, self.embedder.dtype
        raise NonFiniteEmbeddingError(
            f"the encoder returned inf/NaN in {dtype} for {len(texts)} text{'' if len(texts) == 1 else 's'}, e.g. "
            f"{texts[0][:80]!r}: {dtype} overflowed on {model.name}. Use dtype='float32' "
            "(or 'bfloat16', which has float32's range); no score is returned rather than NaN"
        )
