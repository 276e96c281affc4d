"""`profiles set NAME section.key=VALUE…`: change the keys named and keep the rest of the file.

`profiles add --force` builds a profile from its flags alone, so using it to add
a model config drops the `[server]` section (url, scripts and log dirs) the
operator wrote before. Here each key is checked against what a profile holds,
each value against its key's type, the whole result against the same rules a
profile file gets, and only then is the file replaced (atomically). An empty
value (`model.quant=`) removes the key. Whether a path exists is the caller's
to check: some are read on the host, some here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import paths
from .atomic import StateFileError, read_toml, write_toml
from .profile import _SCHEMA, _TOP, Profile, ProfileError, profile_from_dict

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def keys() -> list[str]:
    """Every key a profile holds, as `profiles set` names them."""
    return [*_TOP, *(f"{section}.{key}" for section, fields in _SCHEMA.items() for key in fields)]


def parse(assignment: str) -> tuple[str, Any]:
    """`section.key=VALUE` as (key, typed value); None as the value removes the key. ProfileError: one line."""
    key, eq, text = assignment.partition("=")
    key = key.strip()
    if not eq:
        raise ProfileError(f"{assignment!r}: expected KEY=VALUE, e.g. model.config=/models/x/config.json")
    section, dot, field = key.partition(".")
    kind = _SCHEMA.get(section, {}).get(field) if dot else _TOP.get(key)
    if kind is None:
        raise ProfileError(f"{key!r} is not a profile key; one of: {', '.join(keys())}")
    if text == "":
        return key, None
    if kind == "str":
        return key, text
    if kind == "list[str]":
        return key, [item.strip() for item in text.split(",") if item.strip()]
    if kind == "bool":
        if text.lower() in _TRUE + _FALSE:
            return key, text.lower() in _TRUE
        raise ProfileError(f"{key}: expected true or false, got {text!r}")
    try:
        return key, int(text)
    except ValueError:
        if kind == "int":
            raise ProfileError(f"{key}: expected an integer, got {text!r}") from None
    try:
        return key, float(text)
    except ValueError:
        raise ProfileError(f"{key}: expected a number, got {text!r}") from None


def apply(name: str, changes: list[tuple[str, Any]]) -> tuple[Path, Profile]:
    """Write `changes` into the profile's file, everything else in it kept; the file and the profile."""
    path = paths.profile_file(name)
    if not path.exists():
        raise ProfileError(f"no profile named {name!r} (see `gpudeck profiles list`)")
    try:
        doc = read_toml(path)
    except StateFileError as exc:
        raise ProfileError(str(exc)) from None
    for key, value in changes:
        section, dot, field = key.partition(".")
        table = doc.setdefault(section, {}) if dot else doc
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: [{section}] is not a table; fix the file first")
        if value is None:
            table.pop(field if dot else key, None)
            if dot and not table:
                doc.pop(section)
        else:
            table[field if dot else key] = value
    profile = profile_from_dict(name, doc, f"{path} (as set)")
    write_toml(path, doc)
    return path, profile
