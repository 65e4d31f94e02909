"""Packaged baselines and rescaling."""

import pytest
import torch

from bertscore import baselines


def test_packaged_tables_are_the_official_72():
    root = baselines._baseline_dir()
    files = sorted(root.rglob("*.tsv"))
    assert len(files) == 72
    assert len({p.relative_to(root).parts[0] for p in files}) == 12


def test_roberta_large_row_values():
    table = baselines.load_baseline(baselines.packaged_baseline_path("roberta-large", "en"))
    assert table.shape == (25, 3)
    row = baselines.baseline_rows(table, 17, "x")
    assert row.shape == (3,)
    assert 0.5 < row[2].item() < 1.0


def test_single_language_model_needs_no_lang():
    assert baselines.packaged_baseline_path("roberta-large", None).parent.name == "en"


def test_ambiguous_language_is_an_error():
    with pytest.raises(ValueError, match="several languages"):
        baselines.packaged_baseline_path("bert-base-multilingual-cased", None)


def test_missing_baseline_is_a_clear_error():
    with pytest.raises(ValueError, match="no packaged rescale baseline"):
        baselines.packaged_baseline_path("sentence-transformers/all-MiniLM-L6-v2", "en")
    with pytest.raises(ValueError, match="in language 'zz'"):
        baselines.packaged_baseline_path("roberta-large", "zz")


def test_rescale_formula():
    scores = torch.tensor([[0.9, 0.8, 0.85]])
    base = torch.tensor([0.8, 0.6, 0.7])
    out = baselines.rescale(scores, base)
    assert torch.allclose(out, (scores - base) / (1 - base))
    assert torch.allclose(baselines.rescale(base, base), torch.zeros(3))


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("A,B,C,D\n0,1,2,3\n")
    with pytest.raises(ValueError, match="LAYER,P,R,F"):
        baselines.load_baseline(bad)
    bad.write_text("LAYER,P,R,F\n0,0.1,zz,0.3\n")
    with pytest.raises(ValueError, match="line 2"):
        baselines.load_baseline(bad)
    with pytest.raises(FileNotFoundError):
        baselines.load_baseline(tmp_path / "missing.tsv")
    good = tmp_path / "good.tsv"
    good.write_text("LAYER,P,R,F\n0,0.1,0.2,0.3\n1,0.4,0.5,0.6\n")
    with pytest.raises(ValueError, match="not layer 5"):
        baselines.baseline_rows(baselines.load_baseline(good), 5, good)
