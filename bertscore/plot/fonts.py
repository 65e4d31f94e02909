"""Which installed fonts draw a text's characters in a matplotlib figure: its own DejaVu Sans first,
then, for each character DejaVu Sans lacks (kana, han, hangul, Devanagari, Thai, ...), the first
installed font that has it, in a fixed order of preference (Noto Sans faces, then the CJK
fallbacks, then any other regular face).

`families_for(texts)` is a `fontfamily` list for matplotlib's per-glyph fallback (matplotlib >= 3.6):
nothing global changes (no rcParams), so a figure drawn here leaves the user's settings alone. A
character no installed font has still draws as a box, with matplotlib's "Glyph ... missing" warning;
the Space installs fonts that cover its models' scripts (packages.txt: fonts-noto-core,
fonts-droid-fallback).
"""

from __future__ import annotations

import threading
from typing import Iterable

BASE_FAMILY = "DejaVu Sans"  # matplotlib's default face, shipped with matplotlib
_PREFERRED = ("Noto Sans", "Droid Sans Fallback", "Noto Sans CJK", "WenQuanYi", "Noto Serif")

_lock = threading.Lock()
_coverage: dict[str, frozenset[int]] = {}  # font file -> the code points it draws


def _charmap(path: str) -> frozenset[int]:
    """The code points the font file at `path` has glyphs for (read once)."""
    with _lock:
        found = _coverage.get(path)
    if found is None:
        from matplotlib.ft2font import FT2Font

        try:
            found = frozenset(FT2Font(path).get_charmap())
        except (OSError, RuntimeError, ValueError):  # an unreadable font file draws nothing here
            found = frozenset()
        with _lock:
            _coverage[path] = found
    return found


def _rank(name: str) -> tuple[int, str]:
    for rank, prefix in enumerate(_PREFERRED):
        if name.startswith(prefix) and "Mono" not in name:
            return rank, name
    return len(_PREFERRED), name


def _regular_faces() -> list[tuple[str, str]]:
    """(family, file) of each installed family's regular upright face, in order of preference."""
    from matplotlib import font_manager

    faces: dict[str, str] = {}
    for entry in font_manager.fontManager.ttflist:
        if entry.style == "normal" and entry.weight in (400, "normal", "regular", "book"):
            faces.setdefault(entry.name, entry.fname)
    return sorted(faces.items(), key=lambda face: _rank(face[0]))


def families_for(texts: Iterable[str]) -> list[str]:
    """BASE_FAMILY, then the installed families (by preference) that draw the characters of `texts`
    it lacks: a `fontfamily` list for matplotlib's per-glyph fallback."""
    from matplotlib import font_manager

    wanted = {ord(char) for text in texts for char in text if not char.isspace()}
    missing = wanted - _charmap(font_manager.findfont(BASE_FAMILY))
    families = [BASE_FAMILY]
    if not missing:
        return families
    for family, path in _regular_faces():
        drawn = missing & _charmap(path)
        if drawn:
            families.append(family)
            missing -= drawn
            if not missing:
                break
    return families


__all__ = ["BASE_FAMILY", "families_for"]
