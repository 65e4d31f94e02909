"""One row from its cells: each cell must be a text (a reference cell may hold a list of them).

A missing cell (`MISSING`) or a JSON `null` is an error naming the row and column; an empty
string is a valid, empty text; a JSON number, boolean or object is an error, never stringified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..inputs import lone_surrogate
from ..wording import with_article
from .errors import TableError


@dataclass(frozen=True)
class TableRow:
    """One candidate and its references; `row` counts data rows from 1, `line` is where it starts."""

    candidate: str
    references: list[str]
    row: int
    line: int | None
    extras: tuple[Any, ...] = ()  # the cells of the caller's `extra_columns`, as read (a JSON number stays one)


MISSING = object()
JSON_TYPES = {bool: "boolean", int: "number", float: "number", dict: "object", list: "list"}


class Where:
    """Where a row is, to raise errors naming it."""

    def __init__(self, source: str, row: int, line: int | None):
        self.source, self.row, self.line = source, row, line

    def error(self, column: str | None, message: str) -> TableError:
        return TableError(self.source, message, row=self.row, line=self.line, column=column)


def _text(value: Any, where: Where, column: str, item: str = "") -> str:
    """A cell (or one item of a list cell, `item` = "[i] ") that must be a string."""
    if isinstance(value, str):
        wrong = lone_surrogate(value)
        if wrong:
            raise where.error(column, f"{item}{wrong}")
        return value
    if value is None:
        raise where.error(column, f"{item}is null; write \"\" for an empty text")
    kind = JSON_TYPES.get(type(value), type(value).__name__)
    raise where.error(column, f"{item}is {with_article(kind)} ({json.dumps(value)[:40]}), not a text; quote it if it is one")


def _reference_cell(value: Any, where: Where, column: str, lists_in_text: bool) -> list[str]:
    """The references in one cell: a string, a JSON list of strings, or a CSV cell holding one."""
    if lists_in_text and isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            try:
                parsed = json.loads(stripped)
            except json.JSONDecodeError:
                parsed = None  # a text that happens to be bracketed, such as "[laughs] ok [applause]"
            if isinstance(parsed, list) and parsed and all(isinstance(v, str) for v in parsed):
                value = parsed
    if isinstance(value, list):
        if not value:
            raise where.error(column, "is an empty list: give at least one reference")
        return [_text(item, where, column, f"[{index}] ") for index, item in enumerate(value)]
    return [_text(value, where, column)]


def make_row(get: Callable[[str], Any], where: Where, candidate_column: str, reference_columns: Sequence[str],
              lists_in_text: bool, extra_columns: Sequence[str] = ()) -> TableRow:
    def cell(column: str) -> Any:
        value = get(column)
        if value is MISSING:
            raise where.error(column, "is missing")
        return value

    candidate_value = cell(candidate_column)
    if isinstance(candidate_value, list):
        raise where.error(candidate_column, "is a list; a candidate is one text")
    candidate = _text(candidate_value, where, candidate_column)
    references: list[str] = []
    several = len(reference_columns) > 1
    for column in reference_columns:
        value = cell(column)
        if several and isinstance(value, str) and not value.strip():
            continue  # a row with fewer references than columns
        references.extend(_reference_cell(value, where, column, lists_in_text))
    extras = tuple(cell(column) for column in extra_columns)
    return TableRow(candidate, references or [""], where.row, where.line, extras)
