"""The `#SBATCH` lines of a launch script: what the script asks Slurm for.

sbatch reads `#SBATCH` lines up to the first command, and its command-line
options win over them; gpudeck therefore adds the profile's partition or
account only when the script does not name its own.
"""
from __future__ import annotations

import shlex

MAX_SCRIPT = 256 * 1024


def sbatch_options(script_text: str) -> list[str]:
    """Every option token of the script's leading `#SBATCH` lines, in order."""
    tokens: list[str] = []
    for number, line in enumerate(script_text[:MAX_SCRIPT].splitlines()):
        stripped = line.strip()
        if number == 0 and stripped.startswith("#!"):
            continue
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        if not stripped.startswith("#SBATCH"):
            break  # the first command ends the directives, as for sbatch
        body = stripped[len("#SBATCH"):].split(" #", 1)[0]
        try:
            tokens.extend(shlex.split(body))
        except ValueError:
            tokens.extend(body.split())
    return tokens


def asks_for(tokens: list[str], short: str | None, long: str) -> str | None:
    """The value the script gives option `-x`/`--long` (the last one wins); None if it gives none."""
    value = None
    for i, tok in enumerate(tokens):
        if tok == f"--{long}" or (short and tok == f"-{short}"):
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
        elif tok.startswith(f"--{long}="):
            value = tok.split("=", 1)[1]
        elif short and tok.startswith(f"-{short}") and len(tok) > 2 and not tok.startswith("--"):
            value = tok[2:]
    return value


def nodes_asked(tokens: list[str]) -> int | None:
    """`-N 2` / `--nodes=2` / `--nodes=2-4` -> the minimum node count asked for."""
    value = asks_for(tokens, "N", "nodes")
    if not value:
        return None
    from .fields import count
    from .hostlist import MAX_NODES

    return count(value.split("-")[0], MAX_NODES)
