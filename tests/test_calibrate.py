"""Computing rescale baselines (bertscore.calibrate, `bertscore baseline`) on tiny random models."""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bertscore import BERTScorer, baselines
from bertscore.cli.baseline import main as baseline_main
from bertscore.calibrate import all_layers_scorer, compute_baseline, mean_and_standard_error, prepare_corpus, random_pairs
from bertscore.cli import main as cli_main
from tiny_models import training_corpus

# 60 distinct sentences, then lines the procedure must drop: empty, blank, exact and padded duplicates.
CORPUS = list(training_corpus()[:60]) + ["", "   ", training_corpus()[3], "  " + training_corpus()[5] + " "]


def distinct(lines: list[str]) -> list[str]:
    """The procedure's step 1, written out: strip, drop empties, keep first occurrences."""
    out: list[str] = []
    for line in lines:
        if line.strip() and line.strip() not in out:
            out.append(line.strip())
    return out


def plain_loop_baseline(model_dir, candidates: list[str], references: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error of P, R, F per layer, one pair at a time with plain transformers.

    No idf: every token weighs 1 except [CLS]/[SEP] (<s>/</s>), which weigh 0 as queries but
    stay matchable, as in the official package.
    """
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModel.from_pretrained(str(model_dir)).eval()
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}

    def embed(text: str) -> tuple[list[torch.Tensor], torch.Tensor]:
        ids = tokenizer(text, truncation=True, max_length=tokenizer.model_max_length)["input_ids"]
        with torch.no_grad():
            states = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        weights = torch.tensor([0.0 if i in special else 1.0 for i in ids])
        return [s[0] / s[0].norm(dim=-1, keepdim=True) for s in states], weights

    rows = []
    for cand, ref in zip(candidates, references):
        (c_layers, c_w), (r_layers, r_w) = embed(cand), embed(ref)
        per_layer = []
        for c, r in zip(c_layers, r_layers):
            sim = c @ r.T
            p = float((sim.max(dim=1).values * c_w).sum() / c_w.sum())
            rec = float((sim.max(dim=0).values * r_w).sum() / r_w.sum())
            per_layer.append([p, rec, 2 * p * rec / (p + rec)])
        rows.append(per_layer)
    scores = np.array(rows, dtype=np.float64)  # [pairs, layers, 3]
    return scores.mean(axis=0), scores.std(axis=0, ddof=1) / math.sqrt(len(rows))


@pytest.mark.parametrize("name", ["electra", "roberta"])
def test_compute_baseline_equals_a_plain_loop(tiny_models, name):
    sentences = distinct(CORPUS)
    assert len(sentences) == 60
    order = np.random.default_rng(7).permutation(len(sentences))  # the documented pairing, seed 7
    cands = [sentences[i] for i in order[:25]]
    refs = [sentences[i] for i in order[25:50]]
    expected_mean, expected_error = plain_loop_baseline(tiny_models[name], cands, refs)

    table = compute_baseline(CORPUS, model_type=str(tiny_models[name]), num_pairs=25, seed=7, device="cpu")
    assert table.mean.shape == (4, 3)  # embeddings + 3 layers
    np.testing.assert_allclose(table.mean.numpy(), expected_mean, atol=1e-6, rtol=0)
    np.testing.assert_allclose(table.standard_error.numpy(), expected_error, atol=1e-6, rtol=0)
    assert (table.num_pairs, table.num_sentences, table.seed) == (25, 60, 7)
    assert table.revision.startswith("local-")


def test_existing_scorer_is_reused(tiny_models):
    """A scorer passed in gives the plain loop's table (every layer, no idf) and the hash of a fresh
    all-layers load: fails if the reused scorer's idf weights leak into the baseline, if only its own
    layer is scored (a last-layer scorer's one row repeated), or if its encoder is loaded again."""
    model_dir = str(tiny_models["electra"])
    sentences = distinct(CORPUS)
    order = np.random.default_rng(3).permutation(len(sentences))  # seed 3, half the 60 sentences: 30 pairs
    expected_mean, expected_error = plain_loop_baseline(
        tiny_models["electra"], [sentences[i] for i in order[:30]], [sentences[i] for i in order[30:60]])
    fresh = compute_baseline(CORPUS, model_type=model_dir, seed=3, device="cpu")
    last_layer = BERTScorer(model_type=model_dir, num_layers=3, device="cpu", idf=True)  # idf is ignored
    assert all_layers_scorer(last_layer).model.encoder is last_layer.model.encoder
    every_layer = BERTScorer(model_type=model_dir, all_layers=True, device="cpu")
    for scorer in (last_layer, every_layer):
        table = compute_baseline(CORPUS, scorer=scorer, seed=3)
        np.testing.assert_allclose(table.mean.numpy(), expected_mean, atol=1e-6, rtol=0)
        np.testing.assert_allclose(table.standard_error.numpy(), expected_error, atol=1e-6, rtol=0)
        assert table.num_pairs == 30 and table.scorer_hash == fresh.scorer_hash
    cut = BERTScorer(model_type=model_dir, num_layers=1, device="cpu")
    with pytest.raises(ValueError, match="cut at layer 1 of 3.*all_layers=True"):
        compute_baseline(CORPUS, scorer=cut)
    with pytest.raises(ValueError, match="idf= is fixed"):
        compute_baseline(CORPUS, model_type=model_dir, idf=True)


def test_same_corpus_and_seed_give_the_same_bytes(tiny_models, tmp_path):
    model_dir = str(tiny_models["electra"])
    written = []
    for run, seed in enumerate((0, 0, 1)):
        path = tmp_path / f"run{run}" / "baseline.tsv"
        baselines.write_baseline(compute_baseline(CORPUS, model_type=model_dir, seed=seed, device="cpu"), path)
        written.append((path.read_bytes(), baselines.sidecar_path(path).read_bytes()))
    assert written[0] == written[1]
    assert written[0][0] != written[2][0] and written[0][1] != written[2][1]
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    for path in (tmp_path / "run0" / "baseline.tsv", tmp_path / "run0" / "baseline.tsv.json"):
        assert path.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777  # not mkstemp's 0600


def test_file_round_trips_and_the_official_package_reads_it(tiny_models, tmp_path):
    model_dir = str(tiny_models["electra"])
    table = compute_baseline(CORPUS, model_type=model_dir, seed=0, device="cpu")
    path = tmp_path / "baseline.tsv"
    baselines.write_baseline(table, path)
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["LAYER", "P", "R", "F"] and [r[0] for r in rows[1:]] == ["0", "1", "2", "3"]
    written = torch.tensor([[float(x) for x in r[1:]] for r in rows[1:]], dtype=torch.float64)
    assert torch.allclose(written, table.mean, atol=1e-7, rtol=0)  # float32 text of the float64 means

    ours = BERTScorer(model_type=model_dir, num_layers=2, rescale_with_baseline=True, baseline_path=str(path))
    assert torch.equal(ours.baseline, written[2].float())
    meta = baselines.read_sidecar(path)
    assert meta["num_pairs"] == 30 and meta["seed"] == 0 and meta["model"] == model_dir
    assert meta["corpus_sha256"] == table.corpus_sha256 and len(meta["standard_error"]["F"]) == 4
    assert meta["mean"]["F"] == pytest.approx(table.mean[:, 2].tolist(), abs=0)

    bert_score = pytest.importorskip("bert_score")
    official = bert_score.BERTScorer(model_type=model_dir, num_layers=2, lang="en", rescale_with_baseline=True,
                                     baseline_path=str(path))
    assert torch.allclose(official.baseline_vals.float(), ours.baseline, atol=0)


def test_identical_pairs_rescale_to_one(tiny_models, tmp_path):
    model_dir = str(tiny_models["roberta"])
    path = tmp_path / "baseline.tsv"
    baselines.write_baseline(compute_baseline(CORPUS, model_type=model_dir, device="cpu"), path)
    scorer = BERTScorer(model_type=model_dir, all_layers=True, rescale_with_baseline=True, baseline_path=str(path))
    p, r, f = scorer.score(CORPUS[:20], CORPUS[:20])
    assert torch.allclose(torch.stack([p, r, f]), torch.ones(3, 4, 20), atol=1e-5)


def test_prepare_corpus_drops_empty_lines_and_duplicates():
    corpus = prepare_corpus(["a b", "", " a b ", "c", "  ", "c", "A b"])
    assert (corpus.sentences, corpus.empty, corpus.duplicates) == (["a b", "c", "A b"], 2, 2)
    with pytest.raises(TypeError, match="sentence 1 is an int"):
        prepare_corpus(["a", 3])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 400), seed=st.integers(0, 2**32 - 1), fraction=st.floats(0, 1))
def test_random_pairs_use_each_sentence_at_most_once(n, seed, fraction):
    num_pairs = max(1, int(fraction * (n // 2)))
    cands, refs = random_pairs(n, num_pairs, seed)
    used = np.concatenate([cands, refs])
    assert len(cands) == len(refs) == num_pairs
    assert len(set(used.tolist())) == 2 * num_pairs and used.min() >= 0 and used.max() < n
    again = random_pairs(n, num_pairs, seed)
    assert np.array_equal(again[0], cands) and np.array_equal(again[1], refs)
    assert len(random_pairs(n, None, seed)[0]) == n // 2


def test_random_pairs_errors():
    with pytest.raises(ValueError, match="at least 2"):
        random_pairs(1, None, 0)
    with pytest.raises(ValueError, match="allow 1..5 pairs"):
        random_pairs(11, 6, 0)
    with pytest.raises(ValueError, match="allow 1..5 pairs"):
        random_pairs(11, 0, 0)
    for seed in (-1, 1.5, True, "0"):  # numpy's own errors ("expected non-negative integer") name nothing
        with pytest.raises(ValueError, match=r"seed must be an integer >= 0 \(it fixes the random pairing\)"):
            random_pairs(11, 2, seed)
    for num_pairs in (2.0, True, "2"):
        with pytest.raises(ValueError, match="num_pairs must be an integer"):
            random_pairs(11, num_pairs, 0)
    assert len(random_pairs(11, np.int64(2), np.uint8(3))[0]) == 2  # numpy integers are integers


def test_mean_and_standard_error_match_statistics():
    import statistics

    values = torch.tensor([[0.1], [0.4], [0.35], [0.9]])
    mean, error = mean_and_standard_error(values)
    column = [0.1, 0.4, 0.35, 0.9]
    assert mean.item() == pytest.approx(statistics.fmean(column), abs=1e-7)
    assert error.item() == pytest.approx(statistics.stdev(column) / 2, abs=1e-7)
    assert math.isnan(mean_and_standard_error(values[:1])[1].item())


# ----- the command line -------------------------------------------------------------------------

def _corpus_file(tmp_path, lines, name="corpus.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_writes_what_the_api_writes(tiny_models, tmp_path, capsys):
    model_dir = str(tiny_models["electra"])
    first = _corpus_file(tmp_path, CORPUS[:30], "a.txt")
    second = _corpus_file(tmp_path, CORPUS[30:], "b.txt")
    out = tmp_path / "out" / "baseline.tsv"
    argv = ["baseline", "--model", model_dir, "--corpus", str(first), str(second), "--pairs", "20", "--seed", "5",
            "--lang", "en", "-o", str(out), "--device", "cpu", "-q"]
    assert cli_main(argv) == 0
    stdout = capsys.readouterr().out
    expected = compute_baseline(CORPUS, model_type=model_dir, num_pairs=20, seed=5, lang="en", device="cpu")
    api = tmp_path / "api.tsv"
    baselines.write_baseline(expected, api)
    assert out.read_bytes() == api.read_bytes()
    assert baselines.sidecar_path(out).read_bytes() == baselines.sidecar_path(api).read_bytes()
    assert "20 pairs of 60 distinct sentences" in stdout
    f3, se3 = expected.mean[3, 2].item(), expected.standard_error[3, 2].item()
    assert "\n3\t" in stdout and f"{f3:.6f} ± {se3:.6f}" in stdout


@pytest.mark.parametrize("case", ["missing", "folder", "too_few", "too_many_pairs", "not_utf8", "overwrite", "bad_gz"])
def test_cli_bad_input_exits_2_naming_the_file(tiny_models, tmp_path, capsys, case):
    good = _corpus_file(tmp_path, CORPUS[:10], "good.txt")
    out = tmp_path / "out.tsv"
    corpus, extra, needle = [str(good)], [], str(good)
    if case == "missing":
        corpus, needle = [str(good), str(tmp_path / "nope.txt")], str(tmp_path / "nope.txt")
    elif case == "folder":
        corpus, needle = [str(tmp_path)], str(tmp_path)
    elif case == "too_few":
        few = _corpus_file(tmp_path, ["only one", "", "  only one  "], "few.txt")
        corpus, needle = [str(few)], f"{few}: 1 usable line"
    elif case == "too_many_pairs":
        extra, needle = ["--pairs", "6"], f"{good} has 10 distinct non-empty lines, which allow 1..5 pairs"
    elif case == "not_utf8":
        bad = tmp_path / "latin1.txt"
        bad.write_bytes("fine\nalso fine\ncaf\u00e9\n".encode("latin-1"))
        corpus, needle = [str(bad)], f"{bad}, line 3: not valid UTF-8"
    elif case == "overwrite":
        out, needle = good, f"is the input file {good}"
    elif case == "bad_gz":
        broken = tmp_path / "broken.txt.gz"
        broken.write_bytes(gzip.compress(b"one\ntwo\nthree\n")[:-12])
        corpus, needle = [str(broken)], f"{broken}: cannot be read"
    before = good.read_bytes()
    code = baseline_main(["--model", str(tiny_models["electra"]), "--corpus", *corpus, *extra, "-o", str(out), "-q"])
    assert code == 2
    assert needle in capsys.readouterr().err
    assert good.read_bytes() == before
    assert not (tmp_path / "out.tsv").exists()


def test_cli_reads_gzip_corpora(tiny_models, tmp_path, capsys):
    packed = tmp_path / "corpus.txt.gz"
    packed.write_bytes(gzip.compress(("\n".join(CORPUS) + "\n").encode("utf-8")))
    out = tmp_path / "out.tsv"
    assert baseline_main(["--model", str(tiny_models["electra"]), "--corpus", str(packed), "--pairs", "3",
                          "-o", str(out), "-q", "--device", "cpu"]) == 0
    expected = compute_baseline(CORPUS, model_type=str(tiny_models["electra"]), num_pairs=3, device="cpu")
    assert out.read_text() == baselines.format_baseline(expected.mean.tolist())


def test_cli_needs_a_model_or_a_language(tmp_path, capsys):
    good = _corpus_file(tmp_path, CORPUS[:10])
    assert baseline_main(["--corpus", str(good), "-o", str(tmp_path / "x.tsv")]) == 2
    assert "pass --model" in capsys.readouterr().err


def test_the_baselines_module_offers_the_same_compute_baseline() -> None:
    import bertscore.calibrate
    from bertscore.baselines import compute_baseline as from_baselines

    assert from_baselines is bertscore.calibrate.compute_baseline
    with pytest.raises(AttributeError, match="no attribute 'compute_baselines'"):
        baselines.compute_baselines  # noqa: B018


def test_the_baselines_module_offers_every_table_name_of_the_tables_room() -> None:
    """Users import tables and computation from `bertscore.baselines`; the rooms hold them."""
    import bertscore.scoring.baseline_tables
    import bertscore.calibrate

    names = ["load_baseline", "write_baseline", "read_sidecar", "sidecar_path", "format_baseline", "rescale",
             "baseline_rows", "check_table", "packaged_baseline_path", "packaged_language", "packaged_languages",
             "file_fingerprint", "BaselineTable", "COLUMNS", "SIDECAR_SUFFIX", "SIDECAR_SCHEMA"]
    assert sorted(bertscore.scoring.baseline_tables.__all__) == sorted(names)
    for name in names:
        assert getattr(baselines, name) is getattr(bertscore.scoring.baseline_tables, name), name
    assert sorted(baselines.__all__) == sorted([*names, "compute_baseline"])
    namespace: dict = {}
    exec("from bertscore.baselines import *", namespace)
    assert namespace["compute_baseline"] is bertscore.calibrate.compute_baseline
