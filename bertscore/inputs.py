"""Input checks: turn what users pass into candidate and reference lists, or say what is wrong."""

from __future__ import annotations

from typing import Any, Sequence


def _check_text(value: Any, where: str) -> str:
    if value is None:
        raise TypeError(f"{where} is None; pass a string (an empty string scores 0)")
    if not isinstance(value, str):
        raise TypeError(f"{where} is a {type(value).__name__}, not a string: {value!r:.80}")
    return value


def normalize_inputs(cands: Any, refs: Any) -> tuple[list[str], list[list[str]]]:
    """Validate candidates and references; references become one list of strings per candidate.

    `refs` is a list of strings (one reference each) or a list of lists of strings
    (multi-reference; each inner list non-empty). Errors name the offending index.
    """
    if isinstance(cands, str) or not isinstance(cands, Sequence):
        raise TypeError(f"candidates must be a list of strings, got {type(cands).__name__}")
    if isinstance(refs, str) or not isinstance(refs, Sequence):
        raise TypeError(f"references must be a list of strings or of lists of strings, got {type(refs).__name__}")
    if len(cands) == 0:
        raise ValueError("candidates is empty: pass at least one candidate")
    if len(cands) != len(refs):
        raise ValueError(
            f"got {len(cands)} candidates but {len(refs)} references: pass one reference "
            "(or one list of references) per candidate"
        )
    candidates = [_check_text(c, f"candidates[{i}]") for i, c in enumerate(cands)]
    groups: list[list[str]] = []
    for i, group in enumerate(refs):
        if isinstance(group, str):
            groups.append([group])
            continue
        if group is None:
            raise TypeError(f"references[{i}] is None; pass a string or a list of strings")
        if not isinstance(group, Sequence):
            raise TypeError(f"references[{i}] is a {type(group).__name__}, not a string or a list of strings")
        if len(group) == 0:
            raise ValueError(f"references[{i}] is an empty list: give each candidate at least one reference")
        groups.append([_check_text(r, f"references[{i}][{j}]") for j, r in enumerate(group)])
    return candidates, groups
