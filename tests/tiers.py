"""Test tiers: which real peer a test needs, read from what the test uses, not from a list of names.

A peer is a real program a test talks to (`sshd`, `llama`, `vllm`, `sglang`, `slurm`,
`prometheus`, `tmux`). Each place that locates one is marked with `@reaches(peer)`. A test gets
the marker `peer` and the peer's own marker when its code, or the code of a fixture it asks for
(the whole closure, so `ssh_profile` counts as `sshd`), names something marked `@reaches`,
directly or through the helpers it calls: read from the code objects' names, helpers of other
test modules included.

That reading cannot see a call made through a value (a callback, `getattr`), so every marked
place also checks, when it runs, that the running test carries the marker: a test that reaches
a peer unseen fails and says so, which keeps the fast tier honest as tests are added.
"""
from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

PEERS = ("sshd", "llama", "vllm", "sglang", "slurm", "prometheus", "tmux")

_running: set[str] | None = None  # the running test's peers; None outside a test
_running_id = ""

F = TypeVar("F", bound=Callable[..., Any])


def reaches(peer: str) -> Callable[[F], F]:
    """Mark a function or class that locates or starts `peer`."""
    if peer not in PEERS:
        raise ValueError(f"unknown peer {peer!r}")

    def mark(thing: F) -> F:
        if isinstance(thing, type):
            thing.__peer__ = peer  # type: ignore[attr-defined]
            return thing

        @functools.wraps(thing)
        def checked(*args: Any, **kwargs: Any) -> Any:
            need(peer)
            return thing(*args, **kwargs)

        checked.__peer__ = peer  # type: ignore[attr-defined]
        return checked  # type: ignore[return-value]
    return mark


def need(peer: str) -> None:
    """Fail the running test if it reaches `peer` without carrying its marker."""
    if _running is not None and peer not in _running:
        pytest.fail(f"{_running_id} reaches a real {peer} that tests/tiers.py did not read from its "
                    f"code (a call through a value?): mark it @pytest.mark.{peer}", pytrace=False)


def running(item: pytest.Item | None) -> None:
    """Tell the checks which test is running (None: none)."""
    global _running, _running_id
    if item is None:
        _running, _running_id = None, ""
    else:
        _running = {m.name for m in item.iter_markers() if m.name in PEERS}
        _running_id = item.nodeid


def peers_of(item: pytest.Item) -> set[str]:
    """The peers `item` needs: from the code of the test and of every fixture it asks for."""
    seen: dict[int, set[str]] = {}
    found: set[str] = set()

    def fixtures(name: str, asked: frozenset[str] = frozenset()) -> list[Any]:
        """The functions of the fixture `name` as `item` would get it (`request.getfixturevalue`),
        and of the fixtures it asks for in turn."""
        manager = getattr(getattr(item, "session", None), "_fixturemanager", None)
        try:
            definitions = list(manager.getfixturedefs(name, item) or ()) if manager else []
        except Exception:  # not a fixture's name
            return []
        found = []
        for definition in definitions:
            found.append(definition.func)
            for argname in definition.argnames:
                if argname not in asked and argname != name:
                    found += fixtures(argname, asked | {name})
        return found

    function = getattr(item, "function", None)
    if function is not None:
        found |= _reach(function, seen, fixtures)
    info = getattr(item, "_fixtureinfo", None)
    for definitions in getattr(info, "name2fixturedefs", {}).values():
        for definition in definitions:
            found |= _reach(definition.func, seen, fixtures)
    return found


def _reach(thing: Any, seen: dict[int, set[str]],
           fixtures: Callable[[str], list[Any]] = lambda name: []) -> set[str]:
    key = id(thing)
    if key in seen:
        return seen[key]
    seen[key] = set()  # a cycle adds nothing
    found: set[str] = set()
    peer = getattr(thing, "__peer__", None)
    if isinstance(peer, str):
        found.add(peer)
    elif isinstance(thing, type):
        if _ours(thing):
            for member in vars(thing).values():
                found |= _reach(_unwrap(member), seen, fixtures)
    elif isinstance(thing, (types.FunctionType, types.MethodType)):
        function = thing.__func__ if isinstance(thing, types.MethodType) else thing
        if _ours(function):
            names = _names(function.__code__)
            for name in names:
                # a name a function imports inside itself is no global: its module is in sys.modules
                value = function.__globals__.get(name, sys.modules.get(name))
                if isinstance(value, types.ModuleType):
                    if _ours(value):  # `realparts.start_llama_server(...)`: the module's names it uses
                        found |= set().union(*(_reach(getattr(value, n), seen, fixtures) for n in names
                                               if hasattr(value, n)))
                elif value is not None:
                    found |= _reach(value, seen, fixtures)
            if "getfixturevalue" in names:  # a fixture asked for by name: read the fixture's code too
                for const in _strings(function.__code__):
                    for fixture in fixtures(const):
                        found |= _reach(fixture, seen, fixtures)
            for cell in function.__closure__ or ():
                try:
                    found |= _reach(cell.cell_contents, seen, fixtures)
                except ValueError:  # an empty cell
                    pass
    seen[key] = found
    return found


def _ours(thing: Any) -> bool:
    """Only the tests' own code is read: the engine and libraries start no test peer."""
    module = thing.__name__ if isinstance(thing, types.ModuleType) else getattr(thing, "__module__", None)
    return isinstance(module, str) and (module == "tests" or module.startswith("tests.")
                                        or module == "conftest")


def _unwrap(member: Any) -> Any:
    if isinstance(member, (staticmethod, classmethod)):
        return member.__func__
    if isinstance(member, property):
        return member.fget
    return member


def _strings(code: types.CodeType) -> set[str]:
    found = {c for c in code.co_consts if isinstance(c, str) and c.isidentifier()}
    for const in code.co_consts:
        if inspect.iscode(const):
            found |= _strings(const)
    return found


def _names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names(const)
    return names
