"""The Ray Data door on a local Ray cluster: Parquet to Parquet against one process's `score()`.

--pairs real WMT17 to-English pairs (system outputs with their references, ../shared/data), written
as Parquet files of 2,000 rows, are scored (the embedded MiniLM at --layers) by one process
(`score()`, torch on every core), then by `bertscore.ray_data.score_table` with 1 and 2 actors on
`ray.init(num_cpus=CPUS)`. Recorded: pairs/s of each (side by side, one run), the largest difference
from one process's numbers row by row (joined by id), every id present once, and each actor's peak
resident memory (ru_maxrss, read inside the actor) and how many actors scored rows. The scorers keep
their default embedding cache (WMT17's references repeat: one `score()` call embeds each distinct
text once, an actor's cache spares it across batches). With --scale K, 2 actors also score the pairs
K times over (repeated with new ids) beside the same pairs once, with the cache off (the repeats
are embedded again, as new pairs would be) and at --scale-layers (a shorter encoder to fit the time:
an actor's peak is its longest batch's, whatever the layer), to see whether an actor's peak grows
with the corpus.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ray_data.py [--pairs 20000] [--layers N] [--scale 10 --scale-layers 1]

Writes ray_data.md and ray_data.json to benchmarks/scratch/ (git-ignored), or to benchmarks/results/
with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import add_output_options, machine_info, machine_line, output_folder, write_results  # noqa: E402
from shared_data import DEFAULT_DATA, missing_data  # noqa: E402

from bertscore import ray_data  # noqa: E402

FILE_ROWS = 2000


class MeasuredScoreBatches(ray_data.ScoreBatches):
    """The door's stage, plus the actor's pid and peak resident memory so far on every row."""

    def __call__(self, batch):
        import pyarrow

        out = super().__call__(batch)
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out = out.append_column("actor_pid", pyarrow.array([os.getpid()] * out.num_rows, pyarrow.int64()))
        return out.append_column("actor_peak_mib", pyarrow.array([peak_mib] * out.num_rows, pyarrow.float64()))


def read_pairs(data: Path, pairs: int) -> tuple[list[str], list[str]]:
    folder = data / "wmt17" / "syslevel"
    outputs, references = folder / "wmt17_to_en_system_outputs.tsv.gz", folder / "wmt17_to_en_references.tsv.gz"
    if not outputs.is_file():
        raise SystemExit(missing_data(str(outputs)))
    with gzip.open(references, "rt", encoding="utf-8", newline="") as handle:
        reference_of = {(r["lp"], r["sid"]): r["reference"] for r in csv.DictReader(handle, delimiter="\t",
                                                                                  quoting=csv.QUOTE_NONE)}
    candidates, refs = [], []
    with gzip.open(outputs, "rt", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            candidates.append(row["candidate"])
            refs.append(reference_of[(row["lp"], row["sid"])])
            if len(candidates) == pairs:
                break
    return candidates, refs


def write_parquet(folder: Path, candidates: list[str], refs: list[str], repeat: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    n = len(candidates)
    for copy in range(repeat):
        for start in range(0, n, FILE_ROWS):
            ids = list(range(copy * n + start, copy * n + min(start + FILE_ROWS, n)))
            pq.write_table(pa.table({"id": ids, "candidate": candidates[start:start + FILE_ROWS],
                                     "reference": refs[start:start + FILE_ROWS]}), folder / f"{ids[0]:09d}.parquet")
    return folder


def run_ray(source: Path, output: Path, options: dict[str, Any], actors: int, cpus: int, expected: Any,
            pairs: int, batch_size: int) -> dict[str, Any]:
    """score_table with `actors` actors (2 on 2 CPUs: half a CPU each, a quarter for each read and write
    task), checked row by row against one process's `expected` (joined by id modulo its length)."""
    import pyarrow.parquet as pq
    import torch

    started = time.perf_counter()
    ray_data.score_table(source, output, options, id_column="id", actors=actors, io_cpus=0.25,
                         num_cpus=min(1, (cpus - 1) / actors), batch_size=batch_size, scorer_class=MeasuredScoreBatches)
    seconds = time.perf_counter() - started
    table = pq.read_table(output, columns=["id", "bertscore_precision", "bertscore_recall", "bertscore_f1",
                                           "actor_pid", "actor_peak_mib"]).to_pydict()
    ids = torch.tensor(table["id"])
    values = torch.tensor([table[f"bertscore_{n}"] for n in ("precision", "recall", "f1")]).T
    peaks: dict[int, float] = {}
    rows: dict[int, int] = {}
    for pid, peak in zip(table["actor_pid"], table["actor_peak_mib"]):
        peaks[pid] = max(peak, peaks.get(pid, 0.0))
        rows[pid] = rows.get(pid, 0) + 1
    once = bool(len(ids) == pairs and torch.equal(torch.sort(ids).values, torch.arange(pairs)))
    n = len(expected)
    return {"actors": actors, "layers": options.get("num_layers"), "cache": options.get("cache_bytes") != 0, "pairs": pairs, "seconds": round(seconds, 2),
            "pairs_per_s": round(pairs / seconds, 1),
            "every_id_once": once, "max_abs_diff": float((values - expected[ids % n]).abs().max()),
            "actor_peak_mib": sorted(round(p, 1) for p in peaks.values()), "rows_per_actor": sorted(rows.values())}


def one_process(options: dict[str, Any], candidates: list[str], refs: list[str]) -> tuple[Any, float, int]:
    """One `score()` call over every pair in this process: (the scores [N, 3], seconds, the layer)."""
    import torch

    from bertscore import BERTScorer

    scorer = BERTScorer(**options)
    started = time.perf_counter()
    expected = torch.stack(scorer.score(candidates, refs), 1)
    return expected, time.perf_counter() - started, scorer.num_layers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--layers", type=int, default=None, help="the encoder cut at this layer (default: MiniLM's)")
    parser.add_argument("--cpus", type=int, default=2, help="ray.init(num_cpus=...) and one process's torch threads")
    parser.add_argument("--scale", type=int, default=0, help="also score the pairs repeated K times (memory)")
    parser.add_argument("--scale-layers", type=int, default=None, help="the layer of the --scale runs (default: --layers)")
    parser.add_argument("--batch-size", type=int, default=ray_data.DEFAULT_BATCH_SIZE, help="rows per batch an actor scores")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    add_output_options(parser)
    args = parser.parse_args(argv)
    folder = output_folder(args)
    import ray
    import torch

    from bertscore.sources import EMBEDDED_MODEL_NAME

    options: dict[str, Any] = {"model_type": EMBEDDED_MODEL_NAME, "device": "cpu"}
    if args.layers:
        options["num_layers"] = args.layers
    # no embedding cache: the repeated pairs of --scale are embedded again, as new pairs would be
    scale_options = dict(options, cache_bytes=0)
    if args.scale_layers:
        scale_options["num_layers"] = args.scale_layers
    candidates, refs = read_pairs(args.data, args.pairs)
    torch.set_num_threads(args.cpus)
    expected, one_process_s, layer = one_process(options, candidates, refs)
    print(f"one process: {args.pairs / one_process_s:.1f} pairs/s", flush=True)
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        base = write_parquet(Path(scratch) / "pairs", candidates, refs, 1)
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        for actors in (1, 2):
            runs.append(run_ray(base, Path(scratch) / f"out-{actors}", options, actors, args.cpus, expected, args.pairs,
                                args.batch_size))
            print(runs[-1], flush=True)
        if args.scale > 1:
            scale_expected = one_process(scale_options, candidates, refs)[0]
            runs.append(run_ray(base, Path(scratch) / "out-scale-1", scale_options, 2, args.cpus, scale_expected,
                                args.pairs, args.batch_size))
            print(runs[-1], flush=True)
            big = write_parquet(Path(scratch) / "big", candidates, refs, args.scale)
            runs.append(run_ray(big, Path(scratch) / "out-big", scale_options, 2, args.cpus, scale_expected,
                                args.pairs * args.scale, args.batch_size))
            print(runs[-1], flush=True)
        ray.shutdown()
    info = machine_info(torch_threads=args.cpus)
    load = os.getloadavg()
    one = {"pairs": args.pairs, "layers": layer, "seconds": round(one_process_s, 2),
           "pairs_per_s": round(args.pairs / one_process_s, 1)}
    result = {"machine": info, "load_average_at_end": load, "options": {k: str(v) for k, v in options.items()},
              "one_process": one, "ray": runs}
    lines = [
        "# The Ray Data door: Parquet to Parquet on a local Ray cluster vs one process", "",
        machine_line(info), "",
        f"{args.pairs:,} real WMT17 to-English pairs (system outputs and their references), the embedded MiniLM, CPU, "
        f"ray.init(num_cpus={args.cpus}); one process: torch on {args.cpus} threads; actors: half a CPU each with 2, batches of "
        f"{args.batch_size} rows. "
        f"A shared machine (load average at the end {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}): figures are "
        "ratios of one run.", "",
        "| run | layer | embedding cache | pairs | seconds | pairs/s | vs one process | every id once | max abs diff "
        "| rows per actor | actor peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| one process `score()` | {layer} | on | {args.pairs:,} | {one['seconds']} | {one['pairs_per_s']} | 1.00x | - | - "
        "| - | - |",
    ]
    for run in runs:
        same_settings = run["layers"] == options.get("num_layers") and run["cache"]
        ratio = f"{run['pairs_per_s'] / one['pairs_per_s']:.2f}x" if same_settings else "(other settings)"
        lines.append(f"| score_table, {run['actors']} actor(s) | {run['layers'] or layer} | "
                     f"{'on' if run['cache'] else 'off'} | {run['pairs']:,} | "
                     f"{run['seconds']} | {run['pairs_per_s']} | {ratio} | {run['every_id_once']} | "
                     f"{run['max_abs_diff']:.1e} | {', '.join(map(str, run['rows_per_actor']))} | "
                     f"{', '.join(map(str, run['actor_peak_mib']))} |")
    if args.scale > 1:
        small, big_run = runs[-2], runs[-1]
        growth = max(big_run["actor_peak_mib"]) / max(small["actor_peak_mib"])
        lines += ["", f"Largest actor peak at {big_run['pairs']:,} pairs / at {small['pairs']:,}: **{growth:.3f}x**."]
        result["peak_growth"] = growth
    command = f"--pairs {args.pairs}" + (f" --layers {args.layers}" if args.layers else "")
    command += f" --batch-size {args.batch_size}" if args.batch_size != ray_data.DEFAULT_BATCH_SIZE else ""
    if args.scale > 1:
        command += f" --scale {args.scale}" + (f" --scale-layers {args.scale_layers}" if args.scale_layers else "")
    lines += ["", f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ray_data.py {command} --update-results`. "
              "Actor peaks are each actor's ru_maxrss (the whole process: Python, torch, the model)."]
    write_results(folder, "ray_data", result, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
