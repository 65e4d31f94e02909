"""Tokenizing ahead: the next block of a call's pairs is tokenized on a background thread while
the caller embeds and matches the current block, so that the host's tokenizing leaves the
critical path (on a GPU the encoder is fast, and the host work around it is the throughput).

Only where tokenizing runs without Python's lock (the tokenizers library's backend, which
releases it): a tokenizer written in Python would only take turns with the caller. Where the
encoder runs on the CPU, only where the tokenizers library runs serially (the user's
TOKENIZERS_PARALLELISM=false): its own thread pool would take the cores that the encoder and the
matching run on, and make the call slower, not faster (benchmarks/results/host_speed.md). On an
accelerator those cores are idle and the tokenizer is the host's longest step.

The variable is read, never written: it is process-wide, and a write during a call would race
with every other thread of the process (two scorers in a thread pool, the Space's concurrency).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence, TypeVar

import torch

Store = TypeVar("Store")

PARALLELISM_VARIABLE = "TOKENIZERS_PARALLELISM"
_SERIAL_VALUES = ("", "off", "false", "f", "no", "n", "0")  # what the tokenizers library reads as "off"


def tokenizers_parallel() -> bool:
    """Whether the tokenizers library runs a batch on its own thread pool, as it reads
    TOKENIZERS_PARALLELISM (unset: it does)."""
    value = os.environ.get(PARALLELISM_VARIABLE)
    return value is None or value.lower() not in _SERIAL_VALUES


def core_is_free(device: torch.device) -> bool:
    """Whether a tokenizing thread would have a core to itself: on an accelerator (the host's
    threads mostly wait for it), or where the tokenizer runs serially and torch runs on fewer
    threads than this process has CPUs. Elsewhere the thread would take turns with torch's own
    threads on every core, and cost more than it saves (benchmarks/results/host_speed.md)."""
    if device.type != "cpu":
        return True
    if tokenizers_parallel():
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return torch.get_num_threads() < cpus


def tokenized_blocks(
    tokenize: Callable[[list[str]], Store],
    cand_keys: Sequence[str],
    ref_keys: Sequence[str],
    blocks: Sequence[range],
    ahead: bool,
) -> Iterator[tuple[range, Store]]:
    """(block, tokenize(its candidates + references)) for each block of pairs, in order.

    The first block is tokenized on the caller's thread; with `ahead`, block k + 1 is tokenized on
    one background thread while the caller works on block k. Use it under `contextlib.closing`:
    leaving early then waits for the block in flight.
    """

    def texts(block: range) -> list[str]:
        return [cand_keys[i] for i in block] + [ref_keys[i] for i in block]

    if not ahead or len(blocks) == 1:
        for block in blocks:
            yield block, tokenize(texts(block))
        return
    first = tokenize(texts(blocks[0]))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bertscore-tokenize") as pool:  # waits for one in flight
        pending = pool.submit(tokenize, texts(blocks[1]))
        yield blocks[0], first
        for k in range(1, len(blocks)):
            store = pending.result()
            if k + 1 < len(blocks):
                pending = pool.submit(tokenize, texts(blocks[k + 1]))
            yield blocks[k], store
