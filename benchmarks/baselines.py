"""The shipped rescale baseline of the embedded MiniLM: cost, precision, pair count, calibration.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/baselines.py [--data ../shared/data] [--threads N]

Corpus: every distinct English sentence of the Tatoeba test set of LASER (column `english` of
../shared/data/tatoeba/tatoeba_pairs.tsv.gz, file order), written one per line to a temporary file.

1. The shipped computation (`step_shipped`), in a fresh subprocess: `bertscore baseline --model
   sentence-transformers/all-MiniLM-L6-v2 --lang en --corpus <that file> --seed 0 --device cpu`, its
   time and peak RSS, and its file and sidecar compared byte for byte with the shipped ones.
2. Its standard errors (from the sidecar).
3. The baseline from `--pairs 1000` and `--pairs 5000` (--counts; each a fresh child as in 1) against
   all pairs, per layer.
4. Calibration (`step_calibration`): a baseline from one half of the sentences (seeded split), loaded
   from its file as a user would, rescales all random pairs of the other half at every layer: the
   mean rescaled F must lie within 0.01 of 0, and identical pairs must give 1.
Writes baselines.md and .json (after every step) to benchmarks/scratch/ (--update-results:
benchmarks/results/; or --out).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from harness import json_child, table, tatoeba_english
from machine import ROOT, begin, header, machine_line, write_results

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SHIPPED = ROOT / "bertscore" / "data" / "rescale_baseline" / "en" / "sentence-transformers" / "all-MiniLM-L6-v2.tsv"
TOLERANCE = 0.01

# Runs the CLI in a child (harness.json_child) and reports the child's own CPU time and peak RSS.
CHILD = r"""
import json, resource
from bertscore.cli.baseline import main
from harness import peak_rss, timed
seconds, code = timed(lambda: main(sys.argv[1:]))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"exit_code": code, "seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
                  "peak_rss_bytes": peak_rss()}))
sys.exit(code)
"""


def run_cli(argv: list[str], threads: int) -> dict:
    try:
        return json_child(CHILD, *argv, threads=threads)  # a failed run (its exit code too) raises RuntimeError
    except RuntimeError as error:
        sys.exit(f"error: bertscore baseline failed:\n{error}")


def cli_baseline(corpus_file: Path, out: Path, threads: int, pairs: int | None = None) -> dict:
    """`bertscore baseline` in a fresh child: its time, peak RSS, and the written table."""
    from bertscore import baselines

    extra = ["--pairs", str(pairs)] if pairs else []
    report = run_cli(["--model", MODEL, "--lang", "en", "--corpus", str(corpus_file), "--seed", "0",
                      "--device", "cpu", "-q", "-o", str(out), *extra], threads)
    meta = baselines.read_sidecar(out)
    layers = range(len(meta["mean"]["F"]))
    return {**report, "num_pairs": meta["num_pairs"], "num_sentences": meta["num_sentences"],
            "mean": [[meta["mean"][c][k] for c in "PRF"] for k in layers],
            "standard_error": [[meta["standard_error"][c][k] for c in "PRF"] for k in layers]}


def step_shipped(corpus_file: Path, work: Path, threads: int, refresh: bool) -> dict:
    """The shipped computation, compared byte for byte with the shipped files (and, with
    `refresh`, copied over them when they differ: what differed is recorded)."""
    import shutil

    from bertscore import baselines

    out = work / "all-MiniLM-L6-v2.tsv"
    result = cli_baseline(corpus_file, out, threads)
    result["identical_to_shipped"] = out.read_bytes() == SHIPPED.read_bytes()
    result["identical_sidecar"] = baselines.sidecar_path(out).read_bytes() == baselines.sidecar_path(SHIPPED).read_bytes()
    if not (result["identical_to_shipped"] and result["identical_sidecar"]):
        old, new = baselines.read_sidecar(SHIPPED), baselines.read_sidecar(out)
        result["sidecar_keys_that_differ"] = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
        result["max_abs_mean_change"] = max(abs(a - b) for c in "PRF" for a, b in zip(old["mean"][c], new["mean"][c]))
        if refresh:
            shutil.copyfile(out, SHIPPED)
            shutil.copyfile(baselines.sidecar_path(out), baselines.sidecar_path(SHIPPED))
            result["refreshed_shipped_files"] = True
    return result


def step_calibration(sentences: list[str], work: Path) -> dict:
    import numpy as np
    import torch

    from bertscore import BERTScorer, baselines
    from bertscore.calibrate import all_layers_scorer, compute_baseline, mean_and_standard_error, prepare_corpus, random_pairs

    distinct = prepare_corpus(sentences).sentences
    order = np.random.default_rng(1).permutation(len(distinct))
    half = len(distinct) // 2
    half_a = [distinct[i] for i in order[:half]]
    half_b = [distinct[i] for i in order[half:]]
    start = time.perf_counter()  # the whole step, all its parts
    table_a = compute_baseline(half_a, model_type=MODEL, seed=0, lang="en", device="cpu")
    path_a = work / "half_a.tsv"
    baselines.write_baseline(table_a, path_a)
    baseline_a = baselines.load_baseline(path_a)  # as a user loads it: float32 [7, 3]

    scorer = all_layers_scorer(model_type=MODEL, device="cpu")
    cands, refs = random_pairs(len(half_b), None, 0)
    raw = scorer.score_pairs([half_b[i] for i in cands.tolist()], [half_b[i] for i in refs.tolist()])
    rescaled = baselines.rescale(raw, baseline_a)  # [pairs, 7, 3]
    mean, error = mean_and_standard_error(rescaled)
    raw_mean, raw_error = mean_and_standard_error(raw)

    identical = half_b[:1000]
    same = BERTScorer(model_type=MODEL, all_layers=True, rescale_with_baseline=True, baseline_path=str(path_a),
                      device="cpu", loaded_model=scorer.model, cache_bytes=0)
    p, r, f = same.score(identical, identical)  # [7, 1000] each
    deviation = torch.stack([p, r, f]).sub(1).abs().amax(dim=(0, 2))
    return {
        "sentences_a": len(half_a), "sentences_b": len(half_b), "pairs_a": table_a.num_pairs, "pairs_b": len(cands),
        "baseline_a": {"mean": table_a.mean.tolist(), "standard_error": table_a.standard_error.tolist()},
        "raw_b": {"mean": raw_mean.tolist(), "standard_error": raw_error.tolist()},
        "rescaled_b": {"mean": mean.tolist(), "standard_error": error.tolist()},
        "identical_pairs": len(identical), "identical_max_abs_deviation_from_1": deviation.tolist(),
        "seconds": time.perf_counter() - start,
    }


def render(r: dict) -> str:
    m = r["machine"]
    lines = [
        *header("Rescale baseline of the embedded MiniLM (Tatoeba English)", None),
        "Reproduce (in order): " + "; ".join(f"`{c}`" for c in r["commands"]),
        "",
        f"Corpus: every distinct English sentence of the LASER Tatoeba test set ({r['sentences']} lines, "
        f"{r['distinct']} distinct). Model {MODEL}, fp32, CPU, no idf, seed 0.",
        machine_line(m) + f" Load average at the end {tuple(round(x, 1) for x in m['load_average_at_end'])} "
        "(the CPUs are shared with other jobs).",
        "",
    ]
    shipped = r.get("shipped")
    if shipped:
        lines += [
            "## 1. The shipped computation",
            "",
            f"{shipped['num_pairs']} pairs of {shipped['num_sentences']} sentences: **{shipped['seconds']:.0f} s** wall "
            f"({shipped['cpu_seconds']:.0f} CPU s, {shipped['num_pairs'] / shipped['seconds']:.0f} pairs/s), "
            f"peak RSS **{shipped['peak_rss_bytes'] / 2**20:.0f} MiB** (whole process: model, corpus, all-layer "
            f"embeddings of one chunk). Recomputed file identical to the shipped one: "
            f"**{'yes' if shipped['identical_to_shipped'] else 'NO'}** (sidecar: "
            f"{'yes' if shipped['identical_sidecar'] else 'NO'}).",
            "",
        ]
        if "sidecar_keys_that_differ" in shipped:
            lines += [
                f"What differed from the shipped files before this run: sidecar keys "
                f"{', '.join(shipped['sidecar_keys_that_differ']) or 'none'}; largest change of a mean "
                f"{shipped['max_abs_mean_change']:.1e}. "
                + ("The shipped files were replaced by this run's output (`--refresh-shipped`)."
                   if shipped.get("refreshed_shipped_files") else ""),
                "",
            ]
        lines += [
            "## 2. The shipped baseline and its standard errors",
            "",
            *table(["layer", "P", "R", "F", "SE(P)", "SE(R)", "SE(F)"],
                   [[layer, *(f"{x:.4f}" for x in mean), *(f"{x:.5f}" for x in error)]
                    for layer, (mean, error) in enumerate(zip(shipped["mean"], shipped["standard_error"]))]),
            "",
        ]
    counts = r.get("pair_counts")
    if counts and shipped:
        lines += [
            "## 3. The baseline F with fewer pairs (seed 0)",
            "",
            "Difference from the all-pairs F (absolute, and in units of the smaller run's own standard error of F).",
            "",
            *table(["layer", "F, all pairs", *(h for n in counts for h in (f"F, {n} pairs", "diff"))],
                   [[layer, f"{full[2]:.4f}", *(cell for run in counts.values() for cell in (
                       f"{run['mean'][layer][2]:.4f}",
                       f"{run['mean'][layer][2] - full[2]:+.4f} "
                       f"({(run['mean'][layer][2] - full[2]) / run['standard_error'][layer][2]:+.1f} SE)"))]
                    for layer, full in enumerate(shipped["mean"])]),
            "", "Each run is a fresh `bertscore baseline` process (same corpus, seed 0, `--pairs N`):", "",
            # a record from before the runs were separate processes has no cpu_seconds
            *table(["pairs", "wall s", "CPU s", "peak RSS (MiB)", "SE(F), layer 6"],
                   [[n, f"{run['seconds']:.0f}", f"{run['cpu_seconds']:.0f}", f"{run['peak_rss_bytes'] / 2**20:.0f}",
                     f"{run['standard_error'][6][2]:.4f}"]
                    for n, run in [*counts.items(), ("all " + str(shipped["num_pairs"]), shipped)]
                    if "cpu_seconds" in run]),
            "",
        ]
    cal = r.get("calibration")
    if cal:
        worst = max(abs(row[2]) for row in cal["rescaled_b"]["mean"])
        lines += [
            "## 4. Calibration on held-out sentences",
            "",
            f"Baseline from half A ({cal['sentences_a']} sentences, {cal['pairs_a']} pairs); all {cal['pairs_b']} "
            f"random pairs of half B ({cal['sentences_b']} other sentences) rescaled with it (loaded from its file).",
            "",
            *table(["layer", "baseline F (A)", "raw mean F (B)", "rescaled mean F (B) ± SE", "within 0.01 of 0",
                    "identical pairs: max abs(x - 1)"],
                   [[layer, f"{cal['baseline_a']['mean'][layer][2]:.4f}", f"{cal['raw_b']['mean'][layer][2]:.4f}",
                     f"{row[2]:+.4f} ± {cal['rescaled_b']['standard_error'][layer][2]:.4f}",
                     "yes" if abs(row[2]) <= TOLERANCE else "NO", f"{cal['identical_max_abs_deviation_from_1'][layer]:.1e}"]
                    for layer, row in enumerate(cal["rescaled_b"]["mean"])]),
        ]
        lines += ["", f"Largest |mean rescaled F| over the layers: **{worst:.4f}** (target <= {TOLERANCE}: "
                  f"{'met' if worst <= TOLERANCE else 'NOT met'}); identical pairs ({cal['identical_pairs']}) rescale "
                  f"to 1 within {max(cal['identical_max_abs_deviation_from_1']):.1e}.", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--counts", default="1000,5000", help="pair counts to compare with all pairs")
    parser.add_argument("--refresh-shipped", action="store_true",
                        help="copy the recomputed baseline over the shipped files when they differ (after a code "
                             "change that moves the numbers or the sidecar; what differed is recorded)")
    parser.add_argument("--steps", default="shipped,counts,calibration",
                        help="steps to run; the others are kept from an existing baselines.json")
    args, _, info = begin(parser, data=True, serial_tokenizers=True)
    steps, threads = set(args.steps.split(",")), info["torch_threads"]  # begin set --threads, if given
    sentences = tatoeba_english(args.data)
    from bertscore.calibrate import prepare_corpus

    previous = args.out / "baselines.json"
    result = json.loads(previous.read_text()) if previous.is_file() and steps != {"shipped", "counts", "calibration"} else {}
    commands = result.get("commands", [result["command"]] if "command" in result else [])
    commands.append("HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/baselines.py" + " ".join([""] + sys.argv[1:]))
    result.update({"commands": commands, "sentences": len(sentences),
                   "distinct": len(prepare_corpus(sentences).sentences)})
    result.pop("command", None)

    def save() -> None:
        result["machine"] = {**info, "load_average_at_end": os.getloadavg()}
        write_results(args.out, "baselines", result, render(result))

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        corpus_file = work / "tatoeba_en.txt"
        corpus_file.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        if "shipped" in steps:
            result["shipped"] = step_shipped(corpus_file, work, threads, args.refresh_shipped)
            save()
        if "counts" in steps:
            result["pair_counts"] = {str(int(n)): cli_baseline(corpus_file, work / f"pairs_{n}.tsv", threads, int(n))
                                     for n in args.counts.split(",") if n}
            save()
        if "calibration" in steps:
            result["calibration"] = step_calibration(sentences, work)
            save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
