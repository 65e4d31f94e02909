"""The Space's rooms (bertscore/space/) on their own: no Gradio, no server, no model.

The page and `/compute` through a real server are tested in test_app_api.py and
test_app_browser.py; here each room's checks and formats are tested with expected values
written out by hand.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from bertscore.serving import QueueFull
from bertscore.space.api import compute_error
from bertscore.space.config import AppConfig
from bertscore.space.messages import UserError, shortened, user_message
from bertscore.space.reports import results_csv, shown_scores
from bertscore.space.user_input import api_texts, batch_texts, pair_texts, system_b_texts
from bertscore.tables import TableError
from conftest import REPO_ROOT

SMALL = AppConfig.from_env({"BERTSCORE_APP_MAX_REFS": "2", "BERTSCORE_APP_MAX_CHARS": "12",
                            "BERTSCORE_APP_MAX_ROWS": "3", "BERTSCORE_APP_MAX_UPLOAD_MB": "1"})


def test_the_rooms_import_neither_gradio_nor_pyplot() -> None:
    """The Space's logic is testable without Gradio: importing every room loads neither."""
    script = (
        "import importlib, pkgutil, sys\n"
        "import bertscore.space as space\n"
        "for module in pkgutil.iter_modules(space.__path__):\n"
        "    importlib.import_module('bertscore.space.' + module.name)\n"
        "print(sorted(m for m in ('gradio', 'matplotlib.pyplot') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


# ----- user input -------------------------------------------------------------------------------
def test_pair_texts_reads_one_reference_per_line_and_checks_the_limits() -> None:
    assert pair_texts(SMALL, "a cat", "  one \n\n two\n") == ("a cat", ["one", "two"])
    for candidate, references, message in [
        ("  ", "r", "enter a candidate text"),
        ("c", "\n \n", "enter at least one reference (one per line)"),
        ("c", "a\nb\nc", "3 references; this app accepts at most 2"),
        ("c" * 13, "r", "candidate 1 has 13 characters; this app accepts at most 12"),
        ("c", "r\n" + "r" * 13, "reference 2 has 13 characters; this app accepts at most 12"),
        ("c", "a\ud800", "reference 1 contains a lone surrogate"),
    ]:
        with pytest.raises(UserError, match=re.escape(message)):
            pair_texts(SMALL, candidate, references)


def test_batch_texts_reads_an_upload_or_pasted_rows(tmp_path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("candidate,reference_1,reference_2\nc1,r1,\nc2,r2,r3\n")
    expected = (["c1", "c2"], [["r1"], ["r2", "r3"]])
    assert batch_texts(SMALL, str(table), "ignored when a file is uploaded") == expected
    assert batch_texts(SMALL, {"path": str(table)}, "") == expected
    assert batch_texts(SMALL, None, "candidate\treference\nc1\tr1\n") == (["c1"], [["r1"]])
    with pytest.raises(UserError, match="upload a CSV / TSV / JSONL / JSON file or paste rows"):
        batch_texts(SMALL, None, " \n")
    big = tmp_path / "big.csv"
    big.write_text("candidate,reference\n" + "a,b\n" * 300_000)
    with pytest.raises(UserError, match=r"big.csv is 1.2 MB; this app accepts at most 1 MB"):
        batch_texts(SMALL, str(big), "")
    with pytest.raises(TableError, match="pasted text: has more than 3 rows"):
        batch_texts(SMALL, None, "candidate,reference\n" + "a,b\n" * 4)
    with pytest.raises(UserError, match="row 2 has 3 references; this app accepts at most 2"):
        batch_texts(SMALL, None, 'candidate,references\na,b\nc,"[""x"", ""y"", ""z""]"\n')
    with pytest.raises(UserError, match="row 1: reference 1 has 13 characters"):
        batch_texts(SMALL, None, "candidate,reference\na," + "b" * 13 + "\n")


def test_system_b_needs_the_same_rows_and_references(tmp_path) -> None:
    groups = [["r1"], ["r2", "r3"]]
    same = tmp_path / "b.jsonl"
    same.write_text('{"candidate": "b1", "references": ["r1"]}\n{"candidate": "b2", "references": ["r2", "r3"]}\n')
    assert system_b_texts(SMALL, None, groups) is None
    assert system_b_texts(SMALL, str(same), groups) == ["b1", "b2"]
    fewer = tmp_path / "fewer.csv"
    fewer.write_text("candidate,reference\nb1,r1\n")
    with pytest.raises(UserError, match=r"system B \(fewer.csv\) has 1 rows but system A has 2"):
        system_b_texts(SMALL, str(fewer), groups)
    other = tmp_path / "other.csv"
    other.write_text("candidate,reference\nb1,r1\nb2,r2\n")
    with pytest.raises(UserError, match=r"row 2: system B \(other.csv\) has other references than system A"):
        system_b_texts(SMALL, str(other), groups)


def test_api_texts_reads_json_lists_or_one_plain_text() -> None:
    assert api_texts(SMALL, "a cat", "r1\n\nr2") == (["a cat"], [["r1", "r2"]])
    assert api_texts(SMALL, json.dumps(["a", "b"]), json.dumps(["r", ["s", "t"]])) == (["a", "b"], [["r"], ["s", "t"]])
    assert api_texts(SMALL, "[]", "[]") == ([], [])
    for predictions, references, message in [
        ("[1,", "[]", "not valid JSON: Expecting value at 3"),
        (json.dumps(["a"]), "r", "references must be a JSON list"),
        (json.dumps(["a"] * 4), json.dumps(["r"] * 4), "4 predictions; this app accepts at most 3 per call"),
        (json.dumps(["a"]), json.dumps([["r", "s", "t"]]), "3 references for one prediction; at most 2"),
        (json.dumps(["a", 3]), json.dumps(["r", "s"]), r"predictions\[1\] is a int"),
        (json.dumps(["a" * 13]), json.dumps(["r"]), "prediction 1 has 13 characters"),
    ]:
        with pytest.raises(UserError, match=message):
            api_texts(SMALL, predictions, references)


# ----- messages and answers ---------------------------------------------------------------------
def test_errors_read_as_the_user_should_see_them() -> None:
    assert shortened("a \n b\tc") == "a b c"
    assert shortened("x" * 10, limit=5) == "xxxx…"
    assert user_message(UserError("enter a candidate text")) == "enter a candidate text"
    assert user_message(TableError("t.csv", "is empty")) == "t.csv: is empty"
    assert user_message(KeyError("boom")) == "unexpected KeyError: 'boom'"
    assert compute_error(UserError("bad")) == {"error": "bad"}
    assert compute_error(RuntimeError("x " * 400)) == {"error": "RuntimeError: " + " ".join(["x"] * 150) + "…"}
    busy = compute_error(QueueFull(expected_wait_s=42.5, max_wait_s=30, ahead_pairs=900, pairs=10))
    assert busy["retry_after_s"] == 13 and "about 43 s" in busy["error"]


# ----- reports ----------------------------------------------------------------------------------
def test_scores_show_with_four_decimals_and_download_in_full(tmp_path) -> None:
    frame = pd.DataFrame({"row": [1, 2], "candidate": ["a", "b"], "references": ["r", "s ‖ t"],
                          "precision": [0.123456, 1.0], "recall": [0.5, 0.25], "f1": [0.98765, 0.0],
                          "f1 (B)": [0.11111, 0.99999]})
    shown = shown_scores(frame)
    assert shown.to_dict("list") == {
        "row": [1, 2], "candidate": ["a", "b"], "references": ["r", "s ‖ t"], "precision": ["0.1235", "1.0000"],
        "recall": ["0.5000", "0.2500"], "f1": ["0.9877", "0.0000"], "f1 (B)": ["0.1111", "1.0000"],
    }
    assert frame["precision"].tolist() == [0.123456, 1.0]  # the table itself keeps full precision
    path = results_csv(frame, "model@hash")
    assert os.path.basename(path) == "bertscore_results.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["row", "candidate", "references", "precision", "recall", "f1", "f1 (B)", "hashcode"],
        ["1", "a", "r", "0.123456", "0.5", "0.98765", "0.11111", "model@hash"],
        ["2", "b", "s ‖ t", "1.0", "0.25", "0.0", "0.99999", "model@hash"],
    ]
