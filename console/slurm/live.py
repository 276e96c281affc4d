"""Live GPU readings (DCGM through Prometheus) joined to a partition's nodes by host name.

Slurm says what is allocated; DCGM says what the GPUs are doing. A node's
row gets the readings of the DCGM host whose name is the node's (or its
NodeAddr's) short name; a node with no such host keeps `live = None`, shown
as N/A, never as zero.
"""
from __future__ import annotations

from .nodes import Partition


def _short(name) -> str:
    return str(name).split(".")[0].lower() if isinstance(name, str) and name else ""


def _known(values: list) -> list[float]:
    return [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def summary(snap) -> dict:
    """One node's GPUs as the partition row shows them: mean utilisation, memory used/total, XIDs."""
    util = _known([g.util_gpu_pct for g in snap.gpus])
    used = _known([g.memory_used_mib for g in snap.gpus])
    total = _known([g.memory_total_mib for g in snap.gpus])
    xids = sorted({int(g.xid) for g in snap.gpus if isinstance(g.xid, (int, float)) and g.xid})
    n = len(snap.gpus)
    return {"gpus": n, "util_pct": round(sum(util) / len(util), 1) if util and len(util) == n else None,
            "memory_used_mib": sum(used) if used and len(used) == n else None,
            "memory_total_mib": sum(total) if total and len(total) == n else None,
            "xids": xids, "stale": bool(snap.sample_stale) or snap.state != "ok", "host": snap.host}


def join(part: Partition, hosts: list) -> list[str]:
    """Give each node the readings of its DCGM host; returns the nodes no host matched."""
    by_name = {_short(h.host): h for h in hosts if _short(h.host)}
    unmatched = []
    for node in part.nodes:
        snap = by_name.get(_short(node.name)) or by_name.get(_short(node.addr))
        node.live = summary(snap) if snap is not None else None
        if snap is None:
            unmatched.append(node.name)
    return unmatched

