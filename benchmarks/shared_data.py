"""The benchmarks' public data: where it is looked for, and the one message when it is missing.

The data lies beside the clone, in `../shared/data` (or the folder `--data` or BERTSCORE_DATA names),
not in it; docs/testing.md ("The benchmarks' data") names its public sources and their layout.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("BERTSCORE_DATA", ROOT.parent / "shared" / "data"))
SOURCES = {
    "wmt17": "the WMT17 metrics task's to-English data, from "
             "https://github.com/AIPHES/ACL20-Reference-Free-MT-Evaluation (folder WMT17/)",
    "tatoeba": "the Tatoeba test set of https://github.com/facebookresearch/LASER (data/tatoeba/v1)",
}


def missing_data(what: str, kind: str = "wmt17") -> str:
    """The error for data a benchmark needs and cannot find: what, where it comes from, how to point at it."""
    return (f"error: {what} not found. This is {SOURCES[kind]}: docs/testing.md (\"The benchmarks' data\") "
            f"says how to fetch it and lay it out. Pass --data FOLDER (the folder holding {kind}/) or set "
            "BERTSCORE_DATA.")
