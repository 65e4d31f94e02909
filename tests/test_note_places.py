"""Notes name the places of a call as the door names its inputs.

`score()` takes candidates and references; evaluate's `compute()` takes predictions; a reward
function receives completions and a dataset column. A note that says `candidates[3]` to a TRL
user points at nothing they passed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.notes import EVALUATE, PYTHON, BERTScoreNote, Spelling

REPO_ROOT = Path(__file__).resolve().parents[1]
EMPTY_NOTE = r"no content tokens"


def test_places_are_renamed_and_nothing_else():
    note = "no content tokens in candidates[1], references[2][1], references[3]: (candidates) or recall (references)"
    reward = Spelling("reward", candidates="completions", references="answer")
    assert reward.places(note) == ("no content tokens in completions[1], answer[2][1], answer[3]: "
                                   "(candidates) or recall (references)")
    assert EVALUATE.places(note) == note.replace("candidates[1]", "predictions[1]")
    assert PYTHON.places(note) == note


def test_reward_notes_name_completions_and_the_reference_column():
    from bertscore.reward import BERTScoreReward

    reward = BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=2, reference_column="answer")
    with pytest.warns(BERTScoreNote, match=EMPTY_NOTE) as caught:
        reward(completions=["a cat sat", ""], answer=["a cat", "\u200b"], prompts=["p", "q"])
    messages = [str(w.message) for w in caught if issubclass(w.category, BERTScoreNote)]
    assert len(messages) == 1
    assert "completions[1]" in messages[0] and "answer[1]" in messages[0]
    assert "candidates[" not in messages[0] and "references[" not in messages[0]
    assert caught[0].filename == __file__  # still at the caller's line


def test_evaluate_notes_name_predictions():
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    with pytest.warns(BERTScoreNote, match=EMPTY_NOTE) as caught:
        metric.compute(predictions=["a cat sat", ""], references=["a cat", "a dog"],
                       model_type=EMBEDDED_MODEL_NAME, num_layers=2)
    messages = [str(w.message) for w in caught if issubclass(w.category, BERTScoreNote)]
    assert len(messages) == 1 and "predictions[1]" in messages[0] and "candidates[" not in messages[0]
