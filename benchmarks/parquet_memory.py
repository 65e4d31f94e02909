"""Peak memory (RSS) of the CLI scoring a Parquet file of 10,000 / 100,000 / 1,000,000 rows into a
Parquet file: `bertscore --input rows.parquet -f parquet -o scores.parquet`.

What is measured is the table path, not the encoder (a near-free random model); each input file is
ONE row group (a reader that buffers a whole column chunk would grow with it). The report
(parquet_memory.md) says how each size runs and is checked; docs/cli.md quotes it.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/parquet_memory.py [--sizes 10000,100000,1000000]
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from harness import FIXTURE, random_bert, run_child, table, wmt17_pairs
from machine import ROOT, begin, header, write_results


def row_texts(count: int, cands: list[str], refs: list[str]) -> tuple[list[str], list[str]]:
    """Row i: candidate i mod 300, reference (i + i // 300) mod 300: rows differ, texts repeat."""
    n = len(cands)
    return [cands[i % n] for i in range(count)], [refs[(i + i // n) % n] for i in range(count)]


def write_input(path: Path, count: int, cands: list[str], refs: list[str]) -> None:
    """`row_texts` as one Parquet row group (id, candidate, reference)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    candidates, references = row_texts(count, cands, refs)
    pq.write_table(pa.table({"id": pa.array(range(count), pa.int64()), "candidate": candidates,
                             "reference": references}), path, row_group_size=count)


def run_cli(input_path: Path, output: Path, model: Path, threads: int, timeout: int) -> dict:
    """The command in a fresh process; its wall time and peak RSS (its own VmHWM, polled every 50 ms)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    done = run_child([sys.executable, "-m", "bertscore", "--input", str(input_path), "--model", str(model),
                      "--num-layers", "1", "-f", "parquet", "-o", str(output)], env, poll=0.05)
    if done.returncode != 0 or done.wall > timeout:
        return {"error": done.stderr[-2000:], "returncode": done.returncode, "wall_s": done.wall}
    return {"wall_s": done.wall, "peak_rss_bytes": done.peak, "ru_maxrss_bytes": done.ru_maxrss,
            "summary": done.stderr.strip().splitlines()[-2]}


def check_output(output: Path, count: int, model: Path, cands: list[str], refs: list[str]) -> dict:
    """Every line once and in order (1, 2, ...); the F1 of the first 300 rows equal to score() on their texts."""
    import pyarrow.parquet as pq
    import torch

    import bertscore

    scores = pq.ParquetFile(output)
    seen, first_f1 = 0, []
    for batch in scores.iter_batches(columns=["line", "f1"], batch_size=65536):
        lines = batch.column(0).to_numpy()
        if not (lines == range(seen + 1, seen + 1 + len(lines))).all():
            raise SystemExit(f"error: {output}: the line column is not 1..{count} in order")
        seen += len(lines)
        first_f1.extend(batch.column(1).to_pylist()[: max(0, 300 - len(first_f1))])
    if seen != count:
        raise SystemExit(f"error: {output} has {seen} rows, not {count}")
    candidates, references = row_texts(min(count, 300), cands, refs)
    _, _, f1 = bertscore.score(candidates, references, model_type=str(model), num_layers=1, device="cpu")
    gap = float((torch.tensor(first_f1, dtype=torch.float64) - f1.double()).abs().max())
    if gap > 1e-6:
        raise SystemExit(f"error: the CLI's F1 differs from score() by {gap:.2e}")
    return {"rows_out": seen, "row_groups_out": scores.metadata.num_row_groups, "max_abs_f1_gap_vs_score": gap}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="row counts")
    parser.add_argument("--threads", type=int, default=1, help="torch/OpenMP threads of the CLI process")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per run (reported, not enforced)")
    args, out, machine = begin(parser, argv, threads_elsewhere=True, serial_tokenizers=True)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    cands, refs = wmt17_pairs(FIXTURE)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bertscore-parquet-") as tmp:
        tmp_path = Path(tmp)
        model = random_bert(tmp_path / "model", 32, 1, 2, 64)[0]
        for count in sizes:
            source, output = tmp_path / f"rows_{count}.parquet", tmp_path / f"scores_{count}.parquet"
            write_input(source, count, cands, refs)
            row = {"rows": count, "input_bytes": source.stat().st_size, **run_cli(source, output, model, args.threads,
                                                                                  args.timeout)}
            if "error" not in row:
                row.update(check_output(output, count, model, cands, refs), output_bytes=output.stat().st_size,
                           rows_per_s=count / row["wall_s"])
            runs.append(row)
            print(json.dumps(row), flush=True)
            source.unlink()
            output.unlink(missing_ok=True)
    measured = [r for r in runs if "peak_rss_bytes" in r]
    command = f"HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/parquet_memory.py --sizes '{args.sizes}'"
    lines = [
        *header("The CLI on Parquet: peak RSS against row count", machine, f"{command} --update-results"),
        "Command per size, in a fresh process: `bertscore --input rows_N.parquet --model TINY --num-layers 1 "
        "-f parquet -o scores_N.parquet` (chunks of 2048 rows: one row group each). Model: a random BertModel "
        "(hidden 32, 1 layer, 2 heads, FFN 64) with MiniLM's WordPiece tokenizer, built offline: near free, so "
        "the table path is what is measured. Rows cycle through the 300 real WMT17 de-en pairs of tests/data "
        "(rows differ; texts repeat, so the embedding cache serves most of them). Each input is one row group. "
        "Peak RSS: the child's own VmHWM, polled every 50 ms (its ru_maxrss would include this script's "
        "high-water mark, which Linux carries across fork and exec: the json keeps it as ru_maxrss_bytes). Checked: every index once in order, and the first 300 rows' F1 equal "
        "to `bertscore.score` (max gap in the json).", "",
        *table(["rows", "input (MB)", "output (MB)", "peak RSS (MiB)", "wall (s)", "rows/s"],
               [[f"{r['rows']:,}", f"{r['input_bytes'] / 1e6:.1f}", "failed: see json", "", f"{r['wall_s']:.0f}", ""]
                if "error" in r else
                [f"{r['rows']:,}", f"{r['input_bytes'] / 1e6:.1f}", f"{r['output_bytes'] / 1e6:.1f}",
                 f"{r['peak_rss_bytes'] / 2**20:.0f}", f"{r['wall_s']:.0f}", f"{r['rows_per_s']:,.0f}"] for r in runs]),
    ]
    result = {"command": command, "machine": machine, "runs": runs}
    if len(measured) >= 2:
        small, large = measured[0], measured[-1]
        ratio = large["peak_rss_bytes"] / small["peak_rss_bytes"]
        result["growth"] = {"small": small["rows"], "large": large["rows"], "ratio": ratio,
                            "target": "<= 1.10x", "met": ratio <= 1.10}
        lines += ["", f"- peak RSS at {large['rows']:,} rows = **{ratio:.3f}x** the peak at {small['rows']:,} rows "
                      f"({large['rows'] // small['rows']}x the rows); target <= 1.10x: "
                      f"{'met' if ratio <= 1.10 else 'NOT met'}"]
    write_results(out, "parquet_memory", result, lines)
    return 0 if len(measured) == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
