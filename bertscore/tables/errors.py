"""The one error of reading a table: it says where (source, row, line, column) and why."""

from __future__ import annotations

from ..inputs import InputError


class TableError(InputError):
    """A table that cannot be read as it is: says where (source, row, line, column) and why."""

    def __init__(self, source: str, message: str, *, row: int | None = None, line: int | None = None,
                 column: str | None = None):
        self.source, self.row, self.line, self.column = source, row, line, column
        where = source
        if row is not None:
            where += f", row {row}" + (f" (line {line})" if line is not None else "")
        elif line is not None:
            where += f", line {line}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"{where}: {message}")
