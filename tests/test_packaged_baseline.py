"""The shipped English baseline of the embedded MiniLM: where it lives, what it records, and that
`rescale_with_baseline=True` works offline through every door (API, evaluate module, CLI)."""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
from importlib import resources

import pytest
import torch

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer, score
from bertscore.cli import main as cli_main
from conftest import REPO_ROOT, SENTENCES

TSV = "data/rescale_baseline/en/sentence-transformers/all-MiniLM-L6-v2.tsv"
TATOEBA = REPO_ROOT.parent / "shared" / "data" / "tatoeba" / "tatoeba_pairs.tsv.gz"
CANDS, REFS = SENTENCES[:5], SENTENCES[5:]


def shipped_rows() -> torch.Tensor:
    """The shipped file's P, R, F per layer, read with the csv module (not with our loader)."""
    text = resources.files("bertscore").joinpath(TSV).read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["LAYER", "P", "R", "F"]
    assert [int(r[0]) for r in rows[1:]] == list(range(7))  # embeddings + 6 layers
    return torch.tensor([[float(x) for x in r[1:]] for r in rows[1:]], dtype=torch.float32)


def by_hand(raw: tuple[torch.Tensor, ...], layer: int) -> torch.Tensor:
    base = shipped_rows()[layer]
    return torch.stack([(x - b) / (1 - b) for x, b in zip(raw, base)])


def test_the_file_and_its_records_are_package_data():
    folder = resources.files("bertscore").joinpath("data/rescale_baseline/en/sentence-transformers")
    assert folder.joinpath("all-MiniLM-L6-v2.tsv.json").is_file()
    notice = folder.joinpath("NOTICE.md").read_text(encoding="utf-8")
    assert "Tatoeba (tatoeba.org), via the LASER Tatoeba test set" in notice and "CC-BY 2.0 FR" in notice
    table = shipped_rows()
    assert ((table > 0) & (table < 1)).all()


def test_the_sidecar_describes_the_embedded_model_and_the_tatoeba_corpus(minilm_scorer):
    meta = json.loads(resources.files("bertscore").joinpath(TSV + ".json").read_text(encoding="utf-8"))
    assert meta["model"] == EMBEDDED_MODEL_NAME and meta["lang"] == "en" and meta["seed"] == 0
    assert meta["revision"] == minilm_scorer.model.revision  # computed with the installed weights
    assert (meta["num_sentences"], meta["num_pairs"]) == (69241, 34620)
    assert meta["mean"]["F"] == pytest.approx(shipped_rows()[:, 2].tolist(), abs=1e-7)
    assert all(0 < e < 0.005 for column in meta["standard_error"].values() for e in column)


@pytest.mark.skipif(not TATOEBA.is_file(), reason=f"needs the shared Tatoeba data at {TATOEBA} (not in a bare clone)")
def test_the_sidecar_fingerprints_the_distinct_tatoeba_english_sentences():
    meta = json.loads(resources.files("bertscore").joinpath(TSV + ".json").read_text(encoding="utf-8"))
    with gzip.open(TATOEBA, "rt", encoding="utf-8", newline="") as handle:
        english = [row["english"] for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)]
    digest = hashlib.sha256()
    for sentence in dict.fromkeys(s.strip() for s in english if s.strip()):
        digest.update(sentence.encode("utf-8") + b"\0")
    assert meta["corpus_sha256"] == digest.hexdigest()


def test_api_rescales_the_embedded_model_offline(minilm_scorer):
    rescaled = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, rescale_with_baseline=True, lang="en",
                          loaded_model=minilm_scorer.model)
    raw = minilm_scorer.score(CANDS, REFS)
    assert torch.allclose(torch.stack(rescaled.score(CANDS, REFS)), by_hand(raw, 4), atol=1e-6)
    assert "rescaled-en" in rescaled.hash
    default_layer = score(CANDS, REFS, model_type=EMBEDDED_MODEL_NAME, rescale_with_baseline=True)  # no lang needed
    raw6 = score(CANDS, REFS, model_type=EMBEDDED_MODEL_NAME)
    assert torch.allclose(torch.stack(default_layer), by_hand(raw6, 6), atol=1e-6)


def test_evaluate_module_rescales_the_embedded_model_offline(minilm_scorer):
    evaluate = pytest.importorskip("evaluate")
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    out = metric.compute(predictions=CANDS, references=REFS, model_type=EMBEDDED_MODEL_NAME, num_layers=4,
                         rescale_with_baseline=True)
    expected = by_hand(minilm_scorer.score(CANDS, REFS), 4)
    assert torch.allclose(torch.tensor([out["precision"], out["recall"], out["f1"]]), expected, atol=1e-6)
    assert "rescaled-en" in out["hashcode"]


def test_cli_rescales_the_embedded_model_offline(minilm_scorer, tmp_path, capsys):
    cands, refs = tmp_path / "c.txt", tmp_path / "r.txt"
    cands.write_text("\n".join(CANDS) + "\n", encoding="utf-8")
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    argv = ["-c", str(cands), "-r", str(refs), "--model", EMBEDDED_MODEL_NAME, "--num-layers", "4",
            "--rescale-with-baseline", "--format", "json"]
    assert cli_main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    expected = by_hand(minilm_scorer.score([c.strip() for c in CANDS], [r.strip() for r in REFS]), 4)
    assert torch.allclose(torch.tensor([out["precision"], out["recall"], out["f1"]]), expected, atol=1e-6)
