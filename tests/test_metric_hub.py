"""The evaluate module as users load it from a Space: `evaluate.load("<owner>/bertscore_metric")`.

evaluate's real Hub path runs, in a fresh interpreter, with only its download pointed at this checkout
served as a Space (`hub_space.FakeHub`), for an owner drawn at random: evaluate checks the file's
imports, copies it to its module cache as `<owner>--bertscore_metric/<hash>/`, and imports it. Here the
`bertscore` package is this checkout's (or hidden from the interpreter); `make test-hub` repeats the
loads in fresh virtual environments, the package absent and then installed by pip from the Space
repository (tests/test_hub_rehearsal.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bertscore.version import __version__ as VERSION
from hub_space import CANDIDATES, LOAD_SCRIPT, REFERENCES, REPO_ROOT, SPACE_NAME, FakeHub, random_owner

evaluate = pytest.importorskip("evaluate")


def load_metric(target: str, env: dict[str, str], cwd: Path, mode: str, python: str = sys.executable) -> tuple[int, dict]:
    """evaluate.load(target) in a fresh interpreter; (exit code, the JSON line it printed)."""
    env = {**os.environ, **env}
    env.pop("HF_EVALUATE_OFFLINE", None)  # evaluate's own switch: off, as for a user online
    run = subprocess.run([python, "-c", LOAD_SCRIPT, target, mode, json.dumps([CANDIDATES, REFERENCES])],
                         cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no answer (exit {run.returncode})\n{run.stdout}\n{run.stderr}"
    return run.returncode, json.loads(lines[-1])


def load_from_hub(hub: FakeHub, tmp_path: Path, mode: str) -> tuple[int, dict]:
    return load_metric(hub.space, hub.env(tmp_path), tmp_path, mode)


def package_found(env: dict[str, str], cwd: Path, python: str = sys.executable) -> Path:
    """The folder of the `bertscore` a fresh interpreter with `env` in `cwd` imports (found, not imported):
    the clone's under an editable install, site-packages' under `pip install .`, as a user or a packager
    tests an installed package."""
    found = subprocess.run([python, "-c", "import importlib.util; print(importlib.util.find_spec('bertscore').origin)"],
                           cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    return Path(found.stdout.strip()).parent


def test_the_module_version_is_the_package_version():
    """The version check compares the two: they move together (docs/deploy.md, updating)."""
    from bertscore_metric import MODULE_VERSION

    assert MODULE_VERSION == VERSION


def test_evaluate_import_check_sees_no_bertscore_import():
    """evaluate refuses a module whose unindented imports fail, with `pip install <import name>`;
    the package is imported where that check does not look, so our own message is the one users read."""
    from evaluate.loading import get_imports

    imports = get_imports(str(REPO_ROOT / "bertscore_metric.py"))
    names = {name for kind, name, _path, _sub in imports if kind == "library"}
    assert "bertscore" not in names and {"datasets", "evaluate"} <= names
    assert {kind for kind, *_ in imports} == {"library"}  # nothing evaluate would download beside the file


@pytest.mark.slow
def test_from_a_space_without_the_package_the_error_names_that_space_install(tmp_path):
    owner = random_owner()
    with FakeHub.of_checkout(owner) as hub:
        code, answer = load_from_hub(hub, tmp_path, "block")
    assert code == 3, answer
    message = answer["error"]
    assert f"pip install git+https://huggingface.co/spaces/{owner}/{SPACE_NAME}\n" in message + "\n", message
    assert "pip install bertscore" not in message
    assert f"from the Space {owner}/{SPACE_NAME}) needs the bertscore package {VERSION}," in message
    # evaluate's real path: v<its version> first (404), then main; the file alone
    assert hub.requests[-2:] == [f"HEAD /spaces/{owner}/{SPACE_NAME}/resolve/main/{SPACE_NAME}.py",
                                 f"GET /spaces/{owner}/{SPACE_NAME}/resolve/main/{SPACE_NAME}.py"], hub.requests
    assert f"/resolve/v{evaluate.__version__}/" in hub.requests[0]
    assert (tmp_path / "modules" / "evaluate_modules" / "metrics" / f"{owner}--{SPACE_NAME}").is_dir()


@pytest.mark.slow
def test_from_a_space_with_the_package_compute_equals_score(tmp_path):
    owner = random_owner()
    with FakeHub.of_checkout(owner) as hub:
        code, answer = load_from_hub(hub, tmp_path, "allow")
    assert code == 0, answer
    assert answer["module"].startswith(f"evaluate_modules.metrics.{owner}--{SPACE_NAME}.")
    assert answer["bertscore_from"] == str(package_found(hub.env(tmp_path), tmp_path) / "__init__.py")
    for name in ("precision", "recall", "f1"):
        assert answer["compute"][name] == pytest.approx(answer["score"][name], abs=1e-6)
    from bertscore import EMBEDDED_MODEL_NAME, score

    here = score(CANDIDATES, REFERENCES, model_type=EMBEDDED_MODEL_NAME, idf=True)
    for name, values in zip(("precision", "recall", "f1"), here):
        assert answer["compute"][name] == pytest.approx(values.tolist(), abs=1e-6)


@pytest.mark.slow
def test_a_space_module_of_another_version_names_both_and_the_aligning_install(tmp_path):
    owner = random_owner()
    module = (REPO_ROOT / "bertscore_metric.py").read_text(encoding="utf-8")
    assert module.count(f'MODULE_VERSION = "{VERSION}"') == 1
    newer = module.replace(f'MODULE_VERSION = "{VERSION}"', 'MODULE_VERSION = "99.0.0"')
    with FakeHub.of_checkout(owner, replace={f"{SPACE_NAME}.py": newer.encode("utf-8")}) as hub:
        code, answer = load_from_hub(hub, tmp_path, "allow")
        found = package_found(hub.env(tmp_path), tmp_path)
    assert code == 3, answer
    message = answer["error"]
    assert "bertscore_metric 99.0.0" in message and f"the installed one is {VERSION} " in message, message
    assert f"at {found}" in message
    assert message.endswith(f"\n    pip install git+https://huggingface.co/spaces/{owner}/{SPACE_NAME}"), message


@pytest.mark.slow
def test_a_bertscore_that_is_not_this_project_is_named_as_such(tmp_path):
    """A stranger's `bertscore` (say, from PyPI) found first: refused, its place named, our install given."""
    owner = random_owner()
    stranger = tmp_path / "site" / "bertscore"
    stranger.mkdir(parents=True)
    (stranger / "__init__.py").write_text("def score(*args):\n    return 'not ours'\n", encoding="utf-8")
    with FakeHub.of_checkout(owner) as hub:
        env = {**hub.env(tmp_path), "PYTHONPATH": str(tmp_path / "site")}
        code, answer = load_metric(hub.space, env, tmp_path, "allow")
    assert code == 3, answer
    message = answer["error"]
    assert f"the installed one is without a version (not this project's) (at {stranger})" in message, message
    assert message.endswith(f"\n    pip install git+https://huggingface.co/spaces/{owner}/{SPACE_NAME}"), message


@pytest.mark.slow
def test_a_local_file_without_the_package_names_the_install_of_its_clone(tmp_path):
    """Loaded by path from a copy of the repository, the missing package is installed from that copy."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("bertscore_metric.py", "pyproject.toml"):
        (clone / name).write_bytes((REPO_ROOT / name).read_bytes())
    code, answer = load_metric(str(clone / "bertscore_metric.py"), {"HF_MODULES_CACHE": str(tmp_path / "modules")},
                               tmp_path, "block")
    assert code == 3, answer
    assert f"(from {clone}) needs the bertscore package {VERSION}," in answer["error"], answer
    assert answer["error"].endswith(f"\n    pip install -e {clone}"), answer
