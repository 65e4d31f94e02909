"""Parity table: max |delta| of our P, R, F against the official bert-score package (batch_size=1).

The same cases as tests/test_parity.py, with the deltas printed and saved instead of asserted:
real MiniLM weights on WMT17 de-en pairs (idf off/on, multi-reference, custom baseline, all
layers) and tiny random models of other tokenizer families built offline.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/parity.py

Writes parity.md and .json to benchmarks/scratch/ (git-ignored), or
to benchmarks/results/ with --update-results, or to --out FOLDER.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import torch  # noqa: E402

from bertscore import score  # noqa: E402
from bertscore.sources import embedded_model_dir  # noqa: E402
from conftest import SENTENCES  # noqa: E402
from harness import max_delta, official_score, table, timed, wmt17_pairs  # noqa: E402
from machine import add_output_options, machine_info, machine_line, output_folder, write_results  # noqa: E402
from shared_data import DEFAULT_DATA  # noqa: E402
from tiny_models import build_all  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output_options(parser)
    args = parser.parse_args(argv)
    out = output_folder(args)
    torch.set_num_threads(2)
    machine = machine_info()
    print(machine_line(machine), flush=True)
    cands, refs = wmt17_pairs(DEFAULT_DATA, "de-en", 200)
    minilm = embedded_model_dir()
    rows = []

    def case(family: str, mode: str, n: int, model_dir: Path, layers: int, c, r, **kwargs) -> None:
        official_kwargs = dict(kwargs)
        if kwargs.get("rescale_with_baseline"):
            official_kwargs["lang"] = "en"  # the official package asserts a language when rescaling
        seconds, (ours, theirs) = timed(lambda: (
            score(c, r, model_type=str(model_dir), num_layers=layers, device="cpu", **kwargs),
            official_score(c, r, model_dir, layers, device=None, batch_size=1, **official_kwargs)))
        rows.append({"family": family, "mode": mode, "pairs": n, "max_abs_delta": max_delta(ours, theirs)})
        print(json.dumps(rows[-1]), f"({seconds:.0f} s)", flush=True)

    case("MiniLM (real weights)", "idf off", 200, minilm, 4, cands, refs)
    case("MiniLM (real weights)", "idf on", 200, minilm, 4, cands, refs, idf=True)
    multi = [[refs[i], refs[i + 1]] if i % 3 else [refs[i]] * 2 for i in range(100)]
    case("MiniLM (real weights)", "multi-reference, idf on", 100, minilm, 5, cands[:100], multi, idf=True)
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "minilm.tsv"
        baseline.write_text("LAYER,P,R,F\n" + "".join(
            f"{k},{0.30 + 0.05 * k:.4f},{0.32 + 0.05 * k:.4f},{0.31 + 0.05 * k:.4f}\n" for k in range(7)))
        case("MiniLM (real weights)", "custom baseline", 100, minilm, 3, cands[:100], refs[:100],
             rescale_with_baseline=True, baseline_path=str(baseline))
        case("MiniLM (real weights)", "all layers", 60, minilm, 6, cands[:60], refs[:60], all_layers=True)
        tiny = build_all(Path(tmp) / "tiny")
        texts_c = cands[:50] + SENTENCES
        texts_r = refs[:50] + SENTENCES[1:] + SENTENCES[:1]
        names = {"roberta": "RoBERTa byte-level BPE (prefix space)", "xlmr": "XLM-R SentencePiece/Unigram",
                 "electra": "ELECTRA WordPiece"}
        for key, family in names.items():
            case(family, "idf off", len(texts_c), tiny[key], 2, texts_c, texts_r)
            case(family, "idf on", len(texts_c), tiny[key], 2, texts_c, texts_r, idf=True)

    lines = ["# Parity with the official bert-score package", "",
             "Reproduce: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/parity.py` (asserted to <= 1e-5 by "
             "`tests/test_parity.py`).", "",
             f"Official package: bert-score {importlib.metadata.version('bert-score')} run with `batch_size=1`; ours with its defaults "
             "(token-budget batches). Inputs: WMT17 de-en segment-level pairs (real MiniLM weights) and, for the tiny "
             "random models built offline, 50 WMT17 pairs plus 10 hand-written sentences.", "",
             machine_line(machine), "",
             *table(["model family", "mode", "pairs", "max abs delta (P, R, F)"],
                    [[r["family"], r["mode"], r["pairs"], f"{r['max_abs_delta']:.2e}"] for r in rows])]
    write_results(out, "parity", {"rows": rows, "machine": machine}, "\n".join(lines) + "\n")
    return 0 if all(r["max_abs_delta"] <= 1e-5 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
