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


def test_room_of_reads_the_table_spelling():
    assert room_of("cli/__init__.py") == "cli" and room_of("cli/score.py") == "cli.score"
    assert room_of("bertscore/__init__.py") == PACKAGE and room_of("scorer.py") == "scorer"


if __name__ == "__main__":
    print(arrows_block(import_graph()))
