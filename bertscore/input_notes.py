"""Notes on a call's inputs: what scores 0 or reads differently from what the user wrote.

Every note names the texts it is about (`candidates[i]`, `references[i][j]`, spelled per door
by `notes.places`) and goes to the call's `notes` list or out as a `BERTScoreNote` warning.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .devices import reduced_precision_note
from .idf import TokenWeights
from .models import unknown_layer_message
from .notes import advice, name_some, report, setting
from .settings import Settings
from .tokens import TokenStore


def note_inputs(
    settings: Settings,
    candidates: Sequence[str],
    groups: Sequence[Sequence[str]],
    token_ids: TokenStore,
    weights: TokenWeights,
    notes: list[str] | None = None,
) -> None:
    """Notes naming every empty text, texts whose token weights are all 0, truncated texts and
    texts that are mostly the unknown token; a layer guessed for a model the official table lacks;
    and reduced precision slower than float32."""
    model = settings.model
    if model.layer_guessed:
        report(unknown_layer_message(model.name, model.num_layers), notes)
    weights.check(model.vocab_size, "weights")  # before any lookup: a short table is a clear error
    precision_note = reduced_precision_note(settings.dtype, settings.device)
    if precision_note:
        report(precision_note, notes)

    def places(selected: set[str]) -> list[str]:
        found = [f"candidates[{i}]" for i, c in enumerate(candidates) if c.strip() in selected]
        found += [
            f"references[{i}][{j}]" if len(group) > 1 else f"references[{i}]"
            for i, group in enumerate(groups) for j, r in enumerate(group) if r.strip() in selected
        ]
        return found

    keys = list(token_ids.index)
    empty = {k for k in keys if settings.is_empty(token_ids, k)}
    if empty:
        report(
            f"no content tokens (empty, whitespace or characters the tokenizer drops) in "
            f"{name_some(places(empty))}: their raw scores are 0, as in the official package",
            notes,
        )
    if settings.window is None:
        cut = {k for k in keys if token_ids.content_length(k) > model.content_limit}
        if cut:
            report(truncation_note(settings, places(cut)), notes)
    unknown = mostly_unknown(settings, token_ids, keys, empty)
    if unknown:
        report(
            f"mostly unknown tokens (more than half of the content tokens are the tokenizer's unknown token "
            f"{model.tokenizer.unk_token!r}: a script it cannot read, or a word too long for it) in "
            f"{name_some(places(unknown))}: each unknown token is the same token whatever it stood for, so "
            "these texts score as if their content were mostly one token",
            notes,
        )
    totals = token_ids.weight_totals(weights.table.numpy())
    unweighted = {k for k, total in zip(keys, totals) if total == 0 and k not in empty}
    if unweighted:
        distinct = len({r.strip() for group in groups for r in group})
        cause = (
            "idf over 1 distinct reference gives every token in it weight 0"
            if settings.idf_is_per_call and distinct == 1
            else "every one of their tokens weighs 0 (under idf: it occurs in every reference)"
        )
        report(
            f"token weights are all 0 in {name_some(places(unweighted))} ({cause}): their raw "
            "precision (candidates) or recall (references) is 0, and so is F1",
            notes,
        )


def mostly_unknown(settings: Settings, token_ids: TokenStore, keys: list[str], empty: set[str]) -> set[str]:
    """Texts more than half of whose (scored) content tokens are the unknown token."""
    model = settings.model
    unk = model.tokenizer.unk_token_id
    if unk is None or not 0 <= int(unk) < model.vocab_size:
        return set()
    indicator = np.zeros(model.vocab_size)
    indicator[int(unk)] = 1.0
    counts = token_ids.weight_totals(indicator)
    special = model.num_special_tokens
    return {k for k, count in zip(keys, counts)
            if k not in empty and 2 * count > token_ids.length(k) - special}


def truncation_note(settings: Settings, where: list[str]) -> str:
    """The note on texts cut at the model's limit, with the way to score them whole where there is one."""
    model = settings.model
    if model.position_limit:
        hint = f"{advice('long_texts', 'window')} to score them whole (overlapping windows)"
    else:
        hint = (f"{settings.model_type} has no fixed position limit, so {setting('long_texts', 'window')} does not "
                "apply to it (texts are truncated as before)")
    texts, were = ("1 text", "was") if len(where) == 1 else (f"{len(where)} texts", "were")
    return (
        f"{texts} longer than the model's limit of {model.content_limit} content tokens "
        f"(max_length={model.max_length} with its special tokens) {were} truncated there, as in the official "
        f"package: {name_some(where)}; {hint}"
    )
