"""Peak memory of score() against corpus size and longest text, on the CPU, with where it comes from.

The GPU check's memory section measures peak GPU memory at 2,000 and 20,000 pairs; this script
answers, without a GPU, what sets that peak (harness.PeakMemory(kind="tensors"): the live tensor
storages of our call, and what was alive at the peak). The model is the GPU check's large random BERT
with `--layers` layers (one layer's activations are alive at a time, so one layer gives the same
peak as 24), in float32 (embeddings are float32 in every dtype; the encoder's own activations are
twice their bf16 size), with the GPU's batching, on the carried WMT17 pairs (`gpu_check.py
--prepare`): the first `--small`, the `--small` of the first `--large` with the longest texts, all.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/peak_by_length.py [--sets first,longest,all]

Writes peak_by_length.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

from harness import PeakMemory, random_bert, table, timed
from machine import ROOT, begin, header, write_results

from bertscore import BERTScorer

CARRY = ROOT / ".gpu_carry"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=20000)
    parser.add_argument("--sets", default="first,longest,all")
    args, out, info = begin(parser, argv, threads=1, serial_tokenizers=True)
    pairs_file = CARRY / "wmt17_pairs.jsonl.gz"
    if not pairs_file.is_file():
        sys.exit(f"error: {pairs_file} is missing: run `python benchmarks/gpu_check.py --prepare` first")
    with gzip.open(pairs_file, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle][: args.large]
    cands, refs = [r["candidate"] for r in rows], [r["reference"] for r in rows]
    rows_out, details = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = random_bert(Path(tmp) / "bert", 1024, args.layers, 16, 4096, CARRY / "tokenizer")[0]
        scorer = BERTScorer(model_type=str(folder), num_layers=args.layers, device="cpu", cache_bytes=0,
                            max_tokens_per_batch=65536, batch_size=64)
        tokens = [max(len(c), len(r)) for c, r in zip(scorer.model.tokenize(cands), scorer.model.tokenize(refs))]
        longest = sorted(sorted(range(len(cands)), key=lambda i: -tokens[i])[: args.small])
        sets = {"first": list(range(args.small)), "longest": longest, "all": list(range(len(cands)))}
        scorer.score(cands[:8], refs[:8])
        for name in args.sets.split(","):
            chosen = sets[name]
            with PeakMemory(kind="tensors") as tracker:
                seconds, _ = timed(lambda: scorer.score([cands[i] for i in chosen], [refs[i] for i in chosen]))
            groups: dict[tuple[str, str], list[int]] = {}
            for size, what, where in tracker.at_peak:  # by operator and line: a chunk's many embeddings as one
                groups.setdefault((what.split(" ")[0], where), []).append(size)
            top = [{"mib": round(sum(sizes) / 2**20, 1), "tensors": len(sizes), "largest": largest[1],
                    "made_at": where}
                   for (op, where), sizes in sorted(groups.items(), key=lambda kv: -sum(kv[1]))[:6]
                   for largest in [max((e for e in tracker.at_peak if e[1].split(" ")[0] == op and e[2] == where))]]
            details[name] = top
            rows_out.append({"set": name, "pairs": len(chosen), "longest_tokens": max(tokens[i] for i in chosen),
                             "peak_mib": round(tracker.peak / 2**20, 1), "seconds": round(seconds, 1)})
            print(f"{name}: {rows_out[-1]}", flush=True)
    command = f"HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/peak_by_length.py --sets {args.sets}"
    lines = [*header("Peak memory of score() by corpus size and longest text (CPU, live tensor storages)", info, command),
             f"Random BERT, hidden 1024, 16 heads, FFN 4096, {args.layers} layer(s); float32, cache off, batch_size=64, "
             f"token budget 65,536; the first {args.large} carried WMT17 pairs (first: the first {args.small}; longest: "
             f"the {args.small} of them with the longest texts; all: every one).", "",
             *table(["set", "pairs", "longest text (tokens)", "peak live MiB", "seconds"],
                    [[r["set"], r["pairs"], r["longest_tokens"], r["peak_mib"], r["seconds"]] for r in rows_out])]
    for name, top in details.items():
        lines += ["", f"Alive at the peak of '{name}' (largest first):", ""]
        lines += [f"- {t['mib']} MiB in {t['tensors']} tensor(s), largest {t['largest']}, made at {t['made_at']}"
                  for t in top]
    write_results(out, "peak_by_length", {"command": command, "machine": info, "sets": rows_out, "at_peak": details},
                  lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
