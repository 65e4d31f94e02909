"""Text as numbered lines: a file's bytes decoded as UTF-8 (errors naming the line and byte), or a string.

The one line reader: the tables, the CLI's text files (`-c/-r`, one text per line) and a baseline's
corpus read their lines here. Lines keep their line ends; a byte-order mark is dropped; UTF-16 and
binary files (a NUL byte) are refused.
"""

from __future__ import annotations

import io
from typing import Iterator

from .errors import TableError

HEAD_BYTES = 1 << 16  # looked at for NUL bytes (a binary file) before decoding
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

Lines = Iterator[tuple[int, str]]  # (1-based line number, the line with its "\n")


def file_lines(handle: io.BufferedIOBase, source: str) -> Lines:
    """Decoded lines of a binary file: UTF-8 (BOM dropped), errors naming the byte offset.

    The head is what one read returns (`read1`): from a pipe that is what has arrived, so lines
    stream as they come (a CLI reading `-c -` scores before its input ends)."""
    head = getattr(handle, "read1", handle.read)(HEAD_BYTES)
    if head.startswith(_UTF16_BOMS):
        raise TableError(source, "is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8")
    if b"\0" in head:
        nul = head.index(b"\0")
        raise TableError(source, f"looks binary (a NUL byte at byte {nul}), "
                                 "not a UTF-8 text file (CSV, TSV, JSONL or JSON) nor a Parquet or Arrow file")
    offset = 0
    for number, raw in enumerate(_byte_lines(handle, head), start=1):
        start = len(_UTF8_BOM) if number == 1 and raw.startswith(_UTF8_BOM) else 0
        try:
            text = raw[start:].decode("utf-8")
        except UnicodeDecodeError as error:
            at = offset + start + error.start
            raise TableError(
                source, f"not valid UTF-8 (byte {at}: {raw[start + error.start:start + error.start + 1]!r}); "
                        "save it as UTF-8", line=number,
            ) from None
        offset += len(raw)
        yield number, text


def _byte_lines(handle: io.BufferedIOBase, head: bytes) -> Iterator[bytes]:
    """The lines of `head` followed by the rest of `handle` (a line cut by the head is joined)."""
    for raw in io.BytesIO(head):
        yield raw if raw.endswith(b"\n") else raw + handle.readline()
    yield from handle


def text_lines(text: str) -> Lines:
    """Lines split on "\\n" only (other Unicode line breaks stay inside texts); a BOM dropped."""
    text = text[1:] if text.startswith("\ufeff") else text
    start, number = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield number, text[start:end]
        start, number = end, number + 1
