"""The evaluate module under evaluate's own metric test machinery, and `evaluate.combine`.

`test_evaluate_load_harness` is the logic of evaluate's `tests/test_metric_common.py`
(`LocalModuleTest.test_load`, evaluate 0.4.x) run against this module laid out as evaluate's
repository lays out its metrics (`metrics/<name>/<name>.py`, run from the repository root):
`_compute` has no `**kwargs`, and a doctest of the module, with `evaluate.load` resolved
locally, fails nothing and attempts more than one example. The examples' outputs are real
numbers of the embedded MiniLM, rounded to two places in the text; what the examples computed is
checked unrounded against the official bert-score 0.3.13 at batch_size=1, within 1e-6.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import shutil
from unittest.mock import patch

import pytest
import torch

evaluate = pytest.importorskip("evaluate")
bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

import oracle  # noqa: E402
from bertscore import EMBEDDED_MODEL_NAME  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402

METRIC_PATH = str(REPO_ROOT / "bertscore_metric.py")
NAME = "bertscore_metric"


def official(cands, refs, minilm_dir, num_layers: int) -> tuple[torch.Tensor, ...]:
    """The official bert-score 0.3.13's (P, R, F1) at batch_size=1 (tests/oracle.py keeps the answer)."""
    return oracle.call(bert_score.score, cands, refs, model_type=str(minilm_dir), num_layers=num_layers, batch_size=1)


@pytest.fixture()
def evaluate_checkout(tmp_path, monkeypatch):
    """A folder laid out as evaluate's repository holds a metric, as the current directory."""
    folder = tmp_path / "metrics" / NAME
    folder.mkdir(parents=True)
    shutil.copy(METRIC_PATH, folder / f"{NAME}.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# The docstring's two examples as the official package takes them (a bare reference as a group of one),
# with the layer each uses (the model's default, 6, then num_layers=4).
EXAMPLES = [(["the cat sat on the mat", "hello world"], [["a cat sat on the mat", "the cat is sitting"], ["hello there"]], 6),
            (["the cat sat on the mat", "hello world"], [["a cat sat on the mat"], ["hello there", "hi world"]], 4)]


def test_evaluate_load_harness(evaluate_checkout, monkeypatch, minilm_dir) -> None:
    monkeypatch.setattr(doctest, "ELLIPSIS_MARKER", "[...]")
    load = evaluate.load
    module = importlib.import_module(
        evaluate.loading.evaluation_module_factory(os.path.join("metrics", NAME), module_type="metric").module_path
    )
    instance = evaluate.loading.import_main_class(module.__name__)
    parameters = inspect.signature(instance._compute).parameters
    assert all(p.kind != p.VAR_KEYWORD for p in parameters.values())  # no **kwargs

    computed: list[dict] = []  # every compute() the examples ran, unrounded

    def load_local_metric(name, *args, **kwargs):
        loaded = load(os.path.join("metrics", name), *args, **kwargs)
        compute = loaded.compute
        loaded.compute = lambda *a, **k: computed.append(compute(*a, **k)) or computed[-1]
        return loaded

    with patch("evaluate.load") as mock_load:
        mock_load.side_effect = load_local_metric
        try:
            results = doctest.testmod(module, verbose=True, raise_on_error=True)
        except doctest.UnexpectedException as error:
            raise error.exc_info[1]
    assert results.failed == 0
    assert results.attempted > 1
    assert mock_load.call_count >= 1  # the examples loaded the module through evaluate.load
    # What the examples computed (the doctest compared it at two places) against the official package.
    assert len(computed) == len(EXAMPLES)
    for out, (cands, refs, layer) in zip(computed, EXAMPLES):
        for name, values in zip(("precision", "recall", "f1"), official(cands, refs, minilm_dir, layer)):
            assert out[name] == pytest.approx(values.tolist(), abs=1e-6), (name, layer)
        assert out["hashcode"].split("_")[1] == f"L{layer}"


# A second evaluate metric that loads offline: exact match, as a local module file.
EXACT_MATCH = '''
import datasets
import evaluate


class ExactMatchLocal(evaluate.Metric):
    """The share of predictions equal to their reference."""

    def _info(self):
        return evaluate.MetricInfo(
            description="exact match", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"), "references": datasets.Value("string")}),
        )

    def _compute(self, predictions, references, ignore_case=False):
        fold = str.lower if ignore_case else str
        return {"exact_match": sum(fold(p) == fold(r) for p, r in zip(predictions, references)) / len(predictions)}
'''
PREDICTIONS = ["the cat sat on the mat", "hello world", "It rained all day."]
REFERENCES = ["a cat sat on the mat", "hello world", "it rained all day."]


@pytest.fixture(scope="module")
def exact_match_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("metrics") / "exact_match_local.py"
    path.write_text(EXACT_MATCH)
    return str(path)


def test_combine_with_settings_given_at_load(exact_match_path, minilm_dir) -> None:
    bertscore = evaluate.load(METRIC_PATH, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    assert bertscore.scoring_settings == {"model_type": EMBEDDED_MODEL_NAME, "num_layers": 4}
    combined = evaluate.combine([bertscore, evaluate.load(exact_match_path)])
    for prediction, reference in zip(PREDICTIONS, REFERENCES):
        combined.add(prediction=prediction, reference=reference)  # each module's add(predictions=, references=)
    added_one_by_one = combined.compute()
    p, r, f = official(PREDICTIONS, REFERENCES, minilm_dir, 4)
    assert added_one_by_one["exact_match"] == pytest.approx(1 / 3)
    for name, values in zip(("precision", "recall", "f1"), (p, r, f)):
        assert added_one_by_one[name] == pytest.approx(values.tolist(), abs=1e-6), name
    assert "_L4_" in added_one_by_one["hashcode"]

    combined.add_batch(predictions=PREDICTIONS, references=REFERENCES)
    assert combined.compute() == added_one_by_one
    assert combined.compute(predictions=PREDICTIONS, references=REFERENCES) == added_one_by_one

    # combine forwards every compute() keyword to every module: settings at compute reach the other
    # metric too, which refuses them (hence the settings at load, or one compute() per metric)
    with pytest.raises(TypeError, match="model_type"):
        combined.compute(predictions=PREDICTIONS, references=REFERENCES, model_type=EMBEDDED_MODEL_NAME)


def test_add_takes_both_spellings_and_refuses_both_at_once(minilm_dir) -> None:
    bertscore = evaluate.load(METRIC_PATH, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    bertscore.add(predictions=PREDICTIONS[0], references=REFERENCES[0])  # evaluate's documented keywords
    bertscore.add(prediction=PREDICTIONS[1], reference=[REFERENCES[1], "hi"])
    bertscore.add(predictions=PREDICTIONS[2], references=[REFERENCES[2]])
    out = bertscore.compute()
    f = official(PREDICTIONS, [[REFERENCES[0]], [REFERENCES[1], "hi"], [REFERENCES[2]]], minilm_dir, 4)[2]
    assert out["f1"] == pytest.approx(f.tolist(), abs=1e-6)
    with pytest.raises(TypeError, match="both prediction= and predictions="):
        bertscore.add(prediction="a", predictions="b", reference="c")
    with pytest.raises(TypeError, match="prediction is a list, not a string"):
        bertscore.add(predictions=["a", "b"], references=["c", "d"])


def test_a_setting_at_compute_overrides_the_load_and_unknown_load_keywords_are_refused() -> None:
    bertscore = evaluate.load(METRIC_PATH, model_type=EMBEDDED_MODEL_NAME, num_layers=4)
    out = bertscore.compute(predictions=PREDICTIONS[:1], references=REFERENCES[:1], num_layers=3)
    assert "_L3_" in out["hashcode"]
    with pytest.raises(TypeError, match="'model_typo'.*neither a scoring setting"):
        evaluate.load(METRIC_PATH, model_typo=EMBEDDED_MODEL_NAME)
    loaded = evaluate.load(METRIC_PATH, experiment_id="run-1", model_type=EMBEDDED_MODEL_NAME)  # evaluate's own
    assert loaded.experiment_id == "run-1" and loaded.scoring_settings == {"model_type": EMBEDDED_MODEL_NAME}
