"""Packaged baselines and rescaling."""

import csv
import importlib.util
from pathlib import Path

import pytest
import torch

from bertscore.scoring import baseline_tables

OURS = {"en/sentence-transformers/all-MiniLM-L6-v2.tsv"}  # computed here (see its NOTICE.md)


def test_packaged_tables_are_the_official_files_byte_for_byte():
    bert_score = pytest.importorskip("bert_score")
    official_root = Path(bert_score.__file__).parent / "rescale_baseline"
    official = {p.relative_to(official_root).as_posix(): p for p in official_root.rglob("*.tsv")}
    root = baseline_tables._baseline_dir()
    packaged = {p.relative_to(root).as_posix(): p for p in root.rglob("*.tsv")}
    assert len(official) == 72
    assert set(packaged) == set(official) | OURS
    different = [name for name, path in official.items() if packaged[name].read_bytes() != path.read_bytes()]
    assert different == []


def test_roberta_large_row_values():
    """Layer 17's P, R, F are the numbers on the LAYER=17 line of the official file (read here with csv,
    from the official package where installed, else from the packaged copy): fails if the table is read
    a row off (the header taken as layer 0, or the row after), with its columns shuffled or the LAYER
    column kept, or rounded below float32."""
    path = baseline_tables.packaged_baseline_path("roberta-large", "en")
    official = importlib.util.find_spec("bert_score")
    if official is not None and official.origin:
        path = Path(official.origin).parent / "rescale_baseline" / "en" / "roberta-large.tsv"
    with path.open(newline="") as handle:
        lines = {int(line["LAYER"]): line for line in csv.DictReader(handle)}
    table = baseline_tables.load_baseline(baseline_tables.packaged_baseline_path("roberta-large", "en"))
    assert table.shape == (len(lines), 3) == (25, 3)
    for layer in (0, 17, 24):
        row = baseline_tables.baseline_rows(table, layer, "x")
        expected = torch.tensor([float(lines[layer][column]) for column in "PRF"], dtype=torch.float32)
        assert row.dtype == torch.float32 and torch.equal(row, expected), layer


def test_single_language_model_needs_no_lang():
    assert baseline_tables.packaged_baseline_path("roberta-large", None).parent.name == "en"


def test_the_language_of_a_nested_model_name_is_its_top_folder():
    for model in ("microsoft/deberta-xlarge-mnli", "sentence-transformers/all-MiniLM-L6-v2", "roberta-large"):
        assert baseline_tables.packaged_language(baseline_tables.packaged_baseline_path(model, "en")) == "en"


def test_ambiguous_language_is_an_error():
    with pytest.raises(ValueError, match="several languages"):
        baseline_tables.packaged_baseline_path("bert-base-multilingual-cased", None)


def test_missing_baseline_is_a_clear_error(tiny_models):
    with pytest.raises(ValueError, match="no packaged rescale baseline"):
        baseline_tables.packaged_baseline_path(str(tiny_models["electra"]), "en")
    with pytest.raises(ValueError, match="in language 'zz'"):
        baseline_tables.packaged_baseline_path("roberta-large", "zz")


def test_rescale_formula():
    scores = torch.tensor([[0.9, 0.8, 0.85]])
    base = torch.tensor([0.8, 0.6, 0.7])
    out = baseline_tables.rescale(scores, base)
    assert torch.allclose(out, (scores - base) / (1 - base))
    assert torch.allclose(baseline_tables.rescale(base, base), torch.zeros(3))


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("A,B,C,D\n0,1,2,3\n")
    with pytest.raises(ValueError, match="LAYER,P,R,F"):
        baseline_tables.load_baseline(bad)
    bad.write_text("LAYER,P,R,F\n0,0.1,zz,0.3\n")
    with pytest.raises(ValueError, match="line 2"):
        baseline_tables.load_baseline(bad)
    with pytest.raises(FileNotFoundError):
        baseline_tables.load_baseline(tmp_path / "missing.tsv")
    good = tmp_path / "good.tsv"
    good.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n1,0.4,0.5,0.6\n")
    with pytest.raises(ValueError, match="not layer 5"):
        baseline_tables.baseline_rows(baseline_tables.load_baseline(good), 5, good)


def test_a_local_model_path_never_picks_a_file_outside_the_package(tmp_path):
    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel.tsv").write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n")
    assert baseline_tables.packaged_languages(str(tmp_path / "mymodel")) == []
    english = baseline_tables._baseline_dir() / "en"
    assert baseline_tables.packaged_languages("../en/roberta-large") == []  # a real file, reached by '..'
    assert (english / "../en/roberta-large.tsv").is_file()


def test_written_files_use_the_official_layout_and_refuse_non_finite_values(tmp_path):
    text = baseline_tables.format_baseline([[0.5, 0.25, 1 / 3], [0.1, -0.2, 0.3]])
    assert text == "LAYER,P,R,F\n0,0.5,0.25,0.33333334\n1,0.1,-0.2,0.3\n"
    with pytest.raises(ValueError, match="layer 1: expected three finite numbers"):
        baseline_tables.format_baseline([[0.5, 0.25, 0.3], [0.1, float("nan"), 0.3]])
    with pytest.raises(FileNotFoundError, match="no provenance file"):
        baseline_tables.read_sidecar(tmp_path / "x.tsv")


def test_a_file_rewritten_with_the_same_mtime_is_read_again(tmp_path):
    """Files unpacked from archives (wheels, zips, reproducible tarballs) share one fixed mtime:
    a rewrite that keeps it must not return the old rows while the hash names the new content."""
    import os

    path = tmp_path / "b.tsv"
    path.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n1,0.5,0.5,0.5\n")
    os.utime(path, ns=(0, 315532800 * 10**9))  # 1980-01-01, as in a zip
    first = baseline_tables.load_baseline(path)
    first_fingerprint = baseline_tables.file_fingerprint(path)
    path.write_text("LAYER,P,R,F\n0,0.6,0.7,0.8\n1,0.6,0.7,0.8\n")
    os.utime(path, ns=(0, 315532800 * 10**9))
    assert torch.equal(first, torch.full((2, 3), 0.5))
    assert baseline_tables.file_fingerprint(path) != first_fingerprint
    assert torch.equal(baseline_tables.load_baseline(path), torch.tensor([[0.6, 0.7, 0.8]] * 2))
