"""The Ray Data door (`bertscore.ray_data`) on a local 2-CPU Ray cluster, offline, the embedded MiniLM:
Parquet to Parquet gives the official bert-score 0.3.13's numbers at batch_size=1 row by row (multi-reference
rows, idf counted by a Ray group-by equal to the official idf, 2 actors, the hash), an actor killed mid-run is restarted and every row comes back
exactly once, bad cells are errors naming the row's id, an empty text scores 0, `group_references`
scores each reference's rows in one batch (through the API and `python -m bertscore.ray_data`), and with no
Ray running the docs' example and the command start a local one that prints their results, not Ray's notes.

Runs in `make test-ray` (which installs the `[ray]` extra and sets BERTSCORE_RAY_TESTS=1: a few minutes on
2 cores, Ray's own processes included); a plain pytest run (`make test`) skips it, saying so."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch

if os.environ.get("BERTSCORE_RAY_TESTS") != "1":
    pytest.skip("the Ray Data door's tests run in make test-ray (BERTSCORE_RAY_TESTS=1)", allow_module_level=True)
ray = pytest.importorskip("ray", reason="the Ray Data door needs the [ray] extra (make test-ray installs it)")
bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")
pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

import oracle  # noqa: E402
from bertscore import BERTScorer  # noqa: E402
from bertscore import ray_data  # noqa: E402
from bertscore.inputs import InputError  # noqa: E402
from bertscore.sources import EMBEDDED_MODEL_NAME  # noqa: E402
from bertscore.tables import TableError  # noqa: E402
from test_docs import SHOWN_OUTPUT, blocks_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

OPTIONS = dict(model_type=EMBEDDED_MODEL_NAME, num_layers=4, device="cpu")
KILL_MARKER = "BERTSCORE_TEST_KILL_MARKER"
ROWS = 120
TOLERANCE = 1e-5  # against the official package at batch_size=1 (DEVELOPERS.md)


def official_rows(minilm_dir, candidates: list[str], groups: list[list[str]], idf: bool) -> torch.Tensor:
    """The official bert-score 0.3.13 at batch_size=1 (idf over every reference), [rows, (P, R, F1)]."""
    flat = [r for group in groups for r in group]
    columns = oracle.call(oracle.scorer_score, candidates, groups, model_type=str(minilm_dir),
                          num_layers=OPTIONS["num_layers"], batch_size=1, device="cpu", idf=idf,
                          idf_sents=flat if idf else None)
    return torch.stack(columns, 1)


def official_idf(references: list[str], model_type: str) -> tuple[torch.Tensor, float]:
    """The official get_idf_dict over `references`, as one weight per token id, and its default."""
    from bert_score.utils import get_idf_dict, get_tokenizer

    tokenizer = get_tokenizer(model_type, use_fast=False)
    weights = get_idf_dict(references, tokenizer, nthreads=0)
    return torch.tensor([weights[i] for i in range(len(tokenizer))], dtype=torch.float64), weights.default_factory()


class DiesOnce(ray_data.ScoreBatches):
    """Exits its process (as a lost node would) on its second batch, once in the whole run (a marker file)."""

    def __call__(self, batch):
        self.calls = getattr(self, "calls", 0) + 1
        marker = os.environ[KILL_MARKER]
        if self.calls == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return super().__call__(batch)


class WithPid(ray_data.ScoreBatches):
    """The door's stage, plus the scoring actor's pid on every row."""

    def __call__(self, batch):
        out = super().__call__(batch)
        return out.append_column("actor_pid", pa.array([os.getpid()] * out.num_rows, pa.int64()))


class WithCall(ray_data.ScoreBatches):
    """The door's stage, plus on every row a name of the call that scored it."""

    def __call__(self, batch):
        out = super().__call__(batch)
        return out.append_column("call", pa.array([uuid.uuid4().hex] * out.num_rows, pa.string()))


# Ray's caution, printed once by the driver when its first actor pool starts: Ray Data creates every pool
# actor with its settings and function as object-store arguments, and its actors restart (max_restarts=-1)
RESTART_CAUTION = re.compile(r"core_worker\.cc:\d+: Actor with class name: 'MapWorker\(MapBatches\((CountDocuments|"
                             r"ScoreBatches)\)\)' and ID: '\w+' has constructor arguments in the object store and "
                             r"max_restarts > 0\.")
# a line logged at WARNING or above: Python's logging as Ray formats it, or Ray's C++ log ("[date time E pid tid]")
LEVELLED = re.compile(r"\b(WARNING|ERROR|CRITICAL)\b|\[[\d-]+ [\d:,.]+ [WEF] \d+ \d+\]")
# a line a Ray worker printed, forwarded to the driver: "(MapWorker(MapBatches(ScoreBatches)) pid=123) ..."
FORWARDED = re.compile(r"^(?:\x1b\[\d+m)?\((?P<worker>.*?) pid=\d+(?:, ip=[\d.]+)?\)")
DOORS_ACTORS = ("MapWorker(MapBatches(ScoreBatches))", "MapWorker(MapBatches(CountDocuments))")


def ray_example():
    """The Ray Data block of docs/scaling-out.md and the output the page shows for it."""
    (block,) = [b for b in blocks_of(ROOT / "docs" / "scaling-out.md")
                if b.text.startswith("# needs the ray extra") and "score_table" in b.text]
    return block.text, SHOWN_OUTPUT[block.id]


def chatter(stderr: str) -> tuple[list[str], list[str], list[str]]:
    """The driver's stderr lines but Ray's restart caution, those of them at WARNING or above, and the lines
    the door's actors printed. (Lines of Ray's own task workers, forwarded too, are Ray's: its hash
    aggregation's workers have been seen to abort on exit, after their work, with a C++ stack.)"""
    lines = [line for line in stderr.splitlines() if line.strip() and not RESTART_CAUTION.search(line)]
    forwarded = [(match.group("worker"), line) for line in lines if (match := FORWARDED.match(line))]
    own = [line for line in lines if not FORWARDED.match(line)]
    return own, [line for line in own if LEVELLED.search(line)], [line for worker, line in forwarded
                                                                   if worker in DOORS_ACTORS]


def test_the_docs_example_prints_its_results_and_not_rays_start_up_chatter(tmp_path) -> None:
    """With no Ray running, the door starts a local one quietly: the page's example prints its two rows (its
    shown output) and, on stderr, nothing at WARNING or ERROR level but Ray's restart caution, which the page
    explains. Fails when the door leaves Ray's start-up notes on (a token-authentication WARNING, "Started a
    local Ray instance", Ray Data's plan and progress logged line by line: 82 lines for 2 rows)."""
    text, shown = ray_example()
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", text], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip() == shown.rstrip()
    lines, levelled, actors = chatter(done.stderr)
    assert levelled == [] and len(lines) <= 2 and actors == [], done.stderr


def test_the_command_prints_where_it_wrote_and_not_rays_start_up_chatter(tmp_path) -> None:
    """`python -m bertscore.ray_data` with no Ray running: its one line, the rows written, and on stderr no
    line at WARNING or ERROR level but Ray's restart caution, while the note an actor gives (an empty text
    scores 0) still reaches the user: the door quiets Ray, not the scorers."""
    pq.write_table(pa.table({"candidate": ["the cat sat", ""], "reference": ["a cat sat", "hello world"]}),
                   tmp_path / "pairs.parquet")
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    done = subprocess.run([sys.executable, "-m", "bertscore.ray_data", str(tmp_path / "pairs.parquet"),
                           str(tmp_path / "out"), "-m", EMBEDDED_MODEL_NAME, "--num-cpus", "0.5"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert pq.read_table(tmp_path / "out").num_rows == 2
    lines, levelled, actors = chatter(done.stderr)
    assert levelled == [] and lines == [f"bertscore: scores written to {tmp_path / 'out'}"], done.stderr
    assert any("empty" in line for line in actors), done.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    marker = tmp_path_factory.mktemp("kill") / "killed"
    ray.cloudpickle.register_pickle_by_value(__import__(__name__))  # DiesOnce, WithPid travel to the actors by value
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {KILL_MARKER: str(marker), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}})
    yield marker
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(wmt17_de_en, tmp_path_factory):
    """120 real pairs, every third row with two references, written as 6 Parquet files of 20 rows (Ray reads
    them as one block)."""
    candidates, references = wmt17_de_en
    candidates, references = candidates[:ROWS], references[:ROWS]
    groups = [[r, references[(i + 7) % ROWS]] if i % 3 == 0 else [r] for i, r in enumerate(references)]
    path = tmp_path_factory.mktemp("corpus")
    table = pa.table({"id": list(range(ROWS)), "candidate": candidates, "references": groups})
    for start in range(0, ROWS, 20):
        pq.write_table(table.slice(start, 20), path / f"part-{start:03d}.parquet")
    return path, candidates, groups


@pytest.fixture(scope="module")
def one_process(corpus, minilm_dir):
    """The oracle: the official package's rows at batch_size=1 and its idf over every reference; the
    hash (a name, not a number) is what one BERTScorer of these options reports."""
    _, candidates, groups = corpus
    flat = [r for group in groups for r in group]
    idf = oracle.call(official_idf, flat, str(minilm_dir))
    return official_rows(minilm_dir, candidates, groups, True), BERTScorer(**OPTIONS, idf=True).hash, idf


def scored(folder) -> tuple[list[int], torch.Tensor, list[str]]:
    table = pq.read_table(folder).to_pydict()
    values = torch.tensor([table[f"bertscore_{n}"] for n in ("precision", "recall", "f1")]).T
    return table["id"], values, table["bertscore_hash"]


def test_idf_from_a_ray_group_by_equals_one_process(cluster, corpus, one_process) -> None:
    weights = ray_data.document_frequencies(ray_data.read_table(corpus[0]), OPTIONS, id_column="id", actors=2,
                                            num_cpus=0.5, batch_size=20)
    _, _, (table, default) = one_process
    assert weights.label == "idf" and weights.default == pytest.approx(default, abs=1e-12)
    assert weights.table.shape == table.shape and (weights.table.double() - table).abs().max() <= 1e-6


def test_parquet_to_parquet_equals_one_score_call_with_idf_on_two_actors(cluster, corpus, one_process,
                                                                         tmp_path) -> None:
    ray_data.score_table(corpus[0], tmp_path / "out", OPTIONS, idf=True, id_column="id", actors=2,
                         num_cpus=0.5, batch_size=20, scorer_class=WithPid)
    ids, values, hashes = scored(tmp_path / "out")
    expected, expected_hash, _ = one_process
    assert sorted(ids) == list(range(ROWS))
    assert len(set(pq.read_table(tmp_path / "out", columns=["actor_pid"])["actor_pid"].to_pylist())) == 2, \
        "one actor scored every row: the pool's second actor got no batch"
    assert (values - expected[ids]).abs().max() <= TOLERANCE
    assert set(hashes) == {expected_hash} and "_idf_" in expected_hash


def test_a_killed_actor_is_restarted_and_every_row_comes_back_once(cluster, corpus, tmp_path, minilm_dir) -> None:
    _, candidates, groups = corpus
    expected = official_rows(minilm_dir, candidates, groups, False)
    ray_data.score_table(corpus[0], tmp_path / "out", OPTIONS, id_column="id", actors=2, num_cpus=0.5,
                         batch_size=20, scorer_class=DiesOnce)
    assert cluster.exists(), "no actor was killed: the test did not test a restart"
    ids, values, _ = scored(tmp_path / "out")
    assert sorted(ids) == list(range(ROWS))
    assert (values - expected[ids]).abs().max() <= TOLERANCE


def test_a_ray_the_process_started_keeps_its_logging_settings(cluster, corpus) -> None:
    """The door quiets only a Ray it starts: on the one this module started (ray.init), the driver's "ray"
    logger and Ray Data's console keep Ray's levels (INFO) when the door reads a table."""
    console = [handler for handler in logging.getLogger("ray.data").handlers if handler.name == "console"]

    def levels():
        return logging.getLogger("ray").level, [handler.level for handler in console]

    before = levels()
    ray_data.read_table(corpus[0])
    assert levels() == before == (logging.INFO, [logging.INFO])


@pytest.fixture(scope="module")
def score_batches(cluster) -> ray_data.ScoreBatches:
    return ray_data.ScoreBatches(OPTIONS, id_column="id")


def test_a_null_or_non_text_cell_is_an_error_naming_the_row_id_and_column(score_batches) -> None:
    batch = pa.table({"id": ["a", "b"], "prediction": ["fine", None], "reference": ["fine", "x"]})
    with pytest.raises(TableError, match=r"id='b'.*column 'prediction': is null"):
        score_batches(batch)
    batch = pa.table({"id": ["a"], "prediction": ["fine"], "reference": [[]]},
                     schema=pa.schema([("id", pa.string()), ("prediction", pa.string()),
                                       ("reference", pa.list_(pa.string()))]))
    with pytest.raises(TableError, match=r"id='a'.*column 'reference': is an empty list"):
        score_batches(batch)
    with pytest.raises(InputError, match="no id column 'id'"):
        score_batches(pa.table({"prediction": ["a"], "reference": ["b"]}))


def test_an_empty_text_scores_zero_with_the_note_and_columns_keep_their_row(score_batches) -> None:
    batch = pa.table({"id": [7, 3], "prediction": ["", "the same words"], "reference": ["anything", "the same words"]})
    with pytest.warns(Warning, match="empty"):
        out = score_batches(batch).to_pydict()
    assert out["id"] == [7, 3] and out["bertscore_f1"][0] == 0.0 and abs(out["bertscore_f1"][1] - 1) < 1e-6
    assert out["bertscore_hash"] == [score_batches.hash] * 2


def test_per_batch_idf_is_refused() -> None:
    with pytest.raises(InputError, match="document_frequencies"):
        ray_data.ScoreBatches(dict(OPTIONS, idf=True))


@pytest.mark.parametrize("resources, queued", [(dict(num_cpus=0.5), 1), (dict(num_gpus=1), 2)])
def test_a_cpu_actor_holds_only_the_batch_it_scores_and_a_gpu_actor_one_more(cluster, resources, queued,
                                                                             monkeypatch) -> None:
    """On CPUs a batch is seconds of work: one queued behind it could leave the other actor idle at the end
    of a run. On a GPU it is a fraction of a second: one waits queued, so the device does not idle."""
    pools, strategy = [], ray.data.ActorPoolStrategy

    def recorded(**keywords):
        pools.append(keywords)
        return strategy(**keywords)

    monkeypatch.setattr(ray.data, "ActorPoolStrategy", recorded)
    ray_data.score_dataset(ray.data.range(4), OPTIONS, actors=2, **resources)  # lazy: planned, not run
    assert pools == [dict(size=2, max_tasks_in_flight_per_actor=queued)]


GROUPS, GROUP_ROWS = 6, 10


@pytest.fixture(scope="module")
def repeated_references(wmt17_de_en, tmp_path_factory, minilm_dir):
    """60 real candidates against 6 reference groups of 10 rows each (every other group two references), in
    system-major order: row i has group i % 6, so any 10 consecutive rows hold all 6 groups. With its
    oracle: the official package's rows at batch_size=1 (and the hash one BERTScorer reports)."""
    candidates, references = wmt17_de_en
    rows = GROUPS * GROUP_ROWS
    groups = [references[i % GROUPS:i % GROUPS + 1 + (i % GROUPS) % 2] for i in range(rows)]
    path = tmp_path_factory.mktemp("repeated") / "pairs.parquet"
    pq.write_table(pa.table({"id": list(range(rows)), "candidate": candidates[:rows], "references": groups}), path)
    return path, groups, official_rows(minilm_dir, candidates[:rows], groups, False), BERTScorer(**OPTIONS).hash


def test_grouped_references_score_each_groups_rows_in_one_call_with_one_process_numbers(
        cluster, repeated_references, tmp_path) -> None:
    path, groups, expected, expected_hash = repeated_references
    ray_data.score_table(path, tmp_path / "out", OPTIONS, id_column="id", actors=2, num_cpus=0.5,
                         batch_size=GROUP_ROWS, group_references=True, scorer_class=WithCall)
    ids, values, hashes = scored(tmp_path / "out")
    assert sorted(ids) == list(range(GROUPS * GROUP_ROWS))
    assert (values - expected[ids]).abs().max() <= TOLERANCE and set(hashes) == {expected_hash}
    table = pq.read_table(tmp_path / "out")
    assert ray_data.GROUP_KEY not in table.column_names
    by_call: dict[str, set[tuple[str, ...]]] = {}
    for row_id, call in zip(ids, table.column("call").to_pylist()):
        by_call.setdefault(call, set()).add(tuple(groups[row_id]))
    # without grouping each call of 10 consecutive rows holds all 6 groups
    assert sorted(len(held) for held in by_call.values()) == [1] * GROUPS, by_call.values()


def test_the_command_groups_references_on_a_running_cluster(cluster, repeated_references, tmp_path) -> None:
    """`python -m bertscore.ray_data --group-references` as `ray job submit` runs it (RAY_ADDRESS: the cluster
    this module started): one process's numbers, and each output file (one per block) holds one group."""
    path, groups, expected, _ = repeated_references
    env = dict(os.environ, RAY_ADDRESS=ray.get_runtime_context().gcs_address)
    done = subprocess.run([sys.executable, "-m", "bertscore.ray_data", str(path), str(tmp_path / "out"),
                           "-m", EMBEDDED_MODEL_NAME, "-l", str(OPTIONS["num_layers"]), "--id-column", "id",
                           "--actors", "2", "--num-cpus", "0.5", "--batch-size", str(GROUP_ROWS),
                           "--group-references"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ids, values, _ = scored(tmp_path / "out")
    assert sorted(ids) == list(range(GROUPS * GROUP_ROWS))
    assert (values - expected[ids]).abs().max() <= TOLERANCE
    files = sorted((tmp_path / "out").glob("*.parquet"))
    held = [{tuple(groups[i]) for i in pq.read_table(file, columns=["id"]).column("id").to_pylist()} for file in files]
    assert [len(groups_in_file) for groups_in_file in held] == [1] * len(files) and len(files) == GROUPS


def test_grouped_blocks_are_equal_at_most_a_batch_and_a_multiple_of_the_pool(cluster) -> None:
    rows = [{"candidate": f"c{i}", "reference": f"r{i % 7}"} for i in range(70)]
    blocks = ray_data.grouped_by_references(ray.data.from_items(rows), 10, actors=4, io_cpus=0.25).materialize()
    sizes = sorted(len(block) for block in blocks.iter_batches(batch_size=None, batch_format="pyarrow"))
    assert sizes == [8, 8, 9, 9, 9, 9, 9, 9], sizes  # 70 rows of batches of 10 for 4 actors: 8 blocks, not 7


def test_a_column_named_as_the_grouping_key_is_refused(cluster, tmp_path) -> None:
    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.table({"candidate": ["a"], "reference": ["b"], ray_data.GROUP_KEY: [1]}), path)
    with pytest.raises(InputError, match="rename it"):
        ray_data.score_table(path, tmp_path / "out", OPTIONS, group_references=True, num_cpus=0.5)
