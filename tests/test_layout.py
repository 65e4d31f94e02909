"""The package's folders moved its rooms (issue 70): what users wrote against the earlier layout still works.

- every import that README.md and docs/ show runs, and every dotted `bertscore.x.y` name they print
  names something real;
- a scorer pickled by the version before the move (tests/data/scorer_pickles.json, see tests/data/README.md)
  loads, with the same hash and the same numbers as that version gave;
- each old module path (`bertscore.idf`, `bertscore.settings`, ...) is the module at its new place.
"""

from __future__ import annotations

import base64
import importlib
import json
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bertscore
from bertscore.moved import MOVED

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IMPORT = re.compile(r"^\s*(from bertscore[\w.]* import \(?[\w, ]+\)?|import bertscore[\w.]*)", re.M)
DOTTED = re.compile(r"`(bertscore(?:\.\w+)+)")


def shown_imports() -> list[str]:
    """Each import of the package that a page shows (one line; a parenthesised list read to its end)."""
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^\s*from (bertscore[\w.]*) import \(([^)]*)\)", text, re.M):
            names = ", ".join(n.strip() for n in match.group(2).replace("\n", " ").split(",") if n.strip())
            found.add(f"from {match.group(1)} import {names}")
        for match in IMPORT.finditer(text):
            if "(" not in match.group(1):
                found.add(match.group(1).strip().rstrip(","))
    return sorted(found)


def shown_names() -> list[str]:
    """Every dotted name of the package a page prints in backquotes (`bertscore.space.serving.RequestQueue`)."""
    return sorted({match.group(1) for page in PAGES for match in DOTTED.finditer(page.read_text(encoding="utf-8"))})


def resolve(dotted: str) -> object:
    """The module or attribute a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:end]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[end:]:
            found = getattr(found, attribute)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_pages_show_imports_and_names_to_check():
    """The readers below found what they look for (a reader that finds nothing passes vacuously)."""
    imports, names = shown_imports(), shown_names()
    assert "from bertscore.dataset_map import score_columns" in imports
    assert any(line.startswith("from bertscore.torchmetrics import") for line in imports)
    assert "bertscore.space.serving.RequestQueue" in names and len(names) > 10


@pytest.mark.parametrize("statement", shown_imports())
def test_every_import_the_docs_show_runs(statement):
    if "ray_data" in statement:
        pytest.importorskip("ray", reason="bertscore.ray_data needs ray (make test-ray)")
    exec(statement, {})  # noqa: S102 - the page's own line


@pytest.mark.parametrize("dotted", shown_names())
def test_every_dotted_name_the_docs_print_is_real(dotted):
    if dotted.startswith("bertscore.ray_data"):
        pytest.importorskip("ray", reason="bertscore.ray_data needs ray (make test-ray)")
    resolve(dotted)


@pytest.mark.parametrize("old, new", sorted(MOVED.items()))
def test_an_old_module_path_is_the_module_at_its_new_place(old, new):
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its own spec, not the alias's


def test_old_paths_work_in_a_fresh_interpreter_and_the_front_door_loads_none_of_them():
    """In a new process: `import bertscore` imports no old path (the finder is lazy), and a name
    through an old path is the same object as through the new one."""
    code = ("import sys, bertscore, bertscore.moved as m; assert not set(m.MOVED) & set(sys.modules), "
            "set(m.MOVED) & set(sys.modules); from bertscore.settings import Settings; "
            "from bertscore.scoring.settings import Settings as S; assert Settings is S; "
            "from bertscore.serving import RequestQueue; import bertscore.space.serving as s; "
            "assert RequestQueue is s.RequestQueue; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_every_old_path_is_a_module_that_no_longer_exists_there():
    """The table names moves, not live modules: an old path with a file of its own would shadow nothing
    and hide a mistake."""
    package = ROOT / "bertscore"
    for old, new in MOVED.items():
        assert not (package / (old.split(".", 1)[1].replace(".", "/") + ".py")).exists(), old
        assert (package / (new.split(".", 1)[1].replace(".", "/") + ".py")).exists() or (
            package / new.split(".", 1)[1].replace(".", "/") / "__init__.py").exists(), new


@pytest.mark.parametrize("name", ["plain", "weighted"])
def test_a_scorer_pickled_before_the_move_loads_with_its_settings_and_numbers(name):
    """The pickles name `bertscore.scorer.rebuilt_scorer` and (with token weights) `bertscore.idf`:
    fails if an old path stops resolving, or the rebuilt scorer differs (hash or numbers)."""
    expected = json.loads((DATA / "scorer_pickles.json").read_text(encoding="utf-8"))
    want = expected["scorers"][name]
    scorer = pickle.loads(base64.b64decode(want["pickle_base64"]))
    # the hash up to its library versions (another transformers or torch names itself there)
    assert scorer.hash.split("_version=")[0] == want["hash"].split("_version=")[0]
    p, r, f = scorer.score(expected["cands"], expected["refs"])
    for got, key in ((p, "P"), (r, "R"), (f, "F")):
        assert got.tolist() == pytest.approx(want[key], abs=1e-6), key
    assert isinstance(scorer, bertscore.BERTScorer)
