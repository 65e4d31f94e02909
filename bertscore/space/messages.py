"""What a Space user reads when something is wrong, and how notes name the page's controls.

Errors the user can fix are `UserError`s, shown as they say; any other error is named with
its type, shortened. Notes name options as each door spells them: the page by its controls'
labels, `/compute` by its parameters (predictions[i]).
"""

from __future__ import annotations

from ..notes import Spelling
from ..tables import TableError


class UserError(Exception):
    """A problem with the user's input or choice, shown in the page as is."""


WHOLE_TEXTS_LABEL = "Whole long texts (windows past the model's limit)"
# The page's notes name its controls; /compute's keep the Python spelling of options (its
# parameters have the same names) and name texts as its parameters do: predictions[i].
COMPUTE_SPELLING = Spelling("compute", candidates="predictions")
PAGE_SPELLING = Spelling("space", labels={
    ("long_texts", "window"): (f'"{WHOLE_TEXTS_LABEL}"', f'tick "{WHOLE_TEXTS_LABEL}"'),
    ("long_texts", "truncate"): (f'"{WHOLE_TEXTS_LABEL}" unticked', f'untick "{WHOLE_TEXTS_LABEL}"'),
})


def shortened(text: str, limit: int = 300) -> str:
    """`text` on one line (runs of whitespace as one space), cut to `limit` characters with "…"."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def user_message(error: Exception) -> str:
    """The page's message for a failed request: a user's error as it says, else its type and text."""
    if isinstance(error, (UserError, TableError)):
        return str(error)
    return f"unexpected {type(error).__name__}: {shortened(str(error))}"
