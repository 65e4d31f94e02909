"""bertscore.models.padding: the probe that tells whether an encoder lets the padding into a text's states.

The encoders here are small torch functions with a known answer: one that masks its padding (a
per-token map), one whose padding leaks (a convolution over the sequence, mask ignored), one
whose states change with the batch's shape only by rounding-sized amounts.
"""

from __future__ import annotations

import logging

import pytest
import torch

from bertscore.models import padding
from bertscore.models.padding import ALONE_TOLERANCE, CONTENT_TOLERANCE, PROBE_PADDING, padding_is_safe, padding_probe

CPU = torch.device("cpu")
TABLE = torch.randn(50, 6, generator=torch.Generator().manual_seed(0))  # token id -> state


def unit(rows: torch.Tensor) -> torch.Tensor:
    """Unit length per row, written out."""
    return rows / torch.sqrt((rows * rows).sum(-1, keepdim=True))


def per_token(input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """An encoder that masks its padding: each position's state is its token's alone."""
    return TABLE[input_ids]


def leaky(input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A convolution over the sequence that ignores the mask: each state adds its right neighbour's."""
    states = TABLE[input_ids]
    right = torch.cat([states[:, 1:], torch.zeros_like(states[:, :1])], dim=1)
    return states + right


def recording(calls: list):
    def encode(input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        calls.append((input_ids.tolist(), mask.tolist(), input_ids.dtype, mask.dtype))
        return per_token(input_ids, mask)
    return encode


def test_the_probe_encodes_the_text_alone_padded_and_filled_under_one_mask() -> None:
    """Three rows: the text, the text and PROBE_PADDING pad ids, the text and its own ids repeated, the
    mask 1 over the text only: fails if the padding's length, the filler, the mask or the dtype is off."""
    calls: list = []
    ids = [5, 6, 7]
    probe = padding_probe(recording(calls), ids, 0, 512, CPU)
    filler = [5, 6, 7, 5, 6, 7, 5, 6]
    mask = [[1, 1, 1] + [0] * PROBE_PADDING]
    assert calls == [([ids], [[1, 1, 1]], torch.long, torch.long),
                     ([ids + [0] * PROBE_PADDING], mask, torch.long, torch.long),
                     ([ids + filler], mask, torch.long, torch.long)]
    assert probe == {"alone": 0.0, "content": 0.0}


@pytest.mark.parametrize("max_length, extra", [(5, 2), (3, 0), (2, 0), (3 + PROBE_PADDING + 4, PROBE_PADDING)])
def test_the_padding_stops_at_the_model_s_length(max_length: int, extra: int) -> None:
    """Never more pad positions than the model takes beside the text, never fewer than none: fails if
    the room left (max_length - len(ids)) or its floor at 0 is computed otherwise."""
    calls: list = []
    padding_probe(recording(calls), [5, 6, 7], 0, max_length, CPU)
    assert [len(row[0][0]) for row in calls] == [3, 3 + extra, 3 + extra]
    assert calls[2][0][0] == [5, 6, 7] + ([5, 6, 7] * 3)[:extra]


def test_a_one_token_text_is_filled_with_itself() -> None:
    calls: list = []
    padding_probe(recording(calls), [9], 1, 512, CPU)
    assert calls[2][0] == [[9] * (1 + PROBE_PADDING)]


def test_a_leaking_encoder_differs_by_the_neighbour_it_reads() -> None:
    """The leak's size, by hand: the text's last state gains the pad's (row 2) or the filler's first
    (row 3) state; the others are unchanged. Fails if the difference is taken over other positions, not
    normalised, or the two measures are swapped."""
    ids, pad = [5, 6, 7], 0
    alone = unit(TABLE[[5, 6, 7]] + torch.cat([TABLE[[6, 7]], torch.zeros(1, 6)]))
    padded = unit(TABLE[[5, 6, 7]] + TABLE[[6, 7, pad]])
    filled = unit(TABLE[[5, 6, 7]] + TABLE[[6, 7, 5]])
    probe = padding_probe(leaky, ids, pad, 512, CPU)
    assert probe["alone"] == pytest.approx(float((padded - alone).abs().max()), abs=1e-6)
    assert probe["content"] == pytest.approx(float((filled - padded).abs().max()), abs=1e-6)
    assert probe["alone"] > 1e-2 and probe["content"] > 1e-2
    assert not padding_is_safe("leaky", "float32", leaky, ids, pad, 512, CPU)


def test_a_masking_encoder_is_safe() -> None:
    assert padding_is_safe("masked", "float32", per_token, [5, 6, 7], 0, 512, CPU)


@pytest.mark.parametrize("dtype", sorted(ALONE_TOLERANCE))
def test_safe_up_to_each_tolerance_and_not_beyond(monkeypatch, caplog, dtype: str) -> None:
    """At each tolerance still safe, a step beyond it not, and the log names the model and both
    differences: fails if a bound is strict, the dtype's tolerance is another dtype's, or the two
    measures' bounds are swapped."""
    limit = ALONE_TOLERANCE[dtype]
    cases = [({"alone": limit, "content": CONTENT_TOLERANCE}, True),
             ({"alone": limit * 1.01, "content": 0.0}, False),
             ({"alone": 0.0, "content": CONTENT_TOLERANCE * 1.01}, False),
             ({"alone": 0.0, "content": 0.0}, True)]
    for probe, safe in cases:
        monkeypatch.setattr(padding, "padding_probe", lambda *args, probe=probe: probe)
        with caplog.at_level(logging.INFO, logger="bertscore.models.padding"):
            caplog.clear()
            assert padding_is_safe("tiny-conv", dtype, per_token, [5], 0, 512, CPU) is safe, probe
        if safe:
            assert caplog.records == []
        else:
            assert len(caplog.records) == 1 and caplog.records[0].levelno == logging.INFO
            message = caplog.records[0].getMessage()
            assert message == (f"tiny-conv's states depend on the padding beside a text (by {probe['alone']:.1e} "
                               f"padded vs alone, {probe['content']:.1e} by what the padding holds): each encoder "
                               "batch holds texts of one length")


def test_the_tolerances_order_the_dtypes_by_their_rounding() -> None:
    """fp32 rounding is the finest, bf16's the coarsest, and a change by the padding's content is
    below all of them: fails if a tolerance is edited to a value that lets a leak (~2e-3 in fp32) pass."""
    assert CONTENT_TOLERANCE < ALONE_TOLERANCE["float32"] < 2e-3
    assert ALONE_TOLERANCE["float32"] < ALONE_TOLERANCE["float16"] < ALONE_TOLERANCE["bfloat16"]
    assert PROBE_PADDING > 4  # beyond a convolution's reach of 4 on each side (ConvBERT)


def test_the_probe_runs_on_the_model_s_device() -> None:
    """Every row goes to the encoder on the device asked for (meta here: a stand-in for an accelerator),
    through padding_is_safe too: fails if the rows are built on the CPU whatever the model's device."""
    devices = []

    def on_device(input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        devices.append((input_ids.device.type, mask.device.type, input_ids.dtype))
        return TABLE[torch.zeros(input_ids.shape, dtype=torch.long)]  # the states on the CPU: readable

    meta = torch.device("meta")
    assert padding_probe(on_device, [5, 6], 0, 512, meta) == {"alone": 0.0, "content": 0.0}
    assert padding_is_safe("m", "float32", on_device, [5, 6], 0, 512, meta)
    assert devices == [("meta", "meta", torch.long)] * 6
