"""The one file digest and the one text-list digest (bertscore.digests), against hashlib by hand."""

from __future__ import annotations

import hashlib
import os

from hypothesis import given
from hypothesis import strategies as st

from bertscore import output_files
from bertscore.scoring import baseline_tables
from bertscore.digests import file_sha256, text_digest


@given(st.lists(st.text()))
def test_text_digest_is_the_sha256_of_each_text_and_a_nul(texts) -> None:
    # lone surrogates included (st.text() draws them): passed through, never an error
    data = b"".join(text.encode("utf-8", "surrogatepass") + b"\0" for text in texts)
    assert text_digest(texts) == hashlib.sha256(data).hexdigest()
    assert text_digest(iter(texts)) == text_digest(texts)  # any iterable, read once


def test_text_digest_known_values() -> None:
    # Stored values hang on these bytes (sidecars' corpus_sha256, the hash's idf-sents label).
    assert text_digest([]) == hashlib.sha256(b"").hexdigest()
    assert text_digest(["a", "b"]) == hashlib.sha256(b"a\0b\0").hexdigest()
    assert text_digest(["a", "b"]) != text_digest(["ab"]) != text_digest(["a\0b"])
    assert text_digest(["\ud800"]) == hashlib.sha256(b"\xed\xa0\x80\0").hexdigest()


def test_file_sha256_streams_the_whole_file(tmp_path) -> None:
    path = tmp_path / "big.bin"
    data = os.urandom((1 << 20) * 2 + 7)  # over two blocks
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert file_sha256(path) == file_sha256(str(path), cached=True) == expected
    assert output_files.fingerprint(path)["sha256"] == expected
    assert baseline_tables.file_fingerprint(path) == expected[:10]


def test_the_uncached_digest_sees_a_rewrite_that_keeps_size_and_mtime(tmp_path) -> None:
    path = tmp_path / "table.tsv"
    path.write_bytes(b"first")
    before = os.stat(path)
    assert file_sha256(path, cached=True) == hashlib.sha256(b"first").hexdigest()
    path.write_bytes(b"other")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same mtime (a zip unpack, cp -p)
    assert file_sha256(path) == hashlib.sha256(b"other").hexdigest()
    # The cached digest trusts (path, size, mtime): what model folders want, and why it is opt-in.
    assert file_sha256(path, cached=True) == hashlib.sha256(b"first").hexdigest()
    path.write_bytes(b"longer now")
    assert file_sha256(path, cached=True) == hashlib.sha256(b"longer now").hexdigest()
