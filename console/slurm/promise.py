"""What a job script's `#SBATCH` lines promise against what its server is told.

TP16 over nodes of 8 GPUs is `-N 2`: a script asking for one node (or for
fewer GPUs per node than the parallelism needs) cannot start, or starts
something else; a server told `--nnodes 2` inside a one-node job waits
forever for a peer. Said once, before the launch, as a config warning.
"""
from __future__ import annotations

import re

from .directives import asks_for, nodes_asked, sbatch_options
from .fields import MAX_GPUS_PER_NODE, count


def gpus_per_node(tokens: list[str], nodes: int) -> int | None:
    """GPUs each node gets: --gpus-per-node, --gres=gpu[:type]:N, or --gpus/-G spread over the nodes."""
    value = asks_for(tokens, None, "gpus-per-node")
    if value:
        return count(value.split(":")[-1], MAX_GPUS_PER_NODE)
    gres = asks_for(tokens, None, "gres")
    if gres:
        for part in gres.split(","):
            bits = re.sub(r"\(.*?\)", "", part).split(":")
            if bits[0] == "gpu":
                numbered = len(bits) > 1 and re.fullmatch(r"[0-9]+", bits[-1])
                return count(bits[-1], MAX_GPUS_PER_NODE) if numbered else 1
    total = asks_for(tokens, "G", "gpus")
    if total:
        gpus = count(total.split(":")[-1], MAX_GPUS_PER_NODE * nodes)
        return -(-gpus // nodes) if gpus is not None else None
    return None


def _int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return count(value, 1 << 20) if isinstance(value, str) else None


def node_warnings(script_text: str, flags: dict, raw_flags: dict) -> list[str]:
    """Warnings where the parallelism or `--nnodes` and the job's node count disagree; [] without #SBATCH."""
    tokens = sbatch_options(script_text)
    if not tokens:
        return []
    nodes = nodes_asked(tokens) or 1
    warnings = []
    tp, pp = _int(flags.get("tp")) or 1, _int(flags.get("pp")) or 1
    per_node = gpus_per_node(tokens, nodes)
    need = tp * pp
    if per_node and need > nodes * per_node:
        what = f"TP{tp}" + (f" x PP{pp}" if pp > 1 else "")
        fits = -(-need // per_node)
        warnings.append(f"{what} needs {need} GPUs: with {per_node} GPU(s) per node that is -N {fits}; "
                        f"the #SBATCH lines ask for -N {nodes}")
    told = next((_int(raw_flags.get(k)) for k in ("nnodes", "num-nodes", "num_nodes") if k in raw_flags), None)
    if told is not None and told != nodes:
        warnings.append(f"the server is told --nnodes {told}; the #SBATCH lines ask for -N {nodes}")
    return warnings
