"""torchmetrics' BERTScore, the official package batched, and bertscore.torchmetrics against the definition.

The definition is the official bert-score package run with `batch_size=1` (no padding, no batch
neighbours). On WMT17 de-en human-judged pairs and the embedded MiniLM (layer 6), this measures:

1. `bertscore.torchmetrics.BERTScore` updated in batches of 10 (and through `forward`): max |delta|.
2. torchmetrics' `BERTScore` updated in batches of 10, computed once (the epoch pattern), and
   computed per batch of 10 (`forward`): how many F1s differ, mean and max |dF1|, and how many of a
   batch's scores are the definition's score of *another* (candidate, reference) pairing of that
   batch (its inputs are sorted by length per side: torchmetrics issue #2728).
3. Padding winning a max: the official package batched (`batch_size=64`) on the same pairs and on an
   all-pairs run of unrelated texts (a token's best cosine can be negative, and a 0-masked pad wins);
   torchmetrics on the worst of those pairs, one pair per call.
4. A 702-token text: torchmetrics' error; ours truncates it with a note, or reads it whole.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/torchmetrics_compare.py [--pairs 400] [--update-results]

Needs ../shared/data (WMT17), torchmetrics and bert-score (`pip install -e ".[bench]"`).
"""

import argparse
import importlib.metadata
import sys
import time
import warnings
from pathlib import Path

from harness import official_scorer, table, wmt17_pairs
from machine import DEFAULT_DATA, begin, header, machine_line, write_results

import torch  # after machine: it sets the offline defaults before transformers loads
import transformers
from torchmetrics.text.bert import BERTScore as TorchmetricsBERTScore

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.sources import embedded_model_dir
from bertscore.torchmetrics import BERTScore

LAYER = 6  # MiniLM's default layer here (its last); --layer picks another
BATCH = 10  # pairs per update, as a validation loop feeds them
SAME = 1e-4  # |dF1| above this is a different number (float rounding is ~1e-7)
COLUMNS = ("precision", "recall", "f1")


def deltas(values: torch.Tensor, definition: torch.Tensor) -> dict:
    diff = (values.double() - definition.double()).abs()
    return {"differ": int((diff > SAME).sum()), "of": len(diff), "mean_abs": float(diff.mean()), "max_abs": float(diff.max())}


def worst_pair(values: torch.Tensor, definition: torch.Tensor) -> dict:
    index = int((values - definition).abs().argmax())
    return {"index": index, "definition_f1": float(definition[index]), "got_f1": float(values[index])}


def torchmetrics_metric(model_dir: Path, layer: int) -> TorchmetricsBERTScore:
    return TorchmetricsBERTScore(model_name_or_path=str(model_dir), num_layers=layer, lang="en", device="cpu")


def pairings_attributed(tm_f1: torch.Tensor, cands: list[str], refs: list[str], scorer: BERTScorer) -> dict:
    """Per batch of BATCH pairs: whose definition score each of torchmetrics' F1s is (its own pair's, another
    pairing's of the batch, or none), from the definition's F1 of every (candidate, reference) of the batch."""
    own = other = neither = 0
    for start in range(0, len(cands), BATCH):
        c, r = cands[start:start + BATCH], refs[start:start + BATCH]
        grid = scorer.score([x for x in c for _ in r], [y for _ in c for y in r])[2].view(len(c), len(r))
        for i in range(len(c)):
            distance = (grid - tm_f1[start + i]).abs()
            a, b = divmod(int(distance.argmin()), len(r))
            if float(distance[a, b]) > 1e-3:
                neither += 1
            elif (a, b) == (i, i):
                own += 1
            else:
                other += 1
    return {"own_pairing": own, "another_pairing": other, "no_pairing": neither}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400, help="WMT17 de-en pairs (default 400)")
    parser.add_argument("--grid", type=int, default=20, help="texts per side of the all-pairs run (default 20)")
    parser.add_argument("--layer", type=int, default=LAYER,
                        help=f"MiniLM layer (default {LAYER}); another layer writes torchmetrics_compare_layer<k>")
    args, out, machine = begin(parser, argv, threads=2)
    cands, refs = wmt17_pairs(DEFAULT_DATA, "de-en", args.pairs or None)
    layer = args.layer
    model_dir = embedded_model_dir()
    warnings.simplefilter("ignore")  # torchmetrics' and transformers' advice; our truncation note is recorded below
    transformers.logging.set_verbosity_error()  # torchmetrics loads the model at every compute: no load banners
    transformers.logging.disable_progress_bar()
    started = time.perf_counter()
    result: dict = {"pairs": len(cands), "batch": BATCH, "layer": layer, "grid": args.grid, "machine": machine, "versions": {
        name: importlib.metadata.version(name) for name in ("torchmetrics", "bert-score", "transformers", "torch")}}

    official = official_scorer(model_dir, layer, batch_size=1)
    definition = official.score(cands, refs, batch_size=1)
    ours_scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=layer, device="cpu")
    print(f"definition computed ({time.perf_counter() - started:.0f} s)", flush=True)

    # 1. ours, updated batch by batch and through forward
    metric, forwarded = BERTScore(EMBEDDED_MODEL_NAME, num_layers=layer, device="cpu"), []
    for start in range(0, len(cands), BATCH):
        forwarded.append(metric(cands[start:start + BATCH], refs[start:start + BATCH])["f1"])
    ours = metric.compute()
    result["ours"] = {name: deltas(ours[name], d) for name, d in zip(COLUMNS, definition)}
    result["ours"]["forward_f1"] = deltas(torch.cat(forwarded), definition[2])

    # 2. torchmetrics: the epoch pattern (update per batch, compute once), and compute per batch (forward)
    tm = torchmetrics_metric(model_dir, layer)
    for start in range(0, len(cands), BATCH):
        tm.update(cands[start:start + BATCH], refs[start:start + BATCH])
    epoch = tm.compute()
    result["torchmetrics_epoch"] = {name: deltas(epoch[name].cpu(), d) for name, d in zip(COLUMNS, definition)}
    tm_batches = torch.cat([torchmetrics_metric(model_dir, layer)(cands[s:s + BATCH], refs[s:s + BATCH])["f1"].cpu()
                            for s in range(0, len(cands), BATCH)])
    result["torchmetrics_per_batch"] = {"f1": deltas(tm_batches, definition[2]),
                                        "pairings": pairings_attributed(tm_batches, cands, refs, ours_scorer)}
    print(f"torchmetrics measured ({time.perf_counter() - started:.0f} s)", flush=True)

    # 3. padding in a max: the official package batched, on the pairs and on an all-pairs run
    batched = official.score(cands, refs, batch_size=64)
    result["official_batched"] = {name: deltas(b, d) for name, b, d in zip(COLUMNS, batched, definition)}
    result["official_batched"]["worst_f1"] = worst_pair(batched[2], definition[2])
    grid_c = [c for c in cands[:args.grid] for _ in range(args.grid)]
    grid_r = [r for _ in range(args.grid) for r in refs[:args.grid]]
    grid_def = official.score(grid_c, grid_r, batch_size=1)
    grid_batched = official.score(grid_c, grid_r, batch_size=64)
    grid_ours = ours_scorer.score(grid_c, grid_r)
    result["all_pairs"] = {
        "pairs": len(grid_c),
        "official_batched": {name: deltas(b, d) for name, b, d in zip(COLUMNS, grid_batched, grid_def)},
        "ours": {name: deltas(o, d) for name, o, d in zip(COLUMNS, grid_ours, grid_def)},
    }
    worst = sorted(range(len(grid_c)), key=lambda i: -abs(float(grid_batched[2][i] - grid_def[2][i])))[:5]
    lowest = int(grid_def[2].argmin())  # the least related pair: its best cosines are the likeliest to be negative
    worst += [lowest] if lowest not in worst else []
    rows = []
    for i in worst:  # torchmetrics one pair per call: no other pair to be sorted against, padding still there
        tm_one = torchmetrics_metric(model_dir, layer)([grid_c[i]], [grid_r[i]])
        rows.append({"pair": i, "definition_f1": float(grid_def[2][i]), "official_batched_f1": float(grid_batched[2][i]),
                     "torchmetrics_f1": float(tm_one["f1"].cpu().reshape(-1)[0]), "ours_f1": float(grid_ours[2][i])})
    result["all_pairs"]["worst"] = rows
    print(f"padding measured ({time.perf_counter() - started:.0f} s)", flush=True)

    # 4. a 702-token text
    text = ""
    for sentence in refs:
        text = f"{text} {sentence}".strip()
        if len(ours_scorer.model.tokenize([text], whole=True)[0]) >= 702:
            break
    while len(ours_scorer.model.tokenize([text.rsplit(" ", 1)[0]], whole=True)[0]) >= 702:
        text = text.rsplit(" ", 1)[0]  # the shortest such text: about 702 tokens
    length = len(ours_scorer.model.tokenize([text], whole=True)[0])
    try:
        torchmetrics_metric(model_dir, layer)([text], [refs[0]])
        crash = None
    except Exception as error:  # noqa: BLE001 - what torchmetrics raises is the finding
        crash = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    notes: list[str] = []
    cut = ours_scorer.score([text], [refs[0]], notes=notes)[2].item()
    whole = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=layer, device="cpu", long_texts="window",
                       loaded_model=ours_scorer.model).score([text], [refs[0]])[2].item()
    result["long_text"] = {"tokens": length, "torchmetrics": crash, "ours_truncate_f1": cut, "ours_window_f1": whole,
                           "ours_note": notes[0] if notes else None}
    result["seconds"] = round(time.perf_counter() - started, 1)
    stem = "torchmetrics_compare" + ("" if layer == LAYER else f"_layer{layer}")
    write_results(out, stem, result, report(result))
    return 0


def report(r: dict) -> str:
    def line(name: str, d: dict) -> list:
        return [name, f"{d['differ']} / {d['of']}", f"{d['mean_abs']:.2e}", f"{d['max_abs']:.2e}"]

    v, pairing = r["versions"], r["torchmetrics_per_batch"]["pairings"]
    lines = [
        *header("torchmetrics' BERTScore, the official package batched, and bertscore.torchmetrics", None,
                "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/torchmetrics_compare.py --pairs "
                f"{r['pairs']} --grid {r['grid']} --layer {r['layer']}", f" ({r['seconds']:.0f} s here)."),
        f"The definition: the official bert-score {v['bert-score']} with `batch_size=1`. Data: the first {r['pairs']} "
        f"WMT17 de-en human-judged pairs; model: the embedded all-MiniLM-L6-v2, layer {r['layer']}; updates of "
        f"{r['batch']} pairs. torchmetrics {v['torchmetrics']}, transformers {v['transformers']}, torch {v['torch']}. "
        f"'differ': |delta| > {SAME}.", "",
        machine_line(r["machine"]), "",
    ]
    grid = r["all_pairs"]
    lines += table(["against the definition", "differ", "mean abs delta", "max abs delta"], [
        *(line(f"bertscore.torchmetrics, {column} (update, compute)", r["ours"][column]) for column in COLUMNS),
        line("bertscore.torchmetrics, f1 (forward per batch)", r["ours"]["forward_f1"]),
        *(line(f"torchmetrics BERTScore, {column} (update per batch, compute once)", r["torchmetrics_epoch"][column])
          for column in COLUMNS),
        line("torchmetrics BERTScore, f1 (forward per batch)", r["torchmetrics_per_batch"]["f1"]),
        *(line(f"official package batch_size=64, {column}", r["official_batched"][column]) for column in COLUMNS),
        *(line(f"all-pairs run ({grid['pairs']}): official batch_size=64, {column}", grid["official_batched"][column])
          for column in COLUMNS),
        line(f"all-pairs run ({grid['pairs']}): bertscore, f1", grid["ours"]["f1"])])
    lines += [
        "", f"torchmetrics per batch of {r['batch']}: of its {r['torchmetrics_per_batch']['f1']['of']} F1s, "
        f"{pairing['own_pairing']} are the definition's F1 of their own pair, {pairing['another_pairing']} that of "
        f"another (candidate, reference) pairing of the same batch, {pairing['no_pairing']} neither (within 1e-3).", "",
        "Where padding wins a max (the all-pairs run's largest official batched F1 deltas; torchmetrics one pair per "
        "call, so that no other pair can be sorted in its place):", "",
        *table(["pair", "definition F1", "official batch_size=64", "torchmetrics", "bertscore"],
               [[w["pair"], f"{w['definition_f1']:.4f}", f"{w['official_batched_f1']:.4f}",
                 f"{w['torchmetrics_f1']:.4f}", f"{w['ours_f1']:.4f}"] for w in grid["worst"]]),
    ]
    worst = r["official_batched"]["worst_f1"]
    long = r["long_text"]
    lines += [
        "", f"The last row is the all-pairs run's lowest definition F1. On the {r['pairs']} WMT17 pairs the official "
        f"package batched is furthest off at pair {worst['index']}: F1 {worst['got_f1']:.6f} where the definition "
        f"gives {worst['definition_f1']:.6f}.", "",
        f"A {long['tokens']}-token text: torchmetrics raises `{long['torchmetrics']}`; bertscore truncates it as "
        f"the official package does (F1 {long['ours_truncate_f1']:.4f}, with the note \"{(long['ours_note'] or '')[:90]}...\") "
        f"or, with `long_texts='window'`, reads it whole (F1 {long['ours_window_f1']:.4f}).",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
