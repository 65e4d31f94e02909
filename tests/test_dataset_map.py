"""datasets' `map` over a BERTScorer, through the real library: the fingerprint datasets gives the map
function names the scoring settings and nothing else (stable across calls, scoring and processes;
changed by a setting; no weights pickled), a second map is served from datasets'
cache, and streaming, num_proc=2, multi-reference list columns and idf from a reference column give
the numbers `score()` gives for the same pairs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

datasets = pytest.importorskip("datasets")
from datasets.fingerprint import Hasher  # noqa: E402
from datasets.utils._dill import dumps  # noqa: E402

from bertscore import BERTScorer  # noqa: E402
from bertscore.dataset_map import ScoreColumns, column_texts, score_columns  # noqa: E402
from bertscore.inputs import InputError, MissingColumnError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PREDICTIONS = ["the cat sat on the mat", "a dog barked at night", "it rained all day in Berlin",
               "numbers like 3.14 appear", "short", "the match was postponed because of rain", "hello world"]
REFERENCES = ["a cat was sitting on the mat", "the dog barked loudly at night", "Berlin had rain all day long",
              "3.14 is a number", "brief", "rain postponed the match", "hello there world"]
MULTI = [[r, p.upper()] if i % 2 else [r] for i, (p, r) in enumerate(zip(PREDICTIONS, REFERENCES))]


def plain_closure(scorer: BERTScorer):
    """The map function a user writes."""
    def add_scores(batch):
        precision, recall, f1 = scorer.score(batch["prediction"], batch["reference"])
        return {"precision": precision.tolist(), "recall": recall.tolist(), "f1": f1.tolist()}
    return add_scores


def expected(scorer: BERTScorer, predictions=PREDICTIONS, references=REFERENCES) -> dict[str, list[float]]:
    precision, recall, f1 = scorer.score(predictions, references)
    return {"bertscore_precision": precision.tolist(), "bertscore_recall": recall.tolist(), "bertscore_f1": f1.tolist()}


def assert_close(got: dict, want: dict) -> None:
    for name, values in want.items():
        assert torch.allclose(torch.tensor(got[name]), torch.tensor(values), atol=1e-6, rtol=0), name


@pytest.fixture()
def on_disk(tmp_path) -> datasets.Dataset:
    """A dataset backed by an Arrow file (datasets caches maps of such datasets only)."""
    datasets.Dataset.from_dict({"prediction": PREDICTIONS, "reference": REFERENCES}).save_to_disk(tmp_path / "pairs")
    return datasets.load_from_disk(str(tmp_path / "pairs"))


def test_fingerprint_is_the_settings_not_the_state(minilm_scorer) -> None:
    """Fails when datasets' hash pickles the model or the embedding cache (slow, and a new fingerprint
    after every scoring): bounded by the bytes pickled, which hashing time follows, not by a clock."""
    for function in (plain_closure(minilm_scorer), score_columns(minilm_scorer)):
        before = Hasher.hash(function)
        assert len(dumps(function)) < 20_000  # settings only: no weights (MiniLM's are 90 MB), no cache
        function({"prediction": PREDICTIONS[:3], "reference": REFERENCES[:3]})  # fills the embedding cache
        assert len(minilm_scorer.cache) > 0
        assert Hasher.hash(function) == before


def test_a_setting_changes_the_fingerprint(minilm_scorer) -> None:
    shared = minilm_scorer.model
    same = BERTScorer(loaded_model=shared, device="cpu")
    others = [BERTScorer(loaded_model=shared, device="cpu", idf=REFERENCES),
              BERTScorer(loaded_model=shared, device="cpu", long_texts="window"),
              BERTScorer(loaded_model=shared, device="cpu", batch_size=8)]
    base = Hasher.hash(plain_closure(minilm_scorer))
    assert Hasher.hash(plain_closure(same)) == base
    assert len({base, *(Hasher.hash(plain_closure(other)) for other in others)}) == 4
    assert Hasher.hash(score_columns(minilm_scorer, predictions="hyp")) != Hasher.hash(score_columns(minilm_scorer))


PROCESS_SCRIPT = """
import json, sys
from datasets.fingerprint import Hasher
from bertscore import BERTScorer, EMBEDDED_MODEL_NAME
from bertscore.dataset_map import score_columns

scorer = BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, device="cpu")

def add_scores(batch):
    precision, recall, f1 = scorer.score(batch["prediction"], batch["reference"])
    return {"f1": f1.tolist()}

hashes = [Hasher.hash(add_scores), Hasher.hash(score_columns(scorer))]
add_scores({"prediction": ["a cat"], "reference": ["the cat"]})
hashes += [Hasher.hash(add_scores), Hasher.hash(score_columns(scorer))]
print(json.dumps(hashes))
"""


def test_fingerprint_is_the_same_in_every_process(minilm_scorer, tmp_path) -> None:
    """A user's script in its own interpreter: the closure's and the helper's fingerprints hold
    after scoring, and the helper's is the one this process gives a scorer built alike."""
    script = tmp_path / "user_script.py"
    script.write_text(PROCESS_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    closure_before, columns_before, closure_after, columns_after = json.loads(run.stdout.strip().splitlines()[-1])
    assert closure_before == closure_after and columns_before == columns_after
    assert columns_before == Hasher.hash(score_columns(minilm_scorer))


def test_mapping_twice_is_a_cache_hit(minilm_scorer, on_disk, monkeypatch) -> None:
    calls = []
    score = BERTScorer.score

    def counted(self, *args, **kwargs):
        calls.append(len(args[0]))
        return score(self, *args, **kwargs)

    monkeypatch.setattr(BERTScorer, "score", counted)
    for function in (plain_closure(minilm_scorer), score_columns(minilm_scorer)):
        calls.clear()
        first = on_disk.map(function, batched=True, batch_size=3)
        assert sum(calls) == len(PREDICTIONS)
        calls.clear()
        second = on_disk.map(function, batched=True, batch_size=3)
        assert calls == [] and second.cache_files == first.cache_files and second._fingerprint == first._fingerprint
        assert second.to_dict() == first.to_dict()
    monkeypatch.undo()
    assert_close(first.to_dict(), expected(minilm_scorer))


def test_streaming_equals_score(minilm_scorer) -> None:
    stream = datasets.Dataset.from_dict({"prediction": PREDICTIONS, "reference": MULTI}).to_iterable_dataset()
    assert isinstance(stream, datasets.IterableDataset)
    rows = list(stream.map(score_columns(minilm_scorer), batched=True, batch_size=3))
    got = {name: [row[name] for row in rows] for name in expected(minilm_scorer)}
    assert_close(got, expected(minilm_scorer, PREDICTIONS, MULTI))


def test_multi_reference_list_column_equals_score(minilm_scorer) -> None:
    dataset = datasets.Dataset.from_dict({"hyp": PREDICTIONS, "refs": MULTI})
    assert dataset.features["refs"].feature.dtype == "string"  # a list column
    mapped = dataset.map(score_columns(minilm_scorer, predictions="hyp", references="refs"), batched=True,
                         batch_size=2)
    assert_close(mapped.to_dict(), expected(minilm_scorer, PREDICTIONS, MULTI))


def test_idf_from_a_reference_column_equals_score_with_idf(minilm_scorer) -> None:
    dataset = datasets.Dataset.from_dict({"prediction": PREDICTIONS, "reference": MULTI})
    texts = column_texts(dataset, "reference")
    assert texts == [text for group in MULTI for text in group]
    assert column_texts(dataset.to_iterable_dataset(), "reference") == texts
    scorer = BERTScorer(loaded_model=minilm_scorer.model, device="cpu", idf=texts)
    mapped = dataset.map(score_columns(scorer), batched=True, batch_size=2)
    per_call = BERTScorer(loaded_model=minilm_scorer.model, device="cpu", idf=True)  # idf over all references
    assert_close(mapped.to_dict(), expected(per_call, PREDICTIONS, MULTI))
    with pytest.raises(InputError, match=r"idf=bertscore.dataset_map.column_texts\(dataset, 'reference'\)"):
        score_columns(per_call)


def test_num_proc_workers_rebuild_the_scorer(minilm_scorer, tmp_path) -> None:
    scorer = BERTScorer(loaded_model=minilm_scorer.model, device="cpu", idf=REFERENCES[::-1] + ["extra text"])
    dataset = datasets.Dataset.from_dict({"prediction": PREDICTIONS, "reference": MULTI})
    want = expected(scorer, PREDICTIONS, MULTI)  # the parent scores first: its OpenMP pool is running (fork_safety.py)
    threads = torch.get_num_threads()
    mapped = dataset.map(score_columns(scorer), batched=True, batch_size=2, num_proc=2,
                         cache_file_name=str(tmp_path / "scores.arrow"))
    assert_close(mapped.to_dict(), want)
    assert torch.get_num_threads() == threads


def test_all_layers_give_a_list_per_row(minilm_scorer) -> None:
    scorer = BERTScorer(model_type=minilm_scorer.model_type, all_layers=True, device="cpu")
    mapped = datasets.Dataset.from_dict({"prediction": PREDICTIONS[:3], "reference": REFERENCES[:3]}).map(
        score_columns(scorer), batched=True)
    f1 = scorer.score(PREDICTIONS[:3], REFERENCES[:3])[2]  # [K, N]
    assert torch.allclose(torch.tensor(mapped["bertscore_f1"]), f1.T, atol=1e-6)


def test_bad_columns_are_named(minilm_scorer) -> None:
    with pytest.raises(MissingColumnError, match="no column 'prediction'.*'hyp'"):  # an InputError and a KeyError
        score_columns(minilm_scorer)({"hyp": ["a"], "reference": ["b"]})
    with pytest.raises(InputError, match="predictions must be a column name"):
        ScoreColumns(minilm_scorer, predictions="")
    with pytest.raises(InputError, match=r"column 'reference'\[0\] is an int, not a string or a list of strings"):
        column_texts(datasets.Dataset.from_dict({"reference": [1, 2]}), "reference")
    with pytest.raises(InputError, match=r"column 'reference'\[2\] is an empty list: give each candidate"):
        column_texts(datasets.Dataset.from_dict({"reference": [["a"], ["b"], [], ["c"]]}), "reference", batch_size=2)


def test_a_pickled_scorer_is_its_settings(minilm_scorer) -> None:
    import pickle

    from collections import defaultdict

    from bertscore import TokenWeights

    shared = minilm_scorer.model
    texts = BERTScorer(loaded_model=shared, device="cpu", idf=REFERENCES)
    mapping = BERTScorer(loaded_model=shared, device="cpu", idf=defaultdict(lambda: 2.0, {2003: 0.5, 4937: 3.0}))
    table = BERTScorer(loaded_model=shared, device="cpu",
                       idf=TokenWeights(torch.linspace(0.5, 2.0, shared.vocab_size)))
    official = BERTScorer(loaded_model=shared, device="cpu")
    official.compute_idf(PREDICTIONS)  # the official API replaces the weights after construction
    for scorer in (minilm_scorer, texts, mapping, table, official):
        data = pickle.dumps(scorer)
        assert len(data) < 200_000  # the idf table (30,522 floats) at most
        _, (options, idf_mode, weights, expected_hash, kind) = scorer.__reduce__()
        assert kind is type(scorer)
        assert idf_mode == scorer.pipeline.settings.idf_mode and expected_hash == scorer.hash
        if weights is not None:
            assert weights.fingerprint() == scorer.pipeline.settings.idf_weights.fingerprint()
    for scorer in (minilm_scorer, mapping):  # two suffice (no idf; weights of their own)
        copy = pickle.loads(pickle.dumps(scorer))
        # Rebuilt from its settings (the pickle carries no tensor: its size above); in this process the
        # copy takes the encoder the original holds (bertscore/models/shared.py), as any new scorer would.
        assert copy is not scorer and copy.hash == scorer.hash and copy.model.encoder is scorer.model.encoder
        assert Hasher.hash(copy) == Hasher.hash(scorer)
        assert torch.allclose(torch.stack(copy.score(PREDICTIONS, REFERENCES)),
                              torch.stack(scorer.score(PREDICTIONS, REFERENCES)), atol=1e-6, rtol=0)
