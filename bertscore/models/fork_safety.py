"""Scoring in a forked child process: one intra-op thread while bertscore works there.

A process forked after torch ran parallel CPU work (OpenMP) inherits a thread pool whose threads
did not survive the fork: the child's first parallel operation waits for them forever. datasets'
`map(num_proc=...)` forks its workers (and unpickles a scorer there, see `BERTScorer.__reduce__`),
as do DataLoader workers and preloading servers. In a forked child, bertscore's own work (loading,
scoring) runs with `torch.set_num_threads(1)` and puts the caller's thread count back after.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from typing import Any, Callable, TypeVar

import torch

logger = logging.getLogger(__name__)

_state = {"forked": False, "depth": 0, "threads": 0}
_lock = threading.RLock()
Function = TypeVar("Function", bound=Callable[..., Any])


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()  # a lock held by another thread at the fork would never be released here
    _state.update(forked=True, depth=0, threads=0)


os.register_at_fork(after_in_child=_after_fork_in_child)


def in_forked_child() -> bool:
    """Whether this process was forked from one that had imported bertscore."""
    return bool(_state["forked"])


def fork_safe(function: Function) -> Function:
    """`function` with one intra-op thread while it runs in a forked child (nested calls share one switch)."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not _state["forked"]:
            return function(*args, **kwargs)
        with _lock:
            if _state["depth"] == 0:
                _state["threads"] = torch.get_num_threads()
                if _state["threads"] > 1:
                    logger.debug("forked process: scoring on 1 thread (the parent's OpenMP pool did not survive the fork)")
                    torch.set_num_threads(1)
            _state["depth"] += 1
            try:
                return function(*args, **kwargs)
            finally:
                _state["depth"] -= 1
                if _state["depth"] == 0 and _state["threads"] > 1:
                    torch.set_num_threads(_state["threads"])
    return wrapper  # type: ignore[return-value]
