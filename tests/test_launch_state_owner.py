"""Only `console/servers/launch_state.py` changes a launch's state or saves a launch record.

Checked on the source, as the layering gate checks imports: an assignment to a launch record's
state facts (`state`, `crash_class`, `exit_status`, `stopped_at`, `ready_at`, `kill_requested`,
`crash_record`) anywhere else, or a call of the store's `launches.save` / `launches.create`
anywhere else, is a second writer of a fact that has one owner (console/README.md, "A launch's
states"). Objects that carry fields of the same names but are no launch record (a triage verdict,
a stop's result, a campaign cell, a widget's own state) are named here by the variable that holds
them.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layering import ROOT, parse_source

OWNER = "console/servers/launch_state.py"
STORE = "console/store/launches.py"   # the record's own type and the store's writer
FACTS = {"state", "crash_class", "exit_status", "stopped_at", "ready_at", "kill_requested", "crash_record"}
# variables that hold something else with a field of the same name: TriageResult / StopResult
# (`result`, and `weighed`: a verdict with the driver's word added), a campaign cell (`cell`), a
# class's own field (`self`)
NOT_A_LAUNCH = {"result", "weighed", "cell", "self"}
FOLDERS = ("console", "screens", "widgets")


def _store_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names bound to the launches store module, names bound to its save/create functions)."""
    modules, functions = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            for alias in node.names:
                if alias.name == "launches" and module.split(".")[-1] == "store":
                    modules.add(alias.asname or alias.name)
                if module.endswith("store.launches") and alias.name in ("save", "create"):
                    functions.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.endswith("store.launches") and alias.asname:
                    modules.add(alias.asname)
    return modules, functions


def offences(path: Path, rel: str) -> list[str]:
    tree = parse_source(path)
    modules, functions = _store_names(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
                if (isinstance(t, ast.Attribute) and t.attr in FACTS
                        and ast.unparse(t.value) not in NOT_A_LAUNCH):
                    found.append(f"{rel}:{node.lineno}: assigns {ast.unparse(t)}")
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Attribute) and func.attr in ("save", "create")
                    and isinstance(func.value, ast.Name) and func.value.id in modules):
                found.append(f"{rel}:{node.lineno}: calls {ast.unparse(func)}")
            elif isinstance(func, ast.Name) and func.id in functions:
                found.append(f"{rel}:{node.lineno}: calls the store's {func.id}")
            elif (isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant) and node.args[1].value in FACTS):
                found.append(f"{rel}:{node.lineno}: setattr {node.args[1].value}")
    return found


def all_offences(root: Path = ROOT) -> list[str]:
    out = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel not in (OWNER, STORE):
                out += offences(path, rel)
    return out


def test_only_the_owner_sets_a_launchs_state_or_saves_it():
    assert all_offences() == []


def test_the_gate_names_a_second_writer(tmp_path):
    """The gate is not blind: a module that sets a record's state, or saves one, is named."""
    bad = tmp_path / "console" / "servers" / "rogue.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from ..store import launches\n"
                   "from ..store.launches import save as keep\n"
                   "def f(record, monitor):\n"
                   "    record.state = 'stopped'\n"
                   "    monitor.record.crash_class, x = 'oom', 1\n"
                   "    setattr(record, 'exit_status', 1)\n"
                   "    launches.save('p', record)\n"
                   "    keep('p', record)\n"
                   "    result.state = 'crashed'\n")
    found = all_offences(tmp_path)
    assert found == ["console/servers/rogue.py:4: assigns record.state",
                     "console/servers/rogue.py:5: assigns monitor.record.crash_class",
                     "console/servers/rogue.py:6: setattr exit_status",
                     "console/servers/rogue.py:7: calls launches.save",
                     "console/servers/rogue.py:8: calls the store's keep"]
