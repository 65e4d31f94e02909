"""Regenerate wmt17_de-en_f1.tsv: real per-segment BERTScore F1 for tests/test_stats.py.

The first 400 segments (sid 1..400) of WMT17 newstest2017 de-en, four systems' outputs
(online-B.0, KIT.4951, uedin-nmt.4723, online-F.0: human DA .213, .165, .162, -.260), scored
against the reference with the embedded MiniLM (sentence-transformers/all-MiniLM-L6-v2, default
layer, fp32, no idf, no rescaling), F1 rounded to 6 decimals. Source data: ../shared/data
(WMT17 metrics task, see its README); the tests read only the TSV written here.

    HF_HUB_OFFLINE=1 .venv/bin/python tests/data/make_wmt17_f1.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer  # noqa: E402

SYSTEMS = ["online-B.0", "KIT.4951", "uedin-nmt.4723", "online-F.0"]
SEGMENTS = 400
FOLDER = ROOT.parent / "shared" / "data" / "wmt17" / "syslevel"


def main() -> None:
    read = dict(sep="\t", quoting=csv.QUOTE_NONE, keep_default_na=False)
    outputs = pd.read_csv(FOLDER / "wmt17_to_en_system_outputs.tsv.gz", **read)
    refs = pd.read_csv(FOLDER / "wmt17_to_en_references.tsv.gz", **read)
    refs = refs[refs.lp == "de-en"].set_index("sid")["reference"]
    sids = list(range(1, SEGMENTS + 1))
    scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME)
    columns = {"sid": sids}
    for system in SYSTEMS:
        rows = outputs[(outputs.lp == "de-en") & (outputs.sys == system)].set_index("sid")["candidate"]
        _, _, f1 = scorer.score([rows[s] for s in sids], [refs[s] for s in sids])
        columns[system] = [f"{v:.6f}" for v in f1.tolist()]
    out = Path(__file__).with_name("wmt17_de-en_f1.tsv")
    pd.DataFrame(columns).to_csv(out, sep="\t", index=False, quoting=csv.QUOTE_NONE)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
