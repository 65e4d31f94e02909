"""How messages name a type and a count (bertscore/wording.py): "an int", never "a int"; "1 pair", never "1 pairs"."""

from __future__ import annotations

import numpy as np
import pytest

from bertscore.wording import a_type, counted, with_article


@pytest.mark.parametrize("word, said", [
    ("int", "an int"), ("str", "a str"), ("float", "a float"), ("object", "an object"), ("ellipsis", "an ellipsis"),
    ("NoneType", "a NoneType"), ("ndarray", "an ndarray"), ("uint8", "a uint8"), ("int64", "an int64"),
    ("XLNetConfig", "an XLNetConfig"), ("MPNetConfig", "an MPNetConfig"), ("BertConfig", "a BertConfig"),
    ("ElectraConfig", "an ElectraConfig"), ("T5Config", "a T5Config"), ("UUID", "a UUID"), ("arrow", "an arrow"),
    ("Arrow IPC file", "an Arrow IPC file"), ("Parquet file", "a Parquet file"), ("OrderedDict", "an OrderedDict"),
])
def test_the_article_is_the_one_said(word, said):
    assert with_article(word) == said


def test_a_type_and_counted():
    assert [a_type(3), a_type("x"), a_type(np.zeros(2)), a_type(None)] == ["an int", "a str", "an ndarray", "a NoneType"]
    assert [counted(0, "pair"), counted(1, "pair"), counted(2, "pair"), counted(1, "entry", "entries"),
            counted(3, "entry", "entries")] == ["0 pairs", "1 pair", "2 pairs", "1 entry", "3 entries"]


def test_every_message_that_names_a_type_says_it_with_its_article():
    """No message builds "a {type(...).__name__}" by hand (it said "is a int"): they use a_type."""
    import re
    from pathlib import Path

    import bertscore

    root = Path(bertscore.__file__).parent
    by_hand = re.compile(r"""\ban? \{(type\(|kind\}|format\}|what\})""")
    found = [f"{path.relative_to(root)}:{number}" for path in sorted(root.rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if by_hand.search(line)]
    assert found == []
