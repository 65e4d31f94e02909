"""Rescale baselines: the official per-model, per-layer tables and the linear rescaling.

The packaged tables are the 72 baseline files of bert-score 0.3.13 (MIT licence, (c) 2019
Tianyi Zhang, Varsha Kishore, Felix Wu, Kilian Q. Weinberger and Yoav Artzi; see
data/rescale_baseline/LICENSE). Each is comma-separated `LAYER,P,R,F`, one row per layer.
"""

from __future__ import annotations

import csv
import hashlib
from functools import lru_cache
from importlib import resources
from pathlib import Path

import torch

_BASELINE_ROOT = "data/rescale_baseline"


def _baseline_dir() -> Path:
    return Path(str(resources.files("bertscore").joinpath(_BASELINE_ROOT)))


def packaged_languages(model_type: str) -> list[str]:
    """Languages that have a packaged baseline for `model_type`."""
    root = _baseline_dir()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / f"{model_type}.tsv").is_file())


def packaged_baseline_path(model_type: str, lang: str | None) -> Path:
    """The packaged baseline file of a model (and language); a clear error when there is none."""
    languages = packaged_languages(model_type)
    if not languages:
        raise ValueError(
            f"no packaged rescale baseline for model {model_type!r}; pass baseline_path=<your LAYER,P,R,F "
            "file> or rescale_with_baseline=False"
        )
    if lang is None:
        if len(languages) > 1:
            raise ValueError(
                f"model {model_type!r} has baselines for several languages {languages}: pass lang=..."
            )
        lang = languages[0]
    if lang not in languages:
        raise ValueError(
            f"no rescale baseline for model {model_type!r} in language {lang!r} (available: {languages}); "
            "pass baseline_path=... or rescale_with_baseline=False"
        )
    return _baseline_dir() / lang / f"{model_type}.tsv"


@lru_cache(maxsize=64)
def _read_table(path: str, mtime: float) -> torch.Tensor:
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        raise ValueError(f"baseline file {path} is empty")
    header, body = rows[0], rows[1:]
    if [h.strip().upper() for h in header[:4]] != ["LAYER", "P", "R", "F"]:
        raise ValueError(f"baseline file {path}: expected the header LAYER,P,R,F, got {','.join(header)}")
    values = []
    for line_number, row in enumerate(body, start=2):
        try:
            values.append([float(x) for x in row[1:4]])
        except (ValueError, IndexError) as error:
            raise ValueError(f"baseline file {path}, line {line_number}: {row} is not LAYER,P,R,F") from error
        if len(row) < 4:
            raise ValueError(f"baseline file {path}, line {line_number}: {row} is not LAYER,P,R,F")
    return torch.tensor(values, dtype=torch.float32)


def load_baseline(path: str | Path) -> torch.Tensor:
    """The baseline table [layers + 1, 3] (columns P, R, F) of a LAYER,P,R,F file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"baseline file not found: {path}")
    return _read_table(str(path), path.stat().st_mtime)


def baseline_rows(table: torch.Tensor, num_layers: int | None, path: str | Path) -> torch.Tensor:
    """The row of layer `num_layers` [3], or every row [layers + 1, 3] when `num_layers` is None."""
    if num_layers is None:
        return table
    if not 0 <= num_layers < table.shape[0]:
        raise ValueError(f"baseline {path} has layers 0..{table.shape[0] - 1}, not layer {num_layers}")
    return table[num_layers]


def rescale(scores: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """(x - b) / (1 - b) per column; scores [..., 3] and baseline broadcastable [..., 3]."""
    return (scores - baseline) / (1 - baseline)


def file_fingerprint(path: str | Path) -> str:
    """A short content hash of a (custom) baseline file."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:10]
