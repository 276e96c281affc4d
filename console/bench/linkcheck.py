"""A lost SSH link is not a dead server: the verdict of a tunnelled sweep level after a drop.

When a sweep reaches its server through an SSH tunnel, a dropped connection
looks from the client exactly like a crash: streams cut off mid-response,
then "connection refused" at the tunnel's local port. So after a level that
saw the link drop, or failures that look like a death, `LinkCheck.settle`

1. waits, at most `wait_s`, for the SSH link to come back;
2. asks the host itself whether the launched server's process is alive
   (the launch record's process group, over SSH);
3. asks the endpoint: `/health` through the sweep's own URL (the tunnel
   reopens on the same local port) and through a forward of its own.

Then the level is one of: a confirmed death (the process is gone: `failed`,
`server died`), `interrupted (link lost)` with the server alive (the level is
run again once, the interrupted attempt kept beside it), or `interrupted
(link lost)` with the link not back in time (the sweep stops there, saying so).
"""
from __future__ import annotations

import asyncio
import contextlib
import re
import time
from typing import Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from console.fmt import clock
from console.hosts import CONNECTED, DOWN, Host, HostError

LINK_WAIT_S = 60.0  # how long a sweep waits for a lost link before giving the level up
LINK_ERRORS = ("connection refused", "server disconnected", "stream cut off mid-response", "connection reset",
               "cannot connect")  # each the start of a request's error


class _LinkTrouble(Exception):
    """The link failed while the server was being asked about: ask again once it is back."""


def _clock(t: float | None) -> str | None:
    return clock(t) if t is not None else None


class LinkCheck:
    """Watches one host's link during a sweep and judges levels that were hit by a drop.

    `host` is the sweep's SSH host: the one that owns the tunnel when the
    sweep runs in-process, or a connection of the sweep's own when the
    tunnel belongs to another process (it sees the same outages).
    """

    def __init__(self, host: Host, url: str, profile: str, server_port: int | None = None,
                 wait_s: float = LINK_WAIT_S, owns_host: bool = False):
        self.host = host
        self.url = url.rstrip("/")
        self.profile = profile
        self.server_port = server_port
        self.wait_s = wait_s
        self.owns_host = owns_host
        self.drops: list[float] = []  # wall times the link went down
        self._window_start = time.time()
        self._unsubscribe = host.on_status(self._on_status)

    def _on_status(self, status) -> None:
        if status.state == DOWN and (not self.drops or self.drops[-1] != status.down_since):
            self.drops.append(status.down_since or time.time())

    async def start(self) -> None:
        """Open the link now, so a drop during the first level is seen when it happens."""
        with contextlib.suppress(HostError):
            await self.host.connect()
        self._window_start = time.time()

    async def close(self) -> None:
        self._unsubscribe()
        if self.owns_host:
            await self.host.close()

    # ------------------------------------------------------------ the verdict

    async def settle(self, level: dict, launch: dict | None,
                     rerun: Callable[[], Awaitable[dict]]) -> dict:
        """The level as it should be recorded; `rerun` runs it again when the link came back."""
        verdict = await self.review(level, launch)
        if verdict is None:
            return level
        level = self._apply(level, verdict)
        if verdict.get("resumable"):
            attempt = {k: level.get(k) for k in ("status", "completed", "failed", "errors", "link_lost")}
            again = await rerun()
            again = await self.settle_once(again, launch)
            again["interrupted_attempt"] = attempt
            return again
        if level["status"] == "interrupted":
            level["halt"] = "link lost"
        return level

    async def settle_once(self, level: dict, launch: dict | None) -> dict:
        """The verdict of a rerun: no second rerun; a second loss stops the sweep."""
        verdict = await self.review(level, launch)
        if verdict is None:
            return level
        level = self._apply(level, verdict)
        if level["status"] == "interrupted":
            level["halt"] = "link lost again"
        return level

    async def review(self, level: dict, launch: dict | None) -> dict | None:
        """None when the link played no part; else what happened to the link and the server."""
        window, self._window_start = self._window_start, time.time()
        errors = level.get("error_counts") or {e: 1 for e in level.get("errors") or []}
        looks_dead = bool(level.get("server_died")) or any(str(e).startswith(LINK_ERRORS) for e in errors)
        if not self._drops_since(window) and not looks_dead:
            return None
        started = time.monotonic()
        deadline = started + self.wait_s
        back, alive, exit_status, health = await self._probe_server(launch, deadline)
        drops = self._drops_since(window)  # our own connection may have dropped while we asked
        out: dict = {"at": _clock(drops[0]) if drops else None, "dropped": bool(drops),
                     "wait_limit_s": self.wait_s, "back_at": _clock(time.time()) if back else None,
                     "pid": (launch or {}).get("pid"), "server": "unknown", "health": health,
                     "tunnel_health": None}
        if not back:
            out["waited_s"] = round(time.monotonic() - started, 1)
            out["message"] = (f"SSH link to {self.host.name} lost{' at ' + out['at'] if out['at'] else ''}; "
                              f"not back within {self.wait_s:g} s; server state unknown")
            return {"kind": "link-lost", "resumable": False, "link": out}
        if alive is None and health is None and await _health(self.url) == 200:
            health = out["health"] = 200  # no answer on our own forward, but the sweep's tunnel has one
        if alive is False or (alive is None and health is None and not drops):
            out["server"] = "exited" if alive is False else "not answering"
            out["exit_status"] = exit_status
            out["waited_s"] = round(time.monotonic() - started, 1)
            return {"kind": "server-died", "resumable": False, "link": out}
        out["server"] = "alive" if alive else ("answering" if out["health"] == 200 else "unknown")
        out["tunnel_health"] = await self._tunnel_health(deadline)
        out["waited_s"] = round(time.monotonic() - started, 1)
        if out["tunnel_health"] == 200 and (drops or out["health"] == 200 or alive):
            out["message"] = self._message(out, "back at " + out["back_at"])
            return {"kind": "link-lost", "resumable": True, "link": out}
        if drops or out["health"] == 200:
            out["message"] = self._message(out, f"the tunnel did not answer within {self.wait_s:g} s")
            return {"kind": "link-lost", "resumable": False, "link": out}
        return None  # no drop, the server is not answering even from its own host: the usual verdict stands

    def _message(self, out: dict, how: str) -> str:
        lost = f"SSH link to {self.host.name} lost" + (f" at {out['at']}" if out["at"] else "")
        server = {"alive": f"server pid {out['pid']} alive", "answering": "server answering"}.get(
            out["server"], "server state unknown")
        health = f", /health {out['health']}" if out["health"] is not None else ""
        return f"{lost}; {how}; {server}{health}"

    def _apply(self, level: dict, verdict: dict) -> dict:
        level = dict(level)
        link = verdict["link"]
        if verdict["kind"] == "server-died":
            died = dict(level.get("server_died") or {"since": link.get("at") or _clock(time.time()),
                                                     "message": "connection lost"})
            died["checked_over_ssh"] = True
            if link["server"] == "exited" and link["pid"] is not None:
                died["pid"] = link["pid"]
                status = link.get("exit_status")
                if status is not None:
                    died["exit_status"] = status
                claim = f"; server pid {link['pid']} exited" + (f" ({status})" if status is not None else "") \
                    + " (checked over SSH)"
                said = re.compile(rf"; server pid {link['pid']} exited(?: \([^)]*\))?")
                if said.search(died["message"]):  # the runner said it from the launch record: confirm it
                    died["message"] = said.sub(lambda _: claim, died["message"], count=1)
                else:
                    died["message"] += claim
            elif link["server"] == "not answering":
                died["message"] += "; /health does not answer on the host either (checked over SSH)"
            if link["dropped"]:
                died["message"] += f"; the SSH link also dropped at {link['at']}"
            level["server_died"] = died
            level["status"] = "failed"
            return level
        level["server_died"] = None
        level["link_lost"] = link
        level["status"] = "interrupted"
        return level

    # ------------------------------------------------------------ probes

    def _drops_since(self, window: float) -> list[float]:
        return [t for t in self.drops if t >= window]

    async def _probe_server(self, launch: dict | None, deadline: float
                            ) -> tuple[bool, bool | None, int | None, int | None]:
        """(link back, process alive, exit status, /health) - asked over a link shown to work
        before and after the questions, else asked again until the deadline."""
        while True:
            if await self._link_back(deadline):
                try:
                    alive, exit_status = await self._process_alive(launch)
                    health = await self._remote_health()
                    await self._round_trip(deadline)  # the answers came over a live link
                    return True, alive, exit_status, health
                except (_LinkTrouble, HostError, asyncio.TimeoutError):
                    pass
            if time.monotonic() >= deadline:
                return False, None, None, None
            await asyncio.sleep(0.25)

    async def _round_trip(self, deadline: float) -> None:
        """A real command over the link (a connection that is dying still looks open)."""
        result = await asyncio.wait_for(self.host.run(["true"], timeout=10),
                                        max(0.1, deadline - time.monotonic()) + 1.0)
        if not result.ok:
            raise _LinkTrouble("true failed")

    async def _link_back(self, deadline: float) -> bool:
        while True:
            with contextlib.suppress(HostError, asyncio.TimeoutError, _LinkTrouble):
                # the host's own backoff may be longer than the time left: never wait past the deadline
                await asyncio.wait_for(self.host.connect(), max(0.1, deadline - time.monotonic()))
                await self._round_trip(deadline)
                if self.host.status.state == CONNECTED:
                    return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.5, max(0.0, deadline - time.monotonic())))

    async def _process_alive(self, launch: dict | None) -> tuple[bool | None, int | None]:
        """Whether the launched server's process group lives, asked of the host itself."""
        if not launch or not launch.get("launch"):
            return None, None
        from console.servers import lifecycle
        from console.store import launches

        record = launches.get(self.profile, launch["launch"])
        if record is None or not (record.pgid or record.pid):
            return None, None
        state = await lifecycle.await_exit_status(self.host, record, await lifecycle.probe(self.host, record))
        return state.alive, state.exit_status

    async def _remote_health(self) -> int | None:
        """/health of the server as its own host reaches it (a forward of this connection)."""
        port = self.server_port or urlsplit(self.url).port
        if port is None:
            return None
        try:
            local = await self.host.forward_port(port)
        except HostError:
            raise
        except Exception as exc:  # noqa: BLE001 - asyncssh's channel errors: the link, not the server
            raise _LinkTrouble(str(exc)) from None
        return await _health(f"http://127.0.0.1:{local}")

    async def _tunnel_health(self, deadline: float) -> int | None:
        """/health through the sweep's own URL, waiting (up to the deadline) for the tunnel to return."""
        while True:
            status = await _health(self.url)
            if status == 200 or time.monotonic() >= deadline:
                return status
            await asyncio.sleep(0.25)


async def _health(base: str) -> int | None:
    parts = urlsplit(base)
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            return (await client.get(f"{parts.scheme}://{parts.netloc}/health")).status_code
    except httpx.HTTPError:
        return None


async def for_sweep(url: str, profile_name: str, server_port: int | None, host: Host | None = None,
                    wait_s: float = LINK_WAIT_S) -> LinkCheck | None:
    """A LinkCheck for a sweep that goes through an SSH tunnel to a remote profile, else None.

    `host` is the host that owns the tunnel when the sweep has one; without
    it the check opens a connection of its own to the profile's host.
    """
    if host is None:
        from profiles import store
        from profiles.profile import ProfileError

        from console.hosts import host_for

        try:
            profile = store.load(profile_name)
        except (ProfileError, ValueError, OSError):
            return None
        if profile.is_local:
            return None
        host, owns = host_for(profile), True
    else:
        if not host.tunnelled:
            return None
        owns = False
    check = LinkCheck(host, url, profile_name, server_port, wait_s, owns_host=owns)
    await check.start()
    return check
