"""Score a file pair with every rank of a torchrun launch (the Python API of bertscore.distributed).

    torchrun --nproc_per_node=2 examples/score_distributed.py cands.txt refs.txt [refs2.txt ...] \
        --model sentence-transformers/all-MiniLM-L6-v2 --out scores.json [--idf] [--rescale-with-baseline --lang en]

Every rank reads the same inputs; `score_distributed` shards them by token count, each rank
scores its shard, and the results are gathered (here onto rank 0, which writes --out).
Without torchrun it runs as one process (the same numbers). On GPUs use
`--nproc_per_node=<gpus>`: each rank scores on cuda:LOCAL_RANK (nccl); on CPU gloo is used.
Multi-node: `torchrun --nnodes=2 --node_rank=<0|1> --nproc_per_node=8 --rdzv_backend=c10d
--rdzv_endpoint=<host0>:29500 examples/score_distributed.py ...` (the same on each node).
"""

from __future__ import annotations

import argparse
import json
import time

from bertscore import BERTScorer
from bertscore.distributed import init_from_env, local_device, rank, score_distributed, world_size


def read_lines(path: str) -> list[str]:
    """One text per line, as the CLI reads them: the last line counts with or without a newline."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        lines = handle.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the trailing newline ends the last line; it does not start an empty one
    return [line.removesuffix("\r") for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("candidates")
    parser.add_argument("references", nargs="+")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--idf", action="store_true")
    parser.add_argument("--rescale-with-baseline", action="store_true")
    parser.add_argument("--lang")
    parser.add_argument("--device")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out")
    args = parser.parse_args()

    created = init_from_env(device=args.device)  # no-op outside torchrun / accelerate launch
    cands = read_lines(args.candidates)
    ref_files = [read_lines(path) for path in args.references]
    refs = ref_files[0] if len(ref_files) == 1 else [list(group) for group in zip(*ref_files)]
    scorer = BERTScorer(
        model_type=args.model, idf=args.idf, rescale_with_baseline=args.rescale_with_baseline,
        lang=args.lang, device=local_device(args.device), batch_size=args.batch_size,
    )
    start = time.perf_counter()
    result = score_distributed(scorer, cands, refs, dst=0)
    seconds = time.perf_counter() - start
    if rank() == 0:
        precision, recall, f1 = result
        payload = {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist(),
                   "hashcode": scorer.hash, "world_size": world_size(), "seconds": seconds}
        if args.out:
            with open(args.out, "w", encoding="utf-8") as handle:
                json.dump(payload, handle)
        else:
            print(json.dumps(payload))
    if created:
        import torch.distributed as dist

        dist.destroy_process_group()


if __name__ == "__main__":
    main()
