"""Calls queued behind a failing SSH connect share its failure: one attempt, not one per caller.

Otherwise each queued caller sat out a longer reconnect backoff in turn (0.5 + 1 + 2 + 4 + 8 s),
and a console starting while its host was down showed the Server tab's launches a quarter of a
minute late. A real SSH client against a port nothing listens on.
"""
from __future__ import annotations

import asyncio

from console.hosts import CONNECTING, HostError, SSHHost
from profiles.profile import profile_from_dict
from tests.realparts import free_port


async def test_callers_waiting_on_a_failed_connect_get_its_error_without_trying_again():
    closed = free_port()
    host = SSHHost(profile_from_dict("deadbox", {
        "transport": "ssh", "ssh": {"host": "127.0.0.1", "port": closed, "user": "nobody", "connect_timeout_s": 5}}))
    attempts = []
    host.on_status(lambda status: attempts.append(status.error) if status.state == CONNECTING else None)
    try:
        got = await asyncio.gather(*(host.run(["true"], timeout=5) for _ in range(6)), return_exceptions=True)
        assert all(isinstance(e, HostError) and f"connection refused by 127.0.0.1:{closed}" in str(e) for e in got)
        assert len(attempts) == 1, f"{len(attempts)} connect attempts for one outage seen by six waiting callers"
        try:  # a call made after the failure is a new try (after its backoff), not the old answer
            await host.run(["true"], timeout=5)
        except HostError:
            pass
        assert len(attempts) == 2
    finally:
        await host.close()
