"""Long texts: does scoring whole documents help, and what does it cost? (issue 8)

1. Correlation (`correlation`): WMT17 to-English systems scored (embedded MiniLM) on pseudo-documents of
   --segments-per-doc consecutive segments (the first --docs of each system, and of the references)
   with (a) long_texts="truncate" (the default) and (b) long_texts="window", and by (c) the mean
   sentence-level F1 over the same segments (benchmarks/system_level.py's per-segment scores reused
   from --sentence-cache when a spot check agrees); then the system-level Pearson r with the human DA
   score (DA-syslevel.csv), per language pair.
2. Resources (`resources`): one pair of real WMT17 texts of about 1k, 10k and 30k tokens
   (`consecutive`), window vs truncate, each in a fresh subprocess (`cost`): seconds (total, and in
   the encoder), the resident set at the call's start and the peak inside it. gpu_check.py runs
   `consecutive` and `cost` on the GPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/long_texts.py [--docs 8] [--segments-per-doc 48] [--threads 1]
        [--sentence-cache benchmarks/results/tmp/system_level] [--skip-correlation] [--skip-resources] [--device cpu]

Writes long_texts.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from harness import WMT17_TO_ENGLISH as PAIRS, device_sync, measured, json_child, table, wmt17_syslevel
from machine import begin, command, header, machine_line, write_results

RESOURCE_LENGTHS = (1_000, 10_000, 30_000)
RESOURCE_SOURCE = ("de-en", "online-B.0")  # the candidate system; the reference is de-en's references

CHILD = r"""
import json
from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from long_texts import cost
mode, pair, device = sys.argv[1], json.loads(open(sys.argv[2], encoding="utf-8").read()), sys.argv[3]
scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, device=device, long_texts=mode)
store = scorer.pipeline.tokenize([pair["candidate"], pair["reference"]])
lengths = [store.content_length(t.strip()) for t in (pair["candidate"], pair["reference"])]
found = cost(scorer, [pair["candidate"]], [pair["reference"]])
found.pop("scores")
print(json.dumps({"mode": mode, "content_tokens": lengths, **found, "f1": found["f1"][0], "hash": scorer.hash}))
"""


# ----- data ----------------------------------------------------------------------------------------
def documents(texts: list[str], size: int) -> list[str]:
    """Consecutive texts joined `size` at a time (the last document may be shorter)."""
    return [" ".join(t.strip() for t in texts[i:i + size]) for i in range(0, len(texts), size)]


# ----- 1. correlation ----------------------------------------------------------------------------------
def correlation(args) -> dict:
    import numpy as np
    from scipy.stats import pearsonr
    from system_level import cached_scores, digest, system_pairs  # here: the resources' children skip pandas, scipy

    from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
    from bertscore.scoring.embed import EmbeddingCache

    outputs, references, human_table = wmt17_syslevel(args.data, human=True)
    segments = args.docs * args.segments_per_doc
    cache = EmbeddingCache(1 << 30)  # one cache: a window-mode document reuses its truncated window 0
    scorers = {
        "truncate": BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu", cache=cache),
        "window": BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu", cache=cache, long_texts="window"),
    }
    sentence_scorer = scorers["truncate"]
    per_pair, lengths, reused, computed = [], [], 0, 0
    spot_checks: list[float] = []
    cached_hashes: set[str] = set()
    started = time.perf_counter()
    for lp in args.lps:
        pair_human = human_table[human_table.LP == lp]
        human = dict(zip(pair_human.SYSTEM, pair_human.HUMAN.astype(float)))
        systems = [name for name in outputs[outputs.lp == lp].sys.unique() if name in human]
        rows = {}
        for system in systems:
            cands_all, refs_all = system_pairs(outputs, references, lp, system)
            cands, refs = cands_all[:segments], refs_all[:segments]
            cand_docs, ref_docs = documents(cands, args.segments_per_doc), documents(refs, args.segments_per_doc)
            doc_f1 = {mode: float(scorer.score(cand_docs, ref_docs, notes=[])[2].mean())
                      for mode, scorer in scorers.items()}
            # system_level.py's per-segment scores (fp32, all segments), whatever code version computed them
            # (its hash then differs in format): reused only if a spot check of the first document's segments agrees.
            found = cached_scores(args.sentence_cache / lp / f"{system}.float32.{len(cands_all)}.npz", None,
                                  digest(cands_all + refs_all))
            if found is not None:
                f1, check = found["F"].astype(np.float64), args.segments_per_doc
                fresh = sentence_scorer.score(cands[:check], refs[:check])[2].double().numpy()
                deviation = float(np.abs(fresh - f1[:check]).max())
                spot_checks.append(deviation)
                cached_hashes.add(found["hash"])
                found = None if deviation > 1e-5 else found
            if found is not None:
                reused += 1
                sentence = float(f1[:segments].mean())
            else:
                computed += 1
                sentence = float(sentence_scorer.score(cands, refs)[2].double().mean())
            store = sentence_scorer.pipeline.tokenize(cand_docs + ref_docs)
            lengths += [store.content_length(d.strip()) for d in cand_docs + ref_docs]
            rows[system] = {"human": human[system], **doc_f1, "sentence": sentence}
            print(f"{lp} {system}: " + ", ".join(f"{k} {v:.4f}" for k, v in rows[system].items()), flush=True)
        da, measures = np.array([rows[s]["human"] for s in systems]), ("truncate", "window", "sentence")
        summary = {"lp": lp, "systems": len(systems),
                   **{m: float(pearsonr([rows[s][m] for s in systems], da)[0]) for m in measures}}
        per_pair.append({"summary": summary, "systems": rows})
        print(json.dumps(summary), flush=True)
    lengths_array = np.array(lengths)
    return {
        "docs_per_system": args.docs, "segments_per_doc": args.segments_per_doc, "segments_per_system": segments,
        "pairs": per_pair,
        "mean": {m: float(np.mean([p["summary"][m] for p in per_pair])) for m in ("truncate", "window", "sentence")},
        "document_tokens": {"mean": float(lengths_array.mean()), "median": float(np.median(lengths_array)),
                            "min": int(lengths_array.min()), "max": int(lengths_array.max()),
                            "share_over_1000": float((lengths_array > 1000).mean()),
                            "share_over_510": float((lengths_array > 510).mean())},
        "hashes": {mode: scorer.hash for mode, scorer in scorers.items()},
        "sentence_scores": {"reused_from_cache": reused, "computed": computed, "cache": str(args.sentence_cache),
                            "spot_check_max_abs_diff": max(spot_checks, default=None),
                            "cached_hashes": sorted(cached_hashes)},
        "seconds": round(time.perf_counter() - started, 1),
    }


# ----- 2. resources ----------------------------------------------------------------------------------------
def consecutive(cands: list[str], refs: list[str], counts: list[int], target: int,
                docs: int = 1) -> list[dict[str, Any]]:
    """Up to `docs` pseudo-documents, one after the other: consecutive pairs joined (stripped, a space
    between) until the counted side (`counts`: its content tokens per pair) reaches `target` tokens."""
    found: list[dict[str, Any]] = []
    position = 0
    while len(found) < docs and position < len(cands):
        take, total = position, 0
        while total < target and take < len(cands):
            total, take = total + counts[take], take + 1
        found.append({"candidate": " ".join(c.strip() for c in cands[position:take]), "tokens": total,
                      "reference": " ".join(r.strip() for r in refs[position:take]), "segments": take - position})
        position = take
    return found


def cost(scorer: Any, cands: list[str], refs: list[Any]) -> dict[str, Any]:
    """One call of `scorer` (after a warm-up on a short pair), timed and probed on its device
    (harness.measured): seconds, seconds inside the encoder (its forward calls, synchronised on
    CUDA), the memory held at its start and the peak inside it (bytes: resident set on the CPU, the
    allocator on CUDA), the F1s, the (P, R, F) tensors, and whether a truncation note came."""
    from bertscore.scoring.embed import Embedder
    from harness import clocked

    device, notes = str(scorer.device), []
    scorer.score(["warm up"], ["warm up the encoder"])
    with clocked(Embedder, "_forward", sync=device_sync(device)) as inside:
        seconds, _, memory, scores = measured(lambda: scorer.score(cands, refs, notes=notes), device)
    return {"seconds": seconds, "encoder_seconds": inside["_forward"], "rss_before_bytes": memory.before,
            "peak_rss_bytes": memory.peak, "f1": scores[2].tolist(), "scores": scores, "truncation_note": bool(notes)}


def resources(args) -> list[dict]:
    import tempfile

    from bertscore import EMBEDDED_MODEL_NAME
    from bertscore.models.loading import load_model
    from system_level import system_pairs

    cands, refs = system_pairs(*wmt17_syslevel(args.data), *RESOURCE_SOURCE)
    counts = [len(ids) for ids in load_model(EMBEDDED_MODEL_NAME).content_ids(refs)]
    pairs = {length: consecutive(cands, refs, counts, length)[0] for length in RESOURCE_LENGTHS}
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for length in RESOURCE_LENGTHS:
            pair_file = Path(folder) / f"pair{length}.json"
            pair_file.write_text(json.dumps(pairs[length]), encoding="utf-8")
            for mode in ("truncate", "window"):
                try:
                    result = json_child(CHILD, mode, str(pair_file), args.device, threads=args.threads, timeout=3600)
                except RuntimeError as error:
                    sys.exit(f"error: the {mode} run on {length} tokens failed:\n{error}")
                result.update(target_tokens=length, segments=pairs[length]["segments"])
                results.append(result)
                print(json.dumps(result), flush=True)
    return results


# ----- report ------------------------------------------------------------------------------------------------
def render(result: dict) -> str:
    lines = [
        *header("Long texts: truncate vs window (issue 8)", None),
        f"Reproduce: `{result['command']}` (data: ../shared/data/wmt17/syslevel, read-only). "
        f"Model `sentence-transformers/all-MiniLM-L6-v2` (embedded), default layer 6, F1, no idf, fp32, CPU.",
        machine_line(result["machine"]) + " The CPUs are shared with other sessions: one torch thread (2 threads "
        "measured ~6x "
        f"slower than 1 on this oversubscribed machine). This run took {result['seconds']:,.0f} s.",
    ]
    corr = result.get("correlation")
    if corr:
        t, spot = corr["document_tokens"], corr["sentence_scores"]["spot_check_max_abs_diff"]
        lines += [
            "",
            "## Does it help? System-level Pearson r with human DA, WMT17 to-English",
            "",
            f"Pseudo-documents: {corr['segments_per_doc']} consecutive segments (sid order), the first "
            f"{corr['docs_per_system']} documents ({corr['segments_per_system']} segments) of every system with a DA "
            f"score, and of the references. **Subsampled** to fit about 30 minutes of this shared CPU: all systems, "
            f"but the first {corr['segments_per_system']} segments of each (of 2,001-3,007); every measure below "
            f"sees the same segments. Document length (MiniLM content tokens): mean {t['mean']:,.0f}, median "
            f"{t['median']:,.0f}, {t['min']:,}-{t['max']:,}; {t['share_over_1000']:.0%} past 1,000 tokens, "
            f"{t['share_over_510']:.0%} past the 510-token limit.",
            "",
        ]
        mean = corr["mean"]
        lines += [
            *table(["pair", "systems", "(a) documents, truncate", "(b) documents, window", "(c) mean sentence F1"],
                   [[s["lp"], s["systems"], f"{s['truncate']:.3f}", f"{s['window']:.3f}", f"{s['sentence']:.3f}"]
                    for s in (p["summary"] for p in corr["pairs"])]
                   + [["**mean**", sum(p["summary"]["systems"] for p in corr["pairs"]), f"**{mean['truncate']:.3f}**",
                       f"**{mean['window']:.3f}**", f"**{mean['sentence']:.3f}**"]]),
            "",
            f"Hashes: truncate `{corr['hashes']['truncate']}`; window `{corr['hashes']['window']}`. Sentence-level "
            f"scores: {corr['sentence_scores']['reused_from_cache']} systems reused from the cache of "
            f"benchmarks/system_level.py (same texts; a spot check rescoring each system's first document's "
            f"segments agreed to {'-' if spot is None else f'{spot:.1e}'}), "
            f"{corr['sentence_scores']['computed']} computed here. "
            f"Correlation part: {corr['seconds']:,.0f} s.",
        ]
    res = result.get("resources")
    if res:
        lines += [
            "",
            "## Cost: one pair of long texts",
            "",
            f"A system output ({RESOURCE_SOURCE[1]}, {RESOURCE_SOURCE[0]}) against the references, consecutive "
            "segments up to the length; each run in a fresh subprocess (`BERTScorer`, default cache; the encoder "
            "warmed up on one short pair first). Peak RSS is the whole process's high-water mark during the call "
            "(Python, torch, the model included: 'before' is the resident set at its start).",
            "",
            *table(["tokens (cand / ref)", "mode", "seconds", "encoder s", "encoder s per 1k tokens", "RSS before",
                    "peak RSS", "F1"],
                   [[f"{r['content_tokens'][0]:,} / {r['content_tokens'][1]:,}", r["mode"], f"{r['seconds']:.1f}",
                     f"{r['encoder_seconds']:.1f}", f"{r['encoder_seconds'] / (sum(r['content_tokens']) / 1000):.2f}",
                     f"{r['rss_before_bytes'] / 2**20:,.0f} MiB", f"{r['peak_rss_bytes'] / 2**20:,.0f} MiB",
                     f"{r['f1']:.4f}"] for r in res]),
            "",
            "Truncate encodes 512 tokens per text whatever its length (and notes the cut); window encodes about "
            "2x the text (windows of 510 every 255), so its encoder time per 1k tokens stays flat: linear in "
            "length. Pairs too large for one similarity matrix are matched over 64 MB tiles.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from system_level import CACHE as SENTENCE_CACHE, language_pairs

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lps", type=language_pairs, default=PAIRS, help="comma-separated pairs (default: all 7)")
    parser.add_argument("--docs", type=int, default=8, help="pseudo-documents per system (the first ones)")
    parser.add_argument("--segments-per-doc", type=int, default=48, help="consecutive segments per document")
    parser.add_argument("--device", default="cpu", help="where the resources part scores (CPU: the committed results)")
    parser.add_argument("--sentence-cache", type=Path, default=SENTENCE_CACHE,
                        help="benchmarks/system_level.py's per-segment cache (reused when hash and texts match)")
    parser.add_argument("--skip-correlation", action="store_true")
    parser.add_argument("--skip-resources", action="store_true")
    args, _, info = begin(parser, argv, threads=1, data=True, serial_tokenizers=True)
    started = time.perf_counter()
    result: dict = {"command": command("long_texts.py", sys.argv[1:] if argv is None else argv), "machine": info}
    if not args.skip_resources:
        result["resources"] = resources(args)
    if not args.skip_correlation:
        result["correlation"] = correlation(args)
    result["seconds"] = round(time.perf_counter() - started, 1)
    write_results(args.out, "long_texts", result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
