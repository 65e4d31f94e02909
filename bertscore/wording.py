"""How messages name a type and a count: "an int", "a str", "1 pair", "2 pairs".

Every message that names a value's type says it with `a_type` (never "a {type}" by hand: "is a
int"), and every count with `counted` (never "1 pairs").
"""

from __future__ import annotations

from typing import Any

# Letters whose spoken name starts with a vowel sound: a name read letter by letter takes "an" (an MPNet, an XLNet).
_VOWEL_SOUND_LETTERS = frozenset("AEFHILMNORSX")
# Words that start with a vowel letter but not a vowel sound ("a uint8", "a unicode text"), and the reverse.
_SAID_WITH_A = ("uint", "uni", "use", "usu", "uti", "one")
_SAID_WITH_AN = ("nd",)  # ndarray: "en-dee-array"


def with_article(word: str) -> str:
    """`word` after "a" or "an", as it is said: an int, a str, an ndarray, a uint8, an XLNetConfig, a BertConfig."""
    if len(word) > 1 and word[:2].isupper():  # an acronym, read letter by letter
        return f"{'an' if word[0] in _VOWEL_SOUND_LETTERS else 'a'} {word}"
    lowered = word.lower()
    vowel = lowered[:1] in ("a", "e", "i", "o", "u") and not lowered.startswith(_SAID_WITH_A)
    return f"{'an' if vowel or lowered.startswith(_SAID_WITH_AN) else 'a'} {word}"


def a_type(value: Any) -> str:
    """The type of `value` after its article: "an int", "a float", "a list"."""
    return with_article(type(value).__name__)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and the noun, singular for one: "1 pair", "0 pairs", "3 pairs" (`plural` when not noun + "s")."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
