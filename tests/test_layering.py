"""Who may import whom, checked on the source (console/README.md, "Who may import whom"; CONTRIBUTING.md).

console/  the engine: never textual, screens or widgets, except the entry points that start the app
profiles/ what is saved: nothing from console, screens or widgets
widgets/  draw plain data: never screens
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def parse_source(path: Path) -> ast.Module:
    """A module's tree, built with the collector held off (Python 3.11 fails an AST build when a
    finaliser left by an earlier test runs in the middle of it)."""
    from console.gc_pause import collector_paused

    with collector_paused():
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
# the modules that build and start the Textual app
ENTRY_POINTS = {"console/commands/tui.py", "console/commands/demo.py"}


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module a file imports (absolute names; relative ones resolved to their package)."""
    tree = parse_source(path)
    package = path.relative_to(root).with_suffix("").parts[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            out.append((node.lineno, name))
    return out


def violations(folder: str, forbidden: tuple[str, ...], allowed: set[str] = frozenset(),
               root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / folder).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in allowed:
            continue
        for line, name in imports(path, root):
            top = name.split(".")[0]
            if top in forbidden:
                found.append((rel, line, f"{rel}:{line} imports {name}"))
    return [text for _, _, text in sorted(found)]


def test_the_engine_imports_no_textual_screens_or_widgets():
    assert violations("console", ("textual", "screens", "widgets"), ENTRY_POINTS) == []


def test_profiles_import_nothing_of_the_console_screens_or_widgets():
    assert violations("profiles", ("console", "screens", "widgets")) == []


def test_widgets_import_no_screens():
    assert violations("widgets", ("screens",)) == []


def test_the_scan_sees_imports_inside_functions_and_relative_ones(tmp_path):
    # the check itself: a lazy import inside a function and a relative import are both found
    (tmp_path / "console" / "sub").mkdir(parents=True)
    probe = tmp_path / "console" / "sub" / "probe.py"
    probe.write_text("def f():\n    from textual.app import App\nfrom ...screens import app\nfrom .. import fmt\n")
    found = violations("console", ("textual", "screens"), root=tmp_path)
    assert found == ["console/sub/probe.py:2 imports textual.app", "console/sub/probe.py:3 imports screens"]


def test_every_module_ships_in_a_package():
    """A folder without `__init__.py` is left out of a wheel by the pyproject's package finder,
    though an editable install still imports it: every module must sit in a found package."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    found = set(find_packages(where=str(ROOT), include=include))
    missing = sorted({str(p.parent.relative_to(ROOT)) for top in ("console", "screens", "widgets", "profiles")
                      for p in (ROOT / top).rglob("*.py")
                      if ".".join(p.parent.relative_to(ROOT).parts) not in found})
    assert not missing, f"not in any package (add an __init__.py): {missing}"


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Which of the project's modules each module imports (`from pkg import mod` counts as mod)."""
    files = {}
    for top in ("console", "screens", "widgets", "profiles"):
        for path in (root / top).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in files.items():
        tree = parse_source(path)
        package = path.relative_to(root).with_suffix("").parts[:-1]
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name
                    while target and target not in files:
                        target = target.rpartition(".")[0]
                    if target:
                        found.add(target)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                for alias in node.names:
                    if f"{module}.{alias.name}" in files:
                        found.add(f"{module}.{alias.name}")
                    elif module in files:
                        found.add(module)
        graph[name] = found - {name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that reach each other through imports (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(cycles)


def test_no_module_imports_itself_through_others():
    """A cycle (even one only for type checking) means two modules share a type or a decision that
    belongs below both of them: move it down, or pass a callable."""
    assert import_cycles(module_graph()) == []


def test_the_cycle_check_finds_a_cycle_through_a_package_import(tmp_path):
    pkg = tmp_path / "console" / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "console" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from console.pkg.a import A\n")
    (pkg / "c.py").write_text("from .a import x\n")
    assert import_cycles(module_graph(tmp_path)) == [["console.pkg.a", "console.pkg.b"]]


def private_borrowings(folder: str = "console/commands", root: Path = ROOT) -> list[str]:
    """`from .other import _helper` between modules of one folder: a helper two modules need is a
    public piece of a shared module (commands/kit.py), or a decision that belongs in the engine."""
    found = []
    for path in sorted((root / folder).glob("*.py")):
        tree = parse_source(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                found += [f"{path.name}:{node.lineno} takes {node.module}.{alias.name}"
                          for alias in node.names if alias.name.startswith("_")]
    return found


def test_no_command_borrows_another_commands_private_helper():
    assert private_borrowings() == []


def test_screens_and_widgets_never_call_the_cli():
    """What a command decides, a screen gets from the engine: the console never imports a command."""
    found = [f"{path.relative_to(ROOT)}:{line} imports {name}"
             for top in ("screens", "widgets") for path in sorted((ROOT / top).rglob("*.py"))
             for line, name in imports(path) if name.startswith("console.commands")]
    assert found == []


def test_the_borrowing_check_finds_a_private_import(tmp_path):
    (tmp_path / "console" / "commands").mkdir(parents=True)
    (tmp_path / "console" / "commands" / "a.py").write_text("def f():\n    from .b import _helper, public\n")
    assert private_borrowings(root=tmp_path) == ["a.py:2 takes b._helper"]
