"""A sweep reserves its run id with an empty `<id>.json` before its first save. The console's
store watcher seeing it in between must not toast "unreadable run": the run is starting. An
empty file left for long (a sweep that died before saving) is still named."""
from __future__ import annotations

import os
import time

from console.runtime import events as ev
from console.store.runs import RESERVED_GRACE_S, read_runs, runs_dir


def _runtime():
    from console.runtime.host_runtime import HostRuntime
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict

    store.save(profile_from_dict("local", {"transport": "local"}))
    return HostRuntime(HostSession.open(store.load("local")))


async def test_a_reserved_empty_run_is_starting_not_unreadable(gpudeck_home):
    folder = runs_dir("local")
    folder.mkdir(parents=True)
    reserved = folder / "sweep-20261201-101010.json"
    reserved.touch()  # as RunStore reserves it (O_EXCL, empty)
    (folder / "broken.json").write_text("{not json")
    scan = read_runs("local")
    assert [u.path.name for u in scan.unreadable] == ["broken.json"] and scan.records == []

    runtime = _runtime()
    seen: list[ev.RuntimeEvent] = []
    runtime.subscribe(seen.append)
    await runtime._report_problems()
    lines = [line for e in seen if isinstance(e, ev.StoreProblems) for line in e.lines]
    assert any("broken.json" in line for line in lines)
    assert not any("sweep-20261201-101010" in line for line in lines)

    old = time.time() - RESERVED_GRACE_S - 60  # a sweep that died before its first save
    os.utime(reserved, (old, old))
    assert [u.path.name for u in read_runs("local").unreadable if "never saved" in u.reason] == [reserved.name]
