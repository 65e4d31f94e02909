"""One rank of tests/test_torchmetrics.py's DDP run (launched by torchrun, gloo on CPU).

Usage: torchrun --nproc_per_node=2 tests/torchmetrics_ranks.py PAIRS.json OUT_DIR. Rank r updates
`bertscore.torchmetrics.BERTScore` with its own slice of the pairs (uneven: rank 0 takes more), in
batches of 3, then computes; again where rank 1 sees no data at all. Each rank writes
OUT_DIR/rank<r>.json: {case: {"precision": [...], "recall": [...], "f1": [...], "hash": ...}, "sharded":
[candidates of each compute() that scored in shards across the ranks]}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch.distributed as dist

import bertscore.torchmetrics as door
from bertscore.torchmetrics import BERTScore

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def run(pairs: list[list], rank: int, split: int, **settings) -> dict:
    metric = BERTScore(MODEL, num_layers=4, device="cpu", return_hash=True, **settings)
    mine = pairs[:split] if rank == 0 else pairs[split:]
    for start in range(0, len(mine), 3):
        batch = mine[start:start + 3]
        metric.update([c for c, _ in batch], [r for _, r in batch])
    result = metric.compute()
    return {k: v if isinstance(v, str) else v.tolist() for k, v in result.items()}


def main() -> None:
    pairs, out = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")), Path(sys.argv[2])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    sharded: list[int] = []  # candidates of each compute() scored in shards across the ranks
    original = door.score_distributed
    door.score_distributed = lambda scorer, cands, *a, **k: sharded.append(len(cands)) or original(scorer, cands, *a, **k)
    uneven = len(pairs) * 2 // 3
    results = {
        "no-idf": run(pairs, rank, uneven),
        "idf": run(pairs, rank, uneven, idf=True),
        "no-idf, rank 1 idle": run(pairs, rank, len(pairs)),
        "idf, rank 1 idle": run(pairs, rank, len(pairs), idf=True),
        "sharded": sharded,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(results), encoding="utf-8")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
