"""The built wheel: it builds without setuptools' "Package would be ignored" banners and carries
every file under bertscore/data (the baselines, nested folders, their licences and sidecars)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD = "import sys; from setuptools import build_meta; build_meta.build_wheel(sys.argv[1])"


def test_wheel_builds_quietly_with_every_data_file(tmp_path):
    pytest.importorskip("setuptools", reason="building the wheel needs setuptools")
    source = tmp_path / "source"
    shutil.copytree(REPO_ROOT / "bertscore", source / "bertscore", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE", "bertscore_metric.py"):
        shutil.copy(REPO_ROOT / name, source / name)
    run = subprocess.run([sys.executable, "-c", BUILD, str(tmp_path / "dist")], cwd=source,
                         capture_output=True, text=True, timeout=600)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log
    assert "would be ignored" not in log and "absent from the `packages` configuration" not in log, log

    (wheel_path,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel_path) as wheel:
        names = set(wheel.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        assert "\nName: bertscore\n" in wheel.read(metadata).decode("utf-8")
    data_files = {path.relative_to(source).as_posix()
                  for path in (source / "bertscore" / "data").rglob("*") if path.is_file()}
    assert len(data_files) > 70  # today: 72 baseline TSVs and their LICENSE
    missing = sorted(data_files - names)
    assert not missing, f"files under bertscore/data missing from the wheel (extend package-data): {missing}"
    modules = {path.relative_to(source).as_posix() for path in (source / "bertscore").rglob("*.py")}
    assert len(modules) > 80 and any("/" in m.removeprefix("bertscore/") for m in modules)  # the folders too
    missing = sorted(modules - names)
    assert not missing, f"modules missing from the wheel (a folder the packages list does not find): {missing}"


@pytest.mark.parametrize("blocked", ["datasets", "evaluate"])
def test_the_metric_module_without_the_evaluate_extra_names_the_install_command(blocked):
    """`import bertscore_metric` where the `evaluate` extra is not installed stops with the command
    that installs it (a fresh interpreter: the module is blocked in sys.modules, as if absent)."""
    import shlex
    import tomllib

    code = f"import sys; sys.modules[{blocked!r}] = None; import bertscore_metric"
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    extra = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]["evaluate"]
    command = "pip install " + " ".join(shlex.quote(spec) for spec in extra)
    assert last.startswith("ImportError: bertscore_metric needs") and f"({blocked} is not installed)" in last, last
    assert command in last and "`evaluate` extra" in last, last
