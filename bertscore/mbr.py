"""Minimum Bayes risk selection and group rewards over BERTScore's all-pairs matrix.

MBR decoding picks, among sampled hypotheses, the one with the highest expected utility
against pseudo-references (usually the samples themselves); `score_matrix` gives every
utility at once. When the hypotheses are their own pseudo-references, a hypothesis is not
compared with itself (its self-score says nothing about the others): its utility is the mean
over the other positions. Identical texts at other positions still count (two samples that
agree are evidence), as in the usual sample-based MBR estimate.

For GRPO (TRL), `ConsensusReward` rewards each completion with its expected utility against the
rest of its prompt's group, the groups named by TRL's `prompts` (runs of equal prompts); its
function form `group_rewards` takes the group size instead.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import torch

from .inputs import InputError, as_list, check_whole_number, text_list
from .notes import REWARD, spelled
from .pool import ScorerPool
from .reward import OUTPUTS, PooledReward, completion_texts
from .scorer import BERTScorer
from .scoring.input_notes import TextFindings, note_call, note_texts

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
    notes: list[str] | None = None,
    **columns: Any,
) -> list[float]:
    """Consensus rewards for a GRPO-style batch: the completions of one prompt sit in consecutive
    groups of `group_size` (TRL's `num_generations`, at least 2); each completion is rewarded with its
    expected utility against the rest of its group (`expected_utilities`). Chat completions (lists of
    messages) are read as `BERTScoreReward` reads them. Where TRL's `prompts` come too, a size that
    disagrees with them is an error (`prompt_group_size`); TRL's other columns are unused."""
    texts = completion_texts(completions)
    check_group_size(group_size)
    if texts and columns.get("prompts") is not None:
        prompt_group_size(columns["prompts"], len(texts), group_size)
    elif not texts or len(texts) % group_size:
        raise InputError(f"got {len(texts)} completions, not a whole number of groups of {group_size} "
                         "(TRL's num_generations): pass every completion of each prompt, consecutively")
    return consensus_rewards(scorer, texts, group_size, column, notes)


class ConsensusReward(PooledReward):
    """A reward function for TRL's `GRPOTrainer`: each completion's mean BERTScore against the other
    completions of its prompt (a consensus reward: no reference column needed).

    The groups come from TRL's `prompts`: a run of equal prompts (chat prompts compared by value) is
    one prompt's `num_generations` completions, so no group size is needed. `group_size`, where given,
    is checked against the prompts (a disagreement is an error naming both). `output`: "f1" (default),
    "precision" or "recall"; `name`: the name TRL logs it under (default `bertscore_consensus_<output>`);
    `pool` and the scorer settings (`model_type`, `lang`, `num_layers`, `rescale_with_baseline`, ...)
    as for `BERTScoreReward`, which it shares its encoder and cache with on the same settings.
    """

    def __init__(
        self,
        model_type: str | None = None,
        *,
        output: str = "f1",
        group_size: int | None = None,
        name: str | None = None,
        pool: ScorerPool | None = None,
        **scorer_settings: Any,
    ) -> None:
        if output not in OUTPUTS:
            raise InputError(f"output={output!r} is not a BERTScore column: use one of {', '.join(OUTPUTS)}")
        if group_size is not None:
            check_group_size(group_size)
        self.output = output
        self.group_size = group_size
        super().__init__(model_type, name or f"bertscore_consensus_{output}", pool, scorer_settings)

    def __call__(self, completions: Sequence[Any], prompts: Any = None, **columns: Any) -> list[float]:
        """One reward per completion: its mean `output` against the rest of its prompt's group."""
        texts = completion_texts(completions)
        if not texts:  # nothing generated this step: nothing to reward
            return []
        if prompts is None:
            raise InputError(f"the reward {self.__name__!r} finds each prompt's group by TRL's prompts, but none came: "
                             "pass prompts= (one per completion, as GRPOTrainer does)")
        size = prompt_group_size(prompts, len(texts), self.group_size)
        return consensus_rewards(self.scorer, texts, size, self.output[0].upper(), None)

    def __repr__(self) -> str:
        settings = "".join(f", {k}={v!r}" for k, v in self.settings.items())
        return (f"ConsensusReward(model_type={self.model_type!r}, output={self.output!r}, "
                f"group_size={self.group_size!r}{settings})")


GROUP_OF_ONE = ("a completion alone in its group has no other to agree with: its consensus reward would be its "
                "score against itself (1.0) whatever it says. Sample at least 2 completions per prompt "
                "(TRL's num_generations >= 2)")


def check_group_size(group_size: Any) -> None:
    """A group size is a whole number >= 2 (a group of one carries no consensus)."""
    if isinstance(group_size, int) and not isinstance(group_size, bool) and group_size == 1:
        raise InputError(f"group_size=1: {GROUP_OF_ONE}")
    check_whole_number(group_size, "group_size", 2)


def prompt_group_size(prompts: Any, count: int, group_size: int | None = None) -> int:
    """The group size that `prompts` (one per completion) show: runs of equal prompts hold whole
    groups, and the size is the greatest common divisor of the runs' lengths (a prompt repeated in
    consecutive rows makes a run of several groups). `group_size`, where given, must equal it."""
    items = as_list(prompts, "prompts")
    if items is None:
        raise InputError(f"prompts must be a list (one prompt per completion), got {type(prompts).__name__}")
    if len(items) != count:
        raise InputError(f"got {len(items)} prompts for {count} completions: pass one prompt per completion "
                         "(TRL repeats each prompt once per generation)")
    runs = [1]
    for previous, prompt in zip(items, items[1:]):
        if prompt == previous:
            runs[-1] += 1
        else:
            runs.append(1)
    shown = math.gcd(*runs)
    if group_size is not None and group_size != shown:
        raise InputError(
            f"group_size={group_size} but the prompts form groups of {shown} (each run of equal prompts holds "
            f"{_lengths(runs)} completions): pass group_size={shown} (TRL's num_generations) or leave it out"
            if shown > 1 else
            f"group_size={group_size} but the prompts form runs of {_lengths(runs)} completions, not groups of "
            f"{group_size}: pass every completion of each prompt, consecutively"
        )
    if shown == 1:
        if max(runs) == 1:
            raise InputError(f"each prompt has one completion: {GROUP_OF_ONE}")
        raise InputError(f"the prompts form runs of {_lengths(runs)} completions, not groups of one size: "
                         "pass every completion of each prompt, consecutively (TRL's num_generations each)")
    return shown


def _lengths(runs: list[int]) -> str:
    distinct = sorted(set(runs))
    return ", ".join(map(str, distinct[:5])) + (", ..." if len(distinct) > 5 else "")


def consensus_rewards(scorer: BERTScorer, texts: list[str], group_size: int, column: str,
                      notes: list[str] | None) -> list[float]:
    """Each text's expected utility against the rest of its group of `group_size` consecutive texts.
    Notes are the whole batch's, one line per cause, naming `completions[i]` (`notes.REWARD`)."""
    if scorer.all_layers:
        raise InputError("group rewards need one score per pair: use a scorer without all_layers=True")
    groups = [texts[start:start + group_size] for start in range(0, len(texts), group_size)]
    rewards: list[float] = []
    with spelled(REWARD):
        note_groups(scorer, texts, groups, notes)
        for group in groups:
            rewards += expected_utilities(scorer, group, column=column, notes=[]).tolist()  # noted above
    return rewards


def note_groups(scorer: BERTScorer, texts: list[str], groups: list[list[str]], notes: list[str] | None) -> None:
    """The notes of a batch scored group by group, once for the batch: each text by its place in
    `texts`, with the findings of its group's call (its token weights: per-call idf is per group)."""
    pipeline = scorer.pipeline
    findings = TextFindings()
    weights = None
    for group in groups:
        token_ids = pipeline.tokenize(group)
        weights = pipeline.weights_for(group, token_ids)
        findings.add(pipeline.settings, token_ids, weights)
    if weights is not None:
        note_call(pipeline.settings, weights, notes)
    note_texts(pipeline.settings, texts, [], findings, notes)
