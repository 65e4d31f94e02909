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

from bertscore.space.serving import QueueFull
from bertscore.space.api import compute_error
from bertscore.space.config import AppConfig
from bertscore.space.messages import (
    BATCH_SPELLING, COMPUTE_SPELLING, PAIR_SPELLING, UserError, load_failure, shortened,
    user_message,
)
from bertscore.space.reports import column_widths, results_csv, shown_scores
from bertscore.space.user_input import (
    api_texts, batch_texts, pair_idf_is_meaningful, pair_texts, parse_layer, system_b_texts,
)
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
        ("c", "a\nb\nc", "3 references; this app accepts at most 2 (one per line)"),
        # in the page's terms: "the candidate", "reference #2" (from 1, as the page labels them)
        ("c" * 13, "r", "the candidate has 13 characters; this app accepts at most 12 per text: shorten it"),
        ("c", "r\n" + "r" * 13, "reference #2 has 13 characters; this app accepts at most 12 per text"),
        ("c", "a\ud800", "reference #1 contains a lone surrogate"),
    ]:
        with pytest.raises(UserError, match=re.escape(message)):
            pair_texts(SMALL, candidate, references)


def test_batch_texts_reads_an_upload_or_pasted_rows(tmp_path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("candidate,reference_1,reference_2\nc1,r1,\nc2,r2,r3\n")
    expected = (["c1", "c2"], [["r1"], ["r2", "r3"]])
    assert batch_texts(SMALL, str(table), " \n") == expected
    assert batch_texts(SMALL, {"path": str(table)}, "") == expected
    with pytest.raises(UserError, match=re.escape("both a file (t.csv) and pasted rows: the Batch tab scores one table "
                                                  "at a time. Remove the file")):
        batch_texts(SMALL, str(table), "candidate,reference\nc,r\n")
    assert batch_texts(SMALL, None, "candidate\treference\nc1\tr1\n") == (["c1"], [["r1"]])
    with pytest.raises(UserError, match="upload a CSV / TSV / JSONL / JSON / Parquet / Arrow file or paste rows"):
        batch_texts(SMALL, None, " \n")
    big = tmp_path / "big.csv"
    big.write_text("candidate,reference\n" + "a,b\n" * 300_000)
    with pytest.raises(UserError, match=r"big.csv is 1.2 MB; this app accepts at most 1 MB"):
        batch_texts(SMALL, str(big), "")
    with pytest.raises(TableError, match="pasted text: has more than 3 rows"):
        batch_texts(SMALL, None, "candidate,reference\n" + "a,b\n" * 4)
    with pytest.raises(UserError, match=re.escape("row 2 (candidate) has 3 references; this app accepts at most 2")):
        batch_texts(SMALL, None, 'candidate,references\na,b\nc,"[""x"", ""y"", ""z""]"\n')
    with pytest.raises(UserError, match=re.escape("row 1 (reference) has 13 characters")):
        batch_texts(SMALL, None, "candidate,reference\na," + "b" * 13 + "\n")
    with pytest.raises(UserError, match=re.escape("row 2 (reference #2) has 13 characters")):
        batch_texts(SMALL, None, "candidate,reference_1,reference_2\na,b,\nc,d," + "e" * 13 + "\n")
    with pytest.raises(UserError, match=re.escape("row 1 (candidate) has 13 characters")):
        batch_texts(SMALL, None, "candidate,reference\n" + "a" * 13 + ",b\n")


def test_batch_texts_reads_a_parquet_upload_with_list_references(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = tmp_path / "upload.parquet"
    pq.write_table(pa.table({"candidate": ["c1", "c2"], "references": [["r1"], ["r2", "r3"]]}), table)
    assert batch_texts(SMALL, str(table), "") == (["c1", "c2"], [["r1"], ["r2", "r3"]])
    pq.write_table(pa.table({"candidate": ["c1", None], "references": [["r1"], ["r2"]]}), table)
    with pytest.raises(TableError, match=re.escape("upload.parquet, row 2, column 'candidate': is null")):
        batch_texts(SMALL, {"path": str(table)}, "")


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
    long = tmp_path / "long.csv"
    long.write_text("candidate,reference\nb1,r1\n" + "b" * 13 + ",r2\n")
    with pytest.raises(UserError, match=re.escape("system B (long.csv): row 2 (candidate) has 13 characters")):
        system_b_texts(SMALL, str(long), [["r1"], ["r2"]])


def test_api_texts_reads_json_lists_or_one_plain_text() -> None:
    assert api_texts(SMALL, "a cat", "r1\n\nr2") == (["a cat"], [["r1", "r2"]])
    assert api_texts(SMALL, json.dumps(["a", "b"]), json.dumps(["r", ["s", "t"]])) == (["a", "b"], [["r"], ["s", "t"]])
    assert api_texts(SMALL, "[]", "[]") == ([], [])
    for predictions, references, message in [
        ("[1,", "[]", "not valid JSON: Expecting value at 3"),
        (json.dumps(["a"]), "r", "references must be a JSON list"),
        (json.dumps(["a"] * 4), json.dumps(["r"] * 4), "4 predictions; this app accepts at most 3 per call"),
        # /compute names places as its parameters, from 0 (as the library's own errors and notes do)
        (json.dumps(["a"]), json.dumps([["r", "s", "t"]]), r"predictions\[0\] has 3 references; this app accepts at most 2"),
        (json.dumps(["a", 3]), json.dumps(["r", "s"]), r"predictions\[1\] is an int"),
        (json.dumps(["b", "a" * 13]), json.dumps(["r", "s"]), r"predictions\[1\] has 13 characters"),
        (json.dumps(["b", "a"]), json.dumps(["r", ["s", "t" * 13]]), r"references\[1\]\[1\] has 13 characters"),
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
def test_scores_show_first_labelled_with_four_decimals_and_download_in_full(tmp_path) -> None:
    frame = pd.DataFrame({"row": [1, 2], "candidate": ["a", "b"], "references": ["r", "s ‖ t"],
                          "precision": [0.123456, 1.0], "recall": [0.5, 0.25], "f1": [0.98765, 0.0],
                          "f1 (B)": [0.11111, 0.99999], "candidate (B)": ["x", "y"]})
    shown = shown_scores(frame, "rescaled")
    assert shown.to_dict("list") == {  # scores first, each labelled; texts last
        "row": [1, 2], "F1 (rescaled)": ["0.9877", "0.0000"], "F1 (B, rescaled)": ["0.1111", "1.0000"],
        "P (rescaled)": ["0.1235", "1.0000"], "R (rescaled)": ["0.5000", "0.2500"],
        "candidate": ["a", "b"], "candidate (B)": ["x", "y"], "references": ["r", "s ‖ t"],
    }
    assert list(shown) == list(shown.to_dict("list"))
    assert frame["precision"].tolist() == [0.123456, 1.0]  # the table itself keeps full precision
    assert column_widths(shown) == ["56px"] + ["112px"] * 4 + ["240px"] * 3
    raw = shown_scores(frame.drop(columns=["f1 (B)", "candidate (B)"]), "raw")
    assert list(raw) == ["row", "F1 (raw)", "P (raw)", "R (raw)", "candidate", "references"]
    assert column_widths(raw) == ["56px"] + ["112px"] * 3 + [f"{(1200 - 56 - 3 * 112) // 2}px"] * 2
    path = results_csv(frame.drop(columns=["f1 (B)", "candidate (B)"]), "raw", "model@hash")
    assert os.path.basename(path) == "bertscore_results.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["row", "F1 (raw)", "P (raw)", "R (raw)", "candidate", "references", "hashcode"],
        ["1", "0.98765", "0.123456", "0.5", "a", "r", "model@hash"],
        ["2", "0.0", "1.0", "0.25", "b", "s ‖ t", "model@hash"],
    ]


# ----- each door's terms ----------------------------------------------------------------------------
NOTE = ("no content tokens in candidates[1], references[2][1], references[3]: their raw scores are 0; "
        "precision (candidates) or recall (references)")


def test_the_page_names_places_from_1_and_the_api_as_its_parameters() -> None:
    assert BATCH_SPELLING.places(NOTE) == (
        "no content tokens in row 2 (candidate), row 3 (reference #2), row 4 (reference): their raw scores are 0; "
        "precision (candidates) or recall (references)")
    assert PAIR_SPELLING.places("in candidates[0], references[0] and references[0][2]") == (
        "in the candidate, reference #1 and reference #3")
    assert COMPUTE_SPELLING.places(NOTE) == NOTE.replace("candidates[1]", "predictions[1]")


def test_statistics_notes_say_rows_on_the_page() -> None:
    from bertscore import stats
    from bertscore.notes import spelled

    with spelled(BATCH_SPELLING):
        note = stats.few_segments_note(3, "interval")
    assert note.startswith("only 3 rows: a bootstrap interval") and note.endswith("score more rows")
    assert "segment" not in note and "segments" in stats.few_segments_note(3, "interval")


def test_layer_fields_are_named_as_each_door_names_them() -> None:
    with pytest.raises(UserError, match=re.escape("Layer must be a whole number (0 or more), or blank for the model's "
                                                  "default; got '1.5'")):
        parse_layer("1.5")
    with pytest.raises(UserError, match=re.escape("num_layers must be a whole number (0 or more), or blank for the "
                                                  "model's default; got '-1'")):
        parse_layer("-1", COMPUTE_SPELLING.name("num_layers"))
    assert PAIR_SPELLING.named("num_layers", 99) == "Layer 99" and COMPUTE_SPELLING.named("num_layers", 99) == "num_layers=99"


def test_a_model_that_cannot_load_is_said_once_and_whole() -> None:
    offline = load_failure("roberta-large", OSError("could not load the model 'roberta-large': " + "x " * 400), True,
                           "MiniLM (this server's default)")
    assert offline == ("roberta-large cannot be loaded here: this server has no copy of it and cannot reach the "
                       "Hugging Face Hub to download it. Choose MiniLM (this server's default), or run this Space "
                       "where the Hub is reachable.")
    own = load_failure("m", OSError("could not load the model 'm': it is gone"), False, "x")
    assert own == "could not load the model 'm': it is gone"  # the loader's message, not said twice
    other = load_failure("m", ValueError("word " * 200), False, "x")
    assert other.startswith("could not load model m: ValueError: word word")
    assert other.endswith("… (the whole message is in the server's log)") and len(other) < 700


def test_idf_on_one_pair_needs_two_different_references() -> None:
    assert not pair_idf_is_meaningful("")
    assert not pair_idf_is_meaningful("one reference")
    assert not pair_idf_is_meaningful("same\n same \n\n")
    assert pair_idf_is_meaningful("one\ntwo")
