"""Two launches of one config in the same second: two records, two logs, two process groups."""
from __future__ import annotations

import os
import time

from console.cli import main
from console.servers import lifecycle
from console.session import HostSession
from console.store import launches
from profiles import store
from tests.harness import poll_until


def _group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


async def test_two_launches_in_one_second_get_their_own_ids_and_stop_apart(tmp_path, monkeypatch):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "srv.sh"
    script.write_text("#!/bin/sh\nexec sleep 300\n")
    script.chmod(0o755)
    assert main(["profiles", "add", "h1", "--local", "--scripts-dir", str(scripts),
                 "--log-dir", str(tmp_path / "logs")]) == 0
    real = time.strftime
    monkeypatch.setattr(time, "strftime", lambda fmt, *t: real(fmt, time.localtime(1_800_000_000))
                        if fmt == "%Y%m%d-%H%M%S" else real(fmt, *t))   # both in the same second
    session = HostSession.open(store.load("h1"))
    first = second = None
    try:
        first = await lifecycle.launch(session, "srv", str(script))
        second = await lifecycle.launch(session, "srv", str(script))
        assert first.id != second.id and second.id == f"{first.id}-2"
        assert first.log != second.log and first.exit_file != second.exit_file
        assert first.pgid != second.pgid
        assert sorted(r.id for r in launches.load_all("h1")) == sorted([first.id, second.id])
        await lifecycle.stop(session, first, grace_s=5)
        poll_until(lambda: not _group_alive(first.pgid), 10, what="the first launch's server to end")
        assert _group_alive(second.pgid)   # the other launch's server is not touched
    finally:
        for record in (first, second):
            if record is not None and record.pgid and _group_alive(record.pgid):
                os.killpg(record.pgid, 9)
        await session.host.close()
