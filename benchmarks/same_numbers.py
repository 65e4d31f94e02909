"""Same numbers as another revision: every scoring path, bit for bit, on this machine.

For a change that must not move a number: the checkout and an earlier revision each score the same
inputs in a fresh interpreter on this machine (parity with the official package differs between
machines at 1e-7, so it cannot show this); tensors are compared with `torch.equal`, hashes as strings.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/same_numbers.py --against 00229ed

Paths: every one PROBE names below, on 300 vendored WMT17 de-en pairs, the embedded MiniLM, CPU, float32.
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

from harness import checkout, revision, run_child, table
from machine import ROOT, begin, command, header, write_results

# Runs inside each checkout (cwd = that checkout, which is first on sys.path): writes its tensors.
PROBE = r'''
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path.cwd() / "tests"))
from conftest import WMT17_DE_EN_FIXTURE, read_pairs_tsv
from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.explain import explain_pair

cands, refs = read_pairs_tsv(WMT17_DE_EN_FIXTURE, 300)
long_c = [" ".join([c] * 12) for c in cands[:20]]
long_r = [" ".join([r] * 9) for r in refs[:20]]
groups = [[refs[i], refs[(i + 1) % len(refs)]] for i in range(len(refs))]
notes = []
base = BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu")
model = base.model
windowed = BERTScorer(loaded_model=model, long_texts="window")
fixed = BERTScorer(loaded_model=model, idf=refs[:50])
out = {
    "plain": torch.stack(base.score(cands, refs, notes=notes)),
    "idf": torch.stack(BERTScorer(loaded_model=model, idf=True).score(cands, refs, notes=notes)),
    "multi-reference idf": torch.stack(BERTScorer(loaded_model=model, idf=True).score(cands, groups, notes=notes)),
    "rescaled (packaged baseline)": torch.stack(
        BERTScorer(loaded_model=model, rescale_with_baseline=True, lang="en").score(cands, groups, notes=notes)),
    "idf from fixed texts": torch.stack(fixed.score(cands, refs, notes=notes)),
    "long texts, truncated": torch.stack(base.score(long_c, long_r, notes=notes)),
    "long texts, windowed": torch.stack(windowed.score(long_c + cands[:30], long_r + refs[:30], notes=notes)),
    "score_pairs": base.score_pairs(cands[:100], refs[:100], notes=notes),
}
explained = explain_pair(windowed, long_c[0], [long_r[0], refs[0]])
out["explain_pair"] = torch.tensor([explained.precision, explained.recall, explained.f1]
                                   + explained.best.cand_best_sim + explained.best.ref_best_sim)
out["all layers"] = torch.stack(
    BERTScorer(model_type=EMBEDDED_MODEL_NAME, all_layers=True, device="cpu").score(cands[:60], refs[:60]))
hashes = [base.hash, windowed.hash, fixed.hash]
torch.save({"tensors": out, "hashes": hashes, "notes": notes}, sys.argv[1])
'''


def run_probe(tree: Path, target: Path) -> None:
    """The probe in a fresh interpreter that imports the bertscore of `tree` (a checkout)."""
    run_child([sys.executable, "-c", PROBE, str(target)], {**os.environ, "PYTHONPATH": str(tree)}, tree, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the git revision to compare with (e.g. main~5, a tag)")
    args, out, machine = begin(parser, argv)
    import torch

    old_revision, head = revision(args.against), revision()
    with tempfile.TemporaryDirectory() as scratch:
        run_probe(checkout(old_revision, Path(scratch) / "old"), Path(scratch) / "old.pt")
        run_probe(ROOT, Path(scratch) / "new.pt")
        old, new = torch.load(Path(scratch) / "old.pt"), torch.load(Path(scratch) / "new.pt")
    rows = []
    for name, before in old["tensors"].items():
        after = new["tensors"][name]
        same = before.shape == after.shape and torch.equal(before, after)
        delta = float((before - after).abs().max()) if before.shape == after.shape else float("nan")
        rows.append({"path": name, "values": before.numel(), "bit_identical": same, "max_abs_delta": delta})
    same_hashes, same_notes = (old[key] == new[key] for key in ("hashes", "notes"))
    lines = [
        *header(f"Same numbers: {head} (this checkout) against {old_revision}", machine,
                command("same_numbers.py", ["--against", args.against])),
        *table(["path", "values", "bit-identical", "max abs delta"],
               [[r["path"], r["values"], "yes" if r["bit_identical"] else "NO", f"{r['max_abs_delta']:.3g}"] for r in rows]),
        "", f"- hashes identical: {'yes' if same_hashes else 'NO'} ({len(old['hashes'])} scorers)",
        f"- notes identical: {'yes' if same_notes else 'NO'} ({len(old['notes'])} notes)",
    ]
    write_results(out, "same_numbers", {"against": old_revision, "head": head, "rows": rows, "hashes_identical": same_hashes,
                                        "notes_identical": same_notes, "machine": machine}, lines)
    return 0 if all(r["bit_identical"] for r in rows) and same_hashes and same_notes else 1


if __name__ == "__main__":
    sys.exit(main())
