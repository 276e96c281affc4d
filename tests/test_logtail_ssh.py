"""Following a log over SSH by byte offset: an SSH drop loses no line and repeats none."""
from __future__ import annotations

import asyncio

from console.hosts import SSHHost
from console.servers.logtail import LogTail


async def test_tail_resumes_from_its_offset_after_sshd_restart(ssh_profile, sshd, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("".join(f"before {i} ünïcødé\n" for i in range(100)))
    host = SSHHost(ssh_profile)
    tail = LogTail(host, str(log), retry_s=0.2)
    seen: list[str] = []

    async def follow() -> None:
        async for line in tail.lines(follow=True):
            seen.append(line)

    task = asyncio.create_task(follow())
    try:
        for _ in range(600):  # up to 30 s: the first lines come over SSH
            if len(seen) >= 100:
                break
            await asyncio.sleep(0.05)
        assert len(seen) == 100
        sshd.restart()  # the connection and the remote tail die with it
        with log.open("a") as fh:  # written while the tail is down
            fh.write("".join(f"during {i}\n" for i in range(50)))
        for _ in range(300):
            if len(seen) >= 150:
                break
            await asyncio.sleep(0.1)
        with log.open("a") as fh:
            fh.write("".join(f"after {i}\n" for i in range(50)))
        for _ in range(100):
            if len(seen) >= 200:
                break
            await asyncio.sleep(0.05)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await host.close()
    expected = ([f"before {i} ünïcødé" for i in range(100)] + [f"during {i}" for i in range(50)]
                + [f"after {i}" for i in range(50)])
    assert seen == expected
    assert tail.drops >= 1, "the tail never saw the connection drop"
    assert tail.offset == log.stat().st_size
