"""Peak memory (RSS) of scoring 5,000 vs 50,000 real pairs: ours vs the official package.

The model is a small RANDOM BertModel with MiniLM's hidden size (384; --layers layers, FFN
--ffn), built from a BertConfig with the MiniLM tokenizer of the embedded folder and saved to
a temporary folder: the hidden size sets the embedding memory, the small depth keeps the run
short. Pairs are drawn (seeded) from the 170k WMT17 to-English system outputs joined with
their references. Each measurement runs in a fresh subprocess, which reads only its pairs
and reports its own resident-set high-water mark (VmHWM, harness.peak_rss) before scoring
(model + data loaded) and after it (the peak of the whole process).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/memory.py [--sizes 5000,50000] [--official-sizes 5000,50000]

Ours runs `bertscore.score` (the drop-in function: cache off, work in chunks of pairs); the
official runs `bert_score.score`; both fp32 on CPU, batch_size=64, idf off.
Writes memory.md and memory.json to benchmarks/scratch/ (git-ignored), or
to benchmarks/results/ with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BERTSCORE_DATA", ROOT.parent / "shared" / "data"))

CHILD = r"""
import csv, json, sys
sys.path[:0] = [{root!r}, {benchmarks!r}]
import torch
torch.set_num_threads({threads})
from harness import official_score, peak_rss, timed
which, model_dir, pairs_file, layers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with open(pairs_file, newline="", encoding="utf-8") as handle:
    rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
cands, refs = [r[0] for r in rows], [r[1] for r in rows]
del rows
if which == "ours":
    import bertscore
    fn = lambda: bertscore.score(cands, refs, model_type=model_dir, num_layers=layers, batch_size=64, device="cpu")
else:
    fn = lambda: official_score(cands, refs, model_dir, layers, batch_size=64)
before = peak_rss()
seconds, (P, R, F) = timed(fn)
print(json.dumps({{"rss_before_bytes": before, "peak_rss_bytes": peak_rss(), "seconds": seconds, "n": len(F),
                  "mean_f": float(F.mean())}}))
"""


def write_pairs(data: Path, n: int, path: Path, seed: int = 0) -> None:
    from harness import wmt17_sample

    chosen = wmt17_sample(data, n, seed)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        for cand, ref in zip(chosen.candidate, chosen.reference):
            writer.writerow([cand.replace("\t", " "), ref.replace("\t", " ")])


def main(argv: list[str] | None = None) -> int:
    from machine import add_output_options, output_folder

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000", help="pair counts for ours")
    parser.add_argument("--official-sizes", default="5000,50000", help="pair counts for the official package")
    parser.add_argument("--merge", action="store_true", help="add to the runs already in <out>/memory.json")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--ffn", type=int, default=384, help="FFN width (384 keeps the run short)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=900, help="seconds per measurement")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    add_output_options(parser)
    args = parser.parse_args(argv)
    args.out = output_folder(args)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    official_sizes = [int(x) for x in args.official_sizes.split(",") if x]
    from harness import random_bert, table
    from machine import machine_info, machine_line, write_results

    machine = machine_info(torch_threads=args.threads)  # each child sets these threads
    print(machine_line(machine), flush=True)
    runs = [("ours", n) for n in sizes] + [("official", n) for n in official_sizes]
    results = []
    with tempfile.TemporaryDirectory(prefix="bertscore-memory-") as tmp:
        tmp_path = Path(tmp)
        model_dir = random_bert(tmp_path / "model", 384, args.layers, 12, args.ffn)[0]
        script = tmp_path / "child.py"
        script.write_text(CHILD.format(root=str(ROOT), benchmarks=str(ROOT / "benchmarks"), threads=args.threads))
        for n in sorted(set(sizes + official_sizes)):
            write_pairs(args.data, n, tmp_path / f"pairs_{n}.tsv")
        for which, n in runs:
            started = time.perf_counter()
            try:
                proc = subprocess.run(
                    [sys.executable, str(script), which, str(model_dir), str(tmp_path / f"pairs_{n}.tsv"), str(args.layers)],
                    capture_output=True, text=True, timeout=args.timeout,
                )
            except subprocess.TimeoutExpired:
                row = {"package": which, "pairs": n, "error": f"timed out after {args.timeout} s"}
            else:
                lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
                if proc.returncode != 0 or not lines:
                    row = {"package": which, "pairs": n, "error": proc.stderr[-2000:]}
                else:
                    row = {"package": which, "pairs": n, **json.loads(lines[-1])}
            row["wall_s"] = time.perf_counter() - started
            row["cpu_model"] = machine["cpu_model"]
            results.append(row)
            print(json.dumps(row), flush=True)

    commands = []
    if args.merge and (args.out / "memory.json").is_file():
        previous = json.loads((args.out / "memory.json").read_text())
        new_keys = {(r["package"], r["pairs"]) for r in results}
        results = [r for r in previous["runs"] if (r["package"], r["pairs"]) not in new_keys] + results
        commands = previous.get("commands", [previous.get("command")])
        for r in results:
            sizes_of = {"ours": sizes, "official": official_sizes}.get(r["package"])
            if sizes_of is None:
                continue
            if r["pairs"] not in sizes_of:
                sizes_of.append(r["pairs"])

    def peak(which: str, n: int) -> float | None:
        for row in results:
            if row["package"] == which and row["pairs"] == n and "peak_rss_bytes" in row:
                return row["peak_rss_bytes"]
        return None

    growth = {}
    for which, ns in (("ours", sizes), ("official", official_sizes)):
        if len(ns) >= 2 and peak(which, min(ns)) and peak(which, max(ns)):
            growth[which] = {"small": min(ns), "large": max(ns), "ratio": peak(which, max(ns)) / peak(which, min(ns))}
    target = None
    if "ours" in growth:
        target = {"target": f"ours at {growth['ours']['large']} <= 1.25x ours at {growth['ours']['small']}",
                  "measured": round(growth["ours"]["ratio"], 3), "met": growth["ours"]["ratio"] <= 1.25}
    command = (f"HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/memory.py --sizes '{args.sizes}' "
               f"--official-sizes '{args.official_sizes}' "
               f"--layers {args.layers} --ffn {args.ffn}" + (" --merge" if args.merge else ""))
    commands = list(dict.fromkeys([c for c in commands if c] + [command]))
    import torch
    import transformers

    result = {
        "command": command,
        "commands": commands,
        "model": f"random BertModel: hidden 384, {args.layers} layers, 12 heads, FFN {args.ffn}, MiniLM tokenizer",
        "runs": results, "growth": growth, "target": target,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "machine": machine,
    }
    lines = [
        "# Peak memory: 5,000 vs 50,000 pairs",
        "",
        "Reproduce (in order): " + "; ".join(f"`{c}`" for c in commands),
        "",
        f"Model: {result['model']} (random weights, fp32, CPU). Pairs: seeded draw from the WMT17 to-English "
        "system outputs joined with their references. Each row is a fresh subprocess; RSS: its own "
        "high-water mark (VmHWM). 'before' = after imports, model-independent setup and reading "
        "the pairs; 'peak' = the whole process's high-water mark. Ours = `bertscore.score`, official = "
        "`bert_score.score`, both batch_size=64, idf off.",
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
    ]
    for which, g in growth.items():
        lines.append(f"- {which}: peak at {g['large']} pairs = **{g['ratio']:.2f}x** the peak at {g['small']} pairs")
    if target:
        lines.append(f"- target ({target['target']}): {'met' if target['met'] else 'MISSED'} ({target['measured']}x)")
    lines.append("")
    write_results(args.out, "memory", result, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
