"""The evaluate module loaded as from the Hub: the script alone, in a folder of its own.

`evaluate.load("<user>/<space>")` fetches bertscore_metric.py and nothing else, so its
`import bertscore` needs the package installed. When it is not, evaluate names the missing
install as `pip install <import name>`: that hint is right only while the distribution is
named like the import (pyproject's [project] name), which is what these tests pin down.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("evaluate")

REPO_ROOT = Path(__file__).resolve().parents[1]

LOAD_SCRIPT = textwrap.dedent(
    """
    import importlib.abc
    import sys


    class BlockBertscore(importlib.abc.MetaPathFinder):
        # First on sys.meta_path: no finder after it (site-packages, an editable install's
        # finder, the working directory, PYTHONPATH) gets to find the package.
        def find_spec(self, name, path=None, target=None):
            if name == "bertscore" or name.startswith("bertscore."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None


    if sys.argv[2] == "block":
        sys.meta_path.insert(0, BlockBertscore())
    import evaluate

    try:
        metric = evaluate.load(sys.argv[1])
    except ImportError as error:
        print(f"IMPORT ERROR: {error}")
        sys.exit(3)
    print(f"LOADED: {type(metric).__module__}.{type(metric).__name__}")
    print(f"BERTSCORE FROM: {sys.modules['bertscore'].__file__}")
    """
)


def project_name() -> str:
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'^\[project\]\n(?:.*\n)*?name\s*=\s*"([^"]+)"', text, flags=re.MULTILINE)
    assert match, "no [project] name in pyproject.toml"
    return match.group(1)


def load_alone(tmp_path: Path, mode: str) -> subprocess.CompletedProcess:
    """evaluate.load() a copy of bertscore_metric.py in a fresh folder, in a fresh interpreter."""
    folder = tmp_path / "space"
    folder.mkdir(exist_ok=True)
    script = shutil.copy(REPO_ROOT / "bertscore_metric.py", folder / "bertscore_metric.py")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
        "HF_HUB_OFFLINE": "1",
        "HF_EVALUATE_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
    }
    return subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, str(script), mode],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )


@pytest.mark.slow
def test_without_the_package_evaluate_names_our_distribution(tmp_path):
    run = load_alone(tmp_path, "block")
    assert run.returncode == 3, f"expected an ImportError from evaluate.load\n{run.stdout}\n{run.stderr}"
    hint = re.search(r"using 'pip install ([^']*)'", run.stdout)
    assert hint, f"evaluate's message has no install hint: {run.stdout}"
    assert hint.group(1) == "bertscore"
    # the hint is the import name; it helps only if the distribution carries that name
    assert project_name() == hint.group(1)


@pytest.mark.slow
def test_with_the_package_the_lone_script_loads(tmp_path):
    run = load_alone(tmp_path, "allow")
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}"
    assert "LOADED: evaluate_modules.metrics" in run.stdout, run.stdout
    assert f"BERTSCORE FROM: {REPO_ROOT / 'bertscore' / '__init__.py'}" in run.stdout
