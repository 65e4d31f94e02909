"""User and model text placed into Markdown or HTML, shown exactly as typed.

A page that renders Markdown (Gradio's `gr.Markdown` also renders inline HTML, and its toasts
are HTML) must not interpret the texts it shows: a scored reference holding
`![t](http://host/x.png)` would make the browser load that image, `<img src=...>` likewise,
`[x](javascript:...)` would be a live link and `**bold**` would lose its asterisks. Generated
text often contains Markdown; the page must show what was scored.

`shown_as_typed(text)` turns every ASCII punctuation character into a numeric character
reference (`*` -> `&#42;`). Markdown and HTML treat a character reference as the literal
character and never as syntax (CommonMark: references cannot stand for structure), so no
emphasis, link, image, tag, table cell separator, autolink (`www.x.y`, `http://...`), heading,
list, code span or LaTeX delimiter can form, in Markdown or in HTML, inline or in a table cell.
Line breaks become `<br>` and spaces at either end `&#32;` (so they survive paragraph
trimming); everything else (letters, digits, inner spaces, any non-ASCII character) stays as is.
"""

from __future__ import annotations

import string

_ESCAPED = {ord(char): f"&#{ord(char)};" for char in string.punctuation}
_ESCAPED.update({ord("\t"): "&#9;", ord("\0"): "\N{REPLACEMENT CHARACTER}"})


def shown_as_typed(text: str) -> str:
    """Markdown (and HTML) source that displays `text` as these very characters, inline.

    Safe inside a paragraph, a table cell or an HTML element; one helper for every place
    where user or model text reaches a page (tables, notes, error messages, toasts).
    """
    lines = str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    escaped = "<br>".join(line.translate(_ESCAPED) for line in lines)
    stripped = escaped.lstrip(" ")
    escaped = "&#32;" * (len(escaped) - len(stripped)) + stripped
    stripped = escaped.rstrip(" ")
    return stripped + "&#32;" * (len(escaped) - len(stripped))
