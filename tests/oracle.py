"""The official package's answers, computed once and kept: the oracle stays the official package.

`cached(recipe, model_dir, inputs, compute)` returns `compute()` the first time and the stored
answer after that, in this process (memory) and in later runs and other workers (files in
tests/.oracle-cache/, git-ignored, written atomically). The key is everything the answer depends
on: the recipe (the call, with the source of any patch it applies), the model folder's files, the
inputs and settings, and the versions of bert-score, transformers, tokenizers and torch. Change any
and the official package runs again. `BERTSCORE_ORACLE_CACHE=off` turns the files off (memory only);
deleting the folder is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, TypeVar

import torch

CACHE_DIR = Path(__file__).resolve().parent / ".oracle-cache"
T = TypeVar("T")
_MEMORY: dict[str, Any] = {}


@lru_cache(maxsize=None)
def folder_digest(folder: str) -> str:
    """sha256 over a model folder's file names and contents (a random tiny model differs by seed)."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=None)
def versions() -> str:
    from importlib.metadata import version

    return ",".join(f"{name}={version(name)}" for name in ("bert-score", "transformers", "tokenizers", "torch"))


def key_of(recipe: str, model_dir: Path | str, inputs: Any) -> str:
    text = json.dumps([recipe, folder_digest(str(model_dir)), inputs, versions()], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _files_on() -> bool:
    return os.environ.get("BERTSCORE_ORACLE_CACHE", "on").lower() not in ("off", "0", "no")


def cached(recipe: str, model_dir: Path | str, inputs: Any, compute: Callable[[], T]) -> T:
    """The official answer for (recipe, model, inputs): computed once, then read back.
    Answers are what torch.save/torch.load(weights_only=True) carry: tensors, tuples, lists, ints."""
    key = key_of(recipe, model_dir, inputs)
    if key in _MEMORY:
        return _MEMORY[key]
    path = CACHE_DIR / f"{key}.pt"
    answer = None
    if _files_on() and path.is_file():
        try:
            answer = torch.load(path, weights_only=True)
        except Exception:  # a torn or foreign file: recompute and replace it
            answer = None
    if answer is None:
        answer = compute()
        if _files_on():
            CACHE_DIR.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
            os.close(handle)
            torch.save(answer, temporary)
            os.replace(temporary, path)  # atomic: another worker reads the old file or the new, never half
    _MEMORY[key] = answer
    return answer
