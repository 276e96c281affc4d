"""The GPU tab's process owners come from the one rule in `servers.owners`: a launch record
naming process group 0 or 1 (the kernel's, init's) claims no process, in the runtime as in
the commands, and the last map stays while the host cannot answer."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from console.hosts import HostError
from console.runtime import host_runtime
from console.runtime.host_runtime import HostRuntime
from console.store.launches import LaunchRecord

PS = ("    1     1 90000 /sbin/init\n"
      "  200     1 90000 /usr/sbin/sshd -D\n"
      " 4242  4242   120 /bin/sh serve.sh\n"
      " 4243  4242   118 python -m sglang.launch_server --port 30000\n"
      " 5000  5000    60 vim notes\n")


class PsHost:
    """A host whose `ps` prints PS; after the first listing it drops (HostError), then waits."""

    def __init__(self):
        self.calls = 0
        self.second = asyncio.Event()
        self.third = asyncio.Event()

    async def run(self, argv, timeout=None, **_):
        self.calls += 1
        if self.calls == 1:
            return SimpleNamespace(stdout=PS, stderr="", ok=True, returncode=0)
        if self.calls == 2:
            self.second.set()
            raise HostError("down", "connection lost")
        self.third.set()
        await asyncio.Event().wait()   # no answer: the loop stops here until cancelled


def _record(config: str, pgid: int) -> LaunchRecord:
    return LaunchRecord(id=config, config=config, script=None, log=None, exit_file=None,
                        pid=pgid, pgid=pgid, state="ready")


def test_the_runtime_claims_no_process_for_a_record_naming_init_s_group(monkeypatch):
    monkeypatch.setattr(host_runtime, "OWNERS_EVERY_S", 0)

    async def main():
        host = PsHost()
        runtime = HostRuntime(SimpleNamespace(host=host, name="box"))
        runtime.launches = {"srv": _record("srv", 4242), "bogus": _record("bogus", 1)}
        task = asyncio.create_task(runtime._track_owners())
        try:
            await host.second.wait()
            await host.third.wait()   # the pass after the failed listing has begun
            return runtime.owners
        finally:
            task.cancel()

    owners = asyncio.run(main())
    # the server's group is its config's; init (pid 1) and sshd (group 1) are nobody's
    assert owners == {4242: "srv", 4243: "srv"}
