"""Which profile, if any, a CLI command must settle before it runs: file reads only, no host, no asyncio.

Settling (console/runtime/settle.py) needs the host and the whole runtime
(about 100 ms of imports). Nearly every call finds nothing to settle, so this
check runs first and the runtime is imported only when a launch of the
command's profile is live or crashed without a crash record.
"""
from __future__ import annotations

PROFILE_DESTS = ("server_profile", "tasks_profile", "bench_profile", "gpus_profile", "report_profile", "profile")
# None: the TUI's runtimes settle themselves; `profiles` edits the list of hosts and must not wait on one
NOT_ABOUT_A_PROFILE = {None, "sim", "demo", "triage", "roofline", "profiles"}


def has_live_launches(profile: str) -> bool:
    """Whether a call to the host is worth making (no launch record is live: nothing to settle)."""
    from ..store import launches

    return any(r.live or (r.state == "crashed" and not r.crash_record) for r in launches.load_all(profile))


def profile_to_settle(args: object) -> str | None:
    """The profile whose finished launches need their crash record before `args` runs, else None."""
    from profiles import store

    if getattr(args, "command", None) in NOT_ABOUT_A_PROFILE or getattr(args, "offline", False):
        return None  # --offline: the operator asked for no contact with the host
    if getattr(args, "settles_itself", False):
        return None  # the command's own look settles them (`server status`): one round trip, not two
    name = next((getattr(args, d) for d in PROFILE_DESTS if getattr(args, d, None)), None) or store.last_used()
    try:
        if not store.exists(name) and name != "local":
            return None
        return name if has_live_launches(name) else None
    except Exception:  # noqa: BLE001 - a bad profile is the command's own error to report
        return None
