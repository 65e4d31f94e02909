"""bertscore.layers (choose_layer) against independent routes: the official package's all-layer scores
and scipy on the vendored WMT17 sample; `score(..., num_layers=k)` plus scipy on tiny models, with and
without a final norm after the stack; plain loops for relative ranking."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import oracle
import tiny_families
import tiny_models
from bertscore import score
from bertscore.inputs import InputError
from bertscore.layers import choose_layer, judgements_from_lists

WMT17 = Path(__file__).resolve().parent / "data" / "wmt17_de-en.first300.tsv"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def wmt17(limit: int | None = None) -> tuple[list[str], list[str], np.ndarray]:
    """Candidates, references and human scores of the sample, read here with the csv module."""
    with WMT17.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[:limit]
    return [r["candidate"] for r in rows], [r["reference"] for r in rows], np.array([float(r["human_score"]) for r in rows])


@pytest.fixture(scope="module")
def final_norm(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("final_norm")
    return {"t5": tiny_families.build_t5(root / "tiny-t5"),
            "mbart": tiny_families.build_mbart(root / "tiny-mbart")}


# ----- acceptance: MiniLM on real human judgements --------------------------------------------------
def test_minilm_agreement_equals_the_official_all_layer_scores_and_scipy(minilm_dir) -> None:
    """On the first 150 segments of the sample (docs/layers.md runs all 300 through the CLI)."""
    import bert_score

    candidates, references, human = wmt17(150)
    report = choose_layer(judgements_from_lists(references, candidates=candidates, human=human), MINILM, device="cpu")
    official = oracle.call(bert_score.score, candidates, references, model_type=str(minilm_dir), num_layers=6,
                           all_layers=True, batch_size=64)
    official = {name: values.double().numpy() for name, values in zip(("precision", "recall", "f1"), official)}
    assert report.kind == "direct" and report.segments == 150 and report.total_layers == 6
    assert report.default_layer == 6 and report.default_from == "the official table"
    for k, entry in enumerate(report.layers):
        assert entry["pearson"] == pytest.approx(scipy.stats.pearsonr(official["f1"][k], human).statistic, abs=1e-3)
        assert entry["kendall"] == pytest.approx(scipy.stats.kendalltau(official["f1"][k], human).statistic, abs=1e-3)
        for column in ("precision", "recall"):
            assert entry[column]["pearson"] == pytest.approx(
                scipy.stats.pearsonr(official[column][k], human).statistic, abs=1e-3)
            assert entry[column]["kendall"] == pytest.approx(
                scipy.stats.kendalltau(official[column][k], human).statistic, abs=1e-3)
        low, high = entry["pearson_ci"]
        assert low < entry["pearson"] < high
    independent = [scipy.stats.pearsonr(official["f1"][k], human).statistic for k in range(7)]
    assert report.best_layer == int(np.argmax(independent))
    # Williams' test of each layer against the default, from the official scores and scipy's t.
    r13, n = independent[6], len(human)
    for k in range(6):
        r12, r23 = independent[k], scipy.stats.pearsonr(official["f1"][k], official["f1"][6]).statistic
        big_k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
        t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(
            2 * big_k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3)
        assert report.layers[k]["vs_default"]["p_value"] == pytest.approx(scipy.stats.t.sf(t, n - 3), abs=1e-3)
    assert report.layers[6]["vs_default"] is None
    assert report.recommended_layer == (report.best_layer if report.significant else 6)
    json.dumps(report.to_dict(), allow_nan=False)  # plain JSON: no NaN, no tensors


# ----- layer k is num_layers=k, with or without a final norm -----------------------------------------
def per_layer_f1(model: str, total: int, *texts, **kwargs) -> list[list[np.ndarray]]:
    """F1 of each (candidates, references) of `texts` at every layer k, each by a scorer at num_layers=k."""
    from bertscore import BERTScorer

    layers = []
    for k in range(total + 1):
        scorer = BERTScorer(model_type=model, num_layers=k, device="cpu", **kwargs)
        layers.append([scorer.score(candidates, references)[2].double().numpy() for candidates, references in texts])
    return layers


def per_layer_pearson(model: str, candidates, references, human, total: int, **kwargs) -> list[float]:
    return [scipy.stats.pearsonr(f1, human).statistic
            for (f1,) in per_layer_f1(model, total, (candidates, references), **kwargs)]


@pytest.mark.parametrize("family", ["t5", "mbart"])
def test_an_encoder_with_a_final_norm_reports_num_layers_k(final_norm, family) -> None:
    candidates, references, human = wmt17(32)
    model = str(final_norm[family])
    report = choose_layer(judgements_from_lists(references, candidates=candidates, human=human), model,
                          device="cpu", chunk_size=16)
    assert not report.scoring["one_pass"] and report.scoring["probe_difference"] > 1e-3
    expected = per_layer_pearson(model, candidates, references, human, 3)
    assert [entry["pearson"] for entry in report.layers] == pytest.approx(expected, abs=1e-6)
    # ... which is not what the all-layers pass gives: the check was needed.
    rows = score(candidates, references, model_type=model, all_layers=True, device="cpu")[2].double().numpy()
    one_pass = [scipy.stats.pearsonr(row, human).statistic for row in rows]
    assert max(abs(a - b) for a, b in zip(one_pass[:3], expected[:3])) > 1e-3
    assert report.default_layer == 3 and report.default_from == "its last layer: no official default"


def test_a_plain_stack_is_scored_in_one_pass_that_equals_num_layers_k(tiny_models) -> None:
    candidates, references, human = wmt17(32)
    model = str(tiny_models["electra"])
    report = choose_layer(judgements_from_lists(references, candidates=candidates, human=human), model, device="cpu")
    assert report.scoring["one_pass"] and report.scoring["probe_difference"] <= 1e-5
    expected = per_layer_pearson(model, candidates, references, human, 3)
    assert [entry["pearson"] for entry in report.layers] == pytest.approx(expected, abs=1e-6)


def test_idf_and_several_references_stream_in_chunks_as_one_score_call(tiny_models, tmp_path) -> None:
    candidates, references, human = wmt17(35)
    second = references[1:] + references[:1]  # a second reference per row: the max over both counts
    path = tmp_path / "judged.tsv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerow(["hypothesis", "reference_1", "reference_2", "rating"])
        writer.writerows(zip(candidates, references, second, human.tolist()))
    model = str(tiny_models["electra"])
    report = choose_layer(path, model, idf=True, device="cpu", chunk_size=7)  # idf over all 90 references
    groups = [[a, b] for a, b in zip(references, second)]
    expected = per_layer_pearson(model, candidates, groups, human, 3, idf=True)
    assert report.idf and report.columns["human"] == "rating"
    assert [entry["pearson"] for entry in report.layers] == pytest.approx(expected, abs=1e-6)


def test_relative_ranking_reports_the_wmt_tau_of_each_layer(tiny_models, tmp_path) -> None:
    candidates, references, _ = wmt17(40)
    worse = [" ".join(text.split()[: max(1, len(text.split()) // 2)]) for text in candidates]  # half the words
    better = candidates
    rows = [{"reference": r, "better": b, "worse": w} for r, b, w in zip(references, better, worse)]
    path = tmp_path / "darr.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    model = str(tiny_models["electra"])
    report = choose_layer(path, model, device="cpu", chunk_size=15)
    assert report.kind == "relative" and report.segments == 40
    for entry, (f_better, f_worse) in zip(report.layers, per_layer_f1(model, 3, (better, references),
                                                                        (worse, references))):
        concordant = sum(b > w for b, w in zip(f_better, f_worse))
        discordant = len(rows) - concordant  # a metric tie counts as discordant
        assert (entry["concordant"], entry["discordant"]) == (concordant, discordant)
        assert entry["kendall"] == pytest.approx((concordant - discordant) / (concordant + discordant), abs=1e-12)
        low, high = entry["kendall_ci"]
        assert low <= entry["kendall"] <= high
    assert report.measure == "kendall" and report.test["measure"].startswith("WMT relative-ranking")
    top = max(entry["kendall"] for entry in report.layers)
    tied = [entry["layer"] for entry in report.layers if entry["kendall"] == top]
    assert report.best_layer == (report.default_layer if report.default_layer in tied else min(tied))


def test_notes_on_the_texts_name_the_rows_once(tiny_models) -> None:
    candidates, references, human = wmt17(40)
    candidates[2] = "   "
    notes: list[str] = []
    choose_layer(judgements_from_lists(references, candidates=candidates, human=human), str(tiny_models["electra"]),
                 device="cpu", notes=notes, chunk_size=16)
    empty = [note for note in notes if note.startswith("no content tokens")]
    assert len(empty) == 1 and "row 3 (candidate)" in empty[0]


# ----- errors, before any model loads ----------------------------------------------------------------
def test_a_model_without_layers_is_refused_from_its_config(tmp_path) -> None:
    folder = tiny_models.build_without_layers(tmp_path / "no-layers")  # a config, no weights
    with pytest.raises(InputError, match="has 0 transformer layers: there is no layer to choose"):
        choose_layer(WMT17, str(folder))


def test_bad_data_is_refused_before_the_model_is_looked_at(tmp_path) -> None:
    path = tmp_path / "few.tsv"
    path.write_text("candidate\treference\thuman\n" + "".join(f"c{i}\tr{i}\t{i}\n" for i in range(5)), encoding="utf-8")
    # The model does not exist: the data's error comes first.
    with pytest.raises(InputError, match="has 5 judged segments; choosing a layer needs at least 30"):
        choose_layer(path, str(tmp_path / "no-such-model"))
    with pytest.raises(ValueError, match="n_resamples must be an integer >= 1"):
        choose_layer(WMT17, str(tmp_path / "no-such-model"), n_resamples=0)
