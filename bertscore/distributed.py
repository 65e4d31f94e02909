"""Sharded scoring with torch.distributed: every rank scores a token-balanced shard.

Launch N processes with `torchrun --nproc_per_node=N` (or `accelerate launch`, which sets
the same RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT variables) and call
`score_distributed(scorer, cands, refs)` on every rank with the *same* inputs:

    from bertscore import BERTScorer
    from bertscore.distributed import init_from_env, local_device, score_distributed

    init_from_env()                                   # gloo on CPU, nccl on GPU
    scorer = BERTScorer(model_type=..., device=local_device())
    P, R, F = score_distributed(scorer, cands, refs)  # full results on every rank

Each rank tokenizes the inputs, the candidates (each with all its references) are assigned
greedily to ranks so that token sums are balanced (same assignment on every rank), each
rank computes the raw pair scores of its shard with `Pipeline.score_aligned`, the raw pair
scores are gathered with their indices, and the multi-reference max and baseline rescaling
are applied exactly as `BERTScorer.score` does. The numbers equal one process's (up to
float rounding from different padding in encoder batches, far below 1e-6).

`dst=None` (default) returns the results on every rank (`all_gather_object`); `dst=0`
returns them on rank 0 only (`gather_object`, less traffic) and None on the other ranks.
Outside a distributed launch (WORLD_SIZE unset or 1, no process group) it is `scorer.score`.
"""

from __future__ import annotations

import heapq
import os
from typing import Any, Callable, Sequence

import torch

from .inputs import InputError, normalize_inputs
from .models.devices import default_device_type

Scores = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


# ----- process group ----------------------------------------------------------------------
def env_world_size() -> int:
    """WORLD_SIZE from the environment (1 when not launched by torchrun / accelerate)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def is_distributed() -> bool:
    """True when a process group with more than one rank is (or can be) used."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    return env_world_size() > 1


def init_from_env(backend: str | None = None, device: str | None = None) -> bool:
    """Initialise the default process group from the torchrun env vars if not done yet.

    Backend: follows the device the ranks will score on (`device`, resolved as the scorer
    does: CUDA when available unless told otherwise): nccl for CUDA, gloo otherwise, so
    `--device cpu` on a GPU machine uses gloo. On CUDA the current device is set to the
    rank's GPU (`local_cuda_index`). Returns True when this call created the group (so the
    caller may destroy it).
    """
    import torch.distributed as dist

    if not dist.is_available() or dist.is_initialized() or env_world_size() <= 1:
        return False
    if backend is None:
        backend = "nccl" if _device_type(device) == "cuda" else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(local_cuda_index())
    dist.init_process_group(backend=backend)
    return True


def local_cuda_index() -> int:
    """The GPU index this rank uses among those it sees: LOCAL_RANK, or 0 where it sees one GPU.

    Schedulers often give each rank its own GPU through CUDA_VISIBLE_DEVICES: every rank then
    sees exactly one device, cuda:0, whatever its LOCAL_RANK. A rank with more visible GPUs takes
    cuda:LOCAL_RANK, which must exist.
    """
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    count = torch.cuda.device_count()
    if count == 1:
        return 0
    if local_rank >= count:
        raise InputError(
            f"LOCAL_RANK={local_rank} but this process sees {count} GPU(s) "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}): launch at most {count} "
            "ranks per node, or give each rank one GPU through CUDA_VISIBLE_DEVICES"
        )
    return local_rank


def _device_type(device: str | None) -> str:
    return default_device_type() if device is None else torch.device(device).type


def rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def local_device(device: str | None = None) -> str | None:
    """The device a rank should score on: cuda:LOCAL_RANK when CUDA is used (cuda:0 where each
    rank sees one GPU, `local_cuda_index`), else `device`.

    An explicit `cuda:N` is kept only where each process sees a single GPU (e.g.
    CUDA_VISIBLE_DEVICES set per rank); with several ranks sharing several visible GPUs it is
    an error, since every rank would score on the same GPU.
    """
    if _device_type(device) != "cuda" or not torch.cuda.is_available():
        return device
    if device is not None and torch.device(device).index is not None:
        if env_world_size() > 1 and torch.cuda.device_count() > 1:
            raise InputError(
                f"device={device!r} under a launch of {env_world_size()} ranks would put every rank on the "
                "same GPU: pass device='cuda' (each rank then takes cuda:LOCAL_RANK)"
            )
        return device
    return f"cuda:{local_cuda_index()}"


# ----- sharding ---------------------------------------------------------------------------
def balanced_shards(costs: Sequence[int], num_shards: int) -> list[list[int]]:
    """Assign items to shards greedily (largest first, to the lightest shard) to balance cost.

    Deterministic: every rank computes the same assignment. Each shard's indices ascend.
    """
    shards: list[list[int]] = [[] for _ in range(num_shards)]
    heap = [(0, shard) for shard in range(num_shards)]
    for index in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, shard = heapq.heappop(heap)
        shards[shard].append(index)
        heapq.heappush(heap, (load + int(costs[index]), shard))
    return [sorted(shard) for shard in shards]


def score_distributed(
    scorer: Any,
    cands: Sequence[str],
    refs: Sequence[str] | Sequence[Sequence[str]],
    verbose: bool = False,
    dst: int | None = None,
    notes: list[str] | None = None,
    weights: Any = None,
) -> Scores | None:
    """`scorer.score(cands, refs)` computed by all ranks together (call it on every rank).

    Every rank passes the same inputs. Returns (P, R, F) on every rank (`dst=None`) or on
    rank `dst` only (None elsewhere). Per-call idf (`idf=True` without fixed weights) is
    computed over *all* references, as one process would.
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return scorer.score(cands, refs, verbose=verbose, notes=notes, weights=weights)
    me, size = dist.get_rank(), dist.get_world_size()
    candidates, groups = normalize_inputs(cands, refs)
    _check_same_inputs(candidates, groups, scorer.hash)
    pipeline = scorer.pipeline
    settings = pipeline.settings
    flat_refs = [ref for group in groups for ref in group]
    owners = [i for i, group in enumerate(groups) for _ in group]
    token_ids = pipeline.tokenize(candidates + flat_refs)
    # Per-call idf: the weights over every reference, not over this rank's shard.
    if weights is None:
        weights = pipeline.weights_for(flat_refs, token_ids)
    if me == (dst or 0):
        pipeline.note_inputs(candidates, groups, token_ids, weights, notes)

    # Balance by tokens: a candidate and all its references go to the same rank.
    def cost(text: str) -> int:
        key = text.strip()
        return 0 if settings.is_empty(token_ids, key) else token_ids.length(key)

    costs = [cost(c) * len(group) + sum(cost(r) for r in group) for c, group in zip(candidates, groups)]
    mine = set(balanced_shards(costs, size)[me])
    pair_indices = [p for p, owner in enumerate(owners) if owner in mine]
    if pair_indices:
        local = pipeline.score_aligned(
            [candidates[owners[p]] for p in pair_indices], [flat_refs[p] for p in pair_indices],
            pipeline.check_weights(weights), verbose=verbose and me == (dst or 0), batch_size=None,
            warn_empty=False, notes=None,
        )
    else:
        layers = (settings.score_layers,) if settings.all_layers else ()
        local = torch.zeros((0,) + layers + (3,), dtype=torch.float32)
    payload = (pair_indices, local.cpu())
    if dst is None:
        gathered: list[Any] = [None] * size
        dist.all_gather_object(gathered, payload)
    else:
        gathered = [None] * size if me == dst else None
        dist.gather_object(payload, gathered, dst=dst)
        if me != dst:
            return None
    pair_scores = assemble_pair_scores(gathered, len(flat_refs), tuple(local.shape[1:]))
    return pipeline.finish(pair_scores, torch.tensor(owners, dtype=torch.long), len(candidates))


def assemble_pair_scores(
    gathered: Sequence[tuple[Sequence[int], torch.Tensor]], num_pairs: int, score_shape: tuple[int, ...]
) -> torch.Tensor:
    """The raw pair scores [num_pairs, *score_shape] from every rank's (pair indices, scores).

    `gathered[r]` is rank r's payload. Every pair must be scored by some rank, and every score
    must be finite: a RuntimeError tells the two failures apart, since their causes differ (pairs
    no rank returned: the ranks disagree on the shards; NaN/inf scores: a rank computed them, e.g.
    on a faulty device), naming the pairs and, for NaN, the ranks that returned them.
    """
    pair_scores = torch.zeros((num_pairs,) + tuple(score_shape), dtype=torch.float32)  # not the ambient dtype
    filled = torch.zeros(num_pairs, dtype=torch.bool)
    nan_pairs: dict[int, list[int]] = {}  # rank -> pairs it returned NaN (or inf) for
    for source, (indices, scores) in enumerate(gathered):
        if not len(indices):
            continue
        index = torch.as_tensor(list(indices), dtype=torch.long)
        pair_scores[index] = scores
        filled[index] = True
        bad = ~torch.isfinite(scores.reshape(len(index), -1)).all(dim=1)
        if bool(bad.any()):
            nan_pairs[source] = index[bad].tolist()
    problems = []
    missing = torch.nonzero(~filled).flatten().tolist()
    if missing:
        problems.append(f"{len(missing)} pair(s) unscored: no rank returned them (e.g. pair {missing[:5]}); "
                        "the ranks disagree on the shards")
    if nan_pairs:
        count = sum(len(pairs) for pairs in nan_pairs.values())
        where = "; ".join(f"rank {r}: pair {pairs[:5]}" for r, pairs in nan_pairs.items())
        problems.append(f"{count} pair(s) scored NaN or inf ({where}): those ranks computed them (check their "
                        "device and dtype)")
    if problems:
        raise RuntimeError("distributed scoring failed: " + " and ".join(problems) + ". Please report this")
    return pair_scores


def _check_same_inputs(candidates: list[str], groups: list[list[str]], settings_hash: str) -> None:
    """Every rank must score the same texts with the same settings: compare fingerprints first."""
    import torch.distributed as dist

    from .digests import text_digest

    # Each candidate, its reference count, then its references: the grouping is part of the input.
    texts = [settings_hash]
    for candidate, group in zip(candidates, groups):
        texts += [candidate, str(len(group)), *group]
    fingerprints: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(fingerprints, (len(candidates), text_digest(texts)))
    if len(set(fingerprints)) > 1:
        detail = ", ".join(f"rank {r}: {n} candidates, {h[:10]}" for r, (n, h) in enumerate(fingerprints))
        raise ValueError(
            "score_distributed needs the same inputs and settings on every rank, but the ranks differ "
            f"({detail}): read the same files on every rank and build the scorer with the same settings"
        )


# ----- command line -----------------------------------------------------------------------
def run_cli(
    args: Any, scorer: Any, write_results: Callable[..., int], pairs: Callable[[Any], Any], weights: Any = None
) -> int:
    """The CLI under torchrun: every rank reads the inputs, scores its shard of each chunk;
    rank 0 alone writes the output (and handles --resume); the others follow its chunks.
    `weights`: token weights over the whole input (idf over every reference line), or None.
    """
    import torch.distributed as dist
    from itertools import islice

    created = init_from_env(device=getattr(args, "device", None))
    try:
        if dist.get_rank() == 0:
            started = []

            def on_start(skip: int) -> None:
                started.append(skip)
                dist.broadcast_object_list([skip], src=0)

            try:
                return write_results(
                    args, scorer, on_start=on_start,
                    score_fn=lambda c, r, notes, progress: score_distributed(scorer, c, r, dst=0, notes=notes,
                                                                         weights=weights),
                )
            except BaseException:
                if not started:  # tell the other ranks to stop instead of waiting for chunks
                    dist.broadcast_object_list([-1], src=0)
                raise
        box: list[Any] = [None]
        dist.broadcast_object_list(box, src=0)
        skip = box[0]
        if skip < 0:
            return 2  # rank 0 failed before scoring and reported why
        stream = pairs(args)
        for _ in islice(stream, skip):
            pass
        while chunk := list(islice(stream, args.chunk_size)):
            score_distributed(scorer, [c for c, _ in chunk], [r for _, r in chunk], dst=0, weights=weights)
        return 0
    finally:
        if created:
            dist.destroy_process_group()
