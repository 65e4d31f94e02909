"""Content digests (placeholder of the lead; the base helper's version replaces it at merge)."""

from __future__ import annotations

import hashlib
from typing import Iterable


def text_digest(texts: Iterable[str]) -> str:
    """sha256 hex of the texts in order, each UTF-8 (surrogates kept) and followed by a NUL byte."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()
