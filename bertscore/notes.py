"""Notes about a call (empty texts, truncation, degenerate idf): warnings, or a per-call list.

Library calls take `notes: list[str] | None`. With a list, each note is appended there and
nothing global is touched (a server handling concurrent requests keeps them apart; Python's
`warnings.catch_warnings` is process-wide). Without one, the note is a `UserWarning`.
"""

from __future__ import annotations

import warnings

MAX_NAMED = 20  # indices named in one note before "... (N in all)"


def report(message: str, notes: list[str] | None, stacklevel: int = 3) -> None:
    """Append `message` to `notes`, or warn when no list was given."""
    if notes is None:
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
    else:
        notes.append(message)


def name_some(where: list[str]) -> str:
    """The first MAX_NAMED places, and how many there are in all when more."""
    shown = ", ".join(where[:MAX_NAMED])
    return shown + (f", ... ({len(where)} in all)" if len(where) > MAX_NAMED else "")
