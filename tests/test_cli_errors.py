"""Only input errors exit with code 2: what the user passed (an option, a file, a setting the core
refuses as an `InputError`) gets one line and exit 2; anything else is a bug and shows its
traceback with exit code 1, even when it is a ValueError or TypeError from deep inside."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bertscore import EMBEDDED_MODEL_NAME, BERTScorer
from bertscore.cli.baseline import main as baseline_main
from bertscore.cli import main
from bertscore.inputs import InputError, InputTypeError
from conftest import REPO_ROOT

MODEL = ["--model", EMBEDDED_MODEL_NAME, "--device", "cpu"]


@pytest.fixture
def files(tmp_path) -> dict[str, str]:
    (tmp_path / "c.txt").write_text("the cat sat\nit rained\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("a cat sat\nthe rain fell\n", encoding="utf-8")
    (tmp_path / "corpus.txt").write_text("".join(f"sentence {i} of the corpus\n" for i in range(8)), encoding="utf-8")
    return {name: str(tmp_path / f"{name}.txt") for name in ("c", "r", "corpus")}


@pytest.mark.parametrize("error", [ValueError("shapes [3, 4] and [4, 5] differ"), TypeError("unhashable type: 'list'")],
                         ids=["ValueError", "TypeError"])
def test_an_internal_error_shows_its_traceback_and_exits_1(files, monkeypatch, capsys, error) -> None:
    def broken(self, *args, **kwargs):
        raise error

    monkeypatch.setattr(BERTScorer, "score", broken)
    assert main(["-c", files["c"], "-r", files["r"], *MODEL]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and str(error) in err
    assert "internal error" in err and "bertscore: error:" not in err
    # --systems goes through the same door
    assert main(["-r", files["r"], "--systems", files["c"], files["r"], *MODEL]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_an_internal_error_of_the_baseline_command_exits_1(files, monkeypatch, capsys) -> None:
    import bertscore.calibrate

    def broken(*args, **kwargs):
        raise ValueError("index 7 is out of bounds")

    monkeypatch.setattr(bertscore.calibrate, "compute_baseline", broken)
    assert baseline_main(["--model", EMBEDDED_MODEL_NAME, "--corpus", files["corpus"], "-o",
                          str(Path(files["corpus"]).with_name("b.tsv")), "-q"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "index 7 is out of bounds" in err


@pytest.mark.parametrize("extra, message", [
    (["-l", "99"], "num_layers=99 is out of range"),  # the core's check (models)
    (["--batch-size", "0"], "batch_size must be a whole number >= 1"),  # the core's check (scorer)
    (["--long-texts", "window", "--window-stride", "0"], "window_stride=0"),  # windows
    (["--device", "bogus"], "unknown device 'bogus'"),  # embed
    (["--cache-device", "bogus"], "unknown device 'bogus'"),  # the cache's device: was torch's RuntimeError, exit 1
    (["--max-tokens-per-batch", "0"], "max_tokens_per_batch must be a whole number >= 1"),  # was the default, silently
    (["--max-tokens-per-batch", "-5"], "got -5"),  # was a budget of -5 tokens, silently
    (["--rescale-with-baseline", "--baseline-path", "/no/such/baseline.tsv"], "/no/such/baseline.tsv"),  # a file
])
def test_input_errors_from_the_core_exit_2_in_one_line(files, capsys, extra, message) -> None:
    assert main(["-c", files["c"], "-r", files["r"], *MODEL, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bertscore: error: ") and message in err and "Traceback" not in err


def test_baseline_command_input_errors_from_the_core_exit_2(files, capsys) -> None:
    out = str(Path(files["corpus"]).with_name("b.tsv"))
    assert baseline_main(["--model", EMBEDDED_MODEL_NAME, "--corpus", files["corpus"], "-o", out, "--seed", "-1",
                          "-q"]) == 2
    err = capsys.readouterr().err
    assert "seed must be an integer >= 0" in err and "Traceback" not in err


def test_input_errors_stay_value_and_type_errors_for_api_callers() -> None:
    """Subclassing keeps `except ValueError` / `pytest.raises(TypeError)` code working."""
    from bertscore import score

    with pytest.raises(InputTypeError) as raised:
        score("a text", ["a reference"], model_type=EMBEDDED_MODEL_NAME)
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)
    with pytest.raises(InputError):
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, batch_size=0)


def test_a_cache_device_that_cannot_be_used_is_the_callers_error_at_every_door() -> None:
    """torch.device() took 'cuda:7' on a CPU-only machine (failing mid-score) and raised its own
    RuntimeError for 'bogus': a traceback with exit 1 at the CLI, not the caller's ValueError."""
    import evaluate
    import torch

    from bertscore.pool import ScorerPool
    from conftest import REPO_ROOT

    absent = "cuda:7" if not torch.cuda.is_available() or torch.cuda.device_count() < 8 else "cuda:99"
    for device, words in (("bogus", "unknown device 'bogus'"), (absent, "available: ")):
        with pytest.raises(InputError, match=words):
            BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu", cache_device=device)
        pool = ScorerPool()
        pool.get(model_type=EMBEDDED_MODEL_NAME, device="cpu")  # a model already pooled: its cache is compared
        with pytest.raises(InputError, match=words):
            pool.get(model_type=EMBEDDED_MODEL_NAME, device="cpu", cache_device=device)
    metric = evaluate.load(str(REPO_ROOT / "bertscore_metric.py"))
    with pytest.raises(ValueError, match="unknown device 'bogus'"):
        metric.compute(predictions=["a cat"], references=["a cat"], model_type=EMBEDDED_MODEL_NAME, device="cpu",
                       cache_device="bogus")


@pytest.mark.parametrize("name", ["max_tokens_per_batch", "batch_size", "chunk_size"])
@pytest.mark.parametrize("size", [0, -5, 2.5, True, "256"])
def test_a_bad_size_is_refused_before_the_model_loads(name, size, monkeypatch) -> None:
    """0 tokens was the default, 2.5 and True were sizes, silently; '256' was a bare TypeError."""
    from bertscore.models import shared as shared_models

    def refuse(*args, **kwargs):
        raise AssertionError(f"the model loaded before {name} was checked")

    monkeypatch.setattr(shared_models.SharedModels, "get", refuse)  # loaded or reused: no encoder yet
    with pytest.raises(InputError, match=f"{name} must be a whole number >= 1"):
        BERTScorer(model_type=EMBEDDED_MODEL_NAME, device="cpu", **{name: size})


def test_help_lists_every_subcommand_with_one_line(capsys) -> None:
    """`bertscore --help` names `layers`, `baseline` and `explain`, one line each, and each runs its own --help."""
    from bertscore.cli.main import SUBCOMMAND_MAINS
    from bertscore.cli.options import SUBCOMMANDS

    assert set(SUBCOMMAND_MAINS) == set(SUBCOMMANDS) == {"layers", "baseline", "explain"}
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out.splitlines()
    for name, line in SUBCOMMANDS.items():
        assert [row for row in shown if row.split() == ["bertscore", name, *line.split()]], (name, shown)
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0 and capsys.readouterr().out.startswith(f"usage: bertscore {name}")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "bert_score_dropin"), str(REPO_ROOT)])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("program, command, typed, meant", [
    ("bertscore", ["-m", "bertscore", "-c", "c.txt", "-r", "r.txt"], "--modle", "--model"),
    ("bertscore", ["-m", "bertscore", "-c", "c.txt", "-r", "r.txt"], "--chunk_size", "--chunk-size"),
    ("bertscore explain", ["-m", "bertscore", "explain", "a", "b"], "--lnie", "--line"),
    ("bertscore baseline", ["-m", "bertscore", "baseline", "--corpus", "c.txt", "-o", "b.tsv"], "--sed", "--seed"),
    ("bert-score", ["-m", "bert_score_cli.score", "-c", "c.txt", "-r", "r.txt"], "--idff", "--idf"),
])
def test_an_unknown_flag_gets_one_usage_line_and_a_suggestion(tmp_path, program, command, typed, meant) -> None:
    """A mistyped flag: one short usage line, then the error naming the flag meant (exit 2), through
    the real commands. argparse alone printed its whole usage (16 lines for `bertscore`) above an
    error with no suggestion."""
    done = _run([*command, typed, "3"], tmp_path)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    usage, error = done.stderr.splitlines()
    assert usage.startswith(f"usage: {program} ") and usage.endswith(f"(every option: {program} --help)")
    assert error == f"{program}: error: unrecognized arguments: {typed} 3 ({typed}: did you mean {meant}?)"


def test_explain_without_arguments_asks_for_the_texts_first(tmp_path) -> None:
    """`bertscore explain` alone: the pair is what is missing first (then --model), through the real command."""
    done = _run(["-m", "bertscore", "explain"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ('bertscore explain: error: pass the candidate and at least one reference: bertscore '
                           'explain "CANDIDATE" "REFERENCE" --model MODEL (or -c/-r files with --line N)\n')
    done = _run(["-m", "bertscore", "explain", "a cat", "the cat"], tmp_path)  # the texts given: now the model
    assert done.returncode == 2 and done.stderr.startswith("bertscore explain: error: pass --model or --lang")
