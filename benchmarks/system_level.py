"""System-level BERTScore on WMT17 to-English with intervals and paired significance tests.

Every system output of newstest2017 (7 pairs into English, 65 systems, 170,180 segments) is scored
against the reference with the embedded MiniLM (sentence-transformers/all-MiniLM-L6-v2, default
layer, F1, no idf, no rescaling; one scorer per pair, so its references are embedded once and
served from the cache for every system). Then, per language pair (`pair_statistics`): each
system's mean F1 with its 95% bootstrap interval, the system-level Pearson r and Kendall tau with
the human DA score (DA-syslevel.csv; the mean over the pairs is the paper's protocol), and every pair
of systems compared with the paired permutation test and sacrebleu's paired bootstrap: how many
pairs each separates at p < 0.05, and how many of those the human DA orders the same way.

Per-segment scores are cached under benchmarks/results/tmp/system_level/ (ignored by git), one
file per (pair, system), checked against the scorer hash and the candidates: rerunning the
statistics does not rescore. Quick runs: --lps de-en --limit-systems 3 --limit-segments 300.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/system_level.py [--lps cs-en,de-en] [--dtype-check 600]

Writes system_level.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau, pearsonr

from harness import WMT17_TO_ENGLISH as PAIRS, repeated, table, timed, wmt17_syslevel
from machine import RESULTS, begin, command, machine_line, write_results

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, stats
from bertscore.output_files import write_text
CACHE = RESULTS / "tmp" / "system_level"
ALPHA = 0.05


# ----- data --------------------------------------------------------------------------------------
def system_pairs(outputs: pd.DataFrame, references: pd.DataFrame, lp: str, system: str,
                 limit: int | None = None) -> tuple[list[str], list[str]]:
    """One system's outputs in sid order (the first `limit`), and the references of the same segments."""
    rows = outputs[(outputs.lp == lp) & (outputs.sys == system)]
    rows = rows.assign(order=rows.sid.astype(int)).sort_values("order").head(limit)
    refs = references[references.lp == lp].set_index("sid")["reference"]
    missing = sorted(set(rows.sid) - set(refs.index), key=int)
    if missing:
        sys.exit(f"error: {lp} {system}: no reference for sid {', '.join(missing[:5])}")
    return rows.candidate.tolist(), refs.loc[rows.sid].tolist()


def digest(texts: list[str]) -> str:
    """A system's candidates and references, fingerprinted (the cache's key; long_texts.py reads it too)."""
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


def language_pairs(text: str) -> list[str]:
    """--lps: comma-separated WMT17 to-English pairs."""
    lps = [lp.strip() for lp in text.split(",") if lp.strip()]
    unknown = [lp for lp in lps if lp not in PAIRS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown language pair(s) {', '.join(unknown)}; choose from "
                                         f"{', '.join(PAIRS)}")
    return lps


# ----- scoring, cached per (pair, system) ------------------------------------------------------------
def cached_scores(path: Path, scorer_hash: str | None, texts_digest: str) -> dict | None:
    """The cached per-segment P, R, F and their meta for these texts, computed with `scorer_hash` (None: any)."""
    if not path.is_file():
        return None
    with np.load(path) as stored:
        meta = json.loads(str(stored["meta"]))
        if scorer_hash not in (None, meta["hash"]) or meta["digest"] != texts_digest:
            return None
        return {"P": stored["P"], "R": stored["R"], "F": stored["F"], **meta}


def score_pair(lp: str, outputs: pd.DataFrame, references: pd.DataFrame, systems: list[str], args) -> dict[str, dict]:
    """Per-segment P/R/F of each system of one language pair (cached)."""
    scorer = None
    scored = {}
    for system in systems:
        cands, ref_texts = system_pairs(outputs, references, lp, system, args.limit_segments)
        if scorer is None:
            scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, dtype=args.dtype)
        texts_digest = digest(cands + ref_texts)
        path = args.cache / lp / f"{system}.{args.dtype}.{len(cands)}.npz"
        found = None if args.rescore else cached_scores(path, scorer.hash, texts_digest)
        if found is None:
            seconds, (precision, recall, f1) = timed(lambda: scorer.score(cands, ref_texts, verbose=args.progress))
            meta = {"hash": scorer.hash, "digest": texts_digest, "seconds": seconds,
                    "segments": len(cands), "empty_candidates": int(sum(not c.strip() for c in cands)),
                    "dtype": args.dtype, "scored_at": time.strftime("%Y-%m-%d %H:%M:%S")}
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, P=precision.numpy(), R=recall.numpy(), F=f1.numpy(), meta=json.dumps(meta))
            tmp.replace(path)
            found = {"P": precision.numpy(), "R": recall.numpy(), "F": f1.numpy(), **meta}
            print(f"{lp} {system}: {len(cands)} segments scored in {meta['seconds']:.0f} s "
                  f"(cache hits {scorer.cache.hits}, misses {scorer.cache.misses})", flush=True)
        scored[system] = found
    return scored


def dtype_check(outputs: pd.DataFrame, references: pd.DataFrame, pairs: int) -> dict:
    """fp32 vs bf16 on the same seeded pairs (cache off, 2 rounds): which is faster on this CPU.

    Kept in the cache folder, so a rerun of the statistics does not time it again."""
    joined = outputs.merge(references, on=["lp", "sid"]).sample(pairs, random_state=0)
    cands, refs = joined.candidate.tolist(), joined.reference.tolist()
    result: dict = {"pairs": pairs}
    f1 = {}
    for dtype in ["float32", "bfloat16"]:
        scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, dtype=dtype, cache_bytes=0)
        scorer.score(cands[:32], refs[:32])  # warm-up
        walls, cpus, f1[dtype] = repeated(lambda: scorer.score(cands, refs)[2], 2)
        result[dtype] = {"wall_s": [round(w, 2) for w in walls], "cpu_s": [round(c, 2) for c in cpus]}
    result["bf16_max_abs_dF"] = float((f1["bfloat16"] - f1["float32"]).abs().max())
    result["bf16_faster"] = min(result["bfloat16"]["cpu_s"]) < min(result["float32"]["cpu_s"])
    print(json.dumps({"dtype_check": result}), flush=True)
    return result


# ----- statistics -----------------------------------------------------------------------------------
def pair_statistics(lp: str, scored: dict[str, dict], human: dict[str, float], args) -> dict:
    systems = list(scored)
    f1 = {name: scored[name]["F"].astype(np.float64) for name in systems}
    intervals = {name: stats.bootstrap_ci(f1[name], args.n_resamples, 0.95, args.seed) for name in systems}
    means = np.array([intervals[name].mean for name in systems])
    da = np.array([human[name] for name in systems])
    rows = [{"system": name, "human": human[name], **intervals[name].to_dict(), "hash": scored[name]["hash"],
             "precision": float(np.mean(scored[name]["P"])), "recall": float(np.mean(scored[name]["R"])),
             "empty_candidates": scored[name]["empty_candidates"]} for name in systems]

    p_values: dict[str, dict[tuple[str, str], float]] = {"permutation": {}, "bootstrap": {}}
    for method, resamples in (("permutation", args.n_permutations), ("bootstrap", args.n_resamples)):
        for i, first in enumerate(systems[:-1]):
            later = {name: f1[name] for name in systems[i:]}
            table = stats.compare_systems(later, baseline=first, method=method, n_resamples=resamples,
                                          seed=args.seed, ci_resamples=args.n_resamples)
            for row in table[1:]:
                p_values[method][(first, row.name)] = row.p_value

    comparisons = []
    for first, second in itertools.combinations(systems, 2):
        metric_gap = float(np.mean(f1[second]) - np.mean(f1[first]))
        human_gap = human[second] - human[first]
        comparisons.append({
            "a": first, "b": second, "f1_difference": metric_gap, "human_difference": human_gap,
            "agrees_with_human": bool(np.sign(metric_gap) == np.sign(human_gap)) if human_gap else None,
            "p_permutation": p_values["permutation"][(first, second)],
            "p_bootstrap": p_values["bootstrap"][(first, second)],
        })

    summary = {"lp": lp, "systems": len(systems), "pairs": len(comparisons),
               "pearson": float(pearsonr(means, da)[0]), "kendall": float(kendalltau(means, da)[0]),
               "agree_all_pairs": sum(bool(c["agrees_with_human"]) for c in comparisons)}
    for method in ("permutation", "bootstrap"):
        separated = [c for c in comparisons if c[f"p_{method}"] < ALPHA]
        summary[f"separated_{method}"] = len(separated)
        summary[f"agree_{method}"] = sum(bool(c["agrees_with_human"]) for c in separated)
    summary["scoring_seconds"] = round(sum(scored[name]["seconds"] for name in systems), 1)
    summary["segments"] = int(sum(scored[name]["segments"] for name in systems))
    return {"summary": summary, "systems": rows, "comparisons": comparisons}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lps", type=language_pairs, default=PAIRS, help="comma-separated pairs (default: all 7)")
    parser.add_argument("--limit-systems", type=int, default=None, help="score only the first N systems of a pair")
    parser.add_argument("--limit-segments", type=int, default=None, help="score only the first N segments")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--dtype-check", type=int, default=0, metavar="PAIRS",
                        help="first time fp32 against bf16 on this many pairs (0: skip)")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples (intervals, paired bootstrap)")
    parser.add_argument("--n-permutations", type=int, default=10000, help="randomizations of the permutation test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--rescore", action="store_true", help="ignore cached per-segment scores")
    parser.add_argument("--progress", action="store_true", help="a progress bar per system")
    args, _, info = begin(parser, argv, threads=2, data=True, serial_tokenizers=True)
    lps = args.lps
    started = time.perf_counter()
    outputs, references, human_table = wmt17_syslevel(args.data, human=True)
    outputs, references = outputs[outputs.lp.isin(lps)], references[references.lp.isin(lps)]
    check = None
    if args.dtype_check:
        check_path = args.cache / f"dtype_check.{args.dtype_check}.json"
        if check_path.is_file() and not args.rescore:
            check = json.loads(check_path.read_text())
        else:
            check = dtype_check(outputs, references, args.dtype_check)
            check_path.parent.mkdir(parents=True, exist_ok=True)
            write_text(check_path, json.dumps(check, indent=2) + "\n")

    per_pair = []
    for lp in lps:
        pair_human = human_table[human_table.LP == lp]
        human = dict(zip(pair_human.SYSTEM, pair_human.HUMAN.astype(float)))
        systems = [name for name in outputs[outputs.lp == lp].sys.unique() if name in human]
        if args.limit_systems:
            systems = systems[: args.limit_systems]
        scored = score_pair(lp, outputs, references, systems, args)
        per_pair.append(pair_statistics(lp, scored, human, args))
        print(json.dumps(per_pair[-1]["summary"]), flush=True)

    summaries = [p["summary"] for p in per_pair]
    totals = {key: sum(s[key] for s in summaries) for key in
              ("systems", "pairs", "segments", "agree_all_pairs", "separated_permutation", "agree_permutation",
               "separated_bootstrap", "agree_bootstrap")}
    quick = bool(args.limit_systems or args.limit_segments or lps != PAIRS)
    options = [arg for arg in (sys.argv[1:] if argv is None else argv) if arg != "--progress"]
    result = {
        "command": command("system_level.py", options),
        "quick_run": quick,
        "model": EMBEDDED_MODEL_NAME,
        "dtype": args.dtype,
        "dtype_check": check,
        "hash": sorted({row["hash"] for p in per_pair for row in p["systems"]}),
        "settings": {"confidence": 0.95, "n_resamples": args.n_resamples, "n_permutations": args.n_permutations,
                     "seed": args.seed, "alpha": ALPHA, "threads": args.threads},
        "mean_pearson": float(np.mean([s["pearson"] for s in summaries])),
        "mean_kendall": float(np.mean([s["kendall"] for s in summaries])),
        "totals": totals,
        "scoring_seconds": round(sum(s["scoring_seconds"] for s in summaries), 1),
        "seconds_this_run": round(time.perf_counter() - started, 1),
        "pairs": per_pair,
        "machine": {**info, "numpy": np.__version__},
    }
    write_results(args.out, "system_level", result, render(result))
    return 0


def render(r: dict) -> str:
    s, t = r["settings"], r["totals"]
    lines = [
        "# WMT17 to-English, system level: BERTScore with intervals and paired tests",
        "",
        f"Reproduce: `{r['command']}` (data: ../shared/data/wmt17/syslevel, read-only)."
        + (" **Quick run (a subset): not the full table.**" if r["quick_run"] else ""),
        "",
        f"Model `{r['model']}` (embedded), default layer, F1, no idf, no rescaling, {r['dtype']}; scorer hash "
        f"`{', '.join(r['hash'])}`. {t['segments']:,} segments of {t['systems']} systems scored in {r['scoring_seconds']:,.0f} s "
        f"(on 2 cores shared with other work; per-segment scores cached, this run took {r['seconds_this_run']:,.0f} s).",
        machine_line(r["machine"]),
        f"Intervals: 95% percentile bootstrap of the mean, {s['n_resamples']:,} resamples, seed {s['seed']}. Paired tests "
        f"on every pair of systems of a language pair: permutation (approximate randomization, "
        f"{s['n_permutations']:,} randomizations) and sacrebleu's paired bootstrap ({s['n_resamples']:,} resamples); "
        f"separated = p < {s['alpha']}; agrees = the human DA score orders the pair the same way.",
    ]
    check = r.get("dtype_check")
    if check:
        lines.append(
            f"Precision: fp32 vs bf16 timed on {check['pairs']} pairs (cache off, 2 rounds): CPU s fp32 "
            f"{check['float32']['cpu_s']}, bf16 {check['bfloat16']['cpu_s']} (bf16 max |dF| {check['bf16_max_abs_dF']:.4f}); "
            f"bf16 is {'faster' if check['bf16_faster'] else 'not faster'} on this CPU, so the run used {r['dtype']}."
        )
    share = lambda a, b: f"{a}/{b} ({a / b:.0%})" if b else "-"  # noqa: E731
    lines += [
        "",
        *table(["pair", "systems", "Pearson r", "Kendall tau", "system pairs", "separated (permutation)",
                "of which agree", "separated (paired bootstrap)", "of which agree", "sign agrees (all pairs)"],
               [[x["lp"], x["systems"], f"{x['pearson']:.3f}", f"{x['kendall']:.3f}", x["pairs"],
                 x["separated_permutation"], x["agree_permutation"], x["separated_bootstrap"], x["agree_bootstrap"],
                 x["agree_all_pairs"]] for x in (p["summary"] for p in r["pairs"])]
               + [["**all**", t["systems"], f"**{r['mean_pearson']:.3f}** (mean)", f"{r['mean_kendall']:.3f} (mean)",
                   t["pairs"], t["separated_permutation"], share(t["agree_permutation"], t["separated_permutation"]),
                   t["separated_bootstrap"], share(t["agree_bootstrap"], t["separated_bootstrap"]),
                   share(t["agree_all_pairs"], t["pairs"])]]),
        "",
        "sacrebleu's paired bootstrap p behaves one-sided (about twice the nominal false-positive rate, see "
        "`bertscore.stats.paired_bootstrap`), so it separates more pairs than the permutation test.",
        "",
    ]
    for p in r["pairs"]:
        lines += [f"## {p['summary']['lp']}", "", *table(
            ["system", "human DA", "mean F1", "95% interval"],
            [[row["system"], f"{row['human']:+.3f}", f"{row['mean']:.4f}", f"[{row['low']:.4f}, {row['high']:.4f}]"]
             for row in sorted(p["systems"], key=lambda row: -row["mean"])]), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
