"""Minimum Bayes risk selection and group rewards over BERTScore's all-pairs matrix.

MBR decoding picks, among sampled hypotheses, the one with the highest expected utility
against pseudo-references (usually the samples themselves); `score_matrix` gives every
utility at once. When the hypotheses are their own pseudo-references, a hypothesis is not
compared with itself (its self-score says nothing about the others): its utility is the mean
over the other positions. Identical texts at other positions still count (two samples that
agree are evidence), as in the usual sample-based MBR estimate.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import torch

from .inputs import InputError, check_whole_number, text_list
from .reward import completion_text
from .scorer import BERTScorer

COLUMNS = {"P": 0, "R": 1, "F": 2}


class MBRChoice(NamedTuple):
    """The chosen hypothesis's index (the first on ties) and every hypothesis's expected utility [H]."""

    index: int
    utilities: torch.Tensor


def expected_utilities(
    scorer: BERTScorer,
    hypotheses: Sequence[str],
    pseudo_references: Sequence[str] | None = None,
    column: str = "F",
    notes: list[str] | None = None,
) -> torch.Tensor:
    """Mean BERTScore (`column`: "P", "R" or "F") of each hypothesis against the pseudo-references:
    [H] ([K, H] with all layers). With no pseudo-references the hypotheses stand in for them and
    each is left out of its own mean (one hypothesis alone keeps its self-score: nothing else)."""
    if column not in COLUMNS:
        raise InputError(f"column={column!r} is not one of 'P', 'R', 'F' (which BERTScore to average)")
    hypotheses = text_list(hypotheses, "hypotheses")
    self_pairs = pseudo_references is None
    references = hypotheses if self_pairs else text_list(pseudo_references, "pseudo_references")
    matrix = scorer.score_matrix(hypotheses, references, notes=notes)[COLUMNS[column]]  # [(K,) H, R]
    count = matrix.shape[-1]
    if not self_pairs or count == 1:
        return matrix.mean(dim=-1)
    off_diagonal = ~torch.eye(count, dtype=torch.bool)
    return (matrix * off_diagonal).sum(dim=-1) / (count - 1)


def mbr_select(
    hypotheses: Sequence[str],
    pseudo_references: Sequence[str] | None = None,
    *,
    scorer: BERTScorer,
    column: str = "F",
    notes: list[str] | None = None,
) -> MBRChoice:
    """The hypothesis of highest expected utility (`expected_utilities`) and every utility [H].

    With all layers, pass a scorer of one layer: a choice needs one utility per hypothesis."""
    if scorer.all_layers:
        raise InputError("mbr_select needs one score per pair: use a scorer without all_layers=True")
    utilities = expected_utilities(scorer, hypotheses, pseudo_references, column, notes)
    return MBRChoice(int(torch.argmax(utilities)), utilities)


def group_rewards(
    completions: Sequence[Any],
    group_size: int,
    *,
    scorer: BERTScorer,
    column: str = "F",
    **_columns: Any,
) -> list[float]:
    """Consensus rewards for a GRPO-style batch: the completions of one prompt sit in consecutive
    groups of `group_size` (TRL's `num_generations`); each completion is rewarded with its expected
    utility against the rest of its group (`expected_utilities`). Chat completions (lists of
    messages) are read as `BERTScoreReward` reads them; TRL's other columns (prompts, ...) are unused."""
    texts = [completion_text(c, i) for i, c in enumerate(completions)]
    check_whole_number(group_size, "group_size")
    if not texts or len(texts) % group_size:
        raise InputError(f"got {len(texts)} completions, not a whole number of groups of {group_size} "
                         "(TRL's num_generations): pass every completion of each prompt, consecutively")
    rewards: list[float] = []
    for start in range(0, len(texts), group_size):
        rewards += expected_utilities(scorer, texts[start:start + group_size], column=column).tolist()
    return rewards
