"""The arguments of `bertscore.torchmetrics.BERTScore` read: torchmetrics' BERTScore signature, here.

torchmetrics' arguments with no counterpart here are refused, each error naming what to pass instead;
ours (`reduction`, `verbose`, `return_hash`, `truncation`, `num_threads`, `max_length`) are checked
before a model loads (the scorer checks the rest); a `max_length` under the model's limit gives a scorer
on a shortened view of the same encoder. No torchmetrics import here.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

from ..inputs import InputError, check_whole_number
from ..scorer import BERTScorer

REDUCTIONS = ("none", "mean")

# torchmetrics' BERTScore arguments that have no counterpart here, and what to use instead.
_NOT_HERE = {
    "model": "pass model_name_or_path= (a hub id or a local folder) instead of a loaded model",
    "user_tokenizer": "the model's own tokenizer is used (pass model_name_or_path= a folder holding both)",
    "user_forward_fn": "the encoder's hidden states are read as the official package reads them",
    "baseline_url": "download the file and pass baseline_path=",
}


def check_arguments(not_here: dict[str, Any], verbose: Any, return_hash: Any, reduction: Any, truncation: Any,
                    long_texts: Any, max_length: Any, num_threads: Any) -> None:
    """BERTScore's own arguments checked (the scorer checks the rest), each error naming what to pass."""
    for name, instead in _NOT_HERE.items():
        if not_here[name] is not None:
            raise InputError(f"BERTScore({name}=...) is an option of torchmetrics' own BERTScore, "
                             f"not of this one: {instead}")
    for name, value in (("verbose", verbose), ("return_hash", return_hash)):
        if not isinstance(value, bool):
            raise InputError(f"{name} must be True or False, got {value!r}")
    if reduction not in REDUCTIONS:
        raise InputError(f"reduction must be one of {REDUCTIONS} ('none': a score per candidate; 'mean': "
                         f"the corpus means, for logging), got {reduction!r}")
    if reduction == "mean" and return_hash:
        raise InputError("return_hash=True adds a string, which Lightning cannot log: with reduction='mean' "
                         "read the hash from metric.hash")
    if truncation is not None and not isinstance(truncation, bool):
        raise InputError(f"truncation must be True or False, got {truncation!r}")
    if truncation and long_texts != "truncate":
        raise InputError(f"truncation=True cuts texts at max_length, long_texts={long_texts!r} reads them "
                         "whole: pass one of the two")
    check_whole_number(max_length, "max_length", 1, "None: the model's own limit")
    check_whole_number(num_threads, "num_threads", 0, "None", why=" (it changes nothing here)")


def shortened(scorer: BERTScorer, max_length: int | None, settings: dict[str, Any]) -> BERTScorer:
    """`scorer`, or with a max_length under its model's limit a scorer on a shortened view of its encoder
    (same weights and embedding cache; the cache key and the hash carry the length)."""
    model = scorer.model
    if max_length is None or max_length == model.max_length:
        return scorer
    if max_length > model.max_length:
        warnings.warn(f"max_length={max_length} is past {scorer.model_type}'s limit of {model.max_length} tokens: "
                      f"texts are cut at {model.max_length} (long_texts='window' reads them whole)", stacklevel=5)
        return scorer
    if settings["long_texts"] != "truncate":
        raise InputError(f"max_length={max_length} cuts texts, long_texts={settings['long_texts']!r} reads them "
                         "whole: pass one of the two")
    if max_length <= model.num_special_tokens:
        raise InputError(f"max_length={max_length} leaves no room for a text: {scorer.model_type} adds "
                         f"{model.num_special_tokens} special tokens to each; pass more")
    options = {k: v for k, v in settings.items() if k != "cache_bytes"}
    return BERTScorer(**{**options, "model_type": scorer.model_type, "device": scorer.device, "dtype": scorer.dtype},
                      loaded_model=dataclasses.replace(model, max_length=max_length), cache=scorer.cache)
