"""shown_as_typed: any text, put into Markdown or HTML, shows as its own characters and no markup.

An independent renderer (markdown-it-py, CommonMark with GFM tables and strikethrough) turns the
escaped text into HTML; Python's HTML parser reads back its tags and visible text. The browser
test (tests/test_app_browser.py) checks Gradio's own renderer in Chromium.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore.space.markup import shown_as_typed

markdown_it = pytest.importorskip("markdown_it")

MARKDOWN = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
LAYOUT_TAGS = {"p", "br", "table", "thead", "tbody", "tr", "th", "td", "div"}


class _Reader(HTMLParser):
    """Tags and visible text of an HTML fragment (<br> read as a line break)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.cells: list[str] = []
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        if tag in ("td", "th"):
            self.cells.append("")
        if tag == "br":
            self.text += "\n"
            if self.cells:
                self.cells[-1] += "\n"

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if data.strip("\n") == "" and data:  # the renderer's newlines between tags (escaped text has none)
            return
        self.text += data
        if self.cells:
            self.cells[-1] += data


def read(html: str) -> _Reader:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return reader


def as_typed(text: str) -> str:
    """What a page can show of `text`: line breaks as "\\n", NUL (never displayable) as U+FFFD."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\N{REPLACEMENT CHARACTER}")


NASTY = [
    "![t](http://127.0.0.1:8000/x.png)", "[x](javascript:alert(1))", "<img src=http://127.0.0.1:8000/y.png>",
    "**bold**", "__b__ _i_ *i*", "`code`", "```\nfence\n```", "$$x^2$$", "# heading", "> quote", "- item",
    "1. item", "a | b | c", "&amp; &lt; &#42;", "\\*not em\\*", "~~strike~~", "www.example.com",
    "http://example.com <http://example.com>", "<script>alert(1)</script>", "line one\nline two",
    "    indented code", "  two spaces  ", "<!-- comment -->", "[ref][1]\n\n[1]: http://x", "a\\", "***", "---",
    "<a href='x'>y</a>", "&", "x<y>z", "\t tab", "\r\nwindows\r\n", "emoji ✓ üñí 字",
]


def check_markdown(text: str) -> None:
    """Between words, alone in a paragraph and in a GFM table cell: the same characters, no markup.

    (Alone and in a cell, whitespace such as a form feed at the very ends is trimmed by the renderer:
    a page shows no edge whitespace; between words, every character counts.)
    """
    escaped = shown_as_typed(text)
    assert "\n" not in escaped and "|" not in escaped
    between = read(MARKDOWN.render("before " + escaped + " after"))
    assert set(between.tags) <= {"p", "br"}, (text, between.tags)
    assert between.text == "before " + as_typed(text) + " after"
    alone = read(MARKDOWN.render(escaped))
    assert set(alone.tags) <= {"p", "br"}, (text, alone.tags)
    assert alone.text.strip() == as_typed(text).strip()
    table = read(MARKDOWN.render(f"| # | text | F1 |\n|---|---|---|\n| 1 | {escaped} | 0.5 |\n"))
    assert set(table.tags) <= LAYOUT_TAGS and table.tags.count("td") == 3, (text, table.tags)
    assert table.cells[:4] + table.cells[5:] == ["#", "text", "F1", "1", "0.5"]
    assert table.cells[4].strip() == as_typed(text).strip()


@pytest.mark.parametrize("text", NASTY)
def test_markdown_and_html_specials_render_as_typed(text: str) -> None:
    check_markdown(text)


def test_unescaped_text_would_be_markup() -> None:
    """The renderer of these tests does see the payloads as markup (so the tests above can fail)."""
    assert "<img" in MARKDOWN.render("![t](http://127.0.0.1:8000/x.png)")
    assert "<strong>" in MARKDOWN.render("**bold**") and "<code>" in MARKDOWN.render("    indented code")
    assert "img" in read(MARKDOWN.render("| a |\n|---|\n| <img src=x> |")).tags
    assert "<a href" in MARKDOWN.render("[x](http://example.com)")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_any_text_shows_as_typed_with_no_markup_in_markdown(text: str) -> None:
    check_markdown(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_any_text_shows_as_typed_with_no_markup_in_html(text: str) -> None:
    """An HTML element (Gradio's toasts render their message as HTML): the same characters, no tags."""
    page = read(f"<div>{shown_as_typed(text)}</div>")
    assert set(page.tags) <= {"div", "br"}
    assert page.text == as_typed(text)
