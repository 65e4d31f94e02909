"""BERTScore as RL rewards (bertscore/reward.py, bertscore/mbr.py's ConsensusReward): TRL's calling
convention, the numbers of `score()` and of the official package, references embedded once across
`num_generations`, groups named by the prompts, one short note line per cause and call, the dataset
checked before the rollout, picklable, clear errors, the process left as found, and 3 real GRPO steps
with both rewards (examples/grpo_reward.py)."""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, score
from bertscore.scoring.embed import Embedder
from bertscore.inputs import InputError
from bertscore.mbr import ConsensusReward, group_rewards
from bertscore.notes import BERTScoreNote
from bertscore.pool import ScorerPool
from bertscore.reward import BERTScoreReward, MissingColumnError

ROOT = Path(__file__).resolve().parents[1]
NUM_GENERATIONS = 4
REFERENCES = ["The cat sat on the mat.", "It rained all day in Berlin, so the match was postponed."]
COMPLETIONS = [  # NUM_GENERATIONS per prompt, as TRL passes them: prompt 0's, then prompt 1's
    "A cat was sitting on the mat.", "the cat sat on a mat", "Dogs bark at night.", "The cat sat on the mat.",
    "The match in Berlin was postponed because of rain.", "Berlin had sun all day.", "rain rain rain",
    "The game was cancelled.",
]
COLUMN = [ref for ref in REFERENCES for _ in range(NUM_GENERATIONS)]  # each row repeated per generation
TRL_KEYWORDS = dict(prompts=["p0"] * 4 + ["p1"] * 4, completion_ids=[[1]] * 8, trainer_state=object(),
                    log_extra=lambda *a: None, log_metric=lambda *a: None)


@pytest.fixture
def reward() -> BERTScoreReward:
    return BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=ScorerPool())


def test_reward_equals_score_and_the_official_package(reward, minilm_dir) -> None:
    rewards = reward(completions=COMPLETIONS, reference=COLUMN, **TRL_KEYWORDS)
    assert isinstance(rewards, list) and all(type(value) is float for value in rewards)
    precision, recall, f1 = score(COMPLETIONS, COLUMN, model_type=EMBEDDED_MODEL_NAME, num_layers=4, device="cpu")
    assert rewards == pytest.approx(f1.tolist(), abs=1e-6)
    bert_score = pytest.importorskip("bert_score")
    official = bert_score.score(COMPLETIONS, COLUMN, model_type=str(minilm_dir), num_layers=4, batch_size=1)
    assert rewards == pytest.approx(official[2].tolist(), abs=1e-5)
    for output, expected in (("precision", precision), ("recall", recall)):
        other = BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", output=output, pool=reward.pool)
        assert other.__name__ == f"bertscore_{output}"
        assert other(completions=COMPLETIONS, reference=COLUMN) == pytest.approx(expected.tolist(), abs=1e-6)
    assert rewards[3] == pytest.approx(1.0, abs=1e-6) and rewards[2] < 0.9


def test_rescaling_and_several_references_per_row(tmp_path) -> None:
    baseline = tmp_path / "minilm.tsv"
    rows = ["LAYER,P,R,F"] + [f"{k},{0.30 + 0.05 * k:.4f},{0.32 + 0.05 * k:.4f},{0.31 + 0.05 * k:.4f}" for k in range(7)]
    baseline.write_text("\n".join(rows) + "\n")
    settings = dict(num_layers=3, rescale_with_baseline=True, baseline_path=str(baseline), lang="en", device="cpu")
    reward = BERTScoreReward(EMBEDDED_MODEL_NAME, reference_column="answers", pool=ScorerPool(), **settings)
    answers = [[ref, "Something else entirely."] for ref in COLUMN]
    rewards = reward(completions=COMPLETIONS, answers=answers)
    expected = score(COMPLETIONS, answers, model_type=EMBEDDED_MODEL_NAME, **settings)[2]
    assert rewards == pytest.approx(expected.tolist(), abs=1e-6)
    plain = score(COMPLETIONS, COLUMN, model_type=EMBEDDED_MODEL_NAME, num_layers=3, device="cpu")[2]
    assert rewards[3] == pytest.approx((plain[3].item() - 0.46) / (1 - 0.46), abs=1e-5)  # layer 3's F baseline


def test_references_repeated_across_generations_are_embedded_once(reward, monkeypatch) -> None:
    encoded: list[int] = []
    original = Embedder._forward

    def counting(self, batch_ids):
        encoded.append(len(batch_ids))
        return original(self, batch_ids)

    monkeypatch.setattr(Embedder, "_forward", counting)
    reward(completions=COMPLETIONS, reference=COLUMN, **TRL_KEYWORDS)
    assert sum(encoded) == len(set(COMPLETIONS) | set(REFERENCES)) == 9  # distinct texts, not 16 (one is both)
    # The next step's completions for the same prompts: the references come from the cache.
    cache = reward.scorer.embedder.cache
    hits, encoded[:] = cache.hits, []
    later = [c.upper() for c in COMPLETIONS]
    reward(completions=later, reference=COLUMN)
    assert sum(encoded) == len(set(later)) and cache.hits - hits == len(REFERENCES)
    # A second reward on the same model and settings shares the encoder and the cache.
    recall = BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", output="recall", pool=reward.pool)
    assert recall.scorer.model is reward.scorer.model and reward.pool.loads == 1
    encoded[:] = []
    recall(completions=later, reference=COLUMN)
    assert encoded == []


def test_conversational_completions_score_the_last_assistant_message(reward) -> None:
    conversations = [
        [{"role": "assistant", "content": "A first try."}, {"role": "user", "content": "again"},
         {"role": "assistant", "content": text}, {"role": "tool", "content": "ignored"}]
        for text in COMPLETIONS
    ]
    assert reward(completions=conversations, reference=COLUMN) == reward(completions=COMPLETIONS, reference=COLUMN)


def test_text_parts_are_joined_as_chat_templates_join_them(reward) -> None:
    """The multimodal message format, text only: its parts' texts joined with nothing between."""
    halves = [(text[: len(text) // 2], text[len(text) // 2:]) for text in COMPLETIONS]
    parts = [[{"role": "assistant", "content": [{"type": "text", "text": a}, {"type": "text", "text": b}]}]
             for a, b in halves]
    assert reward(completions=parts, reference=COLUMN) == reward(completions=COMPLETIONS, reference=COLUMN)


def test_a_step_with_no_completions_gets_no_rewards(reward) -> None:
    assert reward(completions=[], reference=[]) == []
    with pytest.raises(KeyError, match="reference"):  # the column is still required
        reward(completions=[], answer=[])


@pytest.mark.parametrize(
    "completion, message",
    [(3, r"completions\[1\] is an int 3"),
     ([{"role": "user", "content": "hi"}],
      r"completions\[1\] is a conversation with no assistant message \(roles: \['user'\]\)"),
     ([{"role": "assistant", "content": [{"type": "image"}]}],
      r"completions\[1\]: the last assistant message's content is a list"),
     ([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}],
      r"completions\[1\]: the last assistant message's content is a list"),
     (None, r"completions\[1\] is a NoneType")],
)
def test_completions_that_are_not_text_are_refused_by_index(reward, completion, message) -> None:
    consensus = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool)
    for call in (lambda: reward(completions=["fine", completion], reference=["a", "b"]),
                 lambda: consensus(completions=["fine", completion], prompts=["p", "p"])):
        with pytest.raises(InputError, match=message) as caught:  # an InputError, and a TypeError as ever
            call()
        assert isinstance(caught.value, TypeError)


def test_reference_column_errors_name_the_column_and_what_came(reward) -> None:
    with pytest.raises(MissingColumnError) as caught:
        reward(completions=COMPLETIONS, target=COLUMN, **TRL_KEYWORDS)
    message = str(caught.value)
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, InputError)
    assert "needs the dataset column 'reference'" in message and "received the columns ['target']" in message
    assert "reference_column=" in message
    with pytest.raises(InputError, match="column 'reference' has 7 entries for 8 completions"):
        reward(completions=COMPLETIONS, reference=COLUMN[:7])
    with pytest.raises(TypeError, match="must hold one reference per completion \\(a list\\), got str"):
        reward(completions=["a"], reference="a")
    # each entry through the one check every door uses (inputs.normalize_group), named by its column
    with pytest.raises(InputError, match=r"reference\[1\] is an int, not a string or a list of strings"):
        reward(completions=["a", "b"], reference=["a", 5])
    with pytest.raises(InputError, match=r"reference\[0\] is an empty list"):
        reward(completions=["a"], reference=[[]])
    with pytest.raises(InputError, match=r"reference\[0\]\[1\] is None"):
        reward(completions=["a"], reference=[["x", None]])
    with pytest.raises(InputError, match=r"reference\[0\] contains a lone surrogate"):
        reward(completions=["a"], reference=["\ud800"])


def test_the_dataset_is_checked_before_the_rollout_with_the_rewards_message(reward) -> None:
    """`check_dataset` refuses what the reward would refuse at the first step, in the same words."""
    datasets = pytest.importorskip("datasets")
    import pandas as pd

    rows = [{"prompt": "p0", "target": "a cat"}, {"prompt": "p1", "target": "a dog"}]
    with pytest.raises(MissingColumnError) as at_step:
        reward(completions=["x", "y"], prompts=["p0", "p1"], target=["a cat", "a dog"])
    for dataset in (datasets.Dataset.from_list(rows), rows, pd.DataFrame(rows),
                    {"prompt": ["p0", "p1"], "target": ["a cat", "a dog"]}):
        with pytest.raises(MissingColumnError) as caught:
            reward.check_dataset(dataset)
        message = str(caught.value)
        assert message == str(at_step.value).replace("it received the columns ['target']",
                                                     "the dataset has the columns ['prompt', 'target']")
    good = [{"prompt": "p0", "reference": "a cat"}, {"prompt": "p1", "reference": ["a dog", "dogs"]}]
    for dataset in (datasets.Dataset.from_list(good[:1] * 2), datasets.Dataset.from_list(good[1:] * 2), good,
                    pd.DataFrame(good), datasets.Dataset.from_list(good[:1]).to_iterable_dataset()):
        assert reward.check_dataset(dataset) is None
    with pytest.raises(InputError, match=r"reference\[1\] is an empty list"):
        reward.check_dataset(datasets.Dataset.from_dict({"prompt": ["p", "q"], "reference": [["x", "y"], []]}))
    with pytest.raises(InputError, match=r"reference\[1\] is an int"):
        reward.check_dataset(pd.DataFrame({"prompt": ["p", "q"], "reference": ["x", 3]}))
    with pytest.raises(InputError, match=r"reference\[1\] is None"):
        reward.check_dataset([{"prompt": "p", "reference": "x"}, {"prompt": "q", "reference": None}])
    with pytest.raises(InputError, match="dataset is an int"):
        reward.check_dataset(3)
    with pytest.raises(InputError, match=r"dataset holds the splits \['train'\]: pass the one the trainer trains on"):
        reward.check_dataset(datasets.DatasetDict({"train": datasets.Dataset.from_list(good[:1])}))


# ----- the consensus reward: groups named by TRL's prompts ----------------------------------
PROMPTS = ["describe the cat"] * NUM_GENERATIONS + ["describe the rain"] * NUM_GENERATIONS


def official_consensus(minilm_dir, completions, group_size, num_layers):
    """A plain loop over the official package: each completion's mean F1 against the others of its group."""
    bert_score = pytest.importorskip("bert_score")
    pairs = [(i, j) for start in range(0, len(completions), group_size)
             for i in range(start, start + group_size) for j in range(start, start + group_size) if i != j]
    scored = [(i, j) for i, j in pairs if completions[i].strip() and completions[j].strip()]  # it fails on empties
    f1 = bert_score.score([completions[i] for i, _ in scored], [completions[j] for _, j in scored],
                          model_type=str(minilm_dir), num_layers=num_layers, batch_size=1)[2].tolist()
    by_pair = dict(zip(scored, f1))  # a pair with an empty side scores 0
    return [sum(by_pair.get((i, j), 0.0) for j in range(i - i % group_size, i - i % group_size + group_size) if j != i)
            / (group_size - 1) for i in range(len(completions))]


def test_consensus_reward_groups_by_prompt_and_equals_the_official_loop(reward, minilm_dir) -> None:
    consensus = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool)
    assert consensus.__name__ == "bertscore_consensus_f1" and consensus.scorer is reward.scorer  # one encoder
    rewards = consensus(completions=COMPLETIONS, prompts=PROMPTS, completion_ids=[[1]] * 8)
    assert rewards == pytest.approx(official_consensus(minilm_dir, COMPLETIONS, NUM_GENERATIONS, 4), abs=1e-6)
    assert rewards == pytest.approx(group_rewards(COMPLETIONS, NUM_GENERATIONS, scorer=reward.scorer), abs=1e-7)
    # chat prompts: lists of messages, equal by value (distinct objects), name the same groups
    chats = [[{"role": "user", "content": prompt}] for prompt in PROMPTS]
    assert consensus(completions=COMPLETIONS, prompts=chats) == rewards
    assert ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool,
                           group_size=NUM_GENERATIONS)(completions=COMPLETIONS, prompts=PROMPTS) == rewards
    # a prompt repeated in consecutive rows: its run holds two groups, cut as TRL groups them
    four = COMPLETIONS + COMPLETIONS[:4]
    assert consensus(completions=four, prompts=PROMPTS + PROMPTS[:4])[8:] == pytest.approx(rewards[:4], abs=1e-7)


def test_a_group_size_that_disagrees_with_the_prompts_is_refused_naming_both(reward) -> None:
    """With 2 prompts x 4 generations, group size 2 gave other numbers silently: now an error naming 4."""
    for size in (2, 8):
        wrong = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool, group_size=size)
        with pytest.raises(InputError, match=f"group_size={size} but the prompts form groups of 4"):
            wrong(completions=COMPLETIONS, prompts=PROMPTS)
        with pytest.raises(InputError, match=f"group_size={size} but the prompts form groups of 4"):
            group_rewards(COMPLETIONS, size, scorer=reward.scorer, prompts=PROMPTS)
    consensus = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool)
    with pytest.raises(InputError, match="runs of 3, 5 completions, not groups of one size"):
        consensus(completions=COMPLETIONS, prompts=PROMPTS[:3] + PROMPTS[4:] + PROMPTS[4:5])
    with pytest.raises(InputError, match="got 7 prompts for 8 completions"):
        consensus(completions=COMPLETIONS, prompts=PROMPTS[:7])
    with pytest.raises(InputError, match="finds each prompt's group by TRL's prompts, but none came"):
        consensus(completions=COMPLETIONS)
    with pytest.raises(InputError, match="output='bleu'"):
        ConsensusReward(EMBEDDED_MODEL_NAME, output="bleu", pool=reward.pool)
    with pytest.raises(InputError, match="all_layers=True"):
        ConsensusReward(EMBEDDED_MODEL_NAME, all_layers=True, pool=reward.pool)


def test_a_group_of_one_is_refused_with_the_reason(reward) -> None:
    """A completion alone would score 1.0 against itself whatever it says: refused, saying so."""
    reason = "has no other to agree with: its consensus reward would be its score against itself"
    with pytest.raises(InputError, match=f"group_size=1: a completion alone in its group {reason}"):
        group_rewards(["only one"], 1, scorer=reward.scorer)
    with pytest.raises(InputError, match=f"group_size=1: a completion alone in its group {reason}"):
        ConsensusReward(EMBEDDED_MODEL_NAME, group_size=1, pool=reward.pool)
    with pytest.raises(InputError, match=f"each prompt has one completion: a completion alone in its group {reason}"):
        ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, pool=reward.pool)(completions=["a", "b"], prompts=["p", "q"])


# ----- notes at the rate a training log can carry --------------------------------------------
def notes_of(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, BERTScoreNote)]


def test_notes_are_one_short_line_per_call_with_the_count_at_every_rl_entry_point(reward) -> None:
    """100 empty completions in a batch of 512: one line per call, under 200 characters, giving the
    count and the first places, worded alike by both rewards and group_rewards."""
    empty_at = [i for i in range(512) if i % 5 == 1][:100]
    completions = ["" if i in empty_at else f"answer number {i} is fine" for i in range(512)]
    completions[empty_at[1]] = "  \n"  # whitespace only: empty too
    prompts = [f"prompt {i // 8}" for i in range(512)]
    consensus = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool)
    lines = [notes_of(lambda: reward(completions=completions, reference=["a fine answer"] * 512, prompts=prompts)),
             notes_of(lambda: consensus(completions=completions, prompts=prompts)),
             notes_of(lambda: group_rewards(completions, 8, scorer=reward.scorer, prompts=prompts))]
    expected = ("100 of 512 completions are empty: completions[1], [6], [11], ... "
                "(no content tokens: raw score 0, as in the official package)")
    assert lines == [[expected]] * 3 and len(expected) < 200
    # a few: every one named, "is" for one
    assert notes_of(lambda: consensus(completions=["a", "", "c", ""], prompts=["p"] * 4)) == [
        "2 of 4 completions are empty: completions[1], [3] "
        "(no content tokens: raw score 0, as in the official package)"]
    assert notes_of(lambda: reward(completions=["a", ""], reference=["x", ""])) == [
        "1 of 2 completions and 1 of 2 reference entries are empty: completions[1], reference[1] "
        "(no content tokens: raw score 0, as in the official package)"]
    assert notes_of(lambda: reward(completions=["", "b"], reference=["x", "y"])) == [
        "1 of 2 completions is empty: completions[0] (no content tokens: raw score 0, as in the official package)"]
    # other causes, brief too: texts cut at the model's limit
    long = " ".join(["word"] * 600)
    (cut,) = notes_of(lambda: consensus(completions=[long, long, "a", "b"], prompts=["p"] * 4))
    assert cut == ("2 of 4 completions were truncated at the model's limit of 510 content tokens: completions[0], [1] "
                   "(pass long_texts='window' to score them whole)")


def test_every_cause_has_its_brief_line(reward) -> None:
    """Mostly unknown texts (a word longer than WordPiece reads is [UNK]) and all-0 token weights
    (idf over one distinct reference): one line each, the count and the places, as for empty texts."""
    assert notes_of(lambda: reward(completions=["a" * 150, "fine text", "b" * 150], reference=["x", "y", "z"])) == [
        "2 of 3 completions are mostly the unknown token '[UNK]': completions[0], [2] "
        "(they score as if mostly one token)"]
    idf = BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", idf=True, pool=reward.pool)
    assert notes_of(lambda: idf(completions=["the cat", "the cat", "a dog"], reference=["the cat"] * 3)) == [
        "2 of 3 completions and 3 of 3 reference entries have token weights all 0: completions[0], [1], "
        "reference[0], [1], [2] (idf over 1 distinct reference: raw F1 0)"]


def test_notes_obey_the_warnings_filters(reward) -> None:
    """The documented filters: ignore silences the line, error raises it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        warnings.filterwarnings("ignore", category=BERTScoreNote)
        reward(completions=["", "b"], reference=["x", "y"])
    assert not [w for w in caught if issubclass(w.category, BERTScoreNote)]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=BERTScoreNote)
        with pytest.raises(BERTScoreNote, match="1 of 2 completions is empty"):
            reward(completions=["", "b"], reference=["x", "y"])


def test_settings_are_checked_when_the_reward_is_built() -> None:
    with pytest.raises(ValueError, match="output='bleu' is not a BERTScore column"):
        BERTScoreReward(EMBEDDED_MODEL_NAME, output="bleu")
    with pytest.raises(ValueError, match="reference_column must be a column name"):
        BERTScoreReward(EMBEDDED_MODEL_NAME, reference_column="")
    with pytest.raises(ValueError, match="all_layers=True gives a score per layer"):
        BERTScoreReward(EMBEDDED_MODEL_NAME, all_layers=True)
    with pytest.raises(ValueError, match="num_layers=99"):
        BERTScoreReward(EMBEDDED_MODEL_NAME, num_layers=99, pool=ScorerPool())


def test_named_for_trl_and_picklable(reward) -> None:
    trl_utils = pytest.importorskip("trl.trainer.utils")
    assert trl_utils.get_callable_name(reward) == "bertscore_f1"
    assert trl_utils.get_callable_name(BERTScoreReward(EMBEDDED_MODEL_NAME, name="sim", pool=reward.pool)) == "sim"
    assert not trl_utils.is_async_callable(reward)
    data = pickle.dumps(reward)
    assert len(data) < 10_000  # settings only: no encoder, no cached embeddings
    copy = pickle.loads(data)
    assert copy._scorer is None
    assert copy(completions=COMPLETIONS, reference=COLUMN) == reward(completions=COMPLETIONS, reference=COLUMN)
    consensus = ConsensusReward(EMBEDDED_MODEL_NAME, num_layers=4, device="cpu", pool=reward.pool, group_size=4)
    assert trl_utils.get_callable_name(consensus) == "bertscore_consensus_f1"
    copy = pickle.loads(pickle.dumps(consensus))
    assert copy._scorer is None and copy.group_size == 4
    assert copy(completions=COMPLETIONS, prompts=PROMPTS) == consensus(completions=COMPLETIONS, prompts=PROMPTS)


GUEST_SCRIPT = r"""
import json, logging, random, sys, warnings
import numpy as np, torch

def precision_settings():
    found = {}
    for path in ("", "cuda.matmul", "cudnn", "cudnn.conv", "cudnn.rnn", "mkldnn", "mkldnn.matmul", "mkldnn.conv",
                 "mkldnn.rnn"):
        node = torch.backends
        for part in filter(None, path.split(".")):
            node = getattr(node, part, None)
        found[path or "backends"] = getattr(node, "fp32_precision", None)
    return found

def snapshot():
    loggers = {name: (logger.level, len(logger.handlers), logger.propagate)
               for name, logger in logging.root.manager.loggerDict.items() if isinstance(logger, logging.Logger)}
    return {
        "default dtype": str(torch.get_default_dtype()), "grad enabled": torch.is_grad_enabled(),
        "threads": [torch.get_num_threads(), torch.get_num_interop_threads()],
        "torch rng": torch.get_rng_state().tolist(), "python rng": random.getstate()[1][:8],
        "numpy rng": np.random.get_state()[1][:8].tolist(),
        "root logger": [logging.root.level, len(logging.root.handlers)], "warning filters": len(warnings.filters),
        "deterministic": torch.are_deterministic_algorithms_enabled(), "precision": precision_settings(),
        "loggers": loggers,
    }

from bertscore.reward import BERTScoreReward
reward = BERTScoreReward("sentence-transformers/all-MiniLM-L6-v2", num_layers=4, device="cpu")
before = snapshot()
rewards = reward(completions=["A cat.", "", "Rain today."], reference=["A cat sat.", "x", "It rains."])
after = snapshot()
after["loggers"] = {k: v for k, v in after["loggers"].items() if k in before["loggers"]}
json.dump({"before": before, "after": after, "rewards": rewards}, sys.stdout)
"""


@pytest.fixture(scope="module")
def guest_run() -> dict:
    """The process state before and after one reward call, in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", GUEST_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_a_reward_call_leaves_the_process_as_found(guest_run) -> None:
    """dtype, grad mode, threads, RNGs, loggers and warning filters as found; an empty completion scores 0."""
    before, after = guest_run["before"], guest_run["after"]
    assert guest_run["rewards"][1] == 0.0 and all(math.isfinite(r) for r in guest_run["rewards"])
    for key in before:
        if key != "precision":
            assert after[key] == before[key], f"{key} changed: {before[key]} -> {after[key]}"


def test_a_reward_call_leaves_the_precision_flags_as_found(guest_run) -> None:
    """Every fp32 precision flag as found, 'none' (inherit) included (issue 19 point 1, in the core)."""
    assert guest_run["after"]["precision"] == guest_run["before"]["precision"]


# ----- a real GRPO run: examples/grpo_reward.py ----------------------------------------------
def grpo_example():
    pytest.importorskip("trl")  # trl needs Python 3.11 (see pyproject's test extra)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import grpo_reward
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return grpo_reward


@pytest.mark.slow
def test_grpo_example_runs_three_steps_with_the_official_packages_numbers(tmp_path, minilm_dir) -> None:
    """Both rewards through GRPOTrainer: what TRL logs for each completion it generated is the
    official package's F1 (batch_size=1): against the row's reference, and (consensus) the mean
    against the other completions of the prompt's group."""
    example = grpo_example()
    bert_score = pytest.importorskip("bert_score")
    import pandas as pd

    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "grpo_reward.py"), "--output-dir", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step 3: bertscore_f1 mean" in done.stdout and "bertscore_consensus_f1 mean" in done.stdout

    history = json.loads((tmp_path / "log_history.json").read_text())
    names = ("bertscore_f1", "bertscore_consensus_f1")
    logged_means = {entry["step"]: [entry[f"rewards/{name}/mean"] for name in names] for entry in history
                    if "rewards/bertscore_f1/mean" in entry}
    assert sorted(logged_means) == [1, 2, 3]
    reference_of = {row["prompt"]: row["reference"] for row in example.ROWS}
    tables = [pd.read_parquet(tmp_path / "completions" / f"completions_{step:05d}.parquet") for step in (1, 2, 3)]
    for table in tables:  # TRL's own log of the step: every completion and the rewards it recorded for it
        assert len(table) == 2 * example.NUM_GENERATIONS
        assert table["prompt"].tolist() == [p for p in dict.fromkeys(table["prompt"]) for _ in range(4)]
    completions = [c for table in tables for c in table["completion"]]
    references = [reference_of[prompt] for table in tables for prompt in table["prompt"]]
    logged = {name: [v for table in tables for v in table[name]] for name in names}
    nonempty = [i for i, c in enumerate(completions) if c.strip()]  # the official package fails on an empty text
    official = bert_score.score([completions[i] for i in nonempty], [references[i] for i in nonempty],
                                model_type=str(minilm_dir), num_layers=6, batch_size=1)[2].tolist()
    expected = [0.0] * len(completions)
    for i, value in zip(nonempty, official):
        expected[i] = value
    assert logged["bertscore_f1"] == pytest.approx(expected, abs=1e-6)
    consensus = official_consensus(minilm_dir, completions, example.NUM_GENERATIONS, 6)
    assert logged["bertscore_consensus_f1"] == pytest.approx(consensus, abs=1e-6)
    for step, table in zip((1, 2, 3), tables):
        for k, name in enumerate(names):
            assert logged_means[step][k] == pytest.approx(table[name].mean(), abs=1e-6)
    assert torch.tensor(logged["bertscore_f1"]).std() > 0  # the policy's samples differ: the rewards carry a signal


@pytest.mark.slow
def test_grpo_with_a_wrong_group_size_is_refused_at_the_first_step(tmp_path) -> None:
    example = grpo_example()
    trainer, _ = example.make_trainer(str(tmp_path), max_steps=1, group_size=2)
    with pytest.raises(InputError, match="group_size=2 but the prompts form groups of 4"):
        trainer.train()


@pytest.mark.slow
def test_grpo_with_every_completion_empty_logs_one_short_note_a_step(tmp_path) -> None:
    """8 empty completions a step (the policy may say nothing but its end token): one line a step."""
    example = grpo_example()
    trainer, _ = example.make_trainer(str(tmp_path), max_steps=3, only_eos=True, consensus=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        trainer.train()
    notes = [str(w.message) for w in caught if issubclass(w.category, BERTScoreNote)]
    assert notes == ["8 of 8 completions are empty: completions[0], [1], [2], ... "
                     "(no content tokens: raw score 0, as in the official package)"] * 3
    assert all(len(note) < 200 for note in notes)
    steps = [entry for entry in trainer.state.log_history if "rewards/bertscore_f1/mean" in entry]
    assert [entry["rewards/bertscore_f1/mean"] for entry in steps] == [0.0] * 3
