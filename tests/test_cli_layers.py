"""`bertscore layers`: its table and report, its errors (one through the installed command as a user runs
it, the rest through the command's `main` in this process), the baseline it writes for the chosen layer,
and the unknown-model warning that points to it at every door."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import tiny_families
import tiny_models
from bertscore.cli import main
from bertscore.cli.baseline import main as baseline_main
from bertscore.layers import choose_layer
from conftest import REPO_ROOT

WMT17 = Path(__file__).resolve().parent / "data" / "wmt17_de-en.first300.tsv"
OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def sample(path: Path, rows: int, edit=None) -> Path:
    """The first `rows` rows of the WMT17 sample (candidate, reference, human_score), edited by `edit`."""
    with WMT17.open(encoding="utf-8", newline="") as handle:
        data = [{k: r[k] for k in ("candidate", "reference", "human_score")}
                for r in list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[:rows]]
    if edit:
        edit(data)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, list(data[0]), delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writeheader()
        writer.writerows(data)
    return path


def test_the_command_prints_a_table_ending_with_the_layer_and_writes_the_api_report(tiny_models, tmp_path,
                                                                                     capsys) -> None:
    data = sample(tmp_path / "judged.tsv", 32)
    model = str(tiny_models["electra"])
    out = tmp_path / "report.json"
    returncode = main(["layers", "--model", model, "--data", str(data), "--json", str(out), "--device", "cpu", "-q"])
    result = capsys.readouterr()
    assert returncode == 0, result.err
    lines = result.out.splitlines()
    assert lines[1].split()[:3] == ["layer", "r", "(F1)"] and [line.split()[0] for line in lines[2:6]] == list("0123")
    expected = choose_layer(data, model, device="cpu")
    assert lines[-1].startswith(f"use num_layers={expected.recommended_layer} (--num-layers {expected.recommended_layer})")
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(expected.to_dict()))
    assert {"model", "default_layer", "best_layer", "layers"} <= set(written)
    assert set(written["layers"][0]) >= {"layer", "pearson", "pearson_ci", "kendall", "precision", "recall", "vs_default"}
    assert f"wrote the report to {out}" in result.err


def test_bad_data_is_named_before_the_model_is_looked_at(tmp_path, capsys) -> None:
    def garble(rows):
        rows[4]["human_score"] = "high"

    data = sample(tmp_path / "judged.tsv", 40, garble)
    assert main(["layers", "--model", str(tmp_path / "no-such-model"), "--data", str(data)]) == 2
    assert capsys.readouterr().err.strip() == (f"bertscore layers: error: {data}, row 5 (line 6), column 'human_score': 'high' "
                                     "is not a number; every row needs a numeric human score")


def test_a_model_without_layers_is_refused_by_the_command(tmp_path) -> None:
    """Through the installed `bertscore` script, in a process of its own, as a user types it."""
    folder = tiny_models.build_without_layers(tmp_path / "no-layers")  # a config and no weights
    result = subprocess.run(["bertscore", "layers", "--model", str(folder), "--data", str(WMT17)], capture_output=True,
                            text=True, timeout=600, env={**OFFLINE, "PATH": f"{Path(sys.executable).parent}:{OFFLINE['PATH']}"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "has 0 transformer layers: there is no layer to choose" in result.stderr


@pytest.mark.parametrize("case, message", [
    ("no column", r"no human score column \(human_score / human / score / z_score / z / da / rating\)"),
    ("few rows", r"has 12 judged segments; choosing a layer needs at least 30"),
    ("constant", r"every human score \(column 'human_score'\) is 0; constant scores correlate with nothing"),
    ("options", r"--baseline-corpus and --baseline-output go together"),
])
def test_each_bad_input_exits_2_with_one_line(tmp_path, capsys, case, message) -> None:
    edits = {"no column": lambda rows: [row.update(quality=row.pop("human_score")) for row in rows],
             "constant": lambda rows: [row.update(human_score="0") for row in rows]}
    data = sample(tmp_path / "judged.tsv", 12 if case == "few rows" else 40, edits.get(case))
    extra = ["--baseline-corpus", str(data)] if case == "options" else []
    assert main(["layers", "--model", str(tmp_path / "no-such-model"), "--data", str(data), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertscore layers: error: ") and err.count("\n") == 1
    assert __import__("re").search(message, err)


def test_it_writes_the_rescale_baseline_of_the_chosen_layer_as_bertscore_baseline_does(tiny_models, tmp_path,
                                                                                          capsys) -> None:
    data = sample(tmp_path / "judged.tsv", 32)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"sentence number {i} of a small corpus about {i % 7} things\n" for i in range(40)),
                      encoding="utf-8")
    model = str(tiny_models["electra"])
    ours, theirs = tmp_path / "layers_baseline.tsv", tmp_path / "baseline.tsv"
    assert main(["layers", "--model", model, "--data", str(data), "--device", "cpu", "-q", "--baseline-corpus",
                 str(corpus), "--baseline-output", str(ours), "--baseline-seed", "3"]) == 0
    out = capsys.readouterr().out
    layer = choose_layer(data, model, device="cpu").recommended_layer
    assert f"rescaled: --num-layers {layer} --rescale-with-baseline --baseline-path {ours}" in out
    assert baseline_main(["--model", model, "--corpus", str(corpus), "-o", str(theirs), "--seed", "3", "-q",
                          "--device", "cpu"]) == 0
    assert ours.read_text(encoding="utf-8") == theirs.read_text(encoding="utf-8")
    assert Path(f"{ours}.json").is_file()


def test_a_baseline_is_refused_for_an_encoder_with_a_final_norm(tmp_path, capsys) -> None:
    model = tiny_families.build_t5(tmp_path / "tiny-t5")
    data = sample(tmp_path / "judged.tsv", 32)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one sentence\nanother sentence\na third one\n", encoding="utf-8")
    out = tmp_path / "baseline.tsv"
    assert main(["layers", "--model", str(model), "--data", str(data), "--device", "cpu", "-q",
                 "--baseline-corpus", str(corpus), "--baseline-output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--baseline-corpus:" in err and "has something after its stack of layers (a final norm)" in err
    assert not out.exists()


# ----- the unknown-model warning points to `bertscore layers` at every door --------------------------------
def test_the_unknown_model_warning_points_to_bertscore_layers_at_the_cli(tiny_models, tmp_path, capsys) -> None:
    texts = tmp_path / "texts.txt"
    texts.write_text("the cat sat on the mat\n", encoding="utf-8")
    model = str(tiny_models["electra"])
    returncode = main(["-c", str(texts), "-r", str(texts), "--model", model, "--device", "cpu"])
    stderr = capsys.readouterr().err
    assert returncode == 0, stderr
    assert (f"no default layer is known for {model!r}: using its last layer (3); pass --num-layers 3 to keep it, or "
            f"measure which layer agrees best with human judgements: `bertscore layers --model {model} --data "
            "JUDGEMENTS` (docs/layers.md)") in stderr


def test_the_unknown_model_note_points_to_bertscore_layers_at_every_python_call_and_evaluate_compute(tiny_models) -> None:
    """The layer of a model the official table lacks is a guess, said at every scoring call (a note of the
    call, like an empty text's), in the door's own words: not once per loaded model."""
    evaluate = pytest.importorskip("evaluate")
    from bertscore import BERTScorer
    from bertscore.notes import BERTScoreNote

    model = str(tiny_models["electra"])
    scorer = BERTScorer(model_type=model, device="cpu")
    for _ in range(2):  # the same scorer, a second call: said again
        with pytest.warns(BERTScoreNote) as caught:
            scorer.score(["the cat sat"], ["a cat sat"])
        said = [str(w.message) for w in caught if "no default layer" in str(w.message)]
        assert len(said) == 1, said
        assert "pass num_layers=3 to keep it" in said[0] and f"`bertscore layers --model {model}" in said[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        BERTScorer(model_type=model, device="cpu", num_layers=2).score(["the cat sat"], ["a cat sat"])
        BERTScorer(model_type=model, device="cpu", all_layers=True).score(["the cat sat"], ["a cat sat"])
    assert not [w for w in caught if "no default layer" in str(w.message)]  # a layer chosen, or none needed
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    for _ in range(2):  # evaluate keeps its scorer between calls: said at each compute()
        with pytest.warns(BERTScoreNote) as caught:
            metric.compute(predictions=["the cat sat"], references=["a cat sat"], model_type=model, device="cpu")
        said = [str(w.message) for w in caught if "no default layer" in str(w.message)]
        assert len(said) == 1 and "pass num_layers=3 to compute() to keep it" in said[0], said
