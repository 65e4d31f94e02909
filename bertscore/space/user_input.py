"""What a Space user sends, read and checked against the app's limits before any model loads.

The page sends one candidate with references (one per line), or a table (an upload or pasted
rows, read by `bertscore.tables`), optionally with a second system's table; `/compute` sends
JSON lists or plain text. Each reader returns `(candidates, reference groups)` as `score()`
takes them, or raises `UserError` (or `TableError`) saying what was wrong and where.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Sequence

from ..inputs import check_text, normalize_inputs
from ..tables import parse_table, read_table
from .config import AppConfig
from .messages import UserError


def parse_layer(value: Any, what: str = "layer") -> int | None:
    """Blank -> None (the model's default layer, or window stride); else a non-negative integer."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError as error:
        raise UserError(f"{what} must be a whole number or blank, got {text!r}") from error
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise UserError(f"{what} must be a non-negative whole number or blank, got {text!r}")
    return int(number)


def split_references(text: str) -> list[str]:
    """One reference per non-blank line."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def check_texts(texts: Sequence[str], what: str, max_chars: int) -> None:
    """UserError for the first text that is not valid text or is longer than `max_chars` (named `what` i)."""
    for index, text in enumerate(texts):
        try:
            check_text(text, f"{what} {index + 1}")
        except (TypeError, ValueError) as error:
            raise UserError(str(error)) from None
        if len(text) > max_chars:
            raise UserError(f"{what} {index + 1} has {len(text)} characters; this app accepts at most {max_chars}")


def pair_texts(config: AppConfig, candidate: str, references_text: str) -> tuple[str, list[str]]:
    """The "One pair" tab's candidate and references (one per non-blank line), checked."""
    candidate = candidate or ""
    references = split_references(references_text)
    if not candidate.strip():
        raise UserError("enter a candidate text")
    if not references:
        raise UserError("enter at least one reference (one per line)")
    if len(references) > config.max_refs:
        raise UserError(f"{len(references)} references; this app accepts at most {config.max_refs}")
    check_texts([candidate], "candidate", config.max_chars)
    check_texts(references, "reference", config.max_chars)
    return candidate, references


def _upload_path(upload: Any) -> str:
    """The path of an uploaded file, as Gradio hands it over (a path, a file object or a dict)."""
    return upload if isinstance(upload, str) else getattr(upload, "name", None) or upload.get("path")


def batch_texts(config: AppConfig, upload: Any, pasted: str) -> tuple[list[str], list[list[str]]]:
    """The "Batch" tab's rows: the uploaded table, else the pasted one; checked."""
    if upload:
        path = _upload_path(upload)
        name = os.path.basename(str(path))
        size = os.path.getsize(path)
        if size > config.max_upload_mb * 1024 * 1024:
            raise UserError(f"{name} is {size / 1e6:.1f} MB; this app accepts at most {config.max_upload_mb} MB")
        candidates, groups = read_table(path, name=name, max_rows=config.max_rows)
    elif pasted and pasted.strip():
        candidates, groups = parse_table(pasted, name="pasted text", max_rows=config.max_rows)
    else:
        raise UserError("upload a CSV / TSV / JSONL / JSON file or paste rows (with a header line) first")
    check_texts(candidates, "candidate of row", config.max_chars)
    for row, group in enumerate(groups, start=1):
        if len(group) > config.max_refs:
            raise UserError(f"row {row} has {len(group)} references; this app accepts at most {config.max_refs}")
        check_texts(group, f"row {row}: reference", config.max_chars)
    return candidates, groups


def system_b_texts(config: AppConfig, upload_b: Any, groups: list[list[str]]) -> list[str] | None:
    """System B's candidates: a second table with the same rows and references as system A's (None: none)."""
    if not upload_b:
        return None
    path = _upload_path(upload_b)
    name = os.path.basename(str(path))
    candidates_b, groups_b = read_table(path, name=name, max_rows=config.max_rows)
    if len(candidates_b) != len(groups):
        raise UserError(f"system B ({name}) has {len(candidates_b)} rows but system A has {len(groups)}: "
                        "a paired comparison needs the same rows")
    for row, (group_a, group_b) in enumerate(zip(groups, groups_b), start=1):
        if group_a != group_b:
            raise UserError(f"row {row}: system B ({name}) has other references than system A; "
                            "a paired comparison scores both against the same references")
    check_texts(candidates_b, "system B candidate of row", config.max_chars)
    return candidates_b


def api_texts(config: AppConfig, predictions: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    """`/compute`'s predictions and reference groups: JSON lists, or one plain text with one reference
    per line; checked by the library's own rules (the same errors as every other door) and the limits."""
    cands, groups = _api_inputs(predictions, references)
    if len(cands) > config.max_rows:
        raise UserError(f"{len(cands)} predictions; this app accepts at most {config.max_rows} per call")
    check_texts(cands, "prediction", config.max_chars)
    for group in groups:
        if len(group) > config.max_refs:
            raise UserError(f"{len(group)} references for one prediction; at most {config.max_refs}")
        check_texts(group, "reference", config.max_chars)
    return cands, groups


def _api_inputs(predictions: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    def parse(value: Any) -> Any:
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                try:
                    return json.loads(stripped)
                except json.JSONDecodeError as error:
                    raise UserError(f"not valid JSON: {error.msg} at {error.pos}") from error
        return value

    preds, refs = parse(predictions), parse(references)
    if isinstance(preds, str):
        preds = [preds]
        if isinstance(refs, str):
            refs = [split_references(refs) or [refs]]
    if isinstance(refs, str) and isinstance(preds, list):
        raise UserError("references must be a JSON list (one entry per prediction) when predictions is a list")
    if preds == [] and refs == []:
        return [], []
    try:  # the library's own checks: the same errors, naming the same indices, as every other door
        return normalize_inputs(preds, refs, "predictions", "references")
    except (TypeError, ValueError) as error:
        raise UserError(str(error)) from None
