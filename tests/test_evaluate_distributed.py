"""evaluate's distributed mode with the BERTScore module: two real processes share a cache_dir.

Each process loads the metric with num_process=2, process_id=i, the same experiment_id and
cache_dir, adds its contiguous half and calls compute(); process 0 gets the scores of all
pairs in input order (process 0's half, then process 1's), the others get None. The same two
processes run every experiment of the file in turn, each under its own experiment_id.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
METRIC = str(ROOT / "bertscore_metric.py")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PREDICTIONS = ["the cat sat on the mat", "a dog ran fast", "it rains", "", "blue sky today", "he reads a book"]
REFERENCES = [["a cat sat on a mat"], ["the dog ran", "dogs run fast"], ["it is raining"], ["hi world"],
              ["the sky is blue"], ["she reads books"]]

# Each process runs every experiment in turn, as a training loop evaluates after each epoch: two
# processes serve all the tests of this file (an interpreter costs seconds of imports).
WORKER = r'''
import json, sys, warnings
import evaluate
metric_path, rank, cache_dir, data_path, out_path = sys.argv[1:6]
rank = int(rank)
payloads = {}
for experiment in json.load(open(data_path)):
    metric = evaluate.load(metric_path, num_process=2, process_id=rank, experiment_id=experiment["id"],
                           cache_dir=cache_dir, timeout=600)  # evaluate's wait for the other rank: a hang guard only
    try:
        metric.add_batch(predictions=experiment["predictions"][rank], references=experiment["references"][rank])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = metric.compute(model_type=experiment["model"])
        payloads[experiment["name"]] = {"ok": True, "result": result}
    except Exception as error:
        payloads[experiment["name"]] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
json.dump(payloads, open(out_path, "w"))
'''

HALF = len(PREDICTIONS) // 2
# experiment name -> each rank's (predictions, references)
EXPERIMENTS = {
    "halves": [(PREDICTIONS[:HALF], REFERENCES[:HALF]), (PREDICTIONS[HALF:], REFERENCES[HALF:])],
    "rank 1 without data": [(PREDICTIONS, REFERENCES), ([], [])],
}


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory) -> dict[str, list[dict]]:
    """Every experiment of EXPERIMENTS run by two real processes: {name: [rank 0's answer, rank 1's]}."""
    folder = tmp_path_factory.mktemp("evaluate_distributed")
    worker = folder / "worker.py"
    worker.write_text(WORKER, encoding="utf-8")
    data = folder / "data.json"
    data.write_text(json.dumps([{"name": name, "id": uuid.uuid4().hex, "model": MODEL,
                                 "predictions": [h[0] for h in halves], "references": [h[1] for h in halves]}
                                for name, halves in EXPERIMENTS.items()]), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    processes = [
        subprocess.Popen([sys.executable, str(worker), METRIC, str(rank), str(folder / "cache"), str(data),
                          str(folder / f"out{rank}.json")], env=env, stderr=subprocess.PIPE, text=True)
        for rank in range(2)
    ]
    answers: dict[str, list[dict]] = {name: [] for name in EXPERIMENTS}
    for rank, process in enumerate(processes):
        _, stderr = process.communicate(timeout=300)
        path = folder / f"out{rank}.json"
        payloads = json.loads(path.read_text()) if path.exists() else {}
        for name in EXPERIMENTS:
            answers[name].append(payloads.get(name, {"ok": False, "error": stderr[-2000:]}))
    return answers


@pytest.fixture(scope="module")
def single_process() -> dict:
    import evaluate

    metric = evaluate.load(METRIC)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return metric.compute(predictions=PREDICTIONS, references=REFERENCES, model_type=MODEL)


def test_two_processes_equal_one_in_input_order(two_processes, single_process) -> None:
    outputs = two_processes["halves"]
    assert outputs[0]["ok"], outputs[0]
    assert outputs[1] == {"ok": True, "result": None}  # only process 0 gets the result
    result = outputs[0]["result"]
    assert result["hashcode"] == single_process["hashcode"]
    for key in ("precision", "recall", "f1"):
        assert result[key] == pytest.approx(single_process[key], abs=1e-6)
    assert result["f1"][3] == 0.0  # the empty prediction, in its input position


def _features_are_single(metric_path: str) -> bool:
    import evaluate
    from datasets import Features

    return isinstance(evaluate.load(metric_path).features, Features)


def test_rank_without_data_calls_empty_add_batch(two_processes, single_process) -> None:
    """A rank with no data must still take part (else process 0 waits for its cache file and
    fails): it calls add_batch(predictions=[], references=[]) before compute(). evaluate
    0.4.6 infers the input format from the first example when a module declares a *list*
    of feature sets (an empty batch then raises IndexError), so the module declares one
    `Features`."""
    assert _features_are_single(METRIC)
    outputs = two_processes["rank 1 without data"]
    assert outputs[0]["ok"] and outputs[1] == {"ok": True, "result": None}
    for key in ("precision", "recall", "f1"):
        assert outputs[0]["result"][key] == pytest.approx(single_process[key], abs=1e-6)
