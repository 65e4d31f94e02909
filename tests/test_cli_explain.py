"""`bertscore explain`: one pair's scores as score() gives them, its matches as a table, its heatmap."""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME
from bertscore.cli import main
from oracle import call

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--num-layers", "4"]  # the session's minilm_scorer: loaded once
CANDIDATE = "The cat sat on the mat."
REFERENCES = ["A cat was sitting on the mat.", "Dogs bark at night."]
SCORES = re.compile(r"P=(-?\d\.\d{6}) R=(-?\d\.\d{6}) F1=(-?\d\.\d{6})")


def _blocks(out: str) -> dict[str, list[str]]:
    """The printed table's lines by section: the head, then each reference's."""
    blocks: dict[str, list[str]] = {"head": []}
    current = "head"
    for line in out.splitlines():
        if line.startswith("reference "):
            current = line.split(":")[0]
            blocks[current] = []
        blocks[current].append(line)
    return blocks


def _rows(lines: list[str], title: str) -> list[tuple[str, float, str, float]]:
    """(token, weight, its best match, cosine) of one direction's table."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 2  # the title, the header
    rows = []
    for line in lines[start:]:
        cells = line.split()
        if not line.startswith("  ") or len(cells) != 5:
            break
        rows.append((cells[1], float(cells[2]), cells[3], float(cells[4])))
    return rows


@pytest.fixture(scope="module")
def explained(minilm_scorer) -> str:
    """The table of CANDIDATE against both REFERENCES, computed once for the module's tests."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["explain", CANDIDATE, *REFERENCES, *MODEL]) == 0
    return out.getvalue()


def test_the_pair_scores_as_score_gives_them(explained, minilm_scorer) -> None:
    head = _blocks(explained)["head"]
    printed = [float(x) for x in SCORES.search(next(line for line in head if line.startswith("scores:"))).groups()]
    precision, recall, f1 = minilm_scorer.score([CANDIDATE], [REFERENCES])
    assert printed == pytest.approx([precision.item(), recall.item(), f1.item()], abs=6e-7)
    assert f"hash: {minilm_scorer.hash}" in head


def test_each_reference_scores_as_the_official_package(explained, minilm_dir) -> None:
    """Each reference's raw P, R, F1 against the official package alone on that pair (batch_size=1)."""

    import bert_score

    expected = [[value.item() for value in call(bert_score.score, [CANDIDATE], [reference], model_type=str(minilm_dir),
                                                num_layers=4, batch_size=1)]
                for reference in REFERENCES]
    blocks = _blocks(explained)
    for k, want in enumerate(expected, start=1):
        raw = next(line for line in blocks[f"reference {k}"] if line.startswith("raw:"))
        assert [float(x) for x in SCORES.search(raw).groups()] == pytest.approx(want, abs=2e-6)
    assert "(highest F1)" in blocks["reference 1"][1] and "(highest F1)" not in blocks["reference 2"][1]


def test_the_tables_are_the_matches_the_scores_average(explained) -> None:
    """A plain loop over each table: the weighted mean of its cosines is the printed P (or R)."""
    for name, lines in _blocks(explained).items():
        if name == "head":
            continue
        p, r, _ = (float(x) for x in SCORES.search(lines[1]).groups())
        for title, value in (("precision:", p), ("recall:", r)):
            rows = _rows(lines, title)
            assert rows and rows[0][1] == 0.0 and rows[-1][1] == 0.0  # [CLS], [SEP]: weight 0, not counted
            mean = sum(w * c for _, w, _, c in rows) / sum(w for _, w, _, _ in rows)
            assert mean == pytest.approx(value, abs=1e-4), (name, title)
    precision_rows = _rows(_blocks(explained)["reference 1"], "precision:")
    assert ("cat", 1.0, "cat") == precision_rows[2][:3] and precision_rows[3][2] == "sitting"


def test_a_line_of_files_and_the_heatmap(minilm_scorer, tmp_path: Path, capsys) -> None:
    pytest.importorskip("matplotlib")
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text(f"first\n{CANDIDATE}\n", encoding="utf-8")
    refs.write_text(f"other\n{REFERENCES[0]}\n", encoding="utf-8")
    figure = tmp_path / "pair.png"
    assert main(["explain", "-c", str(cands), "-r", str(refs), "--line", "2", *MODEL, "-o", str(figure)]) == 0
    captured = capsys.readouterr()
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"heatmap written to {figure}" in captured.err
    printed = [float(x) for x in SCORES.search(captured.out).groups()]
    precision, recall, f1 = minilm_scorer.score([CANDIDATE], [REFERENCES[0]])
    assert printed == pytest.approx([precision.item(), recall.item(), f1.item()], abs=6e-7)


@pytest.mark.parametrize(("argv", "message"), [
    ([CANDIDATE], "pass the candidate and at least one reference"),
    ([CANDIDATE, "a reference", "--line", "2"], "--line picks a line of -c/-r files"),
    ([CANDIDATE, "a reference", "-o", "pair.parquet"], "the heatmap is an image; name the file .png"),
    (["-c", "{cands}", "-r", "{cands}", "--line", "3"], "--line 3: {cands} has only 2 lines"),
    (["-c", "{cands}", "-r", "{cands}"], "with files, pass -c CANDIDATES -r REFERENCES"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_model(argv, message, tmp_path: Path, capsys, monkeypatch) -> None:
    from bertscore.models import shared as shared_models

    monkeypatch.setattr(shared_models.SharedModels, "get",
                        lambda *a, **k: pytest.fail("the model loaded before the input was checked"))
    cands = tmp_path / "c.txt"
    cands.write_text("one\ntwo\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    argv = [a.format(cands=cands) for a in argv]
    assert main(["explain", *argv, *MODEL]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertscore explain: error: ") and message.format(cands=cands) in err
    assert err.count("\n") == 1


def test_every_output_names_a_pair_by_its_line_counted_from_1(minilm_scorer, tmp_path, capsys) -> None:
    """Line N of the files is row N of the text table, `line` N of JSONL, TSV and Parquet, the line a
    note names and the pair `explain --line N` explains: each checked against the pair scored alone
    (`score()` on the texts of line N, Python's index N - 1). An output counting from 0 (as all did
    before, beside notes and --line counting from 1) is off by one here."""
    pq = pytest.importorskip("pyarrow.parquet")
    cands = ["the cat sat", "hello world", "", "red car fast", "it rained all day"]
    refs = ["a cat sat", "hi there world", "nothing here", "the red car", "rain fell the whole day"]
    (tmp_path / "c.txt").write_text("".join(f"{t}\n" for t in cands), encoding="utf-8")
    (tmp_path / "r.txt").write_text("".join(f"{t}\n" for t in refs), encoding="utf-8")
    files = ["-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt"), *MODEL]
    with warnings.catch_warnings():  # line 3's empty candidate: noted (here, as at the command below)
        warnings.simplefilter("ignore")
        alone = {n: [float(t) for t in minilm_scorer.score([cands[n - 1]], [refs[n - 1]])] for n in range(1, 6)}
    assert alone[2] != alone[3] != alone[4]  # neighbours differ: an off-by-one shows

    def close(values: list[float], n: int) -> bool:
        return values == pytest.approx(alone[n], abs=2e-6)

    assert main(files) == 0
    out, err = capsys.readouterr()
    table = [line.split("\t") for line in out.splitlines() if "\tP=" in line]
    for number, *cells in table:
        assert close([float(cell.split("=")[1]) for cell in cells], int(number))
    assert [int(number) for number, *_ in table] == [1, 2, 3, 4, 5]
    assert f"in line 3 of {tmp_path / 'c.txt'}" in err  # the empty candidate, line 3: row 3 scores 0
    assert close([0.0, 0.0, 0.0], 3)
    for name in ("s.jsonl", "s.tsv", "s.parquet"):
        assert main([*files, "-o", str(tmp_path / name)]) == 0
    jsonl = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text(encoding="utf-8").splitlines()]
    tsv = [line.split("\t") for line in (tmp_path / "s.tsv").read_text(encoding="utf-8").splitlines()]
    parquet = pq.read_table(tmp_path / "s.parquet").to_pylist()
    assert tsv[0] == ["line", "precision", "recall", "f1"]
    for rows in (jsonl, parquet, [dict(zip(tsv[0], map(float, row))) for row in tsv[1:]]):
        assert [int(row["line"]) for row in rows] == [1, 2, 3, 4, 5]
        for row in rows:
            assert close([row["precision"], row["recall"], row["f1"]], int(row["line"]))
    capsys.readouterr()
    assert main(["explain", *files, "--line", "4"]) == 0
    assert close([float(v) for v in SCORES.search(capsys.readouterr().out).groups()], 4)
