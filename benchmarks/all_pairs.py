"""All pairs: `BERTScorer.score_matrix` vs the flattened `score()`, a plain embed-once-and-einsum
script and the official package's flattened call, side by side in one run, and the peak memory
of large all-pairs matrices.

Texts scored against themselves (N x N pairs, as MBR does): the first distinct Tatoeba English
sentences of 5 to 15 words ("short", also for memory) and distinct WMT17 de-en references ("news");
the embedded MiniLM, fp32, cache off, batch_size=64 (the report says the rest). Peak memory: a fresh
subprocess per size (`matrix_peak`). gpu_check.py runs `matrix_vs_flattened`, `matrix_peak` and
`against_floor` on the GPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/all_pairs.py [--sizes 64,256] [--official-sizes 64,256]
        [--memory-sizes 512,1024] [--repeats 3] [--device cpu] [--update-results] [--render SAVED.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

from harness import (device_sync, json_child, max_delta, measured, official_scorer, table, tatoeba_english, timed,
                     wmt17_segments)
from machine import begin, header, write_results

LAYER = 6  # MiniLM's default layer (MODEL_TO_LAYERS), given to the official package by hand

MEMORY_CHILD = r"""
import json
from all_pairs import matrix_peak
from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
texts = json.loads(sys.stdin.read())
print(json.dumps(matrix_peak(BERTScorer(model_type=EMBEDDED_MODEL_NAME, cache_bytes=0, device=sys.argv[1]), texts)))
"""


def wmt17_texts(data: Path, count: int) -> list[str]:
    """The first `count` distinct WMT17 de-en references."""
    texts = list(dict.fromkeys(wmt17_segments(data, "de-en").reference))
    if len(texts) < count:
        sys.exit(f"error: only {len(texts)} distinct WMT17 de-en references, {count} asked")
    return texts[:count]


def tatoeba_short_texts(data: Path, count: int) -> list[str]:
    """`count` distinct short English sentences from Tatoeba (the first ones of 5 to 15 words)."""
    texts = list(dict.fromkeys(text for text in tatoeba_english(data) if 5 <= len(text.split()) <= 15))
    return texts[:count]


PLAIN_SCRIPT_SIZES = (64,)  # the plain script pads all N texts into one batch: its einsum is N^2 L^2


def plain_script(tokenizer, model, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference point: a plain script that embeds the N texts once (one padded batch) and
    matches all N x N pairs with one batched einsum, with the official definition without idf
    (every real token, special ones too, can be a best match; special tokens weigh 0 in the means).
    What `score_matrix` is measured against for speed (the table gives how far their numbers are apart)."""
    with torch.inference_mode():
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt").to(model.device)
        states = model(**batch, output_hidden_states=True).hidden_states[LAYER]
        states = torch.nn.functional.normalize(states, dim=-1)
        real = batch["attention_mask"]
        content = real.clone()
        content[:, 0] = 0
        content[torch.arange(len(texts), device=real.device), real.sum(1) - 1] = 0
        similarity = torch.einsum("ild,jmd->ijlm", states, states)  # [cand, ref, cand token, ref token]
        similarity = similarity.masked_fill(real[None, :, None, :] == 0, -2.0)
        best_ref = similarity.max(dim=-1).values  # each candidate token's best reference token
        similarity = similarity.masked_fill(real[:, None, :, None] == 0, -2.0)
        best_cand = similarity.max(dim=-2).values  # each reference token's best candidate token
        weights = content.float()
        precision = (best_ref * weights[:, None, :]).sum(-1) / weights.sum(-1)[:, None]
        recall = (best_cand * weights[None, :, :]).sum(-1) / weights.sum(-1)[None, :]
        return precision, recall, 2 * precision * recall / (precision + recall)


def flattened(texts: list[str]) -> tuple[list[str], list[str]]:
    """Every (a, b) of texts x texts as two flat lists, in the matrix's row-major order."""
    return [c for c in texts for _ in texts], [r for _ in texts for r in texts]


def matrix_vs_flattened(scorer: Any, texts: list[str]) -> tuple[float, float, float, Any]:
    """score_matrix(texts, texts) and the flattened score() on the scorer's device: (matrix s,
    flattened s, max |delta| over P, R, F, the matrices)."""
    sync = device_sync(str(scorer.device))
    matrix_s, matrix = timed(lambda: scorer.score_matrix(texts, texts, notes=[]), sync)
    flat_s, flat = timed(lambda: scorer.score(*flattened(texts), notes=[]), sync)
    return matrix_s, flat_s, max_delta((m.flatten() for m in matrix), flat), matrix


def matrix_phases(scorer: Any, texts: list[str]) -> dict[str, float]:
    """score_matrix(texts, texts)'s wall seconds in all ("total") and in embedding and matching (its
    own `_embed` and `_match`, clocked for the call; on CUDA each synchronised)."""
    from bertscore.scoring import all_pairs
    from harness import clocked

    sync = device_sync(str(scorer.device))
    with clocked(all_pairs, "_embed", "_match", sync=sync) as spent:
        total = timed(lambda: scorer.score_matrix(texts, texts, notes=[]), sync)[0]
    return {"embed": spent["_embed"], "match": spent["_match"], "total": total}


def matrix_peak(scorer: Any, texts: list[str]) -> dict[str, Any]:
    """score_matrix(texts, texts) after a 2 x 2 warm-up, timed and probed on the scorer's device
    (harness.measured): the memory held at its start and the peak inside it (bytes: the resident set
    on the CPU, the allocator on CUDA), its seconds, the matrix's shape and whether it holds a NaN."""
    scorer.score_matrix(texts[:2], texts[:2], notes=[])
    seconds, _, memory, (_, _, f1) = measured(lambda: scorer.score_matrix(texts, texts, notes=[]), str(scorer.device))
    return {"rss_before_bytes": memory.before, "peak_rss_bytes": memory.peak, "seconds": seconds,
            "shape": list(f1.shape), "nan": bool(torch.isnan(f1).any())}


def matmul_rate(device: str, size: int = 4096) -> float:
    """The device's fp32 matmul rate (flop/s, full precision: no TF32), best of 5 products of N x N."""
    from bertscore.models.devices import full_fp32_precision

    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    with full_fp32_precision():
        a @ b  # warm-up
        best = min(timed(lambda: a @ b, device_sync(device))[0] for _ in range(5))
    return 2.0 * size ** 3 / best


def against_floor(scorer: Any, texts: list[str], matmul_size: int = 4096) -> dict[str, float]:
    """score_matrix(texts, texts) by phase (`matrix_phases`) and its floor: the encoder alone over the
    texts (speed.make_floor, the scorer's batches) plus one matching pass (2 x D x K x tokens^2 flops:
    every token pair once) at the device's fp32 matmul rate, measured here."""
    from speed import make_floor

    device = str(scorer.device)
    spent = matrix_phases(scorer, texts)
    floor, _, tokens = make_floor(scorer.model, texts, scorer.embedder.max_tokens_per_batch, scorer.embedder.batch_size)
    floor_s, _ = timed(floor, device_sync(device))
    rate = matmul_rate(device, matmul_size)
    match_floor_s = 2.0 * scorer.model.encoder.config.hidden_size * scorer.pipeline.settings.score_layers * tokens ** 2 / rate
    return {**spent, "floor_s": floor_s, "match_floor_s": match_floor_s, "tokens": tokens, "matmul_flops_per_s": rate,
            "x_floor": spent["total"] / (floor_s + match_floor_s)}


def speed(args: argparse.Namespace) -> list[dict]:
    from transformers import AutoModel, AutoTokenizer

    from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
    from bertscore.sources import embedded_model_dir

    # cache_bytes=0: what module-level `score()` runs (a text is still embedded once per call).
    ours = BERTScorer(model_type=EMBEDDED_MODEL_NAME, cache_bytes=0, batch_size=64, device=args.device)
    official = official_scorer(embedded_model_dir(), LAYER, args.device, batch_size=64)
    tokenizer = AutoTokenizer.from_pretrained(str(embedded_model_dir()))
    model = AutoModel.from_pretrained(str(embedded_model_dir())).eval().to(args.device)
    warm = wmt17_texts(args.data, 4)  # first calls pay one-off costs (thread pools, lazy imports): not timed
    ours.score_matrix(warm, warm, notes=[]), ours.score(warm, warm, notes=[]), official.score(warm, warm)
    plain_script(tokenizer, model, warm)
    rows = []
    for kind, load in (("short", tatoeba_short_texts), ("news", wmt17_texts)):
        for position, size in enumerate(args.sizes):
            texts = load(args.data, size)
            flat_c, flat_r = flattened(texts)
            runs: dict[str, list[float]] = {"matrix": [], "flattened": [], "plain": [], "official": []}
            deltas: dict[str, float] = {}
            for _ in range(args.repeats if position == 0 else 1):
                matrix_s, flat_s, deltas["max_abs_delta_vs_flattened"], matrix = matrix_vs_flattened(ours, texts)
                runs["matrix"].append(matrix_s)
                runs["flattened"].append(flat_s)
                if size in PLAIN_SCRIPT_SIZES:
                    seconds, plain = timed(lambda: plain_script(tokenizer, model, texts), device_sync(args.device))
                    runs["plain"].append(seconds)
                    deltas["max_abs_delta_vs_plain"] = max_delta(matrix, plain)
                if size in args.official_sizes:
                    seconds, theirs = timed(lambda: official.score(flat_c, flat_r, batch_size=64), device_sync(args.device))
                    runs["official"].append(seconds)
                    deltas["max_abs_delta_vs_official"] = max_delta((m.flatten() for m in matrix), theirs)
                print(f"{kind} {size} x {size}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items() if v),
                      flush=True)
            rows.append({"texts": kind, "size": size, "pairs": size * size, "seconds": runs,
                         **{f"x_vs_{name}": [other / m for other, m in zip(runs[name], runs["matrix"])]
                            for name in ("flattened", "plain", "official")}, **deltas})
    return rows


def memory(args: argparse.Namespace) -> list[dict]:
    rows = []
    for size in args.memory_sizes:
        texts = tatoeba_short_texts(args.data, size)
        row = json_child(MEMORY_CHILD, args.device, threads=args.threads, stdin=json.dumps(texts))
        row.update(size=size, above_model_gib=(row["peak_rss_bytes"] - row["rss_before_bytes"]) / 2**30)
        print(f"{size} x {size} short texts: peak {row['above_model_gib']:.3f} GiB above the loaded model", flush=True)
        rows.append(row)
    return rows


def spread(values: list[float], unit: str = "") -> str:
    if not values:
        return "not run"
    low, high = min(values), max(values)
    return f"{low:.2f}{unit}" if len(values) == 1 else f"{low:.2f}-{high:.2f}{unit}"


def report(info: dict, speed_rows: list[dict], memory_rows: list[dict]) -> str:
    lines = [
        *header("All pairs: score_matrix vs the flattened score(), a plain script and the official flattened call",
                info),
        "MiniLM (embedded, layer 6), fp32, CPU, batch_size=64; N distinct texts against themselves (N x N "
        "pairs): short = Tatoeba English sentences of 5-15 words (STS-B-like), news = WMT17 de-en references. "
        "Seconds per call (range over repeats). x = the other call's seconds over score_matrix's in the same "
        "repeat (above 1: score_matrix is faster). flattened = `score()` on the N x N pairs as two lists (cache "
        "off, as module-level `score()`; each text is embedded once in a call either way). plain = a script that "
        "embeds the N texts in one padded batch and matches all pairs with one einsum (no idf, no chunks, no "
        "checks): the speed of one matrix product. The official package runs at batch_size=64: its padded "
        "batches drift from its own batch_size=1 numbers (docs/exactness.md), which ours equal "
        "(tests/test_parity.py; `--render` re-reads a run's json).", "",
    ]

    def delta(row: dict, name: str) -> str:
        return f"{row[name]:.1e}" if name in row else "not run"

    lines += table(
        ["texts", "N x N", "score_matrix s", "flattened s", "plain s", "official s", "x vs flattened", "x vs plain",
         "x vs official", "max abs dF vs flattened", "vs plain", "vs official"],
        [[row.get("texts", "news"), f"{row['size']} x {row['size']}", spread(row["seconds"]["matrix"]),
          spread(row["seconds"]["flattened"]), spread(row["seconds"].get("plain", [])),
          spread(row["seconds"]["official"]), spread(row["x_vs_flattened"], "x"),
          spread(row.get("x_vs_plain", []), "x"), spread(row["x_vs_official"], "x"),
          delta(row, "max_abs_delta_vs_flattened"), delta(row, "max_abs_delta_vs_plain"),
          delta(row, "max_abs_delta_vs_official")] for row in speed_rows])
    lines += ["", "Peak memory of score_matrix over N x N short texts (Tatoeba English, 5-15 words), "
              "in a fresh process: peak RSS minus the RSS with the model loaded.", "",
              *table(["N x N", "above the loaded model", "NaN"],
                     [[f"{r['size']} x {r['size']}", f"{r['above_model_gib']:.3f} GiB", r["nan"]] for r in memory_rows])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    def sizes(text: str) -> list[int]:
        return [int(v) for v in text.split(",") if v]

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=sizes, default=[64, 256])
    parser.add_argument("--official-sizes", type=sizes, default=[64, 256])
    parser.add_argument("--memory-sizes", type=sizes, default=[512, 1024])
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the first size (larger sizes: 1)")
    parser.add_argument("--device", default="cpu", help="where every method runs (CPU: the committed results)")
    parser.add_argument("--render", type=Path, help="write the report of a saved all_pairs.json again (no scoring)")
    args, folder, info = begin(parser, argv, threads=2, data=True, serial_tokenizers=True)
    if args.render:
        saved = json.loads(args.render.read_text(encoding="utf-8"))
        write_results(folder, "all_pairs", saved, report(saved["machine"], saved["speed"], saved["memory"]))
        return
    speed_rows = speed(args)
    memory_rows = memory(args)
    result = {"machine": info, "device": args.device, "speed": speed_rows, "memory": memory_rows}
    write_results(folder, "all_pairs", result, report(info, speed_rows, memory_rows))


if __name__ == "__main__":
    main()
