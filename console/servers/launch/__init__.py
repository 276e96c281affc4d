"""Launch configs: what a launch script asks the server to do, and what the server says it does.

- `table`      the one table of flags (display order, each server's spelling), diff and compare
- `script`     a launch script's text, parsed without running it
- `effective`  the same table read from a running server's startup log
"""
from __future__ import annotations

from .effective import EffectiveArgs, EffectiveReader, effective_from_log
from .script import (LaunchConfigError, logical_lines, parse_script, promise_warnings, unresolved_names,
                     unresolved_warnings)
from .table import FLAG_KEYS, KEYS, Check, LaunchConfig, Row, changed, compare, diff, show

__all__ = ["FLAG_KEYS", "KEYS", "Check", "EffectiveArgs", "EffectiveReader", "LaunchConfig", "LaunchConfigError",
           "Row", "changed", "compare", "diff", "effective_from_log", "logical_lines", "parse_script",
           "promise_warnings", "show", "unresolved_names", "unresolved_warnings"]
