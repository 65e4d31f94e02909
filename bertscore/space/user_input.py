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
from ..notes import Spelling
from ..tables import parse_table, read_table
from .config import AppConfig
from .messages import BATCH_SPELLING, COMPUTE_SPELLING, LAYER_LABEL, PAIR_SPELLING, UserError


def parse_layer(value: Any, name: str = LAYER_LABEL, blank: str = "the model's default") -> int | None:
    """Blank -> None (the model's default layer, or the default window stride); else a whole number
    from 0 up. A UserError names the field as the door does (`name`) and says what blank means."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number) or number < 0:
        raise UserError(f"{name} must be a whole number (0 or more), or blank for {blank}; got {text!r}")
    return int(number)


def split_references(text: str) -> list[str]:
    """One reference per non-blank line."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def pair_idf_is_meaningful(references_text: str) -> bool:
    """Whether idf over the "One pair" tab's references can weigh anything: it needs 2 distinct
    references (over one, every token of the reference occurs in all of them: weight 0, R = F1 = 0)."""
    return len(set(split_references(references_text))) >= 2


def _place(row: int, group: Sequence[str] | None = None, index: int = 0) -> str:
    """A text's place as notes write it (`candidates[i]`, `references[i]`, `references[i][j]`)."""
    if group is None:
        return f"candidates[{row}]"
    return f"references[{row}]" if len(group) == 1 else f"references[{row}][{index}]"


def check_texts(config: AppConfig, candidates: Sequence[str], groups: Sequence[Sequence[str]],
                spelling: Spelling) -> None:
    """UserError for the first text that is not valid text or is longer than the app accepts, and for
    a row with too many references; places are named as the door (`spelling`) names them."""
    def check(text: str, place: str) -> None:
        try:
            check_text(text, place)
        except (TypeError, ValueError) as error:
            raise UserError(spelling.places(str(error))) from None
        if len(text) > config.max_chars:
            raise UserError(spelling.places(f"{place} has {len(text):,} characters; this app accepts at most "
                                            f"{config.max_chars:,} per text: shorten it"))

    for row, candidate in enumerate(candidates):
        check(candidate, _place(row))
    for row, group in enumerate(groups):
        if len(group) > config.max_refs:
            raise UserError(spelling.places(f"candidates[{row}] has {len(group)} references; this app accepts at most "
                                            f"{config.max_refs}"))
        for index, text in enumerate(group):
            check(text, _place(row, group, index))


def pair_texts(config: AppConfig, candidate: str, references_text: str) -> tuple[str, list[str]]:
    """The "One pair" tab's candidate and references (one per non-blank line), checked."""
    candidate = candidate or ""
    references = split_references(references_text)
    if not candidate.strip():
        raise UserError("enter a candidate text")
    if not references:
        raise UserError("enter at least one reference (one per line)")
    if len(references) > config.max_refs:
        raise UserError(f"{len(references)} references; this app accepts at most {config.max_refs} (one per line)")
    check_texts(config, [candidate], [references], PAIR_SPELLING)
    return candidate, references


def _upload_path(upload: Any) -> str:
    """The path of an uploaded file, as Gradio hands it over (a path, a file object or a dict)."""
    return upload if isinstance(upload, str) else getattr(upload, "name", None) or upload.get("path")


def batch_texts(config: AppConfig, upload: Any, pasted: str) -> tuple[list[str], list[list[str]]]:
    """The "Batch" tab's rows: the uploaded table or the pasted one (not both: which one was meant
    is the user's to say); checked."""
    has_pasted = bool(pasted and pasted.strip())
    if upload:
        path = _upload_path(upload)
        name = os.path.basename(str(path))
        if has_pasted:
            raise UserError(f"both a file ({name}) and pasted rows: the Batch tab scores one table at a time. "
                            "Remove the file (the × on the upload) or clear the pasted rows, then score again")
        size = os.path.getsize(path)
        if size > config.max_upload_mb * 1024 * 1024:
            raise UserError(f"{name} is {size / 1e6:.1f} MB; this app accepts at most {config.max_upload_mb} MB")
        candidates, groups = read_table(path, name=name, max_rows=config.max_rows)
    elif has_pasted:
        candidates, groups = parse_table(pasted, name="pasted text", max_rows=config.max_rows)
    else:
        raise UserError("upload a CSV / TSV / JSONL / JSON / Parquet / Arrow file or paste rows (with a header line) first")
    check_texts(config, candidates, groups, BATCH_SPELLING)
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
    try:
        check_texts(config, candidates_b, [], BATCH_SPELLING)
    except UserError as error:
        raise UserError(f"system B ({name}): {error}") from None
    return candidates_b


def api_texts(config: AppConfig, predictions: Any, references: Any,
              notes: list[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """`/compute`'s predictions and reference groups: JSON lists, or one plain text with one reference
    per line; checked by the library's own rules (the same errors as every other door) and the limits,
    naming places as its parameters (predictions[i], references[i][j]). References given as plain
    text get a note in `notes` saying how they were read (one per line, as the page's box)."""
    cands, groups = _api_inputs(predictions, references)
    if notes is not None and isinstance(references, str) and not references.strip().startswith("[") and groups:
        count = len(groups[0])
        notes.append(f"references is plain text, not a JSON list: read as the page reads its box, one reference "
                     f"per non-blank line ({count} reference{'s' if count != 1 else ''})")
    if len(cands) > config.max_rows:
        raise UserError(f"{len(cands)} predictions; this app accepts at most {config.max_rows} per call")
    check_texts(config, cands, groups, COMPUTE_SPELLING)
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
