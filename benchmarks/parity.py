"""Parity table: max |delta| of our P, R, F against the official bert-score package (batch_size=1).

The same cases as tests/test_parity.py, with the deltas printed and saved instead of asserted:
real MiniLM weights on WMT17 de-en pairs (idf off/on, multi-reference, custom baseline, all
layers) and tiny random models of other tokenizer families built offline. `compare` is what
gpu_check.py's parity section runs: ours on the GPU against ours on the CPU.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/parity.py [--device cpu]

Writes parity.md and .json to benchmarks/scratch/ (--update-results: benchmarks/results/; or --out).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from harness import max_delta, official_score, table, timed, wmt17_pairs
from machine import DEFAULT_DATA, ROOT, begin, command, header, machine_line, write_results

from bertscore import score
from bertscore.sources import embedded_model_dir

sys.path.insert(0, str(ROOT / "tests"))  # conftest's sentences, tiny_models


def case(family: str, mode: str, model: Path | str, layer: int, cands: list[str], refs: list[Any],
         **options: Any) -> dict[str, Any]:
    """One comparison: `options` go to both sides (idf, all_layers, a baseline, ...)."""
    return {"family": family, "mode": mode, "model": str(model), "layer": layer, "cands": cands, "refs": refs,
            "options": options}


def multi_references(refs: list[str]) -> list[list[str]]:
    """Two references per candidate: its own and the next one, or its own twice (every third)."""
    return [[refs[i], refs[(i + 1) % len(refs)]] if i % 3 else [refs[i]] * 2 for i in range(len(refs))]


def ours_on(device: str, **extra: Any) -> Callable[[dict[str, Any]], Any]:
    """Our `score` of a case on `device` (`extra`: more options, e.g. a token budget)."""
    return lambda c: score(c["cands"], c["refs"], model_type=c["model"], num_layers=c["layer"], device=device,
                           **c["options"], **extra)


def official(c: dict[str, Any]) -> Any:
    """The official package's `score` of a case at batch_size=1 (on its default device)."""
    options = dict(c["options"], **({"lang": "en"} if c["options"].get("rescale_with_baseline") else {}))
    return official_score(c["cands"], c["refs"], c["model"], c["layer"], device=None, batch_size=1, **options)


def compare(cases: list[dict[str, Any]], ours: Callable[[dict[str, Any]], Any],
            reference: Callable[[dict[str, Any]], Any] = official) -> list[dict[str, Any]]:
    """max |delta| over (P, R, F) of `ours` against `reference` for every case (gpu_check.py: ours on
    the GPU against ours on the CPU, and batch sizes against each other)."""
    rows = []
    for c in cases:
        seconds, (mine, theirs) = timed(lambda: (ours(c), reference(c)))
        rows.append({"family": c["family"], "mode": c["mode"], "pairs": len(c["cands"]), "max_abs_delta": max_delta(mine, theirs)})
        print(json.dumps(rows[-1]), f"({seconds:.0f} s)", flush=True)
    return rows


def measure(device: str = "cpu", pairs: int = 200) -> list[dict[str, Any]]:
    """tests/test_parity.py's cases, ours on `device` against the official package at batch_size=1."""
    from conftest import SENTENCES
    from tiny_models import build_all

    cands, refs = wmt17_pairs(DEFAULT_DATA, "de-en", pairs)
    half = pairs // 2
    minilm, real = embedded_model_dir(), "MiniLM (real weights)"
    cases = [case(real, "idf off", minilm, 4, cands, refs), case(real, "idf on", minilm, 4, cands, refs, idf=True),
             case(real, "multi-reference, idf on", minilm, 5, cands[:half], multi_references(refs[:half + 1])[:half], idf=True)]
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "minilm.tsv"
        baseline.write_text("LAYER,P,R,F\n" + "".join(
            f"{k},{0.30 + 0.05 * k:.4f},{0.32 + 0.05 * k:.4f},{0.31 + 0.05 * k:.4f}\n" for k in range(7)))
        cases += [case(real, "custom baseline", minilm, 3, cands[:half], refs[:half], rescale_with_baseline=True,
                       baseline_path=str(baseline)),
                  case(real, "all layers", minilm, 6, cands[:60], refs[:60], all_layers=True)]
        tiny = build_all(Path(tmp) / "tiny")
        texts_c, texts_r = cands[:50] + SENTENCES, refs[:50] + SENTENCES[1:] + SENTENCES[:1]
        names = {"roberta": "RoBERTa byte-level BPE (prefix space)", "xlmr": "XLM-R SentencePiece/Unigram",
                 "electra": "ELECTRA WordPiece"}
        for key, family in names.items():
            cases += [case(family, "idf off", tiny[key], 2, texts_c, texts_r),
                      case(family, "idf on", tiny[key], 2, texts_c, texts_r, idf=True)]
        return compare(cases, ours_on(device))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="where ours runs (the official package: its default)")
    args, out, machine = begin(parser, argv, threads=2)
    rows = measure(args.device)
    lines = [*header("Parity with the official bert-score package", None, command("parity.py", []),
                     " (asserted to <= 1e-5 by `tests/test_parity.py`)."),
             f"Official package: bert-score {importlib.metadata.version('bert-score')} run with `batch_size=1`; ours with its defaults "
             f"(token-budget batches) on {args.device}. Inputs: WMT17 de-en segment-level pairs (real MiniLM weights) and, "
             "for the tiny random models built offline, 50 WMT17 pairs plus 10 hand-written sentences.", "",
             machine_line(machine), "",
             *table(["model family", "mode", "pairs", "max abs delta (P, R, F)"],
                    [[r["family"], r["mode"], r["pairs"], f"{r['max_abs_delta']:.2e}"] for r in rows])]
    write_results(out, "parity", {"rows": rows, "machine": machine}, "\n".join(lines) + "\n")
    return 0 if all(r["max_abs_delta"] <= 1e-5 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
