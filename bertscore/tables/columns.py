"""Which columns of a table hold the candidate and the references: found by name, or named by the caller.

Candidate: candidate / prediction / hypothesis (and plurals, cand / pred / hyp); references:
reference / references / ref / refs / target / targets, plus numbered reference_1 .. reference_n
(ref_1, reference1, ...), case-insensitive. Two candidate-like (or two plain reference-like)
columns are an error: name the one to use.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from .errors import TableError

CANDIDATE_COLUMNS = ("candidate", "candidates", "prediction", "predictions", "hypothesis", "hypotheses", "cand", "pred", "hyp")
REFERENCE_COLUMNS = ("reference", "references", "ref", "refs", "target", "targets")
_NUMBERED_REFERENCE = re.compile(r"^(?:references?|refs?)_?(\d+)$")


def _numbered_reference(name: str) -> int | None:
    match = _NUMBERED_REFERENCE.match(name.strip().lower())
    return int(match.group(1)) if match else None


def is_reference_name(name: str) -> bool:
    """Whether `name` is a reference column's: plain (reference, refs, ...) or numbered (reference_2)."""
    return name.strip().lower() in REFERENCE_COLUMNS or _numbered_reference(name) is not None


def _shown(columns: Iterable[str]) -> str:
    return ", ".join(repr(c) for c in columns) or "none"


def resolve_columns(
    columns: Sequence[str], source: str, candidate_column: str | None = None,
    reference_columns: Sequence[str] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """The candidate column and the reference columns among `columns` (names or overrides)."""
    if isinstance(reference_columns, str):
        reference_columns = [reference_columns]
    columns = list(dict.fromkeys(columns))  # a repeated header name is reported by the CSV reader
    found = f"found columns: {_shown(columns)}"
    if any("\t" in c for c in columns):
        found += " (tab-separated? name the file .tsv or pass format='tsv')"
    for given in [candidate_column, *(reference_columns or [])]:
        if given is not None and given not in columns:
            raise TableError(source, f"no column {given!r}; {found}")
    candidate = candidate_column
    if candidate is None:
        matches = [c for c in columns if c.strip().lower() in CANDIDATE_COLUMNS]
        if len(matches) > 1:
            raise TableError(source, f"several candidate columns ({_shown(matches)}); choose one "
                                     "(candidate_column= / --candidate-column)")
        candidate = matches[0] if matches else None
    references: list[str]
    if reference_columns is not None:
        references = list(reference_columns)
        if not references:
            raise TableError(source, "reference_columns is empty: name at least one reference column")
    else:
        plain = [c for c in columns if c.strip().lower() in REFERENCE_COLUMNS]
        if len(plain) > 1:
            raise TableError(source, f"several reference columns ({_shown(plain)}); choose "
                                     "(reference_columns= / --reference-column)")
        numbered = sorted((c for c in columns if _numbered_reference(c) is not None), key=_numbered_reference)
        references = plain + numbered
    missing = []
    if candidate is None:
        missing.append(f"a candidate column ({' / '.join(CANDIDATE_COLUMNS[:6:2])})")
    if not references:
        missing.append("reference column(s) (reference / references / reference_1..n)")
    if missing:
        raise TableError(source, f"missing {' and '.join(missing)}; {found}")
    assert candidate is not None
    if candidate in references:
        raise TableError(source, f"column {candidate!r} is both the candidate and a reference column")
    repeated = [c for c in dict.fromkeys(references) if references.count(c) > 1]
    if repeated:
        raise TableError(source, f"reference column(s) {_shown(repeated)} named twice")
    return candidate, tuple(references)
