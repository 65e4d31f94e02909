"""The Hub rehearsed in fresh virtual environments: what a user of the Space meets, and what the Space builds.

`make test-hub` runs this file (CI runs it from `make test-compat`); elsewhere it is skipped, since
its environments take minutes to build. Two fresh venvs, shared by the tests:

- a user's: evaluate and datasets, no `bertscore`. `evaluate.load("<owner>/bertscore_metric")`, for an
  owner drawn at random, runs evaluate's real Hub path with only its download pointed at this checkout
  (`hub_space.FakeHub`): the error names the install from that owner's Space. Then the package is
  installed as pip installs a Space repository (`pip install git+<a git repository of the Space's
  files>`): the Hub-loaded `compute()` equals `score()`; a package of another version is refused with
  both versions named, and the command named aligns them.
- the Space's: requirements.txt alone plus gradio at the front matter's `sdk_version`, as the Hub
  builds a Gradio Space; `python app.py` from the Space's files answers `/compute`.
- and a third, for code that calls the official package: the official bert-score installed, then the
  README's `pip install . ./bert_score_dropin` replaces it (bringing matplotlib itself: `bert-score-show`
  and `plot_example` draw; careless input to `bert-score` is one line, exit 2), and
  docs/existing-code.md's command goes back.

torch is held to the build on this machine's disk by a constraints file (the Hub installs the newest);
requirements.txt's CPU index (download.pytorch.org) may be unreachable here, so pip is told not to
retry it. Each step's time is printed (pytest -s) for docs/testing.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from hub_space import CANDIDATES, LOAD_SCRIPT, REFERENCES, REPO_ROOT, SPACE_NAME, FakeHub, random_owner, space_files

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("BERTSCORE_HUB_REHEARSAL") != "1",
                       reason="fresh virtual environments (minutes): `make test-hub` runs these"),
]

TORCH_ON_DISK = "torch==2.13.0"  # the build pip finds on this project's machines (Makefile: setup)
GIT = ["git", "-c", "user.name=rehearsal", "-c", "user.email=rehearsal@localhost", "-c", "init.defaultBranch=main"]


def step(name: str, started: float) -> None:
    print(f"\nhub rehearsal: {name}: {time.monotonic() - started:.0f} s", flush=True)


def run(command: list[str], what: str, timeout: int = 1800, **kwargs) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{what} failed ({done.returncode})\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    step(what, started)
    return done


def pip_env() -> dict[str, str]:
    """pip as the project's machines run it, with a quick give-up on an unreachable index."""
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_RETRIES": "0", "PIP_TIMEOUT": "10"}
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    return env


def make_venv(folder: Path) -> str:
    run([sys.executable, "-m", "venv", str(folder)], f"python -m venv {folder.name}")
    return str(folder / "bin" / "python")


def git_repository(folder: Path, version: str | None = None) -> Path:
    """The Space's files (this checkout as pushed) as a git repository pip can install from; with
    `version`, bertscore/version.py says that version instead."""
    for name in space_files():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, folder / name)
    if version is not None:
        (folder / "bertscore" / "version.py").write_text(f'__version__ = "{version}"\n', encoding="utf-8")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the Space"]):
        subprocess.run([*GIT, *command], cwd=folder, check=True, capture_output=True, timeout=120)
    return folder


def load(python: str, hub: FakeHub, cache: Path, mode: str = "allow") -> tuple[int, dict]:
    """`evaluate.load(<the hub's Space>)` with that Python: (exit code, its JSON answer)."""
    env = {**pip_env(), **hub.env(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("HF_EVALUATE_OFFLINE", None)
    started = time.monotonic()
    done = subprocess.run([python, "-c", LOAD_SCRIPT, hub.space, mode, json.dumps([CANDIDATES, REFERENCES])],
                          cwd=cache, env=env, capture_output=True, text=True, timeout=900)
    step(f"evaluate.load({hub.space!r}) in the user's venv", started)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no answer (exit {done.returncode})\n{done.stdout}\n{done.stderr}"
    return done.returncode, json.loads(lines[-1])


def evaluate_extra() -> list[str]:
    """What a user of the evaluate module has: pyproject's `evaluate` extra."""
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["optional-dependencies"]["evaluate"]


@pytest.fixture(scope="session")
def constraints(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("pip") / "constraints.txt"
    path.write_text(TORCH_ON_DISK + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def space_repository(tmp_path_factory) -> Path:
    return git_repository(tmp_path_factory.mktemp("space-repository"))


@pytest.fixture(scope="session")
def user(tmp_path_factory, constraints, space_repository) -> SimpleNamespace:
    """The user's venv: first without the package (the load from a Space is tried then), then with
    the package pip installs from the Space repository."""
    root = tmp_path_factory.mktemp("user")
    python = make_venv(root / "venv")
    run([python, "-m", "pip", "install", "-c", constraints, *evaluate_extra()],
        "pip install evaluate datasets (the user's venv)", env=pip_env())
    absent = subprocess.run([python, "-c", "import bertscore"], capture_output=True, text=True, env=pip_env(),
                            cwd=root, timeout=120)
    owner = random_owner()
    with FakeHub.of_checkout(owner) as hub:
        without = load(python, hub, root, mode="allow")
    run([python, "-m", "pip", "install", "-c", constraints, f"git+file://{space_repository}"],
        "pip install git+<the Space repository> (the package and its dependencies)", env=pip_env())
    return SimpleNamespace(python=python, root=root, owner=owner, absent=absent, without=without,
                           site=Path(python).parents[1] / "lib")


def test_without_the_package_the_error_names_the_install_from_that_space(user):
    assert "No module named 'bertscore'" in user.absent.stderr, "bertscore was importable in the fresh venv"
    code, answer = user.without
    assert code == 3, answer
    message = answer["error"]
    assert message.endswith(f"\n    pip install git+https://huggingface.co/spaces/{user.owner}/{SPACE_NAME}"), message
    assert "pip install bertscore" not in message


def test_with_the_package_from_the_space_compute_equals_score(user, tmp_path):
    owner = random_owner()
    with FakeHub.of_checkout(owner) as hub:
        code, answer = load(user.python, hub, tmp_path)
    assert code == 0, answer
    assert answer["module"].startswith(f"evaluate_modules.metrics.{owner}--{SPACE_NAME}.")
    assert Path(answer["bertscore_from"]).is_relative_to(user.site), answer["bertscore_from"]  # pip's copy
    from bertscore import EMBEDDED_MODEL_NAME, score

    here = score(CANDIDATES, REFERENCES, model_type=EMBEDDED_MODEL_NAME, idf=True)
    for name, values in zip(("precision", "recall", "f1"), here):
        assert answer["compute"][name] == pytest.approx(answer["score"][name], abs=1e-6)
        assert answer["compute"][name] == pytest.approx(values.tolist(), abs=1e-6)


def test_a_package_of_another_version_is_refused_and_the_named_command_aligns_it(user, space_repository,
                                                                                 constraints, tmp_path):
    from bertscore.version import __version__

    older = git_repository(tmp_path / "older", version="0.0.1")
    run([user.python, "-m", "pip", "install", "--no-deps", f"git+file://{older}"],
        "pip install an older package (no dependencies)", env=pip_env())
    owner = random_owner()
    with FakeHub.of_checkout(owner) as hub:
        code, answer = load(user.python, hub, tmp_path)
        assert code == 3, answer
        message = answer["error"]
        assert f"bertscore_metric {__version__} (from the Space {owner}/{SPACE_NAME})" in message, message
        assert "the installed one is 0.0.1" in message, message
        command = message.rsplit("\n    ", 1)[1]
        space_url = f"git+https://huggingface.co/spaces/{owner}/{SPACE_NAME}"
        assert command == f"pip install {space_url}", message
        # the command as named, with the Space's URL served from the local repository
        run([user.python, "-m", *command.replace(space_url, f"git+file://{space_repository}").split(),
             "-c", constraints], "the named command", env=pip_env())
        code, answer = load(user.python, hub, tmp_path)
    assert code == 0, answer
    assert answer["bertscore_version"] == __version__


@pytest.fixture(scope="session")
def space(tmp_path_factory, constraints) -> SimpleNamespace:
    """The Space as the Hub builds it: a fresh venv, requirements.txt and gradio at sdk_version."""
    import yaml

    header = yaml.safe_load((REPO_ROOT / "README.md").read_text(encoding="utf-8").split("\n---\n", 1)[0][4:])
    root = tmp_path_factory.mktemp("space")
    python = make_venv(root / "venv")
    run([python, "-m", "pip", "install", "-c", constraints, "-r", str(REPO_ROOT / "requirements.txt"),
         f"gradio=={header['sdk_version']}"], "pip install -r requirements.txt gradio==sdk_version (the Space)",
        env=pip_env())
    files = root / "files"
    for name in space_files():
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, files / name)
    return SimpleNamespace(python=python, files=files, header=header)


def test_the_space_build_holds_what_the_app_needs_and_no_more(space):
    listed = subprocess.run([space.python, "-m", "pip", "list", "--format", "json"], capture_output=True,
                            text=True, env=pip_env(), timeout=300, check=True).stdout
    installed = {item["name"].lower(): item["version"] for item in json.loads(listed)}
    assert installed["gradio"] == str(space.header["sdk_version"])
    assert "bertscore" not in installed  # the app imports the package from the Space's files
    assert not {"evaluate", "datasets"} & set(installed), installed  # the app never imports them
    assert "pyarrow" in installed, installed  # a dependency of the package: the page reads Parquet and Arrow uploads
    assert not [name for name in installed if name.startswith("nvidia-")], installed


def test_the_space_build_serves_compute(space, tmp_path):
    from conftest import free_port
    from gradio_client import Client

    port = free_port()
    env = {**pip_env(), "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "SPACE_ID": f"{random_owner()}/{SPACE_NAME}",
           "HF_HOME": str(tmp_path / "hf-home"), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    log = (tmp_path / "app.log").open("w")
    started = time.monotonic()
    app = subprocess.Popen([space.python, "app.py"], cwd=space.files, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/"
        while True:
            assert app.poll() is None, (tmp_path / "app.log").read_text()
            # a hang guard only (the assertion says what never happened); the sleep is the polling interval
            assert time.monotonic() - started < 600, "the Space did not answer within 10 minutes"
            try:
                urllib.request.urlopen(url, timeout=5).read()  # one try's socket timeout: a slow try is retried
                break
            except OSError:
                time.sleep(0.5)
        answer = Client(url, verbose=False).predict(json.dumps(CANDIDATES[:1]), json.dumps(REFERENCES[:1]),
                                                    api_name="/compute")
        step("the Space, from `python app.py` to the first /compute answer", started)
        import psutil

        rss = psutil.Process(app.pid).memory_info().rss
        print(f"hub rehearsal: the Space's memory after its first answer: {rss / 2**20:.0f} MiB RSS", flush=True)
    finally:
        app.terminate()
        app.wait(timeout=60)
        log.close()
    from bertscore import EMBEDDED_MODEL_NAME, score

    assert "error" not in answer, answer
    assert answer["model"] == EMBEDDED_MODEL_NAME
    P, R, F = score(CANDIDATES[:1], REFERENCES[:1], model_type=EMBEDDED_MODEL_NAME)
    assert answer["f1"] == pytest.approx(F.tolist(), abs=1e-6)
    assert answer["precision"] == pytest.approx(P.tolist(), abs=1e-6)
    # the hash names the torch the Space runs (its version; the build label +cpu is not part of it)
    assert f"torch={TORCH_ON_DISK.split('==')[1]})" in answer["hashcode"] and "_cpu_" in answer["hashcode"], answer


def check_dropin_draws_and_says_errors_in_one_line(root: Path, python: str, env: dict[str, str]) -> None:
    """After the one documented install: `bert-score-show` and `plot_example` draw (matplotlib came with
    the drop-in), and `bert-score` on careless input says one line with exit code 2, no traceback."""
    model = ["-m", "sentence-transformers/all-MiniLM-L6-v2"]
    run([str(root / "venv" / "bin" / "bert-score-show"), "-c", "the cat sat", "-r", "a cat sat", *model,
         "-f", "show.png"], "bert-score-show", env=env, cwd=root)
    run([python, "-c", "import bert_score; bert_score.plot_example('the cat sat', 'a cat sat', "
         "model_type='sentence-transformers/all-MiniLM-L6-v2', fname='plot.png')"], "plot_example", env=env, cwd=root)
    assert (root / "show.png").stat().st_size > 0 and (root / "plot.png").stat().st_size > 0
    (root / "latin1.txt").write_bytes(b"ok\ncaf\xe9\n")
    (root / "two.txt").write_text("ok\ncafe\n", encoding="utf-8")
    (root / "empty.txt").write_text("", encoding="utf-8")
    for argv, expected in [
        (["-c", "latin1.txt", "-r", "two.txt", *model], "bert-score: error: latin1.txt, line 2: not valid UTF-8"),
        (["-c", "empty.txt", "-r", "empty.txt", *model], "bert-score: error: empty.txt has no lines"),
        (["-c", "two.txt", "-r", "two.txt", "-m", "no-such/model"], "bert-score: error: model 'no-such/model' is not"),
    ]:
        done = subprocess.run([str(root / "venv" / "bin" / "bert-score"), *argv], capture_output=True, text=True,
                              env=env, cwd=root, timeout=600)
        assert done.returncode == 2 and done.stderr.startswith(expected), (argv, done.returncode, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_dropin_replaces_the_official_package_and_the_docs_go_back(tmp_path_factory, constraints):
    """docs/existing-code.md in a fresh venv that has the official bert-score: the README's one command
    (`pip install . ./bert_score_dropin`, from a copy of this checkout) replaces it, `import bert_score`
    and the `bert-score` command are the drop-in's, and the documented command restores the official."""
    root = tmp_path_factory.mktemp("dropin")
    python = make_venv(root / "venv")
    run([python, "-m", "pip", "install", "-c", constraints, TORCH_ON_DISK, "bert-score==0.3.13"],
        "pip install torch bert-score==0.3.13 (the official package first)", env=pip_env())
    # The official package brought matplotlib; without it here, the drop-in's install must bring it itself.
    run([python, "-m", "pip", "uninstall", "-y", "matplotlib"], "pip uninstall matplotlib", env=pip_env())
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO_ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    clone = root / "clone"
    for name in listed:
        if (REPO_ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, clone / name)
    done = run([python, "-m", "pip", "install", "-c", constraints, ".", "./bert_score_dropin"],
               "pip install . ./bert_score_dropin", env=pip_env(), cwd=clone)
    assert "Successfully uninstalled bert-score-0.3.13" in done.stdout, done.stdout[-2000:]
    from bertscore.official import IMPLEMENTATION_VERSION

    env = {**pip_env(), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    imported = run([python, "-c", "import bert_score; print(bert_score.__version__, bert_score.__file__)"],
                   "import bert_score", env=env, cwd=root).stdout.split()
    assert imported[0] == IMPLEMENTATION_VERSION and Path(imported[1]).is_relative_to(root / "venv")
    line = run([str(root / "venv" / "bin" / "bert-score"), "-c", "the cat sat", "-r", "a cat sat",
                "-m", "sentence-transformers/all-MiniLM-L6-v2"], "the bert-score command", env=env, cwd=root).stdout
    assert f"_version={IMPLEMENTATION_VERSION}(" in line and " P: " in line and " F1: " in line, line
    check_dropin_draws_and_says_errors_in_one_line(root, python, env)
    run(["bash", "-c", f"{root / 'venv' / 'bin' / 'pip'} uninstall -y bert-score && "
         f"{root / 'venv' / 'bin' / 'pip'} install -c {constraints} bert-score==0.3.13"],
        "the documented way back", env=pip_env(), cwd=root)
    back = run([python, "-c", "import bert_score; print(bert_score.__version__)"], "import bert_score again",
               env=env, cwd=root).stdout.strip()
    assert back == "0.3.12"  # what the official 0.3.13 says
