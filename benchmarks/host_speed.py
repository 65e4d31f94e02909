"""The host side alone: a near-free encoder, so that what is timed is tokenizing, batching,
copying and matching, side by side with the official package on the same pairs (why, and the
committed runs: docs/testing.md, "Host-side speed"; docs/performance.md quotes them).

A 1-layer BERT of hidden size 32 (2 heads, random, built offline with the embedded MiniLM's
WordPiece tokenizer) scores N WMT17 to-English pairs at layer 1 (`speed.py`'s seeded draw; the
vendored 300-pair fixture cycled where the shared data is absent):

  ours       bertscore.BERTScorer.score (default settings, cache off: every text embedded)
  official   bert_score.BERTScorer.score (official 0.3.13, its default batch_size=64)

Rounds alternate the two; the best time of the rounds is reported with pairs/s and the ratio.
Then, best of the rounds: our time by phase (wall clocks around the pipeline's steps,
`phase_times`); the host work per pair of each (`host_work`: the caller thread's CPU time outside
what a device would compute, `device_work_of`; thread CPU time, so neither the other processes of
a shared machine nor the blocks tokenized ahead count in it). Last, the scores against the official
package at batch_size=1 on the first 300 pairs (its batched numbers drift with padding), and the
device ops of the matching's padding by route (`padding_copies`). `--batch-size none
--tokens-per-batch 65536` runs ours as a GPU's budget mode runs it (a few large encoder batches).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/host_speed.py [--pairs 5000] [--rounds 3] [--threads 1]
        [--batch-size none] [--tokens-per-batch 65536]

Writes host_speed.md / .json (host_speed_budget.* with --batch-size none; where to: docs/testing.md).
"""

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import torch

from harness import FIXTURE, interleaved, max_delta, official_scorer, random_bert, table, timed, wmt17_pairs
from machine import begin, header, write_results  # TOKENIZERS_PARALLELISM: as the user has it

from bertscore import BERTScorer
from bertscore.scoring import tokenize_ahead


def load_texts(data: Path, n: int) -> tuple[list[str], list[str], str]:
    """N (candidate, reference) pairs: the seeded WMT17 draw of speed.py, or the vendored fixture cycled."""
    if (data / "wmt17" / "syslevel" / "wmt17_to_en_system_outputs.tsv.gz").is_file():
        from speed import load_pairs

        cands, refs, _ = load_pairs(data, n)
        return cands, refs, f"{n} seeded WMT17 to-English system outputs with their references"
    cands, refs = wmt17_pairs(FIXTURE)
    repeat = -(-n // len(cands))
    return (cands * repeat)[:n], (refs * repeat)[:n], f"the vendored WMT17 de-en fixture cycled to {n} pairs"


def phase_times(scorer: BERTScorer, cands: list[str], refs: list[str]) -> dict[str, float]:
    """Wall time of our call (on the CPU) split by pipeline step, wrapping the pipeline's own methods.

    tokenize: on the caller's thread; tokenize_ahead: blocks tokenized on the background thread
    while the caller scores the block before (off the critical path, bertscore/scoring/tokenize_ahead.py);
    tokenize_wait: the caller waiting for such a block (on the critical path when the background
    thread falls behind); encode: batching, the encoder and the overflow check; match: matching and
    the copy back; other: the rest."""
    from bertscore.scoring import pipeline as pipeline_module
    from bertscore.scoring import tokenize_ahead as ahead_module

    pipe = scorer.pipeline
    spent = {"tokenize": 0.0, "tokenize_ahead": 0.0, "tokenize_wait": 0.0, "encode": 0.0, "match": 0.0}
    originals = (pipe.tokenize, pipe.embedder.embed, pipeline_module.match_pairs, ahead_module.tokenized_blocks)

    def clocked(name, function):
        def wrapper(*args, **kwargs):
            start, matched = time.perf_counter(), spent["match"]
            try:
                return function(*args, **kwargs)
            finally:  # tokenizing on the background thread overlaps the caller's work: apart
                ahead = name == "tokenize" and threading.current_thread() is not threading.main_thread()
                # The matching runs inside the embedding step (`Embedder.embed(before_check=...)`): its own phase.
                inner = spent["match"] - matched if name == "encode" else 0.0
                spent["tokenize_ahead" if ahead else name] += time.perf_counter() - start - inner
        return wrapper

    def waited(*args, **kwargs):  # time in next(): the caller's own tokenizing (counted apart) and its waits
        blocks = originals[3](*args, **kwargs)
        try:
            while True:
                start, tokenized = time.perf_counter(), spent["tokenize"]
                try:
                    item = next(blocks)
                except StopIteration:
                    return
                finally:
                    spent["tokenize_wait"] += time.perf_counter() - start - (spent["tokenize"] - tokenized)
                yield item
        finally:
            blocks.close()

    pipe.tokenize = clocked("tokenize", originals[0])
    pipe.embedder.embed = clocked("encode", originals[1])
    pipeline_module.match_pairs = clocked("match", originals[2])
    ahead_module.tokenized_blocks = waited
    try:
        spent["total"] = timed(lambda: scorer.score(cands, refs))[0]
    finally:
        del pipe.tokenize, pipe.embedder.embed
        pipeline_module.match_pairs, ahead_module.tokenized_blocks = originals[2], originals[3]
    # Not tokenize_ahead (off the caller's thread).
    spent["other"] = spent["total"] - sum(spent[k] for k in ("tokenize", "tokenize_wait", "encode", "match"))
    return spent


def padding_copies(scorer: BERTScorer, cands: list[str], refs: list[str]) -> dict[str, Any]:
    """Device ops (copies, fills, concatenations, indexed writes: each a kernel launch on an
    accelerator, paid by the host) that the matching's padding issues in one call, by route:
    one copy per text (`matching.pad_by_copies`, the CPU's) and a few per batch
    (`matching.pad_by_index`, an accelerator's), counted here with torch's profiler; and whether
    both routes give the same scores bit for bit."""
    from bertscore.scoring import matching
    from bertscore.scoring import pipeline as pipeline_module

    counted, outputs = {}, {}
    pad_sequences, by_copies = pipeline_module.pad_sequences, matching.pad_by_copies
    for route in ("pad_by_copies", "pad_by_index"):
        ops = [0]

        def counting(*args: Any) -> Any:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
                out = pad_sequences(*args)
            ops[0] += sum(event.name in DEVICE_OPS for event in profile.events())
            return out

        matching.pad_by_copies, pipeline_module.pad_sequences = getattr(matching, route), counting
        try:
            outputs[route] = scorer.score(cands, refs)
        finally:
            matching.pad_by_copies, pipeline_module.pad_sequences = by_copies, pad_sequences
        counted[route] = ops[0]
    same = all(torch.equal(a, b) for a, b in zip(*outputs.values()))
    return {"pairs": len(cands), "ops": counted, "bit_identical": same}


def host_work(call: Any, device_work: list[tuple[Any, str]]) -> dict[str, float]:
    """The caller thread's CPU seconds in `call()`: in all, and inside the functions `device_work`
    names ((owner, attribute) pairs, wrapped for the call: what a device would compute)."""
    spent, depth = {"device": 0.0}, [0]
    originals = [(owner, name, getattr(owner, name)) for owner, name in device_work]

    def outermost(function: Any) -> Any:  # nested device work (a forward inside a wrapped call) counts once
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            start = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent["device"] += time.thread_time() - start
        return wrapper

    for owner, name, function in originals:
        setattr(owner, name, outermost(function))
    try:
        start = time.thread_time()
        call()
        spent["total"] = time.thread_time() - start
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)
    spent["host"] = spent["total"] - spent["device"]
    return spent


def device_work_of(ours: BERTScorer, official: Any) -> dict[str, list[tuple[Any, str]]]:
    """What a device would compute, per implementation (`host_work`): ours the encoder's forward, the
    embeddings' normalisation and padding and the matching; the official package's forward and its whole
    `greedy_cos_idf`, its padding included (which favours it)."""
    import bert_score.utils

    from bertscore.scoring import embed
    from bertscore.scoring import matching
    from bertscore.scoring import pipeline as pipeline_module

    return {
        "ours": [(ours.pipeline.model, "encode"), (embed, "normalize_with_norms"), (pipeline_module, "greedy_match"),
                 (pipeline_module, "greedy_match_tiled"), (matching, "pad_by_copies"), (matching, "pad_by_index")],
        "official": [(official._model, "forward"), (bert_score.utils, "greedy_cos_idf")],
    }


DEVICE_OPS = {"aten::copy_", "aten::fill_", "aten::zero_", "aten::cat", "aten::index_copy_", "aten::index_put_",
              "aten::nonzero"}


def sentence_cap(value: str) -> int | None:
    """--batch-size: a positive int, or "none" (the token budget alone)."""
    if value.lower() == "none":
        return None
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'none', got {value!r}")
    return int(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch CPU threads for both (default: torch's choice)")
    parser.add_argument("--batch-size", type=sentence_cap, default=64, metavar="N|none",
                        help="our sentence cap per encoder batch (default 64, ours and the official default; "
                             "none: the token budget alone, as batch_size=None)")
    parser.add_argument("--tokens-per-batch", type=int, metavar="T",
                        help="our token budget per encoder batch (default: the device's, 2048 on a CPU; "
                             "65536 with --batch-size none is a GPU's budget mode)")
    args, folder_out, info = begin(parser, argv, data=True)
    cands, refs, source = load_texts(args.data, args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        folder = random_bert(Path(tmp) / "near-free-bert", 32, 1, 2, 64)[0]
        ours = BERTScorer(model_type=str(folder), num_layers=1, device="cpu", cache_bytes=0,
                          batch_size=args.batch_size, max_tokens_per_batch=args.tokens_per_batch)
        official = official_scorer(folder, 1)
        ours.score(cands[:50], refs[:50]), official.score(cands[:50], refs[:50])  # warm-up (probe, threads)
        calls = {"official": lambda: official.score(cands, refs), "ours": lambda: ours.score(cands, refs)}
        rounds, _ = interleaved(calls, args.rounds, report=lambda round_, name, seconds, _: print(
            f"round {round_ + 1} {name}: {seconds:.3f} s", flush=True))
        best = {name: min(seconds) for name, seconds in rounds.items()}
        phases = min((phase_times(ours, cands, refs) for _ in range(args.rounds)), key=lambda p: p["total"])
        work = device_work_of(ours, official)
        host = {name: min((host_work(calls[name], work[name]) for _ in range(args.rounds)), key=lambda h: h["host"])
                for name in ("official", "ours")}
        host_us = {name: 1e6 * h["host"] / len(cands) for name, h in host.items()}
        padding = padding_copies(ours, cands[:2000], refs[:2000])
        check = min(300, len(cands))
        exact = official_scorer(folder, 1, batch_size=1)
        delta = max_delta(ours.score(cands[:check], refs[:check]), exact.score(cands[:check], refs[:check]))
    ahead = ours.pipeline.model.tokenizes_without_gil and tokenize_ahead.core_is_free(ours.device)
    rate = {name: len(cands) / seconds for name, seconds in best.items()}
    ratio = rate["ours"] / rate["official"]
    load = os.getloadavg()[0]
    parallel = os.environ.get("TOKENIZERS_PARALLELISM", "unset (the tokenizers library's default: parallel)")
    result = {"machine": info, "load_average_1min": load, "tokenizers_parallelism": parallel, "pairs": len(cands), "data": source, "rounds": args.rounds,
              "seconds": best, "pairs_per_second": rate, "ratio": ratio, "phases": phases, "tokenize_ahead": ahead,
              "max_abs_delta_vs_official_batch_size_1": delta, "delta_pairs": check,
              "batch_size": args.batch_size, "tokens_per_batch": ours.embedder.max_tokens_per_batch,
              "padding_device_ops": padding, "host_work_seconds": host, "host_us_per_pair": host_us}
    lines = [
        *header("Host-side speed: a near-free encoder, ours vs the official package", info),
        f"{len(cands)} pairs ({source}); a random 1-layer BERT, hidden 32, with the MiniLM WordPiece "
        f"tokenizer; CPU, float32; best of {args.rounds} alternating rounds. TOKENIZERS_PARALLELISM: {parallel}; "
        f"load average over the last minute at the end: {load:.1f} on {os.cpu_count()} logical CPUs (a shared "
        "machine: both sides ran under the same load, alternating).", "",
        *table(["implementation", "seconds", "pairs/s"],
               [["official bert-score 0.3.13 (batch_size=64)", f"{best['official']:.3f}", f"{rate['official']:,.0f}"],
                [f"ours (batch_size={args.batch_size}, {ours.embedder.max_tokens_per_batch} tokens per encoder batch, "
                 "cache off)", f"{best['ours']:.3f}", f"{rate['ours']:,.0f}"]]), "",
        f"**Ours / official: {ratio:.2f}x the pairs/s.**", "",
        "Our call by phase (best round): " + ", ".join(
            f"{name.replace('_', ' ')} {phases[name]:.3f} s"
            for name in ("tokenize", "tokenize_wait", "encode", "match", "other", "total", "tokenize_ahead")
        ) + (" (tokenize ahead: on the background thread, overlapping the rest; a core is free for it here: torch "
             f"runs {torch.get_num_threads()} thread(s) on {os.cpu_count()} CPUs)" if ahead else
             f" (no core is free for tokenizing ahead: torch runs {torch.get_num_threads()} threads on "
             f"{os.cpu_count()} CPUs, so every block is tokenized on the caller's thread)"), "",
        "Host work per pair (the caller thread's CPU time outside the encoder's forward and the matching's "
        "tensor math, what a device would compute; best of the rounds): "
        f"official {host_us['official']:.1f} µs, **ours {host_us['ours']:.1f} µs** "
        f"({host_us['official'] / host_us['ours']:.1f}x less); ours in all {host['ours']['total']:.3f} s of CPU on the "
        f"caller's thread, {host['ours']['device']:.3f} s of it device work.", "",
        f"Max |delta| of P, R, F against the official package at batch_size=1 on the first {check} pairs: "
        f"{delta:.1e}.", "",
        f"Device ops (copies, fills, concatenations, indexed writes: each a kernel launch on an accelerator) that "
        f"the matching's padding issues in one call of {padding['pairs']} pairs: one copy per text (the CPU's route) "
        f"{padding['ops']['pad_by_copies']}, a few per batch (an accelerator's route) {padding['ops']['pad_by_index']}; "
        f"scores bit-identical between the routes: {padding['bit_identical']}.",
    ]
    # The budget mode (a GPU's way) has its own results file beside the default mode's.
    write_results(folder_out, "host_speed" if args.batch_size is not None else "host_speed_budget", result, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
