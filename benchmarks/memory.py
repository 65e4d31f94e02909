"""Peak memory (RSS) of scoring 5,000 vs 50,000 real pairs: ours (`bertscore.score`) vs the official
package (`bert_score.score`), each measurement in a fresh subprocess that reads only its pairs
(`measure`: harness.PeakMemory around the scoring call; the report says what each figure is). The
model is a small RANDOM BertModel of MiniLM's hidden size (384; --layers, --ffn): the hidden size sets
the embedding memory, the small depth keeps the run short. gpu_check.py runs `measure` on the GPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/memory.py [--sizes 5000,50000] [--official-sizes 5000,50000]
        [--device cpu]

Writes memory.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from harness import PeakMemory, measured, random_bert, json_child, table

CHILD = r"""
import csv, json
from harness import official_score
from memory import measure
which, model_dir, pairs_file, layers, device = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with open(pairs_file, newline="", encoding="utf-8") as handle:
    rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
pairs = ([r[0] for r in rows], [r[1] for r in rows])
del rows
if which == "ours":
    import bertscore
    fn = lambda c, r: bertscore.score(c, r, model_type=model_dir, num_layers=layers, batch_size=64, device=device)
else:
    fn = lambda c, r: official_score(c, r, model_dir, layers, batch_size=64, device=device)
print(json.dumps(measure(fn, {len(pairs[0]): pairs}, device)[0]))
"""


def measure(score: Callable[[list[str], list[Any]], Any], sets: dict[Any, tuple[list[str], list[Any]]],
            device: str = "cpu") -> list[dict[str, Any]]:
    """Each set of pairs scored by `score(cands, refs)`, timed and probed on `device` (harness.measured),
    the host's resident set probed around it too: per set {set, n, seconds, rss_before_bytes (held at
    its start), peak_rss_bytes (the peak inside it; on CUDA: the allocator's), host_peak_above_bytes,
    mean_f}. memory.py runs one set per fresh process; gpu_check.py several in one."""
    rows = []
    for label, (cands, refs) in sets.items():
        with PeakMemory("cpu") as host:
            seconds, _, memory, (_, _, f1) = measured(lambda: score(cands, refs), device)
        rows.append({"set": label, "n": len(f1), "seconds": seconds, "rss_before_bytes": memory.before,
                     "peak_rss_bytes": memory.peak, "host_peak_above_bytes": host.above, "mean_f": float(f1.mean())})
    return rows


def write_pairs(data: Path, n: int, path: Path, seed: int = 0) -> None:
    from harness import wmt17_sample

    chosen = wmt17_sample(data, n, seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        for cand, ref in zip(chosen.candidate, chosen.reference):
            writer.writerow([cand.replace("\t", " "), ref.replace("\t", " ")])


def main(argv: list[str] | None = None) -> int:
    from machine import begin, command, header, machine_line, write_results  # here: the children import this module

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000", help="pair counts for ours")
    parser.add_argument("--official-sizes", default="5000,50000", help="pair counts for the official package")
    parser.add_argument("--merge", action="store_true", help="add to the runs already in <out>/memory.json")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ffn", type=int, default=384, help="FFN width (384 keeps the run short)")
    parser.add_argument("--device", default="cpu", help="where both packages score (CPU: the committed results)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per measurement")
    args, _, machine = begin(parser, argv, threads=2, data=True, threads_elsewhere=True, serial_tokenizers=True)
    sizes = {"ours": [int(x) for x in args.sizes.split(",") if x],
             "official": [int(x) for x in args.official_sizes.split(",") if x]}
    results = []
    with tempfile.TemporaryDirectory(prefix="bertscore-memory-") as tmp:
        tmp_path = Path(tmp)
        model_dir = random_bert(tmp_path / "model", 384, args.layers, 12, args.ffn)[0]
        for n in sorted(set(sizes["ours"] + sizes["official"])):
            write_pairs(args.data, n, tmp_path / f"pairs_{n}.tsv")
        for which, n in [(which, n) for which, ns in sizes.items() for n in ns]:
            started = time.perf_counter()
            row = {"package": which, "pairs": n}
            try:
                row.update(json_child(CHILD, which, str(model_dir), str(tmp_path / f"pairs_{n}.tsv"), str(args.layers),
                                     args.device, threads=args.threads, timeout=args.timeout))
            except subprocess.TimeoutExpired:
                row["error"] = f"timed out after {args.timeout} s"
            except RuntimeError as error:
                row["error"] = str(error)
            results.append({**row, "wall_s": time.perf_counter() - started, "cpu_model": machine["cpu_model"]})
            print(json.dumps(results[-1]), flush=True)

    commands = []
    if args.merge and (args.out / "memory.json").is_file():
        previous = json.loads((args.out / "memory.json").read_text())
        new_keys = {(r["package"], r["pairs"]) for r in results}
        results = [r for r in previous["runs"] if (r["package"], r["pairs"]) not in new_keys] + results
        commands = previous.get("commands", [previous.get("command")])
        for r in results:
            if r["package"] in sizes and r["pairs"] not in sizes[r["package"]]:
                sizes[r["package"]].append(r["pairs"])
    peaks = {(r["package"], r["pairs"]): r["peak_rss_bytes"] for r in results if "peak_rss_bytes" in r}
    growth = {which: {"small": min(ns), "large": max(ns), "ratio": peaks[which, max(ns)] / peaks[which, min(ns)]}
              for which, ns in sizes.items() if len(ns) >= 2 and peaks.get((which, min(ns))) and peaks.get((which, max(ns)))}
    target = None
    if "ours" in growth:
        target = {"target": f"ours at {growth['ours']['large']} <= 1.25x ours at {growth['ours']['small']}",
                  "measured": round(growth["ours"]["ratio"], 3), "met": growth["ours"]["ratio"] <= 1.25}
    reproduce = command("memory.py", ["--sizes", f"'{args.sizes}'", "--official-sizes", f"'{args.official_sizes}'",
                                      "--layers", args.layers, "--ffn", args.ffn, *["--merge"] * args.merge,
                                      *["--device", args.device] * (args.device != "cpu")])
    commands = list(dict.fromkeys([c for c in commands if c] + [reproduce]))
    result = {
        "command": reproduce, "commands": commands,
        "model": f"random BertModel: hidden 384, {args.layers} layers, 12 heads, FFN {args.ffn}, MiniLM tokenizer",
        "runs": results, "growth": growth, "target": target,
        "versions": {name: machine[name] for name in ("torch", "transformers")}, "machine": machine,
    }
    lines = [
        *header("Peak memory: 5,000 vs 50,000 pairs", None),
        "Reproduce (in order): " + "; ".join(f"`{c}`" for c in commands),
        "",
        f"Model: {result['model']} (random weights, fp32, {'CPU' if args.device == 'cpu' else args.device}). Pairs: seeded draw from the WMT17 "
        "to-English system outputs joined with their references. Each row is a fresh subprocess; "
        "harness.PeakMemory around the scoring call: 'before' = the resident set at its start (after imports, "
        "model-independent setup and reading the pairs), 'peak' = the process's high-water mark (VmHWM) inside "
        "it. Ours = `bertscore.score`, official = `bert_score.score`, both batch_size=64, idf off.",
        "",
        machine_line(machine),
        *[f"(Rows of earlier --merge runs on another CPU: {cpu}.)" for cpu in
          sorted({r.get("cpu_model", "not recorded") for r in results} - {machine["cpu_model"]})],
        "",
        *table(["package", "pairs", "RSS before scoring (MiB)", "peak RSS (MiB)", "scoring time (s)"],
               [[row["package"], row["pairs"], f"{row['rss_before_bytes'] / 2**20:.0f}",
                 f"{row['peak_rss_bytes'] / 2**20:.0f}", f"{row['seconds']:.1f}"] if "peak_rss_bytes" in row else
                [row["package"], row["pairs"], "-", "-",
                 f"failed: {row['error'].splitlines()[-1] if row['error'] else '?'}"] for row in results]),
        "",
        *[f"- {which}: peak at {g['large']} pairs = **{g['ratio']:.2f}x** the peak at {g['small']} pairs"
          for which, g in growth.items()],
        *([f"- target ({target['target']}): {'met' if target['met'] else 'MISSED'} ({target['measured']}x)"] if target else []),
        "",
    ]
    write_results(args.out, "memory", result, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
