"""Host runtimes: everything that outlives a screen, one per profile, owned by the Fleet (`fleet.py`).

    from console.runtime import HostRuntime
    runtime = HostRuntime(session); runtime.subscribe(print); await runtime.start()
"""
from . import events
from .host_runtime import HostRuntime
from .settle import settle_launches

__all__ = ["HostRuntime", "events", "settle_launches"]
