"""tests/test_torchmetrics.py's one multi-process run: a LightningModule written from torchmetrics'
docs, validated under `ddp_spawn` on 2 CPU ranks (gloo) with Lightning's default sampler, then the
metric's own DDP cases on the same ranks.

`validate(spec, out)` from a test process (the workers import this module by name), or
python tests/torchmetrics_ranks.py SPEC.json OUT_DIR. SPEC: {"examples": [[candidate,
references, index], ...] (the validation set: Lightning's DistributedSampler repeats one on 7
examples and 2 ranks), "pairs": [[candidate, references], ...] (the DDP cases)}. Writes
OUT_DIR/logged.json (what trainer.validate returns: rank 0's logged values; `validate` returns it) and
OUT_DIR/rank<r>.json:
{"per_sample": compute() of a per-sample idf metric given indexes, "warnings": the cross-rank repeat
warnings of a metric given no indexes, "indexes": the dataset indices this rank saw, case: {...}}
where each DDP case updates BERTScore with its own slice of "pairs" (uneven; then rank 1 idle) in
batches of 3 and computes; "sharded": candidates of each compute() scored in shards across ranks;
"synced steps": idf with dist_sync_on_step=True, forward() on pairs 0-3 (rank 0) and 4-7 (rank 1) in
two steps of 2 a rank, {"steps": each step's f1, "epoch": compute()'s f1, "notes": the steps' notes}.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import lightning as L
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torchmetrics import MetricCollection
from torchmetrics.text import CHRFScore

import bertscore.torchmetrics as door
from bertscore.notes import BERTScoreNote
from bertscore.torchmetrics import BERTScore, BERTScoreF1, BERTScorePrecision, BERTScoreRecall

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SETTINGS = dict(num_layers=4, device="cpu")


class Validation(L.LightningModule):
    """The idioms of torchmetrics' Lightning docs, with each example's dataset index passed along."""

    def __init__(self, pairs: list, out: Path) -> None:
        super().__init__()
        self.pairs, self.out = pairs, out
        self.layer = torch.nn.Linear(1, 1)
        self.val_f1 = BERTScoreF1(MODEL, **SETTINGS)
        self.val_idf_f1 = BERTScoreF1(MODEL, idf=True, **SETTINGS)
        self.val_metrics = MetricCollection({"bertscore_precision": BERTScorePrecision(MODEL, **SETTINGS),
                                             "bertscore_recall": BERTScoreRecall(MODEL, **SETTINGS),
                                             "chrf": CHRFScore()}, prefix="val_")
        self.step_scores = BERTScore(MODEL, reduction="mean", **SETTINGS)
        self.per_sample = BERTScore(MODEL, idf=True, **SETTINGS)
        self.unindexed = BERTScoreF1(MODEL, **SETTINGS)
        self.seen: list[int] = []

    def validation_step(self, batch, batch_idx):
        preds, target, indexes = batch
        self.seen += indexes.tolist()
        self.val_f1(preds, target, indexes=indexes)
        self.log("val_bertscore_f1", self.val_f1)
        self.val_idf_f1.update(preds, target, indexes=indexes)
        self.log("val_bertscore_idf_f1", self.val_idf_f1)
        self.val_metrics.update(preds, target, indexes=indexes)
        self.log_dict(self.val_metrics)
        self.log_dict(self.step_scores(preds, target), batch_size=len(preds))
        self.per_sample.update(preds, target, indexes=indexes)
        self.unindexed.update(preds, target)

    def on_validation_epoch_end(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            unindexed = self.unindexed.compute()
        scores = self.per_sample.compute()
        self.report = {
            "per_sample": {k: v.tolist() for k, v in scores.items()}, "unindexed_f1": unindexed.item(),
            "warnings": [str(w.message) for w in caught if "more than one rank" in str(w.message)],
            "indexes": self.seen,
        }

    def on_validation_end(self):
        rank = dist.get_rank()
        self.report.update(ddp_cases(self.pairs, rank))
        (self.out / f"rank{rank}.json").write_text(json.dumps(self.report), encoding="utf-8")


def run(pairs: list[list], rank: int, split: int, **settings) -> dict:
    metric = BERTScore(MODEL, return_hash=True, **SETTINGS, **settings)
    mine = pairs[:split] if rank == 0 else pairs[split:]
    for start in range(0, len(mine), 3):
        batch = mine[start:start + 3]
        metric.update([c for c, _ in batch], [r for _, r in batch])
    result = metric.compute()
    return {k: v if isinstance(v, str) else v.tolist() for k, v in result.items()}


def synced_steps(pairs: list[list], rank: int) -> dict:
    metric = BERTScore(MODEL, idf=True, dist_sync_on_step=True, **SETTINGS)
    mine = pairs[rank * 4:rank * 4 + 4]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        steps = [metric([c for c, _ in mine[s:s + 2]], [r for _, r in mine[s:s + 2]])["f1"].tolist() for s in (0, 2)]
    return {"steps": steps, "epoch": metric.compute()["f1"].tolist(),
            "notes": [str(w.message) for w in caught if issubclass(w.category, BERTScoreNote)]}


def ddp_cases(pairs: list[list], rank: int) -> dict:
    sharded: list[int] = []  # candidates of each compute() scored in shards across the ranks
    original = door.score_distributed
    door.score_distributed = lambda scorer, cands, *a, **k: sharded.append(len(cands)) or original(scorer, cands, *a, **k)
    uneven = len(pairs) * 2 // 3
    try:
        return {
            "no-idf": run(pairs, rank, uneven),
            "idf": run(pairs, rank, uneven, idf=True),
            "no-idf, rank 1 idle": run(pairs, rank, len(pairs)),
            "idf, rank 1 idle": run(pairs, rank, len(pairs), idf=True),
            "sharded": sharded,
            "synced steps": synced_steps(pairs, rank),
        }
    finally:
        door.score_distributed = original


def collate(rows: list) -> tuple[list[str], list, torch.Tensor]:
    return [c for c, _, _ in rows], [r for _, r, _ in rows], torch.tensor([i for _, _, i in rows])


def validate(spec: dict, out: Path) -> dict:
    """trainer.validate under ddp_spawn on 2 CPU ranks: rank 0's logged values (the ranks write their files)."""
    loader = DataLoader([tuple(row) for row in spec["examples"]], batch_size=2, collate_fn=collate)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    [logged] = trainer.validate(Validation(spec["pairs"], out), dataloaders=loader, verbose=False)
    return logged


if __name__ == "__main__":
    result = validate(json.loads(Path(sys.argv[1]).read_text(encoding="utf-8")), Path(sys.argv[2]))
    (Path(sys.argv[2]) / "logged.json").write_text(json.dumps(result), encoding="utf-8")
