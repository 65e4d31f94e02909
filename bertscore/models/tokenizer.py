"""A model's tokenizer: built as the official package builds it (a prefix space for GPT-2-style
BPE), the special ids it puts around a text, its fast backend called directly, and the versions
of the libraries that decide its token ids.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from ..inputs import InputError
from ..sources import hub_kwargs

logger = logging.getLogger(__name__)

# Tokenizer classes that the official package encodes with a prefix space (GPT-2 byte-level BPE).
PREFIX_SPACE_TOKENIZER_CLASSES = frozenset(
    {"GPT2Tokenizer", "GPT2TokenizerFast", "RobertaTokenizer", "RobertaTokenizerFast"}
)

# The methods through which a fast tokenizer's `__call__` reaches its backend (transformers 4 and 5).
_ENCODING_METHODS = ("__call__", "_call_one", "_encode_plus", "_batch_encode_plus", "encode_plus", "batch_encode_plus",
                     "set_truncation_and_padding")


def fast_backend(tokenizer: Any) -> Any | None:
    """The tokenizers-library backend that `prepared_backend` encodes with, as it is; None where
    the tokenizer is called instead (a slow tokenizer, or a class with its own encoding)."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:  # pragma: no cover - every supported transformers has it
        return None
    backend = getattr(tokenizer, "_tokenizer", None)
    if not isinstance(tokenizer, PreTrainedTokenizerFast) or not getattr(tokenizer, "is_fast", False) or backend is None:
        return None
    kind = type(tokenizer)
    if any(getattr(kind, name, None) is not getattr(PreTrainedTokenizerFast, name, None) for name in _ENCODING_METHODS):
        return None
    return backend


def prepared_backend(tokenizer: Any) -> Any | None:
    """The tokenizers-library backend of `tokenizer`, set as the tokenizer's own untruncated call sets it.

    Only for a fast tokenizer whose class encodes exactly as transformers' fast base class does
    (none of `_ENCODING_METHODS` overridden); None otherwise (slow tokenizers, classes with their
    own encoding), and the caller then calls the tokenizer. Calling the backend directly skips the
    Python dict that transformers builds for every text and, with `encode_batch_fast`, the character
    offsets that nothing here reads: about a fifth of tokenizing's time on one thread (8,731 WMT17
    texts with MiniLM's tokenizer, both ways side by side in one process).
    Before encoding, the backend is put in the state that `tokenizer(texts, truncation=False)`
    puts it in: no truncation and no padding (a user's earlier call may have left them on) and the
    tokenizer's `split_special_tokens`.
    """
    backend = fast_backend(tokenizer)
    if backend is None:
        return None
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:  # the attribute: tokenizers >= 0.15
        backend.encode_special_tokens = split
    return backend



def tokenizer_library_versions(tokenizer: Any) -> tuple[str, str]:
    """(tokenizers version, sentencepiece version or "" where the tokenizer is not a sentencepiece
    model): both can change token ids, and so the numbers, at a fixed transformers version."""
    uses_sentencepiece = str(getattr(tokenizer, "vocab_file", "") or "").endswith(".model")
    return _installed_version("tokenizers"), _installed_version("sentencepiece") if uses_sentencepiece else ""


@functools.lru_cache(maxsize=None)
def _installed_version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return ""



def special_layout(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The special ids that `tokenizer(text)` puts before and after one sequence's content.

    Read off a probe encoded with and without special tokens (transformers 5 fast tokenizers
    have no `build_inputs_with_special_tokens`).
    """
    probe = "hello world"
    with_special = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    content = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    for lead in range(len(with_special) - len(content) + 1):
        if with_special[lead : lead + len(content)] == content:
            return tuple(with_special[:lead]), tuple(with_special[lead + len(content) :])
    raise InputError(f"cannot locate the content inside {type(tokenizer).__name__}'s special tokens")


def load_tokenizer(source: str) -> tuple[Any, bool]:
    """The fast tokenizer of `source`, built with a prefix space where the official package adds one.

    The official package passes `add_prefix_space=True` per call, which transformers 5 ignores;
    we set it at construction, so RoBERTa/GPT-2 tokenize as the published numbers did.
    """
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs(source))
    except Exception as error:  # noqa: BLE001 - any failure to build the fast one: the slow one decides
        # transformers 4's BlenderbotSmallTokenizerFast cannot read its own model's subword-nmt files,
        # which the slow tokenizer (the one the official package uses) reads.
        logger.info("the fast tokenizer of %s could not be built (%s): using the slow one", source, error)
        tokenizer = AutoTokenizer.from_pretrained(source, use_fast=False, **hub_kwargs(source))
    class_names = {cls.__name__ for cls in type(tokenizer).__mro__}
    add_prefix_space = bool(class_names & PREFIX_SPACE_TOKENIZER_CLASSES)
    if add_prefix_space and not getattr(tokenizer, "add_prefix_space", False):
        tokenizer = AutoTokenizer.from_pretrained(source, add_prefix_space=True, **hub_kwargs(source))
    return tokenizer, add_prefix_space
