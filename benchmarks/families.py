"""Every architecture family of the official model table: our numbers against the official package's.

Each family's tiny random model (built offline by the tests' builders, tests/tiny_families.py) on the
first 40 vendored WMT17 de-en pairs at layer 2: max |delta| of P, R and F against the official
bert-score 0.3.13 at batch_size=1 (its padding cannot leak into a max there; with the minimal patches
of tiny_families.official_patches where it needs them) with idf off and on and all layers, ours
against ours over batchings, the token ids against the official sent_encode, and what the padding
probe chose. Then what one-length batches cost (`one_length_cost`) and what the probe costs
(`probe_cost`), and the official package's call-order dependence on block-sparse BigBird (unpatched).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/families.py [--threads 1]

Writes families.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "tests")]

from harness import FIXTURE, max_delta, official_scorer, repeated, table, wmt17_pairs  # noqa: E402
from machine import begin, header, write_results  # noqa: E402

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer  # noqa: E402
from bertscore.scoring.embed import token_budget_batches  # noqa: E402
from bertscore.models.loading import load_model  # noqa: E402
from bertscore.models.padding import PROBE_TEXT  # noqa: E402
from bertscore.models.padding import padding_probe  # noqa: E402
from tiny_families import FAMILIES, build, official_scores, official_token_ids  # noqa: E402

PAIRS = 40
LAYER = 2


def family_row(name: str, folder: Path, cands: list[str], refs: list[str]) -> dict:
    """One family's figures (see the module docstring)."""
    model = load_model(str(folder), LAYER)
    everything = load_model(str(folder), 3, all_layers=True)

    def ours(loaded, **options):
        return BERTScorer(model_type=loaded.name, loaded_model=loaded, all_layers=loaded.all_layers, cache_bytes=0,
                          device="cpu", **options)

    row = {"family": name, "examples": list(FAMILIES[name].examples), "tokenizer": FAMILIES[name].tokenizer,
           "final_norm": FAMILIES[name].final_norm, "padding_safe": model.is_padding_safe()}
    default = ours(model).score(cands, refs)
    row["no_idf"] = max_delta(default, official_scores(name, folder, cands, refs, LAYER))
    row["idf"] = max_delta(ours(model, idf=True).score(cands, refs),
                           official_scores(name, folder, cands, refs, LAYER, idf=True))
    rows = ours(everything).score(cands, refs)
    row["all_layers"] = max_delta(rows, official_scores(name, folder, cands, refs, 3, all_layers=True))
    row["row_vs_num_layers"] = max_delta([t[LAYER] for t in rows], default)  # docs/parameters.md, Layer numbering
    one = ours(model).score(cands, refs, batch_size=1)
    backwards = [t.flip(0) for t in ours(model).score(cands[::-1], refs[::-1])]
    row["batching"] = max(max_delta(default, one), max_delta(backwards, one))
    texts = cands + refs
    row["token_ids_equal"] = model.tokenize(texts) == official_token_ids(name, folder, texts)
    return row


def best_of(fn, rounds: int) -> dict[str, float]:
    """The best of `rounds` runs of fn(): wall seconds and this process's CPU seconds."""
    walls, cpus, _ = repeated(fn, rounds)
    return {"wall": min(walls), "cpu": min(cpus)}


def one_length_cost(root: Path, rounds: int) -> dict:
    """A random ConvBERT of MiniLM's size over the 300 vendored pairs: one length a batch (what the
    probe chose) against padded batches (what it would get without the probe)."""
    from transformers import AutoTokenizer, ConvBertConfig, ConvBertModel

    folder = build("convbert", root)
    sized = root / "convbert-minilm-size"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.save_pretrained(sized)
    torch.manual_seed(0)
    config = ConvBertConfig(vocab_size=len(tokenizer), hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                            intermediate_size=1536, embedding_size=384, max_position_embeddings=512,
                            pad_token_id=tokenizer.pad_token_id)
    ConvBertModel(config).eval().save_pretrained(sized)
    cands, refs = wmt17_pairs(FIXTURE, limit=300)
    model = load_model(str(sized), 6)
    padded = dataclasses.replace(model, padding_safe=True)
    scorers = {label: BERTScorer(model_type=m.name, loaded_model=m, cache_bytes=0, device="cpu")
               for label, m in (("one length", model), ("padded", padded))}
    lengths = [len(ids) for ids in model.tokenize(list(set(cands + refs)))]
    budget = scorers["padded"].embedder.max_tokens_per_batch
    batches = {label: len(list(token_budget_batches(lengths, budget, None, one_length=label == "one length")))
               for label in scorers}
    scores = {label: s.score(cands, refs) for label, s in scorers.items()}  # also the warm-up
    seconds = {label: best_of(lambda s=s: s.score(cands, refs), rounds) for label, s in scorers.items()}
    alone = BERTScorer(model_type=model.name, loaded_model=model, cache_bytes=0, device="cpu").score(
        cands, refs, batch_size=1)
    return {"pairs": len(cands), "padding_safe": model.is_padding_safe(), "seconds": seconds, "batches": batches,
            "ratio": seconds["one length"]["cpu"] / seconds["padded"]["cpu"],
            "wall_ratio": seconds["one length"]["wall"] / seconds["padded"]["wall"],
            "one_length_vs_alone": max_delta(scores["one length"], alone),
            "padded_vs_alone": max_delta(scores["padded"], alone)}


def probe_cost(rounds: int) -> dict:
    """The padding probe on the embedded MiniLM beside what it rides along with."""
    model = load_model(EMBEDDED_MODEL_NAME)
    ids = model.tokenize([PROBE_TEXT])[0]
    wall, cpu, probe = repeated(lambda: padding_probe(model.encode, ids, model.pad_token_id, model.max_length,
                                                      model.device), max(5, rounds))
    load = best_of(lambda: load_model(EMBEDDED_MODEL_NAME), 1)  # a second load (caches warm); it runs no probe
    cands, refs = wmt17_pairs(FIXTURE, limit=300)
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, loaded_model=model, cache_bytes=0, device="cpu")
    scorer.score(cands[:16], refs[:16])
    score_seconds = best_of(lambda: scorer.score(cands, refs), rounds)
    return {"probe_seconds": {"wall": statistics.median(wall), "cpu": statistics.median(cpu)},
            "load_seconds": load,
            "score_300_pairs_seconds": score_seconds, "padding_safe": model.is_padding_safe(), **probe}


def official_call_order(root: Path, cands: list[str], refs: list[str]) -> float:
    """The official package (unpatched) on block-sparse BigBird: its first call against its second."""
    official = official_scorer(build("bigbird-sparse", root), LAYER)
    first = official.score(cands, refs, batch_size=1)
    return max_delta(first, official.score(cands, refs, batch_size=1))


def cells(r: dict) -> list[str]:
    """A family's cells of both tables: family, official models, tokenizer, max |delta| no idf, idf, all layers."""
    return [r["family"] + (" (final norm)" if r["final_norm"] else ""), ", ".join(r["examples"]), r["tokenizer"],
            f"{r['no_idf']:.1e}", f"{r['idf']:.1e}", f"{r['all_layers']:.1e}"]


def exactness_table(rows: list[dict]) -> str:
    """The family table of docs/exactness.md, from this benchmark's rows (tests/test_families.py
    checks that the doc quotes the committed results/families.json exactly)."""
    return "\n".join(table(
        ["family", "official models of this kind", "tokenizer", "no idf", "idf", "all layers", "batches"],
        [[*cells(r), "padded" if r["padding_safe"] else "one length"] for r in rows])) + "\n"


def markdown(rows: list[dict], cost: dict, probe: dict, order: float, machine: dict) -> str:
    lines = [
        *header("Every architecture family against the official package", machine,
                "HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/families.py --update-results"),
        f"Tiny random models (tests/tiny_families.py: hidden 32, 3 layers), layer {LAYER}, the first {PAIRS} "
        "vendored WMT17 de-en pairs; max |delta| over P, R and F. Official: bert-score 0.3.13 at batch_size=1. "
        "Batching: ours default vs one text a batch vs the input reversed. Batches: what the padding probe chose. "
        f"Row {LAYER} vs L{LAYER}: ours, `all_layers` row {LAYER} against `num_layers={LAYER}` (docs/parameters.md, "
        "Layer numbering; the official package gives the same).", "",
        *table(["family", "official models of this kind", "tokenizer", "no idf", "idf", "all layers", "batching",
                "token ids", "batches", f"row {LAYER} vs L{LAYER}"],
               [[*cells(r), f"{r['batching']:.1e}", "equal" if r["token_ids_equal"] else "DIFFER",
                 "padded" if r["padding_safe"] else "one length", f"{r['row_vs_num_layers']:.1e}"] for r in rows]),
    ]
    worst = max(max(r["no_idf"], r["idf"], r["all_layers"]) for r in rows)
    lines += [
        "", f"Largest difference against the official package: {worst:.1e}; largest batching difference: "
        f"{max(r['batching'] for r in rows):.1e}.", "",
        "## One length a batch: the cost", "",
        f"A random ConvBERT of MiniLM's size (hidden 384, 6 layers), {cost['pairs']} vendored WMT17 pairs, cache off, "
        f"best of the rounds (CPU seconds of this process; wall seconds in brackets): one length a batch "
        f"{cost['seconds']['one length']['cpu']:.2f} s ({cost['seconds']['one length']['wall']:.2f} s; "
        f"{cost['batches']['one length']} encoder batches) against padded batches "
        f"{cost['seconds']['padded']['cpu']:.2f} s ({cost['seconds']['padded']['wall']:.2f} s; "
        f"{cost['batches']['padded']} batches): **{cost['ratio']:.2f}x** the CPU time ({cost['wall_ratio']:.2f}x the "
        f"wall time). Padded, its scores move by {cost['padded_vs_alone']:.1e} against one text a batch; one length "
        f"a batch, by {cost['one_length_vs_alone']:.1e}.", "",
        "## The probe: the cost", "",
        f"On the embedded MiniLM: {probe['probe_seconds']['cpu'] * 1000:.1f} ms of CPU time (median; "
        f"{probe['probe_seconds']['wall'] * 1000:.1f} ms wall), once per loaded model, in its first scoring call "
        f"of texts of different lengths (never at load, which takes {probe['load_seconds']['cpu']:.2f} s of CPU time, "
        f"{probe['load_seconds']['wall']:.2f} s wall, for a second load in the process); scoring 300 pairs takes "
        f"{probe['score_300_pairs_seconds']['cpu']:.2f} s of CPU time. It found padded vs alone {probe['alone']:.1e}, "
        f"padding content {probe['content']:.1e}: padded batches.", "",
        "## The official package and block-sparse BigBird", "",
        f"Unpatched, the official package's second call differs from its first by {order:.1e} (transformers switched "
        "the model to full attention for good at the first short text of the first call).", "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--families", default="", help="comma-separated families (default: all)")
    args, out, machine = begin(parser, argv, threads=1)
    warnings.simplefilter("ignore")  # the tiny models' 128 tokens truncate a few texts (both packages)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the official runs on BigBird warn at every short text
    cands, refs = wmt17_pairs(FIXTURE, limit=PAIRS)
    names = [n for n in args.families.split(",") if n] or list(FAMILIES)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for name in names:
            started = time.perf_counter()
            rows.append(family_row(name, build(name, root), cands, refs))
            print(f"{name}: {rows[-1]} ({time.perf_counter() - started:.1f} s)", flush=True)
        order = official_call_order(root, cands, refs)
        cost = one_length_cost(root, args.rounds)
        print(cost, flush=True)
    probe = probe_cost(args.rounds)
    print(probe, flush=True)
    result = {"pairs": PAIRS, "layer": LAYER, "families": rows, "one_length_cost": cost, "probe": probe,
              "official_bigbird_call_order": order, "machine": machine}
    write_results(out, "families", result, markdown(rows, cost, probe, order, machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
