"""tokenize_ahead.py: blocks tokenized one ahead on one background thread; TOKENIZERS_PARALLELISM read, never written.

The pipeline's numbers and notes with and without the thread are in tests/test_pipeline.py.
"""

from __future__ import annotations

import ast
import contextlib
import os
import threading
from pathlib import Path

import pytest
import torch

from bertscore.scoring import tokenize_ahead

CANDS = [f"candidate {i}" for i in range(10)]
REFS = [f"reference {i}" for i in range(10)]
BLOCKS = [range(0, 3), range(3, 7), range(7, 10)]
HANG_GUARD_S = 120  # a wait that only ends a hung test, saying what it waited for (never a timing bet)


class Recorder:
    """A tokenize stand-in: records the texts, the thread and TOKENIZERS_PARALLELISM of each call."""

    def __init__(self):
        self.calls: list[tuple[list[str], str, str | None]] = []
        self.release = threading.Event()
        self.release.set()

    def __call__(self, texts: list[str]) -> list[str]:
        if threading.current_thread() is not threading.main_thread():
            if not self.release.wait(HANG_GUARD_S):  # the background thread's blocks wait for the test's word
                raise RuntimeError(f"block {texts[0]!r}... waited {HANG_GUARD_S} s for the test to release it")
        self.calls.append((texts, threading.current_thread().name, os.environ.get("TOKENIZERS_PARALLELISM")))
        return [text.upper() for text in texts]


@pytest.fixture
def parallelism(monkeypatch, request):
    """TOKENIZERS_PARALLELISM set to request.param (None: unset) for the test, as a user would have it."""
    if request.param is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", request.param)
    return request.param


def expected_texts(block: range) -> list[str]:
    return [CANDS[i] for i in block] + [REFS[i] for i in block]


@pytest.mark.parametrize("parallelism", [None, "true", "false"], indirect=True)
def test_ahead_tokenizes_the_next_block_on_one_thread_as_the_user_set_it(parallelism):
    """Block k + 1 on one background thread while block k is worked on; the tokenizers library's
    parallelism is the user's in both threads, and the variable is never written."""
    tokenize = Recorder()
    seen = []
    for block, store in tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True):
        seen.append(block)
        assert store == [text.upper() for text in expected_texts(block)]
        # while block k is worked on, block k + 1 has been handed to the thread (at most one ahead)
        assert len(tokenize.calls) <= BLOCKS.index(block) + 2
    assert seen == BLOCKS
    assert [texts for texts, _, _ in tokenize.calls] == [expected_texts(block) for block in BLOCKS]
    first, *rest = tokenize.calls
    assert first[1] == threading.current_thread().name
    assert {name for _, name, _ in rest} == {rest[0][1]} and rest[0][1].startswith("bertscore-tokenize")
    assert {value for _, _, value in tokenize.calls} == {parallelism}
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism
    assert not [t for t in threading.enumerate() if t.name.startswith("bertscore-tokenize")]


@pytest.mark.parametrize(("value", "parallel"), [
    (None, True), ("true", True), ("1", True), ("TRUE", True), ("false", False), ("FALSE", False), ("0", False),
    ("off", False), ("no", False), ("", False),
])
def test_the_variable_reads_as_the_tokenizers_library_reads_it(monkeypatch, value, parallel):
    if value is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", value)
    assert tokenize_ahead.tokenizers_parallel() is parallel


@pytest.mark.parametrize("parallelism", [None, "true"], indirect=True)
def test_without_ahead_every_block_is_tokenized_by_the_caller_as_the_user_set_it(parallelism):
    tokenize = Recorder()
    assert [block for block, _ in tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=False)] == BLOCKS
    assert {(name, value) for _, name, value in tokenize.calls} == {(threading.current_thread().name, parallelism)}


@pytest.mark.parametrize("parallelism", [None, "true"], indirect=True)
def test_leaving_early_waits_for_the_block_in_flight_then_restores_the_variable(parallelism, monkeypatch):
    tokenize = Recorder()
    tokenize.release.clear()  # block 1 stays in flight until the caller, leaving early, shuts the pool down

    class ReleasedOnShutdown(tokenize_ahead.ThreadPoolExecutor):
        def shutdown(self, *args, **kwargs):
            tokenize.release.set()  # from here on, only a shutdown that waits sees block 1 done
            return super().shutdown(*args, **kwargs)

    monkeypatch.setattr(tokenize_ahead, "ThreadPoolExecutor", ReleasedOnShutdown)
    blocks = tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True)
    with pytest.raises(KeyError), contextlib.closing(blocks):
        for _block, _store in blocks:
            assert len(tokenize.calls) == 1  # block 0 only: block 1 is held
            raise KeyError("the caller's scoring failed")
    assert len(tokenize.calls) == 2  # closing waited for block 1
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism
    assert not [t for t in threading.enumerate() if t.name.startswith("bertscore-tokenize")]


def test_an_error_in_the_thread_reaches_the_caller_and_nothing_is_left_behind(monkeypatch):
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)

    def tokenize(texts: list[str]) -> list[str]:
        if texts == expected_texts(BLOCKS[1]):
            raise ValueError("bad text in block 1")
        return texts

    with pytest.raises(ValueError, match="bad text in block 1"):
        list(tokenize_ahead.tokenized_blocks(tokenize, CANDS, REFS, BLOCKS, ahead=True))
    assert "TOKENIZERS_PARALLELISM" not in os.environ


@pytest.mark.parametrize(("device", "threads", "cpus", "parallelism", "free"), [
    ("cpu", 2, 2, "false", False), ("cpu", 1, 2, "false", True), ("cpu", 4, 2, "false", False),
    ("cpu", 1, 2, None, False), ("cpu", 1, 2, "true", False),  # the library's pool would take torch's cores
    ("cuda", 2, 2, None, True), ("cuda:1", 16, 16, "false", True),
])
def test_a_core_is_free_on_an_accelerator_or_where_torch_and_the_tokenizer_leave_one(
        monkeypatch, device, threads, cpus, parallelism, free):
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    if parallelism is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", parallelism)
    assert tokenize_ahead.core_is_free(torch.device(device)) is free


@pytest.mark.parametrize(("device", "parallelism", "ahead"), [
    ("cpu", "false", True), ("cpu", None, False), ("cuda", None, True),
])
def test_the_pipeline_tokenizes_ahead_where_a_core_is_free(monkeypatch, device, parallelism, ahead):
    """score_in_blocks asks for the thread where the encoder runs on an accelerator, or on the CPU with
    a core to spare and a serial tokenizer (a stand-in pipeline: no device is touched)."""
    from types import SimpleNamespace

    from bertscore.scoring import pipeline as pipeline_module

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    if parallelism is None:
        monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    else:
        monkeypatch.setenv("TOKENIZERS_PARALLELISM", parallelism)
    asked: list[bool] = []
    real = tokenize_ahead.tokenized_blocks

    def spy(*args, **kwargs):
        asked.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(tokenize_ahead, "tokenized_blocks", spy)
    stand_in = SimpleNamespace(
        settings=SimpleNamespace(all_layers=False, score_layers=1, chunk_size=4),
        model=SimpleNamespace(device=torch.device(device), tokenizes_without_gil=True),
        tokenize=lambda texts: set(texts),
        score_pairs=lambda cands, refs, store, weights, **options: torch.ones(len(cands), 3),
    )
    scores = pipeline_module.score_in_blocks(stand_in, CANDS, REFS, None, None, False, None, lambda *_: None)
    assert asked == [ahead] and scores.shape == (len(CANDS), 3) and bool((scores == 1).all())


# ----- no process-wide writes: the source, and two threads scoring at once ----------------------
PACKAGE = Path(__file__).resolve().parent.parent / "bertscore"
_ENVIRON_WRITES = {"pop", "popitem", "setdefault", "update", "clear", "__setitem__", "__delitem__"}


def environment_writes(source: str) -> list[int]:
    """Lines of `source` that write the process environment: `os.environ[k] = v`, `del os.environ[k]`,
    `os.environ.pop/setdefault/update/clear(...)`, `os.putenv`, `os.unsetenv`."""
    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" and getattr(node.value, "id", None) == "os"

    lines = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else (
            [node.target] if isinstance(node, ast.AugAssign) else [])
        if any(isinstance(t, ast.Subscript) and is_environ(t.value) for t in targets):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if (node.func.attr in _ENVIRON_WRITES and is_environ(node.func.value)) or (
                    node.func.attr in ("putenv", "unsetenv") and getattr(node.func.value, "id", None) == "os"):
                lines.append(node.lineno)
    return lines


def test_the_reader_of_environment_writes_sees_each_form():
    source = ("import os\nos.environ['A'] = '1'\ndel os.environ['A']\nos.environ.pop('A', None)\n"
              "os.environ.setdefault('A', '1')\nos.putenv('A', '1')\nx = os.environ.get('A')\nos.environ.update(A='1')\n")
    assert environment_writes(source) == [2, 3, 4, 5, 6, 8]


def test_no_module_of_the_package_writes_the_environment():
    """The library reads variables (TOKENIZERS_PARALLELISM, BERTSCORE_APP_*, LOCAL_RANK) and never
    writes one: a write during a call races with every other thread of the process."""
    found = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
             if (lines := environment_writes(path.read_text(encoding="utf-8")))}
    assert found == {}


@pytest.mark.parametrize("parallelism", [None, "false"], indirect=True)
def test_two_threads_scoring_at_once_get_their_numbers_and_leave_the_environment_alone(parallelism):
    """Two scorers in two threads, each call long enough to tokenize ahead (where the variable lets
    it: "false" with a core free), started together: each gets the numbers of the same call made
    alone, and every tokenize of either thread saw the user's setting, unchanged after."""
    import concurrent.futures

    from bertscore import EMBEDDED_MODEL_NAME, BERTScorer

    cands = [f"the {word} sat on mat number {i}" for i, word in enumerate(["cat", "dog", "bird"] * 10)]
    refs = [[f"a {word} is on mat {i}", f"mat {i}"] for i, word in enumerate(["cat", "cow", "bee"] * 10)]
    scorers = [BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu", chunk_size=4) for _ in range(2)]
    alone = scorers[0].score(cands, refs)
    seen: list[str | None] = []
    names: list[str] = []
    threads_before = torch.get_num_threads()
    torch.set_num_threads(1)  # a core free: the background tokenizer runs where the variable allows it
    try:
        for scorer in scorers:
            tokenize = scorer.pipeline.tokenize

            def recorded(texts, tokenize=tokenize, **kwargs):
                seen.append(os.environ.get("TOKENIZERS_PARALLELISM"))
                names.append(threading.current_thread().name)
                return tokenize(texts, **kwargs)

            scorer.pipeline.tokenize = recorded
        start = threading.Barrier(2)

        def run(scorer):
            start.wait(30)
            return scorer.score(cands, refs)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(run, scorers))
    finally:
        torch.set_num_threads(threads_before)
    for result in results:
        for got, want in zip(result, alone):
            assert torch.equal(got, want)
    assert len(seen) >= 2 * 8 and set(seen) == {parallelism}  # 8 blocks of 4 pairs per call, each tokenized
    ahead = [name for name in names if name.startswith("bertscore-tokenize")]
    assert bool(ahead) is (parallelism == "false")  # the background thread ran where the variable allows it
    assert os.environ.get("TOKENIZERS_PARALLELISM") == parallelism
