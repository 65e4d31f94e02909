"""Sharded scoring under torchrun: 2 CPU ranks (gloo) give one process's numbers, API and CLI."""

from __future__ import annotations

import json
import os
import random
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bertscore.cli import main as cli_main
from bertscore.distributed import assemble_pair_scores, balanced_shards
from conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SENTENCES = [
    "The cat sat on the mat.", "A dog is running in the park.", "It is raining heavily today.",
    "She bought three apples at the market.", "The meeting was postponed until next week.",
    "He plays the guitar every evening.", "Stock prices fell sharply on Monday after the report.",
    "The children built a sandcastle on the beach.", "Our flight was delayed by two hours.",
    "The new bridge will open in spring.", "Scientists discovered a new species of frog in the rainforest.",
    "Please close the window.",
]


LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    for name in LAUNCHER_VARIABLES:
        env.pop(name, None)
    return env


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    rng = random.Random(0)
    cands, refs, refs2 = [], [], []
    for i in range(40):
        a, b = rng.choice(SENTENCES), rng.choice(SENTENCES)
        cands.append(a if i % 7 else a.lower() + " indeed")
        refs.append(b if i % 5 else a)
        refs2.append(rng.choice(SENTENCES))
    cands[3] = ""  # an empty candidate scores 0 on any rank
    folder = tmp_path_factory.mktemp("dist")
    paths = {}
    for name, lines in (("c", cands), ("r", refs), ("r2", refs2)):
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def _torchrun(args: list[str], nproc: int = 2) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}",
               "--master_port", str(free_port()), *args]
    return subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)


def test_balanced_shards_balance_and_cover() -> None:
    costs = [9, 1, 1, 7, 3, 3, 5, 2, 8, 4]
    shards = balanced_shards(costs, 3)
    assert sorted(i for shard in shards for i in shard) == list(range(len(costs)))
    loads = [sum(costs[i] for i in shard) for shard in shards]
    assert max(loads) - min(loads) <= max(costs)
    assert balanced_shards([], 2) == [[], []]


def _payload(indices: list[int], base: float = 0.5, shape: tuple[int, ...] = (3,)) -> tuple[list[int], torch.Tensor]:
    """What a rank sends: its pair indices and their raw scores (pair i's P, R, F = base + i/100)."""
    scores = torch.stack([torch.full(shape, base + i / 100) for i in indices]) if indices else torch.zeros((0,) + shape)
    return indices, scores


def test_assemble_pair_scores_puts_every_rank_s_pairs_in_place() -> None:
    gathered = [_payload([0, 2, 5]), _payload([]), _payload([1, 3, 4])]
    scores = assemble_pair_scores(gathered, 6, (3,))
    assert scores.dtype == torch.float32
    assert scores[:, 0].tolist() == pytest.approx([0.5 + i / 100 for i in range(6)])
    layered = assemble_pair_scores([_payload([1], shape=(4, 3)), _payload([0], shape=(4, 3))], 2, (4, 3))
    assert layered.shape == (2, 4, 3) and layered[1, 3, 2].item() == pytest.approx(0.51)


def test_coverage_error_names_unscored_pairs() -> None:
    with pytest.raises(RuntimeError) as caught:
        assemble_pair_scores([_payload([0, 2]), _payload([4])], 6, (3,))
    message = str(caught.value)
    assert "3 pair(s) unscored" in message and "[1, 3, 5]" in message and "disagree on the shards" in message
    assert "NaN" not in message


def test_coverage_error_names_nan_scores_and_their_rank() -> None:
    indices, scores = _payload([1, 3, 4])
    scores[1, 2] = float("nan")  # pair 3's F1 from rank 1
    with pytest.raises(RuntimeError) as caught:
        assemble_pair_scores([_payload([0, 2, 5]), (indices, scores)], 6, (3,))
    message = str(caught.value)
    assert "1 pair(s) scored NaN" in message and "rank 1: pair [3]" in message
    assert "unscored" not in message


def test_coverage_error_names_both_when_both_happen() -> None:
    indices, scores = _payload([0, 1], shape=(2, 3))
    scores[0, 1, 0] = float("inf")  # one layer of pair 0 (all_layers payloads are [n, K, 3])
    with pytest.raises(RuntimeError) as caught:
        assemble_pair_scores([(indices, scores), _payload([], shape=(2, 3))], 3, (2, 3))
    message = str(caught.value)
    assert "1 pair(s) unscored" in message and "[2]" in message
    assert "1 pair(s) scored NaN or inf (rank 0: pair [0])" in message


def test_pairs_with_corpus_weights_finish_as_score(corpus) -> None:
    """What a rank does (raw pair scores under the full corpus's idf, then finish) == score()."""
    import warnings

    from bertscore import BERTScorer

    scorer = BERTScorer(model_type=MODEL, idf=True)
    assert scorer.idf_is_per_call
    cands = corpus["c"].read_text().split("\n")[:8]
    refs = [[a, b] for a, b in zip(corpus["r"].read_text().split("\n")[:8], corpus["r2"].read_text().split("\n")[:8])]
    expected = scorer.score(cands, refs)
    flat = [r for group in refs for r in group]
    owners = torch.tensor([i for i, g in enumerate(refs) for _ in g])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = scorer.score_pairs([cands[i] for i in owners.tolist()], flat, weights=scorer.idf_weights_for(flat))
    for got, want in zip(scorer.pipeline.finish(raw, owners, len(cands)), expected):
        assert torch.allclose(got, want, atol=1e-6)


EXAMPLE = str(ROOT / "examples" / "score_distributed.py")
EXAMPLE_ARGS = ["--idf"]  # per-call idf must come from all references, not a shard's


@pytest.fixture(scope="module")
def example_inputs(corpus) -> list[str]:
    return [str(corpus["c"]), str(corpus["r"]), str(corpus["r2"])]


@pytest.fixture(scope="module")
def example_in_one_process(example_inputs, tmp_path_factory) -> dict:
    """The example run as one process (this one, as `python EXAMPLE ...` runs it, with no launcher's
    variables): what torchrun's and accelerate's two ranks must give."""
    out = tmp_path_factory.mktemp("one") / "one.json"
    with pytest.MonkeyPatch.context() as patch:
        for name in LAUNCHER_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setattr(sys, "argv", [EXAMPLE, *example_inputs, "--out", str(out), *EXAMPLE_ARGS])
        runpy.run_path(EXAMPLE, run_name="__main__")
    return json.loads(out.read_text())


def test_python_api_two_ranks_equal_one_process(example_inputs, example_in_one_process, tmp_path) -> None:
    two = _torchrun([EXAMPLE, *example_inputs, "--out", str(tmp_path / "two.json"), *EXAMPLE_ARGS])
    assert two.returncode == 0, two.stderr[-3000:]
    a = example_in_one_process
    b = json.loads((tmp_path / "two.json").read_text())
    assert b["world_size"] == 2 and a["world_size"] == 1
    assert a["hashcode"] == b["hashcode"]
    assert len(b["f1"]) == 40 and b["f1"][3] == 0.0
    delta = max(abs(x - y) for key in ("precision", "recall", "f1") for x, y in zip(a[key], b[key]))
    assert delta <= 1e-6


def test_cli_two_ranks_equal_one_process(corpus, tmp_path) -> None:
    common = ["-c", str(corpus["c"]), "-r", str(corpus["r"]), str(corpus["r2"]), "-m", MODEL,
              "--idf", "-f", "jsonl", "--chunk-size", "7"]
    with pytest.MonkeyPatch.context() as patch:  # one process: this one, with no launcher's variables
        for name in LAUNCHER_VARIABLES:
            patch.delenv(name, raising=False)
        assert cli_main([*common, "-o", str(tmp_path / "one.jsonl")]) == 0
    two = _torchrun(["-m", "bertscore", *common, "-o", str(tmp_path / "two.jsonl")])
    assert two.returncode == 0, two.stderr[-3000:]
    a = [json.loads(line) for line in (tmp_path / "one.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "two.jsonl").read_text().splitlines()]
    assert [row["line"] for row in b] == list(range(1, 41))
    delta = max(abs(x[k] - y[k]) for x, y in zip(a, b) for k in ("precision", "recall", "f1"))
    assert delta <= 1e-6
    assert two.stderr.count("mean over 40 pairs") == 1  # rank 0 alone reports


def test_accelerate_launch_two_processes(example_inputs, example_in_one_process, tmp_path) -> None:
    """`accelerate launch --multi_gpu --num_processes 2` sets the same env vars (CPU works too)."""
    pytest.importorskip("accelerate")
    launched = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
         "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
         "--main_process_port", str(free_port()), EXAMPLE, *example_inputs,
         "--out", str(tmp_path / "acc.json"), *EXAMPLE_ARGS],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert launched.returncode == 0, launched.stderr[-3000:]
    a = example_in_one_process
    b = json.loads((tmp_path / "acc.json").read_text())
    assert b["world_size"] == 2
    assert max(abs(x - y) for key in ("precision", "recall", "f1") for x, y in zip(a[key], b[key])) <= 1e-6


def test_cli_under_torchrun_refuses_stdin(corpus, monkeypatch, capsys) -> None:
    """Refused before anything is read or loaded (the command's `main`, in this process, with a rank's variables)."""
    for name, value in (("WORLD_SIZE", "2"), ("RANK", "0"), ("LOCAL_RANK", "0")):
        monkeypatch.setenv(name, value)
    assert cli_main(["-c", "-", "-r", str(corpus["r"]), "-m", MODEL]) == 2
    assert "not stdin" in capsys.readouterr().err


RANK_SCRIPT = """
import json, sys
import torch.distributed as dist
from bertscore import BERTScorer
from bertscore.distributed import init_from_env, score_distributed

init_from_env()
cands = open(sys.argv[1], encoding="utf-8").read().split("\\n")[:-1]
refs = open(sys.argv[2], encoding="utf-8").read().split("\\n")[:-1]
scorer = BERTScorer(model_type=%r, idf=True)
for mode in ("same", "skew"):  # one launch, both checks: the same inputs, then rank 1 reading another file
    mine = cands[:-1] + ["a different last candidate"] if mode == "skew" and dist.get_rank() == 1 else cands
    try:
        p, r, f = score_distributed(scorer, mine, refs)  # dst=None: every rank gets the results
        out = {"f1": f.tolist(), "precision": p.tolist(), "recall": r.tolist()}
    except ValueError as error:
        out = {"error": str(error)}
    with open(f"{sys.argv[3]}/{mode}.{dist.get_rank()}.json", "w") as handle:
        json.dump(out, handle)
dist.destroy_process_group()
""" % MODEL


def test_every_rank_gets_the_results_with_dst_none_and_mismatched_inputs_fail_everywhere(corpus, tmp_path) -> None:
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    from bertscore import BERTScorer

    cands = corpus["c"].read_text().split("\n")[:-1]
    refs = corpus["r"].read_text().split("\n")[:-1]
    expected = BERTScorer(model_type=MODEL, idf=True).score(cands, refs)
    run = _torchrun([str(script), str(corpus["c"]), str(corpus["r"]), str(tmp_path)])
    assert run.returncode == 0, run.stderr[-3000:]
    for mode in ("same", "skew"):
        outputs = [json.loads((tmp_path / f"{mode}.{rank}.json").read_text()) for rank in (0, 1)]
        if mode == "same":
            for out in outputs:
                for got, want in zip((out["precision"], out["recall"], out["f1"]), expected):
                    assert torch.allclose(torch.tensor(got), want, atol=1e-6)
        else:
            for out in outputs:
                assert "the ranks differ" in out["error"] and "rank 1: 40 candidates" in out["error"]


def _rank_one_of_two(monkeypatch, gpus: int) -> list[str]:
    """Rank 1 of 2 on a machine showing `gpus` GPUs: a stubbed process group and a patched
    torch.cuda whose set_device fails as CUDA does on an absent ordinal; returns what was chosen."""
    import torch.distributed as dist

    chosen: list[str] = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "init_process_group", lambda backend: chosen.append(backend))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)

    def set_device(index: int) -> None:
        if index >= torch.cuda.device_count():
            raise RuntimeError("CUDA error: invalid device ordinal")
        chosen.append(f"cuda:{index}")

    monkeypatch.setattr(torch.cuda, "set_device", set_device)
    return chosen


def test_backend_follows_the_device_and_ranks_get_their_own_gpu(monkeypatch) -> None:
    from bertscore import distributed

    chosen = _rank_one_of_two(monkeypatch, gpus=2)
    assert distributed.init_from_env(device="cpu") and chosen == ["gloo"]
    chosen.clear()
    assert distributed.init_from_env(device="cuda") and chosen == ["cuda:1", "nccl"]
    assert distributed.local_device("cuda") == "cuda:1" and distributed.local_device(None) == "cuda:1"
    assert distributed.local_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="every rank on the same GPU"):
        distributed.local_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # CUDA_VISIBLE_DEVICES per rank
    assert distributed.local_device("cuda:0") == "cuda:0"


def test_a_rank_that_sees_one_gpu_takes_cuda_0(monkeypatch) -> None:
    """Schedulers give each rank its own GPU through CUDA_VISIBLE_DEVICES: rank 1 then sees one
    device, cuda:0. init_from_env selected cuda:LOCAL_RANK ("invalid device ordinal" on rank 1)."""
    from bertscore import distributed

    chosen = _rank_one_of_two(monkeypatch, gpus=1)
    assert distributed.init_from_env(device="cuda") and chosen == ["cuda:0", "nccl"]
    assert distributed.local_device("cuda") == "cuda:0" and distributed.local_device(None) == "cuda:0"
    # more ranks on a node than the GPUs it shows: a message that says so, before torch's
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("LOCAL_RANK", "2")
    with pytest.raises(ValueError, match="LOCAL_RANK=2 but this process sees 2 GPU"):
        distributed.init_from_env(device="cuda")
    with pytest.raises(ValueError, match="LOCAL_RANK=2 but this process sees 2 GPU"):
        distributed.local_device("cuda")


def test_example_reads_the_last_line_without_a_trailing_newline(tmp_path) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from score_distributed import read_lines
    finally:
        sys.path.pop(0)
    path = tmp_path / "x.txt"
    path.write_text("one\ntwo\r\nthree", encoding="utf-8")
    assert read_lines(str(path)) == ["one", "two", "three"]
    path.write_text("one\n\n", encoding="utf-8")
    assert read_lines(str(path)) == ["one", ""]
