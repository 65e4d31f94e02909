"""Whether an encoder's states depend on the padding beside a text: the once-per-model probe.

Length-grouped batches pad shorter texts to the longest in their batch. An encoder that masks
its padding gives a padded text the states it has alone, so how texts are batched changes
nothing beyond float rounding. One that does not (ConvBERT's convolution ignores the attention
mask) lets the padding into the real tokens, and its numbers would depend on the batch; the
embedder then batches texts of one length only (`LoadedModel.is_padding_safe`, asked at the first
call whose texts differ in length, never at load). The probe asks the encoder itself, so no list
of model families is kept.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence

import torch

from ..scoring.matching import normalize
from .devices import full_fp32_precision

logger = logging.getLogger(__name__)

PROBE_TEXT = "The cat sat on the mat."  # short: three forward passes of it, once per loaded model
PROBE_PADDING = 8  # pad positions in the probe: more than a convolution's reach (ConvBERT: 4 each side)
# Largest |difference| of unit-length states that counts as the rounding of another batch shape
# (the text alone vs padded): fp32 encoders that mask their padding differ by ~1e-7, bf16 ones by
# ~3e-3; ConvBERT's leak is ~2e-3 in fp32. The padding's content, at equal shapes, changes nothing
# at all in an encoder that masks it (in every dtype), so a change beyond CONTENT_TOLERANCE is a leak.
ALONE_TOLERANCE = {"float32": 1e-4, "bfloat16": 5e-2, "float16": 1e-2}
CONTENT_TOLERANCE = 1e-6

Encode = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (input_ids, attention_mask) -> states


def padding_probe(encode: Encode, ids: Sequence[int], pad_id: int, max_length: int,
                  device: torch.device) -> dict[str, float]:
    """How the states of a text (`ids`) change when it is padded in a batch.

    The text is encoded alone, then padded with PROBE_PADDING pad tokens, then padded with other
    tokens (its own, repeated) under the same mask. Returns the largest differences of the
    unit-length states of the text's positions: "alone" (padded vs alone: rounding of another
    shape, or a leak) and "content" (what the padding holds: nothing, or a leak).
    """
    ids = list(ids)
    extra = max(0, min(PROBE_PADDING, max_length - len(ids)))
    filler = (ids * (extra // max(1, len(ids)) + 1))[:extra]
    states = []
    with torch.inference_mode(), full_fp32_precision():
        for row in (ids, ids + [pad_id] * extra, ids + filler):
            input_ids = torch.tensor([row], dtype=torch.long, device=device)
            mask = torch.zeros_like(input_ids)
            mask[:, : len(ids)] = 1
            states.append(normalize(encode(input_ids, mask)[..., : len(ids), :]))
    alone, padded, other = states
    return {"alone": float((padded - alone).abs().max()), "content": float((other - padded).abs().max())}


def padding_is_safe(name: str, dtype: str, encode: Encode, ids: Sequence[int], pad_id: int, max_length: int,
                    device: torch.device) -> bool:
    """Whether texts of different lengths may share a padded encoder batch (`padding_probe`
    within the tolerances of `dtype`); when not, says so in the log."""
    probe = padding_probe(encode, ids, pad_id, max_length, device)
    if probe["alone"] <= ALONE_TOLERANCE[dtype] and probe["content"] <= CONTENT_TOLERANCE:
        return True
    logger.info(
        "%s's states depend on the padding beside a text (by %.1e padded vs alone, %.1e by what the padding "
        "holds): each encoder batch holds texts of one length", name, probe["alone"], probe["content"],
    )
    return False
