"""The dtype rule of `bertscore.torchmetrics.BERTScore`: its states are float32 scores and text bytes.

A move on the metric itself (`.half()`, `.double()`, `.type(...)`, `set_dtype(...)`, `.to(dtype)`)
is refused unless float32, with an error naming the setting that does change the precision (the
encoder's `dtype=`). A move that reaches it through a parent module (a LightningModule's `.half()`
or `.to(torch.float16)`, Lightning's "16-true") moves its states to the parent's device and leaves
their dtype, as torchmetrics leaves every metric's under `.half()`. A mixin for the Metric class;
no torchmetrics import here.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from ..inputs import InputError


class FloatScores:
    """torchmetrics' dtype moves on a metric whose states are float32 scores and text bytes: float32 is
    accepted, anything else refused naming the setting that does change the precision (the encoder's)."""

    def set_dtype(self, dst_type: str | torch.dtype) -> "FloatScores":
        """Scores are float32 (the official package's) and texts bytes: only float32 is accepted; the
        encoder's dtype is `dtype=` at construction."""
        wanted = getattr(torch, dst_type) if isinstance(dst_type, str) and hasattr(torch, dst_type) else dst_type
        if wanted not in (torch.float32, "torch.FloatTensor"):
            raise InputError(f"BERTScore's states are scores (float32, as the official package gives them) and texts "
                             f"(bytes); they do not move to {dst_type}. To run the encoder in another precision, pass "
                             f"dtype= at construction: BERTScore(..., dtype='float16' or 'bfloat16')")
        return self

    def type(self, dst_type: str | torch.dtype) -> "FloatScores":
        return self.set_dtype(dst_type)

    def half(self) -> "FloatScores":
        return self.set_dtype(torch.float16)

    def bfloat16(self) -> "FloatScores":
        return self.set_dtype(torch.bfloat16)

    def double(self) -> "FloatScores":
        return self.set_dtype(torch.float64)

    def float(self) -> "FloatScores":
        return self.set_dtype(torch.float32)

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """nn.Module's `.to(device, dtype, ...)`: a dtype other than float32 is refused as `set_dtype` refuses it."""
        _, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is not None:
            self.set_dtype(dtype)
        return super().to(*args, **kwargs)  # type: ignore[misc]

    def _apply(self, fn: Callable, exclude_state: Sequence[str] = "") -> Any:
        """A parent module's move (device, dtype): the states go to its device and keep their dtype."""

        def same_dtype(tensor: torch.Tensor) -> torch.Tensor:
            moved = fn(tensor)
            return moved if moved.dtype == tensor.dtype else tensor.to(moved.device)

        return super()._apply(same_dtype, exclude_state)  # type: ignore[misc]
