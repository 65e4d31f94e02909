"""What a Space user reads when something is wrong, and how notes and errors name things at each door.

Errors the user can fix are `UserError`s, shown as they say; any other error is named with
its type, shortened. Each door names texts and settings in its own terms: the page counts from
1 and names its controls by their labels ("row 2 (candidate)", "reference #1", "Layer 99");
`/compute` names its parameters as the library does ("predictions[1]", "num_layers=99").
"""

from __future__ import annotations

from ..notes import Place, Spelling
from ..tables import TableError


class UserError(Exception):
    """A problem with the user's input or choice, shown in the page as is."""


# The page's controls, by the labels the page shows (its messages use the same words).
LAYER_LABEL = "Layer"
RESCALE_LABEL = "Rescale with baseline"
LANG_LABEL = "Baseline language"
IDF_LABEL = "idf weighting"
WHOLE_TEXTS_LABEL = "Whole long texts (windows past the model's limit)"
ERROR_TITLE = "Could not score"  # the heading of an error message in the page


def _pair_place(place: Place) -> str:
    """A text of the "One pair" tab as the page labels it: the candidate, reference #j (from 1)."""
    if place.side == "candidates":
        return "the candidate"
    return f"reference #{(place.reference or 0) + 1}"


def _row_place(place: Place) -> str:
    """A text of the "Batch" tab as the page shows it: its row (from 1), and which reference."""
    row = f"row {place.row + 1}"
    if place.side == "candidates":
        return f"{row} (candidate)"
    return f"{row} (reference)" if place.reference is None else f"{row} (reference #{place.reference + 1})"


_LABELS = {
    ("long_texts", "window"): (f'"{WHOLE_TEXTS_LABEL}"', f'tick "{WHOLE_TEXTS_LABEL}"'),
    ("long_texts", "truncate"): (f'"{WHOLE_TEXTS_LABEL}" unticked', f'untick "{WHOLE_TEXTS_LABEL}"'),
}
# The page's notes name its controls and count texts as the page does (from 1); /compute's keep the
# Python spelling of options (its parameters have the same names) and name texts as its parameters
# do: predictions[i], references[i][j].
_NAMES = {"num_layers": LAYER_LABEL, "window_stride": "window stride", "lang": LANG_LABEL}
PAIR_SPELLING = Spelling("space-pair", labels=_LABELS, place=_pair_place, names=_NAMES)
BATCH_SPELLING = Spelling("space-batch", labels=_LABELS, place=_row_place, segments="rows", names=_NAMES)
COMPUTE_SPELLING = Spelling("compute", candidates="predictions")


def shortened(text: str, limit: int = 300) -> str:
    """`text` on one line (runs of whitespace as one space), cut to `limit` characters with "…"."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def user_message(error: Exception) -> str:
    """The page's message for a failed request: a user's error as it says, else its type and text."""
    if isinstance(error, (UserError, TableError)):
        return str(error)
    return f"unexpected {type(error).__name__}: {shortened(str(error))}"


LOAD_MESSAGE_LIMIT = 600  # characters of a loader's own message shown; longer ones end with a pointer to the log


def load_failure(model: str, error: Exception, offline: bool, fallback: str) -> str:
    """Why `model` could not be loaded, once and whole: offline, the short reason and what to choose
    instead (`fallback`, a model this server has); else the loader's own message, said once."""
    if offline:
        return (f"{model} cannot be loaded here: this server has no copy of it and cannot reach the Hugging Face "
                f"Hub to download it. Choose {fallback}, or run this Space where the Hub is reachable.")
    text = " ".join(str(error).split())
    if len(text) > LOAD_MESSAGE_LIMIT:
        text = text[:LOAD_MESSAGE_LIMIT].rsplit(" ", 1)[0] + " … (the whole message is in the server's log)"
    if text.startswith("could not load"):  # the loader's message already says what failed
        return text
    return f"could not load model {model}: {type(error).__name__}: {text}"
