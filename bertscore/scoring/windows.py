"""The window plan for texts longer than the encoder's limit: pure index arithmetic, no model code.

The rule, exactly (issue 8, `long_texts="window"`):

* A text's content ids are ``t[0..n)``: the stripped text tokenized with no truncation and no
  special tokens. ``W >= 1`` is the window size in content tokens (the model's max length minus
  the number of special tokens the tokenizer adds to one sequence: 510 for BERT/RoBERTa). ``S``
  is the stride, ``1 <= S <= W``; by default ``W // 2`` (1 when ``W == 1``).
* If ``n <= W`` there is a single window ``[0, n)``: the text is encoded exactly as without
  windows.
* Otherwise window ``k`` starts at ``k*S`` and holds the content positions
  ``[k*S, min(k*S + W, n))`` for ``k = 0, 1, ..., K-1``, where window ``K-1`` is the FIRST whose
  end ``k*S + W`` reaches ``n``; so ``K = 1 + ceil((n - W) / S)``.
* Each window is encoded like a text of its own: ``lead + t[k*S : k*S + W] + trail``, where
  ``lead`` and ``trail`` are the special ids the tokenizer puts before and after one sequence
  (e.g. ``[CLS]`` and ``[SEP]``).
* Content token ``i`` takes its hidden state from the window ``k``, among those holding it, with
  the largest ``min(i - start_k, end_k - 1 - i)`` (its context on the poorer side); ties go to
  the earlier window. This is the max-context rule of BERT's reading-comprehension code without
  its small length bonus.
* The text's embedding has the layout of one untruncated encoding, ``lead + t[0..n) + trail``:
  its leading specials take their states from window 0 (positions ``0..len(lead)-1``), its
  trailing specials from window ``K-1`` (the positions after that window's content), and
  content token ``i`` from its window ``k`` at position ``len(lead) + i - k*S``.

`plan_windows` returns that mapping as a `WindowPlan`; `window_ids` builds the windows' id
sequences; `assemble` gathers a text's embedding from its windows' hidden states, and
`WindowAssembly` does the same window by window as the encoder returns them (bertscore/scoring/embed.py).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..inputs import InputError, InputTypeError


class WindowSettingError(InputError):
    """A long-text setting that cannot be used (a ValueError that names the value)."""


def _integer(value: object, name: str) -> int:
    """`value` as an int; a TypeError (not a silent coercion) for floats, bools, strings."""
    if isinstance(value, bool):
        raise InputTypeError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InputTypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})") from None


def resolve_stride(window_size: int, stride: int | None = None) -> tuple[int, int]:
    """Validated (window_size, stride); stride None -> W // 2 (at least 1).

    A ValueError names the bad value: W must be >= 1, and 1 <= stride <= W.
    """
    window_size = _integer(window_size, "window size")
    if window_size < 1:
        raise ValueError(f"window size {window_size} is invalid: a window must hold at least 1 content token")
    if stride is None:
        return window_size, max(1, window_size // 2)
    stride = _integer(stride, "window_stride")
    if not 1 <= stride <= window_size:
        raise WindowSettingError(
            f"window_stride={stride} is invalid: it must satisfy 1 <= window_stride <= {window_size} "
            f"(the window size); the default is {max(1, window_size // 2)} (half the window)"
        )
    return window_size, stride


def _content_length(content_length: int) -> int:
    content_length = _integer(content_length, "content length")
    if content_length < 0:
        raise ValueError(f"content length {content_length} is invalid: it must be >= 0")
    return content_length


def window_starts(content_length: int, window_size: int, stride: int | None = None) -> np.ndarray:
    """Start offsets [K] (int64) of the windows over n content tokens: 0, S, 2S, ...

    The last is the first window whose end reaches n; a single window [0] when n <= W.
    """
    n = _content_length(content_length)
    window_size, stride = resolve_stride(window_size, stride)
    count = 1 + max(0, -(-(n - window_size) // stride))  # 1 + ceil((n - W) / S), at least 1
    return np.arange(count, dtype=np.int64) * stride


def assign_windows(content_length: int, window_size: int, stride: int | None = None) -> np.ndarray:
    """The window index [n] (int64) each content token takes its state from (the module's rule).

    O(n), vectorised. Seen as a function of the window k, i - start_k falls by S per window and
    end_k - 1 - i rises (by S, by less into the last window, whose end is clipped at n), so their
    minimum rises then falls: the best window is the last one before the two cross (c - 1) or the
    first after (c). Without the clip, c = ceil((2i - W + 1) / 2S); the clip only lowers the last
    window's context, and the last window holding i is c itself whenever c is at or past it
    (clamping below). So the better of c - 1 and c, each clamped to the windows holding i, with
    ties to c - 1, is the rule's answer (tests/test_windows.py checks it against the plain loop).
    """
    n = _content_length(content_length)
    window_size, stride = resolve_stride(window_size, stride)
    last = len(window_starts(n, window_size, stride)) - 1
    i = np.arange(n, dtype=np.int64)
    first_holding = np.maximum(0, -(-(i - window_size + 1) // stride))  # smallest k with k*S + W > i
    last_holding = np.minimum(i // stride, last)  # largest k with k*S <= i
    crossing = -(-(2 * i - window_size + 1) // (2 * stride))
    earlier = np.clip(crossing - 1, first_holding, last_holding)
    later = np.clip(crossing, first_holding, last_holding)

    def context(k: np.ndarray) -> np.ndarray:
        start = k * stride
        return np.minimum(i - start, np.minimum(start + window_size, n) - 1 - i)

    return np.where(context(later) > context(earlier), later, earlier)


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class WindowPlan:
    """Where each row of a text's embedding comes from when it is encoded in windows.

    The text's layout is ``lead + t[0..n) + trail`` (``lead + n + trail`` rows, as one
    untruncated encoding). Row r comes from window ``window[r]`` at position ``position[r]`` of
    that window's encoded sequence ``lead + t[start:end] + trail``. Arrays are read-only int64.
    """

    num_lead: int
    content_length: int
    num_trail: int
    window_size: int
    stride: int
    starts: np.ndarray  # [K]
    window: np.ndarray  # [num_lead + n + num_trail]
    position: np.ndarray  # [num_lead + n + num_trail]

    @property
    def num_windows(self) -> int:
        return len(self.starts)

    @property
    def is_single(self) -> bool:
        """True when n <= W: one window, the text encoded exactly as without windows."""
        return self.num_windows == 1

    @property
    def ends(self) -> np.ndarray:
        """End offsets [K] (exclusive) of the windows' content."""
        return np.minimum(self.starts + self.window_size, self.content_length)

    @property
    def window_lengths(self) -> tuple[int, ...]:
        """Length of each window's encoded sequence, specials included."""
        return tuple(int(x) for x in self.ends - self.starts + self.num_lead + self.num_trail)

    @property
    def text_length(self) -> int:
        """Rows of the assembled embedding: lead + n + trail."""
        return self.num_lead + self.content_length + self.num_trail


def plan_windows(
    num_lead: int, content_length: int, num_trail: int, window_size: int, stride: int | None = None
) -> WindowPlan:
    """The `WindowPlan` of a text with `content_length` content tokens between `num_lead` leading
    and `num_trail` trailing special tokens, in windows of `window_size` content tokens every
    `stride` (default W // 2)."""
    num_lead = _integer(num_lead, "number of leading special tokens")
    num_trail = _integer(num_trail, "number of trailing special tokens")
    if num_lead < 0 or num_trail < 0:
        raise ValueError(f"special token counts must be >= 0, got lead={num_lead}, trail={num_trail}")
    n = _content_length(content_length)
    window_size, stride = resolve_stride(window_size, stride)
    starts = window_starts(n, window_size, stride)
    last = len(starts) - 1
    last_content = n - int(starts[-1])
    content_window = assign_windows(n, window_size, stride)
    window = np.concatenate([
        np.zeros(num_lead, dtype=np.int64), content_window, np.full(num_trail, last, dtype=np.int64),
    ])
    position = np.concatenate([
        np.arange(num_lead, dtype=np.int64),
        num_lead + np.arange(n, dtype=np.int64) - starts[content_window],
        num_lead + last_content + np.arange(num_trail, dtype=np.int64),
    ])
    return WindowPlan(
        num_lead=num_lead, content_length=n, num_trail=num_trail, window_size=window_size, stride=stride,
        starts=_read_only(starts), window=_read_only(window), position=_read_only(position),
    )


def window_ids(
    lead_ids: Sequence[int],
    content_ids: Sequence[int],
    trail_ids: Sequence[int],
    window_size: int,
    stride: int | None = None,
) -> list[list[int]]:
    """The id sequences of a text's windows: ``lead + content[k*S : k*S + W] + trail`` each.

    A single sequence ``lead + content + trail`` when ``len(content) <= W``.
    """
    lead, content, trail = list(lead_ids), list(content_ids), list(trail_ids)
    window_size, stride = resolve_stride(window_size, stride)
    return [
        lead + content[start:start + window_size] + trail
        for start in window_starts(len(content), window_size, stride).tolist()
    ]


class WindowAssembly:
    """A text's embedding filled in window by window, in any order, holding one copy of it.

    Windows of one text reach the encoder in different batches; keeping every window's states
    until the last one arrives would hold about W / S times the text's embedding, plus a
    concatenation of them. Here each window's rows are copied into place as it arrives:
    `add(k, states)` for every window, then `result()`. The rows are exactly `assemble`'s.
    """

    def __init__(self, plan: WindowPlan):
        self.plan = plan
        by_window = np.argsort(plan.window, kind="stable")  # rows grouped by the window serving them
        bounds = np.searchsorted(plan.window[by_window], np.arange(plan.num_windows + 1))
        self._rows = [by_window[bounds[k] : bounds[k + 1]] for k in range(plan.num_windows)]
        self._missing = set(range(plan.num_windows))
        self._out: torch.Tensor | None = None

    @property
    def complete(self) -> bool:
        return not self._missing

    def check(self, k: int, states: torch.Tensor) -> None:
        """A ValueError unless `states` fit window k: [len_k, D] or [layers, len_k, D]."""
        expected = self.plan.window_lengths[k]
        if states.dim() < 2 or states.shape[-2] != expected:
            raise ValueError(
                f"window {k}: states of shape {tuple(states.shape)}, expected {expected} positions on dim -2 "
                f"({self.plan.num_lead} leading specials + {expected - self.plan.num_lead - self.plan.num_trail} "
                f"content tokens + {self.plan.num_trail} trailing specials)"
            )

    def add(self, k: int, states: torch.Tensor) -> None:
        """Window k's hidden states, [len_k, D] or [layers, len_k, D] (positions on dim -2)."""
        self.check(k, states)
        if self._out is None:
            shape = (*states.shape[:-2], self.plan.text_length, states.shape[-1])
            self._out = states.new_empty(shape)
        rows = torch.from_numpy(self._rows[k]).to(states.device)
        positions = torch.from_numpy(self.plan.position[self._rows[k]]).to(states.device)
        self._out.index_copy_(-2, rows, states.index_select(-2, positions))
        self._missing.discard(k)

    def result(self) -> torch.Tensor:
        """The assembled embedding [lead + n + trail, D] (or [layers, ..., D]) once every window was added."""
        if self._missing or self._out is None:
            raise ValueError(f"windows {sorted(self._missing)} of {self.plan.num_windows} were never added")
        return self._out


def assemble(plan: WindowPlan, window_states: Sequence[torch.Tensor]) -> torch.Tensor:
    """A text's embedding [lead + n + trail, D] (or [layers, ..., D]) from its windows' states.

    `window_states[k]` is window k's hidden states, [len_k, D] or [layers, len_k, D] (positions on
    the second-to-last dim, len_k = plan.window_lengths[k]). A single window is returned as it
    is (no copy: bit-identical to the unwindowed encoding); otherwise each row is copied from
    the window that serves it (`WindowAssembly`).
    """
    if len(window_states) != plan.num_windows:
        raise ValueError(f"the plan has {plan.num_windows} windows but {len(window_states)} window states were given")
    assembly = WindowAssembly(plan)
    if plan.is_single:
        assembly.check(0, window_states[0])
        return window_states[0]
    for k, states in enumerate(window_states):
        assembly.add(k, states)
    return assembly.result()
