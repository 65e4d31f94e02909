"""bertscore.tables.columnar: Parquet, Arrow IPC (file and stream) and datasets save_to_disk folders,
written by the real pyarrow and datasets libraries; every error naming the file, row and column;
memory bounded by a record batch.

Expected values are the Python lists the test writes, never the reader's own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from bertscore.tables import TableError, open_table, read_table, table_columns  # noqa: E402

CANDIDATES = ["the cat sat, on the mat", "", "Ünïcödé — 🙂 \x00 nul inside"]
REFERENCES = [['a "cat" was sitting', "a second one"], ["multi\nline reference"], [""]]
DATA = {"id": [1, 2, 3], "candidate": CANDIDATES, "references": REFERENCES}


def write_parquet(path: Path, data: dict, **options) -> Path:
    pq.write_table(pa.table(data), path, **options)
    return path


def write_arrow_file(path: Path, data: dict) -> Path:
    table = pa.table(data)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return path


def write_arrow_stream(path: Path, data: dict) -> Path:
    table = pa.table(data)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return path


def write_dataset_folder(path: Path, data: dict) -> Path:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(data).save_to_disk(str(path), max_shard_size="1KB")
    return path


def write_datasets_parquet(path: Path, data: dict) -> Path:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(data).to_parquet(str(path))
    return path


WRITERS = {
    "pairs.parquet": write_parquet, "pairs.arrow": write_arrow_file, "pairs.arrows": write_arrow_stream,
    "saved": write_dataset_folder, "from_datasets.parquet": write_datasets_parquet,
    "no_extension": write_parquet, "stream_named.feather": write_arrow_stream,
}


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_columnar_format_reads_as_written(tmp_path: Path, name: str) -> None:
    path = WRITERS[name](tmp_path / name, DATA)
    assert read_table(path) == (CANDIDATES, REFERENCES)
    assert table_columns(path) == ("id", "candidate", "references")
    with open_table(path, extra_columns=["id"]) as table:
        rows = list(table)
    assert [(r.row, r.line, r.extras) for r in rows] == [(1, None, (1,)), (2, None, (2,)), (3, None, (3,))]


def test_save_to_disk_with_several_shards_keeps_order_and_counts_rows_across_them(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    count = 50
    cands = [f"candidate {i}" for i in range(count)]
    cands[42] = None
    datasets.Dataset.from_dict({"candidate": cands, "reference": [f"r{i}" for i in range(count)]}).save_to_disk(
        str(tmp_path / "d"), num_shards=4)
    assert len(json.loads((tmp_path / "d" / "state.json").read_text())["_data_files"]) == 4
    with pytest.raises(TableError) as info:
        list(open_table(tmp_path / "d"))
    assert str(info.value) == f"{tmp_path / 'd'}, row 43, column 'candidate': is null; write \"\" for an empty text"
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"candidate": ["a"], "reference": ["b"]})})
    splits.save_to_disk(str(tmp_path / "dd"))
    assert read_table(tmp_path / "dd" / "train") == (["a"], [["b"]])
    with pytest.raises(TableError, match=r"dd: is a DatasetDict folder \(splits: train\): give one split's folder"):
        read_table(tmp_path / "dd")


def test_multi_reference_columns_and_other_string_types(tmp_path: Path) -> None:
    data = {
        "prediction": pa.array(["a", "b"], pa.large_string()),
        "reference_1": pa.array(["r1", "s1"]).dictionary_encode(),  # a pandas categorical
        "reference_2": pa.array([["r2", "r3"], []], pa.large_list(pa.string())),
    }
    path = write_parquet(tmp_path / "t.parquet", data)
    with pytest.raises(TableError) as info:
        read_table(path)
    assert str(info.value) == f"{path}, row 2, column 'reference_2': is an empty list: give at least one reference"
    data["reference_2"] = pa.array([["r2", "r3"], [""]], pa.large_list(pa.string()))
    assert read_table(write_parquet(path, data)) == (["a", "b"], [["r1", "r2", "r3"], ["s1", ""]])


@pytest.mark.parametrize("data, column, message", [
    ({"candidate": ["a", None], "reference": ["b", "c"]}, "candidate", "row 2, column 'candidate': is null"),
    ({"candidate": ["a", "b"], "references": [["x"], ["y", None]]}, "references",
     "row 2, column 'references': [1] is null"),
    ({"candidate": [1, 2], "reference": ["b", "c"]}, "candidate",
     "column 'candidate': is of Arrow type int64, not text (string)"),
    ({"candidate": ["a"], "reference": [1.5]}, "reference",
     "column 'reference': is of Arrow type double, not text (string) or a list of texts"),
    ({"candidate": [["a"]], "reference": ["b"]}, "candidate",
     "column 'candidate': is of Arrow type list<"),
    ({"candidate": [None], "reference": ["b"]}, "candidate",
     "column 'candidate': is null in every row (a column without a single text)"),
    ({"candidate": ["a"], "reference": [b"bytes"]}, "reference", "column 'reference': is of Arrow type binary"),
])
def test_bad_cells_are_refused_naming_file_row_and_column(tmp_path: Path, data: dict, column: str, message: str) -> None:
    for name, write in [("t.parquet", write_parquet), ("t.arrow", write_arrow_file)]:
        path = write(tmp_path / name, data)
        with pytest.raises(TableError) as info:
            read_table(path, name=f"upload/{name}")
        assert str(info.value).startswith(f"upload/{name}, {message}"), str(info.value)
        assert info.value.column == column


def test_files_and_folders_that_are_not_tables(tmp_path: Path) -> None:
    good = write_parquet(tmp_path / "good.parquet", {"candidate": ["a"], "reference": ["b"]})
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-20])  # the footer is gone
    with pytest.raises(TableError, match=r"cut.parquet: cannot be read as Parquet"):
        read_table(cut)
    text = tmp_path / "text.parquet"
    text.write_text("candidate,reference\na,b\n")
    with pytest.raises(TableError, match=r"text.parquet: is not a Parquet file \(it does not start with PAR1\)"):
        read_table(text)
    misnamed = tmp_path / "misnamed.arrow"
    misnamed.write_bytes(good.read_bytes())
    with pytest.raises(TableError, match=r"misnamed.arrow: is not an? Arrow IPC file .*; it looks like parquet"):
        read_table(misnamed)
    (tmp_path / "folder").mkdir()
    with pytest.raises(TableError, match=r"folder: is a folder, but not one datasets' save_to_disk wrote"):
        read_table(tmp_path / "folder")
    empty = write_parquet(tmp_path / "empty.parquet", {"candidate": pa.array([], pa.string()),
                                                       "reference": pa.array([], pa.string())})
    with pytest.raises(TableError, match="empty.parquet: has columns but no rows"):
        read_table(empty)
    with pytest.raises(TableError, match=r"missing reference column\(s\)"):
        read_table(write_parquet(tmp_path / "cols.parquet", {"candidate": ["a"], "gold": ["b"]}))
    with pytest.raises(TableError, match="has more than 2 rows; at most 2"):
        read_table(write_parquet(tmp_path / "big.parquet", {"candidate": ["a"] * 3, "reference": ["b"] * 3}),
                   max_rows=2)


def _arrow_peak(path: Path) -> tuple[int, int]:
    """(rows read, the most bytes Arrow's memory pool held above its start while they were read)."""
    pool = pa.default_memory_pool()
    base, peak, seen = pool.bytes_allocated(), 0, 0
    for seen, _ in enumerate(open_table(path), start=1):
        if seen % 500 == 0:
            peak = max(peak, pool.bytes_allocated() - base)
    return seen, peak


def test_parquet_is_streamed_a_batch_at_a_time(tmp_path: Path) -> None:
    """Arrow's own allocations (not seen by tracemalloc) do not grow with the file, even when one
    row group holds the whole file. Fails when the reader buffers whole column chunks (it grows with
    the file); a ratio of two sizes within the run, not a byte bound."""
    sizes = {"warm-up": 1_000, "small": 25_000, "large": 400_000}
    peaks = {}
    for name, count in sizes.items():
        texts = [f"candidate text number {i} with some words " * 2 for i in range(count)]
        path = write_parquet(tmp_path / f"{name}.parquet", {"candidate": texts, "reference": texts},
                             row_group_size=count)
        del texts
        seen, peaks[name] = _arrow_peak(path)
        assert seen == count
    assert (tmp_path / "large.parquet").stat().st_size > 7_000_000  # 16 times the small file
    # measured: large 1.3 times small; a reader buffering whole column chunks adds about 7 MB (over 2 times)
    assert peaks["large"] < 1.6 * peaks["small"], peaks
