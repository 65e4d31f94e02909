"""The drop-in (`import bert_score` backed by bertscore, bert_score_dropin/) through code shaped like its callers.

This venv keeps the official bert-score as the oracle, so the callers run in ONE interpreter where
`import bert_score` resolves to the drop-in (PYTHONPATH=bert_score_dropin:<repo>; tests/dropin_harness.py):
an lm-eval-style per-document loop, a SummEval-style metric class, a module shaped like evaluate's
canonical `bertscore` loaded with `evaluate.load(<folder>)` (its scorer kept across computes), and the
`bert-score` command, each equal to the official package at batch_size=1 within 1e-5, in a folder that
names the model as harness code does ("distilbert-base-uncased", the MiniLM files under that name).
The official surface that needs no process of its own (utils, the hash, the tables, the packaging) is
checked here against the official package itself.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import tomllib

import pytest
import torch

import bertscore
from bertscore import dropin
from bertscore.official import IMPLEMENTATION_VERSION
import oracle
from conftest import REPO_ROOT
from test_parity import TOLERANCE, official

bert_score = pytest.importorskip("bert_score", reason="the official bert-score package is a test dependency")

DROPIN = REPO_ROOT / "bert_score_dropin"
PAIRS = 8
MODEL = "distilbert-base-uncased"  # the name harness code gives; its layer in the official table is 5


def official_hash(*args) -> str:
    """The official package's get_hash, its version field naming this implementation (the drop-in's)."""
    code = bert_score.utils.get_hash(*args)
    return code.replace(f"_version={bert_score.__version__}(", f"_version={IMPLEMENTATION_VERSION}(")


@pytest.fixture(scope="module")
def texts(wmt17_de_en):
    cands, refs = wmt17_de_en
    return list(cands[:PAIRS]), list(refs[:PAIRS]), list(refs[PAIRS:2 * PAIRS])


@pytest.fixture(scope="module")
def harness(texts, minilm_dir, tmp_path_factory) -> dict:
    """One interpreter running every caller (tests/dropin_harness.py); its JSON answer."""
    work = tmp_path_factory.mktemp("dropin")
    (work / MODEL).symlink_to(minilm_dir, target_is_directory=True)
    cands, refs, more_refs = texts
    (work / "cands.txt").write_text("\n".join(cands) + "\n", encoding="utf-8")
    (work / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    config = {"cands": cands, "refs": refs, "more_refs": more_refs, "cands_file": "cands.txt", "refs_file": "refs.txt",
              "metric_dir": str(REPO_ROOT / "tests" / "data" / "official_shaped_bertscore")}
    (work / "config.json").write_text(json.dumps(config), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(DROPIN), str(REPO_ROOT)]), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(work / "hf-home"), "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, str(REPO_ROOT / "tests" / "dropin_harness.py"), "config.json"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def column(rows: list[dict], suffix: str) -> torch.Tensor:
    return torch.tensor([value for row in rows for key, value in row.items() if key.endswith(suffix)])


def assert_official(rows_p, rows_r, rows_f, theirs, label):
    for name, ours, reference in zip("PRF", (rows_p, rows_r, rows_f), theirs):
        delta = (torch.as_tensor(ours, dtype=torch.float64) - reference.double()).abs().max().item()
        assert delta <= TOLERANCE, f"{label} {name}: max |delta| {delta:.2e}"


@pytest.mark.slow
def test_the_interpreter_imports_the_dropin_and_frees_its_models(harness):
    """Fails when `release_models()` leaves the encoder, or any tensor of it (a cache, a closure, a
    kept batch), reachable. Measured by weak references to the encoder and to every storage of its
    parameters and buffers, not by RSS: what the C allocator returns to the OS differs between machines."""
    assert harness["file"].startswith(str(DROPIN)) and harness["version"] == IMPLEMENTATION_VERSION
    memory = harness["memory"]
    assert memory["loads"] == 1 and memory["storage_mib"] > 20, memory  # MiniLM at 4 layers: ~60 MB in fp32
    assert memory["encoder_freed"] and memory["storages_freed"] == memory["storages"] > 0, memory
    # 8 one-pair lm-eval calls, 8 SummEval examples and a batch, 3 computes and the command: one load.
    assert harness["loads"] == 1


@pytest.mark.slow
def test_lm_eval_loop_and_summeval_class_give_the_official_numbers(harness, texts, minilm_dir):
    cands, refs, more_refs = texts
    rows = harness["lm_eval"]
    assert_official(column(rows, "precision"), column(rows, "recall"), column(rows, "f1"),
                    official(cands, refs, minilm_dir, 5), "lm-eval loop")
    rows = harness["summeval_example"]
    assert_official(column(rows, "precision"), column(rows, "recall"), column(rows, "f1"),
                    official(cands, refs, minilm_dir, 5), "SummEval evaluate_example")
    assert harness["summeval_example_hash"] == official_hash(MODEL, 5, False, False, False, False)
    rows = harness["summeval_batch"]
    multi = [[a, b] for a, b in zip(refs, more_refs)]
    assert_official(column(rows, "precision"), column(rows, "recall"), column(rows, "f1"),
                    official(cands, multi, minilm_dir, 5), "SummEval evaluate_batch, two references")


@pytest.mark.slow
def test_evaluate_shaped_module_keeps_its_scorer_and_gives_the_official_numbers(harness, texts, minilm_dir):
    cands, refs, _ = texts
    first, second, with_idf = harness["evaluate"]
    assert first["scorer_id"] == second["scorer_id"] != with_idf["scorer_id"]  # kept while the hash is equal
    assert first["hashcode"] == official_hash(MODEL, 5, False, False, False, False)
    assert harness["evaluate_hash_check"]
    theirs = official(cands, refs, minilm_dir, 5)
    ours = [first[name] + second[name] for name in ("precision", "recall", "f1")]
    assert_official(*ours, theirs, "evaluate-shaped module, two computes on one scorer")
    assert_official(with_idf["precision"], with_idf["recall"], with_idf["f1"],
                    official(cands, refs, minilm_dir, 5, idf=True), "evaluate-shaped module, idf")


@pytest.mark.slow
def test_the_bert_score_command_prints_the_official_line(harness, texts, minilm_dir):
    cands, refs, _ = texts
    head, *pairs = harness["command"].strip().splitlines()
    theirs = official(cands, refs, minilm_dir, 5)
    hash_code, _, p, _, r, _, f = head.rsplit(" ", 6)
    # The official command's --use_fast_tokenizer is a store_false switch: the hash names the fast tokenizer.
    assert hash_code == official_hash(MODEL, 5, False, False, False, True)
    for ours, reference in zip((p, r, f), theirs):
        assert abs(float(ours) - reference.mean().item()) <= TOLERANCE
    per_pair = torch.tensor([[float(value) for value in line.split("\t")] for line in pairs])
    assert_official(*per_pair.T, theirs, "bert-score -s")


@pytest.mark.slow
def test_mbrs_metric_on_the_scorers_privates_gives_the_official_numbers(harness, texts, minilm_dir):
    """mbrs: the scorer's `_model`, `_tokenizer`, `_idf_dict`, its own padded batches, `greedy_cos_idf`."""
    cands, refs = texts[0][:4], texts[1][:3]
    mbrs = harness["mbrs"]
    # The embedded MiniLM on the CPU in fp32: the plain-torch BERT (bert_encoder.py), transformers' BertModel's
    # modules and numbers (tests/test_bert_encoder.py); mbrs's calls run on it unedited.
    assert mbrs["shared_encoder"] and mbrs["model_class"] == "BertEncoder" and mbrs["plain_idf_dict"] is None
    flat_cands, flat_refs = [c for c in cands for _ in refs], [r for _ in cands for r in refs]
    theirs = official(flat_cands, flat_refs, minilm_dir, 5)[2].view(len(cands), len(refs))
    assert (torch.tensor(mbrs["f1"]) - theirs).abs().max() <= TOLERANCE
    weighted = oracle.call(oracle.scorer_score, flat_cands, flat_refs, {"batch_size": 1}, model_type=str(minilm_dir),
                           num_layers=5, idf=True, idf_sents=refs, batch_size=1)[2]
    assert (torch.tensor(mbrs["f1_idf"]) - weighted.view(len(cands), len(refs))).abs().max() <= TOLERANCE


@pytest.mark.slow
def test_a_script_on_the_star_imported_helpers_gives_the_official_numbers(harness, texts, minilm_dir):
    cands, refs, _ = texts
    script = harness["script"]
    theirs = torch.stack(official(cands, refs, minilm_dir, 5), dim=-1)
    assert (torch.tensor(script["plain"]) - theirs).abs().max() <= TOLERANCE
    theirs_idf = torch.stack(official(cands, refs, minilm_dir, 5, idf=True), dim=-1)
    assert (torch.tensor(script["idf"]) - theirs_idf).abs().max() <= TOLERANCE
    length = script["embedding_shapes"][1][1]
    assert script["embedding_shapes"] == [[3, length, 384], [3, length], [3, length]] and script["sent_encode"]


@pytest.mark.slow
def test_evaluate_patch_bertscore_runs_the_module_without_a_model(harness):
    """evaluate's tests/test_metric_common.py `patch_bertscore`: both patches take effect, nothing loads."""
    patched = harness["evaluate_patched"]
    assert patched["result"]["f1"] == patched["result"]["precision"] == [1.0, 1.0]
    assert patched["get_model_calls"] == [[MODEL, 5, False]] and patched["cos_calls"] == 1 and patched["loads"] == 0


def test_utils_match_the_official_helpers(minilm_dir, wmt17_de_en):
    texts = list(wmt17_de_en[1][:20]) + ["  padded  "]
    tokenizer = dropin.get_tokenizer(str(minilm_dir))
    theirs = bert_score.utils.get_idf_dict(texts, bert_score.utils.get_tokenizer(str(minilm_dir)), nthreads=0)
    ours = dropin.get_idf_dict(texts, tokenizer)
    assert set(ours) == set(theirs) and all(ours[k] == pytest.approx(theirs[k], abs=1e-6) for k in theirs)
    assert ours[10**9] == pytest.approx(theirs[10**9])
    for text in texts:
        assert dropin.sent_encode(tokenizer, text) == bert_score.utils.sent_encode(tokenizer, text)
    # An empty text: the official's build_inputs_with_special_tokens([]) (gone from transformers 5 tokenizers).
    assert dropin.sent_encode(tokenizer, "  ") == [tokenizer.cls_token_id, tokenizer.sep_token_id]
    assert dict(dropin.lang2model) == dict(bert_score.utils.lang2model)
    # A language the table lacks: each defaultdict's default, read on copies (a lookup adds the key, and the
    # official table is the oracle other tests compare with).
    assert copy.copy(dropin.lang2model)["xx"] == copy.copy(bert_score.utils.lang2model)["xx"] == "bert-base-multilingual-cased"
    assert dropin.model2layers.items() >= bert_score.utils.model2layers.items()
    encoder = dropin.get_model(str(minilm_dir), 2)
    assert len(encoder.encoder.layer) == 2 and not encoder.training


def test_hash_and_scorer_follow_the_official_format(minilm_dir):
    scorer = dropin.BERTScorer(model_type=str(minilm_dir), num_layers=6, idf=True, idf_sents=["a b", "b c"], use_fast_tokenizer=True)
    assert scorer.hash == dropin.get_hash(str(minilm_dir), 6, True, False, False, True)
    assert scorer.hash == official_hash(str(minilm_dir), 6, True, False, False, True)
    (scores, code) = scorer.score(["a b"], ["b c"], return_hash=True)
    assert code == scorer.hash and scorer.idf and scorer.bertscore_hash == bertscore.BERTScorer.hash.fget(scorer)
    copy = pickle.loads(pickle.dumps(scorer))
    assert type(copy) is dropin.BERTScorer and copy.hash == scorer.hash


def test_dropin_utils_reexports_and_names_what_it_lacks():
    """bert_score_dropin/bert_score/utils.py, loaded by path (`bert_score` is the official package here)."""
    spec = importlib.util.spec_from_file_location("dropin_utils", DROPIN / "bert_score" / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    assert utils.get_hash is dropin.get_hash and utils.lang2model is dropin.lang2model
    assert utils.__all__ == bert_score.utils.__all__ == []
    assert utils.get_bert_embedding is dropin.get_bert_embedding  # the docs promised it: now it is there
    with pytest.raises(AttributeError, match="cache_scibert is an internal helper of the official"):
        utils.cache_scibert
    with pytest.raises(AttributeError, match="has no attribute 'nothing_like_it'"):
        utils.nothing_like_it


def test_the_dropin_distribution_names_this_version():
    project = tomllib.loads((DROPIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "bert-score" and project["version"] == IMPLEMENTATION_VERSION
    assert project["dependencies"][0] == f"bertscore=={bertscore.__version__}"
    from packaging.specifiers import SpecifierSet

    assert IMPLEMENTATION_VERSION in SpecifierSet(">=0.3.10") and IMPLEMENTATION_VERSION in SpecifierSet("==0.3.13")
    assert project["scripts"] == {"bert-score": "bertscore.cli.official:main", "bert-score-show": "bertscore.cli.official:show"}


def test_the_dropin_installs_what_the_official_package_installs():
    """Each of the official 0.3.13's requirements (matplotlib for plot_example and bert-score-show
    included) is the drop-in's too, with at least the official bounds: the documented one-line install
    leaves nothing that code written for the official package imports missing."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    official_dist = distribution("bert-score")
    assert official_dist.version == "0.3.13", "this venv's bert-score must be the official package (the oracle)"
    project = tomllib.loads((DROPIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ours = {canonicalize_name(r.name): r for r in map(Requirement, project["dependencies"])}
    official_requirements = [Requirement(line) for line in official_dist.requires or []]
    assert {canonicalize_name(r.name) for r in official_requirements} >= {"matplotlib", "torch", "transformers"}
    for requirement in official_requirements:
        name = canonicalize_name(requirement.name)
        assert name in ours, f"the drop-in does not install {requirement}"
        assert {str(s) for s in requirement.specifier} <= {str(s) for s in ours[name].specifier}, (requirement, ours[name])


def official_heatmap(candidate: str, reference: str, model_type: str, num_layers: int) -> tuple:
    """The official `plot_example`'s matrix and its tick labels (candidate rows, reference columns: its
    tokens without [CLS] and [SEP]), read from the pyplot figure it draws, which is closed after."""
    import warnings

    import matplotlib.pyplot as plt
    import numpy

    before = set(plt.get_fignums())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its plt.show() on a non-interactive backend says so
        bert_score.plot_example(candidate, reference, model_type=model_type, num_layers=num_layers)
    (number,) = set(plt.get_fignums()) - before
    figure = plt.figure(number)
    axes = figure.axes[0]
    try:
        return (torch.tensor(numpy.ma.getdata(axes.images[0].get_array())), [t.get_text() for t in axes.get_yticklabels()],
                [t.get_text() for t in axes.get_xticklabels()])
    finally:
        plt.close(figure)


def png_size(path) -> tuple[int, int]:
    """A PNG's width and height in pixels, from its IHDR chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_plot_example_and_bert_score_show_save_the_heatmap(minilm_dir, tmp_path, capsys):
    """The figure shows the official plot_example's matrix with the official tokens as tick labels (plus
    [CLS] and [SEP], which the official one leaves out); the file is that figure at 100 dpi, and
    `bert-score-show` saves the same picture: fails on a figure of another pair, layer or model, tokens
    missing or out of order, an empty or thumbnail image, or a command that draws something else."""
    import numpy
    from matplotlib.figure import Figure

    from bertscore.cli.official import show_main
    from bertscore.plot import SIMILARITY_IMAGE

    candidate, reference = "the cat sat", "a cat sat down"
    figure = dropin.plot_example(candidate, reference, model_type=str(minilm_dir), num_layers=6,
                                 fname=str(tmp_path / "pair.png"))
    assert isinstance(figure, Figure)
    matrix, their_rows, their_cols = oracle.call(official_heatmap, candidate, reference, str(minilm_dir), 6)
    assert their_rows == ["the", "cat", "sat"] and their_cols == ["a", "cat", "sat", "down"]
    axes = figure.axes[0]
    (image,) = [artist for artist in axes.images if artist.get_gid() == SIMILARITY_IMAGE]
    shown = torch.tensor(numpy.ma.getdata(image.get_array()))
    assert [t.get_text() for t in axes.get_yticklabels()] == ["[CLS]", *their_rows, "[SEP]"]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["[CLS]", *their_cols, "[SEP]"]
    assert shown.shape == (len(their_rows) + 2, len(their_cols) + 2)
    assert (shown[1:-1, 1:-1] - matrix).abs().max() <= TOLERANCE
    width, height = png_size(tmp_path / "pair.png")
    assert (width, height) == tuple(round(inches * 100) for inches in figure.get_size_inches())
    assert width >= 400 and height >= 300, (width, height)  # room for the labels, the bar, the title
    assert show_main(["-c", candidate, "-r", reference, "-m", str(minilm_dir), "-l", "6",
                      "-f", str(tmp_path / "show.png")]) == 0
    assert "show.png" in capsys.readouterr().out
    assert (tmp_path / "show.png").read_bytes() == (tmp_path / "pair.png").read_bytes()
