"""BERTScore as an RL reward (bertscore/reward.py): TRL's calling convention, the numbers of
`score()` and of the official package, references embedded once across `num_generations`,
picklable, clear errors, the process left as found, and 2 real GRPO steps (examples/grpo_reward.py)."""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, score
from bertscore.scoring.embed import Embedder
from bertscore.pool import ScorerPool
from bertscore.reward import BERTScoreReward

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
    [(3, "completion 1 is int 3"),
     ([{"role": "user", "content": "hi"}], r"completion 1 is a conversation with no assistant message \(roles: \['user'\]\)"),
     ([{"role": "assistant", "content": [{"type": "image"}]}], "completion 1: the last assistant message's content is list"),
     ([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}]}],
      "completion 1: the last assistant message's content is list"),
     (None, "completion 1 is NoneType")],
)
def test_completions_that_are_not_text_are_refused_by_index(reward, completion, message) -> None:
    with pytest.raises(TypeError, match=message):
        reward(completions=["fine", completion], reference=["a", "b"])


def test_reference_column_errors_name_the_column_and_what_came(reward) -> None:
    with pytest.raises(KeyError) as caught:
        reward(completions=COMPLETIONS, target=COLUMN, **TRL_KEYWORDS)
    message = str(caught.value)
    assert "needs the dataset column 'reference'" in message and "received the columns ['target']" in message
    assert "reference_column=" in message
    with pytest.raises(ValueError, match="column 'reference' has 7 entries for 8 completions"):
        reward(completions=COMPLETIONS, reference=COLUMN[:7])
    with pytest.raises(TypeError, match="must hold one reference per completion \\(a list\\), got str"):
        reward(completions=["a"], reference="a")
    with pytest.raises(TypeError, match="column 'reference', entry 1: a reference is a string or a non-empty list"):
        reward(completions=["a", "b"], reference=["a", 5])
    with pytest.raises(TypeError, match="entry 0"):
        reward(completions=["a"], reference=[[]])


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
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:no content tokens")  # the tiny policy may generate nothing: scored 0
def test_grpo_example_runs_two_steps_with_the_rewards_score_gives(tmp_path) -> None:
    pytest.importorskip("trl")
    import pandas as pd

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import grpo_reward as example
    finally:
        sys.path.remove(str(ROOT / "examples"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "grpo_reward.py"), "--output-dir", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "step 2: bertscore_f1 mean" in done.stdout

    history = json.loads((tmp_path / "log_history.json").read_text())
    logged_means = {entry["step"]: entry["rewards/bertscore_f1/mean"] for entry in history
                    if "rewards/bertscore_f1/mean" in entry}
    assert sorted(logged_means) == [1, 2]
    reference_of = {row["prompt"]: row["reference"] for row in example.ROWS}
    direct = BERTScoreReward(EMBEDDED_MODEL_NAME, device="cpu", pool=ScorerPool())
    for step in (1, 2):
        table = pd.read_parquet(tmp_path / "completions" / f"completions_{step:05d}.parquet")
        # TRL's own log of this step: every completion and the reward it recorded for it.
        assert len(table) == 2 * example.NUM_GENERATIONS
        assert table["prompt"].value_counts().tolist() == [example.NUM_GENERATIONS] * 2
        completions, logged = table["completion"].tolist(), table["bertscore_f1"].tolist()
        assert all(math.isfinite(value) for value in logged)
        references = [reference_of[prompt] for prompt in table["prompt"]]
        expected = score(completions, references, model_type=EMBEDDED_MODEL_NAME, device="cpu")[2]
        assert logged == pytest.approx(expected.tolist(), abs=1e-6)
        assert logged == pytest.approx(direct(completions=completions, reference=references), abs=1e-6)
        assert logged_means[step] == pytest.approx(sum(logged) / len(logged), abs=1e-6)
    assert torch.tensor(logged).std() > 0  # the policy's samples differ: the rewards carry a signal
