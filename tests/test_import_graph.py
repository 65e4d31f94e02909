"""The package's imports point one way: no circle, lazy imports (inside functions) included.

Read with `ast`, not by importing: an import inside a function is an edge, and so is the
package `__init__` that importing a submodule runs first (`from .a.b import x` runs `a`'s
`__init__`), except the importer's own ancestors, which are running already. Imports under
`if TYPE_CHECKING:` never run and are not edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "bertscore"
# The doors above the package: they may import any room, and no room may import them.
DOORS = {"bertscore_metric": ROOT / "bertscore_metric.py", "app": ROOT / "app.py"}


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    return files


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run (at module level or in a function), skipping TYPE_CHECKING blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that importing `name` (at `path`) can run, lazy imports included."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
        else:
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from pkg import mod` imports the module pkg.mod; `from mod import name` imports mod.
            bases = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for base in bases:
            parts = base.split(".")
            # The module itself and every package above it that is not running already.
            for end in range(len(parts), 0, -1):
                candidate = ".".join(parts[:end])
                if candidate in modules and candidate != name and not (name + ".").startswith(candidate + "."):
                    targets.add(candidate)
    return targets


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    graph = {name: imported_modules(name, path, set(files)) for name, path in files.items()}
    graph.pop(PACKAGE, None)  # the package's front door re-exports rooms; no room imports `bertscore` itself
    return {name: {t for t in targets if t != PACKAGE} for name, targets in graph.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_no_room_imports_the_package_front_door_or_a_door():
    """`from bertscore import x` inside the package runs bertscore/__init__ (which imports the
    scorer): a room doing it closes a circle through the front door."""
    files = module_files()
    for name, path in files.items():
        if name == PACKAGE:
            continue
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(n == PACKAGE for n in names if isinstance(node, ast.Import)), f"{name} imports {PACKAGE}"
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                assert node.module != PACKAGE, f"{name} imports from the package front door: {ast.unparse(node)}"
            assert not set(names) & set(DOORS), f"{name} imports a door: {ast.unparse(node)}"


def test_the_core_imports_baseline_tables_not_the_user_facing_baselines_module():
    """`bertscore.baselines` re-exports `compute_baseline`, which needs a scorer: a core room
    importing it closes scorer -> baselines -> calibrate -> scorer."""
    graph = import_graph()
    core = {"bertscore.scorer", "bertscore.scoring.settings", "bertscore.scoring.pipeline", "bertscore.explain", "bertscore.pool"}
    for name in core:
        assert "bertscore.baselines" not in graph[name], name
        assert "bertscore.scoring.baseline_tables" in graph[name] or name in {"bertscore.scorer", "bertscore.explain"}


@pytest.mark.parametrize(
    "graph, cycle",
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, ["a", "b", "c", "a"]),
    ],
)
def test_find_cycle_finds_what_a_plain_walk_finds(graph, cycle):
    assert find_cycle(graph) == cycle


def test_the_walk_sees_lazy_imports_and_the_package_inits_they_run(tmp_path):
    """Which bug makes this fail: a walk of module-level imports only (the old lazy circles), or
    one that forgets that `from .sub.mod import x` runs `sub/__init__`."""
    src = tmp_path / "pkg"
    (src / "sub").mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "sub" / "__init__.py").write_text("from .mod import x\n")
    (src / "sub" / "mod.py").write_text("def x():\n    from ..top import y\n")
    (src / "top.py").write_text("from .sub.mod import x\n")
    (src / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .top import y\n")
    modules = {"pkg", "pkg.sub", "pkg.sub.mod", "pkg.top", "pkg.typed"}
    assert imported_modules("pkg.sub.mod", src / "sub" / "mod.py", modules) == {"pkg.top"}
    assert imported_modules("pkg.top", src / "top.py", modules) == {"pkg.sub", "pkg.sub.mod"}
    assert imported_modules("pkg.sub", src / "sub" / "__init__.py", modules) == {"pkg.sub.mod"}
    assert imported_modules("pkg.typed", src / "typed.py", modules) == set()
    graph = {name: imported_modules(name, path, modules) for name, path in [
        ("pkg.sub", src / "sub" / "__init__.py"), ("pkg.sub.mod", src / "sub" / "mod.py"), ("pkg.top", src / "top.py"),
    ]}
    assert find_cycle(graph) == ["pkg.sub", "pkg.sub.mod", "pkg.top", "pkg.sub"]
