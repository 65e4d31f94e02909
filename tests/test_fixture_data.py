"""The vendored WMT17 fixture is the real data, unchanged (no editor stripped or re-encoded it)."""

from __future__ import annotations

import hashlib

import pytest
from conftest import SHARED_DATA, WMT17_DE_EN_FIXTURE

FIXTURE_SHA256 = "ce41e337be13b88de300e0f3014329eb8796ab56ff6f4cc1bc2e8296387c03b3"  # as in tests/data/README.md


def test_fixture_has_the_recorded_checksum():
    data = WMT17_DE_EN_FIXTURE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == FIXTURE_SHA256, (
        f"{WMT17_DE_EN_FIXTURE} changed: restore it with the command in tests/data/README.md"
    )
    lines = data.decode("utf-8").split("\n")
    assert lines[0].split("\t") == ["lp", "sys", "sid", "candidate", "reference", "human_score", "source"]
    assert len(lines) == 302 and lines[-1] == ""  # header, 300 rows, final newline
    assert all(line.count("\t") == 6 for line in lines[:-1])


def test_fixture_is_the_head_of_the_shared_file():
    shared = SHARED_DATA / "wmt17_de-en.tsv"
    if not shared.is_file():
        pytest.skip(f"{shared} is absent (only the checksum is checked without ../shared)")
    fixture = WMT17_DE_EN_FIXTURE.read_bytes()
    assert shared.read_bytes()[: len(fixture)] == fixture
