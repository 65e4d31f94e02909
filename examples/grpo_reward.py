"""BERTScore as the rewards of TRL's GRPOTrainer (recipe + a tiny offline demo; docs/rl.md).

Recipe: the training dataset has a `prompt` column and a `reference` column; TRL passes every
column except the prompt to the reward functions, one entry per completion, and the prompts.

    from bertscore.mbr import ConsensusReward
    from bertscore.reward import BERTScoreReward
    from trl import GRPOConfig, GRPOTrainer

    reward = BERTScoreReward("roberta-large", reference_column="reference",
                             rescale_with_baseline=True, lang="en")   # or model_type=..., idf=..., output="recall"
    consensus = ConsensusReward("roberta-large", rescale_with_baseline=True, lang="en")  # no reference needed
    reward.check_dataset(dataset)                     # a missing reference column fails here, not at step 1
    trainer = GRPOTrainer(model=policy, reward_funcs=[reward, consensus], train_dataset=dataset,
                          args=GRPOConfig(num_generations=8, ...))
    trainer.train()                                   # logs rewards/bertscore_f1/mean, .../bertscore_consensus_f1/mean

The encoder loads once (when the first reward is built; the second shares it) and its embedding cache
persists across steps: each prompt's reference, repeated `num_generations` times per step, is embedded once.

Demo (CPU, offline, a few seconds; needs `pip install trl`): a tiny random GPT-2 policy over
a word-level vocabulary runs 3 GRPO steps with both rewards on the embedded MiniLM:

    HF_HUB_OFFLINE=1 python examples/grpo_reward.py [--output-dir DIR]

With `--output-dir`, TRL's completion logs (every completion and its logged rewards, per step)
are kept in DIR/completions/*.parquet and the trainer's log history in DIR/log_history.json
(tests/test_reward.py checks those rewards against the official bert-score package).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

EMBEDDED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
NUM_GENERATIONS = 4
ROWS = [
    {"prompt": "describe the cat :", "reference": "the cat sat on the mat"},
    {"prompt": "describe the dog :", "reference": "a dog runs in the park"},
    {"prompt": "describe the weather :", "reference": "it is raining today"},
    {"prompt": "describe the market :", "reference": "she bought three apples at the market"},
]
SPECIAL_TOKENS = ["<pad>", "<unk>", "<s>", "</s>"]


def build_tiny_policy(folder: Path) -> Path:
    """A random 2-layer GPT-2 and a word-level tokenizer over the demo's words, saved to `folder`."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = sorted({word for row in ROWS for text in row.values() for word in text.split()})
    vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS + words)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>",
    )
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def make_trainer(output_dir: str, max_steps: int = 3, group_size: int | None = None,
                 only_eos: bool = False, consensus: bool = True) -> tuple[Any, list[Any]]:
    """(GRPOTrainer, rewards) for the demo: tiny policy, 2 prompts x NUM_GENERATIONS per step, CPU.
    `group_size`: passed to the consensus reward (checked against TRL's prompts); `only_eos`: the
    policy may emit nothing but its end token (every completion empty); `consensus=False`: the
    reference reward alone."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from bertscore.mbr import ConsensusReward
    from bertscore.reward import BERTScoreReward

    policy_dir = build_tiny_policy(Path(output_dir) / "policy")
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    dataset = Dataset.from_list(ROWS)
    rewards = [BERTScoreReward(EMBEDDED_MODEL, reference_column="reference", device="cpu")]
    rewards[0].check_dataset(dataset)  # a missing or misnamed reference column fails here, before any rollout
    if consensus:
        rewards.append(ConsensusReward(EMBEDDED_MODEL, device="cpu", group_size=group_size))
    generation = ({"suppress_tokens": [i for i in range(len(tokenizer)) if i != tokenizer.eos_token_id]}
                  if only_eos else None)
    args = GRPOConfig(
        output_dir=output_dir, max_steps=max_steps, per_device_train_batch_size=2 * NUM_GENERATIONS,
        num_generations=NUM_GENERATIONS, max_completion_length=8, temperature=1.0, learning_rate=1e-3,
        use_cpu=True, report_to=[], save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0,
        log_completions=True, num_completions_to_print=0, dataloader_num_workers=0, generation_kwargs=generation,
    )
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(policy_dir), processing_class=tokenizer,
        reward_funcs=rewards, train_dataset=dataset, args=args,
    )
    return trainer, rewards


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output-dir", help="keep TRL's completion logs and the log history here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        output_dir = args.output_dir or scratch
        trainer, rewards = make_trainer(output_dir)
        trainer.train()
        history = trainer.state.log_history
        Path(output_dir, "log_history.json").write_text(json.dumps(history, indent=1), encoding="utf-8")
        for entry in history:
            means = [f"{r.__name__} mean {entry[f'rewards/{r.__name__}/mean']:.4f}" for r in rewards
                     if f"rewards/{r.__name__}/mean" in entry]
            if means:
                print(f"step {entry['step']}: {', '.join(means)}")
        print(f"reward hash: {rewards[0].hash}")


if __name__ == "__main__":
    main()
