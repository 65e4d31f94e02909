"""The suite keeps to its own caches (tests/own_caches.py): never the user's home, never another worker's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from own_caches import HF_CACHE_OVERRIDES, SUITE_CACHES

# A test of each door that writes a cache: evaluate (metric cache files, the module's copy),
# datasets (a map of an Arrow-backed dataset), matplotlib (its font list).
REPRESENTATIVE_TESTS = ("tests/test_metric.py::test_a_failed_compute_frees_its_cache_file_and_lock",
                        "tests/test_dataset_map.py::test_mapping_twice_is_a_cache_hit",
                        "tests/test_plot.py::test_the_title_labels_f1_raw_and_rescaled")


def test_this_process_caches_under_the_suite_folder() -> None:
    """Each library read its cache folder when it loaded: all of them under this worker's own folder."""
    import datasets
    import evaluate
    import huggingface_hub
    import matplotlib

    folders = {"evaluate metrics": evaluate.config.HF_METRICS_CACHE, "evaluate modules": evaluate.config.HF_MODULES_CACHE,
               "datasets": datasets.config.HF_DATASETS_CACHE, "hub": huggingface_hub.constants.HF_HUB_CACHE,
               "matplotlib": matplotlib.get_cachedir()}
    outside = {name: folder for name, folder in folders.items() if not Path(folder).is_relative_to(SUITE_CACHES)}
    assert not outside, f"caches outside the suite's own folder {SUITE_CACHES}: {outside}"
    assert not SUITE_CACHES.is_relative_to(Path.home() / ".cache")
    if worker := os.environ.get("PYTEST_XDIST_WORKER"):
        assert worker in SUITE_CACHES.name  # one folder per worker: none reads what another wrote


def test_a_run_leaves_the_users_home_untouched(tmp_path: Path) -> None:
    """Tests of evaluate, datasets and matplotlib run with HOME at an empty folder and no cache
    variable set, as on a user's machine: nothing may appear in it (they wrote ~/.cache/huggingface)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {name: value for name, value in os.environ.items()
           if name not in HF_CACHE_OVERRIDES and not name.startswith(("PYTEST_", "XDG_"))}
    for name in ("HF_HOME", "MPLCONFIGDIR", "GRADIO_TEMP_DIR"):  # unset, as in a user's shell
        env.pop(name, None)
    env.update(HOME=str(home), TMPDIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                          *REPRESENTATIVE_TESTS], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and f"{len(REPRESENTATIVE_TESTS)} passed" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    written = sorted(str(path.relative_to(home)) for path in home.rglob("*"))
    assert written == [], f"the run wrote into the user's home: {written[:20]}"
    left = sorted(path.name for path in tmp_path.iterdir() if path.name.startswith("bertscore-tests-"))
    assert left == [], f"the run left its cache folders behind: {left}"


@pytest.mark.parametrize(("clean", "code"), [(True, 1), (False, 0)])
def test_a_run_that_writes_into_the_clone_is_named_and_fails_from_a_clean_tree(clean, code, tmp_path: Path) -> None:
    """The session guard of own_caches.py, in a git repository of its own: a test that leaves a file
    in the clone fails the run that started from a clean tree, and is reported where work was in progress."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "own_caches.py").write_bytes((REPO_ROOT / "tests" / "own_caches.py").read_bytes())
    (tmp_path / "tests" / "test_writes.py").write_text(
        "from pathlib import Path\n\ndef test_writes():\n    (Path(__file__).parents[1] / 'left.txt').write_text('x')\n")
    (tmp_path / ".gitignore").write_text("__pycache__/\n")
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True)
    if not clean:
        (tmp_path / "work-in-progress.txt").write_text("x")
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "own_caches",
                          "-p", "no:xdist", "-p", "no:randomly", "tests/test_writes.py"], cwd=tmp_path,
                         env={**env, "PYTHONPATH": str(tmp_path / "tests")}, capture_output=True, text=True, timeout=120)
    assert run.returncode == code, run.stdout + run.stderr
    assert "1 passed" in run.stdout and "the run changed the clone's git status" in run.stdout
    assert "?? left.txt" in run.stdout and ("work-in-progress" not in run.stdout)
