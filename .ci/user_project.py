"""A user's project, tested as used (`make test-user-project`; .ci/run runs it after the matrix).

    python .ci/user_project.py [--python 3.13] [--torch torch==2.14.1] [--venv .venv-user]

1. A fresh venv on a Python other than the suite's, with what a training project installs first, as
   users do: PyPI's torch (the CUDA build; not the CPU 2.13.0 constraints.txt pins: the newest matrix
   cell's, so pip's cache has it), transformers, datasets, evaluate and accelerate.
2. The README's install for an existing environment, exactly as printed: the first ```bash block of its
   "## Install" section, run line by line in the clone with the venv first on PATH.
3. `pip freeze` before and after: torch, numpy and transformers unchanged.
4. From a folder outside the clone, tests/user_project/train_and_score.py (a Seq2SeqTrainer whose
   compute_metrics loads the metric by `bertscore.metric_path()`, the drop-in, a local copy of a
   canonical-shaped module), against the official bert-score 0.3.13 installed in a folder of its own.

Prints what each step did; exits non-zero naming the first thing that differs. Ends with the line
"N passed, 0 failed" when every check held.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEPT = ("torch", "numpy", "transformers")  # what the install must leave as the user had it
USER_FIRST = ["transformers", "datasets", "evaluate", "accelerate"]
OFFICIAL = "bert-score==0.3.13"


def readme_install_block() -> list[str]:
    """The command lines of the first ```bash block of README.md's "## Install" section."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    if block is None:
        sys.exit("user project: README.md's Install section has no ```bash block")
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    if not lines or any(not line.startswith("pip install ") for line in lines):
        sys.exit(f"user project: README.md's install block is not pip lines: {lines}")
    return lines


def run(command: list[str] | str, **kwargs) -> subprocess.CompletedProcess:
    shown = command if isinstance(command, str) else " ".join(command)
    print(f"user project: $ {shown}", flush=True)
    start = time.monotonic()
    done = subprocess.run(command, check=True, **kwargs)
    print(f"user project: ({time.monotonic() - start:.0f} s)", flush=True)
    return done


def frozen(python: Path) -> dict[str, str]:
    lines = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return {re.split(r"[=@ ]", line, 1)[0].lower(): line for line in lines if line and not line.startswith("-e")}


def find_python(minor: str) -> str:
    return subprocess.run([sys.executable, str(ROOT / ".ci" / "matrix.py"), "python", minor], capture_output=True,
                          text=True, check=True).stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.13", help="the user's Python (not the suite's 3.11)")
    parser.add_argument("--torch", default="torch==2.14.1", help="the user's torch, from PyPI")
    parser.add_argument("--venv", default=str(ROOT / ".venv-user"))
    args = parser.parse_args()
    venv = Path(args.venv).resolve()  # the script later runs from a folder outside the clone
    shutil.rmtree(venv, ignore_errors=True)
    run([find_python(args.python), "-m", "venv", str(venv)])
    python, bin_dir = venv / "bin" / "python", venv / "bin"
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PATH=str(bin_dir) + os.pathsep + os.environ.get("PATH", ""), VIRTUAL_ENV=str(venv))
    env.pop("PYTHONPATH", None)
    run([str(python), "-m", "pip", "install", "-q", args.torch, *USER_FIRST], env=env)
    before = frozen(python)
    for line in readme_install_block():
        run(["bash", "-e", "-c", line], cwd=ROOT, env=env)
    after = frozen(python)
    passed = 0
    for name in KEPT:
        if before.get(name) != after.get(name):
            sys.exit(f"user project: the install changed {name}: {before.get(name)} -> {after.get(name)}")
        print(f"user project: {name} kept: {after[name]}")
        passed += 1
    with tempfile.TemporaryDirectory(prefix="user-project-") as scratch:
        work, official = Path(scratch) / "project", Path(scratch) / "official"
        work.mkdir()
        if ROOT in work.resolve().parents:
            sys.exit(f"user project: the scratch folder {work} is inside the clone")
        run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--target", str(official), OFFICIAL], env=env)
        shutil.copy(ROOT / "tests" / "user_project" / "train_and_score.py", work)
        shutil.copytree(ROOT / "tests" / "data" / "official_shaped_bertscore", work / "official_shaped_bertscore")
        run([str(python), "train_and_score.py", str(official)], cwd=work, env=env)
        passed += 1
    shutil.rmtree(venv, ignore_errors=True)  # about 4 GB with the CUDA torch; kept when a check failed
    print(f"{passed} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
