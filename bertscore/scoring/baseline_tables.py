"""Rescale baselines: per-model, per-layer tables, the linear rescaling, and the file format.

The packaged tables are the 72 baseline files of bert-score 0.3.13 (MIT licence, (c) 2019
Tianyi Zhang, Varsha Kishore, Felix Wu, Kilian Q. Weinberger and Yoav Artzi; see
data/rescale_baseline/LICENSE), plus our English baseline of the embedded MiniLM, computed from
Tatoeba sentences (see data/rescale_baseline/en/sentence-transformers/NOTICE.md). Each is
comma-separated `LAYER,P,R,F`, one row per layer (0 = the embeddings layer).

This module is pure (no model code): read, check, look up and rescale; write a computed table and
its sidecar. Computing a baseline needs a scorer: `bertscore.calibrate`, one floor up, imports this
module (never the reverse). Users import both from `bertscore.baselines`, which re-exports them.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import torch

from ..digests import file_sha256
from ..inputs import InputError
from ..output_files import check_output, open_output, written_in_place

_BASELINE_ROOT = "data/rescale_baseline"


def _baseline_dir() -> Path:
    return Path(str(resources.files("bertscore").joinpath(_BASELINE_ROOT)))


def _packaged_file(language_dir: Path, model_type: str) -> Path | None:
    """The packaged file of `model_type` in one language folder; None for names that leave the folder.

    A local model path (absolute, or with '..') is never a packaged model: joining it would point
    at some file outside the package (e.g. `folder.tsv` beside the model folder).
    """
    if Path(model_type).is_absolute() or ".." in Path(model_type).parts:
        return None
    path = language_dir / f"{model_type}.tsv"
    return path if path.is_file() else None


def packaged_languages(model_type: str) -> list[str]:
    """Languages that have a packaged baseline for `model_type`."""
    root = _baseline_dir()
    return sorted(p.name for p in root.iterdir() if p.is_dir() and _packaged_file(p, model_type) is not None)


def packaged_baseline_path(model_type: str, lang: str | None) -> Path:
    """The packaged baseline file of a model (and language); a clear error when there is none."""
    own_file = (
        "pass a LAYER,P,R,F file of your own (baseline_path=... in Python and evaluate, --baseline-path on the "
        "command line; `bertscore baseline --model ... --corpus ...` computes one) or turn rescaling off"
    )
    languages = packaged_languages(model_type)
    if not languages:
        raise InputError(f"no packaged rescale baseline for model {model_type!r}: {own_file}")
    lang = lang.lower() if isinstance(lang, str) else lang
    if lang is None:
        if len(languages) > 1:
            raise InputError(
                f"model {model_type!r} has baselines for several languages {languages}: pass lang=..."
            )
        lang = languages[0]
    if lang not in languages:
        raise InputError(
            f"no rescale baseline for model {model_type!r} in language {lang!r} (available: {languages}); {own_file}"
        )
    return _baseline_dir() / lang / f"{model_type}.tsv"


def packaged_language(path: str | Path) -> str:
    """The language folder of a packaged baseline file (model names may hold '/': en/microsoft/...)."""
    return Path(path).relative_to(_baseline_dir()).parts[0]


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@lru_cache(maxsize=64)
def _read_table(path: str, content: str) -> torch.Tensor:
    """The parsed and checked file; cached by its content fingerprint (an mtime can stay the same
    across a rewrite, e.g. files unpacked from a zip, and the hash names the content)."""
    # utf-8-sig: a leading byte-order mark (an editor's, Excel's) is not part of the header.
    with open(path, newline="", encoding="utf-8-sig") as handle:
        try:
            rows = list(csv.reader(handle))
        except UnicodeDecodeError as error:
            raise InputError(f"baseline file {path} is not UTF-8 text ({error.reason}): give a LAYER,P,R,F file") from None
    while rows and not any(cell.strip() for cell in rows[-1]):  # blank lines at the end (the official reader skips them)
        rows.pop()
    return check_table(rows, path)


def check_table(rows: list[list[str]], path: str | Path) -> torch.Tensor:
    """The baseline table [layers + 1, 3] of a LAYER,P,R,F file's rows, checked: the header, one row
    per layer labelled 0, 1, 2, ... in order (rows are looked up by position), and every value a
    finite number below 1 (rescaling divides by 1 - b). InputError naming the file, line and value."""
    fix = "each line is LAYER,P,R,F with LAYER = 0, 1, 2, ... and values below 1 (recompute it with `bertscore baseline`)"
    if not rows:
        raise InputError(f"baseline file {path} is empty: {fix}")
    header, body = rows[0], rows[1:]
    if [h.strip().upper() for h in header[:4]] != ["LAYER", "P", "R", "F"]:
        raise InputError(f"baseline file {path}, line 1: expected the header LAYER,P,R,F, got {','.join(header)!r}")
    if not body:
        raise InputError(f"baseline file {path} has a header but no rows: {fix}")
    values = []
    for position, row in enumerate(body):
        where = f"baseline file {path}, line {position + 2}"
        if len(row) != 4:
            raise InputError(f"{where}: {','.join(row)!r} is not LAYER,P,R,F (4 fields, got {len(row)}); {fix}")
        if not row[0].strip().isascii() or not row[0].strip().isdigit():  # int() also reads '1_0', '٣'
            raise InputError(f"{where}: the LAYER {row[0]!r} is not a whole number; {fix}")
        label = int(row[0].strip())
        if label != position:
            raise InputError(f"{where}: the row of layer {position} is labelled {row[0].strip()!r}; rows are "
                             f"looked up by position, so {fix}")
        numbers = []
        for name, text in zip(COLUMNS, row[1:]):
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"{where}: {name} = {text!r} is not a number; {fix}") from None
            if math.isfinite(value) and not _DECIMAL.fullmatch(text.strip()):  # float() also reads '0.8_1', '٠.٨'
                raise InputError(f"{where}: {name} = {text!r} is not a plain decimal number; {fix}")
            # Checked as used: in float32, where 0.99999999 is 1 and -1e39 is -inf.
            used = torch.tensor(value, dtype=torch.float32).item()
            if not math.isfinite(used) or used >= 1:
                reason = ("not finite" if not math.isfinite(value) else "not finite in float32" if not math.isfinite(used)
                          else "not below 1 (rescaling divides by 1 - baseline)" if value >= 1
                          else "1 in float32, not below 1 (rescaling divides by 1 - baseline)")
                raise InputError(f"{where}: {name} = {text.strip()!r} is {reason}; {fix}")
            numbers.append(value)
        values.append(numbers)
    return torch.tensor(values, dtype=torch.float32)


def load_baseline(path: str | Path) -> torch.Tensor:
    """The checked baseline table [layers + 1, 3] (columns P, R, F) of a LAYER,P,R,F file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"baseline file not found: {path}")
    return _read_table(str(path), file_fingerprint(path))


def baseline_rows(table: torch.Tensor, num_layers: int | None, path: str | Path,
                  total_layers: int | None = None) -> torch.Tensor:
    """The row of layer `num_layers` [3], or every row [layers + 1, 3] when `num_layers` is None
    (then, given `total_layers`, exactly one row per layer 0..total_layers)."""
    rows = table.shape[0]
    if num_layers is None:
        if total_layers is not None and rows != total_layers + 1:
            raise InputError(f"baseline file {path} has {rows} rows (layers 0..{rows - 1}) but the model has layers "
                             f"0..{total_layers}: use the baseline of this model")
        return table
    if not 0 <= num_layers < rows:
        raise InputError(f"baseline file {path} has {rows} rows (layers 0..{rows - 1}), not layer {num_layers}: "
                         "use the baseline of this model, or a layer it covers")
    return table[num_layers]


def rescale(scores: torch.Tensor, baseline: torch.Tensor) -> torch.Tensor:
    """(x - b) / (1 - b) per column; scores [..., 3] and baseline broadcastable [..., 3]."""
    return (scores - baseline) / (1 - baseline)


def file_fingerprint(path: str | Path) -> str:
    """A short content hash of a (custom) baseline file: its sha256, sliced (`digests.file_sha256`)."""
    return file_sha256(path)[:10]


# ----- computed baselines: the table, the official file format and its sidecar ----------------

SIDECAR_SUFFIX = ".json"
SIDECAR_SCHEMA = 1
COLUMNS = ("P", "R", "F")


@dataclass(frozen=True)
class BaselineTable:
    """A computed baseline: mean P, R, F per layer over random pairs, with standard errors.

    `mean` and `standard_error` are float64 [layers + 1, 3] (columns P, R, F; row 0 is the
    embeddings layer). `standard_error` is the sample standard deviation over pairs / sqrt(pairs)
    (NaN with a single pair). The other fields say where the numbers come from; they are written
    to the JSON sidecar next to the TSV.
    """

    mean: torch.Tensor
    standard_error: torch.Tensor
    model: str
    revision: str | None
    lang: str | None
    seed: int
    num_pairs: int
    num_sentences: int  # distinct non-empty sentences the pairs were drawn from
    corpus_sha256: str  # of those sentences, in order (bertscore.digests.text_digest)
    scorer_hash: str  # the all-layers, no-idf scorer that produced the pair scores (dtype included)
    device: str  # cpu, cuda, ...: the last float32 digits may differ between device types
    versions: dict[str, str] = field(default_factory=dict)  # bertscore, transformers, torch

    def sidecar(self) -> dict[str, Any]:
        """The provenance record written next to the TSV (no date: files are deterministic)."""
        def columns(table: torch.Tensor) -> dict[str, list[float | None]]:
            return {name: [None if math.isnan(v) else v for v in table[:, i].tolist()] for i, name in enumerate(COLUMNS)}

        return {
            "schema": SIDECAR_SCHEMA,
            "procedure": "mean BERTScore P, R, F per layer (0 = embeddings) over random candidate/reference "
                         "pairs of distinct non-empty sentences, each used at most once, no idf",
            "model": self.model,
            "revision": self.revision,
            "lang": self.lang,
            "seed": self.seed,
            "num_pairs": self.num_pairs,
            "num_sentences": self.num_sentences,
            "corpus_sha256": self.corpus_sha256,
            "scorer_hash": self.scorer_hash,
            "device": self.device,
            "versions": dict(sorted(self.versions.items())),
            "mean": columns(self.mean),
            "standard_error": columns(self.standard_error),
        }


def _short_float(value: float) -> str:
    """The shortest text that reads back as the same float32 (the official files' style)."""
    return np.format_float_positional(np.float32(value), unique=True, trim="0")


def format_baseline(rows: Iterable[Iterable[float]]) -> str:
    """The official `LAYER,P,R,F` text of a table [layers + 1, 3]."""
    lines = ["LAYER,P,R,F"]
    for layer, row in enumerate(rows):
        values = [float(v) for v in row]
        if len(values) != 3 or not all(math.isfinite(v) for v in values):
            raise ValueError(f"baseline layer {layer}: expected three finite numbers (P, R, F), got {values}")
        lines.append(f"{layer}," + ",".join(_short_float(v) for v in values))
    return "\n".join(lines) + "\n"


def sidecar_path(path: str | Path) -> Path:
    """Where the JSON provenance of a baseline file lives: beside it, `<name>.json` appended."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def write_baseline(table: BaselineTable, path: str | Path, sidecar: str | Path | None = None,
                   inputs: Sequence[str | Path] = ()) -> Path:
    """Write `table` as an official `LAYER,P,R,F` file at `path` and its JSON sidecar.

    The sidecar goes to `sidecar`, by default beside the file (`<name>.json`); an output that is
    not a regular file (a device, pipe, /dev/stdout) is written in place and needs `sidecar`
    elsewhere (UnsafeOutput otherwise: it would land in /dev). Neither may be one of `inputs`.
    Loadable by `baseline_path=` here and by the official package. Same table -> same bytes.
    Returns the sidecar's path.
    """
    path = Path(path)
    meta = sidecar_path(path) if sidecar is None else Path(sidecar)
    if not written_in_place(path):
        path.parent.mkdir(parents=True, exist_ok=True)
    if not written_in_place(meta):
        meta.parent.mkdir(parents=True, exist_ok=True)
    check_output(path, inputs, sidecars=[meta] if sidecar is None else ())
    check_output(meta, [*inputs, path])
    text = format_baseline(table.mean.tolist())
    record = json.dumps(table.sidecar(), indent=2, sort_keys=True) + "\n"
    with open_output(path, replaces_meta=False) as handle:
        handle.write(text)
    with open_output(meta, replaces_meta=False) as handle:
        handle.write(record)
    return meta


def read_sidecar(path: str | Path) -> dict[str, Any]:
    """The JSON provenance of a baseline file (`path` is the TSV); a clear error when absent."""
    meta = sidecar_path(path)
    if not meta.is_file():
        raise FileNotFoundError(f"no provenance file {meta} beside the baseline {path}")
    return json.loads(meta.read_text(encoding="utf-8"))


__all__ = [
    "packaged_languages", "packaged_baseline_path", "packaged_language", "check_table", "load_baseline",
    "baseline_rows", "rescale", "file_fingerprint", "SIDECAR_SUFFIX", "SIDECAR_SCHEMA", "COLUMNS", "BaselineTable",
    "format_baseline", "sidecar_path", "write_baseline", "read_sidecar",
]
