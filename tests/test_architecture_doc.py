"""docs/architecture.md matches the code: every room named once, and its arrows are the real imports.

Run as a script to print the arrows block from the code (to paste after a change):
    python tests/test_architecture_doc.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_import_graph import PACKAGE, ROOT, import_graph, module_files  # noqa: E402

DOC = ROOT / "docs" / "architecture.md"
ARROWS_MARKER = "<!-- arrows:"
TREE_MARKER = "<!-- tree:"
MAX_TOP_LEVEL_MODULES = 35  # the top level holds what users import; the rest lives in folders


def short(module: str) -> str:
    return module[len(PACKAGE) + 1:] if module.startswith(PACKAGE + ".") else module


def room_of(path: str) -> str:
    """`cli/score.py` -> `cli.score`; `bertscore/__init__.py` -> `bertscore`; `cli/__init__.py` -> `cli`."""
    path = path.removeprefix(f"{PACKAGE}/")
    if path == "__init__.py":
        return PACKAGE
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def documented_rooms(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return [room_of(name) for row in rows for name in re.findall(r"`([^`]+\.py)`", row.split("|")[1])]


def arrows_block(graph: dict[str, set[str]]) -> str:
    lines = [f"{short(name)} -> {', '.join(sorted(short(t) for t in targets)) or '(nothing of ours)'}"
             for name, targets in sorted(graph.items(), key=lambda item: short(item[0]))]
    return "```text\n" + "\n".join(lines) + "\n```"


def documented_arrows(text: str) -> str:
    after = text[text.index(ARROWS_MARKER):]
    match = re.search(r"```text\n.*?\n```", after, re.S)
    assert match, f"{DOC}: no ```text block after the arrows marker"
    return match.group(0)


def test_every_room_is_named_once_and_no_other():
    rooms = documented_rooms(DOC.read_text(encoding="utf-8"))
    actual = {short(name) if name != PACKAGE else PACKAGE for name in module_files()}
    assert len(rooms) == len(set(rooms)), f"named twice: {sorted({r for r in rooms if rooms.count(r) > 1})}"
    assert set(rooms) == actual, (
        f"missing from {DOC.name}: {sorted(actual - set(rooms))}; not in the code: {sorted(set(rooms) - actual)}"
    )


def test_the_arrows_are_the_imports():
    graph = import_graph()
    assert documented_arrows(DOC.read_text(encoding="utf-8")) == arrows_block(graph), (
        f"{DOC.name}'s arrows differ from the code: run `python tests/test_architecture_doc.py` and paste its block"
    )


def documented_tree(text: str) -> dict[str, str]:
    """The tree block's entries below `bertscore/`: name (`scorer.py`, `cli/`) -> its line's text."""
    after = text[text.index(TREE_MARKER):]
    match = re.search(r"```text\n(.*?)\n```", after, re.S)
    assert match, f"{DOC}: no ```text block after the tree marker"
    block = match.group(1).split("\nbertscore/\n", 1)[1]
    entries = [line.strip().split(None, 1) for line in block.splitlines() if not line.strip().startswith("#")]
    return {entry[0]: entry[1] if len(entry) > 1 else "" for entry in entries}


def first_docstring_line(path: Path) -> str:
    import ast

    return (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").splitlines()[0]


def test_the_tree_is_the_top_level_of_the_package():
    """Every top-level module and folder once, no other; a folder's line is its `__init__`'s first line
    (which says in one line what the folder holds). Fails when a room moves, a folder appears or
    its `__init__` changes what it says it holds."""
    package = ROOT / PACKAGE
    actual = {path.name for path in package.glob("*.py")}
    folders = {path.name + "/": path / "__init__.py" for path in package.iterdir() if (path / "__init__.py").exists()}
    tree = documented_tree(DOC.read_text(encoding="utf-8"))
    assert set(tree) == actual | set(folders), (
        f"missing from the tree: {sorted((actual | set(folders)) - set(tree))}; gone: {sorted(set(tree) - actual - set(folders))}"
    )
    for folder, init in folders.items():
        line = first_docstring_line(init)
        assert line and tree[folder] == line, f"{folder}: its __init__ says {line!r}, the tree {tree[folder]!r}"


def test_the_top_level_holds_at_most_35_modules():
    """What users import stays at the top; what serves one door or one layer goes in a folder."""
    top = sorted(path.name for path in (ROOT / PACKAGE).glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_room_of_reads_the_table_spelling():
    assert room_of("cli/__init__.py") == "cli" and room_of("cli/score.py") == "cli.score"
    assert room_of("bertscore/__init__.py") == PACKAGE and room_of("scorer.py") == "scorer"


if __name__ == "__main__":
    print(arrows_block(import_graph()))
