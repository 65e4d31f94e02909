"""Notes on a call's inputs: what scores 0 or reads differently from what the user wrote.

Every note names the texts it is about (`candidates[i]`, `references[i][j]`, spelled per door
by `notes.places`) and goes to the call's `notes` list or out as a `BERTScoreNote` warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..models.devices import reduced_precision_note
from ..models.tables import unknown_layer_message
from ..notes import BriefPlaces, advice, brief_places, is_brief, name_some, report, setting
from .idf import TokenWeights
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
    and reduced precision slower than float32 (`note_call`, then `note_texts`)."""
    note_call(settings, weights, notes)
    findings = TextFindings()
    findings.add(settings, token_ids, weights)
    note_texts(settings, candidates, groups, findings, notes)


def note_call(settings: Settings, weights: TokenWeights, notes: list[str] | None = None) -> None:
    """The notes that need no text: a layer guessed, and reduced precision slower than float32.
    Checks `weights` against the vocabulary first: a short table is a clear error, not a lookup's."""
    model = settings.model
    if model.layer_guessed:
        report(unknown_layer_message(model.name, model.num_layers), notes)
    weights.check(model.vocab_size, "weights")
    precision_note = reduced_precision_note(settings.dtype, settings.device)
    if precision_note:
        report(precision_note, notes)


@dataclass
class TextFindings:
    """The texts that a call's notes name, gathered store by store (a streamed call tokenizes its
    pairs in blocks, `tokenize_ahead`)."""

    empty: set[str] = field(default_factory=set)
    cut: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)
    unweighted: set[str] = field(default_factory=set)

    def add(self, settings: Settings, token_ids: TokenStore, weights: TokenWeights) -> None:
        """The findings on the texts of `token_ids` (their keys: stripped texts)."""
        keys = list(token_ids.index)
        empty = settings.empty_texts(token_ids)
        self.empty |= empty
        if settings.window is None:
            self.cut |= {keys[i] for i in np.flatnonzero(token_ids.content_lengths > settings.model.content_limit)}
        self.unknown |= mostly_unknown(settings, token_ids, keys, empty)
        totals = token_ids.weight_totals(weights.table.numpy())
        self.unweighted |= {keys[i] for i in np.flatnonzero(totals == 0).tolist()} - empty


def note_texts(
    settings: Settings,
    candidates: Sequence[str],
    groups: Sequence[Sequence[str]],
    findings: TextFindings,
    notes: list[str] | None = None,
) -> None:
    """Notes naming every empty text, texts whose token weights are all 0, truncated texts and
    texts that are mostly the unknown token, each by its place in the call's inputs. A brief door
    (`notes.is_brief`: the RL rewards) gets one short line per cause: the count and the first places."""
    model = settings.model
    totals = {"candidates": len(candidates), "references": len(groups)}

    def places(selected: set[str]) -> list[str]:
        found = [f"candidates[{i}]" for i, c in enumerate(candidates) if c.strip() in selected]
        found += [
            f"references[{i}][{j}]" if len(group) > 1 else f"references[{i}]"
            for i, group in enumerate(groups) for j, r in enumerate(group) if r.strip() in selected
        ]
        return found

    def say(selected: set[str], full: Callable[[list[str]], str], brief: Callable[[BriefPlaces], str]) -> None:
        if selected:
            where = places(selected)
            report(brief(brief_places(where, totals)) if is_brief() else full(where), notes)

    say(findings.empty, lambda where: (
        f"no content tokens (empty, whitespace or characters the tokenizer drops) in "
        f"{name_some(where)}: their raw scores are 0, as in the official package"
    ), lambda b: (f"{b.subject} {'is' if b.one else 'are'} empty: {b.examples} (no content tokens: raw score 0, "
                  "as in the official package)"))
    say(findings.cut, lambda where: truncation_note(settings, where), lambda b: brief_truncation_note(settings, b))
    say(findings.unknown, lambda where: (
        f"mostly unknown tokens (more than half of the content tokens are the tokenizer's unknown token "
        f"{model.tokenizer.unk_token!r}: a script it cannot read, or a word too long for it) in "
        f"{name_some(where)}: each unknown token is the same token whatever it stood for, "
        "so these texts score as if their content were mostly one token"
    ), lambda b: (f"{b.subject} {'is' if b.one else 'are'} mostly the unknown token {model.tokenizer.unk_token!r}: "
                  f"{b.examples} (they score as if mostly one token)"))

    def one_reference() -> bool:  # idf over the call's references, all one text
        return settings.idf_is_per_call and len({r.strip() for group in groups for r in group}) == 1

    say(findings.unweighted, lambda where: (
        f"token weights are all 0 in {name_some(where)} ("
        + ("idf over 1 distinct reference gives every token in it weight 0" if one_reference()
           else "every one of their tokens weighs 0 (under idf: it occurs in every reference)")
        + "): their raw precision (candidates) or recall (references) is 0, and so is F1"
    ), lambda b: (f"{b.subject} {'has' if b.one else 'have'} token weights all 0: {b.examples} "
                  f"({'idf over 1 distinct reference' if one_reference() else 'under idf: in every reference'}: "
                  "raw F1 0)"))


def mostly_unknown(settings: Settings, token_ids: TokenStore, keys: list[str], empty: set[str]) -> set[str]:
    """Texts more than half of whose (scored) content tokens are the unknown token."""
    model = settings.model
    unk = model.tokenizer.unk_token_id
    if unk is None or not 0 <= int(unk) < model.vocab_size:
        return set()
    counts = token_ids.counts_of(int(unk))
    content = token_ids.lengths - model.num_special_tokens
    return {keys[i] for i in np.flatnonzero(2 * counts > content).tolist()} - empty


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


def brief_truncation_note(settings: Settings, where: BriefPlaces) -> str:
    """The truncation note of a brief door: one line, the count and the first places."""
    model = settings.model
    hint = (f"{advice('long_texts', 'window')} to score them whole" if model.position_limit
            else "as in the official package")
    return (f"{where.subject} {'was' if where.one else 'were'} truncated at the model's limit of "
            f"{model.content_limit} content tokens: {where.examples} ({hint})")
