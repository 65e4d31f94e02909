"""The Ray Data door on a local Ray cluster: Parquet to Parquet against one process's `score()`.

--pairs real WMT17 to-English pairs (../shared/data) as Parquet files, scored in one process (the job
score_table does) and by `bertscore.ray_data.score_table` (2 actors streamed and grouped by reference,
--repeats times, then 1 actor): seconds, exactness row by row, each actor's peak memory and texts
embedded. With --scale K, 2 actors also score the pairs K times over (cache off, at --scale-layers: a
peak is the longest batch's, whatever the layer): does an actor's peak grow with the corpus? The report
(ray_data.md) says how the runs interleave; docs/scaling-out.md quotes it.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ray_data.py [--pairs 20000] [--layers N] [--repeats 2]
        [--scale 10 --scale-layers 1]  # ray_data.md, .json
"""

import argparse
import collections
import os
import tempfile
from pathlib import Path
from typing import Any

import harness
from harness import peak_rss, table, timed, wmt17_joined
from machine import begin, header, machine_info, write_results

from bertscore import ray_data

FILE_ROWS = 2000


class MeasuredScoreBatches(ray_data.ScoreBatches):
    """The door's stage, plus on every row the actor's pid, its peak resident memory so far and the texts it
    has embedded so far (its cache's misses: a text its cache held is not embedded again)."""

    def __call__(self, batch):
        import pyarrow

        out = super().__call__(batch)
        rows, peak_mib = out.num_rows, peak_rss() / 2**20
        out = out.append_column("actor_pid", pyarrow.array([os.getpid()] * rows, pyarrow.int64()))
        out = out.append_column("actor_embedded", pyarrow.array([self.scorer.cache.misses] * rows, pyarrow.int64()))
        return out.append_column("actor_peak_mib", pyarrow.array([peak_mib] * rows, pyarrow.float64()))


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
            pairs: int, batch_size: int, group_references: bool = False) -> dict[str, Any]:
    """score_table with `actors` actors (2 on 2 CPUs: half a CPU each, a quarter for each read and write
    task), checked row by row against one process's `expected` (joined by id modulo its length)."""
    import pyarrow.parquet as pq
    import torch

    seconds, _ = timed(lambda: ray_data.score_table(
        source, output, options, id_column="id", actors=actors, io_cpus=0.25, num_cpus=min(1, (cpus - 1) / actors),
        batch_size=batch_size, scorer_class=MeasuredScoreBatches, group_references=group_references))
    scored = pq.read_table(output, columns=["id", "bertscore_precision", "bertscore_recall", "bertscore_f1",
                                           "actor_pid", "actor_peak_mib", "actor_embedded"]).to_pydict()
    ids = torch.tensor(scored["id"])
    values = torch.tensor([scored[f"bertscore_{n}"] for n in ("precision", "recall", "f1")]).T
    peaks: dict[int, float] = {}
    embedded: dict[int, int] = {}
    for pid, peak, texts in zip(scored["actor_pid"], scored["actor_peak_mib"], scored["actor_embedded"]):
        peaks[pid], embedded[pid] = max(peak, peaks.get(pid, 0.0)), max(texts, embedded.get(pid, 0))
    once = bool(len(ids) == pairs and torch.equal(torch.sort(ids).values, torch.arange(pairs)))
    run = {"actors": actors, "grouped": group_references, "layers": options.get("num_layers"),
           "cache": options.get("cache_bytes") != 0, "pairs": pairs, "seconds": round(seconds, 2),
           "pairs_per_s": round(pairs / seconds, 1), "every_id_once": once,
           "max_abs_diff": float((values - expected[ids % len(expected)]).abs().max()),
           "actor_peak_mib": sorted(round(p, 1) for p in peaks.values()),
           "rows_per_actor": sorted(collections.Counter(scored["actor_pid"]).values()),
           # with the cache off nothing is looked up, so nothing is counted
           "texts_embedded": sum(embedded.values()) if options.get("cache_bytes") != 0 else None}
    print(run, flush=True)
    return run


def per_actor(run: dict[str, Any]) -> list[str]:
    """A run's rows per actor and actor peaks, as two table cells."""
    return [", ".join(map(str, run["rows_per_actor"])), ", ".join(map(str, run["actor_peak_mib"]))]


def one_process(options: dict[str, Any], candidates: list[str], refs: list[str]) -> tuple[Any, int]:
    """One `score()` call over every pair in this process: (the scores [N, 3], the layer)."""
    import torch

    from bertscore import BERTScorer

    scorer = BERTScorer(**options)
    return torch.stack(scorer.score(candidates, refs), 1), scorer.num_layers


def one_process_job(source: Path, output: Path, options: dict[str, Any]) -> dict[str, float]:
    """The job score_table does, in this process: load the model, read the Parquet folder, one `score()`
    call, write the rows with their scores as Parquet. Seconds of the whole job and of the `score()` call."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bertscore import BERTScorer, release_models

    release_models()  # the model loads from its files, as in a new process (and in each actor)

    def job() -> tuple[float, Any]:
        scorer, rows = BERTScorer(**options), pq.read_table(source)
        score_s, scores = timed(lambda: scorer.score(rows.column("candidate").to_pylist(),
                                                     rows.column("reference").to_pylist()))
        for name, values in zip(("precision", "recall", "f1"), scores):
            rows = rows.append_column(f"bertscore_{name}", pa.array(values.numpy(), pa.float32()))
        output.mkdir()
        pq.write_table(rows, output / "scored.parquet")
        return score_s, scorer

    job_s, (score_s, scorer) = timed(job)
    done = {"job_s": round(job_s, 2), "score_s": round(score_s, 2), "texts_embedded": scorer.cache.misses}
    print("one process:", done, flush=True)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--layers", type=int, default=None, help="the encoder cut at this layer (default: MiniLM's)")
    parser.add_argument("--cpus", type=int, default=2, help="ray.init(num_cpus=...) and one process's torch threads")
    parser.add_argument("--scale", type=int, default=0, help="also score the pairs repeated K times (memory)")
    parser.add_argument("--scale-layers", type=int, default=None, help="the layer of the --scale runs (default: --layers)")
    parser.add_argument("--batch-size", type=int, default=ray_data.DEFAULT_BATCH_SIZE, help="rows per batch an actor scores")
    parser.add_argument("--repeats", type=int, default=2,
                        help="rounds of one process, then 2 actors streamed and grouped")
    args, folder, _ = begin(parser, argv, data=True)
    import ray
    import torch

    ray.cloudpickle.register_pickle_by_value(harness)  # the actors read peak_rss without benchmarks/ on their path

    from bertscore.sources import EMBEDDED_MODEL_NAME

    options = {"model_type": EMBEDDED_MODEL_NAME, "device": "cpu",
               **({"num_layers": args.layers} if args.layers else {})}
    # no embedding cache: the repeated pairs of --scale are embedded again, as new pairs would be
    scale_options = dict(options, cache_bytes=0, **({"num_layers": args.scale_layers} if args.scale_layers else {}))
    joined = wmt17_joined(args.data, drop_empty=False).head(args.pairs)  # file order, blank ones kept
    candidates, refs = joined.candidate.tolist(), joined.reference.tolist()
    torch.set_num_threads(args.cpus)
    runs, jobs = [], []
    with tempfile.TemporaryDirectory() as scratch:
        base = write_parquet(Path(scratch) / "pairs", candidates, refs, 1)
        expected, layer = one_process(options, candidates, refs)  # the numbers to match (and a warm-up)
        for repeat in range(args.repeats):
            # the job in one process (Ray not running) before each repeat and after the last: each repeat's Ray
            # runs are compared with the mean of the jobs on either side (a shared machine's load drifts). Then
            # 2 actors streamed and grouped (Ray started before the clock, as on a cluster that runs already),
            # in turns first: neither always runs later in a repeat
            jobs.append(one_process_job(base, Path(scratch) / f"one-{repeat}", options))
            for grouped in (False, True) if repeat % 2 == 0 else (True, False):
                ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
                runs.append({**run_ray(base, Path(scratch) / f"out-2-{repeat}-{grouped}", options, 2, args.cpus,
                                       expected, args.pairs, args.batch_size, grouped), "repeat": repeat})
                ray.shutdown()
        jobs.append(one_process_job(base, Path(scratch) / "one-last", options))
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        runs.append(run_ray(base, Path(scratch) / "out-1", options, 1, args.cpus, expected, args.pairs,
                            args.batch_size))
        if args.scale > 1:
            scale_expected = one_process(scale_options, candidates, refs)[0]
            runs.append(run_ray(base, Path(scratch) / "out-scale-1", scale_options, 2, args.cpus, scale_expected,
                                args.pairs, args.batch_size))
            big = write_parquet(Path(scratch) / "big", candidates, refs, args.scale)
            runs.append(run_ray(big, Path(scratch) / "out-big", scale_options, 2, args.cpus, scale_expected,
                                args.pairs * args.scale, args.batch_size))
        ray.shutdown()
    info, load = machine_info(torch_threads=args.cpus), os.getloadavg()
    result = {"machine": info, "load_average_at_end": load, "options": {k: str(v) for k, v in options.items()},
              "one_process_jobs": jobs, "ray": runs}
    ratios: dict[bool, list[float]] = {False: [], True: []}
    repeats, rows = [run for run in runs if "repeat" in run], []
    for index, job in enumerate(jobs):
        rows.append([index + 1 if index < args.repeats else "after", f"one process (of which `score()`: "
                     f"{job['score_s']} s)", job["job_s"], "", f"{job['texts_embedded']:,}", "", "", "", ""])
        for run in (run for run in repeats if run["repeat"] == index):
            one_process_s = (job["job_s"] + jobs[index + 1]["job_s"]) / 2
            ratios[run["grouped"]].append(one_process_s / run["seconds"])
            way = "2 actors, grouped by reference" if run["grouped"] else "2 actors, streamed"
            rows.append([index + 1, way, run["seconds"], f"**{ratios[run['grouped']][-1]:.2f}x**",
                         f"{run['texts_embedded']:,}", run["every_id_once"], f"{run['max_abs_diff']:.1e}",
                         *per_actor(run)])
    result["two_actor_ratios"], result["grouped_ratios"] = ratios[False], ratios[True]
    lines = [
        *header("The Ray Data door: Parquet to Parquet on a local Ray cluster vs one process", info),
        f"{args.pairs:,} real WMT17 to-English pairs (system outputs and their references, {len(set(refs)):,} distinct "
        f"references), the embedded MiniLM (layer {layer}), CPU, ray.init(num_cpus={args.cpus}). One process: the "
        f"same job as score_table (load the model, read the Parquet files, one `score()` call, write Parquet), torch "
        f"on {args.cpus} threads, Ray not running. Actors: half a CPU each with 2 (torch on one thread each), "
        f"batches of {args.batch_size:,} rows; Ray started before the clock. Each repeat runs one process, then 2 "
        f"actors on the input as it streams and 2 actors with `group_references=True` (the rows sorted by a hash "
        f"of their references, so each reference's rows are one actor's), in turns first; one process runs once "
        f"more after the last repeat. A Ray run's ratio is the pairs/s it reaches against the mean of the "
        f"one-process jobs before and after its repeat. A shared machine (load average at the end {load[0]:.1f}, "
        f"{load[1]:.1f}, {load[2]:.1f}): compare figures within a repeat.", "",
        *table(["repeat", "way", "seconds", "pairs/s against one process", "texts embedded", "every id once",
                "max abs diff", "rows per actor", "actor peak MiB"], rows),
        "", "Other runs (after the repeats, Ray running):", "",
        *table(["run", "layer", "embedding cache", "pairs", "seconds", "pairs/s", "every id once", "max abs diff",
                "rows per actor", "actor peak MiB"],
               [[f"score_table, {run['actors']} actor(s)", run["layers"] or layer, "on" if run["cache"] else "off",
                 f"{run['pairs']:,}", run["seconds"], run["pairs_per_s"], run["every_id_once"],
                 f"{run['max_abs_diff']:.1e}", *per_actor(run)] for run in runs[len(repeats):]]),
    ]
    if args.scale > 1:
        small, big_run = runs[-2], runs[-1]
        growth = max(big_run["actor_peak_mib"]) / max(small["actor_peak_mib"])
        lines += ["", f"Largest actor peak at {big_run['pairs']:,} pairs / at {small['pairs']:,}: **{growth:.3f}x**."]
        result["peak_growth"] = growth
    command = f"--pairs {args.pairs}" + (f" --layers {args.layers}" if args.layers else "")
    command += f" --batch-size {args.batch_size}" if args.batch_size != ray_data.DEFAULT_BATCH_SIZE else ""
    command += f" --repeats {args.repeats}" if args.repeats != 2 else ""
    if args.scale > 1:
        command += f" --scale {args.scale}" + (f" --scale-layers {args.scale_layers}" if args.scale_layers else "")
    lines += ["", f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/ray_data.py {command} --update-results`. "
              "Actor peaks are each actor's own VmHWM (the whole process: Python, torch, the model)."]
    write_results(folder, "ray_data", result, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
