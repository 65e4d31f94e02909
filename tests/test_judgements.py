"""bertscore.judgements: human-judgement tables read, checked (every error naming where) and streamed back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from bertscore.inputs import InputError
from bertscore.judgements import MIN_SEGMENTS, judgements_from_lists, read_judgements

WMT17 = Path(__file__).resolve().parent / "data" / "wmt17_de-en.first300.tsv"


def wmt17_rows() -> list[dict[str, str]]:
    with WMT17.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def write_tsv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]), delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def direct_rows(n: int = 40) -> list[dict[str, str]]:
    return [{"candidate": f"candidate {i}", "reference": f"reference {i}", "human_score": str(i % 7 - 3)}
            for i in range(n)]


def test_the_wmt17_sample_reads_as_direct_scores_and_streams_back_in_chunks() -> None:
    rows = wmt17_rows()
    judged = read_judgements(WMT17)
    assert judged.kind == "direct" and judged.size == 300
    assert judged.columns == {"candidate": "candidate", "references": ["reference"], "human": "human_score"}
    assert judged.human.tolist() == [float(r["human_score"]) for r in rows]
    chunks = list(judged.chunks(128))
    assert [c.offset for c in chunks] == [0, 128, 256]
    assert [t for c in chunks for t in c.candidates] == [r["candidate"] for r in rows]
    assert [g for c in chunks for g in c.references] == [[r["reference"]] for r in rows]


def test_relative_ranking_is_found_by_its_better_and_worse_columns(tmp_path) -> None:
    rows = [{"reference": f"ref {i}", "better": f"good {i}", "worse": f"bad {i}"} for i in range(35)]
    path = tmp_path / "darr.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    judged = read_judgements(path)
    assert judged.kind == "relative" and judged.human is None and judged.size == 35
    chunk = next(judged.chunks(100))
    assert chunk.candidates == [r["better"] for r in rows] and chunk.worse == [r["worse"] for r in rows]


def test_a_non_numeric_human_score_names_file_row_line_column_and_value(tmp_path) -> None:
    rows = direct_rows()
    rows[6]["human_score"] = "n/a"
    path = write_tsv(tmp_path / "judged.tsv", rows)
    with pytest.raises(InputError, match=r"judged\.tsv, row 7 \(line 8\), column 'human_score': 'n/a' is not a number"):
        read_judgements(path)


def test_a_null_or_missing_json_score_is_named(tmp_path) -> None:
    rows = [{"candidate": "a", "reference": "b", "human": 0.1 * i} for i in range(40)]
    rows[3]["human"] = None
    path = tmp_path / "judged.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(InputError, match=r"judged\.json, row 4, column 'human': the human score is null"):
        read_judgements(path)
    del rows[3]["human"]
    path.write_text(json.dumps(rows), encoding="utf-8")
    with pytest.raises(InputError, match=r"row 4, column 'human': is missing"):
        read_judgements(path)


def test_a_table_without_a_human_column_says_which_names_it_looked_for(tmp_path) -> None:
    path = write_tsv(tmp_path / "t.tsv", [{"candidate": "a", "reference": "b", "quality": str(i % 3)} for i in range(40)])
    with pytest.raises(InputError, match=r"no human score column \(human_score / human / score.*'quality'.*--human-column"):
        read_judgements(path)
    assert read_judgements(path, human_column="quality").columns["human"] == "quality"
    with pytest.raises(InputError, match=r"no column 'nope'"):
        read_judgements(path, human_column="nope")


def test_too_few_rows_say_the_minimum_and_why(tmp_path) -> None:
    path = write_tsv(tmp_path / "t.tsv", direct_rows(MIN_SEGMENTS - 1))
    with pytest.raises(InputError, match=rf"has {MIN_SEGMENTS - 1} judged segments; choosing a layer needs at least "
                                         rf"{MIN_SEGMENTS}: with fewer, the 95% interval of a correlation"):
        read_judgements(path)
    assert read_judgements(write_tsv(tmp_path / "u.tsv", direct_rows(MIN_SEGMENTS))).size == MIN_SEGMENTS


def test_constant_human_scores_are_refused(tmp_path) -> None:
    rows = [{**row, "human_score": "0.25"} for row in direct_rows()]
    with pytest.raises(InputError, match=r"every human score \(column 'human_score'\) is 0.25; constant scores"):
        read_judgements(write_tsv(tmp_path / "t.tsv", rows))


def test_options_that_contradict_each_other_or_the_table(tmp_path) -> None:
    rows = [{**row, "better": "x", "worse": "y"} for row in direct_rows()]
    path = write_tsv(tmp_path / "both.tsv", rows)
    with pytest.raises(InputError, match="both a human score column"):
        read_judgements(path)
    assert read_judgements(path, human_column="human_score").kind == "direct"
    assert read_judgements(path, better_column="better", worse_column="worse").kind == "relative"
    with pytest.raises(InputError, match="needs both columns"):
        read_judgements(path, better_column="better")
    with pytest.raises(InputError, match="not both"):
        read_judgements(path, human_column="human_score", better_column="better", worse_column="worse")
    with pytest.raises(InputError, match="file not found"):
        read_judgements(tmp_path / "absent.tsv")


def test_a_file_that_changes_between_the_check_and_the_scoring_is_an_error(tmp_path) -> None:
    path = write_tsv(tmp_path / "t.tsv", direct_rows(40))
    judged = read_judgements(path)
    write_tsv(path, direct_rows(45))
    with pytest.raises(InputError, match="changed while it was read"):
        list(judged.chunks(16))


def test_lists_get_the_same_checks() -> None:
    refs = [f"r {i}" for i in range(40)]
    judged = judgements_from_lists(refs, candidates=[f"c {i}" for i in range(40)], human=np.arange(40) % 5)
    assert judged.kind == "direct" and judged.human.tolist() == (np.arange(40) % 5).tolist()
    with pytest.raises(InputError, match="human\\[2\\]: 'x' is not a number"):
        judgements_from_lists(refs, candidates=["c"] * 40, human=[1, 2, "x"] + [0] * 37)
    with pytest.raises(InputError, match="constant"):
        judgements_from_lists(refs, candidates=["c"] * 40, human=[1] * 40)
    with pytest.raises(InputError, match="has 3 judged pairs"):
        judgements_from_lists(refs[:3], better=["a"] * 3, worse=["b"] * 3)
    with pytest.raises(TypeError, match="candidates\\[1\\]"):
        judgements_from_lists(refs, candidates=["c", None] + ["c"] * 38, human=np.arange(40))


def test_memory_holds_the_scores_not_the_texts(tmp_path) -> None:
    """500 and 4,000 rows of 800-character texts (0.8 and 6.4 MB): checking the file and streaming it
    back in chunks keeps about as much for the large file as for the small one (the human scores, one
    chunk of texts). Fails when the reader holds the file, or all its texts (the peak would grow about
    8 times with the file). A ratio within the run: no bet on the Python build's allocation sizes."""
    import tracemalloc

    text = "word " * 160
    peaks, sizes = {}, {}
    for count in (500, 4_000):
        path = tmp_path / f"rows-{count}.tsv"
        with path.open("w", encoding="utf-8") as handle:
            handle.write("candidate\treference\thuman_score\n")
            for i in range(count):
                handle.write(f"{i} {text}\t{text} {i}\t{i % 101}\n")
        tracemalloc.start()
        try:
            judged = read_judgements(path)
            rows = sum(len(chunk.candidates) for chunk in judged.chunks(128))
            peaks[count] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert rows == count
        sizes[count] = path.stat().st_size
    assert sizes[4_000] > 6_400_000 and sizes[4_000] > 7 * sizes[500]
    assert peaks[4_000] < 2 * peaks[500], peaks  # measured: 1.2 times (the 4,000 human scores)
