"""Batched embedding: token-budget batches, a byte-bounded LRU cache, dtype and device.

Texts arrive already tokenised (ids). They are sorted by token count and packed into batches
whose padded size stays under a token budget; the encoder runs once per batch; each text's
normalised fp32 embedding [L, D] (or [K, L, D] for all layers) is returned and cached.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Callable, Hashable, Iterator, Sequence

import torch

from .matching import normalize
from .models import LoadedModel

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DEFAULT_CACHE_BYTES = 512 << 20


def resolve_dtype(dtype: str | torch.dtype | None) -> str:
    """Canonical dtype name; None -> float32 on every device.

    Reduced precision changes the numbers (within a documented tolerance), so it is only used
    when asked for: the default stays the exact fp32 core, on a GPU too.
    """
    if dtype is None:
        return "float32"
    if isinstance(dtype, torch.dtype):
        names = {v: k for k, v in DTYPES.items()}
        if dtype not in names:
            raise ValueError(f"dtype {dtype} is not supported; use one of {sorted(DTYPES)}")
        return names[dtype]
    aliases = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float32"}
    name = aliases.get(str(dtype).lower(), str(dtype).lower())
    if name not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not supported; use one of {sorted(DTYPES)}")
    return name


def resolve_device(device: str | torch.device | None) -> torch.device:
    """The device to run on: CUDA when available unless told otherwise.

    A device this torch or this machine cannot run on (`"cuda"` on a CPU-only build,
    `"cuda:3"` with two GPUs, `"mps"` off Apple silicon, `"bogus"`) is a ValueError that
    names the devices available, raised here rather than as a torch assertion mid-run.
    """
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    accelerators = {"cuda": (torch.cuda.is_available, torch.cuda.device_count),
                    "mps": (torch.backends.mps.is_available, lambda: 1)}
    if getattr(torch, "xpu", None) is not None:
        accelerators["xpu"] = (torch.xpu.is_available, torch.xpu.device_count)

    def available() -> str:
        names = ["cpu"]
        for kind, (is_available, count) in accelerators.items():
            if is_available():
                names += [kind] + ([f"{kind}:{i}" for i in range(count())] if kind != "mps" else [])
        return ", ".join(names)

    try:
        resolved = torch.device(device.strip().lower() if isinstance(device, str) else device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown device {device!r}; available: {available()}") from None
    kind = resolved.type
    if kind == "cpu":
        return resolved
    if kind not in accelerators:
        raise ValueError(f"device {str(resolved)!r} cannot run the encoder here; available: {available()}")
    is_available, count = accelerators[kind]
    if not is_available():
        built_with_cuda = torch.version.cuda is not None or getattr(torch.version, "hip", None) is not None
        if kind != "cuda":
            lacks = f"this torch or machine has no {kind.upper()}"
        elif built_with_cuda:
            lacks = "no CUDA device is visible (torch is built with CUDA; check the driver and CUDA_VISIBLE_DEVICES)"
        else:
            lacks = "this torch has no CUDA"
        raise ValueError(f"{kind.upper()} requested but {lacks}; available: {available()}")
    if resolved.index is not None and resolved.index >= count():
        raise ValueError(f"{resolved} requested but this machine has {count()} {kind.upper()} device(s); "
                         f"available: {available()}")
    return resolved


def default_tokens_per_batch(device: torch.device) -> int:
    """A token budget per encoder batch that suits the device.

    CPU: 2048, the fastest in benchmarks/results/token_budget_cpu.md (1024-2048 tie; 4096 is
    ~15% slower, 16384 ~75%: large batches fall out of the caches). CUDA: 65536, enough
    tokens to fill a large GPU.
    """
    return 65536 if device.type == "cuda" else 2048


class EmbeddingCache:
    """An LRU map (settings, text) -> embedding tensor, bounded in bytes (0 disables it)."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, torch.Tensor] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> torch.Tensor | None:
        value = self._items.get(key)
        if value is None:
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: Hashable, value: torch.Tensor) -> None:
        """Keep `value` (a compact copy, so a view does not pin its whole batch) unless too big."""
        size = value.numel() * value.element_size()
        if size > self.max_bytes or key in self._items:
            return
        self._items[key] = value.clone()
        self.bytes += size
        while self.bytes > self.max_bytes:
            _, evicted = self._items.popitem(last=False)
            self.bytes -= evicted.numel() * evicted.element_size()

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0


ATTENTION_LENGTH = 128  # attention memory per batch is capped at that of max_tokens at this length


def token_budget_batches(
    lengths: Sequence[int], max_tokens: int, max_sentences: int | None = None
) -> Iterator[list[int]]:
    """Indices grouped longest-first so that (longest in batch) x (batch size) <= max_tokens.

    Attention scores grow as (batch size) x longest^2, so batches of long texts are also capped
    at max_tokens x ATTENTION_LENGTH there: peak memory then does not depend on how long the
    corpus's longest texts happen to be.
    """
    max_attention = max_tokens * ATTENTION_LENGTH
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    longest = 0
    for index in order:
        length = lengths[index]
        candidate_longest = max(longest, length)
        too_many = max_sentences is not None and len(batch) >= max_sentences
        padded = candidate_longest * (len(batch) + 1)
        if batch and (too_many or padded > max_tokens or padded * candidate_longest > max_attention):
            yield batch
            batch, candidate_longest = [], length
        batch.append(index)
        longest = candidate_longest
    if batch:
        yield batch


class Embedder:
    """Runs the encoder over token-id sequences in token-budget batches."""

    def __init__(
        self,
        model: LoadedModel,
        device: torch.device,
        dtype: str = "float32",
        max_tokens_per_batch: int | None = None,
        batch_size: int | None = None,
        cache: EmbeddingCache | None = None,
        cache_namespace: Hashable = "",
    ):
        self.model = model
        self.device = device
        self.dtype = dtype
        self.max_tokens_per_batch = max_tokens_per_batch or default_tokens_per_batch(device)
        self.batch_size = batch_size
        self.cache = cache if cache is not None else EmbeddingCache(0)
        self.cache_namespace = cache_namespace
        model.encoder.to(device=device, dtype=DTYPES[dtype])

    @torch.inference_mode()
    def _forward(self, batch_ids: list[Sequence[int]]) -> list[torch.Tensor]:
        longest = max(len(ids) for ids in batch_ids)
        input_ids = torch.full((len(batch_ids), longest), self.model.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(batch_ids), longest), dtype=torch.long)
        for row, ids in enumerate(batch_ids):
            input_ids[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
            attention[row, : len(ids)] = 1
        if self.device.type == "cuda":
            input_ids = input_ids.pin_memory().to(self.device, non_blocking=True)
            attention = attention.pin_memory().to(self.device, non_blocking=True)
        output = self.model.encoder(
            input_ids=input_ids, attention_mask=attention, output_hidden_states=self.model.all_layers
        )
        if self.model.all_layers:
            hidden = torch.stack(output.hidden_states, dim=1)  # [B, K, L, D]
        else:
            hidden = output[0]  # [B, L, D]
        hidden = normalize(hidden)
        # Views into one batch tensor: one large allocation per batch instead of one small one per
        # text, which fragments the heap so that RSS keeps growing with the corpus.
        return [hidden[row, ..., : len(ids), :] for row, ids in enumerate(batch_ids)]

    def embed(
        self,
        keys: Sequence[str],
        ids: Sequence[Sequence[int]],
        on_progress: Callable[[int], None] | None = None,
    ) -> dict[str, torch.Tensor]:
        """Normalised fp32 embeddings of distinct texts `keys` with token ids `ids`, via the cache.

        `on_progress(n)` is called after each encoder batch with the number of texts done so far.
        """
        result: dict[str, torch.Tensor] = {}
        todo: list[int] = []
        for index, key in enumerate(keys):
            cached = self.cache.get((self.cache_namespace, key))
            if cached is None:
                todo.append(index)
            else:
                result[key] = cached
        lengths = [len(ids[i]) for i in todo]
        for batch in token_budget_batches(lengths, self.max_tokens_per_batch, self.batch_size):
            members = [todo[i] for i in batch]
            for index, embedding in zip(members, self._forward([ids[i] for i in members])):
                result[keys[index]] = embedding
                self.cache.put((self.cache_namespace, keys[index]), embedding)
            if on_progress is not None:
                on_progress(len(result))
        return result
