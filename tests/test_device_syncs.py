"""How often the host waits for the device, counted on a CPU through an instrumented device shim.

On an accelerator every read of a device tensor on the host (`.item()`, `.tolist()`, `.cpu()`,
`bool()`, `nonzero`, a device tensor written into a host one) makes the host wait until the
device has caught up: one such wait per encoder or matching batch would keep the device idle
while the host prepares the next batch. Here the encoder's outputs are wrapped in `DeviceTensor`,
a tensor subclass that stands for "lives on the device": whatever is computed from them stays a
`DeviceTensor` (torch's `__torch_function__`), and every host read of one is counted. A call of
many chunks, each of many encoder and matching batches, must wait once per chunk: the scores come
back with the overflow flags in one copy (`Embedder.embed`'s `Fetch`). `score_matrix` waits once
for its embeddings and once for the whole matrix, however many blocks it matches.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from bertscore import BERTScorer
from bertscore.scoring import all_pairs
from bertscore.scoring import plan
from bertscore.sources import EMBEDDED_MODEL_NAME

SYNCING = {
    torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.__bool__,
    torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__, torch.Tensor.nonzero, torch.nonzero,
    torch.equal, torch.Tensor.unique, torch.unique, torch.masked_select, torch.Tensor.masked_select,
}
INTO_HOST = {torch.Tensor.__setitem__, torch.Tensor.copy_, torch.Tensor.index_put_}


class DeviceTensor(torch.Tensor):
    """A tensor that stands for one on an accelerator: host reads of it are counted in `reads`."""

    reads: list[str] = []

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        to_host = func in INTO_HOST and not isinstance(args[0], DeviceTensor) and any(
            isinstance(a, DeviceTensor) for a in list(args[1:]) + list(kwargs.values()))
        if func in SYNCING or to_host:
            cls.reads.append(getattr(func, "__name__", str(func)))
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
                return out.as_subclass(torch.Tensor) if isinstance(out, torch.Tensor) else out
        return super().__torch_function__(func, types, args, kwargs)


@pytest.fixture(scope="module")
def scorer() -> BERTScorer:
    """MiniLM at layer 1, cache off, two texts per encoder batch, chunks of 12 pairs; its padding
    probe (once per loaded model, `padding.py`) already run."""
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=1, device="cpu", cache_bytes=0, batch_size=2,
                        chunk_size=12)
    scorer.score(["a short one", "and a somewhat longer text"], ["a reference", "another reference text here"])
    return scorer


@pytest.fixture
def on_device(scorer, monkeypatch) -> dict[str, int]:
    """The encoder's outputs as `DeviceTensor`s; counts the embedding calls (one per chunk)."""
    model, embedder = scorer.pipeline.model, scorer.pipeline.embedder
    encode, embed = model.encode, embedder.embed
    calls = {"embed": 0}

    def device_encode(*args: Any, **kwargs: Any) -> torch.Tensor:
        return encode(*args, **kwargs).as_subclass(DeviceTensor)

    def counted_embed(*args: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        calls["embed"] += 1
        return embed(*args, **kwargs)

    monkeypatch.setattr(model, "encode", device_encode)
    monkeypatch.setattr(embedder, "embed", counted_embed)
    monkeypatch.setattr(plan, "MAX_PAIRS_PER_MATCH", 3)  # several matching batches per chunk
    DeviceTensor.reads = []
    return calls


def pairs(n: int) -> tuple[list[str], list[str]]:
    cands = [f"candidate number {i} says {'more ' * (i % 5)}about the weather in town {i % 7}" for i in range(n)]
    refs = [f"reference {i % 11} tells {'again ' * (i % 3)}of rain and sun near {i}" for i in range(n)]
    return cands, refs


def test_a_call_waits_for_the_device_once_per_chunk_not_per_batch(scorer, on_device):
    cands, refs = pairs(40)
    scorer.score(cands, refs)
    chunks = on_device["embed"]
    assert chunks >= 4  # several chunks, each of many encoder batches (2 texts each) and matching batches (3 pairs)
    assert len(DeviceTensor.reads) <= chunks, (
        f"{len(DeviceTensor.reads)} host reads of device tensors for {chunks} chunks: {DeviceTensor.reads}")


def test_the_shim_changes_no_number(scorer, on_device, monkeypatch):
    cands, refs = pairs(40)
    shimmed = scorer.score(cands, refs)
    monkeypatch.undo()
    monkeypatch.setattr(plan, "MAX_PAIRS_PER_MATCH", 3)  # the same batches, plain tensors
    plain = scorer.score(cands, refs)
    assert all(torch.equal(a, b) for a, b in zip(shimmed, plain))


def test_score_matrix_waits_twice_whatever_its_blocks(scorer, on_device, monkeypatch):
    monkeypatch.setattr(all_pairs, "PADDED_BYTES", 64 << 10)  # groups of a few texts: many blocks
    cands, refs = pairs(24)
    scorer.score_matrix(cands, refs[:20])
    assert len(DeviceTensor.reads) <= 2, DeviceTensor.reads  # the embeddings' overflow check, the matrix
