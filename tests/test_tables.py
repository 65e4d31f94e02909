"""bertscore.tables: every format, multi-reference, overrides, every error naming where, encodings, streaming.

Expected values come from the test's own plain loops and from the files it writes with the
csv / json modules, never from the reader itself.
"""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from bertscore import tables
from bertscore.tables import TableError, open_table, parse_table, read_table, table_from_text

SHARED_WMT17 = Path(__file__).resolve().parents[2] / "shared" / "data" / "wmt17" / "wmt17_de-en.tsv"
WMT17_FIXTURE = Path(__file__).resolve().parent / "data" / "wmt17_de-en.first300.tsv"  # its first 300 rows

# One table, written in every format by independent means.
ROWS = [
    {"id": "1", "candidate": "the cat sat, on the mat", "reference": 'a "cat" was sitting'},
    {"id": "2", "candidate": "", "reference": "multi\nline reference"},
    {"id": "3", "candidate": "Ünïcödé — 🙂", "reference": ""},
]
EXPECTED = (["the cat sat, on the mat", "", "Ünïcödé — 🙂"], [['a "cat" was sitting'], ["multi\nline reference"], [""]])


def write_csv(path: Path, rows: list[dict[str, str]], delimiter: str = ",") -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), delimiter=delimiter)
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_json(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def write_tsv(path: Path, rows: list[dict[str, str]]) -> Path:
    """Plain tab-separated values, no quoting (texts without tabs or line breaks)."""
    lines = ["\t".join(rows[0])] + ["\t".join(r.values()) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def error_of(call, *args, **kwargs) -> TableError:
    with pytest.raises(TableError) as info:
        call(*args, **kwargs)
    return info.value


# ----- formats ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("writer,suffix", [(write_csv, ".csv"), (write_jsonl, ".jsonl"), (write_json, ".json")])
def test_every_format_from_a_path_and_from_text(tmp_path: Path, writer, suffix: str) -> None:
    path = writer(tmp_path / f"data{suffix}", ROWS)
    assert read_table(path) == EXPECTED
    # The same content without a telling name: the format comes from the content.
    assert parse_table(path.read_text(encoding="utf-8")) == EXPECTED
    assert read_table(path.rename(tmp_path / "data.txt")) == EXPECTED


def test_tsv_has_no_quoting_like_wmt_files(tmp_path: Path) -> None:
    rows = [{"candidate": '"hello" , he said .', "reference": 'he said " hello "'},
            {"candidate": "it 's a \"b", "reference": "x"}]
    path = write_tsv(tmp_path / "data.tsv", rows)
    assert read_table(path) == ([r["candidate"] for r in rows], [[r["reference"]] for r in rows])
    assert parse_table(path.read_text()) == read_table(path)  # sniffed as TSV by the tab in the header


def test_real_wmt17_tsv_equals_a_plain_split(tmp_path: Path) -> None:
    path, rows = (SHARED_WMT17, 560) if SHARED_WMT17.is_file() else (WMT17_FIXTURE, 300)
    lines = path.read_text(encoding="utf-8").split("\n")
    header = lines[0].split("\t")
    body = [line.split("\t") for line in lines[1:] if line]
    cands, groups = read_table(path)
    assert len(cands) == len(body) == rows
    assert cands == [fields[header.index("candidate")] for fields in body]
    assert groups == [[fields[header.index("reference")]] for fields in body]
    # The German sources open fields with quotes: kept as text, not read as CSV quoting.
    sources, _ = read_table(path, candidate_column="source")
    assert sources == [fields[header.index("source")] for fields in body]
    assert sum(s.startswith('"') for s in sources) > 10


def test_format_argument_wins_over_the_extension(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.csv", ROWS)
    assert read_table(path, format="jsonl") == EXPECTED
    with pytest.raises(ValueError, match="format must be one of"):
        read_table(path, format="xlsx")


def test_json_lines_under_a_json_name_and_crlf_line_ends(tmp_path: Path) -> None:
    assert read_table(write_jsonl(tmp_path / "data.json", ROWS)) == EXPECTED
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(b"candidate,reference\r\na,b\r\nc,\"d\r\ne\"\r\n")
    assert read_table(crlf) == (["a", "c"], [["b"], ["d\r\ne"]])


def test_blank_lines_are_skipped_but_empty_cells_are_texts() -> None:
    text = "\n\ncandidate,reference\n\na,b\n   \n,\nc,\n"
    assert parse_table(text) == (["a", "", "c"], [["b"], [""], [""]])
    jsonl = '\n{"candidate": "", "reference": "b"}\n\n{"candidate": "c", "reference": ""}\n'
    assert parse_table(jsonl) == (["", "c"], [["b"], [""]])


# ----- multi-reference -------------------------------------------------------------------------------
def test_numbered_reference_columns_in_numeric_order() -> None:
    header = ["Hypothesis"] + [f"reference_{k}" for k in (10, 2, 1, 9)]
    row = ["x", "r10", "r2", "r1", "r9"]
    assert parse_table(",".join(header) + "\n" + ",".join(row) + "\n") == (["x"], [["r1", "r2", "r9", "r10"]])
    # A plain reference column comes first; ref_N / referenceN spellings count too.
    assert parse_table("pred,ref2,reference,ref_1\na,c,b,d\n") == (["a"], [["b", "d", "c"]])


def test_blank_cells_among_several_reference_columns_are_skipped() -> None:
    text = "candidate\treference_1\treference_2\treference_3\nx\ty1\t\ty3\nz\t\t \t\n"
    assert parse_table(text) == (["x", "z"], [["y1", "y3"], [""]])
    jsonl = '{"candidate": "x", "reference_1": "", "reference_2": "b"}\n'
    assert parse_table(jsonl) == (["x"], [["b"]])


def test_list_cells_hold_several_references() -> None:
    jsonl = '{"candidate": "a", "references": ["b", "", "c"]}\n{"candidate": "d", "references": "e"}\n'
    assert parse_table(jsonl) == (["a", "d"], [["b", "", "c"], ["e"]])  # items of a list are kept as written
    assert parse_table('candidate,references\na,"[""b"", ""c""]"\n') == (["a"], [["b", "c"]])
    # A bracketed text that is not a JSON list of strings stays a text.
    assert parse_table('candidate,reference\na,[laughs] ok [applause]\nb,"[1, 2]"\n') == (
        ["a", "b"], [["[laughs] ok [applause]"], ["[1, 2]"]])
    # In JSON a string is a string, even when it looks like a list.
    assert parse_table('[{"candidate": "a", "reference": "[\\"b\\", \\"c\\"]"}]') == (["a"], [['["b", "c"]']])
    assert parse_table('[{"prediction": "a", "reference_1": "b", "reference_2": ["c", "d"]}]') == (
        ["a"], [["b", "c", "d"]])


# ----- overrides -------------------------------------------------------------------------------------
def test_explicit_columns(tmp_path: Path) -> None:
    rows = [{"output": "a", "gold_b": "b1", "gold_a": "a1", "candidate": "not me"}]
    path = write_jsonl(tmp_path / "data.jsonl", rows)
    with open_table(path, candidate_column="output", reference_columns=["gold_a", "gold_b"]) as table:
        assert (table.candidate_column, table.reference_columns, table.format) == ("output", ("gold_a", "gold_b"), "jsonl")
        assert [(r.candidate, r.references, r.row, r.line) for r in table] == [("a", ["a1", "b1"], 1, 1)]
    # One name as a plain string; the other side still found by name.
    assert read_table(path, reference_columns="gold_b") == (["not me"], [["b1"]])
    csv_path = write_csv(tmp_path / "data.csv", [{"src": "s", "mt": "m", "ref": "r"}])
    assert read_table(csv_path, candidate_column="mt") == (["m"], [["r"]])


def test_explicit_columns_resolve_an_ambiguity() -> None:
    text = "candidate,prediction,reference,target\na,b,c,d\n"
    message = str(error_of(parse_table, text, name="t.csv"))
    assert message.startswith("t.csv: several candidate columns ('candidate', 'prediction')")
    assert "--candidate-column" in message
    assert "several reference columns ('reference', 'target')" in str(
        error_of(parse_table, text, name="t.csv", candidate_column="prediction"))
    assert parse_table(text, candidate_column="prediction", reference_columns=["target", "reference"]) == (
        ["b"], [["d", "c"]])


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"candidate_column": "output"}, "t.csv: no column 'output'; found columns: 'candidate', 'reference', 'other'"),
        ({"reference_columns": ["gold"]}, "t.csv: no column 'gold'; found columns:"),
        ({"reference_columns": []}, "t.csv: reference_columns is empty"),
        ({"candidate_column": "other", "reference_columns": ["other"]}, "'other' is both the candidate and a reference"),
        ({"reference_columns": ["other", "other"]}, "reference column(s) 'other' named twice"),
    ],
)
def test_bad_overrides_name_the_column(kwargs: dict, message: str) -> None:
    assert message in str(error_of(parse_table, "candidate,reference,other\na,b,c\n", name="t.csv", **kwargs))


# ----- errors: each names the file, the row (and line) and the column --------------------------------------
@pytest.mark.parametrize(
    "text,message",
    [
        ("", "t: is empty"),
        ("  \n\n", "t: is empty"),
        ("text,gold\na,b\n", "t: missing a candidate column (candidate / prediction / hypothesis) and reference column(s)"),
        ("candidate,other\na,b\n", "t: missing reference column(s) (reference / references / reference_1..n); "
                                   "found columns: 'candidate', 'other'"),
        ("candidate\treference\n", "t: has a header but no rows"),
        ("candidate,reference,reference\na,b,c\n", "t, line 1: column 'reference' appears 2 times in the header (fields 2, 3)"),
        # ragged rows, short and long, with the data row and the physical line
        ("candidate,reference\na,b\n\nc\n", "t, row 2 (line 4): has 1 field but the header has 2"),
        ("candidate,reference\na,b,c\n", "t, row 1 (line 2): has 3 fields but the header has 2"),
        ('candidate,reference\n"x\ny",b\nc\n', "t, row 2 (line 4): has 1 field"),  # a quoted line break counts
        ("candidate\treference\na\tb\tc\n", "(a tab inside a text? TSV texts cannot hold tabs or line breaks)"),
        # CSV quoting
        ('candidate,reference\na,"b"c\n', "t, line 2: not valid CSV (',' expected after '\"')"),
        ('candidate,reference\na,b\nc,"never closed\nmore\n', "t, line 3: not valid CSV: a quoted field starting on "
                                                                "this line is never closed"),
        ('candidate\treference\n"a ""b"" c"\td\n', "t, row 1 (line 2), column 'candidate': looks CSV-quoted"),
        # JSON lines
        ('{"candidate": "a", "reference": "b"}\n\n{"candidate": \n', "t, line 3: is not valid JSON (Expecting value"),
        ('{"candidate": "a", "reference": "b"}\n[1, 2]\n', "t, row 2 (line 2): is a JSON list, expected an object"),
        ('{"candidate": "a", "reference": "b"}\n{"candidate": "c"}\n', "t, row 2 (line 2), column 'reference': is missing"),
        ('{"candidate": "a", "reference": null}\n', "t, row 1 (line 1), column 'reference': is null; write \"\" for an empty text"),
        ('{"candidate": 3, "reference": "b"}\n', "t, row 1 (line 1), column 'candidate': is a number (3), not a text"),
        ('{"candidate": "a", "reference": true}\n', "column 'reference': is a boolean (true), not a text"),
        ('{"candidate": "a", "reference": {"text": "b"}}\n', "column 'reference': is an object ({\"text\": \"b\"})"),
        ('{"candidate": ["a"], "reference": "b"}\n', "column 'candidate': is a list; a candidate is one text"),
        ('{"candidate": "a", "references": ["b", 2.5]}\n', "column 'references': [1] is a number (2.5), not a text"),
        ('{"candidate": "a", "references": ["b", null]}\n', "column 'references': [1] is null"),
        ('{"candidate": "a", "references": []}\n', "column 'references': is an empty list"),
        ('{"candidate": "a", "reference": "b"}\n{"candidate": "c", "reference": "d", "ref_2": "e"}\n',
         "t, row 2 (line 2), column 'ref_2': is not a column of row 1"),
        ('{"candidate": "a", "reference": "b\\ud800c"}\n', "column 'reference': contains a lone surrogate (U+D800 at "
                                                            "character 1)"),
        # JSON arrays: the row is the item
        ('[{"candidate": "a", "reference": "b"}, 3]', "t, row 2: is a JSON number, expected an object"),
        ('[{"candidate": "a", "reference": "b"},\n {"candidate": "c"]', "t, line 2: is not valid JSON"),
        ('[{"candidate": "a", "reference": "b"}, {"candidate": null, "reference": "d"}]',
         "t, row 2, column 'candidate': is null"),
        ("[]", "t: is an empty JSON array"),
    ],
)
def test_errors_say_where_and_why(text: str, message: str) -> None:
    error = error_of(parse_table, text, name="t")
    assert message in str(error)
    assert isinstance(error, ValueError)


def test_error_attributes_for_programs() -> None:
    error = error_of(parse_table, 'candidate,reference\na,b\n"x\ny",\n{}\n', name="f.csv")
    assert (error.source, error.row, error.line, error.column) == ("f.csv", 3, 5, None)
    error = error_of(parse_table, '{"candidate": "a", "reference": 1}', name="f.jsonl")
    assert (error.source, error.row, error.line, error.column) == ("f.jsonl", 1, 1, "reference")


def test_errors_name_the_file_path_or_the_given_name(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("candidate,reference\na\n")
    assert str(error_of(read_table, path)).startswith(f"{path}, row 1 (line 2)")
    assert str(error_of(read_table, path, name="upload.csv")).startswith("upload.csv, row 1 (line 2)")


def test_row_limit() -> None:
    text = "candidate,reference\na,b\nc,d\ne,f\n"
    assert parse_table(text, max_rows=3) == (["a", "c", "e"], [["b"], ["d"], ["f"]])
    assert str(error_of(parse_table, text, name="t", max_rows=2)) == "t: has more than 2 rows; at most 2 are accepted here"


# ----- encodings ----------------------------------------------------------------------------------------
def test_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes("candidate,reference\na,b\n".encode("utf-8-sig"))
    assert read_table(path) == (["a"], [["b"]])
    assert parse_table("\ufeffcandidate,reference\na,b\n") == (["a"], [["b"]])


def test_non_utf8_names_the_byte_offset(tmp_path: Path) -> None:
    data = "candidate,reference\ncafé,x\n".encode("latin-1")
    path = tmp_path / "latin.csv"
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    assert str(error_of(read_table, path)) == f"{path}, line 2: not valid UTF-8 (byte {offset}: b'\\xe9'); save it as UTF-8"
    # With a BOM in front, and far past the first block read (the streaming path).
    data = "\ufeffcandidate,reference\n".encode("utf-8") + b"a,b\n" * 40_000 + "é,x\n".encode("latin-1")
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    message = str(error_of(read_table, path, name="big.csv"))
    assert message.startswith(f"big.csv, line 40002: not valid UTF-8 (byte {offset}:")


def test_utf16_and_binary_files(tmp_path: Path) -> None:
    path = tmp_path / "utf16.csv"
    path.write_bytes("candidate,reference\na,b\n".encode("utf-16"))
    assert "is UTF-16 text" in str(error_of(read_table, path))
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    assert str(error_of(read_table, path, name="x.png")).startswith("x.png: looks binary (a NUL byte at byte 8)")
    path.write_bytes(b"")
    assert str(error_of(read_table, path, name="e.csv")) == "e.csv: is empty"


def test_a_line_across_the_first_block_is_read_whole(tmp_path: Path) -> None:
    """The reader looks at the first 64 KiB before decoding: a row (and a UTF-8 character) cut there is whole."""
    prefix = "candidate,reference\n" + "a,b\n" * 1000
    filler = "x" * (tables.HEAD_BYTES - len(prefix.encode()) - 3)
    long_text = filler + "é🙂z"  # the 4-byte emoji straddles byte 65536
    data = (prefix + f"{long_text},r\nlast,row\n").encode("utf-8")
    assert data[: tables.HEAD_BYTES].decode("utf-8", "ignore")[-2:] != "🙂z"  # the cut is inside the emoji
    path = tmp_path / "cut.csv"
    path.write_bytes(data)
    cands, groups = read_table(path)
    assert cands[-2:] == [long_text, "last"] and groups[-2:] == [["r"], ["row"]]


# ----- streaming --------------------------------------------------------------------------------------------
def test_columns_first_rows_lazily(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"candidate": "a", "reference": "b"}\n' * 3 + "not json\n")
    table = open_table(path)  # the header is read at once: column errors come before any work
    assert (table.candidate_column, table.reference_columns) == ("candidate", ("reference",))
    rows = iter(table)
    assert [next(rows).row for _ in range(3)] == [1, 2, 3]  # the bad line has not been reached yet
    with pytest.raises(TableError, match="line 4: is not valid JSON"):
        next(rows)
    missing = tmp_path / "cols.csv"
    missing.write_text("text,gold\n" + "a,b\n" * 10)
    with pytest.raises(TableError, match="missing a candidate column"):
        open_table(missing)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".tsv"])
def test_streaming_memory_stays_flat(tmp_path: Path, suffix: str) -> None:
    """Fails when the reader holds the file or its rows: the peak of Python's allocations while
    reading 20,000 rows would be about 8 times that of 2,500 (measured flat: the same within 1%).
    A ratio within the run: no bet on the Python build's allocation sizes."""
    peaks, sizes = {}, {}
    for row_count in (2_500, 20_000):
        rows = [{"candidate": f"candidate text number {i} " * 3, "reference": f"reference {i} " * 3}
                for i in range(row_count)]
        writer = {".csv": write_csv, ".jsonl": write_jsonl, ".tsv": write_tsv}[suffix]
        path = writer(tmp_path / f"big-{row_count}{suffix}", rows)
        del rows
        sizes[row_count] = path.stat().st_size
        tracemalloc.start()
        try:
            count = sum(1 for _ in open_table(path))
            peaks[row_count] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert count == row_count
    assert sizes[20_000] > 2_000_000 and sizes[20_000] > 7 * sizes[2_500]
    assert peaks[20_000] < 1.5 * peaks[2_500], peaks  # never held whole


def test_reader_closes_its_file(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "data.csv", ROWS)
    with open_table(path) as table:
        next(iter(table))
    assert table_handle_closed(table)
    table = open_table(path)
    list(table)
    assert table_handle_closed(table)


def table_handle_closed(table: tables.TableReader) -> bool:
    handle = table._close.__self__  # the bound close() of the file handed to the reader
    return handle.closed


# ----- properties ---------------------------------------------------------------------------------------------
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)  # valid text: no lone surrogates


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(texts, texts, texts), min_size=1, max_size=8))
def test_csv_and_jsonl_round_trip(rows: list[tuple[str, str, str]]) -> None:
    """What the csv and json modules write reads back as the documented rule says, in both formats."""
    assume(all(not r.strip().startswith("[") for _, r1, r2 in rows for r in (r1, r2)))  # not JSON-list cells
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["candidate", "reference_1", "reference_2"])
    writer.writerows(rows)
    jsonl = "".join(json.dumps({"candidate": c, "reference_1": r1, "reference_2": r2}) + "\n" for c, r1, r2 in rows)
    expected_groups = []
    for _, r1, r2 in rows:  # several reference columns: blank cells are skipped, none left -> one empty text
        expected_groups.append([r for r in (r1, r2) if r.strip()] or [""])
    expected = ([c for c, _, _ in rows], expected_groups)
    assert parse_table(buffer.getvalue(), format="csv") == expected
    assert parse_table(jsonl, format="jsonl") == expected


def test_collect_and_rows_agree(tmp_path: Path) -> None:
    path = write_json(tmp_path / "data.json", ROWS)
    rows = list(open_table(path))
    assert [r.row for r in rows] == [1, 2, 3] and all(r.line is None for r in rows)
    assert tables.collect(rows) == read_table(path) == EXPECTED
    assert tables.collect(table_from_text(path.read_text())) == EXPECTED


# ----- columns besides the texts (a human score, a second candidate) -------------------------------
@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "json"])
def test_extra_columns_come_back_as_read_and_table_columns_lists_the_header(tmp_path, fmt) -> None:
    rows = [{"candidate": "a b", "reference": "a c", "human": "0.5", "sys": "x"},
            {"candidate": "d", "reference": "e", "human": "-1", "sys": "y"}]
    path = tmp_path / f"t.{fmt}"
    if fmt in ("csv", "tsv"):
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, list(rows[0]), delimiter="\t" if fmt == "tsv" else ",",
                                    **({"quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}))
            writer.writeheader()
            writer.writerows(rows)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps({**r, "human": float(r["human"])}) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(json.dumps([{**r, "human": float(r["human"])} for r in rows]), encoding="utf-8")
    assert tables.table_columns(path) == ("candidate", "reference", "human", "sys")
    with open_table(path, extra_columns=["human", "sys"]) as table:
        read = [(row.candidate, row.references, row.extras) for row in table]
    human = [r["human"] if fmt in ("csv", "tsv") else float(r["human"]) for r in rows]
    assert read == [(r["candidate"], [r["reference"]], (h, r["sys"])) for r, h in zip(rows, human)]


def test_a_missing_extra_column_or_cell_is_named() -> None:
    with pytest.raises(TableError, match=r"no column 'score'; found columns: 'candidate', 'reference'"):
        table_from_text("candidate,reference\na,b\n", extra_columns=["score"])
    with pytest.raises(TableError, match="already the candidate or a reference column"):
        table_from_text("candidate,reference\na,b\n", extra_columns=["reference"])
    reader = table_from_text('{"candidate": "a", "reference": "b", "score": 1}\n{"candidate": "a", "reference": "b"}\n',
                             extra_columns=["score"])
    with pytest.raises(TableError, match=r"row 2 \(line 2\), column 'score': is missing"):
        list(reader)
