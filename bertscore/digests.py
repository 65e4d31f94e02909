"""The one file digest and the one text-list digest of the package (sha256, full hex).

Callers slice the hex where they want a short label. Pure: no model code, no other room of ours.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Iterable

_BLOCK_SIZE = 1 << 20
_CACHE: dict[tuple[str, int, int], str] = {}
_CACHE_LOCK = threading.Lock()


def _stream_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK_SIZE):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: str | Path, cached: bool = False) -> str:
    """The sha256 of a file's contents, streamed (any size).

    `cached=True` remembers digests by (resolved path, size, mtime in ns), so that hashing a
    folder of large unchanged files (a model's weights) reads each only once per process. Leave it
    off where the content must decide even when a rewrite keeps size and mtime (files unpacked
    from a zip, a copy with preserved times): baseline files, resumed inputs.
    """
    if not cached:
        return _stream_sha256(path)
    stat = os.stat(path)
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)
    with _CACHE_LOCK:
        known = _CACHE.get(key)
    if known is not None:
        return known
    value = _stream_sha256(path)
    with _CACHE_LOCK:
        _CACHE[key] = value
    return value


def text_digest(texts: Iterable[str]) -> str:
    """The sha256 of texts in order: each UTF-8 encoded (lone surrogates passed through, so any
    Python string has a digest) and followed by a NUL byte.

    Stored values depend on these exact bytes (the `corpus_sha256` of baseline sidecars, the
    `idf-sents:` part of a hash): never change the encoding.
    """
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()
