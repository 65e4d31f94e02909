"""Tokenizing ahead: the next block of a call's pairs is tokenized on a background thread while
the caller embeds and matches the current block, so that the host's tokenizing leaves the
critical path (on a GPU the encoder is fast, and the host work around it is the throughput).

Only where tokenizing runs without Python's lock (the tokenizers library's backend, which
releases it): a tokenizer written in Python would only take turns with the caller. Where the
encoder runs on the CPU, a block tokenized in the background runs on that one thread
(TOKENIZERS_PARALLELISM=false, restored as found once the call's last block is in): the
tokenizers library's own thread pool would take the cores that the encoder and the matching run
on, and make the call slower, not faster (benchmarks/results/host_speed.md). On an accelerator
those cores are idle and the tokenizer is the host's longest step: the user's setting applies
(the library's default is its pool on every core).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence, TypeVar

import torch

Store = TypeVar("Store")

PARALLELISM_VARIABLE = "TOKENIZERS_PARALLELISM"


def core_is_free(device: torch.device) -> bool:
    """Whether a tokenizing thread would have a core to itself: on an accelerator (the host's
    threads mostly wait for it), or where torch runs on fewer threads than this process has CPUs.
    Elsewhere the thread would take turns with torch's own threads on every core, and cost more
    than it saves (benchmarks/results/host_speed.md)."""
    if device.type != "cpu":
        return True
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return torch.get_num_threads() < cpus


@contextlib.contextmanager
def serial_tokenizers() -> Iterator[None]:
    """TOKENIZERS_PARALLELISM=false inside, and the variable as it was (or unset) after."""
    before = os.environ.get(PARALLELISM_VARIABLE)
    os.environ[PARALLELISM_VARIABLE] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PARALLELISM_VARIABLE, None)
        else:
            os.environ[PARALLELISM_VARIABLE] = before


def tokenized_blocks(
    tokenize: Callable[[list[str]], Store],
    cand_keys: Sequence[str],
    ref_keys: Sequence[str],
    blocks: Sequence[range],
    ahead: bool,
    serial: bool = True,
) -> Iterator[tuple[range, Store]]:
    """(block, tokenize(its candidates + references)) for each block of pairs, in order.

    The first block is tokenized on the caller's thread (with the tokenizer's own parallelism);
    with `ahead`, block k + 1 is tokenized on one background thread while the caller works on
    block k, serially where `serial` (an encoder on the CPU), else as the user set
    TOKENIZERS_PARALLELISM. Use it under `contextlib.closing`: leaving early then waits for the
    block in flight and restores the environment.
    """

    def texts(block: range) -> list[str]:
        return [cand_keys[i] for i in block] + [ref_keys[i] for i in block]

    if not ahead or len(blocks) == 1:
        for block in blocks:
            yield block, tokenize(texts(block))
        return
    first = tokenize(texts(blocks[0]))
    # The pool is left first (it waits for a block in flight), then the environment is restored.
    with serial_tokenizers() if serial else contextlib.nullcontext(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="bertscore-tokenize") as pool:
        pending = pool.submit(tokenize, texts(blocks[1]))
        yield blocks[0], first
        for k in range(1, len(blocks)):
            store = pending.result()
            if k + 1 < len(blocks):
                pending = pool.submit(tokenize, texts(blocks[k + 1]))
            yield blocks[k], store
