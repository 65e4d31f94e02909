"""The house rules that a test can hold (/work/shared/ARCHITECTURE.md: classes under 250 lines)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bertscore"
MAX_CLASS_LINES = 250


def test_every_class_is_at_most_250_lines():
    """A class that grows past this is doing several jobs: split it into rooms (issue 25 moved
    the Pipeline's matching step out when it reached 258)."""
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                too_long.append(f"{path.relative_to(PACKAGE.parent)}: {node.name} ({node.end_lineno - node.lineno + 1})")
    assert too_long == []
